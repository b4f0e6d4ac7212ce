"""Flow control: the advertised window is the receiver's free buffer; a sender facing a
closed window stops, probes it (persist timer), and resumes once the app reads."""
from __future__ import annotations

import pytest

from test_tcp_harness import MASK, bulk, data_seg, pair, server

ISS = 1000


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_slow_reader_stops_sender_until_read(variant: str) -> None:
    a, b, _, _ = pair(variant, iss_a=ISS, rcv_buffer=4000, time_wait=0.1)
    sim, data = bulk(a, b, 20_000, delay=0.0625)
    sim.read = {"a"}                                   # b's application does not read

    right_edge = [0]                                   # highest ack + window seen by a
    beyond: list[tuple[int, int]] = []
    probes: list[float] = []

    def seen(now: float, dst: str, seg) -> None:  # type: ignore[no-untyped-def]
        if dst == "a":
            right_edge[0] = max(right_edge[0], ((seg.ack - ISS) & MASK) + seg.window)

    def sent(now: float, src: str, seg) -> None:  # type: ignore[no-untyped-def]
        if src == "a" and seg.payload:
            start = (seg.seq - ISS) & MASK
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
