"""Issue 23: link-state routing by ETX (routing.topology.linkstate), each rule tested against its source.

Part 1 and 2 drive the core alone in virtual time (no I/O: LSAs are handed from router to router by
:class:`Mesh`); part 3 runs NodeCore on the sim backend.  The rules are the module docstring's:
flooding and sequence numbers (RFC 2328 Sec. 13), hold time (RFC 3626 Sec. 18.3, TOP_HOLD_TIME and
NEIGHB_HOLD_TIME), the two-way check (RFC 2328 Sec. 16.1, step 2b), feasibility (RFC 8966 Sec. 2.4)
and hysteresis (issue 23, item 1 and item 6: the route-flap case).
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
import pandas as pd
import pytest
from tests.routing.topology.test_linkstate import DIAMOND, SETTINGS, nodes_of


# ---- 3. NodeCore on the sim backend (virtual time) ----------------------------------------------------------

def _events(rep: Path, node: str, ev: str) -> list[dict]:
    return [e for e in map(json.loads, (rep / f"{node}.log").open()) if e["ev"] == ev]


def _run(doc: dict, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Run ``doc`` on the sim: the run directory and the nodes' addresses."""
    from experiments.runner import run_experiment
    from experiments.schema import load_experiment
    exp = load_experiment(doc, f"{doc['name']}.yaml")
    addrs = exp.variants[0].config["topology"]["addresses"]
    return run_experiment(exp, out=tmp_path, plot=False, progress=lambda s: None), addrs


FAIL_AT = 0.5          # the A-B link goes down this long after the flow starts (loss down intervals count from there)


def test_the_diamond_reroutes_around_a_failed_link_within_dead_s_and_static_routes_wait_for_it(tmp_path):
    """Issue 23, items 1 and 3: A -> D over A-B-D; A-B goes down mid-flow for 8 s.  With dynamic routing A
    stops hearing B, leaves it out of its LSA after dead_s, and every node routes round by C: A's route
    event to C comes within dead_s + advertise_s (+ its 10 % jitter) + recompute_s of the failure, and the
    flow finishes long before the link is back.  With static hop routes the flow waits for the link."""
    doc = {"name": "dia-down", "backend": "sim", "repetitions": 1, "seed": 1, "etx": {"settle_s": 1.0},
           "topology": {"links": DIAMOND},
           "loss": {"links": {"A-B": {"model": "bernoulli", "rate": 0.0, "down": [[FAIL_AT, FAIL_AT + 8]]}}},
           "tcp": {"variant": "sack"}, "flows": [{"sender": "A", "receiver": "D", "segments": 1500}],
           "variants": [{"name": "dyn", "routing": {"metric": "etx", "dynamic": True}},
                        {"name": "static", "routing": {"metric": "hops"}}]}
    d, addrs = _run(doc, tmp_path)
    df = pd.read_csv(d / "summary.csv").set_index("variant")
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    rep = d / "dyn" / "rep0"
    meta = json.loads((rep / "meta.json").read_text())
    t_fail = _events(rep, "A", "flow_start")[0]["t"] + FAIL_AT
    to_d = [e for e in _events(rep, "A", "route") if e["dst"] == addrs["D"]]
    assert to_d and to_d[0]["old"] == addrs["B"] and to_d[0]["new"] == addrs["C"], to_d
    s = SETTINGS
    assert t_fail < to_d[0]["t"] <= t_fail + s.dead_s + 1.1 * s.advertise_s + s.recompute_s, (t_fail, to_d)
    assert to_d[0]["metric"] == 2.0
    assert df.loc["dyn", "duration_s"] < FAIL_AT + 8 < df.loc["static", "duration_s"]
    stops = {n: _events(rep, n, "node_stop")[0] for n in "ABCD"}
    for n, stop in stops.items():
        assert stop["routing"]["lsa_originated"] > 0 and stop["routing"]["lsa_accepted"] > 0, n
        assert stop["drops"]["ttl"] == 0 and stop["drops"]["stranger"] == 0, n
    assert stops["A"]["routing"]["route_changes"] >= 1
    assert meta["routing"]["dynamic"] is True and meta["routing"]["route_changes"]["A"] >= 1
    assert "routing" not in _events(d / "static" / "rep0", "A", "node_stop")[0]   # hop routes: no link state


GRID3 = [[f"N{r}{c}", f"N{r}{c + 1}"] for r in range(3) for c in range(2)] + \
        [[f"N{r}{c}", f"N{r + 1}{c}"] for r in range(2) for c in range(3)]


def test_crossing_flows_on_a_grid_reroute_round_a_dead_centre_without_loops(tmp_path):
    """Two flows cross at N11 of a 3x3 grid; N11 goes silent mid-flow.  Every node reroutes, both flows
    finish long before N11 comes back, and no packet is dropped for its hop count (no forwarding loop)."""
    doc = {"name": "grid-down", "backend": "sim", "repetitions": 1, "seed": 2, "etx": {"settle_s": 1.0},
           "topology": {"links": GRID3}, "routing": {"metric": "etx", "dynamic": True},
           "loss": {"default": {"model": "bernoulli", "rate": 0.005}, "nodes": {"N11": {"down": [[FAIL_AT, 60]]}}},
           "tcp": {"variant": "sack"}, "snoop": {"policy": "adaptive", "pkt_qos": 0.99},
           "flows": [{"sender": "N01", "receiver": "N21", "segments": 600},
                     {"sender": "N10", "receiver": "N12", "segments": 600}]}
    d, _ = _run(doc, tmp_path)
    df = pd.read_csv(d / "summary.csv")
    assert len(df) == 2 and df["integrity_ok"].all() and (df["status"] == "ok").all()
    assert (df["duration_s"] < 10).all()
    rep = d / "default" / "rep0"
    meta = json.loads((rep / "meta.json").read_text())
    for path in meta["routing"]["paths"]:
        assert "N11" not in path, path                 # the routes the nodes ended with go round the centre
    for n in nodes_of(GRID3):
        stop = _events(rep, n, "node_stop")[0]
        assert stop["drops"]["ttl"] == 0, n
        assert stop["routing"]["route_changes"] >= 1, n


def test_two_equally_lossy_paths_on_the_sim_do_not_flap_the_route(tmp_path):
    """Issue 23, item 6, end to end: B-D and C-D lose 10 % each, so A's two paths to D have the same ETX
    and their measured costs differ by probe noise only.  Once the first computation has replaced the
    starting (hop-count) routes, the route events on every node show at most one change per destination
    over the run (a path that stays better for switch_after_s may take over once).  The margin itself is
    pinned by the core test above: in this short run the noise moves the costs too rarely to show it."""
    doc = {"name": "flap", "backend": "sim", "repetitions": 1, "seed": 3, "etx": {"settle_s": 2.0},
           "topology": {"links": DIAMOND}, "routing": {"metric": "etx", "dynamic": True},
           "loss": {"links": {"B-D": {"model": "bernoulli", "rate": 0.1}, "C-D": {"model": "bernoulli", "rate": 0.1}}},
           "tcp": {"variant": "sack"}, "flows": [{"sender": "A", "receiver": "D", "segments": 300}]}
    d, _ = _run(doc, tmp_path)
    assert pd.read_csv(d / "summary.csv")["status"].eq("ok").all()
    rep = d / "default" / "rep0"
    for n in "ABCD":
        routes = _events(rep, n, "route")
        first = min((e["t"] for e in routes), default=None)
        per_dst = Counter(e["dst"] for e in routes if e["t"] > first)
        assert all(k <= 1 for k in per_dst.values()), (n, per_dst)
        assert _events(rep, n, "node_stop")[0]["routing"]["route_changes"] == len(routes)


def test_the_time_axis_marks_the_failure_the_reroute_and_the_recovery():
    """Issue 23, item 3: route changes on the figures' time axis.  From meta.json's failures and the
    flow's summary row: the down interval shaded once (two directed links, one interval), the reroute
    and the recovery as vertical lines at failure + reroute_s and failure + recovery_s; nothing for a
    run without failures."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from types import SimpleNamespace
    from plots.figures import mark_routing
    meta = {"flows": [{"sender": "A", "receiver": "D", "start_s": 0.0}],
            "failures": [{"where": "link B>D", "down": [5, 25]}, {"where": "link D>B", "down": [5, 25]}]}
    fig, ax = plt.subplots()
    mark_routing(ax, SimpleNamespace(meta=meta, row={"reroute_s": 1.0, "recovery_s": 1.4}), "red")
    spans = [p for p in ax.patches]
    assert len(spans) == 1 and spans[0].get_x() == pytest.approx(5.0) and spans[0].get_width() == pytest.approx(20.0)
    lines = {ln.get_linestyle(): ln.get_xdata()[0] for ln in ax.lines}
    assert lines == {"--": pytest.approx(6.0), ":": pytest.approx(6.4)}
    fig2, ax2 = plt.subplots()
    mark_routing(ax2, SimpleNamespace(meta={"flows": []}, row={"reroute_s": None, "recovery_s": None}), "red")
    assert not ax2.patches and not ax2.lines
    plt.close(fig)
    plt.close(fig2)
