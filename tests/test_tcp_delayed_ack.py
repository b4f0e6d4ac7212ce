"""Delayed ACKs of the user-space receiver (``tcp.delayed_ack``; RFC 1122 sec. 4.2.3.2, RFC 5681 sec. 4.2).

Each rule is a test that fails when the rule is broken: an ACK with every second full-sized segment; a
lone segment acknowledged when ``delack_s`` has passed, not before; an out-of-order segment, one that fills
a hole, and a FIN acknowledged at once; data sent in the other direction carrying the ACK (the timer
stops); and off by default (an ACK per segment, as ns-2's sink).
"""
from __future__ import annotations

import pytest

from test_tcp_harness import bulk, data_seg, pair, seq_of, server
from tcp_user.config import TcpConfig
from tcp_user.segment import ACK, Segment

P = 90_000


def acks(b, t):
    out = b.segments_to_send(t)
    assert all(s.flags & ACK and not s.payload for s in out)
    return [s.ack for s in out]


def test_every_second_full_sized_segment_is_acknowledged_at_once():
    b, _ = server(delayed_ack=True, peer_iss=P)
    b.on_segment(data_seg(0, peer_iss=P), 1.0)
    assert acks(b, 1.0) == [] and b.next_timer() == pytest.approx(1.2)
    b.on_segment(data_seg(1, peer_iss=P), 1.01)
    assert acks(b, 1.01) == [seq_of(P, 2)]
    assert b.next_timer() is None                       # the ACK went: no timer waits
    b.on_segment(data_seg(2, peer_iss=P), 1.02)
    b.on_segment(data_seg(3, peer_iss=P), 1.03)
    assert acks(b, 1.03) == [seq_of(P, 4)]


def test_a_lone_segment_is_acknowledged_when_the_timer_runs_out_and_not_before():
    b, _ = server(delayed_ack=True, delack_s=0.1, peer_iss=P)
    b.on_segment(data_seg(0, peer_iss=P), 2.0)
    b.on_timer(2.099)
    assert acks(b, 2.099) == []
    assert b.next_timer() == pytest.approx(2.1)
    b.on_timer(2.1)
    assert acks(b, 2.1) == [seq_of(P, 1)]
    assert b.next_timer() is None


def test_a_short_segment_does_not_count_as_full_sized():
    b, _ = server(delayed_ack=True, peer_iss=P)
    b.on_segment(data_seg(0, peer_iss=P), 1.0)
    short = Segment(seq=seq_of(P, 1), ack=7001, flags=ACK, window=64_000, payload=b"x" * 500)
    b.on_segment(short, 1.01)
    assert acks(b, 1.01) == []                          # one full-sized segment and a short one
    b.on_timer(1.2)
    assert acks(b, 1.2) == [seq_of(P, 1) + 500]


@pytest.mark.parametrize("variant", ["sack", "reno"])
def test_out_of_order_a_filled_hole_and_a_fin_are_acknowledged_at_once(variant):
    b, _ = server(variant, delayed_ack=True, peer_iss=P)
    b.on_segment(data_seg(0, peer_iss=P), 1.0)
    assert acks(b, 1.0) == []
    b.on_segment(data_seg(2, peer_iss=P), 1.01)         # out of order: a duplicate ACK at once
    assert acks(b, 1.01) == [seq_of(P, 1)]
    b.on_segment(data_seg(1, peer_iss=P), 1.02)         # in order, but it fills the hole
    assert acks(b, 1.02) == [seq_of(P, 3)]
    b.on_segment(data_seg(3, peer_iss=P, fin=True), 1.03)
    assert acks(b, 1.03) == [seq_of(P, 4) + 1]          # the FIN's ACK does not wait


def test_data_going_back_carries_the_ack_and_stops_the_timer():
    b, _ = server(delayed_ack=True, peer_iss=P)
    b.on_segment(data_seg(0, peer_iss=P), 1.0)
    b.send(b"y" * 100)
    [seg] = b.segments_to_send(1.0)
    assert seg.payload == b"y" * 100 and seg.ack == seq_of(P, 1)
    assert b._delack_deadline is None                   # piggybacked: no separate ACK later


def test_off_by_default_an_ack_per_segment():
    assert TcpConfig().delayed_ack is False
    b, _ = server(peer_iss=P)
    b.on_segment(data_seg(0, peer_iss=P), 1.0)
    assert acks(b, 1.0) == [seq_of(P, 1)]


@pytest.mark.parametrize("bad", [0, -0.1, 0.6, True, "0.2"])
def test_the_timer_must_be_under_half_a_second(bad):
    with pytest.raises(ValueError, match="delack_s"):
        TcpConfig(delayed_ack=True, delack_s=bad)


def test_a_bulk_transfer_with_delayed_acks_sends_about_half_the_acks_and_arrives_whole():
    counts = {}
    for delayed in (False, True):
        a, b, _, _ = pair("sack", delayed_ack=delayed)
        sim, data = bulk(a, b, 200_000)
        sim.run()
        assert bytes(sim.received["b"]) == data
        counts[delayed] = b.stats["acks_sent"]
    assert counts[False] >= 200 and 0.45 * counts[False] <= counts[True] <= 0.6 * counts[False], counts


def test_reading_at_once_does_not_undo_the_delay_but_a_half_closed_window_is_opened():
    b, _ = server(delayed_ack=True, peer_iss=P, rcv_buffer=8000)
    b.on_segment(data_seg(0, peer_iss=P), 1.0)
    assert b.read() and acks(b, 1.0) == []              # 7,000 of 8,000 still advertised: the ACK may wait
    for i in range(1, 5):                               # 4 more, unread: the second of each pair is ACKed at once
        b.on_segment(data_seg(i, peer_iss=P), 1.0 + i / 100)
    assert acks(b, 1.05) == [seq_of(P, 2), seq_of(P, 4)]
    assert b._delack_deadline is not None               # segment 4 waits; the peer may send 4,000 more (half)
    assert b.read() and acks(b, 1.05) == [seq_of(P, 5)]  # so reading opens the window at once
