"""routing/medium/error_model.py's rules at their edges (issue 30, mutation run).

The mode tables of IEEE Std 802.11 (clause 16 DSSS/HR-DSSS, Table 17-4 OFDM, Table 19-27 HT20 MCS 0-7),
the distance spectra of the punctured codes of rate 2/3 and 5/6 (ns-3's CalculatePe, Haccoun and Begin
table V), the CCK fits' validity range (BER 0 above a SINR of 10, 0.5 below 0.1, the fit between, both
ends included), DQPSK's BER at most 0.5, and what chunk_success_rate refuses.
"""
from __future__ import annotations

import math

import pytest

from routing.medium.error_model import (DSSS_MODES, HT_MODES, MODES, OFDM_MODES, ErrorModelError, Mode, cck11_ber,
                                 cck55_ber, chunk_success_rate, coded_bit_error, dqpsk_ber, mode_for_rate, qam_ber,
                                 rates_of)


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
