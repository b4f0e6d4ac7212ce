"""The 802.11 DCF medium's rules one by one (issue 30, item 3: the survivors of routing/medium/dcf.py's mutation run).

Each test is derived from the rule it pins (IEEE Std 802.11-2016/2020 clauses, docs/MEDIUM.md, the module's
docstrings), with times computed here from the clause, not read from the medium.  Virtual time only.

The mutants they killed, by rule (docs/MUTATION.md, "The 802.11 medium"): a frame's rate where the medium's
fixed rate was taken instead (RTS, CTS, Ack, ACKTimeout, Duration fields, airtime of ``_send_rts``,
``_send_data``, ``_on_ack_start``, ``_on_data_end``, ``_mode``); the NAV's edges (``_set_nav``: never
shortened, counted once, a NAV ending now; ``_on_rts_end``: a NAV ending with the RTS); a partial slot and a
resumed countdown (``_freeze``, ``_contend``: the token going back); half duplex under the NAV (``_garble``);
the times handed to ``_idle``/``_busy`` after an RTS, a CTS and a NAV; the reports of a delivered frame's
RTS failures (``_rts_failed``); the retry limit that follows dot11RTSThreshold (``_done``); counters that
must add up over frames; a frame error drawn as u < p and not at p = 0 (``_lost_to_error``); the
controllers' seeds (``controller``); ranges and capture at their edges; every refusal's text.
"""
from __future__ import annotations

import random
import zlib

import pytest

from routing.medium.error_model import MODES
from routing.medium.dcf import (ACK_BYTES, CTS_BYTES, MAC_OVERHEAD_BYTES, RTS_BYTES, Frame, Medium, MediumError, Phy,
                            RangeCapture, Topology, _Tx, basic_rate_set, chain_rate, chain_stages, error_mode,
                            fixed_rate, rate_problems, timing_problems)
from routing.medium.rate_control.minstrel import FixedRate, Minstrel
from routing.medium.rates import RateError, Timing, dsss_rate, ht20_rate, ofdm_rate, rate_set, txtime_ns
from tests.test_medium import B, DATA_1000, DIFS, SLOT, ScriptedRng, full_mesh, run
from tests.test_medium_rts import CTS, DATA_40, RTS, RTS_B, SIFS, strike

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


# ---- who hears and who senses whom ----------------------------------------------------------------------

def test_ranges_include_their_edge_and_carrier_sense_is_never_shorter_than_decoding() -> None:
    pos = {"A": (0.0, 0.0), "B": (250.0, 0.0), "C": (0.0, 550.0), "D": (0.0, -550.5)}
    t = Topology.from_positions(pos, 250, 550)
    assert t.hears["A"] == {"B"} and t.senses["A"] == {"B", "C"}    # 250 m and 550 m exactly: in range
    assert "D" not in t.senses["A"] and t.senses["C"] == {"A"} and t.senses["D"] == set()
    short_cs = Topology.from_positions(pos, 250, 100)   # a carrier-sense range below the decoding range
    assert short_cs.senses == short_cs.hears
    g = Topology.from_graph({"A": ["B"], "B": ["A"], "C": []})
    assert g.senses == g.hears
    g = Topology.from_graph({"A": ["B"], "B": ["A"], "C": []}, senses={"A": ["C"]})
    assert g.senses == {"A": {"B", "C"}, "B": {"A"}, "C": set()}


# ---- ns-2's capture on range reception (medium.capture_db) ---------------------------------------------

def _tx(src: str, dst: str, start: int) -> _Tx:
    return _Tx(src, dst, start, start + 1000, Frame(src, dst, None, 100))


def test_capture_keeps_a_frame_held_against_one_at_least_capture_db_weaker() -> None:
    """ns-2 Mac802_11::recv: the frame being received survives a later one CPThresh weaker, d^-4 signals."""
    pos = {"R": (0.0, 0.0), "S": (1.0, 0.0), "I": (10.0, 0.0)}   # 10 x the distance: 40 dB weaker at d^-4
    at_40 = RangeCapture(pos, 40.0)
    victim, later = _tx("S", "R", 0), _tx("I", "X", 1)
    assert at_40.keeps(victim, later, "R")                      # exactly capture_db weaker: kept
    assert not RangeCapture(pos, 40.001).keeps(victim, later, "R")
    assert RangeCapture(pos, 20.0, exponent=2.0).keeps(victim, later, "R")
    assert not RangeCapture(pos, 20.001, exponent=2.0).keeps(victim, later, "R")
    assert not at_40.keeps(victim, _tx("I", "X", 0), "R")       # same start: the MAC locked on neither first
    assert not at_40.keeps(_tx("S", "R", 5), _tx("I", "X", 1), "R")   # the weaker came first: never kept
    assert not at_40.keeps(victim, later, "I") and not at_40.keeps(victim, later, "S")   # rx sends one of them


# ---- building a PHY and a medium: every refusal names its setting ----------------------------------------

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


# an 802.11b Phy's fields, for building one by hand (Phy.preset checks less than __post_init__ must)
BASE_PHY = dict(slot_ns=20_000, sifs_ns=10_000, preamble_ns=192_000, cw_min=31, cw_max=1023, retry_limit=7,
                rate_bps=11e6, basic_rate_bps=2e6)


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


def test_medium_refuses_settings_that_do_not_fit_together() -> None:
    topo = Topology.from_graph({"A": ["B"], "B": ["A"]})
    with pytest.raises(MediumError) as e:
        Medium(Phy.preset("b"), topo, 5, random.Random(1), rate_control="arf")
    assert str(e.value) == "rate_control: expected one of fixed, minstrel, got 'arf'"
    with pytest.raises(MediumError) as e:
        Medium(Phy.preset("b"), topo, 5, random.Random(1), rate_control="minstrel")
    assert str(e.value) == ("rate_control minstrel: chooses among the standard's rates, which need airtime txtime "
                            "(the simple airtime has one rate)")
    with pytest.raises(MediumError) as e:
        Medium(Phy.preset("b"), topo, 5, random.Random(1), radio=object(),  # type: ignore[arg-type]
               capture=RangeCapture({"A": (0, 0), "B": (1, 0)}, 10))
    assert str(e.value) == "capture_db: ns-2's capture rule is for reception range; reception sinr captures by SINR"
    m = Medium(Phy.preset("g", airtime="txtime"), topo, 5, random.Random(1), rate_control="minstrel", seed=9)
    assert (m.rate_control, m.seed, m.queue_packets, m.capture, m.radio, m.radio_loss) == \
        ("minstrel", 9, 5, None, None, None)
    assert [s.cw for s in m.stations.values()] == [15, 15]


# ---- the DCF countdown (10.3.4.3) -------------------------------------------------------------------------

def test_a_slot_only_partly_idle_is_not_counted_and_the_driver_never_wakes_for_a_frozen_attempt() -> None:
    """B counts 5 slots from DIFS; A starts 2.5 slots into them: B keeps 3 (a slot is counted once it has
    passed idle whole), resumes DIFS after A's exchange, and its stale attempt at DIFS + 5 slots is no timer."""
    rng = ScriptedRng(5, 0)
    m = Medium(B, full_mesh("A", "B", "C"), 10, rng)   # type: ignore[arg-type]
    m.send(0, Frame("B", "C", "b", 1000))
    a_start = DIFS + 2 * SLOT + SLOT // 2
    assert m.next_timer() == DIFS + 5 * SLOT
    m.advance(a_start - 1)
    m.send(a_start, Frame("A", "C", "a", 1000))   # A, idle for longer than DIFS: 0 slots, on the air now
    assert m.next_timer() == a_start
    m.advance(a_start)
    assert m.next_timer() == a_start + DATA_1000   # not B's frozen attempt at DIFS + 5 slots
    a_end = a_start + B.exchange_ns(1000)
    assert run(m) == [(a_start + DATA_1000, "deliver", "A", "C"),
                      (a_end + DIFS + 3 * SLOT + DATA_1000, "deliver", "B", "C")]


def test_the_interface_queue_holds_exactly_queue_packets() -> None:
    m = Medium(B, full_mesh("A", "B"), 3, ScriptedRng())   # type: ignore[arg-type]
    frames = [Frame("A", "B", i, 100) for i in range(5)]
    assert [m.send(0, f) for f in frames[:3]] == [[], [], []]
    assert m.queued("A") == 3 and m.queued("B") == 0
    out = m.send(0, frames[3])
    assert [(o.at_ns, o.frame, o.reason) for o in out] == [(0, frames[3], "queue")]   # type: ignore[union-attr]
    assert m.stations["A"].stats.queue_drops == 1
    run(m, until=DIFS)        # the head is on the air: one place free
    assert m.queued("A") == 3 and m.send(DIFS, frames[4]) != []
    assert m.stations["A"].stats.queue_drops == 2
    assert [o[1] for o in run(m)] == ["deliver"] * 3


# ---- rate control on the medium (module docstring, "Rates") -------------------------------------------

class Recorder:
    """A rate controller that gives one chain and records every report."""

    def __init__(self, chain: list[tuple[object, int]]) -> None:
        self.chain = chain
        self.chosen: list[int] = []
        self.reports: list[tuple[int, object, int, int]] = []

    def choose(self, now_ns: int) -> list[tuple[object, int]]:
        self.chosen.append(now_ns)
        return list(self.chain)

    def report(self, now_ns: int, rate: object, attempts: int, success: int) -> None:
        self.reports.append((now_ns, rate, attempts, success))


class ErrorsAt(Medium):
    """Range reception plus a frame error of 1 at the rates named (the hook an error model fills), recording
    what the medium asks."""

    def __init__(self, *a: object, lossy: set[object], **kw: object) -> None:
        super().__init__(*a, **kw)   # type: ignore[arg-type]
        self.lossy = lossy
        self.asked: list[tuple[str, str, object, int]] = []

    def frame_error(self, src: str, dst: str, rate: object, psdu_bytes: int) -> float:   # type: ignore[override]
        self.asked.append((src, dst, rate, psdu_bytes))
        return 1.0 if rate in self.lossy else 0.0


N = Phy.preset("n", airtime="txtime")
R7, R5, R0 = ht20_rate(7), ht20_rate(5), ht20_rate(0)
DIFS_G = 28_000   # aSIFSTime 10 + 2 x aSlotTime 9 (HT at 2.4 GHz: the ERP short slot)


def test_each_data_attempt_goes_at_its_stage_and_each_stage_is_reported_once_the_success_on_the_last() -> None:
    """Attempt k at the rate of the stage k falls in; at the frame's end one report per stage used, with
    the success on the last; per-rate counts of attempts and acknowledged ones (StationStats)."""
    m = ErrorsAt(N, full_mesh("A", "B"), 10, ScriptedRng(), lossy={R7})   # type: ignore[arg-type]
    ctl = Recorder([(R7, 2), (R5, 2), (R0, 3)])
    m._controllers[("A", "B")] = ctl   # type: ignore[assignment]
    f = Frame("A", "B", "a", 1000)
    m.send(0, f)
    out = run(m)
    assert ctl.chosen == [DIFS_G]   # asked once, at the first attempt
    psdu = 1000 + MAC_OVERHEAD_BYTES
    assert m.asked == [("A", "B", R7, psdu), ("A", "B", R7, psdu), ("A", "B", R5, psdu)]
    assert len(out) == 1 and out[0][1:] == ("deliver", "A", "B")
    end = out[0][0] + N.sifs_ns + N.ack_ns(R5)    # the Ack of the third attempt ends the frame
    assert ctl.reports == [(end, R7, 2, 0), (end, R5, 1, 1)]
    assert (f.data_attempts, f.rate, f.chain, f.collisions) == (3, R5, [(R7, 2), (R5, 2), (R0, 3)], 2)
    st = m.stations["A"].stats
    assert st.rate_attempts == {"ht-mcs7": 2, "ht-mcs5": 1} and st.rate_acks == {"ht-mcs5": 1}
    assert (st.errors, st.collisions, st.attempts, st.retries, st.frames) == (2, 0, 3, 2, 1)
    assert st.airtime_ns == f.airtime_ns == 2 * N.exchange_ns(1000, R7) + N.exchange_ns(1000, R5)


def test_a_spent_chain_drops_the_frame_below_the_retry_limit_and_reports_every_stage_failed() -> None:
    m = ErrorsAt(N, full_mesh("A", "B"), 10, ScriptedRng(), lossy={R7, R5})   # type: ignore[arg-type]
    ctl = Recorder([(R7, 2), (R5, 1)])
    m._controllers[("A", "B")] = ctl   # type: ignore[assignment]
    f = Frame("A", "B", "a", 1000)
    m.send(0, f)
    out = run(m)
    assert [o[1:] for o in out] == [("mac_retry", "A", "B")]
    assert ctl.reports == [(out[0][0], R7, 2, 0), (out[0][0], R5, 1, 0)]
    st = m.stations["A"].stats
    assert (st.mac_drops, st.errors, st.rate_acks, f.data_attempts) == (1, 3, {}, 3)
    assert m.stations["A"].cw == N.cw_min


def test_the_chain_is_cut_to_the_retry_limit_that_applies() -> None:
    """dot11ShortRetryLimit without RTS/CTS, dot11LongRetryLimit with it (10.3.4.4)."""
    for phy, limit in ((Phy.preset("n", retry_limit=3, long_retry_limit=2), 3),
                       (Phy.preset("n", rts_threshold=0, retry_limit=3, long_retry_limit=2), 2)):
        m = Medium(phy, full_mesh("A", "B"), 10, ScriptedRng())   # type: ignore[arg-type]
        m._controllers[("A", "B")] = Recorder([(R7, 2), (R5, 2)])   # type: ignore[assignment]
        f = Frame("A", "B", "a", 1000)
        m.send(0, f)
        run(m)
        assert f.chain == ([(R7, 2), (R5, 1)] if limit == 3 else [(R7, 2)])


def test_the_controllers_are_one_per_link_seeded_from_the_medium_seed_and_the_links_names() -> None:
    m = Medium(N, full_mesh("A", "B"), 10, random.Random(1), rate_control="minstrel", seed=6)
    ab = m.controller("A", "B")
    assert isinstance(ab, Minstrel) and m.controller("A", "B") is ab and m.controller("B", "A") is not ab
    for src, dst in (("A", "B"), ("B", "A")):
        twin = Minstrel(N.rates, N.timing(), N.basic_rates, seed=6 * 2**32 + zlib.crc32(f"{src}>{dst}".encode()),
                        retry_limit=N.retry_limit)
        got = m.controller(src, dst)
        assert got._sample_table == twin._sample_table and got.retry_limit == 7   # type: ignore[attr-defined]
        assert got.rates == N.rates and got.timing == Timing(9, 10, 15)            # type: ignore[attr-defined]
    unseeded = Medium(N, full_mesh("A", "B"), 10, random.Random(1), rate_control="minstrel")   # seed 0
    twin = Minstrel(N.rates, N.timing(), N.basic_rates, seed=zlib.crc32(b"A>B"), retry_limit=7)
    assert unseeded.controller("A", "B")._sample_table == twin._sample_table   # type: ignore[attr-defined]
    fixed = Medium(Phy.preset("n", mcs=3, retry_limit=5), full_mesh("A", "B"), 10, random.Random(1))
    c = fixed.controller("A", "B")
    assert isinstance(c, FixedRate) and c.choose(0) == [(ht20_rate(3), 5)]


def test_group_frames_go_at_the_lowest_basic_rate_and_simple_airtime_has_no_rate() -> None:
    m = Medium(N, full_mesh("A", "B"), 10, ScriptedRng())   # type: ignore[arg-type]
    g = Frame("A", "B", "probe", 100, acked=False)
    m.send(0, g)
    run(m)
    assert (g.rate, g.chain) == (ofdm_rate(6), None) and m._controllers == {}
    s = Medium(B, full_mesh("A", "B"), 10, ScriptedRng())   # type: ignore[arg-type]
    f = Frame("A", "B", "a", 100)
    s.send(0, f)
    run(s)
    assert (f.rate, f.chain) == (None, None) and s.stations["A"].stats.rate_acks == {"11Mbps": 1}


def test_radio_loss_is_drawn_per_data_attempt_with_its_end_time_and_retried() -> None:
    """A loss model standing for radio errors (layer radio) loses a data attempt as a frame error would:
    counted as an error, retried with a doubled window; called with (src, dst, the frame's end, packet bytes)."""
    rng = ScriptedRng()
    m = Medium(B, full_mesh("A", "B"), 10, rng)   # type: ignore[arg-type]
    calls: list[tuple[str, str, int, int]] = []
    m.radio_loss = lambda src, dst, now, nbytes: calls.append((src, dst, now, nbytes)) or len(calls) == 1
    m.send(0, Frame("A", "B", "a", 1000))
    out = run(m)
    first_end = DIFS + DATA_1000
    retry_end = first_end + B.sifs_ns + B.ack_ns() + DIFS + DATA_1000
    assert calls == [("A", "B", first_end, 1000), ("A", "B", retry_end, 1000)]
    assert out == [(retry_end, "deliver", "A", "B")]
    st = m.stations["A"].stats
    assert (st.errors, st.collisions, st.retries) == (1, 0, 1) and rng.windows == [31, 63]


# ---- virtual carrier sense (10.3.2.4) ---------------------------------------------------------------------

def test_a_nav_is_one_more_busy_transmission_only_ever_extended() -> None:
    """The NAV counts as busy until it ends; a shorter Duration never shortens it, a longer one extends it
    without counting twice; the end of a NAV since extended does not end it."""
    m = Medium(Phy.preset("b", nav="duration"), full_mesh("A", "C"), 10, ScriptedRng())   # type: ignore[arg-type]
    c = m.stations["C"]
    m._set_nav(c, 1000, 0)
    assert (c.busy, c.nav_until) == (1, 1000)
    m._set_nav(c, 500, 10)
    m._set_nav(c, 1000, 10)
    assert (c.busy, c.nav_until) == (1, 1000)
    m._set_nav(c, 2000, 100)
    assert (c.busy, c.nav_until) == (1, 2000)
    m.advance(1000)
    assert c.busy == 1
    m.advance(2000)
    assert (c.busy, c.idle_since) == (0, 2000)
    m._set_nav(c, 3000, 2000)    # a NAV that begins when the last one has ended counts again
    assert c.busy == 1


def test_a_data_frame_sets_the_nav_of_who_decodes_it_to_its_end_plus_sifs_and_ack() -> None:
    """Without RTS/CTS (nav duration): a third station that decodes A's unicast frame defers by its Duration
    (SIFS + ACK, 9.2.5.2) and then DIFS; a group-addressed frame's Duration is 0 and sets no NAV."""
    topo = Topology.from_graph({"A": ["B", "C"], "B": ["A"], "C": ["A", "D"], "D": ["C"]})
    phy = Phy.preset("b", nav="duration")
    for acked in (True, False):
        m = Medium(phy, topo, 10, ScriptedRng())   # type: ignore[arg-type]
        m.send(0, Frame("A", "B", "a", 1000, acked=acked))
        a_end = DIFS + DATA_1000
        run(m, until=a_end)
        assert m.stations["C"].nav_until == (a_end + phy.sifs_ns + phy.ack_ns() if acked else 0)
        assert m.stations["B"].nav_until == 0   # the addressee sets none
        m.send(a_end, Frame("C", "D", "c", 40))
        c_start = (a_end + phy.sifs_ns + phy.ack_ns() if acked else a_end) + DIFS
        assert [o for o in run(m) if o[2] == "C"] == [(c_start + phy.data_ns(40), "deliver", "C", "D")]


# ---- reception by SINR: what the medium asks of the radio (module docstring, "reception") -----------------

class ScriptedRadio:
    """A radio (routing.medium.reception.SinrReception's interface) whose draws come from a script (True when it runs
    out), recording each question: (sender, receiver, start, end, preamble, mode, overlaps)."""

    data_mode = MODES["cck-11"]
    control_mode = MODES["dsss-2"]

    def __init__(self, *draws: bool) -> None:
        self.draws = list(draws)
        self.asked: list[tuple[str, str, int, int, int, object, list[tuple[str, int, int]]]] = []

    def success_probability(self, src: str, rx: str, start: int, end: int, preamble_ns: int, mode: object,
                            overlaps: list[tuple[str, int, int]]) -> float:
        self.asked.append((src, rx, start, end, preamble_ns, mode, list(overlaps)))
        return 0.5

    def draw(self, p: float) -> bool:
        assert p == 0.5
        return self.draws.pop(0) if self.draws else True


def test_sinr_each_frame_is_judged_at_its_end_with_its_mode_and_a_loss_alone_on_the_air_is_faded() -> None:
    radio = ScriptedRadio(False)   # the first data frame is lost: nothing else was on the air
    m = Medium(B, full_mesh("A", "B"), 10, ScriptedRng(), radio=radio)   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    out = run(m)
    first = (DIFS, DIFS + DATA_1000)
    retry = DIFS + B.exchange_ns(1000) + DIFS
    assert out == [(retry + DATA_1000, "deliver", "A", "B")]
    ack = retry + DATA_1000 + B.sifs_ns
    assert radio.asked == [("A", "B", *first, 192_000, MODES["cck-11"], []),
                           ("A", "B", retry, retry + DATA_1000, 192_000, MODES["cck-11"], []),
                           ("B", "A", ack, ack + B.ack_ns(), 192_000, MODES["dsss-2"], [])]
    st = m.stations["A"].stats
    assert (st.collisions, st.faded, st.hidden, st.errors, st.ack_lost) == (1, 1, 0, 0, 0)


def test_sinr_txtime_modes_are_the_frames_rate_and_its_control_response_rate() -> None:
    radio = ScriptedRadio()
    m = Medium(N, full_mesh("A", "B"), 10, ScriptedRng(), radio=radio)   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    run(m)
    assert [a[5] for a in radio.asked] == [MODES["ht-mcs7"], MODES["ofdm-24"]]   # Ack at 24 Mb/s (10.6.6.5)
    assert [a[4] for a in radio.asked] == [N.preamble_ns] * 2
    radio = ScriptedRadio()   # a frame at MCS 0 (its chain): its Ack at 6 Mb/s
    m = Medium(N, full_mesh("A", "B"), 10, ScriptedRng(), radio=radio)   # type: ignore[arg-type]
    m._controllers[("A", "B")] = Recorder([(R0, 4)])   # type: ignore[assignment]
    m.send(0, Frame("A", "B", "a", 1000))
    run(m)
    assert [a[5] for a in radio.asked] == [MODES["ht-mcs0"], MODES["ofdm-6"]]


def test_sinr_a_sender_the_receiver_cannot_detect_draws_nothing_and_overlaps_are_named() -> None:
    # A and C, hidden from each other, both send to B at DIFS; B cannot detect D at all (D -> B, out of range)
    radio = ScriptedRadio(False, False)
    topo = Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"], "D": []})
    m = Medium(B, topo, 10, ScriptedRng(), radio=radio)   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    m.send(0, Frame("C", "B", "c", 1000))
    run(m, until=DIFS + DATA_1000)
    span = (DIFS, DIFS + DATA_1000)
    assert radio.asked == [("A", "B", *span, 192_000, MODES["cck-11"], [("C", *span)]),
                           ("C", "B", *span, 192_000, MODES["cck-11"], [("A", *span)])]
    a, c = m.stations["A"].stats, m.stations["C"].stats
    assert (a.collisions, a.hidden, a.faded) == (1, 1, 0) and (c.collisions, c.hidden, c.faded) == (1, 1, 0)
    lone = Medium(B, Topology.from_graph({"A": [], "B": []}), 10, ScriptedRng(),   # type: ignore[arg-type]
                  radio=ScriptedRadio())   # type: ignore[arg-type]
    lone.send(0, Frame("A", "B", "a", 1000))
    run(lone, until=DIFS + DATA_1000)
    assert lone.radio.asked == [] and lone.stations["A"].stats.faded == 1   # type: ignore[union-attr]


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


def test_rtss_without_cts_are_not_reported_but_the_data_attempt_before_them_is() -> None:
    """A frame whose one data attempt lost its Ack and whose next dot11ShortRetryLimit RTSs got no CTS leaves
    the queue (10.3.4.4), with no drop reported: the receiver had it (10.3.2.14).  One report, of the data
    attempt, failed (the RTSs go at a basic rate: not reported)."""
    phy = Phy.preset("n", rts_threshold=0)
    topo = Topology.from_graph({"A": ["B"], "B": ["A"], "K": [], "Z": ["K"]}, {"A": ["K"]})
    m = Medium(phy, topo, 10, ScriptedRng())   # type: ignore[arg-type]
    ctl = Recorder([(R7, 4)])
    m._controllers[("A", "B")] = ctl   # type: ignore[assignment]
    f = Frame("A", "B", "a", 1000)
    m.send(0, f)
    # K (sensed by A, decoded by no one there) radiates over the Ack, then over each CTS: garbled at A
    strikes = ["ack"] + ["cts"] * 7
    seen: list[object] = []
    out = []
    while (t := m.next_timer()) is not None:
        out += m.advance(t)
        for tx in list(m._air):
            if strikes and tx.kind == strikes[0] and not any(tx is x for x in seen):
                seen.append(tx)
                strikes.pop(0)
                m.send(t, Frame("K", "Z", "k", 40, acked=False))
    assert [(o.frame.src, type(o).__name__) for o in out if o.frame.src == "A"] == [("A", "Delivered")]
    assert [(r, n, s) for _, r, n, s in ctl.reports] == [(R7, 1, 0)]
    st = m.stations["A"].stats
    assert (st.rts, st.rts_failed, st.rts_drops, st.mac_drops, st.ack_lost, st.rate_acks) == (8, 7, 0, 0, 1, {})
    assert (st.frames, m.queued("A"), m.stations["A"].cw) == (1, 0, phy.cw_min)
    assert (f.data_attempts, f.short_retries, f.long_retries) == (1, 7, 1)
    assert st.airtime_ns == f.airtime_ns == 8 * phy.rts_exchange_ns(R7) + phy.exchange_ns(1000, R7)


# ---- RTS/CTS (10.3.5, 10.3.2.7) --------------------------------------------------------------------------

def test_rts_and_cts_go_at_the_control_response_rate_of_the_datas_rate_and_their_navs_end_with_the_ack() -> None:
    """A frame at MCS 0: RTS, CTS and Ack at 6 Mb/s (10.6.6.5), not at the 24 Mb/s that MCS 7 (the fixed rate)
    would get; D decodes only the RTS, C only the CTS, E both: every NAV ends with the Ack (9.2.5.2), E's
    once (the CTS's NAV ends when the RTS's does: not one more busy period), and then all sense the medium idle."""
    phy = Phy.preset("n", rts_threshold=0)
    topo = Topology.from_graph({"A": ["B", "D", "E"], "B": ["A", "C", "E"], "C": ["B"], "D": ["A"], "E": ["A", "B"]})
    m = Medium(phy, topo, 10, ScriptedRng())   # type: ignore[arg-type]
    m._controllers[("A", "B")] = Recorder([(R0, 4)])   # type: ignore[assignment]
    m.send(0, Frame("A", "B", "a", 1000))
    six = ofdm_rate(6)
    rts_end = DIFS_G + txtime_ns(six, 20)
    cts_end = rts_end + 10 * US + txtime_ns(six, 14)
    data_end = cts_end + 10 * US + txtime_ns(R0, 1036)
    ack_end = data_end + 10 * US + txtime_ns(six, 14)
    assert run(m, until=rts_end) == [] and m.stations["D"].nav_until == ack_end == m.stations["E"].nav_until
    assert run(m, until=cts_end) == [] and m.stations["C"].nav_until == ack_end == m.stations["E"].nav_until
    assert run(m) == [(data_end, "deliver", "A", "B")]
    assert {n: s.busy for n, s in m.stations.items()} == dict.fromkeys("ABCDE", 0)
    assert m.stations["E"].idle_since == ack_end
    # the airtime booked: RTS, SIFS, CTS (rts_exchange_ns, "the part of an exchange that RTS/CTS adds") and
    # data, SIFS, Ack, at MCS 0's rates
    booked = txtime_ns(six, 20) + 10 * US + txtime_ns(six, 14) + txtime_ns(R0, 1036) + 10 * US + txtime_ns(six, 14)
    assert m.stations["A"].stats.airtime_ns == booked


def test_a_station_that_answers_with_a_cts_counts_its_own_backoff_only_after_the_exchange() -> None:
    """B, with a frame of its own (5 slots), answers A's RTS; its countdown resumes DIFS after the Ack it sends."""
    m = Medium(RTS_B, full_mesh("A", "B"), 10, ScriptedRng(5, 0))   # type: ignore[arg-type]
    m.send(0, Frame("B", "A", "b", 40))
    m.send(0, Frame("A", "B", "a", 1000))
    ack_end = DIFS + RTS + SIFS + CTS + SIFS + DATA_1000 + SIFS + B.ack_ns()
    b_start = ack_end + DIFS + 5 * SLOT
    rts_b = RTS_B.control_ns(20)
    assert RTS_B.uses_rts(40) and rts_b == RTS
    b_data_end = b_start + RTS + SIFS + CTS + SIFS + DATA_40
    assert run(m) == [(ack_end - SIFS - B.ack_ns(), "deliver", "A", "B"), (b_data_end, "deliver", "B", "A")]


def test_a_nav_freezes_a_countdown_like_a_busy_medium() -> None:
    """C has counted 2 of its 5 slots when its NAV is set: it keeps 3 and counts them DIFS after the NAV."""
    phy = Phy.preset("b", nav="duration")
    m = Medium(phy, full_mesh("A", "C"), 10, ScriptedRng(5))   # type: ignore[arg-type]
    m.send(0, Frame("C", "A", "c", 40))
    now = DIFS + 2 * SLOT
    m.advance(now)
    m._set_nav(m.stations["C"], now + 1_000_000, now)
    assert m.stations["C"].backoff == 3
    assert run(m) == [(now + 1_000_000 + DIFS + 3 * SLOT + phy.data_ns(40), "deliver", "C", "A")]


def test_the_addressee_answers_an_rts_when_its_nav_ends_with_it() -> None:
    """10.3.2.7: a CTS unless the NAV indicates busy; a NAV that ends exactly at the RTS's end does not."""
    rts_end = DIFS + RTS
    for nav_until, answers in ((rts_end, True), (rts_end + 1, False)):
        m = Medium(RTS_B, full_mesh("A", "B"), 10, ScriptedRng())   # type: ignore[arg-type]
        m.send(0, Frame("A", "B", "a", 1000))
        m._set_nav(m.stations["B"], nav_until, 0)
        run(m, until=rts_end + RTS_B.cts_timeout_ns)
        st = m.stations["A"].stats
        assert (st.rts, st.rts_failed) == (1, 0 if answers else 1)


def test_a_station_that_senses_an_rts_it_cannot_decode_counts_after_eifs() -> None:
    """X senses A but decodes nothing of it: after A's RTS and again after A's data frame it waits EIFS, not
    DIFS (10.3.2.3.7), and counts its 2 slots only then.  A's 1000-byte frame goes with RTS/CTS, X's 40 without."""
    phy = Phy.preset("b", rts_threshold=500)
    topo = Topology.from_graph({"A": ["B"], "B": ["A"], "X": ["Y"], "Y": ["X"]}, {"X": ["A"]})
    m = Medium(phy, topo, 10, ScriptedRng(0, 2))   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    m.send(1, Frame("X", "Y", "x", 40))
    rts_end = DIFS + RTS
    run(m, until=rts_end)
    x = m.stations["X"]
    assert x.eifs and x.count_from == rts_end + phy.eifs_ns and x.attempt_at == rts_end + phy.eifs_ns + 2 * SLOT
    a_data_end = rts_end + SIFS + CTS + SIFS + DATA_1000
    assert run(m) == [(a_data_end, "deliver", "A", "B"),
                      (a_data_end + phy.eifs_ns + 2 * SLOT + phy.data_ns(40), "deliver", "X", "Y")]


def test_sinr_a_third_station_that_decodes_a_frame_sets_its_nav_one_that_does_not_waits_eifs() -> None:
    """nav duration with reception sinr: C and X each draw whether they decode A's frame to B; C, which does,
    sets its NAV to the frame's end + SIFS + ACK (9.2.5.2); X, which does not, waits EIFS (10.3.2.3.7)."""
    phy = Phy.preset("b", nav="duration")
    radio = ScriptedRadio(True, True, False)   # B decodes it, then C does, X does not (sensing order: B, C, X)
    m = Medium(phy, full_mesh("A", "B", "C", "X"), 10, ScriptedRng(), radio=radio)   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    end = DIFS + DATA_1000
    run(m, until=end)
    assert [(a[0], a[1]) for a in radio.asked] == [("A", "B"), ("A", "C"), ("A", "X")]
    c, x = m.stations["C"], m.stations["X"]
    assert (c.nav_until, c.eifs) == (end + phy.sifs_ns + phy.ack_ns(), False)
    assert (x.nav_until, x.eifs) == (0, True)
    assert m.stations["B"].nav_until == 0


def test_sinr_rts_and_cts_are_judged_in_the_control_mode() -> None:
    """RTS and CTS go at the control response rate (txtime) or the basic rate (simple): their reception is
    drawn in that mode, the data frame's in the data mode."""
    radio = ScriptedRadio()
    m = Medium(Phy.preset("n", rts_threshold=0), full_mesh("A", "B"), 10, ScriptedRng(),   # type: ignore[arg-type]
               radio=radio)   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    run(m)
    assert [(a[0], a[5]) for a in radio.asked] == [("A", MODES["ofdm-24"]), ("B", MODES["ofdm-24"]),
                                                   ("A", MODES["ht-mcs7"]), ("B", MODES["ofdm-24"])]
    radio = ScriptedRadio()
    m = Medium(Phy.preset("b", rts_threshold=0), full_mesh("A", "B"), 10, ScriptedRng(),   # type: ignore[arg-type]
               radio=radio)   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    run(m)
    assert [a[5] for a in radio.asked] == [MODES["dsss-2"], MODES["dsss-2"], MODES["cck-11"], MODES["dsss-2"]]


def test_nav_duration_without_rts_defer_airtime_and_an_addressee_out_of_range() -> None:
    """nav duration, no RTS/CTS: B, counting 5 slots, freezes when A's frame starts after 2, sets its NAV from
    the frame's Duration and counts its 3 slots DIFS after the Ack; a unicast attempt books data, SIFS and
    Ack, a group-addressed one its data only; a frame whose addressee cannot decode its sender is never
    delivered and is dropped after dot11ShortRetryLimit attempts."""
    phy = Phy.preset("b", nav="duration")
    m = Medium(phy, full_mesh("A", "B", "C"), 10, ScriptedRng(5, 2))   # type: ignore[arg-type]
    m.send(0, Frame("B", "C", "b", 1000))
    m.send(0, Frame("A", "C", "a", 1000))
    a_start = DIFS + 2 * SLOT
    ack_end = a_start + phy.exchange_ns(1000)
    assert run(m) == [(a_start + DATA_1000, "deliver", "A", "C"),
                      (ack_end + DIFS + 3 * SLOT + DATA_1000, "deliver", "B", "C")]
    assert m.stations["A"].stats.airtime_ns == phy.exchange_ns(1000)
    g = Medium(phy, full_mesh("A", "B"), 10, ScriptedRng())   # type: ignore[arg-type]
    g.send(0, Frame("A", "B", "probe", 1000, acked=False))
    assert run(g) == [(DIFS + DATA_1000, "deliver", "A", "B")] and g.stations["A"].stats.airtime_ns == DATA_1000
    far = Medium(phy, Topology.from_graph({"A": ["B"], "B": []}), 10, ScriptedRng())   # type: ignore[arg-type]
    far.send(0, Frame("A", "B", "a", 1000))
    out = run(far)
    assert [o[1] for o in out] == ["mac_retry"] and far.stations["A"].stats.attempts == 7


def test_the_duration_of_a_data_frame_is_sifs_plus_the_ack_at_its_rates_response_rate() -> None:
    phy = Phy.preset("n", nav="duration")
    topo = Topology.from_graph({"A": ["B", "C"], "B": ["A"], "C": ["A"]})
    m = Medium(phy, topo, 10, ScriptedRng())   # type: ignore[arg-type]
    m._controllers[("A", "B")] = Recorder([(R0, 4)])   # type: ignore[assignment]
    m.send(0, Frame("A", "B", "a", 1000))
    data_end = DIFS_G + txtime_ns(R0, 1036)
    assert run(m, until=data_end) == [(data_end, "deliver", "A", "B")]
    assert m.stations["C"].nav_until == data_end + 10 * US + txtime_ns(ofdm_rate(6), 14)
    run(m)
    assert m.stations["A"].stats.airtime_ns == txtime_ns(R0, 1036) + 10 * US + txtime_ns(ofdm_rate(6), 14)
    assert m.stations["A"].idle_since == data_end + 10 * US + txtime_ns(ofdm_rate(6), 14)   # the Ack's end


def test_events_count_what_ran_and_a_send_behind_an_exchange_waits_for_it() -> None:
    """One unicast exchange (exchange model) is five events: the attempt, the data frame's end, the Ack's
    start and end, the end of the hold.  A frame queued behind one in its exchange does not contend until
    that exchange is over (its own DIFS and backoff after it)."""
    m = Medium(B, full_mesh("A", "B"), 10, ScriptedRng(0, 3))   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    assert m.events == 0 and m.next_timer() == DIFS
    m.advance(DIFS)
    assert m.events == 1 and m.stations["A"].in_exchange
    m.send(DIFS, Frame("A", "B", "b", 1000))
    assert m.stations["A"].backoff is None and m.next_timer() == DIFS + DATA_1000
    end = DIFS + B.exchange_ns(1000)
    assert run(m) == [(DIFS + DATA_1000, "deliver", "A", "B"), (end + DIFS + 3 * SLOT + DATA_1000, "deliver", "A", "B")]
    assert m.events == 10 and m.next_timer() is None


def test_half_duplex_with_the_nav_a_station_that_transmitted_over_a_frame_did_not_decode_it() -> None:
    """nav duration: I, which hears A, transmits its own (short, group-addressed) frame while A's is on the
    air; it cannot have decoded A's frame (half duplex): no NAV from its Duration, EIFS after it."""
    phy = Phy.preset("b", nav="duration")
    m = Medium(phy, full_mesh("A", "B", "I"), 10, ScriptedRng())   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    m.send(0, Frame("I", "B", "i", 40, acked=False))
    run(m, until=DIFS + DATA_1000)
    i = m.stations["I"]
    assert (i.nav_until, i.eifs) == (0, True)


def test_a_countdown_resumed_before_its_old_attempt_time_does_not_go_at_that_time() -> None:
    """B draws 20 slots and has counted 1 when A's short frame starts: B keeps 19, counts them DIFS after A's
    frame, and transmits then, not at the time its first countdown would have ended (10.3.4.3)."""
    m = Medium(B, full_mesh("A", "B", "C"), 10, ScriptedRng(20, 0))   # type: ignore[arg-type]
    m.send(0, Frame("B", "C", "b", 40))
    m.advance(DIFS + SLOT - 1)
    m.send(DIFS + SLOT, Frame("A", "C", "a", 40, acked=False))
    a_end = DIFS + SLOT + DATA_40
    assert DIFS + 20 * SLOT > a_end + DIFS   # the old attempt time lies after B resumed counting
    b_start = a_end + DIFS + 19 * SLOT
    assert run(m) == [(a_end, "deliver", "A", "C"), (b_start + DATA_40, "deliver", "B", "C")]


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


class ErrorP(Medium):
    """Range reception with a frame error of ``p`` for every data attempt (the hook an error model fills)."""

    p = 0.0

    def frame_error(self, src: str, dst: str, rate: object, psdu_bytes: int) -> float:   # type: ignore[override]
        return self.p


def test_a_frame_error_is_drawn_as_u_below_p_from_its_own_stream_and_not_at_all_when_p_is_0() -> None:
    """frame_error: "Reception by range: 0, and nothing is drawn"; a frame is lost when the draw u < p, so a
    draw equal to p keeps it (the loss models' rule); the backoff draws are not touched."""
    idle = Medium(B, full_mesh("A", "B"), 10, random.Random(3), seed=4)
    m = ErrorP(B, full_mesh("A", "B"), 10, random.Random(3), seed=4)
    for i in range(3):
        m.send(0, Frame("A", "B", i, 100))
    run(m)
    assert m._error_rng.getstate() == idle._error_rng.getstate()   # p == 0: nothing drawn
    for bump, lost in ((0.0, False), (1e-12, True)):
        m = ErrorP(B, full_mesh("A", "B"), 10, ScriptedRng(), seed=4)   # type: ignore[arg-type]
        state = m._error_rng.getstate()
        u = m._error_rng.random()
        m._error_rng.setstate(state)
        m.p = u + bump
        m.send(0, Frame("A", "B", "a", 100))
        out = run(m, until=DIFS + B.data_ns(100))
        assert (m.stations["A"].stats.errors, len(out)) == (int(lost), int(not lost))


def test_the_retry_limit_that_applies_follows_the_rts_threshold() -> None:
    """10.3.4.4: a frame longer than dot11RTSThreshold goes with RTS/CTS and its data frames count against
    dot11LongRetryLimit (4); one not longer than it, without, against dot11ShortRetryLimit (7).  Every Ack lost."""
    phy = Phy.preset("b", rts_threshold=500)
    long_ = strike(phy, ["ack"] * 10).stations["A"].stats    # A's frame: 1000 bytes, an MPDU of 1036 > 500
    assert (long_.rts, long_.attempts, long_.ack_lost, long_.frames) == (4, 4, 4, 1)
    short = strike(Phy.preset("b", rts_threshold=1036), ["ack"] * 10).stations["A"].stats   # 1036: not longer
    assert (short.rts, short.attempts, short.ack_lost, short.frames) == (0, 7, 7, 1)


def test_every_frame_that_leaves_the_queue_is_counted_and_each_rts_drop_too() -> None:
    """B decodes nothing from A: each RTS goes unanswered; after dot11ShortRetryLimit (here 2) RTSs a frame is
    dropped (rts_retry, 10.3.4.4); the counters add up over frames (StationStats)."""
    phy = Phy.preset("b", rts_threshold=0, retry_limit=2)
    m = Medium(phy, Topology.from_graph({"A": ["B"], "B": []}), 10, ScriptedRng())   # type: ignore[arg-type]
    for i in range(3):
        m.send(0, Frame("A", "B", i, 1000))
    per_rts = DIFS + RTS + phy.cts_timeout_ns
    assert run(m) == [(k * 2 * per_rts, "rts_retry", "A", "B") for k in (1, 2, 3)]
    st = m.stations["A"].stats
    assert (st.frames, st.rts, st.rts_failed, st.rts_drops, st.mac_drops, st.attempts) == (3, 6, 6, 3, 0, 6)


def test_the_ack_timeout_of_a_lost_attempt_lasts_sifs_and_the_ack_at_its_rates_response_rate() -> None:
    """A failed exchange keeps the sender as long as a successful one (module docstring: ACKTimeout ~ SIFS +
    ACK), the Ack at the control response rate of the attempt's rate (MCS 0: 6 Mb/s)."""
    m = ErrorsAt(N, full_mesh("A", "B"), 10, ScriptedRng(), lossy={R0})   # type: ignore[arg-type]
    m._controllers[("A", "B")] = Recorder([(R0, 1), (R5, 1)])   # type: ignore[assignment]
    m.send(0, Frame("A", "B", "a", 1000))
    timeout_end = DIFS_G + txtime_ns(R0, 1036) + 10 * US + txtime_ns(ofdm_rate(6), 14)
    assert run(m) == [(timeout_end + DIFS_G + txtime_ns(R5, 1036), "deliver", "A", "B")]


def test_every_hidden_collision_is_counted() -> None:
    """A and C cannot sense each other and both send to B in the same slot, attempt after attempt: each of the
    retry_limit attempts collides, each by a sender the other could not sense (hidden), then mac_retry."""
    phy = Phy.preset("b", retry_limit=3)
    hidden = Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"]})
    m = Medium(phy, hidden, 10, ScriptedRng())   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    m.send(0, Frame("C", "B", "c", 1000))
    assert [o[1:] for o in run(m)] == [("mac_retry", "A", "B"), ("mac_retry", "C", "B")]
    for n in "AC":
        st = m.stations[n].stats
        assert (st.attempts, st.collisions, st.hidden, st.mac_drops) == (3, 3, 3, 1)
