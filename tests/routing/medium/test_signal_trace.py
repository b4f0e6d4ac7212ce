"""Rules of the signal replay (routing/medium/signal_trace.py, issue 25 item 2) one by one, in no real time: which
pair a link's column drives, the replay's time axis from the flows' start (``at_s`` added), the offset and the
loop passed on, the deferred start asked once at the first frame, and what a trace that cannot be replayed
reports (issue 30, item 4).
"""
from __future__ import annotations

from pathlib import Path
import pandas as pd
import pytest
from experiments.trace import COLUMNS, write
from routing.medium import signal_trace
from routing.medium.propagation import dbm_to_mw
from routing.medium.signal_trace import DeferredReplay, SignalReplay
from typing import Any, Callable
from experiments.runner import check_backend_support
from experiments.schema import ExperimentError, load_experiment


def trace(tmp: Path, rows: list[tuple[str, float, float]], name: str = "sig.csv") -> str:
    """A trace of (link, t_s, signal_dbm) rows, 1 s intervals, of one run."""
    df = pd.DataFrame([{"variant": "v", "repetition": 0, "link": link, "t_s": t, "dt_s": 1.0, "sent": 10,
                        "heard": 10, "delivery": 1.0, "etx": 1.0, "signal_dbm": dbm} for link, t, dbm in rows],
                      columns=COLUMNS)
    write(df, tmp / name)
    return str(tmp / name)


def test_a_links_column_drives_its_receiver_hearing_its_sender(tmp_path):
    f = trace(tmp_path, [("A>B", 0.0, -50.0), ("B>A", 0.0, -60.0), ("B>A", 1.0, -70.0)])
    got = signal_trace.series({"file": f}, [("A", "B"), ("B", "A")])
    assert got == {("B", "A"): [(0.0, -50.0, 1.0)], ("A", "B"): [(0.0, -60.0, 1.0), (1.0, -70.0, 1.0)]}


def test_the_replay_time_axis_offset_and_loop():
    rec = {("B", "A"): [(0.0, -50.0, 1.0), (1.0, -60.0, 1.0)]}
    plain = SignalReplay(rec, at_s=10.0, offset_s=0.0, loop=False)
    assert plain.mw("B", "A", int(10.5e9)) == pytest.approx(dbm_to_mw(-50.0))
    assert plain.mw("B", "A", int(11.0e9)) == pytest.approx(dbm_to_mw(-60.0))      # held from its start
    assert plain.mw("B", "A", int(13.0e9)) == pytest.approx(dbm_to_mw(-60.0))      # the last, held after the end
    shifted = SignalReplay(rec, at_s=10.0, offset_s=1.0, loop=False)               # trace second 1 at 10 s
    assert shifted.mw("B", "A", int(10.0e9)) == pytest.approx(dbm_to_mw(-60.0))
    looped = SignalReplay(rec, at_s=10.0, offset_s=0.0, loop=True)                 # a 2 s span, again from 12 s
    assert looped.mw("B", "A", int(12.5e9)) == pytest.approx(dbm_to_mw(-50.0))
    assert looped.mw("A", "B", int(12.5e9)) is None


def test_build_adds_at_s_to_the_flows_start_and_passes_offset_and_loop(tmp_path):
    f = trace(tmp_path, [("A>B", 0.0, -50.0), ("A>B", 1.0, -60.0), ("B>A", 0.0, -55.0)])
    links = [("A", "B"), ("B", "A")]
    r = signal_trace.build({"file": f, "at_s": 2.0, "offset_s": 0.0, "loop": False}, links, 1.0)
    assert isinstance(r, SignalReplay)
    assert r.mw("B", "A", int(3.9e9)) == pytest.approx(dbm_to_mw(-50.0))        # flows at 1 s, trace from 3 s
    assert r.mw("B", "A", int(4.0e9)) == pytest.approx(dbm_to_mw(-60.0))
    r = signal_trace.build({"file": f, "offset_s": 1.0}, links, 0.0)               # at_s defaults to 0
    assert r.mw("B", "A", 0) == pytest.approx(dbm_to_mw(-60.0))
    r = signal_trace.build({"file": f, "loop": True}, links, 0.0)
    assert r.mw("B", "A", int(2.5e9)) == pytest.approx(dbm_to_mw(-50.0))
    r = signal_trace.build({"file": f}, links, 0.0)                                # loop defaults to off
    assert r.mw("B", "A", int(2.5e9)) == pytest.approx(dbm_to_mw(-60.0))


def test_a_deferred_replay_asks_for_the_flows_start_once_at_its_first_frame(tmp_path):
    f = trace(tmp_path, [("A>B", 0.0, -50.0), ("A>B", 1.0, -60.0), ("B>A", 0.0, -55.0)])
    asked: list[int] = []

    def start() -> float:
        asked.append(1)
        return 5.0
    r = signal_trace.build({"file": f, "at_s": 0.5, "offset_s": 0.0, "loop": False}, [("A", "B"), ("B", "A")], start)
    assert isinstance(r, DeferredReplay) and asked == []                      # not asked before a frame
    assert r.mw("B", "A", int(6.4e9)) == pytest.approx(dbm_to_mw(-50.0))       # trace second 0.9
    assert r.mw("B", "A", int(6.5e9)) == pytest.approx(dbm_to_mw(-60.0))       # flows 5 s + at_s 0.5 + 1
    assert r.mw("A", "B", int(6.5e9)) == pytest.approx(dbm_to_mw(-55.0))
    assert asked == [1]
    d = DeferredReplay({("B", "A"): [(0.0, -50.0, 1.0), (1.0, -60.0, 1.0)]}, lambda: 0.0, offset_s=1.0, loop=True)
    assert d.mw("B", "A", 0) == pytest.approx(dbm_to_mw(-60.0))                # its offset ...
    assert d.mw("B", "A", int(1.5e9)) == pytest.approx(dbm_to_mw(-50.0))       # ... and its loop


def test_check_names_what_cannot_be_replayed(tmp_path):
    f = trace(tmp_path, [("A>B", 0.0, -50.0)])
    assert signal_trace.check({"file": f}, [("A", "B")]) == []
    [(key, why)] = signal_trace.check({"file": f}, [("A", "B"), ("B", "A")])
    assert key == "link" and "no link 'B>A'" in why
    [(key, why)] = signal_trace.check({"file": str(tmp_path / "none.csv")}, [("A", "B")])
    assert key == "file" and "no such trace file" in why
    bad = tmp_path / "bad.csv"
    bad.write_text("variant,repetition,link,t_s,dt_s\nv,x,A>B,0,1\n")
    [(key, why)] = signal_trace.check({"file": str(bad)}, [("A", "B")])
    assert key in ("file", "link", "run") and why


def test_a_deferred_replay_loops_when_asked(tmp_path):
    f = trace(tmp_path, [("A>B", 0.0, -50.0), ("A>B", 1.0, -60.0), ("B>A", 0.0, -55.0)])
    r = signal_trace.build({"file": f, "loop": True}, [("A", "B"), ("B", "A")], lambda: 0.0)
    assert r.mw("B", "A", int(2.5e9)) == pytest.approx(dbm_to_mw(-50.0))       # 2.5 s: again from the start


def test_the_replay_takes_the_run_it_is_told_and_errors_name_the_file(tmp_path):
    df = pd.DataFrame([{"variant": "v", "repetition": k, "link": "A>B", "t_s": 0.0, "dt_s": 1.0, "sent": 10,
                        "heard": 10, "delivery": 1.0, "etx": 1.0, "signal_dbm": dbm} for k, dbm in ((0, -50.0),
                                                                                                 (1, -70.0))],
                      columns=COLUMNS)
    write(df, tmp_path / "two.csv")
    f = str(tmp_path / "two.csv")
    assert signal_trace.series({"file": f, "run": "v/rep1"}, [("A", "B")]) == {("B", "A"): [(0.0, -70.0, 1.0)]}
    [(key, why)] = signal_trace.check({"file": f}, [("A", "B")])              # two runs, none named
    assert key == "run" and why.startswith(f"{f} holds 2 runs")
    garbage = tmp_path / "bad.parquet"
    garbage.write_bytes(b"not parquet at all")
    [(key, why)] = signal_trace.check({"file": str(garbage)}, [("A", "B")])
    assert key == "file" and why.startswith(f"{garbage}: cannot read it as a trace (")


# ====================================================================================================
# Recorded signals replayed into the medium's reception sinr (issue 25, item 2; routing/medium/signal_trace.py),
# in virtual time on the sim: the link A-B is strong (-50 dBm) until 2 s after the flow starts, then weak
# (-82 dBm, SINR 12 dB over the default noise floor); Minstrel moves the frames to low MCSs and the goodput
# falls with it; the same run without the trace stays at the top rates.


STRONG, WEAK, FADE_S = -50.0, -82.0, 2.0


def write_trace(tmp: Path, links: tuple[str, ...] = ("A>B", "B>A"),
                signal: Callable[[int], float] = lambda t: STRONG if t < FADE_S else WEAK) -> Path:
    rows = []
    for link in links:
        for t in range(-5, 60):
            rows.append({"variant": "pi", "repetition": 0, "link": link, "t_s": float(t), "dt_s": 1.0, "sent": 10,
                         "heard": 10, "delivery": 1.0, "etx": 1.0, "signal_dbm": signal(t)})
    p = tmp / "sig.csv"
    write(pd.DataFrame(rows, columns=COLUMNS), p)
    return p


def doc(medium: dict[str, Any] | None = None, **over: Any) -> dict[str, Any]:
    m = {"model": "dcf", "standard": "n", "reception": "sinr", "rate_control": "minstrel",
         "positions": {"A": [0, 0], "B": [10, 0]}}
    m.update(medium or {})
    d = {"name": "sig", "backend": "sim", "seed": 1, "repetitions": 1, "topology": {"chain": ["A", "B"]},
         "medium": m, "etx": {"settle_s": 1.0}, "limits": {"max_duration_s": 120},
         "flows": [{"sender": "A", "receiver": "B", "segments": 6000}], "variants": [{"name": "v"}]}
    d.update(over)
    return d


def test_the_replay_holds_each_recorded_signal_from_the_flows_start():
    r = SignalReplay({("B", "A"): [(0.0, -50.0, 1.0), (2.0, -80.0, 1.0)]}, at_s=1.0, offset_s=0.0, loop=False)
    assert r.mw("B", "A", int(0.5e9)) == pytest.approx(dbm_to_mw(-50.0))      # before the first: the first
    assert r.mw("B", "A", int(2.9e9)) == pytest.approx(dbm_to_mw(-50.0))
    assert r.mw("B", "A", int(3.1e9)) == pytest.approx(dbm_to_mw(-80.0))
    assert r.mw("A", "B", int(3.1e9)) is None                                  # not replayed: the fixed signal


def test_a_link_missing_from_the_signal_trace_is_refused_before_the_run(tmp_path: Path) -> None:
    write_trace(tmp_path, links=("A>B",))
    with pytest.raises(ExperimentError, match=r"medium\.signal_trace\.link: .*no link 'B>A'"):
        load_experiment(doc({"signal_trace": {"file": "sig.csv"}}), str(tmp_path / "t.yaml"))
    write_trace(tmp_path)
    with pytest.raises(ExperimentError, match=r"medium\.signal_trace\.file: .*no such trace file"):
        load_experiment(doc({"signal_trace": {"file": "nope.csv"}}), str(tmp_path / "t.yaml"))
    with pytest.raises(ExperimentError, match=r"medium\.signal_trace\.lop: unknown field"):
        load_experiment(doc({"signal_trace": {"file": "sig.csv", "lop": True}}), str(tmp_path / "t.yaml"))
    with pytest.raises(ExperimentError, match=r"medium\.signal_trace: set to .* but medium\.reception is 'range'"):
        load_experiment(doc({"signal_trace": {"file": "sig.csv"}, "reception": "range"}), str(tmp_path / "t.yaml"))
    exp = load_experiment(doc({"signal_trace": {"file": "sig.csv"}}), str(tmp_path / "t.yaml"))
    for backend in ("sim", "local", "netns"):      # each medium plays it from the flows' start (below)
        check_backend_support(exp, backend)
    with pytest.raises(ExperimentError, match=r"medium\.model: 'dcf' cannot run on backend pi"):
        check_backend_support(exp, "pi")
