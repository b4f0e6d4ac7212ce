"""routing/topology/graph.py and routing/topology/routes.py at their edges (issue 30, mutation run; issue 22 for the rules).

The graph's module docstring: links undirected, kept once each with the earlier node first, sorted by node
order; neighbours in node order; least-cost next hops by hop count or per-direction link costs (ETX), a link
of infinite cost carrying no route, a cost <= 0 refused; ties to the neighbour listed first. routes.py:
neighbours reached directly unless a route says otherwise, overrides applied and checked, every walk reaching
its destination within the node count, the summaries by name in node order.
"""
from __future__ import annotations

import math

import pytest

from routing.topology.graph import METRICS, MeshGraph, least_cost_next_hops, path_of
from routing.topology.routes import (RouteError, RouteTable, chain_routes, graph_of, graph_tables, route_problems,
                            route_summary, topology_routes)


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


def test_a_route_table_reaches_neighbours_directly_and_checks_its_routes():
    t = RouteTable({"x": "n1"}, ["n1", "n2"])
    assert t.next_hop("n2") == "n2" and t.next_hop("x") == "n1" and t.next_hop("y") is None
    assert t.as_dict() == {"n1": "n1", "n2": "n2", "x": "n1"}
    t.replace({"n2": "n1"})
    assert t.as_dict() == {"n1": "n1", "n2": "n1"}
    with pytest.raises(ValueError, match=r"^route to x via n3: n3 is not a neighbour \(n1, n2\)$"):
        t.replace({"x": "n3"})
    assert t.as_dict() == {"n1": "n1", "n2": "n1"}                   # a refused replacement changes nothing


def test_chain_routes_by_address():
    t = chain_routes(["10.0.0.1", "10.0.0.2", "10.0.0.3"])
    assert sorted(t) == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert t["10.0.0.1"].next_hop("10.0.0.3") == "10.0.0.2" and t["10.0.0.3"].next_hop("10.0.0.1") == "10.0.0.2"


def test_graph_of_a_topology():
    assert graph_of({"chain": ["A", "B"]}).links == (("A", "B"),)
    assert graph_of({"nodes": ["A", "B", "C"], "links": [["A", "C"]]}).links == (("A", "C"),)
    assert graph_of({"chain": ["B", "A"], "links": [["A", "B"]]}).nodes == ("B", "A")


ADDR = {"A": "a", "B": "b", "C": "c", "D": "d"}


def test_overrides_go_on_top_of_the_least_cost_routes():
    tables = graph_tables(DIAMOND, ADDR, overrides={"A": {"D": "C"}})
    assert tables["A"].next_hop("d") == "c" and tables["B"].next_hop("c") == "a"
    assert tables["A"].neighbours == ("b", "c")


def test_every_problem_of_a_topology_is_named():
    topo = {"nodes": list("ABCD"), "links": [list(l) for l in DIAMOND.links], "addresses": ADDR,
            "routes": {"A": {"A": "B", "D": "X"}}}
    assert route_problems(topo) == [("topology.routes.A.A", "a route from A to itself is refused"),
                                    ("topology.routes.A.D", "next hop X is not a neighbour of A (neighbours: B, C)")]
    with pytest.raises(RouteError) as e:
        topology_routes(topo)
    assert str(e.value).startswith("topology.routes.A.A: a route from A to itself is refused; topology.routes.A.D")
    split = {"nodes": ["A", "B", "C"], "links": [["A", "B"]], "addresses": {"A": "a", "B": "b", "C": "c"}}
    problems = route_problems(split)
    assert ("topology.routes.A", "no route from A to C (path A)") in problems
    assert ("topology.routes.C", "no route from C to A (path C)") in problems
    loop = {"chain": ["A", "B", "C"], "addresses": {"A": "a", "B": "b", "C": "c"}, "routes": {"B": {"C": "A"}}}
    assert ("topology.routes.A", "routing loop from A to C: A -> B -> A -> B") in route_problems(loop)


def test_the_summary_names_nodes_in_node_order():
    topo = {"nodes": list("ABCD"), "links": [list(l) for l in DIAMOND.links], "addresses": ADDR}
    tables = topology_routes(topo)
    s = route_summary(topo, tables)
    assert list(s["A"]) == ["B", "C", "D"] and s["A"] == {"B": "B", "C": "C", "D": "B"}
    assert list(s) == ["A", "B", "C", "D"]


def test_links_sort_by_their_first_node_then_their_second():
    g = MeshGraph.build(["A", "B", "C", "D"], [["B", "C"], ["A", "D"]])
    assert g.links == (("A", "D"), ("B", "C"))


def test_a_lone_node_is_a_component_of_its_own():
    g = MeshGraph.build(["A", "B", "C"], [["B", "C"]])
    assert g.components() == [["A"], ["B", "C"]]


LOSSY_AB = {("A", "B"): 4.0, ("B", "A"): 4.0}


def test_the_link_costs_reach_the_route_tables():
    topo = {"nodes": list("ABCD"), "links": [list(l) for l in DIAMOND.links], "addresses": ADDR}
    cost = lambda u, v: LOSSY_AB.get((u, v), 1.0)
    assert graph_tables(DIAMOND, ADDR, cost)["A"].next_hop("b") == "c"
    assert topology_routes(topo, cost)["A"].next_hop("b") == "c"
    assert topology_routes(topo)["A"].next_hop("b") == "b"


def test_a_route_into_a_node_without_one_names_the_path_walked():
    topo = {"chain": ["A", "B", "C", "D"], "addresses": {"A": "a", "B": "b", "C": "c", "D": "d"},
            "routes": {"A": {"D": "B"}}}
    dead = lambda u, v: math.inf if (u, v) == ("C", "D") else 1.0   # (a neighbour is still reached directly)
    with pytest.raises(RouteError) as e:
        topology_routes(topo, dead)
    assert ("topology.routes.B", "no route from B to D (path A -> B)") in e.value.problems


def test_the_summary_follows_node_order_not_address_order():
    addrs = {"A": "10.0.0.9", "B": "10.0.0.8", "C": "10.0.0.7"}
    topo = {"chain": ["A", "B", "C"], "addresses": addrs}
    s = route_summary(topo, topology_routes(topo))
    assert list(s["B"]) == ["A", "C"] and list(s["A"]) == ["B", "C"]


def test_the_summary_leaves_out_routes_that_name_no_node():
    # a table may hold an address that is no node's (a route learned at run time, a table built by hand):
    # the summary is by node name, so such a destination or next hop has no entry, and the rest keep node order
    addrs = {"A": "a", "B": "b", "C": "c"}
    topo = {"chain": ["A", "B", "C"], "addresses": addrs}
    tables = {"A": RouteTable({"10.9.9.9": "b", "c": "b"}, ["b"]),
              "B": RouteTable({}, ["c", "a", "10.8.8.8"])}
    assert route_summary(topo, tables) == {"A": {"B": "B", "C": "B"}, "B": {"A": "A", "C": "C"}}
    assert list(route_summary(topo, tables)["B"]) == ["A", "C"]
