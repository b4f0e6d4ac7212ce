"""What a run answers: the paper's question and figure behind each figure, and the reference numbers
(the paper's claims and docs/REPRODUCTION.md's measurements) beside this run's (issue 28, item 2).

Every number here names its source.  Our references are means over the seeds of the command
docs/REPRODUCTION.md gives for that experiment (sim backend); the paper's are its claims as ratios
between two variants (the A-SPAN paper gives no absolute values we could match).  A reference is
shown only for a run of the same experiment (``experiment.yaml`` ``name``) and a variant of that
name, so a run of another file never sits beside numbers that are not its own.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd

__all__ = ["PAPER_FIGURES", "figure_title", "figure_caption", "Reference", "Claim", "REFERENCES", "CLAIMS",
           "metric_values", "reference_section"]

# figure key (plots.figures.FIGURES) -> (the paper's figure numbers, the question it answers)
PAPER_FIGURES: dict[str, tuple[str, str]] = {
    "losses": ("Figs. 2a, 4a, 5a, 7a", "does snooping lower the losses the TCP sender sees?"),
    "cwnd_cdf": ("Figs. 2b, 4b, 5b, 7b", "does the sender keep a larger congestion window?"),
    "tx_per_pkt_cdf": ("Figs. 3, 6, 8", "what do local retransmissions cost in transmissions per packet?"),
    "cwnd_time": ("Fig. 10a", "with every loss hidden, how does the sender's cwnd grow?"),
    "tx_per_packet": ("Fig. 10b", "which packets take many transmissions?"),
    "snoop_memory": ("Fig. 9", "how much memory do the snoop caches take at each pkt_qos?"),
}


def figure_title(key: str, title: str) -> str:
    """``title`` with the paper's figure and question on a second line, when the figure has one."""
    found = PAPER_FIGURES.get(key)
    # wrapped so that it fits the narrowest figure (6.4 in at the default title size)
    return f"{title}\n" + textwrap.fill(f"Paper {found[0]}: {found[1]}", 58) if found else title


def figure_caption(key: str, caption: str) -> str:
    """``caption`` and, when the figure has one, the paper's figure and question after it, on one
    line (a report's caption: the question whole, never broken where a title wraps)."""
    found = PAPER_FIGURES.get(key)
    return f"{caption}. Paper {found[0]}: {found[1]}" if found else caption


METRICS: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "losses": lambda f: f["losses_dupack"] + f["losses_rto"],
    "losses_rto": lambda f: f["losses_rto"],
    "cwnd_median": lambda f: f["cwnd_median"],
    "cwnd_mean": lambda f: f["cwnd_mean"],
    "goodput_mbps": lambda f: f["goodput_mbps"],
    "tx_per_pkt_p99": lambda f: f["tx_per_pkt_p99"],
    "tx_per_pkt_max": lambda f: f["tx_per_pkt_max"],
}
METRIC_NAMES = {"losses": "losses (3 dupacks + RTO)", "losses_rto": "RTOs", "cwnd_median": "cwnd median (segments)",
                "cwnd_mean": "cwnd time-weighted mean (segments)", "goodput_mbps": "goodput (Mbit/s)",
                "tx_per_pkt_p99": "transmissions per packet, p99", "tx_per_pkt_max": "transmissions per packet, max"}


@dataclass(frozen=True)
class Reference:
    """Our reference value of ``metric`` for ``variant`` of ``experiment`` (mean over seeds)."""
    experiment: str
    variant: str
    metric: str
    value: float
    source: str


@dataclass(frozen=True)
class Claim:
    """The paper's claim that ``metric`` of ``variant`` is ``paper`` times ``baseline``'s (``fewer``:
    the baseline's over the variant's), with our reference ratio from docs/REPRODUCTION.md."""
    experiments: tuple[str, ...]
    figure: str
    metric: str
    variant: str
    baseline: str
    fewer: bool
    paper: str
    ours: float | None
    source: str


_MAIN = "docs/REPRODUCTION.md, Main comparison (paper-lossy, sim, 5 seeds)"
_CELL = "docs/REPRODUCTION.md, On the 802.11 DCF medium (medium-fig5-6, cell, 3 seeds)"
_FIG4 = "docs/REPRODUCTION.md, No artificial loss and issue 28's cwnd section (sim, 5 seeds)"
_FIG10 = "docs/REPRODUCTION.md, Perfect snoop (sim, 5 seeds)"


def _refs(experiment: str, source: str, metrics: Sequence[str],
          rows: dict[str, Sequence[float]]) -> list[Reference]:
    return [Reference(experiment, variant, m, v, source)
            for variant, values in rows.items() for m, v in zip(metrics, values)]


_FIG56 = ("losses", "cwnd_median", "goodput_mbps", "tx_per_pkt_p99")
REFERENCES: list[Reference] = [
    *_refs("paper-lossy", _MAIN, _FIG56, {
        "reno": (253, 11.5, 3.90, 5.0), "sack": (214, 11.3, 4.53, 5.0),
        "aspan-0.99": (179, 14.1, 3.60, 23.6), "aspan-1.00": (134, 16.9, 2.39, 47.8),
        "aspan-0.99-once": (113, 16.4, 6.13, 4.8), "aspan-1.00-once": (79, 18.4, 6.60, 5.0)}),
    *_refs("medium-fig5-6", _CELL, _FIG56, {
        "cell-reno": (237, 11.7, 4.94, 4.7), "cell-sack": (206, 11.4, 5.46, 4.7),
        "cell-aspan-0.99": (88, 16.7, 2.24, 61), "cell-aspan-1.00": (91, 16.4, 2.19, 63.3)}),
    *_refs("fig4-no-loss", _FIG4, ("losses", "cwnd_mean", "goodput_mbps"), {
        "reno": (0, 64.7, 9.287), "sack": (0, 64.7, 9.287), "aspan-0.99": (0, 64.7, 9.287)}),
    *_refs("fig10-perfect-snoop", _FIG10, ("losses", "cwnd_median", "tx_per_pkt_max"), {
        "sack": (214, 11.3, 8.4), "aspan-1.00": (128, 17.6, 65.8), "perfect": (0, 33.6, 232)}),
]

_LOSSY = ("paper-lossy",)
CLAIMS: list[Claim] = [
    Claim(_LOSSY, "Fig. 5a", "losses", "aspan-1.00", "sack", True, "3-4x fewer", 214 / 134, _MAIN),
    Claim(_LOSSY, "Fig. 5b", "cwnd_median", "aspan-1.00", "sack", False, "2.5x", 16.9 / 11.3, _MAIN),
    Claim(("medium-fig5-6",), "Fig. 5a", "losses", "cell-aspan-1.00", "cell-sack", True, "3-4x fewer",
          206 / 91, _CELL),
    Claim(("medium-fig5-6",), "Fig. 5b", "cwnd_median", "cell-aspan-1.00", "cell-sack", False, "2.5x",
          16.4 / 11.4, _CELL),
]
# demo-mesh is medium-fig5-6's cell, shorter: its claims take the cell's reference ratios
CLAIMS += [Claim(("demo-mesh",), c.figure, c.metric, c.variant.removeprefix("cell-"),
                 c.baseline.removeprefix("cell-"), c.fewer, c.paper, c.ours,
                 c.source + "; the demo's flow is 4,000 segments, not 16,000")
           for c in CLAIMS if c.experiments == ("medium-fig5-6",)]


def metric_values(summary: pd.DataFrame, variant: str, metric: str) -> list[float]:
    """The values of ``metric`` over the usable repetitions of ``variant`` (status ok)."""
    rows = summary[summary["variant"] == variant]
    if "status" in rows:
        rows = rows[rows["status"].astype(str) == "ok"]
    if rows.empty:
        return []
    return [float(v) for v in pd.to_numeric(METRICS[metric](rows), errors="coerce").dropna()]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def claim_ratio(summary: pd.DataFrame, claim: Claim) -> float | None:
    """This run's ratio for ``claim`` (means over repetitions), None without both variants."""
    v = _mean(metric_values(summary, claim.variant, claim.metric))
    b = _mean(metric_values(summary, claim.baseline, claim.metric))
    if v is None or b is None:
        return None
    num, den = (b, v) if claim.fewer else (v, b)
    return num / den if den else None


def reference_section(experiment: str, summary: pd.DataFrame,
                      fmt: Callable[[float], str]) -> list[str]:
    """The report's "This run against the references" section ([] when nothing applies)."""
    if len(summary) and summary["flow"].nunique() > 1:
        return []          # references are single-flow numbers
    claims = [(c, claim_ratio(summary, c)) for c in CLAIMS if experiment in c.experiments]
    claims = [(c, r) for c, r in claims if r is not None]
    refs = [(r, metric_values(summary, r.variant, r.metric)) for r in REFERENCES if r.experiment == experiment]
    refs = [(r, vals) for r, vals in refs if vals]
    if not claims and not refs:
        return []
    lines = ["## This run against the references", "",
             "Reference numbers for this experiment beside this run's (means over its repetitions); "
             "each names its source (plots/reference.py).", ""]
    if claims:
        lines += ["| paper | claim | paper's value | docs/REPRODUCTION.md | this run | reference source |",
                  "|---|---|---|---|---|---|"]
        for c, r in claims:
            what = (f"{c.baseline} / {c.variant}, {METRIC_NAMES[c.metric]}" if c.fewer
                    else f"{c.variant} / {c.baseline}, {METRIC_NAMES[c.metric]}")
            ours = "" if c.ours is None else f"{fmt(c.ours)}x"
            lines.append(f"| {c.figure} | {what} | {c.paper} | {ours} | {fmt(r)}x | {c.source} |")
        lines.append("")
    if refs:
        lines += ["| variant | metric | docs/REPRODUCTION.md | this run | reference source |",
                  "|---|---|---|---|---|"]
        for ref, vals in refs:
            mean = sum(vals) / len(vals)
            lines.append(f"| {ref.variant} | {METRIC_NAMES[ref.metric]} | {fmt(ref.value)} | {fmt(mean)} "
                         f"| {ref.source} |")
        lines.append("")
    return lines
