"""The forwarding step: what one node does with one packet, on every data plane.

Everything per packet that is not parsing lives here, once: the node's loss model
(with the packet's real size), the next hop and its delivery ratio p from the ETX
table, the snoop agent's ``on_data`` / ``on_ack`` with the same inputs, the
counters, and the log events with their names (aspan.events).  No sockets, no
clock, no packet format: the data planes are adapters around it.

* routing.overlay.engine.ForwardingEngine: overlay packets (the UDP datagrams of the local
  and pi backends, the objects of the virtual-time backend);
* routing.kernel.forwarder.KernelForwarder: raw IPv4 packets of kernel TCP in an NFQUEUE
  handler (the netns backend).

An adapter hands the step a :class:`Held` for every data segment it transmits: the
packet as it leaves this node (the snoop agent caches it as an opaque value) and
what the log names it by.  The adapter builds the packet to send from the step's
answers: which next hop, which cached packets to resend, which new ACKs to make.
tests/routing/forwarding/test_step.py drives both adapters with the same scripts and
expects the same decisions, counters and events.
"""
from __future__ import annotations

from typing import Any, Callable

from aspan.agent import AckVerdict, FlowKey, GeneratedAck, SnoopAgent
from aspan.events import EventSink
from aspan.fields import AspanFields
from routing.links.loss import LossModel, packet_dropper

DROP_REASONS = ("loss", "queue", "malformed", "no_route", "suppressed", "ttl",
                "stranger", "forged", "replay",   # these three: the authenticated overlay (routing.overlay.auth)
                "mac_retry",                      # the link layer gave up (routing.medium.dcf)
                "rts_retry",                      # ... after dot11ShortRetryLimit RTSs without a CTS
                "refused")                        # a SYN beyond routing.overlay.node.MAX_ACCEPTED connections
#: Transmissions an overlay packet may have had when a node forwards it (its ``hops`` byte, at most
#: 255).  A route set that passed routing.topology.routes reaches every destination in fewer hops than there
#: are nodes; this bound only catches what slipped past (issue 13, item 5).
HOP_LIMIT = 64
#: Drop lines per reason and second a node writes one by one; beyond them a second's drops of that
#: reason become one line with a ``count`` (issue 13, item 4: junk at line rate must not fill a disk).
#: The ``drops`` counters stay exact and node_stop logs them.
DROP_LINES_PER_S = 20
TX_KINDS = ("send", "fwd", "local")


class DropLines:
    """The line rate of drop logs (issue 13, item 4: junk at line rate must not fill a disk), per kind
    (a drop reason, an emulated link): the first DROP_LINES_PER_S drops of a kind in a second get a line
    each, the rest of that second one line with their ``count`` and the second's start (``since``),
    written by ``count_line(now, kind, count, since)`` when the kind's next second starts or at
    :meth:`flush`.  The counters that say how many drops there were are the caller's."""

    def __init__(self, count_line: Callable[[float, str, int, float], None]) -> None:
        self._count_line = count_line
        self._windows: dict[str, list[float]] = {}     # kind -> [second start, lines written, not written]

    def one_line(self, now: float, kind: str) -> bool:
        """A drop of ``kind`` at ``now``: True when it gets its own line, False when it is counted."""
        w = self._windows.get(kind)
        if w is None or now - w[0] >= 1.0:
            if w is not None and w[2]:
                self._write(now, kind, w)
            w = self._windows[kind] = [now, 0, 0]
        if w[1] < DROP_LINES_PER_S:
            w[1] += 1
            return True
        w[2] += 1
        return False

    def flush(self, now: float, final: bool = True) -> None:
        """The count lines of every kind whose second is over (of every kind when ``final``)."""
        for kind, w in self._windows.items():
            if w[2] and (final or now - w[0] >= 1.0):
                self._write(now, kind, w)

    def _write(self, now: float, kind: str, w: list[float]) -> None:
        self._count_line(now, kind, int(w[2]), round(w[0], 6))
        w[2] = 0


def cache_note(policy: str, effort: float, p: float, pkt_qos: float) -> str:
    """Why a node cached a segment, for a capture's packet comment."""
    if policy in ("adaptive", "perfect"):
        return (f"cached here (A-SPAN): pkt_effort {effort:.6f} x p(next hop) {p:.6f} = {effort * p:.6f} "
                f"< pkt_qos {pkt_qos:.6f}")
    return f"cached here (policy {policy})"


LOCAL_RTX_NOTE = "local retransmission from this node's cache (a duplicate ACK or the local timer asked for it)"
SUPPRESSED_NOTE = "duplicate ACK for a segment cached here: answered from the cache, not forwarded"


class Held:
    """One data segment as this node transmits it: what the snoop agent caches.

    ``packet`` is the data plane's packet as it left this node (an overlay Packet,
    or IPv4 bytes, set by the adapter once the header is rewritten) and is never
    changed afterwards; the rest names it in the log and routes a local retransmission.
    """

    __slots__ = ("packet", "key", "flow", "seq", "length", "hop")

    def __init__(self, packet: Any, key: FlowKey, flow: str, seq: int, length: int, hop: int) -> None:
        self.packet = packet
        self.key = key          # (src, sport, dst, dport) of the data direction
        self.flow = flow        # its log name, "src:sport>dst:dport"
        self.seq = seq          # 32-bit TCP sequence number
        self.length = length    # payload bytes
        self.hop = hop          # hop index of this node's transmission (0: the sender's layer)


class ForwardingStep:
    """One node's forwarding step.

    ``next_hop(dst)`` is the neighbour address toward ``dst`` (None: no route);
    ``quality(neighbour)`` the delivery ratio p of the link (ETX table).
    """

    def __init__(self, address: str, next_hop: Callable[[str], str | None], quality: Callable[[str], float],
                 agent: SnoopAgent, loss: LossModel, log: EventSink, hop_limit: int = HOP_LIMIT) -> None:
        self.hop_limit = hop_limit
        self.next_hop = next_hop
        self.quality = quality
        self.agent = agent
        #: ``lost(now, size)``: the node's loss model on a packet of ``size`` bytes it hears (paper: every
        #: listener drops at its rate; probes and ACKs included).  The caller logs the drop with what it parsed.
        self.lost: Callable[[float, int], bool] = packet_dropper(loss)
        #: per previous hop (address): the loss model of that link (``loss.links``), instead of the node's;
        #: empty unless the experiment gives link losses (then the drivers name the previous hop)
        self.link_lost: dict[str, Callable[[float, int], bool]] = {}
        self.log = log
        self.drops = dict.fromkeys(DROP_REASONS, 0)
        self._drop_lines = DropLines(lambda now, reason, count, since: self.log.drop(now, reason, count=count,
                                                                                    since=since))
        self.tx = dict.fromkeys(TX_KINDS, 0)
        self.acks_generated = 0
        #: the ACK's window, SNACK entries and bytes are read only by agents that use them
        self.ack_details = agent.reads_ack_details
        #: when True (a capture is written), :meth:`data` leaves in :attr:`note` why the agent cached
        self.explain = False
        self.note: str | None = None
        self.last_drop = ""      # the reason of the latest drop (a capture's note for a dropped packet)

    def set_link_loss(self, models: dict[str, LossModel]) -> None:
        """Loss models per previous hop (address) for the links that have their own (``loss.links``)."""
        self.link_lost = {frm: packet_dropper(m) for frm, m in models.items()}

    def lost_from(self, now: float, size: int, frm: str | None) -> bool:
        """Is a packet of ``size`` bytes heard from previous hop ``frm`` lost?  The link's model when it
        has one (the most specific spec wins: docs, "Loss per link"), else the node's."""
        lost = self.link_lost.get(frm) if frm is not None else None
        return (lost or self.lost)(now, size)

    # ---- hop limit -------------------------------------------------------------
    def expired(self, hops: int) -> bool:
        """Has a packet that already took ``hops`` transmissions used up its hop limit?  The adapter
        then drops it as ``ttl`` (:meth:`drop`).  Only the overlay asks: on the kernel data plane the
        IPv4 TTL does this job (the kernel decrements it and drops at 0, as any router does)."""
        return hops >= self.hop_limit

    # ---- data ------------------------------------------------------------------
    def data(self, now: float, held: Held, dst: str, fields: AspanFields, kind: str) -> str | None:
        """One transmission of a data segment by this node: ``kind`` send (hop 0, its own TCP's
        segment) or fwd.  The snoop agent rewrites ``fields`` for the next hop and may cache ``held``
        (paper, Design: "Routing Nodes on Receiving Data Packets").  Returns the next hop;
        None: no route (the caller drops the packet with :meth:`drop`)."""
        nxt = self.next_hop(dst)
        if nxt is None:
            return None
        if self.explain:
            effort, p = fields.pkt_effort, self.quality(nxt)
            cached = self.agent.on_data(held.key, held.seq, held.length, fields, p, held.hop, now, held)
            self.note = cache_note(self.agent.config.policy, effort, p, fields.pkt_qos) if cached else None
        else:
            self.agent.on_data(held.key, held.seq, held.length, fields, self.quality(nxt), held.hop, now, held)
        self.log.tx(now, held.flow, held.seq, held.length, kind, held.hop)
        self.tx[kind] += 1
        return nxt

    def relayed_unsnooped(self, now: float, flow: str, seq: int, length: int) -> None:
        """A data segment relayed without the A-SPAN fields (kernel TCP that entered the mesh unstamped)."""
        self.log.tx(now, flow, seq, length, "fwd", None)
        self.tx["fwd"] += 1

    # ---- ACKs ------------------------------------------------------------------
    def ack(self, now: float, rkey: FlowKey, ack: int, window: int | None, snack: tuple[int, ...],
            template: Any) -> AckVerdict:
        """The snoop agent's verdict on a pure ACK this node hears or relays (flow ``rkey`` is the data
        direction).  ``window`` (bytes), ``snack`` and ``template`` (the ACK, opaque) only when
        :attr:`ack_details`.  The caller resends ``verdict.retransmit`` through :meth:`local` and, when
        ``verdict.forward`` is false, drops the ACK as ``suppressed``."""
        if self.ack_details:
            return self.agent.on_ack(rkey, ack, now, window=window, snack=snack, packet=template)
        return self.agent.on_ack(rkey, ack, now)

    def local(self, now: float, cached: list[Held]) -> list[tuple[Held, str]]:
        """Local retransmissions from the cache, each with its next hop (logged ``tx`` kind local, at
        the hop index it was cached at); a copy without a route is dropped as ``no_route``."""
        out = []
        for held in cached:
            nxt = self.next_hop(held.key[2])
            if nxt is None:
                self.drop(now, "no_route", "tcp", held.flow, held.seq, None, held.length)
                continue
            self.log.tx(now, held.flow, held.seq, held.length, "local", held.hop)
            self.tx["local"] += 1
            out.append((held, nxt))
        return out

    def timer(self, now: float) -> list[tuple[Held, str]]:
        """The agent's expired local-retransmission timers (classic-Snoop family): what to resend."""
        return self.local(now, self.agent.on_timer(now))

    def next_timer(self) -> float | None:
        return self.agent.next_timer()

    # ---- new ACKs toward the sender (ACK-all, SLACK) ----------------------------
    def generated(self) -> list[GeneratedAck]:
        """The agent's new ACKs since the last call; the adapter builds each and calls :meth:`ack_sent`."""
        return self.agent.take_generated()

    def ack_sent(self, now: float, g: GeneratedAck, flow: str) -> None:
        """A new ACK of data flow ``flow`` went out."""
        self.acks_generated += 1
        self.log.ack_gen(now, flow, g.ack, g.window, g.reason)

    # ---- drops -----------------------------------------------------------------
    def drop(self, now: float, reason: str, ptype: str | None = None, flow: str | None = None,
             seq: int | None = None, ack: int | None = None, length: int | None = None, **detail: Any) -> None:
        """Count and log a packet this node does not pass on (``reason`` one of DROP_REASONS).

        Every drop is counted; the first DROP_LINES_PER_S of a reason in a second are logged one by
        one, the rest of that second as one line with ``count`` (written by :meth:`flush_drops`)."""
        self.drops[reason] += 1
        self.last_drop = reason
        if self._drop_lines.one_line(now, reason):
            self.log.drop(now, reason, ptype, flow, seq, ack, length, **detail)

    def flush_drops(self, now: float, final: bool = False) -> None:
        """Write the count of drops not logged one by one, for every reason whose second is over (all of
        them when ``final``: before node_stop), and those of the log's other aggregated lines (traffic no
        configured flow explains: routing.forwarding.flowlog).  Drivers call it now and then and at the end."""
        self._drop_lines.flush(now, final)
        self.log.flush_counts(now, final)
