"""``aspan list``: the shipped experiments, what each runs and how long it takes.

The time is what can be said without running anything: on the real-time backends (local, netns, pi) a
bound, every repetition of every variant running until ``limits.max_duration_s`` after settling (plus a
start of about :data:`START_S` each); on every backend, the wall time of the newest finished run of that
file under its ``out`` directory, when there is one (from the run's ``provenance.json`` start to its
``summary.csv``).  The sim's time is its CPU's, which no field of the file bounds.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

from experiments.schema import Experiment, ExperimentError, load_file

REAL_TIME = ("local", "netns", "pi")
START_S = 5.0     # starting and stopping one real-time repetition's node processes, about


@dataclass(frozen=True)
class Listed:
    file: str
    name: str
    backend: str
    variants: int
    repetitions: int
    segments: int            # per repetition, all flows
    bound_s: float | None    # real-time backends: the longest the run may take
    last_s: float | None     # the newest finished run's wall time here
    description: str
    error: str = ""


def bound_s(exp: Experiment, backend: str) -> float | None:
    """The longest a real-time run of ``exp`` may take, None on the sim."""
    if backend not in REAL_TIME:
        return None
    return sum(exp.base.repetitions * (v.config.etx.flow_start_s + v.config.limits.max_duration_s + START_S)
               for v in exp.variants)


def last_run_s(exp: Experiment, base: Path) -> float | None:
    """Wall seconds of the newest run directory of ``exp`` under ``base`` (its ``out``) with a summary.csv."""
    root = base / exp.base.out / exp.name
    for run in sorted(root.glob("*/"), reverse=True) if root.is_dir() else []:
        summary, prov = run / "summary.csv", run / "provenance.json"
        if not (summary.exists() and prov.exists()):
            continue
        try:
            started = dt.datetime.fromisoformat(json.loads(prov.read_text())["started"])
        except (ValueError, KeyError, TypeError):
            continue
        end = dt.datetime.fromtimestamp(summary.stat().st_mtime, tz=started.tzinfo or dt.timezone.utc)
        return max(0.0, (end - started).total_seconds())
    return None


def listed(path: Path, base: Path, shown: str | None = None) -> Listed:
    """The row of the file at ``path`` (``shown``: its name in the table, default the path as given)."""
    name = shown or str(path)
    try:
        exp = load_file(path)
    except ExperimentError as e:
        return Listed(name, path.stem, "?", 0, 0, 0, None, None, "", error=str(e.errors[0]))
    backend = exp.base.backend
    segments = sum(f.segments for f in exp.variants[0].config.flows) if exp.variants else 0
    description = exp.base.description.strip().splitlines()
    return Listed(name, exp.name, backend, len(exp.variants), exp.base.repetitions, segments,
                  bound_s(exp, backend), last_run_s(exp, base), description[0] if description else "")


def _duration(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def table(rows: list[Listed]) -> str:
    out = ["| file | backend | variants x reps | segments | at most | last run here | what |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.error:
            out.append(f"| {r.file} | | | | | | invalid: {r.error} |")
            continue
        out.append(f"| {r.file} | {r.backend} | {r.variants} x {r.repetitions} | {r.segments:,} | "
                   f"{_duration(r.bound_s)} | {_duration(r.last_s)} | {r.description} |")
    return "\n".join(out)


__all__ = ["Listed", "listed", "table", "bound_s", "last_run_s", "REAL_TIME"]
