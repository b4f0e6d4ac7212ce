"""Issue 27, item 6: ``aspan plot RUN --resummarize`` on a run directory whose meta.json is missing or
not whole rebuilds what it can from the node logs and says what it assumed, or exits non-zero with the
reason; never an empty summary with exit 0.
"""
from __future__ import annotations

import json
import os
import signal
import pandas as pd
from tests.runs import kill_group, node_pids, alive, start_run, wait_for
from tests.system.test_resummarize import _exp, _plot


def test_a_local_run_killed_with_sigkill_is_summarized_from_its_logs(tmp_path):
    """The runner dies with kill -9 mid-repetition: its nodes stop by themselves (they watch their parent);
    --resummarize gives the repetition's row (its meta.json says running: the note says what was assumed)."""
    p = start_run(_exp(tmp_path, 2, 200_000, backend="local"), tmp_path / "out", "--no-plot")
    try:
        rep = wait_for(lambda: next((tmp_path / "out" / "t").glob("*/default/rep0"), None), 60, "rep dir")
        wait_for(lambda: (rep / "D.log").exists() and '"deliver"' in (rep / "D.log").read_text(), 60,
                 "data flowing")
        pids = node_pids(rep)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    finally:
        kill_group(p)
    wait_for(lambda: not any(alive(pid) for pid in pids.values()), 15, "the nodes to stop")
    run = rep.parent.parent
    assert not (run / "summary.csv").exists()
    assert json.loads((rep / "meta.json").read_text())["status"] == "running"
    r = _plot(run)
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(run / "summary.csv")
    assert list(df["repetition"]) == [0] and list(df["status"]) == ["incomplete"]
    assert "default rep 0: meta.json says running: the runner did not record how it ended" in r.stderr
