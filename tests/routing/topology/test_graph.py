"""routing/topology/graph.py at its edges (issue 30, mutation run; issue 22 for the rules): links, components,
least-cost next hops and path_of.
"""
from __future__ import annotations

import math
import pytest
from routing.topology.graph import METRICS, MeshGraph, least_cost_next_hops, path_of


# ====================================================================================================
# routing/topology/graph.py and routing/topology/routes.py at their edges (issue 30, mutation run; issue 22 for the rules).
#
# The graph's module docstring: links undirected, kept once each with the earlier node first, sorted by node
# order; neighbours in node order; least-cost next hops by hop count or per-direction link costs (ETX), a link
# of infinite cost carrying no route, a cost <= 0 refused; ties to the neighbour listed first. routes.py:
# neighbours reached directly unless a route says otherwise, overrides applied and checked, every walk reaching
# its destination within the node count, the summaries by name in node order.

def test_links_are_kept_once_each_earlier_node_first_in_node_order():
    g = MeshGraph.build(["C", "A", "B"], [["B", "A"], ["A", "B"], ["A", "C"], ["C", "B"]])
    assert g.nodes == ("C", "A", "B")
    assert g.links == (("C", "A"), ("C", "B"), ("A", "B"))
    assert g.neighbours("A") == ["C", "B"] and g.neighbours("B") == ["C", "A"] and g.neighbours("X") == []
    assert MeshGraph.chain(["x", "y", "z"]).links == (("x", "y"), ("y", "z"))
    assert MeshGraph.chain(["x", "y", "z"]).is_chain() and not g.is_chain()
    assert METRICS == ("hops", "etx")


def test_components_in_node_order():
    g = MeshGraph.build(["D", "A", "C", "B"], [["A", "B"], ["C", "D"]])
    assert g.components() == [["D", "C"], ["A", "B"]]
    assert set(map(frozenset, g.nx().edges())) == {frozenset("AB"), frozenset("CD")}
    assert list(g.nx().nodes()) == ["D", "A", "C", "B"]


DIAMOND = MeshGraph.build(["A", "B", "C", "D"], [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]])


def test_ties_go_to_the_neighbour_listed_first_and_costs_are_per_direction():
    hops = least_cost_next_hops(DIAMOND)
    assert hops["A"]["D"] == "B" and hops["D"]["A"] == "B" and hops["B"]["C"] == "A"
    cost = {("A", "B"): 4.0}                                        # only A->B is lossy
    etx = least_cost_next_hops(DIAMOND, lambda u, v: cost.get((u, v), 1.0))
    assert etx["A"]["D"] == "C" and etx["A"]["B"] == "C"           # A->B 4 against A-C-D-B 3
    assert etx["D"]["A"] == "B" and etx["B"]["A"] == "A"           # the other way the link costs 1
    assert path_of(etx, "A", "B") == ["A", "C", "D", "B"]
    tie = least_cost_next_hops(DIAMOND, lambda u, v: 3.0 if (u, v) == ("A", "B") else 1.0)
    assert tie["A"]["B"] == "B"                                    # 3 either way: the first neighbour


def test_equal_etx_paths_within_the_tolerance_tie():
    cost = {("A", "B"): 1.0 + 1e-12, ("B", "D"): 1.0}
    etx = least_cost_next_hops(DIAMOND, lambda u, v: cost.get((u, v), 1.0))
    assert etx["A"]["D"] == "B"                                     # 2 + 1e-12 and 2 are one cost


def test_an_infinite_link_carries_no_route_and_a_cost_must_be_positive():
    dead = least_cost_next_hops(MeshGraph.chain(["A", "B", "C"]), lambda u, v: math.inf if (u, v) == ("B", "C") else 1.0)
    assert dead["A"] == {"B": "B"} and dead["B"] == {"A": "A"} and dead["C"] == {"B": "B", "A": "B"}
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match=r"^link A->B: cost must be > 0, got"):
            least_cost_next_hops(MeshGraph.chain(["A", "B"]), lambda u, v, bad=bad: bad)


def test_path_of_follows_the_hops_and_says_none_for_a_gap_or_a_loop():
    assert path_of({"A": {"C": "B"}, "B": {"C": "C"}}, "A", "C") == ["A", "B", "C"]
    assert path_of({"A": {"C": "B"}}, "A", "C") is None
    assert path_of({"A": {"C": "B"}, "B": {"C": "A"}}, "A", "C") is None
    assert path_of({}, "A", "A") == ["A"]


def test_links_sort_by_their_first_node_then_their_second():
    g = MeshGraph.build(["A", "B", "C", "D"], [["B", "C"], ["A", "D"]])
    assert g.links == (("A", "D"), ("B", "C"))


def test_a_lone_node_is_a_component_of_its_own():
    g = MeshGraph.build(["A", "B", "C"], [["B", "C"]])
    assert g.components() == [["A"], ["B", "C"]]
