"""A small blocking, socket-like API over a node: connect, accept, sendall, recv, close.

The TCP state machine stays sans-I/O; this layer only adds waiting.  A ``Host``
(the UDP node driver) owns the lock, carries segments and calls the endpoints
from its own thread; application threads block on a condition tied to that lock.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable, Protocol

from tcp_user.config import TcpConfig
from tcp_user.connection import TcpConnection
from tcp_user.segment import Segment
from tcp_user.state import State

_EOF_STATES = (State.CLOSE_WAIT, State.LAST_ACK, State.CLOSING, State.TIME_WAIT, State.CLOSED)


class Host(Protocol):
    """What a node offers the socket layer."""

    lock: threading.Lock

    def attach(self, endpoint: "SocketEndpoint", local_port: int, remote: str, remote_port: int) -> None: ...
    def listen(self, local_port: int, factory: Callable[[str, int], "SocketEndpoint"]) -> None: ...
    def kick(self, endpoint: "SocketEndpoint") -> None: ...   # send what it queued; lock held


class SocketEndpoint:
    """A TcpConnection as a node endpoint that wakes waiting application threads."""

    def __init__(self, conn: TcpConnection, cond: threading.Condition) -> None:
        self.conn = conn
        self.cond = cond

    def on_segment(self, seg: Segment, now: float) -> None:
        self.conn.on_segment(seg, now)
        self.cond.notify_all()

    def on_timer(self, now: float) -> None:
        self.conn.on_timer(now)
        self.cond.notify_all()

    def next_timer(self) -> float | None:
        return self.conn.next_timer()

    def segments_to_send(self, now: float) -> list[Segment]:
        return self.conn.segments_to_send(now)

    @property
    def closed(self) -> bool:
        """Nothing more will happen on this connection (the node may forget it: routing.overlay.node MAX_ACCEPTED)."""
        return self.conn.state in (State.CLOSED, State.TIME_WAIT)


class SocketTimeout(TimeoutError):
    pass


def _wait(cond: threading.Condition, pred: Callable[[], bool], timeout: float | None, what: str) -> None:
    """Wait on ``cond`` (held) until ``pred()``; SocketTimeout after ``timeout`` seconds."""
    if not cond.wait_for(pred, timeout):
        raise SocketTimeout(f"timed out after {timeout} s waiting for {what}")


class TcpSocket:
    """One connection.  Methods block; all take an optional timeout in seconds."""

    def __init__(self, host: Host, endpoint: SocketEndpoint) -> None:
        self._host = host
        self._ep = endpoint
        self._cond = endpoint.cond

    @property
    def conn(self) -> TcpConnection:
        return self._ep.conn

    def sendall(self, data: bytes) -> None:
        """Queue ``data`` for sending (the send buffer is unbounded) and start transmitting."""
        with self._cond:
            if self.conn.state == State.CLOSED:
                raise ConnectionError("connection is closed")
            self.conn.send(data)
            self._host.kick(self._ep)

    def recv(self, bufsize: int, timeout: float | None = None) -> bytes:
        """Up to ``bufsize`` bytes; b"" once the peer has closed and everything was read."""
        with self._cond:
            got: list[bytes] = []

            def ready() -> bool:
                data = self.conn.read(bufsize)
                if data:
                    got.append(data)
                    return True
                return self.conn.state in _EOF_STATES
            _wait(self._cond, ready, timeout, "data")
            self._host.kick(self._ep)  # reading opened the window: let the update out
            return got[0] if got else b""

    def wait_acked(self, timeout: float | None = None) -> None:
        """Block until the peer has acknowledged everything sent so far."""
        with self._cond:
            _wait(self._cond, lambda: self.conn.all_acked, timeout, "acknowledgement of sent data")

    def close(self, timeout: float | None = 30.0) -> None:
        """Send FIN after the queued data and wait until it is acknowledged."""
        with self._cond:
            if self.conn.state not in (State.CLOSED, State.FIN_WAIT_1, State.FIN_WAIT_2, State.LAST_ACK,
                                       State.CLOSING, State.TIME_WAIT):
                self.conn.close(time.time())
                self._host.kick(self._ep)
            _wait(self._cond, lambda: self.conn.all_acked or self.conn.is_closed, timeout, "FIN acknowledgement")


class Listener:
    """Accepts connections on one port."""

    def __init__(self, host: Host, port: int, config: TcpConfig, iss: Callable[[], int]) -> None:
        self._host = host
        self._config = config
        self._iss = iss
        self._cond = threading.Condition(host.lock)
        self._ready: deque[SocketEndpoint] = deque()
        self._pending: list[SocketEndpoint] = []
        with self._cond:
            host.listen(port, self._new)

    def _new(self, remote: str, remote_port: int) -> SocketEndpoint:
        # connections that closed before they were accepted (a handshake that timed out) go
        self._pending = [ep for ep in self._pending if not ep.closed]
        conn = TcpConnection(self._config, iss=self._iss())
        conn.listen()
        ep = SocketEndpoint(conn, self._cond)
        self._pending.append(ep)
        return ep

    def accept(self, timeout: float | None = None) -> TcpSocket:
        with self._cond:
            def established() -> bool:
                for ep in list(self._pending):
                    if ep.conn.state not in (State.LISTEN, State.SYN_RCVD):
                        self._pending.remove(ep)
                        self._ready.append(ep)
                return bool(self._ready)
            _wait(self._cond, established, timeout, "a connection")
            return TcpSocket(self._host, self._ready.popleft())


def connect(host: Host, remote: str, remote_port: int, local_port: int, config: TcpConfig,
            iss: int = 0, timeout: float | None = 30.0) -> TcpSocket:
    """Open a connection (three-way handshake) and return it once established."""
    cond = threading.Condition(host.lock)
    ep = SocketEndpoint(TcpConnection(config, iss=iss), cond)
    with cond:
        host.attach(ep, local_port, remote, remote_port)
        ep.conn.connect(time.time())
        host.kick(ep)
        _wait(cond, lambda: ep.conn.state != State.SYN_SENT, timeout, f"connection to {remote}:{remote_port}")
        if ep.conn.state != State.ESTABLISHED:
            raise ConnectionError(f"connection to {remote}:{remote_port} failed ({ep.conn.state})")
    return TcpSocket(host, ep)
