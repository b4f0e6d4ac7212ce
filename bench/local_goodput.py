"""Goodput of one bulk flow over the 3-hop loopback chain (local backend), no loss and 0.5 % per node.

Prints goodput, each forwarder's datagrams/s and CPU share, and the ratio against a plain UDP
relay chain measured in the same run (bench/relay_baseline.py).  A relay's CPU per datagram is
printed with how many datagrams it found per wake-up of its loop, next to the plain relays' in the
same run driven with small windows (``--floor-windows``): at the same datagrams per wake-up, the
difference is what the forwarding step costs on top of a bare ``recv`` + ``sendto``.  Each loss
setting runs with the authenticated overlay off and on (``auth.mac``, routing.overlay.auth), so the MAC's
cost is measured in the same run (``--mac off`` or ``on`` runs only one).

Last, the same flow runs with no relay at all (chain A - D, one hop, no loss): the goodput the two
user-space TCP endpoints reach alone on this machine, with their CPU per segment.  It is a ceiling
for the chain's ratio, which the relays' cost can only lower (``--no-endpoints-alone`` skips it).
Run: .venv/bin/python -m bench local_goodput [--segments N] [--mac both|off|on]
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import pandas as pd

from bench.relay_baseline import relay_baseline
from experiments.runner import run_experiment
from experiments.schema import load_experiment


def _node_stats(rep: Path, node: str) -> dict:
    for line in reversed((rep / f"{node}.log").read_text().splitlines()):
        e = json.loads(line)
        if e["ev"] == "node_stop":
            return e
    return {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench local_goodput")
    ap.add_argument("--segments", type=int, default=16000)
    ap.add_argument("--variant", default="sack", choices=["reno", "sack"])
    ap.add_argument("--mac", default="both", choices=["both", "off", "on"],
                    help="the authenticated overlay: off, on, or both side by side (default)")
    ap.add_argument("--floor-windows", default="2,4,8",
                    help="windows (datagrams in flight) of the plain relay chain's small-window runs; '' for none")
    ap.add_argument("--no-endpoints-alone", dest="endpoints_alone", action="store_false",
                    help="skip the run of the two endpoints alone (A - D, one hop)")
    args = ap.parse_args(argv)
    base = relay_baseline()
    baseline = base.mbps
    floors = [relay_baseline(seconds=3.0, window=int(w), port=47900 + 10 * (i + 1))
              for i, w in enumerate(x for x in args.floor_windows.split(",") if x)]
    doc = {"name": "bench-goodput", "backend": "local", "repetitions": 1, "etx": {"settle_s": 2.0},
           "tcp": {"variant": args.variant},
           "flows": [{"sender": "A", "receiver": "D", "segments": args.segments}],
           "variants": [{"name": f"{name}{suffix}", "loss": {"default": loss}, "auth": {"mac": mac}}
                        for name, loss in (("no-loss", {"model": "none"}),
                                           ("loss-0.5pct", {"model": "bernoulli", "rate": 0.005}))
                        for suffix, mac in (("", False), ("-mac", True))
                        if args.mac == "both" or (args.mac == "on") == mac]}
    with tempfile.TemporaryDirectory() as tmp:
        run = run_experiment(load_experiment(doc, "bench-goodput.yaml"), out=Path(tmp), plot=False)
        df = pd.read_csv(run / "summary.csv")
        print(f"\nplain UDP relay chain (baseline, same run): {baseline:8.2f} Mbit/s")
        for b in [base] + floors:
            print(f"{'':>17}plain relays, window {b.window:3d}: {b.relay_cpu_us:5.1f} us of CPU per datagram, "
                  f"{b.relay_datagrams_per_sleep:5.1f} datagrams per wake-up, {b.mbps:7.2f} Mbit/s")
        for _, row in df.iterrows():
            rep = run / row["variant"] / "rep0"
            dur = row["duration_s"]
            print(f"{row['variant']:>15}: goodput {row['goodput_mbps']:7.2f} Mbit/s "
                  f"(ratio to baseline {row['goodput_mbps'] / baseline:.3f}), {args.segments} segments in "
                  f"{dur:.2f} s, integrity {row['integrity_ok']}")
            for n in ("B", "C"):
                st = _node_stats(rep, n)
                rx, cpu = st.get("rx_datagrams", 0), st.get("cpu_s", float("nan"))
                fcpu, frx = st.get("cpu_flow_s") or float("nan"), st.get("rx_flow_datagrams") or 0
                sleeps = st.get("sleeps_flow")
                per_wake = f"{frx / max(sleeps, 1):5.1f}" if sleeps is not None else "  n/a"
                print(f"{'':>17}forwarder {n}: {rx / dur:8.0f} datagrams/s received, "
                      f"CPU {cpu:.2f} s = {100 * cpu / dur:5.1f} % of one core over the transfer "
                      f"(includes settling); {1e6 * fcpu / max(frx, 1):5.1f} us of CPU per datagram "
                      f"received once data flows, {per_wake} datagrams per wake-up")
            for n, role in (("A", "sender"), ("D", "receiver")):
                # the receiver sends no data segment, so it has no cpu_flow_s: its whole life is shown
                st = _node_stats(rep, n)
                fcpu = st.get("cpu_flow_s")
                cpu = fcpu if fcpu is not None else st.get("cpu_s", float("nan"))
                when = "once data flows" if fcpu is not None else "over its whole life (start-up and settling included)"
                print(f"{'':>17}endpoint {n} ({role}): {1e6 * cpu / args.segments:5.1f} us of CPU per segment {when}")
        if args.endpoints_alone:
            _endpoints_alone(doc, args.segments, baseline, Path(tmp))
    return 0


def _endpoints_alone(doc: dict, segments: int, baseline: float, tmp: Path) -> None:
    """The flow of ``doc`` over one hop, A - D, without loss: what the endpoints reach with no relay."""
    alone = dict(doc, name="bench-endpoints-alone", topology={"chain": ["A", "D"]},
                 variants=[dict(doc["variants"][0], name="endpoints-alone", loss={"default": {"model": "none"}})])
    run = run_experiment(load_experiment(alone, "bench-endpoints-alone.yaml"), out=tmp, plot=False)
    row = pd.read_csv(run / "summary.csv").iloc[0]
    rep = run / row["variant"] / "rep0"
    a, d = _node_stats(rep, "A"), _node_stats(rep, "D")
    a_cpu = a.get("cpu_flow_s") or float("nan")
    d_cpu = d.get("cpu_s", float("nan"))
    print(f"{'endpoints alone':>15}: goodput {row['goodput_mbps']:7.2f} Mbit/s (ratio to baseline "
          f"{row['goodput_mbps'] / baseline:.3f}), A - D over one hop, no relay, no loss, integrity "
          f"{row['integrity_ok']}: the ceiling of the chain's ratio on this machine\n"
          f"{'':>17}endpoint A (sender): {1e6 * a_cpu / segments:5.1f} us of CPU per segment once data "
          f"flows; endpoint D (receiver): {1e6 * d_cpu / segments:5.1f} us over its whole life")


if __name__ == "__main__":
    raise SystemExit(main())
