"""A repetition's digest: every number the summary and the figures take from its events.

``aspan plot`` on a big run (variants.yaml: 315 repetitions) cannot afford to load every
repetition's events: that costs seconds each.  Instead :func:`digest_rep` reduces one
repetition's events, once, to what the summary and the figures use of them:

- each flow's summary row (``plots.summary.rep_rows``, the one function that computes rows);
- each flow's cwnd values and transmissions per packet as value -> count histograms (what the
  pooled CDFs draw; the median and extremes the figures test come from them exactly);
- each flow's cwnd over time and transmissions in sequence order, and each node's cache size
  over time, already reduced to the points the figures draw (:func:`reduce_series`);

and plots.digest_store keeps it next to ``events.parquet``.  The summary and the figures are
built from digests only, whether the digest was read from disk or just computed, so the two
cannot drift apart; the full series stay available from the logs (:func:`rep_series`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from plots.flows import FlowInfo, flow_events, rep_flows
from plots.logs import RepLogs, aligned_times
from plots.summary import FlowRoles, flow_roles, rep_rows, sender_cwnd_segments, tx_counts

__all__ = ["MAX_POINTS", "Hist", "Drawn", "FlowDigest", "RepDigest", "reduce_series",
           "rep_series", "digest_rep", "plain_row", "json_default"]

MAX_POINTS = 2000  # points per drawn line; longer series are reduced (see reduce_series)


@dataclass(frozen=True)
class Hist:
    """A multiset of numbers as sorted distinct ``values`` (float64) and their ``counts``."""

    values: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, samples: np.ndarray) -> "Hist":
        """The histogram of ``samples`` (NaN left out: the figures drop it)."""
        samples = np.asarray(samples, dtype=np.float64)
        values, counts = np.unique(samples[~np.isnan(samples)], return_counts=True)
        return cls(values.astype(np.float64), counts.astype(np.int64))

    @classmethod
    def pooled(cls, hists: list["Hist"]) -> "Hist":
        """The histogram of the union of the samples of ``hists`` (as if pooled, then counted)."""
        if not hists:
            return cls(np.zeros(0), np.zeros(0, dtype=np.int64))
        values, inverse = np.unique(np.concatenate([h.values for h in hists]), return_inverse=True)
        counts = np.zeros(len(values), dtype=np.int64)
        np.add.at(counts, inverse, np.concatenate([h.counts for h in hists]))
        return cls(values, counts)

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def finite(self) -> "Hist":
        keep = np.isfinite(self.values)
        return Hist(self.values[keep], self.counts[keep])

    def median(self) -> float:
        """``np.median`` of the samples, exactly (the mean of the two middle ones when even)."""
        n = self.n
        if not n:
            return float("nan")
        ends = np.cumsum(self.counts)              # sample index just past each value's run
        lo = self.values[np.searchsorted(ends, (n - 1) // 2, side="right")]
        hi = self.values[np.searchsorted(ends, n // 2, side="right")]
        return float(lo) if n % 2 else float(np.mean(np.array([lo, hi])))

    def largest(self) -> float:
        return float(self.values[-1]) if len(self.values) else float("nan")

    def smallest_positive(self) -> float | None:
        pos = self.values[self.values > 0]
        return float(pos[0]) if len(pos) else None


@dataclass(frozen=True)
class Drawn:
    """A series as a figure draws it: ``t`` and ``y`` after :func:`reduce_series`."""

    t: np.ndarray
    y: np.ndarray


@dataclass
class FlowDigest:
    """One flow of a repetition: its summary row, histograms and drawn series."""

    row: dict[str, Any]
    flow: str
    n_flows: int
    cwnd: Hist            # cwnd values in segments (the cwnd_time series' y, every sample)
    cwnd_drawn: Drawn     # t (s since the first flow start), cwnd in segments
    tx: Hist              # transmissions per packet (every data segment of the flow)
    tx_drawn: Drawn       # packet index in (flow, seq) order, transmissions


@dataclass
class RepDigest:
    """One repetition: its meta.json, skipped log lines, flows and per-node cache series."""

    variant: str
    repetition: int
    meta: dict[str, Any]
    bad_lines_by_node: dict[str, int]
    flows: list[FlowDigest]
    cache: dict[str, Drawn] = field(default_factory=dict)   # node -> cache size (segments)

    @property
    def bad_lines(self) -> int:
        return sum(self.bad_lines_by_node.values())


def reduce_series(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reduce a long time series to MAX_POINTS time bins keeping each bin's maximum."""
    if len(t) <= MAX_POINTS:
        return t, y
    edges = np.linspace(t.min(), t.max(), MAX_POINTS + 1)
    b = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, MAX_POINTS - 1)
    frame = pd.DataFrame({"b": b, "t": t, "y": y}).groupby("b").agg(t=("t", "first"),
                                                                     y=("y", "max"))
    return frame["t"].to_numpy(), frame["y"].to_numpy()


def _drawn(t: np.ndarray, y: np.ndarray) -> Drawn:
    rt, ry = reduce_series(np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64))
    return Drawn(np.asarray(rt, dtype=np.float64), np.asarray(ry, dtype=np.float64))


def _t0(rep: RepLogs, roles: FlowRoles, t_all: pd.Series) -> float:
    """The first flow start at a sender (reference clock), else the first event."""
    ev = rep.events
    starts = t_all[(ev["ev"] == "flow_start") & ev["node"].isin(list(roles.senders))]
    return float(starts.min()) if len(starts) else (float(t_all.min()) if len(t_all) else 0.0)


def rep_series(rep: RepLogs, flow: FlowInfo, flows: list[FlowInfo]
               ) -> tuple[pd.DataFrame, np.ndarray, dict[str, pd.DataFrame]]:
    """The full series of one flow: cwnd (``t`` since the first flow start, ``cwnd_seg``),
    transmissions per packet in (flow, seq) order, and per node the repetition's cache size
    (``t``, ``segments``).  The digest holds these reduced; this is the whole of them."""
    ev = rep.events
    roles = flow_roles(rep)
    t_all = aligned_times(ev, rep.meta)
    t0 = _t0(rep, roles, t_all)
    if len(flows) > 1:
        view = RepLogs(meta=rep.meta, events=flow_events(rep, flow, flows), rep_dir=rep.rep_dir)
        cwnd = sender_cwnd_segments(view, FlowRoles(frozenset({flow.sender}),
                                                    frozenset({flow.receiver}), 1))
    else:
        view = rep
        cwnd = sender_cwnd_segments(rep, roles)
    cwnd = cwnd[["t", "cwnd_seg"]].dropna()
    cwnd = cwnd.assign(t=cwnd["t"] - t0).reset_index(drop=True)
    return cwnd, tx_counts(view.events), _cache_series(rep, t_all, t0)


def _cache_series(rep: RepLogs, t_all: pd.Series, t0: float) -> dict[str, pd.DataFrame]:
    """Per node: t (s since the first flow start), segments of every ``cache`` event."""
    ev = rep.events
    cache_ev = ev[ev["ev"] == "cache"]
    cache: dict[str, pd.DataFrame] = {}
    if not cache_ev.empty and "segments" in cache_ev:
        t_cache = t_all[cache_ev.index] - t0
        frame = pd.DataFrame({"node": cache_ev["node"].astype(str).to_numpy(),
                              "t": t_cache.to_numpy(dtype=np.float64),
                              "segments": cache_ev["segments"].to_numpy(dtype=np.float64)})
        for node, part in frame.groupby("node", sort=True):
            cache[str(node)] = part[["t", "segments"]].dropna().reset_index(drop=True)
    return cache


def json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"a summary value that is not JSON: {type(value).__name__}")


def plain_row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` as it reads back from a digest file (JSON): a digest just computed and one read
    from disk hold the same Python values, so they give the same summary.csv."""
    return json.loads(json.dumps(row, default=json_default, allow_nan=True))


def digest_rep(rep: RepLogs, variant: str, repetition: int) -> RepDigest:
    """The digest of one repetition's logs (see the module docstring)."""
    flows = rep_flows(rep)
    out: list[FlowDigest] = []
    cache_full: dict[str, pd.DataFrame] = {}
    for flow, row in zip(flows, rep_rows(rep, variant, repetition)):
        cwnd, counts, cache_full = rep_series(rep, flow, flows)   # the cache is the rep's: same for each flow
        t, y = cwnd["t"].to_numpy(float), cwnd["cwnd_seg"].to_numpy(float)
        out.append(FlowDigest(row=plain_row(row), flow=flow.label, n_flows=len(flows),
                              cwnd=Hist.of(y), cwnd_drawn=_drawn(t, y),
                              tx=Hist.of(counts.astype(float)),
                              tx_drawn=_drawn(np.arange(len(counts), dtype=float),
                                              counts.astype(float))))
    cache = {node: _drawn(part["t"].to_numpy(float), part["segments"].to_numpy(float))
             for node, part in cache_full.items()}
    return RepDigest(variant, repetition, rep.meta, dict(rep.bad_lines_by_node), out, cache)

