"""Mahimahi ``mm-link`` traces (issue 25, item 4): written from a link trace, replayed as an emulated link.

The format (Netravali et al., "Mahimahi: Accurate Record-and-Replay for HTTP", USENIX ATC 2015; mahimahi's
``mm-link`` man page and ``src/packet/link_queue.cc``): a text file, one line per *delivery opportunity*,
the line an integer, the milliseconds since the link started at which the opportunity comes; lines do not
decrease, several lines may name the same millisecond.  One opportunity carries ``PACKET_SIZE`` = 1504
bytes of the queue's head: several small packets, or part of a large one, whose last byte goes in a later
opportunity.  An opportunity that finds the queue empty is wasted.  When the trace is used up it starts
again: its period is its last line's timestamp.

**Export** (:func:`opportunities`): a link trace says what share of its probes a link delivered per
interval, not a rate.  A link of nominal rate R (``rate_mbps``: what the link could carry with no loss)
that delivers a share d of its frames carries R x d: over an interval of ``dt_s`` the link gets
R x d x dt_s / (1504 x 8) opportunities, spread evenly (the k-th opportunity at the millisecond where the
running sum of that rate passes k x 1504 bytes).  The delivery at each moment is the one the loss model
``trace`` would replay (routing/links/trace_loss.py: no interpolation, gaps hold the last measured interval).
Millisecond 0 is the recorded flows' start (trace time 0); the export covers trace time 0 up to the end of
the link's last interval.

**Import** (:class:`OpportunityQueue`): the link rule of routing.links.linkem with serialisation at a rate
replaced by the trace's opportunities; drop-tail at ``queue_packets`` and the propagation delay stay.
Millisecond 0 is when the experiment's flows start (as ``at_s: 0`` of the loss model ``trace``); the
trace loops before that too (so the settling probes see its end).
"""
from __future__ import annotations

import bisect
import math
from collections import deque
from pathlib import Path
from typing import Callable, Iterable

from routing.links.linkem import EndsQueue
from tracefiles import read_mahimahi

PACKET_SIZE = 1504          # bytes one delivery opportunity carries (mahimahi link_queue.hh: PACKET_SIZE)
def opportunities(delivery_at: Callable[[float], float], end_s: float, rate_mbps: float) -> list[int]:
    """The opportunities (ms from trace time 0) of a link of nominal ``rate_mbps`` delivering
    ``delivery_at(t)`` of its frames at trace time t, up to ``end_s`` (module docstring, "Export")."""
    if not rate_mbps > 0 or not end_s > 0:
        raise ValueError(f"expected rate_mbps > 0 and a trace ending after 0 s, got {rate_mbps}, {end_s}")
    per_ms = rate_mbps * 1e6 / 8 / 1000 / PACKET_SIZE      # opportunities a millisecond at delivery 1
    out: list[int] = []
    total = 0.0
    for ms in range(int(math.ceil(end_s * 1000))):
        total += per_ms * delivery_at(ms / 1000)
        while len(out) + 1 <= total + 1e-9:
            out.append(ms)
    return out


class Schedule:
    """A parsed trace's opportunities in seconds and its period, read once per process and shared by every
    link direction it serves (a trace may hold MAX_LINES opportunities)."""

    def __init__(self, ms: list[int]) -> None:
        if not ms or ms[-1] <= 0:
            raise ValueError("an opportunity schedule needs a last opportunity after 0 ms")
        self.times = [t / 1000.0 for t in ms]
        self.period = ms[-1] / 1000.0

    @classmethod
    def read(cls, path: str | Path) -> "Schedule":
        return cls(read_mahimahi(path))


class OpportunityQueue(EndsQueue):
    """One link direction served by a Mahimahi schedule: the interface of routing.links.linkem.LinkQueue.

    ``admit(now, size)`` computes, when the packet enters, the opportunity that carries its last byte:
    the queue is FIFO and the schedule fixed, so that is known at once.  State: where the last admitted
    packet ended (an opportunity and the bytes left in it) and the end times of the packets still queued
    (at most ``queue_packets``)."""

    def __init__(self, schedule: Schedule, origin: float, delay_s: float, queue_packets: int) -> None:
        self.times = schedule.times
        self.period = schedule.period
        self.origin = origin
        self.delay_s = delay_s
        self.queue_packets = queue_packets
        self._ends: deque[float] = deque()
        self._k = 0                 # the opportunity the next packet of a busy queue starts in
        self._at = -math.inf        # its time (absolute)
        self._left = 0              # bytes left in it
        self.admitted = 0
        self.dropped = 0

    def _opportunity(self, k: int) -> float:
        """The absolute time of opportunity number ``k`` (counted from the origin's cycle 0; negative: before)."""
        n = len(self.times)
        cycle, i = divmod(k, n)
        return self.origin + cycle * self.period + self.times[i]

    def _first_at_or_after(self, t: float) -> int:
        n = len(self.times)
        cycle = math.floor((t - self.origin) / self.period)
        # less a nanosecond: the float sum of cycles must not step over an opportunity at exactly t
        i = bisect.bisect_left(self.times, t - self.origin - cycle * self.period - 1e-9)
        return cycle * n + i

    def admit(self, now: float, size_bytes: int) -> float | None:
        """The packet's arrival at the far end, or None when the queue is full (drop-tail)."""
        if self.queued(now) >= self.queue_packets:
            self.dropped += 1
            return None
        if self._at >= now:                           # the queue is busy: go on where the last packet ended
            k, left = self._k, self._left
        else:                                         # idle: the first opportunity from now, whole
            k = self._first_at_or_after(now)
            left = PACKET_SIZE
        need = size_bytes
        while need > left:
            need -= left
            k += 1
            left = PACKET_SIZE
        left -= need
        if left == 0:          # the opportunity is used up: the next packet starts in the one after
            self._k, self._left = k + 1, PACKET_SIZE
            self._at = self._opportunity(k + 1)
        else:
            self._k, self._left = k, left
            self._at = self._opportunity(k)
        done = self._opportunity(k)
        self._ends.append(done)
        self.admitted += 1
        return done + self.delay_s
