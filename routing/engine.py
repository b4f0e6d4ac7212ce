"""The forwarding engine: one arriving packet + now -> actions, plus log events.

Pure: no sockets, threads or clock.  Every backend (UDP overlay, virtual time)
drives this same step; the NFQUEUE driver reuses the snoop agent with the same
rules on kernel packets.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from aspan.agent import AckVerdict, SnoopAgent, flow_name
from aspan.fields import AspanFields
from routing.loss import LossModel, drop_packet
from routing.routes import RouteTable
from routing.wire import DATA, TYPE_NAMES, Packet, WireError, decode, wire_size
from tcp_user.segment import ACK, Segment

Emit = Callable[..., None]


@dataclass(slots=True)
class Transmit:
    packet: Packet
    next_hop: str


@dataclass(slots=True)
class Deliver:
    packet: Packet


@dataclass(slots=True)
class Drop:
    packet: Packet | None
    reason: str


Action = Transmit | Deliver | Drop

DROP_REASONS = ("loss", "queue", "malformed", "no_route", "suppressed")


def _no_emit(now: float, ev: str, **fields: Any) -> None:
    return None


class ForwardingEngine:
    """One node's forwarding layer.

    ``quality(neighbour)`` gives the delivery ratio p of the link to a
    neighbour (from the ETX estimator).  ``agent`` is the node's snoop agent.
    """

    def __init__(self, address: str, routes: RouteTable, loss: LossModel, agent: SnoopAgent,
                 quality: Callable[[str], float], emit: Emit | None = None) -> None:
        self.address = address
        self.routes = routes
        self.loss = loss
        self.agent = agent
        self.quality = quality
        self._emit = emit or _no_emit
        self.drops = {r: 0 for r in DROP_REASONS}
        self.transmissions = 0

    # ---- inputs ------------------------------------------------------------
    def on_datagram(self, data: bytes, now: float) -> list[Action]:
        """A datagram heard from the network: decode it (malformed ones are counted and dropped)."""
        try:
            pkt = decode(data)
        except WireError as e:
            self.drops["malformed"] += 1
            self._emit(now, "drop", reason="malformed", detail=str(e), size=len(data))
            return [Drop(None, "malformed")]
        return self.on_packet(pkt, now)

    def on_packet(self, pkt: Packet, now: float) -> list[Action]:
        """A decoded packet heard from the network.  The node's loss model applies first (paper: the listener drops)."""
        if drop_packet(self.loss, now, wire_size(pkt)):
            return [self._drop(pkt, "loss", now)]
        seg = pkt.segment
        if pkt.dst == self.address:
            if pkt.ptype == DATA and seg is not None and seg.is_pure_ack:
                verdict = self._on_ack(pkt, now)
                actions = self._local_retransmissions(verdict.retransmit, now)
                actions += self._generated(now)
                if not verdict.forward:
                    actions.append(self._drop(pkt, "suppressed", now))
                    return actions
                self._apply_snack(pkt, verdict)
                actions.append(Deliver(pkt))
                return actions
            return [Deliver(pkt)]
        return self._forward(pkt, now)

    def send_local(self, pkt: Packet, now: float) -> list[Action]:
        """A packet originated by this node (its TCP or its prober): no loss model, hop index 0."""
        if pkt.dst == self.address:
            return [Deliver(pkt)]
        return self._forward(pkt, now, kind="send")

    def on_timer(self, now: float) -> list[Action]:
        actions = self._local_retransmissions(self.agent.on_timer(now), now)
        return actions + self._generated(now)

    def next_timer(self) -> float | None:
        return self.agent.next_timer()

    # ---- internals ---------------------------------------------------------
    def _forward(self, pkt: Packet, now: float, kind: str = "fwd") -> list[Action]:
        nxt = self.routes.next_hop(pkt.dst)
        if nxt is None:
            return [self._drop(pkt, "no_route", now)]
        seg = pkt.segment
        actions: list[Action] = []
        hop_index = pkt.hops
        pkt.hops = hop_index + 1
        if pkt.ptype == DATA and seg is not None:
            if seg.payload:
                flow = (pkt.src, pkt.sport, pkt.dst, pkt.dport)
                self.agent.on_data(flow, seg.seq, len(seg.payload), pkt.fields,
                                   self.quality(nxt), hop_index, now, pkt)
                self._emit(now, "tx", flow=flow_name(flow), seq=seg.seq, len=len(seg.payload),
                           kind=kind, hop=hop_index)
                actions = self._generated(now)
            elif seg.is_pure_ack:
                verdict = self._on_ack(pkt, now)
                actions = self._local_retransmissions(verdict.retransmit, now)
                actions += self._generated(now)
                if not verdict.forward:
                    actions.append(self._drop(pkt, "suppressed", now))
                    return actions
                self._apply_snack(pkt, verdict)
        self.transmissions += 1
        actions.append(Transmit(pkt, nxt))
        return actions

    def _on_ack(self, pkt: Packet, now: float) -> AckVerdict:
        """The agent's verdict on a pure ACK (flow key = the data direction)."""
        seg = pkt.segment
        assert seg is not None
        return self.agent.on_ack((pkt.dst, pkt.dport, pkt.src, pkt.sport), seg.ack, now,
                                 window=seg.window, snack=seg.snack, packet=pkt)

    @staticmethod
    def _apply_snack(pkt: Packet, verdict: AckVerdict) -> None:
        """SNACK-Snoop rewrites the SNACK entries of an ACK it forwards (segments are shared: replace)."""
        seg = pkt.segment
        if verdict.snack is not None and seg is not None and verdict.snack != seg.snack:
            pkt.segment = replace(seg, snack=verdict.snack)

    def _generated(self, now: float) -> list[Action]:
        """New ACKs from the agent (ACK-all, SLACK), each sent toward the data sender."""
        out: list[Action] = []
        for g in self.agent.take_generated():
            t: Packet = g.template
            tseg = t.segment
            assert tseg is not None
            pkt = Packet(DATA, t.src, t.sport, t.dst, t.dport, t.hops, AspanFields(),
                         Segment(tseg.seq, g.ack, ACK, g.window))
            nxt = self.routes.next_hop(pkt.dst)
            if nxt is None:
                out.append(self._drop(pkt, "no_route", now))
                continue
            self._emit(now, "ack_gen", flow=flow_name((t.dst, t.dport, t.src, t.sport)), ack=g.ack,
                       window=g.window, reason=g.reason)
            self.transmissions += 1
            out.append(Transmit(pkt, nxt))
        return out

    def _local_retransmissions(self, packets: list[Any], now: float) -> list[Action]:
        """Resend cached packets toward their destination (the cached copy is never mutated)."""
        out: list[Action] = []
        for cached in packets:
            nxt = self.routes.next_hop(cached.dst)
            if nxt is None:
                out.append(self._drop(cached, "no_route", now))
                continue
            seg = cached.segment
            self._emit(now, "tx", flow=flow_name(cached.flow()), seq=seg.seq, len=len(seg.payload),
                       kind="local", hop=cached.hops - 1)
            self.transmissions += 1
            out.append(Transmit(cached, nxt))
        return out

    def _drop(self, pkt: Packet, reason: str, now: float) -> Drop:
        self.drops[reason] += 1
        seg = pkt.segment
        if seg is not None:
            self._emit(now, "drop", reason=reason, ptype=TYPE_NAMES.get(pkt.ptype, "?"),
                       flow=flow_name(pkt.flow()), seq=seg.seq, ack=seg.ack, len=len(seg.payload))
        else:
            self._emit(now, "drop", reason=reason, ptype=TYPE_NAMES.get(pkt.ptype, "?"))
        return Drop(pkt, reason)
