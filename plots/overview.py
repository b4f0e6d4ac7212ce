"""What a run measured, in a few lines on the terminal: ``aspan summary RUN`` and the end of ``aspan run``.

The table of means per variant and flow with their 95 % intervals and each variant against the baseline
(plots/baseline.py), then where the report is and what it holds, naming only the sections this run has
(a radio medium, reference numbers, intervals against a baseline): nothing is claimed that the run lacks.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from plots.baseline import means_lines
from plots.data import RunData

__all__ = ["report_holds", "overview_lines"]


def report_holds(run_dir: Path, summary: pd.DataFrame, experiment_name: str) -> list[str]:
    """The sections of this run's report beyond its figures and summary tables, as the report draws them
    (``summary``: the run's summary rows)."""
    from plots.medium import MediumRuns
    from plots.reference import reference_section
    holds = []
    if "variant" in summary and summary["variant"].nunique() > 1:
        holds.append("every variant against the baseline variant with 95 % intervals")
    if MediumRuns.of(Path(run_dir), summary) is not None:
        holds.append("the radio medium")
    if reference_section(experiment_name, summary, str):
        holds.append("these numbers beside the references")
    return holds


def overview_lines(data: RunData, baseline: str | None = None) -> list[str]:
    """The run's header line, its table of means (plots.baseline.means_lines) and where its report is."""
    name = data.experiment.get("name") or data.run_dir.parent.name
    reps = sorted({(r.variant, r.repetition) for r in data.reps})
    lines = [f"Run {data.run_dir} ({name}, backend {data.backend or '?'}): {len(data.variants())} variant(s), "
             f"{len(reps)} repetition(s):", ""]
    if not data.reps:
        return lines + ["  no repetition recorded (no <variant>/rep<k>/meta.json)"]
    lines += ["  " + line for line in means_lines(data, baseline)]
    report = Path(data.run_dir) / "report.md"
    lines.append("")
    if report.is_file():
        holds = report_holds(data.run_dir, data.summary, str(name))
        lines.append(f"Report: {report} (and report.html): figures, summary tables"
                     + "".join(f", {h}" for h in holds) + f"; figures in {data.run_dir / 'figures'}.")
    else:
        lines.append(f"No report yet: aspan plot {data.run_dir} writes it.")
    return lines
