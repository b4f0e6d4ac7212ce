"""A node's route changes as kernel routes, on the kernel data plane (netns; issue 23).

The link-state router (routing.topology.linkstate) decides; this module only says it to the kernel of the
node's namespace, in the form the mesh was built with (experiments/backends/netns/mesh.py): a /32 per
destination, ``dev`` the veth toward the next hop, ``src`` the node's mesh address, ``onlink`` when the
next hop is not the destination, and the mesh's ``advmss``.  A destination the router cannot reach
loses its route (a neighbour keeps the route over its own link, as routing.topology.routes.RouteTable does): the
kernel then answers "no route to host" at once instead of sending into a dead link (no namespace has a
default route, so nothing leaks out of the mesh).
"""
from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping

from routing.topology.linkstate import RouteChange

Run = Callable[[str], None]


def route_lines(changes: list[RouteChange], address: str, devs: Mapping[str, str], advmss: int) -> list[str]:
    """``ip -batch`` lines for ``changes``; ``devs``: neighbour address -> this node's device toward it."""
    lines = []
    for c in changes:
        if c.new is None and c.dst in devs:    # a neighbour is tried over its own link (routing.topology.routes.RouteTable)
            lines.append(f"route replace {c.dst}/32 dev {devs[c.dst]} src {address} advmss {advmss}")
        elif c.new is None:
            lines.append(f"route del {c.dst}/32")
        elif c.new == c.dst:
            lines.append(f"route replace {c.dst}/32 dev {devs[c.new]} src {address} advmss {advmss}")
        else:
            lines.append(f"route replace {c.dst}/32 via {c.new} dev {devs[c.new]} src {address} onlink "
                         f"advmss {advmss}")
    return lines


def ip_batch(script: str) -> None:
    """Run ``ip -batch -`` in this process's namespace; RuntimeError with ip's message when a line fails."""
    res = subprocess.run(["ip", "-batch", "-"], input=script, text=True, capture_output=True, timeout=10)
    if res.returncode != 0:
        raise RuntimeError(f"ip -batch failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")


class KernelRoutes:
    """Installs the router's changes in the kernel (``run``: :func:`ip_batch`, replaced in tests) and counts them."""

    def __init__(self, address: str, devs: Mapping[str, str], advmss: int, run: Run = ip_batch) -> None:
        self.address = address
        self.devs = dict(devs)
        self.advmss = advmss
        self._run = run
        self.installed = 0

    def apply(self, changes: list[RouteChange]) -> None:
        lines = route_lines(changes, self.address, self.devs, self.advmss)
        if lines:
            self._run("\n".join(lines) + "\n")
            self.installed += len(lines)
