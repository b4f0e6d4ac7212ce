"""Wall time of the virtual-time backend on experiments/paper-lossy.yaml (the issue's target: < 3 min),
and the ratio of virtual to wall time of one repetition, with a pure-Python event-loop baseline
measured in the same run.  The same experiment runs twice: with ``medium.model`` none (independent
links) and dcf (the 802.11 medium of routing.medium, 802.11b on the 200 m chain); issue 11 allows
at most 3x the wall time with the medium on.

Run: .venv/bin/python -m bench sim_speed [--repetitions 5] [--medium none,dcf]
"""
from __future__ import annotations

import argparse
import heapq
import json
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench sim_speed")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--medium", default="none,dcf", help="medium models to run, comma-separated (none, dcf)")
    args = ap.parse_args(argv)
    base = _heap_baseline()
    print(f"bare heapq event loop (baseline): {base:,.0f} events/s")
    walls: dict[str, float] = {}
    for model in args.medium.split(","):
        exp = load_file(ROOT / "experiments" / "paper-lossy.yaml")
        exp.base["repetitions"] = args.repetitions
        for v in exp.variants:
            v.config["medium"]["model"] = model
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
