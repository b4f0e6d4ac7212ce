"""routing.medium.rates: the rules tests/test_rates.py leaves at their edges (issue 30, mutation run).

From IEEE Std 802.11-2020: the rate tables (clauses 15-19: names, modulation classes, bands, the short
preamble only above 1 Mb/s), the PHY characteristics of each timing preset (aSlotTime, aSIFSTime,
aCWmin; DIFS = SIFS + 2 slots, 10.3.2.3.5), a PSDU of at least one octet, and the control response rule
of 10.6.6.5.2 in the 5 GHz band (OFDM, no signal extension) and for DSSS (the preamble type kept).
"""
import pytest

from routing.medium.rates import (DSSS, ERP_OFDM, HR_DSSS, HT, OFDM, TIMINGS, Rate, RateError, Timing,
                           control_response_rate, dsss_rate, dsss_txtime_ns, ht20_rate, ht_mf_txtime_ns,
                           ofdm_rate, ofdm_txtime_ns, rate_by_name, rate_set, txtime_ns)

US = 1000


def test_the_rate_tables_name_each_rate_with_its_class_and_band():
    b = rate_set("b")
    assert [(r.name, r.modulation, r.kbps, r.short_preamble) for r in b] == [
        ("dsss-1", DSSS, 1000, False), ("dsss-2", DSSS, 2000, False), ("dsss-5.5", HR_DSSS, 5500, False),
        ("dsss-11", HR_DSSS, 11000, False)]
    assert dsss_rate(5.5, True).name == "dsss-5.5-short" and dsss_rate(2, True).modulation == DSSS
    g, a = rate_set("g"), rate_set("a")
    assert [r.name for r in g] == [f"erp-{m}" for m in (6, 9, 12, 18, 24, 36, 48, 54)]
    assert [r.name for r in a] == [f"ofdm-{m}" for m in (6, 9, 12, 18, 24, 36, 48, 54)]
    assert {(r.modulation, r.band_ghz) for r in g} == {(ERP_OFDM, 2.4)}
    assert {(r.modulation, r.band_ghz) for r in a} == {(OFDM, 5.0)}
    assert [r.n_dbps for r in a] == [24, 36, 48, 72, 96, 144, 192, 216] and [r.kbps for r in a][-1] == 54000
    n = rate_set("n")
    assert [r.name for r in n] == [f"ht-mcs{m}" for m in range(8)]
    assert [(r.mcs, r.short_gi, r.modulation) for r in n] == [(m, False, HT) for m in range(8)]
    assert ht20_rate(3, True, 5.0).name == "ht-mcs3-sgi-5g" and ht20_rate(3, band_ghz=5.0).name == "ht-mcs3-5g"
    assert rate_by_name("ht-mcs3-sgi-5g") == ht20_rate(3, True, 5.0)
    assert rate_by_name("ofdm-9") == ofdm_rate(9, erp=False) and rate_by_name("dsss-1") == dsss_rate(1)


def test_a_rate_s_defaults_are_those_of_a_long_preamble_non_ht_rate_at_2_4_ghz():
    r = Rate("x", DSSS, 1000)
    assert (r.n_dbps, r.mcs, r.short_gi, r.short_preamble, r.band_ghz) == (0, None, False, False, 2.4)
    assert r.bps == 1e6 and ofdm_rate(6).bps == 6e6
    assert ht20_rate(0, True).bps == pytest.approx(26 / 3.6e-6)


def test_the_signal_extension_is_for_erp_and_ht_at_2_4_ghz_only():
    assert ofdm_rate(6).signal_extension_us == 6 and ht20_rate(0).signal_extension_us == 6
    assert ofdm_rate(6, erp=False).signal_extension_us == 0 and ht20_rate(0, band_ghz=5.0).signal_extension_us == 0
    assert dsss_rate(11).signal_extension_us == 0
    # an ERP-OFDM rate declared at 5 GHz has none either (the extension belongs to the 2.4 GHz band)
    assert Rate("x", ERP_OFDM, 6000, n_dbps=24, band_ghz=5.0).signal_extension_us == 0


@pytest.mark.parametrize("bad", [0, -1, True, 1.0, "14"])
def test_a_psdu_is_a_positive_whole_number_of_octets(bad):
    for f, r in ((dsss_txtime_ns, dsss_rate(1)), (ofdm_txtime_ns, ofdm_rate(6)), (ht_mf_txtime_ns, ht20_rate(0))):
        with pytest.raises(RateError, match=r"^PSDU length .*: expected a positive number of octets$"):
            f(r, bad)


def test_one_octet_is_carried():
    # 1 octet at 1 Mb/s long preamble: 192 + 8 us; at 6 Mb/s a: ceil(30 / 24) = 2 symbols: 28 us
    assert txtime_ns(dsss_rate(1), 1) == 200 * US
    assert txtime_ns(ofdm_rate(6, erp=False), 1) == 28 * US
    # HT MCS 0, 1 octet: ceil((8 + 22) / 26) = 2 symbols, 36 + 8 = 44 us (5 GHz)
    assert txtime_ns(ht20_rate(0, band_ghz=5.0), 1) == 44 * US


def test_short_gi_data_field_exactly_on_the_grid_is_not_rounded_up():
    # MCS 0 short GI: N_SYM = 10 (1 .. 26 x 10 - 22 bits): 36 us; 10 x 3.6 = 36 us, exactly 9 long symbols
    length = (26 * 10 - 22) // 8      # 29 octets: ceil((232 + 22) / 26) = 10
    assert ht_mf_txtime_ns(ht20_rate(0, True, 5.0), length) == 36 * US + 36 * US


def test_unknown_rates_are_refused_with_the_rates_that_exist():
    with pytest.raises(RateError, match=r"^DSSS/HR-DSSS rate 3 Mb/s: expected one of 1, 2, 5.5, 11$"):
        dsss_rate(3)
    with pytest.raises(RateError, match=r"^the short PLCP preamble is not defined for 1 Mb/s \(16.2.2.3\)$"):
        dsss_rate(1, short_preamble=True)
    with pytest.raises(RateError, match=r"^OFDM rate 7 Mb/s: expected one of 6, 9, 12, 18, 24, 36, 48, 54$"):
        ofdm_rate(7)
    for mcs in (-1, 8, 1.0):
        with pytest.raises(RateError, match=r"^HT MCS .*: expected 0..7 \(one spatial stream\)$"):
            ht20_rate(mcs)
    assert ht20_rate(0).mcs == 0 and ht20_rate(7).mcs == 7
    with pytest.raises(RateError, match=r"^rate set 'ac': expected one of b, g, a, n, n-sgi$"):
        rate_set("ac")
    with pytest.raises(RateError, match=r"^unknown rate 'erp-7'$"):
        rate_by_name("erp-7")
    with pytest.raises(RateError, match=r"^rate x: unknown modulation 'vht'$"):
        txtime_ns(Rate("x", "vht", 1000), 100)


@pytest.mark.parametrize("flag", [True, False])
def test_a_bool_is_no_dsss_rate(flag):
    # dsss_rate(True) was 1 Mb/s (round(True * 1000) == 1000); it is refused like any rate not in the clause
    with pytest.raises(RateError, match=rf"^DSSS/HR-DSSS rate {flag} Mb/s: expected one of 1, 2, 5.5, 11$"):
        dsss_rate(flag)


@pytest.mark.parametrize("flag", [True, False])
def test_a_bool_is_no_mcs(flag):
    # a bool is an int in Python (True == 1): ht20_rate(True) was MCS 1; it is refused like 1.0
    with pytest.raises(RateError, match=rf"^HT MCS {flag}: expected 0..7 \(one spatial stream\)$"):
        ht20_rate(flag)


@pytest.mark.parametrize("preset, slot, sifs, cw", [("b", 20, 10, 31), ("g", 9, 10, 15), ("a", 9, 16, 15),
                                                    ("n", 9, 10, 15)])
def test_each_phy_s_timing_and_its_difs_and_mean_first_backoff(preset, slot, sifs, cw):
    t = TIMINGS[preset]
    assert (t.slot_us, t.sifs_us, t.cw_min) == (slot, sifs, cw)
    assert t.difs_ns == (sifs + 2 * slot) * US                 # 10.3.2.3.5
    assert t.mean_backoff_ns == cw * slot * US // 2           # uniform in [0, aCWmin] slots
    assert Timing(9, 10, 15).mean_backoff_ns == 67_500        # odd products keep the half microsecond


def test_control_responses_in_the_5_ghz_band_are_ofdm_without_extension():
    a_basic = [ofdm_rate(6, erp=False), ofdm_rate(12, erp=False), ofdm_rate(24, erp=False)]
    ack = control_response_rate(ht20_rate(7, band_ghz=5.0), a_basic)
    assert ack == ofdm_rate(24, erp=False) and ack.modulation == OFDM
    # no basic rate of the class: the highest mandatory OFDM rate (6, 12, 24) not above the reference
    assert control_response_rate(ht20_rate(4, band_ghz=5.0), []) == ofdm_rate(24, erp=False)
    assert control_response_rate(ofdm_rate(48, erp=False), [ofdm_rate(6)]) == ofdm_rate(24, erp=False)
    assert control_response_rate(ofdm_rate(9, erp=False), []) == ofdm_rate(6, erp=False)
    # an ERP frame with no basic rate: the mandatory ERP rates
    assert control_response_rate(ofdm_rate(36), []) == ofdm_rate(24)


def test_dsss_responses_keep_the_preamble_and_fall_back_to_the_mandatory_rates():
    # no basic rate: the highest mandatory rate of DSSS/HR-DSSS (1, 2, 5.5, 11) not above the frame's
    assert control_response_rate(dsss_rate(11), []) == dsss_rate(11)
    assert control_response_rate(dsss_rate(5.5, True), []) == dsss_rate(5.5, True)
    assert control_response_rate(dsss_rate(2, True), [dsss_rate(2)]) == dsss_rate(2, True)
    # an HR/DSSS basic rate answers a DSSS frame only when not above it
    assert control_response_rate(dsss_rate(2), [dsss_rate(1), dsss_rate(11)]) == dsss_rate(1)
    assert control_response_rate(dsss_rate(11, True), [dsss_rate(5.5)]) == dsss_rate(5.5, True)


def test_the_n_sgi_set_holds_both_guard_intervals_of_every_mcs():
    sgi = rate_set("n-sgi")
    assert sorted((r.mcs, r.short_gi) for r in sgi) == [(m, g) for m in range(8) for g in (False, True)]
    # rate_by_name knows every HT rate: long and short GI, both bands
    for m in range(8):
        for g in (False, True):
            for band in (2.4, 5.0):
                r = ht20_rate(m, g, band)
                assert rate_by_name(r.name) == r


def test_an_ampdu_of_one_mpdu_is_the_mpdu_and_its_delimiter():
    from routing.medium.rates import ampdu_psdu_bytes
    assert ampdu_psdu_bytes(1, 1537) == 4 + 1537          # the last subframe is not padded
    assert ampdu_psdu_bytes(1, 1536) == 1540
    with pytest.raises(RateError, match=r"^A-MPDU of 0 MPDUs: expected at least 1$"):
        ampdu_psdu_bytes(0, 1536)


def test_mac_efficiency_is_exactly_the_bits_over_the_access_time_and_the_rate():
    from routing.medium.rates import access_ns, mac_efficiency
    basic = [ofdm_rate(6), ofdm_rate(12), ofdm_rate(24)]
    t = access_ns(ht20_rate(7), 1536, TIMINGS["n"], basic)
    assert mac_efficiency(ht20_rate(7), 1500, TIMINGS["n"], basic) == pytest.approx(12000 / (t * 1e-9) / 65e6,
                                                                                    rel=1e-14)
