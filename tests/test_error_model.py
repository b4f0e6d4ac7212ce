"""The NIST / DSSS error-rate model (routing.medium.error_model) and the propagation formulas (routing.medium.propagation):
values computed by hand from the cited formulas, and ns-3's own spot values of the same models
(src/wifi/test/wifi-error-rate-models-test.cc: WifiErrorRateModelsTestCaseDsss and ...Nist)."""
from __future__ import annotations

import math
import statistics

import pytest

from routing.medium.error_model import (MODES, ErrorModelError, bpsk_ber, cck11_ber, cck55_ber, chunk_success_rate,
                                 coded_bit_error, dbpsk_ber, dqpsk_ber, mode_for_rate, qam_ber, qpsk_ber)
from routing.medium.propagation import (dbm_to_mw, friis_loss_db, log_distance_loss_db, mw_to_dbm, shadowing_db,
                                 thermal_noise_dbm)

Q = statistics.NormalDist().cdf


def q(x: float) -> float:
    """The Gaussian tail Q(x), from the normal distribution (not from erfc, as the module computes it)."""
    return 1.0 - Q(x)


def db(x: float) -> float:
    return 10.0 ** (x / 10.0)


# ---- uncoded BERs: the textbook forms (Proakis) against the module's erfc forms ----------------------
@pytest.mark.parametrize("snr_db", [-3.0, 0.0, 4.0, 7.0, 9.6])
def test_uncoded_bers_are_the_textbook_q_function_forms(snr_db: float) -> None:
    s = db(snr_db)
    assert bpsk_ber(s) == pytest.approx(q(math.sqrt(2 * s)), rel=1e-9)          # Q(sqrt(2 Eb/N0))
    assert qpsk_ber(s) == pytest.approx(q(math.sqrt(s)), rel=1e-9)
    assert qam_ber(16, s) == pytest.approx(0.75 * q(math.sqrt(s / 5)), rel=1e-9)  # ns-3's old Get16QamBer
    assert qam_ber(64, s) == pytest.approx(7 / 12 * q(math.sqrt(s / 21)), rel=1e-9)


def test_bpsk_ber_is_1e5_at_9_6_db() -> None:
    # the classic point of the BPSK curve: Pb = 1e-5 at Eb/N0 = 9.6 dB
    assert bpsk_ber(db(9.6)) == pytest.approx(1e-5, rel=0.25)


def test_coded_bit_error_by_hand_for_d_0_1() -> None:
    # p chosen so that D = sqrt(4 p (1 - p)) = 0.1: the distance spectra summed by hand
    p = (1 - math.sqrt(0.99)) / 2
    half = 0.5 * (36e-10 + 211e-12 + 1404e-14 + 11633e-16 + 77433e-18 + 502690e-20 + 3322763e-22
                  + 21292910e-24 + 134365911e-26)
    assert half == pytest.approx(1.9131429e-9, rel=1e-6)
    assert coded_bit_error(p, (1, 2)) == pytest.approx(half, rel=1e-12)
    three_quarters = (42e-5 + 201e-6 + 1492e-7 + 10469e-8 + 62935e-9 + 379644e-10 + 2253373e-11 + 13073811e-12
                      + 75152755e-13 + 428005675e-14) / 6
    assert coded_bit_error(p, (3, 4)) == pytest.approx(three_quarters, rel=1e-12)
    assert coded_bit_error(0.5, (1, 2)) == 1.0   # capped


def test_dsss_bers_by_hand() -> None:
    assert dbpsk_ber(0.5) == pytest.approx(0.5 * math.exp(-11.0), rel=1e-12)    # Eb/N0 = 0.5 x 22
    x = 1.0 * 22 / 2
    assert dqpsk_ber(1.0) == pytest.approx((math.sqrt(2) + 1) / math.sqrt(8 * math.pi * math.sqrt(2))
                                           / math.sqrt(x) * math.exp(-(2 - math.sqrt(2)) * x), rel=1e-12)
    s = 3.0
    assert cck11_ber(s) == pytest.approx((7.9056742265333456e-3 * 9 - 1.8397449399176360e-1 * 3 + 1.0740689468707241)
                                         / (27 + 1.0523316904502553 * 9 + 3.0552298746496687e-1 * 3
                                            + 2.2032715128698435), rel=1e-12)
    assert cck55_ber(s) == pytest.approx(5.3681634344056195e-1 * math.exp(
        -((s - 3.3092430025608586e-3) / 4.1654372361004000e-1) ** 1.0288981434358866), rel=1e-12)
    assert cck11_ber(10.5) == 0.0 and cck11_ber(0.05) == 0.5     # WLAN_SIR_PERFECT, WLAN_SIR_IMPOSSIBLE
    assert cck55_ber(10.5) == 0.0 and cck55_ber(0.05) == 0.5


# ---- ns-3's spot values -------------------------------------------------------------------------------
def from_rss(rss_dbm: float) -> float:
    """ns-3's FromRss: SINR over -100.5522786 dBm (22 MHz at 290 K) + 7 dB noise figure."""
    return db(rss_dbm - (-100.5522786 + 7))


DSSS_SIZE = (1024 + 40 + 14) * 8

# (rss dBm, success, tolerance) as WifiErrorRateModelsTestCaseDsss asserts them
DBPSK_SPOTS = [(-105.0, 0, 1e-13), (-100.0, 1.5e-13, 1e-13), (-99.0, 0.0003, 0.0001), (-98.0, 0.202, 0.005),
               (-97.0, 0.813, 0.005), (-96.0, 0.984, 0.005), (-95.0, 0.999, 0.001), (-90.0, 1, 0.001)]
DQPSK_SPOTS = [(-96.0, 0, 1e-13), (-95.0, 4.5e-6, 1e-6), (-94.0, 0.036, 0.005), (-93.0, 0.519, 0.005),
               (-92.0, 0.915, 0.005), (-91.0, 0.993, 0.005), (-90.0, 0.999, 0.001), (-89.0, 1, 0.001)]


@pytest.mark.parametrize("mode,spots", [("dsss-1", DBPSK_SPOTS), ("dsss-2", DQPSK_SPOTS)])
def test_dsss_success_rates_match_ns3_spot_values(mode: str, spots: list[tuple[float, float, float]]) -> None:
    for rss, expected, tol in spots:
        assert chunk_success_rate(mode, from_rss(rss), DSSS_SIZE) == pytest.approx(expected, abs=tol), rss


# (mode, snr dB, success, tolerance) for 2000-byte chunks, as WifiErrorRateModelsTestCaseNist asserts them
NIST_SPOTS = [
    ("ofdm-6", 2.5, 2.04e-10, 1e-10), ("ofdm-6", 3.0, 0.020, 0.001), ("ofdm-6", 4.0, 0.885, 0.001),
    ("ofdm-6", 5.0, 0.997, 0.001),
    ("ofdm-9", 6.0, 0.097, 0.001), ("ofdm-9", 7.0, 0.918, 0.001), ("ofdm-9", 8.0, 0.998, 0.001),
    ("ofdm-12", 6.0, 0.0174, 0.001), ("ofdm-12", 7.0, 0.881, 0.001), ("ofdm-12", 8.0, 0.997, 0.001),
    ("ofdm-18", 8.5, 2.85e-6, 1e-6), ("ofdm-18", 9.5, 0.623, 0.001), ("ofdm-18", 10.5, 0.985, 0.001),
    ("ofdm-24", 12.0, 2.22e-7, 1e-7), ("ofdm-24", 13.0, 0.495, 0.001), ("ofdm-24", 14.0, 0.974, 0.001),
    ("ofdm-36", 15.5, 0.012, 0.001), ("ofdm-36", 16.5, 0.818, 0.001), ("ofdm-36", 17.5, 0.993, 0.001),
    ("ofdm-48", 20.0, 1.3e-4, 1e-4), ("ofdm-48", 21.0, 0.649, 0.001), ("ofdm-48", 22.0, 0.983, 0.001),
    ("ofdm-54", 21.0, 5.44e-8, 1e-8), ("ofdm-54", 22.0, 0.410, 0.001), ("ofdm-54", 23.0, 0.958, 0.001),
    ("ofdm-54", 24.0, 0.999, 0.001),
]


@pytest.mark.parametrize("mode,snr_db,expected,tol", NIST_SPOTS)
def test_nist_ofdm_success_rates_match_ns3_spot_values(mode: str, snr_db: float, expected: float, tol: float) -> None:
    assert chunk_success_rate(mode, db(snr_db), 2000 * 8) == pytest.approx(expected, abs=tol)


def test_ht_mcs0_two_ms_chunk_at_4_db_matches_ns3() -> None:
    # WifiErrorRateModelsTestCaseMimo, SISO: HT MCS 0 over 2 ms (6.5 Mbit/s: 13,000 bits) at 4 dB: 0.905685
    assert chunk_success_rate("ht-mcs0", db(4.0), 0.002 * 6.5e6) == pytest.approx(0.905685, abs=1e-4)


def test_higher_rates_need_more_sinr() -> None:
    for family in (["dsss-1", "dsss-2", "cck-5.5", "cck-11"], [f"ofdm-{r}" for r in (6, 9, 12, 18, 24, 36, 48, 54)],
                   [f"ht-mcs{i}" for i in range(8)]):
        for snr_db in (0.0, 5.0, 9.0, 15.0, 21.0):
            rates = [chunk_success_rate(m, db(snr_db), 8000) for m in family]
            assert rates == sorted(rates, reverse=True), (family, snr_db, rates)


def test_modes_and_refusals() -> None:
    assert mode_for_rate("b", 11) is MODES["cck-11"] and mode_for_rate("g", 54) is MODES["ofdm-54"]
    assert mode_for_rate("g", 2) is MODES["dsss-2"]
    with pytest.raises(ErrorModelError, match="802.11b has no 54 Mbit/s rate"):
        mode_for_rate("b", 54)
    with pytest.raises(ErrorModelError, match="unknown mode"):
        chunk_success_rate("ofdm-7", 1.0, 8)
    assert chunk_success_rate("cck-11", 0.0, 0) == 1.0


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
