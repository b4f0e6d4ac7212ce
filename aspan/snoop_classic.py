"""Classic Snoop (Balakrishnan et al. 1995) as ns-2's ``tcp/snoop.cc`` does it, per flow.

The rules, each as in ``snoop.cc`` (function names in brackets), with sequence numbers
in bytes instead of ns-2's packet numbers:

* data (``snoop_data``/``snoop_insert``): a data segment the placement policy wants is
  cached with its send time, a local-retransmission count and a "sender retransmitted
  it" mark.  A segment cached before is a sender retransmission: its count restarts, it
  is marked, and the local timer restarts.  A segment below the highest one seen but not
  cached before (network reordering or a sender retransmission of something never
  cached) is cached; if it is the lowest cached one it is marked too.  With the cache
  full (``max_cached_segments`` per flow, SNOOP_MAXWIND) a segment is not cached.
* new ACK (``snoop_ack`` case 3, ``snoop_cleanbufs_``): frees the cache below it, restarts
  the local timer for the lowest cached segment, takes an RTT sample from the send time
  of the highest freed segment (its last transmission from here: ns-2 has no Karn rule)
  and forgets the dupack state.
* duplicate ACK (``snoop_ack`` case 2): not cached here, or the lowest cached segment is
  above it: pass it on.  Not expecting dupacks: the first ``rtx_thresh`` (RTX_THRESH = 1)
  unexpected dupacks pass; the next one, unless the segment is a sender retransmission
  (then it passes), sets the number of dupacks to expect (cached segments from the lost
  one up, minus RTX_THRESH + 1) and retransmits the segment locally if it was never
  retransmitted locally; expected dupacks are held back; in the inconsistent state
  (expected = -1) the segment is resent while it has been resent fewer than 2 times.
* ``snoop_rxmit``: at most ``max_local_rxmit`` (SNOOP_MAX_RXMIT = 10) local
  retransmissions of one segment; each one restarts the local timer.
* local timer (``SnoopRxmitHandler``): one per flow, for the lowest cached segment; on
  expiry, if that segment is the one the receiver waits for, it is resent.
* local RTO = max(srtt + 4 rttvar, snoop_tick) (``timeout()``), with
  srtt = g srtt + (1 - g) rtt and rttvar = g |rtt - srtt| + (1 - g) rttvar, g = 0.125
  (``snoop_rtt``; note that ns-2 weights the *new* sample by 1 - g = 0.875, which is
  what paper 000, eq. (1), reproduces and what makes the RTO follow short RTTs).

Bytes instead of packet numbers: "the segment the receiver waits for" is the lowest cached
one if it covers the cumulative ACK (a receiver may take part of a segment that a window
edge cut), and a longer copy of a cached segment replaces the shorter one.

Not reproduced: ns-2 caches only while the interface queue has room (the agent does not
see the queue here); ns-2's RTX_THRESH counter is one static variable shared by every
snoop object (here it is per flow).

Premature local retransmissions (paper 000, Sec. 3.2): a local retransmission of a
segment the receiver already had.  The node cannot know when it resends; it counts one
when the ACK that frees the segment arrives sooner after the local retransmission than
the shortest RTT it ever measured on a segment sent once (from data forwarded to ACK
returned): that ACK cannot have been caused by the retransmission, so the receiver had
the segment already.  A later ACK is ambiguous and not counted: the count is a lower
bound.  Each one is logged as ``premature`` (flow, seq).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aspan.agent import AckVerdict, Emit, FlowKey, GeneratedAck, SnoopAgent, flow_name
from aspan.cache import FlowCache, unwrap
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig, update_effort, wants_cache
from aspan.scheme_config import SchemeConfig

SEQ_MOD = 1 << 32


@dataclass(slots=True)
class CacheEntry:
    """ns-2 ``hdr_snoop`` of one cached segment."""

    snd_time: float
    num_rxmit: int = 0
    sender_rxmit: bool = False
    rtx_time: float | None = None   # last local retransmission (premature check)


@dataclass(slots=True)
class ClassicFlow:
    """Per-flow Snoop state (one ns-2 Snoop object per connection)."""

    name: str
    srtt: float
    rttvar: float
    cache: FlowCache = field(default_factory=FlowCache)
    meta: dict[int, CacheEntry] = field(default_factory=dict)
    last_ack: int | None = None     # unwrapped cumulative ACK (ns-2 lastAck_ + 1)
    last_seen: int | None = None    # start of the highest segment seen (lastSeen_)
    high_end: int | None = None     # end of the highest segment seen (for unwrapping)
    exp_dupacks: int = 0            # expDupacks_
    exp_from: int = 0               # expNextAck_: count cached segments from here up
    thresh: int = 0                 # the RTX_THRESH counter
    timer: float | None = None      # local retransmission deadline
    timer_armed: float = 0.0        # when the timer was last set
    min_rtt: float | None = None    # shortest clean RTT sample (premature check)
    last_heard: float | None = None  # last ACK of any kind heard for this flow
    last_active: float = 0.0        # last data or ACK of the flow here (idle expiry, issue 13)

    def ref(self) -> int | None:
        return self.last_ack if self.last_ack is not None else self.high_end

    def tail(self) -> int | None:
        """The lowest cached sequence number (ns-2 buftail_)."""
        return self.cache.seqs[0] if self.cache.seqs else None


class ClassicSnoopAgent(SnoopAgent):
    """ns-2 Snoop at every node the placement policy (``snoop.policy``) picks."""

    flow_cls: type[ClassicFlow] = ClassicFlow
    # Classic and multihop Snoop read only an ACK's number and make no ACKs of their own; the schemes
    # built on them that do say so (SNACK-Snoop reads the SNACK entries, ACK-all and SLACK the window
    # and the ACK itself, and fill the outbox of take_generated).  A relay hands an ACK on without
    # decoding it only to an agent that reads no details (routing.overlay.engine's relay path).
    reads_ack_details = False
    generates_acks = False

    def __init__(self, node: str, config: SnoopConfig, emit: Emit | None = None,
                 scheme: SchemeConfig | None = None) -> None:
        super().__init__(node, config, emit)
        self.scheme = scheme or SchemeConfig(scheme="classic")
        self._flows: dict[FlowKey, ClassicFlow] = {}  # type: ignore[assignment]
        self._outbox: list[GeneratedAck] = []
        self.stats.update({"premature": 0, "local_timeouts": 0, "acks_generated": 0})

    # ---- placement -----------------------------------------------------------
    def wants(self, fields: AspanFields, p_next: float, hop_index: int) -> bool:
        """Does this node cache the segment?  The placement policy decides (subclasses may fix it)."""
        return wants_cache(self.config, fields, p_next, hop_index)

    def _new_flow(self, flow: FlowKey) -> ClassicFlow:
        return self.flow_cls(flow_name(flow), self.scheme.initial_srtt, self.scheme.initial_rttvar)

    # ---- data path (snoop_data / snoop_insert) ---------------------------------
    def on_data(self, flow: FlowKey, seq: int, length: int, fields: AspanFields,
                p_next: float, hop_index: int, now: float, packet: Any) -> bool:
        st = self._admit(flow, now)
        if st is None:
            update_effort(fields, p_next, cached=False)   # no room for the flow: forwarded unsnooped
            return False
        ref = st.ref()
        useq = seq if ref is None else unwrap(ref, seq)
        end = useq + length
        if st.high_end is None or end > st.high_end:
            st.high_end = end
        cache = self.wants(fields, p_next, hop_index)
        if cache and st.last_ack is not None and end <= st.last_ack:
            cache = False                   # snoop_insert: already acknowledged
        if cache and useq not in st.meta and (
                len(st.cache) >= self.scheme.max_cached_segments or not self.has_room(length)):
            self.stats["cache_full"] += 1   # SNOOP_FULL: forward without caching
            self._log.cache_full(now, st.name, seq)
            if st.last_seen is None or useq > st.last_seen:
                st.last_seen = useq
            cache = False
        update_effort(fields, p_next, cached=cache)
        if not cache:
            return False
        if self._insert(st, useq, length, packet, now):
            st.timer = None                 # SNOOP_TAIL: restart the timer
        if st.timer is None and st.cache.seqs:
            self._arm(st, now)
        return True

    def _insert(self, st: ClassicFlow, useq: int, length: int, packet: Any, now: float) -> bool:
        """snoop_insert(); True (SNOOP_TAIL) when the local timer must restart."""
        entry = st.meta.get(useq)
        if entry is not None:               # cached before: a sender retransmission
            old = st.cache.entries[useq][0]
            if length > old:                # a longer copy (e.g. after a one-byte window probe)
                st.cache.add(useq, length, packet)
                self.cache_bytes += length - old
            entry.num_rxmit = 0
            entry.sender_rxmit = True
            entry.snd_time = now
            entry.rtx_time = None
            return True
        st.cache.add(useq, length, packet)
        st.meta[useq] = entry = CacheEntry(now)
        self.cache_bytes += length
        self.cache_segments += 1
        self.stats["cached"] += 1
        self._log.cache(now, self.cache_segments, self.cache_bytes, st.name)
        if st.last_seen is not None and useq < st.last_seen:
            if useq == st.tail():
                entry.sender_rxmit = True
            tail = st.tail()
            st.exp_from = tail if tail is not None else useq
            return True
        st.last_seen = useq
        return False

    # ---- ACK path (snoop_ack) ----------------------------------------------------
    def on_ack(self, flow: FlowKey, ack: int, now: float, *, window: int | None = None,
               snack: tuple[int, ...] = (), packet: Any = None) -> AckVerdict:
        st = self._flows.get(flow)
        if st is None:
            return AckVerdict()
        st.last_heard = st.last_active = now
        uack = self._unwrap_ack(st, ack)
        if st.last_ack is not None and uack < st.last_ack:
            return AckVerdict()             # case 1: out of order, pass on
        if st.last_ack is None or uack > st.last_ack:
            self._new_ack_classic(st, uack, now)
            return AckVerdict()
        return self._dupack_classic(st, uack, now)

    def _unwrap_ack(self, st: ClassicFlow, ack: int) -> int:
        ref = st.ref()
        return ack if ref is None else unwrap(ref, ack)

    def _new_ack_classic(self, st: ClassicFlow, uack: int, now: float) -> None:
        """Case 3: free, restart the timer, RTT sample, reset the dupack state."""
        snd_time = self._clean(st, uack, now)
        st.timer = None
        if st.cache.seqs:
            self._arm(st, now)
        if snd_time is not None:
            self._rtt_sample(st, now - snd_time)
        st.exp_dupacks = 0
        st.exp_from = st.tail() if st.cache.seqs else uack
        st.last_ack = uack

    def _clean(self, st: ClassicFlow, uack: int, now: float) -> float | None:
        """snoop_cleanbufs_(): free below ``uack``; the send time of the highest freed segment."""
        snd_time: float | None = None
        latest: float | None = None
        clean_rtt: float | None = None
        seqs = st.cache.seqs
        i = 0
        while i < len(seqs) and seqs[i] + st.cache.entries[seqs[i]][0] <= uack:
            e = st.meta.pop(seqs[i])
            snd_time = e.snd_time
            if latest is None or e.snd_time > latest:
                latest = e.snd_time
            if e.num_rxmit == 0 and not e.sender_rxmit:
                clean_rtt = now - e.snd_time
            elif (e.rtx_time is not None and st.min_rtt is not None
                  and now - e.rtx_time < st.min_rtt):
                self.stats["premature"] += 1
                self._emit(now, "premature", flow=st.name, seq=seqs[i] % SEQ_MOD,
                           after=round(now - e.rtx_time, 6), min_rtt=round(st.min_rtt, 6))
            i += 1
        if clean_rtt is not None and clean_rtt > 0 and (st.min_rtt is None or clean_rtt < st.min_rtt):
            st.min_rtt = clean_rtt
        if i:
            n, freed = st.cache.free_below(uack)
            self.cache_segments -= n
            self.cache_bytes -= freed
            self.stats["freed"] += n
            self._log.cache(now, self.cache_segments, self.cache_bytes, st.name)
        return self._sample_time(snd_time, latest)

    def _sample_time(self, highest: float | None, latest: float | None) -> float | None:
        """The send time the RTT sample is taken from: ns-2's, that of the highest freed segment."""
        return highest

    @staticmethod
    def awaited(st: ClassicFlow, uack: int) -> int | None:
        """The lowest cached segment if it holds byte ``uack`` (the one the receiver waits for).

        ns-2 numbers packets; in bytes a receiver may have taken part of a segment (a window
        edge cut it), so the awaited segment is the one covering ``uack``."""
        tail = st.tail()
        if tail is None or not tail <= uack < tail + st.cache.entries[tail][0]:
            return None
        return tail

    def _dupack_classic(self, st: ClassicFlow, uack: int, now: float) -> AckVerdict:
        """Case 2 of snoop_ack()."""
        tail = self.awaited(st, uack)
        if tail is None:
            return AckVerdict()             # don't have the packet: let it through
        entry = st.meta[tail]
        self.stats["hits"] += 1
        self._log.hit(now, st.name, tail % SEQ_MOD)
        if st.exp_dupacks == 0:             # not expecting it
            if st.thresh < self.scheme.rtx_thresh:
                st.thresh += 1
                return AckVerdict()
            st.thresh = 0
            if entry.sender_rxmit:
                return AckVerdict()         # the sender already resent it: its business
            above = sum(1 for s in st.cache.seqs if s >= st.exp_from)
            st.exp_dupacks = above - (self.scheme.rtx_thresh + 1)
            st.exp_from = tail + 1
            if entry.num_rxmit == 0:
                return self._resend_verdict(st, tail, now)
            return AckVerdict()
        if st.exp_dupacks > 0:
            st.exp_dupacks -= 1
            return self._suppress()
        if st.exp_dupacks == -1 and entry.num_rxmit < 2:
            return self._resend_verdict(st, tail, now)
        return AckVerdict()

    def _suppress(self, retransmit: list[Any] | None = None) -> AckVerdict:
        self.stats["suppressed"] += 1
        return AckVerdict(forward=False, retransmit=retransmit or [])

    def _resend_verdict(self, st: ClassicFlow, useq: int, now: float) -> AckVerdict:
        pkt = self._rxmit(st, useq, now)
        if pkt is None:
            return AckVerdict()             # over the limit: SNOOP_PROPAGATE
        return self._suppress([pkt])

    def _may_rxmit(self, st: ClassicFlow, useq: int, entry: CacheEntry) -> bool:
        return entry.num_rxmit < self.scheme.max_local_rxmit

    def _rxmit(self, st: ClassicFlow, useq: int, now: float) -> Any | None:
        """snoop_rxmit(): resend a cached segment (the packet), or None over the limit."""
        entry = st.meta[useq]
        if not self._may_rxmit(st, useq, entry):
            return None
        entry.snd_time = now
        entry.rtx_time = now
        entry.num_rxmit += 1
        self.stats["local_retransmissions"] += 1
        self._arm(st, now)
        return st.cache.entries[useq][1]

    # ---- RTT and timer -------------------------------------------------------
    def timeout(self, st: ClassicFlow) -> float:
        """ns-2 timeout(): max(srtt + 4 rttvar, SnoopTick)."""
        return max(st.srtt + 4 * st.rttvar, self.scheme.snoop_tick)

    def _rtt_sample(self, st: ClassicFlow, rtt: float) -> None:
        """ns-2 snoop_rtt() (paper 000, eq. (1))."""
        if rtt <= 0:
            return
        g = self.scheme.rtt_gain
        st.srtt = g * st.srtt + (1 - g) * rtt
        delta = abs(rtt - st.srtt)
        st.rttvar = g * delta + (1 - g) * st.rttvar if st.rttvar != 0 else delta

    def _arm(self, st: ClassicFlow, now: float) -> None:
        st.timer = now + self.timeout(st)
        st.timer_armed = now

    def next_timer(self) -> float | None:
        best: float | None = None
        for st in self._flows.values():
            if st.timer is not None and (best is None or st.timer < best):
                best = st.timer
        return best

    def on_timer(self, now: float) -> list[Any]:
        out: list[Any] = []
        for st in self._flows.values():
            if st.timer is not None and st.timer <= now:
                out.extend(self._expire(st, now))
        return out

    def _expire(self, st: ClassicFlow, now: float) -> list[Any]:
        """SnoopRxmitHandler::handle(): resend the lowest cached segment if the receiver waits for it."""
        st.timer = None
        tail = st.tail() if st.last_ack is None else self.awaited(st, st.last_ack)
        if tail is None:
            return []
        pkt = self._rxmit(st, tail, now)
        if pkt is None:
            return []
        st.exp_from = tail + 1
        self.stats["local_timeouts"] += 1
        self._emit(now, "local_rto", flow=st.name, seq=tail % SEQ_MOD,
                   rto=round(st.timer - now if st.timer is not None else 0.0, 6))
        return [pkt]

    # ---- generated ACKs ------------------------------------------------------
    def _generate(self, st: ClassicFlow, template: Any, uack: int, window: int, reason: str) -> None:
        self.stats["acks_generated"] += 1
        self._outbox.append(GeneratedAck(template, uack % SEQ_MOD, max(0, min(window, SEQ_MOD - 1)),
                                         reason))

    def take_generated(self) -> list[GeneratedAck]:
        out, self._outbox = self._outbox, []
        return out


class MultihopSnoopAgent(ClassicSnoopAgent):
    """Classic Snoop on every forwarding node (paper 000, Sec. 4, Figure 8).

    The same rules as :class:`ClassicSnoopAgent`; placement is fixed: every forwarding
    node caches (hop index >= 1), whatever ``snoop.policy`` says.  Paper 000's fix is the
    higher minimum local RTO, ``snoop_tick`` = 1 s.
    """

    def wants(self, fields: AspanFields, p_next: float, hop_index: int) -> bool:
        return hop_index >= 1
