"""Binary wire format of the UDP overlay (version 2).

Layout, network byte order::

    header  (23 bytes)  magic 0xA5 | version | type | src ip(4) sport(2) | dst ip(4) dport(2)
                        | hops | snoop_after | snoop_limit | snoop_count | pkt_effort u16 | pkt_qos u16
    body                type DATA:    seq u32 | ack u32 | flags u8 | nsack u8 | nsnack u8 | window u32
                                      | paylen u16 | nsack x (left u32, right u32) | nsnack x u32
                                      | [tsval u32 | tsecr u32] | payload
                                      (flags bit 0x80, TS_PRESENT, not a TCP flag: the RFC 7323 Timestamps
                                      option follows the SNACK entries; without it the packet is as before)
                        type PROBE:   seq u32 | ratio f32 (sender's measured ratio for the receiver, or -1 unknown)
                        type LSA:     origin ip(4) | seq u32 | nlinks u8 | nlinks x (neighbour ip(4), etx u16)
                                      (a link-state advertisement, routing.topology.linkstate; etx in hundredths, >= 100)
    trailer (4 bytes)   CRC-32 of everything before it

Version 3 (authenticated overlay, issue 13) is version 2 with the CRC trailer replaced by
``seq u64 | tag (16 bytes)``: ``seq`` is the transmitting node's own sequence number and ``tag``
the keyed BLAKE2b (RFC 7693, truncated to 16 bytes) of ``link | header | body | seq`` under the
experiment key, where ``link`` is the transmitting node's and the next hop's mesh addresses (4 + 4
bytes), so a packet is bound to the one link it was sent on.  :func:`encode_auth` writes it,
:func:`verify_auth` checks its tag (before anything is parsed) and :func:`decode_authentic` then reads
it; :func:`reseal` writes the trailer of bytes a relay passes on.  routing.overlay.auth keeps the sequence
numbers and replay windows.

pkt_effort and pkt_qos are the 16-bit fixed-point words of the IPv4 option
(``k / 65535``, aspan.fields): one precision on every data plane.  Version 1
carried them as f32.

The encoding is canonical: a byte string decodes only if re-encoding the
result gives the same bytes, so a bit flip anywhere is caught (by the CRC,
the magic, a range check or a length check).  Decoding raises
:class:`WireError` and nothing else for any input that is not a valid packet.
"""
from __future__ import annotations

import hashlib
import hmac
import math
from socket import inet_aton, inet_ntoa   # pure conversions: the only names of socket a core may use
import struct
import zlib
from dataclasses import dataclass, field

from aspan.fields import FIXED_ONE, AspanFields, to_fixed
from routing.topology.linkstate import Lsa
from tcp_user.segment import KNOWN_FLAGS, MAX_SACK_BLOCKS, MAX_SNACK, Segment

MAGIC = 0xA5
VERSION = 2
AUTH_VERSION = 3   # version 2 with a sequence number and a keyed MAC instead of the CRC
TAG_LEN = 16

DATA = 1     # carries a TCP segment
PROBE = 2    # ETX probe
LSA = 3      # link-state advertisement (routing.topology.linkstate), flooded hop by hop

_HEADER = struct.Struct("!BBB4sH4sHBBBBHH")
_DATA = struct.Struct("!IIBBBIH")
_PROBE = struct.Struct("!If")
_LSA = struct.Struct("!4sIB")
_LSA_LINK = struct.Struct("!4sH")
#: ETX hundredths an LSA link may carry (routing.topology.linkstate.MAX_ETX is the largest, 65535 stays unused)
_ETX_MIN, _ETX_MAX = 100, 65534
_CRC = struct.Struct("!I")
_U32 = struct.Struct("!I")
_SACK = struct.Struct("!II")
_SEQ = struct.Struct("!Q")
_TS = struct.Struct("!II")
#: The DATA body's flags bit saying the Timestamps option (RFC 7323 sec. 3: TSval, TSecr) follows the SNACK
#: entries; not a TCP flag (tcp_user.segment.KNOWN_FLAGS), so it never meets the segment's own flags.
TS_PRESENT = 0x80
HEADER_LEN = _HEADER.size
MAX_HOPS = 255     # the header's hops byte: a packet that has it full cannot be sent on (routing.overlay.engine)
AUTH_TRAILER_LEN = _SEQ.size + TAG_LEN
MAX_DATAGRAM = 65507
# The common DATA packet (no SACK blocks, no SNACK entries): header and body read or written
# with one struct call (encode's and decode's fast paths; anything else takes the general path).
_PLAIN_DATA = struct.Struct("!BBB4sH4sHBBBBHHIIBBBIH")
_PLAIN_LEN = _PLAIN_DATA.size

# Dotted <-> 4-byte addresses, memoised (a mesh has a handful of addresses); bounded.
_MAX_ADDRS = 4096
_ATON: dict[str, bytes] = {}
_NTOA: dict[bytes, str] = {}


def _aton(addr: str) -> bytes:
    raw = _ATON.get(addr)
    if raw is None:
        raw = inet_aton(addr)           # OSError for a bad address: the caller's WireError
        if len(_ATON) >= _MAX_ADDRS:
            _ATON.clear()
        _ATON[addr] = raw
    return raw


def ntoa(raw: bytes) -> str:
    """4-byte address -> dotted string (memoised)."""
    addr = _NTOA.get(raw)
    if addr is None:
        addr = inet_ntoa(raw)
        if len(_NTOA) >= _MAX_ADDRS:
            _NTOA.clear()
        _NTOA[raw] = addr
    return addr


class WireError(ValueError):
    """A byte string is not a valid overlay packet (the only error decode() raises)."""


class AuthError(Exception):
    """An authenticated datagram is not accepted; ``reason`` is its drop reason (routing.forwarding.step)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MacKey:
    """The experiment key: keyed BLAKE2b (RFC 7693) truncated to TAG_LEN bytes, keyed once."""

    def __init__(self, key: bytes) -> None:
        if not 16 <= len(key) <= 64:
            raise ValueError(f"the experiment key must have 16 to 64 bytes, not {len(key)}")
        self._keyed = hashlib.blake2b(key=key, digest_size=TAG_LEN)

    def tag(self, link: bytes, *parts: bytes | memoryview) -> bytes:
        h = self._keyed.copy()
        h.update(link)
        for part in parts:
            h.update(part)
        return h.digest()


@dataclass(slots=True)
class Probe:
    seq: int
    ratio: float = -1.0  # delivery ratio the sender measured for the probe's receiver; -1: unknown


@dataclass(slots=True)
class Packet:
    """One overlay packet.  Addresses are dotted IPv4 strings (the nodes' mesh addresses)."""

    ptype: int
    src: str
    sport: int
    dst: str
    dport: int
    hops: int = 0
    fields: AspanFields = field(default_factory=AspanFields)
    segment: Segment | None = None
    probe: Probe | None = None
    lsa: Lsa | None = None

    def copy(self) -> "Packet":
        """A copy whose header fields can be changed without touching this one (payload shared)."""
        return Packet(self.ptype, self.src, self.sport, self.dst, self.dport, self.hops,
                      self.fields.copy(), self.segment, self.probe, self.lsa)

    def flow(self) -> tuple[str, int, str, int]:
        return (self.src, self.sport, self.dst, self.dport)


def _f32_ok(x: float) -> bool:
    return not math.isnan(x) and 0.0 <= x <= 1.0


def _plain_head(pkt: Packet, version: int) -> bytes | None:
    """Header and DATA body of the common packet (no SACK, no SNACK) in one struct call; None for any
    other packet (the general path)."""
    f = pkt.fields
    s = pkt.segment
    if (pkt.ptype == DATA and s is not None and not s.sack and not s.snack and s.tsval is None
            and not s.flags & ~KNOWN_FLAGS):
        e, q = f.pkt_effort, f.pkt_qos
        if 0.0 <= e <= 1.0 and 0.0 <= q <= 1.0 and len(s.payload) + _PLAIN_LEN + AUTH_TRAILER_LEN <= MAX_DATAGRAM:
            try:
                return _PLAIN_DATA.pack(MAGIC, version, DATA, _aton(pkt.src), pkt.sport, _aton(pkt.dst), pkt.dport,
                                        pkt.hops, f.snoop_after, f.snoop_limit, f.snoop_count,
                                        int(e * FIXED_ONE + 0.5), int(q * FIXED_ONE + 0.5),   # aspan.fields.to_fixed
                                        s.seq, s.ack, s.flags, 0, 0, s.window, len(s.payload))
            except (struct.error, OSError, TypeError, OverflowError) as err:
                raise WireError(f"cannot encode packet: {err}") from None
    return None


def encode(pkt: Packet) -> bytes:
    """Packet -> bytes (version 2).  Raises WireError if a field does not fit the format."""
    head = _plain_head(pkt, VERSION)
    if head is not None:
        payload = pkt.segment.payload   # type: ignore[union-attr]
        return b"".join((head, payload, _CRC.pack(zlib.crc32(payload, zlib.crc32(head)))))
    return _encode_general(pkt)


def _encode_general(pkt: Packet) -> bytes:
    body = _general_body(pkt, VERSION)
    if len(body) + _CRC.size > MAX_DATAGRAM:
        raise WireError("packet larger than a UDP datagram")
    return body + _CRC.pack(zlib.crc32(body))


def _general_body(pkt: Packet, version: int) -> bytes:
    f = pkt.fields
    try:
        if not (_f32_ok(f.pkt_effort) and _f32_ok(f.pkt_qos)):
            raise WireError(f"pkt_effort/pkt_qos out of [0,1]: {f.pkt_effort}, {f.pkt_qos}")
        head = _HEADER.pack(MAGIC, version, pkt.ptype, _aton(pkt.src), pkt.sport,
                            _aton(pkt.dst), pkt.dport, pkt.hops, f.snoop_after,
                            f.snoop_limit, f.snoop_count, to_fixed(f.pkt_effort), to_fixed(f.pkt_qos))
        if pkt.ptype == DATA:
            s = pkt.segment
            if s is None:
                raise WireError("DATA packet without a segment")
            if len(s.sack) > MAX_SACK_BLOCKS or len(s.snack) > MAX_SNACK:
                raise WireError("too many SACK blocks or SNACK entries")
            if s.flags & ~KNOWN_FLAGS:
                raise WireError(f"unknown TCP flags {s.flags:#x}")
            ts = s.tsval is not None
            parts = [head, _DATA.pack(s.seq, s.ack, s.flags | (TS_PRESENT if ts else 0), len(s.sack),
                                      len(s.snack), s.window, len(s.payload))]
            parts.extend(_SACK.pack(a, b) for a, b in s.sack)
            parts.extend(_U32.pack(x) for x in s.snack)
            if ts:
                parts.append(_TS.pack(s.tsval, s.tsecr))
            parts.append(s.payload)
            return b"".join(parts)
        if pkt.ptype == PROBE:
            p = pkt.probe
            if p is None:
                raise WireError("PROBE packet without a probe")
            if not (p.ratio == -1.0 or _f32_ok(p.ratio)):
                raise WireError(f"probe ratio out of range: {p.ratio}")
            return head + _PROBE.pack(p.seq, p.ratio)
        if pkt.ptype == LSA:
            if pkt.lsa is None:
                raise WireError("LSA packet without an advertisement")
            return head + _lsa_body(pkt.lsa)
        raise WireError(f"unknown packet type {pkt.ptype}")
    except (struct.error, OSError, TypeError, OverflowError) as e:
        raise WireError(f"cannot encode packet: {e}") from None


def _lsa_body(lsa: Lsa) -> bytes:
    parts = [_LSA.pack(_aton(lsa.origin), lsa.seq, len(lsa.links))]
    for v, etx in lsa.links:
        hundredths = round(etx * 100) if math.isfinite(etx) else -1   # nan, inf: out of range
        if not _ETX_MIN <= hundredths <= _ETX_MAX:
            raise WireError(f"LSA link {lsa.origin}->{v}: ETX {etx!r} out of [1, {_ETX_MAX / 100}]")
        parts.append(_LSA_LINK.pack(_aton(v), hundredths))
    return b"".join(parts)


def _parse_lsa(data: bytes, off: int, body_end: int) -> Lsa:
    if off + _LSA.size > body_end:
        raise WireError("truncated LSA body")
    origin, seq, n = _LSA.unpack_from(data, off)
    off += _LSA.size
    if off + n * _LSA_LINK.size != body_end:
        raise WireError("LSA link count disagrees with datagram size")
    links = []
    for i in range(n):
        v, hundredths = _LSA_LINK.unpack_from(data, off + i * _LSA_LINK.size)
        if not _ETX_MIN <= hundredths <= _ETX_MAX:
            raise WireError(f"LSA link {i}: ETX {hundredths / 100} out of range")
        links.append((ntoa(v), hundredths / 100))
    return Lsa(ntoa(origin), seq, tuple(links))


# ---- version 3: authenticated (issue 13, item 3) ------------------------------------------------
def link_id(sender: str, receiver: str) -> bytes:
    """What binds a version-3 packet to one link: the transmitting node's and the next hop's mesh addresses."""
    try:
        return _aton(sender) + _aton(receiver)
    except OSError as e:
        raise ValueError(f"not an IPv4 address: {sender!r} or {receiver!r}") from e


def encode_auth(pkt: Packet, key: MacKey, link: bytes, seq: int) -> bytes:
    """Packet -> version-3 bytes: the body, the sender's ``seq`` (u64) and the tag over link, body and seq."""
    head = _plain_head(pkt, AUTH_VERSION)
    if head is not None:
        parts: tuple[bytes, ...] = (head, pkt.segment.payload)   # type: ignore[union-attr]
    else:
        body = _general_body(pkt, AUTH_VERSION)
        if len(body) + AUTH_TRAILER_LEN > MAX_DATAGRAM:
            raise WireError("packet larger than a UDP datagram")
        parts = (body,)
    try:
        seqb = _SEQ.pack(seq)
    except struct.error as e:
        raise WireError(f"sequence number out of range: {seq}") from e
    return b"".join((*parts, seqb, key.tag(link, *parts, seqb)))


def reseal(buf: bytearray, key: MacKey, link: bytes, seq: int) -> None:
    """Write the trailer of the version-3 datagram ``buf`` for ``link`` in place: the sender's ``seq``
    and the tag, the trailer :func:`encode_auth` writes.  A relay re-seals what it passes on as bytes
    (:func:`relayed`) for its next link, and a local retransmission from the snoop cache again."""
    body_end = len(buf) - AUTH_TRAILER_LEN
    try:
        _SEQ.pack_into(buf, body_end, seq)
    except struct.error as e:
        raise WireError(f"sequence number out of range: {seq}") from e
    buf[body_end + _SEQ.size:] = key.tag(link, memoryview(buf)[:body_end + _SEQ.size])


def verify_auth(data: bytes, key: MacKey, link: bytes) -> int:
    """The sender's sequence number of version-3 bytes heard on ``link``, once their tag verified;
    AuthError("forged") when it does not (nothing of the datagram is parsed before)."""
    n = len(data)
    if n < HEADER_LEN + AUTH_TRAILER_LEN:
        raise AuthError("forged")
    seq_end = n - TAG_LEN
    view = memoryview(data)
    if not hmac.compare_digest(key.tag(link, view[:seq_end]), view[seq_end:]):
        raise AuthError("forged")
    return _SEQ.unpack_from(data, seq_end - _SEQ.size)[0]


def authentic_data(data: bytes) -> tuple | None:
    """:func:`plain_data` for version-3 bytes whose tag :func:`verify_auth` verified (the tag stands for
    the CRC): the fields of the common DATA packet, or None for anything else."""
    body_end = len(data) - AUTH_TRAILER_LEN
    if body_end >= _PLAIN_LEN and data[2] == DATA:
        h = _PLAIN_DATA.unpack_from(data)
        if (h[0] == MAGIC and h[1] == AUTH_VERSION and not h[16] and not h[17] and not h[15] & ~KNOWN_FLAGS
                and _PLAIN_LEN + h[19] == body_end):       # plain_data's checks, the tag standing for the CRC
            return h
    return None


def decode_authentic(data: bytes) -> Packet:
    """The packet of version-3 bytes whose tag :func:`verify_auth` verified; WireError if they do not parse."""
    h = authentic_data(data)
    if h is not None:
        return plain_packet(h, data)
    if len(data) < HEADER_LEN + AUTH_TRAILER_LEN:
        raise WireError(f"datagram too short ({len(data)} bytes)")
    return _parse_general(data, len(data) - AUTH_TRAILER_LEN, AUTH_VERSION)


def plain_data(data: bytes) -> tuple | None:
    """The header and DATA body fields of ``data`` when it is the common DATA packet (no SACK blocks, no
    SNACK entries) and valid (magic, version, flags, lengths, CRC), in ``_PLAIN_DATA``'s order: magic,
    version, type, src, sport, dst, dport, hops, snoop_after, snoop_limit, snoop_count, pkt_effort,
    pkt_qos (16-bit words), seq, ack, flags, nsack, nsnack, window, paylen.  None for anything else
    (:func:`decode` then takes the general path and names what is wrong)."""
    n = len(data)
    if n >= _PLAIN_LEN + _CRC.size and data[2] == DATA:
        h = _PLAIN_DATA.unpack_from(data)
        body_end = n - _CRC.size
        if (h[0] == MAGIC and h[1] == VERSION and not h[16] and not h[17] and not h[15] & ~KNOWN_FLAGS
                and _PLAIN_LEN + h[19] == body_end
                and zlib.crc32(memoryview(data)[:body_end]) == _CRC.unpack_from(data, body_end)[0]):
            return h
    return None


def decode(data: bytes) -> Packet:
    """bytes -> Packet.  Raises WireError (and nothing else) for anything that is not a valid packet."""
    h = plain_data(data)
    if h is None:
        return _decode_general(data)
    return plain_packet(h, data)


def plain_packet(h: tuple, data: bytes) -> Packet:
    """The Packet of a datagram :func:`plain_data` accepted (``h``: its fields)."""
    (_m, _v, _t, src, sport, dst, dport, hops, s_after, s_limit, s_count, effort, qos,
     seq, ack, flags, _ns, _nsn, window, paylen) = h
    return Packet(DATA, ntoa(src), sport, ntoa(dst), dport, hops,
                  AspanFields(effort / FIXED_ONE, qos / FIXED_ONE, s_after, s_limit, s_count),
                  Segment(seq, ack, flags, window, (), bytes(data[_PLAIN_LEN:_PLAIN_LEN + paylen]), ()))


# Where a relay rewrites a datagram it passes on (routing.overlay.engine's relay path): the hop count and the
# A-SPAN fields, which follow the addresses and ports in the header.
_HOPS_AT = struct.calcsize("!BBB4sH4sH")
_RELAY_FIELDS = struct.Struct("!BBBBHH")     # hops | snoop_after | snoop_limit | snoop_count | pkt_effort | pkt_qos


def relayed(data: bytes, hops: int, fields: AspanFields | None = None) -> bytearray:
    """A datagram :func:`plain_data` or :func:`authentic_data` accepted, as a relay sends it on: with hop
    count ``hops`` and, when given, the A-SPAN ``fields`` the snoop agent left (else those it came
    with).  Version 2: its CRC recomputed, the same bytes :func:`encode` gives for the decoded packet
    so changed, without decoding the payload.  Version 3: the trailer is left for the driver to write
    for the next link (:func:`reseal`).  Raises WireError when a value does not fit its field (a hop
    count over 255, say)."""
    buf = bytearray(data)
    try:
        if fields is None:
            buf[_HOPS_AT] = hops
        else:
            _RELAY_FIELDS.pack_into(buf, _HOPS_AT, hops, fields.snoop_after, fields.snoop_limit,
                                    fields.snoop_count, to_fixed(fields.pkt_effort), to_fixed(fields.pkt_qos))
    except (struct.error, ValueError, TypeError) as e:
        raise WireError(f"cannot relay packet: {e}") from None
    if buf[1] == VERSION:
        body_end = len(buf) - _CRC.size
        _CRC.pack_into(buf, body_end, zlib.crc32(memoryview(buf)[:body_end]))
    return buf


def _decode_general(data: bytes) -> Packet:
    """decode for any bytes: every check in order, WireError with the reason."""
    n = len(data)
    if n < HEADER_LEN + _CRC.size:
        raise WireError(f"datagram too short ({n} bytes)")
    body_end = n - _CRC.size
    (crc,) = _CRC.unpack_from(data, body_end)
    if zlib.crc32(memoryview(data)[:body_end]) != crc:
        raise WireError("CRC mismatch")
    return _parse_general(data, body_end, VERSION)


def _parse_general(data: bytes, body_end: int, expected_version: int) -> Packet:
    """Header and body of ``data[:body_end]`` (its trailer checked already), every check in order."""
    (magic, version, ptype, src, sport, dst, dport, hops, s_after, s_limit, s_count,
     effort, qos) = _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise WireError(f"bad magic {magic:#x}")
    if version != expected_version:
        raise WireError(f"unsupported version {version}")
    fields = AspanFields(effort / FIXED_ONE, qos / FIXED_ONE, s_after, s_limit, s_count)
    pkt = Packet(ptype, ntoa(src), sport, ntoa(dst), dport, hops, fields)
    off = HEADER_LEN
    if ptype == DATA:
        if off + _DATA.size > body_end:
            raise WireError("truncated DATA body")
        seq, ack, flags, nsack, nsnack, window, paylen = _DATA.unpack_from(data, off)
        off += _DATA.size
        ts = bool(flags & TS_PRESENT)
        flags &= ~TS_PRESENT
        if flags & ~KNOWN_FLAGS:
            raise WireError(f"unknown TCP flags {flags:#x}")
        if nsack > MAX_SACK_BLOCKS or nsnack > MAX_SNACK:
            raise WireError("too many SACK blocks or SNACK entries")
        if off + nsack * 8 + nsnack * 4 + (_TS.size if ts else 0) + paylen != body_end:
            raise WireError("DATA length fields disagree with datagram size")
        sack = tuple(_SACK.unpack_from(data, off + 8 * i) for i in range(nsack))
        off += 8 * nsack
        snack = tuple(_U32.unpack_from(data, off + 4 * i)[0] for i in range(nsnack))
        off += 4 * nsnack
        tsval: int | None = None
        tsecr = 0
        if ts:
            tsval, tsecr = _TS.unpack_from(data, off)
            off += _TS.size
        pkt.segment = Segment(seq, ack, flags, window, sack, bytes(data[off:body_end]), snack, tsval, tsecr)
    elif ptype == PROBE:
        if off + _PROBE.size != body_end:
            raise WireError("PROBE body has the wrong size")
        seq, ratio = _PROBE.unpack_from(data, off)
        if not (ratio == -1.0 or _f32_ok(ratio)):
            raise WireError("probe ratio out of range")
        pkt.probe = Probe(seq, ratio)
    elif ptype == LSA:
        pkt.lsa = _parse_lsa(data, off, body_end)
    else:
        raise WireError(f"unknown packet type {ptype}")
    return pkt


IP_UDP_OVERHEAD = 28


def wire_size(pkt: Packet) -> int:
    """Bytes the packet occupies on the link (overlay encoding plus IPv4 and UDP headers), without encoding it."""
    size = HEADER_LEN + _CRC.size + IP_UDP_OVERHEAD
    if pkt.ptype == DATA and pkt.segment is not None:
        s = pkt.segment
        return (size + _DATA.size + 8 * len(s.sack) + 4 * len(s.snack) + (0 if s.tsval is None else _TS.size)
                + len(s.payload))
    if pkt.ptype == LSA and pkt.lsa is not None:
        return size + _LSA.size + _LSA_LINK.size * len(pkt.lsa.links)
    return size + _PROBE.size
