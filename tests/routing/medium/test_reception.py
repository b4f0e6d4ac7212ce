"""routing/medium/reception.py's rules, unit by unit (issue 30, mutation run).

From the module's docstring (IEEE Std 802.11-2016 17.3.10.6, clause 16 and 17 PLCP, ns-3's
InterferenceHelper, Lee et al. WiNTECH 2007 for capture): the PHY header evaluated as a section of its own
(DSSS: the 192 us long PLCP at 1 Mbit/s; OFDM: the 4 us SIGNAL field at 6 Mbit/s); the frame cut wherever
an interferer starts or ends, the chunk SINRs over noise plus the sum of the overlapping signals, the
chunks' success rates multiplied; a frame lost when its receiver transmits during it or another frame is
at least as strong at the receiver; decoding from the sensitivity up, carrier sense from the threshold up
or whatever is decoded; a measured signal replaces the path loss of its direction only.
"""
from __future__ import annotations

import random
import pytest
from routing.medium.error_model import MODES, chunk_success_rate
from routing.medium.propagation import dbm_to_mw, log_distance_loss_db, shadowing_db
from routing.medium.reception import (DSSS_HEADER_NS, OFDM_SIGNAL_NS, SinrReception, frame_success,
                                      hears_and_senses, phy_sections, signals_dbm)


OFDM54, OFDM6, DSSS1, CCK11 = MODES["ofdm-54"], MODES["ofdm-6"], MODES["dsss-1"], MODES["cck-11"]


def test_the_phy_header_sections():
    assert (DSSS_HEADER_NS, OFDM_SIGNAL_NS) == (192_000, 4_000)
    # DSSS long preamble: the whole 192 us PLCP at 1 Mbit/s, then the payload at the frame's mode
    assert phy_sections(CCK11, 1000, 500_000, 192_000) == [(1000, 193_000, DSSS1), (193_000, 500_000, CCK11)]
    # a longer preamble than the PLCP (e.g. with a gap): only its last 192 us are the header
    assert phy_sections(CCK11, 0, 500_000, 200_000) == [(8_000, 200_000, DSSS1), (200_000, 500_000, CCK11)]
    # a short one: all of it
    assert phy_sections(CCK11, 0, 500_000, 96_000) == [(0, 96_000, DSSS1), (96_000, 500_000, CCK11)]
    # OFDM: the SIGNAL field, the last 4 us of the 20 us preamble, at 6 Mbit/s
    assert phy_sections(OFDM54, 0, 100_000, 20_000) == [(16_000, 20_000, OFDM6), (20_000, 100_000, OFDM54)]
    assert phy_sections(OFDM54, 0, 100_000, 3_000) == [(0, 3_000, OFDM6), (3_000, 100_000, OFDM54)]
    # empty sections are left out: no preamble, or no payload
    assert phy_sections(OFDM54, 0, 100_000, 0) == [(0, 100_000, OFDM54)]
    assert phy_sections(OFDM54, 0, 20_000, 20_000) == [(16_000, 20_000, OFDM6)]


def test_without_interference_the_success_is_the_product_of_header_and_payload():
    sig, noise = 150.0, 1.0
    want = chunk_success_rate(OFDM6, 150.0, 4_000 * 6 / 1000) * chunk_success_rate(OFDM54, 150.0, 80_000 * 54 / 1000)
    assert frame_success(OFDM54, 0, 100_000, 20_000, sig, noise, []) == pytest.approx(want, rel=1e-12)
    assert 0 < want < 1


def test_an_interferer_cuts_the_frame_and_adds_its_power_to_the_noise_over_its_chunk_only():
    sig, noise, i_mw = 4.0, 1.0, 1.0
    got = frame_success(OFDM6, 0, 100_000, 20_000, sig, noise, [(-5_000, 18_000, i_mw), (60_000, 70_000, i_mw),
                                                                  (65_000, 200_000, i_mw)])
    clean, one, two = sig / noise, sig / (noise + i_mw), sig / (noise + 2 * i_mw)
    r = lambda s, ns: chunk_success_rate(OFDM6, s, ns * 6 / 1000)
    want = (r(clean, 2_000) * r(one, 2_000)     # header 16..20 us: interferer until 18 us
            * r(clean, 40_000) * r(one, 5_000) * r(two, 5_000) * r(one, 30_000))
    assert 1e-4 < want < 0.99 and r(two, 5_000) < r(one, 5_000) < r(clean, 5_000)
    assert got == pytest.approx(want, rel=1e-12)
    # an interferer only touching the frame's edges, or outside it, changes nothing
    alone = frame_success(OFDM6, 0, 100_000, 20_000, sig, noise, [])
    assert frame_success(OFDM6, 0, 100_000, 20_000, sig, noise, [(-50, 0, 1e9), (100_000, 100_050, 1e9)]) == alone


def test_a_chunk_that_cannot_succeed_ends_the_evaluation_at_zero():
    assert frame_success(OFDM54, 0, 100_000, 20_000, 1e-9, 1.0, []) == 0.0
    assert frame_success(OFDM54, 0, 100_000, 20_000, 1e-9, 1.0, [(0, 100_000, 1.0)]) == 0.0


def test_signals_come_from_power_path_loss_and_shadowing_unless_measured():
    pos = {"A": (0.0, 0.0), "B": (30.0, 40.0), "C": (0.5, 0.0)}
    out = signals_dbm(pos, 20.0, 40.0, 3.0, 4.0, 7, {"B": {"A": -55.5}})
    assert set(out) == {"A", "B", "C"} and all(r not in row for r, row in out.items())   # none to itself
    assert out["B"]["A"] == -55.5                                 # measured: this direction only
    assert out["A"]["B"] == pytest.approx(20.0 - log_distance_loss_db(50.0, 40.0, 3.0) - shadowing_db(7, "A", "B", 4.0))
    assert out["A"]["C"] == pytest.approx(20.0 - 40.0 - shadowing_db(7, "A", "C", 4.0))   # nearer than 1 m
    assert isinstance(signals_dbm({"A": (0, 0), "B": (1, 0)}, 0.0, 40.0, 3.0, 0.0, 1, {"A": {"B": -60}})["A"]["B"],
                      float)


def test_decoding_from_the_sensitivity_up_and_sensing_from_the_threshold_up_or_what_is_decoded():
    signals = {"R": {"a": -82.0, "b": -82.01, "c": -62.0, "d": -90.0}}
    hears, senses = hears_and_senses(signals, -82.0, -62.0)
    assert hears == {"R": frozenset({"a", "c"})}
    assert senses == {"R": frozenset({"a", "c"})}           # b and d: neither decoded nor at -62 dBm
    hears, senses = hears_and_senses(signals, -82.0, -95.0)  # a threshold below the sensitivity
    assert hears["R"] == {"a", "c"} and senses["R"] == {"a", "b", "c", "d"}


def reception(rx_mw, noise_mw=1e-10, rng=None):
    return SinrReception(rx_mw, noise_mw, OFDM54, OFDM6, rng or random.Random(1))


def test_from_dbm_converts_every_signal_and_the_noise_to_mw():
    r = SinrReception.from_dbm({"R": {"S": -60.0}, "S": {"R": -61.0}}, -95.0, OFDM54, OFDM6, random.Random(1))
    assert r.rx_mw == {"R": {"S": dbm_to_mw(-60.0)}, "S": {"R": dbm_to_mw(-61.0)}}
    assert r.noise_mw == dbm_to_mw(-95.0) and (r.data_mode, r.control_mode) == (OFDM54, OFDM6)


def test_half_duplex_and_capture_by_a_frame_at_least_as_strong():
    rx = {"R": {"S": 1e-6, "W": 1e-8, "T": 1e-6, "U": 2e-6}}
    r = reception(rx)
    clean = r.success_probability("S", "R", 0, 100_000, 20_000, OFDM54, [])
    assert clean == frame_success(OFDM54, 0, 100_000, 20_000, 1e-6, 1e-10, [])
    assert r.success_probability("S", "R", 0, 100_000, 20_000, OFDM54, [("R", 50_000, 60_000)]) == 0.0
    assert r.success_probability("S", "R", 0, 100_000, 20_000, OFDM54, [("T", 99_999, 200_000)]) == 0.0  # a tie
    assert r.success_probability("S", "R", 0, 100_000, 20_000, OFDM54, [("U", -10, 1)]) == 0.0
    # touching only at an edge: no overlap, nothing lost (even the receiver's own frame)
    assert r.success_probability("S", "R", 0, 100_000, 20_000, OFDM54,
                                 [("R", 100_000, 200_000), ("U", -5, 0)]) == clean
    # a weaker frame is interference: the SINR of its chunk falls
    weak = r.success_probability("S", "R", 0, 100_000, 20_000, OFDM54, [("W", 30_000, 40_000)])
    assert weak == frame_success(OFDM54, 0, 100_000, 20_000, 1e-6, 1e-10, [(30_000, 40_000, 1e-8)])


class Draws:
    def __init__(self, *values):
        self.values, self.calls = list(values), 0

    def random(self):
        self.calls += 1
        return self.values.pop(0)


def test_draw_is_certain_at_0_and_1_and_else_u_below_p():
    rng = Draws(0.25, 0.2499)
    r = reception({"R": {}}, rng=rng)
    assert r.draw(1.0) is True and r.draw(1.5) is True and r.draw(0.0) is False and r.draw(-1) is False
    assert rng.calls == 0                                       # no draw when the outcome is certain
    assert r.draw(0.25) is False and r.draw(0.25) is True and rng.calls == 2


def test_every_sender_has_its_signal_at_every_other_receiver_measured_or_not():
    pos = {"A": (0.0, 0.0), "B": (10.0, 0.0), "C": (20.0, 0.0)}
    out = signals_dbm(pos, 20.0, 40.0, 3.0, 0.0, 1, {"B": {"A": -50.0}, "A": {"A": -1.0}})
    assert {r: sorted(row) for r, row in out.items()} == {"A": ["B", "C"], "B": ["A", "C"], "C": ["A", "B"]}
    assert out["B"]["C"] == pytest.approx(20.0 - 40.0 - 30.0)


def test_a_frame_at_exactly_the_carrier_sense_threshold_is_sensed_without_being_decoded():
    hears, senses = hears_and_senses({"R": {"x": -90.0, "y": -90.5}}, -82.0, -90.0)
    assert hears["R"] == frozenset() and senses["R"] == frozenset({"x"})


def test_an_overlap_after_one_that_only_touches_still_counts():
    r = reception({"R": {"S": 1e-6, "U": 2e-6}})
    assert r.success_probability("S", "R", 0, 100_000, 20_000, OFDM54, [("U", -5, 0), ("R", 50_000, 60_000)]) == 0.0
    assert r.success_probability("S", "R", 0, 100_000, 20_000, OFDM54,
                                 [("U", 100_000, 100_005), ("U", 50_000, 60_000)]) == 0.0
