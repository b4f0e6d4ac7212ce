"""routing.kernel.ip_option: the A-SPAN IPv4 option, its layout, round trip, insert, rewrite, strip and
the fast stamp and restamp (checked against scapy).
"""
import random
import pytest
from hypothesis import given, strategies as st
from scapy.all import IP, TCP, IPOption
from aspan.fields import AspanFields
from routing.kernel.ip_option import (check_fields, decode_option, encode_option, insert_option, rewrite_option,
                                      strip_option)
from routing.kernel.ipv4 import OPTION_LEN, find_option
from tests.cores import tcp_bytes


def checksum_ok(data: bytes) -> bool:
    pkt = IP(data)
    sent = pkt.chksum
    del pkt.chksum
    return IP(bytes(pkt)).chksum == sent


def test_option_layout_is_eight_bytes_with_the_experimental_type():
    opt = encode_option(AspanFields(1.0, 0.99, 2, 3, 1), hops=4, option_type=94)
    assert len(opt) == OPTION_LEN == 8
    assert opt[0] == 94 and opt[1] == 8
    assert opt[2:4] == b"\xff\xff"                      # pkt_effort 1.0
    assert opt[6] == (4 << 4) | 1 and opt[7] == (2 << 4) | 3


@given(st.floats(0, 1), st.floats(0, 1), st.integers(0, 15), st.integers(0, 15), st.integers(0, 15),
       st.integers(0, 15))
def test_option_round_trip_within_fixed_point_resolution(effort, qos, after, limit, count, hops):
    data = insert_option(tcp_bytes(), 20, encode_option(AspanFields(effort, qos, after, limit, count), hops))
    fields, h = decode_option(data, find_option(data, 28, 94))
    assert h == hops
    assert abs(fields.pkt_effort - effort) <= 0.5 / 65535 + 1e-12
    assert abs(fields.pkt_qos - qos) <= 0.5 / 65535 + 1e-12
    assert (fields.snoop_after, fields.snoop_limit, fields.snoop_count) == (after, limit, count)


def test_hops_and_count_saturate_and_header_fields_are_checked():
    _, h = decode_option(encode_option(AspanFields(snoop_count=40), hops=99), 0)
    assert h == 15
    with pytest.raises(ValueError, match="snoop_after"):
        check_fields(AspanFields(snoop_after=16))


def test_insert_rewrite_strip_keep_valid_checksums_and_lengths():
    rng = random.Random(4)
    for _ in range(200):
        p = tcp_bytes(payload=rng.randint(0, 1400), id=rng.randrange(65536), ttl=rng.randint(1, 255),
                      seq=rng.randrange(1 << 32))
        q = insert_option(p, 20, encode_option(AspanFields(rng.random(), rng.random()), 1))
        assert len(q) == len(p) + 8 and IP(q).ihl == 7 and IP(q).len == len(q)
        assert checksum_ok(q)
        assert bytes(IP(q)[TCP]) == bytes(IP(p)[TCP])     # the TCP segment is untouched
        r = rewrite_option(q, 28, 20, encode_option(AspanFields(rng.random(), rng.random(), 1, 2, 3), 5))
        assert checksum_ok(r) and len(r) == len(q)
        assert strip_option(r, 28, 20) == p


# ---- the fast paths give what the general code gives ------------------------------------------
from routing.kernel.ip_option import restamp_option, stamp_option  # noqa: E402


@given(st.floats(0, 1), st.floats(0, 1), st.integers(0, 15), st.integers(0, 15), st.integers(0, 20),
       st.integers(0, 20))
def test_stamp_and_restamp_write_what_insert_and_rewrite_write(effort, qos, after, limit, count, hops):
    fields = AspanFields(effort, qos, after, limit, count)
    plain = tcp_bytes(300)
    for _ in range(2):                                   # the second time from the memo
        stamped = stamp_option(plain, 20, fields, hops)
        assert stamped == insert_option(plain, 20, encode_option(fields, hops))
        again = restamp_option(stamped, 20, fields, hops + 1)
        assert again == rewrite_option(stamped, 28, 20, encode_option(fields, hops + 1))
        assert checksum_ok(again)


@given(st.floats(0, 1), st.integers(0, 15), st.sampled_from([4, 8, 12]), st.booleans())
def test_stamp_and_restamp_behind_other_ip_options(effort, count, extra, nop_first):
    """Headers with options of their own: the option goes after them (stamp) or is found behind them (restamp)."""
    fields = AspanFields(effort, 0.99, 1, 2, count)
    other = [IPOption(b"\x01" * extra)] if nop_first else [IPOption(b"\x94\x04\x00\x00" * (extra // 4))]
    plain = tcp_bytes(200, options=other)
    ihl = (plain[0] & 15) * 4
    assert ihl == 20 + extra
    stamped = stamp_option(plain, ihl, fields, 3)
    assert stamped == insert_option(plain, ihl, encode_option(fields, 3))
    offset = find_option(stamped, ihl + OPTION_LEN, 94)
    assert offset == ihl
    again = restamp_option(stamped, offset, fields, 4)
    assert again == rewrite_option(stamped, ihl + OPTION_LEN, offset, encode_option(fields, 4))
    assert checksum_ok(again) and decode_option(again, offset)[1] == 4
