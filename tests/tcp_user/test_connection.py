"""tcp_user/connection.py: the connection's rules, one test each, from the RFCs it cites: opening and
closing, acceptability, windows, the retransmission timer (RFC 6298), delayed ACKs, the receiver, flow
control and whole transfers through the scripted network.
"""
from __future__ import annotations

import pytest
from tests.cores import PEER_WINDOW, Recorder, Sim, ack_seg, client, data_seg, seq_of, server, bulk, pair, MASK
from tcp_user.config import TcpConfig, VARIANTS
from tcp_user.connection import TcpConnection
from tcp_user.segment import ACK, FIN, RST, SYN, Segment, MAX_SNACK
from tcp_user.state import Event, TcpStateError
from hypothesis import HealthCheck, given, settings, strategies as st


# ====================================================================================================
# The connection's rules (tcp_user/connection.py), one test each, from the RFCs it cites.
#
# RFC 9293 (the state machine and the segment arrival rules), RFC 6298 (the retransmission timer),
# RFC 2018 (the SACK blocks the receiver sends), RFC 1122 sec. 4.2.3.2 / RFC 5681 sec. 4.2 (delayed
# ACKs), RFC 1122 sec. 4.2.3.3 / 4.2.3.4 (window updates, sender SWS avoidance) and the module's own
# stated choices (its docstring).  Each test is derived from the rule, not from a mutant's text; the
# mutation run of the module (docs/MUTATION.md) names the rules its survivors broke.

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
    assert set(c.stats.values()) == {0} and len(c.stats) == 21
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
        "snack_acks": 0, "snack_retransmissions": 0, "ts_rtt_samples": 0, "paws_drops": 0,
        "frto_spurious": 0}
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


# ====================================================================================================
# SNACK-NS (paper 002): the receiver's SNACK option, SNACK-Snoop and SNACK-TCP, in virtual time.


# ---------------------------------------------------------------- the receiver's SNACK option
def test_receiver_reports_holes_one_per_mss_lowest_first_at_most_six():
    b, _ = server("reno", snack=True)
    b.on_segment(data_seg(0), 0.1)
    b.on_segment(data_seg(3), 0.2)               # holes: 1, 2
    b.on_segment(data_seg(5), 0.3)               # holes: 1, 2, 4
    acks = [s for s in b.segments_to_send(0.3) if s.flags == ACK]
    assert [s.snack for s in acks] == [(), (seq_of(90_000, 1), seq_of(90_000, 2)),
                                       tuple(seq_of(90_000, i) for i in (1, 2, 4))]
    b.on_segment(data_seg(20), 0.4)              # holes 1, 2, 4, 6..19: only six reported
    [ack] = b.segments_to_send(0.4)
    assert ack.snack == tuple(seq_of(90_000, i) for i in (1, 2, 4, 6, 7, 8))
    assert len(ack.snack) == MAX_SNACK
    for i in (1, 2, 4, *range(6, 20)):
        b.on_segment(data_seg(i), 0.5)
    assert b.segments_to_send(0.5)[-1].snack == ()


def test_receiver_without_snack_sends_none():
    b, _ = server("reno")
    b.on_segment(data_seg(0), 0.1)
    b.on_segment(data_seg(2), 0.2)
    assert all(s.snack == () for s in b.segments_to_send(0.2))


# ====================================================================================================
# Delayed ACKs of the user-space receiver (``tcp.delayed_ack``; RFC 1122 sec. 4.2.3.2, RFC 5681 sec. 4.2).
#
# Each rule is a test that fails when the rule is broken: an ACK with every second full-sized segment; a
# lone segment acknowledged when ``delack_s`` has passed, not before; an out-of-order segment, one that fills
# a hole, and a FIN acknowledged at once; data sent in the other direction carrying the ACK (the timer
# stops); and off by default (an ACK per segment, as ns-2's sink).


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


# ====================================================================================================
# Flow control: the advertised window is the receiver's free buffer; a sender facing a
# closed window stops, probes it (persist timer), and resumes once the app reads.


FLOW_ISS = 1000


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_slow_reader_stops_sender_until_read(variant: str) -> None:
    a, b, _, _ = pair(variant, iss_a=FLOW_ISS, rcv_buffer=4000, time_wait=0.1)
    sim, data = bulk(a, b, 20_000, delay=0.0625)
    sim.read = {"a"}                                   # b's application does not read

    right_edge = [0]                                   # highest ack + window seen by a
    beyond: list[tuple[int, int]] = []
    probes: list[float] = []

    def seen(now: float, dst: str, seg) -> None:  # type: ignore[no-untyped-def]
        if dst == "a":
            right_edge[0] = max(right_edge[0], ((seg.ack - FLOW_ISS) & MASK) + seg.window)

    def sent(now: float, src: str, seg) -> None:  # type: ignore[no-untyped-def]
        if src == "a" and seg.payload:
            start = (seg.seq - FLOW_ISS) & MASK
            if len(seg.payload) == 1:
                probes.append(now)                     # zero-window probe
            elif start + len(seg.payload) > right_edge[0]:
                beyond.append((start, len(seg.payload)))
    sim.after_deliver.append(seen)
    sim.after_send.append(sent)

    sim.run(until=8.0)
    assert b.bytes_received == 4000 and sim.received["b"] == b""
    assert a.bytes_acked == 4000 and not a.all_acked
    last_ack = [s for _, n, s in sim.sent if n == "b"][-1]
    assert last_ack.window == 0 and a.snd_wnd == 0
    assert beyond == []
    # persist timer: probes keep going, each interval double the previous (backoff)
    assert len(probes) >= 3 and a.stats["window_probes"] == len(probes)
    gaps = [t1 - t0 for t0, t1 in zip(probes, probes[1:])]
    assert all(g1 == pytest.approx(2 * g0) for g0, g1 in zip(gaps, gaps[1:]))
    assert a.stats["losses_rto"] == 0 and a.stats["retransmissions"] == 0

    # the app reads: the freed buffer is advertised right away and the transfer resumes
    got = b.read()
    assert got == data[:4000]
    sim.received["b"] += got
    sim.read.add("b")
    sim.flush()
    update = [s for _, n, s in sim.sent if n == "b"][-1]
    assert update.window == 4000 and b.stats["window_updates"] == 1
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert beyond == []
    assert a.is_closed and b.is_closed


def test_window_is_free_space_and_updates_follow_reads() -> None:
    b, _ = server("reno", rcv_buffer=4000)
    windows = []
    for i in range(4):
        b.on_segment(data_seg(i), 1.0)
        (ack,) = b.segments_to_send(1.0)
        windows.append(ack.window)
    assert windows == [3000, 2000, 1000, 0]
    # data beyond a zero window is dropped and answered with an ACK (RFC 9293 3.10.7.4)
    b.on_segment(data_seg(4), 1.1)
    (ack,) = b.segments_to_send(1.1)
    assert ack.ack == data_seg(4).seq and ack.window == 0 and b.bytes_received == 4000
    # RFC 1122 4.2.3.3: no update until the window can open by min(buffer/2, MSS)
    assert b.read(500) == bytes([0]) * 500
    assert b.segments_to_send(1.2) == []
    assert len(b.read(600)) == 600
    (upd,) = b.segments_to_send(1.3)
    assert upd.window == 1100 and upd.ack == data_seg(4).seq and not upd.payload
    assert len(b.read()) == 2900
    (upd,) = b.segments_to_send(1.35)
    assert upd.window == 4000
    # the ACK of data the app reads before the ACK leaves carries the opened window
    # (no separate window update)
    b.on_segment(data_seg(4), 1.4)
    assert len(b.read()) == 1000
    (ack,) = b.segments_to_send(1.4)
    assert ack.window == 4000


# ====================================================================================================
# The readable parts of tcp_user: the state table, the congestion-control registry, SNACK-TCP.


def test_a_connection_refuses_an_illegal_transition_and_keeps_its_state() -> None:
    a, _, ra, _ = pair()
    a.connect(0.0)
    with pytest.raises(TcpStateError):
        a._fire(0.0, Event.FIN_RECEIVED)     # a FIN cannot be received in SYN_SENT
    assert a.state == "SYN_SENT"
    assert [f["state"] for f in ra.of("state")] == ["SYN_SENT"]


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_state_events_carry_the_plain_names(variant: str) -> None:
    a, b, ra, rb = pair(variant, time_wait=0.5)
    sim, data = bulk(a, b, 20_000)
    sim.drop("a", seq_of(1000, 3), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    states = [f["state"] for f in ra.of("state")]
    assert states == ["SYN_SENT", "ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT", "CLOSED"]
    assert all(type(s) is str for s in states)      # logs write the name, not an enum repr
    assert [f["state"] for f in rb.of("state")] == ["SYN_RCVD", "ESTABLISHED", "CLOSE_WAIT",
                                                   "LAST_ACK", "CLOSED"]


# ====================================================================================================
# The receiver: immediate ACKs, out-of-order buffering, duplicates, SACK blocks (RFC 2018).


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


# ====================================================================================================
# RTT estimation and the retransmission timer (RFC 6298), Karn's rule, backoff.


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


# ====================================================================================================
# End-to-end transfers through the scripted network: handshake, bulk data, teardown,
# sequence wraparound, lost control segments, and random loss patterns.


@pytest.mark.parametrize("variant", VARIANTS)
def test_handshake_bulk_and_teardown(variant: str) -> None:
    a, b, ra, rb = pair(variant, time_wait=0.5)
    sim, data = bulk(a, b, 100 * 1000)
    sim.run()

    assert bytes(sim.received["b"]) == data
    assert a.bytes_acked == b.bytes_received == 100_000
    # three-way handshake
    first = [(n, s.flags) for _, n, s in sim.sent[:3]]
    assert first == [("a", SYN), ("b", SYN | ACK), ("a", ACK)]
    assert sim.sent[0][2].seq == 1000 and sim.sent[1][2].ack == 1001
    # 100 full-sized data segments, none retransmitted; FIN rides on the last one
    data_segs = [s for _, s in sim.data_sent("a")]
    assert len(data_segs) == 100 and all(len(s.payload) == 1000 for s in data_segs)
    assert data_segs[-1].flags == ACK | FIN and not any(s.flags & FIN for s in data_segs[:-1])
    assert a.stats["retransmissions"] == 0 and a.stats["losses_dupack"] == a.stats["losses_rto"] == 0
    # teardown: active closer goes through TIME_WAIT, passive through CLOSE_WAIT/LAST_ACK
    assert [f["state"] for f in ra.of("state")] == [
        "SYN_SENT", "ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT", "CLOSED"]
    assert [f["state"] for f in rb.of("state")] == [
        "SYN_RCVD", "ESTABLISHED", "CLOSE_WAIT", "LAST_ACK", "CLOSED"]
    assert a.is_closed and b.is_closed and a.all_acked and b.all_acked
    assert a.next_timer() is None and b.next_timer() is None
    # 32-bit views: SYN + 100000 bytes + FIN
    assert a.snd_una == a.snd_nxt == 1000 + 100_002
    assert b.rcv_nxt == 1000 + 100_002
    # one cwnd event at ESTABLISHED, with the configured IW
    assert ra.of("cwnd")[0] == {"cwnd": 2000, "ssthresh": 1 << 30}


@pytest.mark.parametrize("variant", VARIANTS)
def test_time_wait_lasts_its_configured_time(variant: str) -> None:
    a, b, ra, _ = pair(variant, time_wait=2.0)
    sim, _ = bulk(a, b, 3000)
    sim.run()
    (t_tw, _), (t_closed, _) = [(t, f) for t, f in ra.timed("state") if f["state"] in ("TIME_WAIT", "CLOSED")]
    assert t_closed - t_tw == pytest.approx(2.0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("iss_a,iss_b,drops", [
    (2**32 - 5000, 2**32 - 1, (3, 5, 6, 40)),         # wrap during slow start
    (2**32 - 30_500, 2**32 - 20_500, (29, 31, 33)),   # segment 30 straddles 2**32
])
def test_sequence_wraparound(variant: str, iss_a: int, iss_b: int, drops: tuple[int, ...]) -> None:
    a, b, ra, _ = pair(variant, iss_a=iss_a, iss_b=iss_b, time_wait=0.1)
    sim, data = bulk(a, b, 100 * 1000)
    for i in drops:
        sim.drop("a", seq_of(iss_a, i), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.is_closed and b.is_closed
    assert a.snd_una == (iss_a + 100_002) & MASK
    assert b.rcv_nxt == (iss_a + 100_002) & MASK
    assert a.bytes_acked == b.bytes_received == 100_000
    assert any(s.seq < 10_000 for _, s in sim.data_sent("a"))       # really wrapped
    assert sorted({s.seq for _, _, s in sim.dropped}) == sorted(seq_of(iss_a, i) for i in drops)
    if variant == "sack" and iss_a == 2**32 - 30_500:
        # one recovery episode; SACK blocks whose right edge wrapped past 0
        assert a.stats["losses_dupack"] == 1 and a.stats["losses_rto"] == 0
        assert a.stats["retransmissions"] == 3
        assert any(lo > hi for _, n, seg in sim.sent if n == "b" for lo, hi in seg.sack)


@pytest.mark.parametrize("variant", VARIANTS)
def test_lost_syn_is_retransmitted_on_rto(variant: str) -> None:
    a, b, ra, _ = pair(variant, initial_rto=1.0)
    sim, data = bulk(a, b, 10_000)
    sim.drop("a", 1000, 1, 2)                          # the SYN, twice
    sim.run()
    assert bytes(sim.received["b"]) == data
    syn_times = [t for t, n, s in sim.sent if n == "a" and s.flags & SYN]
    assert syn_times == [0.0, 1.0, 3.0]                # RFC 6298 5.5 backoff: 1 s, then 2 s
    assert [f for f in ra.of("loss")] == [{"kind": "rto", "seq": 1000, "rto": r} for r in (2.0, 4.0)]
    # RFC 5681 3.1: IW = 1 segment after a lost SYN; RFC 6298 5.7: RTO 3 s without a sample
    assert ra.of("cwnd")[0] == {"cwnd": 1000, "ssthresh": 1 << 30}


@pytest.mark.parametrize("variant", VARIANTS)
def test_lost_synack_and_final_ack(variant: str) -> None:
    a, b, _, rb = pair(variant, time_wait=0.0)
    sim, data = bulk(a, b, 5_000)
    sim.drop("b", 50_000, 1)                           # the SYN+ACK
    sim.drop_if(lambda src, seg, occ, now: src == "a" and seg.flags == ACK and a.state == "TIME_WAIT")
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.is_closed and b.is_closed
    # b never got the final ACK: its FIN retransmission met a CLOSED a, which answered RST
    assert b.state == "CLOSED"
    assert any(s.flags & 0x04 for _, n, s in sim.sent if n == "a")


@pytest.mark.parametrize("variant", VARIANTS)
def test_lost_fin_is_retransmitted(variant: str) -> None:
    a, b, ra, _ = pair(variant, time_wait=0.1)
    sim, data = bulk(a, b, 0)
    sim.drop("a", 1001, 1)                             # the bare FIN
    sim.run()
    assert a.is_closed and b.is_closed and sim.received["b"] == b""
    fins = [s for _, n, s in sim.sent if n == "a" and s.flags & FIN]
    assert len(fins) == 2 and a.stats["ctl_retransmissions"] == 1
    assert ra.of("rtx") == []                          # rtx events are for data only


@pytest.mark.parametrize("variant", VARIANTS)
def test_data_in_both_directions(variant: str) -> None:
    a, b, _, _ = pair(variant, time_wait=0.1)
    sim, data = bulk(a, b, 20_000, close_b=False)
    back = bytes(range(256)) * 40
    b.send(back)

    def close_b(now: float, dst: str, seg: object) -> None:
        if b.state == "CLOSE_WAIT":
            b.close(now)
    sim.after_deliver.append(close_b)
    sim.drop("a", seq_of(1000, 4), 1)
    sim.drop("b", seq_of(50_000, 2), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert bytes(sim.received["a"]) == back
    assert a.is_closed and b.is_closed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(variant=st.sampled_from(VARIANTS),
       drops=st.sets(st.integers(min_value=0, max_value=59), max_size=12),
       redrops=st.sets(st.integers(min_value=0, max_value=59), max_size=3),
       ack_drops=st.sets(st.integers(min_value=0, max_value=80), max_size=8),
       iss=st.integers(min_value=0, max_value=MASK))
def test_random_losses_deliver_intact(variant: str, drops: set[int], redrops: set[int],
                                      ack_drops: set[int], iss: int) -> None:
    a, b, _, _ = pair(variant, iss_a=iss, time_wait=0.1, max_retries=0)
    sim, data = bulk(a, b, 60_000)
    for i in drops:
        sim.drop("a", seq_of(iss, i), *((1, 2) if i in redrops else (1,)))
    acks = [0]

    def drop_some_acks(src: str, seg: object, occ: int, now: float) -> bool:
        if src != "b":
            return False
        acks[0] += 1
        return acks[0] in ack_drops
    sim.drop_if(drop_some_acks)

    # SACK: never retransmit a byte the receiver has reported (RFC 6675 / RFC 2018)
    sacked: list[tuple[int, int]] = []
    violations: list[tuple[int, int]] = []

    def rel(x: int) -> int:
        return (x - iss) & MASK

    def seen(now: float, dst: str, seg) -> None:  # type: ignore[no-untyped-def]
        if dst == "a":
            sacked.extend((rel(lo), rel(hi)) for lo, hi in seg.sack)

    def sent(now: float, src: str, seg) -> None:  # type: ignore[no-untyped-def]
        if src == "a" and seg.payload:
            s, e = rel(seg.seq), rel(seg.seq) + len(seg.payload)
            violations.extend((s, e) for lo, hi in sacked if s < hi and lo < e)
    sim.after_deliver.append(seen)
    sim.after_send.append(sent)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.is_closed and b.is_closed and a.bytes_acked == 60_000
    assert violations == []
    assert a.stats["losses_dupack"] + a.stats["losses_rto"] >= (1 if drops else 0)


def test_simultaneous_open() -> None:
    from tests.cores import Sim, Recorder
    from tcp_user.config import TcpConfig
    from tcp_user.connection import TcpConnection
    ra, rb = Recorder(), Recorder()
    a = TcpConnection(TcpConfig(time_wait=0.1), iss=100, emit=ra)
    b = TcpConnection(TcpConfig(time_wait=0.1), iss=900, emit=rb)
    sim = Sim(a, b)
    a.connect(0.0)
    b.connect(0.0)
    a.send(b"x" * 2500)
    b.send(b"y" * 1500)
    a.close(0.0)

    def close_b(now: float, dst: str, seg: object) -> None:
        if b.state == "CLOSE_WAIT":
            b.close(now)
    sim.after_deliver.append(close_b)
    sim.run()
    assert [f["state"] for f in ra.of("state")][:3] == ["SYN_SENT", "SYN_RCVD", "ESTABLISHED"]
    assert [f["state"] for f in rb.of("state")][:3] == ["SYN_SENT", "SYN_RCVD", "ESTABLISHED"]
    assert bytes(sim.received["b"]) == b"x" * 2500 and bytes(sim.received["a"]) == b"y" * 1500
    assert a.is_closed and b.is_closed


# ---- RFC 7323 timestamps (tcp.timestamps) ------------------------------------------------------------------

def test_rfc7323_timestamps_are_used_only_when_both_syns_offer_them() -> None:
    for a_on, b_on in ((True, True), (True, False), (False, True), (False, False)):
        a = TcpConnection(TcpConfig(timestamps=a_on), iss=1000)
        b = TcpConnection(TcpConfig(timestamps=b_on), iss=50_000)
        b.listen()
        sim, data = bulk(a, b, 5000)
        sim.run()
        assert bytes(sim.received["b"]) == data
        both = a_on and b_on
        assert a.timestamps is both and b.timestamps is both
        syn = sim.sent[0][2]
        assert (syn.tsval is not None) is a_on and syn.tsecr == 0       # sec. 3.2: TSecr 0 on the SYN
        after_syn = [s for _, _, s in sim.sent[1:]]
        assert all((s.tsval is not None) is both for s in after_syn if not s.flags & RST)


def test_rfc7323_the_ack_echoes_the_segment_it_acknowledges() -> None:
    a, b, _, _ = pair(timestamps=True)
    sim, data = bulk(a, b, 3000, delay=0.05)
    sim.run()
    assert bytes(sim.received["b"]) == data
    sent_at = {s.tsval: t for t, n, s in sim.sent if n == "a"}
    for t, dst, s in sim.delivered:
        if dst == "a" and s.tsval is not None and s.flags & ACK and s.tsecr in sent_at:
            assert abs((t - sent_at[s.tsecr]) - 0.1) < 0.002      # one RTT, to the 1 ms tick


def test_rfc7323_karn_trap_the_backoff_is_cleared_by_the_tsecr_sample_only_with_timestamps() -> None:
    # Two segments in flight, the second lost twice: two timeouts back the RTO off by 4; the ACK that then moves
    # covers only the retransmitted segment, so Karn's rule leaves no sample (RFC 6298 sec. 5.7's trap).  With
    # timestamps its TSecr times it (RFC 7323 sec. 4) and the RTO is SRTT + 4 RTTVAR again.
    seen: dict[bool, tuple[float, float, int]] = {}
    for ts in (False, True):
        a, b, _, _ = pair(timestamps=ts, init_cwnd=2)
        sim, data = bulk(a, b, 2000, delay=0.05)
        second = seq_of(1000, 1)
        sim.drop("a", second, 1, 2)
        rto_before: list[float] = []
        after: list[tuple[float, int]] = []
        rto_from_srtt: list[float] = []

        def watch(now: float, dst: str, seg: Segment) -> None:
            if dst == "a" and seg.flags & ACK and not after:
                if seg.ack == (second & MASK):
                    rto_before[:] = [a.rto]
                elif seg.ack != (second & MASK) and rto_before and (seg.ack - second) & MASK <= 2000:
                    after.append((a.rto, a.stats["ts_rtt_samples"]))
                    rto_from_srtt[:] = [max(0.2, a.srtt + 4 * a.rttvar)]
        sim.after_deliver.append(watch)
        sim.run()
        assert bytes(sim.received["b"]) == data and a.stats["losses_rto"] == 2
        seen[ts] = (rto_before[0], after[0][0], after[0][1])
        if ts:
            assert after[0][0] == pytest.approx(rto_from_srtt[0])   # RFC 6298 sec. 2.3: no backoff left
    base, kept, samples = seen[False]
    assert kept == pytest.approx(4 * base) and samples == 0          # without: still backed off
    base, cleared, samples = seen[True]
    assert samples == 1 and cleared < 2 * base                       # with: the sample cleared it


def test_rfc7323_ts_recent_is_the_earliest_unacknowledged_segment_s_with_delayed_acks() -> None:
    a, b, _, _ = pair(timestamps=True, delayed_ack=True)
    sim = Sim(a, b, delay=0.05)
    a.connect(0.0)
    sim.run(until=0.5)
    assert a.state == b.state == "ESTABLISHED" and b.timestamps
    last = sim.sent[-1][2]
    assert last.tsval is not None
    t1, t2 = (last.tsval + 100) & MASK, (last.tsval + 200) & MASK
    b.on_segment(Segment(seq=seq_of(1000, 0), ack=last.ack, flags=ACK, window=last.window,
                         payload=b"a" * 1000, tsval=t1, tsecr=last.tsecr), 0.6)
    assert b.segments_to_send(0.6) == []                  # delayed
    b.on_segment(Segment(seq=seq_of(1000, 1), ack=last.ack, flags=ACK, window=last.window,
                         payload=b"b" * 1000, tsval=t2, tsecr=last.tsecr), 0.7)
    (ack,) = b.segments_to_send(0.7)
    assert ack.ack == seq_of(1000, 2) and ack.tsecr == t1  # sec. 4.3 (2): not the second segment's
    b.on_segment(Segment(seq=seq_of(1000, 2), ack=last.ack, flags=ACK, window=last.window,
                         payload=b"c" * 1000, tsval=(t2 + 1) & MASK, tsecr=last.tsecr), 0.8)
    b.on_timer(1.1)
    (ack,) = b.segments_to_send(1.1)
    assert ack.ack == seq_of(1000, 3) and ack.tsecr == (t2 + 1) & MASK


def _open_transfer(a: TcpConnection, b: TcpConnection, nbytes: int) -> tuple[Sim, bytes]:
    """``nbytes`` a -> b, delivered and acknowledged, the connection left open."""
    data = bytes(range(256)) * (nbytes // 256) + bytes(nbytes % 256)
    sim = Sim(a, b, delay=0.05)
    a.connect(0.0)
    a.send(data)
    sim.run(until=1.0)
    return sim, data


def test_rfc7323_paws_drops_an_old_timestamp_and_acknowledges_it() -> None:
    a, b, _, _ = pair(timestamps=True)
    sim, data = _open_transfer(a, b, 3000)
    assert bytes(sim.received["b"]) == data and b.timestamps
    old = next(s for _, n, s in sim.sent if n == "a" and s.payload)
    before = (b.stats["paws_drops"], b.stats["dup_segments_received"], b.stats["acks_sent"])
    b.on_segment(Segment(seq=(old.seq + 3000) & MASK, ack=old.ack, flags=ACK, window=old.window,
                         payload=b"x" * 10, tsval=old.tsval, tsecr=old.tsecr), sim.now)
    out = b.segments_to_send(sim.now)
    assert b.stats["paws_drops"] == before[0] + 1 and b.bytes_received == 3000   # not taken in
    assert [s.flags for s in out] == [ACK] and out[0].ack == seq_of(1000, 3)
    # the same segment with a fresh TSval is data
    b.on_segment(Segment(seq=(old.seq + 3000) & MASK, ack=old.ack, flags=ACK, window=old.window,
                         payload=b"x" * 10, tsval=(old.tsval + 10_000) & MASK, tsecr=old.tsecr), sim.now)
    assert b.bytes_received == 3010 and b.stats["paws_drops"] == before[0] + 1


def test_rfc7323_paws_lets_a_segment_without_the_option_and_a_rst_through() -> None:
    a, b, _, _ = pair(timestamps=True)
    sim, data = _open_transfer(a, b, 1000)
    old = next(s for _, n, s in sim.sent if n == "a" and s.payload)
    b.on_segment(Segment(seq=(old.seq + 1000) & MASK, ack=old.ack, flags=ACK, window=old.window,
                         payload=b"y" * 5), sim.now)
    assert b.bytes_received == 1005 and b.stats["paws_drops"] == 0


def test_rfc7323_the_timestamp_clock_wraps_modulo_2_32() -> None:
    a = TcpConnection(TcpConfig(timestamps=True), iss=1000, ts_offset=MASK - 5)
    b = TcpConnection(TcpConfig(timestamps=True), iss=50_000, ts_offset=MASK - 50)
    b.listen()
    sim, data = bulk(a, b, 20_000, delay=0.05)
    sim.drop("a", seq_of(1000, 3), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.stats["paws_drops"] == b.stats["paws_drops"] == 0
    assert any(s.tsval is not None and s.tsval < 100 for _, n, s in sim.sent if n == "a")


def test_the_timestamp_config_is_checked() -> None:
    with pytest.raises(ValueError, match="timestamps"):
        TcpConfig(timestamps=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ts_hz"):
        TcpConfig(ts_hz=0)
    with pytest.raises(ValueError, match="ts_hz"):
        TcpConfig(ts_hz=1001)
