"""SNACK-Snoop: the snoop half of SNACK-NS (paper 002, Sun, Li, Liew), FH -> MH direction.

The receiver (``tcp.snack``) reports the segments it misses, up to six, in a SNACK option
on its ACKs.  At a caching node (paper 002, Sec. III-B, "Transmissions from FH to MH"):

* each reported sequence number that is cached here gets a report count; when the count
  reaches ``snack_threshold`` (2 in the paper's simulations) the segment is retransmitted
  locally at once and the count becomes -1: it stays negative while the loss is still
  reported (no second SNACK retransmission; the local timer remains for the lowest one);
* those entries are taken off the ACK before it is forwarded (the SNACK travels "only
  between BS and MH"); entries for segments this node never cached stay on it, for the
  next snoop node upstream or for the sender's SNACK-TCP;
* a duplicate ACK whose missing segment is cached here is held back ("suppresses
  duplicate ACKs that may cause redundant transmissions"), unless entries for upstream
  losses remain on it: then it goes on carrying only those.
* a SNACK retransmission counts against ``max_local_rxmit`` like any local retransmission;
  an entry this node may no longer resend stays on the ACK for upstream.

ACKs without SNACK entries and the local timer follow classic Snoop
(:class:`aspan.snoop_classic.ClassicSnoopAgent`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aspan.agent import AckVerdict, FlowKey
from aspan.cache import unwrap
from aspan.snoop_classic import SEQ_MOD, ClassicFlow, ClassicSnoopAgent


@dataclass(slots=True)
class SnackFlow(ClassicFlow):
    reports: dict[int, int] = field(default_factory=dict)   # unwrapped seq -> count, or -1 once resent


class SnackSnoopAgent(ClassicSnoopAgent):
    """Classic Snoop plus the SNACK rules above."""

    flow_cls = SnackFlow
    reads_ack_details = True     # the SNACK entries

    def on_ack(self, flow: FlowKey, ack: int, now: float, *, window: int | None = None,
               snack: tuple[int, ...] = (), packet: Any = None) -> AckVerdict:
        if not snack:
            return super().on_ack(flow, ack, now, window=window, snack=snack, packet=packet)
        st = self._flows.get(flow)
        if st is None:
            return AckVerdict()
        assert isinstance(st, SnackFlow)
        st.last_heard = st.last_active = now      # an ACK keeps the flow alive (idle expiry, issue 13)
        uack = self._unwrap_ack(st, ack)
        if st.last_ack is not None and uack < st.last_ack:
            return AckVerdict()
        new = st.last_ack is None or uack > st.last_ack
        if new:
            self._new_ack_classic(st, uack, now)
            for s in [s for s in st.reports if s < uack]:
                del st.reports[s]
        kept: list[int] = []
        resend: list[Any] = []
        for s32 in snack:
            s = unwrap(uack, s32)
            if s < uack:
                continue                     # stale: already acknowledged
            if s not in st.meta:
                kept.append(s32)             # not cached here: for upstream
                continue
            count = st.reports.get(s, 0)
            if count < 0:
                continue                     # resent already; the record stays negative
            count += 1
            if count >= self.scheme.snack_threshold:
                pkt = self._rxmit(st, s, now)
                if pkt is None:
                    kept.append(s32)         # over the local limit: let upstream recover it
                    continue
                resend.append(pkt)
                self._emit(now, "snack_rtx", flow=st.name, seq=s % SEQ_MOD)
                count = -1
            st.reports[s] = count
        out = tuple(kept)
        if new:
            return AckVerdict(retransmit=resend, snack=out)
        here = self.awaited(st, uack) is not None
        if here:
            self.stats["hits"] += 1
            self._log.hit(now, st.name, uack % SEQ_MOD)
        if here and not kept:
            self.stats["suppressed"] += 1
            return AckVerdict(forward=False, retransmit=resend, snack=out)
        return AckVerdict(retransmit=resend, snack=out)
