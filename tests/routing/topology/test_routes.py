"""Issue 13, item 5: routes are checked before anything starts; overrides applied or refused."""
from __future__ import annotations

import pytest
from experiments.schema import ExperimentError, load_experiment
from routing.topology.routes import (RouteError, route_problems, topology_routes, RouteTable, chain_routes,
                                     graph_of, graph_tables, route_summary)
import math
from tests.routing.topology.test_graph import DIAMOND


ADDR = {"A": "10.2.1.1", "B": "10.2.1.2", "C": "10.2.1.3", "D": "10.2.1.4"}


def topo(routes=None):
    return {"chain": ["A", "B", "C", "D"], "addresses": dict(ADDR), "routes": routes or {}}


def test_chain_routes_are_sound():
    assert route_problems(topo()) == []
    t = topology_routes(topo())
    assert t["A"].next_hop(ADDR["D"]) == ADDR["B"] and t["D"].next_hop(ADDR["A"]) == ADDR["C"]


def test_an_override_for_a_neighbour_destination_is_applied_not_dropped():
    t = topology_routes(topo({"B": {"C": "C", "D": "C"}}))
    assert t["B"].next_hop(ADDR["C"]) == ADDR["C"]
    # a neighbour destination through the other neighbour: applied (it used to be dropped silently),
    # so the loop it makes in a chain (B -> A -> B) is reported
    with pytest.raises(RouteError) as e:
        topology_routes(topo({"B": {"C": "A"}}))
    assert any("loop" in why for _, why in e.value.problems)


def test_a_next_hop_that_is_not_a_neighbour_is_refused_with_a_reason():
    problems = route_problems(topo({"A": {"D": "C"}}))
    assert problems == [("topology.routes.A.D", "next hop C is not a neighbour of A (neighbours: B)")]


def test_a_route_to_itself_is_refused():
    assert route_problems(topo({"A": {"A": "B"}}))[0][0] == "topology.routes.A.A"


def test_a_loop_is_found_within_the_node_count():
    problems = route_problems(topo({"B": {"D": "A"}}))   # A -> B -> A -> B ...
    assert any("routing loop from A to D" in why for _, why in problems)
    assert any("routing loop from B to D" in why for _, why in problems)


def _doc(routes):
    return {"name": "t", "topology": {"chain": ["A", "B", "C", "D"], "routes": routes},
            "flows": [{"sender": "A", "receiver": "D", "segments": 10}]}


def test_the_schema_reports_route_problems_before_anything_starts():
    with pytest.raises(ExperimentError) as e:
        load_experiment(_doc({"A": {"D": "C"}}), "t.yaml")
    assert any("topology.routes.A.D" in str(err) and "not a neighbour" in str(err) for err in e.value.errors)
    with pytest.raises(ExperimentError) as e:
        load_experiment(_doc({"C": {"A": "D"}}), "t.yaml")
    assert any("routing loop" in str(err) for err in e.value.errors)
    load_experiment(_doc({"B": {"C": "C"}}), "t.yaml")   # a sound override validates


# ====================================================================================================
# routing/topology/graph.py and routing/topology/routes.py at their edges (issue 30, mutation run; issue 22 for the rules).
#
# The graph's module docstring: links undirected, kept once each with the earlier node first, sorted by node
# order; neighbours in node order; least-cost next hops by hop count or per-direction link costs (ETX), a link
# of infinite cost carrying no route, a cost <= 0 refused; ties to the neighbour listed first. routes.py:
# neighbours reached directly unless a route says otherwise, overrides applied and checked, every walk reaching
# its destination within the node count, the summaries by name in node order.


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


SHORT_ADDR = {"A": "a", "B": "b", "C": "c", "D": "d"}


def test_overrides_go_on_top_of_the_least_cost_routes():
    tables = graph_tables(DIAMOND, SHORT_ADDR, overrides={"A": {"D": "C"}})
    assert tables["A"].next_hop("d") == "c" and tables["B"].next_hop("c") == "a"
    assert tables["A"].neighbours == ("b", "c")


def test_every_problem_of_a_topology_is_named():
    topo = {"nodes": list("ABCD"), "links": [list(l) for l in DIAMOND.links], "addresses": SHORT_ADDR,
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
    topo = {"nodes": list("ABCD"), "links": [list(l) for l in DIAMOND.links], "addresses": SHORT_ADDR}
    tables = topology_routes(topo)
    s = route_summary(topo, tables)
    assert list(s["A"]) == ["B", "C", "D"] and s["A"] == {"B": "B", "C": "C", "D": "B"}
    assert list(s) == ["A", "B", "C", "D"]


LOSSY_AB = {("A", "B"): 4.0, ("B", "A"): 4.0}


def test_the_link_costs_reach_the_route_tables():
    topo = {"nodes": list("ABCD"), "links": [list(l) for l in DIAMOND.links], "addresses": SHORT_ADDR}
    cost = lambda u, v: LOSSY_AB.get((u, v), 1.0)
    assert graph_tables(DIAMOND, SHORT_ADDR, cost)["A"].next_hop("b") == "c"
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
