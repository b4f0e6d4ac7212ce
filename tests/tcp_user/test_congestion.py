"""tcp_user/congestion.py: Reno (RFC 5681) and SACK recovery (RFC 6675), one rule per test, event by
event on hand-fed endpoints and the scripted network, and the rules its mutation run found unpinned.
"""
from __future__ import annotations

import pytest
from tests.cores import ack_seg, client, seq_of, bulk, pair, Sim, PEER_WINDOW
from tcp_user.segment import FIN
from tcp_user.congestion import is_cwnd_limited, CONGESTION_CONTROLS, CongestionControl
import tcp_user.config
from tcp_user.config import TcpConfig
from tcp_user.connection import TcpConnection
from typing import Any


# ====================================================================================================
# Rules of tcp_user/congestion.py that the mutation run (bench/mutation.py, docs/MUTATION.md) found
# unpinned, each from RFC 5681 / RFC 6582 / RFC 6675 on a hand-fed endpoint.
#
# * every change of cwnd/ssthresh and every loss is logged when it happens (docs/LOGS.md: ``cwnd``,
#   ``loss``, ``rtx``), at the dupack, the new ACK or the timeout that made it;
# * ssthresh is a whole number of bytes: max(FlightSize / 2, 2 * SMSS) (RFC 5681 eq. (4)), also at a
#   timeout, where it may rise again (it is computed from FlightSize, not from the old ssthresh);
# * a timeout of a segment that already timed out holds ssthresh (RFC 5681 sec. 3.1, implementation note);
# * the duplicate-ACK count starts again at 0 after a timeout (RFC 5681 sec. 3.2: three dupacks);
# * Reno's optional guard (RFC 6582 sec. 4, ``reno_rto_guard``) ignores the dupacks of data sent before
#   the timeout only: off, they count; once SND.UNA reaches the timeout's SND.MAX, they count again;
# * after a timeout with SACK, SACKed data is not in flight (RFC 6675 sec. 5.1).

def six_out(variant: str, nbytes: int = 20_000, **cfg):
    a, rec = client(variant, iss=ISS, init_cwnd=6, **cfg)
    a.send(bytes(nbytes))
    out = a.segments_to_send(1.0)
    assert [s.seq for s in out] == [seq_of(ISS, i) for i in range(6)]
    return a, rec


def timeout(a) -> float:
    deadline = a.next_timer()
    assert deadline is not None
    a.on_timer(deadline)
    return deadline


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_loss_and_window_events_are_logged_when_they_happen(variant: str) -> None:
    a, rec = six_out(variant)
    three_dupacks(a, variant, 1.5)
    assert a.in_recovery
    assert [t for t, f in rec.timed("loss")] == [1.5]
    assert rec.timed("cwnd")[-1][0] == 1.5
    out = a.segments_to_send(1.5)
    assert out[0].seq == seq_of(ISS, 0)
    assert rec.timed("rtx") == [(1.5, {"seq": seq_of(ISS, 0), "len": 1000})]
    if variant == "reno":                            # RFC 5681 sec. 3.2 step 4: inflate, logged
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.6)
        assert rec.timed("cwnd")[-1] == (1.6, {"cwnd": 7000, "ssthresh": 3000})
        a.on_segment(ack_seg(a, seq_of(ISS, 6)), 2.0)    # everything: recovery ends, cwnd deflates
        assert not a.in_recovery
        assert rec.timed("cwnd")[-1] == (2.0, {"cwnd": 3000, "ssthresh": 3000})
    b, brec = six_out(variant)
    t = timeout(b)
    assert brec.timed("loss") == [(t, {"kind": "rto", "seq": seq_of(ISS, 0), "rto": b.rto})]   # the timer it armed
    assert brec.timed("cwnd")[-1] == (t, {"cwnd": 1000, "ssthresh": 3000})


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_ssthresh_is_a_whole_number_of_bytes_at_a_fast_retransmit_and_a_timeout(variant: str) -> None:
    # 6,001 bytes in flight (six segments and one byte): FlightSize / 2 = 3000 bytes, not 3000.5
    a, _ = client(variant, iss=ISS, init_cwnd=10)
    a.send(bytes(6001))
    assert len(a.segments_to_send(1.0)) == 7 and a.flight_size == 6001
    three_dupacks(a, variant, 1.5, sent=6001)
    assert a.ssthresh == 3000 and type(a.ssthresh) is int
    b, _ = client(variant, iss=ISS, init_cwnd=10)
    b.send(bytes(6001))
    b.segments_to_send(1.0)
    timeout(b)
    assert (b.cwnd, b.ssthresh) == (1000, 3000) and type(b.ssthresh) is int


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_a_timeout_takes_ssthresh_from_the_flight_even_above_the_old_ssthresh(variant: str) -> None:
    # a first timeout of one segment: ssthresh 2000; then the window opens to 8 segments in
    # congestion avoidance and 8 are outstanding at the next timeout: ssthresh = 8000 / 2 = 4000
    a, _ = client(variant, iss=ISS, init_cwnd=1)
    a.send(bytes(200_000))
    assert len(a.segments_to_send(1.0)) == 1
    timeout(a)
    assert a.ssthresh == 2000
    t = 10.0
    for _ in range(200):
        out = [s for s in a.segments_to_send(t) if s.payload]
        for s in out:
            t += 0.01
            a.on_segment(ack_seg(a, s.seq + len(s.payload)), t)
        if a.cwnd >= 8000:
            break
    assert a.cwnd >= 8000 and not a.in_recovery
    a.segments_to_send(t)
    flight = a.flight_size
    assert flight >= 8000
    timeout(a)
    assert a.ssthresh == flight // 2


def test_a_second_timeout_of_the_same_segment_holds_ssthresh() -> None:
    # RFC 5681 sec. 3.1: "the value of ssthresh is held constant" when a segment already
    # retransmitted by the timer times out again.  Reno enters recovery with 6 segments out
    # (ssthresh 3000); cwnd inflation sends 3 new segments (9 out); a timeout in recovery keeps
    # the lower 3000 (min of it and 9000 / 2); the second timeout of the same segment holds it.
    a, rec = six_out("reno")
    three_dupacks(a, "reno", 1.5)
    a.segments_to_send(1.5)
    for k in range(4, 7):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 100)
        a.segments_to_send(1.5 + k / 100)
    assert a.flight_size == 9000 and a.ssthresh == 3000
    timeout(a)
    assert (a.cwnd, a.ssthresh) == (1000, 3000)
    timeout(a)
    assert (a.cwnd, a.ssthresh) == (1000, 3000) and a.stats["losses_rto"] == 2


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_after_a_timeout_one_segment_goes_out(variant: str) -> None:
    a, _ = six_out(variant)
    timeout(a)
    out = a.segments_to_send(5.0)
    assert [(s.seq, len(s.payload)) for s in out] == [(seq_of(ISS, 0), 1000)]


def test_without_the_guard_dupacks_after_a_timeout_count_from_zero() -> None:
    a, _ = six_out("reno")
    timeout(a)
    a.segments_to_send(5.0)
    for k in (1, 2):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 5.0 + k / 10)
        assert not a.in_recovery
    a.on_segment(ack_seg(a, seq_of(ISS, 0)), 5.3)
    assert a.in_recovery and a.stats["losses_dupack"] == 1


def test_the_reno_guard_ends_where_snd_una_reaches_the_timeouts_snd_max() -> None:
    # RFC 6582 sec. 4: dupacks are ignored while SND.UNA is below the highest sequence number sent
    # before the timeout; once everything sent before it is acknowledged, three dupacks are a loss
    a, _ = six_out("reno", reno_rto_guard=True)
    timeout(a)
    t = 5.0
    a.segments_to_send(t)
    for _ in range(3):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), t)      # dupacks of data sent before the timeout
    assert not a.in_recovery
    a.on_segment(ack_seg(a, seq_of(ISS, 6)), 5.5)        # all that was sent before the timeout
    t = 5.5
    out = [s for s in a.segments_to_send(t) if s.payload]
    assert out and out[0].seq >= seq_of(ISS, 6)          # new data, sent after the timeout
    for k in range(3):
        a.on_segment(ack_seg(a, out[0].seq), t + 0.1 + k / 100)
    assert a.in_recovery and a.stats["losses_dupack"] == 1


def test_after_a_timeout_sacked_data_is_not_in_flight() -> None:
    # RFC 6675 sec. 5.1: segments 1 and 2 SACKed (two dupacks, no recovery), then a timeout:
    # the ACK of the retransmitted segment 0 opens cwnd to 2 segments, and segments 1-2, SACKed,
    # do not count as outstanding: segments 3 and 4 go out
    a, _ = six_out("sack")
    base = seq_of(ISS, 0)
    for k in (1, 2):
        a.on_segment(ack_seg(a, base, sack=((seq_of(ISS, 1), seq_of(ISS, 1 + k)),)), 1.5)
    assert not a.in_recovery
    timeout(a)
    assert [s.seq for s in a.segments_to_send(5.0) if s.payload] == [base]
    a.on_segment(ack_seg(a, seq_of(ISS, 1), sack=((seq_of(ISS, 1), seq_of(ISS, 3)),)), 5.5)
    assert a.cwnd == 2000
    assert [s.seq for s in a.segments_to_send(5.5) if s.payload] == [seq_of(ISS, 3), seq_of(ISS, 4)]


# ---------------------------------------------------------------- RFC 6675 loss recovery (SACK)
def sacked(*ranges: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """SACK blocks of the segment index ranges [a, b)."""
    return tuple((seq_of(ISS, a), seq_of(ISS, b)) for a, b in ranges)


def sack_recovery(window: int, nbytes: int, reports: list[tuple[tuple[int, int], ...]]):
    """Six segments out, segment 0 lost; each report a duplicate ACK of segment 0 with those SACK
    blocks.  Returns the endpoint and, per report, the (offset, length) of what it sent."""
    a, _ = client("sack", iss=ISS, init_cwnd=6, window=window)
    a.send(bytes(nbytes))
    assert len(a.segments_to_send(1.0)) == 6
    sent = []
    for i, blocks in enumerate(reports):
        t = 1.5 + i / 10
        a.on_segment(ack_seg(a, seq_of(ISS, 0), window=window, sack=sacked(*blocks)), t)
        sent.append([(s.seq - ISS - 1, len(s.payload)) for s in a.segments_to_send(t)])
    return a, sent


UP_TO = [((1, 2),), ((1, 3),), ((1, 4),), ((1, 5),), ((1, 6),)]   # segments 1..5 arrive in turn


@pytest.mark.parametrize("window, new", [(7000, [(6000, 1000)]), (6500, [])])
def test_new_data_in_sack_recovery_stays_within_the_peers_window(window: int, new: list) -> None:
    # RFC 6675 NextSeg rule (2): new data "if the receiver's advertised window allows".  Segments 4
    # and 5 leave the pipe: room for one segment in cwnd (3000).  A window of 7000 from SND.UNA holds
    # segment 6; one of 6500 leaves 500 bytes, less than half the largest window the peer offered,
    # so nothing goes (RFC 1122 sec. 4.2.3.4, sender SWS avoidance)
    a, sent = sack_recovery(window, 20_000, UP_TO)
    assert a.in_recovery
    assert sent == [[], [], [(0, 1000)], new, []]


def test_the_last_short_segment_of_the_data_goes_out_in_sack_recovery() -> None:
    a, sent = sack_recovery(64_000, 6300, UP_TO)
    assert sent == [[], [], [(0, 1000)], [(6000, 300)], []]
    assert a.flight_size == 6300                   # nothing counted as sent beyond the data


def test_a_fin_queued_during_sack_recovery_goes_out_alone_when_the_pipe_allows() -> None:
    a, sent = sack_recovery(64_000, 6000, UP_TO[:3])
    assert sent[-1] == [(0, 1000)]
    a.close(1.8)
    assert a.segments_to_send(1.8) == []             # the pipe is full
    a.on_segment(ack_seg(a, seq_of(ISS, 0), sack=sacked((1, 5))), 1.9)
    out = a.segments_to_send(1.9)
    assert [(s.seq, len(s.payload), s.flags & FIN) for s in out] == [(seq_of(ISS, 6), 0, FIN)]
    assert a.flight_size == 6001


def test_rule_3_resends_an_unsacked_segment_not_yet_lost_when_nothing_new_can_go() -> None:
    # RFC 6675 NextSeg rule (3): no lost segment above HighRxt, no new data (all 6000 bytes sent):
    # one segment from the un-SACKed, not yet lost, octets above HighRxt, segment 4
    a, sent = sack_recovery(64_000, 6000, [((1, 2),), ((1, 3),), ((1, 4),), ((1, 4), (5, 6))])
    assert sent == [[], [], [(0, 1000)], [(4000, 1000)]]


def test_three_dupacks_without_sack_blocks_start_sack_recovery() -> None:
    # RFC 6675 sec. 5 step (2): DupAcks >= DupThresh enters recovery even when no SACK block says
    # which data arrived (sec. 2: without SACK blocks a duplicate ACK is RFC 5681's)
    a, _ = six_out("sack")
    for k in range(3):
        assert not a.in_recovery
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 10)
    assert a.in_recovery and a.stats["losses_dupack"] == 1


def test_without_sack_blocks_a_window_update_is_no_duplicate_ack_for_sack_either() -> None:
    a, _ = six_out("sack")
    a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5)
    a.on_segment(ack_seg(a, seq_of(ISS, 0), window=30_000), 1.6)        # a window update
    assert a.stats["dupacks_received"] == 1


def test_a_sack_of_one_new_byte_is_a_duplicate_ack() -> None:
    # RFC 6675 sec. 2: an ACK whose SACK blocks report any new data is a duplicate ACK
    a, _ = client("sack", iss=ISS, init_cwnd=6)
    a.send(bytes(5001))
    out = a.segments_to_send(1.0)
    assert [len(s.payload) for s in out] == [1000] * 5 + [1]
    last = out[-1].seq
    a.on_segment(ack_seg(a, seq_of(ISS, 0), sack=((last, last + 1),)), 1.5)
    assert a.stats["dupacks_received"] == 1


def test_sack_blocks_are_clipped_at_the_ack_and_bogus_ones_skipped_not_the_rest() -> None:
    # RFC 6675 sec. 5 Update(): only SACK information above the cumulative ACK counts; a block
    # beyond HighData (data never sent) is ignored, and the blocks after it in the option are not
    a, _ = six_out("sack")
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), 1.2)                       # segment 0 acknowledged
    blocks = ((seq_of(ISS, 7), seq_of(ISS, 9)),                         # never sent: ignored
              (seq_of(ISS, 1), seq_of(ISS, 1)),                         # empty: ignored
              (seq_of(ISS, 0), seq_of(ISS, 3)))                         # from below the ACK: clipped
    a.on_segment(ack_seg(a, seq_of(ISS, 1), sack=blocks), 1.5)
    assert a.sacked_blocks == [(seq_of(ISS, 1), seq_of(ISS, 3))]
    assert a.stats["dupacks_received"] == 1


def test_sack_recovery_starts_again_once_everything_sent_before_a_timeout_is_acknowledged() -> None:
    # RFC 6675 sec. 5.1: no new recovery until the data outstanding at the timeout (RecoveryPoint)
    # is cumulatively acknowledged; from then on, three duplicate ACKs are a loss again
    a, _ = six_out("sack")
    timeout(a)
    a.segments_to_send(5.0)
    a.on_segment(ack_seg(a, seq_of(ISS, 6)), 5.5)
    out = [s for s in a.segments_to_send(5.5) if s.payload]
    assert out and out[0].seq == seq_of(ISS, 6)
    for k in range(3):
        a.on_segment(ack_seg(a, out[0].seq), 5.6 + k / 100)
    assert a.in_recovery and a.stats["losses_dupack"] == 1


def test_sack_recovery_sends_as_many_new_segments_as_the_pipe_leaves_room_for() -> None:
    # RFC 6675 sec. 5 step (C): "while cwnd - pipe >= 1 SMSS" -- one ACK SACKing segments 4 and 5
    # at once empties two segments from the pipe: segments 6 and 7 go out together
    a, sent = sack_recovery(64_000, 20_000, [((1, 2),), ((1, 3),), ((1, 4),), ((1, 6),)])
    assert sent == [[], [], [(0, 1000)], [(6000, 1000), (7000, 1000)]]


def test_a_lost_one_byte_segment_is_resent_by_nextseg_rule_1_with_its_time() -> None:
    # segments 0 (lost), 1, 2 (one byte, lost), 3, 4, 5: once more than 2 SMSS are SACKed above the
    # byte it is lost (RFC 6675 IsLost) and NextSeg rule (1) resends it, logged when it is sent
    b, rec = client("sack", iss=ISS, init_cwnd=10)
    for n in (1000, 1000, 1, 1000, 1000, 1000):
        b.send(bytes(n))
        b.segments_to_send(1.0)
    f = ISS + 1
    reports = [((f + 1000, f + 2000),), ((f + 1000, f + 2000), (f + 2001, f + 3001)),
               ((f + 1000, f + 2000), (f + 2001, f + 4001)), ((f + 1000, f + 2000), (f + 2001, f + 5001))]
    sent = []
    for k, blocks in enumerate(reports):
        b.on_segment(ack_seg(b, f, sack=blocks), 1.5 + k / 10)
        sent.append([(s.seq - f, len(s.payload)) for s in b.segments_to_send(1.5 + k / 10)])
    assert sent == [[], [], [(0, 1000)], [(2000, 1)]]
    assert rec.timed("rtx")[-1] == (1.8, {"seq": f + 2000, "len": 1})


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_limited_transmit_sends_one_new_segment_for_each_of_the_first_two_dupacks(variant: str) -> None:
    # RFC 3042 sec. 2 (RFC 5681 sec. 3.2 step 1): the first and second duplicate ACKs each allow one
    # new segment beyond cwnd; cwnd itself is unchanged
    a, _ = six_out(variant, limited_transmit=True)
    sent = []
    for k in (1, 2):
        sack = sacked((1, 1 + k)) if variant == "sack" else ()
        a.on_segment(ack_seg(a, seq_of(ISS, 0), sack=sack), 1.5 + k / 10)
        sent.append([(s.seq, len(s.payload)) for s in a.segments_to_send(1.5 + k / 10)])
    assert sent == [[(seq_of(ISS, 6), 1000)], [(seq_of(ISS, 7), 1000)]]
    assert a.cwnd == 6000 and not a.in_recovery


def test_congestion_avoidance_adds_one_byte_when_smss_squared_over_cwnd_rounds_to_zero() -> None:
    # RFC 5681 sec. 3.1, eq. (3): cwnd += SMSS * SMSS / cwnd, and "if the above formula yields 0,
    # the result SHOULD be rounded up to 1 byte".  SMSS 10: above cwnd 100 every ACK adds one byte.
    a, rec = client("reno", iss=ISS, init_cwnd=30, mss=10)
    a.send(bytes(100_000))
    a.segments_to_send(1.0)
    t0 = t = timeout(a)
    assert (a.cwnd, a.ssthresh) == (10, 150)                  # then slow start up to 150
    for _ in range(30):                                          # 30 windows of ACKs, one each
        for s in [s for s in a.segments_to_send(t) if s.payload]:
            t += 0.01
            a.on_segment(ack_seg(a, s.seq + len(s.payload)), t)
    grown = [f["cwnd"] for at, f in rec.timed("cwnd") if at > t0 and f["cwnd"] >= 150]
    assert len(grown) >= 20 and all(b - a_ == 1 for a_, b in zip(grown, grown[1:]))


def test_limited_transmit_sends_at_most_two_segments_whatever_the_threshold() -> None:
    # RFC 3042 sec. 2: only the first two duplicate ACKs send new data, even when DupThresh is 5
    a, _ = six_out("reno", limited_transmit=True, dupack_threshold=5)
    sent = []
    for k in range(1, 5):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 10)
        sent.append([s.seq for s in a.segments_to_send(1.5 + k / 10)])
    assert sent == [[seq_of(ISS, 6)], [seq_of(ISS, 7)], [], []] and not a.in_recovery


def test_once_recoverypoint_is_acknowledged_sacked_data_is_in_flight_again() -> None:
    # RFC 6675 sec. 5.1's rule (SACKed data is not in flight) holds from a timeout until RecoveryPoint
    # is acknowledged; after that, outside loss recovery, RFC 5681's FlightSize counts SACKed data
    a, _ = six_out("sack")
    timeout(a)
    a.segments_to_send(5.0)
    a.on_segment(ack_seg(a, seq_of(ISS, 6)), 5.5)                       # exactly RecoveryPoint
    assert [s.seq for s in a.segments_to_send(5.5)] == [seq_of(ISS, 6), seq_of(ISS, 7)]
    a.on_segment(ack_seg(a, seq_of(ISS, 6), sack=sacked((7, 8))), 5.6)   # one dupack
    assert not a.in_recovery and a.segments_to_send(5.6) == []          # cwnd 2000, 2000 in flight


@pytest.mark.parametrize("window, seg, sent", [
    (700, 50, [(200, 500)]),      # 500 bytes of room, 2 x 500 >= 700: a 500-byte segment
    (696, 87, [(348, 348)]),      # 348 of room, 2 x 348 == 696: exactly half, still sent
    (700, 100, []),               # 300 of room, 2 x 300 < 700: wait for more
])
def test_sack_recovery_sends_a_partial_segment_only_into_half_the_largest_window(window, seg, sent) -> None:
    # RFC 1122 sec. 4.2.3.4 (sender SWS avoidance) in RFC 6675's NextSeg rule (2): less than a full
    # segment of new data goes out only if the room in the peer's window is at least half the largest
    # window it offered.  Four small segments out, the first lost, the other three SACKed; then the
    # application writes 2000 bytes.
    a, _ = client("sack", iss=ISS, init_cwnd=10, window=window)
    for _ in range(4):
        a.send(bytes(seg))
        assert len(a.segments_to_send(1.0)) == 1
    f = ISS + 1
    for k in (1, 2, 3):
        a.on_segment(ack_seg(a, f, window=window, sack=((f + seg, f + seg * (1 + k)),)), 1.5 + k / 10)
        a.segments_to_send(1.5 + k / 10)
    assert a.in_recovery
    a.send(bytes(2000))
    assert [(s.seq - f, len(s.payload)) for s in a.segments_to_send(2.0)] == sent


def test_a_one_byte_tail_waits_for_the_peers_window_in_sack_recovery() -> None:
    # NextSeg rule (2) needs the receiver's window: six segments fill a window of 6000, so the
    # application's last byte waits, even when the pipe has room
    a, sent = sack_recovery(6000, 6001, UP_TO)
    assert sent == [[], [], [(0, 1000)], [], []] and a.flight_size == 6000


def test_the_fast_retransmission_in_sack_recovery_restarts_the_retransmission_timer() -> None:
    # the timer restarts with the fast retransmission (as 4.4BSD and Linux do), so the timeout
    # comes one RTO after it, not after the first transmission
    a, _ = client("sack", iss=ISS, init_cwnd=6)
    a.send(bytes(6000))
    a.segments_to_send(1.0)
    three_dupacks(a, "sack", 1.5)
    assert [s.seq for s in a.segments_to_send(1.5)][:1] == [seq_of(ISS, 0)]
    assert a.next_timer() == pytest.approx(1.5 + a.rto)


def test_a_retransmission_by_nextseg_rule_1_fills_the_pipe_like_new_data() -> None:
    # RFC 6675 sec. 5 step (C.4): "PIPE += SMSS" for every segment sent, a retransmission too.
    # Eight out; 0 and 2 lost; once 3-5 are SACKed, 2 is lost (IsLost) and resent: with 0's
    # retransmission and 6-7 in flight the pipe is cwnd (4000), so nothing new goes with it
    a, _ = client("sack", iss=ISS, init_cwnd=8)
    a.send(bytes(30_000))
    assert len(a.segments_to_send(1.0)) == 8
    sent = []
    for i, blocks in enumerate([((1, 2),), ((1, 2), (3, 4)), ((1, 2), (3, 5)), ((1, 2), (3, 6))]):
        a.on_segment(ack_seg(a, seq_of(ISS, 0), sack=sacked(*blocks)), 1.5 + i / 10)
        sent.append([(s.seq - ISS - 1, len(s.payload)) for s in a.segments_to_send(1.5 + i / 10)])
    assert a.cwnd == 4000
    assert sent == [[], [], [(0, 1000)], [(2000, 1000)]]


# ====================================================================================================
# tcp_user/congestion.py: RFC 6675 recovery entered without any SACK block (issue 30, mutation run).
#
# RFC 6675 sec. 5 step (2) enters loss recovery on DupThresh duplicate ACKs even when none carries a SACK
# block; then (step 4.3) the first unacknowledged segment is resent at once, and SetPipe (sec. 4) counts
# every octet from SND.UNA to HighData once, and once more what lies below HighRxt: with nothing SACKed the
# scoreboard's top is SND.UNA itself, so no more may go until pipe falls below cwnd.


def test_sack_recovery_without_sack_blocks_resends_the_first_segment_and_counts_the_flight_as_pipe():
    a, _ = six_out("sack")
    for k in range(3):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 10)
    assert a.in_recovery and a.cwnd == a.ssthresh == 3000
    out = a.segments_to_send(1.8)
    assert [(s.seq, len(s.payload)) for s in out] == [(seq_of(ISS, 0), 1000)]
    # pipe: 6000 octets in flight + 1000 resent = 7000 >= cwnd 3000: nothing more
    assert a.segments_to_send(1.9) == []


# ====================================================================================================
# cwnd grows only while the sender is cwnd-limited (RFC 7661 sec. 4.3; issue 28, item 7).
#
# A bulk transfer in virtual time (tests/test_tcp_harness.Sim, no loss) once with the receiver's
# window as the limit and once with cwnd as the limit, in slow start and in congestion avoidance.
# The receive-window-limited sender's cwnd must stop growing about one segment above the window it
# can use (before the rule it grew with every ACK, to 1.6 MB in a loss-free medium run); the
# cwnd-limited sender's must keep growing, so that a rule that froze cwnd always fails here too.


MSS = 1000


NBYTES = 400_000


def cwnd_trace(rcv_buffer: int, init_ssthresh: int) -> list[int]:
    """The sender's cwnd values over a loss-free bulk transfer with this receive buffer."""
    a, b, rec, _ = pair("reno", mss=MSS, init_cwnd=2, rcv_buffer=rcv_buffer,
                        init_ssthresh=init_ssthresh)
    sim, data = bulk(a, b, NBYTES, delay=0.01)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.stats["losses_dupack"] == 0 and a.stats["losses_rto"] == 0
    return [f["cwnd"] for f in rec.of("cwnd")]


@pytest.mark.parametrize("phase, init_ssthresh", [("slow start", 1 << 30),
                                                  ("congestion avoidance", 4 * MSS)])
def test_a_receive_window_limited_sender_stops_growing_cwnd(phase: str, init_ssthresh: int) -> None:
    rwnd = 8 * MSS
    trace = cwnd_trace(rwnd, init_ssthresh)
    # FlightSize never exceeds rwnd, so cwnd grows while cwnd < rwnd + MSS and then stops; the
    # last step adds at most one SMSS.  Without the rule: ~400 ACKs of growth (slow start: to
    # about 400 kB; congestion avoidance: past 25 segments).
    assert max(trace) <= rwnd + 2 * MSS, f"{phase}: cwnd grew to {max(trace)} with rwnd {rwnd}"
    assert max(trace) >= rwnd, f"{phase}: cwnd {max(trace)} never reached the usable window"


@pytest.mark.parametrize("phase, init_ssthresh, grown", [("slow start", 1 << 30, 60 * MSS),
                                                         ("congestion avoidance", 4 * MSS, 15 * MSS)])
def test_a_cwnd_limited_sender_still_grows_cwnd(phase: str, init_ssthresh: int, grown: int) -> None:
    # the default receive buffer (64 kB) is not the limit until cwnd reaches it
    trace = cwnd_trace(64_000, init_ssthresh)
    assert max(trace) >= grown, f"{phase}: cwnd stopped at {max(trace)}"
    assert trace == sorted(trace), "no loss: cwnd never shrinks"


def test_the_rule_itself() -> None:
    # flight within one SMSS of cwnd: limited; one full segment of room: not limited
    assert is_cwnd_limited(flight_size=10_000, cwnd=10_000, mss=MSS)
    assert is_cwnd_limited(flight_size=9_001, cwnd=10_000, mss=MSS)
    assert not is_cwnd_limited(flight_size=9_000, cwnd=10_000, mss=MSS)
    assert not is_cwnd_limited(flight_size=0, cwnd=2 * MSS, mss=MSS)


# ====================================================================================================
# The readable parts of tcp_user: the state table, the congestion-control registry, SNACK-TCP.


# ---------------------------------------------------------------- congestion-control registry
def test_every_variant_name_maps_to_a_congestion_control_class() -> None:
    assert tcp_user.config.VARIANTS == tuple(CONGESTION_CONTROLS)
    assert set(tcp_user.config.VARIANTS) >= {"reno", "sack"}
    for name in tcp_user.config.VARIANTS:
        cls = CONGESTION_CONTROLS[name]
        assert issubclass(cls, CongestionControl)
        conn = TcpConnection(TcpConfig(variant=name))
        assert type(conn.congestion_control) is cls


def test_only_sack_keeps_a_scoreboard() -> None:
    assert TcpConnection(TcpConfig(variant="reno")).congestion_control.scoreboard is None
    assert TcpConnection(TcpConfig(variant="sack")).congestion_control.scoreboard is not None


class FixedWindow(CongestionControl):
    """A toy variant: cwnd never moves; losses are left to the retransmission timer."""

    def is_dupack(self, seg, prev_wnd, new_sacked) -> bool:
        return False

    def on_dupack(self, now: float) -> None:
        raise AssertionError("is_dupack() said no")

    def grow(self, now: float, newly: int) -> None:
        pass

    def on_rto(self, now: float) -> None:
        self.recovery_point = self.conn._snd_max


def test_a_registered_toy_variant_is_accepted_and_transfers(monkeypatch) -> None:
    with pytest.raises(ValueError, match="unknown TCP variant 'toy'"):
        TcpConfig(variant="toy")
    monkeypatch.setitem(CONGESTION_CONTROLS, "toy", FixedWindow)
    assert "toy" in tcp_user.config.VARIANTS
    a, b, ra, _ = pair("toy", init_cwnd=4)
    assert isinstance(a.congestion_control, FixedWindow)
    sim, data = bulk(a, b, 30_000)
    sim.drop("a", seq_of(1000, 5), 1)
    sim.drop("a", seq_of(1000, 17), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert {f["cwnd"] for f in ra.of("cwnd")} == {4000}
    assert [f["kind"] for f in ra.of("loss")] == ["rto", "rto"]
    assert a.stats["dupacks_received"] == 0


# ====================================================================================================
# Reno congestion control against RFC 5681, event by event.
#
# Scenario (mss 1000, IW 2 segments, one-way delay 62.5 ms so every time is exact in binary):
# 80 segments; the first copy of segment 19 is lost (-> fast retransmit), later the first
# copies of the last ten segments 70..79 and the second copy of segment 70 are lost (no
# segment follows them, so no dupacks: -> RTO, and the retransmission is lost again ->
# a second, backed-off RTO).  After everything is acknowledged 5 more segments are sent,
# which yields a fresh RTT sample that clears the backoff.


BIG = 1 << 30


ISS = 1000


def run_scenario() -> tuple[TcpConnection, Sim, list[tuple[float, str, dict[str, Any], float]], bytes]:
    a, b, _, _ = pair("reno", iss_a=ISS, time_wait=0.1)
    log: list[tuple[float, str, dict[str, Any], float]] = []   # (t, ev, fields, RTO at the time)

    def emit(now: float, ev: str, **fields: Any) -> None:
        log.append((now, ev, fields, a.rto))
    a._emit = emit
    sim = Sim(a, b, delay=0.0625)
    data = bytes(i % 251 for i in range(85_000))
    a.connect(0.0)
    a.send(data[:80_000])
    sim.drop("a", seq_of(ISS, 19), 1)
    for i in range(70, 80):
        sim.drop("a", seq_of(ISS, i), 1)
    sim.drop("a", seq_of(ISS, 70), 2)
    phase: dict[str, float] = {}

    def more(now: float, dst: str, seg: object) -> None:
        if dst == "a" and a.all_acked and "rto_before" not in phase and a.bytes_acked == 80_000:
            phase["rto_before"] = a.rto
            a.send(data[80_000:])
            a.close(now)
        if dst == "b" and b.state == "CLOSE_WAIT":
            b.close(now)
    sim.after_deliver.append(more)
    sim.run()
    assert bytes(sim.received["b"]) == data
    log.append((-1.0, "phase", phase, 0.0))
    return a, sim, log, data


@pytest.fixture(scope="module")
def scenario() -> tuple[TcpConnection, Sim, list[tuple[float, str, dict[str, Any], float]], bytes]:
    return run_scenario()


def cwnd_events(log: list) -> list[tuple[float, int, int]]:
    return [(t, f["cwnd"], f["ssthresh"]) for t, ev, f, _ in log if ev == "cwnd"]


def test_slow_start_doubles_per_rtt(scenario) -> None:  # type: ignore[no-untyped-def]
    _, _, log, _ = scenario
    ev = cwnd_events(log)
    # RFC 5681 3.1 eq. (2): cwnd += min(N, SMSS) per ACK -> doubling per RTT
    per_rtt: dict[float, list[int]] = {}
    for t, c, s in ev[:20]:
        assert s == BIG
        per_rtt.setdefault(t, []).append(c)
    assert per_rtt == {
        0.125: [2000],                                   # ESTABLISHED: IW = 2 * SMSS
        0.25: [3000, 4000],
        0.375: [5000, 6000, 7000, 8000],
        0.5: list(range(9000, 16001, 1000)),
        0.625: list(range(17000, 21001, 1000)),          # ACKs of 14..18, then dupacks
    }


def test_fast_retransmit_and_recovery_values(scenario) -> None:  # type: ignore[no-untyped-def]
    a, sim, log, _ = scenario
    ev = [(c, s) for _, c, s in cwnd_events(log)]
    expected = [(c, BIG) for c in range(2000, 21001, 1000)]
    # 3rd dupack: FlightSize = segments 19..39 = 21000 -> ssthresh = 10500 (eq. 4),
    # cwnd = ssthresh + 3 * SMSS; +1 SMSS for each further dupack (7 in this RTT,
    # 10 in the next: the originals of 30..39), then the ACK of new data deflates.
    expected += [(13500, 10500)]
    expected += [(c, 10500) for c in range(14500, 30501, 1000)]
    expected += [(10500, 10500)]
    assert ev[: len(expected)] == expected
    losses = [(t, f) for t, e, f, _ in log if e == "loss"]
    assert losses[0] == (0.625, {"kind": "dupack", "seq": seq_of(ISS, 19)})
    # the loss event precedes the cwnd change it causes, and the retransmission follows
    names = [(e, f.get("seq")) for t, e, f, _ in log if t == 0.625 and e in ("loss", "rtx")]
    assert names == [("loss", seq_of(ISS, 19)), ("rtx", seq_of(ISS, 19))]
    # exactly one retransmission of segment 19 (a partial ACK also ends plain Reno recovery)
    assert [s.seq for _, s in sim.data_sent("a")].count(seq_of(ISS, 19)) == 2


def test_congestion_avoidance_after_recovery(scenario) -> None:  # type: ignore[no-untyped-def]
    _, _, log, _ = scenario
    ev = [(c, s) for _, c, s in cwnd_events(log)]
    start = ev.index((10500, 10500))
    rto_at = ev.index((1000, 5000))
    ca = ev[start:rto_at]
    # RFC 5681 3.1 eq. (3): cwnd += SMSS*SMSS/cwnd per ACK (integer, at least 1 byte)
    assert [c for c, _ in ca[:4]] == [10500, 10595, 10689, 10782]
    for (c0, s0), (c1, s1) in zip(ca, ca[1:]):
        assert s0 == s1 == 10500
        assert c1 == c0 + max(1, 1000 * 1000 // c0)


def test_rto_backoff_and_slow_start_restart(scenario) -> None:  # type: ignore[no-untyped-def]
    a, sim, log, _ = scenario
    losses = [(t, f, rto) for t, e, f, rto in log if e == "loss"]
    assert [f for _, f, _ in losses] == [
        {"kind": "dupack", "seq": seq_of(ISS, 19)},
        {"kind": "rto", "seq": seq_of(ISS, 70), "rto": pytest.approx(0.4)},     # the backed-off timer armed
        {"kind": "rto", "seq": seq_of(ISS, 70), "rto": pytest.approx(0.8)},
    ]
    (t1, _, rto1), (t2, _, rto2) = losses[1], losses[2]
    assert rto1 == pytest.approx(0.2)                  # RTT 125 ms, RTTVAR ~ 0: min_rto
    assert rto2 == pytest.approx(2 * rto1)             # RFC 6298 5.5: doubled
    assert t2 == pytest.approx(t1 + 2 * rto1)          # ... and the timer ran with it
    ev = [(t, c, s) for t, c, s in cwnd_events(log) if t >= t1]
    # first RTO: FlightSize = 10 segments -> ssthresh 5000, cwnd = LW = 1 SMSS.
    # second RTO of the same segment: ssthresh held (RFC 5681 3.1), cwnd already 1 SMSS,
    # so no cwnd event at t2.  Then slow start to ssthresh and congestion avoidance.
    assert [(c, s) for _, c, s in ev[:8]] == [
        (1000, 5000), (2000, 5000), (3000, 5000), (4000, 5000), (5000, 5000),
        (5200, 5000), (5392, 5000), (5577, 5000)]
    assert ev[0][0] == t1 and all(t != t2 for t, _, _ in ev)
    assert a.stats["losses_rto"] == 2 and a.stats["losses_dupack"] == 1
    # go-back-N after the RTO: 70 three times, then 71..79 once more each
    rtx = [f["seq"] for _, e, f, _ in log if e == "rtx"]
    assert rtx == [seq_of(ISS, 19), seq_of(ISS, 70), seq_of(ISS, 70)] + [seq_of(ISS, i) for i in range(71, 80)]


def test_backoff_cleared_by_next_rtt_sample(scenario) -> None:  # type: ignore[no-untyped-def]
    a, _, log, _ = scenario
    phase = log[-1][2]
    # Karn: no sample from the retransmitted segments, so the backoff survives recovery
    assert phase["rto_before"] == pytest.approx(0.8)
    # the 5 new segments are timed; their sample recomputes RTO from SRTT/RTTVAR
    assert a.srtt == pytest.approx(0.125)
    assert a.rto == pytest.approx(max(0.2, a.srtt + 4 * a.rttvar)) == pytest.approx(0.2)


# ====================================================================================================
# One rule of RFC 5681 / RFC 6675 per test, on hand-fed endpoints (issue 30, "every rule
# pinned").  Each scenario is chosen so that the rule and its obvious mis-implementation give
# different numbers; the comment on each test names the one-line break it was seen to catch.


def sack_upto(k: int, sent: int = BIG) -> tuple[tuple[int, int], ...]:
    """The SACK block of segments 1..k (segment 0 lost), cut at the ``sent`` bytes sent."""
    return ((seq_of(ISS, 1), min(seq_of(ISS, 1 + k), ISS + 1 + sent)),)


def three_dupacks(a: TcpConnection, variant: str, t: float, window: int = PEER_WINDOW,
                  sent: int = BIG) -> None:
    """Segment 0 lost, segments 1, 2, 3 arrive: three duplicate ACKs of segment 0 (SACK: each
    reporting one more segment)."""
    base = seq_of(ISS, 0)
    for k in range(1, 4):
        sack = sack_upto(k, sent) if variant == "sack" else ()
        a.on_segment(ack_seg(a, base, window=window, sack=sack), t)


def entry_values(variant: str, flight: int, mss: int = 1000) -> tuple[int, int]:
    """(cwnd, ssthresh) on entering recovery: ssthresh = max(FlightSize / 2, 2 * SMSS)
    (RFC 5681 eq. (4), RFC 6675 sec. 5 step (4.2)); Reno: cwnd = ssthresh + 3 * SMSS (RFC 5681
    sec. 3.2 step 3), SACK: cwnd = ssthresh (RFC 6675 step (4.2))."""
    ssthresh = max(flight // 2, 2 * mss)
    return (ssthresh + 3 * mss if variant == "reno" else ssthresh), ssthresh


# ---------------------------------------------------------------- ssthresh from FlightSize
# Break caught: ``ssthresh = max(conn.cwnd // 2, 2 * mss)`` in Reno.on_dupack or in
# SackRecovery.enter_recovery.
@pytest.mark.parametrize("limit", ["application", "receiver window"])
@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_ssthresh_at_the_third_dupack_is_half_the_flight_not_half_cwnd(variant: str, limit: str) -> None:
    # cwnd is 10 segments but only 6 are outstanding: the application wrote only 6000 bytes,
    # or the peer advertises only 6000 bytes.  RFC 5681 eq. (4) takes FlightSize (6000), not
    # cwnd (10000): ssthresh 3000, not 5000.
    window = 6000 if limit == "receiver window" else PEER_WINDOW
    a, rec = client(variant, iss=ISS, init_cwnd=10, window=window)
    a.send(bytes(6000 if limit == "application" else 20_000))
    out = a.segments_to_send(1.0)
    assert [s.seq for s in out] == [seq_of(ISS, i) for i in range(6)]
    assert a.cwnd == 10_000 and a.flight_size == 6000
    three_dupacks(a, variant, 1.5, window=window)
    assert a.in_recovery and a.stats["losses_dupack"] == 1
    assert (a.cwnd, a.ssthresh) == entry_values(variant, 6000)
    assert rec.of("cwnd")[-1] == dict(zip(("cwnd", "ssthresh"), entry_values(variant, 6000)))
    assert a.ssthresh == 3000


# ---------------------------------------------------------------- the 2 * SMSS floor
# Break caught: ``ssthresh = conn.flight_size // 2`` (floor removed) in Reno.on_dupack,
# SackRecovery.enter_recovery or (the RTO test) CongestionControl.on_rto.
@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_ssthresh_floor_of_two_segments_at_a_fast_retransmit(variant: str) -> None:
    # 3500 bytes in flight (three full segments and a 500-byte tail): FlightSize / 2 = 1750
    # is below 2 * SMSS, so ssthresh = 2000 (RFC 5681 eq. (4)).
    a, _ = client(variant, iss=ISS, init_cwnd=4)
    a.send(bytes(3500))
    out = a.segments_to_send(1.0)
    assert [len(s.payload) for s in out] == [1000, 1000, 1000, 500]
    assert a.flight_size == 3500
    three_dupacks(a, variant, 1.5, sent=3500)
    assert a.in_recovery
    assert (a.cwnd, a.ssthresh) == entry_values(variant, 3500)
    assert a.ssthresh == 2000


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_ssthresh_floor_of_two_segments_at_a_timeout(variant: str) -> None:
    # one segment outstanding and lost: RFC 5681 eq. (4) gives max(500, 2000) = 2000, and
    # cwnd = LW = 1 SMSS
    a, _ = client(variant, iss=ISS, init_cwnd=4)
    a.send(bytes(1000))
    assert len(a.segments_to_send(1.0)) == 1
    deadline = a.next_timer()
    assert deadline is not None
    a.on_timer(deadline)
    assert a.stats["losses_rto"] == 1
    assert (a.cwnd, a.ssthresh) == (1000, 2000)


# ---------------------------------------------------------------- slow start: min(N, SMSS)
# Break caught: ``cwnd += mss`` for every ACK in CongestionControl.grow's slow-start branch.
def test_slow_start_grows_by_the_bytes_acked_when_less_than_a_segment() -> None:
    # RFC 5681 sec. 3.1 eq. (2): cwnd += min(N, SMSS).  Two full segments fill cwnd (the sender
    # stays cwnd-limited, so RFC 7661 sec. 4.3 lets cwnd grow); an ACK of half of the first
    # adds 500, not a full SMSS, and the ACK of the rest of both adds 1000, not 1500.
    a, rec = client("reno", iss=ISS, init_cwnd=2)
    a.send(bytes(20_000))
    out = a.segments_to_send(1.0)
    assert [len(s.payload) for s in out] == [1000, 1000]
    assert (a.cwnd, a.ssthresh) == (2000, BIG)
    a.on_segment(ack_seg(a, seq_of(ISS, 0) + 500), 1.5)      # N = 500
    assert a.cwnd == 2500
    assert len(a.segments_to_send(1.5)) == 1                  # the room refilled:
    assert a.flight_size == a.cwnd                            # still cwnd-limited
    a.on_segment(ack_seg(a, seq_of(ISS, 2)), 1.5)            # N = 1500
    assert a.cwnd == 3500
    assert [f["cwnd"] for f in rec.of("cwnd")] == [2000, 2500, 3500]


# ---------------------------------------------------------------- a window update is no dupack
# Break caught: ``return True`` (window not compared) in Reno.is_dupack.
@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_a_window_update_is_not_a_duplicate_ack(variant: str) -> None:
    # RFC 5681 sec. 2: a duplicate ACK requires (e) "the advertised window in the incoming
    # acknowledgment equals the advertised window in the last incoming acknowledgment".
    # Two dupacks, then a pure window update (same ACK number, window 32000 -> 64000, no
    # new SACK information): still two dupacks, no fast retransmit.
    a, rec = client(variant, iss=ISS, init_cwnd=6, window=32_000)
    a.send(bytes(6000))
    assert len(a.segments_to_send(1.0)) == 6
    base = seq_of(ISS, 0)
    for k in (1, 2):
        a.on_segment(ack_seg(a, base, window=32_000,
                             sack=sack_upto(k) if variant == "sack" else ()), 1.5)
    assert a.stats["dupacks_received"] == 2
    a.on_segment(ack_seg(a, base, window=64_000,
                         sack=sack_upto(2) if variant == "sack" else ()), 1.6)
    assert a.snd_wnd == 64_000
    assert a.stats["dupacks_received"] == 2
    assert not a.in_recovery and a.stats["losses_dupack"] == 0
    assert a.segments_to_send(1.6) == [] and rec.of("rtx") == []
    # RFC 5681 sec. 3.2: three dupacks "without any intervening ACKs which move SND.UNA": the
    # update moved nothing, so the next dupack (window equal to the last one, 64000) is the third
    a.on_segment(ack_seg(a, base, window=64_000,
                         sack=sack_upto(3) if variant == "sack" else ()), 1.7)
    assert a.stats["dupacks_received"] == 3 and a.in_recovery
    assert [s.seq for s in a.segments_to_send(1.7)][:1] == [base]
