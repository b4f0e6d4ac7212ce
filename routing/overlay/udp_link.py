"""Emulated links for the UDP overlay (the local backend): each datagram held at its sender until it
would have crossed the link.

Loopback UDP between processes has no rate, delay or queue of its own.  A node given ``links`` (one
queue per neighbour, routing.links.linkem's rule or a Mahimahi schedule: experiments.link_spec.link_queue)
asks that rule, for every datagram it sends, when the datagram would arrive at the far end
(serialisation at the rate behind the datagrams before it, then the delay; drop-tail when the queue
is full), holds it until then and only then hands it to the socket.  Loopback delivery then takes
tens of microseconds.  This is where the sim's links sit too (experiments/backends/sim.py ``SimLink``:
at the sender, a queue drop counted by the sender as ``queue``), so one ``link:`` section means the
same on sim, local and netns.

Only the time a datagram is released is the loop's: when the loop wakes late (a busy machine), the
datagram arrives late, but the link's schedule does not slip, because the next datagram's
serialisation starts from the link's own ``busy_until``, not from the late release.  How late the
releases were is counted (:attr:`EgressLinks.stats`, logged in ``node_stop``'s ``link``).

Held datagrams are bounded: at most ``queue_packets`` per link wait for serialisation (drop-tail), and
at most ``max_held`` in all, the rest of them in flight over a link's delay (a drop past it is a
``queue`` drop too).
"""
from __future__ import annotations

import heapq
import itertools
from typing import Any, Iterator, Protocol

from routing.links.linkem import count_release
from routing.overlay.wire import IP_UDP_OVERHEAD   # a datagram's size on the link, as routing.overlay.wire.wire_size counts it


class LinkRule(Protocol):
    """What a link direction's queue answers (routing.links.linkem.LinkQueue, routing.links.mahimahi.OpportunityQueue)."""

    def admit(self, now: float, size_bytes: int) -> float | None: ...


#: Datagrams held at most, over all of a node's links (the kernel's NFQUEUE bound on netns is 4096 too)
MAX_HELD = 4096


class EgressLinks:
    """The outgoing link directions of one node: ``queues`` maps a neighbour's mesh address to its queue.

    Not thread-safe: the UDP driver calls it with its core lock held."""

    def __init__(self, queues: dict[str, LinkRule], max_held: int = MAX_HELD) -> None:
        if max_held < 1:
            raise ValueError(f"max_held must be at least 1, got {max_held}")
        self.queues = queues
        self.max_held = max_held
        self._held: list[tuple[float, int, bytes, Any, Any]] = []   # (due, order, datagram, addr, packet): a heap
        self._order = itertools.count()
        self.stats = {"held": 0, "released": 0, "link_drops": 0, "held_max": 0,
                      "late_max_us": 0, "late_sum_us": 0, "late_1ms": 0}

    def __contains__(self, nbr: str) -> bool:
        return nbr in self.queues

    def hold(self, nbr: str, now: float, datagram: bytes, addr: Any, packet: Any) -> bool:
        """Put ``datagram`` (for ``addr``) on the link to ``nbr`` at ``now``; False when it is dropped
        (the link's queue or the node's bound is full: the caller counts it as a ``queue`` drop).
        ``packet`` is what the drop is logged with, should the socket refuse it at release."""
        if len(self._held) >= self.max_held:
            self.stats["link_drops"] += 1
            return False
        due = self.queues[nbr].admit(now, len(datagram) + IP_UDP_OVERHEAD)
        if due is None:
            self.stats["link_drops"] += 1
            return False
        heapq.heappush(self._held, (due, next(self._order), datagram, addr, packet))
        self.stats["held"] += 1
        if len(self._held) > self.stats["held_max"]:
            self.stats["held_max"] = len(self._held)
        return True

    def next_due(self) -> float | None:
        """When the first held datagram is due (None: nothing held)."""
        return self._held[0][0] if self._held else None

    def due(self, now: float) -> Iterator[tuple[bytes, Any, Any]]:
        """(datagram, addr, packet) of every held datagram due by ``now``, in the order they arrive;
        each one's lateness is counted."""
        held, stats = self._held, self.stats
        while held and held[0][0] <= now:
            due, _, datagram, addr, packet = heapq.heappop(held)
            count_release(stats, due, now)
            yield datagram, addr, packet

    def held(self) -> int:
        return len(self._held)

