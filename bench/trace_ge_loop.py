"""Closed loop of a bursty chain on the sim (issue 41, "Show"): record, replay with each model, compare.

The 4-node chain A-B-C-D, every node hearing a Gilbert-Elliott channel (good 1.0 s, bad 0.1 s, loss 0.2 % /
30 %), one SACK flow A -> D of 5,000 segments of 1,000 bytes.  A second flow of 10 segments starts
``TAIL_S`` after the first so that the run, and with it the recording of every link, outlasts the first
flow by far: a replay that is slower than its recording then still has a recording to play.  Each seed is
recorded, extracted with what the data met (``aspan trace extract``: experiments/trace.py), and replayed
with another seed, every directed link its own recording (loss model ``trace``), by each replay model:
``probability`` (the probes' delivery per interval, as before issue 41), ``fates`` and ``markov``
(routing/links/trace_replay.py).  Printed: per model, the first flow's goodput and the sender's loss events
(fast recoveries + timeouts), medians over the seeds, and the median and 90th percentile of the goodput
error against each recording.  Virtual time: the numbers do not depend on the machine's load.

Run: .venv/bin/python -m bench trace_ge_loop [--seeds 5]
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

CHAIN = {"chain": ["A", "B", "C", "D"]}
GE = {"model": "gilbert-elliott", "good_mean_s": 1.0, "bad_mean_s": 0.1, "loss_good": 0.002, "loss_bad": 0.3}
REPLAYS = ("probability", "fates", "markov")
TAIL_S = 60.0


def doc(loss: dict[str, Any], seed: int, tail: bool = True) -> dict[str, Any]:
    """The experiment; ``tail``: with the late second flow (the recording; a replay plays the first alone)."""
    flows: list[dict[str, Any]] = [{"sender": "A", "receiver": "D", "segments": 5000, "segment_size": 1000}]
    if tail:
        flows.append({"sender": "A", "receiver": "D", "segments": 10, "segment_size": 1000, "start_s": TAIL_S})
    return {"name": "ge-loop", "backend": "sim", "seed": seed, "repetitions": 1, "topology": CHAIN,
            "loss": loss, "tcp": {"variant": "sack"}, "limits": {"max_duration_s": 300},
            "flows": flows,
            "variants": [{"name": "v"}]}


def run(d: dict[str, Any], out: Path) -> tuple[dict[str, Any], Path]:
    """The first flow's row of the summary (goodput, losses, status) and the run directory."""
    run_dir = run_experiment(load_experiment(d, "ge-loop.yaml"), out=out, plot=False, progress=lambda s: None)
    s = pd.read_csv(run_dir / "summary.csv")
    first = s.iloc[0]
    return {"goodput": float(first["goodput_mbps"]), "losses": int(first["losses_dupack"] + first["losses_rto"]),
            "status": str(first["status"])}, run_dir


def replay_loss(trace: Path, replay: str) -> dict[str, Any]:
    return {"default": {"model": "none"},
            "links": {k: {"model": "trace", "file": str(trace), "replay": replay} for k in ("A-B", "B-C", "C-D")}}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench trace_ge_loop")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="trace-ge-loop-"))
    rows = []
    for seed in range(1, args.seeds + 1):
        rec, run_dir = run(doc({"default": GE}, seed), tmp / f"rec{seed}")
        trace = tmp / f"trace{seed}.parquet"
        write(extract(run_dir, fates=True), trace)
        rows.append({"seed": seed, "model": "recorded", **rec, "error": 0.0})
        for replay in REPLAYS:
            got, _ = run(doc(replay_loss(trace, replay), seed + 1000, tail=False), tmp / f"rep{seed}-{replay}")
            rows.append({"seed": seed, "model": replay, **got, "error": abs(got["goodput"] / rec["goodput"] - 1)})
        print(pd.DataFrame(rows[-4:]).to_string(index=False), flush=True)
    df = pd.DataFrame(rows)
    print(f"\n{args.seeds} recordings (seeds 1-{args.seeds}), each replayed once (seed + 1000):\n")
    print("| replay | runs ok | median goodput Mbit/s | sender's loss events (median) | median error | 90th percentile error |")
    print("|---|---:|---:|---:|---:|---:|")
    for model in ("recorded",) + REPLAYS:
        g = df[df["model"] == model]
        ok = int((g["status"] == "ok").sum())
        err = "" if model == "recorded" else f"{100 * g['error'].median():.1f} % | {100 * g['error'].quantile(0.9):.1f} %"
        print(f"| {model} | {ok} of {len(g)} | {g['goodput'].median():.2f} | {g['losses'].median():g} | "
              f"{err or ' | '} |")
    return 0
