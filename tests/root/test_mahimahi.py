"""Mahimahi mm-link traces (issue 25, item 4): a link of a trace exported as delivery opportunities, and a
Mahimahi trace imported as the link's rate (``link: {mahimahi: FILE}``) on sim, local (tests/routing/overlay/test_udp_link.py)
and netns, refused on pi.  The queue's rule in virtual time; a sim run's goodput under a trace whose rate changes; a netns
run (root) whose kernel TCP goodput tracks the trace's rate.
"""
from __future__ import annotations

from pathlib import Path
import pytest
import yaml
from tests.runs import start_run
from tests.routing.links.test_mahimahi import exp_doc, steady_trace
from tests.system.test_mahimahi import goodput


@pytest.mark.root
def test_on_netns_kernel_tcps_goodput_tracks_the_traces_rate(netns: Path) -> None:
    """Kernel TCP through held verdicts served by a 4 Mbit/s Mahimahi trace: the goodput between 50 % and
    100 % of the trace's rate (generous: the VM's late releases, docs/NETNS.md)."""
    steady_trace(netns / "l.mm", 4.0, seconds=120)
    exp = netns / "t.yaml"
    exp.write_text(yaml.safe_dump(exp_doc("netns", {"mahimahi": "l.mm"}, netns={"realtime": True})))
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    [run_dir] = list((netns / "runs" / "mm").iterdir())
    got = goodput(run_dir)
    print(f"netns goodput over a 4 Mbit/s Mahimahi link: {got:.2f} Mbit/s")
    assert 2.0 < got < 4.0, got
