"""Mahimahi mm-link traces (issue 25, item 4): a link of a trace exported as delivery opportunities, and a
Mahimahi trace imported as the link's rate (``link: {mahimahi: FILE}``) on sim, local (tests/routing/overlay/test_udp_link.py)
and netns, refused on pi.  The queue's rule in virtual time; a sim run's goodput under a trace whose rate changes; a netns
run (root) whose kernel TCP goodput tracks the trace's rate.
"""
from __future__ import annotations

from pathlib import Path
import pandas as pd
from experiments.runner import run_experiment
from experiments.schema import load_experiment
from tests.routing.links.test_mahimahi import exp_doc, steady_trace


def goodput(run_dir: Path) -> float:
    df = pd.read_csv(run_dir / "summary.csv")
    assert (df["status"] == "ok").all() and df["integrity_ok"].all(), df.to_string()
    return float(df["goodput_mbps"].iloc[0])


def test_on_the_sim_the_goodput_follows_the_traces_rate(tmp_path: Path) -> None:
    """The diamond's two-hop path over links of a 2 Mbit/s and a 4 Mbit/s trace: the goodput (1000-byte
    segments, 1040-byte packets and ACKs sharing the links' other directions) takes most of each and never
    more (no loss: the queue is the only bottleneck)."""
    rates = {}
    for mbps in (2.0, 4.0):
        steady_trace(tmp_path / f"l{mbps}.mm", mbps)
        exp = load_experiment(exp_doc("sim", {"mahimahi": f"l{mbps}.mm"}), str(tmp_path / "t.yaml"))
        rates[mbps] = goodput(run_experiment(exp, out=tmp_path / f"r{mbps}", plot=False, progress=lambda s: None))
    print(f"sim goodput over Mahimahi links: {rates}")
    for mbps, got in rates.items():
        assert 0.7 * mbps < got < mbps, rates
