"""Static route tables over the mesh graph (routing.topology.graph), with the YAML's overrides on top."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from routing.topology.graph import LinkCost, MeshGraph, least_cost_next_hops


class RouteTable:
    """Destination address -> next-hop address.  Neighbours are reached directly unless a route
    says otherwise (with the etx metric a lossy direct link may lose to a two-hop path)."""

    def __init__(self, routes: Mapping[str, str], neighbours: Sequence[str]) -> None:
        self.neighbours = tuple(neighbours)
        self._next: dict[str, str] = {}
        self._set(routes)

    def _set(self, routes: Mapping[str, str]) -> None:
        nxt = {n: n for n in self.neighbours}
        for dst, via in routes.items():
            if via not in nxt:
                raise ValueError(f"route to {dst} via {via}: {via} is not a neighbour ({', '.join(self.neighbours)})")
            nxt[dst] = via
        self._next = nxt

    def next_hop(self, dst: str) -> str | None:
        return self._next.get(dst)

    def replace(self, routes: Mapping[str, str]) -> None:
        """New routes in place (ETX routes fixed at the end of the settle phase): whoever holds this
        table (the forwarding step, the prober) sees them at once."""
        self._set(routes)

    def as_dict(self) -> dict[str, str]:
        return dict(self._next)


def chain_routes(addresses: Sequence[str]) -> dict[str, RouteTable]:
    """Static routes for a chain a0 - a1 - ... - an: each node reaches the others through its two neighbours."""
    nodes = [f"n{i}" for i in range(len(addresses))]
    addr = dict(zip(nodes, addresses))
    tables = graph_tables(MeshGraph.chain(nodes), addr)
    return {addr[n]: t for n, t in tables.items()}


def graph_of(topology: Mapping[str, Any]) -> MeshGraph:
    """The graph of a topology: ``nodes`` and ``links`` when they are given (a resolved experiment
    always has them), else the ``chain`` shorthand."""
    links = topology.get("links")
    if links is not None:
        return MeshGraph.build(list(topology.get("nodes") or topology["chain"]), links)
    return MeshGraph.chain(list(topology["chain"]))


def graph_tables(graph: MeshGraph, addrs: Mapping[str, str], link_cost: LinkCost | None = None,
                 overrides: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, RouteTable]:
    """Per node name: its route table (addresses), least-cost routes with ``overrides`` (node -> {dst: via},
    names, already checked) on top."""
    hops = least_cost_next_hops(graph, link_cost)
    for n, table in (overrides or {}).items():
        hops[n].update(table)
    return {n: RouteTable({addrs[d]: addrs[v] for d, v in hops[n].items()}, [addrs[m] for m in graph.neighbours(n)])
            for n in graph.nodes}


class RouteError(ValueError):
    """A topology's routes are wrong; ``problems`` holds (field path, reason) for each."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{path}: {why}" for path, why in problems))
        self.problems = problems


def _override_problems(graph: MeshGraph, topology: Mapping[str, Any]) -> tuple[dict[str, dict[str, str]],
                                                                               list[tuple[str, str]]]:
    """The overrides that apply, and those refused (path, reason): a route to the node itself, or
    through a node that is not a neighbour (issue 13, item 5)."""
    good: dict[str, dict[str, str]] = {}
    problems: list[tuple[str, str]] = []
    for n, table in (topology.get("routes") or {}).items():
        nbrs = graph.neighbours(n)
        for d, v in table.items():
            path = f"topology.routes.{n}.{d}"
            if d == n:
                problems.append((path, f"a route from {n} to itself is refused"))
            elif v not in nbrs:
                problems.append((path, f"next hop {v} is not a neighbour of {n} (neighbours: {', '.join(nbrs)})"))
            else:
                good.setdefault(n, {})[d] = v
    return good, problems


def _walk_problems(names: Sequence[str], addrs: Mapping[str, str], tables: Mapping[str, RouteTable]) -> list[tuple[str, str]]:
    """From every node to every destination the next hops must reach it, within the node count
    (a longer walk repeats a node: a loop)."""
    name_of = {addrs[n]: n for n in names}
    problems = []
    for src in names:
        for dst in names:
            if dst == src:
                continue
            path, cur = [src], src
            while cur != dst:
                nxt = tables[cur].next_hop(addrs[dst])
                if nxt is None or nxt not in name_of:
                    problems.append((f"topology.routes.{cur}", f"no route from {cur} to {dst} "
                                     f"(path {' -> '.join(path)})"))
                    break
                cur = name_of[nxt]
                path.append(cur)
                if len(path) > len(names):
                    problems.append((f"topology.routes.{src}", f"routing loop from {src} to {dst}: "
                                     f"{' -> '.join(path)}"))
                    break
    return problems


def _tables(topology: Mapping[str, Any], link_cost: LinkCost | None) -> tuple[dict[str, RouteTable],
                                                                              list[tuple[str, str]]]:
    graph = graph_of(topology)
    overrides, problems = _override_problems(graph, topology)
    tables = graph_tables(graph, topology["addresses"], link_cost, overrides)
    return tables, problems or _walk_problems(graph.nodes, topology["addresses"], tables)


def route_problems(topology: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem of a topology's routes (hop count), as (field path, reason); empty when they are sound."""
    return _tables(topology, None)[1]


def topology_routes(topology: Mapping[str, Any], link_cost: LinkCost | None = None) -> dict[str, RouteTable]:
    """Per node name: its route table, from a topology ``{nodes, links | chain, addresses, routes}``.

    Least-cost routes over the graph (routing.topology.graph: hop count, or ``link_cost`` per directed link,
    and the documented tie-break), with the ``routes`` overrides (node -> {destination node: next-hop
    node}) on top.  The experiment runner (every backend) and ``deploy routes`` (kernel routes on
    the Pis) both compute their routes here, so they agree.  Raises :class:`RouteError` for a refused
    override, a destination not reached or a loop (``experiments.schema`` reports the same before
    anything starts).
    """
    tables, problems = _tables(topology, link_cost)
    if problems:
        raise RouteError(problems)
    return tables


def route_summary(topology: Mapping[str, Any], tables: Mapping[str, RouteTable]) -> dict[str, dict[str, str]]:
    """Node -> {destination node: next-hop node} of every table, by name (for meta.json and routes.json).
    A route whose destination or next hop is no node's address has no name and is left out."""
    addrs = topology["addresses"]
    name_of = {a: n for n, a in addrs.items()}
    order = {a: i for i, a in enumerate(addrs.values())}     # destinations in node order
    return {n: {name_of[d]: name_of[v] for d, v in sorted(((d, v) for d, v in t.as_dict().items()
                                                           if d in name_of and v in name_of),
                                                          key=lambda kv: order[kv[0]])}
            for n, t in tables.items()}
