"""plots.logs and plots.summary on hand-written run directories (docs/LOGS.md)."""
from __future__ import annotations

from tests import ROOT
import json
import math
import re
from pathlib import Path
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from plots.logs import aligned_times, iter_reps, load_rep, read_node_log
from plots.run_summary import write_summary
from plots.summary import REP_COLUMNS, SUMMARY_COLUMNS, read_summary, summarize_flows, summarize_rep
from plots.testing import FLOW, basic_flow_events, ev, reverse_flow_events, write_experiment, write_rep


LOGS_MD_COLUMNS = (
    "variant, flow, repetition, seed, segments, duration_s, goodput_mbps, losses_dupack, losses_rto, "
    "cwnd_median, tx_per_pkt_p50, tx_per_pkt_p99, tx_per_pkt_max, cache_max_segments, "
    "snoop_hits, local_retransmissions, backend, integrity_ok, drops_loss, drops_queue, "
    "drops_malformed, status, cache_insertions, premature_retransmissions, cwnd_mean, "
    "n_flows, cache_mean_segments, route_changes, reroute_s, recovery_s, delivered_bytes, delivered_segments, "
    "delivered_share, ran_s, delivered_mbps, route_changes_settling")


def test_columns_are_the_contract() -> None:
    assert SUMMARY_COLUMNS == LOGS_MD_COLUMNS.split(", ")
    assert SUMMARY_COLUMNS[:16][-1] == "local_retransmissions"
    # the columns that identify a row come first (issue 28, item 6)
    assert SUMMARY_COLUMNS[:4] == ["variant", "flow", "repetition", "seed"]


def test_every_column_defined_in_logs_md() -> None:
    """docs/LOGS.md's column table defines every column with its scope (flow or repetition)."""
    doc = (ROOT / "docs" / "LOGS.md").read_text()
    scopes: dict[str, str] = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1] in ("flow", "repetition"):
            names = re.findall(r"`([a-z0-9_]+)`", cells[0])
            base = names[0].rsplit("_", 1)[0] if names else ""
            for n in names:   # `tx_per_pkt_p50`, `_p99`, `_max`: a suffix extends the first
                scopes[base + n if n.startswith("_") else n] = cells[1]
    assert set(SUMMARY_COLUMNS) <= set(scopes), set(SUMMARY_COLUMNS) - set(scopes)
    per_rep = {c for c, s in scopes.items() if s == "repetition"}
    assert per_rep - {"variant", "repetition", "seed", "backend"} == set(REP_COLUMNS)


def test_summary_values_exact(tmp_path: Path) -> None:
    rep_dir = write_rep(tmp_path, "snoop", 0, basic_flow_events(losses=2), seed=7)
    row = summarize_rep(load_rep(rep_dir))
    assert list(row) == SUMMARY_COLUMNS
    assert row["variant"] == "snoop" and row["repetition"] == 0 and row["seed"] == 7
    assert row["segments"] == 3
    assert row["duration_s"] == pytest.approx(2.0)          # flow_start 1.0 -> D flow_end 3.0
    assert row["goodput_mbps"] == pytest.approx(3000 * 8 / 2.0 / 1e6)
    assert (row["losses_dupack"], row["losses_rto"]) == (2, 1)
    assert row["cwnd_median"] == pytest.approx(3.5)          # 2,3,4,5 segments
    # tx per (flow, seq): [3, 6, 3] -> sorted [3, 3, 6]
    assert row["tx_per_pkt_p50"] == 3.0
    assert row["tx_per_pkt_p99"] == pytest.approx(3 + 0.98 * 3)
    assert row["tx_per_pkt_max"] == 6 and isinstance(row["tx_per_pkt_max"], int)
    assert row["cache_max_segments"] == 4                    # B peaks at 3, C at 4
    assert row["cache_insertions"] == 7                      # B: 1,2,3,2,0 -> 3; C: 1,4,0 -> 4
    assert row["snoop_hits"] == 2
    assert row["local_retransmissions"] == 1
    assert row["backend"] == "sim"
    assert row["integrity_ok"] is True
    assert (row["drops_loss"], row["drops_queue"], row["drops_malformed"]) == (1, 1, 1)
    assert row["status"] == "ok"


def test_no_snoop_has_zero_cache_and_hits(tmp_path: Path) -> None:
    row = summarize_rep(load_rep(write_rep(tmp_path, "reno", 0,
                                           basic_flow_events(snoop=False))))
    assert (row["cache_max_segments"], row["snoop_hits"], row["local_retransmissions"]) == \
        (0, 0, 0)
    assert row["tx_per_pkt_max"] == 6


def test_cwnd_only_from_sender_and_in_segments(tmp_path: Path) -> None:
    events = basic_flow_events(cwnds=[1448, 2896, 5792])
    for e in events:
        if e["ev"] == "cwnd":
            e["mss"] = 1448
    # a receiver-side cwnd log must not count
    events.append(ev(2.0, "D", "cwnd", cwnd=100 * 1448, ssthresh=1, mss=1448))
    row = summarize_rep(load_rep(write_rep(tmp_path, "v", 0, events)))
    assert row["cwnd_median"] == 2.0


def test_cwnd_without_mss_uses_segment_size(tmp_path: Path) -> None:
    events = basic_flow_events(cwnds=[3000, 9000])
    for e in events:
        e.pop("mss", None)
    row = summarize_rep(load_rep(write_rep(tmp_path, "v", 0, events)))
    assert row["cwnd_median"] == 6.0


def test_incomplete_and_failed(tmp_path: Path) -> None:
    events = basic_flow_events(finish=False)
    row = summarize_rep(load_rep(write_rep(tmp_path, "v", 0, events)))
    assert row["status"] == "incomplete"
    assert math.isnan(row["duration_s"]) and math.isnan(row["goodput_mbps"])
    assert row["integrity_ok"] is None
    assert row["losses_rto"] == 1  # everything else still counted
    failed = summarize_rep(load_rep(write_rep(tmp_path, "v", 1, events, status="failed",
                                              error="node C crashed")))
    assert failed["status"] == "failed"
    done_but_failed = summarize_rep(load_rep(write_rep(tmp_path, "v", 2, basic_flow_events(),
                                                       status="failed")))
    assert done_but_failed["status"] == "failed"


def test_integrity_false(tmp_path: Path) -> None:
    events = basic_flow_events()
    for e in events:
        if e["ev"] == "flow_end" and e["node"] == "D":
            e["ok"] = False
    assert summarize_rep(load_rep(write_rep(tmp_path, "v", 0, events)))["integrity_ok"] is False


def test_clock_offsets_align_duration(tmp_path: Path) -> None:
    # D's clock runs 0.5 s ahead of the reference: its flow_end at 3.0 is 2.5 on the reference.
    rep = load_rep(write_rep(tmp_path, "v", 0, basic_flow_events(),
                             clock_offsets={"A": 0.0, "B": 0.0, "C": 0.0, "D": 0.5}))
    row = summarize_rep(rep)
    assert row["duration_s"] == pytest.approx(1.5)
    assert row["goodput_mbps"] == pytest.approx(3000 * 8 / 1.5 / 1e6)
    t = aligned_times(rep.events, rep.meta)
    assert (t[rep.events["node"] == "D"] == rep.events.loc[rep.events["node"] == "D", "t"] - 0.5
            ).all()


def test_wall_clock_times(tmp_path: Path) -> None:
    events = basic_flow_events(t_start=1_763_800_000.25, t_end=1_763_800_012.75)
    row = summarize_rep(load_rep(write_rep(tmp_path, "v", 0, events, backend="local")))
    assert row["duration_s"] == pytest.approx(12.5)
    assert row["backend"] == "local"


def test_truncated_last_line_is_counted(tmp_path: Path) -> None:
    rep_dir = write_rep(tmp_path, "v", 0, basic_flow_events(),
                        tail={"C": '{"t": 2.4, "node": "C", "ev": "tx", "flo'})
    events, bad = read_node_log(rep_dir / "C.log")
    assert bad == 1
    assert len(events) == sum(1 for e in basic_flow_events() if e["node"] == "C")
    rep = load_rep(rep_dir)
    assert rep.bad_lines == 1 and rep.bad_lines_by_node == {"C": 1}
    assert summarize_rep(rep)["tx_per_pkt_max"] == 6


def test_bad_lines_in_middle_blank_lines_and_missing_node(tmp_path: Path) -> None:
    log = tmp_path / "B.log"
    log.write_bytes(b'{"t": 1, "ev": "hit", "flow": "f", "seq": 0}\n'
                    b"\n"
                    b"not json\n"
                    b'[1, 2]\n'
                    b'{"node": "B", "ev": "hit"}\n'          # no t
                    b'{"t": 2, "node": "B", "ev": "hit"}\n'
                    b'{"t": 3, "node": "B", "ev": "ca\xc3')     # truncated mid UTF-8
    events, bad = read_node_log(log)
    assert bad == 4
    assert [e["t"] for e in events] == [1, 2]
    assert events[0]["node"] == "B"  # filled from the file name


def test_empty_log(tmp_path: Path) -> None:
    (tmp_path / "A.log").write_text("")
    assert read_node_log(tmp_path / "A.log") == ([], 0)


def test_events_frame_columns(tmp_path: Path) -> None:
    rep = load_rep(write_rep(tmp_path, "v", 0, basic_flow_events()))
    df = rep.events
    assert list(df.columns[:3]) == ["t", "node", "ev"]
    assert {"flow", "seq", "kind", "cwnd", "segments", "reason", "ok"} <= set(df.columns)
    assert len(df) == len(basic_flow_events())
    assert df.loc[df["ev"] == "cwnd", "flow"].isna().all()
    assert set(df["node"]) == {"A", "B", "C", "D"}
    assert rep.meta["flows"][0]["receiver"] == "D"


def test_empty_rep(tmp_path: Path) -> None:
    rep_dir = write_rep(tmp_path, "v", 0, [], status="failed", error="did not start")
    rep = load_rep(rep_dir)
    assert rep.events.empty and list(rep.events.columns) == ["t", "node", "ev"]
    row = summarize_rep(rep)
    assert row["status"] == "failed"
    assert row["tx_per_pkt_max"] is None and math.isnan(row["tx_per_pkt_p50"])
    assert math.isnan(row["cwnd_median"])


def test_roles_by_address_and_from_flow_id(tmp_path: Path) -> None:
    """meta flows may name nodes by address; without meta flows the flow id gives the receiver."""
    rep_dir = write_rep(tmp_path, "v", 0, basic_flow_events())
    meta = json.loads((rep_dir / "meta.json").read_text())
    meta["flows"] = [{"sender": "10.2.1.1", "receiver": "10.2.1.4", "segments": 3,
                      "segment_size": 1000}]
    (rep_dir / "meta.json").write_text(json.dumps(meta))
    assert summarize_rep(load_rep(rep_dir))["duration_s"] == pytest.approx(2.0)
    meta["flows"] = []
    (rep_dir / "meta.json").write_text(json.dumps(meta))
    row = summarize_rep(load_rep(rep_dir))
    assert row["duration_s"] == pytest.approx(2.0) and row["segments"] == 3


def test_sender_flow_end_alone_is_incomplete(tmp_path: Path) -> None:
    events = [e for e in basic_flow_events() if not (e["ev"] == "flow_end" and e["node"] == "D")]
    assert summarize_rep(load_rep(write_rep(tmp_path, "v", 0, events)))["status"] == "incomplete"


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_experiment(run, ["snoop", "reno"])
    for k in (0, 1, 10, 2):
        write_rep(run, "reno", k, basic_flow_events(snoop=False, losses=k))
        write_rep(run, "snoop", k, basic_flow_events(losses=k))
    return run


def test_iter_reps_order(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (run / "figures").mkdir()
    (run / "reno" / "notes").mkdir()
    reps = list(iter_reps(run))
    assert [(v, k) for v, k, _ in reps] == [("snoop", 0), ("snoop", 1), ("snoop", 2),
                                            ("snoop", 10), ("reno", 0), ("reno", 1),
                                            ("reno", 2), ("reno", 10)]
    assert reps[0][2] == run / "snoop" / "rep0"
    (run / "experiment.yaml").unlink()
    assert [v for v, _, _ in iter_reps(run)][:4] == ["reno"] * 4   # alphabetical


def test_iter_reps_unlisted_variants_come_last(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_experiment(run, ["z"])
    for v in ("a", "z", "m"):
        write_rep(run, v, 0, [])
    (run / "m" / "rep1").mkdir()  # no meta.json: not a rep
    assert [v for v, _, _ in iter_reps(run)] == ["z", "a", "m"]


def test_write_summary_deterministic(tmp_path: Path) -> None:
    run = _run(tmp_path)
    df = write_summary(run)
    first = (run / "summary.csv").read_bytes()
    write_summary(run)
    assert (run / "summary.csv").read_bytes() == first
    lines = first.decode().splitlines()
    assert lines[0] == ",".join(SUMMARY_COLUMNS)
    assert len(lines) == 9
    assert lines[1] == ("snoop,A->D:6001,0,1000,3,2,0.012,0,1,3.5,3,5.94,6,4,2,1,sim,True,1,1,1,ok,7,0,4.68421,"
                        "1,0.065,0,,,3000,3,1,2,0.012,0")
    assert list(df["variant"]) == ["snoop"] * 4 + ["reno"] * 4
    assert list(df["repetition"]) == [0, 1, 2, 10] * 2


def test_summary_csv_float_format_and_missing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_rep(run, "v", 0, basic_flow_events(t_start=0.0, t_end=3.0))
    write_rep(run, "v", 1, basic_flow_events(finish=False))
    write_summary(run)
    lines = (run / "summary.csv").read_text().splitlines()
    first = dict(zip(SUMMARY_COLUMNS, lines[1].split(",")))
    assert (first["duration_s"], first["goodput_mbps"]) == ("3", "0.008")
    # incomplete: no duration/goodput/integrity -> empty cells
    cells = dict(zip(SUMMARY_COLUMNS, lines[2].split(",")))
    assert cells["duration_s"] == "" and cells["goodput_mbps"] == ""
    assert cells["integrity_ok"] == "" and cells["status"] == "incomplete"
    assert first["goodput_mbps"] == "%.6g" % (3000 * 8 / 3.0 / 1e6)


def test_read_summary_round_trip(tmp_path: Path) -> None:
    run = _run(tmp_path)
    written = write_summary(run)
    back = read_summary(run)
    pd.testing.assert_frame_equal(written, back, check_exact=False, rtol=1e-5)
    assert back["tx_per_pkt_max"].dtype == "Int64"
    assert back["integrity_ok"].dtype == "boolean"


def test_write_summary_rejects_non_run_dir(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    with pytest.raises(ValueError, match="run directory"):
        write_summary(tmp_path / "x")


def test_many_events_load_fast_enough(tmp_path: Path) -> None:
    """30,000 tx events across nodes: frame built once, counts right."""
    events = [ev(0.0, "A", "flow_start", flow=FLOW, segments=10000, segment_size=1000)]
    for s in range(10000):
        events += [ev(s * 1e-3, n, "tx", flow=FLOW, seq=s * 1000, len=1000,
                      kind="send" if n == "A" else "fwd", hop=h) for h, n in enumerate("ABC")]
    events.append(ev(11.0, "D", "flow_end", flow=FLOW, bytes=10_000_000, ok=True))
    rep = load_rep(write_rep(tmp_path, "v", 0, events, segments=10000))
    assert len(rep.events) == 30002
    row = summarize_rep(rep)
    assert (row["tx_per_pkt_p50"], row["tx_per_pkt_p99"], row["tx_per_pkt_max"]) == (3, 3, 3)
    assert row["goodput_mbps"] == pytest.approx(80e6 / 11.0 / 1e6)
    assert np.isnan(row["cwnd_median"])


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=2000))
def test_any_truncation_never_raises(tmp_path: Path, cut: int) -> None:
    """A log cut at any byte (a crash) parses: complete lines kept, at most one line skipped."""
    full = "".join(json.dumps(e) + "\n" for e in basic_flow_events() if e["node"] == "B")
    data = full.encode()[:cut]
    log = tmp_path / "B.log"
    log.write_bytes(data)
    events, bad = read_node_log(log)
    complete = data.count(b"\n")
    assert len(events) in (complete, complete + 1) and bad <= 1
    assert len(events) + bad == len([ln for ln in data.split(b"\n") if ln.strip()])


@given(counts=st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=30))
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_tx_percentiles_match_numpy(tmp_path: Path, counts: list[int]) -> None:
    events = [ev(0.0, "A", "flow_start", flow=FLOW, segments=len(counts), segment_size=1000)]
    for seq, n in enumerate(counts):
        events += [ev(0.1, "ABC"[i % 3], "tx", flow=FLOW, seq=seq * 1000, len=1000,
                      kind="fwd", hop=i % 3) for i in range(n)]
    rep = load_rep(write_rep(tmp_path / str(len(counts)), "v", 0, events))
    row = summarize_rep(rep)
    assert row["tx_per_pkt_p50"] == pytest.approx(np.percentile(counts, 50))
    assert row["tx_per_pkt_p99"] == pytest.approx(np.percentile(counts, 99))
    assert row["tx_per_pkt_max"] == max(counts)


TWO_FLOWS = [{"sender": "A", "receiver": "D", "segments": 3, "segment_size": 1000},
             {"sender": "D", "receiver": "A", "segments": 2, "segment_size": 1000}]


def _two_flow_events() -> list[dict]:
    return sorted(basic_flow_events(losses=2) + reverse_flow_events(), key=lambda e: e["t"])


def test_two_flows_one_row_each(tmp_path: Path) -> None:
    """Issue 15 item 1: A->D and D->A in one repetition give one row each, nothing merged."""
    rep = load_rep(write_rep(tmp_path / "two", "v", 0, _two_flow_events(), flows=TWO_FLOWS))
    ad, da = summarize_flows(rep)
    assert (ad["flow"], da["flow"]) == ("A->D:6001", "D->A:6002")
    assert ad["n_flows"] == da["n_flows"] == 2
    # A->D is exactly what it is alone, in every per-flow column
    alone = summarize_rep(load_rep(write_rep(tmp_path / "one", "v", 0,
                                             basic_flow_events(losses=2))))
    for col in SUMMARY_COLUMNS:
        if col not in REP_COLUMNS:
            assert ad[col] == alone[col], col
    assert da["segments"] == 2
    assert da["duration_s"] == pytest.approx(1.0)                # D 1.5 -> A 2.5
    assert da["goodput_mbps"] == pytest.approx(2000 * 8 / 1.0 / 1e6)
    assert (da["losses_dupack"], da["losses_rto"]) == (0, 2)       # flow-less, sender D
    assert da["cwnd_median"] == 20.0
    assert (da["tx_per_pkt_p50"], da["tx_per_pkt_max"]) == (3.5, 4)
    assert (da["snoop_hits"], da["local_retransmissions"]) == (1, 1)
    assert da["integrity_ok"] is True and da["status"] == "ok"
    # the per-repetition columns: the same on both rows (cache and drop events have no flow)
    for col in REP_COLUMNS:
        assert ad[col] == da[col], col
    assert (ad["cache_insertions"], ad["drops_loss"]) == (7, 2)
    with pytest.raises(ValueError, match="summarize_flows"):
        summarize_rep(rep)


def test_two_flows_summary_csv(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_experiment(run, ["v"])
    write_rep(run, "v", 0, _two_flow_events(), flows=TWO_FLOWS)
    write_rep(run, "v", 1, _two_flow_events(), flows=TWO_FLOWS)
    df = read_summary(write_summary(run).pipe(lambda _d: run))
    assert list(df["flow"]) == ["A->D:6001", "D->A:6002"] * 2
    assert list(df["repetition"]) == [0, 0, 1, 1]
    assert list(df["segments"]) == [3, 2, 3, 2]


def test_flow_that_never_started_keeps_its_row(tmp_path: Path) -> None:
    events = basic_flow_events()
    rows = summarize_flows(load_rep(write_rep(tmp_path, "v", 0, events, flows=TWO_FLOWS)))
    assert [r["flow"] for r in rows] == ["A->D:6001", "D->A"]
    assert rows[1]["status"] == "incomplete" and rows[1]["segments"] == 2
    assert rows[0]["status"] == "ok"


def test_cache_time_mean(tmp_path: Path) -> None:
    # window 1.0 -> 3.0 s; B holds 1,2,3,2 segments 10 ms each, C 1,4 -> (0.08 + 0.05) / 2
    row = summarize_rep(load_rep(write_rep(tmp_path, "v", 0, basic_flow_events())))
    assert row["cache_mean_segments"] == pytest.approx(0.065)
    events = basic_flow_events(snoop=False)
    events += [ev(0.5, "B", "cache", segments=10, bytes=1), ev(2.0, "B", "cache", segments=0,
                                                              bytes=0)]
    row = summarize_rep(load_rep(write_rep(tmp_path, "w", 0, events)))
    assert row["cache_mean_segments"] == pytest.approx(10 * 1.0 / 2.0)  # in force at t0


def test_a_side_connection_between_the_flows_nodes_is_not_a_flow(tmp_path: Path) -> None:
    """iperf3 on kernel TCP opens a control connection before its data stream (same nodes, same
    server port): it is forwarded and logged, but the experiment's flow is the one that started."""
    from plots.flows import rep_flows
    from plots.logs import load_rep
    from plots.testing import FLOW, basic_flow_events, ev
    control = "10.2.1.1:40000>10.2.1.4:6001"
    events = [ev(0.5, "B", "tx", flow=control, seq=1, len=37, kind="fwd", hop=1)] + basic_flow_events()
    rep = write_rep(tmp_path / "run", "aspan", 0, events)
    [flow] = rep_flows(load_rep(rep))
    assert flow.key == FLOW
