"""``medium.rts_threshold`` on every backend with a medium (issue 24, item 1): the sim, the local medium
process and the netns medium daemon build their medium with experiments.medium_spec.build_medium, so
each runs RTS/CTS from the same setting; the schema refuses it where it cannot mean anything.
"""
from __future__ import annotations

from tests import ROOT
from pathlib import Path
from tests.runs import events, run_dir, write_exp


def test_rts_cts_in_the_netns_medium_daemon(netns: Path) -> None:
    """As root: the netns medium daemon runs RTS/CTS from the same setting (kernel TCP on top); the fixture
    skips without root and checks that no namespace or rule is left."""
    import subprocess
    import sys

    exp = write_exp(netns, segments=300, loss=0, max_s=120, settle=1.0,
                    medium={"model": "dcf", "standard": "b", "rts_threshold": 0})
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--backend", "netns",
                        "--out", str(netns / "runs"), "--no-plot"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = run_dir(netns / "runs") / "sack" / "rep0"
    mac = {e["station"]: e for e in events(rep, "medium") if e["ev"] == "mac"}
    assert set(mac) == set("ABCD") and all(m["rts"] > 0 for m in mac.values()), mac
