"""SLACK, Slow-Acknowledgement (paper 003, *Snoop for Linux*, Sec. 6).

During a disconnection every local retransmission fails; if it lasts long enough the
sender times out and restarts from one segment.  SLACK has the snoop node "use the last
ACK propagated to the Fixed Host" as three duplicate ACKs, so the sender halves cwnd by
fast retransmit / fast recovery instead.

The paper gives no detection rule; ours: when a flow's local retransmission timer
expires and *no* ACK of that flow (new or duplicate) has been heard after the timer was
set, the receiver side is silent, not just lossy (a random loss makes the segments behind
it draw duplicate ACKs).  The node then sends three copies of the last ACK it forwarded
toward the sender (same ACK number and window, so the sender counts them as duplicate
ACKs) and goes on with its local retransmission as classic Snoop does.  With the ns-2
SnoopTick of 0.1 s this happens about 0.1 s into the silence, before a sender RTO of at
least 0.2 s.

Once per disconnection: after a release the node releases again only once the ACK clock
has run again (two ACKs of the flow less than one local RTO apart).  After a disconnection
that swallowed a window, classic Snoop resends the lost segments one per local timeout
(nothing above them reached the receiver, so no dupacks come); each of those recoveries is
followed by a silent timer too, and re-releasing there would halve the sender's window
again and again.

A disconnection longer than the sender's RTO after its fast retransmit still ends in a
timeout; a small window (one segment in flight lost downstream) also looks silent, so
SLACK then halves cwnd where classic Snoop would have recovered quietly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aspan.agent import AckVerdict, FlowKey
from aspan.snoop_classic import SEQ_MOD, ClassicFlow, ClassicSnoopAgent

SLACK_DUPACKS = 3


@dataclass(slots=True)
class SlackFlow(ClassicFlow):
    ack_template: Any = None       # the last ACK forwarded toward the sender
    ack_value: int = 0             # its 32-bit ACK number
    ack_window: int = 0            # its window
    armed: bool = True             # may release (again): the ACK clock ran since the last release


class SlackSnoopAgent(ClassicSnoopAgent):
    """Classic Snoop plus the SLACK release."""

    flow_cls = SlackFlow
    reads_ack_details = True     # the window and the ACK itself (the template of new ACKs)
    generates_acks = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stats["slack_releases"] = 0

    def on_ack(self, flow: FlowKey, ack: int, now: float, *, window: int | None = None,
               snack: tuple[int, ...] = (), packet: Any = None) -> AckVerdict:
        st = self._flows.get(flow)
        if isinstance(st, SlackFlow) and st.last_heard is not None \
                and now - st.last_heard < self.timeout(st):
            st.armed = True                 # ACKs at the normal pace: the ACK clock runs
        verdict = super().on_ack(flow, ack, now, window=window, snack=snack, packet=packet)
        if st is not None and verdict.forward and packet is not None:
            assert isinstance(st, SlackFlow)
            st.ack_template = packet
            st.ack_value = ack
            st.ack_window = window if window is not None else 0
        return verdict

    def _expire(self, st: ClassicFlow, now: float) -> list[Any]:
        assert isinstance(st, SlackFlow)
        silent = st.last_heard is None or st.last_heard <= st.timer_armed
        if silent and st.armed and st.cache.seqs and st.ack_template is not None:
            st.armed = False
            self.stats["slack_releases"] += 1
            self._emit(now, "slack", flow=st.name, ack=st.ack_value % SEQ_MOD)
            for _ in range(SLACK_DUPACKS):
                self._generate(st, st.ack_template, st.ack_value, st.ack_window, "slack")
        return super()._expire(st, now)
