"""The ``topology:`` section of an experiment: nodes, links, addresses, routes (docs/GUIDE.md, "Meshes").

A topology is a graph.  It is written as ``links`` (undirected pairs), as the ``chain`` shorthand of a
line, or, on the dcf medium, as ``nodes`` alone: then the positions give the links (every pair within
communication range; experiments.medium_spec).  With none of the three, the default chain A-B-C-D.  After validation every resolved configuration has ``topology.nodes`` (the
order: addresses, tie-break of equal routes) and ``topology.links`` (sorted pairs), whichever way
it was written, so the backends read one shape; ``chain`` stays as written (None when not).

Checks (every error at once, each with its field path): node names, unknown node, self-link,
duplicate link, chain and links together, addresses; then, once the links are known
(:func:`check_graph`): a graph that is not connected, a flow whose ends are not joined, and the
routes (overrides: neighbours, loops, every destination reached).
"""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from fieldspec import ConfigError
from routing.topology.graph import MeshGraph
from routing.topology.routes import route_problems

DEFAULT_CHAIN = ["A", "B", "C", "D"]
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")

Errors = list[ConfigError]
_WORDS = {1: "one", 2: "two"}


def default_address(index: int) -> str:
    """The ``index``-th node's default mesh address: 10.2.1.1, 10.2.1.2, ... (the Pis' mesh addresses);
    past 254 nodes the next /24 (10.2.2.1, ...)."""
    return f"10.2.{1 + index // 254}.{index % 254 + 1}"


def _names_ok(src: str, path: str, names: Any, error: type[ConfigError], errs: Errors, least: int) -> bool:
    if not (isinstance(names, list) and len(names) >= least and all(isinstance(n, str) and _NAME.fullmatch(n)
                                                                       for n in names)):
        errs.append(error(src, path, f"expected at least {_WORDS[least]} node name{'s' if least > 1 else ''} "
                          f"(letters, digits, _ -), got {names!r}"))
        return False
    if len(set(names)) != len(names):
        errs.append(error(src, path, f"node names repeat: {names!r}"))
        return False
    return True


def check_nodes_links(src: str, cfg: dict[str, Any], error: type[ConfigError], errs: Errors) -> bool:
    """Fill ``topology.nodes``, ``topology.links`` (unless the medium's positions give them: None then)
    and ``topology.addresses``.  False when the nodes themselves are wrong (the checks that need them
    are skipped)."""
    topo = cfg["topology"]
    chain, nodes, links = topo.get("chain"), topo.get("nodes"), topo.get("links")
    n_errs = len(errs)
    if chain is not None and links is not None:
        errs.append(error(src, "topology.links", "give either topology.chain (a line) or topology.links, not both"))
        return False
    if chain is not None and not _names_ok(src, "topology.chain", chain, error, errs, 2):
        return False
    if nodes is not None and not _names_ok(src, "topology.nodes", nodes, error, errs, 1):
        return False
    if links is not None:
        nodes = _check_links(src, links, nodes, error, errs)
        if nodes is None:
            return False
    elif chain is not None:
        if topo.get("nodes") is not None and list(topo["nodes"]) != list(chain):
            errs.append(error(src, "topology.nodes", "with topology.chain the nodes are the chain's; leave nodes out"))
            return False
        nodes, links = list(chain), [[a, b] for a, b in zip(chain, chain[1:])]
    else:
        if nodes is None:    # neither chain, links nor nodes: the default chain (every older file's meaning)
            nodes, chain = list(DEFAULT_CHAIN), list(DEFAULT_CHAIN)
            links = [[a, b] for a, b in zip(chain, chain[1:])]
        elif (cfg.get("medium") or {}).get("model", "none") == "none":
            errs.append(error(src, "topology.links", "expected links for these nodes (or topology.chain); only a dcf "
                              "medium's positions can give them"))
            return False
        # else: nodes and no links on the dcf medium: every pair within range is a link (check_medium)
    if len(nodes) < 2:
        errs.append(error(src, "topology.nodes", f"expected at least two nodes, got {nodes!r}"))
        return False
    topo["chain"], topo["nodes"] = chain, list(nodes)
    topo["links"] = None if links is None else [list(p) for p in MeshGraph.build(nodes, links).links]
    _check_addresses(src, topo, error, errs)
    for n, table in topo["routes"].items():
        if n not in nodes:
            errs.append(error(src, f"topology.routes.{n}", f"unknown node; expected one of {', '.join(nodes)}"))
        elif not isinstance(table, dict):
            errs.append(error(src, f"topology.routes.{n}", "expected a mapping destination -> next hop"))
        else:
            for dst, via in table.items():
                if dst not in nodes or via not in nodes:
                    errs.append(error(src, f"topology.routes.{n}.{dst}", f"unknown node in route {dst} via {via}"))
    return True


def _check_links(src: str, links: Any, nodes: list[str] | None, error: type[ConfigError],
                 errs: Errors) -> list[str] | None:
    """The node order of well-formed ``links`` (``nodes`` when given); None when a link is wrong."""
    n_errs = len(errs)
    order: list[str] = list(nodes) if nodes is not None else []
    seen: dict[frozenset[str], int] = {}
    for i, link in enumerate(links):
        path = f"topology.links[{i}]"
        if not (isinstance(link, list) and len(link) == 2 and all(isinstance(x, str) and _NAME.fullmatch(x)
                                                                  for x in link)):
            errs.append(error(src, path, f"expected a pair of node names [A, B], got {link!r}"))
            continue
        a, b = link
        if a == b:
            errs.append(error(src, path, f"a link from {a} to itself"))
            continue
        key = frozenset(link)
        if key in seen:
            errs.append(error(src, path, f"duplicate link {a}-{b} (also topology.links[{seen[key]}])"))
            continue
        seen[key] = i
        for x in link:
            if nodes is not None and x not in nodes:
                errs.append(error(src, path, f"unknown node {x!r}; expected one of {', '.join(nodes)} (topology.nodes)"))
            elif x not in order:
                order.append(x)
    if not links and not errs[n_errs:]:
        errs.append(error(src, "topology.links", "expected at least one link"))
    return None if len(errs) > n_errs else order


def _check_addresses(src: str, topo: dict[str, Any], error: type[ConfigError], errs: Errors) -> None:
    nodes = topo["nodes"]
    addrs = topo["addresses"]
    for n, a in addrs.items():
        if n not in nodes:
            errs.append(error(src, f"topology.addresses.{n}", f"unknown node; expected one of {', '.join(nodes)}"))
            continue
        try:
            ipaddress.IPv4Address(a)
        except (ValueError, TypeError):
            errs.append(error(src, f"topology.addresses.{n}", f"expected an IPv4 address, got {a!r}"))
    full = {n: addrs.get(n, default_address(i)) for i, n in enumerate(nodes)}
    if len(set(full.values())) != len(nodes):
        errs.append(error(src, "topology.addresses", f"addresses repeat: {full}"))
    topo["addresses"] = full


def check_graph(src: str, cfg: dict[str, Any], error: type[ConfigError], errs: Errors,
                radio: tuple[str, str] | None = None) -> None:
    """Once ``topology.links`` is known: the graph connected, every flow's ends joined, the routes sound.
    ``radio``: the links came from the medium (experiments.medium_spec.radio_links_origin: the field that
    placed the nodes, and the rule that linked them), and the errors name that field."""
    topo = cfg["topology"]
    graph = MeshGraph.build(topo["nodes"], topo["links"])
    comps = graph.components()
    if len(comps) > 1:
        parts = "; ".join("[" + ", ".join(c) + "]" for c in comps)
        if radio is not None:
            where, rule = radio
            errs.append(error(src, where, f"the links the radio gives ({rule}) leave the graph not connected: "
                              f"{parts} (out of communication range)"))
        else:
            where = "topology.links" if topo["chain"] is None else "topology.chain"
            errs.append(error(src, where, "the graph is not connected: " + parts))
        comp_of = {n: i for i, c in enumerate(comps) for n in c}
        for i, f in enumerate(cfg["flows"]):
            s, r = f.get("sender"), f.get("receiver")
            if s in comp_of and r in comp_of and comp_of[s] != comp_of[r]:
                errs.append(error(src, f"flows[{i}]", f"{s} and {r} are not joined by any path of the graph"))
        return
    linked = {(a, b) for a, b in graph.links} | {(b, a) for a, b in graph.links}
    for key in (cfg.get("loss") or {}).get("links") or {}:
        a, b = key.split(">")
        if (a, b) not in linked:
            errs.append(error(src, "loss.links", f"{a} and {b} are not linked (topology.links): a loss on "
                              f"{a}>{b} would never apply"))
            break
    errs.extend(error(src, path, why) for path, why in trace_link_problems(cfg, linked))
    errs.extend(error(src, path, why) for path, why in route_problems(topo))


def trace_link_problems(cfg: Mapping[str, Any], linked: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """(path, why) for each loss spec of model ``trace`` whose recorded ``link`` is not a directed link of this
    topology: a trace replays only on the links it recorded (issue 25), on every backend."""
    loss = cfg.get("loss") or {}
    specs = [("loss.default", loss.get("default"))] + [(f"loss.nodes.{n}", s) for n, s in (loss.get("nodes") or {}).items()] \
        + [(f"loss.links.{k}", s) for k, s in (loss.get("links") or {}).items()]
    out = []
    for path, spec in specs:
        if not (isinstance(spec, dict) and spec.get("model") == "trace" and isinstance(spec.get("link"), str)):
            continue
        a, _, b = spec["link"].partition(">")
        if (a, b) not in linked:
            out.append((f"{path}.link", f"the trace's link {spec['link']!r} is not a link of this topology "
                                        "(topology.links): a trace replays only on the links it recorded"))
    return out
