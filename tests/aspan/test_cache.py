"""aspan/cache.py's rules (issue 30, mutation run): 32-bit sequence numbers unwrapped, a flow's cache in order.

* ``unwrap`` (RFC 793 sec. 3.3's modular sequence space, RFC 1982's comparison): a 32-bit number maps
  to the 64-bit line at the distance from the reference in [-2**31, 2**31); the number half the
  space away lies *behind* the reference.
* ``FlowCache``: segments kept in sequence order whatever order they come in (ns-2 snoop_insert);
  caching a number again replaces its entry and adds nothing; ``free_below`` frees from the lowest
  up while a segment ends at or below the ACK, and stops at the first that does not (ns-2
  snoop_cleanbufs_): what it frees and how many bytes.
"""
from __future__ import annotations

import pytest
from aspan.cache import HALF, SEQ_MOD, FlowCache, unwrap


def test_the_modulus_and_its_half():
    assert (SEQ_MOD, HALF) == (2 ** 32, 2 ** 31)


@pytest.mark.parametrize("ref, seq32, expected", [
    (0, 5, 5),
    (1000, 1000, 1000),
    (1000, 0, 0),                                   # behind the reference
    (SEQ_MOD - 10, 5, SEQ_MOD + 5),                 # past the wrap
    (SEQ_MOD + 5, SEQ_MOD - 10, SEQ_MOD - 10),      # behind it, before the wrap
    (3 * SEQ_MOD + 100, 100, 3 * SEQ_MOD + 100),    # several wraps on
    (0, HALF - 1, HALF - 1),                        # the farthest ahead
    (0, HALF, -HALF),                               # half the space away: behind
    (SEQ_MOD, HALF, SEQ_MOD - HALF),
    (HALF, 0, 0),                                   # exactly half behind
    (HALF + 1, 0, SEQ_MOD),                         # more than half behind: ahead
])
def test_unwrap_picks_the_number_nearest_the_reference(ref, seq32, expected):
    assert unwrap(ref, seq32) == expected
    assert unwrap(ref, seq32) % SEQ_MOD == seq32


def test_segments_are_kept_in_sequence_order_whatever_order_they_come_in():
    c = FlowCache()
    assert [c.add(s, 10, f"p{s}") for s in (30, 10, 50, 20, 40, 0)] == [True] * 6
    assert c.seqs == [0, 10, 20, 30, 40, 50] and len(c) == 6
    assert c.get(20) == (10, "p20") and c.get(25) is None


def test_caching_a_number_again_replaces_its_entry_and_adds_nothing():
    c = FlowCache()
    c.add(0, 10, "a")
    c.add(10, 10, "b")
    assert c.add(10, 5, "c") is False
    assert c.seqs == [0, 10] and c.entries[10] == (5, "c") and len(c) == 2
    assert c.add(0, 20, "d") is False and c.seqs == [0, 10] and c.get(0) == (20, "d")


def test_free_below_frees_segments_ending_at_or_below_the_ack_and_counts_their_bytes():
    c = FlowCache()
    for s, n in ((0, 100), (100, 200), (300, 50), (350, 100)):
        c.add(s, n, s)
    assert c.free_below(299) == (1, 100)             # 100..300 ends past 299
    assert c.seqs == [100, 300, 350] and set(c.entries) == {100, 300, 350}
    assert c.free_below(350) == (2, 250)             # 300..350 ends exactly at the ACK
    assert c.seqs == [350] and set(c.entries) == {350}
    assert c.free_below(349) == (0, 0) and c.seqs == [350]
    assert c.free_below(10_000) == (1, 100) and c.seqs == [] and c.entries == {} and len(c) == 0
    assert c.free_below(10_000) == (0, 0)


def test_free_below_stops_at_the_first_segment_not_acknowledged():
    c = FlowCache()
    c.add(0, 300, "long")                            # 0..300
    c.add(100, 100, "inner")                         # 100..200, inside it
    assert c.free_below(250) == (0, 0)               # the lowest is not wholly acknowledged: stop there
    assert c.seqs == [0, 100]
    assert c.free_below(300) == (2, 400) and c.seqs == []


def test_caches_are_separate():
    a, b = FlowCache(), FlowCache()
    a.add(0, 1, "x")
    assert b.seqs == [] and b.entries == {}
