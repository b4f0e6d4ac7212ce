"""Kernel TCP goodput A -> D in the netns mesh: plain kernel forwarding, NFQUEUE accept-only, snoop agents.

All modes queue the same packets on the same nodes (A's OUTPUT, B's and C's FORWARD
and INPUT; with no loss, A's and D's INPUT are not queued: docs/NETNS.md), so
accept-only measures the queue round trip alone and the snoop modes add only our work:
header parsing, the A-SPAN option, the snoop agent and the per-packet log
(``bench handler_cost`` measures that work without a queue).  Rounds interleave the modes (kernel, accept, snoop,
..., kernel, accept, ...) so that drifting machine load hits them alike; the table
shows medians.  No loss: this is the forwarding cost, not the protocol's benefit.

Run (root): .venv/bin/python -m bench netns_goodput [--rounds 3] [--segments 30000]
Target (issue 4): the snoop agents reach at least 50 % of accept-only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

import pandas as pd

from experiments.runner import run_experiment
from experiments.schema import load_experiment

MODES = [
    ("kernel", {"netns": {"handlers": "kernel"}}),
    ("accept-only", {"netns": {"handlers": "accept"}}),
    ("snoop (policy none)", {"netns": {"handlers": "snoop"}, "snoop": {"policy": "none"}}),
    ("snoop (A-SPAN, every node caches)", {"netns": {"handlers": "snoop"}, "snoop": {"policy": "every"}}),
]


def _handler_cost(rep: Path) -> dict[str, float]:
    """CPU microseconds per queued packet of each node's handler, after its start-up (from node_stop)."""
    out = {}
    for n in "ABCD":
        for line in reversed((rep / f"{n}.log").read_text().splitlines()):
            e = json.loads(line)
            if e["ev"] == "node_stop":
                pk = (e.get("queue") or {}).get("packets")
                if pk:
                    out[n] = 1e6 * e.get("cpu_run_s", e["cpu_s"]) / pk
                break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench netns_goodput")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--segments", type=int, default=30000)
    ap.add_argument("--segment-size", type=int, default=1448)
    ap.add_argument("--congestion", default="cubic", choices=["reno", "cubic"])
    args = ap.parse_args(argv)
    goodput: dict[str, list[float]] = {m: [] for m, _ in MODES}
    cost: dict[str, list[float]] = {m: [] for m, _ in MODES}
    drops: dict[str, int] = {m: 0 for m, _ in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for i, (mode, over) in enumerate(MODES):
                doc = {"name": f"bench-netns-{r}-{i}", "backend": "netns", "repetitions": 1, "seed": 1 + r,
                       "etx": {"settle_s": 0.5}, "tcp": {"variant": "sack"}, "limits": {"max_duration_s": 300},
                       "netns": {"congestion": args.congestion},
                       "flows": [{"sender": "A", "receiver": "D", "segments": args.segments,
                                  "segment_size": args.segment_size}],
                       "variants": [{"name": "m", **over}]}
                run = run_experiment(load_experiment(doc, "bench-netns.yaml"), out=Path(tmp), plot=False,
                                     progress=lambda s: None)
                row = pd.read_csv(run / "summary.csv").iloc[0]
                if row["status"] != "ok" or not row["integrity_ok"]:
                    print(f"{mode}: round {r}: status {row['status']}, integrity {row['integrity_ok']}")
                    continue
                goodput[mode].append(float(row["goodput_mbps"]))
                drops[mode] += int(row["drops_queue"])
                c = _handler_cost(run / "m" / "rep0")
                if c:
                    cost[mode].append(statistics.mean(c[n] for n in c if n in "BC"))
                print(f"round {r}: {mode:<36} {row['goodput_mbps']:8.1f} Mbit/s", flush=True)
    load = os.getloadavg()
    accept = statistics.median(goodput["accept-only"]) if goodput["accept-only"] else float("nan")
    print(f"\nkernel TCP ({args.congestion}, SACK) A -> D, {args.segments} x {args.segment_size} bytes, "
          f"{args.rounds} rounds, 2 forwarders; load average at the end {load[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'mode':<36} {'goodput Mbit/s (median, min-max)':>34} {'/ accept-only':>14} "
          f"{'B,C handler CPU us/pkt':>23} {'queue drops':>12}")
    for mode, _ in MODES:
        g = goodput[mode]
        if not g:
            print(f"{mode:<36} {'no complete round':>34}")
            continue
        med = statistics.median(g)
        cpu = f"{statistics.median(cost[mode]):.1f}" if cost[mode] else "-"
        print(f"{mode:<36} {med:12.1f} ({min(g):.1f}-{max(g):.1f}){'':>8} {med / accept:14.2f} {cpu:>23} "
              f"{drops[mode]:>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
