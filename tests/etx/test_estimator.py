"""Tests for etx.estimator (A-SPAN paper, Design: "ETX Algorithm for Link Quality")."""
from __future__ import annotations

import random
import pytest
from hypothesis import given, settings, strategies as st
from etx import BEFORE_FULL_MODES, QUALITY_MODES, EtxTable, LinkEstimator, ProbeWindow
import math


def feed(w: ProbeWindow, seqs) -> ProbeWindow:
    for s in seqs:
        w.on_probe(s)
    return w


# -- validation -------------------------------------------------------------------------------

def test_constants():
    assert BEFORE_FULL_MODES == ("partial", "optimistic", "pessimistic")
    assert QUALITY_MODES == ("forward", "etx")


@pytest.mark.parametrize("window", [0, -1, 1.5, "10", True])
def test_bad_window(window):
    with pytest.raises(ValueError, match="window"):
        ProbeWindow(window)
    with pytest.raises(ValueError, match="window"):
        LinkEstimator(window=window)
    with pytest.raises(ValueError, match="window"):
        EtxTable(["B"], window=window)


def test_bad_modes():
    with pytest.raises(ValueError, match="before_full"):
        ProbeWindow(10, before_full="lazy")
    with pytest.raises(ValueError, match="mode"):
        LinkEstimator(mode="rssi")
    with pytest.raises(ValueError, match="mode"):
        EtxTable([], mode="rssi")
    with pytest.raises(ValueError, match="initial"):
        LinkEstimator(initial=1.5)


def test_bad_seq():
    w = ProbeWindow(10)
    for bad in (-1, 1.0, "3"):
        with pytest.raises(ValueError, match="seq"):
            w.on_probe(bad)


# -- gaps, reordering, duplicates, window -----------------------------------------------------

def test_nothing_heard():
    w = ProbeWindow(10)
    assert (w.received, w.expected, w.ratio()) == (0, 0, 1.0)
    assert ProbeWindow(10, initial=0.25).ratio() == 0.25
    assert ProbeWindow(10, before_full="optimistic").ratio() == 1.0
    assert ProbeWindow(10, before_full="pessimistic").ratio() == 0.0


def test_gap_counts_missing_as_lost():
    w = feed(ProbeWindow(10), [0, 1, 2, 5])        # 3 and 4 missed
    assert (w.received, w.expected) == (4, 6)
    assert w.ratio() == 4 / 6
    w.on_probe(9)                                  # 6, 7, 8 missed
    assert (w.received, w.expected, w.ratio()) == (5, 10, 0.5)


def test_window_slides_over_last_w_sequence_numbers():
    w = feed(ProbeWindow(10), range(10))
    assert w.ratio() == 1.0
    w.on_probe(12)                                 # window 3..12: 10, 11 lost; 0..2 fell out
    assert (w.received, w.expected, w.ratio()) == (8, 10, 0.8)
    feed(w, range(13, 23))                         # window 13..22 all received
    assert w.ratio() == 1.0
    w.on_probe(40)                                 # jump > W: only 40 in window 31..40
    assert (w.received, w.expected, w.ratio()) == (1, 10, 0.1)


def test_gap_wrapping_around_the_ring():
    w = feed(ProbeWindow(4), [0, 1, 2])
    w.on_probe(5)                                  # clears slots 3, 0, 1 (wraps): 0, 1 leave
    assert (w.received, w.expected, w.ratio()) == (2, 4, 0.5)   # window 2..5: 2 and 5
    w.on_probe(9)                                  # clears slots 2, 3, 0, 1... (gap of 4 = W)
    assert (w.received, w.ratio()) == (1, 0.25)    # window 6..9: 9
    w.on_probe(11)                                 # slots 2, 3 (no wrap): window 8..11
    assert (w.received, w.ratio()) == (2, 0.5)
    w.on_probe(14)                                 # slots 0, 1, 2 after wrap from 3: window 11..14
    assert (w.received, w.ratio()) == (2, 0.5)


def test_late_probe_credited_once():
    w = feed(ProbeWindow(10), [0, 1, 3, 4])        # 2 counted lost
    assert w.ratio() == 4 / 5
    w.on_probe(2)                                  # arrives late: reordering, not loss
    assert (w.received, w.expected, w.ratio()) == (5, 5, 1.0)
    w.on_probe(2)                                  # and again: a duplicate now
    assert (w.received, w.ratio()) == (5, 1.0)


def test_duplicates_not_double_counted():
    w = feed(ProbeWindow(10), [0, 0, 1, 1, 1, 2, 0])
    assert (w.received, w.expected, w.ratio()) == (3, 3, 1.0)
    w.on_probe(5)
    w.on_probe(5)
    assert (w.received, w.expected) == (4, 6)


def test_probe_older_than_window_ignored():
    w = feed(ProbeWindow(10), [0, 20])             # window 11..20: only 20
    assert (w.received, w.expected) == (1, 10)
    w.on_probe(10)                                 # seq == highest - W: just outside, ignored
    assert (w.received, w.expected, w.highest) == (1, 10, 20)
    w.on_probe(11)                                 # oldest in the window, counted lost so far: credited
    assert (w.received, w.highest) == (2, 20)
    w.on_probe(21)                                 # 11 stays (window 12..21 drops it)
    assert w.received == 2


def test_probe_before_first_heard_not_counted():
    # The window starts at the first probe heard: probes sent before we listened are no loss.
    w = feed(ProbeWindow(10), [5, 6])
    assert (w.received, w.expected, w.ratio()) == (2, 2, 1.0)
    w.on_probe(3)                                  # older than the record: ignored
    assert (w.received, w.expected) == (2, 2)


def test_restart_resets_window():
    w = feed(ProbeWindow(10), [0, 1, 2] + list(range(10, 30, 2)))
    assert w.highest == 28
    w.on_probe(17)                                 # 17 == 28 - 11 < highest - W: restart
    assert (w.received, w.expected, w.highest, w.ratio()) == (1, 1, 17, 1.0)
    w2 = feed(ProbeWindow(10), range(50))
    w2.on_probe(0)                                 # neighbour restarted at 0
    feed(w2, [1, 3])
    assert (w2.received, w2.expected, w2.ratio()) == (3, 4, 0.75)


def test_amortised_cost_large_jumps_and_long_runs():
    w = ProbeWindow(1000)
    for s in range(0, 200_000):
        if s % 100:                                # 1 % loss, deterministic
            w.on_probe(s)
    assert (w.received, w.expected, w.ratio()) == (990, 1000, 0.99)
    w.on_probe(10**9)
    assert (w.received, w.ratio()) == (1, 0.001)


# -- before_full modes ------------------------------------------------------------------------

@pytest.mark.parametrize("mode,expected_ratios", [
    # W = 5; ratio after probes 0, 1, (2 lost), 3, 4: the last one fills the window (0..4)
    ("partial", [1.0, 1.0, 0.75, 0.8]),
    ("optimistic", [1.0, 1.0, 1.0, 0.8]),
    ("pessimistic", [0.2, 0.4, 0.6, 0.8]),
])
def test_before_full_modes(mode, expected_ratios):
    w = ProbeWindow(5, before_full=mode)
    got = []
    for s in (0, 1, 3, 4):
        w.on_probe(s)
        got.append(w.ratio())
    assert w.expected == 5
    assert got == expected_ratios


def test_before_full_w1000_paper_literal():
    w = feed(ProbeWindow(1000, before_full="pessimistic"), range(100))
    assert w.ratio() == 0.1                        # "received divided by 1000"
    assert feed(ProbeWindow(1000), range(100)).ratio() == 1.0
    assert feed(ProbeWindow(1000, before_full="optimistic"), range(0, 100, 2)).ratio() == 1.0
    assert feed(ProbeWindow(1000, before_full="optimistic"), range(0, 999, 2)).ratio() == 1.0  # 999 covered
    assert feed(ProbeWindow(1000, before_full="optimistic"), range(0, 1001, 2)).ratio() == 0.5  # 1..1000


# -- reference model (property test) ----------------------------------------------------------

class SetModel:
    """Brute-force statement of the rules, for comparison."""

    def __init__(self, window: int) -> None:
        self.w = window
        self.got: set[int] = set()
        self.high = -1
        self.origin = 0

    def on_probe(self, seq: int) -> None:
        if self.high >= 0 and seq < self.high - self.w:      # restart
            self.got, self.high = set(), -1
        if self.high < 0:
            self.origin = self.high = seq
            self.got = {seq}
            return
        if seq > self.high:
            self.high = seq
            self.got.add(seq)
        elif seq > self.high - self.w and seq >= self.origin:
            self.got.add(seq)

    def counts(self) -> tuple[int, int]:
        if self.high < 0:
            return 0, 0
        lo = max(self.high - self.w + 1, self.origin)
        return sum(1 for s in self.got if s >= lo), self.high - lo + 1


@settings(max_examples=300, deadline=None)
@given(window=st.integers(1, 8),
       ops=st.lists(st.tuples(st.sampled_from(["next", "skip", "back", "far"]), st.integers(0, 12)),
                    max_size=80))
def test_matches_reference_model(window, ops):
    w, m = ProbeWindow(window), SetModel(window)
    seq = 0
    for op, k in ops:
        if op == "next":
            seq += 1
        elif op == "skip":
            seq += k
        elif op == "back":
            seq = max(0, seq - k)
        else:
            seq = k                                # anything, e.g. a restart
        w.on_probe(seq)
        m.on_probe(seq)
        assert (w.received, w.expected) == m.counts()
        assert 0.0 <= w.ratio() <= 1.0


# -- statistical: ratio under random probe loss -----------------------------------------------

@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("loss,window_band,mean_band", [
    # W = 1000, so the loss count in one full window is Binomial(1000, p) at any time.
    # p = 0.5 %: P(one window loses >= 25) = 1.3e-10, so each of the 20 disjoint snapshots is
    #   checked against [0.976, 1]; the mean of the 20 snapshots is 1 - Binomial(20000, p)/20000
    #   and P(that loses >= 200, i.e. mean < 0.99) = 7e-19.  (A single window in [0.99, 1]
    #   alone would fail 1.3 % of seeds: P(Binomial(1000, 0.005) > 10) = 0.0135.)
    # p = 20 %: P(one window outside [0.74, 0.86]) = P(lost <= 140 or >= 260) = 3.1e-6;
    #   P(20000 probes lose outside [3700, 4300]) = 1.2e-7.
    (0.005, (0.976, 1.0), (0.99, 1.0)),
    (0.20, (0.74, 0.86), (0.785, 0.815)),
])
def test_ratio_under_random_loss(seed, loss, window_band, mean_band):
    rng = random.Random(seed)
    w = ProbeWindow(1000)
    received: list[bool] = []
    snapshots = []
    for s in range(21_000):
        ok = rng.random() >= loss
        received.append(ok)
        if ok:
            w.on_probe(s)
        if s >= 1999 and s % 1000 == 999:
            # Exact: the window holds the last 1000 sequence numbers up to the highest heard.
            hi = w.highest
            assert w.expected == 1000
            assert w.received == sum(received[hi - 999:hi + 1])
            snapshots.append(w.ratio())
    # 20 (almost: `hi` may trail s by a lost probe or two) disjoint windows
    assert len(snapshots) == 20
    assert all(window_band[0] <= r <= window_band[1] for r in snapshots), snapshots
    mean = sum(snapshots) / len(snapshots)
    assert mean_band[0] <= mean <= mean_band[1]


# -- LinkEstimator / EtxTable -----------------------------------------------------------------

def test_link_estimator_forward_reverse_quality():
    e = LinkEstimator(window=10, initial=0.9)
    assert (e.forward(), e.reverse(), e.quality()) == (0.9, 0.9, 0.9)
    assert e.last_heard is None
    assert e.next_probe(0.0) == (0, -1.0)          # nothing heard: reverse unknown
    assert e.next_probe(0.1) == (1, -1.0)
    e.on_probe(0, -1.0, now=0.05)                  # no report yet: forward stays initial
    assert (e.forward(), e.reverse(), e.last_heard) == (0.9, 1.0, 0.05)
    e.on_probe(2, 0.5, now=0.25)                   # seq 1 lost; neighbour got half of ours
    assert (e.forward(), e.reverse(), e.quality()) == (0.5, 2 / 3, 0.5)
    assert e.next_probe(0.3) == (2, 2 / 3)
    e.on_probe(3, -1.0, now=0.35)                  # -1 keeps the last report
    assert e.forward() == 0.5
    with pytest.raises(ValueError, match="reported_ratio"):
        e.on_probe(4, 1.5, now=0.4)
    with pytest.raises(ValueError, match="reported_ratio"):
        e.on_probe(4, float("nan"), now=0.4)


def test_etx_mode_is_product():
    e = LinkEstimator(window=10, mode="etx")
    for s in (0, 1, 3, 4):                         # reverse 0.8
        e.on_probe(s, 0.5, now=s / 10)
    assert e.reverse() == 0.8
    assert e.forward() == 0.5
    assert e.quality() == 0.5 * 0.8
    f = LinkEstimator(window=10, mode="forward")
    for s in (0, 1, 3, 4):
        f.on_probe(s, 0.5, now=s / 10)
    assert f.quality() == 0.5


def test_table_unknown_neighbour():
    t = EtxTable(["B", "C"])
    assert t.neighbours == ["B", "C"] and "B" in t and "Z" not in t
    for call in (lambda: t.quality("Z"), lambda: t.next_probe("Z", 0.0),
                 lambda: t.on_probe("Z", 0, -1.0, 0.0)):
        with pytest.raises(KeyError, match="unknown neighbour 'Z'"):
            call()
    with pytest.raises(ValueError, match="neighbours"):
        EtxTable("BC")


def exchange(a: EtxTable, b: EtxTable, rounds: int, drop_a_to_b, drop_b_to_a, period: float = 0.1):
    """A and B probe each other every `period`; drop_x(seq) says whether that probe is lost."""
    for i in range(rounds):
        now = i * period
        seq, ratio = a.next_probe("B", now)
        if not drop_a_to_b(seq):
            b.on_probe("A", seq, ratio, now)
        seq, ratio = b.next_probe("A", now + period / 2)
        if not drop_b_to_a(seq):
            a.on_probe("B", seq, ratio, now + period / 2)


def test_forward_learned_through_exchange():
    # A -> B loses every 5th probe (deterministic: exactly 0.8); B -> A loses every 10th.
    a = EtxTable(["B"], window=100)
    b = EtxTable(["A"], window=100, mode="etx")
    assert a.quality("B") == 1.0                   # initial
    exchange(a, b, 1000, lambda s: s % 5 == 4, lambda s: s % 10 == 9)
    assert b.link("A").reverse() == 0.8            # measured at B
    assert a.link("B").forward() == 0.8            # learned by A from B's reports
    assert a.link("B").reverse() == 0.9
    assert b.link("A").forward() == 0.9
    assert a.quality("B") == 0.8                   # "forward" mode
    assert b.quality("A") == 0.9 * 0.8             # "etx" mode
    snap = a.snapshot()
    assert snap == {"B": {"forward": 0.8, "reverse": 0.9, "quality": 0.8}}


def test_forward_learned_under_random_loss():
    # 20 % loss A -> B, none back: A learns ~0.8 for its outgoing link.  B's window holds
    # Binomial(1000, 0.8) receptions; [0.74, 0.86] fails with probability 3e-6 (see above).
    rng = random.Random(7)
    a, b = EtxTable(["B"]), EtxTable(["A"])
    exchange(a, b, 5000, lambda s: rng.random() < 0.2, lambda s: False)
    assert 0.74 <= a.quality("B") <= 0.86
    assert a.link("B").reverse() == 1.0
    # B's last probe (none lost B -> A) carried B's final measurement.
    assert a.link("B").forward() == b.link("A").reverse()


# ====================================================================================================
# Rules of etx/estimator.py that the mutation run (bench/mutation.py, docs/MUTATION.md) found unpinned.
#
# The paper's window is 1000 probes (Design: "ETX Algorithm for Link Quality"), for a table as for one
# link; ETX is 1 / (df x dr) and infinite for a dead link (De Couto et al., MobiCom 2003, Sec. 3); a
# neighbour's report of 0 (it heard none of our probes) is a measurement, only a negative one means
# unknown; ``reset`` forgets everything, as if the window were new; a table checks its parameters even
# without neighbours, and gives each link its ``initial`` ratio.


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
