"""The UDP overlay driver: one node's socket loop around its NodeCore.

One socket on the node's address, a select() loop that hands datagrams and
timer expiries to the core, and one ETX prober thread per neighbour.  The core
is guarded by one lock (the probers and the loop share it).
"""
from __future__ import annotations

import contextlib
import errno
import os
import resource
import select
import signal
import socket
import threading
import time
from typing import Any, Callable

from etx.drivers.prober import ProberThread
from routing.overlay.auth import MeshAuth
from routing.drivers.eventlog import EventLog
from routing.overlay.neighbours import STRANGER, link_senders
from routing.overlay.node import NodeCore, Out
from routing.overlay.udp_link import EgressLinks
from routing.overlay.wire import MAX_DATAGRAM, AuthError, Packet, WireError, encode

SOCKET_BUFFER = 4 * 1024 * 1024
TICK_S = 0.2          # the loop wakes at least this often (stop requests, deadline)
LOG_FLUSH_S = 0.05    # the event log is written at least this often: a crash loses at most this much


def socket_drops(bind: tuple[str, int], proc: str = "/proc/net/udp") -> int | None:
    """Datagrams the kernel dropped because this socket's receive buffer was full.

    They never reach the node, so without this count forwarder overload would look like
    wireless loss.  None where /proc/net/udp is not readable or has no such socket.
    """
    ip, port = bind
    want = "%08X:%04X" % (int.from_bytes(socket.inet_aton(ip), "little"), port)
    try:
        with open(proc) as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        cols = line.split()
        if len(cols) >= 13 and cols[1] == want:
            return int(cols[12])
    return None


def _loop_sleeps() -> int:
    """Voluntary context switches of the calling thread: how often it slept waiting (for its poll, a
    lock).  On a relay each one is a wake-up whose cost (the scheduler, an inter-processor interrupt
    on a VM) is shared by the datagrams it finds waiting."""
    return resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw


class UdpNode:
    """Runs ``core`` on a UDP socket bound to ``bind`` until stopped.

    ``peers`` maps each neighbour's mesh address to its UDP (ip, port).  ``log`` is the
    node's event log (batched); the loop writes it every LOG_FLUSH_S, so a crash that kills
    the process at once loses at most that much; any other ending writes it all.
    ``done`` is polled after every step; when it returns True the node keeps
    forwarding but the caller is told (``on_done``) once.  ``links``: emulated links to the
    neighbours (routing.overlay.udp_link; the ``link:`` section on the local backend), each datagram held
    until it would have crossed its link; None: datagrams go to the socket at once.
    """

    def __init__(self, core: NodeCore, bind: tuple[str, int], peers: dict[str, tuple[str, int]],
                 log: EventLog, deadline: float | None = None,
                 on_done: Callable[[], None] | None = None, done: Callable[[], bool] | None = None,
                 auth: MeshAuth | None = None, links: EgressLinks | None = None) -> None:
        self.core = core
        self.links = links
        self.peers = peers
        #: the authenticated overlay (routing.overlay.auth), or None: plain version-2 datagrams from the neighbours
        self.auth = auth
        #: UDP source -> the neighbour's mesh address; any other source is a stranger's (routing.overlay.neighbours)
        self._sender_of = link_senders({mesh: tuple(udp) for mesh, udp in peers.items()}, core.neighbours)
        self.log = log
        self._emit = log.emit
        self.deadline = deadline
        self._done = done
        self._on_done = on_done
        self._done_said = False
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.send_errors = 0
        self.rx_datagrams = 0
        self.tx_datagrams = 0
        # process CPU time, datagrams received and the loop's sleeps when the first data segment went
        # through this node: what a node spends per datagram once the flows run, without the probing
        # before them, and how many datagrams it handles per wake-up (bench/local_goodput.py)
        self.flow_start: tuple[float, int, int] | None = None
        self._sleeps_end: int | None = None
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        self.sock.bind(bind)
        self.bind_address = self.sock.getsockname()
        self.kernel_drops: int | None = None
        self.sock.setblocking(False)
        self._wake_r, self._wake_w = os.pipe()
        self._closed = False
        # Guards the wake-up pipe against being closed between _wake's look at _closed and its write
        # (a stop() from another thread while the loop ends).  Reentrant: a signal handler's stop() may
        # interrupt this thread while it holds it.
        self._wake_lock = threading.RLock()
        os.set_blocking(self._wake_w, False)

    # ---- control -----------------------------------------------------------
    def stop(self) -> None:
        """Ask the loop to end (safe from signal handlers and other threads)."""
        self.stop_event.set()
        self._wake()

    def install_signal_handlers(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop())

    def _thread_failed(self, e: BaseException) -> None:
        self.error = e
        self.stop()

    # ---- the socket layer's Host interface (tcp_user.drivers.sockets) -----------------
    def attach(self, endpoint: Any, local_port: int, remote: str, remote_port: int) -> None:
        """Bind an endpoint (call with ``lock`` held)."""
        self.core.bind(endpoint, local_port, remote, remote_port)

    def listen(self, local_port: int, factory: Callable[[str, int], Any]) -> None:
        self.core.listen(local_port, factory)

    def kick(self, endpoint: Any) -> None:
        """Transmit what an application queued on ``endpoint`` (``lock`` held) and re-arm the loop's timer."""
        self._send(self.core.flush(endpoint, time.time()))
        self._wake()

    def _wake(self) -> None:
        """Interrupt the loop's select(); a full pipe already holds a pending wake-up."""
        with self._wake_lock:
            if self._closed:
                return
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_w, b"x")

    # ---- I/O ---------------------------------------------------------------
    def _send(self, out: Out) -> None:
        peers, links = self.peers, self.links
        for nxt, pkt in out:
            addr = peers.get(nxt)
            if addr is None:
                self.core.engine.drop(pkt, "no_route", time.time(), detail=f"no UDP peer for {nxt}")
                continue
            try:
                if pkt.__class__ is not Packet:     # a datagram the relay path rewrote (ForwardingEngine._relay)
                    if self.auth is not None:
                        self.auth.reseal(pkt, nxt)
                    data = pkt
                else:
                    data = encode(pkt) if self.auth is None else self.auth.seal(pkt, nxt)
            except WireError as e:
                self._send_error(e)
                continue
            if links is not None and nxt in links:
                # the emulated link's turn (routing.overlay.udp_link): sent by _release when it has crossed; a copy,
                # because the snoop cache may reseal its relayed bytes for a local retransmission meanwhile
                if not links.hold(nxt, time.time(), bytes(data), addr, pkt):
                    self.core.engine.drop(pkt, "queue", time.time())    # drop-tail, as the sim's link
                continue
            self._put(data, addr, pkt)

    def _put(self, data: bytes | bytearray, addr: tuple[str, int], pkt: Any) -> None:
        """Hand one datagram to the socket."""
        try:
            self.sock.sendto(data, addr)
            self.tx_datagrams += 1
        except BlockingIOError:
            # the socket buffer is full: the overlay's interface queue overflowed (a queue drop)
            self.core.engine.drop(pkt, "queue", time.time())
        except OSError as e:
            self._send_error(e)

    def _send_error(self, e: Exception) -> None:
        self.send_errors += 1
        if self.send_errors <= 10 or self.send_errors % 1000 == 0:
            self._emit(time.time(), "send_error", error=str(e), count=self.send_errors)

    def _release(self, now: float) -> None:
        """Send every held datagram whose link crossing has ended (call with ``lock`` held)."""
        if self.links is not None:
            for data, addr, pkt in self.links.due(now):
                self._put(data, addr, pkt)

    def _probe(self, nbr: str) -> None:
        with self.lock:
            self._send(self.core.send_probe(nbr, time.time()))
        if self.links is not None:
            self._wake()      # the loop's wait may end after this probe is due on its link

    def run(self) -> None:
        stop = self.stop_event
        probers = [ProberThread(n, self.core.probe_interval, self._probe, stop, self._thread_failed)
                   for n in self.core.neighbours]
        for p in probers:
            p.start()
        core, lock, log, clock, links = self.core, self.lock, self.log, time.time, self.links
        sock_fd, wake_fd = self.sock.fileno(), self._wake_r
        fds = [sock_fd, wake_fd]
        with lock:
            t = core.next_timer()
        flushed = clock()
        try:
            while not stop.is_set():
                now = clock()
                if self.deadline is not None and now >= self.deadline:
                    self._emit(now, "deadline", detail="node lifetime limit reached")
                    break
                if links is not None:
                    with lock:
                        due = links.next_due()
                    if due is not None and (t is None or due < t):
                        t = due
                timeout = TICK_S if t is None else min(TICK_S, max(0.0, t - now))
                # select, not poll: its timeout has microseconds (poll's is rounded up to a millisecond,
                # which an emulated link's release would take as link time on every hop)
                ready, _, _ = select.select(fds, [], [], timeout)
                for fd in ready:
                    if fd == sock_fd:
                        self._drain()
                    else:
                        os.read(wake_fd, 64)
                now = clock()
                with lock:             # the next timer after what was just handled (one look-up a round)
                    self._release(now)
                    t = core.next_timer()
                    if t is not None and t <= now:
                        self._send(core.on_timer(now))
                        t = core.next_timer()
                if now - flushed >= LOG_FLUSH_S:
                    with lock:
                        core.engine.step.flush_drops(now)   # counts of drops over the line rate
                    log.flush()        # batches of at most LOG_FLUSH_S (or the log's FLUSH_LINES)
                    if core.engine.tap is not None:
                        core.engine.tap.writer.flush()
                    flushed = now
                if self.flow_start is None and self._data_seen():
                    self.flow_start = (time.process_time(), self.rx_datagrams, _loop_sleeps())
                if not self._done_said and self._done is not None and self._done():
                    self._done_said = True
                    if self._on_done:
                        self._on_done()
        finally:
            self._sleeps_end = _loop_sleeps()
            stop.set()
            for p in probers:
                p.join(timeout=2.0)
            self.kernel_drops = socket_drops(self.bind_address)
            with self.lock, self._wake_lock:
                self._closed = True
                self.sock.close()
                os.close(self._wake_r)
                os.close(self._wake_w)
        if self.error is not None:
            raise self.error

    def _data_seen(self) -> bool:
        tx = self.core.engine.step.tx
        return tx["send"] + tx["fwd"] > 0

    def flow_cpu(self) -> tuple[float, int, int | None] | None:
        """(CPU seconds, datagrams received, times the loop slept) since the first data segment went
        through this node (sleeps: None before :meth:`run` ended)."""
        if self.flow_start is None:
            return None
        cpu0, rx0, sleeps0 = self.flow_start
        sleeps = None if self._sleeps_end is None else self._sleeps_end - sleeps0
        return time.process_time() - cpu0, self.rx_datagrams - rx0, sleeps

    def _drain(self, budget: int = 256) -> None:
        """Read what the socket holds (up to ``budget`` datagrams) and process each, holding the core's
        lock for the whole batch (the probers wait at most one batch).

        Neighbours only, with or without the MAC (routing.overlay.neighbours): a datagram from a UDP address that
        is not a neighbour's is dropped as ``stranger`` before anything reads it.  With the MAC on, the
        rest needs a tag that verifies and a fresh sequence number (routing.overlay.auth; else ``forged`` or
        ``replay``).  Every drop here comes before the core's loss model sees the datagram; what is left
        goes to the core with its sender's mesh address (a capture names it, a link's loss model needs it)."""
        recvfrom, core, send, now, auth = self.sock.recvfrom, self.core, self._send, time.time, self.auth
        sender_of, step = self._sender_of, self.core.engine.step
        with self.lock:
            for _ in range(budget):
                try:
                    data, src = recvfrom(MAX_DATAGRAM)
                except BlockingIOError:
                    return
                except OSError as e:
                    if e.errno in (errno.ECONNREFUSED, errno.EINTR):
                        continue  # ICMP from an earlier send to a neighbour that is not up yet
                    raise
                self.rx_datagrams += 1
                t = now()
                sender = sender_of.get(src)
                if sender is None:
                    step.drop(t, STRANGER, "?", src=f"{src[0]}:{src[1]}", size=len(data))
                    continue
                if auth is None:
                    send(core.on_datagram(data, t, sender))
                    continue
                try:
                    auth.verify(data, sender)
                except AuthError as e:
                    step.drop(t, e.reason, "?", src=f"{src[0]}:{src[1]}", size=len(data))
                    continue
                send(core.on_authentic(data, t, sender))
