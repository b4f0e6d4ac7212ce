"""The events a node logs about packets, one typed writer each (docs/LOGS.md has their meaning).

The forwarding step (routing.forwarding.step) and the snoop agents log through an
:class:`EventSink`: one method per packet event, with the event's fields as its
parameters, so every data plane writes the same event with the same fields.
Events that are not about packets (TCP, ETX, a node's lifecycle) go through the
generic ``emit(now, ev, **fields)``.

:class:`EventWriter` defines each packet event once, on top of ``emit``; a log
file (routing.drivers.eventlog.EventLog) overrides the per-packet ones (``tx`` and
``cache``, written once or twice for every data packet) with a faster writer of
the same line, and a test checks that both give the same record.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

Emit = Callable[..., None]


class EventSink(Protocol):
    def emit(self, now: float, ev: str, **fields: Any) -> None: ...
    def tx(self, now: float, flow: str, seq: int, length: int, kind: str, hop: int | None) -> None: ...
    def cache(self, now: float, segments: int, nbytes: int, flow: str | None = None) -> None: ...
    def cache_full(self, now: float, flow: str, seq: int) -> None: ...
    def hit(self, now: float, flow: str, seq: int) -> None: ...
    def ack_gen(self, now: float, flow: str, ack: int, window: int, reason: str) -> None: ...
    def drop(self, now: float, reason: str, ptype: str | None = None, flow: str | None = None,
             seq: int | None = None, ack: int | None = None, length: int | None = None, **detail: Any) -> None: ...
    def flush_counts(self, now: float, final: bool = False) -> None: ...


class EventWriter:
    """Every packet event written through :meth:`emit` (subclasses provide ``emit``)."""

    def emit(self, now: float, ev: str, **fields: Any) -> None:
        raise NotImplementedError

    def tx(self, now: float, flow: str, seq: int, length: int, kind: str, hop: int | None) -> None:
        """One transmission of a data segment: ``kind`` send | fwd | local; ``hop`` its hop index (None: unknown)."""
        self.emit(now, "tx", flow=flow, seq=seq, len=length, kind=kind, hop=hop)

    def cache(self, now: float, segments: int, nbytes: int, flow: str | None = None) -> None:
        """The snoop cache's size after a change; ``flow``, when one flow's packet changed it, is not
        written (the cache is the node's) but tells routing.forwarding.flowlog whose line it is."""
        self.emit(now, "cache", segments=segments, bytes=nbytes)

    def cache_full(self, now: float, flow: str, seq: int) -> None:
        """A segment the policy wanted cached was not: the cache bound was reached."""
        self.emit(now, "cache_full", flow=flow, seq=seq)

    def hit(self, now: float, flow: str, seq: int) -> None:
        """A duplicate ACK whose missing segment was in the cache."""
        self.emit(now, "hit", flow=flow, seq=seq)

    def ack_gen(self, now: float, flow: str, ack: int, window: int, reason: str) -> None:
        """A new ACK this node sent toward the data sender (ACK-all, SLACK)."""
        self.emit(now, "ack_gen", flow=flow, ack=ack, window=window, reason=reason)

    def drop(self, now: float, reason: str, ptype: str | None = None, flow: str | None = None,
             seq: int | None = None, ack: int | None = None, length: int | None = None, **detail: Any) -> None:
        """A packet this node did not pass on; the fields it does not know are left out."""
        fields: dict[str, Any] = {"reason": reason}
        if ptype is not None:
            fields["ptype"] = ptype
        if flow is not None:
            fields["flow"] = flow
        if seq is not None:
            fields["seq"] = seq
        if ack is not None:
            fields["ack"] = ack
        if length is not None:
            fields["len"] = length
        fields.update(detail)
        self.emit(now, "drop", **fields)

    def flush_counts(self, now: float, final: bool = False) -> None:
        """Write the count lines of events aggregated per second (routing.forwarding.flowlog.FlowLog; none here)."""
        return None


class CallbackSink(EventWriter):
    """Every event as ``emit(now, ev, **fields)`` of a plain function (tests' recorders, the sim's log)."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit  # type: ignore[method-assign]


class NullSink(EventWriter):
    """Logs nothing."""

    def emit(self, now: float, ev: str, **fields: Any) -> None:
        return None

    def tx(self, now: float, flow: str, seq: int, length: int, kind: str, hop: int | None) -> None:
        return None

    def cache(self, now: float, segments: int, nbytes: int, flow: str | None = None) -> None:
        return None


def as_sink(log: "EventSink | Emit | None") -> EventSink:
    """``log`` as a sink: a sink as it is, a function through :class:`CallbackSink`, None as :class:`NullSink`."""
    if log is None:
        return NullSink()
    if hasattr(log, "tx"):
        return log  # type: ignore[return-value]
    return CallbackSink(log)  # type: ignore[arg-type]
