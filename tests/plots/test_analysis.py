"""plots.analysis: a run directory as one frame per event type; the docs/LOGS.md example runs as written."""
from tests import ROOT
import re
from pathlib import Path
import pandas as pd
import plots
from plots.testing import basic_flow_events, write_experiment, write_rep




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


def test_one_name_per_flow_and_integer_fields_on_a_sim_run(tmp_path):
    """Issue 28, item 6: the analysis API, summary.csv and the report name each flow the same way
    (``A->D:6000``); the logged id is kept as ``flow_id``; seq, len and hop are integers."""
    from experiments.runner import run_experiment
    from experiments.schema import load_experiment
    from plots.summary import read_summary

    doc = {"name": "names", "backend": "sim", "seed": 1, "repetitions": 1,
           "loss": {"default": {"model": "bernoulli", "rate": 0.01}},
           "topology": {"links": [["A", "B"], ["B", "C"], ["C", "D"], ["A", "C"]]},
           "flows": [{"sender": "A", "receiver": "D", "segments": 200}, {"sender": "D", "receiver": "B", "segments": 100}],
           "variants": [{"name": "aspan", "tcp": {"variant": "sack"}, "snoop": {"policy": "adaptive", "pkt_qos": 1.0}}]}
    d = run_experiment(load_experiment(doc, "names.yaml"), out=tmp_path, jobs=1, plot=True, progress=lambda s: None)
    summary = read_summary(d)
    names = list(summary["flow"])
    assert names == ["A->D:6000", "D->B:6001"]
    run = plots.load(d)
    tx = run.frame("tx")
    assert sorted(tx["flow"].unique()) == sorted(names)
    assert all(re.fullmatch(r"[\d.]+:\d+>[\d.]+:\d+", k) for k in tx["flow_id"].unique())
    for col in ("seq", "len", "hop"):
        assert str(tx[col].dtype) == "Int64", (col, tx[col].dtype)
    assert tx.loc[tx["kind"] == "send", "hop"].eq(0).all()
    # the same flow has the same count of transmissions in the summary's terms and the frame's
    for name in names:
        mine = tx[tx["flow"] == name]
        assert len(mine) > 0 and mine["flow_id"].nunique() == 1
    assert str(run.frame("cwnd")["cwnd"].dtype) == "Int64"
    # the report names the flows as summary.csv does, never by their logged ids
    report = (d / "report.md").read_text()
    assert all(n in report for n in names)
    assert not any(k in report for k in tx["flow_id"].unique())
