"""routing.medium.rates: PPDU durations per IEEE Std 802.11-2020, against hand computations and published tables.

Hand computations are in the comments, each from the clause's TXTIME formula; "ns-3" values are those
of ns-3's src/wifi/test/tx-duration-test.cc (TxDurationTest), which cites 802.11-2007 Table 18-2 for CCK
and adds the 6 us signal extension at 2.4 GHz for OFDM and HT.
"""
import pytest
from routing.medium.rates import (ACK_BYTES, ERP_OFDM, TIMINGS, RateError, access_ns, ampdu_psdu_bytes,
                                  control_response_rate, dsss_rate, exchange_ns, ht20_rate, mac_efficiency,
                                  ofdm_rate, rate_by_name, rate_set, txtime_ns, DSSS, HR_DSSS, HT, OFDM, Rate,
                                  Timing, dsss_txtime_ns, ht_mf_txtime_ns, ofdm_txtime_ns)


US = 1000


OFDM_BASIC = [ofdm_rate(6), ofdm_rate(12), ofdm_rate(24)]


# --- DSSS / HR-DSSS (clauses 15, 16) -------------------------------------------------------------

@pytest.mark.parametrize("length, payload_us", [(1023, 744), (1024, 745), (1025, 746), (1026, 747)])
def test_cck_11mbps_length_examples(length, payload_us):
    """802.11-2007 Table 18-2 (example LENGTH calculations for CCK): 1023..1026 octets at 11 Mb/s take
    744..747 us after the PLCP preamble and header (192 us long, 96 us short)."""
    assert txtime_ns(dsss_rate(11), length) == (192 + payload_us) * US
    assert txtime_ns(dsss_rate(11, short_preamble=True), length) == (96 + payload_us) * US


def test_dsss_hand_computed():
    # 1500-byte MPDU at 11 Mb/s, long preamble: 192 + ceil(12000 / 11 = 1090.9) = 192 + 1091 = 1283 us
    assert txtime_ns(dsss_rate(11), 1500) == 1283 * US
    # 5.5 Mb/s, 1026 octets: ceil(8208 / 5.5 = 1492.4) = 1493 (ns-3: 1493 + 192)
    assert txtime_ns(dsss_rate(5.5), 1026) == (192 + 1493) * US
    # Ack (14 octets) at 1 Mb/s, long preamble: 192 + 112 = 304 us (ns-3: 304); at 2 Mb/s: 192 + 56 = 248
    assert txtime_ns(dsss_rate(1), ACK_BYTES) == 304 * US
    assert txtime_ns(dsss_rate(2), ACK_BYTES) == 248 * US
    # ns-3: 1536 octets at 11 Mb/s long: 192 + ceil(12288 / 11 = 1117.1) = 1310; 14 octets: 192 + 11 = 203
    assert txtime_ns(dsss_rate(11), 1536) == 1310 * US
    assert txtime_ns(dsss_rate(11), 14) == 203 * US


def test_short_preamble_is_refused_at_1mbps():
    with pytest.raises(RateError, match="1 Mb/s"):
        dsss_rate(1, short_preamble=True)


# --- OFDM / ERP-OFDM (clauses 17, 18) --------------------------------------------------------------

def test_ofdm_54_hand_computed():
    # 1500-byte MPDU at 54 Mb/s: N_SYM = ceil((16 + 12000 + 6) / 216 = 55.66) = 56; 16 + 4 + 4 x 56 = 244 us
    assert txtime_ns(ofdm_rate(54, erp=False), 1500) == 244 * US
    # ERP-OFDM adds aSignalExtension: 250 us
    assert txtime_ns(ofdm_rate(54), 1500) == 250 * US


@pytest.mark.parametrize("length, a_us", [(1536, 248), (76, 32), (14, 24)])
def test_ofdm_54_ns3_values(length, a_us):
    """ns-3 (from O'Reilly's 802.11 throughput tables): 802.11a 248/32/24 us, 802.11g 6 us more."""
    assert txtime_ns(ofdm_rate(54, erp=False), length) == a_us * US
    assert txtime_ns(ofdm_rate(54), length) == (a_us + 6) * US


def test_ofdm_ack_durations():
    # Ack at 24 Mb/s: N_SYM = ceil((16 + 112 + 6) / 96 = 1.4) = 2 -> 20 + 8 = 28 us; ERP: 34 us
    assert txtime_ns(ofdm_rate(24, erp=False), ACK_BYTES) == 28 * US
    assert txtime_ns(ofdm_rate(24), ACK_BYTES) == 34 * US
    # at 6 Mb/s: ceil(134 / 24 = 5.6) = 6 -> 20 + 24 = 44 us
    assert txtime_ns(ofdm_rate(6, erp=False), ACK_BYTES) == 44 * US


# --- HT mixed format, HT20, one stream (clause 19.4.3) -------------------------------------------

def test_ht_mcs7_long_gi_hand_computed():
    # 1500-byte MPDU at MCS 7 (N_DBPS 260): N_SYM = ceil((12000 + 16 + 6) / 260 = 46.2) = 47;
    # 36 us of preamble (L-STF 8, L-LTF 8, L-SIG 4, HT-SIG 8, HT-STF 4, HT-LTF 4) + 47 x 4 = 224 us
    assert txtime_ns(ht20_rate(7, band_ghz=5.0), 1500) == 224 * US
    # in the 2.4 GHz band the HT TXTIME adds the 6 us signal extension
    assert txtime_ns(ht20_rate(7), 1500) == 230 * US


def test_ht_short_gi_is_rounded_to_the_4us_grid():
    # MCS 7 short GI, 1500 bytes: 47 symbols x 3.6 = 169.2 us -> 4 x ceil(169.2 / 4) = 172 us; + 36 = 208 us
    assert txtime_ns(ht20_rate(7, short_gi=True, band_ghz=5.0), 1500) == 208 * US
    # MCS 0 short GI, 1536 bytes: N_SYM = ceil(12310 / 26) = 474; 474 x 3.6 = 1706.4 -> 1708; + 36 = 1744 us.
    # ns-3 gives 1742.4 us: it does not round the short-GI data field; the standard's TXTIME does.
    assert txtime_ns(ht20_rate(0, short_gi=True, band_ghz=5.0), 1536) == 1744 * US
    # MCS 0 short GI, 14 bytes (an Ack-sized PSDU): N_SYM = ceil((112 + 16 + 6) / 26 = 5.15) = 6 (the 6 tail
    # bits make the sixth symbol); 21.6 us -> 24; + 36 = 60 us (ns-3, unrounded: 57.6 us)
    assert txtime_ns(ht20_rate(0, short_gi=True, band_ghz=5.0), 14) == 60 * US


@pytest.mark.parametrize("length, us", [(1536, 228), (76, 48), (14, 40)])
def test_ht_mcs7_ns3_values(length, us):
    """ns-3: HT-MF MCS 7, 20 MHz, 800 ns GI: 228/48/40 us at 5 GHz, 6 us more at 2.4 GHz."""
    assert txtime_ns(ht20_rate(7, band_ghz=5.0), length) == us * US
    assert txtime_ns(ht20_rate(7), length) == (us + 6) * US


def test_ht_rates_and_names():
    assert [r.kbps for r in rate_set("n")] == [6500, 13000, 19500, 26000, 39000, 52000, 58500, 65000]
    assert [ht20_rate(m, True).kbps for m in range(8)] == [7222, 14444, 21667, 28889, 43333, 57778, 65000, 72222]
    assert ht20_rate(7).bps == 65e6 and abs(ht20_rate(7, True).bps - 72.222e6) < 1e3
    assert rate_by_name("ht-mcs7-sgi") == ht20_rate(7, True)
    assert rate_by_name("erp-54") == ofdm_rate(54) and rate_by_name("dsss-11-short") == dsss_rate(11, True)
    sgi = rate_set("n-sgi")
    assert len(sgi) == 16 and [r.bps for r in sgi] == sorted(r.bps for r in sgi)
    with pytest.raises(RateError):
        ht20_rate(8)
    with pytest.raises(RateError):
        rate_by_name("ht-mcs9")
    with pytest.raises(RateError):
        txtime_ns(ht20_rate(0), 0)


# --- control response rate (10.6.6.5) ----------------------------------------------------------------

def test_ack_rate_is_the_highest_basic_rate_not_above_the_data_rate():
    dsss_basic = [dsss_rate(1), dsss_rate(2)]
    assert control_response_rate(dsss_rate(11), dsss_basic) == dsss_rate(2)
    assert control_response_rate(dsss_rate(1), dsss_basic) == dsss_rate(1)
    # ... with the eliciting frame's preamble type (a short-preamble frame gets a short-preamble Ack)
    assert control_response_rate(dsss_rate(11, short_preamble=True), dsss_basic) == dsss_rate(2, short_preamble=True)
    assert control_response_rate(dsss_rate(2, short_preamble=True), [dsss_rate(1)]) == dsss_rate(1)
    assert control_response_rate(ofdm_rate(54), OFDM_BASIC) == ofdm_rate(24)
    assert control_response_rate(ofdm_rate(18), OFDM_BASIC) == ofdm_rate(12)
    assert control_response_rate(ofdm_rate(9), OFDM_BASIC) == ofdm_rate(6)


def test_ack_rate_for_ht_uses_the_non_ht_reference_rate():
    # MCS 7 -> 54 Mb/s reference -> 24; MCS 1 (QPSK 1/2) -> 12; MCS 0 -> 6; a non-HT (ERP) PPDU at 2.4 GHz
    assert control_response_rate(ht20_rate(7), OFDM_BASIC) == ofdm_rate(24)
    assert control_response_rate(ht20_rate(1), OFDM_BASIC) == ofdm_rate(12)
    assert control_response_rate(ht20_rate(0, True), OFDM_BASIC) == ofdm_rate(6)
    assert control_response_rate(ht20_rate(7), OFDM_BASIC).modulation == ERP_OFDM
    # where the reference rate and the HT rate part: MCS 5 short GI is 57.8 Mb/s, its reference (64-QAM 2/3)
    # 48 Mb/s; with every ERP rate basic the Ack goes at 48, not 54
    all_erp = [ofdm_rate(m) for m in (6, 9, 12, 18, 24, 36, 48, 54)]
    assert control_response_rate(ht20_rate(5, short_gi=True), all_erp) == ofdm_rate(48)
    assert control_response_rate(ht20_rate(6), all_erp) == ofdm_rate(54)


def test_ack_rate_keeps_the_modulation_class_else_the_mandatory_rate():
    # a b/g BSS whose basic rates are the DSSS ones: an ERP-OFDM frame is answered in ERP-OFDM at the
    # highest mandatory OFDM rate not above it (6, 12, 24), not at 11 Mb/s DSSS
    bg_basic = [dsss_rate(1), dsss_rate(2), dsss_rate(5.5), dsss_rate(11)]
    assert control_response_rate(ofdm_rate(54), bg_basic) == ofdm_rate(24)
    assert control_response_rate(ofdm_rate(18), bg_basic) == ofdm_rate(12)
    assert control_response_rate(ht20_rate(2), bg_basic) == ofdm_rate(12)  # MCS 2 -> 18 -> mandatory 12
    # and a DSSS frame is not answered in OFDM even when the basic set is OFDM only
    assert control_response_rate(dsss_rate(11), OFDM_BASIC) == dsss_rate(11)


# --- MAC efficiency without A-MPDU -----------------------------------------------------------------

def test_exchange_and_access_hand_computed():
    n = TIMINGS["n"]
    # 1500-byte packet + 36 bytes = 1536-byte MPDU at MCS 7, 2.4 GHz: ceil(12310 / 260) = 48 symbols:
    # 36 + 192 + 6 = 234 us; SIFS 10; Ack at 24 Mb/s ERP 34 us -> exchange 278 us
    assert exchange_ns(ht20_rate(7), 1536, n, OFDM_BASIC) == 278 * US
    # + DIFS (10 + 2 x 9 = 28 us) + mean first backoff (15 / 2 x 9 = 67.5 us) = 373.5 us
    assert access_ns(ht20_rate(7), 1536, n, OFDM_BASIC) == 373_500


def test_mac_efficiency_of_one_mpdu_per_access_at_mcs7():
    """The number docs/MEDIUM.md states for leaving A-MPDU out: 12000 bits / 373.5 us = 32.13 Mb/s,
    49.4 % of 65 Mb/s; at 54 Mb/s ERP-OFDM: 12000 / 393.5 us = 30.50 Mb/s, 56.5 %."""
    n = TIMINGS["n"]
    eff7 = mac_efficiency(ht20_rate(7), 1500, n, OFDM_BASIC)
    assert eff7 == pytest.approx(12000 / 373.5 / 65, abs=1e-9)
    assert round(eff7 * 100, 1) == 49.4 and round(eff7 * 65, 2) == 32.13
    eff54 = mac_efficiency(ofdm_rate(54), 1500, TIMINGS["g"], OFDM_BASIC)
    assert round(eff54 * 100, 1) == 56.5 and round(eff54 * 54, 2) == 30.50
    # the fixed per-access cost weighs less at low rates: MCS 0 keeps 88 %
    assert mac_efficiency(ht20_rate(0), 1500, n, OFDM_BASIC) > 0.85


def test_what_an_ampdu_of_8_would_give():
    """For comparison only (the medium has no A-MPDU): 8 MPDUs of 1536 bytes in one A-MPDU, each with a
    4-byte delimiter (no padding: 1536 is a multiple of 4) = 12320 bytes; ceil((98560 + 22) / 260) = 380
    symbols: 36 + 1520 + 6 = 1562 us; BlockAck (32 bytes) at 24 Mb/s ERP: ceil(278 / 96) = 3 -> 38 us;
    28 + 67.5 + 1562 + 10 + 38 = 1705.5 us for 96000 bits: 56.29 Mb/s, 86.6 %, 1.75 x one MPDU."""
    n = TIMINGS["n"]
    assert ampdu_psdu_bytes(8, 1536) == 12320
    assert ampdu_psdu_bytes(2, 1537) == 4 + 1540 + 4 + 1537  # padding on all but the last
    assert access_ns(ht20_rate(7), 1536, n, OFDM_BASIC, mpdus=8) == 1_705_500
    eff8 = mac_efficiency(ht20_rate(7), 1500, n, OFDM_BASIC, mpdus=8)
    assert round(eff8 * 100, 1) == 86.6 and round(eff8 * 65, 2) == 56.29
    assert round(eff8 / mac_efficiency(ht20_rate(7), 1500, n, OFDM_BASIC), 2) == 1.75
    with pytest.raises(RateError):
        ampdu_psdu_bytes(0, 1536)


# ====================================================================================================
# routing.medium.rates: the rules tests/routing/medium/test_rates.py leaves at their edges (issue 30, mutation run).
#
# From IEEE Std 802.11-2020: the rate tables (clauses 15-19: names, modulation classes, bands, the short
# preamble only above 1 Mb/s), the PHY characteristics of each timing preset (aSlotTime, aSIFSTime,
# aCWmin; DIFS = SIFS + 2 slots, 10.3.2.3.5), a PSDU of at least one octet, and the control response rule
# of 10.6.6.5.2 in the 5 GHz band (OFDM, no signal extension) and for DSSS (the preamble type kept).


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
