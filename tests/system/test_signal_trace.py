"""Recorded signals replayed into the medium's reception sinr (issue 25, item 2; routing/medium/signal_trace.py),
in virtual time on the sim: the link A-B is strong (-50 dBm) until 2 s after the flow starts, then weak
(-82 dBm, SINR 12 dB over the default noise floor); Minstrel moves the frames to low MCSs and the goodput
falls with it; the same run without the trace stays at the top rates.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
import pandas as pd
import pytest
from experiments.runner import run_experiment
from experiments.schema import load_experiment
from plots.logs import load_rep
from tests.routing.medium.test_signal_trace import FADE_S, doc, write_trace


def rates_and_goodput(run_dir: Path) -> tuple[dict[str, int], float, float]:
    """A's data attempts per rate, and the goodput (Mbit/s) before the fade and from 1 s after it."""
    rep = run_dir / "v" / "rep0"
    ev = load_rep(rep).events
    # the sim logs A's counters as A's; the local and netns medium daemons as theirs, for station A
    station = ev["station"].fillna(ev["node"]) if "station" in ev else ev["node"]
    mac = ev[(ev["ev"] == "mac") & (station == "A")].iloc[0]
    attempts = mac["rate_attempts"] if isinstance(mac["rate_attempts"], dict) else json.loads(mac["rate_attempts"])
    start = float(ev[ev["ev"] == "flow_start"]["t"].iloc[0])
    d = ev[(ev["ev"] == "deliver") & (ev["node"] == "B")][["t", "bytes"]].astype(float)
    d["t"] -= start

    def rate(t0: float, t1: float) -> float:
        w = d[(d["t"] >= t0) & (d["t"] < t1)]
        return (w["bytes"].iloc[-1] - w["bytes"].iloc[0]) * 8 / (w["t"].iloc[-1] - w["t"].iloc[0]) / 1e6
    return attempts, rate(0.2, FADE_S), rate(FADE_S + 1.0, d["t"].max() + 1)


def low_share(attempts: dict[str, int]) -> float:
    low = sum(n for r, n in attempts.items() if int(re.search(r"(\d+)$", r).group(1)) <= 3)
    return low / sum(attempts.values())


def test_minstrel_follows_the_recorded_signal_down(tmp_path: Path) -> None:
    write_trace(tmp_path)
    replayed = run_experiment(load_experiment(doc({"signal_trace": {"file": "sig.csv"}}), str(tmp_path / "t.yaml")),
                              out=tmp_path / "replay", plot=False, progress=lambda s: None)
    fixed = run_experiment(load_experiment(doc(), str(tmp_path / "t.yaml")), out=tmp_path / "fixed", plot=False,
                           progress=lambda s: None)
    for r in (replayed, fixed):
        df = pd.read_csv(r / "summary.csv")
        assert (df["status"] == "ok").all() and df["integrity_ok"].all(), df.to_string()
    att_r, strong_r, weak_r = rates_and_goodput(replayed)
    att_f, strong_f, weak_f = rates_and_goodput(fixed)
    print(f"replayed: low-MCS share {low_share(att_r):.2f}, goodput {strong_r:.1f} -> {weak_r:.1f} Mbit/s; "
          f"fixed: {low_share(att_f):.2f}, {strong_f:.1f} -> {weak_f:.1f}; {att_r}")
    assert low_share(att_f) < 0.05 and low_share(att_r) > 0.3
    # measured: 13.8 -> 8.3 Mbit/s replayed (MCS 2 mostly), 13.8 -> 15.9 fixed (MCS 7)
    assert weak_r < 0.75 * strong_r and weak_r < 0.7 * weak_f    # the goodput falls with the signal ...
    assert weak_f > 0.9 * strong_f                               # ... and not without the trace
    assert strong_r == pytest.approx(strong_f, rel=0.2)   # before the fade the two runs are alike
