"""A minimal pcapng writer (one interface, raw IPv4 frames, a comment per packet), bounded in size.

pcapng (draft-ietf-opsawg-pcapng): a Section Header Block, one Interface Description Block
(LINKTYPE_RAW: each frame starts with its IPv4 header; timestamps in microseconds, the
default resolution), then one Enhanced Packet Block per packet, with an ``opt_comment``
option when the packet carries a comment (Wireshark shows it as ``frame.comment``).

The file never grows past ``max_bytes``: the packet that would cross the bound and every
later one are not written, ``cut`` becomes True and ``dropped`` counts them, so a run can
say that its capture is incomplete.  The file is written through a buffer and flushed on
:meth:`PcapngWriter.flush` / :meth:`PcapngWriter.close`.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

LINKTYPE_RAW = 101
_SHB = 0x0A0D0D0A
_IDB = 0x00000001
_EPB = 0x00000006
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_OPT_COMMENT = 1
_OPT_END = 0


def _pad4(n: int) -> int:
    return (4 - n % 4) % 4


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * _pad4(len(value))


def _block(block_type: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return struct.pack("<II", block_type, total) + body + struct.pack("<I", total)


class PcapngWriter:
    """Packets with timestamps (seconds) and optional comments into ``path``."""

    def __init__(self, path: Path, max_bytes: int, linktype: int = LINKTYPE_RAW) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._f: BinaryIO | None = open(self.path, "wb", buffering=1 << 16)
        head = _block(_SHB, struct.pack("<IHHq", _BYTE_ORDER_MAGIC, 1, 0, -1))
        head += _block(_IDB, struct.pack("<HHI", linktype, 0, 0))
        self._f.write(head)
        self.bytes = len(head)
        self.packets = 0
        self.dropped = 0
        self.cut = False

    def write(self, t: float, frame: bytes, comment: str | None = None) -> bool:
        """Append one packet; False if it was not written (the size bound was reached, or closed)."""
        if self._f is None or self.cut:
            self.dropped += 1
            return False
        us = int(round(t * 1e6))
        body = struct.pack("<IIIII", 0, (us >> 32) & 0xFFFFFFFF, us & 0xFFFFFFFF, len(frame), len(frame))
        body += frame + b"\0" * _pad4(len(frame))
        if comment:
            body += _option(_OPT_COMMENT, comment.encode("utf-8")) + _option(_OPT_END, b"")
        block = _block(_EPB, body)
        if self.bytes + len(block) > self.max_bytes:
            self.cut = True
            self.dropped += 1
            return False
        self._f.write(block)
        self.bytes += len(block)
        self.packets += 1
        return True

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def stats(self) -> dict[str, int | bool]:
        """For the node's ``node_stop`` event: packets and bytes written, packets left out, cut."""
        return {"packets": self.packets, "bytes": self.bytes, "dropped": self.dropped, "cut": self.cut}
