"""Issue 22, items 1, 2 and 4: a topology is a graph; routes by hop count or ETX over it; crossing flows."""
from tests import DATA
import csv
import json
import math
import random
import networkx as nx
import pandas as pd
import pytest
from experiments.build import build_node, route_tables
from etx.estimator import LinkEstimator
from experiments.medium_spec import positions
from experiments.runner import check_backend_support, run_experiment
from experiments.schema import ExperimentError, load_experiment
from routing.topology.graph import MeshGraph, least_cost_next_hops, path_of
from routing.topology.routes import route_summary


DIAMOND = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]


GRID = [[f"N{r}{c}", f"N{r}{c + 1}"] for r in range(3) for c in range(2)] + \
       [[f"N{r}{c}", f"N{r + 1}{c}"] for r in range(2) for c in range(3)]


def load(doc, name="t.yaml"):
    return load_experiment(dict({"name": "t", "backend": "sim"}, **doc), name)


def errors(doc) -> dict[str, str]:
    with pytest.raises(ExperimentError) as e:
        load(doc)
    return {err.path: err.message for err in e.value.errors}


# ---- item 1: the graph in the YAML --------------------------------------------------------------

def test_links_give_nodes_in_order_and_sorted_pairs():
    cfg = load({"topology": {"links": [["D", "C"], ["A", "B"], ["B", "D"], ["C", "A"]]}}).variants[0].config
    assert cfg["topology"]["nodes"] == ["D", "C", "A", "B"]          # order of first mention
    assert cfg["topology"]["links"] == [["D", "C"], ["D", "B"], ["C", "A"], ["A", "B"]]
    assert cfg["topology"]["chain"] is None
    assert cfg["topology"]["addresses"]["D"] == "10.2.1.1"


def test_the_chain_shorthand_and_the_default_keep_their_meaning():
    for doc in ({}, {"topology": {"chain": ["A", "B", "C", "D"]}}):
        topo = load(doc).variants[0].config["topology"]
        assert topo["chain"] == ["A", "B", "C", "D"] and topo["nodes"] == ["A", "B", "C", "D"]
        assert topo["links"] == [["A", "B"], ["B", "C"], ["C", "D"]]


def test_chain_runs_on_the_sim_are_byte_identical_to_before_graphs(tmp_path):
    """tests/data/chain_golden_summary.csv was written by the code before topologies were graphs
    (commit 91db6f4) from this document: a chain, two flows, A-SPAN, the dcf medium.  Rewritten
    twice on purpose by issue 28: cwnd grows only while cwnd-limited (item 7: cwnd_median and
    cwnd_mean changed, nothing else) and the columns that identify a row come first (item 6:
    `flow` moved to the second column, every cell the same text); and by issue 39, when the sender took an RTT
    sample from every ACK of a segment sent once (tcp_user/sent.py) instead of one timed segment at a time:
    the lossy rows' timing columns changed (durations, losses, cwnd, what the caches held)."""
    doc = {
        "name": "golden-chain", "backend": "sim", "seed": 3, "repetitions": 2,
        "loss": {"default": {"model": "bernoulli", "rate": 0.005}}, "etx": {"settle_s": 2.0},
        "flows": [{"sender": "A", "receiver": "D", "segments": 1200}, {"sender": "D", "receiver": "B", "segments": 600}],
        "variants": [
            {"name": "sack", "tcp": {"variant": "sack"}},
            {"name": "aspan", "tcp": {"variant": "sack"}, "snoop": {"policy": "adaptive", "pkt_qos": 0.99}},
            {"name": "medium", "tcp": {"variant": "sack"}, "medium": {"model": "dcf"}, "snoop": {"policy": "adaptive"}},
        ],
    }
    d = run_experiment(load_experiment(doc, "golden.yaml"), out=tmp_path, jobs=1, plot=False, progress=lambda s: None)
    golden = DATA / "chain_golden_summary.csv"
    # The columns added since (issue 23: route_changes, reroute_s, recovery_s; issue 40: what a flow delivered)
    # come after the golden's, whose every cell must be the same text; static routes on a chain change nothing
    # and fail nothing; every flow finished, so it delivered all its segments in duration_s, at goodput_mbps.
    with golden.open() as f:
        want = list(csv.reader(f))
    with (d / "summary.csv").open() as f:
        got = list(csv.reader(f))
    width = len(want[0])
    assert got[0][:width] == want[0] and got[0][width:] == [
        "route_changes", "reroute_s", "recovery_s", "delivered_bytes", "delivered_segments", "delivered_share",
        "ran_s", "delivered_mbps", "route_changes_settling"]
    assert [row[:width] for row in got] == want
    col = {name: i for i, name in enumerate(got[0])}
    for row in got[1:]:
        assert row[width:width + 3] == ["0", "", ""]
        assert row[col["delivered_bytes"]] == str(int(row[col["segments"]]) * 1000)
        assert row[col["delivered_segments"]] == row[col["segments"]] and row[col["delivered_share"]] == "1"
        assert row[col["ran_s"]] == row[col["duration_s"]] and row[col["delivered_mbps"]] == row[col["goodput_mbps"]]
        assert row[col["route_changes_settling"]] == "0"


def test_wrong_graphs_are_refused_all_at_once_with_their_field_paths():
    found = errors({"topology": {"nodes": ["A", "B", "C"], "links": [["A", "B"], ["B", "B"], ["B", "A"], ["A", "Z"],
                                                                     ["A"]]}})
    assert "itself" in found["topology.links[1]"]
    assert "duplicate link B-A" in found["topology.links[2]"] and "topology.links[0]" in found["topology.links[2]"]
    assert "unknown node 'Z'" in found["topology.links[3]"]
    assert "pair of node names" in found["topology.links[4]"]
    found = errors({"topology": {"chain": ["A", "B"], "links": [["A", "B"]]}})
    assert "not both" in found["topology.links"]


def test_a_graph_that_is_not_connected_is_refused_and_so_is_a_flow_across_it():
    found = errors({"topology": {"links": [["A", "B"], ["C", "D"]]}, "flows": [{"sender": "A", "receiver": "D"}]})
    assert found["topology.links"] == "the graph is not connected: [A, B]; [C, D]"
    assert "A and D are not joined" in found["flows[0]"]


@pytest.mark.parametrize("medium,field", [({"spacing_m": 300}, "medium.spacing_m"),
                                          ({"positions": {"A": [0, 0], "B": [200, 0], "C": [200, 200],
                                                          "D": [900, 0]}}, "medium.positions"),
                                          ({"placement": "random", "area_m": [9000, 9000]}, "medium.area_m"),
                                          ({"reception": "sinr", "spacing_m": 3000}, "medium.spacing_m")])
def test_links_the_radio_gives_that_leave_the_mesh_apart_name_the_field_that_placed_the_nodes(medium, field):
    """Nodes without links on a dcf medium: every pair in range is a link; a mesh the radio leaves apart is
    refused at the field the user wrote (issue 40, item 6: it was reported at topology.links)."""
    found = errors({"topology": {"nodes": ["A", "B", "C", "D"]}, "medium": {"model": "dcf", **medium},
                    "flows": [{"sender": "A", "receiver": "D"}, {"sender": "C", "receiver": "A"}]})
    assert "topology.links" not in found
    assert "leave the graph not connected" in found[field] and "out of communication range" in found[field]
    assert ("range_m" in found[field]) == (medium.get("reception") != "sinr")
    assert "A and D are not joined" in found["flows[0]"]


def test_nodes_without_links_need_a_medium_to_give_them():
    found = errors({"topology": {"nodes": ["A", "B"]}})
    assert "expected links" in found["topology.links"]


# ---- item 2: routes ----------------------------------------------------------------------------

def test_hop_routes_break_ties_by_node_order():
    g = MeshGraph.build(["A", "B", "C", "D"], DIAMOND)
    assert path_of(least_cost_next_hops(g), "A", "D") == ["A", "B", "D"]
    g = MeshGraph.build(["A", "C", "B", "D"], DIAMOND)        # C listed first: the other path
    assert path_of(least_cost_next_hops(g), "A", "D") == ["A", "C", "D"]


@pytest.mark.parametrize("seed", range(8))
def test_every_route_of_a_random_graph_is_a_shortest_path_and_loop_free(seed):
    rng = random.Random(seed)
    nodes = [f"N{i}" for i in range(12)]
    g = nx.connected_watts_strogatz_graph(12, 4, 0.5, seed=seed)
    links = [[nodes[a], nodes[b]] for a, b in g.edges]
    mesh = MeshGraph.build(nodes, links)
    cost = {(a, b): rng.choice([1.0, 1.2, 3.0]) for a, b in links} | {(b, a): rng.choice([1.0, 2.5]) for a, b in links}
    for link_cost in (None, lambda u, v: cost[(u, v)]):
        hops = least_cost_next_hops(mesh, link_cost)
        dg = nx.DiGraph()
        for (u, v), c in cost.items():
            dg.add_edge(u, v, w=1.0 if link_cost is None else c)
        for s in nodes:
            for d in nodes:
                if s == d:
                    continue
                p = path_of(hops, s, d)
                assert p is not None and p[0] == s and p[-1] == d
                got = sum(dg[u][v]["w"] for u, v in zip(p, p[1:]))
                assert math.isclose(got, nx.shortest_path_length(dg, s, d, weight="w"))


def test_an_override_may_take_any_graph_neighbour_and_is_still_checked():
    doc = {"topology": {"links": DIAMOND, "routes": {"A": {"D": "C"}}}}
    cfg = load(doc).variants[0].config
    addrs = cfg["topology"]["addresses"]
    assert route_tables(cfg)["A"].next_hop(addrs["D"]) == addrs["C"]   # the example: was refused on a chain
    found = errors({"topology": {"links": DIAMOND, "routes": {"B": {"C": "C"}}}})
    assert "not a neighbour of B (neighbours: A, D)" in found["topology.routes.B.C"]
    found = errors({"topology": {"links": DIAMOND, "routes": {"B": {"D": "A"}, "A": {"D": "B"}}}})
    assert any("routing loop" in why for why in found.values())


def test_etx_costs_take_the_lossy_link_out_of_the_route():
    cfg = load({"topology": {"links": DIAMOND}, "routing": {"metric": "etx"}}).variants[0].config
    half = LinkEstimator(window=10)
    for seq in (0, 1, 3, 5, 7):                   # probes 0-7 sent, 2, 4, 6 lost: dr 5/8; df 0.8 reported
        half.on_probe(seq, 0.8, now=0.0)
    assert half.etx() == pytest.approx(2.0)      # 1 / (df x dr) = 1 / (0.8 x 5/8), De Couto et al. Sec. 3
    costs = {(u, v): 1.0 for a, b in DIAMOND for u, v in ((a, b), (b, a))}
    costs[("A", "B")] = costs[("B", "A")] = half.etx()
    hops = route_summary(cfg["topology"], route_tables(cfg, lambda u, v: costs[(u, v)]))
    assert path_of(hops, "A", "D") == ["A", "C", "D"] and path_of(hops, "D", "A") == ["D", "C", "A"]
    assert hops["A"]["B"] == "B"     # 2.0 direct beats 3.0 round the diamond
    dead = LinkEstimator(window=10)
    dead.on_probe(0, 0.0, now=0.0)               # the neighbour heard none of ours: df 0
    assert dead.etx() == math.inf
    costs[("A", "B")] = dead.etx()               # a dead link costs inf: no route crosses it
    assert path_of(route_summary(cfg["topology"], route_tables(cfg, lambda u, v: costs[(u, v)])), "A", "B") \
        == ["A", "C", "D", "B"]


def test_route_overrides_are_refused_with_link_state_routing():
    for routing in ({"metric": "etx"}, {"dynamic": True}):
        found = errors({"topology": {"links": DIAMOND, "routes": {"A": {"D": "B"}}}, "routing": routing})
        assert "cannot be mixed with link-state routing" in found["topology.routes"]
    assert load({"topology": {"links": DIAMOND, "routes": {"A": {"D": "B"}}}}).variants[0].config["topology"]["routes"]


def test_link_state_routing_is_accepted_on_every_backend(tmp_path, capsys):
    from experiments.cli import main
    f = tmp_path / "e.yaml"
    for backend, extra in (("sim", {}), ("local", {}), ("netns", {}), ("pi", {"pi": {"data_plane": "kernel"}}),
                           ("pi", {"pi": {"data_plane": "udp"}})):
        f.write_text(json.dumps({"backend": backend, "topology": {"links": DIAMOND}, **extra,
                                 "routing": {"metric": "etx", "dynamic": True}}))
        assert main(["validate", str(f)]) == 0, (backend, capsys.readouterr().err)
        check_backend_support(load_experiment(json.loads(f.read_text()), str(f)), backend)


# ---- the medium gives the graph ---------------------------------------------------------------------

def test_positions_give_the_links_and_listed_links_must_be_in_range():
    doc = {"topology": {"nodes": ["A", "B", "C", "D"]},
           "medium": {"model": "dcf", "positions": {"A": [0, 0], "B": [200, 0], "C": [0, 200], "D": [200, 200]}},
           "flows": [{"sender": "A", "receiver": "D"}]}
    cfg = load(doc).variants[0].config
    assert cfg["topology"]["links"] == [["A", "B"], ["A", "C"], ["B", "D"], ["C", "D"]]   # diagonals 283 m > 250 m
    found = errors(dict(doc, topology={"links": DIAMOND + [["A", "D"]]}))
    assert "linked (topology.links) A and D: D does not hear A" in found["medium.positions.D"]


def test_random_placement_is_seeded_and_the_same_in_every_repetition():
    doc = {"topology": {"nodes": [f"N{i}" for i in range(12)]},
           "medium": {"model": "dcf", "placement": "random", "area_m": [500, 500], "placement_seed": 4},
           "flows": [{"sender": "N0", "receiver": "N11"}]}
    a, b = load(doc).variants[0].config, load(doc).variants[0].config
    assert positions(a) == positions(b)
    assert all(0 <= x <= 500 and 0 <= y <= 500 for x, y in positions(a).values())
    other = load(dict(doc, medium=dict(doc["medium"], placement_seed=5))).variants[0].config
    assert positions(other) != positions(a)
    assert MeshGraph.build(a["topology"]["nodes"], a["topology"]["links"]).components() == [a["topology"]["nodes"]]


def test_a_grid_without_positions_hears_only_its_links():
    from experiments.medium_spec import topology
    cfg = load({"topology": {"links": GRID}, "medium": {"model": "dcf"},
                "flows": [{"sender": "N00", "receiver": "N22"}]}).variants[0].config
    assert positions(cfg) is None
    hears = topology(cfg).hears
    assert hears["N11"] == frozenset({"N01", "N10", "N12", "N21"})


# ---- loss per link ----------------------------------------------------------------------------------

def test_link_losses_resolve_to_directed_keys_most_specific_first():
    cfg = load({"topology": {"links": DIAMOND}, "loss": {"default": {"model": "bernoulli", "rate": 0.01},
                                                         "links": {"A-B": {"rate": 0.2}, "B>A": {"model": "none"}}}}
               ).variants[0].config
    assert cfg["loss"]["links"]["A>B"] == {"model": "bernoulli", "rate": 0.2, "down": []}
    assert cfg["loss"]["links"]["B>A"] == {"model": "none", "down": []}
    found = errors({"topology": {"links": DIAMOND}, "loss": {"links": {"A-D": {"model": "none"}, "A+B": {}}}})
    assert "not linked" in found["loss.links"]
    assert "expected \"A-B\" or \"A>B\"" in found["loss.links.A+B"]


def test_a_link_loss_applies_to_what_crosses_that_link_only():
    from routing.overlay.wire import PROBE, Packet, Probe
    cfg = load({"topology": {"links": DIAMOND}, "loss": {"links": {"A>B": {"model": "bernoulli", "rate": 1.0}}}}
               ).variants[0].config
    addrs = cfg["topology"]["addresses"]
    node = build_node(cfg, "B", 1, lambda *a, **k: None, 0.0, apps=False)

    def probe(frm):
        return Packet(PROBE, addrs[frm], 0, addrs["B"], 0, probe=Probe(0))
    assert node.engine.on_packet(probe("A"), 1.0, addrs["A"])[0].reason == "loss"
    assert not any(getattr(a, "reason", None) == "loss" for a in node.engine.on_packet(probe("D"), 1.0, addrs["D"]))
    assert node.engine.drops["loss"] == 1


# ---- items 2 and 4 on the sim: ETX chooses the path; crossing flows ------------------------------------

def test_etx_routing_avoids_the_lossy_relay_and_hops_does_not(tmp_path):
    doc = {"name": "dia", "backend": "sim", "repetitions": 1, "etx": {"settle_s": 3.0},
           "topology": {"links": DIAMOND},
           "loss": {"default": {"model": "bernoulli", "rate": 0.005}, "nodes": {"B": {"rate": 0.1}}},
           "flows": [{"sender": "A", "receiver": "D", "segments": 600}], "tcp": {"variant": "sack"},
           "variants": [{"name": "hops"}, {"name": "etx", "routing": {"metric": "etx"}}]}
    d = run_experiment(load_experiment(doc, "dia.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    hops = json.loads((d / "hops" / "rep0" / "meta.json").read_text())["routing"]
    etx = json.loads((d / "etx" / "rep0" / "meta.json").read_text())["routing"]
    assert hops["paths"] == [["A", "B", "D"]] and not hops["measured"]
    assert etx["paths"] == [["A", "C", "D"]] and etx["measured"]
    assert etx["link_etx"]["A>B"] > 1.05 > etx["link_etx"]["A>C"]
    fwd = {n: sum(1 for line in (d / "etx" / "rep0" / f"{n}.log").open() if '"fwd"' in line) for n in "BC"}
    assert fwd["B"] == 0 and fwd["C"] >= 600
    df = pd.read_csv(d / "summary.csv")
    assert df["integrity_ok"].all()
    assert df.set_index("variant").loc["etx", "goodput_mbps"] > df.set_index("variant").loc["hops", "goodput_mbps"]


@pytest.mark.parametrize("medium", ["none", "dcf"])
def test_crossing_flows_on_a_grid_each_get_their_row(tmp_path, medium):
    doc = {"name": "grid", "backend": "sim", "repetitions": 1, "etx": {"settle_s": 1.0},
           "topology": {"links": GRID}, "medium": {"model": medium},
           "loss": {"default": {"model": "bernoulli", "rate": 0.005}},
           "snoop": {"policy": "adaptive", "pkt_qos": 0.99}, "tcp": {"variant": "sack"},
           "flows": [{"sender": "N01", "receiver": "N21", "segments": 300},
                     {"sender": "N10", "receiver": "N12", "segments": 300}]}
    d = run_experiment(load_experiment(doc, "grid.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    meta = json.loads((d / "default" / "rep0" / "meta.json").read_text())
    assert meta["routing"]["paths"] == [["N01", "N11", "N21"], ["N10", "N11", "N12"]]   # they cross at N11
    df = pd.read_csv(d / "summary.csv")
    assert len(df) == 2 and df["integrity_ok"].all() and (df["status"] == "ok").all()
    centre = [json.loads(line) for line in (d / "default" / "rep0" / "N11.log").open()]
    flows = {e["flow"] for e in centre if e.get("ev") == "tx" and e.get("kind") == "fwd"}
    assert len(flows) == 2    # the centre relays both flows' data


def test_a_kernel_data_plane_refuses_link_losses_before_the_start(tmp_path, capsys):
    from experiments.cli import main
    f = tmp_path / "k.yaml"
    f.write_text(json.dumps({"backend": "netns", "topology": {"links": DIAMOND},
                             "loss": {"links": {"A-B": {"model": "bernoulli", "rate": 0.1}}}}))
    assert main(["validate", str(f)]) == 2
    assert "loss.links" in capsys.readouterr().err
    assert main(["validate", str(f), "--backend", "local"]) == 0


def test_routes_are_written_to_the_run_directory_before_the_start(tmp_path):
    doc = {"name": "rj", "backend": "sim", "repetitions": 1, "etx": {"settle_s": 1.0},
           "topology": {"links": DIAMOND}, "flows": [{"sender": "D", "receiver": "A", "segments": 20}],
           "variants": [{"name": "h"}, {"name": "e", "routing": {"metric": "etx"}}]}
    d = run_experiment(load_experiment(doc, "rj.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    routes = json.loads((d / "routes.json").read_text())
    assert routes["h"]["paths"] == [["D", "B", "A"]] and routes["h"]["routes"]["C"] == {"A": "A", "B": "A", "D": "D"}
    assert routes["e"]["measured"] and "meta.json" in routes["e"]["note"]


def test_a_dead_link_carries_no_route_and_an_unreachable_destination_is_said():
    """ETX of a link no probe crossed is inf: least_cost_next_hops leaves it out, so a node behind it has
    no route (the run then fails naming it) rather than a route over a link that delivers nothing."""
    from routing.topology.routes import RouteError
    g = MeshGraph.chain(["A", "B", "C"])
    dead = {("B", "C"), ("C", "B")}
    hops = least_cost_next_hops(g, lambda u, v: math.inf if (u, v) in dead else 1.0)
    assert "C" not in hops["A"] and "C" not in hops["B"] and hops["A"]["B"] == "B"
    cfg = load({"topology": {"chain": ["A", "B", "C"]}, "flows": [{"sender": "A", "receiver": "C"}]}).variants[0].config
    with pytest.raises(RouteError, match="no route from A to C"):
        route_tables(cfg, lambda u, v: math.inf if (u, v) in dead else 1.0)


def test_a_loop_is_named_with_the_walk_that_shows_it():
    """The walk stops as soon as it is longer than the node count (it must repeat a node then)."""
    found = errors({"topology": {"links": DIAMOND, "routes": {"B": {"D": "A"}, "A": {"D": "B"}}}})
    assert found["topology.routes.A"] == "routing loop from A to D: A -> B -> A -> B -> A"
