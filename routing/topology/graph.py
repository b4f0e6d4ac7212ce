"""The mesh as a graph, and the routes over it (no I/O).

A topology is a graph: nodes and undirected links (a chain is its shorthand).  Routes are
computed here once for every backend: the overlay's route tables, the kernel routes of the
namespaces and of the Pis (docs/DESIGN.md, "Topology and routes").

Two metrics (``routing.metric``):

* ``hops``: shortest paths by hop count.
* ``etx``: minimum-ETX paths (De Couto et al., MobiCom 2003, Sec. 3): the cost of a path is the sum
  of the expected transmission counts of its links, ETX = 1 / (df x dr) per link.  The link costs come
  from the ETX estimators of the nodes (``link_cost``), measured during the settle phase.

**Tie-break** (documented, deterministic): routes are destination-based.  For every destination d,
``dist(n, d)`` is the least cost from n to d; node n's next hop toward d is, among its neighbours v
on a least-cost path (``cost(n, v) + dist(v, d) == dist(n, d)``), the one listed first in the
topology's node order.  Every hop strictly lowers the remaining cost, so the tables are loop-free,
and the path of every pair is a shortest path.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

__all__ = ["MeshGraph", "METRICS", "least_cost_next_hops", "path_of"]

#: ``routing.metric`` values.
METRICS = ("hops", "etx")

#: relative tolerance when comparing path costs (ETX costs are floats)
_REL_TOL = 1e-9


@dataclass(frozen=True)
class MeshGraph:
    """Nodes in their order (the tie-break's order) and undirected links, each ``(a, b)`` with
    ``a`` before ``b`` in that order, sorted."""

    nodes: tuple[str, ...]
    links: tuple[tuple[str, str], ...]

    @classmethod
    def build(cls, nodes: Sequence[str], links: Iterable[Sequence[str]]) -> "MeshGraph":
        order = {n: i for i, n in enumerate(nodes)}
        pairs = {tuple(sorted((a, b), key=order.__getitem__)) for a, b in links}
        return cls(tuple(nodes), tuple(sorted(pairs, key=lambda p: (order[p[0]], order[p[1]]))))  # type: ignore[misc]

    @classmethod
    def chain(cls, nodes: Sequence[str]) -> "MeshGraph":
        """The shorthand: each node linked to the next."""
        return cls.build(nodes, zip(nodes, nodes[1:]))

    def neighbours(self, n: str) -> list[str]:
        """``n``'s neighbours in node order (for a chain: the previous node, then the next)."""
        nb = {b for a, b in self.links if a == n} | {a for a, b in self.links if b == n}
        return [m for m in self.nodes if m in nb]

    def nx(self) -> nx.Graph:
        g = nx.Graph()
        g.add_nodes_from(self.nodes)
        g.add_edges_from(self.links)
        return g

    def components(self) -> list[list[str]]:
        """The connected components, each in node order, the first node's first."""
        order = {n: i for i, n in enumerate(self.nodes)}
        comps = [sorted(c, key=order.__getitem__) for c in nx.connected_components(self.nx())]
        return sorted(comps, key=lambda c: order[c[0]])

    def is_chain(self) -> bool:
        """Is this the chain of its node order?"""
        return self.links == MeshGraph.chain(self.nodes).links


LinkCost = Callable[[str, str], float]


def least_cost_next_hops(graph: MeshGraph, link_cost: LinkCost | None = None) -> dict[str, dict[str, str]]:
    """Node -> {destination: next hop} over least-cost paths (module docstring: metric and tie-break).

    ``link_cost(u, v)``: the cost of sending from u to its neighbour v (> 0; ``math.inf`` for a link
    that delivers nothing: no route crosses it); None: every link costs 1 (hop count).  A destination
    that cannot be reached at finite cost has no entry."""
    cost = link_cost or (lambda u, v: 1.0)
    dg = nx.DiGraph()
    dg.add_nodes_from(graph.nodes)
    for a, b in graph.links:
        for u, v in ((a, b), (b, a)):
            c = float(cost(u, v))
            if not c > 0:
                raise ValueError(f"link {u}->{v}: cost must be > 0, got {c!r}")
            if math.isfinite(c):
                dg.add_edge(u, v, cost=c)
    rev = dg.reverse(copy=False)
    tables: dict[str, dict[str, str]] = {n: {} for n in graph.nodes}
    nbrs = {n: graph.neighbours(n) for n in graph.nodes}
    for d in graph.nodes:
        dist = nx.single_source_dijkstra_path_length(rev, d, weight="cost")
        for n in graph.nodes:
            if n == d or n not in dist:
                continue
            for v in nbrs[n]:
                if v in dist and dg.has_edge(n, v) and math.isclose(dg[n][v]["cost"] + dist[v], dist[n],
                                                                    rel_tol=_REL_TOL):
                    tables[n][d] = v
                    break
    return tables


def path_of(next_hops: Mapping[str, Mapping[str, str]], src: str, dst: str) -> list[str] | None:
    """The node path from ``src`` to ``dst`` following ``next_hops``; None when a hop is missing or
    the walk repeats a node (a loop)."""
    path = [src]
    while path[-1] != dst:
        nxt = next_hops.get(path[-1], {}).get(dst)
        if nxt is None or nxt in path:
            return None
        path.append(nxt)
    return path
