"""The experiment's graph on a desk of Pis: each host drops what it hears from a non-neighbour's MAC address.

All Pis of the inventory join one IBSS cell and hear each other, so on a desk any graph is only
logical.  The pi backend enforces it for both data planes: on every host, one rule per node that
is not a graph neighbour, in raw PREROUTING on the mesh interface::

    -i wlan0 -m mac --mac-source <that host's mesh MAC> -j DROP

then one rule that drops what none of its neighbours sent (an allow list: a device in the cell that is
not in the inventory is kept out too)::

    -i wlan0 -m mac ! --mac-source <neighbour 1> -m mac ! --mac-source <neighbour 2> ... -j DROP

raw PREROUTING is the earliest hook, before conntrack and the routing decision, so one rule covers
what the host would receive (INPUT) and what it would relay (FORWARD); it comes before the loss
model's statistic rule, so the loss counters count neighbour traffic only.  ARP is not IPv4 and
passes: a non-neighbour may resolve the address, but nothing it sends over IP gets in.  The rules
live in the project's chain ``ASPAN-PREROUTING`` (:mod:`deploy.kernel`: snapshot, restore script
written before the apply, compared after the restore), and each rule's packet counter says how
much was dropped from whom.

Each host's MAC address is read from the host at run time (``/sys/class/net/<iface>/address``, in
:func:`deploy.kernel.snapshot_command`), not written in the inventory: the address the frames
carry is the one the interface has now (a USB dongle swapped, an address set by the OS, a veth of
the virtual Pis made anew each time), and a typo in an inventory would silently open a link.
"""
from __future__ import annotations

import re
import shlex
from typing import Mapping, Sequence

from deploy.hosts import HostError
from routing.topology.graph import MeshGraph

MAC_RE = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")


def mac_command(iface: str) -> str:
    """Prints the interface's MAC address (``@@mac`` section of the snapshot)."""
    return f"cat /sys/class/net/{shlex.quote(iface)}/address 2>&1 || true"


def parse_mac(lines: Sequence[str], iface: str) -> str:
    """The MAC address printed by :func:`mac_command`; HostError naming the interface otherwise."""
    text = " ".join(ln.strip() for ln in lines if ln.strip())
    if not MAC_RE.fullmatch(text.lower()):
        raise HostError(f"no MAC address for the mesh interface {iface} (/sys/class/net/{iface}/address: "
                        f"{text[:120] or 'no output'}): check iface in the inventory")
    text = text.lower()
    if text == "00:00:00:00:00:00":
        raise HostError(f"the mesh interface {iface} has no hardware address (00:00:00:00:00:00): "
                        "the MAC filter needs one")
    return text


def non_neighbours(graph: MeshGraph, n: str) -> list[str]:
    """The nodes ``n`` must not hear, in node order."""
    nb = set(graph.neighbours(n))
    return [m for m in graph.nodes if m != n and m not in nb]


def check_distinct(macs: Mapping[str, str]) -> list[str]:
    """One line per MAC address that two hosts share (the filter would drop a neighbour)."""
    seen: dict[str, str] = {}
    out = []
    for n, mac in macs.items():
        if mac in seen:
            out.append(f"nodes {seen[mac]} and {n} have the same mesh MAC address {mac}: the filter cannot "
                       "tell them apart")
        seen.setdefault(mac, n)
    return out


def drop_rules(graph: MeshGraph, n: str, iface: str, macs: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """Node ``n``'s rules as (table, built-in chain, rule): one per non-neighbour (its counter says how much
    came from whom), then the allow list: whatever no neighbour sent, a device outside the inventory's
    included, is dropped (:func:`stranger_rule`)."""
    return [("raw", "PREROUTING", f"-i {iface} -m mac --mac-source {macs[m]} -j DROP")
            for m in non_neighbours(graph, n)] + [("raw", "PREROUTING", stranger_rule(graph, n, iface, macs))]


def stranger_rule(graph: MeshGraph, n: str, iface: str, macs: Mapping[str, str]) -> str:
    """Drop what comes from no neighbour's MAC address: one rule, a negated ``mac`` match per neighbour
    (all must hold).  A device that spoofs a neighbour's address still gets through: the MAC filter is not
    authentication (``auth.mac`` is)."""
    return f"-i {iface} " + " ".join(f"-m mac ! --mac-source {macs[m]}" for m in graph.neighbours(n)) + " -j DROP"


def counters_command(iptables: str) -> str:
    """Lists our raw chain with exact counters (run as root); empty when the host has no such chain."""
    return f"{iptables} -t raw -L ASPAN-PREROUTING -v -x -n 2>/dev/null; true"


def parse_stranger_drops(listing: str) -> int:
    """Packets the allow list dropped: from no neighbour of the graph (:func:`stranger_rule`)."""
    total = 0
    for line in listing.splitlines():
        parts = line.split()
        if "MAC !" in line and len(parts) > 2 and parts[2] == "DROP" and parts[0].isdigit():
            total += int(parts[0])
    return total


def parse_drops(listing: str, macs: Mapping[str, str]) -> dict[str, int]:
    """Node -> packets dropped because they came from its MAC (from :func:`counters_command`)."""
    by_mac = {mac.lower(): n for n, mac in macs.items()}
    out: dict[str, int] = {}
    for line in listing.splitlines():
        parts = line.split()
        m = re.search(r"MAC\s*((?:[0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2})", line)
        if m and len(parts) > 2 and parts[2] == "DROP" and parts[0].isdigit():
            node = by_mac.get(m.group(1).lower())
            if node is not None:
                out[node] = out.get(node, 0) + int(parts[0])
    return out
