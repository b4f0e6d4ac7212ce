"""routing/linkstate.py's rules at their edges (issue 30, mutation run; the rules are the module docstring's).

A neighbour heard exactly ``dead_s`` ago is still live (NEIGHB_HOLD_TIME, RFC 3626 Sec. 18.3: down once
*more* than that has passed); an advertised ETX is rounded to the wire's hundredths and lies in
[1, MAX_ETX]; the sequence number wraps from the u32 maximum to 1; a copy is forgotten once *more* than
``hold_s`` has passed without a refresh (TOP_HOLD_TIME); an LSA naming more links than there are nodes is
refused; the route events carry the metric rounded to 4 places.
"""
from __future__ import annotations

import math

import pytest

from routing.linkstate import MAX_ETX, MAX_SEQ, LinkStateRouter, LinkStateSettings, Lsa, RouteChange, log_changes

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
