"""Scheme-comparison figures: the variants of each scenario side by side (issue 6).

A variant belongs to a scenario when its configuration sets ``scenario`` (written to
``meta.json``); its label in the figures is the variant name without a leading
``<scenario>-``.  One figure per metric, one panel per scenario, one bar per scheme (mean
over repetitions, a dot per repetition), the same colour for the same scheme in every panel.
Nothing is drawn when no variant has a scenario.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from plots.data import RepData, VariantGroup
from plots.style import figure, title, variant_ticks

__all__ = ["SCHEME_METRICS", "scenario_of", "scheme_label", "by_scenario", "scheme_figure"]

Metric = Callable[[RepData], float]


def _col(name: str) -> Metric:
    def get(rep: RepData) -> float:
        v = rep.row.get(name)
        return float("nan") if v is None or v is pd.NA else float(v)
    return get


def _losses(rep: RepData) -> float:
    return _col("losses_dupack")(rep) + _col("losses_rto")(rep)


SCHEME_METRICS: dict[str, tuple[Metric, str]] = {
    "goodput": (_col("goodput_mbps"), "goodput (Mbit/s)"),
    "cwnd_mean": (_col("cwnd_mean"), "time-weighted mean cwnd at the sender (segments)"),
    "losses": (_losses, "losses observed at the sender: 3 dupacks + RTO (count)"),
    "rto": (_col("losses_rto"), "retransmission timeouts at the sender (count)"),
    "premature": (_col("premature_retransmissions"), "premature local retransmissions (count)"),
    "tx_p99": (_col("tx_per_pkt_p99"), "99th percentile transmissions per packet (count)"),
}


def scenario_of(group: VariantGroup) -> str:
    """The scenario of a variant (from its reps' meta.json), '' if none."""
    for rep in group.reps:
        s = rep.meta.get("scenario")
        if s:
            return str(s)
    return ""


def scheme_label(group: VariantGroup, scenario: str) -> str:
    """The variant name without its scenario prefix (``lossy-reno`` in ``lossy`` -> ``reno``)."""
    name = group.variant
    flow = f" {group.flow}" if group.flow else ""   # several flows: one bar per (scheme, flow)
    for sep in ("-", "_", "."):
        if name.startswith(scenario + sep) and len(name) > len(scenario) + 1:
            return name[len(scenario) + 1:] + flow
    return group.label


def by_scenario(groups: Sequence[VariantGroup]) -> dict[str, list[VariantGroup]]:
    """Usable groups by scenario, in order of first appearance; groups without one left out."""
    out: dict[str, list[VariantGroup]] = {}
    for g in groups:
        s = scenario_of(g)
        if s and g.usable:
            out.setdefault(s, []).append(g)
    return out


def _stats(values: list[float]) -> tuple[float, float, float]:
    arr = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if not len(arr):
        return (math.nan, math.nan, math.nan)
    return float(arr.mean()), float(arr.min()), float(arr.max())


def scheme_figure(groups: Sequence[VariantGroup], out_dir: Path, metric: str,
                  save: Callable[[Figure, Path, str], list[Path]]) -> list[Path]:
    """One panel per scenario with a bar per scheme for ``metric`` (a key of SCHEME_METRICS)."""
    scenarios = by_scenario(groups)
    if not scenarios:
        return []
    get, ylabel = SCHEME_METRICS[metric]
    labels: list[str] = []
    for s, gs in scenarios.items():
        for g in gs:
            lab = scheme_label(g, s)
            if lab not in labels:
                labels.append(lab)
    import matplotlib
    cmap = matplotlib.colormaps["tab10" if len(labels) <= 10 else "tab20"]
    color = {lab: cmap(i % cmap.N) for i, lab in enumerate(labels)}
    n = len(scenarios)
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    fig = figure(4.6 * ncols, 3.4 * nrows + 0.5)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    drawn = 0
    for ax, (s, gs) in zip(axes, scenarios.items()):
        stats = [_stats([get(r) for r in g.usable]) for g in gs]
        if all(math.isnan(m) for m, _, _ in stats):
            ax.set_visible(False)
            continue
        labs = [scheme_label(g, s) for g in gs]
        x = np.arange(len(gs))
        mean = np.array([m for m, _, _ in stats])
        ax.bar(x, np.nan_to_num(mean), color=[color[lab] for lab in labs], alpha=0.85)
        for xi, g in zip(x, gs):
            vals = np.asarray([get(r) for r in g.usable], dtype=float)
            vals = vals[np.isfinite(vals)]
            off = np.linspace(-0.2, 0.2, len(vals)) if len(vals) > 1 else np.zeros(len(vals))
            ax.scatter(xi + off, vals, s=10, color="black", zorder=3, linewidths=0)
        for xi, m in zip(x, mean):
            if not math.isnan(m):
                ax.annotate(f"{m:.3g}", (xi, m), ha="center", va="bottom", fontsize="x-small",
                            xytext=(0, 2), textcoords="offset points")
        variant_ticks(ax, x, labs)
        ax.set_title(s, fontsize="medium")
        ax.grid(axis="y", alpha=0.3)
        drawn += 1
    for ax in axes[n:]:
        ax.set_visible(False)
    if not drawn:
        return []
    fig.supylabel(ylabel)
    title(fig, f"Snoop schemes side by side: {ylabel.split(' (')[0]} (bars: mean; dots: each "
          "repetition)")
    return save(fig, out_dir, f"schemes_{metric}")


def scheme_table(groups: Sequence[VariantGroup]) -> list[dict[str, Any]]:
    """Mean and sample standard deviation of every metric, per (scenario, scheme)."""
    rows = []
    for s, gs in by_scenario(groups).items():
        for g in gs:
            row: dict[str, Any] = {"scenario": s, "scheme": scheme_label(g, s), "reps": len(g.usable)}
            for metric, (get, _label) in SCHEME_METRICS.items():
                vals = np.asarray([get(r) for r in g.usable], dtype=float)
                vals = vals[~np.isnan(vals)]
                row[f"{metric}_mean"] = float(vals.mean()) if len(vals) else math.nan
                row[f"{metric}_std"] = float(vals.std(ddof=1)) if len(vals) > 1 else math.nan
            rows.append(row)
    return rows
