"""Capacity of the netns backend's medium daemon (experiments/backends/netns/medium.py) in frames/s.

Two namespaces A - B with ``medium.model: dcf`` made so fast (bench/medium_capacity.py's FAST: 100
Gbit/s, 1 ns slots, no preamble) that airtime is no limit: iperf3 sends UDP datagrams of 1,000
bytes A -> B at a given rate, every one a frame the daemon holds and releases, and its server
counts what arrived.  What is measured is the daemon's own cost per frame (one NFQUEUE round trip
in Python plus the medium core), with the node daemons (ETX probes, snoop handlers) running too.
Compare with the frame rate of the medium it emulates: a saturated 802.11b hop carries about 600
data frames/s, an 802.11g cell at most about 5,000 (docs/MEDIUM.md).

Run (root): .venv/bin/python -m bench netns_medium_capacity [--rates 2000,5000,10000,20000] [--seconds 4]
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench.medium_capacity import FAST
from bench.netns_link import iperf3_server
from experiments.backends.netns.run import mesh_session
from experiments.backends.netns.sh import run
from experiments.schema import load_experiment

PAYLOAD = 1000


def measure(rate: int, seconds: float, realtime: bool) -> dict[str, float]:
    """Offer ``rate`` UDP frames/s A -> B for ``seconds``; the frames/s the receiver got."""
    cfg = load_experiment({"topology": {"chain": ["A", "B"]}, "medium": FAST, "netns": {"realtime": realtime},
                           "flows": [{"sender": "A", "receiver": "B", "segments": 1}]}, "capacity").variants[0].config
    with tempfile.TemporaryDirectory(prefix="netns-medcap-") as tmp:
        with mesh_session(cfg, Path(tmp)) as plan:
            with iperf3_server(plan.ns("B")):
                r = run(["iperf3", "-c", plan.addrs["B"], "-u", "-l", str(PAYLOAD), "-b", str(rate * PAYLOAD * 8),
                         "-t", str(seconds), "-J"], ns=plan.ns("A"), check=False, timeout=seconds + 60)
            data = json.loads(r.stdout or "{}")
            if "end" not in data or "sum" not in data["end"]:
                raise RuntimeError(f"iperf3 -u: {data.get('error', r.stderr[-300:])}")
            s = data["end"]["sum"]
        late = [json.loads(line)["late_us"] for line in (Path(tmp) / "medium.log").read_text().splitlines()
                if '"frame"' in line]
    late.sort()
    got = s["packets"] - s["lost_packets"]
    return {"offered": s["packets"] / s["seconds"], "delivered": got / max(s["packets"], 1),
            "frames_per_s": got / s["seconds"], "late_p50_us": late[len(late) // 2] if late else float("nan"),
            "late_p99_us": late[int(len(late) * 0.99)] if late else float("nan")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench netns_medium_capacity")
    ap.add_argument("--rates", default="2000,5000,10000,20000")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--realtime", action="store_true", help="netns.realtime: the daemons run SCHED_RR")
    args = ap.parse_args(argv)
    print("| offered frames/s | delivered | delivered frames/s | lateness p50 us | p99 us |")
    print("|---:|---:|---:|---:|---:|")
    for rate in (int(x) for x in args.rates.split(",")):
        m = measure(rate, args.seconds, args.realtime)
        print(f"| {m['offered']:,.0f} | {m['delivered']:.1%} | {m['frames_per_s']:,.0f} | {m['late_p50_us']:.0f} "
              f"| {m['late_p99_us']:.0f} |", flush=True)
    return 0
