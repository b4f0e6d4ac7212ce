"""``medium.rts_threshold`` on every backend with a medium (issue 24, item 1): the sim, the local medium
process and the netns medium daemon build their medium with experiments.medium_spec.build_medium, so
each runs RTS/CTS from the same setting; the schema refuses it where it cannot mean anything.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
import pytest
from experiments.medium_spec import build_medium
from experiments.runner import run_experiment
from experiments.schema import ExperimentError, load_experiment


FLOWS = [{"sender": "A", "receiver": "D", "segments": 10}]


DIAMOND = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]


GRID = [[f"N{r}{c}", f"N{r}{c + 1}"] for r in range(3) for c in range(2)] + \
       [[f"N{r}{c}", f"N{r + 1}{c}"] for r in range(2) for c in range(3)]


def errors(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ExperimentError) as e:
        load_experiment(dict(doc, flows=FLOWS), "m.yaml")
    return {err.path: err.message for err in e.value.errors}


def test_the_rts_settings_are_checked() -> None:
    assert "needs nav duration" in errors({"medium": {"model": "dcf", "rts_threshold": 0, "nav": "exchange"}})["medium.nav"]
    assert "expected a value >= 0" in errors({"medium": {"model": "dcf", "rts_threshold": -1}})["medium.rts_threshold"]
    assert "expected one of exchange, duration" in errors({"medium": {"model": "dcf", "nav": "x"}})["medium.nav"]
    assert "expected a value >= 1" in errors({"medium": {"model": "dcf", "long_retry_limit": 0}})["medium.long_retry_limit"]
    assert "medium.model is 'none'" in errors({"medium": {"rts_threshold": 0}})["medium.rts_threshold"]


def test_every_medium_backend_builds_its_medium_from_the_setting() -> None:
    """One builder for the three: the sim's driver, and the local medium process and the netns daemon,
    whose common life (experiments/backends/medium_daemon.py: run_daemon) builds their medium."""
    from experiments.backends import medium_daemon, medium_process, sim_medium
    from experiments.backends.netns import medium as netns_medium
    assert sim_medium.build_medium is medium_daemon.build_medium is build_medium
    assert medium_process.run_daemon is netns_medium.run_daemon is medium_daemon.run_daemon
    cfg = load_experiment({"medium": {"model": "dcf", "rts_threshold": 500, "long_retry_limit": 3},
                           "flows": FLOWS}, "m.yaml").variants[0].config
    phy = build_medium(cfg, 1).phy
    assert (phy.rts_threshold, phy.nav, phy.long_retry_limit, phy.retry_limit) == (500, "duration", 3, 7)
    default = build_medium(load_experiment({"medium": {"model": "dcf"}, "flows": FLOWS}, "m.yaml").variants[0].config, 1)
    assert (default.phy.rts_threshold, default.phy.nav) == (None, "exchange")


def mac_events(rep: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for log in rep.glob("*.log"):
        for e in map(json.loads, log.read_text().splitlines()):
            if e["ev"] == "mac":
                out[e.get("station", log.stem)] = e
    return out


def run_rts(tmp: Path, doc: dict[str, Any]) -> Path:
    return run_experiment(load_experiment(doc, "rts.yaml"), out=tmp, jobs=1, plot=False, progress=lambda s: None)


def test_rts_cts_on_the_sim_chain_cuts_hidden_terminal_collisions(tmp_path: Path) -> None:
    # the 200 m chain: A and D (600 m) cannot sense each other; same seed, with and without RTS/CTS
    doc = {"name": "rts", "backend": "sim", "seed": 2, "repetitions": 1, "etx": {"settle_s": 1.0},
           "medium": {"model": "dcf"}, "tcp": {"variant": "sack"},
           "flows": [{"sender": "A", "receiver": "D", "segments": 400}],
           "variants": [{"name": "off"}, {"name": "rts", "medium": {"rts_threshold": 0}}]}
    d = run_rts(tmp_path, doc)
    off, rts = mac_events(d / "off" / "rep0"), mac_events(d / "rts" / "rep0")
    assert sum(m["rts"] for m in off.values()) == 0 and all(rts[n]["rts"] > 0 for n in "ABCD")
    hidden_off, hidden_rts = (sum(m["hidden"] for m in x.values()) for x in (off, rts))
    assert hidden_off > 50 and hidden_rts < hidden_off / 2, (hidden_off, hidden_rts)
    for v in ("off", "rts"):
        assert json.loads((d / v / "rep0" / "meta.json").read_text())["status"] == "ok"


@pytest.mark.parametrize("links,flows", [
    (DIAMOND, [{"sender": "A", "receiver": "D", "segments": 300}]),
    (GRID, [{"sender": "N01", "receiver": "N21", "segments": 200}, {"sender": "N10", "receiver": "N12", "segments": 200}]),
], ids=["diamond", "crossing-flows"])
def test_rts_cts_runs_on_graphs(tmp_path: Path, links: list[list[str]], flows: list[dict[str, Any]]) -> None:
    doc = {"name": "g", "backend": "sim", "repetitions": 1, "etx": {"settle_s": 1.0}, "topology": {"links": links},
           "medium": {"model": "dcf", "rts_threshold": 0}, "tcp": {"variant": "sack"}, "flows": flows}
    d = run_rts(tmp_path, doc)
    import pandas as pd
    df = pd.read_csv(d / "summary.csv")
    assert len(df) == len(flows) and (df["status"] == "ok").all() and df["integrity_ok"].all()
    mac = mac_events(d / "default" / "rep0")
    relays = {n for n, m in mac.items() if m["rts"] > 0}
    assert {f["sender"] for f in flows} | {f["receiver"] for f in flows} <= relays   # data one way, ACKs back
