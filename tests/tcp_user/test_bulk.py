"""The bulk-transfer app (tcp_user.bulk): a sender and a receiver wired back to back in virtual
time, and the receiver's integrity check against a corrupted or misordered byte.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Callable
import pytest
from tcp_user.bulk import BulkReceiver, BulkSender, bulk_payload, DELIVER_LOG_BYTES
from tcp_user.config import TcpConfig
from tcp_user.segment import Segment
import heapq


Tamper = Callable[[Segment], Segment]


SEGMENTS = 40


def _transfer(tamper: Tamper | None = None, variant: str = "sack",
              delay: float = 0.01) -> tuple[BulkSender, BulkReceiver, list[tuple[str, dict[str, Any]]]]:
    """Run one flow of ``SEGMENTS`` segments; ``tamper`` may rewrite each data segment on its way."""
    snd, rcv, events = transfer(SEGMENTS, start=0.0, tamper=tamper, flow="A-D", variant=variant, delay=delay)
    return snd, rcv, [(ev, f) for _, _, ev, f in events]


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_an_intact_transfer_matches_the_payload(variant: str) -> None:
    snd, rcv, events = _transfer(variant=variant)
    digest = hashlib.sha256(bulk_payload(7, SEGMENTS * 1000)).hexdigest()
    assert snd.done and rcv.done and rcv.ok is True
    assert snd.sha256 == rcv.expected == rcv.digest() == digest
    ends = [f for ev, f in events if ev == "flow_end"]
    assert {"flow": "A-D", "bytes": SEGMENTS * 1000, "sha256": digest} in ends
    assert {"flow": "A-D", "bytes": SEGMENTS * 1000, "sha256": digest, "ok": True} in ends


def _flip_byte_of(seq_index: int, offset: int) -> Tamper:
    """Flip one byte of the first transmission of data segment ``seq_index`` (0-based)."""
    done: set[int] = set()

    def tamper(seg: Segment) -> Segment:
        if seq_index in done:
            return seg
        first = (1000 + 1 + seq_index * 1000) & 0xFFFFFFFF
        if seg.seq != first:
            return seg
        done.add(seq_index)
        p = bytearray(seg.payload)
        p[offset] ^= 0x01
        return dataclasses.replace(seg, payload=bytes(p))
    return tamper


@pytest.mark.parametrize("index,offset", [(0, 0), (17, 500), (SEGMENTS - 1, 999)])
def test_a_corrupted_byte_fails_the_check_and_the_digest_is_of_what_arrived(index: int, offset: int) -> None:
    snd, rcv, events = _transfer(_flip_byte_of(index, offset))
    received = bytearray(bulk_payload(7, SEGMENTS * 1000))
    received[index * 1000 + offset] ^= 0x01
    assert rcv.done and rcv.ok is False
    assert rcv.digest() == hashlib.sha256(received).hexdigest() != rcv.expected
    assert {"flow": "A-D", "bytes": SEGMENTS * 1000, "sha256": rcv.digest(), "ok": False} in [
        f for ev, f in events if ev == "flow_end"]


def test_misordered_bytes_fail_the_check() -> None:
    """Two segments' payloads swapped on the wire: every byte arrives, in the wrong place."""
    a, b = (1000 + 1 + 3 * 1000), (1000 + 1 + 4 * 1000)
    payload = bulk_payload(7, SEGMENTS * 1000)
    swap = {a: payload[4000:5000], b: payload[3000:4000]}

    def tamper(seg: Segment) -> Segment:
        return dataclasses.replace(seg, payload=swap[seg.seq]) if seg.seq in swap else seg

    _, rcv, _ = _transfer(tamper)
    received = payload[:3000] + swap[a] + swap[b] + payload[5000:]
    assert rcv.done and rcv.ok is False
    assert rcv.digest() == hashlib.sha256(received).hexdigest()


def test_the_digest_of_a_partial_transfer_is_of_the_bytes_so_far() -> None:
    rcv = BulkReceiver(TcpConfig(), "A-D", SEGMENTS, 7, 0)
    assert rcv.digest() == hashlib.sha256(b"").hexdigest()


# ====================================================================================================
# Rules of the bulk application (tcp_user/bulk.py) a run's records rest on (docs/LOGS.md): the flow's
# events (flow_start, deliver, flow_end) at their times with their fields, the connection's own events
# tagged with the flow, each side's initial sequence number, when each side is done, and the receiver's
# timers.  A sender and a receiver back to back in virtual time (issue 30, item 3).


Event = tuple[str, float, str, dict[str, Any]]        # (side, time, event, fields)


MSS = 1000


def transfer(segments: int, start: float = 0.5, keep: Callable[[str, Segment], bool] = lambda d, s: True,
             until: float = 60.0, tamper: Callable[[Segment], Segment] | None = None, flow: str = "A->D",
             delay: float = 0.01, **cfg: Any) -> tuple[BulkSender, BulkReceiver, list[Event]]:
    """One flow over a path of ``delay`` (one way) in virtual time (data seed 7, ISS 1000 and 50,000);
    ``keep(direction, seg)`` False loses a segment ("s": toward the receiver, "r": toward the sender),
    ``tamper`` may rewrite each data segment on its way (tests/tcp_user/test_bulk.py)."""
    events: list[Event] = []

    def sink(side: str) -> Callable[..., None]:
        return lambda now, ev, **f: events.append((side, now, ev, f))
    config = TcpConfig(**{"variant": "sack", "mss": MSS, "time_wait": 0.0, **cfg})
    snd = BulkSender(config, flow, segments, 7, 1000, start, sink("s"))
    rcv = BulkReceiver(config, flow, segments, 7, 50_000, sink("r"))
    apps: dict[str, BulkSender | BulkReceiver] = {"s": snd, "r": rcv}
    q: list[tuple[float, int, str, Segment]] = []
    n = 0

    def flush(name: str, now: float) -> None:
        nonlocal n
        for seg in apps[name].segments_to_send(now):
            n += 1
            if name == "s" and seg.payload and tamper is not None:
                seg = tamper(seg)
            if keep(name, seg):
                heapq.heappush(q, (now + delay, n, "r" if name == "s" else "s", seg))

    now = 0.0
    while now < until:
        cand = [t for a in apps.values() if (t := a.next_timer()) is not None] + ([q[0][0]] if q else [])
        if not cand:
            break
        now = max(now, min(cand))
        while q and q[0][0] <= now:
            _, _, dst, seg = heapq.heappop(q)
            apps[dst].on_segment(seg, now)
            flush(dst, now)
        for k, a in apps.items():
            t = a.next_timer()
            if t is not None and t <= now:
                a.on_timer(now)
                flush(k, now)
    return snd, rcv, events


def of(events: list[Event], side: str, ev: str) -> list[tuple[float, dict[str, Any]]]:
    return [(t, f) for s, t, e, f in events if s == side and e == ev]


def test_the_flows_events_at_their_times_with_their_fields():
    segments = 250                       # 250 kB: deliver lines at 100 kB, 200 kB and the last byte
    snd, rcv, events = transfer(segments)
    size = segments * MSS
    digest = hashlib.sha256(bulk_payload(7, size)).hexdigest()
    [(t0, start)] = of(events, "s", "flow_start")
    assert t0 == 0.5 and start == {"flow": "A->D", "segments": segments, "segment_size": MSS, "variant": "sack"}
    delivers = of(events, "r", "deliver")
    assert [f for _, f in delivers] == [{"flow": "A->D", "bytes": b} for b in (100_000, 200_000, size)]
    assert DELIVER_LOG_BYTES == 100_000
    [(t_end_r, end_r)] = of(events, "r", "flow_end")
    assert end_r == {"flow": "A->D", "bytes": size, "sha256": digest, "ok": True}
    [(t_end_s, end_s)] = of(events, "s", "flow_end")
    assert end_s == {"flow": "A->D", "bytes": size, "sha256": digest}
    # each at the time of the segment that caused it: the receiver's end when the FIN arrives, the
    # sender's when the FIN's ACK does, 10 ms later; the last deliver with the receiver's end or before
    assert t0 < delivers[0][0] < delivers[1][0] <= delivers[2][0] <= t_end_r
    assert abs(t_end_s - (t_end_r + 0.01)) < 1e-9
    assert snd.done is True and rcv.done is True and rcv.ok is True


def test_the_connections_own_events_carry_the_flow():
    _, _, events = transfer(20)
    for side in ("s", "r"):
        own = [f for s, _, e, f in events if s == side and e in ("cwnd", "state")]
        assert own and all(f["flow"] == "A->D" for f in own), side


def test_each_side_opens_with_its_own_initial_sequence_number():
    seen: dict[str, list[Segment]] = {"s": [], "r": []}

    def keep(d: str, seg: Segment) -> bool:
        seen[d].append(seg)
        return True
    transfer(3, keep=keep)
    assert seen["s"][0].seq == 1000 and seen["r"][0].seq == 50_000     # the SYN and the SYN-ACK


def test_nothing_is_done_before_its_time():
    config = TcpConfig(variant="sack", mss=MSS)
    snd = BulkSender(config, "f", 3, 7, 1000, 2.0)
    rcv = BulkReceiver(config, "f", 3, 7, 50_000)
    assert snd.started is False and snd.done is False and rcv.done is False and rcv.ok is None
    assert snd.next_timer() == 2.0 and snd.segments_to_send(1.0) == []


class StubConn:
    """What the bulk app reads of its connection, set by hand (the FIN rides on the last data segment, so no
    transfer has all data acknowledged without the FIN, or all data received without it)."""

    def __init__(self, **state: Any) -> None:
        self.__dict__.update(state)
        self.closed_at: float | None = None

    def on_segment(self, seg: Any, now: float) -> None:
        pass

    def read(self) -> bytes:
        data, self.pending = self.pending, b""
        return data

    def close(self, now: float) -> None:
        self.closed_at = now


def test_the_sender_is_done_only_when_all_its_data_and_its_fin_are_acknowledged():
    config = TcpConfig(variant="sack", mss=MSS)
    events: list[Event] = []
    snd = BulkSender(config, "f", 3, 7, 1000, 0.0, lambda now, ev, **f: events.append(("s", now, ev, f)))
    for acked, all_acked in ((3 * MSS, False), (2 * MSS, True)):     # the FIN outstanding; data outstanding
        snd.conn = StubConn(bytes_acked=acked, all_acked=all_acked)  # type: ignore[assignment]
        snd.on_segment(None, 1.0)  # type: ignore[arg-type]
        assert snd.done is False and of(events, "s", "flow_end") == []
    snd.conn = StubConn(bytes_acked=3 * MSS, all_acked=True)  # type: ignore[assignment]
    snd.on_segment(None, 1.5)  # type: ignore[arg-type]
    assert snd.done is True and [t for t, _ in of(events, "s", "flow_end")] == [1.5]
    snd.on_segment(None, 2.0)  # type: ignore[arg-type]
    assert len(of(events, "s", "flow_end")) == 1                     # once


def test_the_receiver_is_done_only_when_it_has_every_byte_and_the_senders_fin():
    """docs/LOGS.md: the receiver's flow_end when the whole payload is in and the peer has closed (its FIN
    in order: CLOSE_WAIT or later); it closes its side then, and says whether the bytes are the expected."""
    from tcp_user.state import State
    config = TcpConfig(variant="sack", mss=MSS)
    events: list[Event] = []
    rcv = BulkReceiver(config, "f", 3, 7, 50_000, lambda now, ev, **f: events.append(("r", now, ev, f)))
    payload = bulk_payload(7, 3 * MSS)
    rcv.conn = StubConn(pending=payload[:2 * MSS], state=State.CLOSE_WAIT)  # type: ignore[assignment]
    rcv.on_segment(None, 1.0)  # type: ignore[arg-type]       # the FIN, but a segment missing
    assert rcv.done is False and rcv.ok is None
    rcv.conn = StubConn(pending=payload[2 * MSS:], state=State.ESTABLISHED)  # type: ignore[assignment]
    rcv.on_segment(None, 1.1)  # type: ignore[arg-type]       # every byte, no FIN yet
    assert rcv.done is False and rcv.ok is None and of(events, "r", "flow_end") == []
    assert [f["bytes"] for _, f in of(events, "r", "deliver")] == [3 * MSS]   # the last byte is logged
    conn = StubConn(pending=b"", state=State.CLOSE_WAIT)
    rcv.conn = conn  # type: ignore[assignment]
    rcv.on_segment(None, 1.2)  # type: ignore[arg-type]
    assert rcv.done is True and rcv.ok is True and conn.closed_at == 1.2
    assert [(t, f["ok"]) for t, f in of(events, "r", "flow_end")] == [(1.2, True)]


def test_the_receivers_timer_sends_its_delayed_ack_when_due():
    """RFC 1122 sec. 4.2.3.2: one segment in, no ACK at once; at the delayed-ACK time the receiver's timer
    sends it."""
    config = TcpConfig(variant="sack", mss=MSS, delayed_ack=True, delack_s=0.2)
    snd = BulkSender(config, "f", 3, 7, 1000, 0.0)
    rcv = BulkReceiver(config, "f", 3, 7, 50_000)
    snd.on_timer(0.0)
    [syn] = snd.segments_to_send(0.0)
    rcv.on_segment(syn, 0.01)
    [synack] = rcv.segments_to_send(0.01)
    snd.on_segment(synack, 0.02)
    data = [s for s in snd.segments_to_send(0.02) if s.payload]
    rcv.on_segment(data[0], 0.03)
    assert [s for s in rcv.segments_to_send(0.03)] == []
    due = rcv.next_timer()
    assert due is not None and abs(due - 0.23) < 1e-9
    rcv.on_timer(due - 1e-6)
    assert rcv.segments_to_send(due - 1e-6) == []
    rcv.on_timer(due)
    [ack] = rcv.segments_to_send(due)
    assert ack.ack == 1000 + 1 + MSS


def test_the_connect_is_logged_at_the_flows_start_and_the_payload_is_not_kept_twice():
    """The sender's SYN_SENT state event at its start time; once the payload is the connection's, the app
    holds no copy of it (issue 13: one copy of a flow's data per node)."""
    _, _, events = transfer(3, start=0.5)
    states = [(t, f) for t, f in of(events, "s", "state")]
    assert states[0][0] == 0.5 and "SYN_SENT" in str(states[0][1])
    config = TcpConfig(variant="sack", mss=MSS)
    snd = BulkSender(config, "f", 3, 7, 1000, 0.0)
    snd.on_timer(0.0)
    assert snd._data == b""


def test_a_timer_call_with_no_timer_pending_does_nothing():
    """A driver may wake the app when nothing is due: no timer armed (a receiver still listening, a sender
    whose connection has closed) is not an error."""
    config = TcpConfig(variant="sack", mss=MSS)
    rcv = BulkReceiver(config, "f", 3, 7, 50_000)
    assert rcv.next_timer() is None
    rcv.on_timer(5.0)
    assert rcv.segments_to_send(5.0) == []
    snd, rcv, _ = transfer(3)
    assert snd.next_timer() is None and rcv.next_timer() is None
    snd.on_timer(100.0)
    rcv.on_timer(100.0)
    assert snd.done and rcv.done
