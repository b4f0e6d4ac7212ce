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
import pandas as pd
import pytest
from experiments.runner import run_experiment
from experiments.schema import load_experiment
from tests.system.test_trace_replay import check_replayed, doc, per_link, write_trace


@pytest.mark.slow
def test_local_replays_each_link_its_own_recording_on_the_diamond(tmp_path: Path) -> None:
    write_trace(tmp_path)
    # What is checked is the links' own probes (check_replayed), not the flow.  A flow A -> D crosses B>D at
    # 30 % loss, where the user-space TCP can live on backed-off RTOs in real time (CI runs: 70 RTOs and still
    # going at 90 s; 41 RTOs and 200 segments unfinished at 300 s), so the flow here is A -> C, over a link
    # the trace leaves lossless; the sim's test (tests/system/test_trace_replay.py) sends it over the lossy link.
    exp = load_experiment(doc("local", per_link(), flows=[{"sender": "A", "receiver": "C", "segments": 200}]),
                          str(tmp_path / "t.yaml"))
    run_dir = run_experiment(exp, out=tmp_path / "runs", plot=False, progress=lambda s: None)
    df = pd.read_csv(run_dir / "summary.csv")
    assert (df["status"] == "ok").all() and df["integrity_ok"].all(), df.to_string()
    check_replayed(run_dir, {"B>D"})
