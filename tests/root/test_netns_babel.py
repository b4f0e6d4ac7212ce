"""babeld in every namespace instead of the builtin link-state routing (issue 23, item 4), as root.

The ring of experiments/netns-babel.yaml, shortened: A sends to D over B (A-B-D) with a 3-hop detour
A-C-E-D; B goes deaf 3 s after the flows' start time (its handler drops the IPv4 it hears, the node daemon's
ip6tables rule the Babel packets).  babeld (Hellos every 0.5 s) moves A's route to D and D's route to A
onto the detour, kernel TCP follows, the flow ends intact, and the logs, meta.json and summary.csv say so;
nothing is left behind (babeld processes included: the ``netns`` fixture looks for every process whose
command line names the test's directory).  Skips without root or babeld like the other netns tests; fails
instead under ASPAN_REQUIRE_ROOT_TESTS=1.
"""
from __future__ import annotations

import json
import os
import pandas as pd
import pytest
import yaml
from tests.runs import start_run, events, run_dir
from experiments.backends.netns import babel
from tests.root.test_netns_graph import write_graph_exp


RING = {"nodes": ["A", "B", "C", "D", "E"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "E"], ["E", "D"]]}


@pytest.fixture
def with_babeld(netns):
    if babel.missing():
        msg = "babeld tests need " + "; ".join(babel.missing()) + " (apt install babeld)"
        if os.environ.get("ASPAN_REQUIRE_ROOT_TESTS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return netns


def test_babeld_moves_the_flow_onto_the_detour_when_its_relay_goes_deaf(with_babeld):
    tmp = with_babeld
    exp, cfg = write_graph_exp(tmp, RING, [{"sender": "A", "receiver": "D", "segments": 3000}], {},
                               routing={"metric": "etx", "dynamic": True, "daemon": "babeld", "babel_hello_s": 0.5},
                               netns={"rate_mbit": 4})
    doc = yaml.safe_load(exp.read_text())
    # deaf from 3 s: the down intervals run on the nodes' clock from the flows' start time, and under load the
    # sender's app can start late (one CI run: a route moved before the flow_start event with the gate at 1 s)
    doc["loss"]["nodes"]["B"] = {"model": "bernoulli", "rate": 0.0, "down": [[3.0, 300]]}
    doc["limits"]["max_duration_s"] = 90
    exp.write_text(yaml.safe_dump(doc))
    p = start_run(exp, tmp / "runs", "--no-plot")
    out, _ = p.communicate(timeout=240)
    assert p.returncode == 0, out
    run_d = run_dir(tmp / "runs")
    rep = run_d / "aspan" / "rep0"
    addrs = cfg["topology"]["addresses"]
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "ok" and set(meta["exit_codes"].values()) == {0}, meta["exit_codes"]
    assert meta["babeld"]["hello_s"] == 0.5 and meta["babeld"]["version"].startswith("babeld")
    assert {"A.babeld", "E.babeld"} <= set(meta["exit_codes"])
    [end] = [e for e in events(rep, "D") if e["ev"] == "flow_end"]
    assert end["ok"] is True and end["bytes"] == 3000 * 1000
    [start] = [e for e in events(rep, "A") if e["ev"] == "flow_start"]
    [gate] = [e for e in events(rep, "B") if e["ev"] == "babel_down"]        # on once: the interval outlasts the run
    assert gate["on"] is True
    assert start["t"] < gate["t"], (start, gate, meta.get("late_start_s"))  # the flow began before B went deaf
    for node, dst, detour in (("A", "D", "C"), ("D", "A", "E")):
        moved = [e for e in events(rep, node) if e["ev"] == "route" and e["dst"] == addrs[dst]]
        # the flow started over B (babeld had settled on the 2-hop path) and moved to the detour after the failure
        assert all(e["t"] > gate["t"] for e in moved), (node, gate["t"], moved)
        assert moved and moved[-1]["new"] == addrs[detour], (node, moved)
        stop = next(e for e in events(rep, node) if e["ev"] == "node_stop")
        assert stop["routing"]["daemon"] == "babeld" and stop["routing"]["route_changes"] >= 1
    assert any(e["ev"] == "tx" and e.get("kind") == "fwd" for e in events(rep, "E"))    # E relayed after the move
    assert meta["routing"]["measured"] and meta["routing"]["paths"] == [["A", "C", "E", "D"]]
    df = pd.read_csv(run_d / "summary.csv")
    assert df["route_changes"].iloc[0] >= 2 and 0 < df["reroute_s"].iloc[0] < 30, df.to_string()
