"""What both data planes of the pi backend share: per-host failures, the preflight, the host state
(the MAC filter of :mod:`deploy.macfilter` and the kernel plan, armed and restored with :mod:`deploy.kernel`).

Split from :mod:`experiments.backends.pi` so that the kernel data plane
(:mod:`experiments.backends.pi_kernel`) uses them without an import cycle.
"""
from __future__ import annotations

import copy
import json
import shlex
from experiments.config import ExperimentConfig
from pathlib import Path
from typing import Any, Callable

from deploy import clock, kernel, macfilter, nodes, radio
from deploy.hosts import GroupException, HostError, Remote, by_name, describe_error, failure_lines, on_hosts
from deploy.inventory import Inventory, InventoryError
from experiments.schema import ExperimentError
from routing.topology.graph import MeshGraph

POLL_TRIES = 3          # consecutive failed polls of a host before it counts as lost


class RunFailed(RuntimeError):
    """The repetition cannot go on; ``lines`` says why, one line per host."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("; ".join(lines))


def on_all_hosts(remotes: list[Remote], task: Callable[[Remote], Any]) -> dict[str, Any]:
    """``on_hosts`` keyed by host name; any host failing raises RunFailed with a line per host."""
    try:
        return by_name(on_hosts(remotes, task), remotes)
    except GroupException as e:
        raise RunFailed(failure_lines(e, remotes)) from None


def experiment_graph(cfg: ExperimentConfig) -> MeshGraph:
    """The graph the MAC filter enforces: the experiment's nodes and links."""
    topo = cfg.topology
    if topo.links is None:
        raise ExperimentError("<experiment>", "topology.links", "the pi backend enforces the links with a MAC "
                              "filter: give topology.links or topology.chain (not positions alone)")
    return MeshGraph.build(topo.nodes, topo.links)


def check_hosts(inv: Inventory, names: list[str]) -> None:
    missing = [n for n in names if n not in inv.by_node()]
    if missing:
        raise InventoryError(inv.source, "hosts", f"no host runs node(s) {', '.join(missing)} of the experiment; "
                             f"the inventory has {', '.join(h.node for h in inv.hosts)}")


# what each host's venv runs on, for meta.json: machine, Python and C library (a Pi: aarch64 3.11.2 glibc 2.36)
PLATFORM_PY = ("import json, platform; print(json.dumps({'machine': platform.machine(), "
               "'python': platform.python_version(), 'libc': ' '.join(platform.libc_ver())}))")


def parse_platform(line: str) -> dict[str, str]:
    """The host's platform line (:data:`PLATFORM_PY`), or a HostError naming what came instead."""
    try:
        got = json.loads(line)
    except ValueError:
        raise HostError(f"cannot read the host's platform line: {line[:200]!r}") from None
    if not isinstance(got, dict) or not all(isinstance(got.get(k), str) for k in ("machine", "python", "libc")):
        raise HostError(f"cannot read the host's platform line: {line[:200]!r}")
    return {k: got[k] for k in ("machine", "python", "libc")}


def preflight(remotes: list[Remote], rdirs: dict[str, str], meta: dict[str, Any]) -> dict[str, float]:
    """Every host: installed, no node still running, its run directory made, clock offset measured."""

    def check(r: Remote) -> tuple[clock.ClockSample, dict[str, str]]:
        h = r.host
        out = r.run(f"test -x {shlex.quote(h.aspan)} || {{ echo 'not installed at {h.install_dir}: "
                    f"run aspan deploy setup' >&2; exit 1; }}; mkdir -p {shlex.quote(rdirs[h.node])} && "
                    f"{shlex.quote(h.venv)}/bin/python -c {shlex.quote(PLATFORM_PY)} && "
                    + nodes.running_nodes_command(h.work_dir)).stdout.split("\n")
        platform = parse_platform(out[0]) if not r.dry_run else {}
        running = [ln for ln in out[1:] if ln.strip()]
        if running:
            raise HostError(f"an aspan node still runs there (pid file {running[0]}): run aspan deploy stop")
        return clock.measure(r), platform

    got = on_all_hosts(remotes, check)
    by_node = {r.host.node: got[r.name][0] for r in remotes}
    meta["platforms"] = {r.host.node: got[r.name][1] for r in remotes}
    meta["clock_offsets"] = {n: round(s.offset, 6) for n, s in by_node.items()}
    meta["clock_rtt_s"] = {n: round(s.rtt, 6) for n, s in by_node.items()}
    return {n: s.offset for n, s in by_node.items()}


# ---- host state: the MAC filter and the kernel plan, armed and restored (deploy.kernel) ----------
def each_host(remotes: list[Remote], what: str, task: Callable[[Remote], Any],
              problems: dict[str, list[str]]) -> dict[str, Any]:
    """``task`` on every host that can be reached: node -> value; a failure is one line in ``problems``."""
    if not remotes:
        return {}
    try:
        res = by_name(on_hosts(remotes, task), remotes)
    except GroupException as e:
        res = by_name(e.result, remotes)
    out = {}
    for r in remotes:
        v = res[r.name]
        if isinstance(v, BaseException):
            problems.setdefault(r.host.node, []).append(f"{what}: {describe_error(v)}")
        else:
            out[r.host.node] = v
    return out


def arm_hosts(remotes: list[Remote], plans: dict[str, kernel.HostPlan], graph: MeshGraph, rep_dir: Path,
              snaps: dict[str, kernel.Snapshot], armed: list[Remote], meta: dict[str, Any],
              mac_filter: bool = True) -> None:
    """Snapshot every host (its mesh MAC address too), put the MAC filter of ``graph`` first in each
    plan (unless the inventory's ``graph_filter`` is none), upload each host's restore script, then apply
    the plan.  ``snaps`` and ``armed`` fill as it goes: whatever fails, the caller restores every host in
    ``armed`` (:func:`restore_hosts`)."""
    got = on_all_hosts(remotes, lambda r: kernel.snapshot(r, plans[r.host.node]))
    snaps.update({r.host.node: got[r.name] for r in remotes})
    left = [f"{r.host.label()}: leftovers of an earlier run ({', '.join(snaps[r.host.node].leftovers)}): "
            "run aspan deploy stop" for r in remotes if snaps[r.host.node].leftovers]
    if left:
        raise RunFailed(left)
    meta["iptables"] = {n: s.flavour for n, s in snaps.items()}
    if mac_filter:
        macs = {r.host.node: str(snaps[r.host.node].mac) for r in remotes}
        same = macfilter.check_distinct(macs)
        if same:
            raise RunFailed(same)
        for r in remotes:
            n = r.host.node
            plans[n].rules = macfilter.drop_rules(graph, n, r.host.iface, macs) + plans[n].rules
        meta["mac_filter"] = {"macs": macs, "drop_from": {n: macfilter.non_neighbours(graph, n) for n in macs}}
    else:
        meta["mac_filter"] = None

    def arm(r: Remote) -> None:
        n = r.host.node
        local = rep_dir / f"{n}.kernel-restore.sh"
        local.write_text(kernel.restore_script(plans[n], snaps[n], r.host.install_dir))
        armed.append(r)
        r.put(local, kernel.restore_path(r.host.install_dir))
        r.run(kernel.apply_script(plans[n], snaps[n]), root=True)

    on_all_hosts(remotes, arm)


def dry_arm(remotes: list[Remote], plans: dict[str, kernel.HostPlan], graph: MeshGraph,
            mac_filter: bool = True) -> None:
    """What :func:`arm_hosts` would apply on each host, with placeholders for what the snapshot reads."""
    macs = {r.host.node: f"<{r.host.node}:{r.host.iface}:MAC>" for r in remotes}
    for r in remotes:
        n = r.host.node
        plan = copy.copy(plans[n])
        if mac_filter:
            plan.rules = macfilter.drop_rules(graph, n, r.host.iface, macs) + plan.rules
        snap = kernel.Snapshot("<flavour>", {k: "<before>" for k in plan.sysctls},
                               {f: "<before>" for f in plan.offloads_off}, {}, "", "", [],
                               radio=radio.RadioState(phy="<phy>", rts="<before>") if plan.radio else None)
        if plan.radio is not None and not plan.radio.empty:
            r.say(f"radio: {radio.describe(plan.radio)} (checked against iw phy info when the run starts)")
        r.say(f"mac filter: drop what {r.host.iface} hears from "
              + (", ".join(macfilter.non_neighbours(graph, n)) or "no node (every node is a neighbour)"))
        for line in kernel.apply_script(plan, snap).splitlines():
            r.say(f"apply: {line}")
        r.say(f"restore script: {kernel.restore_path(r.host.install_dir)} (written before the apply)")


def restore_hosts(armed: list[Remote], plans: dict[str, kernel.HostPlan], snaps: dict[str, kernel.Snapshot],
                  meta: dict[str, Any], problems: dict[str, list[str]]) -> None:
    """The MAC filter's counters, then each armed host's restore script, then its state compared with the
    snapshot (``meta``: ``mac_filter.dropped``, ``restored``, ``host_state_after``)."""
    macs = (meta.get("mac_filter") or {}).get("macs")
    if macs:
        listing = each_host(armed, "counters", lambda r: r.run(
            macfilter.counters_command(snaps[r.host.node].iptables_cmd), root=True).stdout, problems)
        meta["mac_filter"]["dropped"] = {n: macfilter.parse_drops(t, macs) for n, t in listing.items()}
        meta["mac_filter"]["strangers_dropped"] = {n: macfilter.parse_stranger_drops(t) for n, t in listing.items()}
    restored = each_host(armed, "restore", lambda r: r.run(kernel.run_restore_command(r.host.install_dir),
                                                           root=True, timeout=90).stdout.strip(), problems)
    meta["restored"] = restored
    after = each_host([r for r in armed if r.host.node in restored], "check after the restore",
                      lambda r: kernel.snapshot(r, plans[r.host.node]), problems)
    meta["host_state_after"] = {}
    for n, snap in after.items():
        diffs = kernel.compare(snaps[n], snap)
        meta["host_state_after"][n] = diffs or "as before the run"
        if diffs:
            problems.setdefault(n, []).extend(diffs)


def record_problems(meta: dict[str, Any], problems: dict[str, list[str]], remotes: list[Remote]) -> None:
    """Per-host problems of the teardown into ``meta`` (``host_errors``, ``error``, ``host_report``)."""
    errors = dict(meta.get("host_errors", {}))
    for n, p in problems.items():
        errors[n] = "; ".join(([errors[n]] if errors.get(n) else []) + p)
    meta["host_errors"] = errors
    if problems:
        labels = {r.host.node: r.host.label() for r in remotes}
        lines = [f"{labels[n]}: {'; '.join(p)}" for n, p in problems.items()]
        if meta["status"] in ("ok", "running"):
            meta["status"] = "failed"
        meta["error"] = "; ".join(([meta["error"]] if meta.get("error") else []) + lines)
        meta["host_report"] = meta.get("host_report", []) + lines
