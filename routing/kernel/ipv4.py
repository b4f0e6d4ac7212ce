"""IPv4 and TCP headers of kernel packets, parsed with struct.

The NFQUEUE driver sees raw IPv4 packets.  Parsing them with ``struct`` costs a
few microseconds; scapy takes about 17 times longer, so scapy stays in tools
and tests.  No I/O here.  The kernel data plane's other mechanics each have their
module: the A-SPAN IPv4 option codec (routing.kernel.ip_option), the TSval refresh of
local retransmissions (routing.kernel.tsval) and the ACKs forged for ACK-all and SLACK
(routing.kernel.forge).  Parsing finds the A-SPAN option (:func:`find_option`) because
the fast path reads the two header shapes a netns run has, with and without it.
"""
from __future__ import annotations

from socket import inet_ntoa   # a pure conversion: the only name of socket a core may use
import struct
from dataclasses import dataclass
from typing import Iterator

PROTO_TCP = 6
PROTO_UDP = 17
OPTION_LEN = 8                              # the A-SPAN option's length (routing.kernel.ip_option)

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10

_IP = struct.Struct("!BBHHHBBH4s4s")
_TCP_REST = struct.Struct("!IIBB")     # seq, ack, data offset, flags (after the ports)
_PORTS = struct.Struct("!HH")
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
        s = _ADDR_CACHE[raw] = inet_ntoa(raw)
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

    tcp_head looks ``_FLOW_CACHE`` up itself and calls this only on a miss.
    """
    fl = _FLOW_CACHE.get((addrs, sport, dport))
    if fl is None:
        if len(_FLOW_CACHE) > 65536:
            _FLOW_CACHE.clear()
        fl = _FLOW_CACHE[addrs, sport, dport] = Flow(_addr(addrs[:4]), _addr(addrs[4:]), sport, dport)
    return fl


# The two headers every packet of a netns run has, read with one unpack each (tcp_head's fast path):
# IPv4 without options, and IPv4 with the A-SPAN option right after the fixed header (where this
# backend puts it); then the TCP ports, seq, ack, data offset and flags.
# Fields: version/IHL, total length, fragment, TTL, protocol, addresses, [option type and length,]
# sport, dport, seq, ack, offset, flags.
_FAST20 = struct.Struct("!BxHxxHBBxx8sHHIIBB")
_FAST28 = struct.Struct("!BxHxxHBBxx8sBB6xHHIIBB")

#: What :func:`tcp_head` returns: the fields of :class:`TcpPacket`, in its order, as a plain tuple
#: (ihl, flow, ttl, seq, ack, flags, payload_len, opt_offset).
TcpHead = tuple[int, Flow, int, int, int, int, int, int]


def tcp_head(data: bytes, option_type: int) -> TcpHead | None:
    """Parse an IPv4 packet into the fields of a :class:`TcpPacket`, as a tuple; None if it is not
    TCP, PacketError if malformed.

    The kernel adapter's hot path reads every packet with this: a tuple costs a fraction of an
    object.  The two common shapes (no IP options; only the A-SPAN option at offset 20) are read
    with one unpack; anything else, and anything those checks do not pass, goes through the
    general path below (:func:`_parse_tcp_general`), which gives the same result and the precise error.
    """
    n = len(data)
    if n >= 40:
        vihl = data[0]
        if vihl == 0x45:
            _v, total, frag, ttl, proto, addrs, sport, dport, seq, ack, off, flags = _FAST20.unpack_from(data)
            doff = (off >> 4) * 4
            if proto == PROTO_TCP and doff >= 20 and 20 + doff <= total <= n and not frag & 0x1FFF:
                fl = _FLOW_CACHE.get((addrs, sport, dport)) or _flow(addrs, sport, dport)
                return 20, fl, ttl, seq, ack, flags, total - 20 - doff, -1
        elif vihl == 0x47 and n >= 48:
            (_v, total, frag, ttl, proto, addrs, otype, olen, sport, dport, seq, ack, off,
             flags) = _FAST28.unpack_from(data)
            doff = (off >> 4) * 4
            if (otype == option_type and olen == OPTION_LEN and proto == PROTO_TCP and doff >= 20
                    and 28 + doff <= total <= n and not frag & 0x1FFF):
                fl = _FLOW_CACHE.get((addrs, sport, dport)) or _flow(addrs, sport, dport)
                return 28, fl, ttl, seq, ack, flags, total - 28 - doff, 20
    return _parse_tcp_general(data, option_type)


def parse_tcp(data: bytes, option_type: int) -> TcpPacket | None:
    """Parse an IPv4 packet; None if it is not TCP, PacketError if malformed (:func:`tcp_head` as an object)."""
    head = tcp_head(data, option_type)
    return None if head is None else TcpPacket(*head)


def _parse_tcp_general(data: bytes, option_type: int) -> TcpHead | None:
    """tcp_head for any bytes: every check in order, PacketError with the reason."""
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
    return ihl, _flow(data[12:20], sport, dport), ttl, seq, ack, flags, total - ihl - doff, opt


def checksum(header: bytes | bytearray) -> int:
    """The Internet checksum (RFC 1071) of an IPv4 header whose checksum field is zero."""
    s = sum(struct.unpack(f"!{len(header) // 2}H", header))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def finish_ip_header(header: bytearray) -> bytearray:
    header[10] = header[11] = 0
    _U16.pack_into(header, 10, checksum(header))
    return header


def fold_checksum(s: int) -> int:
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


# ---- TCP options (window scale, timestamps) -----------------------------------------------
TCPOPT_EOL, TCPOPT_NOP, TCPOPT_WSCALE, TCPOPT_TIMESTAMP = 0, 1, 3, 8
_TS = struct.Struct("!II")


class TcpOptions:
    """What the forged-ACK path reads from a TCP header's options: window scale and timestamps."""

    __slots__ = ("wscale", "tsval", "tsecr")

    def __init__(self, wscale: int | None = None, tsval: int | None = None, tsecr: int | None = None) -> None:
        self.wscale = wscale            # shift count of a SYN's window scale option (RFC 7323, 2.2), None: absent
        self.tsval = tsval              # timestamps option, None: absent
        self.tsecr = tsecr


def tcp_option_items(data: bytes, ihl: int) -> Iterator[tuple[int, int, int]]:
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
    for kind, i, n in tcp_option_items(data, ihl):
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
    length = len(segment)              # the pseudo-header's TCP Length: without the pad octet
    if length % 2:
        segment = bytes(segment) + b"\0"
    s = sum(struct.unpack(f"!{len(segment) // 2}H", segment))
    s += sum(struct.unpack("!HHHH", src + dst)) + PROTO_TCP + length
    return fold_checksum(s)
