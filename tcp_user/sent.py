"""The sender's record of what is in flight: each segment's latest transmission time, and whether it was
ever retransmitted or SACKed (Linux's retransmission queue: ``tcp_clean_rtx_queue``, ``tcp_sacktag``).

It gives the RTT samples of RFC 6298 as Linux takes them: from every ACK that newly acknowledges a
segment sent only once (Karn's rule per segment, not one timed segment per window), cumulatively or by a
new SACK block.  Each valid sample sets the RTO from SRTT and RTTVAR again, which clears any backoff
(RFC 6298 sec. 5.7 with 2.3; Linux resets ``icsk_backoff`` on every valid measurement).

Sequence numbers are the connection's unwrapped ones; ranges are half-open ``[start, end)``.  The
records are only ever created by the connection's own transmissions, so their number is bounded by
what is in flight; :data:`MAX_RECORDS` bounds it anyway (a sender whose peer never acknowledges and a
window of 1-byte segments), forgetting the oldest records' times, and :attr:`SentLog.forgotten` counts
what it forgot.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

MAX_RECORDS = 1 << 14


class SentLog:
    """In-flight segments in sequence order: ``starts[i]`` .. ``ends[i]`` sent last at ``times[i]``."""

    __slots__ = ("starts", "ends", "times", "order", "retransmitted", "sacked", "lost", "forgotten", "delivered",
                 "sends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.times: list[float] = []
        self.order: list[int] = []          # the transmission's place in the order of all transmissions
        self.sends = 0                      # transmissions so far (ties of ``times`` in virtual time)
        self.retransmitted: list[bool] = []
        self.sacked: list[bool] = []
        self.lost: list[bool] = []          # marked lost by RACK (tcp_user.rack), not resent since
        self.forgotten = 0                  # records dropped by the MAX_RECORDS bound
        # (last transmission time, its order, end, retransmitted) of each record newly delivered,
        # cumulatively or by SACK, since the reader (RACK) last took them; cleared by it
        self.delivered: list[tuple[float, int, int, bool]] = []

    def __len__(self) -> int:
        return len(self.starts)

    def _split(self, at: int) -> None:
        """Make ``at`` a record boundary if it falls inside a record."""
        i = bisect_right(self.starts, at) - 1
        if i >= 0 and self.starts[i] < at < self.ends[i]:
            self.starts.insert(i + 1, at)
            self.ends.insert(i + 1, self.ends[i])
            self.times.insert(i + 1, self.times[i])
            self.order.insert(i + 1, self.order[i])
            self.retransmitted.insert(i + 1, self.retransmitted[i])
            self.sacked.insert(i + 1, self.sacked[i])
            self.lost.insert(i + 1, self.lost[i])
            self.ends[i] = at

    def on_transmit(self, start: int, end: int, now: float) -> None:
        """``[start, end)`` left at ``now``: what it covers of earlier records is a retransmission, the
        rest a first transmission."""
        if end <= start:
            return
        self._split(start)
        self._split(end)
        lo = bisect_left(self.starts, start)
        hi = bisect_left(self.starts, end)
        self.sends += 1
        for i in range(lo, hi):
            self.times[i] = now
            self.order[i] = self.sends
            self.retransmitted[i] = True
            self.lost[i] = False
        top = self.ends[-1] if self.ends else start
        if end > top:
            s = top if top > start else start
            self.starts.append(s)
            self.ends.append(end)
            self.times.append(now)
            self.order.append(self.sends)
            self.retransmitted.append(False)
            self.sacked.append(False)
            self.lost.append(False)
        if len(self.starts) > MAX_RECORDS:
            drop = len(self.starts) - MAX_RECORDS
            for seq in (self.starts, self.ends, self.times, self.order, self.retransmitted, self.sacked, self.lost):
                del seq[:drop]
            self.forgotten += drop

    def on_cumulative_ack(self, ack: int) -> tuple[float | None, bool]:
        """Forget what ``ack`` acknowledges.  Returns (the earliest transmission time of a newly
        acknowledged segment sent once and not SACKed before, or None; whether any segment it
        acknowledges was retransmitted: Karn's rule then takes no sample from this ACK)."""
        self._split(ack)
        n = bisect_left(self.starts, ack)
        if n == 0:
            return None, False
        first: float | None = None
        retrans = False
        for i in range(n):
            if not self.sacked[i]:
                self.delivered.append((self.times[i], self.order[i], self.ends[i], self.retransmitted[i]))
            if self.retransmitted[i]:
                retrans = True
            elif not self.sacked[i] and first is None:
                first = self.times[i]
        for seq in (self.starts, self.ends, self.times, self.order, self.retransmitted, self.sacked, self.lost):
            del seq[:n]
        return first, retrans

    def on_sacked(self, start: int, end: int) -> float | None:
        """``[start, end)`` newly SACKed: the earliest transmission time of a segment in it sent once,
        or None."""
        self._split(start)
        self._split(end)
        first: float | None = None
        for i in range(bisect_left(self.starts, start), bisect_left(self.starts, end)):
            if not self.sacked[i]:
                self.sacked[i] = True
                self.delivered.append((self.times[i], self.order[i], self.ends[i], self.retransmitted[i]))
                if not self.retransmitted[i] and (first is None or self.times[i] < first):
                    first = self.times[i]
        return first
