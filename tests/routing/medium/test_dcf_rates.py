"""Per-frame rates and rate control in the DCF medium (issue 24, item 3), in virtual time.

The medium takes each attempt's airtime from routing.medium.rates at the rate its link's controller
(routing.medium.rate_control.minstrel: FixedRate or Minstrel) gives for that attempt; these tests check it against the
arithmetic of routing.medium.rates, drive Minstrel over a per-rate loss injected through
``Medium.frame_error``, and check that the default (airtime simple, rate_control fixed) is today's
medium byte for byte.
"""
from __future__ import annotations

import random
from collections import Counter
from typing import Any
import pytest
from experiments.medium_spec import build_medium
from experiments.schema import ExperimentError, load_experiment
from routing.medium.dcf import Delivered, Dropped, Frame, Medium, Topology
from routing.medium.phy import MediumError, Phy
from routing.medium.rate_control.minstrel import FixedRate, Minstrel
from routing.medium.rates import (MAC_OVERHEAD_BYTES, TIMINGS, Rate, access_ns, control_response_rate, dsss_rate,
                                  ht20_rate, ofdm_rate, rate_set, txtime_ns)


MS = 1_000_000


PACKET = 1500


LINK = Topology.from_graph({"A": ["B"], "B": ["A"]})


ERP_BASIC = (ofdm_rate(6), ofdm_rate(12), ofdm_rate(24))


TOP = {"b": dsss_rate(11), "g": ofdm_rate(54), "a": ofdm_rate(54, erp=False), "n": ht20_rate(7),
       "n-sgi": ht20_rate(7, short_gi=True)}


BASIC = {"b": (dsss_rate(1), dsss_rate(2)), "g": ERP_BASIC, "a": tuple(ofdm_rate(m, erp=False) for m in (6, 12, 24)),
         "n": ERP_BASIC, "n-sgi": ERP_BASIC}


TIMING = {"b": TIMINGS["b"], "g": TIMINGS["g"], "a": TIMINGS["a"], "n": TIMINGS["n"], "n-sgi": TIMINGS["n"]}


FLOWS = [{"sender": "A", "receiver": "D", "segments": 10}]


def saturate(m: Medium, until_ns: int | None = None, frames: int | None = None, src: str = "A", dst: str = "B",
             backlog: int = 10) -> list[Delivered | Dropped]:
    """A sender that always has ``backlog`` frames of PACKET bytes queued: a new one for each that leaves.
    Runs until ``frames`` have left or the medium's clock passes ``until_ns``."""
    for i in range(backlog):
        m.send(0, Frame(src, dst, i, PACKET))
    out: list[Delivered | Dropped] = []
    n = backlog
    while (t := m.next_timer()) is not None and (until_ns is None or t <= until_ns):
        for o in m.advance(t):
            out.append(o)
            m.send(t, Frame(src, dst, n, PACKET))
            n += 1
        if frames is not None and len(out) >= frames:
            break
    return out


class InjectedLoss(Medium):
    """Reception by range plus a synthetic per-rate frame error (the hook SINR reception fills):
    ``loss(now_ns, rate) -> probability``."""

    def __init__(self, *a: Any, loss: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.loss = loss
        self.now = 0

    def advance(self, now: int) -> list:
        self.now = now
        return super().advance(now)

    def frame_error(self, src: str, dst: str, rate: Rate | None, psdu_bytes: int) -> float:
        return self.loss(self.now, rate)


def medium(standard: str, rate_control: str = "fixed", seed: int = 1, loss: Any = None, **phy: Any) -> Medium:
    p = Phy.preset(standard, airtime="txtime", **phy)
    if loss is None:
        return Medium(p, LINK, 50, random.Random(seed), rate_control=rate_control, seed=seed)
    return InjectedLoss(p, LINK, 50, random.Random(seed), rate_control=rate_control, seed=seed, loss=loss)


# ---- airtime at each standard's top rate --------------------------------------------------------------

@pytest.mark.parametrize("standard", ["b", "g", "a", "n", "n-sgi"])
def test_a_single_link_at_the_top_rate_runs_at_the_standards_airtime(standard: str) -> None:
    """Every delivery of a saturated link, to the ns, from routing.medium.rates' durations and the backoff draws
    (DIFS, backoff, data at the top rate, SIFS, Ack at the control response rate); frames/s within 1 %
    of 1 / rates.access_ns (the mean backoff: the 4000 draws' mean is within 0.2 % of it)."""
    top, basic, timing = TOP[standard], BASIC[standard], TIMING[standard]
    m = medium(standard, seed=5)
    assert m.phy.rate == top and m.phy.basic_rates == basic
    n = 4000
    out = saturate(m, frames=n, backlog=50)
    assert all(isinstance(o, Delivered) for o in out) and len(out) == n
    data = txtime_ns(top, PACKET + MAC_OVERHEAD_BYTES)
    ack = txtime_ns(control_response_rate(top, basic), 14)
    sifs, slot = timing.sifs_us * 1000, timing.slot_us * 1000
    draws = random.Random(5)   # the medium's generator: one backoff in [0, aCWmin] per frame (no retries)
    t, want = 0, []
    for _ in range(n):
        start = t + timing.difs_ns + draws.randint(0, timing.cw_min) * slot
        want.append(start + data)
        t = start + data + sifs + ack
    assert [o.at_ns for o in out] == want
    fps = n / (out[-1].at_ns + sifs + ack) * 1e9
    expected = 1e9 / access_ns(top, PACKET + MAC_OVERHEAD_BYTES, timing, basic)
    assert fps == pytest.approx(expected, rel=0.01)
    st = m.stations["A"].stats
    assert st.rate_attempts == {top.name: n} and st.airtime_ns == n * (data + sifs + ack)


def test_the_durations_of_an_exchange_follow_the_rate() -> None:
    """NAV (Duration fields) and EIFS from the same calls as the airtime: rates.txtime_ns at the frame's rate,
    its control response rate for RTS, CTS and Ack, the lowest basic rate for EIFS's AckTxTime."""
    phy = Phy.preset("n", airtime="txtime", rts_threshold=0)
    for mcs in range(8):
        r = ht20_rate(mcs)
        data, ctl = txtime_ns(r, PACKET + 36), control_response_rate(r, ERP_BASIC)
        ack, cts = txtime_ns(ctl, 14), txtime_ns(ctl, 14)
        assert phy.data_ns(PACKET, r) == data
        assert phy.ack_ns(r) == ack
        assert phy.rts_duration_ns(PACKET, r) == 3 * 10_000 + cts + data + ack
        assert phy.cts_duration_ns(PACKET, r) == 2 * 10_000 + data + ack
        assert phy.data_duration_ns(True, r) == 10_000 + ack
        assert phy.rts_exchange_ns(r) == txtime_ns(ctl, 20) + 10_000 + cts
    assert phy.response_rate(ht20_rate(0)) == ofdm_rate(6) and phy.response_rate(ht20_rate(7)) == ofdm_rate(24)
    assert phy.eifs_ns == 10_000 + txtime_ns(ofdm_rate(6), 14) + 28_000 == 88_000
    assert Phy.preset("b", airtime="txtime").eifs_ns == 10_000 + 304_000 + 50_000   # Ack at 1 Mb/s: 192 + 112 us


def test_group_addressed_frames_go_at_the_lowest_basic_rate() -> None:
    m = medium("n", rate_control="minstrel")
    m.send(0, Frame("A", "B", "probe", 100, acked=False))
    while (t := m.next_timer()) is not None:
        m.advance(t)
    assert m.stations["A"].stats.rate_attempts == {"erp-6": 1}
    assert m.stations["A"].stats.airtime_ns == txtime_ns(ofdm_rate(6), 136)


# ---- Minstrel on the medium ---------------------------------------------------------------------------

@pytest.mark.parametrize("standard", ["g", "n", "n-sgi"])
def test_with_reception_by_range_minstrel_climbs_to_the_top_rate(standard: str) -> None:
    """Reception by range loses no frame at any rate, so the fastest rate is best: Minstrel settles on it
    (the right answer for the range model, not a sign that rates matter)."""
    m = medium(standard, rate_control="minstrel")
    saturate(m, until_ns=1000 * MS)
    ctl = m.controller("A", "B")
    assert isinstance(ctl, Minstrel)
    top = max(rate_set(standard), key=lambda r: r.bps)
    assert ctl.best_rate() == top
    counts = m.stations["A"].stats.rate_attempts
    assert counts[top.name] > 0.85 * sum(counts.values()), counts


def synthetic_loss(rate: Rate) -> float:
    """Per-MCS frame error of a link in the grey zone: clean up to MCS 3, then worse and worse."""
    return {4: 0.05, 5: 0.35, 6: 0.6, 7: 0.9}.get(rate.mcs, 0.0)  # type: ignore[arg-type]


def delivered_per_s(out: list[Delivered | Dropped], t0_ns: int, t1_ns: int) -> float:
    return sum(isinstance(o, Delivered) and t0_ns <= o.at_ns < t1_ns for o in out) / ((t1_ns - t0_ns) / 1e9)


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_minstrel_settles_on_the_rate_a_fixed_rate_sweep_finds_best(seed: int) -> None:
    """A per-MCS loss injected through Medium.frame_error: the fixed-rate sweep's best MCS (most frames
    delivered per second over 2 s) is the rate Minstrel sends most of its frames at after its first 200 ms
    (at least half of them), and its goodput comes within 20 % of that best fixed rate's.  Measured over
    seeds 1-10: 60-89 % of the attempts at the best MCS (MCS 4), the rest mostly at its neighbour MCS 5,
    whose EWMA success sometimes ties MCS 4's capped 90 % (minstrel_ht_get_tp_avg), and at sampled rates;
    goodput 84-94 % of the best fixed rate's.  So the rate it holds at any one moment may be the
    neighbour (seed 4 ends on MCS 5): the test checks where it spends its frames."""
    end = 2000 * MS
    sweep = {}
    for mcs in range(8):
        out = saturate(medium("n", seed=seed, loss=lambda now, r: synthetic_loss(r), mcs=mcs), until_ns=end)
        sweep[mcs] = delivered_per_s(out, 0, end)
    best = max(sweep, key=sweep.get)   # type: ignore[arg-type]
    assert sweep[best] > 1.05 * max(v for k, v in sweep.items() if k != best), sweep   # a clear optimum
    m = medium("n", rate_control="minstrel", seed=seed, loss=lambda now, r: synthetic_loss(r))
    out = saturate(m, until_ns=200 * MS)
    before = Counter(m.stations["A"].stats.rate_attempts)
    out += saturate(m, until_ns=end, backlog=0)
    after = Counter(m.stations["A"].stats.rate_attempts) - before
    top, n = after.most_common(1)[0]
    assert top == ht20_rate(best).name and n > 0.5 * sum(after.values()), (after, sweep)
    assert delivered_per_s(out, 200 * MS, end) > 0.8 * sweep[best], (delivered_per_s(out, 200 * MS, end), sweep)


def sinr_link(distance_m: float, **medium_: Any) -> dict[str, Any]:
    """One link A-B ``distance_m`` apart under reception sinr's defaults (40 mW, exponent 3, noise -94 dBm)."""
    return load_experiment({"topology": {"chain": ["A", "B"]}, "flows": [{"sender": "A", "receiver": "B", "segments": 10}],
                            "medium": dict(model="dcf", reception="sinr", standard="n",
                                           positions={"A": [0, 0], "B": [distance_m, 0]}, **medium_)},
                           "m.yaml").variants[0].config


@pytest.mark.parametrize("distance_m,best_mcs", [(40, 5), (60, 4), (75, 3)])
def test_under_sinr_minstrel_settles_on_the_rate_a_fixed_rate_sweep_finds_best(distance_m: float,
                                                                             best_mcs: int) -> None:
    """Reception by signal: each frame judged at its own rate's mode (routing.medium.phy.error_mode), so the
    faster MCSs fail first as the link gets longer.  The fixed-rate sweep's best MCS (frames per second
    over 1 s) is where Minstrel sends most of its frames after 200 ms, with 90 % of its goodput or more
    (measured: 92-94 %)."""
    end = 1000 * MS
    sweep = {}
    for mcs in range(8):
        sweep[mcs] = delivered_per_s(saturate(build_medium(sinr_link(distance_m, mcs=mcs), 1), until_ns=end), 0, end)
    best = max(sweep, key=sweep.get)   # type: ignore[arg-type]
    assert best == best_mcs and sweep[7] < 0.5 * sweep[best], sweep   # the grey zone: the top rate is not best
    m = build_medium(sinr_link(distance_m, rate_control="minstrel"), 1)
    out = saturate(m, until_ns=200 * MS)
    before = Counter(m.stations["A"].stats.rate_attempts)
    out += saturate(m, until_ns=end, backlog=0)
    after = Counter(m.stations["A"].stats.rate_attempts) - before
    top, n = after.most_common(1)[0]
    assert top == ht20_rate(best).name and n > 0.75 * sum(after.values()), (after, sweep)
    assert delivered_per_s(out, 200 * MS, end) > 0.9 * sweep[best], (delivered_per_s(out, 200 * MS, end), sweep)


def test_the_retry_chain_falls_back_and_the_per_rate_counts_show_it() -> None:
    """After 1 s on a clean link Minstrel sends at MCS 7 with MCS 6 next in its chain.  When MCS 7 starts
    losing every frame, each frame whose chain starts at MCS 7 spends that stage's tries there and is
    delivered at the next stage's rate: the Acks counted per rate move to the fallback."""
    switch = 1000 * MS
    m = medium("n", rate_control="minstrel", seed=3, loss=lambda now, r: 1.0 if now >= switch and r.mcs == 7 else 0.0)
    saturate(m, until_ns=switch - 1)
    ctl = m.controller("A", "B")
    assert ctl.best_rate() == ht20_rate(7)   # type: ignore[attr-defined]
    acks_before = dict(m.stations["A"].stats.rate_acks)
    out = saturate(m, until_ns=switch + 100 * MS, backlog=0)
    later = [o for o in out if o.at_ns >= switch]
    fell_back = [o.frame for o in later if isinstance(o, Delivered) and o.frame.chain[0][0] == ht20_rate(7)]
    assert len(fell_back) > 10
    for f in fell_back:
        first_tries = f.chain[0][1]
        assert (f.data_attempts, f.rate) == (first_tries + 1, f.chain[1][0]), (f.chain, f.data_attempts, f.rate)
    acks = Counter(m.stations["A"].stats.rate_acks) - Counter(acks_before)
    attempts = m.stations["A"].stats.rate_attempts
    assert "ht-mcs7" not in acks and sum(acks.values()) >= len(fell_back)
    assert attempts["ht-mcs7"] >= len(fell_back) * 2 and m.stations["A"].stats.errors >= len(fell_back) * 2


def test_the_chain_is_cut_at_the_retry_limit_that_applies() -> None:
    """Without RTS/CTS the tries of a chain add up to at most dot11ShortRetryLimit, with it to at most
    dot11LongRetryLimit; a frame is dropped (mac_retry) when its chain is spent, even below the limit."""
    for rts, limit in ((None, 3), (0, 2)):
        m = medium("n", rate_control="minstrel", seed=2, retry_limit=3, long_retry_limit=2, rts_threshold=rts,
                   loss=lambda now, r: 1.0)
        out = saturate(m, frames=30)
        assert all(isinstance(o, Dropped) and o.reason == "mac_retry" for o in out)
        assert all(sum(t for _, t in o.frame.chain) <= limit and o.frame.data_attempts == limit for o in out)
    # a chain shorter than the retry limit (before statistics Minstrel's four stages of 2 tries at the
    # lowest rate, and maybe a sample try before them: 8 or 9 < 20)
    m = medium("n", rate_control="minstrel", seed=2, retry_limit=20, loss=lambda now, r: 1.0)
    out = saturate(m, frames=5)
    assert all(isinstance(o, Dropped) and o.reason == "mac_retry" for o in out)
    assert all(o.frame.data_attempts == sum(t for _, t in o.frame.chain) in (8, 9) for o in out)
    fixed = medium("n", loss=lambda now, r: 1.0, retry_limit=5)
    out = saturate(fixed, frames=5)
    assert [o.frame.chain for o in out] == [[(ht20_rate(7), 5)]] * 5
    assert isinstance(fixed.controller("A", "B"), FixedRate)
    assert fixed.stations["A"].stats.rate_attempts == {"ht-mcs7": 25} and fixed.stations["A"].stats.mac_drops == 5


def test_rate_control_is_deterministic_by_seed_and_seeded_per_link() -> None:
    def trace(seed: int) -> tuple[list[tuple[int, str]], dict[str, int]]:
        m = medium("n", rate_control="minstrel", seed=seed, loss=lambda now, r: synthetic_loss(r))
        out = saturate(m, until_ns=300 * MS)
        return [(o.at_ns, o.frame.rate.name) for o in out], m.stations["A"].stats.rate_attempts
    assert trace(4) == trace(4)
    assert trace(4) != trace(5)
    m = medium("n", rate_control="minstrel", seed=4)
    ab, ba = m.controller("A", "B"), m.controller("B", "A")
    assert ab is m.controller("A", "B") and ab._sample_table != ba._sample_table   # type: ignore[attr-defined]


# ---- the YAML settings and the backends ---------------------------------------------------------------

def errors(medium_: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ExperimentError) as e:
        load_experiment({"medium": dict(medium_, model="dcf"), "flows": FLOWS}, "m.yaml")
    return {err.path: err.message for err in e.value.errors}


def config(medium_: dict[str, Any]) -> dict[str, Any]:
    return load_experiment({"medium": dict(medium_, model="dcf"), "flows": FLOWS}, "m.yaml").variants[0].config


def test_the_rate_settings_are_checked_and_named() -> None:
    assert "expected one of fixed, minstrel" in errors({"rate_control": "arf"})["medium.rate_control"]
    assert "b and g model only" in errors({"standard": "n", "airtime": "simple"})["medium.airtime"]
    assert "airtime txtime" in errors({"rate_control": "minstrel", "airtime": "simple"})["medium.airtime"]
    assert "names its rate by mcs" in errors({"standard": "n", "rate_mbps": 65})["medium.rate_mbps"]
    assert "only with standard n" in errors({"standard": "g", "airtime": "txtime", "mcs": 3})["medium.mcs"]
    assert "expected one of 6, 9" in errors({"standard": "g", "airtime": "txtime", "rate_mbps": 50})["medium.rate_mbps"]
    assert "expected a value <= 7" in errors({"standard": "n", "mcs": 8})["medium.mcs"]
    assert "rate_control minstrel" in errors({"standard": "n", "rate_control": "minstrel", "mcs": 7})["medium.mcs"]
    assert "mandatory rate" in errors({"standard": "n", "basic_rate_mbps": 18})["medium.basic_rate_mbps"]
    assert "leave preamble_us out" in errors({"standard": "a", "preamble_us": 16})["medium.preamble_us"]
    assert "medium.model is 'none'" in str(pytest.raises(ExperimentError, load_experiment,
                                                         {"medium": {"rate_control": "minstrel"}, "flows": FLOWS},
                                                         "m.yaml").value)


def test_the_settings_reach_the_medium_every_backend_builds() -> None:
    m = build_medium(config({"standard": "n", "rate_control": "minstrel"}), 7)
    assert (m.phy.airtime, m.rate_control, m.seed, m.phy.rates) == ("txtime", "minstrel", 7, rate_set("n"))
    m = build_medium(config({"standard": "n-sgi", "mcs": 5}), 1)
    assert (m.phy.airtime, m.rate_control, m.phy.rate) == ("txtime", "fixed", ht20_rate(5, short_gi=True))
    m = build_medium(config({"standard": "g", "airtime": "txtime", "rate_mbps": 36}), 1)
    assert m.phy.rate == ofdm_rate(36) and m.phy.basic_rates == ERP_BASIC
    m = build_medium(config({"standard": "g", "rate_control": "minstrel"}), 1)
    assert m.phy.airtime == "txtime"
    for std in ("b", "g"):   # today's medium: the simple airtime, no controller
        m = build_medium(config({"standard": std}), 1)
        assert (m.phy.airtime, m.phy.rate, m.rate_control) == ("simple", None, "fixed")
    with pytest.raises(MediumError, match="airtime txtime"):
        Medium(Phy.preset("g"), LINK, 5, random.Random(1), rate_control="minstrel")
