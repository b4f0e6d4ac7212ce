"""What a comparison report adds to the sections of a single run: differences and ratios between runs.

Run A is the first run directory given (the baseline); every other run B is compared with it, per
variant and flow present in both (matched by name), per metric: the means over repetitions, B - A
with Welch's 95 % t interval and B / A with Fieller's 95 % interval (plots/stats.py cites both).
The medium's counters (retries, collisions, drops, summed over nodes) are compared per variant the
same way, one value per repetition.
"""
from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from plots.data import RunData
from plots.medium import MediumRuns
from plots.numbers import decimals, mean_std, plain, plain_at
from plots.stats import Interval, Sample, fieller_ratio, welch_difference

__all__ = ["COMPARE_METRICS", "MEDIUM_METRICS", "Difference", "differences", "difference_section",
           "repetitions_text"]

# summary.csv columns compared per (variant, flow)
COMPARE_METRICS = ["goodput_mbps", "duration_s", "losses_dupack", "losses_rto", "cwnd_median",
                   "tx_per_pkt_p50", "tx_per_pkt_p99", "local_retransmissions", "snoop_hits"]
# the medium's counters compared per variant (summed over nodes, per repetition)
MEDIUM_METRICS = ["retries", "collisions", "hidden", "mac_drops", "queue_drops"]


def repetitions_text(data: RunData) -> str:
    """Repetitions per variant: ``5``, or ``2-5`` when the variants differ."""
    counts = [len({r.repetition for r in data.reps if r.variant == v}) for v in data.variants()]
    if not counts:
        return "0"
    lo, hi = min(counts), max(counts)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _values(data: RunData, variant: str, flow: str, metric: str) -> list[float]:
    out = []
    for r in data.reps:
        if r.variant == variant and r.flow == flow and not r.failed:
            v = r.row.get(metric)
            if v is not None and v is not pd.NA:
                try:
                    out.append(float(v))
                except (TypeError, ValueError):
                    continue
    return out


class Difference:
    """One metric of one (variant, flow): both runs' values, B - A and B / A with their intervals."""

    def __init__(self, variant: str, flow: str, metric: str, a: list[float], b: list[float]) -> None:
        self.variant, self.flow, self.metric = variant, flow, metric
        self.a_values, self.b_values = a, b
        self.a, self.b = Sample.of(a), Sample.of(b)
        self.diff: Interval = welch_difference(self.a, self.b)
        self.ratio: Interval = fieller_ratio(self.a, self.b)


def differences(a: RunData, b: RunData, medium_a: MediumRuns | None = None,
                medium_b: MediumRuns | None = None) -> list[Difference]:
    """Every compared metric of every (variant, flow) that both runs have (A's order)."""
    out: list[Difference] = []
    b_keys = {(r.variant, r.flow) for r in b.reps}
    for variant in a.variants():
        for flow in dict.fromkeys(r.flow for r in a.reps if r.variant == variant):
            if (variant, flow) not in b_keys:
                continue
            for m in COMPARE_METRICS:
                va, vb = _values(a, variant, flow, m), _values(b, variant, flow, m)
                if va and vb:
                    out.append(Difference(variant, flow, m, va, vb))
    if medium_a is not None and medium_b is not None and not medium_a.mac.empty and not medium_b.mac.empty:
        ca, cb = medium_a.counters(), medium_b.counters()
        for variant in medium_a.order:
            if variant in ca.index.get_level_values(0) and variant in cb.index.get_level_values(0):
                for m in MEDIUM_METRICS:
                    out.append(Difference(variant, "all (medium)", m, ca.loc[variant][m].astype(float).tolist(),
                                          cb.loc[variant][m].astype(float).tolist()))
    return out


def _interval(iv: Interval) -> str:
    if iv.lo is None or iv.hi is None:
        return (plain(iv.estimate) + f" ({iv.why})") if not math.isnan(iv.estimate) else iv.why
    width = abs(iv.hi - iv.lo)
    places = max(decimals(iv.estimate) if iv.estimate else 0, decimals(width) if width else 0)
    places = min(places, decimals(max(abs(iv.lo), abs(iv.hi), abs(iv.estimate))) + 2)
    return f"{plain_at(iv.estimate, places)} [{plain_at(iv.lo, places)}, {plain_at(iv.hi, places)}]"


def difference_section(runs: Sequence[RunData], labels: Sequence[str],
                       media: Sequence[MediumRuns | None]) -> list[str]:
    """The comparison's "Differences" section: every run after the first against the first."""
    if len(runs) < 2:
        return []
    names = [label or d.run_dir.name for d, label in zip(runs, labels)]
    lines = ["## Differences between runs (95 % confidence intervals over repetitions)", "",
             f"Baseline A: **{names[0]}**. Per variant and flow found in both runs: the mean ± std of each "
             "run, B - A with Welch's t interval (unequal variances, Welch-Satterthwaite degrees of freedom), "
             "and B / A with Fieller's interval (independent samples, Welch degrees of freedom; Tamhane and "
             "Logan 2004). An interval that contains 0 (difference) or 1 (ratio) shows no difference at this "
             "level. Repetitions are the samples: with one repetition on a side there is no interval; the "
             "medium's counters are summed over nodes, per repetition (plots/compare.py, plots/stats.py).", ""]
    for data, name, medium in zip(runs[1:], names[1:], media[1:]):
        rows = differences(runs[0], data, media[0], medium)
        lines += [f"### B = {name} vs A = {names[0]}", ""]
        if not rows:
            lines += ["No variant and flow common to both runs (matched by name): nothing to compare.", ""]
            continue
        lines += ["| variant | flow | metric | A (reps) | B (reps) | B - A [95 % CI] | B / A [95 % CI] |",
                  "|---|---|---|---|---|---|---|"]
        for d in rows:
            lines.append(f"| {d.variant} | {d.flow or '-'} | {d.metric} | {mean_std(d.a_values)} ({d.a.n}) | "
                         f"{mean_std(d.b_values)} ({d.b.n}) | {_interval(d.diff)} | {_interval(d.ratio)} |")
        lines.append("")
    return lines

