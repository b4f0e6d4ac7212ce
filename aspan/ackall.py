"""ACK-all Modified Snoop (paper 004, Manutsayanon and Lertwatechakul, "Modified SNOOP").

Paper 004 adds two rules to Snoop at the snoop node:

1. "acknowledge all received packets in manner of MH": the node answers every data
   segment it caches with an ACK to the sender, so the sender's window grows at the pace
   of the shorter sender-to-snoop round trip;
2. "buffers DUPACK that would cause congestion control process ... if the packet
   intended by the DUPACK would come in time, the DUPACK will be discarded".

How this testbed does it (the paper's flowcharts are figures we do not have):

* the ACK carries the end of the data this node holds in sequence: everything acknowledged
  by the receiver plus the cached segments contiguous with it (only cached data is
  acknowledged, so every byte acknowledged on the receiver's behalf can be resent from
  here).  A segment above a hole (lost upstream) draws a duplicate ACK, as the receiver
  would send; the sender's fast retransmit repairs upstream losses.  A retransmission of
  data already acknowledged is answered too (the acknowledgment may have been lost, and
  the receiver's own ACKs for it are held back).
* the window it advertises never moves the receiver's right edge (last receiver ACK plus
  its window): window = edge - ACK, and data beyond that edge is not acknowledged; when the node advertised less than two segments and a
  receiver ACK opens the edge, it sends a window update (a different window, so the sender
  does not count it as a duplicate ACK).
* ACKs from the receiver at or below what the node already acknowledged are held back;
  higher ones go on.  Duplicate ACKs from the receiver below that point are always held
  back: the sender's SND.UNA is already past them, so releasing them "as the normal
  process" after a wait would be ignored by the sender anyway; recovery is the node's.
  Local retransmission follows classic Snoop (dupacks and the local timer), without the
  limit on local retransmissions for data the node acknowledged.

**This breaks TCP's end-to-end semantics**: the sender is told data arrived that the
receiver may never get (if this node fails or its cache is lost, the data is gone while
the sender believes it delivered), and the sender's RTT, RTO and congestion window no
longer describe the path to the receiver.  Only the FIN is acknowledged end to end.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aspan.agent import AckVerdict, FlowKey
from aspan.cache import unwrap
from aspan.fields import AspanFields
from aspan.snoop_classic import CacheEntry, ClassicFlow, ClassicSnoopAgent


@dataclass(slots=True)
class AckAllFlow(ClassicFlow):
    template: Any = None            # the receiver's last ACK (addresses, ports, sequence number)
    acked_to: int | None = None     # highest ACK the sender was given (unwrapped)
    edge: int | None = None         # receiver's right window edge (unwrapped)
    last_sent: int | None = None    # ACK value of the last ACK the sender was sent (unwrapped)
    adv_window: int = 0             # its window
    seg_len: int = 0                # largest segment seen (the sender's MSS, for window updates)
    caching: bool = False           # this node caches this flow (ACK-all applies only then)


class AckAllSnoopAgent(ClassicSnoopAgent):
    """Classic Snoop plus ACK-all and held-back dupacks (rules above)."""

    flow_cls = AckAllFlow
    reads_ack_details = True     # the window and the ACK itself (the template of new ACKs)
    generates_acks = True

    def on_data(self, flow: FlowKey, seq: int, length: int, fields: AspanFields,
                p_next: float, hop_index: int, now: float, packet: Any) -> bool:
        cached = super().on_data(flow, seq, length, fields, p_next, hop_index, now, packet)
        st = self._flows.get(flow)
        if st is None:
            return cached                   # refused: no room for the flow's state (issue 13)
        assert isinstance(st, AckAllFlow)
        if length > st.seg_len:
            st.seg_len = length
        st.caching = st.caching or cached
        if not st.caching or st.template is None or st.acked_to is None or st.edge is None:
            return cached                   # not our flow, or nothing to acknowledge with (yet)
        if cached:
            self._advance(st)
            self._ack_sender(st, "ackall")
        elif unwrap(st.acked_to, seq) + length <= st.acked_to:
            # A retransmission of data acknowledged already (our ACK was lost): answer it as
            # the receiver would, or the sender would wait for ever (its ACKs are held back).
            self._ack_sender(st, "ackall")
        return cached

    def _advance(self, st: AckAllFlow) -> None:
        """Move ``acked_to`` over the cached segments contiguous with it that lie within the
        receiver's window (data beyond its right edge, e.g. a zero-window probe, the receiver
        would discard: it is never acknowledged for it)."""
        assert st.acked_to is not None
        entries = st.cache.entries
        edge = st.edge
        a = st.acked_to
        while a in entries and (edge is None or a + entries[a][0] <= edge):
            a += entries[a][0]
        st.acked_to = a

    def _ack_sender(self, st: AckAllFlow, reason: str, window: int | None = None) -> None:
        """ACK ``acked_to`` to the sender.  A repeated ACK value keeps the last window, so the
        sender counts it as a duplicate ACK (RFC 5681 sec. 2), as a receiver's would be."""
        assert st.acked_to is not None and st.edge is not None
        if window is None:
            window = st.adv_window if st.last_sent == st.acked_to else max(0, st.edge - st.acked_to)
        st.last_sent = st.acked_to
        st.adv_window = window
        self._generate(st, st.template, st.acked_to, window, reason)

    def on_ack(self, flow: FlowKey, ack: int, now: float, *, window: int | None = None,
               snack: tuple[int, ...] = (), packet: Any = None) -> AckVerdict:
        verdict = super().on_ack(flow, ack, now, window=window, snack=snack, packet=packet)
        st = self._flows.get(flow)
        if st is None or not isinstance(st, AckAllFlow) or not st.caching:
            return verdict                  # not a caching node of this flow: classic Snoop only
        uack = self._unwrap_ack(st, ack)
        if packet is not None:
            st.template = packet
        old_edge = st.edge
        if window is not None and (st.edge is None or uack + window > st.edge):
            st.edge = uack + window
        if st.acked_to is None or uack > st.acked_to:
            st.acked_to = uack              # the receiver is ahead of what we acknowledged
            self._advance(st)
            if st.acked_to == uack or st.edge is None:
                st.last_sent = uack
                st.adv_window = window if window is not None else 0
                return verdict              # its ACK goes on as it is
            self._ack_sender(st, "ackall")  # cached data beyond it: acknowledge that instead
        elif (st.edge is not None and old_edge is not None and st.edge > old_edge
                and st.adv_window < 2 * max(st.seg_len, 1)
                and st.edge - st.acked_to > st.adv_window):
            self._ack_sender(st, "window", st.edge - st.acked_to)
        # The sender has (at least) this acknowledgment already: hold the ACK back (rule 2).
        if verdict.forward:
            self.stats["suppressed"] += 1
        return AckVerdict(forward=False, retransmit=verdict.retransmit)

    def _sample_time(self, highest: float | None, latest: float | None) -> float | None:
        """RTT sample from the most recent transmission among the freed segments.

        ns-2 samples the highest freed segment; when a hole is filled the cumulative ACK jumps
        over segments that waited behind it, and with ACK-all keeping the sender's window open
        those waits are long: the local RTO fed on them grew to tens of seconds in our runs
        (and with it the local recovery it times).  The latest transmission is the one that
        filled the hole, which is what paper 004 waits for ("wait until RTT", Figure 4)."""
        return latest

    def _may_rxmit(self, st: ClassicFlow, useq: int, entry: CacheEntry) -> bool:
        assert isinstance(st, AckAllFlow)
        if st.acked_to is not None and useq < st.acked_to:
            return True                     # acknowledged on the receiver's behalf: never give up
        return super()._may_rxmit(st, useq, entry)
