"""What the data met, per link and packet (experiments/trace_fates.py), on a diamond with two crossing flows,
and its replays refused or taken before the run as the schema says (routing/links/trace_replay.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from experiments.cli import main
from experiments.runner import run_experiment
from experiments.schema import ExperimentError, load_experiment
from experiments.trace import extract, write
from tests.runs import events

DIAMOND = {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["A", "C"], ["B", "D"], ["C", "D"]]}
DIRECTED = ["A>B", "B>A", "A>C", "C>A", "B>D", "D>B", "C>D", "D>C"]


def doc(loss: dict[str, Any], backend: str = "sim") -> dict[str, Any]:
    return {"name": "t", "backend": backend, "seed": 4, "repetitions": 1, "topology": DIAMOND, "loss": loss,
            "etx": {"settle_s": 2.0}, "limits": {"max_duration_s": 120},
            "flows": [{"sender": "A", "receiver": "D", "segments": 800},
                      {"sender": "B", "receiver": "C", "segments": 800}],
            "variants": [{"name": "v"}]}


def test_fates_on_a_diamond_with_crossing_flows(tmp_path: Path) -> None:
    """10 % loss on B>D only: its data fates lose about that, every other link's none; each link has a fate
    per transmission its sender logged toward it, and a forwarded one its delay."""
    loss = {"default": {"model": "none"}, "links": {"B>D": {"model": "bernoulli", "rate": 0.1}}}
    run_dir = run_experiment(load_experiment(doc(loss), str(tmp_path / "t.yaml")), out=tmp_path / "runs",
                             plot=False, progress=lambda s: None)
    tr = extract(run_dir, fates=True)
    data = tr[tr["source"] == "data"]
    assert set(tr.loc[tr["source"] == "probes", "link"]) == set(DIRECTED)
    meta = __import__("json").loads(next(run_dir.glob("v/rep0/meta.json")).read_text())
    paths = meta["routing"]["paths"]
    used = {f"{a}>{b}" for p in paths for a, b in zip(p, p[1:])}
    assert set(data["link"]) == used and "B>D" in used, (paths, set(data["link"]))
    rep = run_dir / "v" / "rep0"
    for link in used:
        a, b = link.split(">")
        g = data[data["link"] == link]
        sent = [e for e in events(rep, a) if e["ev"] == "tx"
                and any(p[p.index(a) + 1] == b for p in paths if a in p[:-1] and p[0] + p[-1] in _ends(e["flow"], meta))]
        # into a receiver, a second whose loss lines ran out (a count line) hides which were lost: no row
        # (from the last drop of that second that got its line: the first 20 did)
        lines = [e for e in events(rep, b) if e["ev"] == "drop" and e.get("reason") == "loss"] if b in "DC" else []
        named = [e["t"] for e in lines if "count" not in e]
        blind = [(max([t for t in named if c["since"] <= t < c["since"] + 1], default=c["since"]), c["since"] + 1)
                 for c in lines if "count" in c]
        unknown = sum(1 for e in sent if any(x <= e["t"] < y for x, y in blind))
        # what the sender's own queue dropped is no fate of the link (all named here: fewer than 20 a second)
        queued = [e for e in events(rep, a) if e["ev"] == "drop" and e.get("reason") == "queue" and "flow" in e
                  and any(p[p.index(a) + 1] == b for p in paths if a in p[:-1] and p[0] + p[-1] in _ends(e["flow"], meta))]
        assert not any("count" in e for e in events(rep, a) if e["ev"] == "drop" and e.get("reason") == "queue")
        assert len(g) == len(sent) - unknown - len(queued), (link, len(g), len(sent), unknown, len(queued))
        assert unknown < len(sent) / 2
        lost = 1 - g["heard"].mean()
        if link == "B>D":
            assert lost == pytest.approx(0.1, abs=0.04), lost
        else:
            assert lost == 0.0, (link, lost)
        forwarded = g[(g["heard"] == 1) & g["delay_s"].notna()]
        if b not in ("D", "C") or len(forwarded):
            assert (forwarded["delay_s"] > 0).all() and (forwarded["delay_s"] < 1).all()
    # the command writes them beside the probes' intervals; --probes-only leaves them out
    out = tmp_path / "t.csv"
    assert main(["trace", "extract", str(run_dir), "-o", str(out)]) == 0
    assert (pd.read_csv(out)["source"] == "data").sum() == len(data)
    assert main(["trace", "extract", str(run_dir), "-o", str(out), "--probes-only"]) == 0
    assert "source" not in pd.read_csv(out)


def _ends(flow: str, meta: dict[str, Any]) -> str:
    """The sender's and receiver's names of a flow string "src:sport>dst:dport"."""
    name = {a: n for n, a in meta["nodes"].items()}
    src, _, dst = flow.partition(">")
    return name[src.rpartition(":")[0]] + name[dst.rpartition(":")[0]]


def fate_trace(tmp: Path) -> Path:
    rows = [{"variant": "rec", "repetition": 0, "link": link, "t_s": float(t), "dt_s": 1.0, "sent": 10,
             "heard": 10, "delivery": 1.0, "source": "probes"} for link in DIRECTED for t in range(-5, 30)]
    rows += [{"variant": "rec", "repetition": 0, "link": "B>D", "t_s": 0.01 * i, "dt_s": 0.0, "sent": 1,
              "heard": int(i % 10 != 0), "delivery": float(i % 10 != 0), "source": "data"} for i in range(2000)]
    p = tmp / "f.csv"
    write(pd.DataFrame(rows), p)
    return p


@pytest.mark.parametrize("replay", ["fates", "markov"])
def test_each_replay_runs_on_the_sim_and_validates_on_every_backend(tmp_path: Path, replay: str) -> None:
    fate_trace(tmp_path)
    links = {"default": {"model": "none"},
             "links": {k: {"model": "trace", "file": "f.csv", "replay": replay} for k in DIRECTED}}
    exp = load_experiment(doc(links), str(tmp_path / "t.yaml"))
    run_dir = run_experiment(exp, out=tmp_path / "runs", plot=False, progress=lambda s: None)
    s = pd.read_csv(run_dir / "summary.csv")
    assert (s["status"] == "ok").all(), s
    assert int(s["drops_loss"].sum()) > 0
    node = {"default": {"model": "none"}, "nodes": {"D": {"model": "trace", "file": "f.csv", "link": "B>D",
                                                          "replay": replay}}}
    p = tmp_path / "t.yaml"
    for backend in ("sim", "local", "netns", "pi"):
        p.write_text(yaml.safe_dump(doc(node, backend)))
        assert main(["validate", str(p), "--backend", backend]) == 0, backend


def test_a_replay_past_its_end_fails_the_repetition_with_the_reason(tmp_path: Path) -> None:
    fate_trace(tmp_path)
    short = {"default": {"model": "none"},
             "links": {k: {"model": "trace", "file": "f.csv", "replay": "fates"} for k in DIRECTED}}
    d = doc(short)
    d["flows"] = [{"sender": "A", "receiver": "D", "segments": 200000}]
    run_dir = run_experiment(load_experiment(d, str(tmp_path / "t.yaml")), out=tmp_path / "runs", plot=False,
                             progress=lambda s: None)
    meta = __import__("json").loads(next(run_dir.glob("v/rep0/meta.json")).read_text())
    assert meta["status"] == "failed"
    assert "TraceEnded" in meta["error"] and "past the recording's end at 30.000 s" in meta["error"]


@pytest.mark.parametrize("spec, key", [({"replay": "average"}, "replay"), ({"past_end": "wait"}, "past_end"),
                                       ({"replay": "fates", "smooth_s": 5.0}, "smooth_s"),
                                       ({"replay": "markov", "fit_s": 0}, "fit_s")])
def test_bad_replay_settings_are_refused_naming_the_key(tmp_path: Path, spec: dict[str, Any], key: str) -> None:
    fate_trace(tmp_path)
    loss = {"default": {"model": "none"}, "links": {"B>D": {"model": "trace", "file": "f.csv", **spec}}}
    with pytest.raises(ExperimentError, match=rf"loss.links.B>D.{key}"):
        load_experiment(doc(loss), str(tmp_path / "t.yaml"))
