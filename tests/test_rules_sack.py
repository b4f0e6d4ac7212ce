"""tcp_user/sack.py's rules at their edges (issue 30, mutation run).

RFC 6675 sec. 3-4: the scoreboard of SACKed ranges (half-open, merged when they touch), forgotten below
SND.UNA; IsLost(seq): DupThresh discontiguous SACKed ranges above seq, or *more than* (DupThresh - 1) x SMSS
SACKed octets above it; SetPipe: every un-SACKed octet below HighData counts once unless lost and once more
if retransmitted (below HighRxt).  RFC 2018 sec. 4: the receiver reports the block of the most recent
segment first, then the most recently reported ones, each block once, at most ``limit``.
"""
from __future__ import annotations

from tcp_user.sack import Reassembly, Scoreboard


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
