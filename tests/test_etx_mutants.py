"""Rules of etx/estimator.py that the mutation run (bench/mutation.py, docs/MUTATION.md) found unpinned.

The paper's window is 1000 probes (Design: "ETX Algorithm for Link Quality"), for a table as for one
link; ETX is 1 / (df x dr) and infinite for a dead link (De Couto et al., MobiCom 2003, Sec. 3); a
neighbour's report of 0 (it heard none of our probes) is a measurement, only a negative one means
unknown; ``reset`` forgets everything, as if the window were new; a table checks its parameters even
without neighbours, and gives each link its ``initial`` ratio.
"""
import math

import pytest

from etx import EtxTable, LinkEstimator, ProbeWindow


def test_a_reset_window_is_a_new_window():
    w = ProbeWindow(10)
    for seq in (0, 1, 3):
        w.on_probe(seq)
    w.reset()
    new = ProbeWindow(10)
    assert (w.received, w.expected, w.highest, w.heard, w.ratio()) == \
           (new.received, new.expected, new.highest, new.heard, new.ratio()) == (0, 0, None, False, 1.0)
    w.on_probe(5)
    assert (w.received, w.expected) == (1, 1)


def test_a_report_of_zero_is_a_dead_forward_link_not_an_unknown_one():
    e = LinkEstimator(window=10)
    e.on_probe(0, 0.8, 1.0)
    assert e.forward() == 0.8
    e.on_probe(1, 0.0, 2.0)
    assert e.forward() == 0.0 and e.quality() == 0.0 and e.etx() == math.inf
    e.on_probe(2, -1.0, 3.0)                    # unknown: keeps the last report
    assert e.forward() == 0.0


def test_etx_is_one_over_the_product_of_the_two_ratios():
    e = LinkEstimator(window=4)
    for seq in (0, 2, 3):                       # probe 1 lost: 3 of 4 received
        e.on_probe(seq, 0.5, float(seq))
    assert e.reverse() == 0.75 and e.forward() == 0.5
    assert e.etx() == pytest.approx(1 / (0.5 * 0.75))
    dead = LinkEstimator(window=4)
    dead.on_probe(0, 0.0, 0.0)
    assert dead.etx() == math.inf


def test_a_table_uses_the_papers_window_and_its_initial_ratio():
    t = EtxTable(["B"], initial=0.25)
    assert t.link("B").probes.window == 1000
    assert t.quality("B") == 0.25 and t.link("B").forward() == 0.25


def test_a_table_without_neighbours_still_checks_its_parameters():
    with pytest.raises(ValueError, match="window"):
        EtxTable([], window=0)
    with pytest.raises(ValueError, match="mode"):
        EtxTable([], mode="bogus")
    assert EtxTable([]).neighbours == []


def test_a_link_estimator_uses_the_papers_window_and_names_a_bad_initial_ratio():
    assert LinkEstimator().probes.window == 1000
    with pytest.raises(ValueError, match="^initial must be"):
        LinkEstimator(initial=1.5)
    with pytest.raises(ValueError, match="^initial must be"):
        EtxTable([], initial=1.5)


def test_a_table_records_when_it_last_heard_each_neighbour():
    t = EtxTable(["B", "C"])
    t.on_probe("B", 0, -1.0, 12.5)
    assert t.link("B").last_heard == 12.5 and t.link("C").last_heard is None


def test_a_boolean_is_no_ratio():
    with pytest.raises(ValueError, match="^initial must be a number"):
        LinkEstimator(initial=True)


def test_the_ring_stays_window_flags_long_through_gaps_that_wrap_it():
    # module docstring, "Cost": a ring of W flags; gaps that wrap around it must not grow it
    w = ProbeWindow(10)
    for seq in range(0, 200, 7):
        w.on_probe(seq)
        assert len(w._flags) == 10
    assert w.received == 2 and w.expected == 10


def test_a_probe_window_uses_the_papers_window_and_checks_its_own_initial_ratio():
    assert ProbeWindow().window == 1000
    with pytest.raises(ValueError, match="^initial must be a number in"):
        ProbeWindow(initial=1.5)
    assert ProbeWindow(initial=0.0).ratio() == 0.0           # 0 is a ratio: a link presumed dead
    assert LinkEstimator(initial=0.0).quality() == 0.0
