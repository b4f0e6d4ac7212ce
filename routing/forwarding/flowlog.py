"""Per-packet log lines bounded by the configured flows (issue 27, item 2; docs/LOGS.md, "Traffic no
configured flow explains").

A node logs a line for every data segment it transmits (``tx``), every change of its snoop cache
(``cache``), every segment it could not cache (``cache_full``), every cache hit and every other
per-packet event of the snoop schemes and data planes (``ack_gen``, ``premature``, ``snack_rtx``,
``slack``, ``local_rto``, ``rtx``).  For the flows of the experiment these lines are the record the
plots are made of, and they are written one by one as always.  Traffic that no configured flow
explains (a forged segment of a flow nobody started, with the MAC off) must not be able to fill a
disk at line rate: its lines go through the one line-rate mechanism of the drop lines
(routing.forwarding.step.DropLines), per event name.  The first ``DROP_LINES_PER_S`` of an event in a second
are written as they come; the rest of that second become one line
``{"ev":"unexplained","event":E,"count":N,"since":T0}``.  :attr:`FlowLog.counts` keeps the exact
number of such events (node_stop ``unexplained``, :func:`exact_totals`).

Drop lines are not this module's: the step limits them per reason whatever the flow.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aspan.events import EventSink, EventWriter
from routing.forwarding.step import DROP_LINES_PER_S, DROP_REASONS, DropLines, ForwardingStep

#: The longest line of a per-packet event or a drop (a 16-character node name, the widest flow name
#: ``255.255.255.255:65535>255.255.255.255:65535``, 32-bit numbers, a malformed datagram's detail):
#: tests/routing/forwarding/test_flowlog.py checks the lines it writes against it.
MAX_LINE_BYTES = 320
#: The names whose lines traffic no configured flow explains can cause, each at most DROP_LINES_PER_S
#: lines and one count line a second: the per-packet events (tx, cache, cache_full, hit, ack_gen,
#: premature, snack_rtx, slack, local_rto, rtx) and the drop reasons (routing.forwarding.step.DROP_REASONS).
PER_PACKET_EVENTS = ("tx", "cache", "cache_full", "hit", "ack_gen", "premature", "snack_rtx", "slack",
                     "local_rto", "rtx")
LINE_NAMES = len(PER_PACKET_EVENTS) + len(DROP_REASONS)
#: The documented bound: bytes per second of log that such a flood can cause, whatever its rate
#: (each name: DROP_LINES_PER_S lines and one count line a second).  About 141 kB/s.
FLOOD_LOG_BYTES_PER_S = LINE_NAMES * (DROP_LINES_PER_S + 1) * MAX_LINE_BYTES


class FlowLog(EventWriter):
    """A node's event sink around ``inner`` (its EventLog): the per-packet lines of the flows
    :meth:`explains` pass through; those of any other flow are counted and limited per event name
    and second, as drops are."""

    def __init__(self, inner: EventSink, configured: Iterable[str]) -> None:
        self.inner = inner
        #: the data direction ``src:sport>dst:dport`` of every flow of the experiment
        self.configured = frozenset(configured)
        #: event name -> events of flows no configured flow explains, exact (logged or not)
        self.counts: dict[str, int] = {}
        self._lines = DropLines(lambda now, ev, count, since: inner.emit(now, "unexplained", event=ev,
                                                                        count=count, since=since))

    def explains(self, flow: str) -> bool:
        """Is a packet of data flow ``flow`` explained by a configured flow?  Yes when ``flow`` is the
        data direction of a flow of the experiment (``experiments.build.configured_flows``), whichever
        node this is on the flow's path (routes may change); its ACKs are named by the same direction.
        Without the MAC, a forger who copies a configured flow's addresses and ports is not told apart:
        that is what ``auth.mac`` is for."""
        return flow in self.configured

    def _own_line(self, now: float, ev: str, flow: str | None) -> bool:
        """Does this event get its own line?  Always when it is of no flow or of an explained one;
        else it is counted, and only the first DROP_LINES_PER_S of its name in a second are."""
        if flow is None or flow in self.configured:
            return True
        self.counts[ev] = self.counts.get(ev, 0) + 1
        return self._lines.one_line(now, ev)

    # ---- the per-packet events -----------------------------------------------------
    def tx(self, now: float, flow: str, seq: int, length: int, kind: str, hop: int | None) -> None:
        if flow in self.configured or self._own_line(now, "tx", flow):
            self.inner.tx(now, flow, seq, length, kind, hop)

    def cache(self, now: float, segments: int, nbytes: int, flow: str | None = None) -> None:
        if self._own_line(now, "cache", flow):
            self.inner.cache(now, segments, nbytes)

    def cache_full(self, now: float, flow: str, seq: int) -> None:
        if self._own_line(now, "cache_full", flow):
            self.inner.cache_full(now, flow, seq)

    def hit(self, now: float, flow: str, seq: int) -> None:
        if self._own_line(now, "hit", flow):
            self.inner.hit(now, flow, seq)

    def ack_gen(self, now: float, flow: str, ack: int, window: int, reason: str) -> None:
        if self._own_line(now, "ack_gen", flow):
            self.inner.ack_gen(now, flow, ack, window, reason)

    def emit(self, now: float, ev: str, **fields: Any) -> None:
        """Any other event: one with a ``flow`` (the schemes' ``premature``, ``snack_rtx``, ``slack``,
        ``local_rto``, the kernel's ``rtx``, the TCP apps' events) is limited when no configured flow
        explains it; the rest (ETX, the node's life) pass."""
        if self._own_line(now, ev, fields.get("flow")):
            self.inner.emit(now, ev, **fields)

    def drop(self, now: float, reason: str, ptype: str | None = None, flow: str | None = None,
             seq: int | None = None, ack: int | None = None, length: int | None = None, **detail: Any) -> None:
        """Drops pass: the step limits their lines per reason (routing.forwarding.step.ForwardingStep.drop)."""
        self.inner.drop(now, reason, ptype, flow, seq, ack, length, **detail)

    def flush_counts(self, now: float, final: bool = False) -> None:
        """The count lines of every event name whose second is over (of all when ``final``)."""
        self._lines.flush(now, final)


def exact_totals(step: ForwardingStep) -> dict[str, dict[str, int]]:
    """What node_stop says of a node's forwarding layer, exact whatever the log's line rate: drops per
    reason and, when the node heard traffic no configured flow explains, its data transmissions per kind
    (``tx``: the ``tx`` lines no longer count them all) and that traffic's events per name
    (``unexplained``).  A run without such traffic logs what it always did."""
    totals = {"drops": dict(step.drops)}
    log = step.log
    if isinstance(log, FlowLog) and log.counts:
        totals.update(tx=dict(step.tx), unexplained=dict(log.counts))
    return totals
