"""tcp_user/congestion.py: NewReno (RFC 6582, ``newreno``) on the Reno variant, event by event on a hand-fed
endpoint and on the scripted network; each test sets the same scene with the key off, where Reno (RFC 5681)
takes the path it took before the key existed.
"""
from __future__ import annotations

import pytest

from tests.cores import ack_seg, bulk, client, pair, seq_of

ISS = 1000


def six_out(**cfg):
    a, rec = client("reno", iss=ISS, init_cwnd=6, **cfg)
    a.send(bytes(20_000))
    out = a.segments_to_send(1.0)
    assert [s.seq for s in out] == [seq_of(ISS, i) for i in range(6)]
    return a, rec


def index(seg) -> int:
    return (seg.seq - ISS - 1) // 1000


def two_holes(newreno: bool):
    """Segments 0 and 2 of six lost: segments 1, 3, 4, 5 arrive (four dupacks of segment 0); fast recovery
    sends segment 0 again and, inflated by the fourth dupack, new segment 6; segment 0 arrives: the ACK of
    segment 2 (acknowledges 2,000 bytes, not ``recover`` = segment 6)."""
    a, rec = six_out(newreno=newreno)
    for k in range(4):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 100)
    assert a.in_recovery and (a.cwnd, a.ssthresh) == (7000, 3000)
    assert [index(s) for s in a.segments_to_send(1.6)] == [0, 6]
    a.on_segment(ack_seg(a, seq_of(ISS, 2)), 2.0)
    return a, rec


# RFC 6582 sec. 3.2 step 5.  Break caught: exit_recovery on a partial ACK (the key ignored), no fast_rtx_pending,
# no deflation, or the SMSS not added back.
def test_a_partial_ack_resends_the_next_hole_deflates_cwnd_and_stays_in_recovery() -> None:
    a, rec = two_holes(newreno=True)
    assert a.in_recovery
    assert a.cwnd == 7000 - 2000 + 1000                # deflated by the 2,000 bytes acked, one SMSS added back
    assert rec.timed("cwnd")[-1] == (2.0, {"cwnd": 6000, "ssthresh": 3000})
    out = a.segments_to_send(2.0)
    assert [index(s) for s in out] == [2, 7]           # segment 2 again, and the one new segment cwnd leaves room for
    assert a.stats["losses_dupack"] == 1 and a.stats["retransmissions"] == 2


def test_without_newreno_a_partial_ack_ends_fast_recovery() -> None:
    a, _ = two_holes(newreno=False)
    assert not a.in_recovery and (a.cwnd, a.ssthresh) == (3000, 3000)       # RFC 5681 step 6: deflate to ssthresh
    assert [index(s) for s in a.segments_to_send(2.0)] == []                # 5,000 bytes out > cwnd: nothing goes


# RFC 6582 sec. 3.2 step 6, option (1).  Break caught: cwnd = ssthresh (option (2)), or the flight not floored at
# one SMSS.
@pytest.mark.parametrize("acked,cwnd", [(7, 2000), (8, 2000), (6, 3000)])
def test_a_full_ack_ends_recovery_with_min_ssthresh_flight_plus_one_smss(acked: int, cwnd: int) -> None:
    a, rec = two_holes(newreno=True)
    a.segments_to_send(2.0)                            # segments 2 and 7 out: SND.MAX is segment 8
    a.on_segment(ack_seg(a, seq_of(ISS, acked)), 2.5)  # recover is segment 6: each of these covers it
    assert a.in_recovery is False
    assert (a.cwnd, a.ssthresh) == (cwnd, 3000)        # min(3000, max(FlightSize, 1000) + 1000)
    assert rec.timed("cwnd")[-1] == (2.5, {"cwnd": cwnd, "ssthresh": 3000})


# RFC 6582 sec. 3.2 step 5's two sizes of partial ACK.  Break caught: the SMSS added back for less than one SMSS
# acknowledged (or not for exactly one), or a byte added instead of nothing.
@pytest.mark.parametrize("acked,cwnd", [(500, 5500), (1000, 6000), (1500, 5500)])
def test_one_smss_is_added_back_only_when_a_partial_ack_acknowledges_at_least_one(acked: int, cwnd: int) -> None:
    a, _ = six_out(newreno=True)
    for k in range(3):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 100)
    assert (a.cwnd, a.ssthresh) == (6000, 3000)
    a.segments_to_send(1.6)
    a.on_segment(ack_seg(a, seq_of(ISS, 0) + acked), 2.0)
    assert a.in_recovery and a.cwnd == cwnd


# Break caught: the floor of one SMSS left out (cwnd 0: the sender stalls until the timer).
def test_a_partial_ack_of_more_than_cwnd_leaves_one_smss() -> None:
    a, _ = client("reno", iss=ISS, init_cwnd=10, newreno=True)
    a.send(bytes(20_000))
    assert len(a.segments_to_send(1.0)) == 10
    for k in range(3):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 100)
    assert (a.cwnd, a.ssthresh) == (8000, 5000)
    a.segments_to_send(1.6)
    a.on_segment(ack_seg(a, seq_of(ISS, 9)), 2.0)     # 9,000 bytes: 8,000 - 9,000 + 1,000 = 0
    assert a.in_recovery and a.cwnd == 1000
    assert [index(s) for s in a.segments_to_send(2.0)] == [9]


# RFC 6582 sec. 3.2 step 2 with step 4 (recover set at a timeout).  Break caught: the recover test left out for
# newreno (only reno_rto_guard reading it).
def test_after_a_timeout_dupacks_for_data_sent_before_it_start_no_fast_retransmit() -> None:
    for newreno, want in ((True, False), (False, True)):
        a, _ = six_out(newreno=newreno)
        t = a.next_timer()
        a.on_timer(t)
        assert [index(s) for s in a.segments_to_send(t)] == [0]
        for k in range(3):
            a.on_segment(ack_seg(a, seq_of(ISS, 0)), t + 0.1 + k / 100)
        assert a.in_recovery is want and a.stats["losses_dupack"] == int(want)


# RFC 6582 sec. 3.2 step 2: recover is set at the fast retransmit.  Break caught: recovery_point not set on entry
# (a partial ACK then ends recovery as Reno's does, since SND.UNA would be above recover).
def test_recover_is_snd_max_at_the_fast_retransmit() -> None:
    a, _ = six_out(newreno=True)
    for k in range(3):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 100)
    assert a.congestion_control.recovery_point == 1 + 6 * 1000


# The scripted network: two losses in one window.  Break caught: any of the above; without the key the second hole
# costs a retransmission timeout (three dupacks never come for it), as RFC 5681 Reno does.
@pytest.mark.parametrize("newreno,dupack,rto", [(True, 1, 0), (False, 1, 1)])
def test_two_losses_in_one_window_are_recovered_without_a_timeout_by_newreno(newreno: bool, dupack: int,
                                                                              rto: int) -> None:
    a, b, ra, _ = pair("reno", newreno=newreno, init_cwnd=8)
    sim, data = bulk(a, b, 12_000)
    sim.drop("a", seq_of(1000, 2), 1)
    sim.drop("a", seq_of(1000, 4), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert (a.stats["losses_dupack"], a.stats["losses_rto"]) == (dupack, rto)
    assert a.stats["retransmissions"] == 2
    assert [f["kind"] for f in ra.of("loss")] == ["dupack"] + ["rto"] * rto
