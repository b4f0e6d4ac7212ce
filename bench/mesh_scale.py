"""Cost of a sim run on the dcf medium as the mesh grows (issue 22, item 6).

Meshes of 4, 9, 16, 25, 50 and 100 nodes, each placed twice: on a grid (``--spacing`` 200 m apart,
inside the 250 m communication range, so grid neighbours are linked and diagonals are not) and at
random (uniform in a square sized for ``--degree`` neighbours per node on average; the first
``placement_seed`` from 1 whose graph is connected is used, and the seeds skipped are printed).
One flow per 5 nodes (at least one), each between two distant nodes (greedily the pair farthest
apart in hops among the nodes not yet in a flow), ``--segments`` segments each.  Every run is one
repetition of the sim backend (``experiments.backends.sim.run_rep``) in this process.

Printed per mesh: wall seconds per simulated second, the event loop's events per wall second (the
events ``EventLoop.run`` popped; the medium's own events, which one loop event may run several of,
in a column of their own), both medians of ``--rounds`` rounds that interleave the meshes (other
processes share the machine), and the ratio of each to the baseline measured in the same run: the
4-node chain A-B-C-D 200 m apart with one flow.  The issue's target: the 50-node mesh with 10 flows
at no less than 1 simulated second per wall second (wall/sim <= 1).

``--write DIR`` writes every mesh as an experiment file instead (variants plain and dcf), to run on the
local backend: ``aspan run DIR/mesh-scale-grid-50.yaml --backend local``.

Run: .venv/bin/python -m bench mesh_scale [--sizes 4,9,16,25,50,100] [--rounds 3] [--profile grid-50]
     [--write DIR]
"""
from __future__ import annotations

import argparse
import cProfile
import math
import os
import pstats
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import yaml

import experiments.backends.sim as sim
from experiments.medium_spec import topology as medium_topology
from experiments.schema import load_experiment
from routing.topology.graph import MeshGraph
from routing.medium.dcf import Medium

RANGE_M = 250.0   # medium.range_m's default


@dataclass
class Mesh:
    name: str
    data: dict[str, Any]    # the experiment document
    nodes: int
    links: int
    flows: int
    note: str = ""


def node_names(n: int) -> list[str]:
    return [f"N{i}" for i in range(n)]


def distant_flows(nodes: list[str], links: list[list[str]], count: int) -> list[tuple[str, str]]:
    """``count`` (sender, receiver) pairs far apart: repeatedly the farthest pair (in hops) of nodes not
    yet in a flow, ties broken by node order (deterministic)."""
    g = MeshGraph.build(nodes, links).nx()
    dist = dict(nx.all_pairs_shortest_path_length(g))
    order = {n: i for i, n in enumerate(nodes)}
    free = list(nodes)
    out: list[tuple[str, str]] = []
    for _ in range(count):
        best = max(((a, b) for a in free for b in free if order[a] < order[b]),
                   key=lambda p: (dist[p[0]][p[1]], -order[p[0]], -order[p[1]]))
        out.append(best)
        free = [n for n in free if n not in best]
    return out


MAX_DURATION_S = 120.0   # virtual seconds after settling: a run still going then is stopped (status incomplete)


def experiment(nodes: list[str], medium: dict[str, Any], segments: int, settle_s: float) -> dict[str, Any]:
    """The document of one mesh (its flows come later: :func:`with_flows`); links: every pair in range."""
    return {"name": "mesh-scale", "seed": 1, "repetitions": 1, "topology": {"nodes": nodes},
            "medium": {"model": "dcf", "standard": "b", **medium}, "etx": {"settle_s": settle_s},
            "limits": {"max_duration_s": MAX_DURATION_S}, "logs": {"compact": False},
            "flows": [{"sender": nodes[0], "receiver": nodes[1], "segments": segments}]}


def resolve(data: dict[str, Any]) -> dict[str, Any]:
    return load_experiment(data, "mesh-scale").variants[0].config


def with_flows(data: dict[str, Any], segments: int) -> tuple[dict[str, Any], int, int]:
    """``data`` with its flows: one per 5 nodes between distant nodes.  Also the links and flows counted."""
    cfg = resolve(data)
    nodes, links = list(cfg.topology.nodes), [list(link) for link in cfg.topology.links]
    pairs = distant_flows(nodes, links, max(1, len(nodes) // 5))
    data = dict(data, flows=[{"sender": a, "receiver": b, "segments": segments} for a, b in pairs])
    return data, len(links), len(pairs)


def grid_mesh(n: int, spacing: float, segments: int, settle_s: float) -> Mesh:
    cols = next(c for c in range(math.ceil(math.sqrt(n)), n + 1) if n % c == 0)   # 50: 10 x 5
    if cols > 2 * math.sqrt(n):
        cols = math.ceil(math.sqrt(n))   # no near-square rectangle (a prime): the last row is short
    names = node_names(n)
    pos = {nm: [float((i % cols) * spacing), float((i // cols) * spacing)] for i, nm in enumerate(names)}
    data, links, flows = with_flows(experiment(names, {"positions": pos}, segments, settle_s), segments)
    return Mesh(f"grid-{n}", data, n, links, flows, f"{cols} x {math.ceil(n / cols)}, {spacing:g} m apart")


def random_mesh(n: int, degree: float, segments: int, settle_s: float) -> Mesh:
    """Uniform placement in a square where a node has ``degree`` neighbours on average (n pi r^2 / A)."""
    side = round(math.sqrt(n * math.pi * RANGE_M ** 2 / degree))
    names = node_names(n)
    skipped = []
    for seed in range(1, 1000):
        data = experiment(names, {"placement": "random", "area_m": [side, side], "placement_seed": seed},
                          segments, settle_s)
        topo = medium_topology(_positional_cfg(data))
        g = MeshGraph.build(names, [(a, b) for a in names for b in topo.hears[a]])
        if len(g.components()) == 1:
            data, links, flows = with_flows(data, segments)
            note = f"{side} m square, placement_seed {seed}"
            if skipped:
                note += f" (seeds {_ranges(skipped)} disconnected)"
            return Mesh(f"random-{n}", data, n, links, flows, note)
        skipped.append(seed)
    raise RuntimeError(f"no connected random placement of {n} nodes in {side} m")


def _positional_cfg(data: dict[str, Any]) -> dict[str, Any]:
    """The minimal configuration medium_spec.topology reads (before the validator, which refuses a
    disconnected graph)."""
    from experiments.medium_spec import MEDIUM_SCHEMA
    m = {k: f.default for k, f in MEDIUM_SCHEMA.items()}
    m.update(data["medium"])
    return {"medium": m, "topology": {"nodes": data["topology"]["nodes"], "links": None, "chain": None}}


def _ranges(xs: list[int]) -> str:
    return ", ".join(str(x) for x in xs) if len(xs) <= 4 else f"{xs[0]}-{xs[-1]}"


def chain_mesh(segments: int, settle_s: float) -> Mesh:
    data = {"name": "mesh-scale", "seed": 1, "repetitions": 1, "topology": {"chain": ["A", "B", "C", "D"]},
            "medium": {"model": "dcf", "standard": "b"}, "etx": {"settle_s": settle_s},
            "limits": {"max_duration_s": MAX_DURATION_S}, "logs": {"compact": False},
            "flows": [{"sender": "A", "receiver": "D", "segments": segments}]}
    return Mesh("chain-4", data, 4, 3, 1, "baseline: A-B-C-D, 200 m apart")


def for_any_backend(mesh: Mesh) -> dict[str, Any]:
    """``mesh`` as an experiment file (``--write``): its links listed, variants ``plain`` (medium none on the
    same links) and ``dcf`` (the bench's medium), ``etx.settle_s`` 2 (the local backend's processes start),
    ``limits.max_duration_s`` 300."""
    data = dict(mesh.data, name=f"mesh-scale-{mesh.name}")
    cfg = resolve(mesh.data)
    data["topology"] = {"nodes": list(cfg.topology.nodes), "links": [list(link) for link in cfg.topology.links]}
    if mesh.name == "chain-4":
        data["topology"] = {"chain": list(cfg.topology.nodes)}
    data["etx"] = dict(data["etx"], settle_s=2.0)
    data["limits"] = {"max_duration_s": 300.0}   # the 100-node grid's flows took up to 124 s on local
    data["variants"] = [{"name": "plain", "medium": {"model": "none", "positions": {}, "placement": "line"}},
                        {"name": "dcf"}]
    return data


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"


class CountingLoop(sim.EventLoop):
    """The sim's event loop, remembered so the bench can read its counter after the run."""

    last: "CountingLoop | None" = None

    def __init__(self) -> None:
        super().__init__()
        CountingLoop.last = self


class CountingMedium(Medium):
    last: "CountingMedium | None" = None

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        CountingMedium.last = self


@dataclass
class Sample:
    wall_s: float
    cpu_s: float           # this process's CPU time: what the run cost when other processes share the cores
    virtual_s: float
    events: int
    medium_events: int
    status: str


def run_once(mesh: Mesh, profile: Path | None = None) -> Sample:
    import experiments.medium_spec as medium_spec
    exp = load_experiment(mesh.data, "mesh-scale")
    variant = exp.variants[0]
    saved = sim.EventLoop, medium_spec.Medium
    sim.EventLoop, medium_spec.Medium = CountingLoop, CountingMedium   # type: ignore[misc]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            prof = cProfile.Profile() if profile else None
            t0, c0 = time.perf_counter(), time.process_time()
            if prof:
                prof.enable()
            meta = sim.run_rep(variant, 0, Path(tmp) / "rep0")
            if prof:
                prof.disable()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if prof and profile:
                prof.dump_stats(str(profile))
    finally:
        sim.EventLoop, medium_spec.Medium = saved   # type: ignore[misc]
    loop, medium = CountingLoop.last, CountingMedium.last
    assert loop is not None and medium is not None
    return Sample(wall, cpu, meta["virtual_end_s"], loop.events, medium.events, meta["status"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench mesh_scale")
    ap.add_argument("--sizes", default="4,9,16,25,50,100")
    ap.add_argument("--placements", default="grid,random")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--segments", type=int, default=200, help="segments per flow (short flows)")
    ap.add_argument("--settle", type=float, default=1.0, help="etx.settle_s: probing before the flows start")
    ap.add_argument("--spacing", type=float, default=200.0, help="grid spacing in metres (< range_m 250)")
    ap.add_argument("--degree", type=float, default=6.0, help="random placement: mean neighbours per node")
    ap.add_argument("--write", default="", help="directory: write each mesh as an experiment file for any backend "
                                                "(variants plain: medium none on the same links, and dcf) and stop")
    ap.add_argument("--profile", default="", help="mesh name (e.g. grid-50): run it once under cProfile and "
                                                  "print the top functions instead")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    meshes = [chain_mesh(args.segments, args.settle)]
    for place in args.placements.split(","):
        for n in sizes:
            meshes.append(grid_mesh(n, args.spacing, args.segments, args.settle) if place == "grid"
                          else random_mesh(n, args.degree, args.segments, args.settle))
    if args.write:
        for m in meshes:
            path = Path(args.write) / f"mesh-scale-{m.name}.yaml"
            path.write_text(yaml.safe_dump(for_any_backend(m), sort_keys=False))
            print(path)
        return 0
    if args.profile:
        mesh = next(m for m in meshes if m.name == args.profile)
        out = Path(tempfile.gettempdir()) / f"mesh_scale-{mesh.name}.prof"
        s = run_once(mesh, out)
        print(f"{mesh.name}: {s.wall_s:.1f} s wall for {s.virtual_s:.2f} s simulated ({s.status}); profile {out}")
        pstats.Stats(str(out)).sort_stats("tottime").print_stats(25)
        return 0
    print(f"load before: {_load()}; {args.rounds} interleaved rounds; {args.segments} segments per flow; "
          f"etx.settle_s {args.settle}; limits.max_duration_s {MAX_DURATION_S:g}; 802.11b, range 250 m, "
          f"carrier sense 550 m", flush=True)
    samples: dict[str, list[Sample]] = {m.name: [] for m in meshes}
    for r in range(args.rounds):
        for m in meshes:
            s = run_once(m)
            samples[m.name].append(s)
            print(f"  round {r + 1} {m.name}: {s.wall_s:.2f} s wall, {s.cpu_s:.2f} s CPU, {s.virtual_s:.2f} s "
                  f"simulated, {s.status}", flush=True)
    print(f"load after: {_load()}")
    rows = []
    for m in meshes:
        ss = samples[m.name]
        rows.append((m, ss, statistics.median(s.wall_s / s.virtual_s for s in ss),
                     statistics.median(s.cpu_s / s.virtual_s for s in ss),
                     statistics.median(s.events / s.wall_s for s in ss),
                     statistics.median(s.medium_events / s.wall_s for s in ss)))
    _, _, base_per, base_cpu, base_evs, _ = rows[0]
    print()
    print("| mesh | nodes | links | flows | simulated s | wall s | wall s / sim s | x chain-4 | CPU s / sim s "
          "| x chain-4 | loop events / wall s | x chain-4 | medium events / wall s | status | placement |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for m, ss, per, cpu, evs, mevs in rows:
        statuses = ",".join(sorted({s.status for s in ss}))
        print(f"| {m.name} | {m.nodes} | {m.links} | {m.flows} | {statistics.median(s.virtual_s for s in ss):.1f} "
              f"| {statistics.median(s.wall_s for s in ss):.2f} | {per:.3f} | {per / base_per:.1f}x | {cpu:.3f} "
              f"| {cpu / base_cpu:.1f}x | {evs:,.0f} | {evs / base_evs:.2f}x | {mevs:,.0f} | {statuses} | {m.note} |")
    for m, _, per, cpu, _, _ in rows:
        if m.nodes == 50:
            verdict = "met" if per <= 1.0 else "NOT met"
            print(f"target (50 nodes, 10 flows: >= 1 simulated s per wall s) on {m.name} ({m.flows} flows): "
                  f"{1 / per:.2f} simulated s per wall s ({1 / cpu:.2f} per CPU s): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
