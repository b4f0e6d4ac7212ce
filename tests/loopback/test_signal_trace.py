"""Recorded signals replayed into the medium's reception sinr (issue 25, item 2; routing/medium/signal_trace.py),
in virtual time on the sim: the link A-B is strong (-50 dBm) until 2 s after the flow starts, then weak
(-82 dBm, SINR 12 dB over the default noise floor); Minstrel moves the frames to low MCSs and the goodput
falls with it; the same run without the trace stays at the top rates.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
import pandas as pd
import pytest
from experiments.runner import run_experiment
from experiments.schema import load_experiment
from tests.routing.medium.test_signal_trace import STRONG, doc, write_trace


def mac_retry_times(run_dir: Path, backend: str) -> list[float]:
    """When A's frames to B were dropped after their last attempt, in seconds after the flows' start."""
    rep = run_dir / "v" / "rep0"
    if backend == "sim":      # A's own log, virtual time: the flows start after settling (1 s)
        events, t_flows = (json.loads(ln) for ln in (rep / "A.log").read_text().splitlines()), 1.0
        return [e.get("since", e["t"]) - t_flows for e in events
                if e["ev"] == "drop" and e.get("reason") == "mac_retry"]
    # the medium daemon's log, on the nodes' clock (local: the t0 the runner gave the medium process; netns:
    # the nodes' go file)
    if backend == "local":
        t_flows = json.loads((rep / "medium.t0.json").read_text())["t0"] + 1.0
    else:
        t_flows = json.loads((rep / "go.json").read_text())["t_flows"]
    events = (json.loads(ln) for ln in (rep / "medium.log").read_text().splitlines())
    return [e["t"] - t_flows for e in events
            if e["ev"] == "drop" and e.get("reason") == "mac_retry" and (e["src"], e["dst"]) == ("A", "B")]


def dead_second_run(tmp_path: Path, backend: str, **over: Any) -> Path:
    write_trace(tmp_path, signal=lambda t: -110.0 if t == 2 else STRONG)
    d = doc({"signal_trace": {"file": "sig.csv"}}, backend=backend, **over)
    return run_experiment(load_experiment(d, str(tmp_path / "t.yaml")), out=tmp_path / "r", plot=False,
                          progress=lambda s: None)


def assert_dead_second(times: list[float], backend: str) -> None:
    # inside: from 2 s to one exchange's retries after 3 s (a frame sent at 2.99 s fails its last attempt
    # later); real time: a margin for the daemons' lateness
    late = 0.05 if backend == "sim" else 0.3
    inside = [t for t in times if 2.0 - (late - 0.05) <= t < 3.0 + late]
    print(f"{backend}: {len(times)} mac_retry drops of A->B, {len(inside)} in the dead second: "
          f"{[round(t, 2) for t in times if t not in inside]} outside")
    # how many frames meet the dead second is TCP's (it backs off after the first losses): 12 to 51 on local
    # at load 2-6, 7 in a CI run at a higher load, 2 in another (a test run of mine beside it); a replay aligned
    # to the process's start puts none inside.  So: some inside, and more inside than out.
    assert inside and len(inside) > len(times) - len(inside), times
    assert len(times) - len(inside) <= (0 if backend == "sim" else 2), times


@pytest.mark.parametrize("backend", ["sim", pytest.param("local", marks=pytest.mark.slow)])
def test_the_trace_plays_from_the_flows_start_on_the_sim_and_the_local_medium_process(tmp_path: Path,
                                                                                       backend: str) -> None:
    """A-B dead for the trace's second [2, 3) (-110 dBm both ways: an SINR of -16 dB, no rate gets through):
    A's frames to B fail every attempt then and are dropped (mac_retry), and none at -50 dBm.  The local medium
    process starts before the nodes' clock is fixed; it takes the flows' start from the t0 the runner writes
    (medium.t0.json) at its first frame, so the dead second is the flows' second 2 there too.  A
    replay aligned to the process's start instead (the refusal's reason before this was built) would put it
    1.5 s or more early (START_MARGIN_S and settling)."""
    out = dead_second_run(tmp_path, backend)
    df = pd.read_csv(out / "summary.csv")
    assert (df["status"] == "ok").all() and df["integrity_ok"].all(), df.to_string()
    assert_dead_second(mac_retry_times(out, backend), backend)
