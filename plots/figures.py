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
from matplotlib.ticker import MaxNLocator  # noqa: E402

from plots.data import RepData, VariantGroup  # noqa: E402

__all__ = [
    "FIGURES", "SWEEP_METRICS", "SweepSeries", "cwnd_cdf", "cwnd_over_time", "losses_bars",
    "tx_per_pkt_cdf", "tx_per_packet", "snoop_cache_over_time", "snoop_cache_max",
    "snoop_hits_bars", "sweep_figures", "write_figures",
]

MAX_POINTS = 2000  # points per drawn line; longer series are reduced (see _reduce)
SWEEP_METRICS: dict[str, str] = {
    "losses": "observed losses at the sender (count)",
    "cwnd_median": "median cwnd at the sender (segments)",
    "tx_per_pkt_p99": "99th percentile transmissions per packet (count)",
    "cache_max_segments": "max snoop cache size (segments)",
    "goodput_mbps": "goodput (Mbit/s)",
}


# ----------------------------------------------------------------------------- helpers

def _colors(n: int) -> list[Any]:
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _save(fig: Figure, out_dir: Path, name: str) -> list[Path]:
    """Write ``name.png`` and ``name.svg`` (reproducible metadata, fixed svg hash salt, SVG
    text kept as text so labels stay searchable and editable)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
    with matplotlib.rc_context({"svg.hashsalt": "aspan-plots", "svg.fonttype": "none"}):
        fig.savefig(png, dpi=150, metadata={"Software": None})
        fig.set_layout_engine("none")  # keep the layout just computed: saves a second pass
        fig.savefig(svg, metadata={"Date": None})
    return [png, svg]


def _new(width: float = 6.4, height: float = 4.2) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def _ecdf_points(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ECDF step points: (x0, 0) then (x, fraction <= x) at each distinct value, exact; at
    most MAX_POINTS distinct values are kept (evenly spaced, always the last)."""
    x, counts = np.unique(values, return_counts=True)
    y = np.cumsum(counts) / len(values)
    if len(x) > MAX_POINTS:
        idx = np.unique(np.linspace(0, len(x) - 1, MAX_POINTS).astype(int))
        x, y = x[idx], y[idx]
    return np.concatenate([x[:1], x]), np.concatenate([[0.0], y])


def _reduce(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reduce a long time series to MAX_POINTS time bins keeping each bin's maximum."""
    if len(t) <= MAX_POINTS:
        return t, y
    edges = np.linspace(t.min(), t.max(), MAX_POINTS + 1)
    b = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, MAX_POINTS - 1)
    frame = pd.DataFrame({"b": b, "t": t, "y": y}).groupby("b").agg(t=("t", "first"),
                                                                     y=("y", "max"))
    return frame["t"].to_numpy(), frame["y"].to_numpy()


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
    return [g for g in groups if any(r.cache for r in g.usable)]


def _grouped_bars(groups: Sequence[VariantGroup], metrics: dict[str, str], ylabel: str,
                  title: str, out_dir: Path, name: str) -> list[Path]:
    """Bars per group, one bar per metric side by side: mean with min-max error bars."""
    groups = [g for g in groups if g.usable]
    if not groups:
        return []
    fig, ax = _new(min(14.0, max(6.4, 0.6 * len(groups) * len(metrics) + 2.0)))
    x = np.arange(len(groups))
    width = 0.8 / len(metrics)
    for i, (col, label) in enumerate(metrics.items()):
        stats = np.array([_stats(_row_values(g, col)) for g in groups])
        mean = np.nan_to_num(stats[:, 0])
        err = np.nan_to_num(np.vstack([stats[:, 0] - stats[:, 1], stats[:, 2] - stats[:, 0]]))
        ax.bar(x + (i - (len(metrics) - 1) / 2) * width, mean, width, yerr=err, capsize=3,
               label=label, color=_colors(max(len(metrics), 2))[i])
    ax.set_xticks(x, [g.label for g in groups], rotation=20 if len(groups) > 3 else 0,
                  ha="right" if len(groups) > 3 else "center")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # every bar metric is a count
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if len(metrics) > 1:
        ax.legend()
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, out_dir, name)


def _cdf_figure(groups: Sequence[VariantGroup], values: Callable[[RepData], np.ndarray],
                xlabel: str, title: str, out_dir: Path, name: str,
                logx_above: float | None = None, integer_x: bool = False) -> list[Path]:
    fig, ax = _new()
    xmax = 0.0
    drawn = 0
    for g, color in zip(groups, _colors(len(groups))):
        parts = [values(r) for r in g.usable]
        pooled = np.concatenate(parts) if parts else np.zeros(0)
        pooled = pooled[np.isfinite(pooled)]
        if not len(pooled):
            continue
        x, y = _ecdf_points(pooled)
        ax.step(x, y, where="post", label=g.label, color=color)
        xmax = max(xmax, float(x[-1]))
        drawn += 1
    if not drawn:
        return []
    if logx_above is not None and xmax > logx_above:
        ax.set_xscale("log")
    elif integer_x:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("CDF (fraction)")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, out_dir, name)


def _per_variant_panels(groups: Sequence[VariantGroup], title: str, ylabel: str, xlabel: str,
                        draw: Callable[[Axes, RepData, Any], bool], out_dir: Path,
                        name: str) -> list[Path]:
    """One panel per group, drawing its representative rep; panels without data are dropped."""
    chosen = [(g, g.representative()) for g in groups]
    chosen = [(g, r) for g, r in chosen if r is not None]
    if not chosen:
        return []
    fig = Figure(figsize=(7.0, 2.4 * len(chosen) + 0.6), layout="constrained")
    axes = fig.subplots(len(chosen), 1, sharex=True, squeeze=False)[:, 0]
    kept = 0
    for ax, (g, rep), color in zip(axes, chosen, _colors(len(chosen))):
        if not draw(ax, rep, color):
            ax.remove()
            continue
        kept += 1
        ax.set_title(f"{g.label} (rep {rep.repetition})", fontsize="medium")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    if not kept:
        return []
    fig.supxlabel(xlabel)
    fig.suptitle(title)
    return _save(fig, out_dir, name)


# ----------------------------------------------------------------------------- figures

def cwnd_cdf(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """CDF of the sender's cwnd in segments, pooled over repetitions (paper Fig. 2b, 4b, 5b, 7b)."""
    return _cdf_figure(groups, lambda r: r.cwnd["cwnd_seg"].to_numpy(dtype=float),
                       "congestion window (segments)",
                       "Congestion window size at the sender", out_dir, "cwnd_cdf")


def cwnd_over_time(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Sender cwnd over time, one representative rep per variant (paper Fig. 10a)."""
    fig, ax = _new()
    drawn = 0
    for g, color in zip(groups, _colors(len(groups))):
        rep = g.representative()
        if rep is None or rep.cwnd.empty:
            continue
        t, y = _reduce(rep.cwnd["t"].to_numpy(float), rep.cwnd["cwnd_seg"].to_numpy(float))
        ax.step(t, y, where="post", label=f"{g.label} (rep {rep.repetition})", color=color)
        drawn += 1
    if not drawn:
        return []
    ax.set_xlabel("time since flow start (s)")
    ax.set_ylabel("congestion window (segments)")
    ax.set_title("Congestion window at the sender over time")
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, out_dir, "cwnd_time")


def losses_bars(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Observed losses at the sender, dupack and RTO side by side (paper Fig. 2a, 4a, 5a, 7a)."""
    return _grouped_bars(groups, {"losses_dupack": "three dupacks", "losses_rto": "RTO"},
                         "losses observed per run (count)",
                         "Observed packet loss at the sender", out_dir, "losses")


def tx_per_pkt_cdf(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """CDF of transmissions per packet over all nodes, pooled (paper Fig. 3, 6, 8); log x if
    the largest count exceeds 20."""
    return _cdf_figure(groups, lambda r: r.tx_counts.astype(float),
                       "transmissions per packet (count, all nodes)",
                       "Number of transmissions per packet", out_dir, "tx_per_pkt_cdf",
                       logx_above=20, integer_x=True)


def tx_per_packet(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Transmissions of each packet in sequence order, one representative rep per variant
    (paper Fig. 10b); long flows are reduced to the maximum per bin of packets."""
    fig, ax = _new()
    drawn = 0
    for g, color in zip(groups, _colors(len(groups))):
        rep = g.representative()
        if rep is None or not len(rep.tx_counts):
            continue
        idx, y = _reduce(np.arange(len(rep.tx_counts), dtype=float),
                         rep.tx_counts.astype(float))
        ax.plot(idx, y, label=f"{g.label} (rep {rep.repetition})", color=color, lw=0.8)
        drawn += 1
    if not drawn:
        return []
    ax.set_xlabel("packet (index in sequence order)")
    ax.set_ylabel("transmissions per packet (count)")
    ax.set_title("Transmissions per packet along the flow")
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, out_dir, "tx_per_packet")


def snoop_cache_over_time(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Snoop cache size over time per snooping node, one representative rep per snooping
    variant (one panel each); variants without cache events are left out."""
    def draw(ax: Axes, rep: RepData, _color: Any) -> bool:
        if not rep.cache:
            return False
        for node, color in zip(sorted(rep.cache), _colors(len(rep.cache))):
            part = rep.cache[node]
            t, y = _reduce(part["t"].to_numpy(float), part["segments"].to_numpy(float))
            ax.step(t, y, where="post", label=f"node {node}", color=color)
        ax.legend(fontsize="small")
        return True
    return _per_variant_panels(_snooping(groups), "Snoop cache size over time",
                               "cached (segments)", "time since flow start (s)", draw,
                               out_dir, "snoop_cache_time")


def snoop_cache_max(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Largest snoop cache size per variant, mean over reps with min-max (paper Fig. 9)."""
    return _grouped_bars(_snooping(groups), {"cache_max_segments": "max cache"},
                         "max cached segments at one node (segments)",
                         "Snoop memory consumption", out_dir, "snoop_cache_max")


def snoop_hits_bars(groups: Sequence[VariantGroup], out_dir: Path) -> list[Path]:
    """Snoop cache hits and local retransmissions per snooping variant (mean, min-max)."""
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


def sweep_figures(sweeps: Sequence[SweepSeries], out_dir: Path) -> list[Path]:
    """Each metric of SWEEP_METRICS against the swept value: mean line with min-max band, one
    line per sweep series; variants outside the sweep drawn as dashed horizontal lines."""
    written: list[Path] = []
    sweeps = [s for s in sweeps if s.groups]
    if not sweeps:
        return written
    fld = sweeps[0].field
    for metric, ylabel in SWEEP_METRICS.items():
        fig, ax = _new()
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
                agg = pts.groupby("x")["y"].agg(["mean", "min", "max"]).sort_index()
                x = agg.index.to_numpy(float)
                ax.plot(x, agg["mean"], marker="o", label=s.label, color=colors[ci])
                ax.fill_between(x, agg["min"], agg["max"], alpha=0.2, color=colors[ci])
                ticks.update({p: str(v) for v, p in pos.items()})
                ci += 1
                drawn += 1
            for name, mean in baselines.items():
                if np.isfinite(mean):
                    ax.axhline(mean, ls="--", lw=1, color=colors[ci % len(colors)],
                               label=f"{name} (not swept)")
                    ci += 1
                    drawn += 1
        if not drawn:
            continue
        if ticks:
            ax.set_xticks(sorted(ticks), [ticks[p] for p in sorted(ticks)])
        ax.set_xlabel(fld if numeric_all else f"{fld} (categories)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{ylabel.split(' (')[0].capitalize()} vs {fld}")
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
        written += _save(fig, out_dir, f"sweep_{metric}")
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
    "losses": (losses_bars, "Observed packet loss at the sender (mean over repetitions, "
                            "error bars min-max)"),
    "cwnd_cdf": (cwnd_cdf, "CDF of the congestion window at the sender (pooled repetitions)"),
    "cwnd_time": (cwnd_over_time, "Congestion window over time (representative repetition)"),
    "tx_per_pkt_cdf": (tx_per_pkt_cdf, "CDF of transmissions per packet (pooled repetitions)"),
    "tx_per_packet": (tx_per_packet, "Transmissions of each packet in sequence order "
                                     "(representative repetition)"),
    "snoop_cache_time": (snoop_cache_over_time, "Snoop cache size over time per snooping node "
                                                "(representative repetition)"),
    "snoop_cache_max": (snoop_cache_max, "Largest snoop cache size (mean, min-max)"),
    "snoop_hits": (snoop_hits_bars, "Snoop cache hits and local retransmissions (mean, "
                                    "min-max)"),
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


def write_figures(groups: Sequence[VariantGroup], out_dir: Path,
                  sweeps: Sequence[SweepSeries] = ()) -> dict[str, list[Path]]:
    """Draw every figure that has data; returns {figure key: written paths}."""
    out: dict[str, list[Path]] = {}
    for key, (func, _caption) in FIGURES.items():
        paths = func(groups, Path(out_dir))
        if paths:
            out[key] = paths
    for path in sweep_figures(sweeps, Path(out_dir)):
        out.setdefault(path.stem, []).append(path)
    return out
