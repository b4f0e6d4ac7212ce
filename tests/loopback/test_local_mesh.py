"""The local backend on a mesh: a 3 x 3 grid with two crossing flows, with and without the medium process;
its loopback addresses past 254 nodes; what it refuses before a run (experiments.backends.loopback).
"""
from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any
import pandas as pd
import pytest
from experiments.backends import loopback
from experiments.backends.local import loopback_address
from experiments.runner import check_backend_support, run_experiment
from experiments.schema import ExperimentError, load_experiment


GRID = [f"N{i}" for i in range(9)]   # N0 N1 N2 / N3 N4 N5 / N6 N7 N8


GRID_LINKS = [[f"N{i}", f"N{i + 1}"] for i in range(9) if i % 3 < 2] + [[f"N{i}", f"N{i + 3}"] for i in range(6)]


POSITIONS = {n: [200.0 * (i % 3), 200.0 * (i // 3)] for i, n in enumerate(GRID)}   # grid neighbours in range


def grid_doc(**over: Any) -> dict[str, Any]:
    # the row N3 -> N5 and the column N1 -> N7 cross at N4 (each is the only two-hop path)
    doc = {"name": "grid", "backend": "local", "seed": 1, "repetitions": 1,
           "topology": {"nodes": GRID, "links": GRID_LINKS}, "etx": {"settle_s": 1.0},
           "limits": {"max_duration_s": 90},
           "flows": [{"sender": "N3", "receiver": "N5", "segments": 300},
                     {"sender": "N1", "receiver": "N7", "segments": 300}],
           "variants": [{"name": "plain"},
                        {"name": "dcf", "medium": {"model": "dcf", "standard": "b", "positions": POSITIONS}}]}
    doc.update(over)
    return doc


def test_a_3x3_grid_carries_two_crossing_flows_with_and_without_the_medium(tmp_path: Path) -> None:
    run = run_experiment(load_experiment(grid_doc(), "grid.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    df = pd.read_csv(run / "summary.csv")
    assert sorted(df["variant"].unique()) == ["dcf", "plain"]
    assert len(df) == 4   # two flows per variant
    assert (df["status"] == "ok").all() and df["integrity_ok"].all(), df.to_string()
    assert (df["segments"] == 300).all()
    for v in ("plain", "dcf"):
        rep = run / v / "rep0"
        meta = json.loads((rep / "meta.json").read_text())
        assert meta["status"] == "ok", meta.get("error")
        assert set(meta["exit_codes"].values()) == {0}
        assert meta["routing"]["routes"]["N3"]["N5"] == "N4" and meta["routing"]["routes"]["N1"]["N7"] == "N4"
        # a node's UDP peers are its graph neighbours only
        corner = json.loads((rep / "N0.node.json").read_text())
        assert len(corner["peers"]) == 2
    # the medium process binds one socket per directed graph link (12 links), not per pair of nodes (72)
    conf = json.loads((run / "dcf" / "rep0" / "medium.node.json").read_text())
    assert len(conf["pairs"]) == 24
    assert {(p["src"], p["dst"]) for p in conf["pairs"]} == {(a, b) for a, b in GRID_LINKS} | {(b, a) for a, b in GRID_LINKS}
    assert len({p["ip"] for p in conf["pairs"]}) == 24
    frames = [json.loads(line) for line in (run / "dcf" / "rep0" / "medium.log").read_text().splitlines()
              if '"frame"' in line]
    assert {("N3", "N4"), ("N4", "N5"), ("N1", "N4"), ("N4", "N7")} <= {(f["src"], f["dst"]) for f in frames}


def test_loopback_addresses_go_on_past_254() -> None:
    assert [loopback_address(i) for i in (0, 253, 254, 255, 507, 508)] == [
        "127.0.1.1", "127.0.1.254", "127.1.0.1", "127.1.0.2", "127.1.0.254", "127.1.1.1"]
    assert loopback.pair_address(0) == "127.0.2.1" and loopback.pair_address(254) == "127.2.0.1"
    every = {loopback.node_address(i) for i in range(3000)}
    assert len(every) == 3000 and not every & {loopback.pair_address(i) for i in range(3000)}
    with pytest.raises(ValueError):
        loopback.node_address(loopback.MAX_ADDRESSES)
    for addr in (loopback.node_address(300), loopback.pair_address(300)):   # all of 127/8 is loopback
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind((addr, 0))


def chain_exp(n: int, medium: str = "dcf") -> Any:
    names = [f"N{i}" for i in range(n)]
    return load_experiment({"topology": {"chain": names}, "medium": {"model": medium},
                            "flows": [{"sender": names[0], "receiver": names[-1], "segments": 10}]}, "chain.yaml")


def test_more_than_16_nodes_on_the_medium_is_accepted_and_plans_only_graph_links() -> None:
    exp = chain_exp(40)   # before: refused once the run started (at most 254 directed pairs of all nodes)
    check_backend_support(exp, "local")
    pairs = loopback.directed_links(exp.variants[0].config)
    assert len(pairs) == 2 * 39 and ("N0", "N1") in pairs and ("N1", "N0") in pairs and ("N0", "N2") not in pairs


def test_a_mesh_above_the_open_file_limit_is_refused_before_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loopback, "open_files_limit", lambda: 100)
    with pytest.raises(ExperimentError, match="one socket per directed link: 78 sockets"):
        check_backend_support(chain_exp(40), "local")
    check_backend_support(chain_exp(40, medium="none"), "local")   # no medium process: no pair sockets
    check_backend_support(chain_exp(40), "sim")
    check_backend_support(chain_exp(10), "local")                   # 18 + 64 <= 100


def test_more_nodes_than_loopback_addresses_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loopback, "MAX_ADDRESSES", 5)
    with pytest.raises(ExperimentError, match=r"topology.nodes.*at most 5 nodes; got 6"):
        check_backend_support(chain_exp(6, medium="none"), "local")


DIAMOND = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]


def test_dynamic_routing_moves_a_flow_off_a_dead_link_with_the_mac_on(tmp_path: Path) -> None:
    """Issue 23 on the local backend: link-state routing by ETX over the authenticated overlay (every LSA
    sealed and verified per link); B-D goes down as the flow starts, so A and D move to C, the flow ends
    intact, and the log, node_stop, meta.json and summary.csv say so."""
    doc = {"name": "dyn", "backend": "local", "seed": 1, "repetitions": 1, "auth": {"mac": True},
           "topology": {"nodes": ["A", "B", "C", "D"], "links": DIAMOND}, "etx": {"settle_s": 2.0},
           "routing": {"metric": "etx", "dynamic": True}, "limits": {"max_duration_s": 90},
           "loss": {"links": {"B-D": {"model": "none", "down": [[0.0, 300]]}}},   # from the flow's start:
           # a quiet machine's local backend carries 3 MB in a fraction of a second
           "flows": [{"sender": "A", "receiver": "D", "segments": 3000}]}
    run = run_experiment(load_experiment(doc, "dyn.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    df = pd.read_csv(run / "summary.csv")
    assert (df["status"] == "ok").all() and df["integrity_ok"].all(), df.to_string()
    assert df["route_changes"].iloc[0] >= 2 and 0 < df["reroute_s"].iloc[0] < 10 \
        and df["recovery_s"].iloc[0] >= df["reroute_s"].iloc[0]
    rep = run / "default" / "rep0"
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["routing"]["measured"] and meta["routing"]["paths"] == [["A", "C", "D"]]
    assert meta["failures"] == [{"where": "link B>D", "down": [0.0, 300]}, {"where": "link D>B", "down": [0.0, 300]}]
    addrs = meta["nodes"]
    events = [json.loads(line) for line in (rep / "A.log").read_text().splitlines()]
    moved = [e for e in events if e["ev"] == "route" and e["dst"] == addrs["D"]]
    assert moved and moved[-1]["new"] == addrs["C"]
    stop = next(e for e in events if e["ev"] == "node_stop")
    assert stop["routing"]["lsa_accepted"] > 0 and stop["routing"]["route_changes"] >= 1
    assert stop["drops"]["forged"] == 0 and stop["drops"]["stranger"] == 0     # every LSA verified
