"""Recorded signals replayed into the medium's reception sinr (issue 25, item 2; routing/medium/signal_trace.py),
in virtual time on the sim: the link A-B is strong (-50 dBm) until 2 s after the flow starts, then weak
(-82 dBm, SINR 12 dB over the default noise floor); Minstrel moves the frames to low MCSs and the goodput
falls with it; the same run without the trace stays at the top rates.
"""
from __future__ import annotations

from pathlib import Path
import pandas as pd
import pytest
from tests.loopback.test_signal_trace import assert_dead_second, dead_second_run, mac_retry_times


@pytest.mark.root
def test_the_netns_medium_daemon_plays_the_trace_from_the_flows_start(netns: Path) -> None:  # noqa: F811
    """The same dead second under kernel TCP: the netns medium daemon's clock starts with it, and it plays the
    trace from the nodes' t0 + settling (its config), as the loss it draws for radio errors."""
    out = dead_second_run(netns, "netns", netns={"realtime": True})
    df = pd.read_csv(out / "summary.csv")
    assert (df["status"] == "ok").all(), df.to_string()
    assert_dead_second(mac_retry_times(out, "netns"), "netns")
