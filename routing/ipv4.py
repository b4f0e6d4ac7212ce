"""IPv4 and TCP headers of kernel packets, parsed with struct, and the A-SPAN IPv4 option.

The NFQUEUE driver sees raw IPv4 packets.  Parsing them with ``struct`` costs a
few microseconds; scapy takes about 17 times longer, so scapy stays in tools
and tests.  No I/O here.

The A-SPAN option (8 bytes, one 32-bit word pair, so the header stays aligned)::

    byte 0   type      an RFC 4727 experimental option number (default 94 = 0x5E:
                       copy 0, class 2, number 30; 30, 158 and 222 are the others)
    byte 1   length    8
    bytes 2-3          pkt_effort, unsigned 16-bit fixed point, value / 65535
    bytes 4-5          pkt_qos, same encoding
    byte 6             hops (high nibble) | snoop_count (low nibble)
    byte 7             snoop_after (high nibble) | snoop_limit (low nibble)

``hops`` is the number of nodes that transmitted the packet before the one
reading it (0 at the sender's own layer, 1 at the first forwarder): the hop
index of ``aspan.policy``.  Nibbles limit hops, snoop_count, snoop_after and
snoop_limit to 0..15 (hops saturates at 15), so the netns backend accepts
chains of at most 16 nodes and snoop_after / snoop_limit of at most 15.
"""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any, Iterator

from aspan.fields import AspanFields

PROTO_TCP = 6
PROTO_UDP = 17
EXPERIMENTAL_OPTIONS = (30, 94, 158, 222)   # RFC 4727, section 2.5
DEFAULT_OPTION = 94
OPTION_LEN = 8
FIXED_ONE = 65535
MAX_NIBBLE = 15

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

_IP = struct.Struct("!BBHHHBBH4s4s")
_TCP_REST = struct.Struct("!IIBB")     # seq, ack, data offset, flags (after the ports)
_PORTS = struct.Struct("!HH")
_OPT = struct.Struct("!BBHHBB")
_U16 = struct.Struct("!H")


class PacketError(ValueError):
    """Bytes that are not a well-formed IPv4 packet of the kind expected (the only error raised here)."""


class Flow:
    """The identity of a TCP packet's direction: addresses, ports, key and name (one object per flow).

    ``key`` is the agent's flow key (src, sport, dst, dport) and ``name`` the log's
    ``"src:sport>dst:dport"``; ``rkey``/``rname`` are those of the opposite direction
    (an ACK belongs to the data flow ``rkey``).
    """

    __slots__ = ("src", "dst", "sport", "dport", "key", "name", "rkey", "rname")

    def __init__(self, src: str, dst: str, sport: int, dport: int) -> None:
        self.src, self.dst, self.sport, self.dport = src, dst, sport, dport
        self.key = (src, sport, dst, dport)
        self.name = f"{src}:{sport}>{dst}:{dport}"
        self.rkey = (dst, dport, src, sport)
        self.rname = f"{dst}:{dport}>{src}:{sport}"


@dataclass(slots=True)
class TcpPacket:
    """The parts of an IPv4 TCP packet the snoop driver needs.

    ``opt_offset`` is the byte offset of the A-SPAN option inside the packet, -1 if absent.
    """

    ihl: int
    flow: Flow
    ttl: int
    seq: int
    ack: int
    flags: int
    payload_len: int
    opt_offset: int

    @property
    def src(self) -> str:
        return self.flow.src

    @property
    def dst(self) -> str:
        return self.flow.dst

    @property
    def sport(self) -> int:
        return self.flow.sport

    @property
    def dport(self) -> int:
        return self.flow.dport

    @property
    def is_pure_ack(self) -> bool:
        """An ACK without data, SYN, FIN or RST: the only kind the snoop agent reads on the way back."""
        return self.payload_len == 0 and (self.flags & (SYN | FIN | RST | ACK)) == ACK


_ADDR_CACHE: dict[bytes, str] = {}


def _addr(raw: bytes) -> str:
    """Dotted form of a 4-byte address (memoised: a mesh has a handful of addresses)."""
    s = _ADDR_CACHE.get(raw)
    if s is None:
        if len(_ADDR_CACHE) > 4096:
            _ADDR_CACHE.clear()
        s = _ADDR_CACHE[raw] = socket.inet_ntoa(raw)
    return s


def ip_header(data: bytes) -> tuple[int, int, int, str, str]:
    """(ihl in bytes, protocol, total length, src, dst) of an IPv4 packet; PacketError if malformed."""
    if len(data) < 20:
        raise PacketError(f"shorter than an IPv4 header ({len(data)} bytes)")
    vihl, _tos, total, _id, frag, _ttl, proto, _csum, src, dst = _IP.unpack_from(data)
    if vihl >> 4 != 4:
        raise PacketError(f"not IPv4 (version {vihl >> 4})")
    ihl = (vihl & 15) * 4
    if ihl < 20 or total < ihl or total > len(data):
        raise PacketError(f"bad lengths (ihl {ihl}, total {total}, captured {len(data)})")
    if frag & 0x1FFF:
        raise PacketError("a non-first fragment")
    return ihl, proto, total, _addr(src), _addr(dst)


def find_option(data: bytes, ihl: int, option_type: int) -> int:
    """Offset of the option ``option_type`` (length 8) in the header, -1 if absent.

    PacketError for a malformed options area or an option of our type with a wrong length.
    """
    if ihl >= 28 and data[20] == option_type and data[21] == OPTION_LEN:
        return 20                       # where this backend puts it
    i = 20
    while i < ihl:
        t = data[i]
        if t == 0:                      # end of option list
            return -1
        if t == 1:                      # no-operation
            i += 1
            continue
        if i + 1 >= ihl:
            raise PacketError("truncated IPv4 option")
        n = data[i + 1]
        if n < 2 or i + n > ihl:
            raise PacketError(f"bad IPv4 option length {n}")
        if t == option_type:
            if n != OPTION_LEN:
                raise PacketError(f"A-SPAN option of length {n}, expected {OPTION_LEN}")
            return i
        i += n
    return -1


_FLOW_CACHE: dict[tuple[bytes, int, int], Flow] = {}


def _flow(addrs: bytes, sport: int, dport: int) -> Flow:
    """The Flow of 8 address bytes (source, destination) and two ports (memoised: a run has a handful of flows).

    parse_tcp looks ``_FLOW_CACHE`` up itself and calls this only on a miss.
    """
    fl = _FLOW_CACHE.get((addrs, sport, dport))
    if fl is None:
        if len(_FLOW_CACHE) > 65536:
            _FLOW_CACHE.clear()
        fl = _FLOW_CACHE[addrs, sport, dport] = Flow(_addr(addrs[:4]), _addr(addrs[4:]), sport, dport)
    return fl


# The two headers every packet of a netns run has, read with one unpack each (parse_tcp's fast path):
# IPv4 without options, and IPv4 with the A-SPAN option right after the fixed header (where this
# backend puts it); then the TCP ports, seq, ack, data offset and flags.
# Fields: version/IHL, total length, fragment, TTL, protocol, addresses, sport, dport, seq, ack, offset, flags.
_FAST20 = struct.Struct("!BxHxxHBBxx8sHHIIBB")
_FAST28 = struct.Struct("!BxHxxHBBxx8s8xHHIIBB")


def parse_tcp(data: bytes, option_type: int) -> TcpPacket | None:
    """Parse an IPv4 packet; None if it is not TCP, PacketError if malformed.

    The two common shapes (no IP options; only the A-SPAN option at offset 20) are read with
    one unpack; anything else, and anything those checks do not pass, goes through the general
    path below (:func:`_parse_tcp_general`), which gives the same result and the precise error.
    """
    n = len(data)
    if n >= 40:
        vihl = data[0]
        if vihl == 0x45:
            _v, total, frag, ttl, proto, addrs, sport, dport, seq, ack, off, flags = _FAST20.unpack_from(data)
            doff = (off >> 4) * 4
            if proto == PROTO_TCP and doff >= 20 and 20 + doff <= total <= n and not frag & 0x1FFF:
                fl = _FLOW_CACHE.get((addrs, sport, dport)) or _flow(addrs, sport, dport)
                return TcpPacket(20, fl, ttl, seq, ack, flags, total - 20 - doff, -1)
        elif vihl == 0x47 and n >= 48 and data[20] == option_type and data[21] == OPTION_LEN:
            _v, total, frag, ttl, proto, addrs, sport, dport, seq, ack, off, flags = _FAST28.unpack_from(data)
            doff = (off >> 4) * 4
            if proto == PROTO_TCP and doff >= 20 and 28 + doff <= total <= n and not frag & 0x1FFF:
                fl = _FLOW_CACHE.get((addrs, sport, dport)) or _flow(addrs, sport, dport)
                return TcpPacket(28, fl, ttl, seq, ack, flags, total - 28 - doff, 20)
    return _parse_tcp_general(data, option_type)


def _parse_tcp_general(data: bytes, option_type: int) -> TcpPacket | None:
    """parse_tcp for any bytes: every check in order, PacketError with the reason."""
    n = len(data)
    if n < 20:
        raise PacketError(f"shorter than an IPv4 header ({n} bytes)")
    vihl, _tos, total, _id, frag, ttl, proto, _csum, _src, _dst = _IP.unpack_from(data)
    ihl = (vihl & 15) * 4
    if vihl >> 4 != 4 or ihl < 20 or total < ihl or total > n or frag & 0x1FFF:
        ip_header(data)                 # raises with the precise reason
    if proto != PROTO_TCP:
        return None
    if total < ihl + 20:
        raise PacketError("truncated TCP header")
    seq, ack, off, flags = _TCP_REST.unpack_from(data, ihl + 4)
    doff = (off >> 4) * 4
    if doff < 20 or ihl + doff > total:
        raise PacketError(f"bad TCP data offset {doff}")
    opt = find_option(data, ihl, option_type) if ihl > 20 else -1
    sport, dport = _PORTS.unpack_from(data, ihl)
    return TcpPacket(ihl, _flow(data[12:20], sport, dport), ttl, seq, ack, flags, total - ihl - doff, opt)


def udp_dport(data: bytes, ihl: int) -> int:
    """Destination port of a UDP packet whose IPv4 header is ``ihl`` bytes long."""
    if len(data) < ihl + 8:
        raise PacketError("truncated UDP header")
    return _PORTS.unpack_from(data, ihl)[1]


# ---- the A-SPAN option ----------------------------------------------------
def check_fields(fields: AspanFields) -> None:
    """ValueError if the header fields do not fit the option (snoop_after, snoop_limit: 4 bits)."""
    for name in ("snoop_after", "snoop_limit"):
        v = getattr(fields, name)
        if not 0 <= v <= MAX_NIBBLE:
            raise ValueError(f"{name} = {v} does not fit the option's 4 bits (0..{MAX_NIBBLE})")


def _option_words(fields: AspanFields, hops: int) -> tuple[int, int, int]:
    """The three 16-bit words after the option's type and length: pkt_effort, pkt_qos, nibbles."""
    e = fields.pkt_effort
    q = fields.pkt_qos
    c = fields.snoop_count
    return (int((0.0 if e < 0.0 else 1.0 if e > 1.0 else e) * FIXED_ONE + 0.5),
            int((0.0 if q < 0.0 else 1.0 if q > 1.0 else q) * FIXED_ONE + 0.5),
            ((hops if hops < MAX_NIBBLE else MAX_NIBBLE) << 12) | ((c if c < MAX_NIBBLE else MAX_NIBBLE) << 8)
            | ((fields.snoop_after & 15) << 4) | (fields.snoop_limit & 15))


_OPT_WORDS = struct.Struct("!BBHHH")


def encode_option(fields: AspanFields, hops: int, option_type: int = DEFAULT_OPTION) -> bytes:
    """The 8 option bytes for ``fields`` after ``hops`` transmissions (hops and snoop_count saturate at 15).

    snoop_after and snoop_limit are masked to 4 bits: check them once with :func:`check_fields`.
    """
    return _OPT_WORDS.pack(option_type, OPTION_LEN, *_option_words(fields, hops))


def decode_option(data: bytes, offset: int) -> tuple[AspanFields, int]:
    """(fields, hops) of the option at ``offset`` (found by :func:`find_option`)."""
    _t, _n, effort, qos, hc, al = _OPT.unpack_from(data, offset)
    return AspanFields(effort / FIXED_ONE, qos / FIXED_ONE, al >> 4, al & 15, hc & 15), hc >> 4


def checksum(header: bytes | bytearray) -> int:
    """The Internet checksum (RFC 1071) of an IPv4 header whose checksum field is zero."""
    s = sum(struct.unpack(f"!{len(header) // 2}H", header))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _finish(header: bytearray) -> bytearray:
    header[10] = header[11] = 0
    _U16.pack_into(header, 10, checksum(header))
    return header


def _fold(s: int) -> int:
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


_W4 = struct.Struct("!HHHH")


def insert_option(data: bytes, ihl: int, option: bytes) -> bytes:
    """``data`` with the 8-byte ``option`` appended to its IPv4 header (IHL, total length, checksum updated).

    The checksum is updated incrementally (RFC 1624, eqn. 3): word 0 (version/IHL)
    and word 1 (total length) change, the option's four words are added.
    PacketError if the header has no room left (60 bytes at most).
    """
    if ihl + OPTION_LEN > 60:
        raise PacketError("no room for the A-SPAN option in the IPv4 header")
    w0, w1, hc = data[0] << 8 | data[1], _U16.unpack_from(data, 2)[0], _U16.unpack_from(data, 10)[0]
    n0 = w0 + (2 << 8)                       # IHL + 2 words
    n1 = w1 + OPTION_LEN
    a, b, c, d = _W4.unpack(option)
    s = (~hc & 0xFFFF) + (~w0 & 0xFFFF) + n0 + (~w1 & 0xFFFF) + n1 + a + b + c + d
    return b"".join((bytes((n0 >> 8, n0 & 0xFF)), _U16.pack(n1), data[4:10], _U16.pack(_fold(s)),
                     data[12:ihl], option, data[ihl:]))


# Memos of the option words per header-field values (a flow's packets carry a handful of them):
# the fields' values (and hops, and the option type or the words replaced) -> what the
# functions below compute from them alone; bounded, cleared when full.
_MEMO_MAX = 4096
_STAMP_MEMO: dict[tuple[Any, ...], tuple[bytes, int]] = {}
_RESTAMP_MEMO: dict[tuple[Any, ...], tuple[bytes, int]] = {}


def stamp_option(data: bytes, ihl: int, fields: AspanFields, hops: int, option_type: int = DEFAULT_OPTION) -> bytes:
    """``insert_option(data, ihl, encode_option(fields, hops, option_type))`` in one step (the sender's hot path)."""
    if ihl + OPTION_LEN > 60:
        raise PacketError("no room for the A-SPAN option in the IPv4 header")
    key = (fields.pkt_effort, fields.pkt_qos, fields.snoop_after, fields.snoop_limit, fields.snoop_count, hops,
           option_type)
    memo = _STAMP_MEMO.get(key)
    if memo is None:
        b, c, d = _option_words(fields, hops)
        a = option_type << 8 | OPTION_LEN
        if len(_STAMP_MEMO) >= _MEMO_MAX:
            _STAMP_MEMO.clear()
        memo = _STAMP_MEMO[key] = (_W4.pack(a, b, c, d), a + b + c + d)
    option, words = memo
    w0, w1, rest, hc = _HEAD12.unpack_from(data)
    n0 = w0 + (2 << 8)                       # IHL + 2 words
    n1 = w1 + OPTION_LEN
    s = (~hc & 0xFFFF) + (~w0 & 0xFFFF) + n0 + (~w1 & 0xFFFF) + n1 + words
    s = (s & 0xFFFF) + (s >> 16)             # _fold, inline
    s = (s & 0xFFFF) + (s >> 16)
    return b"".join((_HEAD12.pack(n0, n1, rest, ~s & 0xFFFF), data[12:ihl], option, data[ihl:]))


_HEAD12 = struct.Struct("!HH6sH")            # version/IHL/TOS, total length, bytes 4-9, header checksum


_W2 = struct.Struct("!HH")
_W3 = struct.Struct("!HHH")


def rewrite_option(data: bytes, ihl: int, offset: int, option: bytes) -> bytes:
    """``data`` with the option at ``offset`` replaced by ``option`` (same type and length).

    The header checksum is updated incrementally over the three changed 16-bit
    words (RFC 1624, eqn. 3), which is cheaper than summing the whole header.
    """
    hc = _U16.unpack_from(data, 10)[0]
    o0, o1, o2 = _W3.unpack_from(data, offset + 2)
    n0, n1, n2 = _W3.unpack_from(option, 2)
    s = (~hc & 0xFFFF) + (~o0 & 0xFFFF) + (~o1 & 0xFFFF) + (~o2 & 0xFFFF) + n0 + n1 + n2
    return b"".join((data[:10], _U16.pack(_fold(s)), data[12:offset], option, data[offset + OPTION_LEN:]))


def restamp_option(data: bytes, offset: int, fields: AspanFields, hops: int) -> bytes:
    """``rewrite_option(data, ihl, offset, encode_option(fields, hops, type))`` in one step (the forwarders' hot path).

    The option at ``offset`` keeps its type and length; its three words and the header
    checksum (incrementally, RFC 1624 eqn. 3) are rewritten.
    """
    key = (data[offset + 2:offset + OPTION_LEN], fields.pkt_effort, fields.pkt_qos, fields.snoop_after,
           fields.snoop_limit, fields.snoop_count, hops)
    memo = _RESTAMP_MEMO.get(key)
    if memo is None:
        n0, n1, n2 = _option_words(fields, hops)
        o0, o1, o2 = _W3.unpack_from(data, offset + 2)
        if len(_RESTAMP_MEMO) >= _MEMO_MAX:
            _RESTAMP_MEMO.clear()
        memo = _RESTAMP_MEMO[key] = (_W3.pack(n0, n1, n2),
                                     (~o0 & 0xFFFF) + (~o1 & 0xFFFF) + (~o2 & 0xFFFF) + n0 + n1 + n2)
    words, delta = memo
    s = (~(data[10] << 8 | data[11]) & 0xFFFF) + delta
    s = (s & 0xFFFF) + (s >> 16)             # _fold, inline
    s = (s & 0xFFFF) + (s >> 16)
    return b"".join((data[:10], _U16.pack(~s & 0xFFFF), data[12:offset + 2], words, data[offset + OPTION_LEN:]))


def strip_option(data: bytes, ihl: int, offset: int) -> bytes:
    """``data`` without the 8-byte option at ``offset`` (for tools; the backend leaves it in)."""
    header = bytearray(data[:ihl])
    del header[offset:offset + OPTION_LEN]
    header[0] = 0x40 | (len(header) // 4)
    _U16.pack_into(header, 2, len(data) - OPTION_LEN)
    return b"".join((_finish(header), memoryview(data)[ihl:]))


# ---- TCP options and forged ACKs (the schemes that send new ACKs: ACK-all, SLACK) ------------
TCPOPT_EOL, TCPOPT_NOP, TCPOPT_WSCALE, TCPOPT_TIMESTAMP = 0, 1, 3, 8
_TCP_HEAD = struct.Struct("!HHIIBBHHH")     # ports, seq, ack, data offset, flags, window, checksum, urgent
_TS = struct.Struct("!II")
_TS_OPTION = struct.Struct("!BBBBII")       # NOP, NOP, kind 8, length 10, TSval, TSecr (RFC 7323, appendix A)


class TcpOptions:
    """What the forged-ACK path reads from a TCP header's options: window scale and timestamps."""

    __slots__ = ("wscale", "tsval", "tsecr")

    def __init__(self, wscale: int | None = None, tsval: int | None = None, tsecr: int | None = None) -> None:
        self.wscale = wscale            # shift count of a SYN's window scale option (RFC 7323, 2.2), None: absent
        self.tsval = tsval              # timestamps option, None: absent
        self.tsecr = tsecr


def _tcp_option_items(data: bytes, ihl: int) -> Iterator[tuple[int, int, int]]:
    """(kind, offset, length) of each TCP option but NOP and EOL; PacketError if malformed."""
    if len(data) < ihl + 20:
        raise PacketError("truncated TCP header")
    doff = (data[ihl + 12] >> 4) * 4
    end = ihl + doff
    if doff < 20 or end > len(data):
        raise PacketError(f"bad TCP data offset {doff}")
    i = ihl + 20
    while i < end:
        kind = data[i]
        if kind == TCPOPT_EOL:
            return
        if kind == TCPOPT_NOP:
            i += 1
            continue
        if i + 1 >= end:
            raise PacketError("truncated TCP option")
        n = data[i + 1]
        if n < 2 or i + n > end:
            raise PacketError(f"bad TCP option length {n} (kind {kind})")
        yield kind, i, n
        i += n


def tcp_options(data: bytes, ihl: int) -> TcpOptions:
    """The window scale and timestamps options of the TCP header at ``ihl``; PacketError if malformed."""
    out = TcpOptions()
    for kind, i, n in _tcp_option_items(data, ihl):
        if kind == TCPOPT_WSCALE and n == 3:
            out.wscale = min(data[i + 2], 14)          # RFC 7323, 2.3: larger shifts are taken as 14
        elif kind == TCPOPT_TIMESTAMP and n == 10:
            out.tsval, out.tsecr = _TS.unpack_from(data, i + 2)
    return out


def tcp_window(data: bytes, ihl: int) -> int:
    """The raw 16-bit window field of the TCP header at ``ihl`` (unscaled)."""
    return _U16.unpack_from(data, ihl + 14)[0]


def tcp_checksum(src: bytes, dst: bytes, segment: bytes | bytearray) -> int:
    """The TCP checksum (RFC 9293, 3.1) of ``segment`` (checksum field zero) between 4-byte addresses."""
    if len(segment) % 2:
        segment = bytes(segment) + b"\0"
    s = sum(struct.unpack(f"!{len(segment) // 2}H", segment))
    s += sum(struct.unpack("!HHHH", src + dst)) + PROTO_TCP + len(segment)
    return _fold(s)


def forge_ack(template: bytes, ack: int, window: int, tsecr: int | None = None) -> bytes:
    """A pure ACK built from ``template`` (an ACK of the same connection, same direction).

    Kept from the template: the IPv4 header (addresses, TTL, options), ports, sequence
    number, and the timestamps option's TSval (the receiver's clock: a copy never goes
    back in time, so the sender's PAWS check (RFC 7323, 5) accepts it).  Set here: the
    ACK number, the raw window field ``window``, TSecr (``tsecr``, or the template's),
    flags ACK only.  Left out: every other TCP option (SACK blocks above all: a forged
    ACK claims nothing about out-of-order data).  Both checksums are computed anew.
    """
    ihl, _proto, _total, _src, _dst = ip_header(template)
    opts = tcp_options(template, ihl)
    sport, dport, seq = struct.unpack_from("!HHI", template, ihl)
    option = b""
    if opts.tsval is not None:
        option = _TS_OPTION.pack(TCPOPT_NOP, TCPOPT_NOP, TCPOPT_TIMESTAMP, 10, opts.tsval,
                                 opts.tsecr if tsecr is None else tsecr)
    tcp = bytearray(_TCP_HEAD.pack(sport, dport, seq, ack & 0xFFFFFFFF, (5 + len(option) // 4) << 4, ACK,
                                   max(0, min(window, 0xFFFF)), 0, 0) + option)
    _U16.pack_into(tcp, 16, tcp_checksum(template[12:16], template[16:20], tcp))
    header = bytearray(template[:ihl])
    _U16.pack_into(header, 2, ihl + len(tcp))
    return bytes(_finish(header)) + bytes(tcp)


_TS_LEAD = b"\x01\x01\x08\x0a"              # NOP, NOP, timestamps, length 10: how Linux lays the option out
_U32 = struct.Struct("!I")


def tcp_tsval_offset(data: bytes, ihl: int) -> int:
    """Byte offset of the timestamps option's TSval in the packet, -1 without the option.

    The common layout (NOP, NOP, TS first; RFC 7323, appendix A) is checked directly;
    any other is parsed.  PacketError for a malformed options area.
    """
    o = ihl + 20
    if data[o:o + 4] == _TS_LEAD and (data[ihl + 12] >> 4) * 4 >= 32:
        return o + 4
    for kind, i, n in _tcp_option_items(data, ihl):
        if kind == TCPOPT_TIMESTAMP and n == 10:
            return i + 2
    return -1


def tcp_tsval(data: bytes, ihl: int) -> int | None:
    """The TSval of the packet's timestamps option, None without one."""
    off = tcp_tsval_offset(data, ihl)
    return None if off < 0 else _U32.unpack_from(data, off)[0]


def with_tsval(data: bytes, ihl: int, tsval: int) -> bytes:
    """``data`` with its TSval replaced by ``tsval`` (no option: unchanged).

    The TCP checksum is updated incrementally over the two changed words (RFC 1624, eqn. 3).
    """
    off = tcp_tsval_offset(data, ihl)
    if off < 0:
        return data
    o1, o2 = _U16.unpack_from(data, off), _U16.unpack_from(data, off + 2)
    n1, n2 = tsval >> 16 & 0xFFFF, tsval & 0xFFFF
    hc = _U16.unpack_from(data, ihl + 16)[0]
    s = (~hc & 0xFFFF) + (~o1[0] & 0xFFFF) + (~o2[0] & 0xFFFF) + n1 + n2
    out = bytearray(data)
    _U32.pack_into(out, off, tsval & 0xFFFFFFFF)
    _U16.pack_into(out, ihl + 16, _fold(s))
    return bytes(out)
