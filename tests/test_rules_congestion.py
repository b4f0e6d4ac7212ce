"""tcp_user/congestion.py: RFC 6675 recovery entered without any SACK block (issue 30, mutation run).

RFC 6675 sec. 5 step (2) enters loss recovery on DupThresh duplicate ACKs even when none carries a SACK
block; then (step 4.3) the first unacknowledged segment is resent at once, and SetPipe (sec. 4) counts
every octet from SND.UNA to HighData once, and once more what lies below HighRxt: with nothing SACKed the
scoreboard's top is SND.UNA itself, so no more may go until pipe falls below cwnd.
"""
from __future__ import annotations

from test_congestion_mutants import six_out
from test_tcp_harness import ack_seg, seq_of
from test_tcp_rules import ISS


def test_sack_recovery_without_sack_blocks_resends_the_first_segment_and_counts_the_flight_as_pipe():
    a, _ = six_out("sack")
    for k in range(3):
        a.on_segment(ack_seg(a, seq_of(ISS, 0)), 1.5 + k / 10)
    assert a.in_recovery and a.cwnd == a.ssthresh == 3000
    out = a.segments_to_send(1.8)
    assert [(s.seq, len(s.payload)) for s in out] == [(seq_of(ISS, 0), 1000)]
    # pipe: 6000 octets in flight + 1000 resent = 7000 >= cwnd 3000: nothing more
    assert a.segments_to_send(1.9) == []
