"""A local repetition whose medium process does not start in time fails with a message, not a traceback
(seen once at load average 15: the 1.5 s start margin was all the medium process had)."""
from __future__ import annotations

import json
import subprocess

import pandas as pd

from experiments.backends import local
from experiments.runner import run_experiment
from experiments.schema import load_experiment

DOC = {"name": "m", "backend": "local", "repetitions": 1, "topology": {"chain": ["A", "B", "C"]},
       "medium": {"model": "dcf", "standard": "g"}, "etx": {"settle_s": 0.5},
       "flows": [{"sender": "A", "receiver": "C", "segments": 50}], "variants": [{"name": "v"}]}


def test_a_medium_that_is_not_ready_in_time_fails_the_repetition_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "MEDIUM_START_S", 0.0)
    run_dir = run_experiment(load_experiment(DOC, "m.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    meta = json.loads((run_dir / "v" / "rep0" / "meta.json").read_text())
    assert meta["status"] == "failed" and "the medium process was not ready after 0 s" in meta["error"]
    left = subprocess.run(["pgrep", "-f", str(run_dir)], capture_output=True, text=True).stdout.split()
    assert left == []                                               # the medium was stopped, not left running
    assert pd.read_csv(run_dir / "summary.csv")["status"].tolist() == ["failed"]


def test_the_nodes_clock_starts_after_a_slow_medium(tmp_path):
    """The medium's start does not eat the settle phase: the nodes start their probes after it is up."""
    run_dir = run_experiment(load_experiment(DOC, "m.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    rep = run_dir / "v" / "rep0"
    assert json.loads((rep / "meta.json").read_text())["status"] == "ok"
    ready = (rep / "medium.ready").stat().st_mtime
    t0 = {n: json.loads((rep / f"{n}.node.json").read_text())["t0"] for n in "ABC"}
    assert all(t > ready for t in t0.values()), (ready, t0)
