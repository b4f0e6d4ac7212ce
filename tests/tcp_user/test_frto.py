"""tcp_user/congestion.py: F-RTO (RFC 5682 sec. 2.1, the basic algorithm, ``frto``) on both variants, event by
event on a hand-fed endpoint: a spurious timeout (the ACKs of the original transmissions arrive after it) is
detected and undone; a genuine loss after a timeout is not called spurious; the same scenes with the key off go
back N as before.
"""
from __future__ import annotations

import pytest

from tests.cores import ack_seg, bulk, client, pair, seq_of

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
    a, _, t = timed_out(variant, frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)          # the delayed ACK of segment 0's first transmission
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [6, 7]    # step 2b: two new segments, outside cwnd
    assert a.stats["frto_spurious"] == 0
    a.on_segment(ack_seg(a, seq_of(ISS, 2)), t + 0.2)          # segment 1's: it was never retransmitted
    assert a.stats["frto_spurious"] == 1
    assert (a.cwnd, a.ssthresh) == (6000, 1 << 30)             # the values before the timeout
    for k in range(3, 6):                                       # the rest of the delayed ACKs: new data only
        a.on_segment(ack_seg(a, seq_of(ISS, k)), t + 0.2 + k / 100)
    out = a.segments_to_send(t + 0.3)
    assert out and min(index(s) for s in out) == 8
    assert a.stats["retransmissions"] == 1                      # only the timeout's own


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
    a, _, t = timed_out(variant, frto=True)
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), t + 0.1)
    assert [index(s) for s in a.segments_to_send(t + 0.1)] == [6, 7]
    sack = ((seq_of(ISS, 6), seq_of(ISS, 7)),) if variant == "sack" else ()
    a.on_segment(ack_seg(a, seq_of(ISS, 1), sack=sack), t + 0.2)
    assert a.stats["frto_spurious"] == 0
    assert (a.cwnd, a.ssthresh) == (3000, 3000)                 # 3 SMSS, the timeout's ssthresh kept
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


# The scripted network: a delay spike holds everything a sends between 0.3 and 0.6 s until 0.6 s (in order), so
# the timer expires once while the data and its ACKs are only late.  Break caught: any of the above; without the
# key the go-back-N after the timeout resends the whole window (17 segments) and ssthresh is cut.
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("frto", [True, False])
def test_a_delay_spike_s_timeout_is_undone_end_to_end(variant: str, frto: bool) -> None:
    a, b, _, _ = pair(variant, frto=frto, init_cwnd=4)
    sim, data = bulk(a, b, 200_000)
    sim.delay_if(lambda src, seg, occ, now: 0.6 - now if src == "a" and 0.3 <= now < 0.6 else 0.0)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.stats["losses_rto"] == 1
    if frto:
        assert a.stats["frto_spurious"] == 1 and a.stats["retransmissions"] == 1
        assert a.ssthresh == 1 << 30                            # never cut: the spurious timeout was undone
    else:
        assert a.stats["frto_spurious"] == 0 and a.stats["retransmissions"] == 17
        assert a.ssthresh == 4500
