"""The TSval of local retransmissions on the kernel data plane (RFC 7323 timestamps, PAWS).

A cached copy carries the TSval of its first transmission.  If the receiver has
meanwhile taken a newer TSval into TS.Recent (a sender retransmission of data it
already had does that), its PAWS check (RFC 7323, 5) would discard the old copy and
answer with a duplicate ACK, for ever.  So a copy goes out with the latest TSval of
the flow seen here: the sender's clock, which never goes back.  :class:`TsvalTracker`
remembers that latest TSval per flow (bounded) and rewrites a copy.  No I/O.
"""
from __future__ import annotations

import struct

from routing.kernel.ipv4 import TCPOPT_TIMESTAMP, PacketError, fold_checksum, tcp_option_items

_U16 = struct.Struct("!H")

_TS_LEAD = b"\x01\x01\x08\x0a"              # NOP, NOP, timestamps, length 10: how Linux lays the option out
_U32 = struct.Struct("!I")
_LEAD_TSVAL = struct.Struct("!4sI")          # the four bytes before the TSval, and the TSval


def tcp_tsval_offset(data: bytes, ihl: int) -> int:
    """Byte offset of the timestamps option's TSval in the packet, -1 without the option.

    The common layout (NOP, NOP, TS first; RFC 7323, appendix A) is checked directly;
    any other is parsed.  PacketError for a malformed options area.
    """
    o = ihl + 20
    if data[o:o + 4] == _TS_LEAD and (data[ihl + 12] >> 4) * 4 >= 32:
        return o + 4
    for kind, i, n in tcp_option_items(data, ihl):
        if kind == TCPOPT_TIMESTAMP and n == 10:
            return i + 2
    return -1


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
    _U16.pack_into(out, ihl + 16, fold_checksum(s))
    return bytes(out)


class TsvalTracker:
    """The TSval of the latest data segment of each flow seen here (at most ``max_flows`` flows)."""

    def __init__(self, max_flows: int = 4096) -> None:
        self.latest: dict[tuple[str, int, str, int], int] = {}
        self.max_flows = max_flows
        self.refreshed = 0

    def note(self, key: tuple[str, int, str, int], data: bytes, ihl: int) -> None:
        """Remember the TSval of a data segment of flow ``key`` (for local retransmissions, and for
        the TSecr of ACKs acknowledging data, which echo it as the receiver would: RFC 7323, 4.3)."""
        try:
            lead, tsval = _LEAD_TSVAL.unpack_from(data, ihl + 20)
        except struct.error:                            # too short for the common layout
            lead = None
        if lead != _TS_LEAD or data[ihl + 12] < 0x80:   # not tcp_tsval_offset's first case (read inline)
            try:
                off = tcp_tsval_offset(data, ihl)
            except PacketError:
                return                                  # malformed TCP options: relayed, nothing to remember
            if off < 0:
                return
            tsval = _U32.unpack_from(data, off)[0]
        latest = self.latest
        if len(latest) >= self.max_flows and key not in latest:
            del latest[next(iter(latest))]
        latest[key] = tsval

    def refresh(self, key: tuple[str, int, str, int], data: bytes) -> bytes:
        """``data`` (a cached segment of flow ``key``) with the flow's latest TSval when that is newer."""
        latest = self.latest.get(key)
        if latest is None:
            return data
        ihl = (data[0] & 15) * 4
        try:
            off = tcp_tsval_offset(data, ihl)
        except PacketError:
            return data                                 # malformed TCP options: resent as cached
        if off < 0:
            return data
        old = _U32.unpack_from(data, off)[0]
        if not 0 < (latest - old) % (1 << 32) < (1 << 31):
            return data                                 # not newer (serial-number order)
        self.refreshed += 1
        return with_tsval(data, ihl, latest)
