"""The snoop agent of one node: caches data, frees on new ACKs, answers dupacks from the cache.

It sees packets through a narrow, backend-neutral view (flow key, sequence
numbers, header fields) and stores the packet object it is given as an opaque
value, so the same agent runs on the UDP overlay (a routing.overlay.wire.Packet), on
kernel TCP through NFQUEUE (raw IP bytes) and in virtual time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from aspan.cache import HALF, SEQ_MOD, FlowCache
from aspan.events import Emit, EventSink, as_sink
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig, update_effort, wants_cache

FlowKey = tuple[str, int, str, int]  # data direction: (src, sport, dst, dport)

#: What one cached segment costs in memory besides its payload: the packet object, its segment and
#: header fields, the Held, the cache's dict and list entries (measured with tracemalloc: about 650
#: bytes for an overlay packet; a kernel packet is one bytes object and costs less).  The cache bound
#: (SnoopConfig.cache_bytes) counts it, so 1-byte segments cannot use 700 times the bound (issue 13).
SEGMENT_COST = 768
#: What the state of one flow costs without its segments (about 550 bytes measured; the
#: classic-Snoop family's is larger): the documented memory bound of a node's snoop state is
#: max_flows x (FLOW_COST + REFUSED_FLOW_COST) + cache_bytes (tests/aspan/test_bounded_state.py).
FLOW_COST = 1024
#: What remembering one refused flow costs (its key in ``SnoopAgent._refused``: a set entry and the
#: 4-tuple, about 200 bytes measured); at most ``max_flows`` are remembered, so the bound of a node's
#: snoop state is max_flows x (FLOW_COST + REFUSED_FLOW_COST) + cache_bytes.
REFUSED_FLOW_COST = 256


def flow_name(flow: FlowKey) -> str:
    return f"{flow[0]}:{flow[1]}>{flow[2]}:{flow[3]}"


@dataclass(slots=True)
class AckVerdict:
    """What to do with an ACK: pass it on or hold it back, and what to resend from the cache.

    ``snack``: when not None, the forwarded ACK carries these SNACK entries instead of its
    own (SNACK-Snoop strips the losses it recovers itself, paper 002 Sec. III-B).
    """

    forward: bool = True
    retransmit: list[Any] = field(default_factory=list)
    snack: tuple[int, ...] | None = None

    def __init__(self, forward: bool = True, retransmit: list[Any] | None = None,
                 snack: tuple[int, ...] | None = None) -> None:
        # The generated __init__, written out: it would call list() for the default (a call per ACK).
        self.forward = forward
        self.retransmit = [] if retransmit is None else retransmit
        self.snack = snack


@dataclass(slots=True)
class GeneratedAck:
    """A new pure ACK a scheme sends toward the data sender (ACK-all, SLACK).

    ``template`` is an ACK of the flow this node has seen (opaque, as the cached
    packets are); the driver copies its addresses, ports and sequence number and puts
    in ``ack`` (32-bit) and ``window``; SACK and SNACK are left out.  ``reason`` names
    the rule that made it (logged as ``ack_gen``).
    """

    template: Any
    ack: int
    window: int
    reason: str


@dataclass(slots=True)
class _FlowState:
    name: str
    cache: FlowCache = field(default_factory=FlowCache)
    last_ack: int | None = None     # unwrapped; the last cumulative ACK seen (paper: "last ACK")
    high_end: int | None = None     # unwrapped end of the highest data segment seen here
    rtx_seq: int | None = None      # dupack discipline "once": the loss being recovered locally
    expected_dupacks: int = 0       # "once": dupacks still expected for it (held back)
    last_active: float = 0.0        # last data or ACK of the flow here (idle expiry)


class SnoopAgent:
    """A-SPAN snoop agent (paper, Design and Implementation).

    ``on_data`` runs for every data segment this node transmits (its own, at the
    sender's forwarding layer, or forwarded); ``on_ack`` for every pure ACK of a
    flow it has seen data of.  ``log``: an :class:`aspan.events.EventSink` or a
    plain ``emit(now, ev, **fields)`` function.
    """

    #: Does on_ack read the ACK's window, SNACK entries and bytes?  A-SPAN does not, so the
    #: forwarding step's adapters skip computing them (the kernel's window needs the handshake's scale).
    reads_ack_details: ClassVar[bool] = False
    #: Does the agent make new ACKs (take_generated)?  A-SPAN does not.
    generates_acks: ClassVar[bool] = False

    def __init__(self, node: str, config: SnoopConfig, log: EventSink | Emit | None = None) -> None:
        self.config = config
        self._log = as_sink(log)
        self._emit = self._log.emit
        self._flows: dict[FlowKey, _FlowState] = {}
        self.cache_bytes = 0
        self.cache_segments = 0
        self.stats = {"cached": 0, "cache_full": 0, "hits": 0, "local_retransmissions": 0,
                      "suppressed": 0, "freed": 0, "flows_refused": 0, "flows_expired": 0,
                      "datagrams_refused": 0, "refused_memory_cleared": 0}
        # The refused flows, so ``flows_refused`` counts flows, not datagrams (issue 27, item 7).
        # Bounded (a hostile neighbour can forge any number of flows): at most ``max_flows`` keys.
        # Past the bound the set is cleared and counting goes on (``refused_memory_cleared`` += 1): a flow
        # refused both before and after a clearing is then counted twice, so ``flows_refused`` is exact
        # while ``refused_memory_cleared`` is 0 and an upper bound after.
        self._refused: set[FlowKey] = set()
        self._swept = 0.0

    # ---- bounded state (issue 13, item 2) ----------------------------------
    def _new_flow(self, flow: FlowKey) -> Any:
        return _FlowState(flow_name(flow))

    def _admit(self, flow: FlowKey, now: float) -> Any:
        """The state of ``flow``, made if there is room: at most ``max_flows`` flows, idle ones
        (unheard for ``flow_idle_s``) expire first.  None: refused (counted); the packet is then
        forwarded without snooping."""
        flows = self._flows
        st = flows.get(flow)
        if st is None:
            cfg = self.config
            if now - self._swept >= cfg.flow_idle_s / 4 or len(flows) >= cfg.max_flows:
                self.expire_idle(now)
            if len(flows) >= cfg.max_flows:
                self._refuse(flow)
                return None
            st = flows[flow] = self._new_flow(flow)
        st.last_active = now
        return st

    def _refuse(self, flow: FlowKey) -> None:
        """Count a refused datagram, and its flow the first time (within the bounded memory above)."""
        stats = self.stats
        stats["datagrams_refused"] += 1
        refused = self._refused
        if flow in refused:
            return
        if len(refused) >= self.config.max_flows:
            refused.clear()
            stats["refused_memory_cleared"] += 1
        refused.add(flow)
        stats["flows_refused"] += 1

    def expire_idle(self, now: float) -> int:
        """Forget the flows unheard for ``flow_idle_s`` and free their cached segments; returns how many."""
        self._swept = now
        limit = now - self.config.flow_idle_s
        idle = [k for k, st in self._flows.items() if st.last_active <= limit]
        freed = 0
        for k in idle:
            st = self._flows.pop(k)
            n = len(st.cache)
            if n:
                self.cache_segments -= n
                self.cache_bytes -= sum(length for length, _ in st.cache.entries.values())
                freed += n
        self.stats["flows_expired"] += len(idle)
        if freed:
            self._log.cache(now, self.cache_segments, self.cache_bytes)
        return len(idle)

    def has_room(self, length: int) -> bool:
        """Does a new segment of ``length`` payload bytes fit the cache bound (payload plus SEGMENT_COST each)?"""
        return (self.cache_bytes + length + SEGMENT_COST * (self.cache_segments + 1)
                <= self.config.cache_bytes)

    # ---- data path -------------------------------------------------------
    def on_data(self, flow: FlowKey, seq: int, length: int, fields: AspanFields,
                p_next: float, hop_index: int, now: float, packet: Any) -> bool:
        """Rewrite ``fields`` for the next hop and cache ``packet`` if the policy says so.

        ``packet`` is stored as given and returned unchanged for local
        retransmission: the caller must not mutate it afterwards.
        """
        st = self._flows.get(flow)
        if st is None:
            st = self._admit(flow, now)
            if st is None:
                update_effort(fields, p_next, cached=False)   # no room for the flow: forwarded unsnooped
                return False
        else:
            st.last_active = now
        last, high = st.last_ack, st.high_end
        ref = last if last is not None else high          # the last ACK, else the highest data: the unwrap reference
        useq = seq if ref is None else ref + (seq - ref + HALF) % SEQ_MOD - HALF   # unwrap(ref, seq), inline
        end = useq + length
        if high is None or end > high:
            st.high_end = end
        if last is not None and end <= last:
            update_effort(fields, p_next, cached=False)  # already acknowledged: nothing to protect
            return False
        cache = wants_cache(self.config, fields, p_next, hop_index)
        if cache and not self.has_room(length):
            self.stats["cache_full"] += 1
            self._log.cache_full(now, st.name, seq)
            cache = False
        update_effort(fields, p_next, cached=cache)
        if cache:
            if st.cache.add(useq, length, packet):
                self.cache_bytes += length
                self.cache_segments += 1
                self.stats["cached"] += 1
                self._log.cache(now, self.cache_segments, self.cache_bytes, st.name)
        return cache

    # ---- ACK path --------------------------------------------------------
    def on_ack(self, flow: FlowKey, ack: int, now: float, *, window: int | None = None,
               snack: tuple[int, ...] = (), packet: Any = None) -> AckVerdict:
        """Handle a pure ACK of data flow ``flow`` (paper, Design: "Routing Nodes on Receiving Ack Packets").

        ``window``, ``snack`` and ``packet`` (the ACK itself, opaque) are for the snoop
        schemes of the other papers; A-SPAN ignores them.
        """
        st = self._flows.get(flow)
        if st is None:
            return AckVerdict()
        st.last_active = now
        last = st.last_ack
        ref = last if last is not None else st.high_end    # the last ACK, else the highest data
        uack = ack if ref is None else ref + (ack - ref + HALF) % SEQ_MOD - HALF   # unwrap(ref, ack), inline
        if last is None or uack > last:
            self._new_ack(st, uack, now)
            return AckVerdict()
        if uack < last:
            return AckVerdict()  # an old ACK overtaken by a newer one: pass it on untouched
        return self._dupack(st, uack, now)

    def _new_ack(self, st: _FlowState, uack: int, now: float) -> None:
        """Rule 1: a higher cumulative ACK frees the cache up to it."""
        st.last_ack = uack
        st.rtx_seq = None
        st.expected_dupacks = 0
        n, freed = st.cache.free_below(uack)
        if n:
            self.cache_segments -= n
            self.cache_bytes -= freed
            self.stats["freed"] += n
            self._log.cache(now, self.cache_segments, self.cache_bytes, st.name)

    def _dupack(self, st: _FlowState, uack: int, now: float) -> AckVerdict:
        """Rule 2: a duplicate ACK whose missing segment is cached is answered here and not forwarded."""
        entry = st.cache.get(uack)
        if entry is None:
            return AckVerdict()
        length, packet = entry
        seq32 = uack % (1 << 32)
        self.stats["hits"] += 1
        self._log.hit(now, st.name, seq32)
        self.stats["suppressed"] += 1
        if self.config.dupack == "every" or st.rtx_seq != uack or st.expected_dupacks <= 0:
            # "every": the paper's behaviour, one local retransmission per dupack (Evaluation, Figure 6).
            # "once": the first dupack of a loss retransmits; the dupacks already in flight behind it
            # (one per segment sent after the lost one) are held back; if more arrive than expected,
            # the local retransmission is presumed lost and is sent again.
            if self.config.dupack == "once":
                in_flight_after = max(0, ((st.high_end or uack) - uack - length) // max(length, 1))
                st.rtx_seq = uack
                st.expected_dupacks = in_flight_after - 1
            self.stats["local_retransmissions"] += 1
            return AckVerdict(forward=False, retransmit=[packet])
        st.expected_dupacks -= 1
        return AckVerdict(forward=False)

    # ---- timers (A-SPAN has none; classic Snoop variants override) -------
    def next_timer(self) -> float | None:
        return None

    def on_timer(self, now: float) -> list[Any]:
        return []

    # ---- new packets (A-SPAN sends none; ACK-all and SLACK override) -------
    def take_generated(self) -> list[GeneratedAck]:
        """ACKs this agent made since the last call, to be sent toward the data sender."""
        return []
