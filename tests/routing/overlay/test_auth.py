"""Issue 13, item 3: the authenticated overlay drops strangers, forged and replayed packets, by reason."""
import socket
import threading
import time
import pytest
from hypothesis import given, settings, strategies as st
from experiments.build import build_node
from experiments.schema import load_experiment
from routing.overlay.auth import MeshAuth, ReplayWindow
from routing.drivers.eventlog import EventLog
from routing.drivers.udp import UdpNode
from routing.overlay.wire import (AUTH_TRAILER_LEN, AUTH_VERSION, DATA, PROBE, AuthError, MacKey, Packet, Probe,
                                  _general_body, decode_authentic, encode_auth, link_id, verify_auth, relayed)
from tests.cores import packets
from aspan.fields import AspanFields
from tcp_user.segment import ACK, Segment


A, B, C, D = "10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"


KEY = bytes(range(32))


def data_pkt(seq=0):
    return Packet(DATA, A, 5000, D, 6000, 0, AspanFields(), Segment(seq, 0, ACK, 100, (), b"p" * 100))


def test_replay_window_accepts_each_number_once_and_nothing_too_old():
    w = ReplayWindow(8)
    assert w.accept(5) and not w.accept(5)
    assert w.accept(3) and not w.accept(3)         # reordered, within the window: once
    assert w.accept(20) and not w.accept(12)       # 20 - 12 = 8: out of the window
    assert w.accept(13) and w.accept(100) and not w.accept(92) and w.accept(93)


def test_a_sealed_packet_opens_once_on_its_link_only():
    a, b = MeshAuth(KEY, A, [B], first_seq=1), MeshAuth(KEY, B, [A, C], first_seq=1)
    c = MeshAuth(KEY, C, [B, D], first_seq=1)
    sealed = a.seal(data_pkt(), B)
    assert sealed[1] == AUTH_VERSION
    assert b.open(sealed, A) == data_pkt()
    with pytest.raises(AuthError, match="replay"):
        b.open(sealed, A)
    with pytest.raises(AuthError, match="stranger"):
        b.open(a.seal(data_pkt(), B), None)          # not from a neighbour's address
    with pytest.raises(AuthError, match="stranger"):
        c.open(a.seal(data_pkt(), B), A)             # A is no neighbour of C
    with pytest.raises(AuthError, match="forged"):
        b.open(a.seal(data_pkt(), C), A)             # sealed for another link (A -> C)
    with pytest.raises(AuthError, match="forged"):
        b.open(MeshAuth(bytes(32), A, [B], 1).seal(data_pkt(), B), A)   # another key
    with pytest.raises(AuthError, match="forged"):
        b.open(b"", A)


@given(packets(), st.integers(0, 10_000), st.integers(1, 255))
@settings(max_examples=300)
def test_every_change_of_a_sealed_datagram_is_forged(pkt, where, xor):
    key, link = MacKey(KEY), link_id(A, B)
    sealed = encode_auth(pkt, key, link, 7)
    assert verify_auth(sealed, key, link) == 7 and decode_authentic(sealed) == pkt
    mangled = bytearray(sealed)
    mangled[where % len(sealed)] ^= xor
    with pytest.raises(AuthError):
        verify_auth(bytes(mangled), key, link)
    with pytest.raises(AuthError):
        verify_auth(sealed[: where % len(sealed)], key, link)


@given(packets())
@settings(max_examples=300)
def test_the_fast_path_seals_what_the_general_code_seals(pkt):
    key, link = MacKey(KEY), link_id(A, B)
    body = _general_body(pkt, AUTH_VERSION)
    seqb = (9).to_bytes(8, "big")
    assert encode_auth(pkt, key, link, 9) == body + seqb + key.tag(link, body, seqb)
    assert len(encode_auth(pkt, key, link, 9)) == len(body) + AUTH_TRAILER_LEN


# ---- the UDP driver ----------------------------------------------------------------------------
def _socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(2.0)
    return s


def test_a_node_hears_only_authentic_fresh_packets_from_its_neighbours(tmp_path):
    """Node B on loopback with the MAC on: a probe from A (sealed with the key, from A's address)
    counts; the same datagram again, a bit-flipped one and one from another address are dropped as
    replay, forged and stranger; nothing of them reaches the core."""
    exp = load_experiment({"name": "t", "etx": {"settle_s": 0}, "flows": [{"segments": 1}]})
    cfg = exp.variants[0].config
    log = EventLog(tmp_path / "B.log", "B", batch=True)
    core = build_node(cfg, "B", 1, log, time.time(), internal_probes=False, apps=False)
    sa, sc, stranger = _socket(), _socket(), _socket()
    node = UdpNode(core, ("127.0.0.1", 0), {A: sa.getsockname(), C: sc.getsockname()}, log,
                   deadline=time.time() + 20, auth=MeshAuth(KEY, B, [A, C], first_seq=1))
    bind = node.bind_address
    t = threading.Thread(target=node.run)
    t.start()
    try:
        a = MeshAuth(KEY, A, [B], first_seq=1000)
        probe = a.seal(Packet(PROBE, A, 0, B, 0, probe=Probe(1, -1.0)), B)
        sa.sendto(probe, bind)
        sa.sendto(probe, bind)                                     # replay
        flipped = bytearray(a.seal(Packet(PROBE, A, 0, B, 0, probe=Probe(2, -1.0)), B))
        flipped[10] ^= 1
        sa.sendto(bytes(flipped), bind)                            # forged
        stranger.sendto(a.seal(Packet(PROBE, A, 0, B, 0, probe=Probe(3, -1.0)), B), bind)   # stranger
        for _ in range(100):
            if node.rx_datagrams >= 4:
                break
            time.sleep(0.02)
    finally:
        node.stop()
        t.join(10)
        for s in (sa, sc, stranger):
            s.close()
        log.close()
    drops = core.engine.drops
    assert (drops["replay"], drops["forged"], drops["stranger"], drops["malformed"]) == (1, 1, 1, 0)
    assert core.etx.link(A).probes.received == 1     # the authentic probe, and only it, reached the ETX table


# ====================================================================================================
# Rules of routing/overlay/auth.py that the mutation run (bench/mutation.py, docs/MUTATION.md) found unpinned.
#
# The replay window is RFC 4303 sec. 3.4.3's sliding window: a number above the highest slides the
# window (what was seen stays seen, shifted), one within it is accepted once, and the bitmap never
# holds more than the window's size.  A node's sequence numbers start at ``first_seq`` and grow by one
# per datagram it seals or reseals.


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
