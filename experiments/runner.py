"""Run an experiment: every (variant, repetition) on a backend, then summary and figures."""
from __future__ import annotations

import datetime as _dt
import json
import os
import signal
import sys
from fnmatch import fnmatchcase
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

import yaml

from experiments.backend_registry import BACKENDS, RepRunner
from experiments.backends.loopback import refuse_local
from experiments.build import (measured_routes, refuse_link_loss, refuse_route_hops, refuse_routing_daemon,
                               refuse_user_tcp, route_record, route_tables)
from experiments.cluster import CLUSTER_REFUSED
from experiments.congestion import refuse_congestion
from experiments.link_spec import refuse_link
from experiments.medium_spec import refuse_medium
from experiments.provenance import process_provenance, run_provenance
from experiments.records import Reserve, drop_reserve, hold_reserve, is_disk_error, write_whole
from experiments.schema import SCHEMA, Experiment, ExperimentError, Variant
from experiments.stopping import sigterm_as_interrupt, stops_deferred
from fieldspec import INT, Field, check_value, in_range

JOBS = Field(INT, None, in_range(1), "repetitions run at once (--jobs)")
Task = tuple[str, Variant, int, str, "dict[str, Any] | None"]   # (backend, variant, repetition, rep dir, options)


def backend_runner(backend: str, options: dict[str, Any] | None = None) -> RepRunner:
    """The per-repetition entry point of a backend of :data:`experiments.backend_registry.BACKENDS`
    (its module is imported here, lazily: netns and pi need extra packages).

    ``options`` carries what a backend needs besides the experiment (pi: ``inventory``).
    """
    entry = BACKENDS.get(backend)
    if entry is None:
        raise ExperimentError("--backend", "backend", f"backend {backend!r} is not available in this version "
                              f"(implemented: {', '.join(BACKENDS)})")
    return entry.make_run_rep(options or {})


def check_backend_support(exp: Experiment, backend: str) -> None:
    """Refuse, before anything starts, settings a backend would silently ignore.

    The netns backend runs real kernel TCP: every snoop scheme runs in its NFQUEUE handlers except
    SNACK, whose option neither the kernel receiver sends nor the kernel sender reads
    (docs/VARIANTS.md, "Which schemes can run on kernel TCP").  A medium runs on the sim and local
    backends (experiments.medium_spec.MEDIUM_REFUSED says why not on the others); an explicit ``link``
    field on sim, local and netns only (experiments.link_spec.LINK_REFUSED); on the kernel data plane (netns, pi
    kernel) no flow's route longer than the IPv4 option's 4-bit hop count
    (experiments.build.refuse_route_hops), no loss per link (experiments.build.refuse_link_loss) and no
    user-space TCP field set away from its default (experiments.build.refuse_user_tcp); on
    local, a mesh
    too large for its loopback addresses or for the medium process's open-file limit
    (experiments.backends.loopback.refuse_local).
    """
    variants = [(v.name, v.config) for v in exp.variants]
    refuse_medium(exp.source, variants, backend, ExperimentError)
    refuse_link(exp.source, variants, backend, ExperimentError)
    refuse_route_hops(exp.source, variants, backend, ExperimentError)
    refuse_local(exp.source, variants, backend, ExperimentError)
    refuse_link_loss(exp.source, variants, backend, ExperimentError)
    refuse_routing_daemon(exp.source, variants, backend, ExperimentError)
    refuse_user_tcp(exp.source, variants, backend, ExperimentError,
                    {k: f.default for k, f in SCHEMA["tcp"].items()})
    refuse_congestion(exp.source, variants, backend, ExperimentError)
    if backend != "netns":
        return
    for v in exp.variants:
        if v.config.snoop.scheme == "snack":
            raise ExperimentError(exp.source, f"variants[{v.name}].snoop.scheme",
                                  "kernel TCP has no SNACK option, so SNACK-Snoop would see no SNACK and "
                                  "SNACK-TCP cannot run; run it with --backend sim or local")
        if v.config.snoop.sender_qos == "adaptive" and v.config.netns.handlers != "snoop":
            raise ExperimentError(exp.source, f"variants[{v.name}].snoop.sender_qos",
                                  "the adaptive sender runs in the sender's NFQUEUE snoop handler (it stamps "
                                  "pkt_qos and hears the ACKs); with netns.handlers "
                                  f"{v.config.netns.handlers!r} there is none")
        if v.config.capture.enabled and v.config.netns.handlers != "snoop":
            raise ExperimentError(exp.source, f"variants[{v.name}].capture.enabled",
                                  "the netns capture is written by the snoop handler; with netns.handlers "
                                  f"{v.config.netns.handlers!r} no handler sees the packets")


def apply_overrides(exp: Experiment, repetitions: int | None, variants: str | None) -> Experiment:
    """``exp`` with ``--repetitions`` and ``--variants`` over the file's, checked as the file's fields are (the
    schema's ``repetitions`` field): a bad one is an ExperimentError naming the option, before anything starts."""
    if repetitions is not None:
        exp = exp.with_repetitions(check_value("--repetitions", "repetitions", SCHEMA["repetitions"],
                                               repetitions, ExperimentError))
    if variants is not None:
        exp = exp.with_variants(select_variants(exp, variants))
    return exp


def select_variants(exp: Experiment, patterns: str) -> list:
    """The variants whose names match one of the comma-separated shell patterns, in the file's order."""
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    chosen = [v for v in exp.variants if any(fnmatchcase(v.name, p) for p in pats)]
    if not chosen:
        raise ExperimentError(exp.source, "variants", f"--variants {patterns!r} matches none of "
                              + ", ".join(v.name for v in exp.variants))
    return chosen


def check_run(exp: Experiment, backend: str, jobs: int | None = None,
              backend_options: dict[str, Any] | None = None, scheduler: str | None = None) -> None:
    """Everything ``aspan run`` refuses before anything starts, raised as an ExperimentError naming the
    field: an unavailable backend or a bad inventory, what the backend cannot emulate
    (:func:`check_backend_support`, which ``aspan validate`` calls alone: it has no run options), and a
    ``--jobs`` the backend cannot take, a backend no cluster runs (``--scheduler``; what the cluster's
    workers cannot do is asked of them when connected: experiments.cluster.check_cluster).
    ``run_experiment`` and ``aspan deploy run --dry-run`` call it, so a dry run refuses exactly what the
    run would."""
    backend_runner(backend, backend_options)
    check_backend_support(exp, backend)
    if scheduler is not None:
        if backend in CLUSTER_REFUSED:
            raise ExperimentError("--scheduler", "scheduler", f"backend {backend}: {CLUSTER_REFUSED[backend]}")
        if jobs is not None:
            raise ExperimentError("--jobs", "jobs", "with --scheduler the cluster's workers run the repetitions; "
                                  "--jobs sets this host's pool")
    if jobs is not None:
        check_value("--jobs", "jobs", JOBS, jobs, ExperimentError)
        if BACKENDS[backend].exclusive and jobs > 1:
            raise ExperimentError("--jobs", "jobs", BACKENDS[backend].exclusive)


def new_run_dir(out: Path, name: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = out / name / stamp
    n = 1
    while run_dir.exists():
        n += 1
        run_dir = out / name / f"{stamp}-{n}"
    run_dir.mkdir(parents=True)
    return run_dir


def _rep_dir(run_dir: Path, v: Variant, rep: int) -> Path:
    return run_dir / v.name / f"rep{rep}"


def _one(args: Task) -> dict[str, Any]:
    """One repetition, in the process that runs it (this one, a pool's worker or a Dask worker)."""
    backend, variant, rep, rep_dir, options = args
    try:
        meta = backend_runner(backend, options)(variant, rep, Path(rep_dir))
    finally:   # however it ended, its meta.json says which host, Python and packages ran it
        _add_provenance(Path(rep_dir))
    meta["provenance"] = process_provenance()
    if variant.config.logs.compact:          # the repetition has ended: its logs are complete
        from plots.compact import compact_rep
        compact_rep(Path(rep_dir))
    return meta


def _add_provenance(rep_dir: Path) -> None:
    """``provenance`` (experiments.provenance.process_provenance) into the repetition's meta.json, if the
    backend wrote one (a repetition that failed before its directory was made has none)."""
    path = rep_dir / "meta.json"
    if not path.is_file():
        return
    meta = json.loads(path.read_text())
    meta["provenance"] = process_provenance()
    write_whole(path, json.dumps(meta, indent=1, sort_keys=True) + "\n")


def run_experiment(exp: Experiment, backend: str | None = None, out: Path | None = None,
                   jobs: int | None = None, plot: bool = True,
                   progress: Callable[[str], None] | None = None,
                   backend_options: dict[str, Any] | None = None, command: list[str] | None = None,
                   scheduler: str | None = None) -> Path:
    """Run every (variant, repetition); returns the run directory.  ``command``: the command line that
    asked for the run, for RUN_DIR/provenance.json (default: this process's).  ``scheduler``: the address
    of a Dask scheduler whose workers run the repetitions (experiments.cluster), instead of this host."""
    backend = backend or exp.base.backend
    check_run(exp, backend, jobs, backend_options, scheduler)
    say = progress or (lambda s: print(s, file=sys.stderr, flush=True))
    client = None
    if scheduler is not None:
        from experiments.cluster import check_cluster, connect
        client = connect(scheduler)
    try:
        if client is not None:
            for note in check_cluster(client, backend):   # refuses what its workers cannot run
                say(f"note: {note}")
            executor = f"Dask scheduler {scheduler}, {len(client.scheduler_info()['workers'])} worker(s)"
        else:
            if jobs is None:
                jobs = min(os.cpu_count() or 1, 2) if BACKENDS[backend].parallel else 1
            executor = f"this host, up to {jobs} repetition(s) at a time"
        out = Path(out or exp.base.out)
        run_dir = new_run_dir(out, exp.name)
        # room for the records of the run's ending on a full disk (experiments.records); on a disk full already,
        # WriteError: `aspan run` says which file and why, exit status 1
        reserve = hold_reserve(run_dir)
        try:
            prov = run_provenance(command if command is not None else sys.argv, backend, executor)
            write_whole(run_dir / "provenance.json", json.dumps(prov, indent=1) + "\n")

            def execute(tasks: list[Task]) -> None:
                if client is None:
                    _run_tasks(tasks, jobs or 1, say, reserve)
                else:
                    from experiments.cluster import run_tasks
                    run_tasks(client, tasks, _one, lambda i, task, meta: say(_line(i, len(tasks), task[1], task[2], meta)),
                              lambda: _check_disk(reserve))
            return _run_in(exp, backend, run_dir, plot, say, execute, backend_options)
        finally:
            drop_reserve()
    finally:
        if client is not None:
            client.close()


def _run_in(exp: Experiment, backend: str, run_dir: Path, plot: bool, say: Callable[[str], None],
            execute: Callable[[list[Task]], None], backend_options: dict[str, Any] | None) -> Path:
    resolved = exp.resolved()
    resolved["backend"] = backend
    write_whole(run_dir / "experiment.yaml", yaml.safe_dump(resolved, sort_keys=False))
    write_routes(run_dir, exp)
    reps = exp.base.repetitions
    tasks = [(backend, v, r, str(_rep_dir(run_dir, v, r)), backend_options) for v in exp.variants for r in range(reps)]
    say(f"{exp.name}: {len(exp.variants)} variant(s) x {reps} repetition(s) on backend {backend} -> {run_dir}")
    finished = False
    disk_error: OSError | None = None
    with sigterm_as_interrupt():   # SIGTERM ends a run like Ctrl-C (issue 13, item 1)
        try:
            execute(tasks)
            finished = True
        except OSError as e:
            if not is_disk_error(e):
                raise
            disk_error = e      # disk full or failing: the run stops here, its records are written below
        finally:
            # every ending writes summary.csv with the rows it has (an interrupted run too)
            with stops_deferred():
                write_summary_whole(run_dir)
            if not finished:
                say(f"{exp.name}: stopped; summary of the repetitions that ran: {run_dir / 'summary.csv'}")
    if disk_error is not None:
        raise disk_error
    if plot:
        from plots.cli import plot_command
        plot_command([run_dir])
    return run_dir


def write_routes(run_dir: Path, exp: Experiment) -> None:
    """RUN_DIR/routes.json, before anything starts: per variant the routes every backend will use
    (experiments.build.route_record).  With link-state routing (routing.metric etx, routing.dynamic) the
    nodes compute their routes from the link state they flood, so the routes they ended with are in each
    repetition's meta.json instead, and every change in the node logs (``route`` events)."""
    out: dict[str, Any] = {}
    for v in exp.variants:
        if not measured_routes(v.config):
            out[v.name] = route_record(v.config, route_tables(v.config))
        else:
            when = "changing with the link state" if v.config.routing.dynamic else "fixed when settling ends"
            if v.config.routing.daemon != "builtin":
                when += f", computed by {v.config.routing.daemon}"
            out[v.name] = {"metric": v.config.routing.metric, "dynamic": v.config.routing.dynamic,
                           "measured": True, "links": [list(p) for p in v.config.topology.links],
                           "note": f"link-state routes, {when}: <variant>/rep<k>/meta.json and the route events"}
    write_whole(run_dir / "routes.json", json.dumps(out, indent=1) + "\n")


def write_summary_whole(run_dir: Path) -> None:
    """``summary.csv`` of the repetitions that have a meta.json, written whole (through experiments.records:
    on a full disk in the room of the run's reserve), or WriteError naming it."""
    from plots.run_summary import summary_text
    write_whole(run_dir / "summary.csv", summary_text(run_dir))


def _worker_init() -> None:
    """A worker ends at once on SIGTERM (the runner's terminate), not through the runner's handler,
    which it would inherit and the pool would catch as a task's error."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _check_disk(reserve: Reserve | None) -> None:
    """Raise the reserve's error once a write found the disk full."""
    full = reserve.used() if reserve is not None else None
    if full is not None:
        raise full


def _run_tasks(tasks: list[Task], jobs: int,
               say: Callable[[str], None], reserve: Reserve | None = None) -> None:
    """Every repetition, in order; stops once a write found the disk full (the reserve's error is raised; a
    worker process raises its own, which ends the pool)."""
    total = len(tasks)
    if jobs > 1 and total > 1:
        pool = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init)
        try:
            for i, (task, meta) in enumerate(zip(tasks, pool.map(_one, tasks)), 1):
                say(_line(i, total, task[1], task[2], meta))
        except BaseException:
            # interrupted (or a worker failed): nothing new starts, and the workers stop now rather
            # than finishing their repetitions after the runner has gone
            workers = list((getattr(pool, "_processes", None) or {}).values())   # shutdown forgets them
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in workers:
                proc.terminate()
            for proc in workers:
                proc.join(10)
            raise
        pool.shutdown()
    else:
        for i, task in enumerate(tasks, 1):
            meta = _one(task)
            say(_line(i, total, task[1], task[2], meta))
            _check_disk(reserve)


def run_statuses(run_dir: Path) -> list[str | None]:
    """The ``status`` of every repetition of ``run_dir`` that wrote its meta.json."""
    out = []
    for meta in sorted(Path(run_dir).glob("*/rep*/meta.json")):
        try:
            out.append(json.loads(meta.read_text()).get("status"))
        except ValueError:
            out.append(None)
    return out


def print_run_outputs(run_dir: Path, plotted: bool) -> None:
    """Where a finished run put its results (``aspan run`` and ``aspan deploy run``)."""
    print(f"run directory: {run_dir}")
    print(f"summary:       {run_dir / 'summary.csv'}")
    if plotted:
        print(f"figures:       {run_dir / 'figures'}  (report: {run_dir / 'report.md'})")


def _line(i: int, total: int, v: Variant, rep: int, meta: dict[str, Any]) -> str:
    extra = f" ({meta['error']})" if meta.get("error") else ""
    return f"[{i}/{total}] {v.name} rep {rep}: {meta.get('status')}{extra}"
