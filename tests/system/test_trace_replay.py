"""Replaying a link trace on every backend (issue 25, item 2), on a diamond (two paths A-B-D and A-C-D).

The trace: every link delivers everything, except B>D, which delivers 100 % until 5 s before the flows
start and 70 % from then on.  The runs settle 8 s, so the probes (10 a second) measure both stretches
before the flow: 30 probes at 100 %, at least 50 at 70 %.  Each backend's run is itself extracted
(experiments/trace.py) and must show the replayed link losing what the trace says, when it says so, and
the other links nothing (on netns the loss is a node's, so both links into D replay B>D).

A trace's link must be a link of the topology: anything else is refused before the run, by ``load`` and
``aspan validate`` against every backend.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
import pandas as pd
import pytest
import yaml
from experiments.cli import main
from experiments.runner import run_experiment
from experiments.schema import ExperimentError, load_experiment
from experiments.trace import COLUMNS, extract, write


DIAMOND = {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["A", "C"], ["B", "D"], ["C", "D"]]}


DIRECTED = ["A>B", "B>A", "A>C", "C>A", "B>D", "D>B", "C>D", "D>C"]


CHANGE_S, LATE_DELIVERY = -5.0, 0.7


def trace_rows(extra_links: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The synthetic trace (module docstring), 200 probes an interval so that it carries no sampling noise."""
    rows = []
    for link in DIRECTED + list(extra_links):
        for t in range(-10, 60):
            d = LATE_DELIVERY if link == "B>D" and t >= CHANGE_S else 1.0
            rows.append({"variant": "rec", "repetition": 0, "link": link, "t_s": float(t), "dt_s": 1.0,
                         "sent": 200, "heard": round(200 * d), "delivery": d, "etx": 1.0 / d})
    return rows


def write_trace(tmp: Path, extra_links: tuple[str, ...] = ()) -> Path:
    p = tmp / "diamond.csv"
    write(pd.DataFrame(trace_rows(extra_links), columns=COLUMNS), p)
    return p


def doc(backend: str, loss: dict[str, Any], **over: Any) -> dict[str, Any]:
    d = {"name": "t", "backend": backend, "seed": 2, "repetitions": 1, "topology": DIAMOND, "loss": loss,
         "etx": {"settle_s": 8.0}, "limits": {"max_duration_s": 90},
         "flows": [{"sender": "A", "receiver": "D", "segments": 200}], "variants": [{"name": "v"}]}
    d.update(over)
    return d


def per_link() -> dict[str, Any]:
    """The trace under loss.links, each link replaying its own recording (no ``link``: the key's)."""
    return {"default": {"model": "none"}, "links": {k: {"model": "trace", "file": "diamond.csv"} for k in DIRECTED}}


def check_replayed(run_dir: Path, lossy: set[str]) -> None:
    """The replay's own trace: the links in ``lossy`` deliver 100 % before CHANGE_S and LATE_DELIVERY after
    (within 0.2: over 50 probes the binomial's standard deviation is 0.065), every other link over 95 %."""
    tr = extract(run_dir)
    assert set(tr["link"]) == set(DIRECTED), sorted(set(tr["link"]))
    for link, g in tr.groupby("link"):
        before, after = g[g["t_s"] + g["dt_s"] <= CHANGE_S], g[g["t_s"] >= CHANGE_S]
        assert before["sent"].sum() >= 15 and after["sent"].sum() >= 40, (link, g)
        d_before = before["heard"].sum() / before["sent"].sum()
        d_after = after["heard"].sum() / after["sent"].sum()
        assert d_before >= 0.95, (link, d_before)
        if link in lossy:
            assert d_after == pytest.approx(LATE_DELIVERY, abs=0.2), (link, d_after)
        else:
            assert d_after >= 0.95, (link, d_after)


def test_sim_replays_each_link_its_own_recording_on_the_diamond(tmp_path: Path) -> None:
    write_trace(tmp_path)
    exp = load_experiment(doc("sim", per_link()), str(tmp_path / "t.yaml"))
    assert exp.variants[0].config["loss"]["links"]["B>D"]["link"] == "B>D"      # the key's own recording
    run_dir = run_experiment(exp, out=tmp_path / "runs", plot=False, progress=lambda s: None)
    assert (pd.read_csv(run_dir / "summary.csv")["status"] == "ok").all()
    check_replayed(run_dir, {"B>D"})


def test_netns_refuses_a_trace_per_link_before_the_run(tmp_path: Path) -> None:
    write_trace(tmp_path)
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(doc("netns", per_link())))
    assert main(["validate", str(p)]) == 2


@pytest.mark.parametrize("where", ["links", "nodes", "default"])
def test_a_trace_link_missing_from_the_topology_is_refused_before_the_run(tmp_path: Path, where: str,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The trace has A>D (recorded on another topology), the diamond has no such link: load refuses it, and
    ``aspan validate`` refuses it against every backend, naming the setting."""
    write_trace(tmp_path, extra_links=("A>D",))
    spec = {"model": "trace", "file": "diamond.csv", "link": "A>D"}
    loss = {"default": {"model": "none"}}
    if where == "links":
        loss["links"] = {"B>D": spec}
    elif where == "nodes":
        loss["nodes"] = {"D": spec}
    else:
        loss["default"] = spec
    path = {"links": "loss.links.B>D.link", "nodes": "loss.nodes.D.link", "default": "loss.default.link"}[where]
    with pytest.raises(ExperimentError, match=rf"{path}: the trace's link 'A>D' is not a link of this topology"):
        load_experiment(doc("sim", loss), str(tmp_path / "t.yaml"))
    p = tmp_path / "t.yaml"
    for backend in ("sim", "local", "netns", "pi"):
        p.write_text(yaml.safe_dump(doc(backend, loss)))
        capsys.readouterr()
        assert main(["validate", str(p), "--backend", backend]) == 2
        assert "is not a link of this topology" in capsys.readouterr().err
    # the same spec naming a link the diamond has is accepted
    spec["link"] = "C>D"
    load_experiment(doc("sim", loss), str(tmp_path / "t.yaml"))
