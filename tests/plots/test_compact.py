"""plots.compact: a finished repetition's logs as one Parquet file, read back as the JSON Lines were."""
from tests import ROOT
import json
import subprocess
import sys
from pathlib import Path
import pandas as pd
import pytest
from plots.compact import PARQUET, compact_rep
from plots.logs import load_rep
from plots.summary import rep_rows
from plots.testing import basic_flow_events, ev, write_rep




EXP = """
name: c
backend: sim
repetitions: 1
etx: {settle_s: 2}
logs: {compact: %s}
loss: {default: {model: bernoulli, rate: 0.005}}
flows: [{sender: A, receiver: D, segments: 1500}]
variants:
  - {name: sack, tcp: {variant: sack}}
  - {name: aspan, tcp: {variant: sack}, snoop: {policy: adaptive, pkt_qos: 1.0}}
"""


def test_a_compacted_repetition_loads_as_its_logs_did(tmp_path):
    events = basic_flow_events() + [ev(9.0, "B", "node_stop", address="10.2.1.2",
                                       drops={"loss": 3, "queue": 0}, note="a \"quoted\" text")]
    rep = write_rep(tmp_path / "run", "aspan", 0, events)
    with (rep / "C.log").open("a") as f:
        f.write('{"t": 9.5, "node": "C", "ev": "tx", "fl')           # a crashed writer's last line
    before = load_rep(rep)
    compact_rep(rep)
    assert not list(rep.glob("*.log")) and (rep / PARQUET).is_file()
    after = load_rep(rep)
    assert after.bad_lines == before.bad_lines == 1 and after.bad_lines_by_node == {"C": 1}
    pd.testing.assert_frame_equal(after.events.reset_index(drop=True), before.events.reset_index(drop=True),
                                  check_dtype=False)
    [stop] = after.events[after.events["ev"] == "node_stop"].to_dict("records")
    assert stop["drops"] == {"loss": 3, "queue": 0} and stop["note"] == 'a "quoted" text'
    assert rep_rows(after, "aspan", 0) == rep_rows(before, "aspan", 0)


def test_the_logs_stay_when_the_parquet_file_is_not_whole(tmp_path, monkeypatch):
    import pyarrow.parquet as pq
    rep = write_rep(tmp_path / "run", "aspan", 0, basic_flow_events())

    class Short:
        num_rows = 1
    monkeypatch.setattr(pq, "read_metadata", lambda path: Short())
    with pytest.raises(OSError, match="the logs are kept"):
        compact_rep(rep)
    assert list(rep.glob("*.log")) and not (rep / PARQUET).exists() and not list(rep.glob("*.tmp"))


def run(tmp_path: Path, compact: bool) -> Path:
    exp = tmp_path / f"c-{compact}.yaml"
    exp.write_text(EXP % str(compact).lower())
    out = tmp_path / f"out-{compact}"
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--out", str(out), "--no-plot"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    [run_dir] = list((out / "c").iterdir())
    return run_dir


def test_a_compacted_run_has_the_same_summary_on_a_fifth_of_the_disk_or_less(tmp_path):
    plain, compacted = run(tmp_path, False), run(tmp_path, True)
    assert (plain / "summary.csv").read_bytes() == (compacted / "summary.csv").read_bytes()
    assert not list(compacted.glob("*/rep*/*.log")) and len(list(compacted.glob("*/rep*/" + PARQUET))) == 2
    size = lambda d: sum(p.stat().st_size for p in d.glob("*/rep*/*") if p.suffix in (".log", ".parquet"))  # noqa: E731
    assert size(compacted) * 5 <= size(plain)


def test_the_medium_counters_are_read_from_a_compacted_repetition(tmp_path):
    from plots.medium import mac_frame
    mac = dict(frames=10, attempts=12, retries=2, collisions=1, hidden=0, ack_lost=1, mac_drops=0,
               queue_drops=0, airtime_ns=5_000_000, elapsed_s=4.0)
    rep = write_rep(tmp_path / "run", "aspan", 0, basic_flow_events())
    for n in ("A", "B", "C", "D"):          # written as the nodes write them: no spaces
        with (rep / f"{n}.log").open("a") as f:
            f.write(json.dumps(ev(9.0, n, "mac", **mac), separators=(",", ":")) + "\n")
    before = mac_frame(tmp_path / "run")
    compact_rep(rep)
    after = mac_frame(tmp_path / "run")
    assert len(before) == 4 and list(after["node"]) == ["A", "B", "C", "D"]
    pd.testing.assert_frame_equal(after, before, check_dtype=False)
