"""The sender's in-flight record (tcp_user/sent.py) and the RTT samples it gives, as Linux takes them:
every ACK that newly covers a segment sent once, cumulatively or by SACK; Karn per segment; each
sample clears the RTO's backoff (issue 39)."""
from __future__ import annotations

import pytest

from tests.cores import ack_seg, client, seq_of
from tcp_user import sent as sent_mod
from tcp_user.sent import SentLog

ISS = 7000


def test_a_cumulative_ack_gives_the_earliest_once_sent_segment_and_forgets_what_it_covers() -> None:
    log = SentLog()
    log.on_transmit(1, 1001, 1.0)
    log.on_transmit(1001, 2001, 1.5)
    log.on_transmit(2001, 3001, 2.0)
    assert log.on_cumulative_ack(2001) == (1.0, False)
    assert (log.starts, log.ends) == ([2001], [3001])
    assert log.on_cumulative_ack(2001) == (None, False)        # nothing new


def test_karn_a_resent_segment_is_no_sample_and_its_record_takes_the_new_time() -> None:
    log = SentLog()
    log.on_transmit(1, 1001, 1.0)
    log.on_transmit(1001, 2001, 1.1)
    log.on_transmit(1, 1001, 3.0)                              # the retransmission
    assert log.times == [3.0, 1.1] and log.retransmitted == [True, False]
    first, retransmitted = log.on_cumulative_ack(2001)
    assert retransmitted and first == 1.1                      # the connection takes no sample


def test_a_retransmission_across_record_edges_splits_them() -> None:
    log = SentLog()
    log.on_transmit(1, 1001, 1.0)
    log.on_transmit(1001, 2001, 1.0)
    log.on_transmit(501, 1501, 2.0)                            # boundaries unlike the first copies
    assert list(zip(log.starts, log.ends, log.retransmitted)) == [
        (1, 501, False), (501, 1001, True), (1001, 1501, True), (1501, 2001, False)]
    assert log.on_cumulative_ack(501) == (1.0, False)          # only the part sent once is acknowledged
    assert log.on_cumulative_ack(1201) == (None, True)         # into the resent part: split at the ACK
    assert (log.starts[0], log.ends[0]) == (1201, 1501)


def test_a_sack_block_times_a_once_sent_segment_once_and_the_cumulative_ack_skips_it() -> None:
    log = SentLog()
    for i, t in enumerate((1.0, 1.2, 1.4)):
        log.on_transmit(1 + 1000 * i, 1001 + 1000 * i, t)
    assert log.on_sacked(1001, 3001) == 1.2                    # the earliest of the two
    assert log.on_sacked(1001, 3001) is None                   # reported again: nothing new
    log.on_transmit(1, 1001, 2.0)                              # the hole resent
    assert log.on_cumulative_ack(3001) == (None, True)         # SACKed ones skipped, the resent one: Karn


def test_the_record_is_bounded_and_says_what_it_forgot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sent_mod, "MAX_RECORDS", 4)
    log = SentLog()
    for i in range(6):
        log.on_transmit(1 + i, 2 + i, float(i))
    assert len(log) == 4 and log.forgotten == 2 and log.starts[0] == 3


def test_every_ack_of_new_data_is_an_rtt_sample() -> None:
    a, _ = client("reno", iss=ISS, rtt=0.5)                    # sample 1: the SYN
    a.send(bytes(2000))
    a.segments_to_send(1.0)                                    # segments 0 and 1 at 1.0
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), 1.25)
    a.on_segment(ack_seg(a, seq_of(ISS, 2)), 1.5)
    assert a.rtt_samples == 3                                  # one timed segment per window gave 2


def test_a_new_sack_block_clears_the_backoff_a_timeout_left() -> None:
    a, rec = client("sack", iss=ISS, rtt=0.1)                  # R = 0.1: RTO 0.3
    a.send(bytes(3000))
    assert len(a.segments_to_send(1.0)) == 2                   # IW: segments 0 and 1
    a.on_segment(ack_seg(a, seq_of(ISS, 1)), 1.1)              # segment 0: R = 0.1, RTO 0.25
    assert [s.seq for s in a.segments_to_send(1.1)] == [seq_of(ISS, 2)]
    assert a.rto == pytest.approx(0.25)
    a.on_timer(1.35)                                           # segment 1 not acknowledged: a timeout
    assert a.rto == pytest.approx(0.5)                         # RFC 6298 sec. 5.5
    assert [s.seq for s in a.segments_to_send(1.35)] == [seq_of(ISS, 1)]
    # the SACK of segment 2, sent once at 1.1, arrives: R = 0.26, a valid sample; the backoff goes
    a.on_segment(ack_seg(a, seq_of(ISS, 1), sack=((seq_of(ISS, 2), seq_of(ISS, 3)),)), 1.36)
    assert a.rtt_samples == 3
    assert (a.srtt, a.rttvar) == (pytest.approx(0.12), pytest.approx(0.068125))   # RFC 6298 sec. 2.3
    assert a.rto == pytest.approx(0.12 + 4 * 0.068125)         # not 0.5: the backoff is cleared
    assert [e["kind"] for e in rec.of("loss")] == ["rto"]
