"""tcp_user/segment.py, rule by rule (issue 30, mutation run): the control bits, SEG.LEN, 32-bit unwrap."""
from __future__ import annotations

import pytest
from tcp_user.segment import (ACK, FIN, KNOWN_FLAGS, MAX_SACK_BLOCKS, MAX_SNACK, RST, SEQ_MASK, SEQ_MOD, SYN,
                              Segment, unwrap)


HALF = 1 << 31


# ---------------------------------------------------------------- segment.py
def test_the_control_bits_and_option_limits() -> None:
    assert (FIN, SYN, RST, ACK) == (0x01, 0x02, 0x04, 0x10)
    assert KNOWN_FLAGS == 0x17
    assert (MAX_SACK_BLOCKS, MAX_SNACK) == (4, 6)
    assert (SEQ_MOD, SEQ_MASK) == (2**32, 2**32 - 1)


def test_a_segment_s_defaults_are_empty() -> None:
    s = Segment(seq=5)
    assert (s.ack, s.flags, s.window, s.sack, s.payload, s.snack) == (0, 0, 0, (), b"", ())


@pytest.mark.parametrize("flags, payload, length", [
    (0, b"", 0), (ACK, b"abc", 3), (SYN, b"", 1), (FIN, b"", 1), (SYN | FIN, b"ab", 4),
    (SYN | ACK, b"", 1), (RST, b"", 0), (FIN | ACK, b"x" * 1000, 1001)])
def test_seg_len_counts_the_payload_and_one_each_for_syn_and_fin(flags: int, payload: bytes, length: int) -> None:
    assert Segment(seq=0, flags=flags, payload=payload).length == length


def test_a_pure_ack_is_the_ack_bit_alone_without_payload() -> None:
    assert Segment(seq=0, flags=ACK).is_pure_ack
    for flags, payload in ((ACK, b"x"), (ACK | FIN, b""), (ACK | SYN, b""), (ACK | RST, b""), (0, b"")):
        assert not Segment(seq=0, flags=flags, payload=payload).is_pure_ack, (flags, payload)


@pytest.mark.parametrize("base", [0, 1000, SEQ_MASK - 10, HALF])
@pytest.mark.parametrize("ref", [0, 1, 5000, 3 * HALF])
def test_unwrap_gives_the_number_nearest_the_reference(base: int, ref: int) -> None:
    for d in (0, 1, -1, 1000, -1000, HALF - 1, -HALF):
        x32 = (base + ref + d) & SEQ_MASK
        assert unwrap(x32, base, ref) == ref + d, d


def test_unwrap_at_half_the_space_is_behind() -> None:
    # exactly 2**31 away is ambiguous; the half-open rule takes it as behind (d in [-2**31, 2**31))
    assert unwrap(HALF, 0, 0) == -HALF
    assert unwrap(HALF - 1, 0, 0) == HALF - 1
    assert unwrap((7 + HALF) & SEQ_MASK, 7, 0) == -HALF


def test_unwrap_across_the_wrap_of_the_32_bit_value() -> None:
    base = SEQ_MASK - 99                                  # the relative number 100 is wire 0
    assert unwrap(0, base, 90) == 100
    assert unwrap(SEQ_MASK, base, 90) == 99
    assert unwrap(50, base, 120) == 150
