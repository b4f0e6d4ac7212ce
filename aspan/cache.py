"""Per-flow snoop cache keyed by byte sequence number, bounded in bytes per node."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

SEQ_MOD = 1 << 32
HALF = 1 << 31


def unwrap(ref: int, seq32: int) -> int:
    """Map a 32-bit sequence number to the 64-bit line nearest to ``ref`` (an unwrapped number)."""
    return ref + (seq32 - ref + HALF) % SEQ_MOD - HALF   # the distance from ref, in [-HALF, HALF)


@dataclass(slots=True)
class FlowCache:
    """Cached segments of one flow, by unwrapped sequence number (kept sorted)."""

    seqs: list[int] = field(default_factory=list)
    entries: dict[int, tuple[int, Any]] = field(default_factory=dict)  # seq -> (length, packet)

    def add(self, seq: int, length: int, packet: Any) -> bool:
        """Store a segment; False if that sequence number was already cached (packet refreshed)."""
        if seq in self.entries:
            self.entries[seq] = (length, packet)
            return False
        self.entries[seq] = (length, packet)
        if not self.seqs or seq > self.seqs[-1]:
            self.seqs.append(seq)
        else:
            bisect.insort(self.seqs, seq)
        return True

    def free_below(self, ack: int) -> tuple[int, int]:
        """Drop every segment wholly below ``ack``; returns (segments, bytes) freed."""
        n = freed = 0
        seqs = self.seqs
        while n < len(seqs):
            length = self.entries[seqs[n]][0]
            if seqs[n] + length > ack:
                break
            freed += length
            del self.entries[seqs[n]]
            n += 1
        if n:
            del seqs[:n]
        return n, freed

    def get(self, seq: int) -> tuple[int, Any] | None:
        return self.entries.get(seq)

    def __len__(self) -> int:
        return len(self.seqs)
