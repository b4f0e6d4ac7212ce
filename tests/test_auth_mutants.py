"""Rules of routing/overlay/auth.py that the mutation run (bench/mutation.py, docs/MUTATION.md) found unpinned.

The replay window is RFC 4303 sec. 3.4.3's sliding window: a number above the highest slides the
window (what was seen stays seen, shifted), one within it is accepted once, and the bitmap never
holds more than the window's size.  A node's sequence numbers start at ``first_seq`` and grow by one
per datagram it seals or reseals.
"""
import pytest

from routing.overlay.auth import MeshAuth, ReplayWindow
from routing.overlay.wire import AuthError, MacKey, encode_auth, link_id, relayed, verify_auth
from test_auth import KEY, A, B, C, data_pkt


def test_numbers_seen_before_the_window_slides_stay_seen_after_it():
    w = ReplayWindow(8)
    assert w.accept(1) and w.accept(2) and w.accept(4)
    assert not w.accept(1) and not w.accept(2) and not w.accept(4)
    assert w.accept(3) and not w.accept(3)


def test_reordered_numbers_are_each_remembered():
    w = ReplayWindow(8)
    assert w.accept(6) and w.accept(3) and w.accept(5)
    assert not w.accept(3) and not w.accept(5) and not w.accept(6)
    assert w.accept(4)


def test_a_jump_beyond_the_window_keeps_only_the_new_highest():
    w = ReplayWindow(8)
    assert w.accept(1) and w.accept(1 + 8) and not w.accept(1 + 8)   # a jump of exactly the window
    assert w.accept(2)                                               # 7 behind: inside, never seen
    assert w.accept(100) and not w.accept(100) and w.accept(99)


def test_the_bitmap_is_bounded_by_the_window_size():
    w = ReplayWindow(8)
    for seq in range(1, 40):
        assert w.accept(seq)
        assert w.bits.bit_length() <= w.size
    assert w.accept(2**64 - 1)          # the largest number the wire carries: no bitmap that long
    assert w.bits == 1 and not w.accept(2**64 - 1)


def test_first_seq_below_one_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="^sequence numbers start at 1$"):
        MeshAuth(KEY, A, [B], first_seq=0)


def test_a_node_seals_from_first_seq_one_by_one():
    key, link = MacKey(KEY), link_id(A, B)
    a = MeshAuth(KEY, A, [B], first_seq=1000)
    assert [verify_auth(a.seal(data_pkt(), B), key, link) for _ in range(3)] == [1000, 1001, 1002]


def test_a_reseal_takes_the_next_number_and_the_onward_link():
    """A relay passes a sealed datagram on as bytes (routing.overlay.wire.relayed): MeshAuth.reseal seals it
    for the next link with this node's next sequence number, so the next hop accepts it once."""
    key = MacKey(KEY)
    b = MeshAuth(KEY, B, [A, C], first_seq=50)
    c = MeshAuth(KEY, C, [B], first_seq=1)
    heard = encode_auth(data_pkt(), key, link_id(A, B), 7)
    buf = relayed(heard, 1)
    b.reseal(buf, C)
    assert verify_auth(bytes(buf), key, link_id(B, C)) == 50
    assert c.open(bytes(buf), B).segment == data_pkt().segment
    with pytest.raises(AuthError, match="replay"):
        c.open(bytes(buf), B)
    assert verify_auth(b.seal(data_pkt(), C), key, link_id(B, C)) == 51
