"""routing.medium.error_model: the NIST / DSSS error-rate model against the textbook forms, ns-3's spot
values and its rules at their edges.
"""
from __future__ import annotations

import math
import statistics
import pytest
from routing.medium.error_model import (MODES, ErrorModelError, bpsk_ber, cck11_ber, cck55_ber,
                                        chunk_success_rate, coded_bit_error, dbpsk_ber, dqpsk_ber, mode_for_rate,
                                        qam_ber, qpsk_ber, DSSS_MODES, HT_MODES, OFDM_MODES, Mode, rates_of)


# ====================================================================================================
# The NIST / DSSS error-rate model (routing.medium.error_model) and the propagation formulas (routing.medium.propagation):
# values computed by hand from the cited formulas, and ns-3's own spot values of the same models
# (src/wifi/test/wifi-error-rate-models-test.cc: WifiErrorRateModelsTestCaseDsss and ...Nist).

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


# ====================================================================================================
# routing/medium/error_model.py's rules at their edges (issue 30, mutation run).
#
# The mode tables of IEEE Std 802.11 (clause 16 DSSS/HR-DSSS, Table 17-4 OFDM, Table 19-27 HT20 MCS 0-7),
# the distance spectra of the punctured codes of rate 2/3 and 5/6 (ns-3's CalculatePe, Haccoun and Begin
# table V), the CCK fits' validity range (BER 0 above a SINR of 10, 0.5 below 0.1, the fit between, both
# ends included), DQPSK's BER at most 0.5, and what chunk_success_rate refuses.


def test_the_mode_tables():
    assert [(m.name, m.rate_mbps, m.modulation, m.code_rate) for m in DSSS_MODES] == [
        ("dsss-1", 1, "dbpsk", None), ("dsss-2", 2, "dqpsk", None), ("cck-5.5", 5.5, "cck55", None),
        ("cck-11", 11, "cck11", None)]
    assert [(m.name, m.rate_mbps, m.modulation, m.code_rate) for m in OFDM_MODES] == [
        ("ofdm-6", 6, "bpsk", (1, 2)), ("ofdm-9", 9, "bpsk", (3, 4)), ("ofdm-12", 12, "qpsk", (1, 2)),
        ("ofdm-18", 18, "qpsk", (3, 4)), ("ofdm-24", 24, "qam16", (1, 2)), ("ofdm-36", 36, "qam16", (3, 4)),
        ("ofdm-48", 48, "qam64", (2, 3)), ("ofdm-54", 54, "qam64", (3, 4))]
    assert [(m.name, m.rate_mbps, m.modulation, m.code_rate) for m in HT_MODES] == [
        ("ht-mcs0", 6.5, "bpsk", (1, 2)), ("ht-mcs1", 13, "qpsk", (1, 2)), ("ht-mcs2", 19.5, "qpsk", (3, 4)),
        ("ht-mcs3", 26, "qam16", (1, 2)), ("ht-mcs4", 39, "qam16", (3, 4)), ("ht-mcs5", 52, "qam64", (2, 3)),
        ("ht-mcs6", 58.5, "qam64", (3, 4)), ("ht-mcs7", 65, "qam64", (5, 6))]
    assert len(MODES) == 20 and all(MODES[m.name] is m for m in DSSS_MODES + OFDM_MODES + HT_MODES)
    assert [m.dsss for m in (MODES["cck-11"], MODES["ofdm-6"], MODES["ht-mcs0"])] == [True, False, False]


def test_each_standard_s_rates():
    assert rates_of("b") == (1, 2, 5.5, 11)
    assert rates_of("g") == (1, 2, 5.5, 11, 6, 9, 12, 18, 24, 36, 48, 54)
    with pytest.raises(ErrorModelError, match=r"^802.11b has no 6 Mbit/s rate; its rates: 1, 2, 5.5, 11$"):
        mode_for_rate("b", 6)
    assert mode_for_rate("g", 5.5) is MODES["cck-5.5"] and mode_for_rate("b", 1) is MODES["dsss-1"]


def _pe(front, terms, p):
    d = math.sqrt(4 * p * (1 - p))
    return min(front * sum(c * d ** e for c, e in terms), 1.0)


def test_the_rate_2_3_and_5_6_spectra():
    p = 1e-3
    two_thirds = [(3, 6), (70, 7), (285, 8), (1276, 9), (6160, 10), (27128, 11), (117019, 12), (498860, 13),
                  (2103891, 14), (8784123, 15)]
    five_sixths = [(92, 4), (528, 5), (8694, 6), (79453, 7), (792114, 8), (7375573, 9), (67884974, 10),
                   (610875423, 11), (5427275376, 12), (47664215639, 13)]
    assert coded_bit_error(p, (2, 3)) == pytest.approx(_pe(1 / 4, two_thirds, p), rel=1e-12)
    assert coded_bit_error(p, (5, 6)) == pytest.approx(_pe(1 / 10, five_sixths, p), rel=1e-12)
    assert 0 < coded_bit_error(p, (5, 6)) < 1 and 0 < coded_bit_error(p, (2, 3)) < 1
    assert coded_bit_error(0.0, (5, 6)) == 0.0 and coded_bit_error(0.4, (2, 3)) == 1.0


def test_qam_uses_the_integer_2_m_minus_1_over_3():
    s = 30.0
    assert qam_ber(16, s) == pytest.approx(3 / (4 * 2) * math.erfc(math.sqrt(s / 10)), rel=1e-12)
    assert qam_ber(64, s) == pytest.approx(7 / (8 * 3) * math.erfc(math.sqrt(s / 42)), rel=1e-12)


def test_an_uncoded_ber_of_zero_is_a_sure_chunk():
    # erfc underflows to 0 at a huge SINR: the chunk succeeds with certainty, whatever its length
    assert chunk_success_rate("ofdm-54", 1e6, 1e9) == 1.0
    assert chunk_success_rate("ht-mcs7", 1e6, 8000) == 1.0


@pytest.mark.parametrize("ber", [cck55_ber, cck11_ber])
def test_the_cck_fits_hold_from_0_1_to_10_inclusive(ber):
    assert ber(10.0) > 0.0 and ber(math.nextafter(10.0, 11)) == 0.0
    assert ber(0.1) < 0.5 and ber(math.nextafter(0.1, 0)) == 0.5
    assert ber(0.1) > ber(1.0) > ber(10.0)


def test_dqpsk_ber_is_at_most_one_half_and_one_half_without_signal():
    assert dqpsk_ber(0.0) == 0.5
    assert dqpsk_ber(1e-6) == 0.5                 # the formula exceeds 0.5 there: capped
    assert 0 < dqpsk_ber(0.05) < 0.5


def test_the_chunk_refuses_what_has_no_meaning():
    for bad in (-1.0, math.nan):
        with pytest.raises(ErrorModelError, match=r"^sinr and nbits must be >= 0, got"):
            chunk_success_rate("ofdm-6", bad, 8)
        with pytest.raises(ErrorModelError, match=r"^sinr and nbits must be >= 0, got"):
            chunk_success_rate("ofdm-6", 1.0, bad)
    with pytest.raises(ErrorModelError, match=r"^unknown mode 'x'; known: dsss-1, dsss-2, cck-5.5, cck-11, ofdm-6"):
        chunk_success_rate("x", 1.0, 8)
    # a zero SINR is a frame of noise: DSSS guesses each bit (BER 0.5 for DBPSK)
    assert chunk_success_rate("dsss-1", 0.0, 2) == pytest.approx(0.25)
    assert chunk_success_rate(Mode("custom", 1, "dbpsk"), 0.0, 1) == pytest.approx(0.5)
    assert chunk_success_rate("ofdm-6", 0.0, 0.0) == 1.0 and chunk_success_rate(MODES["cck-11"], 0.0, 0) == 1.0
