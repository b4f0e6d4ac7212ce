"""Closed loop of link traces on the sim (issue 25, item 3): record, replay, compare the flow's goodput.

A 3-node chain A-B-C, one SACK flow A -> C of 6,000 segments; what B hears degrades from 0 % to RATE between
1 s and 2 s after the flow starts (loss model ``ramp``).  Each seed is recorded, its trace extracted
(experiments/trace.py), and replayed on both links into B (loss model ``trace``, routing/links/trace_loss.py)
with another seed, raw and smoothed over 10 s and 30 s; then the goodput error of each replay against its
recording: median and 90th percentile over the seeds, next to Lamela et al.'s 5 % / 14 % (ns-3 replaying
per-link signal traces).  Virtual time: the numbers do not depend on the machine's load.

Run: .venv/bin/python -m bench trace_closed_loop [--rate 0.08] [--seeds 20]
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from experiments.runner import run_experiment
from experiments.schema import load_experiment
from experiments.trace import extract, write

CHAIN = {"nodes": ["A", "B", "C"], "links": [["A", "B"], ["B", "C"]]}
SMOOTHING = (0.0, 10.0, 30.0)


def _doc(loss: dict[str, Any], seed: int) -> dict[str, Any]:
    return {"name": "closed-loop", "backend": "sim", "seed": seed, "repetitions": 1, "topology": CHAIN,
            "loss": loss, "etx": {"settle_s": 2.0}, "tcp": {"variant": "sack"},
            "flows": [{"sender": "A", "receiver": "C", "segments": 6000, "segment_size": 1000}],
            "variants": [{"name": "v"}]}


def _run(d: dict[str, Any], out: Path) -> tuple[float, Path]:
    run_dir = run_experiment(load_experiment(d, "closed-loop.yaml"), out=out, plot=False, progress=lambda s: None)
    return float(pd.read_csv(run_dir / "summary.csv")["goodput_mbps"].iloc[0]), run_dir


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench trace_closed_loop")
    ap.add_argument("--rate", type=float, default=0.08, help="the loss B hears once degraded")
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="trace-closed-loop-"))
    rows = []
    for seed in range(1, args.seeds + 1):
        ramp = {"model": "ramp", "rate_from": 0.0, "rate_to": args.rate, "start_s": 1.0, "end_s": 2.0}
        recorded, run_dir = _run(_doc({"default": {"model": "none"}, "nodes": {"B": ramp}}, seed), tmp / f"rec{seed}")
        trace = tmp / f"trace{seed}.parquet"
        write(extract(run_dir), trace)
        row = {"seed": seed, "recorded": recorded}
        for sm in SMOOTHING:
            links = {k: {"model": "trace", "file": str(trace), "link": k, "smooth_s": sm} for k in ("A>B", "C>B")}
            row[f"smooth {sm:g} s"], _ = _run(_doc({"default": {"model": "none"}, "links": links}, seed + 1000),
                                            tmp / f"rep{seed}-{sm:g}")
        rows.append(row)
        print(", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)
    df = pd.DataFrame(rows)
    print(f"\nrate {args.rate}, {args.seeds} seeds; recorded goodput median {df['recorded'].median():.3f} Mbit/s")
    print("| replay | median goodput Mbit/s | median error | 90th percentile error |\n|---|---:|---:|---:|")
    for sm in SMOOTHING:
        col = f"smooth {sm:g} s"
        err = (df[col] - df["recorded"]).abs() / df["recorded"]
        print(f"| {col} | {df[col].median():.3f} | {err.median():.0%} | {err.quantile(0.9):.0%} |")
    return 0
