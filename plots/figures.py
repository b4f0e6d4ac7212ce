"""Matplotlib figures of the paper (A-SPAN, Figures 2-10) from reduced run data.

Every function takes a list of :class:`~plots.data.VariantGroup` (variants overlaid, legend =
group label) and an output directory, writes ``<name>.png`` and ``<name>.svg`` there and returns
the written paths; it returns ``[]`` (and writes nothing) when there is no data to draw.
Failed reps are never drawn (``VariantGroup.usable``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import matplotlib

matplotlib.use("Agg")  # files only, never a display

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import (FuncFormatter, LogLocator, MaxNLocator,  # noqa: E402
                               NullFormatter)

from plots.data import RepData, VariantGroup  # noqa: E402
from plots.digest import MAX_POINTS, Drawn, Hist  # noqa: E402,F401  (MAX_POINTS: per drawn line)
from plots.routing import time_marks  # noqa: E402
from plots.style import colors as _colors, figure as _figure, new_figure as _new, save as _save  # noqa: E402
from plots.style import legend, overlay, title as _title, variant_ticks  # noqa: E402
from plots.reference import figure_title  # noqa: E402

__all__ = [
    "FIGURES", "REP_FIGURES", "SWEEP_METRICS", "MEMORY_METRICS", "SweepSeries", "cwnd_cdf",
    "cwnd_over_time", "qos_over_time", "losses_bars", "tx_per_pkt_cdf", "tx_per_packet",
    "snoop_cache_over_time", "snoop_memory", "snoop_hits_bars", "sweep_figures",
    "write_figures", "log_ticks", "variant_ticks",
]

OVERLAY_MAX = 3     # time series of more groups than this get one panel per group
SWEEP_METRICS: dict[str, str] = {
    "losses": "observed losses at the sender (count)",
    "cwnd_median": "median cwnd at the sender (segments)",
    "tx_per_pkt_p99": "99th percentile transmissions per packet (count)",
    "goodput_mbps": "goodput (Mbit/s)",
    "cache_insertions": "snoop cache insertions, all nodes (segments)",
}
# The memory of the snoop caches (paper Fig. 9), three ways: per repetition, summed over nodes.
MEMORY_METRICS: dict[str, str] = {
    "cache_insertions": "insertions, all nodes\n(segments stored over the run)",
    "cache_mean_segments": "time-averaged occupancy,\nsum over nodes (segments)",
    "cache_max_segments": "largest cache at one node\n(segments, any time)",
}


def _looks(groups: Sequence[VariantGroup]) -> list[tuple[Any, Any]]:
    """(colour, line style) of each overlaid group (plots.style.overlay): runs by colour, variants (and
    flows) by line style when the groups come from several runs."""
    return overlay([g.run for g in groups], [(g.variant, g.flow) for g in groups])


# ----------------------------------------------------------------------------- helpers

def _stats(values: Sequence[float]) -> tuple[float, float, float]:
    """mean, min, max of the finite values (NaN if none)."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    arr = arr[np.isfinite(arr)]
    if not len(arr):
        return (np.nan, np.nan, np.nan)
    return float(arr.mean()), float(arr.min()), float(arr.max())


def _row_values(group: VariantGroup, col: str) -> list[float]:
    out = []
    for r in group.usable:
        v = r.row.get(col)
        out.append(np.nan if v is None or v is pd.NA else float(v))
    return out


def _snooping(groups: Sequence[VariantGroup]) -> list[VariantGroup]:
    """Groups with at least one usable rep that logged cache events."""
    return [g for g in groups if any(r.has_cache for r in g.usable)]


def log_ticks(axis: Any, lo: float | None = None, hi: float | None = None) -> None:
    """Readable ticks on a log axis: plain-number labels at 1, 2, 3, 5 x 10^k when the data
    (``lo``..``hi``) span at most 2.5 decades, at 1, 2, 5 x 10^k up to 3.5 decades, else at
    1 and 3 x 10^k; unlabelled minor ticks at the other integers x 10^k."""
    decades = np.log10(hi / lo) if lo and hi and lo > 0 and hi > lo else 3.0
    subs = (1.0, 2.0, 3.0, 5.0) if decades <= 2.5 else (1.0, 2.0, 5.0) if decades <= 3.5 \
        else (1.0, 3.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(float(k) for k in range(1, 10)
                                                          if float(k) not in subs)))
    axis.set_minor_formatter(NullFormatter())


def _dots(ax: Axes, x: float, values: Sequence[float], width: float) -> None:
    """One dot per repetition over a bar or point at ``x`` (spread across ``width``)."""
    vals = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    if not len(vals):
        return
    offsets = np.linspace(-width / 4, width / 4, len(vals)) if len(vals) > 1 else np.zeros(1)
    ax.scatter(x + offsets, vals, s=12, color="black", zorder=3, linewidths=0,
               label="_nolegend_")


def _bars_with_dots(ax: Axes, groups: Sequence[VariantGroup], metrics: dict[str, str],
                    colors: Sequence[Any] | None = None) -> None:
    """Bars of the mean per group (one bar per metric side by side), each repetition a dot."""
    x = np.arange(len(groups))
    width = 0.8 / len(metrics)
    for i, (col, label) in enumerate(metrics.items()):
        xi = x + (i - (len(metrics) - 1) / 2) * width
        values = [_row_values(g, col) for g in groups]
        mean = np.nan_to_num(np.array([_stats(v)[0] for v in values]))
        ax.bar(xi, mean, width, label=label,
               color=(colors or _colors(max(len(metrics), 2)))[i], alpha=0.85)
        for xv, vals in zip(xi, values):
            _dots(ax, xv, vals, width)
    variant_ticks(ax, x, [g.label for g in groups])
    ax.grid(axis="y", alpha=0.3)


def _grouped_bars(groups: Sequence[VariantGroup], metrics: dict[str, str], ylabel: str,
                  title: str, out_dir: Path, name: str) -> list[Path]:
    """Bars per group, one bar per metric side by side: the mean, and a dot per repetition."""
    groups = [g for g in groups if g.usable]
    if not groups:
        return []
    fig, ax = _new(min(14.0, max(6.4, 0.6 * len(groups) * len(metrics) + 2.0)))
    _bars_with_dots(ax, groups, metrics)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # every bar metric is a count
    ax.set_ylabel(ylabel)
    _title(ax, f"{title}\n(bars: mean over repetitions; dots: each repetition)", fontsize="medium")
    if len(metrics) > 1:
        legend(ax)
    return _save(fig, out_dir, name)


def _cdf_figure(groups: Sequence[VariantGroup], values: Callable[[RepData], Hist],
                xlabel: str, title: str, out_dir: Path, name: str,
                integer_x: bool = False, tail: bool = False) -> list[Path]:
    """ECDF per group, pooled over repetitions (their histograms merged: the exact ECDF, drawn
    with one step per distinct value, so the figure files stay small). Curves that coincide stay
    visible (line styles cycle, earlier curves drawn wider).  The axes are linear in every run, so
    that the same figure of two runs reads the same way.  With ``tail``, a second panel draws the
    complementary CDF P(X >= x) on a log y axis: the top few percent, where a CDF's curve is
    flat against 1, get decades of room there."""
    fig = _figure(11.0 if tail else 6.4, 4.2)
    axes = fig.subplots(1, 2 if tail else 1, squeeze=False)[0]
    ax = axes[0]
    drawn, smallest = 0, 1.0
    for i, (g, (color, ls)) in enumerate(zip(groups, _looks(groups))):
        pooled = Hist.pooled([values(r) for r in g.usable]).finite()
        if not pooled.n:
            continue
        x, counts = pooled.values, pooled.counts
        style = dict(label=g.label, color=color, ls=ls, lw=max(0.9, 2.6 - 0.4 * i))
        ax.ecdf(x, weights=counts, **style)
        if tail:
            at_least = np.cumsum(counts[::-1])[::-1] / pooled.n     # P(X >= x) at each distinct x
            # P(X >= x) holds on (previous value, x]: a "pre" step; a dot at each value drawn
            axes[1].step(x, at_least, where="pre", marker="o", ms=3, **style)
            smallest = min(smallest, float(at_least[-1]))
        drawn += 1
    if not drawn:
        return []
    for a in axes:
        if integer_x:
            a.xaxis.set_major_locator(MaxNLocator(integer=True))
        a.set_xlabel(xlabel)
        a.grid(alpha=0.3)
    ax.set_ylabel("CDF (fraction)")
    ax.set_ylim(0, 1.02)
    _title(ax, title)
    legend(ax)
    if tail:
        axes[1].set_yscale("log")
        log_ticks(axes[1].yaxis, smallest, 1.0)
        axes[1].set_ylabel("fraction of packets with at least x (log)")
        _title(axes[1], "The tail: complementary CDF, log scale")
    return _save(fig, out_dir, name)


def _unshare(fig: Figure) -> None:
    """Fix every panel's shared limits as they now are, then let the panels stop sharing them.

    A figure of 63 panels that share x and y spends most of its drawing time in matplotlib's
    bookkeeping of the shared limits (every limit lookup visits every sibling, several times per
    tick).  Once every panel is drawn, nothing changes the limits any more: fixed, they are the
    same numbers and the same figure, without that cost.  (matplotlib has no public way to stop
    sharing; ``Figure.delaxes`` leaves the groups the same way.)"""
    axes = fig.get_axes()
    limits = [(ax.get_xlim(), ax.get_ylim()) for ax in axes]
    for ax in axes:
        for name in ("x", "y"):
            ax._shared_axes[name].remove(ax)
    for ax, (xlim, ylim) in zip(axes, limits):
        ax.set_xlim(xlim, emit=False, auto=False)
        ax.set_ylim(ylim, emit=False, auto=False)


def _per_variant_panels(groups: Sequence[VariantGroup], title: str, ylabel: str, xlabel: str,
                        draw: Callable[[Axes, RepData, Any], bool], out_dir: Path,
                        name: str, sharey: bool = False) -> list[Path]:
    """One panel per group, drawing its representative rep; panels without data are dropped.
    Up to 6 panels in one column, more in two."""
    chosen = [(g, g.representative()) for g in groups]
    chosen = [(g, r) for g, r in chosen if r is not None]
    if not chosen:
        return []
    ncols = 1 if len(chosen) <= 6 else 2
    nrows = -(-len(chosen) // ncols)
    fig = _figure(7.0 * ncols, 2.1 * nrows + 0.8)
    grid = fig.subplots(nrows, ncols, sharex=True, sharey=sharey, squeeze=False)
    axes = list(grid.ravel())
    for ax in axes[len(chosen):]:
        ax.remove()
    kept = 0
    for ax, (g, rep), color in zip(axes, chosen, _colors(len(chosen))):
        if not draw(ax, rep, color):
            ax.remove()
            continue
        kept += 1
        ax.set_title(f"{g.label} (rep {rep.repetition})", fontsize="medium")
        ax.grid(alpha=0.3)
    if not kept:
        return []
    _unshare(fig)
    fig.supxlabel(xlabel)
    fig.supylabel(ylabel)
    _title(fig, title)
    return _save(fig, out_dir, name)


# ----------------------------------------------------------------------------- figures

def cwnd_cdf(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """CDF of the sender's cwnd in segments, pooled over repetitions (paper Fig. 2b, 4b, 5b, 7b)."""
    return _cdf_figure(groups, lambda r: r.cwnd_hist,
                       "congestion window (segments)",
                       figure_title("cwnd_cdf", "Congestion window size at the sender"), out_dir, "cwnd_cdf")


def mark_routing(ax: Axes, rep: RepData, color: Any) -> None:
    """On a figure over time since the flows started: each failure of the run (a loss ``down`` interval)
    shaded, and for this flow the reroute (dashed) and the recovery (dotted), in the rep's colour
    (plots.routing.time_marks; issue 23).  A label only on the first of each kind in the axes."""
    starts = [float(f.get("start_s") or 0.0) for f in rep.meta.get("flows") or [] if isinstance(f, dict)]
    seen = {str(a.get_label()) for a in ax.get_children()}
    for kind, x0, x1 in time_marks(rep.meta, rep.row, min(starts, default=0.0)):
        label = {"down": "failure (loss down)", "reroute": "rerouted", "recovered": "delivering again"}[kind]
        label = label if label not in seen else "_"
        seen.add(label)
        if kind == "down":
            ax.axvspan(x0, x1, color="0.5", alpha=0.12, lw=0, label=label)
        else:
            ax.axvline(x0, color=color, lw=0.9, ls="--" if kind == "reroute" else ":", label=label)


def _series_figure(groups: Sequence[VariantGroup],
                   get: Callable[[RepData], tuple[Drawn, Hist]], title: str,
                   ylabel: str, xlabel: str, out_dir: Path, name: str,
                   step: bool = True, marks: bool = False) -> list[Path]:
    """A series of the representative rep of each group: overlaid for up to OVERLAY_MAX
    groups, else one panel per group (shared axes).  The y axis is linear in every run (the
    same figure of two runs must read the same way; it used to turn log when a tail squeezed
    the body, so one run's figure was log and another's linear).  ``get`` gives the series as
    drawn and the histogram of all its values: every series a figure draws comes through it."""
    chosen = []
    for g in groups:
        rep = g.representative()
        if rep is None:
            continue
        drawn, hist = get(rep)
        if hist.n:
            chosen.append((g, rep, drawn.t, drawn.y, hist))
    if not chosen:
        return []

    def plot(ax: Axes, t: np.ndarray, y: np.ndarray, **kw: Any) -> None:
        if step:
            ax.step(t, y, where="post", **kw)
        else:
            ax.plot(t, y, lw=0.8, **kw)

    if len(chosen) > OVERLAY_MAX:
        by_rep = {id(r): (t, y) for _g, r, t, y, _h in chosen}

        def draw(ax: Axes, rep: RepData, color: Any) -> bool:
            t, y = by_rep[id(rep)]
            plot(ax, t, y, color=color)
            if marks:
                mark_routing(ax, rep, color)
            return True
        return _per_variant_panels([g for g, *_ in chosen], title, ylabel, xlabel, draw,
                                   out_dir, name, sharey=True)
    fig, ax = _new()
    for (g, rep, t, y, _h), (color, ls) in zip(chosen, _looks([g for g, *_ in chosen])):
        plot(ax, t, y, label=f"{g.label} (rep {rep.repetition})", color=color, ls=ls)
        if marks:
            mark_routing(ax, rep, color)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    _title(ax, title)
    legend(ax, fontsize="small")
    ax.grid(alpha=0.3)
    return _save(fig, out_dir, name)


def cwnd_over_time(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Sender cwnd over time, one representative rep per variant (and flow) (paper Fig. 10a);
    one panel per variant when there are more than OVERLAY_MAX."""
    def get(rep: RepData) -> tuple[Drawn, Hist]:
        return rep.digest.cwnd_drawn, rep.cwnd_hist
    return _series_figure(groups, get, figure_title("cwnd_time", "Congestion window at the sender over time"),
                          "congestion window (segments)", "time since flow start (s)",
                          out_dir, "cwnd_time", marks=True)


def qos_over_time(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """The adaptive sender's pkt_qos in use under its cwnd, on one time axis (plots/qos.py; issue 29)."""
    from plots.qos import qos_over_time as draw

    def new_fig(rows: int) -> tuple[Figure, Any]:
        fig = _figure(6.4, 5.6)
        return fig, fig.subplots(rows, 1, sharex=True, height_ratios=[2, 1])
    return draw(groups, out_dir, _save, new_fig, _colors)


def losses_bars(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Observed losses at the sender, dupack and RTO side by side (paper Fig. 2a, 4a, 5a, 7a)."""
    return _grouped_bars(groups, {"losses_dupack": "three dupacks", "losses_rto": "RTO"},
                         "losses observed per run (count)",
                         figure_title("losses", "Observed packet loss at the sender"), out_dir, "losses")


def tx_per_pkt_cdf(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """CDF of transmissions per packet over all nodes, pooled (paper Fig. 3, 6, 8), and beside it
    the complementary CDF on a log axis: Fig. 6's story (the packets that take many transmissions)
    is in the top few percent, flat against 1 in the CDF."""
    return _cdf_figure(groups, lambda r: r.tx_hist,
                       "transmissions per packet (count, all nodes)",
                       figure_title("tx_per_pkt_cdf", "Number of transmissions per packet"), out_dir, "tx_per_pkt_cdf",
                       integer_x=True, tail=True)


def tx_per_packet(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Transmissions of each packet of a flow in sequence order, one representative rep per
    variant (and flow) (paper Fig. 10b); long flows are reduced to the maximum per bin."""
    def get(rep: RepData) -> tuple[Drawn, Hist]:
        return rep.digest.tx_drawn, rep.tx_hist
    return _series_figure(groups, get, figure_title("tx_per_packet", "Transmissions per packet along the flow"),
                          "transmissions per packet (count)",
                          "packet (index in sequence order)", out_dir, "tx_per_packet",
                          step=False)


def snoop_cache_over_time(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Snoop cache size over time per snooping node, one representative rep per snooping
    variant (one panel each); variants without cache events are left out."""
    def draw(ax: Axes, rep: RepData, _color: Any) -> bool:
        if not rep.has_cache:
            return False
        for node, color in zip(sorted(rep.cache_drawn), _colors(len(rep.cache_drawn))):
            part = rep.cache_drawn[node]
            ax.step(part.t, part.y, where="post", label=f"node {node}", color=color)
        legend(ax, fontsize="small")
        return True
    return _per_variant_panels(_snooping(groups), "Snoop cache size over time",
                               "cached (segments)", "time since flow start (s)", draw,
                               out_dir, "snoop_cache_time")


def snoop_memory(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """The snoop caches' memory per variant (paper Fig. 9), three panels: insertions summed
    over nodes, time-averaged occupancy summed over nodes, the largest cache at one node.
    Bars: mean over repetitions; dots: each repetition. Drawn when some variant snooped;
    variants that did not are drawn at 0 next to them. ``groups``: one rep per repetition."""
    if not _snooping(groups):
        return []
    groups = [g for g in groups if g.usable]
    fig = _figure(min(15.0, max(9.0, 1.1 * len(groups) * 3)), 4.4)
    axes = fig.subplots(1, len(MEMORY_METRICS), squeeze=False)[0]
    for ax, (col, label), color in zip(axes, MEMORY_METRICS.items(), _colors(3)):
        _bars_with_dots(ax, groups, {col: label}, [color])
        ax.set_title(label, fontsize="medium")
    _title(fig, figure_title("snoop_memory", "Snoop memory (bars: mean over repetitions; dots: each repetition)"))
    return _save(fig, out_dir, "snoop_memory")


def snoop_hits_bars(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Snoop cache hits and local retransmissions per snooping variant (bars: mean; dots:
    each repetition)."""
    return _grouped_bars(_snooping(groups), {"snoop_hits": "cache hits",
                                             "local_retransmissions": "local retransmissions"},
                         "events per run (count)", "Snoop cache hits and local retransmissions",
                         out_dir, "snoop_hits")


# ----------------------------------------------------------------------------- sweeps

@dataclass
class SweepSeries:
    """The reps of one run's sweep: label (legend), swept field, values order, groups."""

    label: str
    field: str
    values: list[Any]
    groups: list[VariantGroup]


def _metric(rep: RepData, metric: str) -> float:
    if metric == "losses":
        parts = [rep.row.get("losses_dupack"), rep.row.get("losses_rto")]
        if any(p is None or p is pd.NA for p in parts):
            return np.nan
        return float(parts[0]) + float(parts[1])
    v = rep.row.get(metric)
    return np.nan if v is None or v is pd.NA else float(v)


def _sweep_points(series: SweepSeries, metric: str) -> tuple[pd.DataFrame, dict[str, float]]:
    """Per swept value mean/min/max of a metric, and the means of reps outside the sweep."""
    rows, baselines = [], {}
    for g in series.groups:
        outside = [r for r in g.usable if r.sweep_value is None]
        if outside:
            baselines[g.label] = _stats([_metric(r, metric) for r in outside])[0]
        for r in g.usable:
            if r.sweep_value is not None:
                rows.append({"value": r.sweep_value, "y": _metric(r, metric)})
    return pd.DataFrame(rows, columns=["value", "y"]), baselines


def _x_positions(values: list[Any], order: list[Any]) -> tuple[dict[Any, float], bool]:
    """Numeric x if every value is a number, else categorical positions in ``order``."""
    try:
        return {v: float(v) for v in values}, True
    except (TypeError, ValueError):
        cats = [v for v in order if v in values] + sorted({v for v in values if v not in order},
                                                          key=str)
        return {v: float(i) for i, v in enumerate(cats)}, False


def _spread(x: np.ndarray) -> np.ndarray:
    """x positions of repetition dots, spread around each point (over 24 % of the smallest
    gap between points) so that equal values stay countable."""
    xs = np.unique(x)
    gap = float(np.diff(xs).min()) if len(xs) > 1 else 1.0
    out = x.astype(float).copy()
    for v in xs:
        idx = np.flatnonzero(x == v)
        if len(idx) > 1:
            out[idx] += np.linspace(-0.12 * gap, 0.12 * gap, len(idx))
    return out


def _draw_sweep(ax: Axes, sweeps: Sequence[SweepSeries], metric: str) -> tuple[int, bool]:
    """Draw one metric against the swept value on ``ax``: per series a line through the means
    and a dot per repetition; variants outside the sweep as dashed horizontal lines (their
    mean). Returns (lines drawn, every x numeric)."""
    drawn = 0
    colors = _colors(len(sweeps) + sum(len(s.groups) for s in sweeps))
    ci = 0
    numeric_all = True
    ticks: dict[float, str] = {}
    for s in sweeps:
        pts, baselines = _sweep_points(s, metric)
        pts = pts[np.isfinite(pts["y"].astype(float))] if len(pts) else pts
        if len(pts):
            pos, numeric = _x_positions(list(dict.fromkeys(pts["value"])), s.values)
            numeric_all &= numeric
            pts = pts.assign(x=pts["value"].map(pos))
            agg = pts.groupby("x")["y"].mean().sort_index()
            ax.plot(agg.index.to_numpy(float), agg.to_numpy(float), marker="o", ms=4,
                    label=s.label, color=colors[ci])
            ax.scatter(_spread(pts["x"].to_numpy(float)), pts["y"].to_numpy(float), s=14,
                       color=colors[ci], edgecolors="black", linewidths=0.4, alpha=0.8,
                       zorder=3, label="_nolegend_")
            ticks.update({p: str(v) for v, p in pos.items()})
            ci += 1
            drawn += 1
        for name, mean in baselines.items():
            if np.isfinite(mean):
                ax.axhline(mean, ls="--", lw=1, color=colors[ci % len(colors)],
                           label=f"{name} (not swept)")
                ci += 1
                drawn += 1
    if ticks:
        ax.set_xticks(sorted(ticks), [ticks[p] for p in sorted(ticks)])
    ax.grid(alpha=0.3)
    return drawn, numeric_all


def sweep_figures(sweeps: Sequence[SweepSeries], out_dir: Path) -> list[Path]:
    """Each metric of SWEEP_METRICS against the swept value (line: mean; dots: each
    repetition), one line per sweep series, and ``sweep_memory``: the three MEMORY_METRICS
    side by side (paper Fig. 9) when something was cached."""
    written: list[Path] = []
    sweeps = [s for s in sweeps if s.groups]
    if not sweeps:
        return written
    fld = sweeps[0].field
    for metric, ylabel in SWEEP_METRICS.items():
        fig, ax = _new()
        drawn, numeric_all = _draw_sweep(ax, sweeps, metric)
        if not drawn:
            continue
        ax.set_xlabel(fld if numeric_all else f"{fld} (categories)")
        ax.set_ylabel(ylabel)
        _title(ax, f"{ylabel.split(' (')[0].capitalize()} vs {fld}\n"
               "(line: mean over repetitions; dots: each repetition)", fontsize="medium")
        legend(ax, fontsize="small")
        written += _save(fig, out_dir, f"sweep_{metric}")
    cached = any(_metric(r, "cache_insertions") > 0 for s in sweeps for g in s.groups
                 for r in g.usable)
    if cached:
        fig = _figure(13.0, 4.2)
        axes = fig.subplots(1, len(MEMORY_METRICS), squeeze=False)[0]
        for ax, (metric, label) in zip(axes, MEMORY_METRICS.items()):
            _draw_sweep(ax, sweeps, metric)
            ax.set_title(label, fontsize="medium")
            ax.set_xlabel(fld)
        legend(axes[0], fontsize="small")
        _title(fig, f"Snoop memory vs {fld} (line: mean over repetitions; dots: each repetition)")
        written += _save(fig, out_dir, "sweep_memory")
    return written


# ----------------------------------------------------------------------------- schemes

def _scheme_metric(metric: str) -> Callable[[Sequence[VariantGroup], Path], list[Path]]:
    """Scheme comparison for one metric (plots/schemes.py); draws only when variants set ``scenario``."""
    def draw(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
        from plots.schemes import scheme_figure
        return scheme_figure(groups, out_dir, metric, _save)
    draw.__name__ = f"schemes_{metric}"
    return draw


# ----------------------------------------------------------------------------- all

FIGURES: dict[str, tuple[Callable[[Sequence[VariantGroup], Path], list[Path]], str]] = {
    "losses": (losses_bars, "Observed packet loss at the sender (bars: mean over "
                            "repetitions; dots: each repetition)"),
    "cwnd_cdf": (cwnd_cdf, "CDF of the congestion window at the sender (pooled repetitions)"),
    "cwnd_time": (cwnd_over_time, "Congestion window over time (representative repetition; "
                                  "one panel per variant when there are more than 3)"),
    "qos_time": (qos_over_time, "Adaptive pkt_qos: the setting in use under the cwnd (representative "
                                "repetition of each variant whose sender adapts; issue 29)"),
    "tx_per_pkt_cdf": (tx_per_pkt_cdf, "CDF of transmissions per packet (pooled repetitions)"),
    "tx_per_packet": (tx_per_packet, "Transmissions of each packet in sequence order "
                                     "(representative repetition)"),
    "snoop_cache_time": (snoop_cache_over_time, "Snoop cache size over time per snooping node "
                                                "(representative repetition)"),
    "snoop_memory": (snoop_memory, "Snoop memory: insertions and time-averaged occupancy "
                                   "summed over nodes, next to the largest cache at one node "
                                   "(bars: mean; dots: each repetition)"),
    "snoop_hits": (snoop_hits_bars, "Snoop cache hits and local retransmissions (bars: mean; "
                                    "dots: each repetition)"),
    "schemes_goodput": (_scheme_metric("goodput"), "Snoop schemes per scenario: goodput"),
    "schemes_cwnd_mean": (_scheme_metric("cwnd_mean"), "Snoop schemes per scenario: mean cwnd"),
    "schemes_losses": (_scheme_metric("losses"), "Snoop schemes per scenario: losses observed "
                                                  "at the sender"),
    "schemes_rto": (_scheme_metric("rto"), "Snoop schemes per scenario: RTOs at the sender"),
    "schemes_premature": (_scheme_metric("premature"), "Snoop schemes per scenario: premature "
                                                        "local retransmissions"),
    "schemes_tx_p99": (_scheme_metric("tx_p99"), "Snoop schemes per scenario: transmissions "
                                                  "per packet (p99)"),
}


# Figures of quantities that describe a whole repetition (shared by its flows).
REP_FIGURES = ("snoop_cache_time", "snoop_memory")


# What the figure workers draw: set before they are forked, so that they inherit the run's data
# instead of receiving a pickled copy per figure.
_WORK: tuple[Sequence[VariantGroup], Path, Sequence[SweepSeries], Sequence[VariantGroup] | None] | None = None
# Drawn first (the slowest: one panel per variant, or many points), so two workers end together.
_HEAVY_FIRST = ("cwnd_time", "tx_per_packet", "snoop_cache_time")
SWEEPS = "sweep"   # the task that draws every sweep figure


def _draw(key: str) -> list[Path]:
    """Draw figure ``key`` (a key of FIGURES, or SWEEPS) from _WORK."""
    assert _WORK is not None, "write_figures sets the data first"
    groups, out_dir, sweeps, rep_groups = _WORK
    if key == SWEEPS:
        return sweep_figures(sweeps, out_dir)
    use = rep_groups if (key in REP_FIGURES and rep_groups is not None) else groups
    return FIGURES[key][0](use, out_dir)


def _figure_jobs(groups: Sequence[VariantGroup], jobs: int | None) -> int:
    """Worker processes for the figures: with many repetitions (where drawing takes tens of
    seconds) as many as the runner uses (up to 2); one process, no pool, for small runs."""
    if jobs is not None:
        return max(1, jobs)
    import os
    n_reps = sum(len(g.reps) for g in groups)
    return min(os.cpu_count() or 1, 2) if n_reps >= 40 else 1


def write_figures(groups: Sequence[VariantGroup], out_dir: Path,
                  sweeps: Sequence[SweepSeries] = (),
                  rep_groups: Sequence[VariantGroup] | None = None,
                  jobs: int | None = None) -> dict[str, list[Path]]:
    """Draw every figure that has data; returns {figure key: written paths}, in FIGURES order
    then the sweep figures.  ``rep_groups`` (one rep per repetition; default ``groups``) feed
    REP_FIGURES.  The figures are independent: with ``jobs`` > 1 (default: see _figure_jobs)
    they are drawn by forked worker processes, each file exactly as one process would write it."""
    global _WORK
    keys = sorted(FIGURES, key=lambda k: k not in _HEAVY_FIRST) + [SWEEPS]
    _WORK = (groups, Path(out_dir), sweeps, rep_groups)
    try:
        jobs = _figure_jobs(groups, jobs)
        if jobs > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor
            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
                drawn = dict(zip(keys, pool.map(_draw, keys)))
        else:
            drawn = {key: _draw(key) for key in keys}
    finally:
        _WORK = None
    out: dict[str, list[Path]] = {key: drawn[key] for key in FIGURES if drawn[key]}
    for path in drawn[SWEEPS]:
        out.setdefault(path.stem, []).append(path)
    return out
