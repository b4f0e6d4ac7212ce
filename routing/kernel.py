"""The snoop step for kernel packets: raw IPv4 bytes + netfilter hook + now -> a verdict.

No sockets, no netfilterqueue, no clock: the NFQUEUE driver (routing.nfq) feeds
packets in and carries verdicts out, and tests drive it with crafted bytes.  The
rules are those of routing.engine for the overlay; the snoop decisions are made
by the same aspan.agent.SnoopAgent, which stores the packet as an opaque object.

Which hook sees what, on every node (paper, Design and Evaluation; paper 003 put
Snoop in the Linux forwarding path the same way):

* LOCAL_IN (packets this node hears for itself) and FORWARD (packets it relays):
  the node's loss model applies first, as at the overlay node's listener.
* LOCAL_OUT (packets this node's own TCP sends into the mesh): the packet enters
  the mesh here, so a data segment gets the A-SPAN option, the sender's layer
  multiplies pkt_effort by p(next hop) (hop index 0) and logs ``tx`` kind ``send``.
* FORWARD data: option read, agent.on_data at the option's hop index, option
  rewritten (pkt_effort, hops, snoop_count), ``tx`` kind ``fwd``.
* A pure ACK on FORWARD or LOCAL_IN: agent.on_ack; a suppressed dupack gets a
  DROP verdict, cached segments come back to be injected with a raw socket.
* The classic-Snoop family (docs/VARIANTS.md) also has a local retransmission
  timer (:meth:`KernelForwarder.next_timer` / :meth:`KernelForwarder.on_timer`,
  run by the driver) and, for SLACK and ACK-all, new ACKs toward the sender:
  forged from the receiver's last ACK (routing.ipv4.forge_ack) and injected like
  local retransmissions.  Those agents get the ACK's window in bytes (scaled by
  the window scale the handshake announced) and the ACK's bytes as template.

The option is left in at the receiver: Linux ignores an unknown IPv4 option
(RFC 1122, 3.2.1.8), so no handler has to rewrite every packet it delivers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from aspan.agent import GeneratedAck, SnoopAgent
from aspan.cache import unwrap
from aspan.fields import AspanFields
from routing.ipv4 import (ACK, DEFAULT_OPTION, FIN, PROTO_UDP, RST, SYN, PacketError, TcpPacket, check_fields,
                          decode_option, forge_ack, ip_header, parse_tcp, restamp_option, stamp_option, tcp_options,
                          tcp_tsval_offset, tcp_window, with_tsval)
from routing.ipv4 import _TS_LEAD, _U32   # the timestamps layout Linux sends (tcp_tsval_offset's fast case)
from routing.loss import LossModel

HOOK_IN, HOOK_FWD, HOOK_OUT = 1, 2, 3   # NF_INET_LOCAL_IN, NF_INET_FORWARD, NF_INET_LOCAL_OUT
HOOK_NAMES = {HOOK_IN: "in", HOOK_FWD: "fwd", HOOK_OUT: "out"}
_ACK_MASK = SYN | FIN | RST | ACK
DROP_REASONS = ("loss", "queue", "malformed", "no_route", "suppressed")

Emit = Callable[..., None]
EmitTx = Callable[[float, str, int, int, str, "int | None"], None]


def _no_emit(now: float, ev: str, **fields: Any) -> None:
    return None


def _tx_via(emit: Emit) -> EmitTx:
    def tx(now: float, flow: str, seq: int, length: int, kind: str, hop: int | None) -> None:
        emit(now, "tx", flow=flow, seq=seq, len=length, kind=kind, hop=hop)
    return tx


class CachedSegment:
    """What the snoop agent caches for a kernel packet: the bytes as sent to the next hop.

    ``data`` is set right after ``SnoopAgent.on_data`` returns (the agent only
    stores the reference), and never changed afterwards.
    """

    __slots__ = ("data", "key", "flow", "seq", "length", "hop")

    def __init__(self, key: tuple[str, int, str, int], flow: str, seq: int, length: int, hop: int) -> None:
        self.data = b""
        self.key = key
        self.flow = flow
        self.seq = seq
        self.length = length
        self.hop = hop


@dataclass(slots=True)
class Verdict:
    """Accept (with ``payload`` replacing the packet's bytes when set) or drop; ``inject``: raw packets to send."""

    accept: bool = True
    payload: bytes | None = None
    inject: list[bytes] = field(default_factory=list)


ACCEPT = Verdict()


class KernelForwarder:
    """One node's snoop step for kernel IPv4 packets.

    ``next_hop(dst)`` returns the neighbour address towards ``dst`` (None: no
    route); ``quality(neighbour)`` its delivery ratio p (ETX).  ``fields`` is
    the header the sender stamps on data entering the mesh (pkt_effort 1,
    pkt_qos, snoop_after, snoop_limit of the experiment).  ``probe_port``:
    UDP probes to this port are heard (loss applies) and passed to the prober.
    ``emit_tx`` (optional) writes the one event logged per data packet faster
    than the generic ``emit``; it must log the same ``tx`` event.
    """

    def __init__(self, address: str, next_hop: Callable[[str], str | None],
                 quality: Callable[[str], float], agent: SnoopAgent, loss: LossModel,
                 fields: AspanFields, option_type: int = DEFAULT_OPTION,
                 emit: Emit | None = None, emit_tx: EmitTx | None = None) -> None:
        self.address = address
        self.next_hop = next_hop
        self.quality = quality
        self.agent = agent
        self.loss = loss
        check_fields(fields)
        self.fields = fields
        self.option_type = option_type
        self._emit = emit or _no_emit
        self._tx = emit_tx or _tx_via(self._emit)
        self.drops = {r: 0 for r in DROP_REASONS}
        self.stats = {"in": 0, "fwd": 0, "out": 0, "tx_send": 0, "tx_fwd": 0, "tx_local": 0,
                      "no_option": 0, "no_room": 0, "rtx": 0, "ack_gen": 0, "ack_gen_errors": 0, "ts_refreshed": 0}
        self._sent_end: dict[str, int] = {}   # flow -> unwrapped end of the highest segment sent (LOCAL_OUT)
        # A-SPAN's agent reads neither the ACK's window nor its bytes (aspan.agent.SnoopAgent.on_ack):
        # only the other schemes pay for reading them and for the handshake bookkeeping.
        self._ack_details = type(agent) is not SnoopAgent
        self._wscale: dict[tuple[str, int, str, int], int | None] = {}  # direction -> its SYN's shift
        self._tsval: dict[tuple[str, int, str, int], int] = {}          # data flow -> TSval of its last segment here

    # ---- the step --------------------------------------------------------
    def on_packet(self, hook: int, data: bytes, now: float) -> Verdict:
        """Decide what happens to one queued packet.  Never raises for any bytes."""
        if hook == HOOK_OUT:
            self.stats["out"] += 1
        else:
            self.stats["in" if hook == HOOK_IN else "fwd"] += 1
            if self.loss.drop(now):
                return self._drop_heard(data, now)
        try:
            tcp = parse_tcp(data, self.option_type)
        except PacketError as e:
            return self._malformed(data, str(e), now)
        if tcp is None:
            return ACCEPT                               # probes and other protocols: heard, passed on
        if tcp.flags & SYN and self._ack_details:
            self._note_syn(tcp, data)
        if tcp.payload_len:
            if hook == HOOK_OUT:
                return self._send(tcp, data, now)
            if hook == HOOK_FWD:
                return self._forward(tcp, data, now)
            return ACCEPT                               # data for this node: the option stays in
        if tcp.flags & _ACK_MASK == ACK and hook != HOOK_OUT:   # tcp.is_pure_ack (no payload here)
            return self._ack(tcp, data, now)
        return ACCEPT

    # ---- data --------------------------------------------------------------
    def _p_next(self, dst: str) -> float | None:
        nxt = self.next_hop(dst)
        return None if nxt is None else self.quality(nxt)

    def _send(self, tcp: TcpPacket, data: bytes, now: float) -> Verdict:
        """A data segment of this node's TCP enters the mesh: stamp the option (hop index 0)."""
        flow = tcp.flow
        seq = tcp.seq
        length = tcp.payload_len
        self._note_retransmission(flow.name, tcp, now)
        if tcp.opt_offset >= 0:       # already stamped (cannot happen for our TCP): leave it
            return ACCEPT
        nxt = self.next_hop(flow.dst)
        if nxt is None:
            return self._drop_tcp(tcp, "no_route", now)
        p = self.quality(nxt)
        fields = self.fields.copy()
        held = CachedSegment(flow.key, flow.name, seq, length, 0)
        self.agent.on_data(flow.key, seq, length, fields, p, 0, now, held)
        try:
            out = stamp_option(data, tcp.ihl, fields, 1, self.option_type)
        except PacketError:
            self.stats["no_room"] += 1
            out = data
        held.data = out
        self.stats["tx_send"] += 1
        self._tx(now, flow.name, seq, length, "send", 0)
        self._note_tsval(flow.key, data, tcp.ihl)
        if self._ack_details:
            return Verdict(True, out if out is not data else None, self._generated(now))
        return Verdict(True, out if out is not data else None)

    def _note_retransmission(self, flow: str, tcp: TcpPacket, now: float) -> None:
        """Log ``rtx`` for a segment below the highest one this node's TCP already sent."""
        high = self._sent_end.get(flow)
        seq = tcp.seq if high is None else unwrap(high, tcp.seq)
        end = seq + tcp.payload_len
        if high is None or end > high:
            self._sent_end[flow] = end
        if high is not None and seq < high:
            self.stats["rtx"] += 1
            self._emit(now, "rtx", flow=flow, seq=tcp.seq, len=tcp.payload_len)

    def _forward(self, tcp: TcpPacket, data: bytes, now: float) -> Verdict:
        """A data segment relayed by this node: the A-SPAN rules at the option's hop index."""
        flow = tcp.flow
        seq = tcp.seq
        length = tcp.payload_len
        offset = tcp.opt_offset
        self.stats["tx_fwd"] += 1
        if offset < 0:                # not stamped where it entered the mesh: relay, no snooping
            self.stats["no_option"] += 1
            self._tx(now, flow.name, seq, length, "fwd", None)
            return ACCEPT
        nxt = self.next_hop(flow.dst)
        if nxt is None:
            self.stats["tx_fwd"] -= 1
            return self._drop_tcp(tcp, "no_route", now)
        p = self.quality(nxt)
        fields, hop = decode_option(data, offset)
        held = CachedSegment(flow.key, flow.name, seq, length, hop)
        self.agent.on_data(flow.key, seq, length, fields, p, hop, now, held)
        out = held.data = restamp_option(data, offset, fields, hop + 1)
        self._tx(now, flow.name, seq, length, "fwd", hop)
        self._note_tsval(flow.key, data, tcp.ihl)
        if self._ack_details:
            return Verdict(True, out, self._generated(now))
        return Verdict(True, out)

    # ---- ACKs --------------------------------------------------------------
    def _ack(self, tcp: TcpPacket, data: bytes, now: float) -> Verdict:
        if self._ack_details:
            verdict = self.agent.on_ack(tcp.flow.rkey, tcp.ack, now, window=self._window_bytes(tcp, data),
                                        packet=data)
            inject = self._local(verdict.retransmit, now) + self._generated(now)
            if verdict.forward and not inject:
                return ACCEPT
        else:
            verdict = self.agent.on_ack(tcp.flow.rkey, tcp.ack, now)
            if verdict.forward and not verdict.retransmit:
                return ACCEPT
            inject = self._local(verdict.retransmit, now)
        if not verdict.forward:
            self.drops["suppressed"] += 1
            self._emit(now, "drop", reason="suppressed", ptype="ack", flow=tcp.flow.name, seq=tcp.seq,
                       ack=tcp.ack, len=0)
            return Verdict(False, None, inject)
        return Verdict(True, None, inject)

    def _local(self, cached: list[CachedSegment], now: float) -> list[bytes]:
        """Cached packets to resend as they left this node (logged ``tx`` kind ``local``), with a fresh TSval.

        A cached copy carries the TSval of its first transmission.  If the receiver has
        meanwhile taken a newer TSval into TS.Recent (a sender retransmission of data it
        already had does that), its PAWS check (RFC 7323, 5) would discard the old copy
        and answer with a duplicate ACK, for ever.  So the copy goes out with the latest
        TSval of the flow seen here: the sender's clock, which never goes back.
        """
        out = []
        for held in cached:
            out.append(self._refreshed(held))
            self.stats["tx_local"] += 1
            self._tx(now, held.flow, held.seq, held.length, "local", held.hop)
        return out

    def _note_tsval(self, key: tuple[str, int, str, int], data: bytes, ihl: int) -> None:
        """Remember the TSval of the flow's latest data segment here (for local retransmissions and
        for the TSecr of ACKs acknowledging data, which echo it as the receiver would: RFC 7323, 4.3)."""
        o = ihl + 20
        if data[o:o + 4] == _TS_LEAD and data[ihl + 12] >= 0x80:   # tcp_tsval_offset's first case, inline
            self._tsval[key] = _U32.unpack_from(data, o + 4)[0]
            return
        try:
            off = tcp_tsval_offset(data, ihl)
        except PacketError:
            return                                      # malformed TCP options: relayed, nothing to remember
        if off >= 0:
            self._tsval[key] = int.from_bytes(data[off:off + 4], "big")

    def _refreshed(self, held: CachedSegment) -> bytes:
        latest = self._tsval.get(held.key)
        if latest is None:
            return held.data
        ihl = (held.data[0] & 15) * 4
        try:
            off = tcp_tsval_offset(held.data, ihl)
        except PacketError:
            return held.data                            # malformed TCP options: resent as cached
        if off < 0:
            return held.data
        old = int.from_bytes(held.data[off:off + 4], "big")
        if not 0 < (latest - old) % (1 << 32) < (1 << 31):
            return held.data                            # not newer (serial-number order)
        self.stats["ts_refreshed"] += 1
        return with_tsval(held.data, ihl, latest)

    # ---- the agent's timer (classic-Snoop family) -----------------------------
    def next_timer(self) -> float | None:
        """When :meth:`on_timer` is due next (None: no timer pending)."""
        return self.agent.next_timer()

    def on_timer(self, now: float) -> list[bytes]:
        """Expired local retransmission timers: the packets to inject (resent segments, new ACKs)."""
        return self._local(self.agent.on_timer(now), now) + self._generated(now)

    # ---- new ACKs toward the sender (ACK-all, SLACK) -------------------------
    def _note_syn(self, tcp: TcpPacket, data: bytes) -> None:
        """Remember the window scale a SYN or SYN-ACK announces for its direction (RFC 7323, 2.2)."""
        try:
            self._wscale[tcp.flow.key] = tcp_options(data, tcp.ihl).wscale
        except PacketError:
            self._wscale[tcp.flow.key] = None

    def _window_bytes(self, tcp: TcpPacket, data: bytes) -> int | None:
        """The ACK's window in bytes; None when this node did not see the handshake (scale unknown).

        Windows are scaled only when both SYNs carried the option (RFC 7323, 2.2).
        """
        shift = self._shift(tcp)
        return None if shift is None else tcp_window(data, tcp.ihl) << shift

    def _shift(self, tcp: TcpPacket) -> int | None:
        """The window scale of the packet's sender: 0 unless both SYNs carried the option; None if unseen."""
        key, rkey = tcp.flow.key, tcp.flow.rkey
        if key not in self._wscale or rkey not in self._wscale:
            return None
        mine, other = self._wscale[key], self._wscale[rkey]
        return mine if mine is not None and other is not None else 0

    def _generated(self, now: float) -> list[bytes]:
        """The agent's new ACKs (ACK-all, SLACK) as packets to inject toward the sender.

        Each is forged from its template, the receiver's ACK (routing.ipv4.forge_ack).  The
        window goes back into the 16-bit field with the receiver's scale.  TSecr: an ACK
        repeating the template's ACK number (SLACK's duplicates) keeps the template's echo,
        so it is the same ACK again; an ACK of newer data echoes the TSval of the latest
        segment of the flow seen here, as the receiver would (RFC 7323, 4.3).
        """
        out = []
        for g in self.agent.take_generated():
            try:
                pkt, flow = self._forge(g)
            except PacketError as e:
                self.stats["ack_gen_errors"] += 1
                self._emit(now, "send_error", error=f"cannot forge the {g.reason} ACK {g.ack}: {e}")
                continue
            out.append(pkt)
            self.stats["ack_gen"] += 1
            self._emit(now, "ack_gen", flow=flow, ack=g.ack, window=g.window, reason=g.reason)
        return out

    def _forge(self, g: GeneratedAck) -> tuple[bytes, str]:
        """(the forged ACK, the name of the data flow it acknowledges); PacketError for a bad template."""
        tcp = parse_tcp(g.template, self.option_type)
        if tcp is None:
            raise PacketError("the template is not TCP")
        shift = self._shift(tcp) or 0
        tsecr = None if g.ack == tcp.ack else self._tsval.get(tcp.flow.rkey)
        return forge_ack(g.template, g.ack, g.window >> shift, tsecr), tcp.flow.rname

    # ---- drops -------------------------------------------------------------
    def _drop_heard(self, data: bytes, now: float) -> Verdict:
        """The loss model dropped a packet this node heard (paper: loss at every node's listener)."""
        self.drops["loss"] += 1
        try:
            tcp = parse_tcp(data, self.option_type)
        except PacketError:
            tcp = None
        if tcp is not None:
            self._emit(now, "drop", reason="loss", ptype="tcp", flow=tcp.flow.name, seq=tcp.seq, ack=tcp.ack,
                       len=tcp.payload_len)
        else:
            self._emit(now, "drop", reason="loss", ptype=self._ptype(data))
        return Verdict(False)

    def _drop_tcp(self, tcp: TcpPacket, reason: str, now: float) -> Verdict:
        self.drops[reason] += 1
        self._emit(now, "drop", reason=reason, ptype="tcp", flow=tcp.flow.name, seq=tcp.seq, ack=tcp.ack,
                   len=tcp.payload_len)
        return Verdict(False)

    def _malformed(self, data: bytes, detail: str, now: float) -> Verdict:
        self.drops["malformed"] += 1
        self._emit(now, "drop", reason="malformed", detail=detail, size=len(data))
        return Verdict(False)

    @staticmethod
    def _ptype(data: bytes) -> str:
        try:
            proto = ip_header(data)[1]
        except PacketError:
            return "?"
        return "udp" if proto == PROTO_UDP else str(proto)
