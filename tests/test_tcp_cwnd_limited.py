"""cwnd grows only while the sender is cwnd-limited (RFC 7661 sec. 4.3; issue 28, item 7).

A bulk transfer in virtual time (tests/test_tcp_harness.Sim, no loss) once with the receiver's
window as the limit and once with cwnd as the limit, in slow start and in congestion avoidance.
The receive-window-limited sender's cwnd must stop growing about one segment above the window it
can use (before the rule it grew with every ACK, to 1.6 MB in a loss-free medium run); the
cwnd-limited sender's must keep growing, so that a rule that froze cwnd always fails here too.
"""
from __future__ import annotations

import pytest

from test_tcp_harness import bulk, pair
from tcp_user.congestion import is_cwnd_limited

MSS = 1000
NBYTES = 400_000


def cwnd_trace(rcv_buffer: int, init_ssthresh: int) -> list[int]:
    """The sender's cwnd values over a loss-free bulk transfer with this receive buffer."""
    a, b, rec, _ = pair("reno", mss=MSS, init_cwnd=2, rcv_buffer=rcv_buffer,
                        init_ssthresh=init_ssthresh)
    sim, data = bulk(a, b, NBYTES, delay=0.01)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.stats["losses_dupack"] == 0 and a.stats["losses_rto"] == 0
    return [f["cwnd"] for f in rec.of("cwnd")]


@pytest.mark.parametrize("phase, init_ssthresh", [("slow start", 1 << 30),
                                                  ("congestion avoidance", 4 * MSS)])
def test_a_receive_window_limited_sender_stops_growing_cwnd(phase: str, init_ssthresh: int) -> None:
    rwnd = 8 * MSS
    trace = cwnd_trace(rwnd, init_ssthresh)
    # FlightSize never exceeds rwnd, so cwnd grows while cwnd < rwnd + MSS and then stops; the
    # last step adds at most one SMSS.  Without the rule: ~400 ACKs of growth (slow start: to
    # about 400 kB; congestion avoidance: past 25 segments).
    assert max(trace) <= rwnd + 2 * MSS, f"{phase}: cwnd grew to {max(trace)} with rwnd {rwnd}"
    assert max(trace) >= rwnd, f"{phase}: cwnd {max(trace)} never reached the usable window"


@pytest.mark.parametrize("phase, init_ssthresh, grown", [("slow start", 1 << 30, 60 * MSS),
                                                         ("congestion avoidance", 4 * MSS, 15 * MSS)])
def test_a_cwnd_limited_sender_still_grows_cwnd(phase: str, init_ssthresh: int, grown: int) -> None:
    # the default receive buffer (64 kB) is not the limit until cwnd reaches it
    trace = cwnd_trace(64_000, init_ssthresh)
    assert max(trace) >= grown, f"{phase}: cwnd stopped at {max(trace)}"
    assert trace == sorted(trace), "no loss: cwnd never shrinks"


def test_the_rule_itself() -> None:
    # flight within one SMSS of cwnd: limited; one full segment of room: not limited
    assert is_cwnd_limited(flight_size=10_000, cwnd=10_000, mss=MSS)
    assert is_cwnd_limited(flight_size=9_001, cwnd=10_000, mss=MSS)
    assert not is_cwnd_limited(flight_size=9_000, cwnd=10_000, mss=MSS)
    assert not is_cwnd_limited(flight_size=0, cwnd=2 * MSS, mss=MSS)
