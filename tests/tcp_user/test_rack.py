"""RACK-TLP (RFC 8985, tcp_user/rack.py) in the SACK sender: time-based loss detection that finds a lost
retransmission, the reordering timer, and the tail loss probe (issue 39)."""
from __future__ import annotations

import pytest

from tests.cores import ack_seg, client, seq_of
from tcp_user.rack import WCDELACKT, Rack, Tlp, probe_timeout, sent_after
from tcp_user.sent import SentLog

ISS = 7000


def sacks(*ranges: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """SACK blocks of the segment index ranges [a, b), highest first as a receiver reports them."""
    return tuple((seq_of(ISS, a), seq_of(ISS, b)) for a, b in ranges)


def data_seqs(out) -> list[int]:  # type: ignore[no-untyped-def]
    return [s.seq for s in out if s.payload]


# ---------------------------------------------------------------- the rules alone
def test_sent_after_breaks_a_tie_of_times_by_the_order_of_transmission() -> None:
    assert sent_after(2.0, 1, 1.0, 9) and not sent_after(1.0, 9, 2.0, 1)
    assert sent_after(1.0, 5, 1.0, 4) and not sent_after(1.0, 4, 1.0, 4)


def test_rack_follows_the_most_recently_sent_delivered_segment() -> None:
    rack = Rack()
    rack.on_delivered(1.0, 2, 2001, False, 3.0, fack=0)
    rack.on_delivered(0.5, 1, 1001, False, 3.0, fack=2001)     # sent earlier: RACK stays on the first
    assert (rack.xmit_ts, rack.order, rack.rtt, rack.min_rtt) == (1.0, 2, 2.0, 2.0)
    assert rack.reordering_seen                                 # delivered below what was delivered
    # a retransmission acknowledged sooner than min_RTT after it was sent: perhaps the original's ACK
    rack.on_delivered(2.5, 3, 3001, True, 3.0, fack=2001)
    assert rack.xmit_ts == 1.0


@pytest.mark.parametrize("in_recovery,sacked,reordering,expected", [
    (False, 0, False, 0.25),        # min_RTT / 4
    (True, 0, False, 0.0),          # in recovery, no reordering seen: no window
    (False, 3, False, 0.0),         # DupThresh segments SACKed
    (True, 3, True, 0.25),          # reordering seen: the window stays
])
def test_the_reordering_window(in_recovery: bool, sacked: int, reordering: bool, expected: float) -> None:
    rack = Rack()
    rack.min_rtt, rack.reordering_seen = 1.0, reordering
    assert rack.reo_wnd(in_recovery, sacked, 3, srtt=2.0) == expected
    assert Rack().reo_wnd(False, 0, 3, srtt=None) == 0.0       # no RTT yet
    rack.reordering_seen = True
    assert rack.reo_wnd(False, 0, 3, srtt=0.1) == 0.1           # at most SRTT


def test_detect_loss_marks_what_was_sent_before_and_waits_for_the_rest() -> None:
    log = SentLog()
    log.on_transmit(1, 1001, 1.0)
    log.on_transmit(1001, 2001, 1.2)
    log.on_transmit(2001, 3001, 1.4)
    log.on_sacked(2001, 3001)
    rack = Rack()
    rack.on_delivered(*log.delivered[0][:3], False, now=1.9, fack=0)   # RTT 0.5 of the third
    # at 1.9, reo_wnd 0.3: the first (sent 1.0) is past 1.0 + 0.5 + 0.3; the second (1.2) not yet
    assert rack.detect_loss(log, 1, 1.9, 0.3) == 1
    assert log.lost == [True, False, False]
    assert rack.timeout_at == pytest.approx(1.2 + 0.5 + 0.3)
    assert rack.detect_loss(log, 1, 2.0, 0.3) == 1 and log.lost == [True, True, False]
    log.on_transmit(1, 1001, 2.0)                               # resent: no longer marked
    assert log.lost[0] is False and rack.losses == 2


def test_the_probe_timeout() -> None:
    assert probe_timeout(0.1, 5000, 1000) == 0.2
    assert probe_timeout(0.1, 1000, 1000) == pytest.approx(0.2 + WCDELACKT)   # one segment out


def test_a_probe_of_old_data_acknowledged_beyond_it_repaired_a_loss() -> None:
    tlp = Tlp()
    tlp.end, tlp.retrans = 5001, True
    assert not tlp.on_ack(4001, True, True) and tlp.end == 5001     # below the probe
    assert tlp.on_ack(6001, True, True) and tlp.end is None and tlp.recoveries == 1
    tlp.end, tlp.retrans = 5001, False                               # a probe of new data
    assert not tlp.on_ack(6001, True, True) and tlp.end is None
    tlp.end, tlp.retrans = 5001, True
    assert not tlp.on_ack(5001, False, False) and tlp.end is None    # a pure dupack: both copies arrived


# ---------------------------------------------------------------- in the sender
def recovering(rack: bool):  # type: ignore[no-untyped-def]
    """Six segments out at 1.0, segment 0 lost; dupacks SACK 1-3 at 1.5: recovery, segment 0 resent;
    the SACKs of 4 and 5 at 1.6 let new segments out behind the retransmission."""
    a, rec = client("sack", iss=ISS, init_cwnd=6, rack=rack)
    a.send(bytes(20_000))
    assert len(a.segments_to_send(1.0)) == 6
    for k in (2, 3, 4):
        a.on_segment(ack_seg(a, seq_of(ISS, 0), sack=sacks((1, k))), 1.5)
    assert a.in_recovery
    assert data_seqs(a.segments_to_send(1.5)) == [seq_of(ISS, 0)]
    for k in (5, 6):
        a.on_segment(ack_seg(a, seq_of(ISS, 0), sack=sacks((1, k))), 1.6)
    out = data_seqs(a.segments_to_send(1.6))
    assert seq_of(ISS, 0) not in out                    # the retransmission is not judged lost yet
    return a, rec, out


def test_rack_finds_a_lost_retransmission_without_a_timeout() -> None:
    a, rec, out = recovering(rack=True)
    assert out and out[0] == seq_of(ISS, 6)             # sent after the retransmission of segment 0
    # the retransmission is lost; the segment after it arrives and is SACKed
    a.on_segment(ack_seg(a, seq_of(ISS, 0), sack=sacks((1, 7))), 2.1)
    again = data_seqs(a.segments_to_send(2.1))
    assert again[0] == seq_of(ISS, 0)                   # resent at once, no RTO
    assert [e["seq"] for e in rec.of("rtx")].count(seq_of(ISS, 0)) == 2
    assert [e["kind"] for e in rec.of("loss")] == ["dupack"]


def test_without_rack_the_lost_retransmission_waits_for_the_timer() -> None:
    a, rec, _ = recovering(rack=False)
    a.on_segment(ack_seg(a, seq_of(ISS, 0), sack=sacks((1, 7))), 2.1)
    assert seq_of(ISS, 0) not in data_seqs(a.segments_to_send(2.1))
    a.on_timer(a.next_timer())
    assert [e["kind"] for e in rec.of("loss")] == ["dupack", "rto"]


def test_the_reordering_timer_starts_recovery_without_a_third_dupack() -> None:
    a, rec = client("sack", iss=ISS, init_cwnd=6, rack=True, rtt=0.5)
    a.send(bytes(20_000))
    a.segments_to_send(1.0)
    a.on_segment(ack_seg(a, seq_of(ISS, 0), sack=sacks((1, 2))), 1.5)    # one dupack: segment 1 SACKed
    assert not a.in_recovery
    t = a.next_timer()
    assert t is not None and 1.5 < t < a.next_timer() + 1        # RACK's timer, before the RTO
    assert t == pytest.approx(1.0 + 0.5 + 0.5 / 4)               # xmit + RACK.rtt + min_RTT / 4
    a.on_timer(t)
    assert a.in_recovery and [e["kind"] for e in rec.of("loss")] == ["dupack"]
    assert data_seqs(a.segments_to_send(t))[0] == seq_of(ISS, 0)


def test_a_tail_loss_is_probed_instead_of_a_timeout() -> None:
    a, rec = client("sack", iss=ISS, init_cwnd=4, rack=True, rtt=0.1)
    a.send(bytes(4000))                                 # four segments and nothing more to send
    a.segments_to_send(1.0)
    for i in (1, 2, 3):                                  # segments 0-2 arrive, the tail segment 3 is lost
        a.on_segment(ack_seg(a, seq_of(ISS, i)), 1.1)
    rto_at = a._rto_deadline
    pto = a.next_timer()
    # PTO = 2 SRTT + WCDelAckT (one segment out) is later than the RTO here: the probe takes the RTO's time
    assert 1.1 + probe_timeout(a.srtt, 1000, 1000) > rto_at and pto == rto_at
    cwnd, rto = a.cwnd, a.rto
    a.on_timer(pto)
    probe = data_seqs(a.segments_to_send(pto))
    assert probe == [seq_of(ISS, 3)]                     # no new data: the last segment again
    a.on_segment(ack_seg(a, seq_of(ISS, 4)), pto + 0.1)
    assert a.all_acked and rec.of("loss") == []          # repaired without a timeout: no backoff, cwnd kept
    assert a.cwnd >= cwnd and a.rto <= rto
    # an ACK of exactly TLP.end_seq does not yet tell a lost original from a late one (Linux waits for one
    # beyond it): no cwnd reduction so far
    assert a.congestion_control.tlp.recoveries == 0


def test_a_probe_sends_new_data_when_there_is_some() -> None:
    a, _ = client("sack", iss=ISS, init_cwnd=2, rack=True, rtt=0.1, window=2000)
    a.send(bytes(5000))
    a.segments_to_send(1.0)                              # segments 0-1; the peer's window is full
    a.on_segment(ack_seg(a, seq_of(ISS, 1), window=2000), 1.1)     # segment 0; 1 still out
    a.segments_to_send(1.1)                              # segment 2
    pto = a.congestion_control.tlp.pto_at
    assert pto is not None
    a.on_segment(ack_seg(a, seq_of(ISS, 1), window=4000), 1.15)    # a window update opens room
    a.on_timer(a.next_timer())
    probe = data_seqs(a.segments_to_send(a.congestion_control.tlp.pto_at or 2.0))
    assert probe and probe[0] == seq_of(ISS, 3)          # new data, not a retransmission
    assert a.congestion_control.tlp.retrans is False
