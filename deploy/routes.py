"""``aspan deploy routes``: static kernel routes and IP forwarding, for kernel-TCP experiments.

The user-space overlay (``aspan node``, the ``pi`` backend) routes by itself and
needs none of this.  For kernel TCP over the mesh, each host gets a /32 route to
every non-neighbour through its next hop on the chain, ``ip_forward`` on, and ICMP
redirects off (in one IBSS cell every host is on-link, so a forwarding host would
otherwise tell the sender to go direct and undo the chain).
"""
from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from deploy.hosts import Remote
from deploy.inventory import Host, Inventory, InventoryError
from routing.topology.routes import topology_routes


def topology(inv: Inventory, experiment: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The graph (and route overrides) with the hosts' mesh addresses.

    From the experiment's topology when given (its nodes must be the inventory's
    nodes), else the inventory's host order is the chain.
    """
    addrs = {h.node: h.mesh_address for h in inv.hosts}
    if experiment is None:
        return {"chain": [h.node for h in inv.hosts], "addresses": addrs, "routes": {}}
    topo = experiment["topology"]
    nodes = list(topo.get("nodes") or topo["chain"])
    missing = [n for n in nodes if n not in addrs]
    if missing:
        raise InventoryError(inv.source, "hosts", f"no host for node(s) {', '.join(missing)} of the experiment")
    return {"chain": topo.get("chain"), "nodes": nodes, "links": topo.get("links"),
            "addresses": {n: addrs[n] for n in nodes}, "routes": dict(topo.get("routes") or {})}


def route_plan(inv: Inventory, experiment: Mapping[str, Any] | None = None) -> dict[str, dict[str, str]]:
    """Node -> {destination address: next-hop address} for the destinations that are not neighbours."""
    topo = topology(inv, experiment)
    tables = topology_routes(topo)
    plan = {}
    for n, table in tables.items():
        nbrs = set(table.neighbours)
        plan[n] = {dst: via for dst, via in table.as_dict().items() if dst not in nbrs}
    return plan


def route_commands(host: Host, routes: dict[str, str], remove: bool = False) -> list[str]:
    q = shlex.quote
    i = q(host.iface)
    if remove:
        return [f"ip route del {dst}/32 via {via} dev {i} 2>/dev/null || true" for dst, via in routes.items()]
    cmds = [
        "sysctl -qw net.ipv4.ip_forward=1",
        f"sysctl -qw net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.{host.iface}.send_redirects=0",
        f"sysctl -qw net.ipv4.conf.all.accept_redirects=0 net.ipv4.conf.{host.iface}.accept_redirects=0",
    ]
    cmds += [f"ip route replace {dst}/32 via {via} dev {i}" for dst, via in routes.items()]
    return cmds


def state_command(host: Host) -> str:
    return (f"echo ip_forward=$(cat /proc/sys/net/ipv4/ip_forward); "
            f"ip -4 route show dev {shlex.quote(host.iface)}")


def configure(remote: Remote, routes: dict[str, str], remove: bool = False) -> str:
    """Apply (or remove) the routes on one host; returns its route state."""
    for cmd in route_commands(remote.host, routes, remove):
        remote.run(cmd, root=True)
    return remote.run(state_command(remote.host)).stdout.strip()
