"""Probe-based link delivery-ratio estimation (A-SPAN paper, Design: "ETX Algorithm for Link Quality").

Every node sends each neighbour about ten probes a second, numbered 0, 1, 2, ...  The receiver
keeps a record of the last ``W`` (default 1000, the paper's window) sequence numbers and counts
how many of them it received.  Each probe also carries the ratio its sender measured for the
probe's receiver, so a node learns the *forward* ratio of its own outgoing link from the
neighbour's reports.

No I/O and no clock here: time is always an argument ``now`` (seconds).

Window rules (:class:`ProbeWindow`)
-----------------------------------
* The window holds the ``W`` sequence numbers ``(highest - W, highest]`` where ``highest`` is
  the highest sequence number heard, but never reaches below the first sequence number heard
  (``origin``): probes the neighbour sent before this node started listening are not link
  losses (nodes do not start at exactly the same moment).
* A gap counts the missing sequence numbers as lost (paper: "if a node does not receive a packet
  or receives some packet out of order it counts the missed packets as lost").
* A late probe (below ``highest``, still in the window, so far counted lost) is credited once as
  received: reordering is not loss.  A duplicate (already credited) is ignored.  A probe older
  than the window is ignored.  Nothing is ever counted twice.
* A sequence number far below the window (``seq < highest - W``) means the neighbour restarted
  (its numbering began again at 0): the window is reset and that probe starts a new record.
  A straggler exactly ``W`` behind (``seq == highest - W``) is merely older than the window
  and ignored.  A real probe delayed by ``W`` probe periods (100 s at 10 probes/s) does not
  happen, so in practice only restarts jump that far.
* Before ``W`` sequence numbers have been covered, :meth:`ProbeWindow.ratio` depends on
  ``before_full``:

  - ``"partial"`` (default): received / sequence numbers covered so far; ``initial``
    (1.0 by default) while nothing has been heard.
  - ``"optimistic"``: 1.0 until ``W`` sequence numbers have been covered, then the real ratio.
  - ``"pessimistic"``: received / ``W``, the paper's literal "received divided by 1000"
    (so a fresh link starts near 0 and climbs for ``W`` probes).

Cost: a ``bytearray`` ring of ``W`` flags (slot ``seq % W``) and a running count; each sequence
number enters and leaves the ring once, so a probe costs O(1) amortised (a forward jump of more
than ``W`` clears the ring in one go).
"""
from __future__ import annotations

import math
from typing import Any, Iterable

__all__ = ["BEFORE_FULL_MODES", "QUALITY_MODES", "ProbeWindow", "LinkEstimator", "EtxTable"]

BEFORE_FULL_MODES = ("partial", "optimistic", "pessimistic")
QUALITY_MODES = ("forward", "etx")

UNKNOWN = -1.0  # reported ratio meaning "not measured yet" (wire format: probe ratio -1)


def _check_window(window: int) -> int:
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be an int >= 1, got {window!r}")
    return window


def _check_before_full(before_full: str) -> str:
    if before_full not in BEFORE_FULL_MODES:
        raise ValueError(f"before_full must be one of {BEFORE_FULL_MODES}, got {before_full!r}")
    return before_full


def _check_ratio(name: str, value: float) -> float:
    # `not (0 <= x <= 1)` also rejects NaN.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


class ProbeWindow:
    """Reception record of the last ``window`` probe sequence numbers from one neighbour.

    See the module docstring for the rules (gaps, late probes, duplicates, restarts,
    ``before_full``).  ``initial`` is the ratio reported in ``"partial"`` mode while nothing has
    been heard.
    """

    __slots__ = ("window", "before_full", "initial", "_flags", "_received", "_highest", "_origin")

    def __init__(self, window: int = 1000, before_full: str = "partial", initial: float = 1.0) -> None:
        self.window = _check_window(window)
        self.before_full = _check_before_full(before_full)
        self.initial = _check_ratio("initial", initial)
        self._flags = bytearray(self.window)   # slot seq % W: 1 if seq received
        self._received = 0                     # number of 1 flags
        self._highest = -1                     # highest seq heard; -1: nothing heard
        self._origin = 0                       # first seq heard since (re)start

    # -- state ---------------------------------------------------------------------------------
    @property
    def received(self) -> int:
        """Receptions counted within the window."""
        return self._received

    @property
    def expected(self) -> int:
        """Sequence numbers covered by the window so far (``<= window``; 0 if nothing heard)."""
        if self._highest < 0:
            return 0
        return min(self._highest - self._origin + 1, self.window)

    @property
    def highest(self) -> int | None:
        """Highest sequence number heard since the last (re)start, or None."""
        return None if self._highest < 0 else self._highest

    @property
    def heard(self) -> bool:
        """True once a probe has been counted since the last (re)start."""
        return self._highest >= 0

    # -- updates -------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget everything (as if newly created)."""
        if self._received:
            self._flags = bytearray(self.window)
        self._received = 0
        self._highest = -1
        self._origin = 0

    def on_probe(self, seq: int) -> None:
        """Record the reception of probe ``seq`` (a non-negative int)."""
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise ValueError(f"seq must be an int >= 0, got {seq!r}")
        w = self.window
        flags = self._flags
        high = self._highest
        if high < 0:                                   # first probe since (re)start
            self._origin = self._highest = seq
            flags[seq % w] = 1
            self._received = 1
            return
        if seq > high:                                 # in order, maybe after a gap
            if seq - high >= w:                        # everything in the window falls out
                if self._received:
                    self._flags = flags = bytearray(w)
                self._received = 0
            else:
                # Slots high+1 .. seq held seq numbers that now leave the window; the new
                # ones among them except `seq` itself are lost (the gap rule).
                lo, hi = (high + 1) % w, seq % w
                if lo <= hi:
                    leaving = flags.count(1, lo, hi + 1)
                    flags[lo:hi + 1] = bytes(hi + 1 - lo)
                else:                                  # the range wraps around the ring
                    leaving = flags.count(1, lo) + flags.count(1, 0, hi + 1)
                    flags[lo:] = bytes(w - lo)
                    flags[:hi + 1] = bytes(hi + 1)
                self._received -= leaving
            flags[seq % w] = 1
            self._received += 1
            self._highest = seq
            return
        if seq > high - w:                             # inside the window: late or duplicate
            if seq >= self._origin and not flags[seq % w]:
                flags[seq % w] = 1                     # late probe, counted lost so far: credit once
                self._received += 1
            return                                     # duplicate, or before the first heard
        if seq == high - w:                            # just older than the window: ignore
            return
        self.reset()                                   # far backwards: the neighbour restarted
        self.on_probe(seq)

    # -- estimate ------------------------------------------------------------------------------
    def ratio(self) -> float:
        """Delivery ratio over the window, per ``before_full`` (see the module docstring)."""
        expected = self.expected
        if self.before_full == "pessimistic":
            return self._received / self.window
        if self.before_full == "optimistic":
            return self._received / self.window if expected >= self.window else 1.0
        if expected == 0:                              # "partial", nothing heard yet
            return self.initial
        return self._received / expected

    def __repr__(self) -> str:
        return (f"ProbeWindow(window={self.window}, before_full={self.before_full!r}, "
                f"received={self._received}, expected={self.expected}, highest={self.highest})")


class LinkEstimator:
    """Everything a node knows about its link to one neighbour.

    * :meth:`reverse`: fraction of the neighbour's probes received here (:attr:`probes`, a
      :class:`ProbeWindow`).
    * :meth:`forward`: fraction of this node's probes the neighbour received, as last reported in
      the neighbour's probes; ``initial`` until a report arrives.  A report of -1 (the neighbour
      has not heard us since it started) keeps the previous value.
    * :meth:`quality`: mode ``"forward"`` is the paper's variant, one direction only, because
      data goes over UDP without a link-layer ACK (paper, Design: "This algorithm is a little
      different from the original ETX algorithm ..."); mode ``"etx"`` is De Couto et al.'s
      df x dr.

    Limitation: the window only moves when a probe arrives, so a link that goes completely
    silent keeps its last estimate (the missing probes are counted as lost when the next one
    arrives).  Use :attr:`last_heard` to detect a silent neighbour.
    """

    def __init__(self, window: int = 1000, mode: str = "forward", before_full: str = "partial",
                 initial: float = 1.0) -> None:
        if mode not in QUALITY_MODES:
            raise ValueError(f"mode must be one of {QUALITY_MODES}, got {mode!r}")
        self.mode = mode
        self.initial = _check_ratio("initial", initial)
        self.probes = ProbeWindow(window, before_full, self.initial)  # the neighbour's probes heard here
        self._forward: float | None = None    # last ratio the neighbour reported for us
        self._next_seq = 0
        self.last_heard: float | None = None  # `now` of the last probe heard from the neighbour
        self.heard = 0                        # probes heard from the neighbour, ever (the trace's counter)

    def on_probe(self, seq: int, reported_ratio: float, now: float) -> None:
        """A probe from this neighbour was heard; ``reported_ratio`` is -1.0 if unknown.

        Any negative report means unknown; a NaN or a value above 1 raises ValueError
        (the wire decoder already rejects those).
        """
        if reported_ratio != reported_ratio or reported_ratio > 1.0:
            raise ValueError(f"reported_ratio must be in [0, 1] or -1 (unknown), got {reported_ratio!r}")
        self.probes.on_probe(seq)
        self.heard += 1
        self.last_heard = now
        if reported_ratio >= 0.0:
            self._forward = float(reported_ratio)

    def next_probe(self, now: float) -> tuple[int, float]:
        """(seq for my next probe to this neighbour, reverse ratio to report to it).

        The reported ratio is -1.0 while this node has heard nothing from the neighbour (since
        creation or since the neighbour restarted), whatever ``before_full`` says.
        """
        seq = self._next_seq
        self._next_seq += 1
        return seq, (self.probes.ratio() if self.probes.heard else UNKNOWN)

    def reverse(self) -> float:
        """Fraction of the neighbour's probes received here (over the window)."""
        return self.probes.ratio()

    def forward(self) -> float:
        """Fraction of my probes the neighbour received, as last reported by it (else ``initial``)."""
        return self.initial if self._forward is None else self._forward

    def quality(self) -> float:
        """Link quality in [0, 1] (1 = perfect) per ``mode``.  (Asked for every data packet a node sends:
        :meth:`forward` is written out for the default mode.)"""
        if self.mode == "forward":
            return self.initial if self._forward is None else self._forward
        return self.forward() * self.reverse()

    def etx(self) -> float:
        """ETX of sending over this link, 1 / (df x dr) (De Couto et al., MobiCom 2003, Sec. 3: the forward
        ratio the neighbour reported for my probes times the ratio of its probes I heard); ``math.inf``
        when either is 0.  Routes by ETX use it (routing.topology.linkstate; whatever :attr:`mode` says)."""
        d = self.forward() * self.reverse()
        return 1.0 / d if d > 0 else math.inf

    def __repr__(self) -> str:
        return (f"LinkEstimator(mode={self.mode!r}, forward={self.forward():.4f}, "
                f"reverse={self.reverse():.4f}, last_heard={self.last_heard})")


class EtxTable:
    """Per-neighbour estimators of one node (one :class:`LinkEstimator` per neighbour)."""

    def __init__(self, neighbours: Iterable[str], window: int = 1000, mode: str = "forward",
                 before_full: str = "partial", initial: float = 1.0) -> None:
        if isinstance(neighbours, str):   # a lone name would silently become its characters
            raise ValueError(f"neighbours must be an iterable of names, not a str ({neighbours!r})")
        self._links: dict[str, LinkEstimator] = {}
        for n in neighbours:
            if n not in self._links:
                self._links[n] = LinkEstimator(window, mode, before_full, initial)
        if not self._links:
            # Validate the parameters even for a node without neighbours.
            LinkEstimator(window, mode, before_full, initial)

    @property
    def neighbours(self) -> list[str]:
        return list(self._links)

    def __contains__(self, neighbour: object) -> bool:
        return neighbour in self._links

    def link(self, neighbour: str) -> LinkEstimator:
        """The estimator for ``neighbour``; KeyError if it is not a neighbour."""
        try:
            return self._links[neighbour]
        except KeyError:
            raise KeyError(f"unknown neighbour {neighbour!r}; neighbours are {sorted(self._links)}") from None

    def on_probe(self, neighbour: str, seq: int, reported_ratio: float, now: float) -> None:
        self.link(neighbour).on_probe(seq, reported_ratio, now)

    def next_probe(self, neighbour: str, now: float) -> tuple[int, float]:
        return self.link(neighbour).next_probe(now)

    def quality(self, neighbour: str) -> float:
        e = self._links.get(neighbour)
        return (self.link(neighbour) if e is None else e).quality()   # link(): the KeyError that names the neighbours

    def snapshot(self) -> dict[str, dict[str, float]]:
        """{neighbour: {"forward", "reverse", "quality"}}."""
        return {n: {"forward": e.forward(), "reverse": e.reverse(), "quality": e.quality()}
                for n, e in self._links.items()}

    def log_fields(self) -> dict[str, dict[str, Any]]:
        """{neighbour: the fields of its ``etx`` log event}: the estimates (6 decimals), and the counters a
        link trace is made of (experiments/trace.py): ``heard``, the neighbour's probes heard here so far, and
        ``seq``, the highest sequence number among them (null before the first): between two events the
        link from the neighbour to this node delivered Δheard of Δseq probes."""
        return {n: {"forward": round(e.forward(), 6), "reverse": round(e.reverse(), 6),
                    "quality": round(e.quality(), 6), "heard": e.heard, "seq": e.probes.highest}
                for n, e in self._links.items()}
