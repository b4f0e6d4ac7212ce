"""Within one run: every variant against a baseline variant, per flow, with 95 % intervals; and the table of
means a run ends with (``aspan run``, ``aspan summary RUN``).

The baseline is the variant named by ``--baseline``, else by the experiment's ``baseline`` field, else the
first variant.  The variants of one run use the same seed list, so B and A are paired by seed (paired t for
B - A, the paired log-scale interval for B / A: plots/stats.py); where the seeds differ (a repetition failed,
or ``--repetitions`` changed between variants) the samples are treated as independent (Welch).  An
incomplete repetition is compared by what it delivered (plots/compare.py, :func:`metrics_for`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from plots.compare import completion_note, incomplete, interval_text, metrics_for, seed_values
from plots.data import RunData
from plots.numbers import decimals, plain, plain_at
from plots.stats import Comparison, Interval, Sample, compare, mean_interval

__all__ = ["VERSUS_METRICS", "Versus", "baseline_variant", "versus", "versus_section", "means_lines"]

# summary.csv columns compared against the baseline (goodput and duration give way to the deliveries when a
# side has an incomplete repetition)
VERSUS_METRICS = ["goodput_mbps", "duration_s", "losses_dupack", "losses_rto", "cwnd_median", "tx_per_pkt_p99",
                  "local_retransmissions"]


def baseline_variant(data: RunData, name: str | None = None) -> str:
    """The run's baseline variant (module docstring); ValueError naming where a wrong name came from."""
    variants = data.variants()
    if not variants:
        raise ValueError(f"{data.run_dir}: no variant ran: nothing to compare")
    base = data.experiment.get("base") if isinstance(data.experiment.get("base"), dict) else {}
    for given, where in ((name, "--baseline"), ((base or {}).get("baseline") or data.experiment.get("baseline"),
                                                f"{data.run_dir / 'experiment.yaml'}: baseline")):
        if given:
            if given not in variants:
                raise ValueError(f"{where}: {given!r} is not a variant of this run (variants: {', '.join(variants)})")
            return str(given)
    return variants[0]


@dataclass(frozen=True)
class Versus:
    """One metric of one (variant, flow) against the baseline's same flow."""

    variant: str
    flow: str
    metric: str
    result: Comparison
    note: str


def _flows(data: RunData, variant: str) -> list[str]:
    return list(dict.fromkeys(r.flow for r in data.reps if r.variant == variant))


def versus(data: RunData, baseline: str, metrics: Sequence[str] = VERSUS_METRICS) -> list[Versus]:
    """Every other variant against ``baseline``, per flow both have, per metric with values on both sides."""
    out: list[Versus] = []
    for variant in data.variants():
        if variant == baseline:
            continue
        for flow in _flows(data, variant):
            if flow not in _flows(data, baseline):
                continue
            sides = [(baseline, data, baseline), (variant, data, variant)]
            note = completion_note(sides, flow)
            for m in metrics_for(sides, flow, metrics):
                a, b = seed_values(data, baseline, flow, m), seed_values(data, variant, flow, m)
                if a and b:
                    out.append(Versus(variant, flow, m, compare(a, b), note))
    return out


def versus_section(data: RunData, baseline: str) -> list[str]:
    """The report's section "Against the baseline" ([] with one variant)."""
    if len(data.variants()) < 2:
        return []
    rows = versus(data, baseline)
    lines = [f"## Against the baseline {baseline} (95 % intervals over repetitions)", "",
             f"Every variant B against the baseline A = **{baseline}** (`--baseline` or the experiment's `baseline` "
             "field; default the first variant), per flow. Repetitions with the same seed are paired (the variants "
             "of a run share their seed list): B - A by the paired t interval, B / A by the delta method on the log "
             "scale with the pairs' covariance (never below 0); where the seeds differ, Welch and the unpaired log "
             "interval. `*`: the interval excludes 0 (difference) or 1 (ratio). With fewer than 3 repetitions on a "
             "side, or no spread, there is no interval and the cell says why (plots/stats.py). Where a side has "
             "incomplete repetitions, what was delivered is compared instead of goodput and duration (note).", ""]
    if not rows:
        return lines + ["No flow of another variant has values to compare with the baseline's.", ""]
    lines += ["| variant B | flow | metric | A (reps) | B (reps) | pairing | B - A [95 % CI] | B / A [95 % CI] | note |",
              "|---|---|---|---|---|---|---|---|---|"]
    for v in rows:
        c = v.result
        lines.append(f"| {v.variant} | {v.flow or '-'} | {v.metric} | {_mean_sd(c.a)} ({c.a.n}) | "
                     f"{_mean_sd(c.b)} ({c.b.n}) | {'by seed' if c.paired else 'none (Welch)'} | "
                     f"{interval_text(c.diff)} | {interval_text(c.ratio)} | {v.note} |")
    return lines + [""]


def _mean_sd(s: Sample) -> str:
    if not s.n:
        return ""
    if s.n == 1 or s.var != s.var:
        return plain(s.mean)
    sd = s.var ** 0.5
    places = decimals(s.mean) if s.mean else decimals(sd)
    return f"{plain_at(s.mean, places)} ± {plain_at(sd, places)}"


def _pm(iv: Interval) -> str:
    """``mean ± half-width`` of a 95 % interval, or the mean and ``(n<3)``/``(no spread)``."""
    if iv.estimate != iv.estimate:
        return "-"
    if iv.lo is None or iv.hi is None:
        short = "no spread" if "spread" in iv.why else "n<3" if "repetition" in iv.why else iv.why
        return f"{plain(iv.estimate)} ({short})"
    half = (iv.hi - iv.lo) / 2
    places = max(decimals(iv.estimate) if iv.estimate else 0, decimals(half) if half else 0)
    return f"{plain_at(iv.estimate, places)} ± {plain_at(half, places)}"


def _reps_text(data: RunData, variant: str, flow: str) -> str:
    k, n = incomplete(data, variant, flow)
    failed = sum(1 for r in data.reps if r.variant == variant and r.flow == flow and r.failed)
    parts = [f"{n - k} ok"] + ([f"{k} incomplete"] if k else []) + ([f"{failed} failed"] if failed else [])
    return ", ".join(parts)


def _row_values(data: RunData, variant: str, flow: str, metric: str) -> list[float]:
    return list(seed_values(data, variant, flow, metric).values())


def _losses(data: RunData, variant: str, flow: str) -> dict[Any, float]:
    d, r = seed_values(data, variant, flow, "losses_dupack"), seed_values(data, variant, flow, "losses_rto")
    return {k: d[k] + r[k] for k in d if k in r}


def means_lines(data: RunData, baseline: str | None = None) -> list[str]:
    """The table of means (± the 95 % interval's half-width) per variant and flow, and each variant's goodput
    against the baseline: what ``aspan run`` ends with and ``aspan summary RUN`` prints.

    goodput is ``delivered_mbps``: a finished flow's goodput, an incomplete one's over the time it ran (its
    ``delivered`` share says how much of the flow that was)."""
    base = baseline_variant(data, baseline)
    header = ["variant", "flow", "repetitions", "delivered", "goodput Mbit/s", "losses", "tx/pkt p99",
              f"goodput / {base}"]
    rows: list[list[str]] = []
    for variant in data.variants():
        for flow in _flows(data, variant):
            share = Sample.of(_row_values(data, variant, flow, "delivered_share"))
            goodput = seed_values(data, variant, flow, "delivered_mbps")
            if variant == base:
                vs = "(baseline)"
            elif flow in _flows(data, base) and goodput and seed_values(data, base, flow, "delivered_mbps"):
                vs = interval_text(compare(seed_values(data, base, flow, "delivered_mbps"), goodput).ratio)
            else:
                vs = "-"
            rows.append([variant, flow or "-", _reps_text(data, variant, flow),
                         f"{plain(100 * share.mean)} %" if share.n else "-",
                         _pm(mean_interval(Sample.of(list(goodput.values())))),
                         _pm(mean_interval(Sample.of(list(_losses(data, variant, flow).values())))),
                         _pm(mean_interval(Sample.of(_row_values(data, variant, flow, "tx_per_pkt_p99")))), vs])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header).rstrip(), *(fmt.format(*r).rstrip() for r in rows)]
    notes = ["means over repetitions ± the half-width of their 95 % t interval; goodput of an incomplete "
             "repetition: what it delivered over the time it ran",
             f"goodput / {base}: ratio of the means, 95 % interval paired by seed where the seeds match, "
             "else Welch's (* excludes 1)"]
    return lines + [f"({n})" for n in notes]
