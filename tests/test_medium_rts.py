"""RTS/CTS, NAV and EIFS in the DCF core (routing.medium.dcf; issue 24, item 1), in virtual time, every time
worked out from IEEE Std 802.11-2016: RTS 20 and CTS 14 octets at the basic rate (9.3.1.2, 9.3.1.3), their
Duration fields (9.2.5.2) setting the NAV of the stations that decode them (10.3.2.4), CTSTimeout
(10.3.2.7), dot11ShortRetryLimit for RTSs (10.3.4.4) and EIFS (10.3.2.3.7)."""
from __future__ import annotations

import random

import pytest

from routing.medium.dcf import Delivered, Dropped, Frame, Medium, MediumError, Phy, Topology
from tests.test_medium import ACK, DATA_1000, DIFS, SLOT, ScriptedRng, run

SIFS = 10_000
RTS = 192_000 + 80_000        # preamble + 20 * 8 / 2 Mb/s
CTS = 192_000 + 56_000        # preamble + 14 * 8 / 2 Mb/s
DATA_40 = 192_000 + 55_273    # preamble + (40 + 36) * 8 / 11 Mb/s, rounded up to the ns
RTS_B = Phy.preset("b", rts_threshold=0)


def test_rts_cts_airtime_durations_and_timeouts_80211b() -> None:
    assert RTS_B.nav == "duration" and Phy.preset("b").nav == "exchange"   # the default is unchanged
    assert RTS_B.control_ns(20) == RTS and RTS_B.control_ns(14) == CTS == RTS_B.ack_ns()
    assert RTS_B.rts_duration_ns(1000) == 3 * SIFS + CTS + DATA_1000 + ACK
    assert RTS_B.cts_duration_ns(1000) == 2 * SIFS + DATA_1000 + ACK
    assert RTS_B.data_duration_ns(True) == SIFS + ACK and RTS_B.data_duration_ns(False) == 0
    assert RTS_B.eifs_ns == SIFS + ACK + DIFS
    assert RTS_B.cts_timeout_ns == SIFS + SLOT + 192_000
    assert RTS_B.attempt_ns(1000) == RTS + SIFS + CTS + SIFS + DATA_1000 + SIFS + ACK
    # dot11RTSThreshold compares the MPDU: 1000 + 36 bytes
    on = Phy.preset("b", rts_threshold=1035)
    assert on.uses_rts(1000) and not Phy.preset("b", rts_threshold=1036).uses_rts(1000)
    assert not on.uses_rts(1000, acked=False)   # group-addressed frames never (10.3.5: individually addressed)
    with pytest.raises(MediumError, match="nav 'duration'"):
        Phy.preset("b", rts_threshold=0, nav="exchange")


def test_nav_from_the_rts_and_the_cts_defers_both_sides_until_the_ack_ends() -> None:
    # D decodes A only (it hears the RTS, not the CTS); C decodes B only (hidden from A: the CTS tells it).
    topo = Topology.from_graph({"A": ["B", "D"], "B": ["A", "C"], "C": ["B"], "D": ["A"]})
    m = Medium(Phy.preset("b", rts_threshold=500), topo, 10, ScriptedRng())  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "a", 1000))
    rts_end = DIFS + RTS
    cts_end = rts_end + SIFS + CTS
    ack_end = cts_end + SIFS + DATA_1000 + SIFS + ACK
    assert run(m, until=rts_end) == []
    assert m.stations["D"].nav_until == rts_end + RTS_B.rts_duration_ns(1000) == ack_end
    assert m.stations["C"].nav_until == 0 and m.stations["B"].nav_until == 0   # B: the RTS is addressed to it
    assert run(m, until=cts_end) == []
    assert m.stations["C"].nav_until == cts_end + RTS_B.cts_duration_ns(1000) == ack_end
    # two small frames (no RTS: 76-byte MPDUs <= 500) queued while the medium is idle to the ear but the NAV runs
    m.send(cts_end + 20_000, Frame("C", "B", "c", 40))
    m.send(cts_end + 20_000, Frame("D", "A", "d", 40))
    out = run(m)
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
    run(m, until=d_start)
    assert m.stations["C"].nav_until == d_start + RTS_B.rts_duration_ns(1000)
    m.send(d_start, Frame("D", "C", "d", 1000))   # D, idle since 0 and sensing nothing of E: at once (0 slots)
    run(m, until=d_start + RTS + RTS_B.cts_timeout_ns)
    d = m.stations["D"].stats
    assert (d.rts, d.rts_failed, d.collisions) == (1, 1, 0)


def test_rts_retry_limit_reached_is_a_drop_of_its_own_reason() -> None:
    # B cannot decode A: no CTS ever; each attempt is DIFS, the RTS and CTSTimeout; 7 RTSs (dot11ShortRetryLimit)
    rng = ScriptedRng()
    m = Medium(RTS_B, Topology.from_graph({"A": ["B"], "B": []}), 10, rng)  # type: ignore[arg-type]
    m.send(0, Frame("A", "B", "pkt", 1000))
    out = run(m)
    per_attempt = DIFS + RTS + RTS_B.cts_timeout_ns
    assert out == [(7 * per_attempt, "rts_retry", "A", "B")]
    assert rng.windows == [31, 63, 127, 255, 511, 1023, 1023]   # CW doubles per failed RTS too (10.3.3)
    st = m.stations["A"].stats
    assert (st.rts, st.rts_failed, st.rts_drops, st.mac_drops, st.collisions) == (7, 7, 1, 0, 0)
    m2 = Medium(Phy.preset("b", rts_threshold=0, retry_limit=3), Topology.from_graph({"A": ["B"], "B": []}), 10,
                ScriptedRng())  # type: ignore[arg-type]
    m2.send(0, Frame("A", "B", "pkt", 1000))
    assert run(m2) == [(3 * per_attempt, "rts_retry", "A", "B")]


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
        run(m, until=100_000)
        m.send(100_000, Frame("X", "Y", "x", 40))   # S is on the air: X waits
        out = [o for o in run(m) if o[2] == "X"]
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
    run(m, until=DIFS + DATA_40)
    assert m.stations["W"].eifs and m.stations["B"].eifs
    m.send(DIFS + DATA_40, Frame("W", "V", "w", 40))
    out = run(m)
    assert out[0] == (DIFS + DATA_40 + RTS_B.eifs_ns + DATA_40, "deliver", "W", "V")


def hidden_pair(phy: Phy, seed: int, frames: int = 300) -> tuple[int, int, dict[str, int]]:
    """A -> B <- C, A and C out of each other's range, both saturated: (data frames corrupted at B,
    frames delivered, drops by reason)."""
    m = Medium(phy, Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"]}), 1000, random.Random(seed))
    for i in range(frames):
        for s in "AC":
            m.send(0, Frame(s, "B", i, 1000))
    out = run(m)
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
