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


def topology_routes(topology: Mapping[str, Any]) -> dict[str, RouteTable]:
    """Per node name: its static route table, from a topology ``{chain, addresses, routes}``.

    Chain routes (``chain`` in path order, ``addresses`` node -> address), with the
    ``routes`` overrides (node -> {destination node: next-hop node}) on top.  The
    experiment runner (every backend) and ``deploy routes`` (kernel routes on the Pis)
    both compute their routes here, so they agree.
    """
    names = topology["chain"]
    addrs = topology["addresses"]
    by_addr = chain_routes([addrs[n] for n in names])
    tables = {n: by_addr[addrs[n]] for n in names}
    for n, table in (topology.get("routes") or {}).items():
        merged = tables[n].as_dict()
        merged.update({addrs[d]: addrs[v] for d, v in table.items()})
        nbrs = list(tables[n].neighbours)
        routes = {d: v for d, v in merged.items() if d not in nbrs}
        tables[n] = RouteTable(routes, nbrs)
    return tables
