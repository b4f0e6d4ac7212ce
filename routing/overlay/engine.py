"""The overlay's forwarding engine: one overlay packet + now -> actions, around the forwarding step.

Pure: no sockets, threads or clock.  The UDP driver (routing.drivers.udp, the local and
pi backends) and the virtual-time backend drive it with overlay packets; the
rules themselves (loss, next hop and p, the snoop agent, counters, log events)
are routing.forwarding.step's, shared with the kernel data plane (routing.kernel.forwarder).  This
adapter only reads the overlay packet, and builds what goes out: the packet
with its rewritten header, cached copies, new ACKs.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from aspan.agent import SnoopAgent, flow_name
from aspan.events import Emit, EventSink, as_sink
from aspan.fields import FIXED_ONE, AspanFields
from routing.links.loss import LossModel
from routing.topology.routes import RouteTable
from routing.forwarding.step import DROP_REASONS, HOP_LIMIT, LOCAL_RTX_NOTE, SUPPRESSED_NOTE, ForwardingStep, Held
from routing.overlay.wire import (AUTH_VERSION, DATA, IP_UDP_OVERHEAD, LSA, MAX_HOPS, PROBE, Packet, WireError,
                          authentic_data, decode, decode_authentic, ntoa, plain_data, plain_packet, relayed,
                          wire_size)
from tcp_user.segment import ACK, Segment, ts_before

__all__ = ["Action", "Deliver", "Drop", "DROP_REASONS", "ForwardingEngine", "Transmit"]


@dataclass(slots=True)
class Transmit:
    packet: Packet | bytearray   # a relayed datagram is sent as the bytes it came in, rewritten (_relay)
    next_hop: str
    note: str | None = None      # what this node did to the packet, for a capture's comment


@dataclass(slots=True)
class Deliver:
    packet: Packet


@dataclass(slots=True)
class Drop:
    packet: Packet | None
    reason: str


Action = Transmit | Deliver | Drop

_PTYPES = {DATA: "tcp", PROBE: "probe", LSA: "lsa"}
#: packets that measure or describe one link, sent to a neighbour over that link and never relayed: an ETX
#: probe must cross the link it measures even when the route to the neighbour goes around it (etx metric)
LINK_LOCAL = (PROBE, LSA)
_MAX_NAMES = 4096
_MAX_TS_FLOWS = 4096


class LatestTsval:
    """The TSval of the latest data segment of each flow seen here (RFC 7323; at most ``max_flows`` flows), and a
    cached copy re-stamped with it.  A cached copy carries its first transmission's TSval; once the receiver has
    taken a newer one into TS.Recent (a sender retransmission of data it already had does that), its PAWS check
    (RFC 7323 sec. 5.3) would drop the old copy for ever, and where the agent has acknowledged the data to the
    sender (ACK-all) nobody else sends it.  So a local retransmission goes out with the flow's latest TSval: the
    sender's clock, which never goes back.  The overlay's counterpart of routing.kernel.tsval.TsvalTracker."""

    def __init__(self, max_flows: int = _MAX_TS_FLOWS) -> None:
        self.latest: dict[tuple[str, int, str, int], int] = {}
        self.max_flows = max_flows
        self.refreshed = 0

    def note(self, key: tuple[str, int, str, int], tsval: int) -> None:
        latest = self.latest
        if key not in latest and len(latest) >= self.max_flows:
            del latest[next(iter(latest))]
        old = latest.get(key)
        if old is None or not ts_before(tsval, old):
            latest[key] = tsval

    def refresh(self, key: tuple[str, int, str, int], pkt: Packet | bytearray) -> Packet | bytearray:
        """``pkt`` (a cached copy of flow ``key``) with the flow's latest TSval where that is newer: a new Packet
        (the cached one may still be in flight elsewhere: packets are shared), else ``pkt`` itself."""
        seg = pkt.segment if pkt.__class__ is Packet else None   # type: ignore[union-attr]
        if seg is None or seg.tsval is None:
            return pkt                      # relayed bytes carry no option: only timestamped segments are decoded
        latest = self.latest.get(key)
        if latest is None or not ts_before(seg.tsval, latest):
            return pkt
        self.refreshed += 1
        return replace(pkt, segment=replace(seg, tsval=latest))  # type: ignore[type-var]


class ForwardingEngine:
    """One node's forwarding layer on the overlay.

    ``quality(neighbour)`` gives the delivery ratio p of the link to a neighbour
    (from the ETX estimator).  ``agent`` is the node's snoop agent; ``log`` an
    :class:`aspan.events.EventSink` or an ``emit(now, ev, **fields)`` function.
    """

    def __init__(self, address: str, routes: RouteTable, loss: LossModel, agent: SnoopAgent,
                 quality: Any, log: EventSink | Emit | None = None, hop_limit: int = HOP_LIMIT) -> None:
        self.address = address
        self.routes = routes
        self.agent = agent
        # a packet whose hops byte is full is out of hops whatever the topology (issue 27, item 5)
        self.step = ForwardingStep(address, routes.next_hop, quality, agent, loss, as_sink(log),
                                   min(hop_limit, MAX_HOPS))
        self.drops = self.step.drops
        self._names: dict[tuple[str, int, str, int], str] = {}
        self._makes_acks = agent.generates_acks
        self.tsval = LatestTsval()
        self.tap: Any = None     # routing.drivers.capture.OverlayTap when the node writes a capture

    def capture(self, tap: Any) -> None:
        """Write what this node hears and sends to ``tap`` (routing.drivers.capture.OverlayTap), with notes."""
        self.tap = tap
        self.step.explain = True

    # ---- inputs ------------------------------------------------------------
    def on_datagram(self, data: bytes, now: float, frm: str | None = None) -> list[Action]:
        """A datagram heard from the network (from neighbour ``frm``, when the driver knows it).  The node's
        loss model applies first, to whatever was heard (paper: the listener drops); what is left is
        decoded, and malformed ones are dropped."""
        actions = self._on_datagram(data, now, plain_data, decode, frm)
        if self.tap is not None:
            self._capture(now, data, frm, actions)
        return actions

    def on_authentic(self, data: bytes, now: float, frm: str | None = None) -> list[Action]:
        """:meth:`on_datagram` for a version-3 datagram of the authenticated overlay whose tag and
        sequence number the driver verified (routing.overlay.auth.MeshAuth.verify: the engine holds no key).
        What it passes on as bytes stays version 3, for the driver to re-seal for the next link
        (MeshAuth.reseal)."""
        actions = self._on_datagram(data, now, authentic_data, decode_authentic, frm)
        if self.tap is not None:
            self._capture(now, data, frm, actions)
        return actions

    def on_packet(self, pkt: Packet, now: float, frm: str | None = None) -> list[Action]:
        """A decoded packet heard from the network (the virtual-time backend's input): the loss model
        first, with the bytes the packet has on the link (wire.wire_size)."""
        if self.tap is not None:
            heard = pkt.copy()            # as heard: the step rewrites the header of what it forwards
            actions = self._on_packet(pkt, now, frm)
            self._capture(now, heard, frm, actions, pkt)
            return actions
        return self._on_packet(pkt, now, frm)

    def send_local(self, pkt: Packet, now: float) -> list[Action]:
        """A packet originated by this node (its TCP or its prober): no loss model, hop index 0."""
        if pkt.dst == self.address:
            return [Deliver(pkt)]
        actions = self._forward(pkt, now, "send")
        if self.tap is not None:
            self._capture(now, None, None, actions)
        return actions

    def on_timer(self, now: float) -> list[Action]:
        actions = self._local(self.step.timer(now))
        if self._makes_acks:
            actions += self._generated(now)
        if self.tap is not None:
            self._capture(now, None, None, actions)
        return actions

    def _local(self, resend: list[tuple[Held, str]]) -> list[Action]:
        """Local retransmissions (out of a dupack, an ACK or the agent's timer): the cached packets with the
        flow's latest TSval (:class:`LatestTsval`), every one of them, as the kernel plane's ``_local``."""
        refresh = self.tsval.refresh
        return [Transmit(refresh(held.key, held.packet), nxt, LOCAL_RTX_NOTE) for held, nxt in resend]

    def _capture(self, now: float, heard: bytes | Packet | None, frm: str | None, actions: list[Action],
                 heard_pkt: Packet | None = None) -> None:
        """Write the heard packet (noted when this node dropped it) and everything sent."""
        tap = self.tap
        if heard is not None:
            note = None
            for a in actions:
                if a.__class__ is Drop and (a.packet is None or a.packet is heard_pkt or heard_pkt is None):
                    note = SUPPRESSED_NOTE if a.reason == "suppressed" else f"dropped here: {a.reason}"
            tap.rx(now, heard, frm, note)
        for a in actions:
            if a.__class__ is Transmit:
                tap.tx(now, a.packet, a.next_hop, a.note)

    def _on_datagram(self, data: bytes, now: float, plain: Callable[[bytes], tuple | None],
                     parse: Callable[[bytes], Packet], frm: str | None = None) -> list[Action]:
        """A heard datagram: ``plain`` reads the common DATA packet's fields (for the relay path),
        ``parse`` decodes any other (wire.plain_data and decode; for version 3, authentic_data and
        decode_authentic)."""
        step = self.step
        lost = (step.lost_from(now, len(data) + IP_UDP_OVERHEAD, frm) if step.link_lost
                else step.lost(now, len(data) + IP_UDP_OVERHEAD))
        h = plain(data)
        if h is not None and not lost and self.tap is None:
            actions = self._relay(data, h, now)
            if actions is not None:
                return actions
        try:
            pkt = parse(data) if h is None else plain_packet(h, data)
        except WireError as e:
            if lost:
                self.step.drop(now, "loss", "?")
                return [Drop(None, "loss")]
            self.step.drop(now, "malformed", detail=str(e), size=len(data))
            return [Drop(None, "malformed")]
        if lost:
            return [self.drop(pkt, "loss", now)]
        return self._heard(pkt, now)

    def _relay(self, data: bytes, h: tuple, now: float) -> list[Action] | None:
        """The relay path: a data segment or a pure ACK this node passes on, handled from the datagram's
        fields (wire.plain_data) and sent as the same bytes with the header rewritten (wire.relayed),
        without decoding the payload into a Packet.  The step gets the same calls as on the packet path
        (:meth:`_forward`, :meth:`_ack`; tests/routing/forwarding/test_step.py drives both).  None: this
        datagram takes the packet path (addressed here, out of hops, an ACK whose details the agent
        reads, not a data segment or pure ACK).  No rewritten byte can overflow: the hop limit is at most
        the hops byte's MAX_HOPS and snoop_count saturates (aspan.policy.update_effort)."""
        (_m, _v, _t, src, sport, dst, dport, hops, s_after, s_limit, s_count, effort, qos,
         seq, ack, flags, _ns, _nsn, window, paylen) = h
        dst = ntoa(dst)
        step = self.step
        if dst == self.address or step.expired(hops):
            return None
        key = (ntoa(src), sport, dst, dport)
        if paylen:
            held = Held(None, key, self._names.get(key) or self._name(key), seq, paylen, hops)
            fields = AspanFields(effort / FIXED_ONE, qos / FIXED_ONE, s_after, s_limit, s_count)
            nxt = step.data(now, held, dst, fields, "fwd")
            if nxt is None:
                return [self._drop_tcp(now, "no_route", key, seq, ack, paylen)]
            held.packet = relayed(data, hops + 1, fields)
            if self._makes_acks:
                actions = self._generated(now)
                actions.append(Transmit(held.packet, nxt))
                return actions
            return [Transmit(held.packet, nxt)]
        if flags != ACK or step.ack_details or self._makes_acks:
            return None
        verdict = step.ack(now, (dst, dport, key[0], sport), ack, None, (), None)
        actions = self._local(step.local(now, verdict.retransmit))
        if not verdict.forward:
            actions.append(self._drop_tcp(now, "suppressed", key, seq, ack, 0))
            return actions
        nxt = self.routes.next_hop(dst)
        if nxt is None:
            actions.append(self._drop_tcp(now, "no_route", key, seq, ack, 0))
            return actions
        actions.append(Transmit(relayed(data, hops + 1), nxt))
        return actions

    def _on_packet(self, pkt: Packet, now: float, frm: str | None = None) -> list[Action]:
        step = self.step
        if step.lost_from(now, wire_size(pkt), frm) if step.link_lost else step.lost(now, wire_size(pkt)):
            return [self.drop(pkt, "loss", now)]
        return self._heard(pkt, now)

    def _heard(self, pkt: Packet, now: float) -> list[Action]:
        if pkt.dst != self.address:
            if self.step.expired(pkt.hops):
                return [self.drop(pkt, "ttl", now)]
            return self._forward(pkt, now, "fwd")
        seg = pkt.segment
        if pkt.ptype == DATA and seg is not None and seg.is_pure_ack:
            actions = self._ack(pkt, now)
            if not actions or actions[-1].__class__ is not Drop:
                actions.append(Deliver(pkt))
            return actions
        return [Deliver(pkt)]


    def next_timer(self) -> float | None:
        return self.step.next_timer()

    def drop(self, pkt: Packet | bytearray, reason: str, now: float, **detail: Any) -> Drop:
        """Count and log ``pkt`` as dropped for ``reason`` (also used by the drivers' queues, which may
        hold a relayed datagram: :meth:`_relay`)."""
        if pkt.__class__ is not Packet:     # our own bytes (the relay path's); version 3 possibly sealed already
            pkt = decode_authentic(bytes(pkt)) if pkt[1] == AUTH_VERSION else decode(bytes(pkt))
        seg = pkt.segment
        if seg is not None:
            self._drop_tcp(now, reason, (pkt.src, pkt.sport, pkt.dst, pkt.dport), seg.seq, seg.ack, len(seg.payload),
                           **detail)
        else:
            self.step.drop(now, reason, _PTYPES.get(pkt.ptype, str(pkt.ptype)), **detail)
        return Drop(pkt, reason)

    def _drop_tcp(self, now: float, reason: str, key: tuple[str, int, str, int], seq: int, ack: int,
                  length: int, **detail: Any) -> Drop:
        """Count and log a TCP segment as dropped, from its fields (the relay path's segments are not
        decoded: the Drop carries no packet; :meth:`drop` puts the packet in its own)."""
        self.step.drop(now, reason, "tcp", self._name(key), seq, ack, length, **detail)
        return Drop(None, reason)

    # ---- internals ---------------------------------------------------------
    def _name(self, key: tuple[str, int, str, int]) -> str:
        name = self._names.get(key)
        if name is None:
            if len(self._names) >= _MAX_NAMES:
                self._names.clear()
            name = self._names[key] = flow_name(key)
        return name

    def _forward(self, pkt: Packet, now: float, kind: str) -> list[Action]:
        seg = pkt.segment
        hop = pkt.hops
        if pkt.ptype == DATA and seg is not None:
            if seg.payload:
                key = (pkt.src, pkt.sport, pkt.dst, pkt.dport)
                if seg.tsval is not None:
                    self.tsval.note(key, seg.tsval)
                held = Held(pkt, key, self._names.get(key) or self._name(key), seg.seq, len(seg.payload), hop)
                pkt.hops = hop + 1
                nxt = self.step.data(now, held, pkt.dst, pkt.fields, kind)
                if nxt is None:
                    pkt.hops = hop
                    return [self.drop(pkt, "no_route", now)]
                note = self.step.note if self.tap is not None else None
                if self._makes_acks:
                    actions = self._generated(now)
                    actions.append(Transmit(pkt, nxt, note))
                    return actions
                return [Transmit(pkt, nxt, note)]
            if kind == "fwd" and seg.is_pure_ack:
                actions = self._ack(pkt, now)
                if actions and actions[-1].__class__ is Drop:
                    return actions
                nxt = self.routes.next_hop(pkt.dst)
                if nxt is None:
                    actions.append(self.drop(pkt, "no_route", now))
                    return actions
                pkt.hops = hop + 1
                actions.append(Transmit(pkt, nxt))
                return actions
        if pkt.ptype in LINK_LOCAL:
            if kind != "send" or pkt.dst not in self.routes.neighbours:
                return [self.drop(pkt, "no_route", now, detail="a link-local packet is never relayed")]
            pkt.hops = hop + 1
            return [Transmit(pkt, pkt.dst)]          # over the link itself, whatever the routes say
        nxt = self.routes.next_hop(pkt.dst)
        if nxt is None:
            return [self.drop(pkt, "no_route", now)]
        pkt.hops = hop + 1
        return [Transmit(pkt, nxt)]

    def _ack(self, pkt: Packet, now: float) -> list[Action]:
        """The agent's verdict on a pure ACK this node hears (flow key = the data direction): local
        retransmissions and new ACKs to send, and the ACK itself dropped last when held back."""
        seg = pkt.segment
        assert seg is not None
        step = self.step
        details = step.ack_details
        verdict = step.ack(now, (pkt.dst, pkt.dport, pkt.src, pkt.sport), seg.ack,
                           seg.window if details else None, seg.snack if details else (), pkt if details else None)
        actions = self._local(step.local(now, verdict.retransmit))
        if self._makes_acks:
            actions += self._generated(now)
        if not verdict.forward:
            actions.append(self.drop(pkt, "suppressed", now))
        elif verdict.snack is not None and verdict.snack != seg.snack:
            # SNACK-Snoop rewrites the SNACK entries of an ACK it forwards (segments are shared: replace)
            pkt.segment = replace(seg, snack=verdict.snack)
        return actions

    def _generated(self, now: float) -> list[Action]:
        """New ACKs from the agent (ACK-all, SLACK), each built from its template and sent toward the data sender."""
        out: list[Action] = []
        for g in self.step.generated():
            t: Packet = g.template
            tseg = t.segment
            assert tseg is not None
            pkt = Packet(DATA, t.src, t.sport, t.dst, t.dport, t.hops, AspanFields(),
                         Segment(tseg.seq, g.ack, ACK, g.window))
            nxt = self.routes.next_hop(pkt.dst)
            if nxt is None:
                out.append(self.drop(pkt, "no_route", now))
                continue
            self.step.ack_sent(now, g, self._name((t.dst, t.dport, t.src, t.sport)))
            out.append(Transmit(pkt, nxt, f"new ACK made here ({g.reason}): ack {g.ack}, window {g.window}"))
        return out
