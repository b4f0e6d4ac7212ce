"""routing.medium.propagation: log-distance and Friis path loss, the noise floor, shadowing, and the
formulas away from their reference points.
"""
from __future__ import annotations

import math
import statistics
import pytest
from routing.medium.propagation import (dbm_to_mw, friis_loss_db, log_distance_loss_db, mw_to_dbm, shadowing_db,
                                        thermal_noise_dbm, KTB_20MHZ_DBM)
import random


# ---- propagation ------------------------------------------------------------------------------------
def test_log_distance_and_friis() -> None:
    assert log_distance_loss_db(1.0, 40.0, 3.0) == 40.0
    assert log_distance_loss_db(0.2, 40.0, 3.0) == 40.0          # nearer than d0: L(d0), as ns-3
    assert log_distance_loss_db(10.0, 40.0, 3.0) == pytest.approx(70.0)
    assert log_distance_loss_db(100.0, 46.6777, 3.0) == pytest.approx(106.6777)
    # free space at 1 m and 2412 MHz: 20 log10(4 pi f / c)
    assert friis_loss_db(1.0, 2.412e9) == pytest.approx(20 * math.log10(4 * math.pi * 2.412e9 / 299_792_458.0))
    assert friis_loss_db(1.0, 2.412e9) == pytest.approx(40.09, abs=0.01)


def test_thermal_noise_as_ns3() -> None:
    assert thermal_noise_dbm(22e6, 0.0) == pytest.approx(-100.5522786, abs=1e-3)   # ns-3's FromRss comment
    assert thermal_noise_dbm(20e6, 7.0) == pytest.approx(-93.97, abs=0.01)
    assert mw_to_dbm(dbm_to_mw(-82.0)) == pytest.approx(-82.0)


def test_shadowing_is_symmetric_seeded_and_gaussian() -> None:
    assert shadowing_db(1, "A", "B", 6.0) == shadowing_db(1, "B", "A", 6.0)
    assert shadowing_db(1, "A", "B", 6.0) == shadowing_db(1, "A", "B", 6.0)
    assert shadowing_db(1, "A", "B", 6.0) != shadowing_db(2, "A", "B", 6.0)
    assert shadowing_db(1, "A", "B", 0.0) == 0.0
    draws = [shadowing_db(1, "A", f"N{i}", 6.0) for i in range(4000)]
    assert abs(statistics.fmean(draws)) < 0.3 and statistics.stdev(draws) == pytest.approx(6.0, rel=0.05)


# ====================================================================================================
# routing/medium/propagation.py's formulas away from their reference points (issue 30, mutation run).
#
# Friis' free-space loss grows by 20 dB a decade of distance (20 log10(4 pi d f / c)); log-normal shadowing
# (Rappaport eq. 4.69a) is N(0, sigma) drawn from the seed and the pair of names, whatever sigma > 0 is.


def test_friis_grows_20_db_a_decade_and_6_db_an_octave_of_frequency():
    assert friis_loss_db(10.0, 2.412e9) - friis_loss_db(1.0, 2.412e9) == pytest.approx(20.0)
    assert friis_loss_db(100.0, 2.412e9) == pytest.approx(40.0 + friis_loss_db(1.0, 2.412e9))
    assert friis_loss_db(1.0, 4.824e9) - friis_loss_db(1.0, 2.412e9) == pytest.approx(6.0206, abs=1e-4)


def test_log_distance_beyond_the_reference():
    assert log_distance_loss_db(2.0, 40.0, 2.0) == pytest.approx(40.0 + 20.0 * 0.30103, abs=1e-4)


@pytest.mark.parametrize("sigma", [1.0, 0.5, 8.0])
def test_shadowing_is_a_gaussian_draw_of_the_pair_for_any_positive_sigma(sigma):
    want = random.Random("shadowing:3:A:B").gauss(0.0, sigma)
    assert shadowing_db(3, "B", "A", sigma) == want != 0.0


def test_the_unit_conversions_and_the_noise_floor():
    assert dbm_to_mw(0.0) == 1.0 and dbm_to_mw(-30.0) == pytest.approx(1e-3) and mw_to_dbm(100.0) == pytest.approx(20.0)
    assert KTB_20MHZ_DBM == pytest.approx(-100.97, abs=0.01)
