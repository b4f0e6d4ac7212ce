"""Wall time of the virtual-time backend on experiments/paper-lossy.yaml (the issue's target: < 3 min),
and the ratio of virtual to wall time of one repetition, with a pure-Python event-loop baseline
measured in the same run.  The same experiment runs twice: with ``medium.model`` none (independent
links) and dcf (the 802.11 medium of routing.medium.dcf, 802.11b on the 200 m chain); issue 11 allows
at most 3x the wall time with the medium on.

With ``--cluster`` (issue 26, item 5) it runs the experiment (``--experiment``, default paper-lossy,
medium as in the file) alternately on this host's pool of ``--jobs`` worker processes and on a Dask
cluster of as many single-thread workers on loopback (experiments.cluster.loopback_cluster: a scheduler
and the workers as separate processes, started once), ``--rounds`` times, and prints the median wall
time of each and the cluster's overhead per repetition.  The machine is shared: the rounds interleave
the two so that load moving during the run moves both.

Run: .venv/bin/python -m bench sim_speed [--repetitions 5] [--medium none,dcf]
     .venv/bin/python -m bench sim_speed --cluster [--experiment experiments/variants.yaml] [--rounds 3]
"""
from __future__ import annotations

import argparse
import dataclasses
import heapq
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from experiments.runner import run_experiment
from experiments.schema import load_file

ROOT = Path(__file__).resolve().parent.parent


def _heap_baseline(n: int = 1_000_000) -> float:
    """Events per second of a bare heapq event loop (the floor any Python DES pays)."""
    h: list[tuple[float, int]] = []
    t0 = time.perf_counter()
    for i in range(n):
        heapq.heappush(h, (i * 0.001, i))
    while h:
        heapq.heappop(h)
    return n / (time.perf_counter() - t0)


def _timed_run(exp_path: Path, repetitions: int, **how: object) -> tuple[float, float]:
    """(wall seconds, the repetitions' own seconds summed: each meta.json's wall time) of one sim run."""
    exp = load_file(exp_path).with_repetitions(repetitions)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_dir = run_experiment(exp, backend="sim", out=Path(tmp), plot=False, progress=lambda s: None,
                                 **how)  # type: ignore[arg-type]
        wall = time.perf_counter() - t0
        metas = [json.loads(m.read_text()) for m in run_dir.glob("*/rep*/meta.json")]
        bad = [m for m in metas if m.get("status") != "ok"]
        if bad or len(metas) != len(exp.variants) * repetitions:
            raise SystemExit(f"bench sim_speed: {len(bad)} repetition(s) not ok, {len(metas)} recorded")
    return wall, float(len(metas))


def cluster_overhead(exp_path: Path, repetitions: int, jobs: int, rounds: int) -> int:
    """Local pool of ``jobs`` processes vs a ``jobs``-worker Dask cluster on loopback, interleaved rounds."""
    from experiments.cluster import loopback_cluster
    local: list[float] = []
    cluster: list[float] = []
    loads: list[float] = []
    with loopback_cluster(jobs) as address:
        for r in range(rounds):
            loads.append(os.getloadavg()[0])
            order = ("local", "cluster") if r % 2 == 0 else ("cluster", "local")   # neither always first
            for which in order:
                if which == "local":
                    wall, reps = _timed_run(exp_path, repetitions, jobs=jobs)
                    local.append(wall)
                else:
                    wall, reps = _timed_run(exp_path, repetitions, scheduler=address)
                    cluster.append(wall)
                print(f"round {r + 1}: {which:7} {wall:7.1f} s wall, {reps:.0f} repetitions "
                      f"(load average {os.getloadavg()[0]:.1f})", flush=True)
    n = reps
    lo, cl = statistics.median(local), statistics.median(cluster)
    per_rep = (cl - lo) * jobs / n          # the extra worker-seconds each repetition cost on the cluster
    own = lo * jobs / n                     # a repetition's time in the local pool (worker-seconds)
    print(f"{exp_path.name}: {n:.0f} repetitions, medians of {rounds} interleaved rounds: local pool of {jobs} "
          f"{lo:.1f} s, Dask cluster of {jobs} workers on loopback {cl:.1f} s; overhead per repetition "
          f"{per_rep:+.2f} s of a repetition's {own:.2f} s ({100 * per_rep / own:+.1f} %; issue 26: under 5 %); "
          f"load average at the rounds' starts {', '.join(f'{x:.1f}' for x in loads)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench sim_speed")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--medium", default="none,dcf", help="medium models to run, comma-separated (none, dcf)")
    ap.add_argument("--cluster", action="store_true",
                    help="local pool of --jobs processes vs a --jobs-worker Dask cluster on loopback")
    ap.add_argument("--experiment", default=str(ROOT / "experiments" / "paper-lossy.yaml"),
                    help="with --cluster: the experiment (default paper-lossy)")
    ap.add_argument("--rounds", type=int, default=3, help="with --cluster: interleaved rounds (medians)")
    args = ap.parse_args(argv)
    base = _heap_baseline()
    print(f"bare heapq event loop (baseline): {base:,.0f} events/s")
    if args.cluster:
        return cluster_overhead(Path(args.experiment), args.repetitions, args.jobs, args.rounds)
    walls: dict[str, float] = {}
    for model in args.medium.split(","):
        exp = load_file(ROOT / "experiments" / "paper-lossy.yaml").with_repetitions(args.repetitions)
        exp = exp.with_variants([dataclasses.replace(v, config=dataclasses.replace(
            v.config, medium=dataclasses.replace(v.config.medium, model=model))) for v in exp.variants])
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.time()
            run_dir = run_experiment(exp, backend="sim", out=Path(tmp), jobs=args.jobs, plot=False,
                                     progress=lambda s: None)
            walls[model] = time.time() - t0
            virtual = sum(json.loads(m.read_text()).get("virtual_end_s", 0) for m in run_dir.glob("*/rep*/meta.json"))
        runs = len(exp.variants) * args.repetitions
        print(f"paper-lossy on sim, medium {model}: {len(exp.variants)} variants x {args.repetitions} repetitions = "
              f"{runs} runs of 16,000 segments in {walls[model]:.1f} s wall ({args.jobs} jobs; target < 180 s for 5 "
              f"repetitions); {virtual:.0f} s of virtual time in all")
    if "none" in walls and "dcf" in walls:
        print(f"medium dcf / none wall time: {walls['dcf'] / walls['none']:.2f}x (issue 11: at most 3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
