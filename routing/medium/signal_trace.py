"""Recorded signals replayed into reception sinr (issue 25, item 2): ``medium.signal_trace``.

A link trace recorded on the Pis (experiments/trace.py) has, per directed link A>B and interval, the signal
B heard A at (``signal_dbm``, from B's ``iw station dump``).  With ``medium.signal_trace: {file, run, at_s,
offset_s, loop}`` the medium's radio (routing.medium.reception.SinrReception) takes the signal of every directed
link of the topology from the trace at each frame's start instead of the fixed one (propagation or
``medium.signal_dbm``): the frame's SINR, and with it its success at its rate (the NIST error model) and
capture, follow the recording; with ``rate_control: minstrel`` the rate follows, as Minstrel sees the
frames at high rates fail.  Trace time is played as the loss model ``trace`` plays it
(routing.links.trace_loss.HeldSeries: no interpolation, gaps hold, ``at_s`` after the flows' start plays
``offset_s``, ``loop``).

Who hears and senses whom stays what the fixed signals say (routing.medium.reception.hears_and_senses, computed
once): a recorded fade below the sensitivity makes frames fail by their SINR, not disappear from the
preamble detection.  Pairs that are not links of the topology (interferers out of range) keep their fixed
signal.  A directed link of the topology with no signal in the trace is an error before the run.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from routing.medium.propagation import dbm_to_mw
from routing.links.trace_loss import HeldSeries, link_series
from tracefiles import TraceError, read_rows

COLUMN = "signal_dbm"


def series(settings: Mapping[str, Any], links: list[tuple[str, str]]) -> dict[tuple[str, str], list[tuple[float, float, float]]]:
    """(receiver, sender) -> the recorded (t_s, dBm, dt_s) of link sender>receiver, for every directed link
    in ``links`` (pairs (a, b): a>b); TraceError naming the setting at fault."""
    rows = read_rows(settings["file"])
    out = {}
    for a, b in links:
        out[(b, a)] = link_series(rows, f"{a}>{b}", settings.get("run"), str(settings["file"]), COLUMN)
    return out


def check(settings: Mapping[str, Any], links: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(setting, problem) when the file, the run or a link's signal cannot be replayed."""
    try:
        series(settings, links)
    except TraceError as e:
        return [(e.key, str(e))]
    except (OSError, ValueError, KeyError) as e:
        return [("file", f"{settings.get('file')}: cannot read it as a trace ({e})")]
    return []


class SignalReplay:
    """The recorded signal (mW) of each replayed (receiver, sender) at a medium time in ns."""

    def __init__(self, recorded: dict[tuple[str, str], list[tuple[float, float, float]]], at_s: float,
                 offset_s: float, loop: bool) -> None:
        self._links = {k: HeldSeries([(t, dbm_to_mw(v), dt) for t, v, dt in s], at_s, offset_s, loop)
                       for k, s in recorded.items()}

    def mw(self, rx: str, src: str, t_ns: int) -> float | None:
        """The signal of ``src`` at ``rx`` at ``t_ns``; None for a pair the trace does not replay."""
        s = self._links.get((rx, src))
        return None if s is None else s.value(t_ns / 1e9)


class DeferredReplay:
    """A :class:`SignalReplay` whose flows' start on the medium's clock is known only once the first frame
    is sent: the local backend's medium process starts before the nodes' clock is fixed (the runner writes
    it when the process is ready; experiments/backends/medium_process.py).  The trace is read at once, so
    a file that went missing fails the process at its start."""

    def __init__(self, recorded: dict[tuple[str, str], list[tuple[float, float, float]]],
                 at_s: Callable[[], float], offset_s: float, loop: bool) -> None:
        self._recorded = recorded
        self._at_s = at_s
        self._offset_s = offset_s
        self._loop = loop
        self._replay: SignalReplay | None = None

    def mw(self, rx: str, src: str, t_ns: int) -> float | None:
        if self._replay is None:
            self._replay = SignalReplay(self._recorded, self._at_s(), self._offset_s, self._loop)
        return self._replay.mw(rx, src, t_ns)


def build(settings: Mapping[str, Any], links: list[tuple[str, str]],
          flows_at_s: float | Callable[[], float]) -> SignalReplay | DeferredReplay:
    """The replay of ``settings`` on a medium whose clock reads ``flows_at_s`` when the flows start (a
    callable: asked at the first frame, :class:`DeferredReplay`)."""
    recorded, offset, loop = series(settings, links), float(settings.get("offset_s", 0.0)), bool(settings.get("loop", False))
    at_s = float(settings.get("at_s", 0.0))
    if callable(flows_at_s):
        start = flows_at_s
        return DeferredReplay(recorded, lambda: start() + at_s, offset, loop)
    return SignalReplay(recorded, flows_at_s + at_s, offset, loop)
