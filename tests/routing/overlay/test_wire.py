"""Wire format: every valid packet round-trips; anything else raises WireError only."""
import math
import random
import pytest
from hypothesis import given, settings, strategies as st
from aspan.fields import AspanFields
import zlib
from routing.topology.linkstate import MAX_ETX, Lsa
from routing.overlay.wire import (DATA, LSA, MacKey, Packet, WireError, authentic_data, decode, decode_authentic, encode, encode_auth, link_id, plain_data, plain_packet, relayed, reseal, verify_auth, wire_size)
from tcp_user.segment import ACK, SYN, Segment
from tests.cores import byte, fields_st, lsa_st, packets


@given(packets())
@settings(max_examples=400)
def test_every_valid_packet_round_trips(pkt):
    data = encode(pkt)
    assert decode(data) == pkt
    assert encode(decode(data)) == data


@given(packets())
def test_wire_size_matches_encoding(pkt):
    assert wire_size(pkt) == len(encode(pkt)) + 28


def _decode_or_wire_error(data: bytes) -> None:
    try:
        pkt = decode(data)
    except WireError:
        return
    assert encode(pkt) == data  # only canonical encodings decode


@given(st.binary(max_size=2000))
@settings(max_examples=400)
def test_random_bytes_raise_only_wire_error(data):
    _decode_or_wire_error(data)


@given(packets(), st.data())
@settings(max_examples=300)
def test_truncated_valid_packets_are_rejected(pkt, data):
    raw = encode(pkt)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(WireError):
        decode(raw[:cut])


@given(packets(), st.data())
@settings(max_examples=300)
def test_bit_flips_are_rejected(pkt, data):
    raw = bytearray(encode(pkt))
    bit = data.draw(st.integers(0, len(raw) * 8 - 1))
    raw[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(WireError):
        decode(bytes(raw))


def test_examples_of_rejections_name_the_problem():
    good = encode(Packet(DATA, "10.2.1.1", 5000, "10.2.1.4", 6000, segment=Segment(1, 0, SYN)))
    with pytest.raises(WireError, match="too short"):
        decode(b"\xa5\x01")
    with pytest.raises(WireError, match="CRC"):
        decode(good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.raises(WireError):
        encode(Packet(DATA, "10.2.1.1", 1, "10.2.1.4", 2, fields=AspanFields(pkt_effort=1.5),
                      segment=Segment(0)))
    with pytest.raises(WireError):
        encode(Packet(DATA, "10.2.1.1", 1, "10.2.1.4", 2, segment=Segment(0, flags=0x80)))
    with pytest.raises(WireError):
        encode(Packet(DATA, "not-an-ip", 1, "10.2.1.4", 2, segment=Segment(0)))


def test_seeded_fuzz_never_raises_anything_else():
    rng = random.Random(7)
    base = encode(Packet(DATA, "10.2.1.1", 5000, "10.2.1.4", 6000, 2, AspanFields(0.99, 0.99, 0, 0, 1),
                         Segment(123, 456, ACK, 64000, ((1, 2),), b"x" * 1000)))
    for _ in range(3000):
        raw = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        _decode_or_wire_error(bytes(raw[: rng.randint(0, len(raw))]))


# ---- the fast paths give what the general code gives ------------------------------------------
from routing.overlay.wire import _decode_general, _encode_general  # noqa: E402


def _outcome(f, arg):
    try:
        return f(arg)
    except WireError as e:
        return ("WireError", str(e))


@given(packets(), st.integers(0, 10_000), st.integers(0, 255))
@settings(max_examples=600)
def test_fast_encode_and_decode_agree_with_the_general_code(pkt, where, value):
    assert _outcome(encode, pkt) == _outcome(_encode_general, pkt)
    data = _encode_general(pkt)
    assert decode(data) == _decode_general(data)
    mangled = bytearray(data)
    mangled[where % len(data)] = value
    assert _outcome(decode, bytes(mangled)) == _outcome(_decode_general, bytes(mangled))


@settings(max_examples=300)
@given(packets(), byte, fields_st)
def test_a_relayed_datagram_is_the_encoding_of_the_rewritten_packet(pkt, hops, fields):
    """wire.relayed (the relay path's rewrite, routing.overlay.engine) gives, for every datagram plain_data
    accepts, the bytes encode gives for the decoded packet with the new hop count and A-SPAN fields,
    CRC included; plain_data accepts exactly the plain DATA packets (no SACK blocks, no SNACK entries, no
    timestamps option)."""
    data = encode(pkt)
    h = plain_data(data)
    plain = pkt.ptype == DATA and not pkt.segment.sack and not pkt.segment.snack and pkt.segment.tsval is None
    assert (h is not None) == plain
    if not plain:
        return
    assert plain_packet(h, data) == pkt
    out = decode(data)
    out.hops = hops
    assert bytes(relayed(data, hops)) == encode(out)
    out.fields = fields
    assert bytes(relayed(data, hops, fields)) == encode(out)


@settings(max_examples=200)
@given(packets(), byte, fields_st, st.integers(1, 2**64 - 1), st.integers(1, 2**64 - 1))
def test_a_relayed_authenticated_datagram_resealed_is_the_sealing_of_the_rewritten_packet(pkt, hops, fields, s1, s2):
    """Version 3: authentic_data accepts the plain DATA packets of a sealed datagram, and relayed then
    reseal for the next link give the bytes encode_auth gives for the rewritten packet on that link
    with that sequence number (the relay path of the authenticated overlay, routing.overlay.engine and
    routing.drivers.udp); verify_auth and decode_authentic read what encode_auth wrote."""
    key = MacKey(bytes(range(32)))
    into, onward = link_id("10.2.1.1", "10.2.1.2"), link_id("10.2.1.2", "10.2.1.3")
    data = encode_auth(pkt, key, into, s1)
    assert verify_auth(data, key, into) == s1
    assert decode_authentic(data) == pkt
    h = authentic_data(data)
    plain = pkt.ptype == DATA and not pkt.segment.sack and not pkt.segment.snack and pkt.segment.tsval is None
    assert (h is not None) == plain
    if not plain:
        return
    assert plain_packet(h, data) == pkt
    buf = relayed(data, hops, fields)
    reseal(buf, key, onward, s2)
    out = decode_authentic(data)
    out.hops, out.fields = hops, fields
    assert bytes(buf) == encode_auth(out, key, onward, s2)


def test_plain_data_rejects_a_flipped_bit_and_relayed_rejects_what_does_not_fit():
    pkt = Packet(DATA, "10.0.0.1", 1, "10.0.0.4", 2, 3, AspanFields(0.5, 0.9, 1, 2, 3),
                 Segment(7, 8, ACK, 9, (), b"x" * 100))
    data = encode(pkt)
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x10
        assert plain_data(bytes(bad)) is None, i
    with pytest.raises(WireError, match="cannot relay"):
        relayed(data, 256)
    with pytest.raises(WireError, match="cannot relay"):
        relayed(data, 4, AspanFields(0.5, 0.9, 1, 2, 256))


# ---- the link-state advertisement (type LSA, routing.topology.linkstate; issue 23) --------------------------------

def lsa_pkt(links=(("10.2.1.2", 1.0), ("10.2.1.3", 2.57)), seq=7) -> Packet:
    return Packet(LSA, "10.2.1.1", 0, "10.2.1.2", 0, 1, lsa=Lsa("10.2.1.1", seq, tuple(links)))


def with_crc(body: bytes) -> bytes:
    """``body`` with a valid CRC trailer: what is wrong with it must be caught by the parser itself."""
    return body + zlib.crc32(body).to_bytes(4, "big")


@given(lsa_st)
@settings(max_examples=300)
def test_an_lsa_round_trips_and_its_size_is_known_without_encoding(lsa):
    pkt = Packet(LSA, "10.2.1.1", 0, "10.2.1.2", 0, 1, lsa=lsa)
    data = encode(pkt)
    assert decode(data) == pkt and encode(decode(data)) == data
    assert wire_size(pkt) == len(data) + 28


def test_every_single_bit_flip_of_an_encoded_lsa_is_rejected():
    """The encoding is canonical (module docstring): no other byte string decodes to an LSA."""
    for links in ((), (("10.2.1.2", 1.0),), (("10.2.1.2", 1.0), ("10.2.1.3", MAX_ETX), ("10.2.1.4", 12.34))):
        raw = encode(lsa_pkt(links))
        for bit in range(len(raw) * 8):
            bad = bytearray(raw)
            bad[bit // 8] ^= 1 << (bit % 8)
            with pytest.raises(WireError):
                decode(bytes(bad))


def test_a_truncated_lsa_body_or_a_wrong_link_count_is_rejected_even_under_a_good_crc():
    body = encode(lsa_pkt())[:-4]                  # header 23 | origin 4, seq 4, nlinks 1 | 2 x 6
    assert decode(with_crc(body)) == lsa_pkt()
    for cut in range(23, len(body)):
        with pytest.raises(WireError, match="truncated LSA body|link count"):
            decode(with_crc(body[:cut]))
    for n in (0, 1, 3, 255):
        bad = bytearray(body)
        bad[23 + 8] = n                            # nlinks
        with pytest.raises(WireError, match="link count"):
            decode(with_crc(bytes(bad)))
    with pytest.raises(WireError, match="link count"):
        decode(with_crc(body + bytes(6)))          # a link more than it says


@pytest.mark.parametrize("hundredths", [0, 99, 65535])
def test_an_etx_out_of_range_is_rejected_by_decode(hundredths):
    body = bytearray(encode(lsa_pkt())[:-4])
    body[-2:] = hundredths.to_bytes(2, "big")      # the last link's ETX
    with pytest.raises(WireError, match="ETX .* out of range"):
        decode(with_crc(bytes(body)))
    body[-2:] = (100 if hundredths < 100 else 65534).to_bytes(2, "big")
    assert decode(with_crc(bytes(body))).lsa.links[-1][1] in (1.0, MAX_ETX)   # its neighbours in range decode


@pytest.mark.parametrize("etx", [0.0, 0.99, 0.994, MAX_ETX + 0.01, 1000.0, math.inf, math.nan, -1.0])
def test_an_etx_out_of_range_is_refused_by_encode(etx):
    with pytest.raises(WireError, match="ETX"):
        encode(lsa_pkt((("10.2.1.2", etx),)))
    assert decode(encode(lsa_pkt((("10.2.1.2", 0.995),)))).lsa.links == (("10.2.1.2", 1.0),)   # rounds to 1.00


def test_an_lsa_without_an_advertisement_or_with_too_many_links_is_not_encoded():
    with pytest.raises(WireError, match="without an advertisement"):
        encode(Packet(LSA, "10.2.1.1", 0, "10.2.1.2", 0))
    with pytest.raises(WireError):
        encode(lsa_pkt([("10.2.1.2", 1.0)] * 256))   # nlinks is one byte


@given(lsa_st, st.integers(1, 2**64 - 1), st.integers(0, 10_000), st.integers(1, 255))
@settings(max_examples=200)
def test_an_authenticated_lsa_opens_on_its_link_and_any_change_is_forged(lsa, seq, where, xor):
    """Version 3 (routing.overlay.auth): an LSA is sealed like every overlay packet, and bound to its link."""
    key, link = MacKey(bytes(range(32))), link_id("10.2.1.1", "10.2.1.2")
    pkt = Packet(LSA, "10.2.1.1", 0, "10.2.1.2", 0, 1, lsa=lsa)
    data = encode_auth(pkt, key, link, seq)
    assert verify_auth(data, key, link) == seq and decode_authentic(data) == pkt
    assert authentic_data(data) is None            # not the DATA fast path
    bad = bytearray(data)
    bad[where % len(bad)] ^= xor
    from routing.overlay.wire import AuthError
    with pytest.raises(AuthError, match="forged"):
        verify_auth(bytes(bad), key, link)
    with pytest.raises(AuthError, match="forged"):
        verify_auth(data, key, link_id("10.2.1.1", "10.2.1.3"))


def test_the_timestamps_option_round_trips_and_old_packets_decode_as_before() -> None:
    from routing.overlay.wire import TS_PRESENT, decode, encode, wire_size
    from aspan.fields import AspanFields
    from routing.overlay.wire import DATA, Packet
    from tcp_user.segment import ACK, Segment
    plain = Packet(DATA, "10.0.0.1", 5000, "10.0.0.3", 6000, 0, AspanFields(),
                   Segment(1, 2, ACK, 3000, ((10, 20),), b"abc"))
    stamped = Packet(DATA, "10.0.0.1", 5000, "10.0.0.3", 6000, 0, AspanFields(),
                     Segment(1, 2, ACK, 3000, ((10, 20),), b"abc", (), 0xDEADBEEF, 7))
    raw_plain, raw_ts = encode(plain), encode(stamped)
    assert len(raw_ts) == len(raw_plain) + 8 and wire_size(stamped) == wire_size(plain) + 8
    assert decode(raw_plain).segment == plain.segment and decode(raw_plain).segment.tsval is None
    got = decode(raw_ts).segment
    assert got == stamped.segment and (got.tsval, got.tsecr) == (0xDEADBEEF, 7) and got.flags == ACK
    # the TS bit without the 8 bytes (or the bytes without the bit) is refused by the length check
    import zlib
    body = bytearray(raw_plain[:-4])
    flags_at = 23 + 8
    assert body[flags_at] == ACK
    body[flags_at] |= TS_PRESENT
    from routing.overlay.wire import WireError
    with pytest.raises(WireError, match="length"):
        decode(bytes(body) + zlib.crc32(bytes(body)).to_bytes(4, "big"))
