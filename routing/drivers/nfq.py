"""The NFQUEUE driver: netfilter queue -> KernelForwarder -> verdicts, raw-socket injection.

Runs inside one node's network namespace.  iptables rules (set up by the
backend) send the node's packets to queue ``queue_num``; this loop hands each
one to the sans-I/O :class:`routing.kernel.forwarder.KernelForwarder` and carries out the
verdict.  Local retransmissions are injected with a raw IPv4 socket whose
packets carry ``mark``, which the OUTPUT rule skips, so they are not queued
again.

netfilterqueue swallows ENOBUFS (the kernel could not queue a packet to us) and
a full queue drops silently; the backend reads /proc/net/netfilter/nfnetlink_queue
before and after a run instead, so forwarder overload is never mistaken for
wireless loss.
"""
from __future__ import annotations

import os
import select
import socket
import threading
import time
from typing import Any, Callable

from routing.kernel.forwarder import KernelForwarder
from routing.drivers.link_shaper import LinkShaper

INJECT_MARK = 0xA5
SOCK_RCVBUF = 8 * 1024 * 1024
TICK_S = 0.2                 # the loop wakes at least this often (stop requests, deadline)

Emit = Callable[..., None]


class NfqDriver:
    """Serve one NFQUEUE until ``stop_event`` is set.

    ``forwarder`` None is the accept-only handler of the benchmark: every packet
    is accepted untouched (the cost of the queue round trip alone).
    ``flush`` is called after every batch of packets (the log is written per
    batch, not per line: a crash loses at most the batch being handled).
    """

    def __init__(self, queue_num: int, forwarder: KernelForwarder | None, emit: Emit,
                 flush: Callable[[], None], max_len: int = 4096, mark: int = INJECT_MARK) -> None:
        from netfilterqueue import NetfilterQueue  # imported here: the sans-I/O parts need no C extension

        self._init_state(forwarder, emit, flush)
        if forwarder is not None:
            self._raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
            self._raw.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
        self._queue = NetfilterQueue()
        callback = self._accept_only if forwarder is None else self._handle
        self._queue.bind(queue_num, callback, max_len=max_len, sock_len=SOCK_RCVBUF)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)

    def _init_state(self, forwarder: KernelForwarder | None, emit: Emit, flush: Callable[[], None]) -> None:
        self.forwarder = forwarder
        self._emit = emit
        self._flush = flush
        self.stop_event = threading.Event()
        self.stats = {"packets": 0, "accepted": 0, "dropped": 0, "injected": 0, "inject_errors": 0,
                      "handler_errors": 0, "batches": 0, "timer_runs": 0}
        self._raw: socket.socket | None = None

    @classmethod
    def without_queue(cls, forwarder: KernelForwarder | None, emit: Emit, flush: Callable[[], None]) -> "NfqDriver":
        """The callbacks alone: no queue, raw socket or loop (bench/handler_cost.py feeds them crafted packets)."""
        self = cls.__new__(cls)
        self._init_state(forwarder, emit, flush)
        return self

    # ---- control -----------------------------------------------------------
    def stop(self) -> None:
        """Ask the loop to end (safe from signal handlers and other threads)."""
        self.stop_event.set()
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass  # the pipe is full or closed: the loop is waking up or gone already

    def run(self, tick: Callable[[float], bool] | None = None, shaper: LinkShaper | None = None) -> None:
        """The loop; ``tick(now)`` runs at least every TICK_S and ends the loop by returning False.

        The agent's timers fire between batches, at most a few milliseconds late under load.
        ``shaper``: the node's emulated links (routing.drivers.link_shaper), served by the same loop, so
        one thread gives both queues their verdicts and a held packet is released on time.
        """
        fd = self._queue.get_fd()
        fds = [fd, self._wake_r] + ([shaper.fileno()] if shaper is not None else [])
        try:
            while not self.stop_event.is_set():
                now = time.time()
                timeout = self._timeout(now) if shaper is None else shaper.timeout(now, self._timeout(now))
                ready, _, _ = select.select(fds, [], [], timeout)
                if shaper is not None:
                    if shaper.fileno() in ready:
                        shaper.on_readable()
                    shaper.release(time.time())
                if fd in ready:
                    self.stats["batches"] += 1
                    self._queue.run(block=False)   # every packet pending, then back here
                    self._flush()
                    if shaper is not None:
                        shaper.release(time.time())
                if self._wake_r in ready:
                    os.read(self._wake_r, 64)
                self._run_timers(time.time())
                if tick is not None and not tick(time.time()):
                    break
        finally:
            self._flush()
            self._queue.unbind()
            if self._raw is not None:
                self._raw.close()
            os.close(self._wake_r)
            os.close(self._wake_w)

    # ---- the snoop agent's timer (classic-Snoop family; A-SPAN has none) -----
    def _timeout(self, now: float) -> float:
        """How long select may wait: until the agent's next timer, at most TICK_S."""
        due = self.forwarder.next_timer() if self.forwarder is not None else None
        return TICK_S if due is None else min(TICK_S, max(0.0, due - now))

    def _run_timers(self, now: float) -> None:
        """Fire the agent's expired timers and inject what they send (local retransmissions, ACKs)."""
        fw = self.forwarder
        if fw is None:
            return
        due = fw.next_timer()
        if due is None or due > now:
            return
        try:
            packets = fw.on_timer(now)
        except Exception as e:  # as in _handle: a bug must not stop the queue; counted and logged
            self.stats["handler_errors"] += 1
            self._emit(now, "handler_error", error=f"timer: {type(e).__name__}: {e}",
                       count=self.stats["handler_errors"])
            return
        for raw in packets:
            self._inject(raw)
        self.stats["timer_runs"] += 1

    # ---- callbacks (called by netfilterqueue for each packet) ----------------
    def _accept_only(self, pkt: Any) -> None:
        self.stats["packets"] += 1
        pkt.accept()

    def _handle(self, pkt: Any) -> None:
        stats = self.stats
        stats["packets"] += 1
        verdict_given = False
        try:
            v = self.forwarder.on_packet(pkt.hook, pkt.get_payload(), time.time())  # type: ignore[union-attr]
            if v.accept:
                payload = v.payload
                if payload is not None:
                    pkt.set_payload(payload)
                pkt.accept()
                stats["accepted"] += 1
            else:
                pkt.drop()
                stats["dropped"] += 1
            verdict_given = True
            if v.inject:
                for raw in v.inject:
                    self._inject(raw)
        except Exception as e:  # a bug must not wedge the queue: count it, log it, pass the packet on
            stats["handler_errors"] += 1
            if stats["handler_errors"] <= 10 or stats["handler_errors"] % 1000 == 0:
                self._emit(time.time(), "handler_error", error=f"{type(e).__name__}: {e}",
                           count=stats["handler_errors"])
            if not verdict_given:
                pkt.accept()

    def _inject(self, data: bytes) -> None:
        """Send a cached packet again, as it left this node (IP_HDRINCL; the kernel routes it)."""
        try:
            self._raw.sendto(data, (socket.inet_ntoa(data[16:20]), 0))  # type: ignore[union-attr]
            self.stats["injected"] += 1
        except OSError as e:
            self.stats["inject_errors"] += 1
            if self.stats["inject_errors"] <= 10:
                self._emit(time.time(), "send_error", error=f"local retransmission: {e}")
