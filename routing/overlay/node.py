"""One mesh node without I/O: forwarding engine + ETX prober + TCP endpoints, driven by time.

Drivers (the virtual-time simulator, the UDP socket loop) feed arriving packets
and timer expiries in and carry out the transmissions that come back as
``(next_hop_address, Packet)`` pairs.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from aspan.adaptive import QosLearner
from aspan.fields import AspanFields
from etx.estimator import EtxTable
from routing.overlay.engine import Deliver, ForwardingEngine, Transmit
from routing.topology.linkstate import LinkStateRouter, RouteChange, apply_changes
from routing.overlay.neighbours import STRANGER, names_its_sender
from routing.overlay.wire import DATA, LSA, PROBE, Packet, Probe
from tcp_user.segment import ACK, SYN, Segment

Emit = Callable[..., None]
Out = list[tuple[str, Packet]]


class Endpoint(Protocol):
    """A TCP app bound to one (local port, remote address, remote port)."""

    def on_segment(self, seg: Segment, now: float) -> None: ...
    def on_timer(self, now: float) -> None: ...
    def next_timer(self) -> float | None: ...
    def segments_to_send(self, now: float) -> list[Segment]: ...


#: Connections a node's listeners keep at once (issue 13's bounds: SYNs from forged sources must not
#: grow the bindings, and the timer scan over them, without limit).  Closed ones are reaped first;
#: beyond the bound a SYN is dropped as ``refused``.
MAX_ACCEPTED = 256


@dataclass
class Binding:
    endpoint: Endpoint
    local_port: int
    remote: str
    remote_port: int
    fields: AspanFields  # header fields the sender stamps on every data packet
    qos: QosLearner | None = None   # the adaptive sender's pkt_qos (issue 29): stamped instead of fields'


@dataclass
class ProbeSettings:
    interval_s: float = 0.1          # paper: about ten probes per second per neighbour
    warmup_interval_s: float = 0.005  # faster while settling, so the window is full when flows start
    warmup_until: float = 0.0
    log_interval_s: float = 1.0
    start: float = 0.0


@dataclass
class Routing:
    """Link-state routing of a node (routing.topology.linkstate): its router, and ``freeze_at`` (static routes by
    ETX: the routes computed then are kept for the run and flooding stops) or None (dynamic: the node
    follows the link state to the end).  Routes are first computed at ``first_compute`` or later, once every
    node's advertisement has arrived (LinkStateRouter.ready): until then the table the node started with
    stands."""

    router: LinkStateRouter
    first_compute: float
    freeze_at: float | None = None

    def first_route_at(self) -> float:
        """When the routes are first computed (static: the only time)."""
        return self.first_compute if self.freeze_at is None else self.freeze_at

    def frozen(self, now: float) -> bool:
        """Static routes fixed already: no more advertising, what is heard is kept but not passed on."""
        return self.freeze_at is not None and now >= self.freeze_at

    def compute_now(self, now: float) -> bool:
        """At a route timer: compute (static: always, it is the one computation; dynamic: when the link state
        changed and every node's advertisement has arrived, LinkStateRouter.due and ready)?"""
        return self.freeze_at is not None or (self.router.due(now) and self.router.ready(now, self.first_compute))


class NodeCore:
    def __init__(self, name: str, address: str, engine: ForwardingEngine, etx: EtxTable,
                 neighbours: list[str], probes: ProbeSettings, emit: Emit,
                 jitter: Callable[[], float] | None = None, internal_probes: bool = True,
                 routing: Routing | None = None) -> None:
        self.name = name
        self.address = address
        self.engine = engine
        self.etx = etx
        self.neighbours = list(neighbours)
        self.probes = probes
        self._emit = emit
        self._jitter = jitter or (lambda: 0.0)
        self._bindings: dict[tuple[int, str, int], Binding] = {}
        # local port -> factory(remote, remote_port) making the endpoint for a new connection
        self._listeners: dict[int, Callable[[str, int], Endpoint]] = {}
        self._accepted: list[tuple[int, str, int]] = []    # keys of the bindings the listeners made
        self.max_accepted = MAX_ACCEPTED
        # timer heap of (time, order, kind, arg); order breaks ties deterministically
        self._timers: list[tuple[float, int, str, str]] = []
        self._order = 0
        if internal_probes:  # else a driver calls send_probe() (one prober thread per neighbour)
            for i, nbr in enumerate(self.neighbours):
                self._push(probes.start + 0.001 * (i + 1), "probe", nbr)
        self._push(probes.start + probes.log_interval_s, "etx_log", "")
        self.routing = routing
        if routing is not None:
            self._push(probes.start + routing.router.settings.advertise_s * (1.0 + self._jitter()), "lsa", "")
            self._push(routing.first_route_at(), "route", "")

    # ---- setup -------------------------------------------------------------
    def bind(self, endpoint: Endpoint, local_port: int, remote: str, remote_port: int,
             fields: AspanFields | None = None, qos: QosLearner | None = None) -> None:
        """Attach ``endpoint``; its data packets carry ``fields``, with pkt_qos from ``qos`` when the
        sender adapts it (aspan.adaptive)."""
        self._bindings[(local_port, remote, remote_port)] = Binding(
            endpoint, local_port, remote, remote_port, fields or AspanFields(), qos)

    def listen(self, local_port: int, factory: Callable[[str, int], Endpoint]) -> None:
        """Accept connections to ``local_port``: a SYN from an unknown peer gets ``factory(remote, port)``."""
        self._listeners[local_port] = factory

    def flush(self, endpoint: Endpoint, now: float) -> Out:
        """Transmit what ``endpoint`` has queued (after an application wrote to it)."""
        for b in self._bindings.values():
            if b.endpoint is endpoint:
                return self._flush(b, now)
        raise KeyError("endpoint is not bound to this node")

    def endpoints(self) -> list[Endpoint]:
        return [b.endpoint for b in self._bindings.values()]

    # ---- inputs ------------------------------------------------------------
    def on_datagram(self, data: bytes, now: float, frm: str | None = None) -> Out:
        """A datagram heard from neighbour ``frm`` (its mesh address, when the driver knows it)."""
        return self._run(self.engine.on_datagram(data, now, frm), now, frm)

    def on_authentic(self, data: bytes, now: float, frm: str | None = None) -> Out:
        """A datagram of the authenticated overlay whose tag and sequence number routing.overlay.auth verified."""
        return self._run(self.engine.on_authentic(data, now, frm), now, frm)

    def on_packet(self, pkt: Packet, now: float, frm: str | None = None) -> Out:
        """A decoded packet (the virtual-time backend's), from neighbour ``frm``."""
        return self._run(self.engine.on_packet(pkt, now, frm), now, frm)

    def next_timer(self) -> float | None:
        times = [self._timers[0][0]] if self._timers else []
        for b in self._bindings.values():
            t = b.endpoint.next_timer()
            if t is not None:
                times.append(t)
        t = self.engine.next_timer()
        if t is not None:
            times.append(t)
        return min(times) if times else None

    def on_timer(self, now: float) -> Out:
        out: Out = []
        while self._timers and self._timers[0][0] <= now:
            _, _, kind, arg = heapq.heappop(self._timers)
            if kind == "probe":
                out.extend(self._send_probe(arg, now))
            elif kind == "lsa":
                out.extend(self._advertise(now))
            elif kind == "route":
                self._route(now)
            else:
                self._log_etx(now)
        t = self.engine.next_timer()
        if t is not None and t <= now:
            out.extend(self._run(self.engine.on_timer(now), now))
        for b in list(self._bindings.values()):
            t = b.endpoint.next_timer()
            if t is not None and t <= now:
                b.endpoint.on_timer(now)
                out.extend(self._flush(b, now))
        return out

    # ---- internals ---------------------------------------------------------
    def _push(self, t: float, kind: str, arg: str) -> None:
        self._order += 1
        heapq.heappush(self._timers, (t, self._order, kind, arg))

    def probe_interval(self, now: float) -> float:
        """Seconds until the next probe to a neighbour (fast while settling, then the paper's ~0.1 s)."""
        p = self.probes
        interval = p.warmup_interval_s if now < p.warmup_until else p.interval_s
        return interval * (1.0 + self._jitter())

    def _send_probe(self, nbr: str, now: float) -> Out:
        self._push(now + self.probe_interval(now), "probe", nbr)
        return self.send_probe(nbr, now)

    def send_probe(self, nbr: str, now: float) -> Out:
        """One ETX probe to ``nbr``, carrying the ratio this node measured for it."""
        seq, ratio = self.etx.next_probe(nbr, now)
        pkt = Packet(PROBE, self.address, 0, nbr, 0, probe=Probe(seq, ratio))
        return self._run(self.engine.send_local(pkt, now), now)

    def _log_etx(self, now: float) -> None:
        self._push(now + self.probes.log_interval_s, "etx_log", "")
        for nbr, fields in self.etx.log_fields().items():
            self._emit(now, "etx", nbr=nbr, **fields)

    # ---- link-state routing (routing.topology.linkstate) ------------------------------
    def _advertise(self, now: float) -> Out:
        """Originate this node's LSA and send it to every neighbour; the next one in ``advertise_s``."""
        rt = self.routing
        assert rt is not None
        if rt.frozen(now):
            return []                     # static routes: no flooding once they are fixed
        self._push(now + rt.router.settings.advertise_s * (1.0 + self._jitter()), "lsa", "")
        lsa = rt.router.originate(now)
        return self._flood(lsa, rt.router.neighbours, now)

    def _flood(self, lsa: Any, to: Any, now: float) -> Out:
        out: Out = []
        for v in to:
            out.extend(self._run(self.engine.send_local(Packet(LSA, self.address, 0, v, 0, lsa=lsa), now), now))
        return out

    def _route(self, now: float) -> None:
        """Recompute the routes when the link state changed (dynamic), or once (static, at ``freeze_at``)."""
        rt = self.routing
        assert rt is not None
        router = rt.router
        if rt.freeze_at is None:
            self._push(now + router.settings.recompute_s, "route", "")
        if not rt.compute_now(now):
            return
        self.apply_routes(router.compute(now), now)
        if rt.freeze_at is not None:
            self._emit(now, "routes", metric="etx", routes=self.engine.routes.as_dict())

    def routing_stats(self) -> dict[str, Any]:
        """``node_stop``'s ``routing`` counters (docs/LOGS.md); empty without link-state routing."""
        return {} if self.routing is None else {"routing": dict(self.routing.router.stats)}

    def apply_routes(self, changes: list[RouteChange], now: float) -> None:
        """The router's changes into the route table the forwarding step reads, each logged."""
        assert self.routing is not None
        apply_changes(self.routing.router, changes, self.engine.routes, self._emit, now)

    def _run(self, actions: list[Any], now: float, frm: str | None = None) -> Out:
        """The transmissions of ``actions``; what they deliver here goes to :meth:`_deliver` (heard from
        neighbour ``frm`` when the driver named it)."""
        out: Out = []
        for a in actions:
            cls = a.__class__
            if cls is Transmit:
                out.append((a.next_hop, a.packet))
            elif cls is Deliver:
                out.extend(self._deliver(a.packet, now, frm))
        return out

    def _link_local_from(self, pkt: Packet, frm: str | None) -> bool:
        """Does a probe or LSA come from the neighbour it names?  (routing.overlay.neighbours: its header source is
        a neighbour, and the neighbour it was heard from when the driver named it.)"""
        return pkt.src in self.neighbours and (frm is None or names_its_sender(pkt.src, frm))

    def _deliver(self, pkt: Packet, now: float, frm: str | None = None) -> Out:
        if pkt.ptype == PROBE and pkt.probe is not None:
            if self._link_local_from(pkt, frm):
                self.etx.on_probe(pkt.src, pkt.probe.seq, pkt.probe.ratio, now)
            else:   # every datagram is accounted for (issue 13, item 6)
                self.engine.drop(pkt, STRANGER, now, detail="probe from a non-neighbour")
            return []
        if pkt.ptype == LSA and pkt.lsa is not None:
            if not self._link_local_from(pkt, frm):
                self.engine.drop(pkt, STRANGER, now, detail="LSA from a non-neighbour")
                return []
            rt = self.routing
            if rt is None:
                self.engine.drop(pkt, "no_route", now, detail="LSA heard by a node without link-state routing")
                return []
            # once static routes are fixed: kept and counted, not passed on
            return self._flood(pkt.lsa, rt.router.on_lsa(pkt.lsa, pkt.src, now, flood=not rt.frozen(now)), now)
        if pkt.ptype == DATA and pkt.segment is not None:
            b = self._bindings.get((pkt.dport, pkt.src, pkt.sport))
            if b is None and pkt.segment.flags & SYN and pkt.dport in self._listeners:
                b = self._accept(pkt, now)
                if b is None:
                    return []
            if b is None:
                self.engine.drop(pkt, "no_route", now, detail="no endpoint")
                return []
            if b.qos is not None and pkt.segment.flags & ACK:
                b.qos.on_ack(now, pkt.segment.ack)
            b.endpoint.on_segment(pkt.segment, now)
            return self._flush(b, now)
        return []

    def _accept(self, pkt: Packet, now: float) -> Binding | None:
        """A SYN for a listening port from a new peer: bind a new endpoint if fewer than
        :attr:`max_accepted` accepted connections are open (closed ones are forgotten first),
        else drop it as ``refused``."""
        if len(self._accepted) >= self.max_accepted:
            live = []
            for key in self._accepted:
                if getattr(self._bindings[key].endpoint, "closed", False):
                    del self._bindings[key]
                else:
                    live.append(key)
            self._accepted = live
            if len(live) >= self.max_accepted:
                self.engine.drop(pkt, "refused", now, detail=f"{len(live)} accepted connections open")
                return None
        key = (pkt.dport, pkt.src, pkt.sport)
        self.bind(self._listeners[pkt.dport](pkt.src, pkt.sport), *key)
        self._accepted.append(key)
        return self._bindings[key]

    def _flush(self, b: Binding, now: float) -> Out:
        out: Out = []
        for seg in b.endpoint.segments_to_send(now):
            fields = b.fields.copy()
            if b.qos is not None:
                fields.pkt_qos = b.qos.pkt_qos(now)
            pkt = Packet(DATA, self.address, b.local_port, b.remote, b.remote_port, 0, fields, seg)
            out.extend(self._run(self.engine.send_local(pkt, now), now))
        return out
