"""Closed loop of link traces from kernel TCP (issue 25, item 3): record on netns, replay on sim and local.

A 3-node chain A-B-C over the sim's own link (10 Mbit/s, 2 ms, 50 packets: emulated on netns by held
verdicts), one SACK flow A -> C of ``--segments`` 1000-byte segments.  The scripted loss (what B hears, the
only lossy node, so the forward data and the returning ACKs both cross it): a fade from 0 to ``--rate`` loss
between 1 s and 3 s after the flow starts, held until 5 s, recovered by 7 s, and a burst (everything lost)
from 4 s to 4.3 s; the fade is played by the loss model ``trace`` from a synthetic trace (the script), the
burst by a ``down`` interval.  Each of ``--reps`` repetitions on netns (kernel TCP through NFQUEUE) is
extracted (aspan trace extract) and replayed, every directed link its own recording, on the sim (virtual
time) and on local (user-space TCP over loopback UDP, the same link emulated by each node holding what it
sends: routing/overlay/udp_link.py), raw and smoothed over ``--smooth`` seconds.  Reported: the goodput error of each replay against
its recording, median and 90th percentile over the repetitions, next to Lamela et al.'s 5 % / 14 %; the
losses the sender saw (loss events: fast recoveries and timeouts; kernel TCP's from its TcpExt counters)
and the packets the links lost (``drops_loss``), median of each replay's against the recording's.

Run (root): .venv/bin/python -m bench trace_netns_loop [--reps 20] [--rate 0.08] [--backends sim,local]
Replay an earlier recording again (no root): ... trace_netns_loop --recorded DIR (DIR: an earlier run's
working directory, with its recorded.parquet and closed_loop.csv)
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from experiments.runner import run_experiment
from experiments.schema import load_experiment
from experiments.trace import COLUMNS, extract, write

CHAIN = {"nodes": ["A", "B", "C"], "links": [["A", "B"], ["B", "C"]]}
LINKS = ["A>B", "B>A", "B>C", "C>B"]
LINK = {"rate_mbps": 10, "delay_ms": 2, "queue_packets": 50}


def script_trace(path: Path, rate: float) -> None:
    """The scripted fade as a trace of B's two incoming links (the loss model ``trace`` plays it at B)."""
    def delivery(t: float) -> float:
        if t < 1 or t >= 7:
            return 1.0
        if t < 3:
            return 1.0 - rate * (t - 1) / 2
        if t < 5:
            return 1.0 - rate
        return 1.0 - rate * (7 - t) / 2
    rows = [{"variant": "script", "repetition": 0, "link": link, "t_s": t / 10, "dt_s": 0.1, "sent": 1000,
             "heard": round(1000 * delivery(t / 10)), "delivery": delivery(t / 10), "etx": 1.0}
            for link in ("A>B", "C>B") for t in range(-50, 600)]
    write(pd.DataFrame(rows, columns=COLUMNS), path)


def doc(backend: str, loss: dict[str, Any], seed: int, reps: int, segments: int) -> dict[str, Any]:
    d = {"name": f"loop-{backend}", "backend": backend, "seed": seed, "repetitions": reps, "topology": CHAIN,
         "loss": loss, "etx": {"settle_s": 3.0}, "tcp": {"variant": "sack"}, "limits": {"max_duration_s": 120},
         "flows": [{"sender": "A", "receiver": "C", "segments": segments, "segment_size": 1000}],
         "variants": [{"name": "v"}]}
    d["link"] = dict(LINK)
    if backend == "netns":
        d["netns"] = {"realtime": True}
    return d


def goodputs(run_dir: Path) -> dict[int, float]:
    df = pd.read_csv(run_dir / "summary.csv")
    ok = df[df["status"] == "ok"]
    return {int(r): float(g) for r, g in zip(ok["repetition"], ok["goodput_mbps"])}


def sender_losses(run_dir: Path) -> dict[int, int]:
    """Losses the sender saw (fast retransmits and timeouts) per repetition that ended ok."""
    df = pd.read_csv(run_dir / "summary.csv")
    ok = df[df["status"] == "ok"]
    return {int(r): int(d + t) for r, d, t in zip(ok["repetition"], ok["losses_dupack"], ok["losses_rto"])}


def link_drops(run_dir: Path) -> dict[int, int]:
    """Packets the links lost (the loss models' drops, ``drops_loss``) per repetition that ended ok."""
    df = pd.read_csv(run_dir / "summary.csv")
    ok = df[df["status"] == "ok"]
    return {int(r): int(n) for r, n in zip(ok["repetition"], ok["drops_loss"])}


def outcome_columns(name: str, run_dir: Path, rep: int) -> dict[str, float]:
    """``name``'s goodput, the sender's losses and the links' drops in one repetition of ``run_dir``."""
    nan = float("nan")
    return {name: goodputs(run_dir).get(rep, nan), f"{name} losses": sender_losses(run_dir).get(rep, nan),
            f"{name} drops": link_drops(run_dir).get(rep, nan)}


def table(df: pd.DataFrame) -> str:
    """The closed loop's table: per replay, goodput error and the losses' and drops' medians and errors."""
    def err(col: str, ref: str) -> pd.Series:
        return ((df[col] - df[ref]).abs() / df[ref]).dropna()
    lines = [f"recording: losses the sender saw (loss events) median {df['recorded losses'].median():g}, "
             f"packets the links lost median {df['recorded drops'].median():g}",
             "| replay | runs | median goodput Mbit/s | median error | 90th percentile error | median losses (error) "
             "| median link drops (error) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for col in [c for c in df.columns if c not in ("rep",) and not c.startswith("recorded")
                and not c.endswith((" losses", " drops"))]:
        g = err(col, "recorded")
        lines.append(f"| {col} | {len(g)} | {df[col].median():.3f} | {g.median():.0%} | {g.quantile(0.9):.0%} "
                     f"| {df[col + ' losses'].median():g} ({err(col + ' losses', 'recorded losses').median():.0%}) "
                     f"| {df[col + ' drops'].median():g} ({err(col + ' drops', 'recorded drops').median():.0%}) |")
    lines.append("| Lamela et al. (ns-3, per-link signal traces) | | | 5% | 14% | | |")
    return "\n".join(lines)


def run(d: dict[str, Any], src: Path, out: Path) -> Path:
    return run_experiment(load_experiment(d, str(src)), out=out, plot=False, progress=lambda s: None)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench trace_netns_loop")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rate", type=float, default=0.08, help="the loss B hears at the bottom of the fade")
    ap.add_argument("--segments", type=int, default=8000)
    ap.add_argument("--smooth", type=float, default=10.0, help="the smoothed replay's smooth_s")
    ap.add_argument("--backends", default="sim,local", help="where to replay")
    ap.add_argument("--out", default=None, help="working directory (default: a new temporary one)")
    ap.add_argument("--recorded", default=None, help="replay the recording of an earlier run's working directory "
                                                     "(its recorded.parquet and closed_loop.csv) instead of recording")
    args = ap.parse_args(argv)
    tmp = Path(args.out or tempfile.mkdtemp(prefix="trace-netns-loop-"))
    tmp.mkdir(parents=True, exist_ok=True)
    if args.recorded is not None:
        old = Path(args.recorded)
        trace = old / "recorded.parquet"
        old_rows = pd.read_csv(old / "closed_loop.csv")
        nan = float("nan")      # (a file written before the losses and drops were recorded has only the goodput)
        rec_cols = {int(r["rep"]): {"recorded losses": nan, "recorded drops": nan,
                                    **{c: r[c] for c in old_rows.columns if c.startswith("recorded")}}
                    for _, r in old_rows.iterrows()}
        print(f"recorded earlier: {len(recorded)} repetitions; trace {trace}", flush=True)
    else:
        if os.geteuid() != 0:
            print("bench trace_netns_loop records on the netns backend: run it as root (or give --recorded)")
            return 2
        script = tmp / "script.csv"
        script_trace(script, args.rate)
        fade = {"model": "trace", "file": str(script), "link": "A>B", "down": [[4.0, 4.3]]}
        rec_dir = run(doc("netns", {"default": {"model": "none"}, "nodes": {"B": fade}}, 1, args.reps,
                          args.segments), tmp / "loop.yaml", tmp / "rec")
        rec_cols = {k: outcome_columns("recorded", rec_dir, k) for k in goodputs(rec_dir)}
        trace = tmp / "recorded.parquet"
        write(extract(rec_dir), trace)
        print(f"recorded on netns: {len(rec_cols)} of {args.reps} repetitions ok; goodput median "
              f"{pd.Series([c['recorded'] for c in rec_cols.values()]).median():.3f} Mbit/s; trace {trace}", flush=True)
    rows = []
    for k, rec in sorted(rec_cols.items()):
        row: dict[str, Any] = {"rep": k, **rec}
        for backend in args.backends.split(","):
            for sm in (0.0, args.smooth):
                links = {link: {"model": "trace", "file": str(trace), "run": f"v/rep{k}", "smooth_s": sm}
                         for link in LINKS}
                d = doc(backend, {"default": {"model": "none"}, "links": links}, 100 + k, 1, args.segments)
                rep_dir = run(d, tmp / "loop.yaml", tmp / f"{backend}-{k}-{sm:g}")
                row.update(outcome_columns(f"{backend} smooth {sm:g} s", rep_dir, 0))
        rows.append(row)
        print(", ".join(f"{c} {v:.3f}" if isinstance(v, float) else f"{c} {v}" for c, v in row.items()), flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(tmp / "closed_loop.csv", index=False)
    print(f"\n{len(df)} repetitions recorded on netns (rate {args.rate}, {args.segments} segments); "
          f"recorded goodput median {df['recorded'].median():.3f} Mbit/s; {tmp / 'closed_loop.csv'}")
    print(table(df))
    return 0
