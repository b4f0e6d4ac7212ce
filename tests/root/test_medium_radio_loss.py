"""Loss as radio error (issue 24, item 7): ``layer: radio`` on a loss spec is drawn by the dcf medium per
transmission attempt and retried by the link layer; ``layer: above_mac`` (the default) is dropped by the
receiving node and not retried.  Virtual time (the medium core, the sim backend); one local run.
"""
from __future__ import annotations

from tests import ROOT
import csv
import subprocess
import sys
from pathlib import Path
import pytest
import yaml
from tests.runs import events as netns_events, run_dir
from tests.system.test_medium_radio_loss import _doc




# ---- the netns backend: the medium daemon draws it, the nodes' handlers and iptables drop nothing ---------
@pytest.mark.root
@pytest.mark.slow
def test_netns_medium_daemon_retries_radio_loss(netns: Path) -> None:   # noqa: F811  (the fixture)
    doc = _doc(None, name="t", backend="netns", netns={"realtime": True}, limits={"max_duration_s": 120},
               loss={"nodes": {"B": {"model": "bernoulli", "rate": 0.3, "layer": "radio"}},
                     "links": {"D>B": {"model": "bernoulli", "rate": 0.3, "layer": "radio"}}},
               flows=[{"sender": "A", "receiver": "D", "segments": 150}])
    exp = netns / "t.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = netns / "netns"
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--out", str(out), "--no-plot"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(run_dir(out) / "summary.csv", newline="") as f:
        row = next(csv.DictReader(f))
    assert row["status"] == "ok" and int(row["drops_loss"]) == 0
    mac = {e["station"]: e for e in netns_events(run_dir(out) / "v" / "rep0", "medium") if e["ev"] == "mac"}
    assert mac["A"]["errors"] > 0 and mac["D"]["errors"] > 0 and mac["A"]["retries"] > 0
