"""tcp_user/congestion.py: F-RTO (RFC 5682 sec. 2.1, the basic algorithm, ``frto``) on both variants, event by
event on a hand-fed endpoint: a spurious timeout (the ACKs of the original transmissions arrive after it) is
detected and undone; a genuine loss after a timeout is not called spurious; the same scenes with the key off go
back N as before.
"""
from __future__ import annotations

import pytest

from tests.cores import ack_seg, bulk, client, pair, seq_of
from tcp_user.config import TcpConfig
from tcp_user.connection import TcpConnection
from tcp_user.segment import ACK, SYN, Segment

ISS = 1000
VARIANTS = ["reno", "sack"]


def index(seg) -> int:
    return (seg.seq - ISS - 1) // 1000


def timed_out(variant: str, **cfg):
    """Six segments out at t = 1 (cwnd 6,000, ssthresh "arbitrarily high"); the timer expires and segment 0 goes
    again (RFC 5682 step 1)."""
    a, rec = client(variant, iss=ISS, init_cwnd=6, **cfg)
    a.send(bytes(20_000))
    assert [index(s) for s in a.segments_to_send(1.0)] == list(range(6))
    t = a.next_timer()
    a.on_timer(t)
    assert [index(s) for s in a.segments_to_send(t)] == [0]
    assert (a.cwnd, a.stats["losses_rto"]) == (1000, 1)
    return a, rec, t


# Steps 2b and 3b.  Break caught: step 2b sending old data (SND.NXT left at SND.UNA), the counter not counted, cwnd
# or ssthresh not undone, or the second new ACK not declaring it.
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_spurious_timeout_is_detected_by_the_second_new_ack_and_undone(variant: str) -> None:
    a, rec, t = timed_out(variant, frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)          # the delayed ACK of segment 0's first transmission
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [6, 7]    # step 2b: two new segments, outside cwnd
    assert a.segments_to_send(t + 0.1) == []                    # two, once
    assert a.stats["frto_spurious"] == 0
    a.on_segment(ack_seg(a, seq_of(ISS, 2)), t + 0.2)          # segment 1's: it was never retransmitted
    assert a.stats["frto_spurious"] == 1 and a.congestion_control.frto_step == 0
    assert (a.cwnd, a.ssthresh) == (6000, 1 << 30)             # the values before the timeout
    assert rec.timed("cwnd")[-1] == (t + 0.2, {"cwnd": 6000, "ssthresh": 1 << 30})
    for k in range(3, 6):                                       # the rest of the delayed ACKs: new data only
        a.on_segment(ack_seg(a, seq_of(ISS, k)), t + 0.2 + k / 100)
    out = a.segments_to_send(t + 0.3)
    assert out and min(index(s) for s in out) == 8
    assert a.stats["retransmissions"] == 1                      # only the timeout's own
    a.on_segment(ack_seg(a, seq_of(ISS, 6)), t + 0.35)
    samples = a.rtt_samples
    a.on_segment(ack_seg(a, seq_of(ISS, 8)), t + 0.4)          # step 2b's segments were timed when they left
    assert a.rtt_samples == samples + 1 and a.srtt is not None


def test_after_a_spurious_timeout_the_sack_sender_arms_its_loss_probe_again() -> None:
    # the timeout's RFC 6675 sec. 5.1 recovery ends with it: RACK-TLP's probe timer (RFC 8985 sec. 7.2) is armed on
    # the ACK that found it spurious, not one ACK later
    a, _ = client("sack", iss=ISS, init_cwnd=6, frto=True, rack=True)
    a.send(bytes(20_000))
    a.segments_to_send(1.0)
    t = a.next_timer()
    a.on_timer(t)                                               # the probe timeout first: segment 6 as the probe
    assert [index(s) for s in a.segments_to_send(t)] == [6]
    t = a.next_timer()
    a.on_timer(t)                                               # then the retransmission timer
    assert [index(s) for s in a.segments_to_send(t)] == [0] and a.stats["losses_rto"] == 1
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [7, 8]
    assert a.congestion_control.tlp.pto_at is None             # still in the timeout's recovery
    a.on_segment(ack_seg(a, seq_of(ISS, 2)), t + 0.2)
    assert a.stats["frto_spurious"] == 1
    assert a.congestion_control.rto_recovery is False and a.congestion_control.tlp.pto_at is not None


def test_a_timeout_during_fast_recovery_is_not_checked() -> None:
    # the cwnd before it is fast recovery's inflated one: there is nothing to undo to (as Linux)
    a, _ = client("reno", iss=ISS, init_cwnd=6, frto=True)
    a.send(bytes(20_000))
    a.segments_to_send(1.0)
    for k in range(3):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 100)
    assert a.in_recovery
    a.segments_to_send(1.6)
    a.on_timer(a.next_timer())
    assert a.stats["losses_rto"] == 1 and a.congestion_control.frto_step == 0


def test_the_first_flight_after_the_handshake_is_cwnds_not_frtos() -> None:
    # data queued before the SYN+ACK: the first output sends IW (one segment here) and nothing of step 2b
    a = TcpConnection(TcpConfig(init_cwnd=1), iss=ISS)
    a.connect(0.0)
    a.send(bytes(5000))
    assert [s.flags for s in a.segments_to_send(0.0)] == [SYN]
    a.on_segment(Segment(seq=90_000, ack=ISS + 1, flags=SYN | ACK, window=64_000), 0.5)
    out = a.segments_to_send(0.5)
    assert [index(s) for s in out if s.payload] == [0]


def test_a_timeout_right_after_a_spurious_one_is_not_checked_again() -> None:
    # step 3b sets recover to SND.UNA: a timeout before anything more is acknowledged is one of the same data
    a, _, t = timed_out("reno", frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)
    a.segments_to_send(t + 0.1)
    a.on_segment(ack_seg(a, seq_of(ISS, 2)), t + 0.2)
    assert a.stats["frto_spurious"] == 1
    a.segments_to_send(t + 0.2)
    t2 = a.next_timer()
    a.on_timer(t2)
    assert a.congestion_control.frto_step == 0


@pytest.mark.parametrize("window,new", [(6000, [6]), (5000, None)])
def test_step_2b_sends_new_segments_only_within_the_peers_window(window: int, new) -> None:
    # the first ACK after the timeout leaves room for one new segment (6,000) or none (5,000: conventional)
    a, _, t = timed_out("reno", frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 1), window=window), t + 0.1)
    out = [index(s) for s in a.segments_to_send(t + 0.1)]
    if new is None:
        assert a.congestion_control.frto_step == 0 and out == [1, 2]
    else:
        assert a.congestion_control.frto_step == 3 and out == new


def test_step_2b_sends_the_last_byte_of_the_data_alone() -> None:
    a, _ = client("reno", iss=ISS, init_cwnd=6, frto=True)
    a.send(bytes(6001))
    assert len(a.segments_to_send(1.0)) == 6
    t = a.next_timer()
    a.on_timer(t)
    a.segments_to_send(t)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)
    out = a.segments_to_send(t + 0.1)
    assert [(index(s), len(s.payload)) for s in out] == [(6, 1)]


def test_a_first_ack_of_all_but_the_last_byte_sent_does_not_cover_recover() -> None:
    a, _, t = timed_out("reno", frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 6) - 1), t + 0.1)      # recover is the last byte sent: not covered
    assert a.congestion_control.frto_step == 3
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [6, 7]


def test_a_second_timeout_of_a_one_byte_segment_is_not_checked_again() -> None:
    # recover is the highest sequence number sent (not one past): with one byte out it equals SND.UNA
    a, _ = client("reno", iss=ISS, frto=True)
    a.send(b"x")
    assert len(a.segments_to_send(1.0)) == 1
    t = a.next_timer()
    a.on_timer(t)
    assert a.congestion_control.frto_step == 2
    assert [len(s.payload) for s in a.segments_to_send(t)] == [1]
    a.on_timer(a.next_timer())
    assert a.congestion_control.frto_step == 0


@pytest.mark.parametrize("variant", VARIANTS)
def test_without_frto_the_delayed_acks_after_a_timeout_make_it_go_back_n(variant: str) -> None:
    a, _, t = timed_out(variant, frto=False)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [1, 2]    # slow start from SND.UNA
    a.on_segment(ack_seg(a, seq_of(ISS, 2)), t + 0.2)
    assert (a.cwnd, a.ssthresh) == (3000, 3000) and a.stats["frto_spurious"] == 0
    assert a.stats["retransmissions"] == 3


# Step 3a.  Break caught: a duplicate ACK in step 3 taken as spurious, cwnd not set to 3 SMSS, or SND.NXT not
# back at SND.UNA (the lost segments never resent).
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_genuine_loss_after_a_timeout_is_not_called_spurious(variant: str) -> None:
    # the whole window was lost: the retransmission of segment 0 is acknowledged, the two new segments 6 and 7
    # arrive above the hole at 1 (each a duplicate ACK; SACK: reporting them)
    a, rec, t = timed_out(variant, frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [6, 7]
    sack = ((seq_of(ISS, 6), seq_of(ISS, 7)),) if variant == "sack" else ()
    a.on_segment(ack_seg(a, seq_of(ISS, 1), sack=sack), t + 0.2)
    assert a.stats["frto_spurious"] == 0 and a.congestion_control.frto_step == 0
    assert (a.cwnd, a.ssthresh) == (3000, 3000)                 # 3 SMSS, the timeout's ssthresh kept
    assert rec.timed("cwnd")[-1] == (t + 0.2, {"cwnd": 3000, "ssthresh": 3000})
    assert [index(s) for s in a.segments_to_send(t + 0.2)] == [1, 2, 3]  # retransmitting from SND.UNA
    sack = ((seq_of(ISS, 6), seq_of(ISS, 8)),) if variant == "sack" else ()
    a.on_segment(ack_seg(a, seq_of(ISS, 1), sack=sack), t + 0.21)
    a.on_segment(ack_seg(a, seq_of(ISS, 2), sack=sack), t + 0.3)        # later new ACKs decide nothing any more
    assert a.stats["frto_spurious"] == 0 and a.ssthresh == 3000


# Step 2a.  Break caught: a duplicate ACK as the first ACK (or an ACK covering recover) let into step 2b.
@pytest.mark.parametrize("variant", ["reno"])
def test_a_duplicate_ack_first_reverts_to_the_conventional_recovery(variant: str) -> None:
    a, _, t = timed_out(variant, frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 0)), t + 0.1)
    assert a.congestion_control.frto_step == 0
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.2)
    assert [index(s) for s in a.segments_to_send(t + 0.2)] == [1, 2]    # go-back-N, not new data
    a.on_segment(ack_seg(a, seq_of(ISS, 2)), t + 0.3)
    assert a.stats["frto_spurious"] == 0 and a.ssthresh == 3000


def test_an_ack_of_part_of_the_retransmitted_segment_first_reverts_to_the_conventional_recovery() -> None:
    a, _, t = timed_out("reno", frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 0) + 500), t + 0.1)     # not all of what step 1 retransmitted
    assert a.congestion_control.frto_step == 0
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [1]   # slow start goes on from the retransmission


def test_an_ack_covering_recover_first_reverts_to_the_conventional_recovery() -> None:
    a, _, t = timed_out("reno", frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 6)), t + 0.1)           # everything sent before the timeout
    assert a.congestion_control.frto_step == 0 and a.stats["frto_spurious"] == 0
    assert a.ssthresh == 3000


# Step 1.  Break caught: F-RTO entered again on a second timeout while the first one's recovery is on.
def test_a_second_timeout_of_the_same_window_is_not_detected_again() -> None:
    a, _, t = timed_out("reno", frto=True)
    t2 = a.next_timer()
    a.on_timer(t2)
    assert a.stats["losses_rto"] == 2
    assert a.congestion_control.frto_step == 0
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t2 + 0.1)
    assert [index(s) for s in a.segments_to_send(t2 + 0.1)] == [1, 2]


# Step 2b's last sentence.  Break caught: step 3 entered with nothing new to send.
def test_with_no_new_data_to_send_the_timeout_is_recovered_conventionally() -> None:
    a, _ = client("reno", iss=ISS, init_cwnd=6, frto=True)
    a.send(bytes(6000))
    a.segments_to_send(1.0)
    t = a.next_timer()
    a.on_timer(t)
    a.segments_to_send(t)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)
    assert a.congestion_control.frto_step == 0
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [1, 2]


# The scripted network: two delay spikes each hold everything a sends (0.3-0.6 s, 1.2-1.5 s) until their end (in
# order), so the timer expires once in each while the data and its ACKs are only late.  Break caught: any of the
# above, the counter set instead of counted; without the key each go-back-N resends the window and ssthresh is cut.
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("frto", [True, False])
def test_delay_spikes_timeouts_are_undone_end_to_end(variant: str, frto: bool) -> None:
    a, b, _, _ = pair(variant, frto=frto, init_cwnd=4)
    sim, data = bulk(a, b, 400_000)
    spikes = [(0.3, 0.6), (1.2, 1.5)]
    sim.delay_if(lambda src, seg, occ, now: next((e - now for s, e in spikes if src == "a" and s <= now < e), 0.0))
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.stats["losses_rto"] == 2
    if frto:
        assert a.stats["frto_spurious"] == 2 and a.stats["retransmissions"] == 2
        assert a.ssthresh == 1 << 30                            # never cut: both timeouts were undone
    else:
        assert a.stats["frto_spurious"] == 0 and a.stats["retransmissions"] > 20
        assert a.ssthresh <= 3000


# Step 3a before step 2b's output.  Break caught: the two new segments still sent after the dupack went back N.
def test_a_dupack_before_the_new_segments_leave_cancels_them() -> None:
    a, _, t = timed_out("reno", frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [1, 2, 3]
