"""The DCF medium core (routing.medium.dcf) in virtual time: exact times, no clock, no sockets."""
from __future__ import annotations

from tests import ROOT
import random
from routing.medium.dcf import (Delivered, Dropped, Frame, Medium, Topology, RangeCapture, _Tx, chain_rate,
                                chain_stages)
from routing.medium.phy import MAC_OVERHEAD_BYTES, Phy, MediumError
from experiments.schema import load_experiment, ExperimentError, load_file
import pytest
from tests.cores import ACK_NS, DATA_1000, DIFS, SLOT, ScriptedRng, run_medium, B, full_mesh
import math
from typing import Any
from experiments.medium_spec import build_medium, signals
import zlib
from routing.medium.error_model import MODES
from routing.medium.rate_control.minstrel import FixedRate, Minstrel
from routing.medium.rates import Timing, ht20_rate, ofdm_rate, txtime_ns


def test_retry_limit_drops_with_its_own_reason_after_doubling_windows() -> None:
    # B cannot decode A: no ACK ever comes back; every backoff draw is 0 slots
    rng = ScriptedRng()
    m = Medium(B, Topology.from_graph({"A": ["B"], "B": []}), 10, rng)  # type: ignore[arg-type]
    assert m.send(0, Frame("A", "B", "pkt", 1000)) == []
    out = run_medium(m)
    per_attempt = DIFS + B.exchange_ns(1000)   # DIFS, data, then the ACK timeout (SIFS + ACK)
    assert out == [(7 * per_attempt, "mac_retry", "A", "B")]
    assert rng.windows == [31, 63, 127, 255, 511, 1023, 1023]
    st = m.stations["A"].stats
    assert (st.attempts, st.retries, st.mac_drops, st.collisions) == (7, 6, 1, 7)
    assert m.stations["A"].cw == 31   # back to aCWmin after the drop


def test_deferral_and_frozen_countdown() -> None:
    # A, B, C hear each other.  B draws 5 slots, C 2: C goes first at DIFS + 2 slots; B froze after
    # 2 slots and counts its 3 remaining slots after C's exchange and a new DIFS.
    rng = ScriptedRng(5, 2)
    m = Medium(B, full_mesh("A", "B", "C"), 10, rng)  # type: ignore[arg-type]
    m.send(0, Frame("B", "A", "b", 1000))
    m.send(0, Frame("C", "A", "c", 1000))
    out = run_medium(m)
    c_start = DIFS + 2 * SLOT
    c_end = c_start + B.exchange_ns(1000)
    b_start = c_end + DIFS + 3 * SLOT
    assert out == [(c_start + DATA_1000, "deliver", "C", "A"), (b_start + DATA_1000, "deliver", "B", "A")]
    assert m.stations["B"].stats.collisions == 0


def test_frame_arriving_while_busy_waits_for_the_exchange_then_difs() -> None:
    rng = ScriptedRng(0, 4)
    m = Medium(B, full_mesh("A", "B", "C"), 10, rng)  # type: ignore[arg-type]
    m.send(0, Frame("A", "C", "a", 1000))
    assert run_medium(m, until=100_000) == []
    m.send(100_000, Frame("B", "C", "b", 1000))   # A is on the air: B senses busy
    out = run_medium(m)
    a_end = DIFS + B.exchange_ns(1000)
    assert out == [(DIFS + DATA_1000, "deliver", "A", "C"), (a_end + DIFS + 4 * SLOT + DATA_1000, "deliver", "B", "C")]


def test_same_slot_collision_of_senders_that_hear_each_other() -> None:
    rng = ScriptedRng(0, 0, 1, 3)   # both draw 0 slots: both transmit at DIFS; then 1 and 3 slots (cw 63)
    m = Medium(B, full_mesh("A", "B", "C"), 10, rng)  # type: ignore[arg-type]
    m.send(0, Frame("A", "C", "a", 1000))
    m.send(0, Frame("B", "C", "b", 1000))
    out = run_medium(m)
    retry = DIFS + B.exchange_ns(1000) + DIFS
    assert out == [(retry + SLOT + DATA_1000, "deliver", "A", "C"),
                   (retry + SLOT + B.exchange_ns(1000) + DIFS + 2 * SLOT + DATA_1000, "deliver", "B", "C")]
    for n in "AB":
        st = m.stations[n].stats
        assert (st.collisions, st.hidden) == (1, 0)
    assert rng.windows == [31, 31, 63, 63]


def test_hidden_terminal_corrupts_the_overlapped_reception() -> None:
    # A - B - C: A and C cannot sense each other; both send to B.  C starts while A's frame is in the air.
    topo = Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"]})
    rng = ScriptedRng(0, 0)
    m = Medium(B, topo, 10, rng)  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    assert run_medium(m, until=500_000) == []
    m.send(500_000, Frame("C", "B", "c", 1000))   # C senses nothing: counts from now, 0 slots
    run_medium(m, until=DIFS + DATA_1000)
    a, c = m.stations["A"].stats, m.stations["C"].stats
    assert (a.collisions, a.hidden) == (1, 1)
    assert a.attempts == 1 and c.attempts == 1


def test_interface_queue_is_drop_tail() -> None:
    m = Medium(B, full_mesh("A", "B"), 2, ScriptedRng())  # type: ignore[arg-type]
    f1, f2, f3 = (Frame("A", "B", i, 100) for i in range(3))
    assert m.send(0, f1) == [] and m.send(0, f2) == []
    drop = m.send(0, f3)
    assert len(drop) == 1 and isinstance(drop[0], Dropped) and drop[0].reason == "queue" and drop[0].frame is f3
    assert [o[1] for o in run_medium(m)] == ["deliver", "deliver"]
    assert m.stations["A"].stats.queue_drops == 1


def test_group_addressed_frames_are_sent_once_without_ack() -> None:
    m = Medium(B, Topology.from_graph({"A": ["B"], "B": []}), 10, ScriptedRng())  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "probe", 100, acked=False))
    assert run_medium(m) == []   # lost (B cannot decode A), not retried, not a mac_retry drop
    st = m.stations["A"].stats
    assert (st.attempts, st.mac_drops, st.frames) == (1, 0, 1)


def test_positions_give_the_two_ranges() -> None:
    topo = Topology.from_positions({n: (200.0 * i, 0.0) for i, n in enumerate("ABCD")}, 250, 550)
    assert topo.hears["B"] == {"A", "C"}
    assert topo.senses["A"] == {"B", "C"}
    assert topo.senses["B"] == {"A", "C", "D"}


def _saturated_loss(topo: Topology, senders: list[str], dst: str, seed: int = 3, frames: int = 400) -> float:
    """Share of the attempts of ``senders`` that collided, each keeping its queue full."""
    m = Medium(B, topo, 1000, random.Random(seed))
    for s in senders:
        for i in range(frames):
            m.send(0, Frame(s, dst, i, 1000))
    run_medium(m)
    att = sum(m.stations[s].stats.attempts for s in senders)
    return sum(m.stations[s].stats.collisions for s in senders) / att


def test_hidden_senders_lose_far_more_than_senders_that_hear_each_other() -> None:
    hidden = _saturated_loss(Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"]}), ["A", "C"], "B")
    exposed = _saturated_loss(full_mesh("A", "B", "C"), ["A", "C"], "B")
    # measured (seed 3, 400 frames each): hidden 0.33, exposed 0.054 (docs/MEDIUM.md)
    assert exposed < 0.1
    assert hidden > 5 * exposed


def test_interference_reaches_as_far_as_carrier_sense_not_only_decoding() -> None:
    # B decodes only A but senses (and is interfered by) C; A cannot sense C; C sends to D meanwhile.
    topo = Topology.from_graph({"A": ["B"], "B": ["A"], "C": ["D"], "D": ["C"]}, senses={"B": ["C"], "C": ["B"]})
    m = Medium(B, topo, 10, ScriptedRng(0, 0))  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    run_medium(m, until=500_000)
    m.send(500_000, Frame("C", "D", "c", 1000))
    run_medium(m, until=DIFS + DATA_1000)
    a, c = m.stations["A"].stats, m.stations["C"].stats
    assert (a.collisions, a.hidden) == (1, 1)
    assert c.attempts == 1


def test_saturated_chain_throughput_falls_with_hops_as_li_et_al() -> None:
    """Li et al. (MobiCom 2001): about B, B/2, B/3 for 1-3 hops, at most about B/4 beyond
    (200 m spacing, 250 m range, 550 m carrier sense).  Within 10 % of B/h for h <= 3."""
    from bench.medium_validate import saturated_chain
    b = saturated_chain(1, seconds=2.0)["mbps"]
    ratios = {h: saturated_chain(h, seconds=2.0)["mbps"] / b for h in (2, 3, 4, 6)}
    assert 0.9 / 2 <= ratios[2] <= 1.1 / 2
    assert 0.9 / 3 <= ratios[3] <= 1.1 / 3
    assert ratios[4] <= 1.1 / 4
    assert ratios[6] <= 1.1 / 4
    assert ratios[2] > ratios[3] > ratios[4] > ratios[6]


def test_carrier_sense_follows_who_senses_whom_in_an_asymmetric_graph() -> None:
    # A senses C, C does not sense A: C's frame makes A defer; A's frame does not make C defer.
    topo = Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"]}, senses={"A": ["C"]})
    m = Medium(B, topo, 10, ScriptedRng(0, 3))  # type: ignore[arg-type]
    m.send(0, Frame("C", "B", "c", 1000))          # C: 0 slots, on the air at DIFS
    m.send(DIFS + 1, Frame("A", "B", "a", 1000))   # A: 3 slots, but C is on the air: A waits
    out = run_medium(m)
    c_end = DIFS + B.exchange_ns(1000)
    assert out == [(DIFS + DATA_1000, "deliver", "C", "B"), (c_end + DIFS + 3 * SLOT + DATA_1000, "deliver", "A", "B")]


def test_half_duplex_a_station_that_transmits_does_not_decode_a_frame_for_it() -> None:
    # Module docstring, reception: a frame is lost at its receiver when "the receiver itself transmits
    # (half duplex)".  A, B, C hear each other; A sends to B while B sends to C, both in slot 0: nobody
    # but B itself radiates near B, so only the half-duplex rule loses A's frame there.  (B's frame is
    # lost at C, where A interferes.)  Retries: A 1 slot, B 3 slots (cw 63).
    rng = ScriptedRng(0, 0, 1, 3)
    m = Medium(B, full_mesh("A", "B", "C"), 10, rng)  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    m.send(0, Frame("B", "C", "b", 1000))
    assert run_medium(m, until=DIFS + DATA_1000) == []   # B was on the air for the whole of A's frame
    out = run_medium(m)
    retry = DIFS + B.exchange_ns(1000) + DIFS
    assert out == [(retry + SLOT + DATA_1000, "deliver", "A", "B"),
                   (retry + SLOT + B.exchange_ns(1000) + DIFS + 2 * SLOT + DATA_1000, "deliver", "B", "C")]
    a = m.stations["A"].stats
    assert (a.attempts, a.collisions, a.hidden, a.ack_lost) == (2, 1, 0, 0)


# E - D - A - B, each hears only its neighbours: A and D sense each other, B does not sense D, E does
# not sense A.  A sends 100 bytes to B while D sends 1500 bytes to E in the same slot: A's frame
# reaches B intact, but B's ACK comes back while D is still on the air next to A and is lost there.
CHAIN_EDAB = Topology.from_graph({"E": ["D"], "D": ["E", "A"], "A": ["D", "B"], "B": ["A"]})


DATA_100 = 192_000 + 98_910            # preamble + (100 + 36) * 8 / 11 Mb/s


DATA_1500 = 192_000 + 1_117_091        # preamble + (1500 + 36) * 8 / 11 Mb/s


def test_duplicate_detection_a_frame_whose_ack_was_lost_is_delivered_once() -> None:
    # IEEE 802.11-2020 10.3.2.14 (module docstring: "a frame delivered once is not delivered again when
    # only its ACK was lost"): A never got the ACK, so it sends the frame again; B must not deliver it twice.
    assert (B.data_ns(100), B.data_ns(1500)) == (DATA_100, DATA_1500)
    assert DATA_100 + B.sifs_ns + ACK_NS < DATA_1500   # the ACK ends inside D's frame
    rng = ScriptedRng()   # every draw 0 slots
    m = Medium(B, CHAIN_EDAB, 10, rng)  # type: ignore[arg-type]
    a_frame = Frame("A", "B", "a", 100)
    m.send(0, a_frame)
    m.send(0, Frame("D", "E", "d", 1500))
    # A's retry: after D's exchange (A defers to it) and a DIFS, 0 slots; its ACK then comes back
    retry = DIFS + B.exchange_ns(1500) + DIFS
    out = run_medium(m, until=retry + B.exchange_ns(100) - 1)
    assert out == [(DIFS + DATA_100, "deliver", "A", "B"), (DIFS + DATA_1500, "deliver", "D", "E")]
    assert (a_frame.attempts, m.queued("A")) == (2, 1)   # the retry is on the air, its ACK not yet back
    assert run_medium(m, until=retry + B.exchange_ns(100)) == []   # the retry reached B: not delivered again
    assert m.queued("A") == 0 and m.next_timer() is None     # and its ACK came back
    a = m.stations["A"].stats
    assert (a.attempts, a.retries, a.collisions, a.ack_lost, a.mac_drops, a.frames) == (2, 1, 0, 1, 0, 1)


def test_a_frame_delivered_whose_acks_are_all_lost_is_not_a_mac_retry_drop() -> None:
    # CHAIN_EDAB with seven frames queued at D: every round A and D pick the same slot (all draws 0),
    # so each of B's seven ACKs is lost at A under D's frame.  A gives up after retry_limit attempts
    # (10.3.4.4), but B had the frame from the first attempt and delivered it once (10.3.2.14):
    # Medium._done reports no ``mac_retry`` drop for it ("only its ACKs were lost: the receiver has it").
    assert B.retry_limit == 7
    m = Medium(B, CHAIN_EDAB, 10, ScriptedRng())  # type: ignore[arg-type]
    a_frame = Frame("A", "B", "a", 100)
    m.send(0, a_frame)
    for i in range(7):
        m.send(0, Frame("D", "E", i, 1500))
    rounds = [DIFS + k * (B.exchange_ns(1500) + DIFS) for k in range(7)]   # A and D start together
    give_up = rounds[-1] + B.exchange_ns(100)   # the end of B's 7th ACK, lost at A
    out = run_medium(m, until=give_up - 1)
    assert out == [(DIFS + DATA_100, "deliver", "A", "B")] + [(s + DATA_1500, "deliver", "D", "E") for s in rounds[:-1]]
    assert (a_frame.attempts, m.queued("A")) == (7, 1)
    assert run_medium(m, until=give_up) == []                  # A gives up here: no drop reported
    assert m.queued("A") == 0
    a = m.stations["A"].stats
    assert (a.attempts, a.retries, a.collisions, a.ack_lost, a.mac_drops, a.frames) == (7, 6, 0, 7, 0, 1)
    assert m.stations["A"].cw == B.cw_min
    assert run_medium(m) == [(rounds[-1] + DATA_1500, "deliver", "D", "E")]


# ====================================================================================================
# The interface queue as deep as a Pi's (issue 24, item 7): ``medium.queue_packets: 1000`` (Linux's
# txqueuelen default) is accepted, and where the 50-packet queue drops a burst, the deep one holds it and
# turns the drops into delay: the last frame waits for every frame before it (virtual time, the medium core).


PI_TXQUEUELEN = 1000


def test_the_schema_accepts_a_pis_queue() -> None:
    doc = {"medium": {"model": "dcf", "standard": "n", "rate_control": "minstrel", "queue_packets": PI_TXQUEUELEN},
           "flows": [{"segments": 10}]}
    assert load_experiment(doc, "q.yaml").variants[0].config["medium"]["queue_packets"] == PI_TXQUEUELEN


def _burst(queue_packets: int, n: int = 1000) -> tuple[int, int, list[int]]:
    """``n`` frames of 1,500 bytes handed to A's queue at once (a TCP window, a burst from above): (queue drops,
    delivered, each delivered frame's delay in ns)."""
    phy = Phy.preset("g")
    medium = Medium(phy, Topology.from_graph({"A": ["B"], "B": ["A"]}), queue_packets, random.Random(1))
    outs = []
    for i in range(n):
        outs += medium.send(0, Frame("A", "B", i, 1500))
    while (t := medium.next_timer()) is not None:
        outs += medium.advance(t)
    drops = sum(isinstance(o, Dropped) and o.reason == "queue" for o in outs)
    delays = [o.at_ns for o in outs if isinstance(o, Delivered)]
    return drops, len(delays), delays


def test_a_deep_queue_turns_drops_into_delay() -> None:
    drops, delivered, delays = _burst(50)
    assert drops == 950 and delivered == 50
    deep_drops, deep_delivered, deep_delays = _burst(PI_TXQUEUELEN)
    assert deep_drops == 0 and deep_delivered == 1000
    per_frame = Phy.preset("g").exchange_ns(1500)   # data + SIFS + ACK, plus DIFS and backoff between
    # the last frame waits for the 999 before it: about 1000 exchanges (backoff: 7.5 slots of 9 us on average)
    assert 1000 * per_frame < max(deep_delays) < 1000 * (per_frame + Phy.preset("g").difs_ns + 16 * 9000)
    assert max(deep_delays) > 15 * max(delays)


# ====================================================================================================
# RTS/CTS, NAV and EIFS in the DCF core (routing.medium.dcf; issue 24, item 1), in virtual time, every time
# worked out from IEEE Std 802.11-2016: RTS 20 and CTS 14 octets at the basic rate (9.3.1.2, 9.3.1.3), their
# Duration fields (9.2.5.2) setting the NAV of the stations that decode them (10.3.2.4), CTSTimeout
# (10.3.2.7), dot11ShortRetryLimit for RTSs (10.3.4.4) and EIFS (10.3.2.3.7).


SIFS = 10_000


RTS = 192_000 + 80_000        # preamble + 20 * 8 / 2 Mb/s


CTS = 192_000 + 56_000        # preamble + 14 * 8 / 2 Mb/s


DATA_40 = 192_000 + 55_273    # preamble + (40 + 36) * 8 / 11 Mb/s, rounded up to the ns


RTS_B = Phy.preset("b", rts_threshold=0)


def test_nav_from_the_rts_and_the_cts_defers_both_sides_until_the_ack_ends() -> None:
    # D decodes A only (it hears the RTS, not the CTS); C decodes B only (hidden from A: the CTS tells it).
    topo = Topology.from_graph({"A": ["B", "D"], "B": ["A", "C"], "C": ["B"], "D": ["A"]})
    m = Medium(Phy.preset("b", rts_threshold=500), topo, 10, ScriptedRng())  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    rts_end = DIFS + RTS
    cts_end = rts_end + SIFS + CTS
    ack_end = cts_end + SIFS + DATA_1000 + SIFS + ACK_NS
    assert run_medium(m, until=rts_end) == []
    assert m.stations["D"].nav_until == rts_end + RTS_B.rts_duration_ns(1000) == ack_end
    assert m.stations["C"].nav_until == 0 and m.stations["B"].nav_until == 0   # B: the RTS is addressed to it
    assert run_medium(m, until=cts_end) == []
    assert m.stations["C"].nav_until == cts_end + RTS_B.cts_duration_ns(1000) == ack_end
    # two small frames (no RTS: 76-byte MPDUs <= 500) queued while the medium is idle to the ear but the NAV runs
    m.send(cts_end + 20_000, Frame("C", "B", "c", 40))
    m.send(cts_end + 20_000, Frame("D", "A", "d", 40))
    out = run_medium(m)
    after = ack_end + DIFS   # the NAV ends with the ACK; DIFS (the ACK was decoded, no EIFS); 0 slots
    assert sorted(out) == [(cts_end + SIFS + DATA_1000, "deliver", "A", "B"),
                           (after + DATA_40, "deliver", "C", "B"), (after + DATA_40, "deliver", "D", "A")]
    a = m.stations["A"].stats
    assert (a.rts, a.rts_failed, a.attempts, a.collisions) == (1, 0, 1, 0)


def test_a_station_whose_nav_is_set_does_not_answer_an_rts() -> None:
    # E's RTS (to F, who cannot decode it) sets C's NAV (C decodes E); C then does not answer D's RTS, which it
    # decodes cleanly, while that NAV runs (10.3.2.7).  Draws: E 0, D 0, then E 10 slots (E's retry after D).
    topo = Topology.from_graph({"E": ["C"], "F": [], "C": ["E", "D"], "D": ["C"]})
    m = Medium(RTS_B, topo, 10, ScriptedRng(0, 0, 10))  # type: ignore[arg-type]
    m.send(0, Frame("E", "F", "e", 1000))
    d_start = DIFS + RTS
    run_medium(m, until=d_start)
    assert m.stations["C"].nav_until == d_start + RTS_B.rts_duration_ns(1000)
    m.send(d_start, Frame("D", "C", "d", 1000))   # D, idle since 0 and sensing nothing of E: at once (0 slots)
    run_medium(m, until=d_start + RTS + RTS_B.cts_timeout_ns)
    d = m.stations["D"].stats
    assert (d.rts, d.rts_failed, d.collisions) == (1, 1, 0)


def test_rts_retry_limit_reached_is_a_drop_of_its_own_reason() -> None:
    # B cannot decode A: no CTS ever; each attempt is DIFS, the RTS and CTSTimeout; 7 RTSs (dot11ShortRetryLimit)
    rng = ScriptedRng()
    m = Medium(RTS_B, Topology.from_graph({"A": ["B"], "B": []}), 10, rng)  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "pkt", 1000))
    out = run_medium(m)
    per_attempt = DIFS + RTS + RTS_B.cts_timeout_ns
    assert out == [(7 * per_attempt, "rts_retry", "A", "B")]
    assert rng.windows == [31, 63, 127, 255, 511, 1023, 1023]   # CW doubles per failed RTS too (10.3.3)
    st = m.stations["A"].stats
    assert (st.rts, st.rts_failed, st.rts_drops, st.mac_drops, st.collisions) == (7, 7, 1, 0, 0)
    m2 = Medium(Phy.preset("b", rts_threshold=0, retry_limit=3), Topology.from_graph({"A": ["B"], "B": []}), 10,
                ScriptedRng())  # type: ignore[arg-type]
    m2.send(0, Frame("A", "B", "pkt", 1000))
    assert run_medium(m2) == [(3 * per_attempt, "rts_retry", "A", "B")]


def strike(phy: Phy, script: list[str]) -> Medium:
    """A sends one 1000-byte frame to B (all backoffs 0).  K, whom A senses but who senses nobody and whom
    nobody decodes, sends a short group-addressed frame the moment each CTS or ACK named in ``script``
    (in turn) goes on the air: that response is garbled at A."""
    topo = Topology.from_graph({"A": ["B"], "B": ["A"], "K": [], "Z": ["K"]}, {"A": ["K"]})
    m = Medium(phy, topo, 10, ScriptedRng())  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    seen: list[object] = []   # the frames already struck (kept alive: an id() would be reused)
    while (t := m.next_timer()) is not None:
        m.advance(t)
        for tx in list(m._air):
            if script and tx.kind == script[0] and not any(tx is x for x in seen):
                seen.append(tx)
                script.pop(0)
                m.send(t, Frame("K", "Z", "k", 40, acked=False))
    return m


def test_data_sent_after_a_cts_is_retried_under_the_long_retry_limit() -> None:
    # every ACK garbled: 4 data frames (dot11LongRetryLimit), not 7 (dot11ShortRetryLimit), then the frame goes
    a = strike(RTS_B, ["ack"] * 10).stations["A"]
    assert (a.stats.rts, a.stats.rts_failed, a.stats.ack_lost, a.stats.frames) == (4, 0, 4, 1)
    assert not a.queue
    a = strike(Phy.preset("b", rts_threshold=0, long_retry_limit=2), ["ack"] * 10).stations["A"]
    assert (a.stats.rts, a.stats.ack_lost) == (2, 2)
    a = strike(Phy.preset("b"), ["ack"] * 10).stations["A"]   # without RTS/CTS: the short limit, 7 attempts
    assert (a.stats.attempts, a.stats.ack_lost) == (7, 7)


def test_a_cts_resets_the_short_retry_count() -> None:
    # 6 CTSs garbled (SRC 6), then a CTS comes through and only the ACK is garbled (SRC back to 0, LRC 1),
    # then 6 more CTSs garbled: still within dot11ShortRetryLimit, so the 14th RTS carries the frame
    m = strike(RTS_B, ["cts"] * 6 + ["ack"] + ["cts"] * 6)
    a = m.stations["A"].stats
    assert (a.rts, a.rts_failed, a.rts_drops, a.ack_lost, a.frames) == (14, 12, 0, 1, 1)
    m = strike(RTS_B, ["cts"] * 7)
    a = m.stations["A"].stats
    assert (a.rts, a.rts_failed, a.rts_drops, a.frames) == (7, 7, 1, 1)


def test_eifs_after_a_frame_that_could_not_be_decoded() -> None:
    # S sends a group-addressed frame (no ACK follows, Duration 0).  X senses S; when X cannot decode S it
    # waits EIFS after the frame (10.3.2.3.7), when it can, DIFS.
    def x_delivery(x_decodes: bool, nav: str) -> int:
        hears = {"S": ["R"], "R": ["S"], "X": ["Y"] + (["S"] if x_decodes else []), "Y": ["X"]}
        topo = Topology.from_graph(hears, {"X": ["S"]})
        m = Medium(Phy.preset("b", nav=nav), topo, 10, ScriptedRng())  # type: ignore[arg-type]
        m.send(0, Frame("S", "R", "s", 1000, acked=False))
        run_medium(m, until=100_000)
        m.send(100_000, Frame("X", "Y", "x", 40))   # S is on the air: X waits
        out = [o for o in run_medium(m) if o[2] == "X"]
        assert len(out) == 1
        return out[0][0]

    s_end = DIFS + DATA_1000
    assert x_delivery(False, "duration") == s_end + RTS_B.eifs_ns + DATA_40
    assert x_delivery(True, "duration") == s_end + DIFS + DATA_40
    assert x_delivery(False, "exchange") == s_end + DIFS + DATA_40   # the default model: no EIFS


def test_eifs_after_a_collision_then_difs_after_a_good_frame() -> None:
    # A and C (hidden from each other) both send to B; W senses all three and decodes them all.  Their frames
    # collide at W too: W waits EIFS.  A frame W decodes afterwards brings DIFS back.
    topo = Topology.from_graph({"A": ["B", "W"], "B": ["A", "C", "W"], "C": ["B", "W"], "W": ["A", "B", "C", "V"],
                                "V": ["W"]})
    m = Medium(Phy.preset("b", nav="duration"), topo, 10, ScriptedRng())  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 40, acked=False))
    m.send(0, Frame("C", "B", "c", 40, acked=False))
    run_medium(m, until=DIFS + DATA_40)
    assert m.stations["W"].eifs and m.stations["B"].eifs
    m.send(DIFS + DATA_40, Frame("W", "V", "w", 40))
    out = run_medium(m)
    assert out[0] == (DIFS + DATA_40 + RTS_B.eifs_ns + DATA_40, "deliver", "W", "V")


def hidden_pair(phy: Phy, seed: int, frames: int = 300) -> tuple[int, int, dict[str, int]]:
    """A -> B <- C, A and C out of each other's range, both saturated: (data frames corrupted at B,
    frames delivered, drops by reason)."""
    m = Medium(phy, Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"]}), 1000, random.Random(seed))
    for i in range(frames):
        for s in "AC":
            m.send(0, Frame(s, "B", i, 1000))
    out = run_medium(m)
    drops: dict[str, int] = {}
    for _, kind, _, _ in out:
        drops[kind] = drops.get(kind, 0) + 1
    delivered = drops.pop("deliver", 0)
    return sum(m.stations[s].stats.collisions for s in "AC"), delivered, drops


@pytest.mark.parametrize("seed", [1, 3])
def test_rts_cts_removes_most_hidden_terminal_collisions(seed: int) -> None:
    without, delivered_without, drops_without = hidden_pair(Phy.preset("b"), seed)
    with_rts, delivered_with, drops_with = hidden_pair(RTS_B, seed)
    assert without > 100                      # the hidden pair collides all the time without RTS/CTS
    assert with_rts * 10 < without            # the CTS's NAV silences the hidden sender: > 90 % fewer
    assert delivered_with > delivered_without
    assert drops_without.get("mac_retry", 0) > drops_with.get("mac_retry", 0)
    assert set(drops_with) <= {"rts_retry", "mac_retry"}


# ====================================================================================================
# Paper 000's Table 1 with RTS/CTS (experiments/medium-rts.yaml; docs/REPRODUCTION.md, "Paper 000, Table 1,
# with RTS/CTS"): the ``ns2phy`` variants stand for ns-2's radio (WirelessPhy with TwoRayGround: decode above
# RXThresh, 250 m; sense above CSThresh, 550 m; capture when the frame held is CPThresh = 10 dB stronger,
# mac-802_11.cc ``Mac802_11::recv``).  On the 200 m chain that radio and our ``reception: range`` agree on who
# decodes and who senses whom; they differ in what an overlap does: a sender 200 m from its receiver is
# 12 dB above an interferer 400 m away (d^-4 beyond the two-ray crossover), which ns-2 survives and a range
# circle does not.  In virtual time, from the experiment file itself.


RTS_YAML = ROOT / "experiments" / "medium-rts.yaml"


def variant(name: str) -> dict[str, Any]:
    exp = load_file(RTS_YAML)
    return next(v.config for v in exp.variants if v.name == name)


@pytest.mark.parametrize("rts", ["", "-rts"])
def test_the_ns2phy_variants_decode_and_sense_exactly_as_ns2s_250_and_550_m(rts: str) -> None:
    ns2 = build_medium(variant(f"reno{rts}-ns2phy"), 1).topo
    circle = build_medium(variant(f"reno{rts}"), 1).topo
    assert ns2 == circle
    assert ns2.hears["C"] == {"B", "D"} and ns2.senses["C"] == {"A", "B", "D", "E"}
    assert ns2.senses["A"] == {"B", "C"}   # 600 m: not sensed (ns-2: under CSThresh)


def test_the_ns2phy_signals_fall_as_d_to_the_4_two_ray_ground() -> None:
    s = signals(variant("reno-ns2phy"))
    assert s["C"]["B"] - s["C"]["A"] == pytest.approx(40 * math.log10(2))   # 200 m -> 400 m: 12.04 dB
    assert s["A"]["B"] > -82 > s["A"]["C"] >= -95.7 > s["A"]["D"]


def hidden_senders(name: str) -> Medium:
    """B -> C and E -> D start in the same slot, and (every backoff 0) again at each retry: B and E (600 m)
    do not sense each other; each receiver has its sender 200 m away and the other sender 400 m away."""
    m = build_medium(variant(name), 1)
    m.rng = ScriptedRng(0, 0)   # type: ignore[assignment]
    m.send(0, Frame("B", "C", "b", 1040))
    m.send(0, Frame("E", "D", "e", 1040))
    return m


def test_a_frame_from_200_m_survives_an_interferer_400_m_away_on_ns2s_radio_not_in_a_range_circle() -> None:
    circle = hidden_senders("reno")
    assert sorted(o[1:] for o in run_medium(circle)) == [("mac_retry", "B", "C"), ("mac_retry", "E", "D")]   # every attempt collides
    assert all(circle.stations[n].stats.collisions == 7 for n in "BE")
    ns2 = hidden_senders("reno-ns2phy")
    assert sorted(o[1:] for o in run_medium(ns2)) == [("deliver", "B", "C"), ("deliver", "E", "D")]   # both delivered, at the first attempt
    assert all(ns2.stations[n].stats.attempts == 1 and ns2.stations[n].stats.collisions == 0 for n in "BE")


# ---- medium.capture_db: ns-2's capture rule on reception range (routing.medium.dcf.RangeCapture) --------------
def capture_medium(positions: dict[str, list[float]], links: list[list[str]], sends: list[tuple[str, str, int]],
                   **medium: Any) -> Medium:
    """A range medium (250 / 550 m, 1 Mbit/s) over ``links`` at ``positions``, with ``capture_db`` 10 unless
    given; each (sender, receiver, backoff slots) queues one 1,040-byte frame at time 0, the backoffs scripted
    (0 once the script runs out)."""
    doc = {"topology": {"nodes": list(positions), "links": links},
           "flows": [{"sender": links[0][0], "receiver": links[0][1], "segments": 1}],
           "medium": dict(dict(model="dcf", rate_mbps=1, basic_rate_mbps=1, positions=positions, capture_db=10),
                          **medium)}
    m = build_medium(load_experiment(doc, "c.yaml").variants[0].config, 1)
    m.rng = ScriptedRng(*(slots for _, _, slots in sends))   # type: ignore[assignment]
    for src, dst, _ in sends:
        m.send(0, Frame(src, dst, f"{src}>{dst}", 1040))
    return m


LINE = {n: [200.0 * i, 0.0] for i, n in enumerate("ABCDE")}


LINE_LINKS = [["A", "B"], ["B", "C"], ["C", "D"], ["D", "E"]]


def first_attempt_lost(m: Medium) -> dict[str, bool]:
    run_medium(m)
    return {n: st.stats.collisions > 0 for n, st in m.stations.items() if st.stats.attempts}


def test_capture_keeps_the_frame_held_against_a_later_one_10_db_weaker() -> None:
    # B -> C starts; E (400 m from C, 12 dB weaker under d^-4) starts 3 slots later: C keeps B's frame.
    # D, 200 m from E and 400 m from B, was receiving B's frame's energy first: ns-2 loses E's frame there
    assert first_attempt_lost(capture_medium(LINE, LINE_LINKS, [("B", "C", 0), ("E", "D", 3)])) == \
        {"B": False, "E": True}
    # without capture_db both are lost (today's range reception)
    assert first_attempt_lost(capture_medium(LINE, LINE_LINKS, [("B", "C", 0), ("E", "D", 3)], capture_db=None)) \
        == {"B": True, "E": True}


def test_capture_never_keeps_frames_that_start_in_the_same_slot() -> None:
    assert first_attempt_lost(capture_medium(LINE, LINE_LINKS, [("B", "C", 0), ("E", "D", 0)])) == \
        {"B": True, "E": True}


def test_capture_needs_the_ratio_an_interferer_300_m_away_is_only_7_db_weaker() -> None:
    # B -> C and X -> Y; X is 300 m from C (B and X, 500 m apart, do not sense each other at a carrier-sense
    # range of 450 m); M only links them
    pos = {"B": [0.0, 0.0], "C": [200.0, 0.0], "M": [350.0, 0.0], "X": [500.0, 0.0], "Y": [700.0, 0.0]}
    links = [["B", "C"], ["C", "M"], ["M", "X"], ["X", "Y"]]
    sends = [("B", "C", 0), ("X", "Y", 3)]
    lost = first_attempt_lost(capture_medium(pos, links, sends, cs_range_m=450))
    assert lost["B"] is True   # 40 log10(1.5) = 7.0 dB < 10
    assert first_attempt_lost(capture_medium(pos, links, sends, cs_range_m=450, capture_db=7.0))["B"] is False


def test_capture_on_a_diamond_with_crossing_flows() -> None:
    # A -> B and D -> C cross the diamond A-B-D, A-C-D; B stands near A and C near D (128 m), the far
    # sender 307 m away (15.2 dB weaker), A and D (400 m) hidden from each other.  D starts 2 slots into
    # A's frame: B keeps A's; C was already sensing A's frame when D's began, so D's is lost (ns-2's order).
    pos = {"A": [0.0, 0.0], "B": [100.0, 80.0], "C": [300.0, -80.0], "D": [400.0, 0.0]}
    links = [["A", "B"], ["A", "C"], ["B", "D"], ["C", "D"]]
    sends = [("A", "B", 0), ("D", "C", 2)]
    ranges = {"range_m": 320, "cs_range_m": 350}
    assert first_attempt_lost(capture_medium(pos, links, sends, capture_db=None, **ranges)) == {"A": True, "D": True}
    assert first_attempt_lost(capture_medium(pos, links, sends, **ranges)) == {"A": False, "D": True}


def capture_errors(medium: dict[str, Any], topology: dict[str, Any] | None = None) -> dict[str, str]:
    doc = {"topology": topology or {"chain": ["A", "B", "C"]},
           "flows": [{"sender": "A", "receiver": "C", "segments": 1}],
           "medium": {"model": "dcf", **medium}}
    with pytest.raises(ExperimentError) as e:
        load_experiment(doc, "c.yaml")
    return {err.path: err.message for err in e.value.errors}


@pytest.mark.parametrize("medium,topology,words", [
    ({"capture_db": 10, "reception": "sinr"}, None, "reception sinr captures by SINR"),
    ({"capture_db": 10, "hears": {"A": ["B"], "B": ["A", "C"], "C": ["B"]}}, None, "compares distances"),
    ({"capture_db": 10}, {"nodes": ["A", "B", "C"], "links": [["A", "B"], ["B", "C"]]}, "compares distances"),
    ({"capture_db": 0}, None, "more than 0"),
    ({"capture_db": 10, "capture_exponent": 0.5}, None, "expected 1 to 8"),
])
def test_impossible_capture_settings_are_refused_naming_the_field(medium: dict[str, Any], topology: Any,
                                                                  words: str) -> None:
    found = capture_errors(medium, topology)
    assert any(words in msg for path, msg in found.items() if path.startswith("medium.capture")), found


def test_a_capture_exponent_without_capture_db_is_refused() -> None:
    assert "only with medium.capture_db" in capture_errors({"capture_exponent": 4})["medium.capture_exponent"]


def test_capture_settings_without_a_medium_are_refused() -> None:
    assert "medium.model is 'none'" in capture_errors({"model": "none", "capture_db": 10})["medium.capture_db"]


def test_with_the_nav_a_third_station_decodes_the_frame_held_under_the_same_rule() -> None:
    # T decodes B (180 m) and senses E (522 m, 18.5 dB weaker), which B cannot sense (600 m); E starts 3 slots
    # into B's frame.  With capture T decodes B's frame and sets its NAV from the Duration field (SIFS + ACK);
    # without, T cannot decode it and waits EIFS instead (nav duration: 10.3.2.4, 10.3.2.3.7).
    pos = {"B": [0.0, 0.0], "C": [200.0, 0.0], "T": [100.0, 150.0], "M": [400.0, 0.0], "E": [600.0, 0.0],
           "Y": [800.0, 0.0]}
    links = [["B", "C"], ["B", "T"], ["T", "C"], ["C", "M"], ["M", "E"], ["E", "Y"]]
    for capture_db, nav_set in ((10, True), (None, False)):
        m = capture_medium(pos, links, [("B", "C", 0), ("E", "Y", 3)], nav="duration", capture_db=capture_db)
        data_end = m.phy.difs_ns + m.phy.data_ns(1040)
        m.advance(data_end)
        t = m.stations["T"]
        assert (t.nav_until == data_end + m.phy.sifs_ns + m.phy.ack_ns(), t.eifs) == (nav_set, not nav_set)


# ====================================================================================================
# The 802.11 DCF medium's rules one by one (issue 30, item 3: the survivors of routing/medium/dcf.py's mutation run).
#
# Each test is derived from the rule it pins (IEEE Std 802.11-2016/2020 clauses, docs/MEDIUM.md, the module's
# docstrings), with times computed here from the clause, not read from the medium.  Virtual time only.
#
# The mutants they killed, by rule (docs/MUTATION.md, "The 802.11 medium"): a frame's rate where the medium's
# fixed rate was taken instead (RTS, CTS, Ack, ACKTimeout, Duration fields, airtime of ``_send_rts``,
# ``_send_data``, ``_on_ack_start``, ``_on_data_end``, ``_mode``); the NAV's edges (``_set_nav``: never
# shortened, counted once, a NAV ending now; ``_on_rts_end``: a NAV ending with the RTS); a partial slot and a
# resumed countdown (``_freeze``, ``_contend``: the token going back); half duplex under the NAV (``_garble``);
# the times handed to ``_idle``/``_busy`` after an RTS, a CTS and a NAV; the reports of a delivered frame's
# RTS failures (``_rts_failed``); the retry limit that follows dot11RTSThreshold (``_done``); counters that
# must add up over frames; a frame error drawn as u < p and not at p = 0 (``_lost_to_error``); the
# controllers' seeds (``controller``); ranges and capture at their edges; every refusal's text.


US = 1000


# ---- interframe spaces and the contention window (10.3.2.3, 10.3.3) ------------------------------------


# ---- the settings a radio cannot have -----------------------------------------------------------------


# ---- rates: the fixed rate, the basic rate set, the error model's mode ---------------------------------


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
    assert run_medium(m) == [(a_start + DATA_1000, "deliver", "A", "C"),
                      (a_end + DIFS + 3 * SLOT + DATA_1000, "deliver", "B", "C")]


def test_the_interface_queue_holds_exactly_queue_packets() -> None:
    m = Medium(B, full_mesh("A", "B"), 3, ScriptedRng())   # type: ignore[arg-type]
    frames = [Frame("A", "B", i, 100) for i in range(5)]
    assert [m.send(0, f) for f in frames[:3]] == [[], [], []]
    assert m.queued("A") == 3 and m.queued("B") == 0
    out = m.send(0, frames[3])
    assert [(o.at_ns, o.frame, o.reason) for o in out] == [(0, frames[3], "queue")]   # type: ignore[union-attr]
    assert m.stations["A"].stats.queue_drops == 1
    run_medium(m, until=DIFS)        # the head is on the air: one place free
    assert m.queued("A") == 3 and m.send(DIFS, frames[4]) != []
    assert m.stations["A"].stats.queue_drops == 2
    assert [o[1] for o in run_medium(m)] == ["deliver"] * 3


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
    out = run_medium(m)
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
    out = run_medium(m)
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
        run_medium(m)
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
    run_medium(m)
    assert (g.rate, g.chain) == (ofdm_rate(6), None) and m._controllers == {}
    s = Medium(B, full_mesh("A", "B"), 10, ScriptedRng())   # type: ignore[arg-type]
    f = Frame("A", "B", "a", 100)
    s.send(0, f)
    run_medium(s)
    assert (f.rate, f.chain) == (None, None) and s.stations["A"].stats.rate_acks == {"11Mbps": 1}


def test_radio_loss_is_drawn_per_data_attempt_with_its_end_time_and_retried() -> None:
    """A loss model standing for radio errors (layer radio) loses a data attempt as a frame error would:
    counted as an error, retried with a doubled window; called with (src, dst, the frame's end, packet bytes)."""
    rng = ScriptedRng()
    m = Medium(B, full_mesh("A", "B"), 10, rng)   # type: ignore[arg-type]
    calls: list[tuple[str, str, int, int]] = []
    m.radio_loss = lambda src, dst, now, nbytes: calls.append((src, dst, now, nbytes)) or len(calls) == 1
    m.send(0, Frame("A", "B", "a", 1000))
    out = run_medium(m)
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
        run_medium(m, until=a_end)
        assert m.stations["C"].nav_until == (a_end + phy.sifs_ns + phy.ack_ns() if acked else 0)
        assert m.stations["B"].nav_until == 0   # the addressee sets none
        m.send(a_end, Frame("C", "D", "c", 40))
        c_start = (a_end + phy.sifs_ns + phy.ack_ns() if acked else a_end) + DIFS
        assert [o for o in run_medium(m) if o[2] == "C"] == [(c_start + phy.data_ns(40), "deliver", "C", "D")]


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
    out = run_medium(m)
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
    run_medium(m)
    assert [a[5] for a in radio.asked] == [MODES["ht-mcs7"], MODES["ofdm-24"]]   # Ack at 24 Mb/s (10.6.6.5)
    assert [a[4] for a in radio.asked] == [N.preamble_ns] * 2
    radio = ScriptedRadio()   # a frame at MCS 0 (its chain): its Ack at 6 Mb/s
    m = Medium(N, full_mesh("A", "B"), 10, ScriptedRng(), radio=radio)   # type: ignore[arg-type]
    m._controllers[("A", "B")] = Recorder([(R0, 4)])   # type: ignore[assignment]
    m.send(0, Frame("A", "B", "a", 1000))
    run_medium(m)
    assert [a[5] for a in radio.asked] == [MODES["ht-mcs0"], MODES["ofdm-6"]]


def test_sinr_a_sender_the_receiver_cannot_detect_draws_nothing_and_overlaps_are_named() -> None:
    # A and C, hidden from each other, both send to B at DIFS; B cannot detect D at all (D -> B, out of range)
    radio = ScriptedRadio(False, False)
    topo = Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"], "D": []})
    m = Medium(B, topo, 10, ScriptedRng(), radio=radio)   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    m.send(0, Frame("C", "B", "c", 1000))
    run_medium(m, until=DIFS + DATA_1000)
    span = (DIFS, DIFS + DATA_1000)
    assert radio.asked == [("A", "B", *span, 192_000, MODES["cck-11"], [("C", *span)]),
                           ("C", "B", *span, 192_000, MODES["cck-11"], [("A", *span)])]
    a, c = m.stations["A"].stats, m.stations["C"].stats
    assert (a.collisions, a.hidden, a.faded) == (1, 1, 0) and (c.collisions, c.hidden, c.faded) == (1, 1, 0)
    lone = Medium(B, Topology.from_graph({"A": [], "B": []}), 10, ScriptedRng(),   # type: ignore[arg-type]
                  radio=ScriptedRadio())   # type: ignore[arg-type]
    lone.send(0, Frame("A", "B", "a", 1000))
    run_medium(lone, until=DIFS + DATA_1000)
    assert lone.radio.asked == [] and lone.stations["A"].stats.faded == 1   # type: ignore[union-attr]


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
    assert run_medium(m, until=rts_end) == [] and m.stations["D"].nav_until == ack_end == m.stations["E"].nav_until
    assert run_medium(m, until=cts_end) == [] and m.stations["C"].nav_until == ack_end == m.stations["E"].nav_until
    assert run_medium(m) == [(data_end, "deliver", "A", "B")]
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
    assert run_medium(m) == [(ack_end - SIFS - B.ack_ns(), "deliver", "A", "B"), (b_data_end, "deliver", "B", "A")]


def test_a_nav_freezes_a_countdown_like_a_busy_medium() -> None:
    """C has counted 2 of its 5 slots when its NAV is set: it keeps 3 and counts them DIFS after the NAV."""
    phy = Phy.preset("b", nav="duration")
    m = Medium(phy, full_mesh("A", "C"), 10, ScriptedRng(5))   # type: ignore[arg-type]
    m.send(0, Frame("C", "A", "c", 40))
    now = DIFS + 2 * SLOT
    m.advance(now)
    m._set_nav(m.stations["C"], now + 1_000_000, now)
    assert m.stations["C"].backoff == 3
    assert run_medium(m) == [(now + 1_000_000 + DIFS + 3 * SLOT + phy.data_ns(40), "deliver", "C", "A")]


def test_the_addressee_answers_an_rts_when_its_nav_ends_with_it() -> None:
    """10.3.2.7: a CTS unless the NAV indicates busy; a NAV that ends exactly at the RTS's end does not."""
    rts_end = DIFS + RTS
    for nav_until, answers in ((rts_end, True), (rts_end + 1, False)):
        m = Medium(RTS_B, full_mesh("A", "B"), 10, ScriptedRng())   # type: ignore[arg-type]
        m.send(0, Frame("A", "B", "a", 1000))
        m._set_nav(m.stations["B"], nav_until, 0)
        run_medium(m, until=rts_end + RTS_B.cts_timeout_ns)
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
    run_medium(m, until=rts_end)
    x = m.stations["X"]
    assert x.eifs and x.count_from == rts_end + phy.eifs_ns and x.attempt_at == rts_end + phy.eifs_ns + 2 * SLOT
    a_data_end = rts_end + SIFS + CTS + SIFS + DATA_1000
    assert run_medium(m) == [(a_data_end, "deliver", "A", "B"),
                      (a_data_end + phy.eifs_ns + 2 * SLOT + phy.data_ns(40), "deliver", "X", "Y")]


def test_sinr_a_third_station_that_decodes_a_frame_sets_its_nav_one_that_does_not_waits_eifs() -> None:
    """nav duration with reception sinr: C and X each draw whether they decode A's frame to B; C, which does,
    sets its NAV to the frame's end + SIFS + ACK (9.2.5.2); X, which does not, waits EIFS (10.3.2.3.7)."""
    phy = Phy.preset("b", nav="duration")
    radio = ScriptedRadio(True, True, False)   # B decodes it, then C does, X does not (sensing order: B, C, X)
    m = Medium(phy, full_mesh("A", "B", "C", "X"), 10, ScriptedRng(), radio=radio)   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    end = DIFS + DATA_1000
    run_medium(m, until=end)
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
    run_medium(m)
    assert [(a[0], a[5]) for a in radio.asked] == [("A", MODES["ofdm-24"]), ("B", MODES["ofdm-24"]),
                                                   ("A", MODES["ht-mcs7"]), ("B", MODES["ofdm-24"])]
    radio = ScriptedRadio()
    m = Medium(Phy.preset("b", rts_threshold=0), full_mesh("A", "B"), 10, ScriptedRng(),   # type: ignore[arg-type]
               radio=radio)   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    run_medium(m)
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
    assert run_medium(m) == [(a_start + DATA_1000, "deliver", "A", "C"),
                      (ack_end + DIFS + 3 * SLOT + DATA_1000, "deliver", "B", "C")]
    assert m.stations["A"].stats.airtime_ns == phy.exchange_ns(1000)
    g = Medium(phy, full_mesh("A", "B"), 10, ScriptedRng())   # type: ignore[arg-type]
    g.send(0, Frame("A", "B", "probe", 1000, acked=False))
    assert run_medium(g) == [(DIFS + DATA_1000, "deliver", "A", "B")] and g.stations["A"].stats.airtime_ns == DATA_1000
    far = Medium(phy, Topology.from_graph({"A": ["B"], "B": []}), 10, ScriptedRng())   # type: ignore[arg-type]
    far.send(0, Frame("A", "B", "a", 1000))
    out = run_medium(far)
    assert [o[1] for o in out] == ["mac_retry"] and far.stations["A"].stats.attempts == 7


def test_the_duration_of_a_data_frame_is_sifs_plus_the_ack_at_its_rates_response_rate() -> None:
    phy = Phy.preset("n", nav="duration")
    topo = Topology.from_graph({"A": ["B", "C"], "B": ["A"], "C": ["A"]})
    m = Medium(phy, topo, 10, ScriptedRng())   # type: ignore[arg-type]
    m._controllers[("A", "B")] = Recorder([(R0, 4)])   # type: ignore[assignment]
    m.send(0, Frame("A", "B", "a", 1000))
    data_end = DIFS_G + txtime_ns(R0, 1036)
    assert run_medium(m, until=data_end) == [(data_end, "deliver", "A", "B")]
    assert m.stations["C"].nav_until == data_end + 10 * US + txtime_ns(ofdm_rate(6), 14)
    run_medium(m)
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
    assert run_medium(m) == [(DIFS + DATA_1000, "deliver", "A", "B"), (end + DIFS + 3 * SLOT + DATA_1000, "deliver", "A", "B")]
    assert m.events == 10 and m.next_timer() is None


def test_half_duplex_with_the_nav_a_station_that_transmitted_over_a_frame_did_not_decode_it() -> None:
    """nav duration: I, which hears A, transmits its own (short, group-addressed) frame while A's is on the
    air; it cannot have decoded A's frame (half duplex): no NAV from its Duration, EIFS after it."""
    phy = Phy.preset("b", nav="duration")
    m = Medium(phy, full_mesh("A", "B", "I"), 10, ScriptedRng())   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    m.send(0, Frame("I", "B", "i", 40, acked=False))
    run_medium(m, until=DIFS + DATA_1000)
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
    assert run_medium(m) == [(a_end, "deliver", "A", "C"), (b_start + DATA_40, "deliver", "B", "C")]


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
    run_medium(m)
    assert m._error_rng.getstate() == idle._error_rng.getstate()   # p == 0: nothing drawn
    for bump, lost in ((0.0, False), (1e-12, True)):
        m = ErrorP(B, full_mesh("A", "B"), 10, ScriptedRng(), seed=4)   # type: ignore[arg-type]
        state = m._error_rng.getstate()
        u = m._error_rng.random()
        m._error_rng.setstate(state)
        m.p = u + bump
        m.send(0, Frame("A", "B", "a", 100))
        out = run_medium(m, until=DIFS + B.data_ns(100))
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
    assert run_medium(m) == [(k * 2 * per_rts, "rts_retry", "A", "B") for k in (1, 2, 3)]
    st = m.stations["A"].stats
    assert (st.frames, st.rts, st.rts_failed, st.rts_drops, st.mac_drops, st.attempts) == (3, 6, 6, 3, 0, 6)


def test_the_ack_timeout_of_a_lost_attempt_lasts_sifs_and_the_ack_at_its_rates_response_rate() -> None:
    """A failed exchange keeps the sender as long as a successful one (module docstring: ACKTimeout ~ SIFS +
    ACK), the Ack at the control response rate of the attempt's rate (MCS 0: 6 Mb/s)."""
    m = ErrorsAt(N, full_mesh("A", "B"), 10, ScriptedRng(), lossy={R0})   # type: ignore[arg-type]
    m._controllers[("A", "B")] = Recorder([(R0, 1), (R5, 1)])   # type: ignore[assignment]
    m.send(0, Frame("A", "B", "a", 1000))
    timeout_end = DIFS_G + txtime_ns(R0, 1036) + 10 * US + txtime_ns(ofdm_rate(6), 14)
    assert run_medium(m) == [(timeout_end + DIFS_G + txtime_ns(R5, 1036), "deliver", "A", "B")]


def test_every_hidden_collision_is_counted() -> None:
    """A and C cannot sense each other and both send to B in the same slot, attempt after attempt: each of the
    retry_limit attempts collides, each by a sender the other could not sense (hidden), then mac_retry."""
    phy = Phy.preset("b", retry_limit=3)
    hidden = Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"]})
    m = Medium(phy, hidden, 10, ScriptedRng())   # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    m.send(0, Frame("C", "B", "c", 1000))
    assert [o[1:] for o in run_medium(m)] == [("mac_retry", "A", "B"), ("mac_retry", "C", "B")]
    for n in "AC":
        st = m.stations[n].stats
        assert (st.attempts, st.collisions, st.hidden, st.mac_drops) == (3, 3, 3, 1)
