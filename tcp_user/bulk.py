"""The traffic app: a bulk transfer of N segments whose integrity is checked at the receiver.

Sans-I/O like the connection it wraps: segments in, segments out, time as an argument.
The payload is generated from a seed on both sides, so the receiver knows the
expected SHA-256 without it ever crossing the network.
"""
from __future__ import annotations

import functools
import hashlib
import random
from typing import Any, Callable, Iterable

from tcp_user.config import TcpConfig
from tcp_user.connection import TcpConnection
from tcp_user.segment import Segment
from tcp_user.state import State

Emit = Callable[..., None]
DELIVER_LOG_BYTES = 100_000
# States after the peer's FIN was received in order.
_PEER_DONE = (State.CLOSE_WAIT, State.LAST_ACK, State.CLOSED, State.TIME_WAIT)


def _no_emit(now: float, ev: str, **fields: Any) -> None:
    return None


def _tagged(emit: Emit, flow: str) -> Emit:
    """The connection's events, tagged with the flow they belong to (``flow`` comes first)."""
    return functools.partial(emit, flow=flow)


def bulk_payload(seed: int, size: int) -> bytes:
    """The bytes a bulk flow carries (deterministic in the seed)."""
    return random.Random(seed).randbytes(size)


class BulkSender:
    """Connects at ``start``, sends ``segments`` x ``segment_size`` bytes, then closes."""

    def __init__(self, config: TcpConfig, flow: str, segments: int, data_seed: int, iss: int,
                 start: float, emit: Emit | None = None) -> None:
        self.flow = flow
        self.segments = segments
        self.size = segments * config.mss
        self.start = start
        self._emit = emit or _no_emit
        self.conn = TcpConnection(config, iss=iss, emit=_tagged(self._emit, flow))
        self._data = bulk_payload(data_seed, self.size)
        self.sha256 = hashlib.sha256(self._data).hexdigest()
        self._variant = config.variant
        self.started = False
        self.done = False

    def next_timer(self) -> float | None:
        if not self.started:
            return self.start
        return self.conn.next_timer()

    def on_timer(self, now: float) -> None:
        if not self.started and now >= self.start:
            self.started = True
            self._emit(now, "flow_start", flow=self.flow, segments=self.segments,
                       segment_size=self.conn_mss, variant=self._variant)
            self.conn.connect(now)
            self.conn.send(self._data)
            self.conn.close(now)
            self._data = b""
            return
        if self.started:
            t = self.conn.next_timer()
            if t is not None and now >= t:
                self.conn.on_timer(now)
            self._check_done(now)

    @property
    def conn_mss(self) -> int:
        return self.size // self.segments

    def on_segment(self, seg: Segment, now: float) -> None:
        self.conn.on_segment(seg, now)
        self._check_done(now)

    def segments_to_send(self, now: float) -> list[Segment]:
        return self.conn.segments_to_send(now) if self.started else []

    def _check_done(self, now: float) -> None:
        if not self.done and self.conn.bytes_acked >= self.size and self.conn.all_acked:
            self.done = True
            self._emit(now, "flow_end", flow=self.flow, bytes=self.conn.bytes_acked, sha256=self.sha256)


class BulkReceiver:
    """Accepts one connection, reads everything, checks the SHA-256 against the expected one."""

    def __init__(self, config: TcpConfig, flow: str, segments: int, data_seed: int, iss: int,
                 emit: Emit | None = None) -> None:
        self.flow = flow
        self.size = segments * config.mss
        self._emit = emit or _no_emit
        self.conn = TcpConnection(config, iss=iss, emit=_tagged(self._emit, flow))
        self.conn.listen()
        self.expected = hashlib.sha256(bulk_payload(data_seed, self.size)).hexdigest()
        self._hash = hashlib.sha256()
        self.received = 0
        self._logged = 0
        self.done = False
        self.ok: bool | None = None

    def next_timer(self) -> float | None:
        return self.conn.next_timer()

    def on_timer(self, now: float) -> None:
        t = self.conn.next_timer()
        if t is not None and now >= t:
            self.conn.on_timer(now)

    def on_segment(self, seg: Segment, now: float) -> None:
        self.conn.on_segment(seg, now)
        data = self.conn.read()
        if data:
            self._hash.update(data)
            self.received += len(data)
            if self.received - self._logged >= DELIVER_LOG_BYTES or self.received >= self.size:
                self._logged = self.received
                self._emit(now, "deliver", flow=self.flow, bytes=self.received)
        if not self.done and self.received >= self.size and self.conn.state in _PEER_DONE:
            self.done = True
            self.conn.close(now)
            digest = self.digest()
            self.ok = digest == self.expected and self.received == self.size
            self._emit(now, "flow_end", flow=self.flow, bytes=self.received, sha256=digest, ok=self.ok)

    def segments_to_send(self, now: float) -> list[Segment]:
        return self.conn.segments_to_send(now)

    def log_delivered(self, now: float) -> None:
        """The run stops before the flow finished: one last ``deliver`` (``at_stop``) with what was received,
        which the 100 KB steps would leave unsaid (what an incomplete repetition delivered, docs/LOGS.md)."""
        if not self.done and self.received > self._logged:
            self._logged = self.received
            self._emit(now, "deliver", flow=self.flow, bytes=self.received, at_stop=True)

    def digest(self) -> str:
        """SHA-256 (hex) of the bytes received so far."""
        return self._hash.hexdigest()


def log_delivered(endpoints: Iterable[object], now: float) -> None:
    """At a node's stop: every unfinished receiver among ``endpoints`` logs what it received (BulkReceiver.log_delivered)."""
    for ep in endpoints:
        if isinstance(ep, BulkReceiver):
            ep.log_delivered(now)
