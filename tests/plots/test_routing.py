"""plots/routing.py: route changes counted from the flows' start, the settling ones apart (docs/LOGS.md)."""
from __future__ import annotations

from pathlib import Path

from plots.logs import load_rep
from plots.routing import route_changes, route_changes_settling
from plots.summary import summarize_flows
from plots.testing import NODES, basic_flow_events, ev, reverse_flow_events, write_rep

A, B, C, D = (NODES[n] for n in "ABCD")


def route(t: float, node: str, dst: str, old: str | None, new: str) -> dict:
    return ev(t, node, "route", dst=dst, old=old, new=new, metric=2.0)


def test_on_a_diamond_the_settling_changes_are_counted_apart(tmp_path: Path) -> None:
    """A diamond A-B-D / A-C-D: the routes settle (A's first route to D, then B over C) before the flow starts at
    1.0 s; a failover to C and back happens while it runs."""
    events = basic_flow_events(t_start=1.0) + [
        route(0.2, "A", D, None, B), route(0.5, "A", D, B, C), route(0.6, "D", A, None, C),   # settling
        route(1.5, "A", D, C, B), route(2.5, "A", D, B, C)]                                   # while it runs
    rep = load_rep(write_rep(tmp_path, "v", 0, events))
    assert route_changes_settling(rep) == 3 and route_changes(rep) == 2
    [row] = summarize_flows(rep)
    assert (row["route_changes"], row["route_changes_settling"]) == (2, 3)


def test_with_crossing_flows_the_earliest_flow_start_splits_them(tmp_path: Path) -> None:
    """Two flows crossing (A->D and D->A, reverse_flow_events): the split is at the flows' start (the earlier
    flow_start less its start_s), the same for both rows (a repetition column)."""
    events = sorted(basic_flow_events() + reverse_flow_events(), key=lambda e: e["t"])
    t0 = min(e["t"] for e in events if e["ev"] == "flow_start")
    events += [route(t0 - 0.5, "B", D, None, C), route(t0 + 0.05, "C", A, B, D)]
    flows = [{"sender": "A", "receiver": "D", "segments": 3, "segment_size": 1000, "variant": "v"},
             {"sender": "D", "receiver": "A", "segments": 2, "segment_size": 1000, "variant": "v"}]
    rep = load_rep(write_rep(tmp_path, "v", 0, events, flows=flows))
    rows = summarize_flows(rep)
    assert {r["flow"].split(":")[0] for r in rows} == {"A->D", "D->A"}
    assert all((r["route_changes"], r["route_changes_settling"]) == (1, 1) for r in rows)


def test_without_a_flow_start_every_change_is_the_flows(tmp_path: Path) -> None:
    rep = load_rep(write_rep(tmp_path, "v", 0, [route(0.5, "A", D, None, B), route(0.7, "A", D, B, C)]))
    assert (route_changes(rep), route_changes_settling(rep)) == (2, 0)
