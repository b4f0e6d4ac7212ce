"""Issue 13, item 5: routes are checked before anything starts; overrides applied or refused."""
import pytest

from experiments.schema import ExperimentError, load_experiment
from routing.topology.routes import RouteError, route_problems, topology_routes

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
