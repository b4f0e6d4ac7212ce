"""The loopback addresses of the local backend, and what it refuses before a run starts.

Node i binds 127.0.1.(i+1) (standing in for the Pis' 10.2.1.x); past 254 nodes, 127.1.b.x (254 a /24).
With the dcf medium, the medium process (medium_process.py) binds one address per directed graph link
(a node sends only to its graph neighbours): the k-th pair 127.0.2.(k+1), past 254 pairs 127.2.b.x.  All
of 127.0.0.0/8 is loopback on Linux, so no address needs configuring.  Imports nothing heavy: the
runner's check_backend_support calls :func:`refuse_local`.
"""
from __future__ import annotations

import resource
from experiments.config import ExperimentConfig
from collections.abc import Mapping, Sequence
from typing import Any

from fieldspec import ConfigError
from routing.topology.graph import MeshGraph

PER_NET = 254                       # host addresses .1 to .254 of a /24
MAX_ADDRESSES = PER_NET + PER_NET * 256   # the first /24, then 256 more (127.1.0.x ... 127.1.255.x)
# Files the medium process has open besides its pair sockets (log, config, stdio, interpreter): a margin.
MEDIUM_FD_MARGIN = 64


def _address(first: str, more: str, index: int) -> str:
    if not 0 <= index < MAX_ADDRESSES:
        raise ValueError(f"loopback address index {index} outside 0..{MAX_ADDRESSES - 1}")
    if index < PER_NET:
        return f"{first}{index + 1}"
    rest = index - PER_NET
    return f"{more}{rest // PER_NET}.{rest % PER_NET + 1}"


def node_address(index: int) -> str:
    """Node ``index``'s address: 127.0.1.1 ... 127.0.1.254, then 127.1.0.1, ..."""
    return _address("127.0.1.", "127.1.", index)


def pair_address(index: int) -> str:
    """The medium process's address of directed pair ``index``: 127.0.2.1 ... 127.0.2.254, then 127.2.0.1, ..."""
    return _address("127.0.2.", "127.2.", index)


def directed_links(cfg: ExperimentConfig) -> list[tuple[str, str]]:
    """(src, dst) for every directed graph link, in node order then neighbour order: the pairs a node sends on."""
    topo = cfg.topology
    graph = MeshGraph.build(topo.nodes, topo.links)
    return [(a, b) for a in graph.nodes for b in graph.neighbours(a)]


def open_files_limit() -> int | None:
    """The hard limit of open files (the medium process raises its soft limit to it); None: unlimited."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def local_problem(cfg: ExperimentConfig) -> tuple[str, str] | None:
    """Why the local backend cannot run ``cfg`` (field path, reason), or None."""
    nodes = cfg.topology.nodes
    if len(nodes) > MAX_ADDRESSES:
        return "topology.nodes", (f"the local backend gives each node a loopback address, at most {MAX_ADDRESSES} "
                                  f"nodes; got {len(nodes)}")
    if cfg.medium.model == "none":
        return None
    pairs = 2 * len(cfg.topology.links)
    if pairs > MAX_ADDRESSES:
        return "topology.links", (f"the local medium process binds one loopback address per directed link, at most "
                                  f"{MAX_ADDRESSES}; got {pairs}")
    limit = open_files_limit()
    if limit is not None and pairs + MEDIUM_FD_MARGIN > limit:
        return "topology.links", (f"the local medium process opens one socket per directed link: {pairs} sockets, "
                                  f"more than this machine's limit of open files allows ({limit}, ulimit -Hn, "
                                  f"less {MEDIUM_FD_MARGIN} for its other files)")
    return None


def refuse_local(source: str, variants: Sequence[tuple[str, ExperimentConfig]], backend: str,
                 error: type[ConfigError]) -> None:
    """Raise ``error`` naming the first variant the local backend cannot run (too many nodes or links for its
    addresses, or for the open-file limit of the medium process); other backends: nothing."""
    if backend != "local":
        return
    for name, cfg in variants:
        problem = local_problem(cfg)
        if problem is not None:
            raise error(source, f"variants[{name}].{problem[0]}", problem[1])
