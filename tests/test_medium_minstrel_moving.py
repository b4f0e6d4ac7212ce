"""Minstrel on a link whose distance changes (issue 24, item 6): it settles on the rate that a fixed-rate
sweep shows best at each distance.  Positions are fixed for a run, so the link "moves" by its signal: halfway
through, the reception's signal of A at B and of B at A is replaced by that of the new distance (the same
log-distance model, routing.medium.reception.SinrReception.rx_mw), as a measured per-link signal
(``medium.signal_dbm``) would be.  Virtual time, the medium core built as runs build it."""
from __future__ import annotations

import pytest

from bench.medium_distance import RATES, drive, link_medium, saturated
from routing.medium.dcf import Medium
from routing.medium.rates import ht20_rate


def _drive(m: Medium, start_ns: int, end_ns: int) -> dict[str, int]:
    """A always has a frame for B from ``start_ns`` to ``end_ns``; the data attempts per rate in that time."""
    before = dict(m.stations["A"].stats.rate_attempts)
    drive(m, start_ns, end_ns)
    after = m.stations["A"].stats.rate_attempts
    return {r: after.get(r, 0) - before.get(r, 0) for r in after if after.get(r, 0) > before.get(r, 0)}


def _best_fixed(distance_m: float) -> tuple[str, dict[str, float]]:
    """The HT rate with the most goodput at ``distance_m`` (a fixed-rate sweep, 1 s each), and every rate's."""
    sweep = {ht20_rate(r["mcs"]).name: saturated(link_medium("n", distance_m, 1, **r), 1.0) for r in RATES["n"]}
    return max(sweep, key=lambda k: sweep[k]), sweep


@pytest.mark.parametrize("near, far", [(20, 70), (70, 20)], ids=["moving-away", "coming-closer"])
def test_minstrel_settles_on_the_best_fixed_rate_at_each_distance(near: float, far: float) -> None:
    m = link_medium("n", near, 1, rate_control="minstrel")
    s = 1_000_000_000
    _drive(m, 0, 2 * s)                           # settle at the first distance
    first = _drive(m, 2 * s, 4 * s)
    assert m.radio is not None
    m.radio.rx_mw = link_medium("n", far, 1).radio.rx_mw   # type: ignore[union-attr]  # the link moves
    _drive(m, 4 * s, 6 * s)                       # settle at the second
    second = _drive(m, 6 * s, 8 * s)
    for used, distance in ((first, near), (second, far)):
        best, sweep = _best_fixed(distance)
        top = max(used, key=lambda k: used[k])
        assert top == best, f"at {distance} m Minstrel sent most at {top} ({used}), the sweep's best is {best} ({sweep})"
        assert used[top] > 0.6 * sum(used.values())   # the rest: its 10 % sampling and the retry chain's fallbacks
