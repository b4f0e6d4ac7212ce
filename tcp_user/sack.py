"""Helpers for selective acknowledgment (RFC 2018) and its loss recovery (RFC 6675).

Both structures work on *unwrapped* sequence numbers (plain Python ints that never
wrap, relative to the ISS/IRS of the connection); the connection converts to and
from 32-bit wire values at its boundary.  Ranges are half-open ``[start, end)``.

* :class:`Scoreboard` -- the sender's record of SACKed ranges (RFC 6675 sec. 3), with
  ``IsLost`` and ``SetPipe`` computed per hole.
* :class:`Reassembly` -- the receiver's out-of-order queue, which also chooses the
  SACK blocks to report (RFC 2018 sec. 4).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right


def _end(block: list) -> int:
    return block[1]


def _data_end(block: list) -> int:
    return block[0] + len(block[1])


def _start(block: list) -> int:
    return block[0]


class Scoreboard:
    """SACKed ranges above SND.UNA, kept sorted, disjoint and merged."""

    __slots__ = ("blocks", "sacked")

    def __init__(self) -> None:
        self.blocks: list[list[int]] = []   # [start, end) pairs, ascending
        self.sacked = 0                     # total bytes SACKed

    def clear(self) -> None:
        self.blocks.clear()
        self.sacked = 0

    def add(self, start: int, end: int) -> int:
        """Mark ``[start, end)`` SACKed; returns how many bytes were newly SACKed."""
        if end <= start:
            return 0
        blocks = self.blocks
        i = bisect_left(blocks, start, key=_end)   # first block ending at or after start
        if i == len(blocks) or blocks[i][0] > end:
            blocks.insert(i, [start, end])
            self.sacked += end - start
            return end - start
        j = i
        covered = 0
        new_start = min(start, blocks[i][0])
        new_end = end
        while j < len(blocks) and blocks[j][0] <= end:
            covered += blocks[j][1] - blocks[j][0]
            if blocks[j][1] > new_end:
                new_end = blocks[j][1]
            j += 1
        blocks[i:j] = [[new_start, new_end]]
        added = (new_end - new_start) - covered
        self.sacked += added
        return added

    def advance(self, una: int) -> None:
        """Forget everything below the cumulative ACK ``una``."""
        blocks = self.blocks
        while blocks and blocks[0][0] < una:
            b = blocks[0]
            if b[1] <= una:
                self.sacked -= b[1] - b[0]
                del blocks[0]
            else:
                self.sacked -= una - b[0]
                b[0] = una
                break

    def highest(self) -> int | None:
        """End of the highest SACKed range (one past RFC 6675's "highest octet SACKed")."""
        return self.blocks[-1][1] if self.blocks else None

    def skip(self, seq: int) -> int:
        """``seq``, or the end of the SACKed range containing it."""
        blocks = self.blocks
        i = bisect_right(blocks, seq, key=_start) - 1
        if i >= 0 and blocks[i][1] > seq:
            return blocks[i][1]
        return seq

    def next_start(self, seq: int) -> int | None:
        """Start of the first SACKed range beginning above ``seq``."""
        blocks = self.blocks
        i = bisect_right(blocks, seq, key=_start)
        return blocks[i][0] if i < len(blocks) else None

    def sacked_between(self, lo: int, hi: int) -> int:
        """SACKed bytes within ``[lo, hi)``."""
        total = 0
        for s, e in self.blocks:
            if s >= hi:
                break
            if e > lo:
                total += min(e, hi) - max(s, lo)
        return total

    def is_lost(self, seq: int, dupthresh: int, mss: int) -> bool:
        """RFC 6675 sec. 4 IsLost(seq): DupThresh discontiguous SACKed ranges above seq,
        or more than (DupThresh - 1) * SMSS bytes SACKed above it."""
        nblocks = 0
        nbytes = 0
        for s, e in reversed(self.blocks):
            if e <= seq:
                break
            nblocks += 1
            nbytes += e - max(s, seq + 1)
        return nblocks >= dupthresh or nbytes > (dupthresh - 1) * mss

    def holes(self, una: int, dupthresh: int, mss: int) -> list[tuple[int, int, bool]]:
        """The un-SACKed ranges between ``una`` and the highest SACKed byte, ascending,
        each with IsLost().  Every octet of one hole has the same SACKed data above it,
        so IsLost is evaluated once per hole (RFC 6675 sec. 4)."""
        blocks = self.blocks
        out: list[tuple[int, int, bool]] = []
        nbytes = 0
        limit = (dupthresh - 1) * mss
        k = len(blocks)
        while k > 0:
            k -= 1
            s, e = blocks[k]
            nbytes += e - s
            lo = blocks[k - 1][1] if k > 0 else una
            if lo < s:
                out.append((lo, s, (len(blocks) - k) >= dupthresh or nbytes > limit))
        out.reverse()
        return out

    def pipe(self, una: int, high_data: int, high_rxt: int,
             holes: list[tuple[int, int, bool]]) -> int:
        """RFC 6675 sec. 4 SetPipe(): octets presumed in the network.

        For every un-SACKed octet in [una, high_data): +1 unless IsLost, +1 more if it
        was retransmitted (is below HighRxt).  ``holes`` is :meth:`holes`' result; the
        range above the highest SACKed byte is never lost (nothing SACKed above it).
        """
        pipe = 0
        for a, b, lost in holes:
            if not lost:
                pipe += b - a
            if high_rxt > a:
                pipe += min(b, high_rxt) - a
        top = self.blocks[-1][1] if self.blocks else una
        if high_data > top:
            pipe += high_data - top
            if high_rxt > top:
                pipe += min(high_data, high_rxt) - top
        return pipe


class Reassembly:
    """The receiver's out-of-order queue plus the recency order of its SACK blocks."""

    __slots__ = ("blocks", "nbytes", "_recent", "_track")

    def __init__(self, sack: bool = True) -> None:
        self.blocks: list[list] = []   # [start, bytearray], ascending, disjoint, non-adjacent
        self.nbytes = 0
        self._recent: list[int] = []   # a sequence number inside each block, most recent first
        self._track = sack             # keep the recency order (only needed to send SACKs)

    def add(self, start: int, data: bytes) -> int:
        """Store out-of-order ``data`` at ``start``; returns how many bytes were new."""
        end = start + len(data)
        blocks = self.blocks
        if self._track:
            self._recent.insert(0, start)   # RFC 2018 sec. 4: its block is reported first
        i = bisect_left(blocks, start, key=_data_end)
        if i == len(blocks) or blocks[i][0] > end:
            blocks.insert(i, [start, bytearray(data)])
            self.nbytes += len(data)
            return len(data)
        added = 0
        b = blocks[i]
        if start < b[0]:                               # extend to the left
            head = bytearray(data[: b[0] - start])
            head += b[1]
            added += b[0] - start
            b[0] = start
            b[1] = head
        b_end = b[0] + len(b[1])
        while end > b_end:                             # extend to the right, absorbing blocks
            nxt = blocks[i + 1] if i + 1 < len(blocks) else None
            if nxt is not None and nxt[0] <= end:
                gap = data[b_end - start: nxt[0] - start]
                b[1] += gap
                b[1] += nxt[1]
                added += len(gap)
                del blocks[i + 1]
            else:
                tail = data[b_end - start:]
                b[1] += tail
                added += len(tail)
            b_end = b[0] + len(b[1])
        self.nbytes += added
        return added

    def pull(self, rcv_nxt: int, out: bytearray) -> int:
        """Move data now in order at ``rcv_nxt`` to ``out``; returns the new RCV.NXT."""
        blocks = self.blocks
        while blocks and blocks[0][0] <= rcv_nxt:
            s, data = blocks.pop(0)
            self.nbytes -= len(data)
            e = s + len(data)
            if e > rcv_nxt:
                out += memoryview(data)[rcv_nxt - s:]
                rcv_nxt = e
        return rcv_nxt

    def sack_blocks(self, rcv_nxt: int, limit: int) -> list[tuple[int, int]]:
        """Up to ``limit`` blocks, most recently changed first (RFC 2018 sec. 4).

        The first block holds the most recently received out-of-order segment; the
        rest repeat the most recently reported blocks.  The recency list is pruned to
        one entry per live block.
        """
        blocks = self.blocks
        if not blocks:
            self._recent.clear()
            return []
        out: list[tuple[int, int]] = []
        seen: set[int] = set()
        keep: list[int] = []
        for seq in self._recent:
            if seq < rcv_nxt:
                continue
            i = bisect_right(blocks, seq, key=_start) - 1
            if i < 0:
                continue
            s, data = blocks[i]
            if seq >= s + len(data) or s in seen:
                continue
            seen.add(s)
            keep.append(seq)
            if len(out) < limit:
                out.append((s, s + len(data)))
        self._recent = keep
        return out
