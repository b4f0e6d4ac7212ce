"""routing/links/trace_loss.py's replay rules at their edges (issue 30, mutation run; issue 25 for the rules).

From the module docstring: trace time = offset_s + (now - at_s); an interval's delivery holds from its start
to the next one's (no interpolation); before the first interval the first, after the last the last, unless
``loop``: then the trace starts again after its span (first start to last end); a packet is lost when the
node's draw is below 1 - delivery; ``smooth_s`` takes each interval over the intervals within smooth_s / 2,
Σheard / Σsent when the counts are known, else the mean.
"""
from __future__ import annotations

import random
import pytest
from routing.links.trace_loss import TraceLoss, link_series, smoothed


SERIES = [(10.0, 1.0, 1.0), (11.0, 0.75, 1.0), (13.0, 0.5, 2.0)]   # (t_s, delivery, dt_s); 12 s: a gap


class Draws:
    def __init__(self, *values):
        self.values = list(values)

    def random(self):
        return self.values.pop(0)


def test_each_interval_holds_until_the_next_and_the_ends_hold():
    m = TraceLoss(SERIES, 0.0, 0.0, False, random.Random(1))
    got = [m.rate(t) for t in (0.0, 9.99, 10.0, 10.99, 11.0, 12.5, 12.999, 13.0, 100.0)]
    assert got == [0.0, 0.0, 0.0, 0.0, 0.25, 0.25, 0.25, 0.5, 0.5]


def test_trace_time_is_offset_plus_the_time_since_at():
    m = TraceLoss(SERIES, 100.0, 10.0, False, random.Random(1))
    assert [m.rate(100.0), m.rate(100.999), m.rate(101.0), m.rate(103.0)] == [0.0, 0.0, 0.25, 0.5]


def test_a_looped_trace_starts_again_after_its_span():
    m = TraceLoss(SERIES, 0.0, 0.0, True, random.Random(1))
    assert m.span == 13.0 + 2.0 - 10.0                      # first start to last end
    assert [m.rate(14.999), m.rate(15.0), m.rate(16.0), m.rate(20.0)] == [0.5, 0.0, 0.25, 0.0]
    assert m.rate(5.0) == 0.0                                # before the first interval: the first
    no_dt = TraceLoss([(0.0, 1.0, 0.0), (1.0, 0.0, 0.0)], 0.0, 0.0, True, random.Random(1))
    assert no_dt.span == 2.0 and no_dt.rate(2.0) == 0.0      # an interval of unknown length counts 1 s


def test_a_packet_is_lost_when_the_draw_is_below_the_loss():
    m = TraceLoss(SERIES, 0.0, 0.0, False, Draws(0.25, 0.2499, 0.25, 0.2499))
    assert [m.drop(11.0), m.drop(11.0), m.drop_sized(11.0, 100), m.drop_sized(11.0, 100)] == [False, True, False, True]


def test_smoothing_over_the_window_with_and_without_counts():
    series = [(0.0, 1.0, 1.0), (1.0, 0.0, 1.0), (2.0, 0.5, 1.0), (5.0, 1.0, 1.0)]
    assert smoothed(series, None, 0.0) is series
    mean = smoothed(series, None, 2.0)                       # within 1 s either side, edges included
    assert [d for _t, d, _dt in mean] == [0.5, 0.5, 0.25, 1.0]
    counts = [(10, 10), (30, 0), (10, 5), (0, 0)]
    by_count = smoothed(series, counts, 2.0)
    assert [d for _t, d, _dt in by_count] == [10 / 40, 15 / 50, 5 / 40, 1.0]   # no probe sent: as recorded


def test_link_series_keeps_measured_intervals_in_time_order():
    rows = [{"variant": "v", "repetition": 0, "link": "A>B", "t_s": 2, "delivery": 0.5, "dt_s": 1},
            {"variant": "v", "repetition": 0, "link": "A>B", "t_s": 1, "delivery": "", "dt_s": 1},
            {"variant": "v", "repetition": 0, "link": "A>B", "t_s": 0, "delivery": 1.5, "dt_s": 1},
            {"variant": "v", "repetition": 0, "link": "A>B", "t_s": 3, "delivery": 1.0, "dt_s": 1},
            {"variant": "v", "repetition": 0, "link": "B>A", "t_s": 0, "delivery": 0.0, "dt_s": 1}]
    assert link_series(rows, "A>B", None) == [(2.0, 0.5, 1.0), (3.0, 1.0, 1.0)]
    assert link_series(rows, "A>B", "v/rep0") == [(2.0, 0.5, 1.0), (3.0, 1.0, 1.0)]
    with pytest.raises(ValueError, match=r"recorded no link 'C>A' \(run v/rep0\); it has A>B, B>A"):
        link_series(rows, "C>A", None)
    with pytest.raises(ValueError, match=r"has no run 'v/rep1'; it has v/rep0"):
        link_series(rows, "A>B", "v/rep1")


# ---- the file, the spec, the check: through build(), as the loss registry calls it --------------------

import csv as _csv  # noqa: E402


from routing.links.trace_loss import build, check, link_counts  # noqa: E402


from tracefiles import TraceError, read_rows  # noqa: E402


FIELDS = ["variant", "repetition", "link", "t_s", "dt_s", "delivery", "sent", "heard"]


def write(tmp_path, rows, name="t.csv"):
    p = tmp_path / name
    with p.open("w", newline="") as f:
        w = _csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow(dict(zip(FIELDS, r)))
    return p


ROWS = [("v", 0, "A>B", 0, 1, 1.0, 10, 10), ("v", 0, "A>B", 1, 1, 0.0, 30, 0), ("v", 0, "A>B", 2, 1, 0.5, 10, 5),
        ("v", 0, "B>A", 0, 1, 0.25, 4, 1)]


def test_build_replays_the_named_link_from_the_file_at_its_time(tmp_path):
    p = write(tmp_path, ROWS)
    m = build({"file": str(p), "link": "A>B", "at_s": 10.0, "offset_s": 1.0, "loop": True}, random.Random(1))
    assert (m.at, m.offset_s, m.loop) == (10.0, 1.0, True)
    assert [m.rate(t) for t in (10.0, 11.0, 12.0)] == [1.0, 0.5, 0.0]      # trace time 1, 2, then 0 (looped)
    d = build({"file": str(p), "link": "B>A"}, random.Random(1))
    assert (d.at, d.offset_s, d.loop, d.rate(0.0)) == (0.0, 0.0, False, 0.75)


def test_build_smooths_with_the_counts_of_the_file(tmp_path):
    p = write(tmp_path, ROWS)
    m = build({"file": str(p), "link": "A>B", "smooth_s": 2.0}, random.Random(1))
    # each interval over its neighbours within 1 s: sent 40/50/40, heard 10/15/5
    assert [m.rate(t) for t in (0.0, 1.0, 2.0)] == [1 - 10 / 40, 1 - 15 / 50, 1 - 5 / 40]
    assert link_counts(read_rows(p), "A>B", None, [(0.0, 1.0, 1.0), (7.0, 1.0, 1.0)]) is None   # 7 s: no counts


def test_what_build_and_check_refuse_names_the_setting(tmp_path):
    p = write(tmp_path, ROWS)
    with pytest.raises(ValueError, match=r"^loss spec of model 'trace' needs 'file' and 'link'$"):
        build({"file": str(p)}, random.Random(1))
    with pytest.raises(ValueError, match=r"^loss spec key 'link': .*recorded no link 'C>A'"):
        build({"file": str(p), "link": "C>A"}, random.Random(1))
    with pytest.raises(ValueError, match=r"^loss spec key 'file': .*no such trace file"):
        build({"file": str(tmp_path / "none.csv"), "link": "A>B"}, random.Random(1))
    assert check({"file": str(p), "link": "A>B"}) == []
    [(key, why)] = check({"file": str(p), "link": "C>A"})
    assert key == "link" and "recorded no link 'C>A'" in why
    [(key, why)] = check({"file": str(tmp_path / "x.txt"), "link": "A>B"})
    assert key == "file" and "no such trace file" in why
    (tmp_path / "x.txt").write_text("a,b\n")
    [(key, why)] = check({"file": str(tmp_path / "x.txt"), "link": "A>B"})
    assert key == "file" and why.endswith("expected a .parquet or .csv trace (aspan trace extract)")
    bad = tmp_path / "bad.csv"
    bad.write_text("variant,repetition,link\nv,0,A>B\n")
    [(key, why)] = check({"file": str(bad), "link": "A>B"})
    assert key == "file" and "cannot read it as a trace" in why


def test_a_file_of_several_runs_needs_one_named(tmp_path):
    p = write(tmp_path, ROWS + [("w", 1, "A>B", 0, 1, 0.5, 2, 1)])
    with pytest.raises(TraceError, match=r"holds 2 runs \(v/rep0, w/rep1\): name one with `run`") as e:
        link_series(read_rows(p), "A>B", None, "t.csv")
    assert e.value.key == "run"
    assert link_series(read_rows(p), "A>B", "w/rep1") == [(0.0, 0.5, 1.0)]


def test_a_parquet_trace_reads_as_the_csv_one(tmp_path):
    import pandas as pd
    p = tmp_path / "t.parquet"
    pd.DataFrame([dict(zip(FIELDS, r)) for r in ROWS]).to_parquet(p)
    assert link_series(read_rows(p), "A>B", None) == link_series(read_rows(write(tmp_path, ROWS)), "A>B", None)


def test_build_names_the_run_and_the_file_in_its_errors(tmp_path):
    two = write(tmp_path, ROWS + [("w", 1, "A>B", 0, 1, 0.5, 2, 1)], "two.csv")
    with pytest.raises(ValueError, match=r"^loss spec key 'run': .*two.csv holds 2 runs \(v/rep0, w/rep1\)"):
        build({"file": str(two), "link": "A>B"}, random.Random(1))
    with pytest.raises(ValueError, match=r"^loss spec key 'run': .*two.csv has no run 'x/rep0'; it has v/rep0, w/rep1$"):
        build({"file": str(two), "link": "A>B", "run": "x/rep0"}, random.Random(1))
    m = build({"file": str(two), "link": "A>B", "run": "w/rep1", "smooth_s": 0.5}, random.Random(1))
    assert m.rate(0.0) == 0.5                                   # w's counts: heard 1 of 2
    empty = write(tmp_path, [("v", 0, "A>B", 0, 1, "", 0, 0)], "empty.csv")
    with pytest.raises(ValueError, match=r"^loss spec key 'link': .*empty.csv: link 'A>B' has no measured interval$"):
        build({"file": str(empty), "link": "A>B"}, random.Random(1))
    none = write(tmp_path, [], "none.csv")
    with pytest.raises(TraceError, match=r"none.csv recorded no link 'A>B' \(run None\); it has none$"):
        link_series(read_rows(none), "A>B", None, "none.csv")
    with pytest.raises(TraceError, match=r"^trace has no run 'v/rep0'; it has none$"):
        link_series([], "A>B", "v/rep0")
    [(key, why)] = check({"file": str(two), "link": "A>B"})
    assert key == "run" and why.startswith(f"{two} holds 2 runs")
    bad = tmp_path / "bad.csv"
    bad.write_text("variant,repetition,link\nv,0,A>B\n")
    assert check({"file": str(bad), "link": "A>B"})[0][1].startswith(f"{bad}: cannot read it as a trace")


@pytest.mark.parametrize("n, tail", [(6, ""), (7, ", ...")])
def test_the_runs_listed_are_at_most_six(n, tail):
    rows = [{"variant": f"v{k}", "repetition": 0, "link": "A>B", "t_s": 0, "delivery": 1.0} for k in range(n)]
    runs = ", ".join(f"v{k}/rep0" for k in range(6))
    with pytest.raises(TraceError) as e:
        link_series(rows, "A>B", None)
    assert str(e.value) == f"trace holds {n} runs ({runs}{tail}): name one with `run`" and e.value.key == "run"


def test_a_file_is_read_up_to_max_rows(tmp_path, monkeypatch):
    import pandas as pd
    import tracefiles
    monkeypatch.setattr(tracefiles, "MAX_ROWS", 3)
    ok, over = write(tmp_path, ROWS[:3], "ok.csv"), write(tmp_path, ROWS, "over.csv")
    assert len(read_rows(ok)) == 3
    with pytest.raises(TraceError, match=r"over.csv: more than 3 rows$") as e:
        read_rows(over)
    assert e.value.key == "file"
    pq_ok, pq_over = tmp_path / "ok.parquet", tmp_path / "over.parquet"
    pd.DataFrame([dict(zip(FIELDS, r)) for r in ROWS[:3]]).to_parquet(pq_ok)
    pd.DataFrame([dict(zip(FIELDS, r)) for r in ROWS]).to_parquet(pq_over)
    assert len(read_rows(pq_ok)) == 3
    with pytest.raises(TraceError, match=r"over.parquet: 4 rows, more than 3$") as e:
        read_rows(pq_over)
    assert e.value.key == "file"


def test_smoothing_edges_one_probe_no_probe_and_a_window_below_a_second():
    series = [(0.0, 0.25, 2.0), (5.0, 0.75, 2.0)]
    assert [d for _t, d, _dt in smoothed(series, [(1, 1), (0, 0)], 1.0)] == [1.0, 0.75]
    assert link_counts([{"link": "A>B", "t_s": 0, "sent": 1, "heard": ""}], "A>B", None, [(0.0, 1.0, 1.0)]) is None


def test_build_smooths_only_when_asked_even_below_a_second(tmp_path):
    rows = [("v", 0, "A>B", 0, 1, 0.9, 10, 5)]                 # delivery as recorded 0.9, counts say 0.5
    p = write(tmp_path, rows, "one.csv")
    assert build({"file": str(p), "link": "A>B"}, random.Random(1)).rate(0.0) == pytest.approx(0.1)
    assert build({"file": str(p), "link": "A>B", "smooth_s": 0.5}, random.Random(1)).rate(0.0) == 0.5


def test_a_looped_trace_that_does_not_start_at_zero():
    m = TraceLoss([(1.0, 1.0, 1.0), (2.0, 0.0, 1.0), (3.0, 1.0, 1.0)], 0.0, 0.0, True, random.Random(1))
    assert m.span == 3.0
    assert [m.rate(t) for t in (0.5, 4.0, 5.0, 6.0)] == [0.0, 0.0, 1.0, 0.0]
    short = TraceLoss([(0.0, 1.0, 0.5), (0.5, 0.0, 0.5)], 0.0, 0.0, True, random.Random(1))
    assert short.span == 1.0 and short.rate(1.0) == 0.0          # an interval of 0.5 s counts 0.5 s
    before = TraceLoss(SERIES, 0.0, 0.0, True, random.Random(1))
    assert before.rate(7.0) == 0.0                               # before the first interval: the first
