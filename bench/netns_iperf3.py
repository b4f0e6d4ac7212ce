"""iperf3 (kernel TCP) A -> D through B and C with 0.5 % loss per node: retransmissions with and without A-SPAN.

Runs experiments/netns-iperf3.yaml on the netns backend and prints, per variant, the
kernel sender's retransmitted segments (iperf3's "retransmits", tcpi_total_retrans),
its loss events (fast recoveries and RTOs, from the namespace's TcpExt counters),
goodput, and what the snoop agents did (local retransmissions, hits).

Run (root): .venv/bin/python -m bench netns_iperf3 [--repetitions 5] [--segments 16000]
            [--congestion reno|cubic] [--traffic iperf3|bulk]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from experiments.runner import run_experiment
from experiments.schema import load_experiment

YAML = Path(__file__).resolve().parent.parent / "experiments" / "netns-iperf3.yaml"


def _sender_end(rep: Path) -> dict:
    for line in (rep / "A.log").read_text().splitlines():
        e = json.loads(line)
        if e["ev"] == "flow_end":
            return e
    return {}


def _fmt(xs: list[float], digits: int = 1) -> str:
    if not xs:
        return "-"
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):.{digits}f} ± {sd:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench netns_iperf3")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--segments", type=int, default=16000)
    ap.add_argument("--congestion", default="reno", choices=["reno", "cubic"])
    ap.add_argument("--traffic", default="iperf3", choices=["iperf3", "bulk"])
    ap.add_argument("--settle", type=float, default=5.0)
    ap.add_argument("--out", default=None, help="keep the run directory here (default: a temporary one)")
    args = ap.parse_args(argv)
    doc = yaml.safe_load(YAML.read_text())
    doc["repetitions"] = args.repetitions
    doc["flows"][0]["segments"] = args.segments
    doc["netns"].update(congestion=args.congestion, traffic=args.traffic)
    doc["etx"]["settle_s"] = args.settle
    with tempfile.TemporaryDirectory() as tmp:
        run = run_experiment(load_experiment(doc, str(YAML)), out=Path(args.out or tmp), plot=False)
        df = pd.read_csv(run / "summary.csv")
        print(f"\n{args.traffic} ({args.congestion}, SACK) A -> D, {args.segments} x 1000 bytes, 0.5 % loss per node, "
              f"{args.repetitions} repetitions; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"{'variant':<17} {'ok':>4} {'sender retransmits':>19} {'loss events':>13} {'(dupack/rto)':>13} "
              f"{'goodput Mbit/s':>15} {'local rtx':>12} {'hits':>10} {'queue drops':>11}")
        for v, g in df.groupby("variant", sort=False):
            ok = g[(g["status"] == "ok") & g["integrity_ok"].astype(bool)]
            rtx = [float(_sender_end(run / v / f"rep{int(r)}").get("retransmits", "nan")) for r in ok["repetition"]]
            losses = list((ok["losses_dupack"] + ok["losses_rto"]).astype(float))
            print(f"{v:<17} {len(ok):>2}/{len(g):<1} {_fmt(rtx):>19} {_fmt(losses):>13} "
                  f"{ok['losses_dupack'].sum():>6}/{ok['losses_rto'].sum():<6} {_fmt(list(ok['goodput_mbps'])):>15} "
                  f"{_fmt(list(ok['local_retransmissions'].astype(float)), 0):>12} "
                  f"{_fmt(list(ok['snoop_hits'].astype(float)), 0):>10} {int(ok['drops_queue'].sum()):>11}")
        if args.out:
            print(f"run directory: {run}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
