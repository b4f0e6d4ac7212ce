"""One rule of RFC 5681 / RFC 6675 per test, on hand-fed endpoints (issue 30, "every rule
pinned").  Each scenario is chosen so that the rule and its obvious mis-implementation give
different numbers; the comment on each test names the one-line break it was seen to catch.
"""
from __future__ import annotations

import pytest

from test_tcp_harness import PEER_WINDOW, ack_seg, client, seq_of
from tcp_user.connection import TcpConnection

ISS = 1000
BIG = 1 << 30


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
