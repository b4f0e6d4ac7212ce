"""routing.kernel.ipv4 and routing.kernel.ip_option: struct parsing of kernel packets and the A-SPAN IPv4 option (checked against scapy)."""
import random
import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scapy.all import IP, TCP, UDP, IPOption, Raw

from aspan.fields import AspanFields
from routing.kernel.ip_option import (check_fields, decode_option, encode_option, insert_option, rewrite_option,
                               strip_option)
from routing.kernel.ipv4 import OPTION_LEN, PacketError, TcpPacket, checksum, find_option, parse_tcp, tcp_checksum


def tcp_bytes(payload: int = 100, options=None, flags: str = "A", seq: int = 1000, ack: int = 0, **ip) -> bytes:
    pkt = IP(src="10.2.1.1", dst="10.2.1.4", flags="DF", **ip)
    if options is not None:
        pkt.options = options
    return bytes(pkt / TCP(sport=5000, dport=6000, seq=seq, ack=ack, flags=flags) / Raw(b"x" * payload))


def checksum_ok(data: bytes) -> bool:
    pkt = IP(data)
    sent = pkt.chksum
    del pkt.chksum
    return IP(bytes(pkt)).chksum == sent


def header_checksum_ok(data: bytes) -> bool:
    """RFC 1071 check of the IPv4 header (as long as the IHL it states): sums to 0xFFFF."""
    ihl = (data[0] & 15) * 4
    return 20 <= ihl <= len(data) and checksum(data[:ihl]) == 0


def tcp_checksum_ok(data: bytes) -> bool:
    """RFC 9293 3.1 check of the TCP segment after the IPv4 header (pseudo-header included)."""
    ihl = (data[0] & 15) * 4
    seg = bytearray(data[ihl:])
    sent = int.from_bytes(seg[16:18], "big")
    seg[16:18] = b"\0\0"
    return tcp_checksum(data[12:16], data[16:20], seg) == sent


def assert_flip_detected(data: bytes, byte: int, ihl: int) -> None:
    """One bit of byte ``byte`` of a valid packet (header length ``ihl``) was flipped.  The
    Internet checksum detects every single-bit error of what it covers (a flip changes the
    ones' complement sum by +-2^k, never 0 mod 0xFFFF): a flip in the header by the header
    checksum, which does not cover the TCP segment; a flip in the segment by the TCP checksum."""
    if byte < ihl:
        assert not header_checksum_ok(data)
    else:
        assert header_checksum_ok(data) and not tcp_checksum_ok(data)


def test_every_single_bit_flip_is_detected_by_a_checksum():
    for payload in (60, 61):                         # an odd segment is padded for its checksum
        data = insert_option(tcp_bytes(payload=payload), 20, encode_option(AspanFields(), 1))
        assert header_checksum_ok(data) and tcp_checksum_ok(data)
        for bit in range(8 * len(data)):
            flipped = bytearray(data)
            flipped[bit // 8] ^= 1 << (bit % 8)
            assert_flip_detected(bytes(flipped), bit // 8, 28)


@pytest.mark.parametrize("payload", [0, 1, 60, 61])
def test_tcp_checksum_agrees_with_scapy_for_odd_and_even_segments(payload):
    # RFC 9293 3.1: an odd segment is padded with a zero octet for the sum, but the
    # pseudo-header's TCP Length is the segment's own length, "not counting" the pad
    data = tcp_bytes(payload=payload)
    seg = bytearray(data[20:])
    sent = int.from_bytes(seg[16:18], "big")
    seg[16:18] = b"\0\0"
    assert tcp_checksum(data[12:16], data[16:20], seg) == sent == IP(data)[TCP].chksum


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


def test_parse_tcp_fields():
    data = insert_option(tcp_bytes(payload=321, seq=77, ack=99, flags="PA"), 20, encode_option(AspanFields(), 1))
    t = parse_tcp(data, 94)
    assert (t.src, t.sport, t.dst, t.dport, t.seq, t.ack) == ("10.2.1.1", 5000, "10.2.1.4", 6000, 77, 99)
    assert t.payload_len == 321 and t.ihl == 28 and t.opt_offset == 20 and not t.is_pure_ack
    ack = parse_tcp(tcp_bytes(payload=0, flags="A"), 94)
    assert ack.is_pure_ack and ack.opt_offset == -1
    assert not parse_tcp(tcp_bytes(payload=0, flags="FA"), 94).is_pure_ack
    assert not parse_tcp(tcp_bytes(payload=0, flags="SA"), 94).is_pure_ack
    assert parse_tcp(bytes(IP(dst="10.2.1.2") / UDP(dport=7700) / Raw(b"p")), 94) is None


def test_the_option_is_found_after_other_options_and_nops():
    ours = encode_option(AspanFields(0.5), 2)
    data = tcp_bytes(options=[IPOption(b"\x01\x01\x01\x01"), IPOption(b"\x1e\x04ab"), IPOption(ours)])
    t = parse_tcp(data, 94)
    assert t.opt_offset == 28
    assert decode_option(data, t.opt_offset)[1] == 2
    assert parse_tcp(data, 158).opt_offset == -1           # another experimental number: not ours


@pytest.mark.parametrize("mangle, reason", [
    (lambda b: b[:12], "shorter"),
    (lambda b: bytes([0x65]) + b[1:], "not IPv4"),
    (lambda b: b[:2] + (9999).to_bytes(2, "big") + b[4:], "bad lengths"),
    (lambda b: b[:6] + b"\x00\x10" + b[8:], "fragment"),
    (lambda b: b[:32] + b"\x10" + b[33:], "data offset"),
])
def test_malformed_packets_raise_packet_error(mangle, reason):
    with pytest.raises(PacketError, match=reason):
        parse_tcp(mangle(tcp_bytes()), 94)


def test_a_wrong_length_option_of_our_type_is_malformed():
    data = tcp_bytes(options=[IPOption(b"\x5e\x04ab")])
    with pytest.raises(PacketError, match="length 4"):
        parse_tcp(data, 94)


@settings(max_examples=300)
@given(st.binary(max_size=120))
def test_any_bytes_parse_or_raise_packet_error_only(blob):
    try:
        parse_tcp(blob, 94)
    except PacketError:
        pass


@settings(max_examples=300)
@given(st.integers(0, 200), st.integers(0, 8 * 120 - 1))
def test_bit_flips_in_a_valid_packet_parse_or_raise_packet_error(cut, bit):
    data = bytearray(insert_option(tcp_bytes(payload=60), 20, encode_option(AspanFields(), 1)))
    data[bit // 8 % len(data)] ^= 1 << (bit % 8)
    assert_flip_detected(bytes(data), bit // 8 % len(data), 28)
    try:
        parse_tcp(bytes(data[:cut]), 94)
        parse_tcp(bytes(data), 94)
    except PacketError:
        pass


# ---- the fast paths give what the general code gives ------------------------------------------
from routing.kernel.ip_option import restamp_option, stamp_option  # noqa: E402
from routing.kernel.ipv4 import _parse_tcp_general, tcp_head  # noqa: E402


def _same_parse(data: bytes) -> None:
    """tcp_head (fast path where it applies), the general path and parse_tcp: same packet or the same error."""
    def outcome(f):
        try:
            p = f(data, 94)
        except PacketError as e:
            return ("error", str(e))
        if p is None:
            return None
        if isinstance(p, TcpPacket):
            p = (p.ihl, p.flow, p.ttl, p.seq, p.ack, p.flags, p.payload_len, p.opt_offset)
        ihl, flow, *rest = p
        return (ihl, flow.key, *rest)
    assert outcome(tcp_head) == outcome(_parse_tcp_general) == outcome(parse_tcp)


@settings(max_examples=300)
@given(st.integers(0, 1500), st.booleans(), st.integers(0, 60), st.integers(0, 8 * 80 - 1), st.sampled_from([0, 1, 2]))
def test_the_fast_parse_agrees_with_the_general_one(payload, stamped, cut, bit, mangle):
    data = tcp_bytes(payload % 200, seq=payload * 7919)
    if stamped:
        data = insert_option(data, 20, encode_option(AspanFields(0.5, 0.99, 0, 0, 0), 1))
    if mangle == 1:
        data = data[:max(0, len(data) - cut)]
    elif mangle == 2 and bit < 8 * len(data):
        b = bytearray(data)
        b[bit // 8] ^= 1 << (bit % 8)
        assert_flip_detected(bytes(b), bit // 8, 28 if stamped else 20)
        data = bytes(b)
    _same_parse(data)


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


# ---- routing.kernel.tsval: the TSval a data segment leaves behind ---------------------------------------
from routing.kernel.tsval import TsvalTracker, tcp_tsval_offset  # noqa: E402

_TCP_OPTIONS = st.lists(st.sampled_from([("NOP", None), ("Timestamp", (123456789, 5)), ("MSS", 1448),
                                         ("SAckOK", b""), ("WScale", 7), ("EOL", None)]), max_size=5)


_LINUX = [("NOP", None), ("NOP", None), ("Timestamp", (123456789, 5))]      # how Linux lays them out


@given(_TCP_OPTIONS, st.booleans(), st.integers(0, 12), st.integers(0, 60))
@example(_LINUX, False, 5, 0)
@example(_LINUX, True, 5, 0)
@example(_LINUX, True, 0, 2)                     # the TSval cut short
@example(_LINUX, False, 0, 9)                    # the timestamps option cut short
@example([("MSS", 1448)] + _LINUX, True, 3, 0)   # the TSval elsewhere
def test_the_tracker_remembers_what_the_general_tsval_reader_finds(options, stamped, payload, cut):
    """TsvalTracker.note (the common layout read inline) and tcp_tsval_offset (any layout): the same TSval
    or none, also for truncated packets and malformed options."""
    data = bytes(IP(src="10.2.1.1", dst="10.2.1.4") / TCP(sport=1, dport=2, flags="A", options=options)
                 / Raw(b"x" * payload))
    if stamped:
        data = insert_option(data, 20, encode_option(AspanFields(), 1))
    ihl = (data[0] & 15) * 4
    for d in (data, data[:max(ihl, len(data) - cut)]):
        try:
            off = tcp_tsval_offset(d, ihl)
            want = None if off < 0 else int.from_bytes(d[off:off + 4], "big")
        except PacketError:
            want = None
        tracker = TsvalTracker()
        try:
            tracker.note(("a", 1, "b", 2), d, ihl)
        except struct.error:     # the general reader's own failure (a TSval cut off) is the tracker's too
            assert want is not None and len(d) < off + 4
            continue
        assert tracker.latest.get(("a", 1, "b", 2)) == want


def test_the_tracker_reads_no_tsval_out_of_a_payload_that_looks_like_the_option():
    data = bytes(IP(src="10.2.1.1", dst="10.2.1.4") / TCP(sport=1, dport=2, flags="A")
                 / Raw(b"\x01\x01\x08\x0a" + b"\x00\x00\x00\x07" + b"x" * 20))
    tracker = TsvalTracker()
    tracker.note(("a", 1, "b", 2), data, 20)
    assert tracker.latest == {} and tcp_tsval_offset(data, 20) == -1
