"""The receiver: immediate ACKs, out-of-order buffering, duplicates, SACK blocks (RFC 2018)."""
from __future__ import annotations

import pytest

from test_tcp_harness import bulk, data_seg, pair, seq_of, server
from tcp_user.connection import TcpConnection
from tcp_user.segment import ACK, FIN

P = 90_000                      # the peer's ISS


def blk(i: int, j: int | None = None) -> tuple[int, int]:
    """SACK block covering data segments i..j (inclusive)."""
    return (seq_of(P, i), seq_of(P, (j if j is not None else i) + 1))


def feed(b: TcpConnection, index: int, t: float = 1.0) -> tuple[int, tuple, int]:
    """Deliver data segment ``index``; exactly one ACK must come back (no delayed ACKs)."""
    b.on_segment(data_seg(index, peer_iss=P), t)
    (ack,) = b.segments_to_send(t)
    assert ack.flags == ACK and not ack.payload
    return ack.ack, ack.sack, ack.window


@pytest.mark.parametrize("variant", ["sack", "reno"])
def test_out_of_order_and_duplicates(variant: str) -> None:
    b, _ = server(variant, peer_iss=P)
    sack = variant == "sack"
    steps = [
        # (segment fed, expected ACK number, expected SACK blocks, expected window)
        (0, seq_of(P, 1), (), 63_000),
        (2, seq_of(P, 1), (blk(2),), 63_000),                  # hole at 1: dupack
        (4, seq_of(P, 1), (blk(4), blk(2)), 63_000),           # newest block first
        (3, seq_of(P, 1), (blk(2, 4),), 63_000),               # 3 joins 2 and 4
        (2, seq_of(P, 1), (blk(2, 4),), 63_000),               # duplicate, out of order
        (0, seq_of(P, 1), (blk(2, 4),), 63_000),               # duplicate, old
        (6, seq_of(P, 1), (blk(6), blk(2, 4)), 63_000),
        (8, seq_of(P, 1), (blk(8), blk(6), blk(2, 4)), 63_000),
        (10, seq_of(P, 1), (blk(10), blk(8), blk(6), blk(2, 4)), 63_000),
        (12, seq_of(P, 1), (blk(12), blk(10), blk(8), blk(6)), 63_000),   # at most 4
        (8, seq_of(P, 1), (blk(8), blk(12), blk(10), blk(6)), 63_000),    # dup: its block first
        # the hole fills: cumulative ACK jumps over 2..4; the rest in recency order.
        # window: 64000 - 5000 in order - 4000 out of order = 55000, but the right edge
        # already advertised (rcv_nxt + 59000) is never taken back
        (1, seq_of(P, 5), (blk(8), blk(12), blk(10), blk(6)), 59_000),
        (5, seq_of(P, 7), (blk(8), blk(12), blk(10)), 57_000),
    ]
    for index, ack, blocks, window in steps:
        assert feed(b, index) == (ack, blocks if sack else (), window), index
    assert b.stats["dup_segments_received"] == 3
    assert b.bytes_received == 7000
    assert b.read() == b"".join(bytes([i]) * 1000 for i in range(7))
    (update,) = b.segments_to_send(1.0)                    # reading opened the window
    assert (update.ack, update.window) == (seq_of(P, 7), 61_000)
    assert feed(b, 7) == (seq_of(P, 9), (blk(12), blk(10)) if sack else (), 64_000 - 1000 - 3000)


def test_fin_out_of_order_waits_for_the_data() -> None:
    b, rec = server("sack", peer_iss=P)
    b.on_segment(data_seg(1, peer_iss=P, fin=True), 1.0)
    (ack,) = b.segments_to_send(1.0)
    assert ack.ack == seq_of(P, 0) and b.state == "ESTABLISHED"
    assert ack.sack == ((seq_of(P, 1), seq_of(P, 2)),)     # the FIN is not SACKed
    b.on_segment(data_seg(0, peer_iss=P), 1.1)
    (ack,) = b.segments_to_send(1.1)
    assert ack.ack == seq_of(P, 2) + 1 and b.state == "CLOSE_WAIT"
    assert b.read() == bytes([0]) * 1000 + bytes([1]) * 1000
    b.close(1.2)
    (fin,) = b.segments_to_send(1.2)
    assert fin.flags == ACK | FIN and b.state == "LAST_ACK"


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_reordering_and_duplication_end_to_end(variant: str) -> None:
    a, b, _, _ = pair(variant, time_wait=0.1)
    sim, data = bulk(a, b, 40_000, delay=0.0625)
    late = {seq_of(1000, 9), seq_of(1000, 23)}
    # segment 9 is overtaken by the 4 after it in its burst: 4 dupacks, a (spurious) fast
    # retransmit; segment 23 by 2 only: 2 dupacks, below DupThresh.  4 segments doubled.
    sim.delay_if(lambda src, seg, occ, now: 0.001 if src == "a" and occ == 1 and seg.seq in late else 0.0)
    sim.duplicate_if(lambda src, seg, occ, now: src == "a" and seg.seq in {seq_of(1000, i) for i in (3, 4, 30, 31)})
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.is_closed and b.is_closed
    # every copy beyond the first is counted as a duplicate at the receiver
    copies = len([s for _, n, s in sim.delivered if n == "b" and s.payload])
    assert b.stats["dup_segments_received"] == copies - 40
    assert a.stats["losses_dupack"] == 1 and a.stats["losses_rto"] == 0
    assert a.stats["retransmissions"] == 1
    assert [s.seq for _, s in sim.data_sent("a")].count(seq_of(1000, 9)) == 2
    assert [s.seq for _, s in sim.data_sent("a")].count(seq_of(1000, 23)) == 1
