"""routing/trace_loss.py's replay rules at their edges (issue 30, mutation run; issue 25 for the rules).

From the module docstring: trace time = offset_s + (now - at_s); an interval's delivery holds from its start
to the next one's (no interpolation); before the first interval the first, after the last the last, unless
``loop``: then the trace starts again after its span (first start to last end); a packet is lost when the
node's draw is below 1 - delivery; ``smooth_s`` takes each interval over the intervals within smooth_s / 2,
Σheard / Σsent when the counts are known, else the mean.
"""
from __future__ import annotations

import random

import pytest

from routing.trace_loss import TraceLoss, link_series, smoothed

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
