"""The local backend's medium process: every datagram crosses the DCF medium (experiments/backends/medium_process.py)."""
from __future__ import annotations

import json
from pathlib import Path
import numpy as np
import pytest
from experiments.runner import run_experiment
from experiments.schema import load_experiment
from plots.medium import mac_frame
import subprocess
import pandas as pd
from experiments.backends import local


DOC = {
    "name": "medl", "backend": "local", "seed": 1, "repetitions": 1,
    "etx": {"settle_s": 1.0},
    "medium": {"model": "dcf", "standard": "b"},
    "flows": [{"sender": "A", "receiver": "D", "segments": 300}],
    "variants": [{"name": "reno"}],
    "limits": {"max_duration_s": 60},
}


def events(path: Path, ev: str) -> list[dict]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["ev"] == ev]


def test_a_local_run_on_the_medium_completes_and_logs_every_frame(tmp_path: Path) -> None:
    run = run_experiment(load_experiment(DOC, "medl.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    rep = run / "reno" / "rep0"
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "ok", meta.get("error")
    assert meta["exit_codes"]["medium"] == 0
    frames = events(rep / "medium.log", "frame")
    stop = events(rep / "medium.log", "node_stop")[0]
    assert len(frames) == stop["frames_out"] > 600   # 300 data segments over 3 hops at least, ACKs, probes
    assert all(f["attempts"] >= 1 and f["airtime_us"] > 0 for f in frames)
    # every node reached its neighbours through the medium: frames from each node to each neighbour
    pairs = {(f["src"], f["dst"]) for f in frames}
    assert {("A", "B"), ("B", "C"), ("C", "D"), ("D", "C"), ("C", "B"), ("B", "A")} <= pairs
    mac = mac_frame(run)
    assert set(mac["node"]) == set("ABCD")
    assert (mac["airtime_share"] > 0).all() and (mac["airtime_share"] < 1).all()
    # the medium process's lateness in the report (issue 28, item 4): p50, p99, max of every frame's late_us
    from plots.cli import plot_command
    from plots.lateness import run_lateness
    (late,) = run_lateness(run)
    lates = [f["late_us"] for f in frames]
    assert (late.frames, late.max_us) == (len(frames), max(lates))
    assert late.p50_us == pytest.approx(float(np.median(lates)))
    assert late.airtime_us == pytest.approx(sum(f["airtime_us"] for f in frames) / sum(f["attempts"] for f in frames))
    assert plot_command([run]) == 0
    assert "## Medium lateness" in (run / "report.md").read_text()


def test_a_node_hears_each_frame_from_the_address_it_knows_as_that_neighbour(tmp_path: Path) -> None:
    """The medium sends a frame src -> dst from the socket dst uses to reach src, so a node that names
    the previous hop by the datagram's source address (the captures) names the right neighbour."""
    import socket
    import time

    from experiments.backends import medium_process
    from experiments.backends.local import free_port
    cfg = load_experiment({"topology": {"chain": ["A", "B", "C"]}, "medium": {"model": "dcf"},
                           "flows": [{"sender": "A", "receiver": "C", "segments": 1}]}, "m.yaml").variants[0].config
    socks = {}
    for i, n in enumerate("ABC"):
        socks[n] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        socks[n].bind((f"127.0.1.{i + 1}", 0))
        socks[n].settimeout(5.0)
    udp = {n: s.getsockname() for n, s in socks.items()}
    proc, peers = medium_process.start(cfg, 1, tmp_path, udp, free_port("127.0.2.1"), time.time() + 60, time.time() + 10)
    try:
        addrs = cfg["topology"]["addresses"]
        socks["A"].sendto(bytes([0xA5, 2, 1]) + bytes(100), tuple(peers["A"][addrs["B"]]))
        _, src = socks["B"].recvfrom(2048)
        assert src == tuple(peers["B"][addrs["A"]])
    finally:
        proc.terminate()
        proc.wait()


# ====================================================================================================
# Reception sinr on the local and netns backends: the local medium process and the netns medium daemon build
# the same core (experiments.medium_spec.build_medium) with the same signals, and runs over them complete
# (issue 24, item 2: every backend with a medium).  Real time: marked slow; the netns one root.


SINR_DOC = {
    "name": "sinrl", "backend": "local", "seed": 1, "repetitions": 1,
    "etx": {"settle_s": 1.0},
    "topology": {"chain": ["A", "B", "C"]},
    "medium": {"model": "dcf", "standard": "b", "reception": "sinr", "spacing_m": 100,
               "rx_sensitivity_dbm": -101},
    "flows": [{"sender": "A", "receiver": "C", "segments": 150}],
    "variants": [{"name": "reno"}],
    "limits": {"max_duration_s": 60},
}


@pytest.mark.slow
def test_a_local_run_with_reception_sinr_completes_and_the_channel_loses_frames(tmp_path: Path) -> None:
    run = run_experiment(load_experiment(SINR_DOC, "sinrl.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    rep = run / "reno" / "rep0"
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "ok", meta.get("error")
    assert meta["exit_codes"]["medium"] == 0
    mac = {e["station"]: e for e in events(rep / "medium.log", "mac")}
    assert set(mac) == {"A", "B", "C"}
    # 100 m hops at 11 Mbit/s are in the grey zone (0.78 per attempt): the channel alone lost frames,
    # and the link layer's retries carried the flow
    assert sum(m["faded"] for m in mac.values()) > 0
    assert sum(m["retries"] for m in mac.values()) >= sum(m["faded"] for m in mac.values())


# ====================================================================================================
# A local repetition whose medium process does not start in time fails with a message, not a traceback
# (seen once at load average 15: the 1.5 s start margin was all the medium process had).


START_DOC = {"name": "m", "backend": "local", "repetitions": 1, "topology": {"chain": ["A", "B", "C"]},
       "medium": {"model": "dcf", "standard": "g"}, "etx": {"settle_s": 0.5},
       "flows": [{"sender": "A", "receiver": "C", "segments": 50}], "variants": [{"name": "v"}]}


def test_a_medium_that_is_not_ready_in_time_fails_the_repetition_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "MEDIUM_START_S", 0.0)
    run_dir = run_experiment(load_experiment(START_DOC, "m.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    meta = json.loads((run_dir / "v" / "rep0" / "meta.json").read_text())
    assert meta["status"] == "failed" and "the medium process was not ready after 0 s" in meta["error"]
    left = subprocess.run(["pgrep", "-f", str(run_dir)], capture_output=True, text=True).stdout.split()
    assert left == []                                               # the medium was stopped, not left running
    assert pd.read_csv(run_dir / "summary.csv")["status"].tolist() == ["failed"]


def test_the_nodes_clock_starts_after_a_slow_medium(tmp_path):
    """The medium's start does not eat the settle phase: the nodes start their probes after it is up."""
    run_dir = run_experiment(load_experiment(START_DOC, "m.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    rep = run_dir / "v" / "rep0"
    assert json.loads((rep / "meta.json").read_text())["status"] == "ok"
    ready = (rep / "medium.ready").stat().st_mtime
    t0 = {n: json.loads((rep / f"{n}.node.json").read_text())["t0"] for n in "ABC"}
    assert all(t > ready for t in t0.values()), (ready, t0)
