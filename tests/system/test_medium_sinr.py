"""Reception by signal and interference (``medium.reception: sinr``, issue 24 item 2) in virtual time: the
grey zone, capture, carrier sense by energy, measured links, determinism, the schema, and a sim run.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
import pandas as pd
import pytest
from experiments.runner import run_experiment
from experiments.schema import load_experiment
from tests.routing.medium.test_dcf_sinr import MODERN


# ---- graphs: two paths, crossing flows ------------------------------------------------------------
DIAMOND = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]


DIAMOND_AT = {"A": [0, 0], "B": [96, 72], "C": [96, -72], "D": [192, 0]}


GRID = [[f"N{r}{c}", f"N{r}{c + 1}"] for r in range(3) for c in range(2)] + \
       [[f"N{r}{c}", f"N{r + 1}{c}"] for r in range(2) for c in range(3)]


GRID_AT = {f"N{r}{c}": [100 * c, 100 * r] for r in range(3) for c in range(3)}


@pytest.mark.parametrize("links,at,flows", [
    (DIAMOND, DIAMOND_AT, [{"sender": "A", "receiver": "D", "segments": 200}]),
    (GRID, GRID_AT, [{"sender": "N01", "receiver": "N21", "segments": 150},
                     {"sender": "N10", "receiver": "N12", "segments": 150}]),
], ids=["diamond", "crossing-flows"])
def test_reception_sinr_runs_on_graphs(tmp_path: Path, links: list[list[str]], at: dict[str, list[float]],
                                       flows: list[dict[str, Any]]) -> None:
    doc = {"name": "g", "backend": "sim", "repetitions": 1, "etx": {"settle_s": 1.0}, "topology": {"links": links},
           "medium": {"model": "dcf", "reception": "sinr", "positions": at, "shadowing_sigma_db": 4.0, "rate_mbps": 5.5,
                      **MODERN},
           "routing": {"metric": "etx"}, "tcp": {"variant": "sack"}, "flows": flows}
    d = run_experiment(load_experiment(doc, "g.yaml"), out=tmp_path, jobs=1, plot=False, progress=lambda s: None)
    df = pd.read_csv(d / "summary.csv")
    assert len(df) == len(flows) and (df["status"] == "ok").all() and df["integrity_ok"].all()
    mac = {e["node"]: e for n in at for e in map(json.loads, (d / "default/rep0" / f"{n}.log").read_text().splitlines())
           if e["ev"] == "mac"}
    assert set(mac) == set(at) and sum(m["faded"] for m in mac.values()) > 0   # links in the grey zone


# ---- a sim run --------------------------------------------------------------------------------------
def test_a_chain_runs_on_the_sim_with_reception_sinr(tmp_path: Path) -> None:
    doc = {"name": "sinr-chain", "backend": "sim", "seed": 1, "topology": {"chain": ["A", "B", "C", "D"]},
           "medium": {"model": "dcf", "reception": "sinr", "spacing_m": 100,
                      "rx_sensitivity_dbm": -101},
           "flows": [{"sender": "A", "receiver": "D", "segments": 200}], "variants": [{"name": "sinr"}]}
    run_dir = run_experiment(load_experiment(doc, "sinr.yaml"), out=tmp_path, jobs=1, plot=False, progress=lambda s: None)
    assert json.loads((run_dir / "sinr/rep0/meta.json").read_text())["status"] == "ok"
    mac = [e for n in "ABCD" for e in map(json.loads, (run_dir / "sinr/rep0" / f"{n}.log").read_text().splitlines())
           if e["ev"] == "mac"]
    assert len(mac) == 4 and sum(e["attempts"] for e in mac) > 600
    assert sum(e["faded"] for e in mac) > 0            # the channel itself lost frames (100 m hops: the grey zone of 11 Mbit/s)
