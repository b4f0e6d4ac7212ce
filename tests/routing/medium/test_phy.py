"""routing/medium/phy.py: the PHY's timing, airtime, rate sets and their refusals, rule by rule
(IEEE Std 802.11-2020)."""
from __future__ import annotations

from routing.medium.phy import (ACK_BYTES, MAC_OVERHEAD_BYTES, Phy, MediumError, CTS_BYTES, RTS_BYTES,
                                basic_rate_set, error_mode, fixed_rate, rate_problems, timing_problems)
import pytest
from tests.cores import ACK_NS, DATA_1000, DIFS, SLOT, B
from routing.medium.error_model import MODES
from routing.medium.rates import RateError, Timing, dsss_rate, ht20_rate, ofdm_rate, rate_set, txtime_ns
# the 802.11b and HT20 numbers both files check
from tests.routing.medium.test_dcf import CTS, R0, R5, R7, RTS, RTS_B, SIFS, US


# an 802.11b Phy's fields, for building one by hand (Phy.preset checks less than __post_init__ must)
BASE_PHY = dict(slot_ns=20_000, sifs_ns=10_000, preamble_ns=192_000, cw_min=31, cw_max=1023, retry_limit=7,
                rate_bps=11e6, basic_rate_bps=2e6)



def test_airtime_arithmetic_80211b() -> None:
    assert MAC_OVERHEAD_BYTES == 36 and ACK_BYTES == 14
    assert B.difs_ns == 10_000 + 2 * 20_000
    assert B.data_ns(1000) == DATA_1000
    assert B.ack_ns() == ACK_NS
    assert B.exchange_ns(1000) == DATA_1000 + 10_000 + ACK_NS
    g = Phy.preset("g")
    assert g.difs_ns == 28_000
    assert g.data_ns(1000) == 20_000 + 153_482   # (1036 * 8 / 54) us = 153.4815 us
    assert g.ack_ns() == 20_000 + 4_667          # 14 * 8 / 24 us = 4.667 us
    assert Phy.preset("b", rate_mbps=1, retry_limit=None).rate_bps == 1e6


def test_window_doubles_per_retry_and_caps() -> None:
    cws = [B.cw_min]
    for _ in range(6):
        cws.append(B.next_cw(cws[-1]))
    assert cws == [31, 63, 127, 255, 511, 1023, 1023]


def test_rts_cts_airtime_durations_and_timeouts_80211b() -> None:
    assert RTS_B.nav == "duration" and Phy.preset("b").nav == "exchange"   # the default is unchanged
    assert RTS_B.control_ns(20) == RTS and RTS_B.control_ns(14) == CTS == RTS_B.ack_ns()
    assert RTS_B.rts_duration_ns(1000) == 3 * SIFS + CTS + DATA_1000 + ACK_NS
    assert RTS_B.cts_duration_ns(1000) == 2 * SIFS + DATA_1000 + ACK_NS
    assert RTS_B.data_duration_ns(True) == SIFS + ACK_NS and RTS_B.data_duration_ns(False) == 0
    assert RTS_B.eifs_ns == SIFS + ACK_NS + DIFS
    assert RTS_B.cts_timeout_ns == SIFS + SLOT + 192_000
    assert RTS_B.attempt_ns(1000) == RTS + SIFS + CTS + SIFS + DATA_1000 + SIFS + ACK_NS
    # dot11RTSThreshold compares the MPDU: 1000 + 36 bytes
    on = Phy.preset("b", rts_threshold=1035)
    assert on.uses_rts(1000) and not Phy.preset("b", rts_threshold=1036).uses_rts(1000)
    assert not on.uses_rts(1000, acked=False)   # group-addressed frames never (10.3.5: individually addressed)
    with pytest.raises(MediumError, match="nav 'duration'"):
        Phy.preset("b", rts_threshold=0, nav="exchange")


@pytest.mark.parametrize("standard,slot,sifs,cw_min", [("b", 20, 10, 31), ("g", 9, 10, 15), ("a", 9, 16, 15),
                                                        ("n", 9, 10, 15), ("n-sgi", 9, 10, 15)])
def test_difs_is_sifs_plus_two_slots_and_cw_doubles_up_to_cw_max(standard: str, slot: int, sifs: int,
                                                                  cw_min: int) -> None:
    """DIFS = aSIFSTime + 2 x aSlotTime (10.3.2.3.5); CW after a failure = 2 (CW + 1) - 1, at most aCWmax (10.3.3)."""
    p = Phy.preset(standard)
    assert (p.slot_ns, p.sifs_ns, p.cw_min, p.cw_max) == (slot * US, sifs * US, cw_min, 1023)
    assert p.difs_ns == (sifs + 2 * slot) * US
    cw, seen = p.cw_min, [p.cw_min]
    while cw < 1023:
        cw = p.next_cw(cw)
        seen.append(cw)
    assert seen == [c for c in (7, 15, 31, 63, 127, 255, 511, 1023) if c >= cw_min]
    assert p.next_cw(1023) == 1023
    small = Phy.preset(standard, cw_max=100)
    assert small.next_cw(63) == 100 and small.next_cw(31) == 63


def test_eifs_is_sifs_plus_the_ack_at_the_lowest_rate_plus_difs() -> None:
    """EIFS = aSIFSTime + AckTxTime + DIFS (10.3.2.3.7), AckTxTime at the lowest basic rate with txtime."""
    b = Phy.preset("b")
    ack_2mbps = 192 * US + 14 * 8 * US // 2          # long preamble + 14 octets at 2 Mb/s
    assert b.eifs_ns == 10 * US + ack_2mbps + 50 * US
    g = Phy.preset("g", airtime="txtime")
    assert g.eifs_ns == 10 * US + txtime_ns(ofdm_rate(6), ACK_BYTES) + 28 * US
    a = Phy.preset("a")
    assert a.eifs_ns == 16 * US + txtime_ns(ofdm_rate(6, erp=False), ACK_BYTES) + (16 + 18) * US


def test_cts_timeout_is_sifs_plus_slot_plus_the_phy_start_delay() -> None:
    """CTSTimeout = aSIFSTime + aSlotTime + aRxPHYStartDelay (10.3.2.7), the delay as the PLCP preamble."""
    assert Phy.preset("b", rts_threshold=0).cts_timeout_ns == (10 + 20 + 192) * US
    assert Phy.preset("g", rts_threshold=0).cts_timeout_ns == (10 + 9 + 20) * US


def test_timing_floors_and_cw_order_are_refused_by_name() -> None:
    ok = {"slot_us": 1.0, "sifs_us": 1.0, "cw_min": 1023, "cw_max": 1023}
    assert timing_problems(ok) == []
    probs = dict(timing_problems({"slot_us": 0.99, "sifs_us": 0.5, "cw_min": 1024, "cw_max": 1023}))
    assert set(probs) == {"slot_us", "sifs_us", "cw_min"}
    assert "0.99" in probs["slot_us"] and "at least 1 us" in probs["slot_us"]
    assert "0.5" in probs["sifs_us"] and "aCWmin 1024 exceeds aCWmax 1023" in probs["cw_min"]
    assert [k for k, _ in timing_problems({**ok, "slot_us": float("nan")})] == ["slot_us"]
    with pytest.raises(MediumError, match="slot_us"):
        Phy.preset("b", slot_us=0.5)


def test_fixed_rate_defaults_to_the_standards_top_rate_and_names_bad_ones() -> None:
    assert fixed_rate("b") == dsss_rate(11) and fixed_rate("b", 5.5) == dsss_rate(5.5)
    assert fixed_rate("g") == ofdm_rate(54) and fixed_rate("g", 6) == ofdm_rate(6)
    assert fixed_rate("a") == ofdm_rate(54, erp=False) and fixed_rate("a", 12.0) == ofdm_rate(12, erp=False)
    assert fixed_rate("n") == ht20_rate(7) and fixed_rate("n", mcs=0) == ht20_rate(0)
    assert fixed_rate("n-sgi") == ht20_rate(7, short_gi=True) and fixed_rate("n-sgi", mcs=3) == ht20_rate(3, True)
    with pytest.raises(RateError, match="names its rate by mcs"):
        fixed_rate("n", rate_mbps=65)
    with pytest.raises(RateError, match="only with standard n or n-sgi"):
        fixed_rate("g", mcs=3)
    with pytest.raises(RateError, match="OFDM rate 5.5 Mb/s"):
        fixed_rate("g", 5.5)


def test_basic_rate_set_is_the_mandatory_rates_up_to_the_basic_rate() -> None:
    """The PHY's mandatory rates (15.1, 16.1, 17.3.5.1) up to basic_rate_mbps (b 2, others 24 by default)."""
    assert basic_rate_set("b") == (dsss_rate(1), dsss_rate(2))
    assert basic_rate_set("b", 11) == tuple(dsss_rate(m) for m in (1, 2, 5.5, 11))
    assert basic_rate_set("b", 1) == (dsss_rate(1),)
    assert basic_rate_set("g") == tuple(ofdm_rate(m) for m in (6, 12, 24))
    assert basic_rate_set("n") == basic_rate_set("n-sgi") == basic_rate_set("g")
    assert basic_rate_set("a") == tuple(ofdm_rate(m, erp=False) for m in (6, 12, 24))
    assert basic_rate_set("g", 12) == (ofdm_rate(6), ofdm_rate(12))
    with pytest.raises(RateError) as e:
        basic_rate_set("g", 9)
    assert str(e.value) == "basic_rate_mbps 9: with standard g expected a mandatory rate: 6, 12, 24"
    with pytest.raises(RateError, match="expected a mandatory rate: 1, 2, 5.5, 11"):
        basic_rate_set("b", 6)


def test_error_mode_is_the_same_modulation_and_coding() -> None:
    assert error_mode(dsss_rate(1)) is MODES["dsss-1"] and error_mode(dsss_rate(2)) is MODES["dsss-2"]
    assert error_mode(dsss_rate(5.5)) is MODES["cck-5.5"] and error_mode(dsss_rate(11)) is MODES["cck-11"]
    assert error_mode(ofdm_rate(6)) is MODES["ofdm-6"] and error_mode(ofdm_rate(54, erp=False)) is MODES["ofdm-54"]
    for mcs in range(8):
        assert error_mode(ht20_rate(mcs)) is MODES[f"ht-mcs{mcs}"]
        assert error_mode(ht20_rate(mcs, short_gi=True)) is MODES[f"ht-mcs{mcs}"]   # the long-GI mode


def test_phy_timing_is_in_microseconds_for_the_rate_tables() -> None:
    assert Phy.preset("b").timing() == Timing(20, 10, 31)
    t = Phy.preset("g", slot_us=9.5, sifs_us=10).timing()
    assert t == Timing(9.5, 10, 15) and isinstance(t.sifs_us, int)   # type: ignore[arg-type]


def test_control_frame_sizes_and_the_duration_fields_80211b() -> None:
    assert (MAC_OVERHEAD_BYTES, ACK_BYTES, RTS_BYTES, CTS_BYTES) == (36, 14, 20, 14)
    p = Phy.preset("b", rts_threshold=500)
    data = 192 * US + -(-(1000 + 36) * 8 * 1000 // 11)
    ack = cts = 192 * US + 56 * US
    rts = 192 * US + 80 * US
    assert p.data_ns(1000) == data and p.ack_ns() == ack and p.control_ns(RTS_BYTES) == rts
    assert p.rts_duration_ns(1000) == 3 * 10 * US + cts + data + ack
    assert p.cts_duration_ns(1000) == 2 * 10 * US + data + ack
    assert p.data_duration_ns(True) == 10 * US + ack and p.data_duration_ns(False) == 0
    assert p.rts_exchange_ns() == rts + 10 * US + cts
    assert p.attempt_ns(1000) == rts + 10 * US + cts + 10 * US + data + 10 * US + ack
    assert p.attempt_ns(1000, acked=False) == data
    # a whole number of ns: no rounding up (1 and 2 Mb/s)
    assert Phy.preset("b", rate_mbps=1).data_ns(1000) == 192 * US + 1036 * 8 * US
    assert Phy.preset("b", rate_mbps=2, basic_rate_mbps=1).data_ns(1000) == 192 * US + 1036 * 4 * US
    assert Phy.preset("b", basic_rate_mbps=1).ack_ns() == 192 * US + 14 * 8 * US
    assert Phy.preset("n").data_ns(1000) == txtime_ns(ht20_rate(7), 1036)   # no rate given: the medium's


def test_rts_precedes_a_unicast_mpdu_longer_than_the_threshold() -> None:
    """10.3.5: RTS/CTS before an individually addressed frame whose MPDU is longer than dot11RTSThreshold."""
    p = Phy.preset("b", rts_threshold=1036)
    assert not p.uses_rts(1000) and p.uses_rts(1001)
    assert not p.uses_rts(1001, acked=False)
    assert Phy.preset("b", rts_threshold=0).uses_rts(0)
    assert not Phy.preset("b").uses_rts(1500)


def test_rate_problems_name_each_setting() -> None:
    assert rate_problems("b", "simple") == [] and rate_problems("g", "txtime") == []
    assert [k for k, _ in rate_problems("n", "simple")] == ["airtime"]
    assert [k for k, _ in rate_problems("g", "simple", "minstrel")] == ["airtime"]
    assert [k for k, _ in rate_problems("g", "simple", mcs=3)] == ["mcs"]
    assert [k for k, _ in rate_problems("g", "txtime", preamble_us=20)] == ["preamble_us"]
    assert [k for k, _ in rate_problems("n", "txtime", "minstrel", rate_mbps=65, mcs=7)] == ["rate_mbps", "mcs"]
    assert [k for k, _ in rate_problems("g", "txtime", mcs=3)] == ["mcs"]
    assert [k for k, _ in rate_problems("n", "txtime", rate_mbps=65)] == ["rate_mbps"]
    assert [k for k, _ in rate_problems("g", "txtime", basic_rate_mbps=9)] == ["basic_rate_mbps"]


def test_phy_preset_refusals_and_defaults() -> None:
    with pytest.raises(MediumError) as e:
        Phy.preset("z")
    assert str(e.value) == "standard: expected one of b, g, a, n, n-sgi, got 'z'"
    with pytest.raises(MediumError) as e:
        Phy.preset("b", airtime="exact")
    assert str(e.value) == "airtime: expected one of simple, txtime, got 'exact'"
    with pytest.raises(MediumError, match=r"^basic_rate_mbps: .*; cw_min: aCWmin 64 exceeds aCWmax 63"):
        Phy.preset("b", airtime="txtime", basic_rate_mbps=3, cw_min=64, cw_max=63)
    b = Phy.preset("b", slot_us=None, retry_limit=None)
    assert (b.slot_ns, b.retry_limit, b.long_retry_limit, b.nav, b.airtime) == (20_000, 7, 4, "exchange", "simple")
    assert (b.rate_bps, b.basic_rate_bps, b.rts_threshold, b.rate, b.rates) == (11e6, 2e6, None, None, ())
    o = Phy.preset("b", preamble_us=96, rate_mbps=5.5, basic_rate_mbps=1, retry_limit=3, long_retry_limit=2,
                   cw_min=15, cw_max=255, sifs_us=12, slot_us=10)
    assert (o.preamble_ns, o.rate_bps, o.basic_rate_bps, o.retry_limit, o.long_retry_limit) == \
        (96_000, 5.5e6, 1e6, 3, 2)
    assert (o.cw_min, o.cw_max, o.sifs_ns, o.slot_ns) == (15, 255, 12_000, 10_000)
    assert Phy.preset("b", rts_threshold=100).nav == "duration" and Phy.preset("b", nav="duration").nav == "duration"
    assert Phy.preset("b", rts_threshold=100).rts_threshold == 100
    n = Phy.preset("n", mcs=5)
    assert (n.airtime, n.standard, n.rate, n.rate_bps) == ("txtime", "n", ht20_rate(5), ht20_rate(5).bps)
    assert n.rates == rate_set("n") and n.basic_rates == basic_rate_set("n")
    assert Phy.preset("g", airtime="txtime", rate_mbps=12, basic_rate_mbps=12).basic_rates == basic_rate_set("g", 12)


def test_phy_refuses_what_it_cannot_model() -> None:
    base = BASE_PHY
    with pytest.raises(MediumError) as e:
        Phy(**base, nav="virtual")   # type: ignore[arg-type]
    assert str(e.value) == "nav: expected one of exchange, duration, got 'virtual'"
    with pytest.raises(MediumError, match=r"^rts_threshold: RTS/CTS works through the NAV"):
        Phy(**base, rts_threshold=0)   # type: ignore[arg-type]
    Phy(**base, rts_threshold=0, nav="duration")   # type: ignore[arg-type]
    with pytest.raises(MediumError) as e:
        Phy(**base, airtime="exact")   # type: ignore[arg-type]
    assert str(e.value) == "airtime: expected one of simple, txtime, got 'exact'"
    for missing in ({}, {"rate": ofdm_rate(54)}, {"rate": ofdm_rate(54), "rates": rate_set("g")},
                    {"rates": rate_set("g"), "basic_rates": basic_rate_set("g")}):
        with pytest.raises(MediumError, match="airtime txtime needs a rate, the rate set and the basic rate set"):
            Phy(**base, airtime="txtime", **missing)   # type: ignore[arg-type]
    Phy(**base, airtime="txtime", rate=ofdm_rate(54), rates=rate_set("g"),   # type: ignore[arg-type]
        basic_rates=basic_rate_set("g"))


def test_one_attempts_airtime_at_a_rate_with_and_without_rts_cts() -> None:
    """[RTS, SIFS, CTS, SIFS,] data[, SIFS, ACK], every part at the frame's rate or its control response rate."""
    for phy, rts in ((Phy.preset("n"), False), (Phy.preset("n", rts_threshold=0), True)):
        for r in (R7, R5, R0):
            data, ctl = txtime_ns(r, 1036), phy.response_rate(r)
            ack, cts, rts_ns = txtime_ns(ctl, 14), txtime_ns(ctl, 14), txtime_ns(ctl, 20)
            assert phy.attempt_ns(1000, acked=False, rate=r) == data
            before = rts_ns + 10 * US + cts + 10 * US if rts else 0
            assert phy.attempt_ns(1000, rate=r) == before + data + 10 * US + ack
    assert Phy.preset("n").response_rate() == ofdm_rate(24) and Phy.preset("n", mcs=0).response_rate() == ofdm_rate(6)


def test_phy_preset_passes_each_rate_setting_to_its_check() -> None:
    """Each rate setting that does not fit is refused as a MediumError naming it, before a rate is built."""
    for kw, key in (({"airtime": "txtime", "rate_mbps": 5.5}, "rate_mbps"), ({"airtime": "txtime", "mcs": 3}, "mcs"),
                    ({"mcs": 3}, "mcs"), ({"airtime": "txtime", "preamble_us": 20}, "preamble_us"),
                    ({"airtime": "txtime", "basic_rate_mbps": 9}, "basic_rate_mbps")):
        with pytest.raises(MediumError, match=f"^{key}: "):
            Phy.preset("g", **kw)   # type: ignore[arg-type]
    with pytest.raises(MediumError, match="^preamble_us: "):
        Phy.preset("n", preamble_us=36)


def test_the_refusals_say_why_in_full() -> None:
    """The reasons a user reads (experiments/ validation prints them): each in full."""
    assert dict(rate_problems("n", "simple")) == {"airtime": "simple (preamble + bits / rate) is the b and g model "
                                                  "only; standard n has the standard's PPDU durations: leave airtime "
                                                  "out or set txtime"}
    assert dict(rate_problems("g", "simple", "minstrel")) == {"airtime": "rate_control minstrel chooses among the "
                                                              "standard's rates, whose durations are airtime txtime: "
                                                              "leave airtime out or set txtime"}
    assert dict(rate_problems("g", "txtime", preamble_us=20)) == {"preamble_us": "with airtime txtime the PHY clause "
                                                                  "gives each PPDU's preamble and header "
                                                                  "(routing.medium.rates); leave preamble_us out"}
    assert dict(timing_problems({"slot_us": 9, "sifs_us": 10, "cw_min": 31, "cw_max": 15})) == {
        "cw_min": "aCWmin 31 exceeds aCWmax 15 (10.3.3: the window grows from aCWmin to aCWmax)"}
    base = BASE_PHY
    with pytest.raises(MediumError) as e:
        Phy(**base, rts_threshold=0)   # type: ignore[arg-type]
    assert str(e.value) == ("rts_threshold: RTS/CTS works through the NAV its Duration fields set (10.3.2.4): it "
                            "needs nav 'duration'")
    with pytest.raises(MediumError) as e:
        Phy(**base, airtime="txtime")   # type: ignore[arg-type]
    assert str(e.value) == "airtime txtime needs a rate, the rate set and the basic rate set (Phy.preset)"
    assert rate_problems("n", "txtime", "minstrel", rate_mbps=65, preamble_us=36) == [
        ("preamble_us", "with airtime txtime the PHY clause gives each PPDU's preamble and header (routing.medium.rates); "
                        "leave preamble_us out"),
        ("rate_mbps", "fixes the rate of every frame; rate_control minstrel chooses it per frame: leave it out, or "
                      "set rate_control fixed")]
