"""tcp_user/sack.py's rules at their edges (issue 30, mutation run).

RFC 6675 sec. 3-4: the scoreboard of SACKed ranges (half-open, merged when they touch), forgotten below
SND.UNA; IsLost(seq): DupThresh discontiguous SACKed ranges above seq, or *more than* (DupThresh - 1) x SMSS
SACKed octets above it; SetPipe: every un-SACKed octet below HighData counts once unless lost and once more
if retransmitted (below HighRxt).  RFC 2018 sec. 4: the receiver reports the block of the most recent
segment first, then the most recently reported ones, each block once, at most ``limit``.
"""
from __future__ import annotations

from tcp_user.sack import Reassembly, Scoreboard
from typing import Any
import pytest
from tests.cores import MASK, Recorder, bulk, client, ack_seg, pair, seq_of
from tcp_user.connection import TcpConnection


def board(*ranges):
    sb = Scoreboard()
    for s, e in ranges:
        sb.add(s, e)
    return sb


def test_add_counts_only_new_octets_and_merges_touching_ranges():
    sb = Scoreboard()
    assert sb.add(10, 10) == 0 and sb.add(10, 5) == 0 and sb.blocks == []
    assert sb.add(10, 20) == 10
    assert sb.add(20, 30) == 10 and sb.blocks == [[10, 30]]          # touching: one range
    assert sb.add(40, 50) == 10 and sb.blocks == [[10, 30], [40, 50]]
    assert sb.add(5, 45) == 5 + 10 and sb.blocks == [[5, 50]]         # bridges both, keeps the far end
    assert sb.add(0, 5) == 5 and sb.blocks == [[0, 50]] and sb.sacked == 50
    assert sb.add(60, 70) == 10 and sb.add(1, 3) == 0 and sb.sacked == 60
    sb.clear()
    assert sb.blocks == [] and sb.sacked == 0


def test_advance_forgets_below_una_and_trims_a_range_it_cuts():
    sb = board((10, 20), (30, 40))
    sb.advance(10)
    assert sb.blocks == [[10, 20], [30, 40]] and sb.sacked == 20
    sb.advance(15)
    assert sb.blocks == [[15, 20], [30, 40]] and sb.sacked == 15
    sb.advance(20)
    assert sb.blocks == [[30, 40]] and sb.sacked == 10
    sb.advance(100)
    assert sb.blocks == [] and sb.sacked == 0


def test_highest_skip_next_start_and_sacked_between():
    sb = board((10, 20), (30, 40))
    assert sb.highest() == 40 and Scoreboard().highest() is None
    assert [sb.skip(s) for s in (9, 10, 19, 20, 35)] == [9, 20, 20, 20, 40]
    assert [sb.next_start(s) for s in (0, 10, 29, 30, 40)] == [10, 30, 30, None, None]
    assert sb.sacked_between(0, 100) == 20 and sb.sacked_between(15, 35) == 10
    assert sb.sacked_between(20, 30) == 0 and sb.sacked_between(40, 50) == 0 and sb.sacked_between(19, 31) == 2


def test_is_lost_by_discontiguous_ranges_or_by_more_than_the_octets():
    mss = 10
    sb = board((20, 30), (40, 50), (60, 70))
    assert sb.is_lost(10, 3, mss) is True                # three ranges above
    assert sb.is_lost(30, 3, mss) is False               # two ranges, 20 octets: not more than 20
    assert sb.is_lost(30, 2, mss) is True
    # octets above seq: seq itself is not above it
    one = board((10, 31))
    assert one.is_lost(10, 3, mss) is False              # 20 octets above 10 (11..30): not more than 20
    assert one.is_lost(9, 3, mss) is True                # 21 octets above 9
    assert board((10, 32)).is_lost(10, 3, mss) is True


def test_holes_each_with_is_lost():
    sb = board((20, 30), (40, 50), (60, 70))
    assert sb.holes(10, 3, 10) == [(10, 20, True), (30, 40, False), (50, 60, False)]
    assert sb.holes(20, 2, 10) == [(30, 40, True), (50, 60, False)]
    # SMSS 5: more than 10 octets above makes a hole lost; the last hole has exactly 10 above it
    assert sb.holes(10, 3, 5) == [(10, 20, True), (30, 40, True), (50, 60, False)]
    assert board().holes(10, 3, 10) == []


def test_set_pipe():
    sb = board((20, 30), (40, 50))
    holes = sb.holes(10, 2, 10)                          # (10, 20) lost, (30, 40) not
    assert holes == [(10, 20, True), (30, 40, False)]
    assert sb.pipe(10, 60, 10, holes) == 10 + 10         # the un-lost hole and the octets above the top
    assert sb.pipe(10, 60, 15, holes) == 5 + 10 + 10     # 5 octets of the lost hole resent
    assert sb.pipe(10, 60, 35, holes) == 10 + 5 + 10 + 10
    assert sb.pipe(10, 60, 55, holes) == 10 + 10 + 10 + 10 + 5
    assert sb.pipe(10, 50, 10, holes) == 10              # nothing above the top
    assert Scoreboard().pipe(10, 30, 20, []) == 20 + 10


def test_reassembly_merges_counts_and_pulls_in_order():
    r = Reassembly()
    assert r.add(10, b"abc") == 3 and r.add(13, b"de") == 2 and r.blocks == [[10, bytearray(b"abcde")]]
    assert r.add(8, b"xyab") == 2 and r.blocks == [[8, bytearray(b"xyabcde")]]
    assert r.add(20, b"Q") == 1 and r.add(14, b"eFGHIJ") == 5
    assert r.blocks == [[8, bytearray(b"xyabcdeFGHIJQ")]] and r.nbytes == 13
    out = bytearray()
    assert r.pull(5, out) == 5 and out == b""
    assert r.pull(10, out) == 21 and out == b"abcdeFGHIJQ" and r.nbytes == 0 and r.blocks == []


def test_sack_blocks_most_recent_first_each_once_within_the_limit():
    r = Reassembly()
    r.add(10, b"aa")
    r.add(20, b"bb")
    r.add(30, b"cc")
    assert r.sack_blocks(0, 4) == [(30, 32), (20, 22), (10, 12)]
    r.add(12, b"x")                                      # extends the first block: reported first
    assert r.sack_blocks(0, 4) == [(10, 13), (30, 32), (20, 22)]
    assert r.sack_blocks(0, 2) == [(10, 13), (30, 32)]
    out = bytearray()
    r.pull(10, out)
    assert r.sack_blocks(13, 4) == [(30, 32), (20, 22)]
    assert Reassembly().sack_blocks(0, 4) == []
    quiet = Reassembly(sack=False)
    quiet.add(10, b"a")
    assert quiet.sack_blocks(0, 4) == []                 # no recency kept: nothing to report


def test_the_highest_sacked_octet_is_the_last_range_s_end():
    assert board((10, 20), (30, 40), (50, 60)).highest() == 60


def test_is_lost_by_the_count_of_ranges_alone_and_by_the_sum_of_octets_alone():
    tiny = board((20, 21), (30, 31), (40, 41))            # 3 octets in 3 ranges, SMSS 10
    assert tiny.is_lost(10, 3, 10) is True and tiny.is_lost(10, 4, 10) is False
    assert tiny.holes(10, 3, 10)[0] == (10, 20, True) and tiny.holes(10, 3, 10)[1] == (21, 30, False)
    two = board((20, 35), (40, 55))                       # 30 octets in 2 ranges: more than 2 x 10
    assert two.is_lost(10, 3, 10) is True


def test_reassembly_merges_data_that_touches_a_block_on_either_side():
    r = Reassembly()
    r.add(10, b"ab")
    assert r.add(8, b"xy") == 2 and r.blocks == [[8, bytearray(b"xyab")]]     # ends where it starts
    assert r.add(12, b"cd") == 2 and r.blocks == [[8, bytearray(b"xyabcd")]]  # starts where it ends


def test_reassembly_fills_gaps_across_several_blocks_counting_every_new_octet():
    r = Reassembly()
    r.add(0, b"A")
    r.add(10, b"bb")
    r.add(20, b"cc")
    r.add(30, b"dd")
    # from 8 to 26: 2 new on the left of [10, 12), the gap 12..20, over [20, 22), then 22..26 new
    assert r.add(8, bytes(range(18))) == 2 + 8 + 4
    assert [(s, len(d)) for s, d in r.blocks] == [(0, 1), (8, 18), (30, 2)]
    assert bytes(r.blocks[1][1]) == bytes(range(2)) + b"bb" + bytes(range(4, 12)) + b"cc" + bytes(range(14, 18))
    assert r.nbytes == 1 + 18 + 2


def test_sack_blocks_skip_stale_and_repeated_entries_not_the_rest():
    r = Reassembly()
    r.add(20, b"bb")
    r.add(10, b"aa")
    r.add(11, b"a")                                       # a repeat inside [10, 12)
    assert r.sack_blocks(0, 4) == [(10, 12), (20, 22)]
    r2 = Reassembly()
    r2.add(20, b"b")
    r2.add(10, b"a")
    r2.pull(10, bytearray())                              # the block at 10 is delivered
    assert r2.sack_blocks(5, 4) == [(20, 21)]             # its entry is stale: skipped


# ====================================================================================================
# SACK (RFC 2018) loss recovery (RFC 6675) against Reno on the same loss pattern, and the
# scoreboard arithmetic (IsLost, SetPipe) on its own.


ISS = 1000


LOST = (19, 21, 23)            # three segments of the same window (cwnd 21 segments)


def run(variant: str, lost: tuple[int, ...] = LOST, redrop: tuple[int, ...] = (),
        **cfg: Any) -> dict[str, Any]:
    a, b, ra, _ = pair(variant, iss_a=ISS, time_wait=0.1, **cfg)
    sim, data = bulk(a, b, 60 * 1000, delay=0.0625)
    for i in lost:
        sim.drop("a", seq_of(ISS, i), *((1, 2) if i in redrop else (1,)))
    # Every byte the receiver ever SACKed, as seen by the sender, and every data segment
    # the sender emits afterwards: none may overlap (RFC 6675: never resend SACKed data).
    sacked: list[tuple[int, int]] = []
    overlaps: list[tuple[float, int, int]] = []
    done: list[float] = []

    def on_deliver(now: float, dst: str, seg) -> None:  # type: ignore[no-untyped-def]
        if dst == "a":
            sacked.extend(((lo - ISS) & MASK, (hi - ISS) & MASK) for lo, hi in seg.sack)
            if not done and a.bytes_acked == len(data):
                done.append(now)

    def on_send(now: float, src: str, seg) -> None:  # type: ignore[no-untyped-def]
        if src == "a" and seg.payload:
            s = (seg.seq - ISS) & MASK
            e = s + len(seg.payload)
            overlaps.extend((now, s, e) for lo, hi in sacked if s < hi and lo < e)
    sim.after_deliver.append(on_deliver)
    sim.after_send.append(on_send)
    sim.run()
    assert bytes(sim.received["b"]) == data and a.is_closed and b.is_closed
    rtx = [f["seq"] for f in ra.of("rtx")]
    return {"a": a, "rec": ra, "sim": sim, "overlaps": overlaps, "done": done[0], "rtx": rtx,
            "sacked": sacked}


def test_sack_recovers_three_losses_in_one_episode() -> None:
    r = run("sack")
    a: TcpConnection = r["a"]
    rec: Recorder = r["rec"]
    assert rec.of("loss") == [{"kind": "dupack", "seq": seq_of(ISS, 19)}]
    assert a.stats["losses_dupack"] == 1 and a.stats["losses_rto"] == 0
    # exactly the three lost segments, once each, lowest first (NextSeg rule 1)
    assert r["rtx"] == [seq_of(ISS, i) for i in LOST]
    assert a.stats["retransmissions"] == 3
    assert r["sacked"] and r["overlaps"] == []
    # RFC 6675 sec. 5 (4.2): ssthresh = cwnd = FlightSize / 2 (21 segments in flight);
    # cwnd is not touched during recovery; afterwards congestion avoidance.
    cw = [(f["cwnd"], f["ssthresh"]) for f in rec.of("cwnd")]
    entry = cw.index((10500, 10500))
    assert cw[entry - 1] == (21000, 1 << 30)
    assert cw[entry + 1: entry + 4] == [(10595, 10500), (10689, 10500), (10782, 10500)]
    # recovery ended when SND.UNA passed the recovery point, before the first CA step
    (t_entry, _), (t_ca, _) = [(t, f) for t, f in rec.timed("cwnd")][entry: entry + 2]
    assert t_entry == 0.625 and t_ca == 0.875


def test_reno_needs_more_on_the_same_pattern() -> None:
    sack, reno = run("sack"), run("reno")
    a: TcpConnection = reno["a"]
    # plain Reno: each partial ACK ends recovery; the second loss needs a new round of
    # dupacks (another halving), the third gets too few dupacks and waits for the RTO
    assert [f["kind"] for f in reno["rec"].of("loss")] == ["dupack", "dupack", "rto"]
    assert reno["rtx"] == [seq_of(ISS, i) for i in LOST]
    assert a.stats["losses_rto"] == 1
    # same three retransmissions, but Reno waits for a timeout on top of its two fast
    # retransmits and finishes more than half a second (4 RTTs) later
    assert sack["done"] == pytest.approx(1.125)
    assert reno["done"] > sack["done"] + 0.5
    assert reno["a"].stats["retransmissions"] == sack["a"].stats["retransmissions"] == 3


def test_sack_rto_keeps_scoreboard_and_skips_sacked_data() -> None:
    # the retransmission of 21 is lost too: RFC 6675 cannot retransmit it twice, so the
    # RTO fires; the slow start after it must still never resend SACKed data.
    r = run("sack", redrop=(21,))
    a: TcpConnection = r["a"]
    assert [f["kind"] for f in r["rec"].of("loss")] == ["dupack", "rto"]
    assert r["overlaps"] == []
    assert r["rtx"] == [seq_of(ISS, i) for i in (19, 21, 23, 21)]
    # a timeout inside recovery keeps the recovery's (lower) ssthresh, cwnd = 1 SMSS
    assert {"cwnd": 1000, "ssthresh": 10500} in r["rec"].of("cwnd")
    assert a.stats["losses_rto"] == 1


def test_sack_with_many_holes_never_resends_sacked_bytes() -> None:
    lost = tuple(range(20, 40, 2))                    # every other segment of a window
    r = run("sack", lost=lost)
    assert r["overlaps"] == []
    assert sorted(r["rtx"]) == [seq_of(ISS, i) for i in lost]
    assert r["a"].stats["losses_rto"] == 0


def test_sack_sender_enters_recovery_on_sacked_segments() -> None:
    # hand-fed: 6 segments out, the first lost, three dupacks each SACKing one more
    a, _ = client("sack", iss=ISS, init_cwnd=6)
    a.send(bytes(6000))
    out = a.segments_to_send(1.0)
    assert [s.seq for s in out] == [seq_of(ISS, i) for i in range(6)]
    base = seq_of(ISS, 0)
    for k in range(1, 4):
        a.on_segment(ack_seg(a, base, sack=((seq_of(ISS, 1), seq_of(ISS, 1 + k)),)), 1.5)
        if k < 3:
            assert not a.in_recovery and a.segments_to_send(1.5) == []
    assert a.in_recovery and a.stats["dupacks_received"] == 3
    assert a.sacked_blocks == [(seq_of(ISS, 1), seq_of(ISS, 4))]
    out = a.segments_to_send(1.5)
    # FlightSize 6000 -> cwnd = ssthresh = 3000; pipe = 2 unsacked segments above the
    # SACKed range + the retransmission = 3000: only the lost segment goes out
    assert (a.cwnd, a.ssthresh) == (3000, 3000)
    assert [(s.seq, len(s.payload)) for s in out] == [(base, 1000)]
    # a duplicate ACK that SACKs nothing new is not a dupack (RFC 6675 sec. 2)
    a.on_segment(ack_seg(a, base, sack=((seq_of(ISS, 1), seq_of(ISS, 4)),)), 1.6)
    assert a.stats["dupacks_received"] == 3
    # segment 4 SACKed: pipe drops by one segment -> one new segment may go
    a.on_segment(ack_seg(a, base, sack=((seq_of(ISS, 1), seq_of(ISS, 5)),)), 1.7)
    assert a.segments_to_send(1.7) == []               # no new data queued; nothing to resend
    # the retransmission arrives: cumulative ACK past the recovery point ends recovery
    a.on_segment(ack_seg(a, seq_of(ISS, 6)), 2.0)
    assert not a.in_recovery and a.sacked_blocks == [] and a.all_acked


# ---------------------------------------------------------------- scoreboard arithmetic
def test_scoreboard_merge_advance_and_queries() -> None:
    sb = Scoreboard()
    assert sb.add(3000, 4000) == 1000
    assert sb.add(5000, 6000) == 1000
    assert sb.add(3500, 5500) == 1000                 # bridges both, 1000 new bytes
    assert sb.blocks == [[3000, 6000]] and sb.sacked == 3000
    assert sb.add(8000, 9000) == 1000 and sb.add(8000, 9000) == 0
    assert sb.skip(3200) == 6000 and sb.skip(7000) == 7000
    assert sb.next_start(6000) == 8000 and sb.next_start(8000) is None
    assert sb.sacked_between(0, 8500) == 3500
    sb.advance(4000)
    assert sb.blocks == [[4000, 6000], [8000, 9000]] and sb.sacked == 3000
    sb.advance(7000)
    assert sb.blocks == [[8000, 9000]] and sb.sacked == 1000


def test_is_lost_and_pipe_follow_rfc6675() -> None:
    sb = Scoreboard()
    # una = 1000; holes [1000,2000) [3000,4000) [5000,6000); SACKed 2000-3000, 4000-5000, 6000-7000
    for s in (2000, 4000, 6000):
        sb.add(s, s + 1000)
    holes = sb.holes(1000, 3, 1000)
    # 3 discontiguous SACKed ranges above the first hole -> lost; the others are not
    assert holes == [(1000, 2000, True), (3000, 4000, False), (5000, 6000, False)]
    assert sb.is_lost(1000, 3, 1000) and not sb.is_lost(3000, 3, 1000)
    # HighData 9000: pipe = not-lost holes (2000) + the unSACKed tail [7000, 9000)
    assert sb.pipe(1000, 9000, 1000, holes) == 4000
    # after retransmitting the first hole (HighRxt = 2000) it counts once more
    assert sb.pipe(1000, 9000, 2000, holes) == 5000
    # bytes rule: > (DupThresh-1)*SMSS SACKed above: one 2500-byte range suffices
    sb2 = Scoreboard()
    sb2.add(2000, 4500)
    assert sb2.holes(1000, 3, 1000) == [(1000, 2000, True)]


def test_reassembly_merges_and_reports_recent_blocks_first() -> None:
    r = Reassembly()
    assert r.add(3000, b"c" * 1000) == 1000
    assert r.add(5000, b"e" * 1000) == 1000
    assert r.sack_blocks(1000, 4) == [(5000, 6000), (3000, 4000)]
    assert r.add(4000, b"d" * 1000) == 1000           # fills the gap: one block
    assert r.sack_blocks(1000, 4) == [(3000, 6000)]
    assert r.add(3500, b"x" * 100) == 0               # duplicate bytes are not new
    assert r.nbytes == 3000
    out = bytearray(b"a" * 1000)
    assert r.pull(2000, out) == 2000                  # nothing in order yet
    out += b"b" * 1000
    assert r.pull(3000, out) == 6000
    assert bytes(out) == b"a" * 1000 + b"b" * 1000 + b"c" * 1000 + b"d" * 1000 + b"e" * 1000
    assert r.nbytes == 0 and r.sack_blocks(6000, 4) == []
