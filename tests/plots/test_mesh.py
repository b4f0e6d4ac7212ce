"""plots.mesh: the mesh figure's graph, routes and per-node loads, on hand-written run directories
(an old chain run, a two-path graph whose routes differ per variant and repetition) and on a sim
run of crossing flows over a two-path mesh on the DCF medium.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
import pytest
from plots.analysis import load
from plots.cli import plot_command
from plots.mesh import PANELS_PER_FIGURE, is_mesh_key, mesh_figures, mesh_layout, mesh_panels, path_edges
from plots.testing import FLOW, basic_flow_events, ev, write_experiment, write_rep


SQUARE = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]   # two paths from A to D


def test_path_edges_and_mesh_keys() -> None:
    assert path_edges(["A", "C", "D"]) == [("A", "C"), ("C", "D")]
    assert path_edges(["A"]) == []
    assert is_mesh_key("mesh") and is_mesh_key("mesh_2")
    assert not is_mesh_key("medium_airtime") and not is_mesh_key("mesh_x")


def test_layout_is_a_line_for_a_chain_and_deterministic_for_a_graph() -> None:
    line = mesh_layout(["A", "B", "C", "D"], [("C", "D"), ("A", "B"), ("B", "C")])
    assert line == {"A": (0.0, 0.0), "B": (1.0, 0.0), "C": (2.0, 0.0), "D": (3.0, 0.0)}
    links = [tuple(pair) for pair in SQUARE]
    square = mesh_layout(["A", "B", "D", "C"], links)
    assert square == mesh_layout(["A", "B", "D", "C"], links)
    points = list(square.values())
    assert len(set(points)) == 4   # no two nodes on one spot
    # a layout of a 4-cycle: the linked pairs are nearer than the two diagonals
    dist = {frozenset((a, b)): ((square[a][0] - square[b][0]) ** 2 + (square[a][1] - square[b][1]) ** 2) ** 0.5
            for a in square for b in square if a < b}
    assert max(dist[frozenset(pair)] for pair in links) < min(dist[frozenset("AD")], dist[frozenset("BC")])


def _old_chain_run(root: Path) -> Path:
    """A run written before the topology was a graph: topology.chain only, no routing in meta.json."""
    run = root / "old"
    write_experiment(run, [{"name": "aspan", "config": {"topology": {"chain": ["A", "B", "C", "D"]}}}])
    for k in range(2):
        write_rep(run, "aspan", k, basic_flow_events(snoop=True))
    return run


def test_an_old_chain_run_is_drawn_from_the_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _old_chain_run(tmp_path)
    (panel,) = mesh_panels(run)
    assert panel.nodes == ["A", "B", "C", "D"]
    assert panel.links == [("A", "B"), ("B", "C"), ("C", "D")]
    assert panel.positions is None and panel.metric == "" and panel.reps == 2
    (flow,) = panel.flows
    assert flow.label == "A->D" and flow.paths == {("A", "B", "C", "D"): 2} and not flow.logged
    # basic_flow_events: B resends seq 1000 from its cache once; caches B 1,2,3,2,0 and C 1,4,0,
    # each step 10 ms long, over the flow's 2 s window (1.0 to 3.0)
    assert panel.loads["B"].local_retransmissions == 1 and panel.loads["C"].local_retransmissions == 0
    assert (panel.loads["B"].cache_max, panel.loads["C"].cache_max, panel.loads["A"].cache_max) == (3, 4, 0)
    assert panel.loads["B"].cache_mean == pytest.approx(0.08 / 2)
    assert panel.loads["C"].cache_mean == pytest.approx(0.05 / 2)
    assert panel.snoops and all(ld.airtime_share is None for ld in panel.loads.values())
    assert plot_command([run]) == 0
    assert (run / "figures" / "mesh.png").stat().st_size > 1000
    report = (run / "report.md").read_text()
    mesh = report[report.index("## Mesh"):report.index("## Summary")]
    assert "figures/mesh.png" in mesh and "| aspan | not logged (shortest path) | A->D | A-B-C-D | 2 |" in mesh
    figures = report[report.index("## Figures"):report.index("## Mesh")]
    assert "mesh.png" not in figures
    printed = int(re.search(r"(\d+) figures in", capsys.readouterr().out).group(1))
    assert printed == len({p.stem for p in (run / "figures").glob("*.png")})


def _two_path_run(root: Path) -> Path:
    """Two flows over the square: A->D and C->B. Variant hops routes A-B-D and C-A-B in both
    repetitions; variant etx routes A-C-D, then A-B-D, and C-D-B.  Local retransmissions and cache
    events are written where the routes relay."""
    run = root / "square"
    cfg = {"topology": {"nodes": ["A", "B", "D", "C"], "links": SQUARE}}
    write_experiment(run, [{"name": "hops", "config": cfg},
                           {"name": "etx", "config": dict(cfg, routing={"metric": "etx"})}])
    flows = [{"sender": "A", "receiver": "D", "segments": 3, "segment_size": 1000, "variant": "reno"},
             {"sender": "C", "receiver": "B", "segments": 3, "segment_size": 1000, "variant": "reno"}]
    routes = {"hops": [[["A", "B", "D"], ["C", "A", "B"]]] * 2,
              "etx": [[["A", "C", "D"], ["C", "D", "B"]], [["A", "B", "D"], ["C", "D", "B"]]]}
    for variant, per_rep in routes.items():
        for k, paths in enumerate(per_rep):
            relays = [p[1] for p in paths]
            events = [ev(1.0, "A", "flow_start", flow=FLOW, segments=3, segment_size=1000),
                      ev(3.0, "D", "flow_end", flow=FLOW, bytes=3000, ok=True)]
            # the first relay resends k + 1 segments from its cache, the second relay one
            events += [ev(1.5 + 0.01 * i, relays[0], "tx", flow=FLOW, seq=1000 * i, len=1000, kind="local", hop=1)
                       for i in range(k + 1)]
            events += [ev(1.6, relays[1], "tx", flow=FLOW, seq=0, len=1000, kind="local", hop=1),
                       ev(1.2, relays[0], "cache", segments=2 + k, bytes=1000),
                       ev(2.2, relays[0], "cache", segments=0, bytes=0)]
            routing = {"metric": variant, "measured": variant == "etx", "links": SQUARE, "paths": paths,
                       "routes": {}}
            if variant == "etx":
                routing["link_etx"] = {"A>B": 1.0 + 0.1 * k, "B>A": 1.2, "C>D": None}   # null: not finite
            write_rep(run, variant, k, events, flows=flows, routing=routing)
    return run


def test_routes_and_loads_of_a_two_path_graph(tmp_path: Path) -> None:
    run = _two_path_run(tmp_path)
    hops, etx = mesh_panels(run)
    assert (hops.variant, hops.metric, etx.metric) == ("hops", "hops", "etx")
    assert hops.nodes == ["A", "B", "D", "C"] and sorted(map(sorted, hops.links)) == sorted(map(sorted, SQUARE))
    assert [f.label for f in hops.flows] == ["A->D", "C->B"]
    assert [f.paths for f in hops.flows] == [{("A", "B", "D"): 2}, {("C", "A", "B"): 2}]
    assert [f.paths for f in etx.flows] == [{("A", "C", "D"): 1, ("A", "B", "D"): 1}, {("C", "D", "B"): 2}]
    assert all(f.logged for f in hops.flows + etx.flows)
    # hops: B relays A->D and resends 1 then 2 segments; A relays C->B and resends 1 each time
    assert hops.loads["B"].local_retransmissions == 1.5 and hops.loads["A"].local_retransmissions == 1
    assert hops.loads["B"].cache_max == 2.5 and hops.loads["A"].cache_max == 0
    assert hops.loads["B"].cache_mean == pytest.approx((2 * 1.0 + 3 * 1.0) / 2 / 2)
    # etx: rep 0 relays C then D, rep 1 B then D; D resends one segment in each
    assert etx.loads["C"].local_retransmissions == 0.5 and etx.loads["B"].local_retransmissions == 1
    assert etx.loads["D"].local_retransmissions == 1 and etx.loads["A"].local_retransmissions == 0
    assert etx.link_etx == {"A>B": pytest.approx(1.05), "B>A": 1.2} and hops.link_etx == {}
    drawn = mesh_figures(run, tmp_path / "figs")
    assert list(drawn) == ["mesh"] and all(p.stat().st_size > 1000 for p in drawn["mesh"])
    svg = drawn["mesh"][1].read_text()
    assert "A-&gt;D: A-C-D (1/2 reps)" in svg and "C-&gt;B: C-D-B" in svg and "1.05/1.20" in svg


def test_a_truncated_log_line_is_left_out(tmp_path: Path) -> None:
    run = tmp_path / "cut"
    write_experiment(run, [{"name": "aspan", "config": {"topology": {"chain": ["A", "B", "C", "D"]}}}])
    cut = '{"t":2.4,"node":"B","ev":"tx","flow":"x","seq":0,"len":1000,"kind":"local","ho'
    write_rep(run, "aspan", 0, basic_flow_events(snoop=True), tail={"B": cut})
    (panel,) = mesh_panels(run)
    assert panel.loads["B"].local_retransmissions == 1 and panel.loads["B"].cache_max == 3


def test_a_comparison_draws_every_run_s_panels_into_out(tmp_path: Path) -> None:
    old, square = _old_chain_run(tmp_path), _two_path_run(tmp_path)
    before = sorted(p for run in (old, square) for p in run.rglob("*"))
    assert plot_command([old, square], out=tmp_path / "cmp", labels=["old", "sq"]) == 0
    assert sorted(p for run in (old, square) for p in run.rglob("*")) == before   # inputs untouched
    assert (tmp_path / "cmp" / "figures" / "mesh.png").is_file()
    report = (tmp_path / "cmp" / "report.md").read_text()
    assert "| old: aspan | not logged (shortest path) | A->D | A-B-C-D | 2 |" in report
    assert "| sq: etx | ETX | A->D | A-C-D | 1 |" in report and "| sq: etx | ETX | A->D | A-B-D | 1 |" in report
    svg = (tmp_path / "cmp" / "figures" / "mesh.svg").read_text()
    assert "old: aspan" in svg and "sq: hops" in svg


def test_compacted_repetitions_give_the_same_panels(tmp_path: Path) -> None:
    from plots.compact import compact_rep
    run = _two_path_run(tmp_path)
    before = mesh_panels(run)
    for rep_dir in sorted(run.glob("*/rep*")):
        compact_rep(rep_dir)
    assert not list(run.glob("*/rep*/*.log")) and len(list(run.glob("*/rep*/events.parquet"))) == 4
    assert mesh_panels(run) == before


def test_failed_repetitions_and_many_variants(tmp_path: Path) -> None:
    run = tmp_path / "many"
    names = [f"v{i}" for i in range(PANELS_PER_FIGURE + 1)]
    write_experiment(run, [{"name": n, "config": {"topology": {"chain": ["A", "B", "C", "D"]}}} for n in names])
    for n in names:
        write_rep(run, n, 0, basic_flow_events(snoop=True))
        write_rep(run, n, 1, [ev(1.5, "C", "tx", flow=FLOW, seq=0, len=1000, kind="local", hop=2)],
                  status="failed", error="boom")
    panels = mesh_panels(run)
    assert [p.variant for p in panels] == names and all(p.reps == 1 for p in panels)
    assert all(p.loads["C"].local_retransmissions == 0 for p in panels)   # the failed rep is left out
    assert list(mesh_figures(run)) == ["mesh", "mesh_2"]


def test_a_run_without_a_known_graph_gets_no_mesh(tmp_path: Path) -> None:
    run = tmp_path / "bare"
    write_experiment(run, ["aspan"])
    write_rep(run, "aspan", 0, basic_flow_events())
    assert mesh_panels(run) == [] and mesh_figures(run) == {}
    assert plot_command([run]) == 0
    assert "## Mesh" not in (run / "report.md").read_text()


def test_crossing_flows_on_a_two_path_medium_sim_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.runner import run_experiment
    from experiments.schema import load_experiment
    from plots.medium import mac_frame
    positions = {"A": [0, 0], "B": [200, 0], "C": [0, 200], "D": [200, 200]}   # diagonals 283 m: out of range
    doc: dict[str, Any] = {
        "name": "meshsim", "backend": "sim", "seed": 3, "repetitions": 1, "etx": {"settle_s": 1.0},
        "topology": {"links": SQUARE},
        "medium": {"model": "dcf", "positions": positions},
        "loss": {"default": {"model": "bernoulli", "rate": 0.02}},
        "flows": [{"sender": "A", "receiver": "D", "segments": 200},
                  {"sender": "C", "receiver": "B", "segments": 200}],
        "variants": [{"name": "aspan", "snoop": {"policy": "adaptive", "pkt_qos": 0.99}}],
    }
    run = run_experiment(load_experiment(doc, "meshsim.yaml"), out=tmp_path, jobs=1, plot=False,
                         progress=lambda s: None)
    (panel,) = mesh_panels(run)
    meta = json.loads((run / "aspan" / "rep0" / "meta.json").read_text())
    assert panel.positions == {n: (float(x), float(y)) for n, (x, y) in positions.items()}
    assert [list(p) for f in panel.flows for p in f.paths] == meta["routing"]["paths"]
    links = {frozenset(pair) for pair in SQUARE}
    for flow in panel.flows:
        (path,) = flow.paths
        assert path[0] == flow.sender and path[-1] == flow.receiver
        assert all(frozenset(edge) in links for edge in path_edges(path))
    # the per-node values, against the analysis API's frames of the same logs
    tx = load(run).frame("tx")
    local = tx[tx["kind"] == "local"].groupby("node").size()
    assert local.sum() > 0
    assert {n: ld.local_retransmissions for n, ld in panel.loads.items()} == \
        {n: float(local.get(n, 0)) for n in "ABCD"}
    cache = load(run).frame("cache").groupby("node")["segments"].max()
    assert {n: ld.cache_max for n, ld in panel.loads.items()} == {n: float(cache.get(n, 0)) for n in "ABCD"}
    mac = mac_frame(run).set_index("node")["airtime_share"]
    assert {n: ld.airtime_share for n, ld in panel.loads.items()} == pytest.approx(mac.to_dict())
    assert plot_command([run]) == 0
    printed = int(re.search(r"(\d+) figures in", capsys.readouterr().out).group(1))
    assert printed == len({p.stem for p in (run / "figures").glob("*.png")})   # mesh and medium counted
    assert (run / "figures" / "mesh.png").is_file()
    report = (run / "report.md").read_text()
    assert report.index("## Mesh") < report.index("## Radio medium")
    for flow in panel.flows:
        (path,) = flow.paths
        assert f"| aspan | hop count | {flow.label} | {'-'.join(path)} | 1 |" in report


def test_a_large_mesh_labels_only_its_busiest_nodes(tmp_path):
    """Beyond DENSE_NODES nodes the values of the DENSE_LABELS busiest nodes are written, most local
    retransmissions first, then most airtime, ties in node order."""
    from plots.mesh import DENSE_LABELS, DENSE_NODES, MeshPanel, NodeLoad, _busiest, mesh_figure
    nodes = [f"N{i:02d}" for i in range(DENSE_NODES + 3)]
    loads = {n: NodeLoad(0.0, 0.0, 0.0, 0.01) for n in nodes}
    loads["N07"] = NodeLoad(500.0, 10.0, 2.0, 0.2)
    loads["N03"] = NodeLoad(20.0, 1.0, 0.5, 0.1)
    loads["N11"] = NodeLoad(0.0, 0.0, 0.0, 0.3)
    panel = MeshPanel("v", nodes, list(zip(nodes, nodes[1:])), None, "hops", [], 1, loads)
    assert _busiest(panel, DENSE_LABELS) == ["N07", "N03", "N11", "N00"]
    [png, svg] = mesh_figure([panel], tmp_path)
    assert svg.read_text().count("rtx ") == DENSE_LABELS


@pytest.mark.parametrize("nodes, links", [
    (["A", "B", "C", "D"], [("A", "B"), ("B", "D"), ("A", "C"), ("C", "D")]),      # the diamond, order A B C D
    ([f"N{r}{c}" for r in range(3) for c in range(3)],
     [(f"N{r}{c}", f"N{r}{c + 1}") for r in range(3) for c in range(2)]
     + [(f"N{r}{c}", f"N{r + 1}{c}") for r in range(2) for c in range(3)]),     # the 3x3 grid
])
def test_a_planar_mesh_is_drawn_without_crossing_links(nodes, links):
    from plots.mesh import _crossings
    assert _crossings(links, mesh_layout(nodes, links)) == 0
    assert _crossings([("A", "B"), ("C", "D")], {"A": (0, 0), "B": (1, 1), "C": (0, 1), "D": (1, 0)}) == 1


def _thirty(kind: str) -> tuple[list[str], dict[str, tuple[float, float]], list[tuple[str, str]]]:
    """A 30-node mesh: a 6 x 5 grid 100 m apart, or 30 nodes placed at random (seeded) on 600 m x 600 m,
    linked within 160 m."""
    import itertools

    import numpy as np
    if kind == "grid":
        nodes = [f"N{r}{c}" for r in range(5) for c in range(6)]
        pos = {f"N{r}{c}": (100.0 * c, 100.0 * r) for r in range(5) for c in range(6)}
        links = [(f"N{r}{c}", f"N{r}{c + 1}") for r in range(5) for c in range(5)] + \
                [(f"N{r}{c}", f"N{r + 1}{c}") for r in range(4) for c in range(6)]
        return nodes, pos, links
    xy = np.random.default_rng(3).uniform(0.0, 600.0, (30, 2))
    nodes = [f"N{i:02d}" for i in range(30)]
    pos = {n: (float(x), float(y)) for n, (x, y) in zip(nodes, xy)}
    links = [(a, b) for a, b in itertools.combinations(nodes, 2)
             if np.hypot(pos[a][0] - pos[b][0], pos[a][1] - pos[b][1]) < 160.0]
    return nodes, pos, links


@pytest.mark.parametrize("style_name", ["notebook", "paper"])
@pytest.mark.parametrize("kind, placed", [("grid", True), ("grid", False), ("random", True), ("random", False)])
def test_labels_of_a_thirty_node_mesh_do_not_overlap(kind: str, placed: bool, style_name: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every text of the panel (node names, the busiest nodes' values, ETX on links) as saved: no two
    bounding boxes overlap, and every node's name is still there."""
    import itertools

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    import plots.style as style
    from plots.mesh import FlowRoute, MeshPanel, NodeLoad, mesh_figure
    nodes, pos, links = _thirty(kind)
    loads = {n: NodeLoad(10.0 * (i % 7), 3.0, 1.0, 0.05 + 0.01 * (i % 5)) for i, n in enumerate(nodes)}
    flows = [FlowRoute("A->B", nodes[0], nodes[-1], {tuple(nodes[:3]): 1}, True)]
    etx = {f"{a}>{b}": 1.2 for a, b in links[:6]}
    panel = MeshPanel("v", nodes, links, pos if placed else None, "etx", flows, 1, loads, link_etx=etx)
    saved: list[Any] = []
    monkeypatch.setattr(style, "save", lambda fig, out_dir, name: saved.append(fig) or [])
    with style.using(style_name):
        mesh_figure([panel], Path("unused"))
    fig = saved[0]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    texts = [t for t in ax.texts if t.get_text() and t.get_visible()]
    assert {t.get_text() for t in texts} >= set(nodes)
    hidden = [t for t in ax.texts if t.get_text() and not t.get_visible()]
    assert not hidden or f"{len(hidden)} value label(s) left out" in fig.get_suptitle()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    overlapping = [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]
    assert not overlapping, overlapping


def test_a_crowded_mesh_moves_the_names_that_overlap_and_only_those(monkeypatch: pytest.MonkeyPatch) -> None:
    """The random 30-node mesh has nodes closer than a name is wide: their names move beside the node
    (black, off the node's colour); the others stay on their node."""
    import plots.style as style
    from plots.mesh import MeshPanel, NodeLoad, mesh_figure
    nodes, pos, links = _thirty("random")
    panel = MeshPanel("v", nodes, links, pos, "hops", [], 1, {n: NodeLoad(0.0, 0.0, 0.0, None) for n in nodes})
    saved: list[Any] = []
    monkeypatch.setattr(style, "save", lambda fig, out_dir, name: saved.append(fig) or [])
    mesh_figure([panel], Path("unused"))
    ax = saved[0].axes[0]
    names = [t for t in ax.texts if t.get_text() in nodes]
    moved = [t for t in names if t.get_transform() != ax.transData]
    assert 1 <= len(moved) <= 5, [t.get_text() for t in moved]
    assert all(t.get_color() == "black" for t in moved)
