"""The A-SPAN IPv4 option: the header fields of the kernel data plane, encoded and rewritten in place.

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
snoop_limit to 0..15 (hops saturates at 15), so the kernel data plane accepts
flows whose routes have at most 15 hops (experiments.build.refuse_route_hops)
and snoop_after / snoop_limit of at most 15.

pkt_effort and pkt_qos use the one fixed-point precision of aspan.fields
(``to_fixed``), as the overlay wire does.
"""
from __future__ import annotations

import struct
from typing import Any

from aspan.fields import FIXED_ONE, AspanFields, to_fixed
from routing.kernel.ipv4 import OPTION_LEN, PacketError, finish_ip_header, fold_checksum

EXPERIMENTAL_OPTIONS = (30, 94, 158, 222)   # RFC 4727, section 2.5
DEFAULT_OPTION = 94
MAX_NIBBLE = 15

_OPT = struct.Struct("!BBHHBB")
_U16 = struct.Struct("!H")


def check_fields(fields: AspanFields) -> None:
    """ValueError if the header fields do not fit the option (snoop_after, snoop_limit: 4 bits)."""
    for name in ("snoop_after", "snoop_limit"):
        v = getattr(fields, name)
        if not 0 <= v <= MAX_NIBBLE:
            raise ValueError(f"{name} = {v} does not fit the option's 4 bits (0..{MAX_NIBBLE})")


def _option_words(fields: AspanFields, hops: int) -> tuple[int, int, int]:
    """The three 16-bit words after the option's type and length: pkt_effort, pkt_qos, nibbles."""
    c = fields.snoop_count
    return (to_fixed(fields.pkt_effort), to_fixed(fields.pkt_qos),
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
    return b"".join((bytes((n0 >> 8, n0 & 0xFF)), _U16.pack(n1), data[4:10], _U16.pack(fold_checksum(s)),
                     data[12:ihl], option, data[ihl:]))


# Memos of the option words per header-field values (a flow's packets carry a handful of them):
# the fields' values (and hops, and the option type or the words replaced) -> what the
# functions below compute from them alone; bounded, cleared when full.
_MEMO_MAX = 4096
_STAMP_MEMO: dict[tuple[Any, ...], tuple[bytes, int]] = {}
_RESTAMP_MEMO: dict[tuple[Any, ...], tuple[bytes, int]] = {}


# The IPv4 header as the two functions below read and write it, with one unpack and one pack per
# packet; memoised per header length or option offset (both below 60), made up front for the usual
# ones (a header without options; the option at offset 20, where this backend puts it).
_STAMP_HEADS: dict[int, tuple[struct.Struct, struct.Struct]] = {}
_RESTAMP_HEADS: dict[int, struct.Struct] = {}


def _stamp_heads(ihl: int) -> tuple[struct.Struct, struct.Struct]:
    """stamp_option's view of an IPv4 header of ``ihl`` bytes: as it reads it (version/IHL/TOS, total
    length, bytes 4-9, header checksum, bytes 12 to the end: addresses and any options) and as it writes
    it (the same, then the A-SPAN option)."""
    heads = _STAMP_HEADS.get(ihl)
    if heads is None:
        heads = _STAMP_HEADS[ihl] = (struct.Struct(f"!HH6sH{ihl - 12}s"), struct.Struct(f"!HH6sH{ihl - 12}s8s"))
    return heads


def _restamp_head(offset: int) -> struct.Struct:
    """restamp_option's view of an IPv4 header with the option at ``offset``, up to the option's words:
    bytes 0-9, header checksum, bytes 12 to the option's words, its three words."""
    head = _RESTAMP_HEADS.get(offset)
    if head is None:
        head = _RESTAMP_HEADS[offset] = struct.Struct(f"!10sH{offset - 10}s6s")
    return head


_STAMP_HEADS_20 = _stamp_heads(20)
_RESTAMP_HEAD_20 = _restamp_head(20)


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
    head, stamped = _STAMP_HEADS_20 if ihl == 20 else _stamp_heads(ihl)
    w0, w1, rest, hc, addrs = head.unpack_from(data)
    n0 = w0 + (2 << 8)                       # IHL + 2 words
    n1 = w1 + OPTION_LEN
    s = (~hc & 0xFFFF) + (~w0 & 0xFFFF) + n0 + (~w1 & 0xFFFF) + n1 + words
    s = (s & 0xFFFF) + (s >> 16)             # fold_checksum, inline
    s = (s & 0xFFFF) + (s >> 16)
    return stamped.pack(n0, n1, rest, ~s & 0xFFFF, addrs, option) + data[ihl:]


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
    return b"".join((data[:10], _U16.pack(fold_checksum(s)), data[12:offset], option, data[offset + OPTION_LEN:]))


def restamp_option(data: bytes, offset: int, fields: AspanFields, hops: int) -> bytes:
    """``rewrite_option(data, ihl, offset, encode_option(fields, hops, type))`` in one step (the forwarders' hot path).

    The option at ``offset`` keeps its type and length; its three words and the header
    checksum (incrementally, RFC 1624 eqn. 3) are rewritten.
    """
    head = _RESTAMP_HEAD_20 if offset == 20 else _restamp_head(offset)
    start, hc, middle, old = head.unpack_from(data)
    key = (old, fields.pkt_effort, fields.pkt_qos, fields.snoop_after, fields.snoop_limit, fields.snoop_count, hops)
    memo = _RESTAMP_MEMO.get(key)
    if memo is None:
        n0, n1, n2 = _option_words(fields, hops)
        o0, o1, o2 = _W3.unpack(old)
        if len(_RESTAMP_MEMO) >= _MEMO_MAX:
            _RESTAMP_MEMO.clear()
        memo = _RESTAMP_MEMO[key] = (_W3.pack(n0, n1, n2),
                                     (~o0 & 0xFFFF) + (~o1 & 0xFFFF) + (~o2 & 0xFFFF) + n0 + n1 + n2)
    words, delta = memo
    s = (~hc & 0xFFFF) + delta
    s = (s & 0xFFFF) + (s >> 16)             # fold_checksum, inline
    s = (s & 0xFFFF) + (s >> 16)
    return head.pack(start, ~s & 0xFFFF, middle, words) + data[offset + OPTION_LEN:]


def strip_option(data: bytes, ihl: int, offset: int) -> bytes:
    """``data`` without the 8-byte option at ``offset`` (for tools; the backend leaves it in)."""
    header = bytearray(data[:ihl])
    del header[offset:offset + OPTION_LEN]
    header[0] = 0x40 | (len(header) // 4)
    _U16.pack_into(header, 2, len(data) - OPTION_LEN)
    return b"".join((finish_ip_header(header), memoryview(data)[ihl:]))
