"""The user-space TCP against kernel TCP on the same YAML: the baseline every snoop gain is measured
against (issue 39, item 1).

Each case is one experiment file run twice: on the sim (``tcp_user``'s Reno or SACK in virtual time)
and on netns (Linux's TCP, the same congestion control and SACK setting, as root), over the same
links: the sim's own emulated link (``link:`` rate, delay, drop-tail queue; on netns held by the
NFQUEUE daemons) or the 802.11 DCF medium (``--carrier medium``). A case is a topology (a 1-, 3- or
6-hop chain, or the diamond A-B-D / A-C-D routed by hop count over B), where its loss is (``relay``:
Bernoulli at the first relay, B, the receiver on a 1-hop chain; ``every``: at every node) and how much
(0-20 %, or ``ge``, a Gilbert-Elliott burst model). Per case and side the bench prints, over the
repetitions (the same seeds on both sides):

* goodput, the median in Mbit/s: a finished repetition's ``goodput_mbps``; an unfinished one
  (``limits.max_duration_s``) counts what it delivered over the limit, and the row says how many
  finished (``3/5``);
* loss events the sender saw, medians of the summary's ``losses_dupack`` / ``losses_rto``;
* the largest RTO (s) a timeout armed, over the repetitions (``loss`` events' ``rto``: tcp_user's
  backed-off timer; the kernel's TCP_INFO ``rto`` at the sampler's next look);
* cwnd, the median of the repetitions' ``cwnd_median`` in segments: where the cwnds agree and the
  goodputs do not, the difference is the path's RTT (on netns, the daemons' time per packet), not TCP;
* the ratio sim / netns of the goodput medians.

The sim needs no root; netns does (``--sides sim`` runs the sim's half alone). Real-time netns runs
share the CPU with whatever else runs: the node daemons run SCHED_RR (``netns.realtime``), and the
load average is printed with the table.

Run: sudo .venv/bin/python -m bench tcp_fidelity [--topologies chain3,diamond] [--places relay,every]
     [--losses 0,1,2,5,10,20,ge] [--reps 5] [--segments 3000] [--max-duration 120]
     [--carrier link|medium] [--variant sack|reno] [--sides sim,netns] [--keep DIR]
"""
from __future__ import annotations

import argparse
import copy
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from experiments.build import KERNEL_TCP_OWN
from experiments.schema import ExperimentError, set_fields

TOPOLOGIES: dict[str, dict[str, Any]] = {
    "chain1": {"chain": ["A", "B"]},
    "chain3": {"chain": ["A", "B", "C", "D"]},
    "chain6": {"chain": ["A", "B", "C", "D", "E", "F", "G"]},
    # hop count cannot tell A-B-D from A-C-D: its tie-break takes B, the lossy relay
    "diamond": {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]},
}
ENDS = {"chain1": ("A", "B"), "chain3": ("A", "D"), "chain6": ("A", "G"), "diamond": ("A", "D")}
RELAY = "B"
LINK = {"rate_mbps": 10, "delay_ms": 2, "queue_packets": 50}
# bursts: 0.2 s at 50 % every 6 s on average, 1 % between (experiments/adaptive-bursty.yaml's channel)
GILBERT_ELLIOTT = {"model": "gilbert-elliott", "good_mean_s": 6.0, "bad_mean_s": 0.2, "loss_good": 0.01,
                   "loss_bad": 0.5}
SIDES = ("sim", "netns")


@dataclass(frozen=True)
class Case:
    topology: str
    place: str          # relay | every
    loss: str           # a percentage ("5") or "ge"

    @property
    def label(self) -> str:
        where = "at B" if self.place == "relay" else "every node"
        what = "Gilbert-Elliott" if self.loss == "ge" else f"{self.loss} %"
        return f"{self.topology}, {what} {where}"


def loss_model(loss: str) -> dict[str, Any]:
    if loss == "ge":
        return dict(GILBERT_ELLIOTT)
    rate = float(loss) / 100
    return {"model": "bernoulli", "rate": rate} if rate > 0 else {"model": "none"}


def experiment(case: Case, *, reps: int, segments: int, max_duration: float, carrier: str, variant: str,
               seed: int = 1) -> dict[str, Any]:
    """The experiment document of one case (both sides run this same file)."""
    sender, receiver = ENDS[case.topology]
    model = loss_model(case.loss)
    loss = {"default": model} if case.place == "every" else {"nodes": {RELAY: model}}
    doc: dict[str, Any] = {
        "name": f"fidelity-{case.topology}-{case.place}-{case.loss}", "backend": "sim", "seed": seed,
        "repetitions": reps, "topology": TOPOLOGIES[case.topology], "loss": loss,
        "etx": {"settle_s": 3}, "tcp": {"variant": variant}, "routing": {"metric": "hops"},
        "limits": {"max_duration_s": max_duration}, "netns": {"realtime": True},
        "flows": [{"sender": sender, "receiver": receiver, "segments": segments, "segment_size": 1000}],
        "variants": [{"name": variant, "snoop": {"policy": "none"}}],
    }
    if carrier == "link":
        doc["link"] = dict(LINK)
    else:
        doc["medium"] = {"model": "dcf", "standard": "b"}
    return doc


@dataclass
class Side:
    """One side's repetitions of one case."""
    goodput: list[float] = field(default_factory=list)    # Mbit/s, an unfinished one over the limit
    finished: int = 0
    dupack: list[int] = field(default_factory=list)
    rto: list[int] = field(default_factory=list)
    cwnd: list[float] = field(default_factory=list)       # the summary's cwnd_median, segments
    max_rto_s: float = 0.0
    error: str = ""

    @property
    def reps(self) -> int:
        return len(self.goodput)

    def median(self) -> float | None:
        return statistics.median(self.goodput) if self.goodput else None


def _num(v: str) -> float | None:
    return float(v) if v not in ("", None) else None


def read_run(run_dir: Path, segments: int, segment_size: int, max_duration: float) -> Side:
    """A side's numbers from its run directory: summary.csv, and each repetition's logs for what an
    unfinished flow delivered and the largest RTO a timeout armed."""
    side = Side()
    with open(run_dir / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        rep_dir = run_dir / row["variant"] / f"rep{row['repetition']}"
        delivered, max_rto = _scan_logs(rep_dir)
        good = _num(row["goodput_mbps"])
        if good is not None and row["status"] == "ok":
            side.finished += 1
        else:
            good = delivered * 8 / max_duration / 1e6
        side.goodput.append(good)
        side.dupack.append(int(_num(row["losses_dupack"]) or 0))
        side.rto.append(int(_num(row["losses_rto"]) or 0))
        cwnd = _num(row["cwnd_median"])
        if cwnd is not None:
            side.cwnd.append(cwnd)
        side.max_rto_s = max(side.max_rto_s, max_rto)
    return side


def _scan_logs(rep_dir: Path) -> tuple[int, float]:
    """(payload bytes the receiver delivered in order, the largest ``rto`` of a sender's timeout)."""
    delivered, max_rto = 0, 0.0
    for log in rep_dir.glob("*.log"):
        with open(log) as f:
            for line in f:
                if '"deliver"' not in line and '"loss"' not in line:
                    continue
                e = json.loads(line)
                if e["ev"] == "deliver":
                    delivered = max(delivered, int(e["bytes"]))
                elif e["ev"] == "loss" and e.get("kind") == "rto" and e.get("rto") is not None:
                    max_rto = max(max_rto, float(e["rto"]))
    return delivered, max_rto


def run_side(doc: dict[str, Any], backend: str, work: Path, jobs: int) -> Side:
    """Run the case's file on one backend with ``aspan run``; its record stays in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = work / backend
    cmd = [sys.executable, "-m", "experiments", "run", str(path), "--backend", backend, "--out", str(out),
           "--no-plot"]
    if backend == "sim":
        cmd += ["--jobs", str(jobs)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    runs = sorted((out / doc["name"]).glob("*/summary.csv"))
    if r.returncode not in (0, 1) or not runs:     # 1: some repetition unfinished, still a result
        side = Side()
        side.error = f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}"
        return side
    flow = doc["flows"][0]
    return read_run(runs[-1].parent, flow["segments"], flow["segment_size"], doc["limits"]["max_duration_s"])


def _cell(side: Side | None) -> str:
    if side is None:
        return "| | | | | "
    if side.error:
        return f"| error: {side.error[:60]} | | | | "
    m = side.median()
    fin = "" if side.finished == side.reps else f" ({side.finished}/{side.reps} finished)"
    cwnd = f"{statistics.median(side.cwnd):.1f}" if side.cwnd else ""
    return (f"| {m:.2f}{fin} | {statistics.median(side.dupack):g} / {statistics.median(side.rto):g} "
            f"| {side.max_rto_s:.1f} | {cwnd} | ")


def table(results: list[tuple[Case, dict[str, Side]]]) -> str:
    out = ["| case | sim Mbit/s | sim dupack / RTO | sim max RTO s | sim cwnd | netns Mbit/s | netns dupack / RTO "
           "| netns max RTO s | netns cwnd | sim / netns |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case, sides in results:
        s, k = sides.get("sim"), sides.get("netns")
        ratio = ""
        if s and k and not s.error and not k.error and s.median() is not None and k.median():
            ratio = f"{s.median() / k.median():.2f}"
        out.append(f"| {case.label} {_cell(s)}{_cell(k)[2:]}{ratio} |")
    return "\n".join(out)


def set_field(doc: dict[str, Any], item: str, backend: str = "sim") -> None:
    """``PATH=VALUE`` (``tcp.delayed_ack=true``) set in ``doc`` as ``aspan run --set`` sets it
    (experiments.schema.set_fields); on the netns side not the user-space TCP's own fields
    (experiments.build.KERNEL_TCP_OWN), which Linux sets by its own rules and the netns backend refuses."""
    path = item.partition("=")[0]
    if backend == "netns" and path.startswith("tcp.") and path[4:] in KERNEL_TCP_OWN:
        return
    try:
        new, _notes = set_fields(doc, [item], "--set")
    except ExperimentError as e:
        raise SystemExit(f"--set {item!r}: {e}") from None
    doc.clear()
    doc.update(new)


def cases(topologies: list[str], places: list[str], losses: list[str]) -> list[Case]:
    out = []
    for t in topologies:
        for p in places:
            for loss in losses:
                if p == "every" and loss == "0" and "relay" in places:
                    continue          # the same lossless case as at the relay
                out.append(Case(t, p, loss))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench tcp_fidelity", description=__doc__.split("\n\n")[0])
    ap.add_argument("--topologies", default="chain1,chain3,chain6,diamond")
    ap.add_argument("--places", default="relay,every")
    ap.add_argument("--losses", default="0,1,2,5,10,20,ge")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--segments", type=int, default=3000)
    ap.add_argument("--max-duration", type=float, default=120.0, help="limits.max_duration_s of each run")
    ap.add_argument("--carrier", choices=["link", "medium"], default="link")
    ap.add_argument("--variant", choices=["sack", "reno"], default="sack")
    ap.add_argument("--sides", default="sim,netns")
    ap.add_argument("--jobs", type=int, default=2, help="the sim's parallel repetitions")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="set a field of every case's file, e.g. tcp.delayed_ack=true (a YAML value; repeatable; "
                         "the user-space TCP's own fields on the sim side only)")
    ap.add_argument("--keep", type=Path, help="keep the run directories here (default: a temporary directory)")
    ap.add_argument("--report", type=Path, metavar="DIR",
                    help="run nothing: print the table of the runs a --keep DIR holds, for these cases")
    args = ap.parse_args(argv)
    bad = [t for t in args.topologies.split(",") if t not in TOPOLOGIES]
    sides = args.sides.split(",")
    if bad or not set(sides) <= set(SIDES):
        ap.error(f"unknown topology {bad} (expected {sorted(TOPOLOGIES)}) or side {sides} (expected {SIDES})")
    if "netns" in sides and os.geteuid() != 0:
        ap.error("the netns side needs root (or --sides sim)")
    todo = cases(args.topologies.split(","), args.places.split(","), args.losses.split(","))
    results: list[tuple[Case, dict[str, Side]]] = []
    if args.report:
        for case in todo:
            doc = experiment(case, reps=args.reps, segments=args.segments, max_duration=args.max_duration,
                             carrier=args.carrier, variant=args.variant)
            got = {}
            for backend in sides:
                runs = sorted((args.report / doc["name"] / backend / doc["name"]).glob("*/summary.csv"))
                if runs:
                    got[backend] = read_run(runs[-1].parent, args.segments, 1000, args.max_duration)
            if got:
                results.append((case, got))
        print(table(results))
        return 0
    with tempfile.TemporaryDirectory(prefix="tcp-fidelity-") as tmp:
        base = args.keep or Path(tmp)
        for case in todo:
            doc = experiment(case, reps=args.reps, segments=args.segments, max_duration=args.max_duration,
                             carrier=args.carrier, variant=args.variant)
            got: dict[str, Side] = {}
            for backend in sides:     # interleaved: both sides of a case before the next case
                side_doc = copy.deepcopy(doc)
                for item in args.set:
                    set_field(side_doc, item, backend)
                got[backend] = run_side(side_doc, backend, base / doc["name"], args.jobs)
                s = got[backend]
                state = s.error or f"{s.median():.2f} Mbit/s, {s.finished}/{s.reps} finished"
                print(f"{case.label}: {backend}: {state} (load {os.getloadavg()[0]:.1f})", flush=True)
            results.append((case, got))
    print(f"\n{args.variant}, carrier {args.carrier}, {args.segments} x 1000 bytes, {args.reps} repetitions, "
          f"limit {args.max_duration:g} s\n")
    print(table(results))
    return 1 if any(s.error for _, got in results for s in got.values()) else 0
