"""One precision for the A-SPAN header fields (docs/DESIGN.md, "One precision for the header fields").

The virtual-time backend holds the fields as floats, the overlay wire carries them as
16-bit words, the kernel data plane in its IPv4 option.  Every backend writes them at
the same grid (aspan.fields.quantise), so a packet's caching decisions along a path
are the same whichever encoding carried it between the nodes: checked here over
pkt_qos 0.90 ... 1.00 and every ETX delivery ratio a 1000-probe window can give in
0.5 ... 1.0, on a 4-hop path.
"""
from __future__ import annotations

import pytest
from aspan.fields import FIXED_ONE, AspanFields, quantise, to_fixed, SNOOP_COUNT_MAX
from aspan.policy import SnoopConfig, update_effort, wants_cache
from routing.kernel.ip_option import decode_option, encode_option
from routing.overlay.wire import DATA, Packet, decode, encode
from tcp_user.segment import ACK, Segment


QOS = [round(0.90 + 0.01 * i, 2) for i in range(11)]


RATIOS = [k / 1000 for k in range(500, 1001)]          # an ETX window of 1000 probes


HOPS = 4


SEG = Segment(1, 1, ACK, 1000, (), b"x")


def as_object(f: AspanFields, hops: int) -> AspanFields:
    return f.copy()


def via_wire(f: AspanFields, hops: int) -> AspanFields:
    return decode(encode(Packet(DATA, "10.2.1.1", 1, "10.2.1.4", 2, hops, f.copy(), SEG))).fields


def via_option(f: AspanFields, hops: int) -> AspanFields:
    opt = encode_option(f, hops)
    return decode_option(b"\x45" + b"\0" * 19 + opt, 20)[0]


def path(carry, qos: float, p: float, policy: str = "adaptive") -> list[tuple[bool, float, int]]:
    """(cached?, pkt_effort, snoop_count) at each hop of a path whose links all have ratio ``p``."""
    cfg = SnoopConfig(policy=policy)
    f = AspanFields.stamped(qos)
    out = []
    for hop in range(HOPS):
        f = carry(f, hop)
        c = wants_cache(cfg, f, p, hop)
        update_effort(f, p, c)
        out.append((c, f.pkt_effort, f.snoop_count))
    return out


@pytest.mark.parametrize("qos", QOS)
def test_every_encoding_gives_the_same_decisions(qos):
    for p in RATIOS:
        ref = path(as_object, qos, p)
        assert path(via_wire, qos, p) == ref, (qos, p)
        assert path(via_option, qos, p) == ref, (qos, p)


def test_the_grid_survives_every_encoding_exactly():
    for k in range(0, FIXED_ONE + 1, 7):
        x = k / FIXED_ONE
        f = AspanFields(x, x, 0, 0, 0)
        assert via_wire(f, 0).pkt_effort == x and via_option(f, 0).pkt_effort == x
        assert quantise(x) == x and to_fixed(x) == k


def test_without_one_grid_the_encodings_would_disagree():
    """Why the rule exists: at pkt_qos 0.99 and p = 0.99 the unquantised effort 0.99 is not below 0.99,
    but the option's 16-bit pkt_qos (64880/65535 = 0.990005) is above it: a kernel node would cache
    where the sim does not.  With the sender's pkt_qos on the grid, both compare against 0.990005."""
    raw = AspanFields(1.0, 0.99, 0, 0, 0)
    assert not wants_cache(SnoopConfig(policy="adaptive"), raw, 0.99, 1)
    assert wants_cache(SnoopConfig(policy="adaptive"), via_option(raw, 1), 0.99, 1)
    stamped = AspanFields.stamped(0.99)
    assert wants_cache(SnoopConfig(policy="adaptive"), stamped, 0.99, 1) == \
        wants_cache(SnoopConfig(policy="adaptive"), via_option(stamped, 1), 0.99, 1)


# ====================================================================================================
# aspan/fields.py: the header's one precision (issue 30, mutation run; docs/DESIGN.md, "One precision for
# the header fields"): a probability clamped to [0, 1] and rounded half up to the nearest 1/65535, and the
# fields a sender stamps.


@pytest.mark.parametrize("x, word", [(-0.5, 0), (0.0, 0), (1.0, 65535), (1.5, 65535), (0.5, 32768),
                                     (0.4999, 32761), (1 / 65535, 1), (0.49 / 65535, 0), (0.5 / 65535, 1)])
def test_the_16_bit_word_is_clamped_and_rounded_half_up(x, word):
    assert to_fixed(x) == word
    assert quantise(x) == word / FIXED_ONE


def test_constants():
    assert (FIXED_ONE, SNOOP_COUNT_MAX) == (65535, 255)


def test_the_fields_a_sender_stamps_and_their_copy():
    f = AspanFields.stamped(0.3, snoop_after=1, snoop_limit=2)
    assert (f.pkt_effort, f.pkt_qos, f.snoop_after, f.snoop_limit, f.snoop_count) == (1.0, quantise(0.3), 1, 2, 0)
    assert AspanFields.stamped(0.3) == AspanFields(1.0, quantise(0.3), 0, 0, 0)
    g = AspanFields(0.25, 0.5, 3, 4, 5)
    c = g.copy()
    assert c == g and c is not g
    c.snoop_count += 1
    assert g.snoop_count == 5
    assert AspanFields() == AspanFields(1.0, 1.0, 0, 0, 0)
