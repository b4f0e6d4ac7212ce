"""ETX probing over plain UDP between neighbours, for nodes whose data path is the kernel's.

The estimator is etx.estimator.EtxTable and the timing etx.prober.ProberThread,
as on the overlay (paper, Design: "ETX Algorithm for Link Quality"): one thread
per neighbour sends numbered probes carrying the ratio measured for that
neighbour, a listener thread credits the probes heard.  Loss is not applied
here: the probes cross the receiving node's netfilter INPUT hook, where its loss
model (NFQUEUE handler or iptables statistic match) drops them like any packet.
"""
from __future__ import annotations

import socket
import threading
import time
from typing import Any, Callable

from etx.estimator import EtxTable
from etx.prober import ProberThread
from routing.wire import PROBE, Packet, Probe, WireError, decode, encode

Emit = Callable[..., None]


class UdpProber:
    """Probes every neighbour and keeps p(neighbour) current for the forwarding path.

    ``interval(now)`` gives the seconds to the next probe (fast while settling,
    then the paper's ~0.1 s).  :meth:`quality` is lock-free: it reads a dict the
    listener refreshes after every probe heard.
    """

    def __init__(self, address: str, port: int, etx: EtxTable, interval: Callable[[float], float],
                 emit: Emit, log_interval_s: float = 1.0) -> None:
        self.address = address
        self.port = port
        self.etx = etx
        self._interval = interval
        self._emit = emit
        self._log_interval = log_interval_s
        self._lock = threading.Lock()
        self._quality = {n: etx.quality(n) for n in etx.neighbours}
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.stats = {"probes_sent": 0, "probes_heard": 0, "malformed": 0, "send_errors": 0}
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((address, port))
        self._sock.settimeout(0.2)
        self._threads: list[threading.Thread] = []

    def quality(self, neighbour: str) -> float:
        """Delivery ratio towards ``neighbour`` (1.0 for an unknown one: no evidence of loss)."""
        return self._quality.get(neighbour, 1.0)

    def start(self) -> None:
        self._threads = [ProberThread(n, self._interval, self._probe, self.stop_event, self._failed)
                         for n in self.etx.neighbours]
        self._threads.append(threading.Thread(target=self._listen, name="probe-listener", daemon=True))
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self.stop_event.set()
        for t in self._threads:
            t.join(timeout=2.0)
        self._sock.close()

    def _failed(self, e: BaseException) -> None:
        self.error = e
        self.stop_event.set()

    def _probe(self, nbr: str) -> None:
        with self._lock:
            seq, ratio = self.etx.next_probe(nbr, time.time())
        data = encode(Packet(PROBE, self.address, self.port, nbr, self.port, probe=Probe(seq, ratio)))
        try:
            self._sock.sendto(data, (nbr, self.port))
            self.stats["probes_sent"] += 1
        except OSError as e:   # e.g. ENOBUFS under load: a probe the link never carried
            self.stats["send_errors"] += 1
            if self.stats["send_errors"] <= 10:
                self._emit(time.time(), "send_error", error=f"probe to {nbr}: {e}")

    def _listen(self) -> None:
        next_log = time.time() + self._log_interval
        try:
            while not self.stop_event.is_set():
                try:
                    data, (src, _port) = self._sock.recvfrom(2048)
                except socket.timeout:
                    data = b""
                    src = ""
                now = time.time()
                if data:
                    self._heard(data, src, now)
                if now >= next_log:
                    next_log = now + self._log_interval
                    self._log_etx(now)
        except OSError as e:
            if not self.stop_event.is_set():
                self._failed(e)

    def _heard(self, data: bytes, src: str, now: float) -> None:
        try:
            pkt = decode(data)
        except WireError as e:
            self.stats["malformed"] += 1
            self._emit(now, "drop", reason="malformed", ptype="probe", detail=str(e), size=len(data))
            return
        if pkt.ptype != PROBE or pkt.probe is None or pkt.src not in self._quality or pkt.src != src:
            self.stats["malformed"] += 1
            self._emit(now, "drop", reason="malformed", ptype="probe", detail=f"not a probe from a neighbour ({src})")
            return
        with self._lock:
            self.etx.on_probe(pkt.src, pkt.probe.seq, pkt.probe.ratio, now)
            self._quality[pkt.src] = self.etx.quality(pkt.src)
        self.stats["probes_heard"] += 1

    def _log_etx(self, now: float) -> None:
        with self._lock:
            snap: dict[str, dict[str, Any]] = self.etx.snapshot()
        for nbr, vals in snap.items():
            self._emit(now, "etx", nbr=nbr, forward=round(vals["forward"], 6),
                       reverse=round(vals["reverse"], 6), quality=round(vals["quality"], 6))
