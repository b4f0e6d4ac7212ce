"""The pi backend's kernel data plane (``pi: {data_plane: kernel}``): kernel TCP through NFQUEUE on the Pis.

The netns backend's pieces, run over SSH instead of ``ip netns exec``: the kernel-TCP plan they
share (:func:`experiments.backends.kernel_plan.plan_mesh`, with the inventory's mesh addresses),
its routes, sysctls and iptables rules (:func:`~experiments.backends.kernel_plan.rule_specs`
with the Pi's mesh interface), the counters' parsers (experiments/backends/kernel_counters.py),
the netns backend's node daemon (``experiments.backends.netns.node``) and its kernel-TCP apps
(``experiments.backends.netns.tcpapp``: the hash-checked bulk transfer or iperf3, TCP_INFO cwnd
sampling, TcpExt loss counters).  What this module adds is what SSH needs: per-host clocks,
uploads, polling, gathering, and ``deploy.kernel``'s snapshot and restore script, which puts
every host back as it was after the run, a failure or Ctrl-C.

Timeline per (variant, repetition): preflight (installed, netfilterqueue, no node running,
clock offsets) -> snapshot, upload the restore script, apply (every host) -> apps on the
endpoints (ready) -> t0 -> node daemons (ready) -> go -> poll until the apps are done ->
counters -> stop the processes -> gather every file -> restore -> compare with the snapshot.
"""
from __future__ import annotations

import dataclasses
import json
import shlex
import signal
import time
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Callable, TextIO

from deploy import kernel, macfilter, nodes, radio
from routing.drivers.station import STATION_DUMP_S
from deploy.hosts import (GroupException, HostError, Remote, by_name, close_all, describe_error, on_hosts,
                          open_remotes)
from deploy.inventory import Inventory
from experiments.backends import kernel_plan
from experiments.backends.kernel_counters import (TCP_EXT_COUNTERS, append_drops, parse_nfq, parse_statistic_drops,
                                                  parse_tcpext)
from experiments.backends.kernel_plan import MeshPlan, PlanError, app_flow
from experiments.backends.pi_common import (RunFailed, arm_hosts, check_hosts, each_host, experiment_graph,
                                            on_all_hosts, preflight, record_problems, restore_hosts)
from experiments.progress import DeliveryProgress
from experiments.config import ExperimentConfig, frozen
from experiments.build import base_meta, flow_plans, mac_on, new_key, rep_seed, write_key, write_meta
from experiments.schema import ExperimentError, Variant
from routing.topology.graph import MeshGraph

NODE_MODULE = "experiments.backends.netns.node"
APP_MODULE = "experiments.backends.netns.tcpapp"
PROBE_PORT = 7700
READY_TIMEOUT_S = 30.0
ROOT_STOP_GRACE_S = 5.0


def kernel_config(cfg: ExperimentConfig, inv: Inventory) -> ExperimentConfig:
    """The variant's config with the hosts' mesh addresses as node addresses (kernel TCP uses them)."""
    hosts = inv.by_node()
    addresses = frozen({n: hosts[n].mesh_address for n in cfg.topology.nodes})
    return dataclasses.replace(cfg, topology=dataclasses.replace(cfg.topology, addresses=addresses))


def plan_for(cfg: ExperimentConfig) -> MeshPlan:
    """The netns plan of a kernel-mode config; ExperimentError naming the field if the Pis cannot run it."""
    if cfg.netns.rate_mbit > 0:
        raise ExperimentError("<experiment>", "netns.rate_mbit", "the pi backend's kernel data plane sets no "
                              "rate limit (the radio is the limit): leave it 0")
    try:
        return kernel_plan.plan_mesh(cfg, "pi0000")
    except PlanError as e:
        raise ExperimentError("<experiment>", "pi.data_plane", f"kernel: {e}") from None


def check_variants(exp: Any, inv: Inventory) -> None:
    """Every kernel-mode variant can be planned with the inventory's addresses (called before any run)."""
    for v in exp.variants:
        if v.config.pi.data_plane == "kernel":
            check_hosts(inv, v.config.topology.nodes)
            experiment_graph(v.config)
            plan_for(kernel_config(v.config, inv))


def host_plans(plan: MeshPlan, inv: Inventory, rdirs: dict[str, str],
               procs: dict[str, list[str]], pi: Mapping[str, Any] | None = None) -> dict[str, kernel.HostPlan]:
    """Each host's kernel plan; ``pi``: the experiment's pi section (its radio settings, deploy.radio)."""
    hosts = inv.by_node()
    out = {}
    for n in plan.nodes:
        h = hosts[n]
        sysctls = dict(s.split("=", 1) for s in kernel_plan.sysctls(plan, n))
        for key in ("rp_filter", "send_redirects", "accept_redirects"):
            sysctls[f"net.ipv4.conf.{h.iface}.{key}"] = "0"
        routes = [(dst, None if dst == via else via) for dst, via, _ in plan.routes[n]]
        out[n] = kernel.HostPlan(h.iface, h.mesh_address, sysctls, routes, plan.advmss,
                                 kernel_plan.rule_specs(plan, n, h.iface, forward_in=h.iface),
                                 [f"{rdirs[n]}/{p}.pid" for p in procs.get(n, [])],
                                 radio=radio.plan(pi or {}, h.iface, inv.freq))
    return out


def queue_bound(plan: MeshPlan, n: str) -> bool:
    return plan.handlers != "kernel" and (n in plan.forwarders or n in plan.senders or kernel_plan.queued_input(plan, n))


def app_configs(cfg: ExperimentConfig, seed: int, rdirs: dict[str, str]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Node -> [(process name, tcpapp config)], as the netns backend writes them, with the hosts' paths."""
    nx = cfg.netns
    addrs = cfg.topology.addresses
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for fp in flow_plans(cfg, seed, 0.0):
        flow = app_flow(fp, addrs)
        for role, node in (("receiver", fp.receiver), ("sender", fp.sender)):
            name = f"{node}.{role}{fp.index}"
            d = rdirs[node]
            out.setdefault(node, []).append((name, {
                "role": role, "node": node, "flow": flow, "traffic": nx.traffic, "congestion": nx.congestion,
                "poll_ms": nx.cwnd_poll_ms, "variant": cfg.tcp.variant, "log": f"{d}/{node}.log",
                "go_file": f"{d}/go.json", "ready_file": f"{d}/{name}.ready", "done_file": f"{d}/{name}.done"}))
    return out


def node_config(cfg: ExperimentConfig, plan: MeshPlan, n: str, seed: int, t0: float, rdir: str,
                host_name: str, iface: str, auth: bool = False) -> dict[str, Any]:
    """The netns node daemon's config for node ``n``; ``t0`` in the host's clock; ``iface`` the host's mesh
    interface, over which link-state routing's kernel routes reach every neighbour (routing/drivers/kernel_routes.py;
    deploy.kernel's restore puts the /32 routes back as they were before the run).  With ``auth`` the
    daemon reads the run's key from ``<node>.key`` beside its config and deletes it: its probe socket seals
    and verifies probes and LSAs (``auth.mac``, on by default for the pi backend; issue 27, item 4)."""
    nx = cfg.netns
    t_flows = t0 + cfg.etx.flow_start_s
    return {"experiment": cfg.to_dict(), "node": n, "seed": seed, "t0": t0,
            "deadline": t_flows + cfg.limits.max_duration_s + 60.0,
            "log": f"{rdir}/{n}.log", "ready_file": f"{rdir}/{n}.node.ready", "handlers": plan.handlers,
            "queue": kernel_plan.QUEUE_NUM, "option": nx.option, "probe_port": PROBE_PORT,
            "max_len": nx.queue_maxlen, "ns": host_name, "handler_loss": n in plan.handler_loss,
            "queue_bound": queue_bound(plan, n),
            "kernel_routes": {"devs": {plan.addrs[m]: iface for m in plan.devs[n]}, "advmss": plan.advmss},
            "station_dump": {"iface": iface, "interval_s": STATION_DUMP_S},
            **({"auth_key_file": f"{rdir}/{n}.key"} if auth else {})}


# ---- commands on a host ---------------------------------------------------------------
def start_process(r: Remote, rdir: str, name: str, module: str, conf: dict[str, Any], local: Path,
                  key: Path | None = None) -> int | None:
    """Upload ``<name>.json`` (and ``key`` to the config's ``auth_key_file``, mode 0600) and start
    ``python -m module`` as root, detached; returns its pid."""
    q = shlex.quote
    local.write_text(json.dumps(conf))
    if key is not None:
        r.put(key, conf["auth_key_file"])
    r.put(local, f"{rdir}/{name}.json")
    py = f"{r.host.venv}/bin/python"
    out = r.run(nodes.start_process_command(f"{q(py)} -m {module} --config {q(name + '.json')}", rdir, name),
                root=True).stdout.strip()
    if r.dry_run:
        return None
    if not out.isdigit():
        raise HostError(f"{name} did not start: no pid file in {rdir} after 5 s")
    return int(out)


def states_command(rdir: str, names: list[str], log: str | None = None) -> str:
    """One line per process: ``NAME done|running|ready|exited CODE``; then the last ``deliver`` of ``log``."""
    q = shlex.quote
    parts = [f"{nodes.ALIVE_FN}cd {q(rdir)} || exit 1"]
    for n in names:
        pid = q(n + ".pid")
        parts.append(f"if [ -f {q(n + '.done')} ]; then echo {q(n)} done; "
                     f"elif [ -f {pid} ] && ours \"$(cat {pid})\" {pid}; then "
                     f"if [ -f {q(n + '.ready')} ]; then echo {q(n)} ready; else echo {q(n)} running; fi; "
                     f"else echo {q(n)} exited $(cat {q(n + '.exit')} 2>/dev/null || echo unknown); fi")
    if log:
        parts.append(f"tail -c 4000 {q(log)} 2>/dev/null | grep '\"ev\":\"deliver\"' | tail -n 1 | sed 's/^/deliver /'")
    return "; ".join(parts) + "; true"


def parse_states(out: str) -> tuple[dict[str, tuple[str, str]], int | None]:
    states: dict[str, tuple[str, str]] = {}
    delivered = None
    for line in out.splitlines():
        if line.startswith("deliver "):
            try:
                delivered = int(json.loads(line[8:]).get("bytes", 0))
            except (ValueError, AttributeError):
                continue
            continue
        parts = line.split()
        if len(parts) >= 2:
            states[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    return states, delivered


def stop_command(rdir: str, names: list[str]) -> str:
    """Stop each process (TERM, KILL after the grace time); ``NAME stopped|killed|not-running PID exit CODE``.
    Then a key file a node daemon never read (it died first) is deleted: the key stays on no Pi (issue 13)."""
    q = shlex.quote
    parts = [nodes.ALIVE_FN.rstrip("; ")]
    for n in names:
        pf = f"{rdir}/{n}.pid"
        parts.append(f"echo {q(n)} $({nodes.stop_snippet(q(pf), ROOT_STOP_GRACE_S)}) "
                     f"exit $(cat {q(rdir + '/' + n + '.exit')} 2>/dev/null || echo none)")
    parts.append(f"rm -f {q(rdir)}/*.key")
    return "; ".join(parts)


def time_wait_command(apps: list[tuple[str, dict[str, Any]]], limit_s: int = 70) -> str:
    """Waits until no TIME_WAIT socket holds a sender's address and port (at most ``limit_s``).

    iperf3 binds its client port without SO_REUSEADDR: right after an earlier run with the
    same seed (same ports) on the same Pi, the bind would fail for up to 60 s.  The netns
    backend never meets this (fresh namespaces every run); the bulk sender sets SO_REUSEADDR.
    """
    words = [f"{c['flow']['src']}:{c['flow']['sport']} " for _, c in apps if c["role"] == "sender"]
    if not words:
        return "true"
    pat = shlex.quote("|".join(w.replace(".", "\\.") for w in words))
    return (f"i=0; while ss -tan state time-wait | grep -Eq {pat} && [ $i -lt {limit_s} ]; do sleep 1; "
            f"i=$((i+1)); done; true")


def _describe_exit(code: str) -> str:
    if not code.lstrip("-").isdigit():
        return "exited (exit code unknown)"
    c = int(code)
    return f"exited with code {c}" + (f" (killed by signal {c - 128})" if c > 128 else "")


def _tail(r: Remote, path: str) -> str:
    try:
        out = r.run(f"tail -n 5 {shlex.quote(path)} 2>/dev/null; true").stdout
    except Exception as e:  # the tail is a courtesy; say why it is missing
        return f"(stderr not readable: {describe_error(e)})"
    return " | ".join(ln.strip() for ln in out.strip().splitlines() if ln.strip()) or "no error output"


# ---- one repetition ------------------------------------------------------------------------
class _Run:
    """What one repetition started and changed, for the teardown whatever happened."""

    def __init__(self, remotes: list[Remote], rdirs: dict[str, str], rep_dir: Path) -> None:
        self.remotes = remotes
        self.rdirs = rdirs
        self.rep_dir = rep_dir
        self.by_node = {r.host.node: r for r in remotes}
        self.procs: dict[str, list[str]] = {}      # node -> process names started there (or maybe)
        self.armed: list[Remote] = []             # hosts whose restore script may exist
        self.snaps: dict[str, kernel.Snapshot] = {}

    def group(self, remotes: list[Remote], task: Callable[[Remote], Any]) -> dict[str, Any]:
        return on_all_hosts(remotes, task)


def run_rep(variant: Variant, repetition: int, rep_dir: Path, inventory: Inventory, dry_run: bool = False,
            echo: TextIO | None = None) -> dict[str, Any]:
    names = list(variant.config.topology.nodes)
    check_hosts(inventory, names)
    cfg = kernel_config(variant.config, inventory)
    plan = plan_for(cfg)
    seed = rep_seed(cfg, repetition)
    hosts = inventory.by_node()
    meta = base_meta(cfg, variant.name, repetition, seed, "pi", variant.sweep_value)
    rel = "/".join(rep_dir.parts[-4:])
    rdirs = {n: nodes.rep_dir_remote(hosts[n].work_dir, rel) for n in names}
    meta["data_plane"] = "kernel"
    meta["auth"] = mac_on(cfg, "pi")     # the probe socket's MAC (kernel TCP itself carries none)
    meta["hosts"] = {n: {"name": hosts[n].name, "ssh": f"{hosts[n].user}@{hosts[n].host}:{hosts[n].port}",
                         "mesh_address": hosts[n].mesh_address, "iface": hosts[n].iface, "dir": rdirs[n]}
                     for n in names}
    meta["kernel"] = {"handlers": plan.handlers, "congestion": cfg.netns.congestion,
                      "traffic": cfg.netns.traffic, "loss_in_handler": sorted(plan.handler_loss),
                      "loss_statistic": plan.loss_rates, "sack": plan.sack, "advmss": plan.advmss}
    if dry_run:
        return _dry_run(cfg, plan, inventory, rdirs, seed, echo)
    rep_dir.mkdir(parents=True, exist_ok=True)
    remotes = open_remotes([hosts[n] for n in names], echo=echo)
    run = _Run(remotes, rdirs, rep_dir)
    apps = app_configs(cfg, seed, rdirs)
    for n in names:
        run.procs[n] = [name for name, _ in apps.get(n, [])] + [f"{n}.node"]
    hplans = host_plans(plan, inventory, rdirs, run.procs, cfg.pi)
    progress = DeliveryProgress(f"{variant.name} rep {repetition}",
                         sum(f.segments * f.segment_size for f in cfg.flows))
    try:
        offsets = preflight(remotes, rdirs, meta)
        _check_kernel_ready(run, cfg)
        meta["graph_filter"] = inventory.graph_filter
        _arm(run, hplans, experiment_graph(cfg), meta, inventory.graph_filter == "mac")
        _run_flows(run, cfg, plan, apps, seed, offsets, inventory, meta, progress)
        if meta["status"] == "running":
            meta["status"] = "ok"
    except RunFailed as e:
        meta["status"] = "failed"
        meta["error"] = str(e)
        meta["host_report"] = list(e.lines)
    except KeyboardInterrupt:
        meta["status"] = "interrupted"
        meta["error"] = "stopped by Ctrl-C"
        raise
    finally:
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C must not skip the restore
        try:
            progress.finish()
            _teardown(run, hplans, plan, cfg, meta)
        finally:
            signal.signal(signal.SIGINT, old_int)
            write_meta(rep_dir, meta)
            close_all(remotes)
    return meta


def _check_kernel_ready(run: _Run, cfg: ExperimentConfig) -> None:
    """netfilterqueue in the host's venv, root (sudo -n), iperf3 on the endpoints if the YAML asks for it."""
    endpoints = {f.sender for f in cfg.flows} | {f.receiver for f in cfg.flows}
    iperf = cfg.netns.traffic == "iperf3"

    def check(r: Remote) -> None:
        q = shlex.quote
        py = q(f"{r.host.venv}/bin/python")
        res = r.run(f"{py} -c 'import netfilterqueue' 2>&1 | tail -n 1; "
                    + ("command -v iperf3 >/dev/null || echo no-iperf3; " if iperf and r.host.node in endpoints else "")
                    + "true").stdout.strip()
        problems = []
        if "Error" in res:
            problems.append(f"netfilterqueue is not installed in {r.host.venv} ({res.splitlines()[0][:120]}): "
                            "run aspan deploy setup (it builds it; the host needs libnetfilter-queue-dev, "
                            "python3-dev and gcc)")
        if "no-iperf3" in res:
            problems.append("iperf3 missing (netns.traffic: iperf3): sudo apt-get install iperf3")
        if problems:
            raise HostError("; ".join(problems))
        r.run("true", root=True)   # sudo -n works (or the user is root)

    run.group(run.remotes, check)


def _arm(run: _Run, hplans: dict[str, kernel.HostPlan], graph: MeshGraph, meta: dict[str, Any],
         mac_filter: bool) -> None:
    """Snapshot every host, upload its restore script, then apply the plan (MAC filter, routes, sysctls, rules)."""
    arm_hosts(run.remotes, hplans, graph, run.rep_dir, run.snaps, run.armed, meta, mac_filter)


def _wait_ready(run: _Run, want: dict[str, list[str]], timeout: float) -> None:
    """Until every process in ``want`` (node -> names) wrote its ready file; RunFailed if one died."""
    end = time.time() + timeout
    targets = [run.by_node[n] for n in want]
    while True:
        st = run.group(targets, lambda r: parse_states(r.run(states_command(run.rdirs[r.host.node], want[r.host.node]),
                                                              root=True).stdout)[0])
        dead = []
        for r in targets:
            for name in want[r.host.node]:
                s, code = st[r.name].get(name, ("exited", "unknown"))
                if s == "exited":
                    dead.append(f"{r.host.label()}: {name} {_describe_exit(code)} before it was ready: "
                                f"{_tail(r, run.rdirs[r.host.node] + '/' + name + '.stderr')}")
        if dead:
            raise RunFailed(dead)
        if all(st[r.name].get(name, ("",))[0] in ("ready", "done") for r in targets for name in want[r.host.node]):
            return
        if time.time() > end:
            raise RunFailed([f"not ready after {timeout} s: " + ", ".join(
                f"{name} on {r.name}" for r in targets for name in want[r.host.node]
                if st[r.name].get(name, ("",))[0] not in ("ready", "done"))])
        time.sleep(0.2)


def _read(run: _Run, nodes_: list[str], cmd: Callable[[Remote], str]) -> dict[str, str]:
    """Run a root command on some hosts; node -> stdout (RunFailed naming the hosts that failed)."""
    res = run.group([run.by_node[n] for n in nodes_], lambda r: r.run(cmd(r), root=True).stdout)
    return {run.by_node[n].host.node: res[run.by_node[n].name] for n in nodes_}


def _run_flows(run: _Run, cfg: ExperimentConfig, plan: MeshPlan,
               apps: dict[str, list[tuple[str, dict[str, Any]]]], seed: int, offsets: dict[str, float],
               inventory: Inventory, meta: dict[str, Any], progress: DeliveryProgress) -> None:
    """Apps first (they prepare their payload, then wait for go.json), then t0 and the node daemons."""
    settle = cfg.etx.flow_start_s
    max_dur = cfg.limits.max_duration_s
    app_hosts = [run.by_node[n] for n in apps]

    def start_apps(r: Remote) -> dict[str, int | None]:
        n = r.host.node
        return {name: start_process(r, run.rdirs[n], name, APP_MODULE, conf, run.rep_dir / f"{name}.json")
                for name, conf in apps[n]}

    if cfg.netns.traffic == "iperf3":
        run.group(app_hosts, lambda r: r.run(time_wait_command(apps[r.host.node]), root=True, timeout=90))
    pids = run.group(app_hosts, start_apps)
    _wait_ready(run, {n: [name for name, _ in apps[n]] for n in apps}, READY_TIMEOUT_S)
    t0 = time.time() + inventory.start_margin_s
    t_flows = t0 + settle

    key = new_key() if meta["auth"] else None   # per repetition; never logged (issue 13)

    def start_node(r: Remote) -> int | None:
        n = r.host.node
        conf = node_config(cfg, plan, n, seed, t0 + offsets.get(n, 0.0), run.rdirs[n], r.name, r.host.iface,
                           auth=key is not None)
        kfile = write_key(run.rep_dir / f"{n}.key", key) if key is not None else None
        return start_process(r, run.rdirs[n], f"{n}.node", NODE_MODULE, conf, run.rep_dir / f"{n}.node.json", kfile)

    try:
        npids = run.group(run.remotes, start_node)
    finally:                  # every daemon has its key now (or never will): the laptop's copies go
        for n in run.procs:
            (run.rep_dir / f"{n}.key").unlink(missing_ok=True)
    meta["pids"] = {r.host.node: {**pids.get(r.name, {}), f"{r.host.node}.node": npids[r.name]} for r in run.remotes}
    _wait_ready(run, {r.host.node: [f"{r.host.node}.node"] for r in run.remotes}, READY_TIMEOUT_S)
    late = time.time() - t_flows
    if late > 0:
        meta["late_start_s"] = round(late, 3)
    queued = [n for n in plan.nodes if queue_bound(plan, n)]
    endpoints = sorted(apps)
    meta["_nfq_before"] = {n: parse_nfq(t).get(kernel_plan.QUEUE_NUM)
                           for n, t in _read(run, queued, lambda r: "cat /proc/net/netfilter/nfnetlink_queue").items()}
    meta["_tcp_before"] = {n: parse_tcpext(t) for n, t in _read(run, endpoints, lambda r: "cat /proc/net/netstat").items()}

    def go(r: Remote) -> None:
        n = r.host.node
        off = offsets.get(n, 0.0)
        local = run.rep_dir / f"{n}.go.json"
        local.write_text(json.dumps({"t0": t0 + off, "t_flows": t_flows + off}))
        d = run.rdirs[n]
        r.put(local, f"{d}/go.tmp")
        r.run(f"mv {shlex.quote(d + '/go.tmp')} {shlex.quote(d + '/go.json')}")

    run.group(app_hosts, go)
    receiver = cfg.flows[0]["receiver"]
    end_by = t_flows + max_dur
    misses = {r.name: 0 for r in run.remotes}
    while True:
        def poll(r: Remote) -> tuple[dict[str, tuple[str, str]], int | None]:
            n = r.host.node
            return parse_states(r.run(states_command(run.rdirs[n], run.procs[n], f"{run.rdirs[n]}/{n}.log"),
                                      root=True, timeout=max(5.0, r.host.connect_timeout_s)).stdout)
        try:
            states = by_name(on_hosts(run.remotes, poll), run.remotes)
        except GroupException as e:
            states = by_name(e.result, run.remotes)
        lost, dead = [], []
        for r in run.remotes:
            v = states[r.name]
            misses[r.name] = misses[r.name] + 1 if isinstance(v, BaseException) else 0
            if misses[r.name] >= 3:
                lost.append(f"{r.host.label()}: lost during the run: {describe_error(v)}")
            if isinstance(v, BaseException):
                continue
            for name in run.procs[r.host.node]:
                s, code = v[0].get(name, ("exited", "unknown"))
                if s == "exited":
                    dead.append(f"{r.host.label()}: {name} {_describe_exit(code)} before the flows finished: "
                                f"{_tail(r, run.rdirs[r.host.node] + '/' + name + '.stderr')}")
            if r.host.node == receiver and v[1] is not None:
                progress.show(v[1])
        if lost or dead:
            raise RunFailed(lost + dead)
        done = all(not isinstance(states[run.by_node[n].name], BaseException)
                   and states[run.by_node[n].name][0].get(name, ("",))[0] == "done"
                   for n in apps for name, _ in apps[n])
        if done:
            return
        if time.time() > end_by:
            meta["status"] = "incomplete"
            meta["error"] = f"flows not finished after {max_dur} s"
            return
        time.sleep(inventory.poll_interval_s)


def _teardown(run: _Run, hplans: dict[str, kernel.HostPlan], plan: MeshPlan, cfg: ExperimentConfig,
              meta: dict[str, Any]) -> None:
    """Counters, stop, gather, restore, compare: on every host that can be reached; problems per host."""
    problems: dict[str, list[str]] = {}

    def each(remotes: list[Remote], what: str, task: Callable[[Remote], Any]) -> dict[str, Any]:
        return each_host(remotes, what, task, problems)

    armed = list(run.armed)
    nfq_before = meta.pop("_nfq_before", None)
    tcp_before = meta.pop("_tcp_before", None)
    if nfq_before is not None:
        queued = [run.by_node[n] for n in nfq_before]
        after = each(queued, "counters", lambda r: r.run("cat /proc/net/netfilter/nfnetlink_queue", root=True).stdout)
        meta["nfqueue"] = {n: {"before": nfq_before[n], "after": parse_nfq(t).get(kernel_plan.QUEUE_NUM)}
                           for n, t in after.items()}
        stat_nodes = [run.by_node[n] for n in plan.loss_rates]
        stat = each(stat_nodes, "counters", lambda r: r.run(
            f"{run.snaps[r.host.node].iptables_cmd} -t raw -L {kernel.CHAIN_PREFIX}PREROUTING -v -x -n",
            root=True).stdout)
        meta["statistic_drops"] = {n: parse_statistic_drops(t) for n, t in stat.items()}
    if tcp_before is not None:
        eps = [run.by_node[n] for n in tcp_before]
        now = each(eps, "counters", lambda r: r.run("cat /proc/net/netstat", root=True).stdout)
        meta["tcp_counters"] = {n: {k: parse_tcpext(t).get(k, 0) - tcp_before[n].get(k, 0)
                                    for k in TCP_EXT_COUNTERS if k in parse_tcpext(t)}
                                for n, t in now.items()}
    stopped = each(armed, "stop", lambda r: r.run(stop_command(run.rdirs[r.host.node], run.procs[r.host.node]),
                                                   root=True, timeout=60).stdout)
    meta["stopped"], meta["exit_codes"] = {}, {}
    for n, out in stopped.items():
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3:
                meta["stopped"][parts[0]] = parts[1]
                code = parts[-1]
                meta["exit_codes"][parts[0]] = int(code) if code.lstrip("-").isdigit() else None

    def gather(r: Remote) -> list[str]:
        d = run.rdirs[r.host.node]
        got = []
        for f in sorted(r.listdir(d)):
            if f.endswith((".pid", ".tmp", ".key")) or f == "go.json":   # never a key (stop_command deletes it)
                continue
            r.get(f"{d}/{f}", run.rep_dir / f)
            got.append(f)
        return got

    meta["gathered"] = each(armed, "gather", gather)
    restore_hosts(armed, hplans, run.snaps, meta, problems)
    for n, count in meta.get("statistic_drops", {}).items():
        append_drops(run.rep_dir / f"{n}.log", n, "loss", count, "iptables statistic")
    for n, rec in meta.get("nfqueue", {}).items():
        b, a = rec["before"] or {}, rec["after"] or {}
        for key in ("queue_dropped", "user_dropped"):
            append_drops(run.rep_dir / f"{n}.log", n, "queue", a.get(key, 0) - b.get(key, 0), f"nfqueue {key}")
    record_problems(meta, problems, run.remotes)


def _dry_run(cfg: ExperimentConfig, plan: MeshPlan, inv: Inventory, rdirs: dict[str, str], seed: int,
             echo: TextIO | None) -> dict[str, Any]:
    """What a kernel run would do on each host (the scripts with placeholders for what the snapshot reads)."""
    import sys
    out = echo or sys.stdout
    hosts = inv.by_node()
    apps = app_configs(cfg, seed, rdirs)
    procs = {n: [name for name, _ in apps.get(n, [])] + [f"{n}.node"] for n in plan.nodes}
    hp = host_plans(plan, inv, rdirs, procs, cfg.pi)
    graph = experiment_graph(cfg)
    for n in plan.nodes:
        h = hosts[n]
        macs = {m: f"<{m}:{hosts[m].iface}:MAC>" for m in plan.nodes}
        if inv.graph_filter == "mac":
            hp[n].rules = macfilter.drop_rules(graph, n, h.iface, macs) + hp[n].rules
        snap = kernel.Snapshot("<flavour>", {k: "<before>" for k in hp[n].sysctls},
                               {f: "<before>" for f in hp[n].offloads_off}, {}, "", "", [])
        print(f"[{h.name}] kernel data plane on {h.iface} ({h.mesh_address}); processes: {', '.join(procs[n])}",
              file=out)
        for line in kernel.apply_script(hp[n], snap).splitlines():
            print(f"[{h.name}] apply: {line}", file=out)
        print(f"[{h.name}] restore script: {kernel.restore_path(h.install_dir)} (written before the apply)", file=out)
    return {}
