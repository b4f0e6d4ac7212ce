"""Packet captures of a node: what it hears and sends, as pcapng, with the snoop agent's decisions.

The overlay's datagrams are written as IPv4/UDP frames between the nodes' mesh addresses (the
previous or next hop and this node), UDP port ``CAPTURE_PORT`` at both ends, whatever the socket
addresses of the backend were (loopback on the local backend, the Pis' addresses on the pi
backend, none in virtual time).  The kernel data plane's packets are written as the NFQUEUE
handler sees them, after the A-SPAN option was stamped or rewritten.  A packet on which the node
acted carries a comment that says what it did and why (routing.overlay.engine / routing.kernel.forwarder / routing.forwarding.step
make the notes).  The Wireshark dissector routing/wireshark/aspan.lua decodes both.
"""
from __future__ import annotations

import socket
import struct
from pathlib import Path

from routing.kernel.ipv4 import checksum
from routing.drivers.pcapng import PcapngWriter
from routing.overlay.wire import Packet, WireError, encode

CAPTURE_PORT = 0xA5A5        # 42405: the overlay's UDP port in captures (the dissector's port)
_IP = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")


def udp_frame(src: str, dst: str, payload: bytes, ident: int) -> bytes:
    """An IPv4/UDP frame carrying ``payload`` from ``src`` to ``dst`` (UDP checksum 0: none, RFC 768)."""
    total = 28 + len(payload)
    ip = bytearray(_IP.pack(0x45, 0, total, ident & 0xFFFF, 0x4000, 64, 17, 0,
                            socket.inet_aton(src), socket.inet_aton(dst)))
    struct.pack_into("!H", ip, 10, checksum(ip))
    return bytes(ip) + _UDP.pack(CAPTURE_PORT, CAPTURE_PORT, 8 + len(payload), 0) + payload


class OverlayTap:
    """One node's capture on the overlay (sim, local and pi backends)."""

    def __init__(self, path: Path, address: str, max_bytes: int) -> None:
        self.writer = PcapngWriter(path, max_bytes)
        self.address = address
        self._ident = 0

    def rx(self, now: float, data: bytes | Packet, frm: str | None, note: str | None = None) -> None:
        """A datagram this node heard (bytes as received, or the packet of the virtual-time backend)."""
        if isinstance(data, Packet):
            try:
                data = encode(data)
            except WireError as e:
                data, note = b"", (f"{note}; " if note else "") + f"not encodable: {e}"
        self._write(now, frm or "0.0.0.0", self.address, data, note)

    def tx(self, now: float, pkt: Packet, nxt: str, note: str | None = None) -> None:
        """A packet this node sends to neighbour ``nxt``."""
        try:
            data = encode(pkt)
        except WireError as e:
            data, note = b"", (f"{note}; " if note else "") + f"not encodable: {e}"
        self._write(now, self.address, nxt, data, note)

    def _write(self, now: float, src: str, dst: str, data: bytes, note: str | None) -> None:
        self._ident += 1
        self.writer.write(now, udp_frame(src, dst, data, self._ident), note)

    def close(self) -> None:
        self.writer.close()


class KernelTap:
    """One node's capture on the kernel data plane (netns, pi with the kernel data plane)."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.writer = PcapngWriter(path, max_bytes)

    def packet(self, now: float, data: bytes, note: str | None = None) -> None:
        self.writer.write(now, data, note)

    def close(self) -> None:
        self.writer.close()
