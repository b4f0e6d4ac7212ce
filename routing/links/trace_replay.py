"""Replays of what the data met on a recorded link (issue 41, item 2): a process, not an average.

``aspan trace extract`` records, beside the probes' intervals, a row per data transmission and directed link
(experiments/trace_fates.py: sent at ``t_s``, ``heard`` or not).  The loss model ``trace`` replays it with
``replay:``

* ``probability`` (the default, routing/links/trace_loss.py): the probes' delivery per interval, each packet
  lost with probability 1 - delivery (as before issue 41);
* ``fates`` (:class:`FateReplay`): the recorded fate sequence itself, time-indexed as Mahimahi replays its
  delivery opportunities: each packet plays the next recorded fate not played yet, among those recorded
  within ``gap_s`` of the packet's trace time (older ones are skipped), so a replay at the recorded rate
  meets the recorded sequence packet for packet, and one at another rate meets the bursts where they were
  in time, shifted by at most ``gap_s``; no draw.  Where no recorded fate is that close (the link carried no
  data, the recorded TCP was waiting for a timeout, a fate unknown), the probes' delivery of the moment, as
  ``probability``;
* ``markov`` (:class:`MarkovReplay`): a two-state (Gilbert-Elliott) loss process fitted to the recorded
  fates per window of ``fit_s`` seconds, its sojourns in seconds, so a replay at another packet rate keeps
  the bursts' length in time.  The fit (:func:`fit_window`) follows the burst definition of RFC 3611
  (section 4.7.2, ``Gmin`` = 16): losses fewer than ``GMIN`` received packets apart form one burst; a
  burst (at least two losses) is time in the bad state, from its first loss to its last plus one packet
  spacing; the rest of the time the transmissions watched the channel is the good state, whose isolated
  losses give its loss rate.  A window with fewer than
  :data:`MIN_FIT` transmissions replays the probes' delivery, as ``probability``.

**Past the recording's end** (item 4): trace time beyond the link's last row (the probes' last interval's
end, or its last transmission) is not replayed silently.  ``past_end: stop`` (the default of ``fates`` and
``markov``) raises :class:`TraceEnded`, which ends the run (on the sim the repetition's status is
``failed`` with this message); ``hold`` keeps the last value (the default of ``probability``, unchanged);
``loop: true`` starts the recording again (the fates and the fitted windows, the probes alike).

Each model is a core without I/O: the rows come in (tracefiles.read_rows does the reading), ``now`` is an
argument, one RNG (the node's) draws what is random, so a seed gives the same losses.
"""
from __future__ import annotations

import bisect
import math
import random
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

REPLAYS = ("probability", "fates", "markov")
PAST_END = ("stop", "hold")

#: RFC 3611's Gmin: a run of at least this many received packets ends a burst
GMIN = 16
#: transmissions a window needs for its fit; fewer: the probes' delivery
MIN_FIT = 20


class TraceEnded(RuntimeError):
    """A replay asked past its recording's end with ``past_end: stop`` (module docstring)."""


def fates_of(rows: list[dict[str, Any]], link: str, run: str | None) -> tuple[list[float], list[bool]]:
    """The recorded transmissions of ``link`` (rows of ``source`` data): their times and whether each was heard,
    in time order (empty when the link carried no data)."""
    def num(v: Any) -> float:
        try:
            return float(v)
        except (TypeError, ValueError):
            return math.nan
    out = []
    for r in rows:
        if r.get("source") != "data" or str(r.get("link")) != link:
            continue
        if run is not None and f"{r.get('variant')}/rep{int(num(r.get('repetition')))}" != run:
            continue
        t, h = num(r.get("t_s")), num(r.get("heard"))
        if not math.isnan(t) and h in (0.0, 1.0):
            out.append((t, h == 1.0))
    out.sort()
    return [t for t, _h in out], [h for _t, h in out]


class _Clock:
    """Trace time of a replay: ``offset_s`` + (now - ``at``), wrapped into [start, end) with ``loop``; past
    ``end`` without it :class:`TraceEnded` (``past_end`` stop) or ``end`` itself minus nothing (hold)."""

    def __init__(self, start: float, end: float, at: float, offset_s: float, loop: bool, past_end: str,
                 what: str) -> None:
        if past_end not in PAST_END:
            raise ValueError(f"loss spec key 'past_end' must be one of {list(PAST_END)}, got {past_end!r}")
        self.start, self.end = start, max(end, start + 1e-6)
        self.at, self.offset_s, self.loop, self.past_end, self.what = at, offset_s, loop, past_end, what

    def trace_time(self, now: float) -> float:
        t = self.offset_s + (now - self.at)
        if t < self.end:
            return t
        if self.loop:
            return self.start + (t - self.start) % (self.end - self.start)
        if self.past_end == "stop":
            raise TraceEnded(f"{self.what}: the replay reached trace time {t:.3f} s, past the recording's end at "
                             f"{self.end:.3f} s (past_end: stop); record longer, replay less, or set loop: true")
        return self.end - 1e-9


class _Probes:
    """The probes' delivery of the moment (as ``probability`` replays it), for the stretches without fates."""

    def __init__(self, series: Sequence[tuple[float, float, float]], rng: random.Random) -> None:
        self.times = [t for t, _d, _dt in series]
        self.loss = [1.0 - d for _t, d, _dt in series]
        self.rng = rng

    def drop(self, t: float) -> bool:
        return self.rng.random() < self.loss[max(bisect.bisect_right(self.times, t) - 1, 0)]


def _span(series: Sequence[tuple[float, float, float]], fate_times: Sequence[float]) -> tuple[float, float]:
    """(start, end) of a link's recording: its first row to the end of its last interval or transmission."""
    start = min([series[0][0]] + list(fate_times[:1]))
    last_t, _d, last_dt = series[-1]
    return start, max([last_t + (last_dt if last_dt > 0 else 1.0)] + list(fate_times[-1:]))


class Ending:
    """``replay: probability`` with ``past_end: stop``: the probes' replay (trace_loss.TraceLoss, ``loop`` off),
    ended past the recording's end as the other replays are."""

    def __init__(self, model: Any, clock: _Clock) -> None:
        self.model, self.clock = model, clock

    def drop(self, now: float) -> bool:
        self.clock.trace_time(now)
        return bool(self.model.drop(now))

    def drop_sized(self, now: float, size: int) -> bool:
        return self.drop(now)


def ending(model: Any, series: Sequence[tuple[float, float, float]], at: float, offset_s: float,
           what: str) -> Ending:
    """:class:`Ending` around a probability replay of ``series``."""
    return Ending(model, _Clock(*_span(series, ()), at, offset_s, False, "stop", what))


class FateReplay:
    """``replay: fates`` (module docstring)."""

    def __init__(self, series: Sequence[tuple[float, float, float]], times: Sequence[float], heard: Sequence[bool],
                 at: float, offset_s: float, loop: bool, past_end: str, gap_s: float, rng: random.Random,
                 what: str = "trace") -> None:
        if not gap_s > 0:
            raise ValueError(f"loss spec key 'gap_s' must be > 0, got {gap_s!r}")
        self.times, self.heard, self.gap_s = list(times), list(heard), gap_s
        self._next = 0                          # the first recorded fate not played yet
        self._t_last = -math.inf
        self.probes = _Probes(series, rng)
        self.clock = _Clock(*_span(series, self.times), at, offset_s, loop, past_end, what)

    def drop(self, now: float) -> bool:
        t = self.clock.trace_time(now)
        if t < self._t_last:                    # a loop went round: the recording plays again
            self._next = 0
        self._t_last = t
        i = max(self._next, bisect.bisect_left(self.times, t - self.gap_s, lo=self._next))
        if i < len(self.times) and self.times[i] <= t + self.gap_s:
            self._next = i + 1
            return not self.heard[i]
        self._next = i
        return self.probes.drop(t)

    def drop_sized(self, now: float, size: int) -> bool:
        return self.drop(now)

    def __repr__(self) -> str:
        return f"FateReplay({len(self.times)} fates, gap_s={self.gap_s}, {self.clock.past_end})"


@dataclass(frozen=True)
class Fit:
    """A window's two-state process: mean sojourns in seconds, loss per state; ``bad_mean_s`` 0: no burst
    (losses independent at ``loss_good``)."""

    good_mean_s: float
    bad_mean_s: float
    loss_good: float
    loss_bad: float


def fit_window(times: Sequence[float], heard: Sequence[bool], length_s: float) -> Fit:
    """The Gilbert-Elliott process of one window's transmissions (module docstring: RFC 3611's bursts).  Two
    losses are in one burst when fewer than GMIN packets were heard between them and they are less than
    GMIN median spacings apart in time: a sender that fell silent (a timeout) ends a burst."""
    n = len(times)
    if n < 2:
        return Fit(math.inf, 0.0, 0.0 if all(heard) else 1.0, 0.0)
    spacing = statistics.median(b - a for a, b in zip(times, times[1:]))
    lost = [i for i, h in enumerate(heard) if not h]
    bursts: list[tuple[int, int, int]] = []      # (first index, last index, losses)
    for i in lost:
        if bursts and i - bursts[-1][1] - 1 < GMIN and times[i] - times[bursts[-1][1]] < GMIN * spacing:
            a, _b, k = bursts[-1]
            bursts[-1] = (a, i, k + 1)
        else:
            bursts.append((i, i, 1))
    bursts = [b for b in bursts if b[2] >= 2]
    bad_s = sum(times[b] - times[a] + spacing for a, b, _k in bursts)
    in_bad = sum(b - a + 1 for a, b, _k in bursts)
    lost_bad = sum(k for _a, _b, k in bursts)
    loss_good = (len(lost) - lost_bad) / (n - in_bad) if n > in_bad else 0.0
    if not bursts:
        return Fit(math.inf, 0.0, loss_good, 0.0)
    # the time the window's transmissions watched the channel: a silence longer than GMIN spacings counts as
    # that much (the recorded sender waited for a timeout; nobody saw the channel then)
    watched_s = spacing + sum(min(b - a, GMIN * spacing) for a, b in zip(times, times[1:]))
    good_s = max(min(watched_s, length_s) - bad_s, spacing)
    return Fit(good_s / len(bursts), bad_s / len(bursts), loss_good, lost_bad / in_bad)


class MarkovReplay:
    """``replay: markov`` (module docstring): the fitted process of each window of ``fit_s`` seconds, in trace
    time; at a window's start the state is kept and its remaining sojourn drawn again under the new window's
    means (sojourns are exponential, so that is the same process).  Two RNG streams are split off ``rng``:
    sojourns and losses."""

    def __init__(self, series: Sequence[tuple[float, float, float]], times: Sequence[float], heard: Sequence[bool],
                 at: float, offset_s: float, loop: bool, past_end: str, fit_s: float, rng: random.Random,
                 what: str = "trace") -> None:
        if not fit_s > 0:
            raise ValueError(f"loss spec key 'fit_s' must be > 0, got {fit_s!r}")
        self.clock = _Clock(*_span(series, times), at, offset_s, loop, past_end, what)
        self.fit_s = fit_s
        self._state_rng = random.Random(rng.getrandbits(64))
        self._loss_rng = random.Random(rng.getrandbits(64))
        self.probes = _Probes(series, self._loss_rng)
        start = self.clock.start
        windows = math.ceil((self.clock.end - start) / fit_s)
        self.fits: list[Fit | None] = []
        for w in range(windows):
            a = bisect.bisect_left(times, start + w * fit_s)
            b = bisect.bisect_left(times, start + (w + 1) * fit_s)
            self.fits.append(fit_window(times[a:b], heard[a:b], fit_s) if b - a >= MIN_FIT else None)
        self._restart()

    def _restart(self) -> None:
        self._t: float | None = None
        self._good = True
        self._window = 0
        self._switch_at = math.inf

    def _sojourn(self, t: float) -> float:
        """When the state entered at ``t`` ends (never, in a window without bursts or without a fit)."""
        f = self.fits[self._window]
        mean = (f.good_mean_s if self._good else f.bad_mean_s) if f is not None else math.inf
        if not 0 < mean < math.inf:
            return math.inf
        return t + self._state_rng.expovariate(1.0 / mean)

    def _window_end(self) -> float:
        return self.clock.start + (self._window + 1) * self.fit_s

    def _advance(self, t: float) -> None:
        if self._t is None or t < self._t:            # the first packet, or a loop went round
            self._restart()
            self._window = min(max(int((t - self.clock.start) // self.fit_s), 0), len(self.fits) - 1)
            self._switch_at = self._sojourn(t)
        while True:
            w_end = self._window_end()
            if self._switch_at <= w_end and t >= self._switch_at:
                self._good = not self._good
                self._switch_at = self._sojourn(self._switch_at)
            elif w_end < self._switch_at and t >= w_end and self._window + 1 < len(self.fits):
                self._window += 1
                f = self.fits[self._window]
                if f is not None and not self._good and f.bad_mean_s <= 0:
                    self._good = True                 # a window without bursts has no bad state
                self._switch_at = self._sojourn(w_end)
            else:
                break
        self._t = t

    def drop(self, now: float) -> bool:
        t = self.clock.trace_time(now)
        self._advance(t)
        f = self.fits[self._window]
        if f is None:
            return self.probes.drop(t)
        return self._loss_rng.random() < (f.loss_good if self._good else f.loss_bad)

    def drop_sized(self, now: float, size: int) -> bool:
        return self.drop(now)

    def __repr__(self) -> str:
        return f"MarkovReplay({len(self.fits)} windows of {self.fit_s} s, {self.clock.past_end})"
