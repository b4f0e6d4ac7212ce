"""Soak: N consecutive local runs of a 16,000-segment flow across the 4-node chain with 0.5 % loss
per node, for reno, sack and A-SPAN; counts runs that delivered every segment with a matching hash.

Run: .venv/bin/python -m bench soak_local [--runs 20] [--segments 16000]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from experiments.runner import run_experiment
from experiments.schema import load_experiment


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench soak_local")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--segments", type=int, default=16000)
    args = ap.parse_args(argv)
    doc = {"name": "soak", "backend": "local", "repetitions": args.runs, "etx": {"settle_s": 2.0},
           "loss": {"default": {"model": "bernoulli", "rate": 0.005}},
           "limits": {"max_duration_s": 300},
           "flows": [{"sender": "A", "receiver": "D", "segments": args.segments}],
           "variants": [{"name": "reno", "tcp": {"variant": "reno"}},
                        {"name": "sack", "tcp": {"variant": "sack"}},
                        {"name": "aspan", "tcp": {"variant": "sack"},
                         "snoop": {"policy": "adaptive", "pkt_qos": 0.99}}]}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        run = run_experiment(load_experiment(doc, "soak.yaml"), out=Path(tmp), plot=False)
        df = pd.read_csv(run / "summary.csv")
    ok = df[(df["status"] == "ok") & (df["integrity_ok"] == True)]  # noqa: E712 (pandas column)
    print(f"\nsoak: {len(ok)} of {len(df)} runs complete with matching hash "
          f"({args.runs} per variant, {args.segments} segments each) in {time.time() - t0:.0f} s")
    for v, g in df.groupby("variant", sort=False):
        good = ((g["status"] == "ok") & (g["integrity_ok"] == True)).sum()  # noqa: E712
        print(f"  {v:>6}: {good}/{len(g)} ok, duration {g['duration_s'].min():.1f}-{g['duration_s'].max():.1f} s, "
              f"goodput mean {g['goodput_mbps'].mean():.2f} Mbit/s")
    bad = df[~df.index.isin(ok.index)]
    for _, r in bad.iterrows():
        print(f"  FAILED {r['variant']} rep {r['repetition']}: status {r['status']}")
    return 0 if len(ok) == len(df) else 1


if __name__ == "__main__":
    raise SystemExit(main())
