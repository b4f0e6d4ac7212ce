"""Wall time of the virtual-time backend on experiments/paper-lossy.yaml (the issue's target: < 3 min),
and the ratio of virtual to wall time of one repetition, with a pure-Python event-loop baseline
measured in the same run.

Run: .venv/bin/python -m bench sim_speed [--repetitions 5]
"""
from __future__ import annotations

import argparse
import heapq
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
    args = ap.parse_args(argv)
    base = _heap_baseline()
    exp = load_file(ROOT / "experiments" / "paper-lossy.yaml")
    exp.base["repetitions"] = args.repetitions
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        run_experiment(exp, backend="sim", out=Path(tmp), jobs=args.jobs, plot=False, progress=lambda s: None)
        wall = time.time() - t0
    runs = len(exp.variants) * args.repetitions
    print(f"bare heapq event loop (baseline): {base:,.0f} events/s")
    print(f"paper-lossy on sim: {len(exp.variants)} variants x {args.repetitions} repetitions = {runs} runs "
          f"of 16,000 segments in {wall:.1f} s wall ({args.jobs} jobs; target < 180 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
