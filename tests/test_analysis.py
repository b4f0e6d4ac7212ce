"""plots.analysis: a run directory as one frame per event type; the docs/LOGS.md example runs as written."""
import re
from pathlib import Path

import pandas as pd

import plots
from plots.testing import basic_flow_events, write_experiment, write_rep

ROOT = Path(__file__).resolve().parent.parent
OFFSETS = {"A": 0.25, "B": -0.5, "C": 0.0, "D": 1.0}


def write_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    write_experiment(run_dir, ["reno", "aspan"])
    write_rep(run_dir, "reno", 0, basic_flow_events(snoop=False))
    for k in (0, 1):
        write_rep(run_dir, "aspan", k, basic_flow_events(), clock_offsets=OFFSETS)
    return run_dir


def test_frames_cover_every_variant_and_repetition_on_the_reference_clock(tmp_path):
    run_dir = write_run(tmp_path)
    run = plots.load(run_dir)
    tx = run.frame("tx")
    assert list(tx.columns[:4]) == ["variant", "repetition", "node", "t"]
    assert {"flow", "seq", "kind"} <= set(tx.columns) and "segments" not in tx.columns
    reps = {(v, k) for v, k, _ in run.reps()}
    assert set(map(tuple, tx[["variant", "repetition"]].drop_duplicates().to_numpy())) <= reps
    assert set(map(tuple, tx[["variant", "repetition"]].drop_duplicates().to_numpy())) == reps
    # t is the node's clock minus its offset in meta.json
    [(v, k, logs)] = [r for r in run.reps() if r[0] == "aspan" and r[1] == 1]
    raw = logs.events[logs.events["ev"] == "tx"]
    mine = tx[(tx["variant"] == v) & (tx["repetition"] == k)]
    expected = raw["t"].to_numpy() - raw["node"].map(OFFSETS).to_numpy()
    assert mine["t"].to_numpy().tolist() == expected.tolist() and not (mine["t"].to_numpy() == raw["t"].to_numpy()).all()
    assert run.frame("no-such-event").empty


def test_the_logs_md_example_runs_as_written(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "LOGS.md").read_text()
    [code] = re.findall(r"```python\n(.*?)```", text[text.index("## Analysis"):], re.S)[:1]
    run_dir = write_run(tmp_path)
    code = code.replace('"runs/paper-lossy/20261123-101500"', repr(str(run_dir)))
    scope: dict = {}
    exec(compile(code, "docs/LOGS.md", "exec"), scope)
    assert isinstance(scope["per_packet"], pd.Series) and len(scope["per_packet"]) > 0
    assert scope["per_packet"].min() >= 1
