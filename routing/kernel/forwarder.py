"""The kernel data plane's adapter: raw IPv4 bytes + netfilter hook + now -> a verdict.

No sockets, no netfilterqueue, no clock: the NFQUEUE driver (routing.drivers.nfq) feeds
packets in and carries verdicts out, and tests drive it with crafted bytes.  What
a node does with a packet is decided by the forwarding step (routing.forwarding.step), the
same as on the overlay (routing.overlay.engine); this adapter parses kernel packets for it
and writes its answers back into them.  The kernel-only mechanics each have their
module: the A-SPAN IPv4 option (routing.kernel.ip_option), the TSval of local
retransmissions (routing.kernel.tsval) and forged ACKs (routing.kernel.forge).

Which hook sees what, on every node (paper, Design and Evaluation; paper 003 put
Snoop in the Linux forwarding path the same way):

* LOCAL_IN (packets this node hears for itself) and FORWARD (packets it relays):
  the node's loss model applies first, as at the overlay node's listener.
* LOCAL_OUT (packets this node's own TCP sends into the mesh): the packet enters
  the mesh here, so a data segment gets the A-SPAN option, the sender's layer
  multiplies pkt_effort by p(next hop) (hop index 0) and logs ``tx`` kind ``send``.
* FORWARD data: option read, the step at the option's hop index, option
  rewritten (pkt_effort, hops, snoop_count), ``tx`` kind ``fwd``.
* A pure ACK on FORWARD or LOCAL_IN: the step's ACK rule; a suppressed dupack gets
  a DROP verdict, cached segments come back to be injected with a raw socket.
* The classic-Snoop family (docs/VARIANTS.md) also has a local retransmission
  timer (:meth:`KernelForwarder.next_timer` / :meth:`KernelForwarder.on_timer`,
  run by the driver) and, for SLACK and ACK-all, new ACKs toward the sender:
  forged from the receiver's last ACK (routing.kernel.forge) and injected like local
  retransmissions.  Those agents get the ACK's window in bytes (scaled by the
  window scale the handshake announced) and the ACK's bytes as template.

The option is left in at the receiver: Linux ignores an unknown IPv4 option
(RFC 1122, 3.2.1.8), so no handler has to rewrite every packet it delivers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

from aspan.agent import GeneratedAck, SnoopAgent
from aspan.cache import unwrap
from aspan.events import Emit, EventSink, as_sink
from aspan.adaptive import AdaptiveQosConfig, QosLearners
from aspan.fields import AspanFields
from routing.kernel.forge import WindowScales, forge_ack
from routing.kernel.ip_option import DEFAULT_OPTION, check_fields, decode_option, restamp_option, stamp_option
from routing.kernel.ipv4 import ACK, FIN, PROTO_UDP, RST, SYN, PacketError, TcpHead, ip_header, parse_tcp, tcp_head
from routing.links.loss import LossModel
from routing.forwarding.step import DROP_REASONS, LOCAL_RTX_NOTE, SUPPRESSED_NOTE, ForwardingStep, Held
from routing.kernel.tsval import TsvalTracker

__all__ = ["ACCEPT", "DROP_REASONS", "HOOK_FWD", "HOOK_IN", "HOOK_OUT", "KernelForwarder", "Verdict"]

HOOK_IN, HOOK_FWD, HOOK_OUT = 1, 2, 3   # NF_INET_LOCAL_IN, NF_INET_FORWARD, NF_INET_LOCAL_OUT
_ACK_MASK = SYN | FIN | RST | ACK
_MAX_SENT = 4096                         # flows whose highest sent segment is remembered (rtx)


class Tap(Protocol):
    """Where a capture writes what the forwarder saw and did (the driver: routing.drivers.capture.KernelTap)."""

    def packet(self, now: float, data: bytes, note: str | None = None) -> None: ...


@dataclass(slots=True)
class Verdict:
    """Accept (with ``payload`` replacing the packet's bytes when set) or drop; ``inject``: raw packets to send."""

    accept: bool = True
    payload: bytes | None = None
    inject: list[bytes] = field(default_factory=list)

    def __init__(self, accept: bool = True, payload: bytes | None = None, inject: list[bytes] | None = None) -> None:
        # The generated __init__, written out: it would call list() for the default (a call per data packet).
        self.accept = accept
        self.payload = payload
        self.inject = [] if inject is None else inject


ACCEPT = Verdict()


class KernelForwarder:
    """One node's forwarding step for kernel IPv4 packets.

    ``next_hop(dst)`` returns the neighbour address towards ``dst`` (None: no
    route); ``quality(neighbour)`` its delivery ratio p (ETX).  ``fields`` is
    the header the sender stamps on data entering the mesh (pkt_effort 1,
    pkt_qos, snoop_after, snoop_limit of the experiment).  ``log``: an
    :class:`aspan.events.EventSink` or an ``emit(now, ev, **fields)`` function.
    """

    def __init__(self, address: str, next_hop: Callable[[str], str | None],
                 quality: Callable[[str], float], agent: SnoopAgent, loss: LossModel,
                 fields: AspanFields, option_type: int = DEFAULT_OPTION,
                 log: EventSink | Emit | None = None, qos: AdaptiveQosConfig | None = None) -> None:
        self.address = address
        self.agent = agent
        check_fields(fields)
        self.fields = fields
        self.option_type = option_type
        self._log = as_sink(log)
        #: the adaptive sender (issue 29): a pkt_qos learner per flow this node's TCP sends
        self.qos = QosLearners(qos, self._log.emit) if qos is not None else None
        self.step = ForwardingStep(address, next_hop, quality, agent, loss, self._log)
        self._data = self.step.data          # the step's data rule, looked up once (the hot path)
        self.drops = self.step.drops
        self._counts = {"in": 0, "fwd": 0, "out": 0, "no_option": 0, "no_room": 0, "rtx": 0, "ack_gen_errors": 0}
        self._sent_end: dict[str, int] = {}   # flow -> unwrapped end of the highest segment sent (LOCAL_OUT)
        self._details = agent.reads_ack_details
        self._makes_acks = agent.generates_acks
        self._wscales = WindowScales()
        self._tsval = TsvalTracker()
        self.tap: Tap | None = None
        #: :meth:`on_packet` without a capture is the step itself (one call less per packet)
        self.on_packet = self._on_packet    # type: ignore[method-assign]

    @property
    def stats(self) -> dict[str, int]:
        """Packets per hook, transmissions per kind and the kernel data plane's own counters."""
        step = self.step
        return {**self._counts, "tx_send": step.tx["send"], "tx_fwd": step.tx["fwd"], "tx_local": step.tx["local"],
                "ack_gen": step.acks_generated, "ts_refreshed": self._tsval.refreshed}

    # ---- captures (routing.drivers.capture.KernelTap) -------------------------------
    def capture(self, tap: Tap) -> None:
        """Write every queued packet as it leaves the handler (option stamped or rewritten), the
        packets it injects, and notes on what the node did, to ``tap``."""
        self.tap = tap
        self.step.explain = True
        self.on_packet = self._on_packet_tapped    # type: ignore[method-assign]

    def _capture(self, now: float, data: bytes, v: Verdict, before: dict[str, int]) -> None:
        step = self.step
        if v.accept:
            note = step.note          # set by this packet's data rule when the agent cached it
        else:
            reason = step.last_drop
            note = SUPPRESSED_NOTE if reason == "suppressed" else f"dropped here: {reason}"
        self.tap.packet(now, v.payload if v.payload is not None else data, note)
        self._capture_injected(now, v.inject, before)

    def _capture_injected(self, now: float, inject: list[bytes], before: dict[str, int]) -> None:
        local = self.step.tx["local"] - before["local"]
        for i, raw in enumerate(inject):
            self.tap.packet(now, raw, LOCAL_RTX_NOTE if i < local else "new ACK made here (forged from the "
                                                                       "receiver's last ACK)")

    # ---- the step --------------------------------------------------------
    def on_packet(self, hook: int, data: bytes, now: float) -> Verdict:
        """Decide what happens to one queued packet.  Never raises for any bytes.

        (Documentation only: the constructor binds the instance's ``on_packet`` to the step, and
        :meth:`capture` to the step followed by the capture.)"""
        return self._on_packet_tapped(hook, data, now) if self.tap is not None else self._on_packet(hook, data, now)

    def _on_packet_tapped(self, hook: int, data: bytes, now: float) -> Verdict:
        assert self.tap is not None
        before = dict(self.step.tx)
        self.step.note = None
        v = self._on_packet(hook, data, now)
        self._capture(now, data, v, before)
        return v

    def _on_packet(self, hook: int, data: bytes, now: float) -> Verdict:
        if hook == HOOK_OUT:
            self._counts["out"] += 1
        else:
            self._counts["in" if hook == HOOK_IN else "fwd"] += 1
            if self.step.lost(now, len(data)):
                return self._drop_heard(data, now)
        try:
            tcp = tcp_head(data, self.option_type)     # (ihl, flow, ttl, seq, ack, flags, payload_len, opt_offset)
        except PacketError as e:
            self.step.drop(now, "malformed", detail=str(e), size=len(data))
            return Verdict(False)
        if tcp is None:
            return ACCEPT                               # probes and other protocols: heard, passed on
        ihl, flow, _ttl, _seq, _ack, flags, length, _offset = tcp
        if flags & SYN and self._details:
            self._wscales.note_syn(flow, ihl, data)
        if length:
            if hook == HOOK_OUT:
                return self._send(tcp, data, now)
            if hook == HOOK_FWD:
                return self._forward(tcp, data, now)
            return ACCEPT                               # data for this node: the option stays in
        if flags & _ACK_MASK == ACK and hook != HOOK_OUT:   # TcpPacket.is_pure_ack (no payload here)
            return self._ack(tcp, data, now)
        return ACCEPT

    # ---- data --------------------------------------------------------------
    def _send(self, tcp: TcpHead, data: bytes, now: float) -> Verdict:
        """A data segment of this node's TCP enters the mesh: stamp the option (hop index 0)."""
        ihl, flow, _ttl, seq, _ack, _flags, length, offset = tcp
        self._note_retransmission(flow.name, seq, length, now)
        if offset >= 0:               # already stamped (cannot happen for our TCP): leave it
            return ACCEPT
        fields = self.fields.copy()
        if self.qos is not None:
            fields.pkt_qos = self.qos.get(flow.name).pkt_qos(now)
        key = flow.key
        held = Held(data, key, flow.name, seq, length, 0)
        if self._data(now, held, flow.dst, fields, "send") is None:
            return self._drop_tcp(tcp, "no_route", now)
        try:
            out = stamp_option(data, ihl, fields, 1, self.option_type)
        except PacketError:
            self._counts["no_room"] += 1
            out = data
        held.packet = out
        self._tsval.note(key, data, ihl)
        if self._makes_acks:
            return Verdict(True, out if out is not data else None, self._generated(now))
        return Verdict(True, out if out is not data else None)

    def _note_retransmission(self, flow: str, seq: int, length: int, now: float) -> None:
        """Log ``rtx`` for a segment below the highest one this node's TCP already sent."""
        sent = self._sent_end
        high = sent.get(flow)
        if high is None:
            if len(sent) >= _MAX_SENT:
                del sent[next(iter(sent))]
            sent[flow] = seq + length
            return
        useq = unwrap(high, seq)
        end = useq + length
        if end > high:
            sent[flow] = end
        if useq < high:
            self._counts["rtx"] += 1
            self._log.emit(now, "rtx", flow=flow, seq=seq, len=length)

    def _forward(self, tcp: TcpHead, data: bytes, now: float) -> Verdict:
        """A data segment relayed by this node: the A-SPAN rules at the option's hop index."""
        ihl, flow, _ttl, seq, _ack, _flags, length, offset = tcp
        if offset < 0:                # not stamped where it entered the mesh: relay, no snooping
            self._counts["no_option"] += 1
            self.step.relayed_unsnooped(now, flow.name, seq, length)
            return ACCEPT
        fields, hop = decode_option(data, offset)
        key = flow.key
        held = Held(data, key, flow.name, seq, length, hop)
        if self._data(now, held, flow.dst, fields, "fwd") is None:
            return self._drop_tcp(tcp, "no_route", now)
        out = held.packet = restamp_option(data, offset, fields, hop + 1)
        self._tsval.note(key, data, ihl)
        if self._makes_acks:
            return Verdict(True, out, self._generated(now))
        return Verdict(True, out)

    # ---- ACKs --------------------------------------------------------------
    def _ack(self, tcp: TcpHead, data: bytes, now: float) -> Verdict:
        ihl, flow, _ttl, seq, ack, _flags, _length, _offset = tcp
        step = self.step
        if self.qos is not None:
            learner = self.qos.known(flow.rname)      # an ACK of a flow this node's TCP sends
            if learner is not None:
                learner.on_ack(now, ack)
        if self._details:
            verdict = step.ack(now, flow.rkey, ack, self._wscales.window_bytes(flow, ihl, data), (), data)
        else:
            verdict = step.ack(now, flow.rkey, ack, None, (), None)
            if verdict.forward and not verdict.retransmit:
                return ACCEPT
        inject = self._local(step.local(now, verdict.retransmit))
        if self._makes_acks:
            inject += self._generated(now)
        if not verdict.forward:
            step.drop(now, "suppressed", "tcp", flow.name, seq, ack, 0)
            return Verdict(False, None, inject)
        if not inject:
            return ACCEPT
        return Verdict(True, None, inject)

    def _local(self, resend: list[tuple[Held, str]]) -> list[bytes]:
        """Cached packets to inject as they left this node, with a fresh TSval (routing.kernel.tsval)."""
        refresh = self._tsval.refresh
        return [refresh(held.key, held.packet) for held, _nxt in resend]

    # ---- the agent's timer (classic-Snoop family) -----------------------------
    def next_timer(self) -> float | None:
        """When :meth:`on_timer` is due next (None: no timer pending)."""
        return self.step.next_timer()

    def on_timer(self, now: float) -> list[bytes]:
        """Expired local retransmission timers: the packets to inject (resent segments, new ACKs)."""
        before = dict(self.step.tx)
        inject = self._local(self.step.timer(now))
        if self._makes_acks:
            inject += self._generated(now)
        if self.tap is not None:
            self._capture_injected(now, inject, before)
        return inject

    # ---- new ACKs toward the sender (ACK-all, SLACK) -------------------------
    def _generated(self, now: float) -> list[bytes]:
        """The agent's new ACKs as packets to inject toward the sender (routing.kernel.forge).

        The window goes back into the 16-bit field with the receiver's scale.  TSecr: an ACK
        repeating the template's ACK number (SLACK's duplicates) keeps the template's echo,
        so it is the same ACK again; an ACK of newer data echoes the TSval of the latest
        segment of the flow seen here, as the receiver would (RFC 7323, 4.3).
        """
        out = []
        for g in self.step.generated():
            try:
                pkt, flow = self._forge(g)
            except PacketError as e:
                errors = self._counts["ack_gen_errors"] = self._counts["ack_gen_errors"] + 1
                if errors <= 10 or errors % 1000 == 0:     # as the drivers' send_error lines (routing.drivers.udp, nfq)
                    self._log.emit(now, "send_error", error=f"cannot forge the {g.reason} ACK {g.ack}: {e}",
                                   count=errors)
                continue
            out.append(pkt)
            self.step.ack_sent(now, g, flow)
        return out

    def _forge(self, g: GeneratedAck) -> tuple[bytes, str]:
        """(the forged ACK, the name of the data flow it acknowledges); PacketError for a bad template."""
        tcp = parse_tcp(g.template, self.option_type)
        if tcp is None:
            raise PacketError("the template is not TCP")
        shift = self._wscales.shift(tcp.flow) or 0
        tsecr = None if g.ack == tcp.ack else self._tsval.latest.get(tcp.flow.rkey)
        return forge_ack(g.template, g.ack, g.window >> shift, tsecr), tcp.flow.rname

    # ---- drops -------------------------------------------------------------
    def _drop_heard(self, data: bytes, now: float) -> Verdict:
        """The loss model dropped a packet this node heard (paper: loss at every node's listener)."""
        try:
            tcp = tcp_head(data, self.option_type)
        except PacketError:
            tcp = None
        if tcp is not None:
            return self._drop_tcp(tcp, "loss", now)
        self.step.drop(now, "loss", self._ptype(data))
        return Verdict(False)

    def _drop_tcp(self, tcp: TcpHead, reason: str, now: float) -> Verdict:
        _ihl, flow, _ttl, seq, ack, _flags, length, _offset = tcp
        self.step.drop(now, reason, "tcp", flow.name, seq, ack, length)
        return Verdict(False)

    @staticmethod
    def _ptype(data: bytes) -> str:
        try:
            proto = ip_header(data)[1]
        except PacketError:
            return "?"
        return "udp" if proto == PROTO_UDP else str(proto)
