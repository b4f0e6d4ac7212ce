"""The loss model ``trace`` (issue 25): a recorded link's delivery, replayed packet by packet.

A trace (experiments/trace.py: ``aspan trace extract``) holds, per directed link and interval, the share
of the probes the link delivered.  ``{model: trace, file: trace.parquet, link: "A>B"}`` loses each packet
heard with probability 1 - delivery of link A>B in the interval that contains the packet's moment:

* time: trace time = ``offset_s`` + (now - the moment ``at_s`` after the flow start); the recorded
  ``t_s`` counts from the recorded flows' start, so ``at_s: 0, offset_s: 0`` replays it aligned;
* no interpolation: an interval's delivery holds from its start to the next one's;
* gaps: an interval where the sender sent no probe (no delivery measured) takes the last measured one;
  before the first measured interval, the first; after the last, the last, unless ``loop``: then the trace
  starts again from its first interval, or ``past_end: stop``: then the run ends (routing/links/trace_replay.py,
  which also holds the replays of what the data met, ``replay: fates`` and ``markov``);
* one draw of the node's RNG per packet, like Bernoulli;
* ``smooth_s``: each interval's delivery taken over the intervals within ``smooth_s`` / 2 of it.  A trace
  measured by 10 probes a second carries their sampling noise: a steady 8 % loss is recorded as seconds of
  0 % and seconds of 20-30 %, and replayed as such it is a bursty process under which TCP goes several
  times faster than under the steady loss it stands for (docs/LOGS.md, "Link traces").  Smoothing over
  about 10 s (100 probes) takes the noise out and keeps changes slower than that.

The file is read once, when the model is built (every node process builds its own); ``run`` picks a
``<variant>/rep<k>`` when the file holds more than one.  :func:`check` is what the schema runs before
anything starts: the file can be read, the link and the run are in it.
"""
from __future__ import annotations

import bisect
import math
import random
from typing import Any, Mapping

from routing.links import trace_replay
from tracefiles import TraceError, probe_rows, read_rows

def _num(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def link_series(rows: list[dict[str, Any]], link: str, run: str | None,
                source: str = "trace", column: str = "delivery") -> list[tuple[float, float, float]]:
    """(t_s, value, dt_s) of ``link`` in time order, measured intervals only (TraceError naming what is
    missing); the value is ``column``'s: the delivery (a share, 0 to 1) or another column of the trace
    (``signal_dbm``: routing/medium/signal_trace.py)."""
    rows = probe_rows(rows)        # what the data met: routing/links/trace_replay.py
    runs = sorted({f"{r.get('variant')}/rep{int(_num(r.get('repetition')))}" for r in rows})
    if run is None:
        if len(runs) > 1:
            raise TraceError("run", f"{source} holds {len(runs)} runs ({', '.join(runs[:6])}{', ...' if len(runs) > 6 else ''}): "
                             "name one with `run`")
        run = runs[0] if runs else None
    elif run not in runs:
        raise TraceError("run", f"{source} has no run {run!r}; it has {', '.join(runs) or 'none'}")
    mine = [r for r in rows if f"{r.get('variant')}/rep{int(_num(r.get('repetition')))}" == run]
    links = sorted({str(r.get("link")) for r in mine})
    if link not in links:
        raise TraceError("link", f"{source} recorded no link {link!r} (run {run}); it has {', '.join(links) or 'none'}")
    out = sorted((_num(r["t_s"]), _num(r.get(column)), _num(r.get("dt_s"))) for r in mine if str(r.get("link")) == link)
    out = [(t, d, dt) for t, d, dt in out if not math.isnan(t) and not math.isnan(d)
           and (column != "delivery" or 0.0 <= d <= 1.0)]
    if not out:
        raise TraceError("link", f"{source}: link {link!r} has no measured interval"
                         + ("" if column == "delivery" else f" with a {column}"))
    return out


def smoothed(series: list[tuple[float, float, float]], rows_counts: list[tuple[float, float]] | None,
             smooth_s: float) -> list[tuple[float, float, float]]:
    """Each interval's delivery over the intervals whose start lies within ``smooth_s`` / 2 of its own:
    Σheard / Σsent when the counts are known (``rows_counts``: (sent, heard) per interval of ``series``),
    else the mean of the deliveries.  ``smooth_s`` 0: the series as recorded."""
    if smooth_s <= 0:
        return series
    half = smooth_s / 2
    times = [t for t, _d, _dt in series]
    out = []
    for t, _d, dt in series:
        lo, hi = bisect.bisect_left(times, t - half), bisect.bisect_right(times, t + half)
        if rows_counts is not None:
            sent = sum(c[0] for c in rows_counts[lo:hi])
            heard = sum(c[1] for c in rows_counts[lo:hi])
            d = heard / sent if sent > 0 else series[lo][1]
        else:
            d = sum(x[1] for x in series[lo:hi]) / (hi - lo)
        out.append((t, d, dt))
    return out


def link_counts(rows: list[dict[str, Any]], link: str, run: str | None,
                series: list[tuple[float, float, float]]) -> list[tuple[float, float]] | None:
    """(sent, heard) of each interval of ``series`` when the trace has the counts (else None)."""
    by_t: dict[float, tuple[float, float]] = {}
    for r in probe_rows(rows):
        if str(r.get("link")) == link and (run is None or f"{r.get('variant')}/rep{int(_num(r.get('repetition')))}" == run):
            by_t[_num(r["t_s"])] = (_num(r.get("sent")), _num(r.get("heard")))
    counts = [by_t.get(t, (math.nan, math.nan)) for t, _d, _dt in series]
    return None if any(math.isnan(c[0]) or math.isnan(c[1]) for c in counts) else counts


def check(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(setting, problem) for a trace spec whose file, run or link cannot be replayed, or whose settings
    do not go together."""
    replay = settings.get("replay", "probability")
    past_end = settings.get("past_end")
    if past_end is not None and past_end not in trace_replay.PAST_END:
        return [("past_end", f"expected one of {', '.join(trace_replay.PAST_END)}, got {past_end!r}")]
    if replay != "probability" and settings.get("smooth_s", 0.0):
        return [("smooth_s", f"smooths the probes' delivery (replay probability); replay {replay} plays what "
                             "the data met")]
    try:
        link_series(read_rows(settings["file"]), str(settings.get("link")), settings.get("run"), str(settings["file"]))
    except TraceError as e:
        return [(e.key, str(e))]
    except (OSError, ValueError, KeyError) as e:
        return [("file", f"{settings.get('file')}: cannot read it as a trace ({e})")]
    return []


class HeldSeries:
    """A recorded series played back on a clock (module docstring): trace time = ``offset_s`` + (now - ``at``);
    each interval's value holds until the next one; before the first, the first; after the last, the last,
    or with ``loop`` the series starts again from its first interval."""

    def __init__(self, series: list[tuple[float, float, float]], at: float, offset_s: float, loop: bool) -> None:
        self.times = [t for t, _v, _dt in series]
        self.values = [v for _t, v, _dt in series]
        self.at = at
        self.offset_s = offset_s
        self.loop = loop
        last_dt = series[-1][2]
        #: the trace's length when looped: from its first interval's start to its last one's end
        self.span = self.times[-1] + (last_dt if last_dt > 0 else 1.0) - self.times[0]

    def index(self, now: float) -> int:
        t = self.offset_s + (now - self.at)
        if self.loop and t >= self.times[0] + self.span:
            t = self.times[0] + (t - self.times[0]) % self.span
        return max(bisect.bisect_right(self.times, t) - 1, 0)

    def value(self, now: float) -> float:
        return self.values[self.index(now)]


class TraceLoss(HeldSeries):
    """Loses a packet with probability 1 - the recorded delivery at its moment (module docstring)."""

    def __init__(self, series: list[tuple[float, float, float]], at: float, offset_s: float, loop: bool,
                 rng: random.Random) -> None:
        super().__init__(series, at, offset_s, loop)
        self.loss = [1.0 - d for d in self.values]
        self.rng = rng

    def rate(self, now: float) -> float:
        return self.loss[self.index(now)]

    def drop(self, now: float) -> bool:
        return self.rng.random() < self.rate(now)

    def drop_sized(self, now: float, size: int) -> bool:
        return self.rng.random() < self.rate(now)

    def __repr__(self) -> str:
        return f"TraceLoss({len(self.times)} intervals, at={self.at}, offset_s={self.offset_s}, loop={self.loop})"


def build(params: Mapping[str, Any], rng: random.Random) -> Any:
    """The replay ``params["replay"]`` names (routing/links/trace_replay.py): ``probability`` (the default:
    :class:`TraceLoss`), ``fates`` or ``markov``; ValueError naming the key at fault."""
    if "file" not in params or "link" not in params:
        raise ValueError("loss spec of model 'trace' needs 'file' and 'link'")
    replay = params.get("replay", "probability")
    if replay not in trace_replay.REPLAYS:
        raise ValueError(f"loss spec key 'replay' must be one of {list(trace_replay.REPLAYS)}, got {replay!r}")
    past_end = params.get("past_end") or ("hold" if replay == "probability" else "stop")
    if past_end not in trace_replay.PAST_END:
        raise ValueError(f"loss spec key 'past_end' must be one of {list(trace_replay.PAST_END)}, got {past_end!r}")
    link, run = str(params["link"]), params.get("run")
    try:
        rows = read_rows(params["file"])
        series = link_series(rows, link, run, str(params["file"]))
    except TraceError as e:
        raise ValueError(f"loss spec key '{e.key}': {e}") from None
    at, offset_s, loop = float(params.get("at_s", 0.0)), float(params.get("offset_s", 0.0)), bool(params.get("loop", False))
    what = f"trace {params['file']} link {link}"
    if replay != "probability":
        times, heard = trace_replay.fates_of(rows, link, run if run is not None else _only_run(rows))
        if replay == "fates":
            return trace_replay.FateReplay(series, times, heard, at, offset_s, loop, past_end,
                                           float(params.get("gap_s", 0.1)), rng, what)
        return trace_replay.MarkovReplay(series, times, heard, at, offset_s, loop, past_end,
                                         float(params.get("fit_s", 5.0)), rng, what)
    smooth_s = float(params.get("smooth_s", 0.0))
    if smooth_s > 0:
        series = smoothed(series, link_counts(rows, link, run, series), smooth_s)
    model = TraceLoss(series, at, offset_s, loop, rng)
    if past_end == "stop" and not loop:
        return trace_replay.ending(model, series, at, offset_s, what)
    return model


def _only_run(rows: list[dict[str, Any]]) -> str | None:
    """The one ``<variant>/rep<k>`` of a trace (link_series refused a file of several without ``run``)."""
    runs = {f"{r.get('variant')}/rep{int(_num(r.get('repetition')))}" for r in rows}
    return next(iter(runs)) if len(runs) == 1 else None
