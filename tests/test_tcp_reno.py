"""Reno congestion control against RFC 5681, event by event.

Scenario (mss 1000, IW 2 segments, one-way delay 62.5 ms so every time is exact in binary):
80 segments; the first copy of segment 19 is lost (-> fast retransmit), later the first
copies of the last ten segments 70..79 and the second copy of segment 70 are lost (no
segment follows them, so no dupacks: -> RTO, and the retransmission is lost again ->
a second, backed-off RTO).  After everything is acknowledged 5 more segments are sent,
which yields a fresh RTT sample that clears the backoff.
"""
from __future__ import annotations

from typing import Any

import pytest

from test_tcp_harness import Sim, pair, seq_of
from tcp_user.connection import TcpConnection

BIG = 1 << 30
ISS = 1000


def run_scenario() -> tuple[TcpConnection, Sim, list[tuple[float, str, dict[str, Any], float]], bytes]:
    a, b, _, _ = pair("reno", iss_a=ISS, time_wait=0.1)
    log: list[tuple[float, str, dict[str, Any], float]] = []   # (t, ev, fields, RTO at the time)

    def emit(now: float, ev: str, **fields: Any) -> None:
        log.append((now, ev, fields, a.rto))
    a._emit = emit
    sim = Sim(a, b, delay=0.0625)
    data = bytes(i % 251 for i in range(85_000))
    a.connect(0.0)
    a.send(data[:80_000])
    sim.drop("a", seq_of(ISS, 19), 1)
    for i in range(70, 80):
        sim.drop("a", seq_of(ISS, i), 1)
    sim.drop("a", seq_of(ISS, 70), 2)
    phase: dict[str, float] = {}

    def more(now: float, dst: str, seg: object) -> None:
        if dst == "a" and a.all_acked and "rto_before" not in phase and a.bytes_acked == 80_000:
            phase["rto_before"] = a.rto
            a.send(data[80_000:])
            a.close(now)
        if dst == "b" and b.state == "CLOSE_WAIT":
            b.close(now)
    sim.after_deliver.append(more)
    sim.run()
    assert bytes(sim.received["b"]) == data
    log.append((-1.0, "phase", phase, 0.0))
    return a, sim, log, data


@pytest.fixture(scope="module")
def scenario() -> tuple[TcpConnection, Sim, list[tuple[float, str, dict[str, Any], float]], bytes]:
    return run_scenario()


def cwnd_events(log: list) -> list[tuple[float, int, int]]:
    return [(t, f["cwnd"], f["ssthresh"]) for t, ev, f, _ in log if ev == "cwnd"]


def test_slow_start_doubles_per_rtt(scenario) -> None:  # type: ignore[no-untyped-def]
    _, _, log, _ = scenario
    ev = cwnd_events(log)
    # RFC 5681 3.1 eq. (2): cwnd += min(N, SMSS) per ACK -> doubling per RTT
    per_rtt: dict[float, list[int]] = {}
    for t, c, s in ev[:20]:
        assert s == BIG
        per_rtt.setdefault(t, []).append(c)
    assert per_rtt == {
        0.125: [2000],                                   # ESTABLISHED: IW = 2 * SMSS
        0.25: [3000, 4000],
        0.375: [5000, 6000, 7000, 8000],
        0.5: list(range(9000, 16001, 1000)),
        0.625: list(range(17000, 21001, 1000)),          # ACKs of 14..18, then dupacks
    }


def test_fast_retransmit_and_recovery_values(scenario) -> None:  # type: ignore[no-untyped-def]
    a, sim, log, _ = scenario
    ev = [(c, s) for _, c, s in cwnd_events(log)]
    expected = [(c, BIG) for c in range(2000, 21001, 1000)]
    # 3rd dupack: FlightSize = segments 19..39 = 21000 -> ssthresh = 10500 (eq. 4),
    # cwnd = ssthresh + 3 * SMSS; +1 SMSS for each further dupack (7 in this RTT,
    # 10 in the next: the originals of 30..39), then the ACK of new data deflates.
    expected += [(13500, 10500)]
    expected += [(c, 10500) for c in range(14500, 30501, 1000)]
    expected += [(10500, 10500)]
    assert ev[: len(expected)] == expected
    losses = [(t, f) for t, e, f, _ in log if e == "loss"]
    assert losses[0] == (0.625, {"kind": "dupack", "seq": seq_of(ISS, 19)})
    # the loss event precedes the cwnd change it causes, and the retransmission follows
    names = [(e, f.get("seq")) for t, e, f, _ in log if t == 0.625 and e in ("loss", "rtx")]
    assert names == [("loss", seq_of(ISS, 19)), ("rtx", seq_of(ISS, 19))]
    # exactly one retransmission of segment 19 (a partial ACK also ends plain Reno recovery)
    assert [s.seq for _, s in sim.data_sent("a")].count(seq_of(ISS, 19)) == 2


def test_congestion_avoidance_after_recovery(scenario) -> None:  # type: ignore[no-untyped-def]
    _, _, log, _ = scenario
    ev = [(c, s) for _, c, s in cwnd_events(log)]
    start = ev.index((10500, 10500))
    rto_at = ev.index((1000, 5000))
    ca = ev[start:rto_at]
    # RFC 5681 3.1 eq. (3): cwnd += SMSS*SMSS/cwnd per ACK (integer, at least 1 byte)
    assert [c for c, _ in ca[:4]] == [10500, 10595, 10689, 10782]
    for (c0, s0), (c1, s1) in zip(ca, ca[1:]):
        assert s0 == s1 == 10500
        assert c1 == c0 + max(1, 1000 * 1000 // c0)


def test_rto_backoff_and_slow_start_restart(scenario) -> None:  # type: ignore[no-untyped-def]
    a, sim, log, _ = scenario
    losses = [(t, f, rto) for t, e, f, rto in log if e == "loss"]
    assert [f for _, f, _ in losses] == [
        {"kind": "dupack", "seq": seq_of(ISS, 19)},
        {"kind": "rto", "seq": seq_of(ISS, 70), "rto": pytest.approx(0.4)},     # the backed-off timer armed
        {"kind": "rto", "seq": seq_of(ISS, 70), "rto": pytest.approx(0.8)},
    ]
    (t1, _, rto1), (t2, _, rto2) = losses[1], losses[2]
    assert rto1 == pytest.approx(0.2)                  # RTT 125 ms, RTTVAR ~ 0: min_rto
    assert rto2 == pytest.approx(2 * rto1)             # RFC 6298 5.5: doubled
    assert t2 == pytest.approx(t1 + 2 * rto1)          # ... and the timer ran with it
    ev = [(t, c, s) for t, c, s in cwnd_events(log) if t >= t1]
    # first RTO: FlightSize = 10 segments -> ssthresh 5000, cwnd = LW = 1 SMSS.
    # second RTO of the same segment: ssthresh held (RFC 5681 3.1), cwnd already 1 SMSS,
    # so no cwnd event at t2.  Then slow start to ssthresh and congestion avoidance.
    assert [(c, s) for _, c, s in ev[:8]] == [
        (1000, 5000), (2000, 5000), (3000, 5000), (4000, 5000), (5000, 5000),
        (5200, 5000), (5392, 5000), (5577, 5000)]
    assert ev[0][0] == t1 and all(t != t2 for t, _, _ in ev)
    assert a.stats["losses_rto"] == 2 and a.stats["losses_dupack"] == 1
    # go-back-N after the RTO: 70 three times, then 71..79 once more each
    rtx = [f["seq"] for _, e, f, _ in log if e == "rtx"]
    assert rtx == [seq_of(ISS, 19), seq_of(ISS, 70), seq_of(ISS, 70)] + [seq_of(ISS, i) for i in range(71, 80)]


def test_backoff_cleared_by_next_rtt_sample(scenario) -> None:  # type: ignore[no-untyped-def]
    a, _, log, _ = scenario
    phase = log[-1][2]
    # Karn: no sample from the retransmitted segments, so the backoff survives recovery
    assert phase["rto_before"] == pytest.approx(0.8)
    # the 5 new segments are timed; their sample recomputes RTO from SRTT/RTTVAR
    assert a.srtt == pytest.approx(0.125)
    assert a.rto == pytest.approx(max(0.2, a.srtt + 4 * a.rttvar)) == pytest.approx(0.2)
