"""Reception sinr on the local and netns backends: the local medium process and the netns medium daemon build
the same core (experiments.medium_spec.build_medium) with the same signals, and runs over them complete
(issue 24, item 2: every backend with a medium).  Real time: marked slow; the netns one root.
"""
from __future__ import annotations

from tests import ROOT
import subprocess
import sys
import pandas as pd
import pytest
import yaml
from tests.runs import events as netns_events, run_dir
from tests.loopback.test_medium_local import SINR_DOC




@pytest.mark.root
@pytest.mark.slow
def test_a_netns_run_with_reception_sinr_completes_and_the_channel_loses_frames(netns):
    doc = dict(SINR_DOC, name="t", backend="netns", tcp={"variant": "sack"}, netns={"realtime": True},
               loss={"default": {"model": "none"}}, limits={"max_duration_s": 120})
    exp = netns / "t.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = netns / "netns"
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--out", str(out), "--no-plot"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    row = pd.read_csv(run_dir(out) / "summary.csv").iloc[0]
    assert row["status"] == "ok" and row["integrity_ok"]
    mac = {e["station"]: e for e in netns_events(run_dir(out) / "reno" / "rep0", "medium") if e["ev"] == "mac"}
    assert set(mac) == {"A", "B", "C"} and sum(m["faded"] for m in mac.values()) > 0
