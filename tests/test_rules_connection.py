"""The connection's rules (tcp_user/connection.py), one test each, from the RFCs it cites.

RFC 9293 (the state machine and the segment arrival rules), RFC 6298 (the retransmission timer),
RFC 2018 (the SACK blocks the receiver sends), RFC 1122 sec. 4.2.3.2 / RFC 5681 sec. 4.2 (delayed
ACKs), RFC 1122 sec. 4.2.3.3 / 4.2.3.4 (window updates, sender SWS avoidance) and the module's own
stated choices (its docstring).  Each test is derived from the rule, not from a mutant's text; the
mutation run of the module (docs/MUTATION.md) names the rules its survivors broke.
"""
from __future__ import annotations

import pytest

from test_tcp_harness import PEER_WINDOW, Recorder, ack_seg, client, data_seg, seq_of, server
from tcp_user.config import TcpConfig
from tcp_user.connection import TcpConnection
from tcp_user.segment import ACK, FIN, RST, SYN, Segment

ISS = 7000
P = 90_000                              # the peer's ISS
MASK = 0xFFFFFFFF


# ---------------------------------------------------------------- RFC 6298: the retransmission timer
def test_rfc6298_the_first_sample_sets_srtt_r_and_rttvar_r_over_2() -> None:
    # sec. 2.2: SRTT <- R, RTTVAR <- R/2, RTO <- SRTT + max(G, K*RTTVAR) with K = 4, G = 0
    a, _ = client("reno", iss=ISS, rtt=0.75, min_rto=0.001)
    assert (a.srtt, a.rttvar, a.rto) == (0.75, 0.375, 0.75 + 4 * 0.375)
    assert a.rtt_samples == 1


def established_client(**cfg) -> tuple[TcpConnection, Recorder]:
    """A client of ISS 7000 established at t=0.5 (first RTT sample 0.5 s: RTO 1.5 s)."""
    return client("reno", iss=ISS, peer_iss=P, rtt=0.5, **cfg)


def wire(rel: int) -> int:
    """Our 32-bit sequence number for relative ``rel`` (1 is the first data byte)."""
    return (ISS + rel) & MASK


def peer(rel: int) -> int:
    """The peer's 32-bit sequence number for relative ``rel``."""
    return (P + rel) & MASK


# ---------------------------------------------------------------- RFC 9293 sec. 3.10: the user calls
def test_open_calls_are_refused_once_the_connection_was_opened() -> None:
    a = TcpConnection(TcpConfig(), iss=ISS)
    a.connect(0.0)
    with pytest.raises(RuntimeError, match=r"^connect\(\) in state SYN_SENT$"):
        a.connect(0.1)
    with pytest.raises(RuntimeError, match=r"^listen\(\) in state SYN_SENT$"):
        a.listen(0.1)
    b = TcpConnection(TcpConfig(), iss=ISS)
    b.listen()
    with pytest.raises(RuntimeError, match=r"^connect\(\) in state LISTEN$"):
        b.connect(0.0)
    # a connection that ended (here: reset) is CLOSED again, but it is not a fresh one
    c, _ = established_client()
    c.on_segment(Segment(seq=peer(1), flags=RST), 1.0)
    assert c.state == "CLOSED"
    with pytest.raises(RuntimeError, match=r"^connect\(\) in state CLOSED$"):
        c.connect(1.1)
    with pytest.raises(RuntimeError, match=r"^listen\(\) in state CLOSED$"):
        c.listen(1.1)


def test_send_after_close_is_refused_and_empty_data_queues_nothing() -> None:
    c, _ = established_client()
    c.send(b"")
    assert c.segments_to_send(1.0) == [] and c.all_acked
    c.close(1.0)
    with pytest.raises(RuntimeError, match=r"^send\(\) after close\(\)$"):
        c.send(b"x")


def test_close_is_idempotent_and_a_never_opened_connection_ignores_it() -> None:
    fresh = TcpConnection(TcpConfig(), iss=ISS)
    fresh.close(0.0)
    assert fresh.state == "CLOSED" and fresh.segments_to_send(0.0) == []
    c, rec = established_client()
    c.close(1.0)
    c.close(1.1)                        # the FIN is queued once; no second CLOSE event
    assert c.state == "FIN_WAIT_1"
    assert [f["state"] for f in rec.of("state")] == ["SYN_SENT", "ESTABLISHED", "FIN_WAIT_1"]
    (fin,) = c.segments_to_send(1.1)
    assert fin.flags == FIN | ACK and fin.seq == wire(1) and fin.length == 1


def test_close_in_listen_goes_back_to_closed_and_in_syn_sent_waits_for_established() -> None:
    rec = Recorder()
    b = TcpConnection(TcpConfig(), iss=ISS, emit=rec)
    b.listen(0.0)
    b.close(0.5)
    assert b.state == "CLOSED" and rec.of("state") == [{"state": "LISTEN"}, {"state": "CLOSED"}]
    a = TcpConnection(TcpConfig(), iss=ISS)
    a.connect(0.0)
    a.segments_to_send(0.0)
    a.send(b"d" * 10)
    a.close(0.1)
    assert a.state == "SYN_SENT"
    a.on_segment(Segment(seq=P, ack=wire(1), flags=SYN | ACK, window=PEER_WINDOW), 0.5)
    assert a.state == "FIN_WAIT_1"
    out = a.segments_to_send(0.5)
    assert [(s.flags, s.payload) for s in out] == [(ACK, b""), (ACK | FIN, b"d" * 10)]


def test_a_partial_read_returns_the_oldest_bytes_and_keeps_the_rest() -> None:
    b, _ = server("reno", iss=ISS, peer_iss=P)
    b.on_segment(data_seg(0, peer_iss=P, ack=wire(1)), 1.0)
    b.on_segment(data_seg(1, peer_iss=P, ack=wire(1)), 1.0)
    assert b.read(0) == b""
    assert b.read(1500) == bytes([0]) * 1000 + bytes([1]) * 500
    assert b.read(-1) == bytes([1]) * 500
    assert b.read() == b""


# ---------------------------------------------------------------- RFC 9293 sec. 3.10.7.2 / 3.10.7.3: opening
@pytest.mark.parametrize("flags", [RST, ACK, SYN | RST, SYN | ACK, 0, FIN])
def test_listen_takes_only_a_plain_syn(flags: int) -> None:
    b = TcpConnection(TcpConfig(), iss=ISS)
    b.listen()
    b.on_segment(Segment(seq=P, ack=wire(1), flags=flags, window=PEER_WINDOW), 0.0)
    assert b.state == "LISTEN" and b.segments_to_send(0.0) == [] and b.rcv_nxt == 0


def test_listen_answers_a_syn_with_syn_ack_for_the_next_sequence_number() -> None:
    b = TcpConnection(TcpConfig(), iss=ISS)
    b.listen()
    b.on_segment(Segment(seq=P, flags=SYN, window=12_345), 0.0)
    assert b.state == "SYN_RCVD" and b.snd_wnd == 12_345 and b.rcv_nxt == peer(1)
    (synack,) = b.segments_to_send(0.0)
    assert (synack.seq, synack.ack, synack.flags) == (ISS, peer(1), SYN | ACK)


def syn_sent() -> tuple[TcpConnection, Recorder]:
    rec = Recorder()
    a = TcpConnection(TcpConfig(), iss=ISS, emit=rec)
    a.connect(0.0)
    assert [s.flags for s in a.segments_to_send(0.0)] == [SYN]
    return a, rec


@pytest.mark.parametrize("ack", [ISS, ISS + 2, ISS - 1])
def test_syn_sent_drops_a_segment_whose_ack_is_not_of_our_syn(ack: int) -> None:
    # 3.10.7.3 first: an ACK must satisfy ISS < SEG.ACK =< SND.NXT; such a RST or SYN+ACK is no answer
    for flags in (SYN | ACK, RST | ACK):
        a, _ = syn_sent()
        a.on_segment(Segment(seq=P, ack=ack & MASK, flags=flags, window=PEER_WINDOW), 0.5)
        assert a.state == "SYN_SENT" and a.segments_to_send(0.5) == []


def test_syn_sent_is_reset_only_by_a_rst_acknowledging_its_syn() -> None:
    a, _ = syn_sent()
    a.on_segment(Segment(seq=P, flags=RST), 0.5)            # no ACK: dropped (3.10.7.3 second)
    assert a.state == "SYN_SENT"
    a.on_segment(Segment(seq=P, ack=wire(1), flags=RST | ACK), 0.6)
    assert a.state == "CLOSED" and a.next_timer() is None


def test_syn_sent_drops_an_acceptable_ack_without_syn() -> None:
    a, _ = syn_sent()
    a.on_segment(Segment(seq=P, ack=wire(1), flags=ACK, window=PEER_WINDOW), 0.5)   # 3.10.7.3 fifth
    assert a.state == "SYN_SENT" and a.segments_to_send(0.5) == [] and a.rcv_nxt == 0


def test_a_syn_alone_in_syn_sent_is_a_simultaneous_open() -> None:
    a, rec = syn_sent()
    a.on_segment(Segment(seq=P, flags=SYN, window=5000), 0.5)
    assert a.state == "SYN_RCVD" and a.snd_wnd == 5000 and a.rcv_nxt == peer(1)
    (synack,) = a.segments_to_send(0.5)
    assert (synack.seq, synack.ack, synack.flags) == (ISS, peer(1), SYN | ACK)


def syn_rcvd() -> TcpConnection:
    b = TcpConnection(TcpConfig(), iss=ISS)
    b.listen()
    b.on_segment(Segment(seq=P, flags=SYN, window=PEER_WINDOW), 0.0)
    b.segments_to_send(0.0)
    return b


def test_syn_rcvd_repeats_its_syn_ack_when_the_peer_repeats_its_syn() -> None:
    b = syn_rcvd()
    b.on_segment(Segment(seq=P, flags=SYN, window=PEER_WINDOW), 1.0)
    (synack,) = b.segments_to_send(1.0)
    assert (synack.seq, synack.ack, synack.flags) == (ISS, peer(1), SYN | ACK)
    assert b.state == "SYN_RCVD" and b.stats["ctl_retransmissions"] == 1


@pytest.mark.parametrize("ack", [ISS, ISS + 2])
def test_syn_rcvd_stays_put_on_an_ack_that_is_not_of_its_syn(ack: int) -> None:
    b = syn_rcvd()
    b.on_segment(Segment(seq=peer(1), ack=ack, flags=ACK, window=PEER_WINDOW, payload=b"z"), 0.5)
    assert b.state == "SYN_RCVD" and b.bytes_received == 0
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"z"), 0.6)
    assert b.state == "ESTABLISHED" and b.bytes_received == 1


# ---------------------------------------------------------------- RFC 9293 sec. 3.10.7.4: segment arrival
def est_server(**cfg) -> TcpConnection:
    b, _ = server("reno", iss=ISS, peer_iss=P, **cfg)
    return b


def rst(rel: int) -> Segment:
    return Segment(seq=peer(rel), flags=RST)


def test_a_zero_length_segment_is_acceptable_anywhere_in_the_window() -> None:
    # first check, a zero-length segment with RCV.WND > 0: RCV.NXT =< SEG.SEQ < RCV.NXT + RCV.WND
    # (an RST shows it: in the window it resets, outside it is dropped without an answer)
    for rel, resets in ((0, False), (1, True), (64_000, True), (64_001, False)):
        b = est_server()
        b.on_segment(rst(rel), 1.0)
        assert (b.state == "CLOSED") == resets, rel
        assert b.segments_to_send(1.0) == []


def test_a_zero_length_segment_at_a_zero_window_must_be_at_rcv_nxt() -> None:
    for rel, resets in ((0, False), (1, True), (2, False)):
        b = est_server(rcv_buffer=1000)
        b.on_segment(data_seg(0, peer_iss=P, ack=wire(1)), 1.0)     # fills the buffer: RCV.WND 0
        assert b.segments_to_send(1.0)[-1].window == 0
        b.on_segment(rst(1000 + rel), 1.1)
        assert (b.state == "CLOSED") == resets, rel


def test_an_unacceptable_segment_draws_an_ack_and_a_wholly_old_one_is_counted() -> None:
    b = est_server()
    b.on_segment(data_seg(0, peer_iss=P, ack=wire(1)), 1.0)
    b.segments_to_send(1.0)
    b.on_segment(data_seg(0, peer_iss=P, ack=wire(1)), 1.1)         # all of it below RCV.NXT
    (ack,) = b.segments_to_send(1.1)
    assert ack.ack == peer(1001) and b.stats["dup_segments_received"] == 1
    # beyond the window: answered, but it is no duplicate
    far = Segment(seq=peer(1001 + 64_000), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"q")
    b.on_segment(far, 1.2)
    (ack,) = b.segments_to_send(1.2)
    assert ack.ack == peer(1001) and b.stats["dup_segments_received"] == 1 and b.bytes_received == 1000


def test_a_segment_is_acceptable_when_its_first_or_its_last_octet_is_in_the_window() -> None:
    b = est_server(rcv_buffer=4000)
    # starts one below RCV.NXT, ends inside: trimmed to the new octets (seventh)
    b.on_segment(Segment(seq=peer(0), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"ab"), 1.0)
    assert b.read() == b"b" and b.rcv_nxt == peer(2)
    # starts at the window's last octet: one octet taken, the rest trimmed off with the FIN
    edge = 2 + 4000 - 1
    b.on_segment(Segment(seq=peer(edge), ack=wire(1), flags=ACK | FIN, window=PEER_WINDOW, payload=b"xyz"), 1.1)
    assert b.stats["ooo_segments_received"] == 1 and b.state == "ESTABLISHED"
    out = b.segments_to_send(1.1)
    assert out[-1].ack == peer(2)
    # one octet past the window: not acceptable, nothing held
    b2 = est_server(rcv_buffer=4000)
    b2.on_segment(Segment(seq=peer(1 + 4000), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"xyz"), 1.0)
    assert b2.stats["ooo_segments_received"] == 0
    # a segment covering the whole window and beyond it: its first octet is at RCV.NXT, the rest trimmed
    b3 = est_server(rcv_buffer=4000)
    b3.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK | FIN, window=PEER_WINDOW, payload=b"k" * 4500), 1.0)
    assert b3.bytes_received == 4000 and b3.state == "ESTABLISHED"
    assert b3.segments_to_send(1.0)[-1].window == 0


def test_at_a_zero_window_only_a_bare_fin_at_rcv_nxt_is_taken() -> None:
    b = est_server(rcv_buffer=1000)
    b.on_segment(data_seg(0, peer_iss=P, ack=wire(1)), 1.0)
    b.segments_to_send(1.0)
    b.on_segment(Segment(seq=peer(1001), ack=wire(1), flags=ACK | FIN, window=PEER_WINDOW, payload=b"x"), 1.1)
    assert b.state == "ESTABLISHED"
    b.on_segment(Segment(seq=peer(1002), ack=wire(1), flags=ACK | FIN, window=PEER_WINDOW), 1.2)
    assert b.state == "ESTABLISHED"
    b.on_segment(Segment(seq=peer(1001), ack=wire(1), flags=ACK | FIN, window=PEER_WINDOW), 1.3)
    assert b.state == "CLOSE_WAIT" and b.rcv_nxt == peer(1002)


def test_an_in_window_syn_draws_a_challenge_ack_and_changes_nothing() -> None:
    # fourth (RFC 5961 sec. 4.2): a SYN in the window is answered with an ACK
    b = est_server()
    b.on_segment(Segment(seq=peer(5), ack=wire(1), flags=SYN | ACK, window=PEER_WINDOW, payload=b"s"), 1.0)
    (ack,) = b.segments_to_send(1.0)
    assert ack.flags == ACK and ack.ack == peer(1) and b.state == "ESTABLISHED" and b.bytes_received == 0


def test_a_segment_without_the_ack_bit_is_dropped() -> None:
    b = est_server()
    b.on_segment(Segment(seq=peer(1), flags=0, window=PEER_WINDOW, payload=b"abc"), 1.0)
    assert b.segments_to_send(1.0) == [] and b.bytes_received == 0
    b.on_segment(Segment(seq=peer(1), flags=FIN, window=PEER_WINDOW), 1.0)
    assert b.state == "ESTABLISHED"


def test_an_ack_of_data_never_sent_is_answered_and_the_segment_dropped() -> None:
    b = est_server()
    b.on_segment(Segment(seq=peer(1), ack=wire(2), flags=ACK, window=PEER_WINDOW, payload=b"abc"), 1.0)
    (ack,) = b.segments_to_send(1.0)
    assert ack.ack == peer(1) and b.bytes_received == 0


def test_an_old_ack_is_ignored_but_the_segment_s_data_is_taken() -> None:
    c, _ = established_client()
    c.send(bytes(2000))
    c.segments_to_send(1.0)
    c.on_segment(ack_seg(c, wire(1001), peer_iss=P), 1.5)
    assert c.snd_una == wire(1001)
    c.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"hi"), 1.6)
    assert c.snd_una == wire(1001) and c.read() == b"hi"


def time_wait_client(time_wait: float = 1.0) -> TcpConnection:
    """A client that closed first: its FIN acknowledged, the peer's FIN received at t=2.0 (TIME_WAIT)."""
    c, _ = established_client(time_wait=time_wait)
    c.close(1.0)
    c.segments_to_send(1.0)
    c.on_segment(ack_seg(c, wire(2), peer_iss=P), 1.5)
    assert c.state == "FIN_WAIT_2"
    c.on_segment(Segment(seq=peer(1), ack=wire(2), flags=ACK | FIN, window=PEER_WINDOW), 2.0)
    assert c.state == "TIME_WAIT" and c.next_timer() == 2.0 + time_wait
    (ack,) = c.segments_to_send(2.0)
    assert ack.ack == peer(2)
    return c


def test_a_retransmitted_fin_in_time_wait_is_acknowledged_and_restarts_the_2msl_timer() -> None:
    c = time_wait_client()
    c.on_segment(Segment(seq=peer(1), ack=wire(2), flags=ACK | FIN, window=PEER_WINDOW), 2.5)
    (ack,) = c.segments_to_send(2.5)
    assert ack.ack == peer(2) and c.next_timer() == 2.5 + 1.0
    # an old segment without FIN is acknowledged but does not restart it
    c.on_segment(Segment(seq=peer(1), ack=wire(2), flags=ACK, window=PEER_WINDOW, payload=b"o"), 3.0)
    assert len(c.segments_to_send(3.0)) == 1 and c.next_timer() == 3.5
    c.on_timer(3.5)
    assert c.state == "CLOSED" and c.is_closed and c.next_timer() is None


def test_time_wait_ends_only_when_its_timer_runs_out() -> None:
    c = time_wait_client(time_wait=2.0)
    c.on_timer(3.999)
    assert c.state == "TIME_WAIT"
    c.on_timer(4.0)
    assert c.state == "CLOSED"


# ---------------------------------------------------------------- RFC 9293 sec. 3.10.7.4 fifth: the send window
def test_the_send_window_is_taken_from_the_newest_segment_by_wl1_and_wl2() -> None:
    # "If SND.WL1 < SEG.SEQ or (SND.WL1 = SEG.SEQ and SND.WL2 =< SEG.ACK), set SND.WND <- SEG.WND"
    c, _ = established_client()
    c.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=3000, payload=b"a"), 1.0)
    assert c.snd_wnd == 3000
    # the same SEG.SEQ and SEG.ACK (a pure window update after it): taken
    c.on_segment(Segment(seq=peer(2), ack=wire(1), flags=ACK, window=2000), 1.1)
    assert c.snd_wnd == 2000
    c.on_segment(Segment(seq=peer(2), ack=wire(1), flags=ACK, window=2500), 1.2)
    assert c.snd_wnd == 2500
    # reordered: the peer's segment at 3 arrives before the one at 2; the older one, acceptable and
    # taken as data, carries an older window, which is not taken
    c.on_segment(Segment(seq=peer(3), ack=wire(1), flags=ACK, window=1500, payload=b"c"), 1.3)
    assert c.snd_wnd == 1500
    c.on_segment(Segment(seq=peer(2), ack=wire(1), flags=ACK, window=9000, payload=b"b"), 1.4)
    assert c.snd_wnd == 1500 and c.read() == b"abc"


def test_sender_sws_avoidance_a_partial_segment_needs_half_the_largest_window_offered() -> None:
    # RFC 1122 sec. 4.2.3.4: send a partial segment only if it is at least 1/2 of the maximum window the
    # peer ever offered (Fs = 1/2); the rest waits
    c, _ = established_client(init_cwnd=40, window=1800)
    c.send(bytes(10_000))
    assert [len(s.payload) for s in c.segments_to_send(1.0)] == [1000]      # 800 usable: held
    c.on_segment(ack_seg(c, wire(100), peer_iss=P, window=1800), 1.5)
    assert c.segments_to_send(1.5) == []                                  # 899 usable: held
    c.on_segment(ack_seg(c, wire(101), peer_iss=P, window=1800), 1.6)
    assert [len(s.payload) for s in c.segments_to_send(1.6)] == [900]      # 900 = 1800 / 2: sent


def test_the_sws_threshold_is_the_largest_window_ever_offered_not_the_current_one() -> None:
    c, _ = established_client(init_cwnd=40, window=4000)
    c.send(bytes(10_000))
    assert [len(s.payload) for s in c.segments_to_send(1.0)] == [1000] * 4
    c.on_segment(ack_seg(c, wire(4001), peer_iss=P, window=1800), 1.5)
    assert [len(s.payload) for s in c.segments_to_send(1.5)] == [1000]
    c.on_segment(ack_seg(c, wire(4101), peer_iss=P, window=1800), 1.6)
    assert c.segments_to_send(1.6) == []                                  # 900 < 4000 / 2


# ---------------------------------------------------------------- RFC 9293 sec. 3.8.6.1: zero window, persist timer
def test_a_zero_window_starts_the_persist_timer_and_its_expiry_sends_one_byte_beyond_it() -> None:
    c, _ = established_client(window=0)                 # RTO 1.5 s
    c.send(b"abcdef")
    assert c.segments_to_send(1.0) == []
    assert c.next_timer() == 1.0 + 1.5                  # the persist timer, one RTO
    c.on_timer(2.5)
    (probe,) = c.segments_to_send(2.5)
    assert (probe.seq, probe.payload, probe.flags) == (wire(1), b"a", ACK)
    assert c.snd_nxt == wire(1) and c.stats["window_probes"] == 1
    assert c.stats["data_segments_sent"] == 0 and c.flight_size == 0
    # backed off: the next probe one RTO x 2 later
    assert c.next_timer() == 2.5 + 3.0
    c.on_timer(5.5)
    assert [s.payload for s in c.segments_to_send(5.5)] == [b"a"]
    assert c.next_timer() == 5.5 + 6.0


def test_the_persist_interval_is_capped_at_max_rto() -> None:
    c, _ = established_client(window=0, max_rto=4.0)
    c.send(b"abc")
    c.segments_to_send(1.0)
    times = []
    for _ in range(4):
        t = c.next_timer()
        times.append(t)
        c.on_timer(t)
        c.segments_to_send(t)
    assert times == [2.5, 5.5, 9.5, 13.5]               # 1.5, 3, then 4 (not 6) and 4


def test_an_accepted_probe_byte_is_acknowledged_and_an_opened_window_resumes_sending() -> None:
    c, _ = established_client(window=0)
    c.send(b"abcdef")
    c.segments_to_send(1.0)
    c.on_timer(2.5)
    c.segments_to_send(2.5)
    # the peer took the byte but its window is still 0: SND.UNA moves past the probe
    c.on_segment(ack_seg(c, wire(2), peer_iss=P, window=0), 2.6)
    assert c.snd_una == wire(2) and c.bytes_acked == 1 and c.snd_nxt == wire(2)
    # a window update stops the persist timer (no probe is due) and the rest goes at once
    c.on_segment(ack_seg(c, wire(2), peer_iss=P, window=1000), 2.7)
    out = c.segments_to_send(2.7)
    assert [(s.seq, s.payload) for s in out] == [(wire(2), b"bcdef")]
    assert c.stats["window_probes"] == 1
    assert c.next_timer() == 2.7 + 1.5                  # the retransmission timer, not the persist one


def test_the_persist_timer_overrides_sender_sws_avoidance() -> None:
    # RFC 1122 sec. 4.2.3.4: data held back by SWS avoidance with nothing in flight goes when the
    # override timeout (here the persist timer) runs out, as much as the window allows
    c, _ = established_client(window=4000, init_cwnd=10)
    c.send(bytes(10_000))
    assert len(c.segments_to_send(1.0)) == 4
    c.on_segment(ack_seg(c, wire(4001), peer_iss=P, window=300), 1.5)
    assert c.segments_to_send(1.5) == []                # 300 < 4000 / 2: held, nothing in flight
    t = c.next_timer()
    assert t == 1.5 + c.rto
    c.on_timer(t)
    assert [(s.seq, len(s.payload)) for s in c.segments_to_send(t)] == [(wire(4001), 300)]
    assert c.stats["window_probes"] == 0
    # the override is for that one output: the next 300 bytes wait again
    c.on_segment(ack_seg(c, wire(4301), peer_iss=P, window=300), t + 0.5)
    assert c.segments_to_send(t + 0.5) == []


# ---------------------------------------------------------------- RFC 9293 sec. 3.10.7.1: CLOSED
def reset_client() -> TcpConnection:
    c, _ = established_client()
    c.on_segment(rst(1), 1.0)
    assert c.state == "CLOSED" and c.segments_to_send(1.0) == []
    return c


def test_a_closed_connection_answers_a_segment_with_ack_by_a_rst_at_its_ack() -> None:
    # "If the ACK bit is on, <SEQ=SEG.ACK><CTL=RST>"
    c = reset_client()
    before = dict(c.stats)
    c.on_segment(Segment(seq=peer(1), ack=0x12345678, flags=ACK, payload=b"abc"), 2.0)
    (r,) = c.segments_to_send(2.0)
    assert (r.seq, r.ack, r.flags) == (0x12345678, 0, RST)
    assert c.stats["acks_sent"] - before["acks_sent"] == 1
    assert c.stats["segments_sent"] - before["segments_sent"] == 1


def test_a_closed_connection_answers_a_segment_without_ack_by_a_rst_ack_past_it() -> None:
    # "If the ACK bit is off, <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>" (SYN and FIN count in SEG.LEN)
    c = reset_client()
    c.on_segment(Segment(seq=MASK - 1, flags=SYN | FIN, payload=b"abc"), 2.0)
    (r,) = c.segments_to_send(2.0)
    assert (r.seq, r.ack, r.flags) == (0, 3, RST | ACK)     # (2**32 - 2 + 5) mod 2**32


def test_a_rst_is_never_answered_and_a_connection_never_opened_stays_silent() -> None:
    c = reset_client()
    c.on_segment(Segment(seq=peer(1), ack=wire(1), flags=RST | ACK), 2.0)
    assert c.segments_to_send(2.0) == []
    fresh = TcpConnection(TcpConfig(), iss=ISS)
    fresh.on_segment(Segment(seq=P, ack=wire(1), flags=ACK, payload=b"x"), 0.0)
    assert fresh.segments_to_send(0.0) == [] and fresh.state == "CLOSED"


# ---------------------------------------------------------------- RFC 6298 and RFC 1122 4.2.3.5: the timer
def test_an_rto_with_nothing_outstanding_does_nothing() -> None:
    c, rec = established_client()
    c.on_timer(10.0)
    assert rec.of("loss") == [] and c.rto == 1.5 and c.segments_to_send(10.0) == []


def test_rfc6298_5_2_and_5_3_the_timer_stops_when_all_is_acked_and_restarts_on_a_partial_ack() -> None:
    c, _ = established_client(init_cwnd=4)
    c.send(bytes(3000))
    c.segments_to_send(1.0)
    assert c.next_timer() == 1.0 + 1.5                  # 5.1
    c.on_segment(ack_seg(c, wire(1001), peer_iss=P), 1.25)
    assert c.next_timer() == 1.25 + c.rto               # 5.3: restarted with the current RTO
    c.on_segment(ack_seg(c, wire(3001), peer_iss=P), 1.5)
    assert c.next_timer() is None                       # 5.2


def test_rfc6298_5_5_the_backoff_is_capped_at_max_rto_and_5_6_restarts_the_timer() -> None:
    c, rec = established_client(max_rto=5.0, max_retries=0)
    c.send(bytes(1000))
    c.segments_to_send(1.0)
    expiries = []
    for _ in range(5):
        t = c.next_timer()
        expiries.append(t)
        c.on_timer(t)
        assert [s.seq for s in c.segments_to_send(t)] == [wire(1)]
    assert expiries == [2.5, 5.5, 10.5, 15.5, 20.5]     # RTO 1.5, 3, 5 (not 6), 5, 5
    assert c.rto == 5.0 and len(rec.of("loss")) == 5 and c.state == "ESTABLISHED"   # 0: never abort


def test_max_retries_consecutive_timeouts_without_progress_abort_the_connection() -> None:
    c, rec = established_client(max_retries=2)
    c.send(bytes(2000))
    c.segments_to_send(1.0)
    for _ in range(2):
        t = c.next_timer()
        c.on_timer(t)
        c.segments_to_send(t)
    assert c.state == "ESTABLISHED"
    t = c.next_timer()
    c.on_timer(t)                                       # the third expiry: R2 reached
    assert c.state == "CLOSED" and c.stats["aborted"] == 1 and c.next_timer() is None
    assert rec.of("state")[-1] == {"state": "CLOSED"} and len(rec.of("loss")) == 2


def test_progress_resets_the_count_of_consecutive_timeouts() -> None:
    c, _ = established_client(max_retries=2, init_cwnd=1)
    c.send(bytes(3000))
    c.segments_to_send(1.0)
    for k in range(3):                                  # two timeouts, then an ACK of one segment, each time
        for _ in range(2):
            t = c.next_timer()
            c.on_timer(t)
            c.segments_to_send(t)
        c.on_segment(ack_seg(c, wire(1001 + 1000 * k), peer_iss=P), t + 0.1)
        c.segments_to_send(t + 0.1)
        assert c.state == "ESTABLISHED", k


def test_a_sample_from_a_clock_that_went_back_is_ignored() -> None:
    c, _ = established_client()
    c.send(bytes(1000))
    c.segments_to_send(2.0)
    c.on_segment(ack_seg(c, wire(1001), peer_iss=P), 1.9)      # now earlier than the send
    assert c.rtt_samples == 1 and (c.srtt, c.rttvar) == (0.5, 0.25)


def test_karn_a_retransmission_below_the_timed_segment_spoils_its_sample() -> None:
    c, _ = established_client(init_cwnd=4)
    c.send(bytes(4000))
    c.segments_to_send(1.0)                              # segment 0 is timed (the first sent)
    c.on_timer(2.5)                                      # timeout: segment 0 again
    c.segments_to_send(2.5)
    c.on_segment(ack_seg(c, wire(4001), peer_iss=P), 2.6)
    assert c.rtt_samples == 1 and c.srtt == 0.5
    # the next segment sent afresh is timed
    c.send(bytes(1000))
    c.segments_to_send(3.0)
    c.on_segment(ack_seg(c, wire(5001), peer_iss=P), 3.25)
    assert c.rtt_samples == 2


def test_rfc6298_5_7_after_a_lost_syn_the_rto_is_3_s_when_data_begins() -> None:
    for initial, max_rto, expected in ((1.0, 60.0, 3.0), (4.0, 60.0, 4.0), (1.0, 2.5, 2.5)):
        a = TcpConnection(TcpConfig(initial_rto=initial, max_rto=max_rto, min_rto=0.2), iss=ISS)
        a.connect(0.0)
        a.segments_to_send(0.0)
        t = a.next_timer()
        a.on_timer(t)
        assert [s.flags for s in a.segments_to_send(t)] == [SYN]
        a.on_segment(Segment(seq=P, ack=wire(1), flags=SYN | ACK, window=PEER_WINDOW), t + 0.1)
        assert a.rto == expected and a.cwnd == 1000, (initial, max_rto)   # RFC 5681 3.1: IW one segment


# ---------------------------------------------------------------- the connection's own choices (module docstring)
def three_dupacks(c: TcpConnection, t: float) -> None:
    for k in range(3):
        c.on_segment(ack_seg(c, wire(1), peer_iss=P), t + 0.01 * k)


def test_a_fast_retransmit_restarts_the_retransmission_timer() -> None:
    # "The retransmission timer is restarted when a fast retransmit is sent (4.4BSD, Linux)"
    c, rec = established_client(init_cwnd=6)
    c.send(bytes(6000))
    c.segments_to_send(1.0)
    assert c.next_timer() == 2.5
    three_dupacks(c, 1.5)
    out = c.segments_to_send(1.52)
    assert out[0].seq == wire(1) and rec.of("rtx")[0] == {"seq": wire(1), "len": 1000}
    assert c.next_timer() == 1.52 + c.rto
    assert c.stats["dupacks_received"] == 3 and c.stats["losses_dupack"] == 1


def test_a_duplicate_ack_carries_no_data_syn_or_fin_and_needs_data_outstanding() -> None:
    # RFC 5681 sec. 2, DUPLICATE ACKNOWLEDGMENT (a) and (b)/(c)
    c, _ = established_client(init_cwnd=6)
    three_dupacks(c, 1.0)                                # nothing outstanding: no dupacks
    assert c.stats["dupacks_received"] == 0
    c.send(bytes(6000))
    c.segments_to_send(1.0)
    for k in range(3):                                   # each carries data: not a dupack
        c.on_segment(Segment(seq=peer(1 + k), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"d"), 1.1)
    c.on_segment(Segment(seq=peer(4), ack=wire(1), flags=ACK | FIN, window=PEER_WINDOW), 1.2)
    assert c.stats["dupacks_received"] == 0 and not c.in_recovery


def test_fin_acked_moves_fin_wait_1_closing_and_last_ack_on() -> None:
    # RFC 9293 sec. 3.10.7.4 fifth: FIN_WAIT_1 -> FIN_WAIT_2, CLOSING -> TIME_WAIT, LAST_ACK -> CLOSED
    c, _ = established_client()
    c.send(b"abc")
    c.close(1.0)
    c.segments_to_send(1.0)
    c.on_segment(ack_seg(c, wire(4), peer_iss=P), 1.1)   # the data, not the FIN
    assert c.state == "FIN_WAIT_1"
    c.on_segment(Segment(seq=peer(1), ack=wire(4), flags=ACK | FIN, window=PEER_WINDOW), 1.2)
    assert c.state == "CLOSING"                          # simultaneous close
    c.on_segment(Segment(seq=peer(2), ack=wire(5), flags=ACK, window=PEER_WINDOW), 1.3)
    assert c.state == "TIME_WAIT" and c.all_acked and c.is_closed
    b = est_server()
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK | FIN, window=PEER_WINDOW), 1.0)
    b.close(1.0)
    assert b.state == "LAST_ACK" and not b.is_closed
    b.segments_to_send(1.0)
    b.on_segment(Segment(seq=peer(2), ack=wire(2), flags=ACK, window=PEER_WINDOW), 1.1)
    assert b.state == "CLOSED" and b.is_closed and b.next_timer() is None


def test_a_retransmitted_fin_is_a_control_retransmission() -> None:
    c, rec = established_client()
    c.close(1.0)
    c.segments_to_send(1.0)
    c.on_timer(2.5)
    (fin,) = c.segments_to_send(2.5)
    assert fin.flags == ACK | FIN and fin.seq == wire(1)
    assert c.stats["ctl_retransmissions"] == 1 and c.stats["retransmissions"] == 0 and rec.of("rtx") == []


def test_the_public_view() -> None:
    c, _ = established_client(init_cwnd=4, window=30_000)
    assert c.all_acked and c.flight_size == 0
    assert (c.snd_una, c.snd_nxt, c.rcv_nxt, c.snd_wnd) == (wire(1), wire(1), peer(1), 30_000)
    c.send(bytes(3000))
    c.segments_to_send(1.0)
    assert c.flight_size == 3000 and c.snd_nxt == wire(3001) and not c.all_acked
    assert c.congestion_control is c._cc and c.sacked_blocks == []
    assert not c.is_closed
    unopened = TcpConnection(TcpConfig(), iss=ISS)
    assert unopened.rcv_nxt == 0 and not unopened.is_closed and not unopened.all_acked


def test_the_sender_s_scoreboard_is_shown_as_32_bit_blocks() -> None:
    iss = MASK - 1500                                    # the blocks straddle 2**32
    c, _ = client("sack", iss=iss, peer_iss=P, init_cwnd=4)
    c.send(bytes(4000))
    c.segments_to_send(1.0)
    lo, hi = (iss + 2001) & MASK, (iss + 3001) & MASK
    c.on_segment(Segment(seq=peer(1), ack=(iss + 1) & MASK, flags=ACK, window=PEER_WINDOW, sack=((lo, hi),)), 1.1)
    assert c.sacked_blocks == [(lo, hi)] == [(500, 1500)]


def test_next_timer_is_the_earliest_deadline() -> None:
    c, _ = established_client(delayed_ack=True, time_wait=5.0)
    c.send(bytes(1000))
    c.segments_to_send(1.0)                              # RTO at 2.5
    c.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=bytes(1000)), 1.1)
    assert c.next_timer() == pytest.approx(1.1 + 0.2)    # the delayed ACK's, earlier
    c.on_timer(1.3)
    c.segments_to_send(1.3)
    assert c.next_timer() == 2.5


def test_snack_resends_only_losses_still_outstanding() -> None:
    c, _ = established_client(snack=True, init_cwnd=6)
    c.send(bytes(6000))
    c.segments_to_send(1.0)
    entries = (wire(1001), wire(3001))
    for t in (1.1, 1.2):
        c.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, snack=entries), t)
    # before the output, an ACK covers the first loss: only the second is resent
    c.on_segment(ack_seg(c, wire(2001), peer_iss=P), 1.3)
    out = c.segments_to_send(1.3)
    assert [(s.seq, len(s.payload)) for s in out if s.seq < wire(6001)] == [(wire(3001), 1000)]
    assert c.stats["snack_retransmissions"] == 1 and c.stats["snack_acks"] == 2


# ---------------------------------------------------------------- the receive window (RFC 1122 4.2.3.3, RFC 9293 3.8.6.2.2)
def test_an_ack_not_yet_sent_carries_the_window_a_read_opened() -> None:
    b = est_server(rcv_buffer=4000)
    b.on_segment(data_seg(0, peer_iss=P, ack=wire(1)), 1.0)
    assert len(b.read()) == 1000                         # before the ACK leaves
    (ack,) = b.segments_to_send(1.0)
    assert (ack.ack, ack.window) == (peer(1001), 4000) and b.stats["window_updates"] == 0


def test_a_window_update_goes_once_the_edge_can_move_by_min_half_the_buffer_and_one_mss() -> None:
    # buffer 1,500, MSS 1,000: the threshold is min(750, 1000) = 750
    b = est_server(rcv_buffer=1500)
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=bytes(1500)), 1.0)
    assert b.segments_to_send(1.0)[-1].window == 0
    assert len(b.read(749)) == 749
    assert b.segments_to_send(1.1) == []
    assert len(b.read(1)) == 1
    (upd,) = b.segments_to_send(1.2)
    assert (upd.ack, upd.window) == (peer(1501), 750) and b.stats["window_updates"] == 1


def test_after_the_peer_s_fin_a_read_sends_no_window_update() -> None:
    b = est_server(rcv_buffer=2000)
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK | FIN, window=PEER_WINDOW, payload=bytes(2000)), 1.0)
    assert b.state == "CLOSE_WAIT"
    b.segments_to_send(1.0)
    assert len(b.read()) == 2000 and b.segments_to_send(1.1) == []


def test_the_right_edge_is_never_moved_left() -> None:
    # out-of-order data uses buffer space, but the window already advertised is not taken back
    b = est_server(rcv_buffer=4000)
    b.on_segment(data_seg(0, peer_iss=P, ack=wire(1)), 1.0)
    assert b.segments_to_send(1.0)[-1].window == 3000    # edge at 4001
    b.on_segment(data_seg(2, peer_iss=P, ack=wire(1)), 1.1)
    assert b.segments_to_send(1.1)[-1].window == 3000    # free 2000, but the edge stays at 4001
    b.on_segment(data_seg(3, peer_iss=P, ack=wire(1)), 1.2)
    assert b.segments_to_send(1.2)[-1].window == 3000
    b.on_segment(data_seg(1, peer_iss=P, ack=wire(1)), 1.3)
    assert b.segments_to_send(1.3)[-1].window == 0       # everything in order: 4000 unread, edge 4001


def test_the_syn_advertises_the_receive_buffer() -> None:
    b = TcpConnection(TcpConfig(rcv_buffer=12_345), iss=ISS)
    b.connect(0.0)
    (syn,) = b.segments_to_send(0.0)
    assert syn.window == 12_345 and syn.ack == 0 and syn.sack == ()


def test_a_fresh_connection_s_view_and_counters() -> None:
    c = TcpConnection(TcpConfig(), iss=ISS)
    assert (c.snd_una, c.snd_nxt, c.rcv_nxt, c.snd_wnd, c.flight_size) == (ISS, ISS, 0, 0, 0)
    assert (c.srtt, c.rttvar, c.rto) == (None, None, 1.0)
    assert c.all_acked is False and c.is_closed is False and c.next_timer() is None
    assert set(c.stats.values()) == {0} and len(c.stats) == 18
    assert (c.bytes_acked, c.bytes_received, c.rtt_samples) == (0, 0, 0)


def test_the_counters_count_one_per_event() -> None:
    # a scripted exchange, each counter checked from zero: the SYN, the handshake's ACK, three data
    # segments (one lost and resent after a timeout), one in-order and one out-of-order segment received
    c = TcpConnection(TcpConfig(init_cwnd=3), iss=ISS)
    c.connect(0.0)
    c.segments_to_send(0.0)
    c.on_segment(Segment(seq=P, ack=wire(1), flags=SYN | ACK, window=PEER_WINDOW), 0.5)
    c.send(bytes(2500))
    out = c.segments_to_send(0.5)                        # the ACK of the SYN+ACK, then the data
    assert [len(s.payload) for s in out] == [0, 1000, 1000, 500]
    c.on_segment(Segment(seq=peer(1), ack=wire(1001), flags=ACK, window=PEER_WINDOW, payload=b"in"), 1.0)
    c.on_segment(Segment(seq=peer(10), ack=wire(1001), flags=ACK, window=PEER_WINDOW, payload=b"ooo"), 1.0)
    c.segments_to_send(1.0)
    t = c.next_timer()
    c.on_timer(t)
    assert [len(s.payload) for s in c.segments_to_send(t)] == [1000]
    assert c.stats == {
        "segments_sent": 8, "data_segments_sent": 4, "acks_sent": 3,
        "retransmissions": 1, "bytes_retransmitted": 1000, "ctl_retransmissions": 0,
        "losses_dupack": 0, "losses_rto": 1, "dupacks_received": 0,
        "segments_received": 3, "ooo_segments_received": 1, "dup_segments_received": 0,
        "window_probes": 0, "window_updates": 0, "rtt_samples": 2, "aborted": 0,
        "snack_acks": 0, "snack_retransmissions": 0}
    assert c.bytes_acked == 1000 and c.bytes_received == 2


# ---------------------------------------------------------------- the rules the first mutation run found unpinned
def test_the_default_iss_is_0() -> None:
    c = TcpConnection(TcpConfig())
    assert c.snd_nxt == 0 and c.snd_una == 0
    c.connect(0.0)
    (syn,) = c.segments_to_send(0.0)
    assert syn.seq == 0


def test_the_first_output_after_the_handshake_is_no_probe_and_no_partial_segment() -> None:
    # data queued before ESTABLISHED, the SYN+ACK offering a zero window: no probe until the persist timer
    a = TcpConnection(TcpConfig(), iss=ISS)
    a.connect(0.0)
    a.segments_to_send(0.0)
    a.send(b"early")
    a.on_segment(Segment(seq=P, ack=wire(1), flags=SYN | ACK, window=0), 0.5)
    out = a.segments_to_send(0.5)
    assert [(s.flags, s.payload) for s in out] == [(ACK, b"")] and a.stats["window_probes"] == 0
    assert a.next_timer() == 0.5 + a.rto
    # passive: the SYN offered 4,000, the handshake's ACK 300: 300 < 4000 / 2 is held back (SWS)
    b = TcpConnection(TcpConfig(), iss=ISS)
    b.listen()
    b.on_segment(Segment(seq=P, flags=SYN, window=4000), 0.0)
    b.segments_to_send(0.0)
    b.send(bytes(5000))
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=300), 0.1)
    assert b.state == "ESTABLISHED" and b.segments_to_send(0.1) == []


def test_a_listening_endpoint_s_syn_acknowledged_by_a_syn_ack_is_established_with_its_window_and_rtt() -> None:
    # RFC 9293 fig. 7's last step seen from SYN_RCVD: the peer's SYN+ACK acknowledges our SYN
    b = TcpConnection(TcpConfig(), iss=ISS)
    b.listen()
    b.on_segment(Segment(seq=P, flags=SYN, window=PEER_WINDOW), 0.0)
    b.segments_to_send(0.0)                              # our SYN+ACK, timed
    b.on_segment(Segment(seq=P, ack=wire(1), flags=SYN | ACK, window=7000), 0.25)
    assert b.state == "ESTABLISHED" and b.snd_wnd == 7000
    assert b.rtt_samples == 1 and b.srtt == 0.25
    assert [s.ack for s in b.segments_to_send(0.25)] == [peer(1)]


def test_a_simultaneous_open_takes_the_window_of_the_syn_ack_that_completes_it() -> None:
    a, _ = syn_sent()
    a.on_segment(Segment(seq=P, flags=SYN, window=5000), 0.5)
    a.segments_to_send(0.5)
    a.on_segment(Segment(seq=P, ack=wire(1), flags=SYN | ACK, window=6000), 0.6)
    assert a.state == "ESTABLISHED" and a.snd_wnd == 6000


def test_state_and_loss_events_carry_the_time() -> None:
    a, rec = syn_sent()
    a.on_timer(1.0)                                      # the SYN times out
    assert rec.timed("loss") == [(1.0, {"kind": "rto", "seq": ISS, "rto": 2.0})]   # the SYN's backed-off timer
    assert a.next_timer() == 1.0 + 2.0                   # RFC 6298 5.6: restarted at once, backed off
    a.on_segment(Segment(seq=P, ack=wire(1), flags=RST | ACK), 1.5)
    assert rec.timed("state")[-1] == (1.5, {"state": "CLOSED"})
    c, rec = established_client()
    c.on_segment(rst(1), 2.5)
    assert rec.timed("state")[-1] == (2.5, {"state": "CLOSED"})


def test_seg_len_counts_the_fin_and_the_syn_in_the_acceptability_test() -> None:
    # a retransmission of data already received, now with the FIN: its last octet (the FIN) is new
    b = est_server()
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"ab"), 1.0)
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK | FIN, window=PEER_WINDOW, payload=b"ab"), 1.1)
    assert b.state == "CLOSE_WAIT" and b.rcv_nxt == peer(4) and b.stats["dup_segments_received"] == 0
    # a SYN carrying two old octets: SYN + 2 = 3, so its last octet is RCV.NXT: acceptable (challenge
    # ACK), no duplicate
    b = est_server()
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"ab"), 1.0)
    b.segments_to_send(1.0)
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=SYN | ACK, window=PEER_WINDOW, payload=b"xy"), 1.1)
    assert b.stats["dup_segments_received"] == 0 and len(b.segments_to_send(1.1)) == 1


def filled_server() -> TcpConnection:
    """A server whose 1,000-byte buffer is full (RCV.WND 0, RCV.NXT peer(1001)); our side sent 3 bytes."""
    b = est_server(rcv_buffer=1000)
    b.send(b"xyz")
    b.segments_to_send(0.5)
    b.on_segment(data_seg(0, peer_iss=P, ack=wire(1)), 1.0)
    b.segments_to_send(1.0)
    return b


def test_an_unacceptable_segment_s_ack_and_window_are_not_processed() -> None:
    # RFC 9293 3.10.7.4 first: an unacceptable segment is answered and dropped, ACK field and all
    for seg in (
            # at a zero window: a FIN carrying data, a FIN beyond RCV.NXT, a SYN+RST at RCV.NXT
            Segment(seq=peer(1001), ack=wire(4), flags=ACK | FIN, window=5, payload=b"x"),
            Segment(seq=peer(1002), ack=wire(4), flags=ACK | FIN, window=5),
            Segment(seq=peer(1001), ack=wire(4), flags=ACK | SYN | RST, window=5)):
        b = filled_server()
        b.on_segment(seg, 1.1)
        assert b.snd_una == wire(1) and b.snd_wnd == PEER_WINDOW and b.state == "ESTABLISHED"
    # with an open window: one octet at RCV.NXT + RCV.WND (the first octet past it)
    b = est_server(rcv_buffer=4000)
    b.send(b"xyz")
    b.segments_to_send(0.5)
    b.on_segment(Segment(seq=peer(1 + 4000), ack=wire(4), flags=ACK, window=5, payload=b"q"), 1.0)
    assert b.snd_una == wire(1) and b.snd_wnd == PEER_WINDOW


def test_a_segment_beyond_the_window_is_no_duplicate_however_long() -> None:
    b = est_server(rcv_buffer=1000)
    b.on_segment(Segment(seq=peer(1001), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=bytes(1000)), 1.0)
    assert b.stats["dup_segments_received"] == 0 and len(b.segments_to_send(1.0)) == 1


def test_syn_rcvd_answers_an_ack_below_rcv_nxt_and_stays() -> None:
    b = syn_rcvd()
    b.on_segment(Segment(seq=P, ack=wire(1), flags=ACK, window=PEER_WINDOW), 0.5)    # SEG.SEQ = IRS
    assert b.state == "SYN_RCVD"
    (ack,) = b.segments_to_send(0.5)
    assert ack.flags == ACK and ack.ack == peer(1)


def test_syn_rcvd_repeats_its_syn_ack_unless_the_repeated_syn_acknowledges_ours() -> None:
    # only a SYN with the ACK bit and ISS < SEG.ACK =< SND.NXT completes the handshake
    for seg in (Segment(seq=P, ack=wire(1), flags=SYN, window=PEER_WINDOW),          # no ACK bit
                Segment(seq=P, ack=wire(0), flags=SYN | ACK, window=PEER_WINDOW)):   # acks the ISS
        b = syn_rcvd()
        b.on_segment(seg, 1.0)
        assert b.state == "SYN_RCVD"
        assert [s.flags for s in b.segments_to_send(1.0)] == [SYN | ACK]


def test_the_window_a_read_put_on_a_waiting_ack_is_never_taken_back() -> None:
    b = est_server(rcv_buffer=4000)
    b.on_segment(data_seg(0, peer_iss=P, ack=wire(1)), 1.0)          # its ACK would say 3,000
    assert len(b.read()) == 1000                                      # the waiting ACK says 4,000: edge 5001
    assert b.segments_to_send(1.0)[-1].window == 4000
    b.on_segment(data_seg(2, peer_iss=P, ack=wire(1)), 1.1)           # out of order: 2,000 free
    b.on_segment(data_seg(3, peer_iss=P, ack=wire(1)), 1.1)
    assert [s.window for s in b.segments_to_send(1.1)] == [4000, 4000]   # RCV.NXT 1001 + 4000 still


def test_the_update_threshold_counts_the_opening_not_the_window() -> None:
    # 2,000 unread of 4,000 (advertised 2,000): reading 500 opens the edge by 500 < min(2000, 1000)
    b = est_server(rcv_buffer=4000)
    for i in range(2):
        b.on_segment(data_seg(i, peer_iss=P, ack=wire(1)), 1.0)
    b.segments_to_send(1.0)
    assert len(b.read(500)) == 500 and b.segments_to_send(1.1) == []
    assert len(b.read(500)) == 500
    (upd,) = b.segments_to_send(1.2)
    assert upd.window == 3000
    # an odd buffer: min(1501 // 2, MSS) = 750
    b = est_server(rcv_buffer=1501)
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=bytes(1501)), 1.0)
    b.segments_to_send(1.0)
    assert len(b.read(749)) == 749 and b.segments_to_send(1.1) == []
    assert len(b.read(1)) == 1
    assert [s.window for s in b.segments_to_send(1.2)] == [750]
    assert len(b.read()) == 751
    assert [s.window for s in b.segments_to_send(1.3)] == [1501]
    assert b.stats["window_updates"] == 2


def test_counters_add_up_over_several_events() -> None:
    c, _ = established_client(init_cwnd=4)
    c.send(bytes(3000))
    c.close(1.0)
    c.segments_to_send(1.0)
    for t in (2.5, 5.5):                                 # two timeouts: segment 0 twice
        c.on_timer(t)
        c.segments_to_send(t)
    c.on_segment(ack_seg(c, wire(3001), peer_iss=P), 6.0)   # the data; the FIN is lost twice
    for _ in range(2):
        t = c.next_timer()
        c.on_timer(t)
        (fin,) = c.segments_to_send(t)
        assert fin.flags == ACK | FIN
    assert c.stats["retransmissions"] == 2 and c.stats["bytes_retransmitted"] == 2000
    assert c.stats["ctl_retransmissions"] == 2
    for i in (3, 5):
        c.on_segment(Segment(seq=peer(1 + 1000 * i), ack=wire(3001), flags=ACK, window=PEER_WINDOW,
                             payload=bytes(1000)), 20.0)
    assert c.stats["ooo_segments_received"] == 2


def test_the_persist_timer_stops_when_the_window_opens_even_by_one_byte_and_its_backoff_starts_over() -> None:
    c, _ = established_client(window=0)
    c.send(b"abcdef")
    c.segments_to_send(1.0)
    c.on_timer(2.5)
    c.segments_to_send(2.5)                              # probe; next persist at 5.5, backoff 1
    c.on_segment(ack_seg(c, wire(1), peer_iss=P, window=1), 3.0)
    assert [s.payload for s in c.segments_to_send(3.0)] == [b"a"]
    assert c.next_timer() == 3.0 + 1.5                   # the retransmission timer only
    c.on_segment(ack_seg(c, wire(2), peer_iss=P, window=0), 3.5)    # acked, and closed again
    assert c.segments_to_send(3.5) == []
    assert c.next_timer() == 3.5 + c.rto                 # one RTO: the backoff started over


def test_bytes_acked_counts_each_data_octet_once() -> None:
    c, _ = established_client(init_cwnd=4)
    c.send(b"a")
    c.segments_to_send(1.0)
    c.on_segment(ack_seg(c, wire(2), peer_iss=P), 1.5)
    assert c.bytes_acked == 1
    c.send(bytes(2000))
    c.close(1.5)
    c.segments_to_send(1.5)
    c.on_segment(ack_seg(c, wire(1002), peer_iss=P), 2.0)
    assert c.bytes_acked == 1001
    c.on_segment(ack_seg(c, wire(2003), peer_iss=P), 2.5)   # the rest and the FIN: 1,000 octets of data
    assert c.bytes_acked == 2001


def test_data_partly_below_rcv_nxt_is_trimmed_to_the_new_octets() -> None:
    b = est_server()
    b.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"abcde"), 1.0)
    b.on_segment(Segment(seq=peer(4), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"dexyz"), 1.1)
    assert b.read() == b"abcdexyz" and b.bytes_received == 8


def test_after_a_timeout_one_segment_goes_even_into_a_zero_window() -> None:
    c, _ = established_client(init_cwnd=4)
    c.send(bytes(4000))
    c.segments_to_send(1.0)
    c.on_segment(ack_seg(c, wire(1001), peer_iss=P, window=0), 1.2)   # the peer's window closed
    t = c.next_timer()
    c.on_timer(t)
    assert [(s.seq, len(s.payload)) for s in c.segments_to_send(t)] == [(wire(1001), 1000)]


def test_an_rtt_sample_of_zero_counts() -> None:
    b = est_server()                                     # SYN+ACK and its ACK at the same instant
    assert b.rtt_samples == 1 and (b.srtt, b.rttvar) == (0.0, 0.0) and b.rto == 0.2


def snack_report(c: TcpConnection, entries: tuple[int, ...], t: float, times: int = 2) -> None:
    for k in range(times):
        c.on_segment(Segment(seq=peer(1), ack=c.snd_una, flags=ACK, window=PEER_WINDOW, snack=entries), t)


def test_snack_resends_a_one_byte_loss_at_its_time_and_never_the_fin() -> None:
    c, rec = established_client(snack=True, init_cwnd=4)
    c.send(bytes(2001))
    c.close(1.0)
    c.segments_to_send(1.0)                              # 1000, 1000, 1 + FIN
    snack_report(c, (wire(2001), wire(2002)), 1.2)       # the last octet, and (forged) the FIN's number
    out = c.segments_to_send(1.2)
    assert [(s.seq, len(s.payload), s.flags) for s in out] == [(wire(2001), 1, ACK | FIN)]
    assert rec.timed("rtx") == [(1.2, {"seq": wire(2001), "len": 1})]


def test_karn_a_retransmission_above_the_timed_segment_leaves_its_sample() -> None:
    c, _ = established_client(snack=True, init_cwnd=4)
    c.send(bytes(3000))
    c.segments_to_send(1.0)                              # segment 0 timed
    snack_report(c, (wire(1001),), 1.1)
    assert [s.seq for s in c.segments_to_send(1.1)] == [wire(1001)]   # segment 1 resent, above the timed one
    c.on_segment(ack_seg(c, wire(1001), peer_iss=P), 1.25)
    assert c.rtt_samples == 2 and c.srtt == 0.5 * 7 / 8 + 0.25 / 8


def test_a_data_segment_carrying_snack_entries_is_still_taken_as_data() -> None:
    c, _ = established_client(snack=True, init_cwnd=4)
    c.send(bytes(3000))
    c.segments_to_send(1.0)
    c.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=PEER_WINDOW, payload=b"hi",
                         snack=(wire(1001),)), 1.1)
    assert c.read() == b"hi"


def test_a_fast_retransmit_made_moot_by_an_ack_of_everything_sends_nothing() -> None:
    c, _ = established_client(init_cwnd=4)
    c.send(bytes(4000))
    c.segments_to_send(1.0)
    three_dupacks(c, 1.5)
    c.on_segment(ack_seg(c, wire(4001), peer_iss=P), 1.6)    # before the output
    assert c.segments_to_send(1.6) == [] and c.next_timer() is None


def test_sack_data_is_skipped_and_the_segment_after_it_sent_in_the_same_output() -> None:
    c, _ = client("sack", iss=ISS, peer_iss=P, init_cwnd=4)
    c.send(bytes(4000))
    c.segments_to_send(1.0)
    c.on_segment(ack_seg(c, wire(1), peer_iss=P, sack=((wire(2001), wire(3001)),)), 1.1)
    t = c.next_timer()
    c.on_timer(t)                                        # timeout: loss window, segment 0 again
    assert [s.seq for s in c.segments_to_send(t)] == [wire(1)]
    c.on_segment(ack_seg(c, wire(1001), peer_iss=P, sack=((wire(2001), wire(3001)),)), t + 0.1)
    # cwnd 2 segments: segment 1, then segment 3 past the SACKed segment 2, in one output
    assert [s.seq for s in c.segments_to_send(t + 0.1)] == [wire(1001), wire(3001)]


def test_a_fin_alone_needs_no_window() -> None:
    c, _ = established_client(window=1000)
    c.send(bytes(1000))
    assert [len(s.payload) for s in c.segments_to_send(1.0)] == [1000]     # the window is full
    c.close(1.0)
    (fin,) = c.segments_to_send(1.0)
    assert (fin.seq, fin.flags, fin.payload) == (wire(1001), ACK | FIN, b"")


def test_a_window_of_one_octet_carries_a_one_octet_segment() -> None:
    c, _ = established_client(window=1000)
    c.send(bytes(1001))
    c.segments_to_send(1.0)
    c.on_segment(ack_seg(c, wire(2), peer_iss=P, window=1000), 1.1)    # one octet of window free
    assert [(s.seq, len(s.payload)) for s in c.segments_to_send(1.1)] == [(wire(1001), 1)]


def test_a_fast_retransmit_of_a_lone_fin_resends_the_fin() -> None:
    # RFC 5681 3.2: the segment at SND.UNA is resent at the third dupack; here that is the FIN alone
    c, _ = established_client()
    c.send(bytes(1000))
    c.segments_to_send(1.0)
    c.on_segment(ack_seg(c, wire(1001), peer_iss=P), 1.5)
    c.close(1.5)
    assert [s.flags for s in c.segments_to_send(1.5)] == [ACK | FIN]
    for k in range(3):
        c.on_segment(ack_seg(c, wire(1001), peer_iss=P), 1.6 + k / 100)
    out = c.segments_to_send(1.63)
    assert [(s.seq, s.flags, s.payload) for s in out] == [(wire(1001), ACK | FIN, b"")]
    assert c.stats["ctl_retransmissions"] == 1 and c.stats["retransmissions"] == 0


def test_a_probe_carries_the_ack_the_window_and_the_sack_of_the_moment_and_is_counted() -> None:
    c, _ = established_client(window=0)
    c.send(b"abc")
    c.segments_to_send(1.0)
    c.on_segment(Segment(seq=peer(1), ack=wire(1), flags=ACK, window=0, payload=b"in"), 1.2)
    c.segments_to_send(1.2)
    before = c.stats["segments_sent"]
    c.on_timer(2.5)
    (probe,) = c.segments_to_send(2.5)
    assert (probe.ack, probe.window, probe.sack) == (peer(3), 64_000 - 2, ())
    assert c.stats["segments_sent"] - before == 1
    c.on_timer(5.5)
    c.segments_to_send(5.5)
    assert c.stats["segments_sent"] - before == 2 and c.stats["window_probes"] == 2


def test_an_ack_beyond_the_probe_byte_acknowledges_something_not_sent() -> None:
    c, _ = established_client(window=0)
    c.send(b"abc")
    c.segments_to_send(1.0)
    c.on_timer(2.5)
    c.segments_to_send(2.5)
    c.on_segment(ack_seg(c, wire(3), peer_iss=P, window=0), 2.6)   # the probe was one octet: wire(2) at most
    assert c.snd_una == wire(1)
    (ack,) = c.segments_to_send(2.6)
    assert ack.flags == ACK and not ack.payload


def test_a_rst_from_a_closed_connection_offers_no_window() -> None:
    c = reset_client()
    c.on_segment(Segment(seq=peer(1), ack=0x12345678, flags=ACK), 2.0)
    c.on_segment(Segment(seq=peer(1), flags=FIN), 2.0)
    assert [s.window for s in c.segments_to_send(2.0)] == [0, 0]


def test_a_persist_expiry_with_no_data_left_sends_nothing() -> None:
    # the one queued octet went as a probe and was acknowledged, the window still 0: the persist timer
    # that was running has nothing to probe with (RFC 9293 3.8.6.1 probes send data)
    c, _ = established_client(window=0)
    c.send(b"a")
    c.segments_to_send(1.0)
    c.on_timer(2.5)
    assert [s.payload for s in c.segments_to_send(2.5)] == [b"a"]
    c.on_segment(ack_seg(c, wire(2), peer_iss=P, window=0), 2.6)
    assert c.all_acked
    t = c.next_timer()
    c.on_timer(t)
    assert c.segments_to_send(t) == [] and c.stats["window_probes"] == 1
    assert c.next_timer() is None
