"""``aspan deploy setup|mesh|routes|run|status|stop|gather|doctor``: the Pi mesh in one command each.

The command line of ``deploy``'s Fabric tasks; it lives here, in the application layer,
because ``deploy run`` uses the runner and ``deploy routes`` reads an experiment file
(``deploy`` itself imports nothing of ``experiments``).

Every subcommand takes ``--inventory INV.yaml``, ``--hosts`` (a subset, by host or
node name) and ``--dry-run`` (print every command per host, connect nowhere).  Each
host's outcome is one line; a host that failed is named with what went wrong, the
others carry on, and the exit code is 1 when any host failed.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any, Callable

EXIT_HOST_FAILED = 1
DEPLOY_DESCRIPTION = """Set up and run the Raspberry Pi mesh from this machine, over SSH, one step per command:
setup (install the project on every Pi), mesh (the WiFi in IBSS mode with its mesh address),
routes (kernel routes, kernel data plane only), run (an experiment, as aspan run --backend pi),
status, stop (after a crash), gather (copy the Pis' run directories here), doctor (what breaks a
bench on day one: IBSS, regulatory domain, power save, NetworkManager, clock, nfnetlink_queue, disk,
version; run checks it first and refuses a run on a failed check).

Needs the pi extra: pip install -e '.[pi]'.  Every command takes -i INV.yaml (the hosts),
--hosts (a subset) and --dry-run (print every command per host, connect nowhere).  Each host's
outcome is one line; a failed host is named with what went wrong, the others carry on, and the
exit code is 1 when any host failed (2: a bad inventory or option).  docs/PI.md walks through it."""


def pi_backend_options(inventory: str | None, exp: Any, dry_run: bool = False) -> dict[str, Any]:
    """The runner's backend options for the pi backend: the loaded inventory, checked against ``exp``; then the
    doctor's checks of the experiment's hosts (:func:`pre_run_doctor`), which refuse the run on a failed check."""
    need_fabric()
    from deploy.inventory import load_inventory_file
    from experiments.backends.pi import check_hosts
    from experiments.schema import ExperimentError
    if not inventory:
        raise ExperimentError("--inventory", "inventory", "the pi backend needs --inventory INV.yaml "
                              "(see docs/PI.md)")
    inv = load_inventory_file(inventory, check_files=not dry_run)
    from experiments.backends.pi_common import experiment_graph
    for v in exp.variants:
        check_hosts(inv, v.config.topology.nodes)
        experiment_graph(v.config)               # the MAC filter needs the links: refused before any run
    from experiments.backends.pi_kernel import check_variants
    check_variants(exp, inv)
    from experiments.runner import check_backend_support
    check_backend_support(exp, "pi")            # what the run refuses without a host, refused before the doctor
    nodes = {n for v in exp.variants for n in v.config.topology.nodes}
    kernel = any(v.config.pi.data_plane == "kernel" for v in exp.variants)
    pre_run_doctor(inv, [h for h in inv.hosts if h.node in nodes], inventory, kernel, dry_run,
                   kernel_congestion(exp))
    return {"inventory": inv, "dry_run": dry_run}


def kernel_congestion(exp: Any) -> tuple[str, ...]:
    """The congestion controls the kernel data plane's senders run (``netns.congestion`` of its variants), in order."""
    return tuple(dict.fromkeys(v.config.netns.congestion for v in exp.variants if v.config.pi.data_plane == "kernel"))


def doctor_report(inv: Any, hosts: list[Any], inventory: str, kernel: bool | None, dry_run: bool,
                  echo: Any = None, congestion: tuple[str, ...] = ()) -> tuple[list[str], int, list[str]]:
    """The doctor's report on ``hosts``: (lines, hosts that failed a check, lines of hosts it could not reach)."""
    from deploy import doctor
    from deploy.hosts import close_all, describe_error, open_remotes
    remotes = open_remotes(hosts, dry_run=dry_run, echo=echo)
    contexts = {h.name: doctor.context(h, inv, kernel, inventory, congestion) for h in hosts}
    try:
        results = doctor.examine_hosts(remotes, contexts)
    finally:
        close_all(remotes)
    lines: list[str] = []
    unreachable: list[str] = []
    failed = 0
    for r in remotes:
        v = results[r.name]
        if isinstance(v, BaseException):
            unreachable.append(f"{r.host.label()}: FAILED: {describe_error(v)}")
            lines.append(unreachable[-1])
            continue
        lines += doctor.report_lines(r.name, v)
        failed += bool(doctor.failed(v))
    return lines, failed, unreachable


def pre_run_doctor(inv: Any, hosts: list[Any], inventory: str, kernel: bool, dry_run: bool,
                   congestion: tuple[str, ...] = ()) -> None:
    """The doctor's checks before a run (aspan run --backend pi, aspan deploy run): a failed check refuses the
    run with the report (deploy.doctor.DoctorRefused), nothing started.  A host the doctor cannot reach is
    named and left to the run, whose check of each repetition fails that repetition naming it (docs/PI.md)."""
    from deploy import doctor
    if dry_run:
        print("[local] first the doctor's checks on every host (aspan deploy doctor): a failed check refuses the run")
    lines, failed, unreachable = doctor_report(inv, hosts, inventory, kernel, dry_run, sys.stdout if dry_run else None,
                                               congestion)
    if dry_run:
        return
    if failed:
        for ln in lines:
            print(f"doctor: {ln}", file=sys.stderr)
        raise doctor.DoctorRefused(f"the doctor found {failed} of {len(hosts)} host(s) failing a check (the report "
                                   f"above): nothing was started; fix them, then aspan deploy doctor -i {inventory}")
    for ln in unreachable:
        print(f"doctor: {ln} (the run's own check names it)", file=sys.stderr)
    for h in hosts:
        mine = [ln for ln in lines if ln.startswith(f"{h.name}: ")]
        skipped = [ln.split(None, 3)[2].rstrip(":") for ln in mine if ln.split()[1:2] == [doctor.SKIP]]
        if mine:
            print(f"doctor: {h.name}: {len(mine) - len(skipped)} check(s) passed"
                  + (f", skipped: {', '.join(skipped)} (aspan deploy doctor says why)" if skipped else ""),
                  file=sys.stderr)


def need_fabric() -> None:
    """Fabric is an extra (``.[pi]``): say how to get it instead of a traceback."""
    import importlib.util
    if importlib.util.find_spec("fabric") is None:
        from experiments.schema import ExperimentError
        raise ExperimentError("aspan deploy", "fabric", "the Pi orchestration needs Fabric 3: "
                              "pip install -e '.[pi]'")


def _with_fabric(cmd: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A deploy subcommand that first checks Fabric is installed."""
    def run(args: argparse.Namespace) -> int:
        need_fabric()
        return cmd(args)
    return run


def report_failures(run_dir: Path) -> int:
    """Print one line per host for every repetition of a pi run that failed; returns how many failed."""
    import json
    failed = 0
    for meta_path in sorted(run_dir.glob("*/rep*/meta.json")):
        meta = json.loads(meta_path.read_text())
        if meta.get("status") in ("failed", "interrupted"):
            failed += 1
            print(f"{meta['variant']} rep {meta['repetition']}: {meta['status']}")
            for line in meta.get("host_report") or [meta.get("error") or "no error recorded"]:
                print(f"  {line}")
    return failed


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--inventory", required=True, metavar="INV.yaml", help="the hosts (see docs/PI.md)")
    p.add_argument("--hosts", default=None, help="comma-separated host or node names (default: every host)")
    p.add_argument("--dry-run", action="store_true", help="print every command per host; connect nowhere")
    p.add_argument("-v", "--verbose", action="store_true", help="print every command as it runs")


def add_deploy_parser(sub: Any) -> None:
    """Add ``deploy`` and its subcommands to the ``aspan`` parser (imports nothing heavy)."""
    d = sub.add_parser("deploy", help="set up and run the Raspberry Pi mesh over SSH (Fabric)",
                       description=DEPLOY_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    ds = d.add_subparsers(dest="deploy_command", required=True, metavar="COMMAND")

    s = ds.add_parser("setup", help="install the project on every host (offline: wheels uploaded)")
    _common(s)
    s.add_argument("--wheel", default=None, help="install this project wheel instead of building one")
    s.add_argument("--wheelhouse", default=str(Path("~/.cache/aspan/wheelhouse").expanduser()),
                   help="local cache of dependency wheels per host platform (default: %(default)s)")
    s.add_argument("--extra-index-url", default=None,
                   help="extra index for pip download (e.g. https://www.piwheels.org/simple for armv7l)")
    s.set_defaults(func=_with_fabric(_cmd_setup))

    m = ds.add_parser("mesh", help="wireless interface in IBSS mode with the static mesh address (idempotent)")
    _common(m)
    m.set_defaults(func=_with_fabric(_cmd_mesh))

    r = ds.add_parser("routes", help="static kernel routes and ip_forward (kernel-TCP mode; the overlay needs none)")
    _common(r)
    r.add_argument("--experiment", default=None, help="take the chain from this experiment (default: host order)")
    r.add_argument("--remove", action="store_true", help="delete the routes instead")
    r.set_defaults(func=_with_fabric(_cmd_routes))

    u = ds.add_parser("run", help="run an experiment on the hosts (= aspan run EXP --backend pi --inventory INV)")
    _common(u)
    u.add_argument("experiment", metavar="EXP.yaml", help="the experiment file (experiments/*.yaml)")
    u.add_argument("--out", default=None, help="output directory (default: the YAML's out field)")
    u.add_argument("--repetitions", type=int, default=None, help="override the YAML's repetitions")
    u.add_argument("--no-plot", action="store_true", help="write summary.csv but no figures")
    u.set_defaults(func=_with_fabric(_cmd_run))

    st = ds.add_parser("status", help="per host: reachable, installed version, running nodes, mesh interface, clock")
    _common(st)
    st.set_defaults(func=_with_fabric(_cmd_status))

    sp = ds.add_parser("stop", help="stop every aspan node the hosts run (SIGTERM, then SIGKILL) and undo what "
                                    "a crashed kernel-data-plane run left (rules, routes, sysctls)")
    _common(sp)
    sp.set_defaults(func=_with_fabric(_cmd_stop))

    dr = ds.add_parser("doctor", help="per host: IBSS, regulatory domain, power save, NetworkManager/wpa_supplicant/"
                                      "dhcpcd, clock, nfnetlink_queue, disk, version; each PASS, FAIL (with the fix) "
                                      "or SKIP (with the reason)")
    _common(dr)
    dr.add_argument("--experiment", default=None, metavar="EXP.yaml",
                    help="the experiment to check for (its data plane: nfnetlink_queue for pi.data_plane: kernel)")
    dr.set_defaults(func=_with_fabric(_cmd_doctor))

    g = ds.add_parser("gather", help="copy every node's files from the hosts into the local run directories")
    _common(g)
    g.add_argument("--out", default="runs", help="local directory the run paths are copied under (default: runs)")
    g.add_argument("--run", default=None, help="only this run, as <experiment>/<stamp> (default: every run)")
    g.set_defaults(func=_with_fabric(_cmd_gather))


# ---- helpers --------------------------------------------------------------------
def _remotes(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    from deploy.hosts import open_remotes
    from deploy.inventory import load_inventory_file
    inv = load_inventory_file(args.inventory, check_files=not args.dry_run)
    hosts = inv.select([h for h in (args.hosts or "").split(",") if h])
    echo = sys.stdout if (args.dry_run or args.verbose) else None
    return inv, open_remotes(hosts, dry_run=args.dry_run, echo=echo)


def _report(remotes: list[Any], task: Callable[[Any], Any], ok_line: Callable[[Any, Any], str]) -> int:
    """Run ``task`` on every host; print one line per host; 1 if any failed."""
    from deploy.hosts import GroupException, by_name, close_all, describe_error, on_hosts
    try:
        try:
            results = by_name(on_hosts(remotes, task), remotes)
        except GroupException as e:
            results = by_name(e.result, remotes)
    finally:
        close_all(remotes)
    failed = 0
    for r in remotes:
        v = results[r.name]
        if isinstance(v, BaseException):
            failed += 1
            print(f"{r.host.label()}: FAILED: {describe_error(v)}")
        elif not r.dry_run:
            print(f"{r.name}: {ok_line(r, v)}")
    if failed:
        print(f"{failed} of {len(remotes)} host(s) failed", file=sys.stderr)
    return EXIT_HOST_FAILED if failed else 0


# ---- subcommands -----------------------------------------------------------------
def _cmd_setup(args: argparse.Namespace) -> int:
    from deploy.hosts import GroupException, by_name, close_all, describe_error
    from deploy.install import SYSTEM_PACKAGES, setup
    _, remotes = _remotes(args)
    print("system packages the hosts need (Debian / Raspberry Pi OS):")
    for p in SYSTEM_PACKAGES:
        print(f"  {p.package:<13} {p.tool:<28} needed by: {', '.join(p.needed_by)}")
    try:
        results: dict[str, Any] = setup(remotes, Path(args.wheelhouse).expanduser(), print,
                                        Path(args.wheel) if args.wheel else None, args.extra_index_url)
    except GroupException as e:
        results = by_name(e.result, remotes)
    finally:
        close_all(remotes)
    failures = {n: v for n, v in results.items() if isinstance(v, BaseException)}
    reports = {n: v for n, v in results.items() if not isinstance(v, BaseException)}
    for r in remotes:
        if r.name in failures:
            print(f"{r.host.label()}: FAILED: {describe_error(failures[r.name])}")
        elif not r.dry_run:
            rep = reports[r.name]
            print(f"{r.name}: installed {rep.version} in {r.host.venv} ({rep.facts.describe()}; "
                  f"uploaded {len(rep.uploaded)} wheel(s))")
            for w in rep.warnings:
                print(f"{r.name}: warning: {w}")
            print(f"{r.name}: kernel data plane: netfilterqueue {rep.kernel}")
    return EXIT_HOST_FAILED if failures else 0


def _cmd_mesh(args: argparse.Namespace) -> int:
    from deploy import mesh
    inv, remotes = _remotes(args)

    def line(r: Any, st: Any) -> str:
        return ("ok: " if st.ok(r.host, inv) else "NOT IN THE CELL: ") + st.describe()

    return _report(remotes, lambda r: mesh.configure(r, inv), line)


def _cmd_routes(args: argparse.Namespace) -> int:
    from deploy import routes
    inv, remotes = _remotes(args)
    experiment = None
    if args.experiment:
        from experiments.schema import load_file
        experiment = load_file(args.experiment).base
    plan = routes.route_plan(inv, experiment)

    def task(r: Any) -> str:
        return routes.configure(r, plan.get(r.host.node, {}), remove=args.remove)

    return _report(remotes, task, lambda r, out: " ; ".join(out.splitlines()))


def _cmd_status(args: argparse.Namespace) -> int:
    from deploy import clock, nodes
    from deploy.install import VERSION_PY
    _, remotes = _remotes(args)

    def task(r: Any) -> str:
        h = r.host
        q = shlex.quote
        ver = r.run(f"{q(h.venv)}/bin/python -c {q(VERSION_PY)} 2>/dev/null || echo not-installed").stdout.strip()
        # as root: the kernel data plane's processes run as root, and only root can tell them (their cwd)
        running = r.run(nodes.running_nodes_command(h.work_dir), root=True).stdout.split("\n")
        running = [ln for ln in running if ln.strip()]
        iface = r.run(f"ip -o -4 addr show dev {q(h.iface)} 2>&1 | awk '{{print $4}}' | paste -sd, -; "
                      f"cat /sys/class/net/{q(h.iface)}/operstate 2>/dev/null || echo missing").stdout.split()
        c = clock.measure(r, samples=3)
        return (f"aspan-testbed {ver}; {len(running)} node(s) running"
                + (f" ({'; '.join(running)})" if running else "")
                + f"; {h.iface}: {' '.join(iface) or 'no address'}"
                + f"; clock offset {c.offset * 1000:+.1f} ms (+- {c.error_bound * 1000:.1f} ms)")

    return _report(remotes, task, lambda r, s: s)


def _cmd_stop(args: argparse.Namespace) -> int:
    from deploy import kernel, nodes
    _, remotes = _remotes(args)

    def task(r: Any) -> str:
        # as root: the kernel data plane's processes are root's (a Pi user cannot even see their cwd)
        out = r.run(nodes.stop_all_command(r.host.work_dir), root=True).stdout.split("\n")
        acted = [ln for ln in out if ln.strip() and not ln.rstrip().endswith("not-running")]
        line = f"stopped {len(acted)} node(s)" + (f": {'; '.join(acted)}" if acted else "")
        # a run that could not clean up left its restore script (MAC filter; kernel data plane): run it (as root)
        path = shlex.quote(kernel.restore_path(r.host.install_dir))
        if r.dry_run or r.run(f"test -f {path} && echo present; true").stdout.strip() == "present":
            r.run(kernel.run_restore_command(r.host.install_dir), root=True, timeout=90)
            line += "; host state restored (MAC filter, rules, routes, sysctls, offloads of the last run)"
        return line

    return _report(remotes, task, lambda r, s: s)


def _cmd_doctor(args: argparse.Namespace) -> int:
    """Every check on every host (or --hosts): one line each, the fix under a failure; 1 if any failed."""
    kernel = None
    congestion: tuple[str, ...] = ()
    if args.experiment:
        from experiments.schema import load_file
        exp = load_file(args.experiment)
        kernel = any(v.config.pi.data_plane == "kernel" for v in exp.variants)
        congestion = kernel_congestion(exp)
    from deploy.inventory import load_inventory_file
    inv = load_inventory_file(args.inventory, check_files=not args.dry_run)
    hosts = inv.select([h for h in (args.hosts or "").split(",") if h])
    lines, failed, unreachable = doctor_report(inv, hosts, args.inventory, kernel, args.dry_run,
                                               sys.stdout if (args.dry_run or args.verbose) else None, congestion)
    for ln in lines:
        print(ln)
    bad = failed + len(unreachable)
    if bad:
        print(f"{bad} of {len(hosts)} host(s) failed", file=sys.stderr)
    return EXIT_HOST_FAILED if bad else 0


def _cmd_gather(args: argparse.Namespace) -> int:
    from deploy import nodes
    _, remotes = _remotes(args)
    out = Path(args.out)

    def task(r: Any) -> str:
        base = r.host.work_dir.rstrip("/")
        top = f"{base}/{args.run.strip('/')}" if args.run else base
        pattern = " -o ".join(f"-name {shlex.quote('*.' + s)}" for s in nodes.FILES)
        listing = r.run(f"test -d {shlex.quote(top)} || exit 0; "
                        f"find {shlex.quote(top)} -type f \\( {pattern} \\)").stdout.split("\n")
        files = [f for f in listing if f.startswith(base + "/")]
        if r.dry_run:
            r.say(f"get: every file found -> {out}/<its path under {base}>")
        for f in files:
            r.get(f, out / f[len(base) + 1:])
        return f"{len(files)} file(s) into {out}"

    return _report(remotes, task, lambda r, s: s)


def _cmd_run(args: argparse.Namespace) -> int:
    from experiments.schema import load_file
    from experiments.runner import apply_overrides, check_run
    exp = load_file(args.experiment)
    exp = apply_overrides(exp, args.repetitions, None)
    if args.hosts:
        print("aspan deploy run: --hosts does not apply (the experiment's nodes pick the hosts)", file=sys.stderr)
        return 2
    options = pi_backend_options(args.inventory, exp, dry_run=args.dry_run)
    check_run(exp, "pi", None, options)   # what the run refuses, the dry run refuses (run_experiment calls it too)
    if args.verbose or args.dry_run:
        options["echo"] = sys.stdout
    if args.dry_run:
        return _dry_run(exp, options, Path(args.out or exp.base.out))
    from experiments.runner import print_run_outputs, run_experiment, run_statuses
    from experiments.stopping import exit_status
    run_dir = run_experiment(exp, backend="pi", out=Path(args.out) if args.out else None,
                             plot=not args.no_plot, backend_options=options, command=args.argv)
    report_failures(run_dir)
    print_run_outputs(run_dir, plotted=not args.no_plot)
    return exit_status(run_statuses(run_dir), len(exp.variants) * exp.base.repetitions)


def _dry_run(exp: Any, options: dict[str, Any], out: Path) -> int:
    """Every command of every repetition, per host; nothing is written or started."""
    from experiments.backends.pi import run_rep
    reps = exp.base.repetitions
    run_dir = out / exp.name / "<stamp>"
    print(f"[local] would write {run_dir}/experiment.yaml, then summary.csv and figures after the runs")
    for v in exp.variants:
        for k in range(reps):
            print(f"== {v.name} rep {k} ==")
            run_rep(v, k, run_dir / v.name / f"rep{k}", options["inventory"], dry_run=True, echo=sys.stdout)
    return 0
