"""End-to-end transfers through the scripted network: handshake, bulk data, teardown,
sequence wraparound, lost control segments, and random loss patterns."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_tcp_harness import MASK, bulk, pair, seq_of
from tcp_user.config import VARIANTS
from tcp_user.segment import ACK, FIN, SYN


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
    from test_tcp_harness import Sim, Recorder
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
