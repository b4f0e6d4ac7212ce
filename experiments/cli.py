"""The ``aspan`` command line: run, validate, list, plot, clean, node, trace and deploy.

It lives in the application layer (``experiments``): it wires the runner, the plots and the
Pi tasks together, which the protocol packages must not know (tests/test_layers.py).
``python -m experiments`` runs it without the installed ``aspan`` script.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from experiments.schema import Experiment


def _cmd_validate(args: argparse.Namespace) -> int:
    """Check every file; every error of every file is printed (one line each), exit 2 if any."""
    from experiments.stopping import EXIT_USAGE
    from experiments.runner import check_backend_support
    from experiments.schema import ExperimentError, load_file
    failed = 0
    for f in args.files:
        notes: list[str] = []
        try:
            exp = load_file(f, args.set, notes)
            # what the file's backend (or --backend) cannot emulate, refused here as run refuses it
            check_backend_support(exp, args.backend or exp.base.backend)
        except ExperimentError as e:
            failed += 1
            for err in e.errors:
                print(f"aspan: error: {err}", file=sys.stderr)
            continue
        _warn(exp, notes)
        reps = exp.base.repetitions
        print(f"{f}: ok: {exp.name}, {len(exp.variants)} variant(s) x {reps} repetition(s): "
              + ", ".join(v.name for v in exp.variants))
    return EXIT_USAGE if failed else 0


def _warn(exp: Experiment, notes: list[str] = ()) -> None:  # type: ignore[assignment]
    """What runs but gives numbers a peer would not get (experiments.advice), and the ``--set`` items a
    variant overrides, on stderr; nothing refused."""
    from experiments.advice import advice
    for line in [*notes, *advice(exp)]:
        print(f"aspan: warning: {line}", file=sys.stderr)


def _cmd_run(args: argparse.Namespace) -> int:
    from experiments.runner import apply_overrides, print_run_outputs, run_experiment, run_statuses
    from experiments.schema import ExperimentError, load_file
    from experiments.stopping import exit_status
    notes: list[str] = []
    exp = load_file(args.experiment, args.set, notes)
    exp = apply_overrides(exp, args.repetitions, args.variants)
    _warn(exp, notes)
    if args.progress:   # the repetitions' live line on a pipe too (experiments.progress); a terminal has it anyway
        import os
        from experiments.progress import PROGRESS_ENV
        os.environ[PROGRESS_ENV] = "1"
    backend = args.backend or ("pi" if args.inventory else None)
    if args.inventory and backend != "pi":
        raise ExperimentError("--inventory", "inventory", f"applies to --backend pi only, not {backend}")
    options = None
    if (backend or exp.base.backend) == "pi":
        from experiments.deploy_cli import pi_backend_options
        options = pi_backend_options(args.inventory, exp)
    run_dir = run_experiment(exp, backend=backend, out=Path(args.out) if args.out else None,
                             jobs=args.jobs, plot=not args.no_plot, backend_options=options, command=args.argv,
                             scheduler=args.scheduler)
    if options is not None:
        from experiments.deploy_cli import report_failures
        report_failures(run_dir)
    print_run_outputs(run_dir, plotted=not args.no_plot)
    _print_overview(run_dir)
    return exit_status(run_statuses(run_dir), len(exp.variants) * exp.base.repetitions)


def _cmd_list(args: argparse.Namespace) -> int:
    """The shipped experiments (or the files given): backend, variants, size, how long they take."""
    from experiments.listing import listed, table
    root = Path(__file__).resolve().parent
    files = [Path(f) for f in args.files] or sorted(root.glob("*.yaml"))
    rows = [listed(f, Path.cwd(), None if args.files else str(f.relative_to(root.parent))) for f in files]
    print(table(rows))
    print("\nat most: real-time backends, every repetition until limits.max_duration_s; last run here: the newest "
          "finished run under the file's out directory (from this directory). The sim's time is its CPU's.")
    return 2 if any(r.error for r in rows) else 0

def _cmd_summary(args: argparse.Namespace) -> int:
    """``aspan summary RUN``: the table of means of any run (plots/overview.py); nothing is written into the run."""
    from plots.data import load_run
    from plots.logs import check_run_dir
    from plots.overview import overview_lines
    data = load_run(check_run_dir(Path(args.run_dir)), write=False)
    print("\n".join(overview_lines(data, args.baseline)))
    return 0


def _print_overview(run_dir: Path) -> None:
    """The end of ``aspan run``: the run's table of means and where its report is."""
    from plots.data import load_run
    from plots.overview import overview_lines
    print()
    print("\n".join(overview_lines(load_run(run_dir, write=False))))


def _cmd_plot(args: argparse.Namespace) -> int:
    from plots.cli import run_args
    return run_args(args)


def _cmd_node(args: argparse.Namespace) -> int:
    from experiments.backends.node_main import main as node_main
    return node_main(args.config)


def _cmd_clean(args: argparse.Namespace) -> int:
    """Remove leftovers of crashed netns runs (namespaces aspn-*, their processes, the safety route)."""
    import os
    if os.geteuid() != 0:
        print("aspan clean: needs root (network namespaces)", file=sys.stderr)
        return 2
    from experiments.backends.netns import clean
    done = clean(force=args.force)
    print("\n".join(done) if done else "nothing to clean")
    return 0


EXIT_CODES = """exit codes:
  0    ok: every repetition ran and ended ok (validate: every file is valid)
  1    some repetition failed or is incomplete (summary.csv says which); deploy: a host failed
  2    a bad experiment or inventory file, or a bad option: nothing ran
  130  interrupted by Ctrl-C (SIGINT) or SIGTERM: the run's record is on disk

Start with: make demo (a first run in virtual time, about 4 minutes, ending in figures and a report);
aspan list shows the shipped experiments; the guide is docs/GUIDE.md, every YAML field docs/YAML.md."""


def _version() -> str:
    """The installed distribution's version (pyproject.toml), else 'unknown' (a source tree not installed)."""
    from experiments.provenance import project_version
    return project_version() or "unknown (not installed: pip install -e .)"


def build_parser() -> argparse.ArgumentParser:
    from experiments.backend_registry import BACKENDS   # imports no backend
    p = argparse.ArgumentParser(prog="aspan", description="A-SPAN TCP snooping testbed: run experiments on a "
                                "simulated, loopback, namespace or Raspberry Pi mesh, and plot their results.",
                                epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = sub.add_parser("validate", help="check experiment YAML files without running anything")
    v.add_argument("files", nargs="+", metavar="EXP.yaml", help="experiment files to check")
    v.add_argument("--backend", choices=list(BACKENDS), default=None,
                   help="check against this backend (default: each file's backend field), as run --backend would")
    v.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="set a field at the file's top level, the value read as YAML (repeatable), e.g. --set "
                        "tcp.rack=true; a variant that sets the field itself keeps its value (a warning says so)")
    v.set_defaults(func=_cmd_validate)

    r = sub.add_parser("run", help="run an experiment and write logs, summary.csv and figures",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("experiment", metavar="EXP.yaml", help="the experiment file (experiments/*.yaml)")
    r.add_argument("--backend", choices=list(BACKENDS), default=None,
                   help="default: the YAML's backend field")
    r.add_argument("--out", default=None, help="output directory (default: the YAML's out field)")
    r.add_argument("--repetitions", type=int, default=None, help="override the YAML's repetitions")
    r.add_argument("--jobs", type=int, default=None, help="parallel repetitions (sim backend; default 2)")
    r.add_argument("--no-plot", action="store_true", help="write summary.csv but no figures")
    r.add_argument("--progress", action="store_true",
                   help="a live line per repetition (seconds, segments delivered per flow, ETA) even when stderr is "
                        "not a terminal (on a terminal it is drawn anyway)")
    r.add_argument("--variants", default=None, metavar="PATTERNS",
                   help="run only the variants matching these comma-separated shell patterns, e.g. 'disc-*,lossy-reno'")
    r.add_argument("--scheduler", default=None, metavar="tcp://HOST:8786",
                   help="run the repetitions on this Dask scheduler's workers (sim and local backends; needs "
                        "pip install -e '.[cluster]'; docs/GUIDE.md, 'Running on a Dask cluster')")
    r.add_argument("--inventory", default=None, metavar="INV.yaml",
                   help="pi backend: the hosts (implies --backend pi); see aspan deploy")
    r.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="set a field at the file's top level, the value read as YAML (repeatable), e.g. --set "
                        "tcp.rack=true; a variant that sets the field itself keeps its value (a warning says so)")
    r.set_defaults(func=_cmd_run)

    ls = sub.add_parser("list", help="the shipped experiments: backend, variants, size and how long they take")
    ls.add_argument("files", nargs="*", metavar="EXP.yaml", help="these files instead of experiments/*.yaml")
    ls.set_defaults(func=_cmd_list)

    sm = sub.add_parser("summary", help="the table of means (95 %% intervals) per variant and flow of a run, "
                        "each variant against the baseline, and where its report is")
    sm.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<name>/<stamp>)")
    sm.add_argument("--baseline", default=None, metavar="VARIANT",
                    help="the variant the others are compared with (default: the experiment's baseline field, "
                         "else the first variant)")
    sm.set_defaults(func=_cmd_summary)

    pl = sub.add_parser("plot", help="figures and report.md from one or more run directories")
    from plots.cli import add_arguments as add_plot_arguments
    add_plot_arguments(pl)
    pl.set_defaults(func=_cmd_plot)
    c = sub.add_parser("clean", help="remove leftovers of a crashed netns run (root)")
    c.add_argument("--force", action="store_true",
                   help="also remove the namespaces of netns runs that are still going")
    c.set_defaults(func=_cmd_clean)
    n = sub.add_parser("node", help="run one mesh node (started by the runner; see docs/LOGS.md)")
    n.add_argument("--config", required=True, help="node configuration written by the runner")
    n.set_defaults(func=_cmd_node)

    t = sub.add_parser("trace", help="link traces: what each directed link delivered, per interval")
    tsub = t.add_subparsers(dest="trace_command", required=True, metavar="TRACE_COMMAND")
    te = tsub.add_parser("extract", help="one table per run: per directed link and interval, the probes sent "
                         "and heard, delivery and ETX (docs/LOGS.md, \"Link traces\")")
    te.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<name>/<stamp>)")
    te.add_argument("-o", "--out", default=None, metavar="FILE",
                    help="trace.parquet or trace.csv (default: RUN_DIR/trace.parquet)")
    te.add_argument("--variant", default=None, help="only this variant")
    te.add_argument("--repetition", type=int, default=None, help="only this repetition")
    te.add_argument("--probes-only", action="store_true",
                    help="leave out what the data met (a row per data transmission and link, source data)")
    te.set_defaults(func=_cmd_trace_extract)
    tm = tsub.add_parser("export-mahimahi", help="one directed link as a Mahimahi mm-link trace: a line per "
                         "delivery opportunity (ms), nominal rate x recorded delivery (routing/links/mahimahi.py)")
    tm.add_argument("source", metavar="RUN_DIR|TRACE", help="a run directory, or a trace (.parquet/.csv) "
                    "aspan trace extract wrote")
    tm.add_argument("--link", required=True, help="the directed link, \"A>B\"")
    tm.add_argument("--run", default=None, help="<variant>/rep<k>, when the source holds more than one")
    tm.add_argument("--rate-mbps", type=float, default=10.0,
                    help="the link's nominal rate, what it carries at 100 %% delivery (default 10: the sim's links)")
    tm.add_argument("-o", "--out", required=True, metavar="FILE", help="the Mahimahi trace to write")
    tm.set_defaults(func=_cmd_trace_mahimahi)
    tc = tsub.add_parser("compare", help="the loss of every directed link over time, of two or more runs or "
                         "traces side by side: a markdown table (e.g. a recording and its replay)")
    tc.add_argument("sources", nargs="+", metavar="RUN_DIR|TRACE", help="run directories, or traces (.parquet/.csv)")
    tc.add_argument("--run", action="append", default=None, metavar="V|V/repK",
                    help="once per source, in order: only this variant (or repetition); 'all': every one")
    tc.add_argument("--label", action="append", default=None, metavar="TEXT",
                    help="once per source, in order (default: 1, 2, ...)")
    tc.add_argument("--bin-s", type=float, default=4.0, help="bin width in seconds after the flows' start (default 4)")
    tc.set_defaults(func=_cmd_trace_compare)

    from experiments.deploy_cli import add_deploy_parser
    add_deploy_parser(sub)
    return p


def _cmd_trace_extract(args: argparse.Namespace) -> int:
    """``aspan trace extract``: exit 1 when the run recorded no link (nothing to write), 2 on a bad argument."""
    import pandas as pd
    from experiments.trace import extract, write
    from plots.logs import check_run_dir
    run_dir = check_run_dir(Path(args.run_dir))
    out = Path(args.out) if args.out else run_dir / "trace.parquet"
    if out.suffix not in (".parquet", ".csv"):
        raise ValueError(f"--out {out}: expected a .parquet or .csv file name")
    df = extract(run_dir, args.variant, args.repetition, fates=not args.probes_only)
    if df.empty:
        print(f"aspan: error: {run_dir}: no etx events with probe counters (older runs have none)",
              file=sys.stderr)
        return 1
    write(df, out)
    data = df["source"] == "data" if "source" in df else pd.Series(False, index=df.index)
    print(f"{out}: {int((~data).sum())} intervals of {df['link'].nunique()} directed links, "
          f"{int(data.sum())} data transmissions on {df.loc[data, 'link'].nunique()} of them, "
          f"{df.groupby(['variant', 'repetition']).ngroups} repetition(s)")
    return 0


def _cmd_trace_mahimahi(args: argparse.Namespace) -> int:
    """``aspan trace export-mahimahi``: exit 2 when the source, run or link cannot be exported (named)."""
    from experiments.trace import extract, mahimahi_opportunities
    from routing.links import mahimahi
    from tracefiles import TraceError, read_rows, write_mahimahi
    src = Path(args.source)
    if not args.rate_mbps > 0:
        raise ValueError(f"--rate-mbps must be > 0, got {args.rate_mbps}")
    try:
        rows = extract(src).to_dict("records") if src.is_dir() else read_rows(src)
        ms = mahimahi_opportunities(rows, args.link, args.run, args.rate_mbps, str(src))
    except TraceError as e:
        print(f"aspan: error: --{e.key if e.key != 'file' else 'source'}: {e}", file=sys.stderr)
        return 2
    n = write_mahimahi(args.out, ms)
    print(f"{args.out}: {n} delivery opportunities over {ms[-1] / 1000:.1f} s "
          f"({n * mahimahi.PACKET_SIZE * 8 / ms[-1] / 1000:.2f} Mbit/s on average) of {args.link}")
    return 0


def _cmd_trace_compare(args: argparse.Namespace) -> int:
    """``aspan trace compare``: exit 1 when a source recorded no link, 2 on a bad argument (named)."""
    from experiments.trace import compare_table, extract, select, table
    from tracefiles import TraceError, read_rows
    n = len(args.sources)
    if n < 2:
        raise ValueError("give at least two runs or traces to compare")
    for opt, given in (("--run", args.run), ("--label", args.label)):
        if given is not None and len(given) != n:
            raise ValueError(f"{opt} given {len(given)} time(s) for {n} sources; give one per source, in order")
    labels = args.label or [str(i + 1) for i in range(n)]
    tables = []
    for i, src in enumerate(map(Path, args.sources)):
        try:
            df = extract(src) if src.is_dir() else table(read_rows(src))
        except TraceError as e:
            raise ValueError(str(e)) from e
        if df.empty:
            print(f"aspan: error: {src}: no etx events with probe counters", file=sys.stderr)
            return 1
        run = args.run[i] if args.run else None
        tables.append(select(df, None if run == "all" else run, str(src)))
    print(compare_table(tables, labels, args.bin_s))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Exit codes (docs/GUIDE.md, "Command line"): 0 ok, 1 a repetition failed or is incomplete (or the disk
    filled up or failed), 2 a bad file or usage, 130 interrupted (SIGINT or SIGTERM)."""
    from experiments.stopping import EXIT_INTERRUPTED, EXIT_NOT_OK, EXIT_USAGE, stop_reason
    from fieldspec import ConfigError
    args = build_parser().parse_args(argv)
    args.argv = ["aspan", *(sys.argv[1:] if argv is None else argv)]   # the run's provenance.json
    try:
        return args.func(args)
    except ConfigError as e:   # an experiment or inventory file, or an option: names file and field
        for err in e.errors:   # every error of the file, one line each
            print(f"aspan: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as e:
        print(f"aspan: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as e:   # SIGINT, or SIGTERM (experiments.stopping.Terminated)
        print(f"aspan: interrupted ({stop_reason(e)})", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as e:   # a full or failing disk (experiments.records): names the file and the reason
        from experiments.records import is_disk_error
        if not is_disk_error(e):
            raise
        print(f"aspan: error: {e}", file=sys.stderr)
        return EXIT_NOT_OK


if __name__ == "__main__":
    sys.exit(main())
