"""The mesh figure: the graph, each flow's route and the load on each node (the report's "Mesh").

One panel per variant: the nodes at their medium positions (meta.json `positions`, which the run resolved)
when the medium has any, else at a deterministic layout (a line for a chain, a seeded spring layout
for any other graph); the links; each flow's route from meta.json ``routing.paths`` as arrows in the
flow's colour; and per node its local retransmissions (the node's colour), its snoop cache
occupancy (largest and time-averaged segments) and, with a medium, its airtime share.  Values are
means over the variant's usable (not failed) repetitions.

Runs written before the topology was a graph (only ``topology.chain``, no ``routing`` in meta.json)
are drawn too: their links are the chain's consecutive pairs and a flow's route is its shortest
path over them, the only one on a chain.  A variant whose graph is unknown (no resolved config and
no ``routing``) gets no panel.
"""
from __future__ import annotations

import json
import math
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402
from matplotlib.transforms import offset_copy  # noqa: E402

from plots import style  # noqa: E402
from plots.logs import PARQUET, RepLogs, events_frame, iter_reps, load_experiment, read_meta  # noqa: E402
from plots.summary import cache_node_means  # noqa: E402

__all__ = ["FlowRoute", "NodeLoad", "MeshPanel", "mesh_panels", "node_loads", "path_edges",
           "mesh_layout", "mesh_figure", "draw_mesh", "mesh_figures", "compare_panels", "mesh_section",
           "is_mesh_key", "PANELS_PER_FIGURE"]

PANELS_PER_FIGURE = 6     # more variants than this: mesh.png, mesh_2.png, ...
# The events the per-node loads need besides local transmissions (``tx`` of kind ``local``).
_EVENTS = ("cache", "flow_start", "flow_end")
ROUTES_LOGGED = {"hops": "hop count", "etx": "ETX"}


@dataclass(frozen=True)
class FlowRoute:
    """One flow of a variant and the route(s) its repetitions took.

    ``paths``: each distinct path (node names, sender first) -> how many repetitions took it;
    ``logged``: False when meta.json had no ``routing`` and the path is the graph's shortest.
    """

    label: str
    sender: str
    receiver: str
    paths: dict[tuple[str, ...], int]
    logged: bool = True


@dataclass(frozen=True)
class NodeLoad:
    """One node's load, mean over the variant's usable repetitions; ``airtime_share`` is None
    without a medium, the cache values 0 at a node that never cached."""

    local_retransmissions: float
    cache_max: float
    cache_mean: float
    airtime_share: float | None = None


@dataclass
class MeshPanel:
    """What one variant's panel draws."""

    variant: str
    nodes: list[str]
    links: list[tuple[str, str]]
    positions: dict[str, tuple[float, float]] | None   # metres, from the medium; None: a layout
    metric: str                                        # hops | etx | "" (not logged)
    flows: list[FlowRoute]
    reps: int                                          # usable repetitions
    loads: dict[str, NodeLoad] = field(default_factory=dict)
    link_etx: dict[str, float] = field(default_factory=dict)   # "A>B" -> mean over repetitions
    snoops: bool = False                                       # some node logged a cache event


def is_mesh_key(key: str) -> bool:
    """True for the figure keys :func:`mesh_figures` returns (``mesh``, ``mesh_2``, ...)."""
    return key == "mesh" or (key.startswith("mesh_") and key[5:].isdigit())


def path_edges(path: Sequence[str]) -> list[tuple[str, str]]:
    """The directed links a route crosses, in order: ``[A, B, D]`` -> ``[(A, B), (B, D)]``."""
    return list(zip(path, path[1:]))


# ----------------------------------------------------------------------------- the graph and routes

def _variant_configs(experiment: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for v in experiment.get("variants") or []:
        if isinstance(v, dict) and isinstance(v.get("config"), dict):
            out[str(v.get("name"))] = v["config"]
    return out


def _graph(cfg: dict[str, Any] | None, routing: dict[str, Any] | None,
           meta: dict[str, Any]) -> tuple[list[str], list[tuple[str, str]]] | None:
    """Nodes (in the topology's order) and undirected links: the resolved topology's links, else
    meta.json's ``routing.links``, else the chain's consecutive pairs; None if none is known."""
    topo = (cfg or {}).get("topology") or {}
    chain = topo.get("chain")
    links = topo.get("links") or (routing or {}).get("links")
    if not links and chain:
        links = list(zip(chain, chain[1:]))
    if not links:
        return None
    pairs = [(str(a), str(b)) for a, b in links]
    named = topo.get("nodes") or chain or list(meta.get("nodes") or {})
    nodes = [str(n) for n in named]
    nodes += [n for n in dict.fromkeys(x for pair in pairs for x in pair) if n not in nodes]
    return nodes, pairs


def _flow_names(meta: dict[str, Any], cfg: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(sender, receiver) of each flow in cfg order (meta.json ``flows``, else the config's)."""
    flows = meta.get("flows") or (cfg or {}).get("flows") or []
    return [(str(f.get("sender")), str(f.get("receiver"))) for f in flows if isinstance(f, dict)]


def _labels(pairs: list[tuple[str, str]]) -> list[str]:
    """``A->D``, numbered (``A->D #2``) when two flows share their ends."""
    seen: Counter[tuple[str, str]] = Counter()
    total = Counter(pairs)
    out = []
    for pair in pairs:
        seen[pair] += 1
        out.append(f"{pair[0]}->{pair[1]}" + (f" #{seen[pair]}" if total[pair] > 1 else ""))
    return out


def _shortest(nodes: list[str], links: list[tuple[str, str]], a: str, b: str) -> tuple[str, ...]:
    g = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from(links)
    try:
        return tuple(nx.shortest_path(g, a, b))
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return ()


def _read_meta(rep_dir: Path) -> dict[str, Any]:
    return read_meta(rep_dir)    # rebuilt when missing or not whole (plots.logs)


def mesh_panels(run_dir: Path, loads: bool = True) -> list[MeshPanel]:
    """One :class:`MeshPanel` per variant whose graph is known, in the run's variant order.
    ``loads=False`` leaves out the per-node loads (which read the logs): the routes and the
    graph come from experiment.yaml and meta.json alone."""
    run_dir = Path(run_dir)
    experiment = load_experiment(run_dir)
    configs = _variant_configs(experiment)
    reps: dict[str, list[tuple[int, Path, dict[str, Any]]]] = {}
    for variant, k, rep_dir in iter_reps(run_dir):
        meta = _read_meta(rep_dir)
        if meta.get("status") != "failed":
            reps.setdefault(variant, []).append((k, rep_dir, meta))
    for name in configs:
        reps.setdefault(name, [])
    panels = []
    for variant, usable in reps.items():
        panel = _panel(variant, configs.get(variant), usable)
        if panel is not None:
            panels.append(panel)
    if loads and panels:
        found = node_loads(run_dir, {p.variant: [r[:2] for r in reps[p.variant]] for p in panels})
        for p in panels:
            p.loads, p.snoops = found.get(p.variant, ({}, False))
            medium = any(ld.airtime_share is not None for ld in p.loads.values())
            for n in p.nodes:   # a node without any of the events: nothing to count there
                p.loads.setdefault(n, NodeLoad(0.0, 0.0, 0.0, 0.0 if medium else None))
    return panels


def _panel(variant: str, cfg: dict[str, Any] | None,
           usable: list[tuple[int, Path, dict[str, Any]]]) -> MeshPanel | None:
    metas = [m for _k, _d, m in usable]
    routing = next((m["routing"] for m in metas if isinstance(m.get("routing"), dict)), None)
    graph = _graph(cfg, routing, metas[0] if metas else {})
    if graph is None:
        return None
    nodes, links = graph
    pairs = _flow_names(metas[0] if metas else {}, cfg)
    paths: list[Counter[tuple[str, ...]]] = [Counter() for _ in pairs]
    logged = [True] * len(pairs)
    etx: dict[str, list[float]] = {}
    for meta in metas:
        r = meta.get("routing") if isinstance(meta.get("routing"), dict) else {}
        logged_paths = r.get("paths") or []
        for i, (a, b) in enumerate(pairs):
            if i < len(logged_paths) and logged_paths[i]:
                paths[i][tuple(map(str, logged_paths[i]))] += 1
            else:   # an older run: no routing in meta.json
                logged[i] = False
                path = _shortest(nodes, links, a, b)
                if path:
                    paths[i][path] += 1
        for link, value in (r.get("link_etx") or {}).items():
            if value is not None:   # null: the ETX was not finite (no probe came through)
                etx.setdefault(str(link), []).append(float(value))
    flows = [FlowRoute(label, a, b, dict(paths[i].most_common()), logged[i])
             for i, ((a, b), label) in enumerate(zip(pairs, _labels(pairs)))]
    metric = str((routing or {}).get("metric", "")) if routing else ""
    return MeshPanel(variant, nodes, links, _medium_positions(cfg, nodes, metas), metric, flows,
                     len(usable), link_etx={k: float(np.mean(v)) for k, v in etx.items()})


def _medium_positions(cfg: dict[str, Any] | None, nodes: list[str], metas: list[dict[str, Any]]
                      ) -> dict[str, tuple[float, float]] | None:
    """The medium's node positions (metres), None without a medium or when it has none.

    From meta.json's ``positions`` (written by the run since meshes are graphs: the run resolved them,
    random placements included); for an older run, from its experiment.yaml: the explicit
    ``medium.positions`` over the chain on a line ``spacing_m`` apart, the only placement then."""
    logged = next((m["positions"] for m in metas if "positions" in m), "absent")
    if logged != "absent":
        if not isinstance(logged, dict):
            return None
        return {str(n): (float(xy[0]), float(xy[1])) for n, xy in logged.items()}
    medium = (cfg or {}).get("medium") or {}
    if medium.get("model", "none") == "none" or medium.get("hears"):
        return None
    spacing = float(medium.get("spacing_m", 200.0))
    given = medium.get("positions") or {}
    return {n: (float(given[n][0]), float(given[n][1])) if n in given else (i * spacing, 0.0)
            for i, n in enumerate(nodes)}


# ----------------------------------------------------------------------------- per-node loads

def _parse(lines: list[str]) -> list[Any]:
    """The JSON values of ``lines``: all at once when every line is one value (the fast path, as in
    plots.logs), else line by line, leaving out the lines that are not valid JSON (plots.logs counts
    them and the report names them, under Problems)."""
    if not lines:
        return []
    try:
        parsed = json.loads("[" + ",".join(lines) + "]")
    except ValueError:
        parsed = None   # some line is broken: parsed one by one below
    if parsed is not None and len(parsed) == len(lines):
        return parsed
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _rep_events(rep_dir: Path) -> tuple[dict[str, int], pd.DataFrame]:
    """What the loads need of one repetition: local retransmissions per node (``tx`` of kind
    ``local``), and the ``cache``, ``flow_start`` and ``flow_end`` events as a frame; from its JSON
    Lines logs (only the lines that name one of these are parsed) and its events.parquet once
    compacted."""
    local: Counter[str] = Counter()
    events: list[dict[str, Any]] = []
    for log in sorted(rep_dir.glob("*.log")):
        stem = log.stem
        with log.open(encoding="utf-8", errors="replace") as f:
            lines = [ln for ln in f if "local" in ln or "cache" in ln or "flow_" in ln]
        for e in _parse(lines):
            if not isinstance(e, dict) or "t" not in e:
                continue
            if e.get("ev") == "tx":
                if e.get("kind") == "local":
                    local[str(e.get("node", stem))] += 1
            elif e.get("ev") in _EVENTS:
                e.setdefault("node", stem)
                events.append(e)
    frame = events_frame(events)
    compacted = rep_dir / PARQUET
    if compacted.is_file():
        import pyarrow.parquet as pq
        try:
            table = pq.read_table(compacted, filters=[("ev", "in", ["tx", *_EVENTS])])
        except (OSError, ValueError) as exc:
            raise ValueError(f"{compacted}: not readable as the repetition's events ({exc})") from None
        stored = table.to_pandas()
        tx = stored["ev"] == "tx"
        if "kind" in stored:
            for node, n in stored[tx & (stored["kind"] == "local")].groupby("node").size().items():
                local[str(node)] += int(n)
        stored = stored[~tx]
        frame = stored if not events else pd.concat([stored, frame], ignore_index=True)
    return dict(local), frame


def _rep_loads(rep_dir: Path, meta: dict[str, Any]) -> tuple[pd.DataFrame, bool]:
    """Per node: local retransmissions, largest and time-averaged cache size of one repetition;
    and whether some node logged a cache event."""
    local, ev = _rep_events(rep_dir)
    cache = ev[ev["ev"] == "cache"]
    largest = (cache.groupby("node")["segments"].max() if "segments" in cache and len(cache)
               else pd.Series(dtype=float))
    means = pd.Series(cache_node_means(RepLogs(meta=meta, events=ev)), dtype=float)
    frame = pd.DataFrame({"local_retransmissions": pd.Series(local, dtype=float), "cache_max": largest,
                          "cache_mean": means}).fillna(0.0)
    frame.index = frame.index.astype(str)
    return frame, not cache.empty


def node_loads(run_dir: Path, reps: dict[str, list[tuple[int, Path]]]
               ) -> dict[str, tuple[dict[str, NodeLoad], bool]]:
    """variant -> (node -> its :class:`NodeLoad`, some node snooped), over the given repetitions
    (``(k, rep_dir)``, the usable ones); a node missing from a repetition's events counts 0 there."""
    from plots.medium import mac_frame, medium_variants
    with_medium = medium_variants(load_experiment(run_dir))
    mac = mac_frame(run_dir) if with_medium else pd.DataFrame()
    out = {}
    for variant, rep_list in reps.items():
        frames, snooped = [], False
        for _k, rep_dir in rep_list:
            frame, cached = _rep_loads(rep_dir, _read_meta(rep_dir))
            frames.append(frame)
            snooped = snooped or cached
        if not frames:
            out[variant] = ({}, False)
            continue
        nodes = sorted(set().union(*(f.index for f in frames)))
        mean = sum(f.reindex(nodes, fill_value=0.0) for f in frames) / len(frames)
        share: dict[str, float] = {}
        if variant in with_medium and not mac.empty:
            used = mac[(mac["variant"] == variant) & mac["repetition"].isin([k for k, _ in rep_list])]
            share = used.groupby("node")["airtime_share"].mean().to_dict()
        loads = {n: NodeLoad(float(mean.at[n, "local_retransmissions"]), float(mean.at[n, "cache_max"]),
                             float(mean.at[n, "cache_mean"]),
                             float(share[n]) if n in share else (0.0 if variant in with_medium else None))
                 for n in nodes}
        for n in share:
            if n not in loads:
                loads[n] = NodeLoad(0.0, 0.0, 0.0, float(share[n]))
        out[variant] = (loads, snooped)
    return out


# ----------------------------------------------------------------------------- drawing

def mesh_layout(nodes: list[str], links: list[tuple[str, str]]) -> dict[str, tuple[float, float]]:
    """Deterministic positions: a chain (a path graph) on a line in path order from the end named
    first in ``nodes``; any other graph by a seeded spring layout (networkx's Fruchterman-Reingold:
    numpy only, no scipy) started from a circle in node order and, for a planar graph, also from a
    planar drawing: the one with fewer crossing links is kept."""
    g = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from(links)
    degrees = dict(g.degree())
    ends = [n for n in nodes if degrees[n] == 1]
    if len(nodes) == 1:
        return {nodes[0]: (0.0, 0.0)}
    if nx.is_connected(g) and len(ends) == 2 and max(degrees.values()) <= 2:
        order = nx.shortest_path(g, ends[0], ends[1])
        return {n: (float(i), 0.0) for i, n in enumerate(order)}
    start = nx.circular_layout(nodes)
    candidates = [nx.spring_layout(g, pos={n: start[n] for n in nodes}, seed=1)]
    if nx.check_planarity(g)[0]:    # a planar graph can be drawn without crossings: start from such a drawing
        candidates.append(nx.spring_layout(g, pos=nx.planar_layout(g), seed=1))
    pos = min(candidates, key=lambda p: _crossings(links, p))   # the first of the fewest crossings
    return {n: (float(pos[n][0]), float(pos[n][1])) for n in nodes}


def _crossings(links: list[tuple[str, str]], pos: Any) -> int:
    """How many pairs of links (without a common node) cross in the drawing ``pos``."""
    def ccw(a: Any, b: Any, c: Any) -> bool:
        return (c[1] - a[1]) * (b[0] - a[0]) > (b[1] - a[1]) * (c[0] - a[0])
    count = 0
    for i, (a, b) in enumerate(links):
        for c, d in links[i + 1:]:
            if len({a, b, c, d}) == 4 and ccw(pos[a], pos[c], pos[d]) != ccw(pos[b], pos[c], pos[d]) \
                    and ccw(pos[a], pos[b], pos[c]) != ccw(pos[a], pos[b], pos[d]):
                count += 1
    return count


def _num(value: float) -> str:
    """Counts as integers from 100 on (25420, not 2.542e+04), else 3 significant digits."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _load_text(load: NodeLoad | None, snoops: bool) -> str:
    if load is None:
        return "rtx 0"
    parts = [f"rtx {_num(load.local_retransmissions)}"]
    if snoops:
        parts.append(f"cache {_num(load.cache_max)}/{_num(load.cache_mean)}")
    if load.airtime_share is not None:
        parts.append(f"air {100 * load.airtime_share:.0f}%")
    return "\n".join(parts)


def _limits(ax: Axes, pos: dict[str, tuple[float, float]]) -> None:
    xs = np.array([p[0] for p in pos.values()])
    ys = np.array([p[1] for p in pos.values()])
    span = max(float(np.ptp(xs)), float(np.ptp(ys)), 1e-9)
    pad = 0.18 * span
    ax.set_xlim(xs.min() - pad, xs.max() + pad)
    top = 1.6 * pad if np.ptp(ys) > 0 else pad
    ax.set_ylim(ys.min() - 1.6 * pad, ys.max() + top)   # room for the labels under and over the nodes


#: Beyond this many nodes a panel labels only its DENSE_LABELS busiest nodes (their names and colours
#: stay on every node): thirty labels of three lines each would cover the mesh they describe.
DENSE_NODES = 12
DENSE_LABELS = 4


def _busiest(panel: MeshPanel, k: int) -> list[str]:
    """The ``k`` nodes with the most local retransmissions, then the most airtime (ties: node order)."""
    def key(n: str) -> tuple[float, float]:
        ld = panel.loads.get(n)
        return (ld.local_retransmissions, ld.airtime_share or 0.0) if ld is not None else (0.0, 0.0)
    return sorted(panel.nodes, key=lambda n: (-key(n)[0], -key(n)[1], panel.nodes.index(n)))[:k]


def _draw_panel(ax: Axes, panel: MeshPanel, pos: dict[str, tuple[float, float]], norm: Normalize,
                cmap: Any, colors: list[Any]) -> tuple[Any, list[Any]]:
    """Draw one panel; returns the nodes' markers (a scatter) and the nodes' name labels."""
    for a, b in panel.links:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        ax.plot([x1, x2], [y1, y2], color="0.75", lw=1.5, zorder=1, solid_capstyle="round")
        etx = [panel.link_etx.get(f"{a}>{b}"), panel.link_etx.get(f"{b}>{a}")]
        if any(v is not None for v in etx):
            text = "/".join("?" if v is None else f"{v:.2f}" for v in etx)
            ax.text((x1 + x2) / 2, (y1 + y2) / 2, text, fontsize=6, color="0.35", ha="center",
                    va="center", zorder=1.5, bbox={"boxstyle": "round,pad=0.1", "fc": "white",
                                                   "ec": "none", "alpha": 0.8})
    handles = []
    for i, flow in enumerate(panel.flows):
        total = sum(flow.paths.values())
        for j, (path, count) in enumerate(flow.paths.items()):
            rad = 0.12 * i + 0.08 * j     # flows over one link side by side, not on top
            style = "-" if j == 0 else "--"
            for u, v in path_edges(path):
                if u not in pos or v not in pos:
                    continue
                ax.add_patch(FancyArrowPatch(pos[u], pos[v], arrowstyle="-|>", mutation_scale=11,
                                             color=colors[i], lw=1.8, linestyle=style,
                                             connectionstyle=f"arc3,rad={rad}", shrinkA=11,
                                             shrinkB=11, zorder=2, alpha=0.9))
            note = "" if flow.logged else ", shortest path (routes not logged)"
            share = f" ({count}/{total} reps)" if len(flow.paths) > 1 else ""
            handles.append(Line2D([0], [0], color=colors[i], lw=1.8, linestyle=style,
                                  label=f"{flow.label}: {'-'.join(path)}{share}{note}"))
    xy = np.array([pos[n] for n in panel.nodes])
    rtx = [panel.loads[n].local_retransmissions if n in panel.loads else 0.0 for n in panel.nodes]
    dense = len(panel.nodes) > DENSE_NODES
    markers = ax.scatter(xy[:, 0], xy[:, 1], s=150 if dense else 380, c=rtx, cmap=cmap, norm=norm,
                         edgecolors="0.2", linewidths=0.8 if dense else 1.0, zorder=3)
    names = []
    middle = float(xy[:, 1].mean())
    span = float(np.ptp(xy[:, 1])) or 1.0
    labelled = set(_busiest(panel, DENSE_LABELS)) if dense else set(panel.nodes)
    for n, (x, y), value in zip(panel.nodes, xy, rtx):
        names.append(ax.text(x, y, n, ha="center", va="center", fontsize=5.5 if dense else 8, fontweight="bold",
                             zorder=4, color="white" if norm(value) > 0.6 else "black"))
        if n not in labelled:
            continue
        above = y > middle + 1e-6 * span    # the upper nodes' labels above: away from the links
        ax.annotate(_load_text(panel.loads.get(n), panel.snoops), (x, y), xytext=(0, 13 if above else -13),
                    textcoords="offset points", ha="center", va="bottom" if above else "top",
                    fontsize=6.5, zorder=4, linespacing=1.1,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75})
    _limits(ax, pos)
    if panel.positions is not None:
        ax.set_aspect("equal", adjustable="box")   # metres both ways
        ax.tick_params(labelsize=7)
        ax.set_xlabel("x (m)", fontsize="small")
        ax.set_ylabel("y (m)", fontsize="small")
    else:   # a layout: the axes mean nothing
        ax.set_xticks([])
        ax.set_yticks([])
    for side in ("top", "right") if panel.positions is not None else ax.spines:
        ax.spines[side].set_visible(False)
    routes = f"routes: {ROUTES_LOGGED.get(panel.metric, panel.metric)}" if panel.metric else \
        "routes not logged"
    reps = f"{panel.reps} rep" + ("s" if panel.reps != 1 else "")
    ax.set_title(f"{panel.variant}\n({routes}; {reps})", fontsize="medium")
    if handles:
        below = offset_copy(ax.transAxes, fig=ax.figure, y=-2 if panel.positions is None else -30,
                            units="points")    # under the tick labels and the x label, if any
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below,
                  fontsize="small", frameon=False, ncol=1)
    return markers, names


# Where a label that overlaps another goes instead, in points from where it was: the eight directions
# at growing distances, nearest first; a node's name goes no farther than NAME_AWAY, so that it stays
# beside its node.
_AWAY = [(r * dx, r * dy) for r in (9.0, 14.0, 20.0, 28.0, 38.0, 50.0)
         for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1), (0.71, 0.71), (-0.71, 0.71), (0.71, -0.71), (-0.71, -0.71))]


NAME_AWAY = 20.0


def _declutter(fig: Any, drawn: Sequence[tuple[Axes, Any, list[Any]]]) -> None:
    """Labels that do not overlap: with the figure laid out, each label of a panel (node names first,
    then the nodes' values, then the links' ETX) that overlaps one placed before it moves to the nearest
    place of _AWAY where it overlaps neither a placed label nor a node; a node's name moved off its node
    is drawn black, a size smaller, and shrinks further (to 4 pt) where no place is free.  Labels that
    overlap nothing stay where they are, so an uncrowded mesh is drawn as before.  A value (a node's or
    a link's) that finds no free place is left out, and the figure's key says how many.  A moved label
    takes no part in the layout (the panels stay where they were placed); a second pass checks the result."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    if not _crowded(fig, drawn):
        return      # drawn as it always was: nothing is laid out or moved ahead of the save
    canvas = FigureCanvasAgg(fig)
    key, noted = fig.get_suptitle(), 0
    for _ in range(4):
        fig.draw_without_rendering()    # the layout and each panel's aspect, as the saved figure has them
        renderer = canvas.get_renderer()
        moved = any([_declutter_panel(ax, markers, names, renderer) for ax, markers, names in drawn])
        hidden = sum(1 for ax, _m, _n in drawn for t in ax.texts if t.get_text() and not t.get_visible())
        if hidden != noted:     # the key says so; a longer key moves the panels: another pass
            fig.suptitle(key + f"\n{hidden} value label(s) left out: no room beside the nodes", fontsize="small")
            noted = hidden
        elif not moved:
            break


def _crowded(fig: Any, drawn: Sequence[tuple[Axes, Any, list[Any]]]) -> bool:
    """True if some label of a panel overlaps another, as the figure would be saved (looked at on a
    copy: a figure laid out once is laid out a little differently the next time)."""
    import pickle
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    index = [(fig.axes.index(ax), [ax.texts.index(t) for t in names]) for ax, _m, names in drawn]
    copy = pickle.loads(pickle.dumps(fig))
    canvas = FigureCanvasAgg(copy)
    copy.draw_without_rendering()
    renderer = canvas.get_renderer()
    for (i, name_at), (_ax, markers, _names) in zip(index, drawn):
        ax = copy.axes[i]
        marks = next(c for c in ax.collections if len(c.get_offsets()) == len(markers.get_offsets())
                     and np.allclose(c.get_offsets(), markers.get_offsets()))
        if _declutter_panel(ax, marks, [ax.texts[j] for j in name_at], renderer):
            return True
    return False


def _declutter_panel(ax: Axes, markers: Any, names: list[Any], renderer: Any) -> bool:
    """One pass of :func:`_declutter` over one panel; True if a label moved."""
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox
    fig = ax.figure
    pad = 1.0 * fig.dpi / 72     # a point between labels

    def box_of(t: Any) -> Any:
        return t.get_window_extent(renderer).padded(pad)

    def overlap(box: Any, others: Sequence[Any]) -> bool:
        return any(box.overlaps(o) for o in others)
    frame = ax.get_window_extent()      # a moved label stays inside the panel: off its title and ticks

    def within(box: Any) -> bool:
        return bool(frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1)
    others = [t for t in ax.texts if t not in names and t.get_text() and t.get_visible()]
    texts = [t for t in names if t.get_text()] + [t for t in others if isinstance(t, Annotation)] \
        + [t for t in others if not isinstance(t, Annotation)]
    centres = ax.transData.transform(markers.get_offsets())
    radius = np.resize(np.sqrt(markers.get_sizes()) / 2 * fig.dpi / 72, len(centres))   # s: diameter², points
    nodes = [Bbox.from_extents(x - r, y - r, x + r, y + r) for (x, y), r in zip(centres, radius)]
    placed: list[Any] = []
    moved = False
    for t in texts:
        box = box_of(t)
        if overlap(box, placed):
            moved = True
            t.set_in_layout(False)
            if t in names and t.get_color() != "black":
                t.set_color("black")            # off its node: on the white of the axes
                t.set_fontsize(max(4.0, float(t.get_fontsize()) - 1.0))
            base = (0.0, 0.0) if not isinstance(t, Annotation) else getattr(t, "_declutter_base", tuple(t.xyann))
            if isinstance(t, Annotation):
                setattr(t, "_declutter_base", base)
            near = [(dx, dy) for dx, dy in _AWAY if t not in names or math.hypot(dx, dy) <= NAME_AWAY]
            fits = False
            # a name with no place near it off every node: off the labels, then farther off
            for where, obstacles in ((near, placed + nodes), (near, placed), (_AWAY, placed)):
                while not fits:
                    for dx, dy in where:
                        _shift(t, ax, base, dx, dy)
                        box = box_of(t)
                        if within(box) and not overlap(box, obstacles):
                            fits = True
                            break
                    if fits or float(t.get_fontsize()) <= 4.0:
                        break
                    t.set_fontsize(max(4.0, float(t.get_fontsize()) - 1.0))
                if fits or t not in names:
                    break
            if not fits and t not in names:     # a value with no free place anywhere near: left out, and said so
                t.set_visible(False)
                continue
        placed.append(box)
    return moved


def _shift(t: Any, ax: Axes, base: tuple[float, float], dx: float, dy: float) -> None:
    """Move label ``t`` by (dx, dy) points from ``base`` (an annotation's text offset; a text: its place)."""
    from matplotlib.text import Annotation
    if isinstance(t, Annotation):
        t.xyann = (base[0] + dx, base[1] + dy)
    else:
        t.set_transform(offset_copy(ax.transData, fig=ax.figure, x=dx, y=dy, units="points"))


def mesh_figure(panels: Sequence[MeshPanel], out_dir: Path, name: str = "mesh") -> list[Path]:
    """Draw ``panels`` side by side (3 per row) into ``name.png``/``.svg``; [] without panels.
    Node colours share one scale: local retransmissions, mean over repetitions."""
    if not panels:
        return []
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    layouts = [p.positions or mesh_layout(p.nodes, p.links) for p in panels]
    flat = all(len({y for _x, y in pos.values()}) == 1 for pos in layouts)   # chains: one line each
    scale = 1.5 if any(len(p.nodes) > DENSE_NODES for p in panels) else 1.0   # room for a large mesh
    fig = style.figure(4.3 * scale * cols + 0.9, (2.3 if flat else 4.1 * scale) * rows + 0.5)
    axes = fig.subplots(rows, cols, squeeze=False)
    top = max([ld.local_retransmissions for p in panels for ld in p.loads.values()] + [1.0])
    norm, cmap = Normalize(0.0, top), matplotlib.colormaps["YlOrRd"]
    n_flows = max(len(p.flows) for p in panels)
    colors = style.colors(max(n_flows, 2))   # flow i has colour i in every panel
    drawn = [(ax, *_draw_panel(ax, panel, pos, norm, cmap, colors))
             for ax, panel, pos in zip(axes.flat, panels, layouts)]
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=axes, shrink=0.6, aspect=30)
    bar.set_label("local retransmissions at the node\n(mean over repetitions)", fontsize="small")
    bar.ax.tick_params(labelsize="small")
    legend = "rtx: local retransmissions"
    if any(p.snoops for p in panels):
        legend += "; cache: largest/time-mean segments"
    if any(ld.airtime_share is not None for p in panels for ld in p.loads.values()):
        legend += "; air: airtime share"
    if any(p.link_etx for p in panels):
        legend += "; on links: ETX A>B/B>A"
    if scale > 1:
        legend += f"; meshes of more than {DENSE_NODES} nodes: values of the {DENSE_LABELS} busiest nodes only"
    width = int(11 * fig.get_figwidth())   # characters of "small" (8.3 pt) text across the figure
    # the key to the node labels stays in every style; the heading is a title (none in the paper style)
    head = "Mesh: routes per flow\n" if style.current().titles else ""
    fig.suptitle(head + textwrap.fill(legend, width), fontsize="small")
    _declutter(fig, drawn)
    return style.save(fig, out_dir, name)


def draw_mesh(panels: Sequence[MeshPanel], out_dir: Path) -> dict[str, list[Path]]:
    """Draw ``panels`` into ``mesh`` (and ``mesh_2``, ... beyond PANELS_PER_FIGURE panels)."""
    out = {}
    for i in range(0, len(panels), PANELS_PER_FIGURE):
        name = "mesh" if i == 0 else f"mesh_{i // PANELS_PER_FIGURE + 1}"
        out[name] = mesh_figure(panels[i:i + PANELS_PER_FIGURE], out_dir, name)
    return out


def mesh_figures(run_dir: Path, out_dir: Path | None = None) -> dict[str, list[Path]]:
    """Draw the run's mesh (:func:`draw_mesh`) into ``out_dir`` (default ``run_dir/figures``);
    {} when no variant's graph is known."""
    run_dir = Path(run_dir)
    return draw_mesh(mesh_panels(run_dir), out_dir or run_dir / "figures")


def compare_panels(run_dirs: Sequence[Path], labels: Sequence[str], loads: bool = True) -> list[MeshPanel]:
    """The panels of several runs, in order, each variant named ``label: variant`` when its run has a
    label (as the legends of a comparison)."""
    out = []
    for run_dir, label in zip(run_dirs, labels):
        for panel in mesh_panels(run_dir, loads=loads):
            if label:
                panel.variant = f"{label}: {panel.variant}"
            out.append(panel)
    return out


def mesh_section(base: Path, figures: dict[str, list[Path]],
                 panels: Sequence[MeshPanel] | None = None) -> list[str]:
    """The report's "Mesh" section: the mesh figures among ``figures`` (paths relative to ``base``)
    and a table of every flow's route per panel; ``panels`` default to the run ``base``'s (without
    loads: the table needs none).  [] without panels."""
    run_dir = Path(base)
    panels = mesh_panels(run_dir, loads=False) if panels is None else panels
    if not panels:
        return []
    lines = ["## Mesh", "",
             "Per variant: the links (grey), each flow's route (arrows, one colour per flow), and per "
             "node its local retransmissions (colour; `rtx`), with a snoop cache its largest and "
             "time-averaged occupancy in segments (`cache max/mean`), with a medium its airtime share "
             "(`air`); means over the usable repetitions.  Nodes stand at their medium positions when "
             "the medium has any, else at a layout of the graph.", ""]
    for key, paths in figures.items():
        if is_mesh_key(key):
            png = next((p for p in paths if p.suffix == ".png"), paths[0])
            rel = png.resolve().relative_to(run_dir.resolve()).as_posix()
            lines += [f"![Mesh: routes and per-node load]({rel})", ""]
    lines += ["| variant | routes by | flow | route | repetitions |", "|---|---|---|---|---:|"]
    for p in panels:
        by = ROUTES_LOGGED.get(p.metric, p.metric) if p.metric else "not logged (shortest path)"
        for flow in p.flows:
            for path, count in flow.paths.items():
                lines.append(f"| {p.variant} | {by} | {flow.label} | {'-'.join(path)} | {count} |")
            if not flow.paths:
                lines.append(f"| {p.variant} | {by} | {flow.label} | no route | 0 |")
    return lines + [""]
