"""Per-frame rates and rate control in the DCF medium (issue 24, item 3), in virtual time.

The medium takes each attempt's airtime from routing.medium.rates at the rate its link's controller
(routing.medium.rate_control.minstrel: FixedRate or Minstrel) gives for that attempt; these tests check it against the
arithmetic of routing.medium.rates, drive Minstrel over a per-rate loss injected through
``Medium.frame_error``, and check that the default (airtime simple, rate_control fixed) is today's
medium byte for byte.
"""
from __future__ import annotations

from tests import ROOT
from pathlib import Path
from routing.medium.rates import rate_set
from tests.runs import events, run_dir, write_exp


def test_minstrel_at_ht_rates_in_the_netns_medium_daemon(netns: Path) -> None:
    """As root: the netns medium daemon builds the same medium (kernel TCP on top): standard n with Minstrel
    reaches it.  The fixture skips without root and checks that no namespace or rule is left."""
    import subprocess
    import sys

    exp = write_exp(netns, segments=300, loss=0, max_s=120, settle=1.0,
                    medium={"model": "dcf", "standard": "n", "rate_control": "minstrel"})
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--backend", "netns",
                        "--out", str(netns / "runs"), "--no-plot"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = run_dir(netns / "runs") / "sack" / "rep0"
    mac = {e["station"]: e for e in events(rep, "medium") if e["ev"] == "mac"}
    assert set(mac) == set("ABCD")
    used = {r for m in mac.values() for r in m["rate_acks"]}
    assert {"ht-mcs0", "ht-mcs7"} <= used and used <= {r.name for r in rate_set("n")}, used
    frames = [e for e in events(rep, "medium") if e["ev"] == "frame"]
    assert frames and {e["rate"] for e in frames} <= {r.name for r in rate_set("n")} | {"erp-6"}
