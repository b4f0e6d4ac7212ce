"""ACKs forged toward the data sender on the kernel data plane (ACK-all, paper 004; SLACK, paper 003).

A scheme's new ACK (:class:`aspan.agent.GeneratedAck`) is built from a template, the
receiver's last ACK of the flow: :func:`forge_ack` keeps what identifies the
connection and writes the new ACK number, window and timestamp echo.  The window
goes into the 16-bit field with the receiver's window scale, which
:class:`WindowScales` learns from the handshake (RFC 7323, 2.2).  No I/O.
"""
from __future__ import annotations

import struct

from routing.kernel.ipv4 import (ACK, TCPOPT_NOP, TCPOPT_TIMESTAMP, Flow, PacketError, finish_ip_header, ip_header,
                          tcp_checksum, tcp_options, tcp_window)

_TCP_HEAD = struct.Struct("!HHIIBBHHH")     # ports, seq, ack, data offset, flags, window, checksum, urgent
_TS_OPTION = struct.Struct("!BBBBII")       # NOP, NOP, kind 8, length 10, TSval, TSecr (RFC 7323, appendix A)
_U16 = struct.Struct("!H")


class WindowScales:
    """The window scale each direction announced in its SYN (RFC 7323, 2.2), to read and write windows.

    Bounded: at most ``max_directions`` directions are remembered; past that the oldest is
    forgotten (an ACK of a forgotten flow then has an unknown scale: its window is not read).
    """

    def __init__(self, max_directions: int = 4096) -> None:
        self._shift: dict[tuple[str, int, str, int], int | None] = {}
        self.max_directions = max_directions

    def note_syn(self, flow: Flow, ihl: int, data: bytes) -> None:
        """Remember the window scale a SYN or SYN-ACK of ``flow`` (TCP header at ``ihl``) announces for its
        direction."""
        try:
            shift = tcp_options(data, ihl).wscale
        except PacketError:
            shift = None
        sh = self._shift
        if len(sh) >= self.max_directions and flow.key not in sh:
            del sh[next(iter(sh))]
        sh[flow.key] = shift

    def shift(self, flow: Flow) -> int | None:
        """The window scale of ``flow``'s sender: 0 unless both SYNs carried the option; None if unseen."""
        sh = self._shift
        key, rkey = flow.key, flow.rkey
        if key not in sh or rkey not in sh:
            return None
        mine, other = sh[key], sh[rkey]
        return mine if mine is not None and other is not None else 0

    def window_bytes(self, flow: Flow, ihl: int, data: bytes) -> int | None:
        """The window in bytes of a packet of ``flow`` (TCP header at ``ihl``); None when the handshake was
        not seen here (scale unknown)."""
        shift = self.shift(flow)
        return None if shift is None else tcp_window(data, ihl) << shift


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
    return bytes(finish_ip_header(header)) + bytes(tcp)
