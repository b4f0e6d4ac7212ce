"""What a comparison report adds to the sections of a single run: differences and ratios between runs.

Run A is the first run directory given (the baseline); every other run B is compared with it, per
variant and flow present in both (matched by name), per metric: the means over repetitions, B - A
with Welch's 95 % t interval and B / A with the log-scale interval (plots/stats.py: the runs' repetitions
are independent samples, not paired).  The medium's counters (retries, collisions, drops, summed over
nodes) are compared per variant the same way, one value per repetition.

An incomplete repetition (its flow did not finish in ``limits.max_duration_s``) has no duration and no
goodput of a finished transfer; where a side has one, the comparison of that (variant, flow) compares what
was delivered instead (``delivered_share``, and ``delivered_mbps``: the bytes over the time it ran) and
says so (:func:`completion_note`).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import pandas as pd

from plots.data import RunData
from plots.medium import MediumRuns
from plots.numbers import decimals, mean_std, plain, plain_at
from plots.stats import Interval, Sample, log_ratio, welch_difference

__all__ = ["COMPARE_METRICS", "DELIVERED_METRICS", "MEDIUM_METRICS", "Difference", "differences",
           "difference_section", "repetitions_text", "completion_note", "metrics_for", "interval_text", "seed_values",
           "incomplete"]

# summary.csv columns compared per (variant, flow)
COMPARE_METRICS = ["goodput_mbps", "duration_s", "losses_dupack", "losses_rto", "cwnd_median",
                   "tx_per_pkt_p50", "tx_per_pkt_p99", "local_retransmissions", "snoop_hits"]
# what replaces goodput_mbps and duration_s when a side has an incomplete repetition (module docstring)
DELIVERED_METRICS = ["delivered_share", "delivered_mbps"]
FINISHED_ONLY = ("goodput_mbps", "duration_s")
# the medium's counters compared per variant (summed over nodes, per repetition)
MEDIUM_METRICS = ["retries", "collisions", "hidden", "mac_drops", "queue_drops"]


def repetitions_text(data: RunData) -> str:
    """Repetitions per variant: ``5``, or ``2-5`` when the variants differ."""
    counts = [len({r.repetition for r in data.reps if r.variant == v}) for v in data.variants()]
    if not counts:
        return "0"
    lo, hi = min(counts), max(counts)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _usable(data: RunData, variant: str, flow: str) -> list[Any]:
    return [r for r in data.reps if r.variant == variant and r.flow == flow and not r.failed]


def _number(v: Any) -> float | None:
    if v is None or v is pd.NA:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def seed_values(data: RunData, variant: str, flow: str, metric: str) -> dict[Any, float]:
    """``{seed (else repetition): value}`` of a metric over the (variant, flow)'s repetitions that did not fail."""
    out: dict[Any, float] = {}
    for r in _usable(data, variant, flow):
        v = _number(r.row.get(metric))
        if v is not None:
            seed = r.row.get("seed")
            out[("seed", int(seed)) if _number(seed) is not None else ("rep", r.repetition)] = v
    return out


def _values(data: RunData, variant: str, flow: str, metric: str) -> list[float]:
    return list(seed_values(data, variant, flow, metric).values())


def incomplete(data: RunData, variant: str, flow: str) -> tuple[int, int]:
    """(incomplete, all not failed) repetitions of a (variant, flow)."""
    reps = _usable(data, variant, flow)
    return sum(1 for r in reps if r.status == "incomplete"), len(reps)


def completion_note(sides: Sequence[tuple[str, RunData, str]], flow: str) -> str:
    """'' when every repetition of every side finished; else which side has how many incomplete, and that what was
    delivered is compared.  ``sides``: (name, run, variant)."""
    parts = []
    for name, data, variant in sides:
        k, n = incomplete(data, variant, flow)
        if k:
            parts.append(f"{name}: {k} of {n} incomplete")
    return ("; ".join(parts) + ", compared by what was delivered") if parts else ""


def metrics_for(sides: Sequence[tuple[str, RunData, str]], flow: str, metrics: Sequence[str]) -> list[str]:
    """``metrics``, or, when a side has an incomplete repetition, DELIVERED_METRICS in place of goodput_mbps and
    duration_s (which an incomplete repetition has not)."""
    if not completion_note(sides, flow):
        return list(metrics)
    return DELIVERED_METRICS + [m for m in metrics if m not in FINISHED_ONLY and m not in DELIVERED_METRICS]


class Difference:
    """One metric of one (variant, flow): both runs' values, B - A and B / A with their intervals."""

    def __init__(self, variant: str, flow: str, metric: str, a: list[float], b: list[float], note: str = "") -> None:
        self.variant, self.flow, self.metric, self.note = variant, flow, metric, note
        self.a_values, self.b_values = a, b
        self.a, self.b = Sample.of(a), Sample.of(b)
        self.diff: Interval = welch_difference(self.a, self.b)
        self.ratio: Interval = log_ratio(self.a, self.b)


def differences(a: RunData, b: RunData, medium_a: MediumRuns | None = None,
                medium_b: MediumRuns | None = None) -> list[Difference]:
    """Every compared metric of every (variant, flow) that both runs have (A's order)."""
    out: list[Difference] = []
    b_keys = {(r.variant, r.flow) for r in b.reps}
    for variant in a.variants():
        for flow in dict.fromkeys(r.flow for r in a.reps if r.variant == variant):
            if (variant, flow) not in b_keys:
                continue
            sides = [("A", a, variant), ("B", b, variant)]
            note = completion_note(sides, flow)
            for m in metrics_for(sides, flow, COMPARE_METRICS):
                va, vb = _values(a, variant, flow, m), _values(b, variant, flow, m)
                if va and vb:
                    out.append(Difference(variant, flow, m, va, vb, note))
    if medium_a is not None and medium_b is not None and not medium_a.mac.empty and not medium_b.mac.empty:
        ca, cb = medium_a.counters(), medium_b.counters()
        for variant in medium_a.order:
            if variant in ca.index.get_level_values(0) and variant in cb.index.get_level_values(0):
                for m in MEDIUM_METRICS:
                    out.append(Difference(variant, "all (medium)", m, ca.loc[variant][m].astype(float).tolist(),
                                          cb.loc[variant][m].astype(float).tolist()))
    return out


def interval_text(iv: Interval) -> str:
    """``estimate [lo, hi]``, marked ``*`` when the interval excludes "no difference"; without an interval the
    estimate and why there is none."""
    if iv.lo is None or iv.hi is None:
        return (plain(iv.estimate) + f" ({iv.why})") if not math.isnan(iv.estimate) else iv.why
    width = abs(iv.hi - iv.lo)
    places = max(decimals(iv.estimate) if iv.estimate else 0, decimals(width) if width else 0)
    places = min(places, decimals(max(abs(iv.lo), abs(iv.hi), abs(iv.estimate))) + 2)
    mark = " *" if iv.significant else ""
    return f"{plain_at(iv.estimate, places)} [{plain_at(iv.lo, places)}, {plain_at(iv.hi, places)}]{mark}"


def difference_section(runs: Sequence[RunData], labels: Sequence[str],
                       media: Sequence[MediumRuns | None]) -> list[str]:
    """The comparison's "Differences" section: every run after the first against the first."""
    if len(runs) < 2:
        return []
    names = [label or d.run_dir.name for d, label in zip(runs, labels)]
    lines = ["## Differences between runs (95 % confidence intervals over repetitions)", "",
             f"Baseline A: **{names[0]}**. Per variant and flow found in both runs: the mean ± std of each "
             "run, B - A with Welch's t interval (unequal variances, Welch-Satterthwaite degrees of freedom), "
             "and B / A with the delta method on the log scale (never below 0). `*`: the interval excludes 0 "
             "(difference) or 1 (ratio). Repetitions are the samples: with fewer than 3 on a side, or no spread, "
             "there is no interval and the cell says why; the medium's counters are summed over nodes, per "
             "repetition (plots/compare.py, plots/stats.py). Where a side has incomplete repetitions, what was "
             "delivered is compared in place of goodput and duration (the note column).", ""]
    for data, name, medium in zip(runs[1:], names[1:], media[1:]):
        rows = differences(runs[0], data, media[0], medium)
        lines += [f"### B = {name} vs A = {names[0]}", ""]
        if not rows:
            lines += ["No variant and flow common to both runs (matched by name): nothing to compare.", ""]
            continue
        lines += ["| variant | flow | metric | A (reps) | B (reps) | B - A [95 % CI] | B / A [95 % CI] | note |",
                  "|---|---|---|---|---|---|---|---|"]
        for d in rows:
            lines.append(f"| {d.variant} | {d.flow or '-'} | {d.metric} | {mean_std(d.a_values)} ({d.a.n}) | "
                         f"{mean_std(d.b_values)} ({d.b.n}) | {interval_text(d.diff)} | {interval_text(d.ratio)} | "
                         f"{d.note} |")
        lines.append("")
    return lines

