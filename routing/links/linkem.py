"""One directed link as arithmetic: serialisation at a rate behind the packets before it, then a
propagation delay, drop-tail when its queue is full.  No I/O, no clock: time is a ``now`` argument.

The sim's links (experiments/backends/sim.py ``SimLink``) and the netns backend's held NFQUEUE
verdicts (routing/drivers/link_shaper.py) both ask this one rule when a packet arrives at the far end, so a
``link:`` section means the same on both.

The rule (as the sim has always had it):

* a packet that finds ``queue_packets`` packets waiting or being serialised is dropped (drop-tail);
* otherwise its serialisation starts when the link is free (``max(now, busy_until)``) and lasts
  ``size * 8 / rate_bps`` seconds; it leaves the queue at the end of its serialisation;
* it arrives ``delay_s`` after that.

State is bounded: the queue holds at most ``queue_packets`` serialisation end times.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class LinkParams:
    """A link direction's settings: ``rate_bps`` may be ``math.inf`` (no serialisation time)."""

    rate_bps: float
    delay_s: float
    queue_packets: int

    def __post_init__(self) -> None:
        if not self.rate_bps > 0 or self.delay_s < 0 or self.queue_packets < 1:
            raise ValueError(f"link: expected rate > 0, delay >= 0, queue >= 1, got {self}")


class EndsQueue:
    """A drop-tail queue known by when each packet in it finishes leaving (``_ends``, in order): shared by the
    rate-limited link here and Mahimahi's delivery opportunities (routing.links.mahimahi)."""

    _ends: deque[float]

    def queued(self, now: float) -> int:
        """Packets waiting or being serialised at ``now`` (a packet has left once its serialisation ended)."""
        ends = self._ends
        while ends and ends[0] <= now:
            ends.popleft()
        return len(ends)


class LinkQueue(EndsQueue):
    """The state of one link direction: when it is free, and the packets not yet serialised."""

    def __init__(self, params: LinkParams) -> None:
        self.params = params
        self.busy_until = 0.0
        self._ends: deque[float] = deque()   # serialisation end of every packet still in the queue
        self.admitted = 0
        self.dropped = 0

    def admit(self, now: float, size_bytes: int) -> float | None:
        """A packet of ``size_bytes`` enters the link at ``now``: the time it arrives at the far end,
        or None when the queue is full (drop-tail; counted in :attr:`dropped`)."""
        p = self.params
        if self.queued(now) >= p.queue_packets:
            self.dropped += 1
            return None
        start = now if now > self.busy_until else self.busy_until
        done = start + size_bytes * 8 / p.rate_bps if p.rate_bps != math.inf else start
        self.busy_until = done
        self._ends.append(done)
        self.admitted += 1
        return done + p.delay_s


def count_release(stats: dict[str, int], due: float, now: float) -> None:
    """Count one held packet let go at ``now`` that was due at ``due``: ``released``, and its lateness in
    microseconds (``late_sum_us``, ``late_max_us``, ``late_1ms``: more than 1 ms late).  The netns shaper's
    and the local backend's held packets are counted the same way (routing/drivers/link_shaper.py, routing/overlay/udp_link.py)."""
    late = int((now - due) * 1e6)
    stats["released"] += 1
    stats["late_sum_us"] += late
    if late > 1000:
        stats["late_1ms"] += 1
    if late > stats["late_max_us"]:
        stats["late_max_us"] = late
