"""Static route tables (the paper's static routing on the 4-Pi chain)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class RouteTable:
    """Destination address -> next-hop address.  Neighbours are reached directly."""

    def __init__(self, routes: Mapping[str, str], neighbours: Sequence[str]) -> None:
        self.neighbours = tuple(neighbours)
        self._next: dict[str, str] = {n: n for n in neighbours}
        for dst, via in routes.items():
            if via not in self._next:
                raise ValueError(f"route to {dst} via {via}: {via} is not a neighbour ({', '.join(neighbours)})")
            self._next[dst] = via

    def next_hop(self, dst: str) -> str | None:
        return self._next.get(dst)

    def as_dict(self) -> dict[str, str]:
        return dict(self._next)


def chain_routes(addresses: Sequence[str]) -> dict[str, RouteTable]:
    """Static routes for a chain a0 - a1 - ... - an: each node reaches the others through its two neighbours."""
    tables: dict[str, RouteTable] = {}
    for i, addr in enumerate(addresses):
        nbrs = [addresses[j] for j in (i - 1, i + 1) if 0 <= j < len(addresses)]
        routes = {}
        for j, other in enumerate(addresses):
            if abs(j - i) > 1:
                routes[other] = addresses[i + 1] if j > i else addresses[i - 1]
        tables[addr] = RouteTable(routes, nbrs)
    return tables


class RouteError(ValueError):
    """A topology's routes are wrong; ``problems`` holds (field path, reason) for each."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{path}: {why}" for path, why in problems))
        self.problems = problems


def _build(topology: Mapping[str, Any]) -> tuple[dict[str, RouteTable], list[tuple[str, str]]]:
    """The tables with every override applied, and the overrides refused (path, reason).

    An override is applied (whatever its destination, a neighbour included) or refused with a
    reason: a route to the node itself, or through a node that is not a neighbour (issue 13, item 5)."""
    names = topology["chain"]
    addrs = topology["addresses"]
    by_addr = chain_routes([addrs[n] for n in names])
    tables = {n: by_addr[addrs[n]] for n in names}
    problems: list[tuple[str, str]] = []
    for n, table in (topology.get("routes") or {}).items():
        nbrs = list(tables[n].neighbours)
        merged = tables[n].as_dict()
        for d, v in table.items():
            path = f"topology.routes.{n}.{d}"
            if d == n:
                problems.append((path, f"a route from {n} to itself is refused"))
            elif addrs[v] not in nbrs:
                nbr_names = [m for m in names if addrs[m] in nbrs]
                problems.append((path, f"next hop {v} is not a neighbour of {n} (neighbours: {', '.join(nbr_names)})"))
            else:
                merged[addrs[d]] = addrs[v]
        tables[n] = RouteTable(merged, nbrs)
    return tables, problems


def _walk_problems(names: list[str], addrs: Mapping[str, str], tables: Mapping[str, RouteTable]) -> list[tuple[str, str]]:
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


def route_problems(topology: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem of a topology's routes, as (field path, reason); empty when they are sound."""
    tables, problems = _build(topology)
    return problems or _walk_problems(list(topology["chain"]), topology["addresses"], tables)


def topology_routes(topology: Mapping[str, Any]) -> dict[str, RouteTable]:
    """Per node name: its static route table, from a topology ``{chain, addresses, routes}``.

    Chain routes (``chain`` in path order, ``addresses`` node -> address), with the
    ``routes`` overrides (node -> {destination node: next-hop node}) on top.  The
    experiment runner (every backend) and ``deploy routes`` (kernel routes on the Pis)
    both compute their routes here, so they agree.  Raises :class:`RouteError` for a
    refused override, a destination not reached or a loop (``experiments.schema`` reports
    the same before anything starts).
    """
    tables, problems = _build(topology)
    problems = problems or _walk_problems(list(topology["chain"]), topology["addresses"], tables)
    if problems:
        raise RouteError(problems)
    return tables
