"""routing/topology/linkstate.py's rules at their edges (issue 30, mutation run; the rules are the module docstring's).

A neighbour heard exactly ``dead_s`` ago is still live (NEIGHB_HOLD_TIME, RFC 3626 Sec. 18.3: down once
*more* than that has passed); an advertised ETX is rounded to the wire's hundredths and lies in
[1, MAX_ETX]; the sequence number wraps from the u32 maximum to 1; a copy is forgotten once *more* than
``hold_s`` has passed without a refresh (TOP_HOLD_TIME); an LSA naming more links than there are nodes is
refused; the route events carry the metric rounded to 4 places.
"""
from __future__ import annotations

import math

import pytest

from routing.topology.linkstate import MAX_ETX, MAX_SEQ, LinkStateRouter, LinkStateSettings, Lsa, RouteChange, log_changes

S = LinkStateSettings()


def router(cost=None, heard=None, nodes=("A", "B", "C"), neighbours=("B", "C"), **kw):
    cost = cost or {}
    heard = heard or {}
    return LinkStateRouter("A", neighbours, nodes, kw.pop("settings", S), lambda v, now: cost.get(v, 1.0),
                           lambda v: heard.get(v), **kw)


def test_a_neighbour_heard_exactly_dead_s_ago_is_still_live():
    r = router(heard={"B": 10.0})
    assert r.live("B", 10.0 + S.dead_s) and not r.live("B", 10.0 + S.dead_s + 1e-9)
    assert not r.live("C", 10.0)                       # never heard


def test_the_advertised_etx_is_rounded_to_hundredths_and_kept_within_1_and_max_etx():
    r = router(cost={"B": 1.23456, "C": MAX_ETX}, heard={"B": 0.0, "C": 0.0})
    assert r.originate(0.0).links == (("B", 1.23), ("C", MAX_ETX))
    r2 = router(cost={"B": 0.999, "C": MAX_ETX + 0.01}, heard={"B": 0.0, "C": 0.0})
    assert r2.originate(0.0).links == ((("B", 1.0),))          # 0.999 rounds to 1.00; 655.35 is down
    r3 = router(cost={"B": 0.994, "C": math.inf}, heard={"B": 0.0, "C": 0.0})
    assert r3.originate(0.0).links == ()


def test_the_sequence_number_counts_from_1_and_wraps_to_1():
    r = router()
    assert [r.originate(0.0).seq for _ in range(3)] == [1, 2, 3]
    r._seq = MAX_SEQ - 1
    assert [r.originate(0.0).seq for _ in range(2)] == [MAX_SEQ, 1]
    assert r.stats["lsa_originated"] == 5


def test_a_copy_is_forgotten_only_once_more_than_hold_s_has_passed():
    r = router()
    assert r.on_lsa(Lsa("B", 5, (("A", 1.0),)), "B", 0.0) == ["C"]
    assert r.on_lsa(Lsa("B", 5, (("A", 1.0),)), "B", S.hold_s) == []          # exactly hold_s: still held
    assert r.stats["lsa_old"] == 1
    r.expire(S.hold_s)
    assert "B" in r.database()
    r.expire(S.hold_s + 1e-9)
    assert "B" not in r.database()


def test_an_lsa_naming_more_links_than_nodes_is_refused_and_one_as_many_is_not():
    r = router(nodes=("A", "B", "C", "D"), neighbours=("B",))
    three = (("A", 1.0), ("C", 1.0), ("D", 1.0))
    assert r.on_lsa(Lsa("B", 1, three), "B", 0.0) == []                 # flooded to no other neighbour
    assert r.stats["lsa_accepted"] == 1
    four = three + (("A", 2.0),)
    r.on_lsa(Lsa("B", 2, four), "B", 0.0)
    assert r.stats["lsa_accepted"] == 2                                 # 4 links, 4 nodes: not too many
    five = four + (("C", 2.0),)
    r.on_lsa(Lsa("B", 3, five), "B", 0.0)
    assert r.stats["lsa_bad_link"] == 1 and r.database()["B"].seq == 2


@pytest.mark.parametrize("cost", [1.0, MAX_ETX])
def test_a_link_cost_at_either_bound_is_accepted(cost):
    r = router()
    r.on_lsa(Lsa("B", 1, (("C", cost),)), "B", 0.0)
    assert r.stats["lsa_accepted"] == 1


def test_route_events_carry_the_metric_to_4_places_and_none_without_a_route():
    got = []
    log_changes([RouteChange("C", "B", "C", 2.123456), RouteChange("B", "B", None, None)],
                lambda now, ev, **f: got.append((now, ev, f)), 7.5)
    assert got == [(7.5, "route", {"dst": "C", "old": "B", "new": "C", "metric": 2.1235}),
                   (7.5, "route", {"dst": "B", "old": "B", "new": None, "metric": None})]


# ---- computing routes: when, from what, with which hysteresis -------------------------------------------

from test_linkstate import DIAMOND, Mesh, _diamond_to_d, _set_paths  # noqa: E402  (the mesh of LSAs handed by hand)


def test_due_only_with_a_changed_database_and_recompute_s_after_the_last_computation():
    r = router(heard={"B": 0.0, "C": 0.0})
    assert r.due(0.0) is False and r.due(1e9) is False            # nothing changed
    r.originate(5.0)
    assert r.due(5.0) is True
    r.compute(5.0)
    assert r.due(5.0) is False and r.due(100.0) is False          # computed: clean
    r.originate(5.0)
    assert r.due(5.0) is False and r.due(5.0 + S.recompute_s - 1e-9) is False
    assert r.due(5.0 + S.recompute_s) is True                     # exactly recompute_s later


def test_ready_once_every_node_advertised_or_hold_s_after_the_first_moment():
    r = router(heard={"B": 0.0, "C": 0.0})
    assert r.ready(10.0, 10.0) is False                           # nothing but... nothing at all yet
    assert r.ready(10.0 + S.hold_s - 1e-9, 10.0) is False
    assert r.ready(10.0 + S.hold_s, 10.0) is True                 # a node that never advertised is down
    r.originate(0.0)
    r.on_lsa(Lsa("B", 1, (("A", 1.0),)), "B", 0.0)
    assert r.ready(10.0, 10.0) is False                           # two of the three nodes
    r.on_lsa(Lsa("C", 1, (("A", 1.0),)), "C", 0.0)
    assert r.ready(10.0, 10.0) is True and r.ready(9.99, 10.0) is False


def test_without_its_own_lsa_a_node_computes_no_route_and_keeps_its_initial_ones():
    r = router(initial={"B": "B"})
    assert r.compute(0.0) == [] and r.routes == {"B": "B"}


def test_a_destination_not_yet_reached_does_not_stop_the_others():
    # nodes B (never heard of), C (reached): B comes first in order and keeps its initial route
    r = router(nodes=("A", "B", "C"), neighbours=("C",), heard={"C": 0.0}, initial={"B": "C", "C": "C"})
    r.originate(0.0)
    r.on_lsa(Lsa("C", 1, (("A", 2.0),)), "C", 0.0)
    assert r.compute(0.0) == []                        # C: the route it had; B: not reached, skipped
    assert r.metric == {"C": 1.0} and r.routes == {"B": "C", "C": "C"}


def test_a_lost_route_is_removed_once_and_counted_once():
    mesh = Mesh([["A", "B"]], {})
    mesh.converge(0.0)
    a = mesh.routers["A"]
    assert a.routes == {"B": "B"} and a.stats["route_changes"] == 1
    assert a.compute(100.0) == [RouteChange("B", "B", None, None)]   # everything expired
    assert a.routes == {} and a.metric == {}
    a._dirty = True
    assert a.compute(200.0) == [] and a.stats["route_changes"] == 2


def test_the_first_computation_takes_the_best_path_whatever_the_initial_route():
    # A starts with hop-count routes (D via C); the link state says B is better by less than the margin:
    # hysteresis protects only routes the link state chose, so B at once
    mesh = _diamond_to_d(1.5, 1.6)
    mesh.routers["A"].routes["D"] = "C"
    mesh.converge(0.0)
    assert mesh.routers["A"].routes["D"] == "B"


def test_a_pinned_route_through_a_neighbour_without_an_advertised_link_has_no_metric():
    mesh = Mesh(DIAMOND, {}, pinned={"A": {"D": "C"}})
    mesh.hear(0.0)
    for u in ("A", "B", "D"):                        # C never advertises: A's link to it is one-way
        mesh.advertise(u, 0.0)
    changes = mesh.routers["A"].compute(0.0)
    assert RouteChange("D", None, "C", None) in changes and mesh.routers["A"].routes["D"] == "C"
    assert math.isinf(mesh.routers["A"].metric["D"])


def test_equal_costs_go_to_the_neighbour_listed_first_even_over_a_kept_route():
    mesh = _diamond_to_d(1.0, 1.5)
    mesh.converge(0.0)
    _set_paths(mesh, 1.8, 1.5)
    mesh.converge(0.5)
    assert mesh.routers["A"].routes["D"] == "C"
    _set_paths(mesh, 1.5, 1.5)                       # equal: the tie-break's choice, B, at once
    assert mesh.converge(1.0)["A"] == [RouteChange("D", "C", "B", 2.5)]


def test_a_candidate_interrupted_by_a_tie_starts_its_wait_again():
    mesh = _diamond_to_d(1.6, 1.5)                   # via C 2.5 is best: C
    mesh.converge(0.0)
    assert mesh.routers["A"].routes["D"] == "C"
    _set_paths(mesh, 1.45, 1.5)                      # via B 2.45: better within the margin; candidate at 1 s
    mesh.converge(1.0)
    _set_paths(mesh, 1.5, 1.5)                       # a tie: B at once (tie-break), the candidate forgotten
    mesh.converge(2.0)
    _set_paths(mesh, 1.6, 1.5)                       # C better again within the margin: a new candidate
    assert mesh.converge(3.0)["A"] == []
    assert mesh.converge(3.0 + S.switch_after_s - 0.01)["A"] == []
    assert mesh.converge(3.0 + S.switch_after_s)["A"] == [RouteChange("D", "B", "C", 2.5)]


def test_a_kept_next_hop_only_as_far_as_this_node_is_not_feasible():
    # A-B 1, B-D 29 (A's distance 30); A-C 1, C-D 30: C is as far from D as A is, so it may not be kept,
    # although its path (31) is within the margin of the best (30)
    links = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]
    cost = {("B", "D"): 29.0, ("D", "B"): 29.0, ("C", "D"): 30.0, ("D", "C"): 30.0}
    mesh = Mesh(links, cost)
    mesh.converge(0.0)
    a = mesh.routers["A"]
    assert a.routes["D"] == "B"
    a.routes["D"] = "C"
    a._reached.add("D")
    a._dirty = True
    assert a.compute(0.5) == [RouteChange("D", "C", "B", 30.0)]


def test_a_kept_next_hop_that_no_longer_reaches_the_destination_is_dropped():
    mesh = _diamond_to_d(1.0, 1.2)
    mesh.converge(0.0)
    a = mesh.routers["A"]
    a.routes["D"] = "C"                               # as if C had been chosen
    mesh.cost[("C", "D")] = mesh.cost[("D", "C")] = math.inf   # C's link to D dies
    assert RouteChange("D", "C", "B", 2.0) in mesh.converge(0.5)["A"]


class Table:
    def __init__(self):
        self.replaced = []

    def replace(self, routes):
        self.replaced.append(dict(routes))


def test_apply_changes_installs_the_routes_and_logs_each_change_only_when_there_are_changes():
    from routing.topology.linkstate import apply_changes
    mesh = Mesh([["A", "B"]], {})
    changes = mesh.converge(0.0)["A"]
    t, got = Table(), []
    apply_changes(mesh.routers["A"], changes, t, lambda now, ev, **f: got.append((now, ev, f)), 3.0)
    assert t.replaced == [{"B": "B"}]
    assert got == [(3.0, "route", {"dst": "B", "old": None, "new": "B", "metric": 1.0})]
    apply_changes(mesh.routers["A"], [], t, lambda *a, **k: got.append(a), 4.0)
    assert len(t.replaced) == 1 and len(got) == 1


def test_counters_start_at_zero_and_a_copy_not_flooded_counts_no_flooding():
    r = router()
    assert set(r.stats.values()) == {0} and len(r.stats) == 4 + 4
    assert r.on_lsa(Lsa("B", 1, (("A", 1.0),)), "B", 0.0, flood=False) == []
    assert r.stats["lsa_accepted"] == 1 and r.stats["lsa_flooded"] == 0
    assert r.on_lsa(Lsa("B", 2, (("A", 1.0),)), "B", 0.0) == ["C"] and r.stats["lsa_flooded"] == 1


def test_the_link_cost_is_asked_at_the_moment_of_origination():
    asked = []
    r = LinkStateRouter("A", ("B",), ("A", "B"), S, lambda v, now: asked.append((v, now)) or 2.0, lambda v: 7.0)
    assert r.originate(7.5).links == (("B", 2.0),) and asked == [("B", 7.5)]


def test_an_expired_copy_makes_the_routes_due_again():
    r = router(heard={"B": 0.0, "C": 0.0})
    r.originate(0.0)
    r.on_lsa(Lsa("B", 1, (("A", 1.0),)), "B", 0.0)
    r.compute(0.0)
    assert r.due(1.0) is False
    r.expire(S.hold_s + 1.0)
    assert r.due(S.hold_s + 1.0) is True and "B" not in r.database()


def test_path_costs_add_up_from_zero_at_the_source():
    mesh = Mesh([["A", "B"], ["B", "C"]], {("A", "B"): 2.0, ("B", "C"): 3.0})
    changes = mesh.converge(0.0)["A"]
    assert RouteChange("B", None, "B", 2.0) in changes and RouteChange("C", None, "B", 5.0) in changes


THREE_PATHS = [["A", "B"], ["A", "C"], ["A", "E"], ["B", "D"], ["C", "D"], ["E", "D"]]   # A's neighbours: B, C, E


def _three(mesh, bd, cd, ed):
    mesh.cost.update({("B", "D"): bd, ("D", "B"): bd, ("C", "D"): cd, ("D", "C"): cd, ("E", "D"): ed, ("D", "E"): ed})


@pytest.mark.parametrize("how, bd, cd, ed", [
    ("infeasible", 1.5, 10.0, 1.9),   # C can reach D only back through A: dropped, B (2.5) taken
    ("margin", 1.0, 1.5, 1.9),        # B (2.0) better than C (3.0, still closer) by more than the margin
    ("tie", 2.0, 1.5, 2.5),           # B and C both 3.0: the tie-break's B, at once
])
def test_every_change_of_next_hop_forgets_the_pending_candidate(how, bd, cd, ed):
    mesh = Mesh(THREE_PATHS, {("A", "C"): 1.5, ("C", "A"): 1.5})
    _three(mesh, 3.0, 1.5, 2.5)       # via B 4, via C 3, via E 3.5
    mesh.converge(0.0)
    a = mesh.routers["A"]
    assert a.routes["D"] == "C"
    _three(mesh, 3.0, 1.5, 1.9)       # E: 2.9 against C's 3.0, within the margin: a candidate from 1 s
    assert mesh.converge(1.0)["A"] == []
    _three(mesh, bd, cd, ed)
    assert [c.new for c in mesh.converge(2.0)["A"] if c.dst == "D"] == ["B"], how
    _three(mesh, 2.0, 10.0, 1.8)      # E: 2.8 against B's 3.0, within the margin: a new candidate from 3 s
    assert mesh.converge(3.0)["A"] == []
    assert mesh.converge(3.0 + S.switch_after_s - 0.5)["A"] == []      # not 5 s after the forgotten one
    assert [c.new for c in mesh.converge(3.0 + S.switch_after_s)["A"] if c.dst == "D"] == ["E"]


def test_better_by_exactly_the_margin_is_not_better_by_the_margin():
    settings = LinkStateSettings(margin=0.5)
    mesh = _diamond_to_d(5.0, 1.5, settings)          # via B 6, via C 1.5 + 1.5 = 3: C
    mesh.cost.update({("A", "C"): 1.5, ("C", "A"): 1.5})
    mesh.converge(0.0)
    assert mesh.routers["A"].routes["D"] == "C"
    _set_paths(mesh, 1.0, 1.5)                        # via B 2: 2 x 1.5 = 3, not below C's 3 (C still closer)
    assert mesh.converge(1.0)["A"] == []
    assert mesh.routers["A"].routes["D"] == "C"
