"""Issue 27, item 6: ``aspan plot RUN --resummarize`` on a run directory whose meta.json is missing or
not whole rebuilds what it can from the node logs and says what it assumed, or exits non-zero with the
reason; never an empty summary with exit 0.
"""
from __future__ import annotations

from tests import ROOT
import subprocess
import sys
from pathlib import Path
import pandas as pd
import yaml
from experiments.cli import main


def _exp(tmp_path: Path, reps: int, segments: int, backend: str = "sim") -> Path:
    doc = {"name": "t", "backend": backend, "repetitions": reps, "etx": {"settle_s": 0.3},
           "limits": {"max_duration_s": 120}, "loss": {"default": {"model": "bernoulli", "rate": 0.01}},
           "flows": [{"sender": "A", "receiver": "D", "segments": segments}]}
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def _plot(run: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments", "plot", str(run), "--resummarize"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_missing_and_cut_meta_json_are_rebuilt_from_the_logs_and_said(tmp_path):
    assert main(["run", str(_exp(tmp_path, 3, 300)), "--out", str(tmp_path / "out"), "--no-plot"]) == 0
    [run] = list((tmp_path / "out" / "t").iterdir())
    before = pd.read_csv(run / "summary.csv")
    (run / "default" / "rep1" / "meta.json").unlink()                     # never written
    cut = run / "default" / "rep2" / "meta.json"
    cut.write_text(cut.read_text()[:100])                                 # half written
    r = _plot(run)
    assert r.returncode == 0, r.stderr
    after = pd.read_csv(run / "summary.csv")
    assert list(after["repetition"]) == [0, 1, 2]
    assert list(after["status"]) == ["ok", "unrecorded", "unrecorded"]
    same = [c for c in before.columns if c != "status"]
    pd.testing.assert_frame_equal(after[same], before[same])              # the seed too: YAML seed + repetition
    assert "default rep 1: no meta.json: rebuilt; assumed" in r.stderr
    assert f"default rep 2: {cut} is not valid JSON" in r.stderr
    assert "from experiment.yaml" in r.stderr
    assert "rebuilt; assumed" in (run / "report.md").read_text()


def test_without_experiment_yaml_the_logs_alone_give_the_rows(tmp_path):
    assert main(["run", str(_exp(tmp_path, 1, 300)), "--out", str(tmp_path / "out"), "--no-plot"]) == 0
    [run] = list((tmp_path / "out" / "t").iterdir())
    (run / "default" / "rep0" / "meta.json").unlink()
    (run / "experiment.yaml").unlink()
    r = _plot(run)
    assert r.returncode == 0, r.stderr
    row = pd.read_csv(run / "summary.csv").iloc[0]
    assert row["segments"] == 300 and row["status"] == "unrecorded" and bool(row["integrity_ok"])
    assert "seed and backend unknown" in r.stderr


def test_nothing_to_rebuild_from_is_an_error_not_an_empty_summary(tmp_path):
    assert main(["run", str(_exp(tmp_path, 1, 100)), "--out", str(tmp_path / "out"), "--no-plot"]) == 0
    [run] = list((tmp_path / "out" / "t").iterdir())
    rep = run / "default" / "rep0"
    for f in rep.iterdir():
        f.unlink()
    (run / "summary.csv").unlink()
    r = _plot(run)
    assert r.returncode != 0
    assert "no repetition has node logs or a meta.json: nothing to summarize" in r.stderr
    assert not (run / "summary.csv").exists()
