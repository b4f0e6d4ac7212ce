"""Link-state routing by ETX, without I/O: what one node advertises, keeps and routes by (issue 23).

Every node floods a *link-state advertisement* (:class:`Lsa`) now and then: its own address, a
sequence number, and the ETX of each link to a live neighbour as it measures it (etx.estimator:
1 / (df x dr), De Couto et al., MobiCom 2003, Sec. 3).  The rules, each in one method below:

* **Origination** (:meth:`LinkStateRouter.originate`): every ``advertise_s``; a neighbour not heard
  from for ``dead_s`` is left out (its link is down: the estimator's window only moves when a probe
  arrives, so silence must be read from the time of the last probe, as OLSR's NEIGHB_HOLD_TIME does,
  RFC 3626 Sec. 18.3).
* **Flooding** (:meth:`LinkStateRouter.on_lsa`): an LSA is kept and passed on to every other
  neighbour only if it is newer than the copy held for its origin (a higher sequence number, or the
  held copy expired): a duplicate or an older copy stops there, so each LSA crosses each link at most
  once in each direction (OSPF's flooding rule, RFC 2328 Sec. 13).  A copy not refreshed for ``hold_s``
  is forgotten (RFC 3626's TOP_HOLD_TIME; a node that restarts numbering from 1 is heard again once
  its old copy expired).  Only the experiment's nodes may originate, and an LSA names at most as many
  links as there are nodes: the database is bounded by the node count, whatever a neighbour sends.
* **The graph** (:meth:`LinkStateRouter.graph`): a link u -> v counts only when both u's and v's LSAs
  name it (the two-way check of OSPF, RFC 2328 Sec. 16.1, step 2b), at the cost u advertised.  The
  node's own links come from its own last LSA, not from its fresher estimates: every node then routes
  over the same database, which is what keeps the routes loop-free.
* **Routes with hysteresis** (:meth:`LinkStateRouter.compute`): the next hop toward d is the
  neighbour v minimising ``cost(self, v) + dist(v, d)``.  The current next hop is kept while it is
  still *feasible* (``dist(nh, d) < dist(self, d)``: it is closer to d than this node, Babel's
  feasibility idea, RFC 8966 Sec. 2.4) and the best is not better by more than ``margin`` (relative);
  a better one within the margin takes over only after staying better for ``switch_after_s``.  Two
  paths of nearly equal ETX therefore do not swap on every probe window.  Paths of exactly equal cost
  (hop count) go to the neighbour listed first, as routing.topology.graph's tie-break does, so a mesh whose
  link state is complete routes as the static tables would, however the advertisements arrived.  A destination keeps the
  route the node started with until the link state first reaches it (start-up: the neighbours'
  advertisements may not have arrived at the first computation); hysteresis protects only routes the
  link state chose, so the first computation (static ETX routes: the only one) takes the best path.  Loop freedom: along any
  walk of next hops, ``dist(., d)`` strictly falls (a feasible next hop, or the best, which is
  feasible since every link costs at least 1), so on a common database no walk repeats a node.

Addresses are the nodes' mesh addresses.  Time is always an argument ``now`` (seconds).
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Lsa", "LinkStateSettings", "LinkStateRouter", "RouteChange", "LSA_DROP_REASONS", "apply_changes"]

#: the largest sequence number an LSA carries (u32 on the wire)
MAX_SEQ = 0xFFFFFFFF
#: the largest ETX an LSA carries (u16 hundredths on the wire, routing.overlay.wire): a link worse than this
#: (fewer than 1 in 655 transmissions arriving) is advertised as down
MAX_ETX = 655.34

#: why an LSA heard is not kept (each counted in :attr:`LinkStateRouter.stats`)
LSA_DROP_REASONS = ("lsa_old", "lsa_own", "lsa_unknown_origin", "lsa_bad_link")


@dataclass(frozen=True, slots=True)
class Lsa:
    """One link-state advertisement: ``links`` are ``(neighbour address, ETX of origin -> neighbour)``."""

    origin: str
    seq: int
    links: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class LinkStateSettings:
    """``routing:`` settings of dynamic routing (experiments/schema.py documents each)."""

    advertise_s: float = 0.5      # origination interval of a node's LSA
    hold_s: float = 3.0           # an LSA not refreshed for this long is forgotten
    dead_s: float = 1.0           # a neighbour silent this long (10 probe intervals): its link is down
    margin: float = 0.1           # a new next hop must be better by this fraction to take over at once...
    switch_after_s: float = 5.0   # ...or stay better for this long
    recompute_s: float = 0.1      # routes are recomputed at most this often (when the database changed)


@dataclass(frozen=True, slots=True)
class RouteChange:
    """One next hop that changed: ``old``/``new`` None when there was / is no route; ``metric`` the
    path's cost (ETX, or hops) through ``new``."""

    dst: str
    old: str | None
    new: str | None
    metric: float | None


class _Held:
    __slots__ = ("lsa", "heard")

    def __init__(self, lsa: Lsa, heard: float) -> None:
        self.lsa = lsa
        self.heard = heard


class LinkStateRouter:
    """One node's link-state database and routes (module docstring: the rules).

    ``neighbours``: the node's neighbours on the topology's graph, in node order (the tie-break).
    ``nodes``: every node of the experiment (who may originate).  ``link_cost(nbr, now)``: the cost of
    this node's link to ``nbr`` (ETX, or 1 for hop count), ``math.inf`` when it delivers nothing;
    ``last_heard(nbr)``: the time of the last probe heard from it (None: never).  ``pinned``: routes
    a caller fixes, kept whatever the database says (the experiments refuse ``topology.routes`` with
    link-state routing: a pinned next hop is outside the shared database, and other nodes' routes can
    loop back through it).  ``initial``: the routes
    the node starts with (until the first :meth:`compute`), so that the changes logged are real ones.
    """

    def __init__(self, address: str, neighbours: Sequence[str], nodes: Iterable[str], settings: LinkStateSettings,
                 link_cost: Callable[[str, float], float], last_heard: Callable[[str], float | None],
                 pinned: Mapping[str, str] | None = None, initial: Mapping[str, str] | None = None) -> None:
        self.address = address
        self.neighbours = tuple(neighbours)
        self.nodes = frozenset(nodes) | {address}
        self.settings = settings
        self._link_cost = link_cost
        self._last_heard = last_heard
        self.pinned = dict(pinned or {})
        self._db: dict[str, _Held] = {}
        self._seq = 0
        self.routes: dict[str, str] = dict(initial or {})  # destination -> next hop (``initial``: the routes before)
        self.metric: dict[str, float] = {}                # destination -> cost through the next hop
        self._better: dict[str, tuple[str, float]] = {}   # destination -> (better neighbour, since)
        self._reached: set[str] = set()                   # destinations the link state has reached
        self._dirty = False
        self._next_compute = -math.inf
        self.stats = {"lsa_originated": 0, "lsa_accepted": 0, "lsa_flooded": 0, "route_changes": 0,
                      **dict.fromkeys(LSA_DROP_REASONS, 0)}

    # ---- origination -------------------------------------------------------------------------
    def live(self, nbr: str, now: float) -> bool:
        """Has ``nbr`` been heard within ``dead_s``?"""
        t = self._last_heard(nbr)
        return t is not None and now - t <= self.settings.dead_s

    def originate(self, now: float) -> Lsa:
        """This node's next LSA (kept in its own database; the caller sends it to every neighbour)."""
        links = []
        for v in self.neighbours:
            if self.live(v, now):
                c = round(float(self._link_cost(v, now)), 2)   # the wire's precision: every copy alike
                if 1.0 <= c <= MAX_ETX:
                    links.append((v, c))
        self._seq = self._seq % MAX_SEQ + 1
        lsa = Lsa(self.address, self._seq, tuple(links))
        self._store(lsa, now)
        self.stats["lsa_originated"] += 1
        return lsa

    # ---- flooding ----------------------------------------------------------------------------
    def on_lsa(self, lsa: Lsa, frm: str, now: float, flood: bool = True) -> list[str]:
        """An LSA heard from neighbour ``frm``: the neighbours to pass it on to (none when it is not kept,
        the reason counted, or when not ``flood``: static routes are fixed)."""
        reason = self._refused(lsa, now)
        if reason is not None:
            self.stats[reason] += 1
            return []
        self._store(lsa, now)
        self.stats["lsa_accepted"] += 1
        out = [v for v in self.neighbours if v != frm and v != lsa.origin] if flood else []
        self.stats["lsa_flooded"] += len(out)
        return out

    def _refused(self, lsa: Lsa, now: float) -> str | None:
        if lsa.origin == self.address:
            return "lsa_own"
        if lsa.origin not in self.nodes:
            return "lsa_unknown_origin"
        if (len(lsa.links) > len(self.nodes)
                or any(v not in self.nodes or v == lsa.origin or not 1.0 <= c <= MAX_ETX for v, c in lsa.links)):
            return "lsa_bad_link"
        held = self._db.get(lsa.origin)
        if held is not None and not self._expired(held, now) and lsa.seq <= held.lsa.seq:
            return "lsa_old"
        return None

    def _expired(self, held: _Held, now: float) -> bool:
        return now - held.heard > self.settings.hold_s

    def _store(self, lsa: Lsa, now: float) -> None:
        self._db[lsa.origin] = _Held(lsa, now)
        self._dirty = True

    def expire(self, now: float) -> None:
        """Forget the LSAs not refreshed for ``hold_s`` (this node's own is refreshed by :meth:`originate`)."""
        for origin in [o for o, h in self._db.items() if o != self.address and self._expired(h, now)]:
            del self._db[origin]
            self._dirty = True

    def database(self) -> dict[str, Lsa]:
        return {o: h.lsa for o, h in self._db.items()}

    # ---- the graph ---------------------------------------------------------------------------
    def graph(self) -> dict[str, dict[str, float]]:
        """u -> {v: cost} over the links both ends advertise (the two-way check), at u's cost."""
        adv = {o: dict(h.lsa.links) for o, h in self._db.items()}
        return {u: {v: c for v, c in links.items() if u in adv.get(v, ())} for u, links in adv.items()}

    # ---- routes ------------------------------------------------------------------------------
    def due(self, now: float) -> bool:
        """Should :meth:`compute` run (the database changed and ``recompute_s`` has passed)?"""
        return self._dirty and now >= self._next_compute

    def ready(self, now: float, first: float) -> bool:
        """May dynamic routes be computed at ``now``, the first time no sooner than ``first``?  Only once the
        database holds an advertisement of every node, or ``hold_s`` after ``first`` (a node that never
        advertises is down): routes computed from part of the mesh's link state would move, and a complete
        one would move them back (start-up churn while the nodes' advertisements spread)."""
        if now < first:
            return False
        return len(self._db) >= len(self.nodes) or now >= first + self.settings.hold_s

    def compute(self, now: float) -> list[RouteChange]:
        """Recompute the next hops (module docstring: hysteresis and feasibility); the changes."""
        self.expire(now)
        self._dirty = False
        self._next_compute = now + self.settings.recompute_s
        g = self.graph()
        mine = g.get(self.address, {})
        dist_from = {v: _dijkstra(g, v) for v in mine}     # dist(v, .) for every neighbour with a live link
        my_dist = _dijkstra(g, self.address)
        changes = []
        for d in sorted(self.nodes - {self.address}):
            old = self.routes.get(d)
            # hysteresis keeps only what the link state chose: the starting route (hop count) has no say
            new, metric = self._choose(d, mine, dist_from, my_dist, old if d in self._reached else None, now)
            if d in self.pinned:
                new = self.pinned[d]
                metric = mine.get(new, math.inf) + dist_from.get(new, {}).get(d, math.inf)
            elif new is not None:
                self._reached.add(d)
            elif d not in self._reached:    # the link state has not reached d yet: the initial route stands
                continue
            if new is None:
                self.routes.pop(d, None)
                self.metric.pop(d, None)
            else:
                self.routes[d] = new
                self.metric[d] = metric
            if new != old:
                changes.append(RouteChange(d, old, new, None if not math.isfinite(metric) else metric))
        self.stats["route_changes"] += len(changes)
        return changes

    def _choose(self, d: str, mine: Mapping[str, float], dist_from: Mapping[str, Mapping[str, float]],
                my_dist: Mapping[str, float], old: str | None, now: float) -> tuple[str | None, float]:
        """The next hop toward ``d`` and its path cost, by the hysteresis rule."""
        def via(v: str) -> float:
            return mine[v] + (0.0 if v == d else dist_from[v].get(d, math.inf))

        best, best_cost = None, math.inf
        for v in self.neighbours:                     # node order: the first of equal costs wins
            if v in mine:
                c = via(v)
                if c < best_cost:
                    best, best_cost = v, c
        if best is None:
            self._better.pop(d, None)
            return None, math.inf
        if old is None or old not in mine or not self._feasible(old, d, dist_from, my_dist):
            self._better.pop(d, None)
            return best, best_cost
        old_cost = via(old)
        if best != old and math.isclose(best_cost, old_cost, rel_tol=1e-9):   # a tie: the tie-break's choice
            self._better.pop(d, None)
            return best, best_cost
        if best == old or not best_cost < old_cost:
            self._better.pop(d, None)
            return old, old_cost
        if best_cost * (1.0 + self.settings.margin) < old_cost:      # better by the margin: at once
            self._better.pop(d, None)
            return best, best_cost
        cand = self._better.get(d)
        if cand is None or cand[0] != best:
            self._better[d] = (best, now)
            return old, old_cost
        if now - cand[1] >= self.settings.switch_after_s:              # better for long enough
            del self._better[d]
            return best, best_cost
        return old, old_cost

    @staticmethod
    def _feasible(v: str, d: str, dist_from: Mapping[str, Mapping[str, float]],
                  my_dist: Mapping[str, float]) -> bool:
        """Is neighbour ``v`` closer to ``d`` than this node (so routing through it cannot loop)?"""
        dv = 0.0 if v == d else dist_from[v].get(d, math.inf)
        return dv < my_dist.get(d, math.inf)


class _Table(Protocol):
    def replace(self, routes: Mapping[str, str]) -> None: ...


def apply_changes(router: LinkStateRouter, changes: list[RouteChange], table: _Table,
                  emit: Callable[..., None], now: float) -> None:
    """Put the router's routes into the route table the forwarding step reads (routing.topology.routes.RouteTable)
    and log a ``route`` event per change (docs/LOGS.md): every data plane does this the same way."""
    if not changes:
        return
    table.replace(router.routes)
    log_changes(changes, emit, now)


def log_changes(changes: list[RouteChange], emit: Callable[..., None], now: float) -> None:
    """A ``route`` event per next hop that changed (docs/LOGS.md), whoever computed it (this core, babeld)."""
    for c in changes:
        emit(now, "route", dst=c.dst, old=c.old, new=c.new, metric=None if c.metric is None else round(c.metric, 4))


def _dijkstra(g: Mapping[str, Mapping[str, float]], src: str) -> dict[str, float]:
    """Least cost from ``src`` to every node it reaches over ``g`` (u -> {v: cost})."""
    dist = {src: 0.0}
    heap = [(0.0, src)]
    done: set[str] = set()
    while heap:
        du, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v, c in g.get(u, {}).items():
            dv = du + c
            if dv < dist.get(v, math.inf):
                dist[v] = dv
                heapq.heappush(heap, (dv, v))
    return dist
