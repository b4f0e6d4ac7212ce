"""``plot`` command: summary, figures and report for one or more run directories.

One run directory without ``--out``: its summary.csv (if missing), figures and report.md are
written into it. With ``--out DIR`` (required for several runs), everything goes into DIR and
no input run is written to: summaries are computed in memory when a run has none.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # the heavy modules (pandas, matplotlib) load only when a plot is made,
    from plots.data import RunData  # so ``aspan`` can add these arguments at every start

__all__ = ["plot_command", "add_arguments", "run_args", "run_labels", "main"]


def run_labels(runs: Sequence["RunData"], labels: Sequence[str] | None = None) -> list[str]:
    """Legend prefix of each run: ``labels`` if given (one per run), else built from what
    tells the runs apart among experiment name and backend (``fig2-3 sim``); the run
    directory's name is added when those are the same."""
    if labels:
        if len(labels) != len(runs):
            raise ValueError(f"--label given {len(labels)} time(s) for {len(runs)} run "
                             "directories; give one --label per run directory, in order")
        return [str(x) for x in labels]
    names = [str(r.experiment.get("name") or r.run_dir.parent.name) for r in runs]
    backends = [r.backend or "?" for r in runs]
    parts: list[list[str]] = [[] for _ in runs]
    if len(set(names)) > 1:
        for p, n in zip(parts, names):
            p.append(n)
    if len(set(backends)) > 1 or len(set(names)) == 1:
        for p, b in zip(parts, backends):
            p.append(b)
    out = [" ".join(p) for p in parts]
    for tail in (lambda r: r.run_dir.name, lambda r: f"{r.run_dir.parent.name}/{r.run_dir.name}"):
        if len(set(out)) == len(out):
            break
        out = [f"{' '.join(p)} {tail(r)}".strip() for p, r in zip(parts, runs)]
    return out


def _inside(path: Path, parent: Path) -> bool:
    path, parent = path.resolve(), parent.resolve()
    return path == parent or parent in path.parents


def _compare(runs: Sequence["RunData"], labels: Sequence[str], out: Path,
             media: Sequence[Any]) -> dict[str, list[Path]]:
    """Overlay every variant (and flow) of every run into ``out``; legend ``label: variant``; the
    mesh of every run, a panel per variant titled so; the medium's figures of every run on a medium."""
    from plots.figures import write_figures
    from plots.medium import draw_medium
    from plots.mesh import compare_panels, draw_mesh
    from plots.report import compare_medium, sweep_series
    from plots.style import current
    groups, rep_groups, sweeps = [], [], []
    for run, label in zip(runs, labels):
        groups += run.groups(label, ports=current().ports)
        rep_groups += run.rep_groups(label)
        sweeps += sweep_series(run, label)
    fields = {s.field for s in sweeps}
    if len(fields) > 1:  # different swept fields do not share an x axis
        sweeps = [s for s in sweeps if s.field == sweeps[0].field]
    figures = write_figures(groups, out, sweeps, rep_groups)
    figures.update(draw_mesh(compare_panels([r.run_dir for r in runs], labels), out))
    figures.update(draw_medium(compare_medium(media, labels), out))
    return figures


def _warn_lateness(warnings: list[str]) -> None:
    """The medium's lateness warnings (plots/lateness.py) on the terminal, as the report gives them."""
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def check_out(out: Path, force: bool) -> None:
    """Refuse an existing, non-empty ``--out`` unless ``force``: a comparison never overwrites one silently."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ValueError(f"--out {out} already exists and is not empty; give --force to overwrite its "
                         "report.md, summary.csv and figures/, or choose another directory")


def clear_figures(fig_dir: Path) -> None:
    """Remove the figures a previous plot wrote into ``fig_dir`` (png/svg/pdf only), so that what is there
    after drawing is exactly what was drawn (a figure with nothing to show must not survive)."""
    if fig_dir.is_dir():
        for path in fig_dir.iterdir():
            if path.is_file() and path.suffix in (".png", ".svg", ".pdf"):
                path.unlink()


def plot_command(run_dirs: list[Path], out: Path | None = None, resummarize: bool = False,
                 labels: Sequence[str] | None = None, force: bool = False, by: str | None = None,
                 baseline: str | None = None, style: str = "notebook") -> int:
    """Summary, figures and report.md of one run (into the run dir), or of one or more runs
    into ``out`` without writing into any of them. Raises ValueError naming a path that is not
    a run directory, a missing ``out`` for several runs, an ``out`` inside an input run, or an
    existing non-empty ``out`` without ``force``, or a ``baseline`` that is no variant of the run (one run:
    the variant the report compares the others with, plots/baseline.py), or an unknown ``style``.  The
    figures are drawn in ``style`` (plots/style.py: ``notebook``, the default, or ``paper``).  Prints the
    medium's lateness warnings on stderr.  Returns 0."""
    from plots.data import load_run
    from plots.lateness import lateness_warnings, run_lateness
    from plots.logs import check_run_dir
    from plots.report import run_figures, run_media, write_compare_report, write_report
    from plots.style import STYLES, using
    if not run_dirs:
        raise ValueError("no run directory given; expected at least one run directory")
    if style not in STYLES:
        raise ValueError(f"--style {style}: unknown; expected one of {', '.join(STYLES)}")
    formats = ", ".join(STYLES[style].formats)
    dirs = [check_run_dir(Path(p)) for p in run_dirs]  # fail before writing anything
    if out is None:
        if len(dirs) > 1:
            raise ValueError("several run directories: give --out DIR for the comparison "
                             "(figures, report.md, summary.csv; the inputs are never written)")
        data = load_run(dirs[0], resummarize=resummarize, by=by)
        prefix = labels[0] if labels else ""
        if labels and len(labels) != 1:
            raise ValueError(f"--label given {len(labels)} times for 1 run directory")
        from plots.baseline import baseline_variant
        if data.variants():
            baseline = baseline_variant(data, baseline)    # a wrong name fails before anything is drawn
        clear_figures(dirs[0] / "figures")
        for note in data.notes:   # what was assumed (a rebuilt meta.json, ...), also in report.md
            print(f"{dirs[0]}: note: {note}", file=sys.stderr)
        with using(style):
            figures = run_figures(data, label=prefix)
        late = run_lateness(dirs[0])
        report = write_report(dirs[0], data, figures, late, baseline)
        print(f"{dirs[0]}: {len(data.reps)} repetition-flows, {len(figures)} figures in "
              f"{dirs[0] / 'figures'} ({formats}), report {report}")
        _warn_lateness(lateness_warnings(late))
        return 0
    if baseline is not None:
        raise ValueError("--baseline applies to one run (its variants against one of them); a comparison of runs "
                         "compares each run with the first")
    out = Path(out)
    for d in dirs:
        if _inside(out, d):
            raise ValueError(f"--out {out} is inside the input run {d}; choose a directory "
                             "outside every input run (inputs are never written)")
    check_out(out, force)
    runs = [load_run(d, resummarize=resummarize, write=False, by=by) for d in dirs]
    names = run_labels(runs, labels) if (len(runs) > 1 or labels) else [""]
    media = run_media(runs)
    clear_figures(out / "figures")
    with using(style):
        figures = _compare(runs, names, out / "figures", media)
    late = [run_lateness(d) for d in dirs]
    report = write_compare_report(out, runs, names, figures, late, media)
    print(f"{len(runs)} run(s): {len(figures)} figures in {out / 'figures'} ({formats}), report {report}")
    _warn_lateness([w for rows, name in zip(late, names) for w in lateness_warnings(rows, name)])
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the plot command's arguments to ``parser`` (for a parent CLI's subcommand)."""
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                        help="run directories (see docs/LOGS.md)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write figures, report.md and summary.csv here and nothing into "
                             "the runs (required with several run dirs)")
    parser.add_argument("--label", action="append", default=None, metavar="TEXT",
                        help="legend prefix of a run, once per run dir in order (default: "
                             "experiment name and/or backend, whichever tells them apart)")
    parser.add_argument("--force", action="store_true",
                        help="with --out: overwrite an existing, non-empty DIR (refused otherwise)")
    parser.add_argument("--by", default=None, metavar="FIELD",
                        help="a factorial sweep (sweep.factors): the factor on the sweep figures' x axis, one "
                             "line per combination of the others (default: the first factor)")
    parser.add_argument("--baseline", default=None, metavar="VARIANT",
                        help="one run: the variant every other is compared with, per flow, with 95 %% intervals "
                             "(default: the experiment's baseline field, else the first variant)")
    parser.add_argument("--style", choices=("notebook", "paper"), default="notebook",
                        help="notebook (default): titles that say what a figure asks, PNG and SVG; paper: no "
                             "titles (the caption says it), sized for one column of a two-column paper "
                             "(3.5 in wide, 8-9 pt), legends without ports where a flow's sender and "
                             "receiver are enough, and a PDF beside the PNG and SVG")
    parser.add_argument("--resummarize", action="store_true",
                        help="recompute the summary from the logs even if summary.csv exists "
                             "(rewritten in the run dir only without --out)")
    return parser


def run_args(args: argparse.Namespace) -> int:
    """Run the plot command from arguments parsed with :func:`add_arguments`."""
    return plot_command(list(args.run_dirs), args.out, args.resummarize, args.label, args.force, args.by,
                        args.baseline, getattr(args, "style", "notebook"))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m plots RUN_DIR... [--out DIR] [--label TEXT]... [--resummarize]``;
    errors -> message, exit 2."""
    parser = add_arguments(argparse.ArgumentParser(
        prog="plots", description="Summary, figures and report of run directories."))
    args = parser.parse_args(argv)
    try:
        return run_args(args)
    except ValueError as exc:
        print(f"plots: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
