"""Per-frame rates and rate control in the DCF medium (issue 24, item 3), in virtual time.

The medium takes each attempt's airtime from routing.medium.rates at the rate its link's controller
(routing.medium.rate_control.minstrel: FixedRate or Minstrel) gives for that attempt; these tests check it against the
arithmetic of routing.medium.rates, drive Minstrel over a per-rate loss injected through
``Medium.frame_error``, and check that the default (airtime simple, rate_control fixed) is today's
medium byte for byte.
"""
from __future__ import annotations

from tests import DATA
import json
from pathlib import Path
from typing import Any
import pytest
from experiments.runner import run_experiment
from experiments.schema import load_experiment
from routing.medium.rates import rate_set


GOLDEN_DOC = {
    "name": "golden-medium-g", "backend": "sim", "seed": 4, "repetitions": 1,
    "loss": {"default": {"model": "bernoulli", "rate": 0.005}}, "etx": {"settle_s": 1.0},
    "medium": {"model": "dcf", "standard": "g"}, "tcp": {"variant": "sack"},
    "flows": [{"sender": "A", "receiver": "D", "segments": 800}],
    "variants": [{"name": "g"}, {"name": "g-rts", "medium": {"rts_threshold": 0}},
                 {"name": "b-1mbps", "medium": {"standard": "b", "rate_mbps": 1, "basic_rate_mbps": 1}}],
}


def mac_events(rep: Path, log: str | None = None) -> dict[str, dict[str, Any]]:
    out = {}
    for path in ([rep / f"{log}.log"] if log else rep.glob("*.log")):
        for e in map(json.loads, path.read_text().splitlines()):
            if e["ev"] == "mac":
                out[e.get("station", path.stem)] = e
    return out


def run(tmp: Path, doc: dict[str, Any]) -> Path:
    return run_experiment(load_experiment(doc, "rates.yaml"), out=tmp, jobs=1, plot=False, progress=lambda s: None)


def test_default_medium_runs_are_byte_identical_to_before_rates(tmp_path: Path) -> None:
    """tests/data/medium_golden_summary.csv was written by the code without per-frame rates (main at
    69adddd, with reception sinr) from GOLDEN_DOC: 802.11g, g with RTS/CTS, b at 1 Mb/s; every cell must be
    the same text.  (Against main at 74e6b41 every cell but cwnd_median and cwnd_mean was the same too:
    main's RFC 7661 cwnd commit changed those two.)  Rewritten by issue 39: the sender takes an RTT sample from
    every ACK of a segment sent once (tcp_user/sent.py), which moved the timing columns of these lossy runs.
    Issue 40 added the columns of what a flow delivered after the golden's: every golden cell must be the same
    text, and the new cells say that every flow delivered all it had to in duration_s, at goodput_mbps."""
    import csv
    d = run(tmp_path, GOLDEN_DOC)
    golden = DATA / "medium_golden_summary.csv"
    with golden.open() as f:
        want = list(csv.reader(f))
    with (d / "summary.csv").open() as f:
        got = list(csv.reader(f))
    width = len(want[0])
    assert got[0][width:] == ["delivered_bytes", "delivered_segments", "delivered_share", "ran_s", "delivered_mbps",
                              "route_changes_settling"]
    assert [row[:width] for row in got] == want
    col = {name: i for i, name in enumerate(got[0])}
    for row in got[1:]:
        assert row[col["status"]] == "ok" and row[col["delivered_share"]] == "1"
        assert row[col["delivered_segments"]] == row[col["segments"]]
        assert row[col["ran_s"]] == row[col["duration_s"]] and row[col["delivered_mbps"]] == row[col["goodput_mbps"]]
    mac = mac_events(d / "g" / "rep0")
    assert all(set(m["rate_attempts"]) <= {"54Mbps"} for m in mac.values())


DIAMOND = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]


GRID = [[f"N{r}{c}", f"N{r}{c + 1}"] for r in range(3) for c in range(2)] + \
       [[f"N{r}{c}", f"N{r + 1}{c}"] for r in range(2) for c in range(3)]


@pytest.mark.parametrize("links,flows", [
    (DIAMOND, [{"sender": "A", "receiver": "D", "segments": 300}]),
    (GRID, [{"sender": "N01", "receiver": "N21", "segments": 200},
            {"sender": "N10", "receiver": "N12", "segments": 200}]),
], ids=["diamond", "crossing-flows"])
def test_minstrel_on_the_sim_on_graphs(tmp_path: Path, links: list[list[str]], flows: list[dict[str, Any]]) -> None:
    doc = {"name": "r", "backend": "sim", "repetitions": 1, "etx": {"settle_s": 1.0}, "topology": {"links": links},
           "medium": {"model": "dcf", "standard": "n", "rate_control": "minstrel"}, "tcp": {"variant": "sack"},
           "flows": flows}
    d = run(tmp_path, doc)
    import pandas as pd
    df = pd.read_csv(d / "summary.csv")
    assert len(df) == len(flows) and (df["status"] == "ok").all() and df["integrity_ok"].all()
    mac = mac_events(d / "default" / "rep0")
    senders = {f["sender"] for f in flows}
    for n in senders:   # Minstrel climbed from MCS 0 (no statistics before the data) through sampling to MCS 7
        counts, acks = mac[n]["rate_attempts"], mac[n]["rate_acks"]
        assert "erp-6" in counts and "erp-6" not in acks, counts   # ETX probes: group-addressed, at 6 Mb/s
        assert {"ht-mcs0", "ht-mcs7"} <= set(acks) and len(acks) >= 4, (counts, acks)
    assert all(set(m["rate_attempts"]) <= {r.name for r in rate_set("n")} | {"erp-6"} for m in mac.values())
