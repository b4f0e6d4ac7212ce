"""``plot`` command: summary, figures and report for one or more run directories."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from plots.data import RunData, load_run
from plots.figures import write_figures
from plots.logs import check_run_dir
from plots.report import run_figures, sweep_series, write_report

__all__ = ["plot_command", "add_arguments", "main"]


def _labels(run_dirs: Sequence[Path]) -> list[str]:
    """Directory names, or ``parent/name`` when two run dirs share a name."""
    names = [p.resolve().name for p in run_dirs]
    if len(set(names)) == len(names):
        return names
    return [f"{p.resolve().parent.name}/{p.resolve().name}" for p in run_dirs]


def _compare(runs: Sequence[RunData], out: Path) -> dict[str, list[Path]]:
    """Overlay every variant of every run (label ``dirname/variant``) into ``out``."""
    groups, sweeps = [], []
    for run, label in zip(runs, _labels([r.run_dir for r in runs])):
        groups += run.groups(label)
        sweeps += sweep_series(run, label)
    fields = {s.field for s in sweeps}
    if len(fields) > 1:  # different swept fields do not share an x axis
        sweeps = [s for s in sweeps if s.field == sweeps[0].field]
    return write_figures(groups, out, sweeps)


def plot_command(run_dirs: list[Path], out: Path | None = None,
                 resummarize: bool = False) -> int:
    """Summarize (if summary.csv is missing or ``resummarize``), draw and report each run dir.

    With several run dirs, also writes comparison figures into ``out`` (default: the first run
    dir's ``figures/compare/``). Raises ValueError naming a path that is not a run directory.
    Returns 0.
    """
    if not run_dirs:
        raise ValueError("no run directory given; expected at least one run directory")
    dirs = [check_run_dir(Path(p)) for p in run_dirs]  # fail before writing anything
    runs = []
    for run_dir in dirs:
        data = load_run(run_dir, resummarize=resummarize)
        figures = run_figures(data)
        report = write_report(run_dir, data, figures)
        print(f"{run_dir}: {len(data.reps)} repetitions, {len(figures)} figures in "
              f"{run_dir / 'figures'}, report {report}")
        runs.append(data)
    if len(runs) > 1:
        out = Path(out) if out is not None else dirs[0] / "figures" / "compare"
        figures = _compare(runs, out)
        print(f"comparison: {len(figures)} figures in {out}")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the plot command's arguments to ``parser`` (for a parent CLI's subcommand)."""
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                        help="run directories (see docs/LOGS.md)")
    parser.add_argument("--out", type=Path, default=None,
                        help="comparison figures directory when several run dirs are given "
                             "(default: FIRST_RUN_DIR/figures/compare)")
    parser.add_argument("--resummarize", action="store_true",
                        help="rewrite summary.csv from the logs even if it exists")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m plots RUN_DIR... [--out DIR] [--resummarize]``; errors -> message, exit 2."""
    parser = add_arguments(argparse.ArgumentParser(
        prog="plots", description="Summary, figures and report of run directories."))
    args = parser.parse_args(argv)
    try:
        return plot_command(args.run_dirs, args.out, args.resummarize)
    except ValueError as exc:
        print(f"plots: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
