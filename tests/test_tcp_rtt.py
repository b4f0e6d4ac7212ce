"""RTT estimation and the retransmission timer (RFC 6298), Karn's rule, backoff."""
from __future__ import annotations

import pytest

from test_tcp_harness import ack_seg, client, seq_of
from tcp_user.config import TcpConfig
from tcp_user.connection import TcpConnection
from tcp_user.segment import SYN

ISS = 7000


def test_rto_from_known_samples_and_karn() -> None:
    # RTT samples chosen as binary fractions so every value below is exact.
    a, rec = client("reno", iss=ISS, rtt=0.5)          # SYN at 0, SYN+ACK at 0.5
    # first sample R = 0.5 (2.2): SRTT = R, RTTVAR = R/2, RTO = SRTT + 4*RTTVAR
    assert (a.srtt, a.rttvar, a.rto) == (0.5, 0.25, 1.5)

    a.send(bytes(3000))
    out = a.segments_to_send(1.0)
    assert [s.seq for s in out] == [seq_of(ISS, 0), seq_of(ISS, 1)]   # IW = 2 segments
    assert a.next_timer() == 1.0 + 1.5                 # 5.1: timer started with the first send
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), 1.25)     # R = 0.25 for the timed segment 0
    # 2.3: RTTVAR = 3/4*0.25 + 1/4*|0.5-0.25| = 0.25; SRTT = 7/8*0.5 + 1/8*0.25 = 0.46875
    assert (a.srtt, a.rttvar, a.rto) == (0.46875, 0.25, 1.46875)
    assert a.next_timer() == 1.25 + 1.46875            # 5.3: restarted by the new ACK
    out = a.segments_to_send(1.25)
    assert [s.seq for s in out] == [seq_of(ISS, 2)]    # timed from now on

    # nothing comes back: the timer expires, segment 1 is retransmitted, RTO doubles (5.5)
    a.on_timer(2.71875)
    assert a.rto == 2.9375 and a.next_timer() == 2.71875 + 2.9375
    out = a.segments_to_send(2.71875)
    assert [s.seq for s in out] == [seq_of(ISS, 1)]
    assert rec.of("loss") == [{"kind": "rto", "seq": seq_of(ISS, 1), "rto": 2.9375}]
    assert rec.of("rtx") == [{"seq": seq_of(ISS, 1), "len": 1000}]

    # Karn: the ACK covering the retransmission (and the timed segment 2) is no sample;
    # the backed-off RTO stays until a fresh sample
    a.on_segment(ack_seg(a, seq_of(ISS, 3)), 3.0)
    assert a.rtt_samples == 2
    assert (a.srtt, a.rttvar, a.rto) == (0.46875, 0.25, 2.9375)
    assert a.next_timer() is None                      # 5.2: all data acknowledged

    # a new segment sent at 3.0 and acknowledged at 3.5: R = 0.5
    a.send(bytes(1000))
    assert [s.seq for s in a.segments_to_send(3.0)] == [seq_of(ISS, 3)]
    a.on_segment(ack_seg(a, seq_of(ISS, 4)), 3.5)
    # RTTVAR = 3/4*0.25 + 1/4*|0.46875-0.5| = 0.1953125; SRTT = 0.47265625
    assert (a.srtt, a.rttvar) == (0.47265625, 0.1953125)
    assert a.rto == 0.47265625 + 4 * 0.1953125 == 1.25390625   # backoff gone
    assert a.rtt_samples == a.stats["rtt_samples"] == 3


def test_rto_clamped_to_min_and_max() -> None:
    fast, _ = client("reno", rtt=0.015625, min_rto=0.2)
    assert fast.rto == 0.2                             # 2.4: 0.015625 * 3 < min_rto
    slow, _ = client("reno", rtt=32.0, max_rto=60.0)
    assert slow.rto == 60.0                            # 2.5: 32 * 3 > max_rto


def test_syn_backoff_is_capped_and_connection_aborts() -> None:
    cfg = TcpConfig(initial_rto=1.0, max_rto=4.0, max_retries=5)
    events: list[tuple[float, str, dict]] = []
    a = TcpConnection(cfg, iss=ISS, emit=lambda now, ev, **f: events.append((now, ev, f)))
    a.connect(0.0)
    sent = [0.0] if a.segments_to_send(0.0) else []
    while (t := a.next_timer()) is not None:
        a.on_timer(t)
        for seg in a.segments_to_send(t):
            assert seg.flags == SYN and seg.seq == ISS
            sent.append(t)
    # backoff 1, 2, 4, then capped at 4; after 5 retries the 6th expiry aborts
    assert sent == [0.0, 1.0, 3.0, 7.0, 11.0, 15.0]
    assert a.state == "CLOSED" and a.stats["aborted"] == 1
    assert events[-1] == (19.0, "state", {"state": "CLOSED"})
    assert sum(1 for _, ev, _ in events if ev == "loss") == 5


def test_no_sample_from_retransmitted_syn() -> None:
    a = TcpConnection(TcpConfig(initial_rto=1.0), iss=ISS)
    a.connect(0.0)
    a.segments_to_send(0.0)
    a.on_timer(1.0)
    assert [s.flags for s in a.segments_to_send(1.0)] == [SYN]
    from tcp_user.segment import ACK, Segment
    a.on_segment(Segment(seq=5, ack=ISS + 1, flags=SYN | ACK, window=10_000), 1.1)
    assert a.state == "ESTABLISHED"
    # Karn: ambiguous SYN, no sample; RFC 6298 5.7: RTO = 3 s; RFC 5681 3.1: IW = 1 segment
    assert a.srtt is None and a.rtt_samples == 0
    assert a.rto == pytest.approx(3.0)
    assert a.cwnd == 1000
