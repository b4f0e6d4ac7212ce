"""ETX probing over plain UDP between neighbours, for nodes whose data path is the kernel's.

The estimator is etx.estimator.EtxTable and the timing etx.drivers.prober.ProberThread,
as on the overlay (paper, Design: "ETX Algorithm for Link Quality"): one thread
per neighbour sends numbered probes carrying the ratio measured for that
neighbour, a listener thread credits the probes heard.  Loss is not applied
here: the probes cross the receiving node's netfilter INPUT hook, where its loss
model (NFQUEUE handler or iptables statistic match) drops them like any packet.

With link-state routing (routing.topology.linkstate; ``routing`` given) the same socket carries the
node's link-state advertisements: a third thread originates them, floods what the listener
accepts, recomputes the routes and hands each batch of changes to ``on_routes`` (the node
daemon rewrites its kernel routes there, routing.drivers.kernel_routes).

What the socket takes (issue 27, items 3-4): datagrams from a neighbour's address only, whose header
names that neighbour (routing.overlay.neighbours: else ``stranger``); with the run's key (``auth``, ``auth.mac``)
every probe and LSA travels as the overlay's wire version 3, sealed for the link and replay-protected
as on the overlay (routing.overlay.auth: else ``forged``, ``replay``).  Junk is ``malformed``.  Each drop is
counted exactly and logged at the drop lines' rate.
"""
from __future__ import annotations

import socket
import threading
import time
from typing import Any, Callable

from etx.estimator import EtxTable
from etx.drivers.prober import ProberThread
from routing.overlay.auth import MeshAuth
from routing.topology.linkstate import Lsa, RouteChange
from routing.overlay.neighbours import STRANGER, link_senders, names_its_sender
from routing.overlay.node import Routing
from routing.forwarding.step import DropLines
from routing.overlay.wire import LSA, PROBE, AuthError, Packet, Probe, WireError, decode, decode_authentic, encode

Emit = Callable[..., None]


class UdpProber:
    """Probes every neighbour and keeps p(neighbour) current for the forwarding path.

    ``interval(now)`` gives the seconds to the next probe (fast while settling,
    then the paper's ~0.1 s).  :meth:`quality` is lock-free: it reads a dict the
    listener refreshes after every probe heard.
    """

    def __init__(self, address: str, port: int, etx: EtxTable, interval: Callable[[float], float],
                 emit: Emit, log_interval_s: float = 1.0, routing: Routing | None = None,
                 on_routes: Callable[[list[RouteChange], float], None] | None = None,
                 jitter: Callable[[], float] = lambda: 0.0, auth: MeshAuth | None = None) -> None:
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
        self.stats = {"probes_sent": 0, "probes_heard": 0, "send_errors": 0}
        #: the run's key (routing.overlay.auth; ``auth.mac``), or None: plain version-2 probes and LSAs
        self.auth = auth
        self._send_lock = threading.Lock()     # the probe threads and the LSA thread share the sequence number
        #: IP source -> neighbour: every other source is a stranger's (routing.overlay.neighbours)
        self._sender_of = link_senders({n: n for n in etx.neighbours}, etx.neighbours)
        #: what the probe socket heard and did not take, by reason: ``stranger`` (not from a neighbour's
        #: address, or a header source that is not that neighbour), ``forged`` and ``replay`` (with the key:
        #: routing.overlay.auth), ``malformed`` (not a packet of the wire format, or not a probe or LSA): exact,
        #: logged at the drop lines' rate (routing.forwarding.step.DropLines; issue 27)
        self.drops = {STRANGER: 0, "forged": 0, "replay": 0, "malformed": 0}
        self._drop_lines = DropLines(lambda now, reason, count, since: self._emit(
            now, "drop", reason=reason, ptype="probe", count=count, since=since))
        self.routing = routing
        self._on_routes = on_routes or (lambda changes, now: None)
        self._jitter = jitter
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
        if self.routing is not None:
            self._threads.append(threading.Thread(target=self._link_state, name="link-state", daemon=True))
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        """Stop the threads and close the socket (again: nothing more), then log the drops not logged yet."""
        self.stop_event.set()
        for t in self._threads:
            t.join(timeout=2.0)
        self._sock.close()
        self._drop_lines.flush(time.time(), final=True)

    def _drop(self, now: float, reason: str, **detail: Any) -> None:
        self.drops[reason] += 1
        if self._drop_lines.one_line(now, reason):
            self._emit(now, "drop", reason=reason, ptype="probe", **detail)

    def _failed(self, e: BaseException) -> None:
        self.error = e
        self.stop_event.set()

    def _probe(self, nbr: str) -> None:
        with self._lock:
            seq, ratio = self.etx.next_probe(nbr, time.time())
        before = self.stats["send_errors"]
        self._send(Packet(PROBE, self.address, self.port, nbr, self.port, probe=Probe(seq, ratio)), nbr, "probe")
        if self.stats["send_errors"] == before:
            self.stats["probes_sent"] += 1

    def _send(self, pkt: Packet, nbr: str, what: str) -> None:
        try:
            if self.auth is None:
                data = encode(pkt)
            else:
                with self._send_lock:
                    data = self.auth.seal(pkt, nbr)
            self._sock.sendto(data, (nbr, self.port))
        except (OSError, WireError) as e:   # e.g. ENOBUFS under load: a datagram the link never carried
            self.stats["send_errors"] += 1
            if self.stats["send_errors"] <= 10:
                self._emit(time.time(), "send_error", error=f"{what} to {nbr}: {e}")

    def _flood(self, lsa: Lsa, to: list[str]) -> None:
        for v in to:
            self._send(Packet(LSA, self.address, self.port, v, self.port, lsa=lsa), v, "LSA")

    def _link_state(self) -> None:
        """Originate every ``advertise_s``, recompute every ``recompute_s`` when the database changed (dynamic)
        or once at ``freeze_at`` (static), as routing.overlay.node.NodeCore does on the overlay."""
        rt = self.routing
        assert rt is not None
        router = rt.router
        settings = router.settings
        next_adv = time.time() + settings.advertise_s * (1.0 + self._jitter())
        next_route = rt.first_route_at()
        try:
            while not self.stop_event.is_set():
                now = time.time()
                if now >= next_adv and not rt.frozen(now):
                    next_adv = now + settings.advertise_s * (1.0 + self._jitter())
                    with self._lock:
                        lsa = router.originate(now)
                    self._flood(lsa, list(router.neighbours))
                if now >= next_route:
                    with self._lock:
                        changes = router.compute(now) if rt.compute_now(now) else []
                    self._on_routes(changes, now)
                    if rt.freeze_at is not None:
                        self._emit(now, "routes", metric="etx", routes=dict(router.routes))
                        next_route = float("inf")
                    else:
                        next_route = now + settings.recompute_s
                wake = next_route if rt.frozen(time.time()) else min(next_adv, next_route)
                self.stop_event.wait(None if wake == float("inf") else max(0.0, wake - time.time()))
        except Exception as e:   # noqa: BLE001 - handed to the node daemon, which logs node_error and exits 1
            self._failed(e)

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
                    self._drop_lines.flush(now, final=False)
        except OSError as e:
            if not self.stop_event.is_set():
                self._failed(e)

    def _heard(self, data: bytes, src: str, now: float) -> None:
        """One datagram from IP address ``src``: dropped by reason, or a probe or LSA taken."""
        sender = self._sender_of.get(src)
        if sender is None:                    # neighbours only, before anything reads it
            self._drop(now, STRANGER, detail=f"from {src}", size=len(data))
            return
        try:
            if self.auth is None:
                pkt = decode(data)
            else:
                self.auth.verify(data, sender)
                pkt = decode_authentic(data)
        except AuthError as e:
            self._drop(now, e.reason, detail=f"from {src}", size=len(data))
            return
        except WireError as e:
            self._drop(now, "malformed", detail=str(e), size=len(data))
            return
        if not names_its_sender(pkt.src, sender):
            self._drop(now, STRANGER, detail=f"from {src}, header source {pkt.src}", size=len(data))
            return
        if pkt.ptype == LSA and pkt.lsa is not None and self.routing is not None:
            rt = self.routing
            with self._lock:                 # once static routes are fixed: kept and counted, not passed on
                onward = rt.router.on_lsa(pkt.lsa, pkt.src, now, flood=not rt.frozen(now))
            self._flood(pkt.lsa, onward)
            return
        if pkt.ptype != PROBE or pkt.probe is None:
            self._drop(now, "malformed", detail=f"packet type {pkt.ptype} on the probe port", size=len(data))
            return
        with self._lock:
            self.etx.on_probe(pkt.src, pkt.probe.seq, pkt.probe.ratio, now)
            self._quality[pkt.src] = self.etx.quality(pkt.src)
        self.stats["probes_heard"] += 1

    def _log_etx(self, now: float) -> None:
        with self._lock:
            snap: dict[str, dict[str, Any]] = self.etx.log_fields()
        for nbr, fields in snap.items():
            self._emit(now, "etx", nbr=nbr, **fields)
