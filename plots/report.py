"""``run_dir/report.md``: figures, summary tables, and what went wrong (failed/incomplete reps,
skipped log lines)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from plots.data import RunData, load_run
from plots.medium import medium_section
from plots.figures import FIGURES, SWEEP_METRICS, SweepSeries, write_figures
from plots.summary import SUMMARY_COLUMNS

__all__ = ["MAIN_COLUMNS", "write_report", "run_figures", "sweep_series"]

MAIN_COLUMNS = ["duration_s", "goodput_mbps", "losses_dupack", "losses_rto", "cwnd_median",
                "tx_per_pkt_p50", "tx_per_pkt_p99", "tx_per_pkt_max", "cache_max_segments",
                "snoop_hits", "local_retransmissions"]


def _fmt(v: Any) -> str:
    if v is None or v is pd.NA:
        return ""
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    return str(v).replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return lines


def _mean_std(values: pd.Series) -> str:
    vals = pd.to_numeric(values, errors="coerce").astype(float).dropna()
    if vals.empty:
        return ""
    if len(vals) == 1:
        return f"{vals.iloc[0]:.4g}"
    mean, std = float(vals.mean()), float(vals.std(ddof=1))
    if std <= 1e-9 * max(1.0, abs(mean)):  # equal values: hide float round-off
        std = 0.0
    return f"{mean:.4g} ± {std:.3g}"


def sweep_series(data: RunData, label: str = "") -> list[SweepSeries]:
    """The run's sweep as one SweepSeries (empty if experiment.yaml has no sweep)."""
    if data.sweep is None:
        return []
    fld, values = data.sweep
    prefix = label if label else ""
    return [SweepSeries(label or "mean over repetitions (band: min-max)", fld, values,
                        data.groups(prefix))]


def run_figures(data: RunData) -> dict[str, list[Path]]:
    """Write all figures of one run into ``run_dir/figures/``."""
    return write_figures(data.groups(), data.run_dir / "figures", sweep_series(data))


def _figure_section(data: RunData, figures: dict[str, list[Path]]) -> list[str]:
    lines = ["## Figures", ""]
    captions = {k: c for k, (_f, c) in FIGURES.items()}
    if data.sweep is not None:
        for metric, label in SWEEP_METRICS.items():
            captions[f"sweep_{metric}"] = f"Sweep over {data.sweep[0]}: {label} " \
                                          "(mean, band min-max)"
    for key, paths in figures.items():
        png = next((p for p in paths if p.suffix == ".png"), paths[0])
        rel = png.relative_to(data.run_dir).as_posix()
        caption = captions.get(key, key)
        lines += [f"### {caption}", "", f"![{caption}]({rel})", ""]
    missing = [c for k, c in captions.items() if k not in figures]
    if missing:
        lines += ["Not drawn (no data): " + "; ".join(missing) + ".", ""]
    return lines


def _aggregate_section(data: RunData) -> list[str]:
    rows = []
    for g in data.groups():
        frame = pd.DataFrame([r.row for r in g.usable], columns=SUMMARY_COLUMNS)
        n_failed = len(g.reps) - len(g.usable)
        rows.append([g.label, len(g.usable), n_failed]
                    + [_mean_std(frame[c]) for c in MAIN_COLUMNS])
    return ["## Summary (mean ± std over repetitions, failed reps excluded)", "",
            *_table(["variant", "reps", "failed"] + MAIN_COLUMNS, rows), ""]


def _scheme_section(data: RunData) -> list[str]:
    """Mean ± std per (scenario, scheme) when variants set ``scenario`` (plots/schemes.py)."""
    from plots.schemes import SCHEME_METRICS, by_scenario, scheme_label
    scenarios = by_scenario(data.groups())
    if not scenarios:
        return []
    rows = []
    for s, groups in scenarios.items():
        for g in groups:
            cells = []
            for get, _label in SCHEME_METRICS.values():
                cells.append(_mean_std(pd.Series([get(r) for r in g.usable], dtype="float64")))
            rows.append([s, scheme_label(g, s), len(g.usable)] + cells)
    return ["## Schemes per scenario (mean ± std over repetitions)", "",
            *_table(["scenario", "scheme", "reps"] + list(SCHEME_METRICS), rows), ""]


def _per_rep_section(data: RunData) -> list[str]:
    rows = [[r.row.get(c) for c in SUMMARY_COLUMNS] for r in data.reps]
    return ["## Per repetition (summary.csv)", "", *_table(SUMMARY_COLUMNS, rows), ""]


def _problems_section(data: RunData) -> list[str]:
    lines = ["## Problems", ""]
    bad = [r for r in data.reps if r.status != "ok"]
    for r in bad:
        err = r.meta.get("error")
        lines.append(f"- {r.variant} rep {r.repetition}: **{r.status}**"
                     + (" (excluded from figures)" if r.failed else "")
                     + (f": {err}" if err else ""))
    for r in data.reps:
        if r.bad_lines:
            per_node = ", ".join(f"{n}: {k}" for n, k in sorted(r.bad_lines_by_node.items()))
            lines.append(f"- {r.variant} rep {r.repetition}: skipped {r.bad_lines} bad log "
                         f"line(s) ({per_node})")
    if data.sweep is not None:
        outside = sorted({r.variant for r in data.reps if r.sweep_value is None})
        if outside:
            lines.append(f"- not part of the sweep over {data.sweep[0]} (no sweep value): "
                         + ", ".join(outside))
    lines += [f"- {note}" for note in data.notes]
    if len(lines) == 2:
        lines.append("None: every repetition completed and every log line was read.")
    return lines + [""]


def write_report(run_dir: Path, data: RunData | None = None,
                 figures: dict[str, list[Path]] | None = None) -> Path:
    """Write ``run_dir/report.md`` (figures embedded by relative path, summary tables, problems).

    ``data``/``figures`` reuse what a caller already loaded/drew; by default the run is loaded
    (summary.csv kept if present) and the figures are drawn.
    """
    data = data if data is not None else load_run(Path(run_dir))
    if figures is None:
        figures = run_figures(data)
    lines = [f"# Report: {data.run_dir.name}", "",
             f"Run directory: `{data.run_dir}`", ""]
    name = data.experiment.get("name")
    if name:
        lines += [f"Experiment: {name}", ""]
    if data.sweep is not None:
        lines += [f"Sweep: `{data.sweep[0]}` over {', '.join(map(str, data.sweep[1]))}", ""]
    lines += ["Variants: " + ", ".join(data.variants()), ""] if data.reps else \
        ["No repetitions found (no <variant>/rep<k>/meta.json).", ""]
    lines += _figure_section(data, figures)
    lines += medium_section(data.run_dir)   # [] unless a variant ran on a medium (plots/medium.py)
    lines += _aggregate_section(data)
    lines += _scheme_section(data)
    lines += _per_rep_section(data)
    lines += _problems_section(data)
    path = data.run_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
