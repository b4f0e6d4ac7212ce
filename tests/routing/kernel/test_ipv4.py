"""routing.kernel.ipv4: struct parsing of kernel packets, checksums, malformed packets, the fast parse
(checked against scapy).
"""
import pytest
from hypothesis import given, settings, strategies as st
from scapy.all import IP, TCP, UDP, IPOption, Raw
from aspan.fields import AspanFields
from routing.kernel.ip_option import decode_option, encode_option, insert_option
from routing.kernel.ipv4 import PacketError, TcpPacket, checksum, parse_tcp, tcp_checksum
from tests.cores import tcp_bytes


# ====================================================================================================
# routing.kernel.ipv4 and routing.kernel.ip_option: struct parsing of kernel packets and the A-SPAN IPv4 option (checked against scapy).

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
