"""Pi backend: one ``aspan node`` per Raspberry Pi of the inventory, driven over SSH (Fabric).

Data plane ``pi.data_plane`` of the YAML: ``udp`` (this module: the user-space overlay) or
``kernel`` (:mod:`experiments.backends.pi_kernel`: kernel TCP through the netns backend's
NFQUEUE node daemons, over static kernel routes).

Per (variant, repetition) on the overlay: check every host (installed, no node left running), measure
its clock offset, put the experiment's graph in force (:mod:`deploy.macfilter`: each host drops what
it hears from a non-neighbour's MAC address; root, through ``sudo -n``; restored after every ending as
the kernel data plane's rules are), write and upload each node's config (the local backend's format, with
``bind`` = the host's mesh address and the inventory's UDP port, ``peers`` = the other
hosts' mesh addresses, start time and deadline converted to the host's clock), start
every node in parallel, poll until the flows finish, stop every node and gather every
host's files into the run directory.  Loss is the nodes' own loss model from the YAML.

A host that cannot be reached, a command that fails or a node that dies ends the
repetition with status ``failed`` and one line per host in ``meta.json`` ``error``;
the nodes on the other hosts are stopped and their logs gathered all the same.
"""
from __future__ import annotations

import functools
import json
import shlex
import signal
import sys
import time
from experiments.config import ExperimentConfig
from pathlib import Path
from typing import Any, Callable, TextIO

from deploy import kernel, nodes, radio
from routing.drivers.station import STATION_DUMP_S
from deploy.hosts import GroupException, Remote, by_name, close_all, describe_error, on_hosts, open_remotes
from deploy.inventory import Inventory, load_inventory_file
from experiments.backends.pi_common import (POLL_TRIES, RunFailed, arm_hosts, check_hosts, dry_arm, experiment_graph,
                                            on_all_hosts, preflight, record_problems, restore_hosts)
from experiments.build import base_meta, mac_on, new_key, rep_seed, write_key, write_meta
from experiments.progress import DeliveryProgress
from experiments.schema import ExperimentError, Variant
from experiments.stopping import stop_reason

DEADLINE_MARGIN_S = 30.0


def make_run_rep(options: dict[str, Any]) -> Callable[[Variant, int, Path], dict[str, Any]]:
    """The runner's per-repetition entry point for ``options["inventory"]`` (a path or an Inventory)."""
    inv = options.get("inventory")
    if inv is None:
        raise ExperimentError("--inventory", "inventory", "the pi backend needs an inventory: "
                              "aspan run EXP.yaml --backend pi --inventory INV.yaml")
    if not isinstance(inv, Inventory):
        inv = load_inventory_file(inv)
    return functools.partial(run_rep, inventory=inv, dry_run=bool(options.get("dry_run", False)),
                             echo=options.get("echo"))


def node_configs(cfg: ExperimentConfig, inv: Inventory, seed: int, t0: float, offsets: dict[str, float],
                 rdirs: dict[str, str], auth: bool = False) -> dict[str, dict[str, Any]]:
    """Each node's ``aspan node`` config; times are converted to the node's own clock.  With ``auth``
    the node reads the experiment key from ``<rdir>/<node>.key`` (uploaded beside it) and deletes it."""
    names = cfg.topology.nodes
    addrs = cfg.topology.addresses
    hosts = inv.by_node()
    udp = {n: [hosts[n].mesh_address, inv.udp_port] for n in names}
    deadline = t0 + cfg.etx.flow_start_s + cfg.limits.max_duration_s + DEADLINE_MARGIN_S
    return {n: {"experiment": cfg.to_dict(), "node": n, "seed": seed,
                "t0": t0 + offsets.get(n, 0.0), "deadline": deadline + offsets.get(n, 0.0),
                "log": f"{rdirs[n]}/{n}.log", "done_file": f"{rdirs[n]}/{n}.done",
                "bind": udp[n], "peers": {addrs[m]: udp[m] for m in names if m != n},
                "watch_parent": False, **({"auth_key_file": f"{rdirs[n]}/{n}.key"} if auth else {}),
                "station_dump": {"iface": hosts[n].iface, "interval_s": STATION_DUMP_S}}
            for n in names}


def run_rep(variant: Variant, repetition: int, rep_dir: Path, inventory: Inventory, dry_run: bool = False,
            echo: TextIO | None = None) -> dict[str, Any]:
    if variant.config.pi.data_plane == "kernel":
        from experiments.backends import pi_kernel    # kernel TCP through NFQUEUE (docs/PI.md)
        return pi_kernel.run_rep(variant, repetition, rep_dir, inventory, dry_run, echo)
    cfg = variant.config
    names = list(cfg.topology.nodes)
    check_hosts(inventory, names)
    graph = experiment_graph(cfg)
    seed = rep_seed(cfg, repetition)
    hosts = inventory.by_node()
    meta = base_meta(cfg, variant.name, repetition, seed, "pi", variant.sweep_value)
    rel = "/".join(rep_dir.parts[-4:])      # <experiment>/<stamp>/<variant>/rep<k>
    rdirs = {n: nodes.rep_dir_remote(hosts[n].work_dir, rel) for n in names}
    meta["hosts"] = {n: {"name": hosts[n].name, "ssh": f"{hosts[n].user}@{hosts[n].host}:{hosts[n].port}",
                         "mesh_address": hosts[n].mesh_address, "dir": rdirs[n]} for n in names}
    meta["udp"] = {n: [hosts[n].mesh_address, inventory.udp_port] for n in names}
    if not dry_run:
        rep_dir.mkdir(parents=True, exist_ok=True)
    remotes = open_remotes([hosts[n] for n in names], dry_run=dry_run, echo=echo)
    rnode = {r.name: r.host.node for r in remotes}
    started: list[Remote] = []      # hosts where a node was started (or may have been)
    # the MAC filter only: no sysctl, route, offload or root process of the overlay's
    plans = {n: kernel.HostPlan(hosts[n].iface, hosts[n].mesh_address, {}, [], 0, [], offloads_off=(),
                                radio=radio.plan(cfg.pi, hosts[n].iface, inventory.freq))
             for n in names}
    snaps: dict[str, kernel.Snapshot] = {}
    armed: list[Remote] = []        # hosts whose restore script may exist
    endpoints = {f.sender for f in cfg.flows} | {f.receiver for f in cfg.flows}
    receiver = cfg.flows[0]["receiver"]
    progress = DeliveryProgress(f"{variant.name} rep {repetition}",
                         sum(f.segments * f.segment_size for f in cfg.flows))
    # graph_filter none: no MAC filter; with no radio setting either, the overlay touches no host state
    mac_filter = inventory.graph_filter == "mac"
    meta["graph_filter"] = inventory.graph_filter
    must_arm = mac_filter or any(p.radio is not None and not p.radio.empty for p in plans.values())
    try:
        offsets = preflight(remotes, rdirs, meta)
        if not must_arm:
            meta["mac_filter"] = None
        elif dry_run:
            dry_arm(remotes, plans, graph, mac_filter)
        else:
            arm_hosts(remotes, plans, graph, rep_dir, snaps, armed, meta, mac_filter)
        t0 = time.time() + inventory.start_margin_s
        key = new_key() if mac_on(cfg, "pi") else None   # per repetition; never logged (issue 13)
        meta["auth"] = key is not None
        confs = node_configs(cfg, inventory, seed, t0, offsets, rdirs, auth=key is not None)
        for n, conf in confs.items():
            if dry_run:
                print(f"[local] node config {n}: bind {conf['bind'][0]}:{conf['bind'][1]}, peers "
                      + ", ".join(f"{a}->{e[0]}:{e[1]}" for a, e in conf["peers"].items()), file=echo or sys.stdout)
            else:
                (rep_dir / f"{n}.node.json").write_text(json.dumps(conf))
                if key is not None:
                    write_key(rep_dir / f"{n}.key", key)

        def start_one(r: Remote) -> int | None:
            n = r.host.node
            started.append(r)
            return nodes.start(r, rdirs[n], n, rep_dir / f"{n}.node.json",
                               rep_dir / f"{n}.key" if key is not None else None)

        meta["pids"] = {rnode[name]: pid for name, pid in on_all_hosts(remotes, start_one).items()}
        for n in names:     # every node has its key now: the laptop's copies go
            (rep_dir / f"{n}.key").unlink(missing_ok=True)
        end_by = t0 + cfg.etx.flow_start_s + cfg.limits.max_duration_s
        _wait(remotes, rdirs, endpoints, receiver, end_by, inventory.poll_interval_s, meta, progress,
              cfg.limits.max_duration_s)
        if meta["status"] == "running":
            meta["status"] = "ok"
    except RunFailed as e:
        meta["status"] = "failed"
        meta["error"] = str(e)
        meta["host_report"] = list(e.lines)
    except KeyboardInterrupt as e:   # SIGINT, or SIGTERM (experiments.stopping.Terminated)
        meta["status"] = "interrupted"
        meta["error"] = stop_reason(e)
        raise
    finally:
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C must not skip the restore
        try:
            progress.finish()
            for n in names:     # the local copies of the key go as soon as the nodes have theirs
                (rep_dir / f"{n}.key").unlink(missing_ok=True)
            try:
                _finish(remotes, started, rdirs, rep_dir, meta, rnode)
            finally:
                problems: dict[str, list[str]] = {}
                restore_hosts(armed, plans, snaps, meta, problems)    # after the nodes stopped
                record_problems(meta, problems, remotes)
        finally:
            signal.signal(signal.SIGINT, old_int)
            if not dry_run:
                write_meta(rep_dir, meta)
            close_all(remotes)
    return meta


def _wait(remotes: list[Remote], rdirs: dict[str, str], endpoints: set[str], receiver: str, end_by: float,
          interval: float, meta: dict[str, Any], progress: DeliveryProgress, limit_s: float) -> None:
    """Poll every host until the endpoints are done; a dead node or a lost host raises RunFailed."""
    misses: dict[str, int] = {r.name: 0 for r in remotes}
    while True:
        try:
            states = by_name(on_hosts(remotes, lambda r: nodes.poll(r, rdirs[r.host.node], r.host.node)), remotes)
        except GroupException as e:
            states = by_name(e.result, remotes)
        lost = []
        for r in remotes:
            v = states[r.name]
            misses[r.name] = misses[r.name] + 1 if isinstance(v, BaseException) else 0
            if misses[r.name] >= POLL_TRIES or (r.dry_run and isinstance(v, BaseException)):
                lost.append(f"{r.host.label()}: lost during the run: {describe_error(v)}")
        if lost:
            raise RunFailed(lost)
        dead = [r for r in remotes if isinstance(states[r.name], nodes.NodeState) and states[r.name].state == "exited"]
        if dead:
            raise RunFailed([_death_line(r, rdirs[r.host.node], states[r.name]) for r in dead])
        for r in remotes:
            st = states[r.name]
            if r.host.node == receiver and isinstance(st, nodes.NodeState) and st.delivered is not None:
                progress.show(st.delivered)
        done = {r.host.node for r in remotes if isinstance(states[r.name], nodes.NodeState)
                and states[r.name].state == "done"}
        if endpoints <= done:
            return
        if time.time() > end_by:
            meta["status"] = "incomplete"
            meta["error"] = f"flows not finished after {limit_s} s"
            return
        time.sleep(interval)


def _death_line(r: Remote, rdir: str, st: nodes.NodeState) -> str:
    n = r.host.node
    try:
        tail = r.run(f"tail -n 5 {shlex.quote(rdir + '/' + n + '.stderr')} 2>/dev/null; true").stdout
    except Exception as e:  # the stderr tail is a courtesy; say why it is missing
        tail = f"(stderr not readable: {describe_error(e)})"
    tail = " | ".join(ln.strip() for ln in tail.strip().splitlines() if ln.strip()) or "no error output"
    return f"{r.host.label()}: node {n} {st.describe_exit()} before the flows finished: {tail}"


def _finish(remotes: list[Remote], started: list[Remote], rdirs: dict[str, str], rep_dir: Path,
            meta: dict[str, Any], rnode: dict[str, str]) -> None:
    """Stop the started nodes, read their exit codes, gather their hosts' files.

    Runs after a failure too: a host that cannot be reached is recorded and the others
    are still stopped and gathered.
    """
    problems: dict[str, str] = {}

    def stop_one(r: Remote) -> tuple[str, int | None]:
        return nodes.stop(r, rdirs[r.host.node], r.host.node)

    stopped: dict[str, Any] = {}
    if started:
        try:
            stopped = by_name(on_hosts(started, stop_one), started)
        except GroupException as e:
            stopped = by_name(e.result, started)
    meta["exit_codes"] = {}
    meta["stopped"] = {}
    for name, v in stopped.items():
        if isinstance(v, BaseException):
            problems[rnode[name]] = (f"stop: {describe_error(v)} (its node may still run until its deadline: "
                                     f"aspan deploy stop --hosts {name}, then aspan deploy gather, once the "
                                     "host is back)")
        else:
            meta["stopped"][rnode[name]] = v[0]
            meta["exit_codes"][rnode[name]] = v[1]

    def gather_one(r: Remote) -> list[str]:
        return nodes.gather(r, rdirs[r.host.node], r.host.node, rep_dir)

    # a host that failed before any start has nothing to gather (and is named already);
    # one that could not be stopped is not reachable now: it is named, its files stay there
    reachable = [r for r in started if not isinstance(stopped.get(r.name), BaseException)]
    got: dict[str, Any] = {}
    if reachable:
        try:
            got = by_name(on_hosts(reachable, gather_one), reachable)
        except GroupException as e:
            got = by_name(e.result, reachable)
    meta["gathered"] = {}
    for name, v in got.items():
        if isinstance(v, BaseException):
            problems.setdefault(rnode[name], f"gather: {describe_error(v)}")
        else:
            meta["gathered"][rnode[name]] = v
    record_problems(meta, {n: [p] for n, p in problems.items()}, remotes)
