"""Emulated links on the local backend (routing/overlay/udp_link.py): the ``link:`` section on loopback UDP.

The rule itself is routing.links.linkem's (tests/routing/links/test_linkem.py); here: what the UDP driver's holding adds
(release order, the node's bound, lateness counted), and whole local runs against the sim's, on a chain,
on a diamond (two paths) with crossing flows, and with a Mahimahi trace.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
import pandas as pd
import pytest
from experiments.runner import run_experiment
from experiments.schema import load_experiment
import tracefiles
from routing.links import mahimahi
from tests.routing.overlay.test_udp_link import CHAIN, doc


DIAMOND = {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]}


def run(tmp_path: Path, d: dict[str, Any], tag: str) -> pd.DataFrame:
    exp = load_experiment(d, str(tmp_path / f"{tag}.yaml"))
    run_dir = run_experiment(exp, out=tmp_path / tag, plot=False, progress=lambda s: None)
    df = pd.read_csv(run_dir / "summary.csv")
    assert (df["status"] == "ok").all() and df["integrity_ok"].all(), df.to_string()
    return df.sort_values("flow").reset_index(drop=True)


@pytest.mark.slow      # real time: node processes on loopback
def test_a_rate_limited_chain_on_local_carries_what_the_sim_carries(tmp_path: Path):
    """A 2 Mbit/s, 5 ms chain of two hops: without a link, loopback carries tens of Mbit/s; with it, local's
    goodput is below the link's rate and within 15 % of the sim's over the same link (real time: a loaded
    machine releases late, which costs goodput, never adds it)."""
    flows = [{"sender": "A", "receiver": "C", "segments": 600, "segment_size": 1000}]
    link = {"rate_mbps": 2, "delay_ms": 5, "queue_packets": 20}
    sim = run(tmp_path, doc("sim", link, CHAIN, flows), "sim")
    local = run(tmp_path, doc("local", link, CHAIN, flows), "local")
    s, g = float(sim["goodput_mbps"][0]), float(local["goodput_mbps"][0])
    print(f"chain over 2 Mbit/s links: sim {s:.3f}, local {g:.3f} Mbit/s")
    assert g < 2.0
    assert abs(g - s) < 0.15 * s


@pytest.mark.slow      # real time: node processes on loopback
def test_a_links_delay_is_in_every_round_trip_on_local(tmp_path: Path):
    """50 ms one way per hop, two hops: from the sender's flow_start (its SYN) to the receiver's flow_end, a
    flow of two small segments takes the handshake's round trip and the data's one way (3 x 100 ms), as on
    the sim, and not much more."""
    flows = [{"sender": "A", "receiver": "C", "segments": 2, "segment_size": 500}]
    link = {"delay_ms": 50}
    sim = run(tmp_path, doc("sim", {**link, "rate_mbps": 1000}, CHAIN, flows), "sim")
    local = run(tmp_path, doc("local", link, CHAIN, flows), "local")
    s, d = float(sim["duration_s"][0]), float(local["duration_s"][0])
    print(f"two segments over two 50 ms hops: sim {s:.3f} s, local {d:.3f} s")
    assert s == pytest.approx(0.3, abs=0.005)
    assert s <= d < s + 0.15


@pytest.mark.slow      # real time: node processes on loopback
def test_crossing_flows_on_the_diamond_share_its_links_on_local_as_on_the_sim(tmp_path: Path):
    """Two paths and crossing flows: A -> D over A-B-D, C -> B over C-A-B (the first neighbour in node order),
    both through the link A -> B.  Every flow stays below the link's rate, and the two together finish
    within 15 % of when they do on the sim: A -> B carries both, 800 kB.

    Not compared flow by flow: which flow wins more of the shared drop-tail queue is a phase effect
    (Floyd and Jacobson, 1992), and the sim's exact times and loopback's jitter pick differently (measured:
    sim 0.93 and 1.46 Mbit/s, local 0.92 and 0.93 Mbit/s, with the same last arrival)."""
    flows = [{"sender": "A", "receiver": "D", "segments": 400, "segment_size": 1000},
             {"sender": "C", "receiver": "B", "segments": 400, "segment_size": 1000}]
    link = {"rate_mbps": 2, "delay_ms": 2, "queue_packets": 20}
    sim = run(tmp_path, doc("sim", link, DIAMOND, flows), "sim")
    local = run(tmp_path, doc("local", link, DIAMOND, flows), "local")
    print("diamond over 2 Mbit/s links:\n", sim[["flow", "goodput_mbps", "duration_s"]], "\n",
          local[["flow", "goodput_mbps", "duration_s"]])
    assert list(local["flow"]) == list(sim["flow"]) and len(local) == 2
    assert (local["goodput_mbps"] < 2.0).all()
    s, d = float(sim["duration_s"].max()), float(local["duration_s"].max())
    assert s > 800e3 * 8 / 2e6                  # A -> B carries both flows' 800 kB
    assert abs(d - s) < 0.15 * s


@pytest.mark.slow      # real time: node processes on loopback
def test_a_mahimahi_trace_serves_the_links_on_local(tmp_path: Path):
    """A steady 2 Mbit/s Mahimahi trace on every link of the chain: the goodput takes most of it and never
    more, as on the sim (tests/routing/links/test_mahimahi.py)."""
    tracefiles.write_mahimahi(tmp_path / "l.mm", mahimahi.opportunities(lambda t: 1.0, 60, 2.0))
    flows = [{"sender": "A", "receiver": "C", "segments": 400, "segment_size": 1000}]
    link = {"mahimahi": "l.mm", "delay_ms": 2}
    sim = run(tmp_path, doc("sim", link, CHAIN, flows), "sim")
    local = run(tmp_path, doc("local", link, CHAIN, flows), "local")
    s, g = float(sim["goodput_mbps"][0]), float(local["goodput_mbps"][0])
    print(f"chain over a 2 Mbit/s Mahimahi trace: sim {s:.3f}, local {g:.3f} Mbit/s")
    assert 0.7 * 2.0 < g < 2.0
    assert abs(g - s) < 0.15 * s
