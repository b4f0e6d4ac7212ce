"""Neighbours only (issue 27, item 3): a node takes a datagram only from one of its configured neighbours.

The rule, in one place for every data plane that hears datagrams with a link-level source, with or
without the MAC (routing.overlay.auth):

* a datagram whose link-level source is not a configured neighbour's is a **stranger**'s: dropped as
  ``stranger`` (counted, logged at the drop lines' rate) before it is verified or parsed.  The
  link-level source is the UDP source (ip, port) on the overlay (routing.drivers.udp; the map is built from
  the node's ``peers``, so a peer that is not a graph neighbour, as on the Pis where ``peers`` names
  every other node, is a stranger too), and the IP source on the kernel data plane's probe socket
  (routing.drivers.udp_probe);
* a probe or an LSA (link-local: it describes the link it came over, routing.overlay.engine.LINK_LOCAL) whose
  header names another source than that neighbour is a stranger's too (:func:`names_its_sender`; the
  node core asks it whenever its driver names the neighbour, routing.overlay.node.NodeCore._deliver, and so does
  the probe socket).

With the MAC on, the tag binds the datagram to the link (routing.overlay.wire.link_id), so a stranger who
spoofs a neighbour's source address is then dropped as ``forged``; with the MAC off the rule is what
keeps an address outside the experiment from setting a node's ETX estimate or reaching its relay path.
The sim backend has no link addresses: its links and its medium deliver only between configured
neighbours (experiments/backends/sim.py, sim_medium.py), so no stranger can reach a node there; the node
core's own check (a probe or an LSA naming a node that is not a neighbour) is what stands.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

STRANGER = "stranger"

A = TypeVar("A", bound=Hashable)


def link_senders(links: Mapping[str, A], neighbours: Iterable[str]) -> dict[A, str]:
    """Link-level source -> the neighbour's mesh address, for the configured ``neighbours`` only.

    ``links`` maps mesh addresses to the link-level address datagrams from them carry (the overlay's
    UDP (ip, port) of each peer).  A datagram whose source is not a key of the result is a stranger's."""
    mine = set(neighbours)
    return {addr: mesh for mesh, addr in links.items() if mesh in mine}


def names_its_sender(header_src: str, sender: str) -> bool:
    """Does a link-local packet (probe, LSA) heard from neighbour ``sender`` name it as its source?"""
    return header_src == sender
