"""The 802.11 DCF medium's rules one by one (issue 30, item 3: the survivors of routing/medium.py's mutation run).

Each test is derived from the rule it pins (IEEE Std 802.11-2016/2020 clauses, docs/MEDIUM.md, the module's
docstrings), with times computed here from the clause, not read from the medium.  Virtual time only.
"""
from __future__ import annotations

import pytest

from routing.error_model import MODES
from routing.medium import (ACK_BYTES, CTS_BYTES, MAC_OVERHEAD_BYTES, RTS_BYTES, MediumError, Phy, basic_rate_set,
                            chain_rate, chain_stages, error_mode, fixed_rate, rate_problems, timing_problems)
from routing.rates import RateError, Timing, dsss_rate, ht20_rate, ofdm_rate, txtime_ns

US = 1000


# ---- interframe spaces and the contention window (10.3.2.3, 10.3.3) ------------------------------------

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


# ---- the settings a radio cannot have -----------------------------------------------------------------

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


# ---- rates: the fixed rate, the basic rate set, the error model's mode ---------------------------------

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


# ---- the retry chain (10.3.4.4 with rate control) ------------------------------------------------------

def test_chain_rate_and_stages_follow_the_tries_of_each_stage() -> None:
    r0, r1, r2 = ht20_rate(7), ht20_rate(5), ht20_rate(0)
    chain = [(r0, 2), (r1, 3), (r2, 1)]
    assert [chain_rate(chain, k) for k in range(1, 8)] == [r0, r0, r1, r1, r1, r2, r2]
    assert chain_stages(chain, 0) == []
    assert chain_stages(chain, 1) == [(r0, 1)]
    assert chain_stages(chain, 2) == [(r0, 2)]
    assert chain_stages(chain, 4) == [(r0, 2), (r1, 2)]
    assert chain_stages(chain, 6) == [(r0, 2), (r1, 3), (r2, 1)]
    assert chain_stages(chain, 9) == [(r0, 2), (r1, 3), (r2, 1)]


# ---- frame sizes and durations (9.3.1.2, 9.3.1.3, 9.2.5.2) ----------------------------------------------

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
