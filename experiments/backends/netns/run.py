"""One (variant, repetition) on the netns backend: build the mesh, run the flows, always tear down.

Timeline: refuse on leftovers -> safety route -> namespaces, veths, routes,
rules -> one daemon per node (NFQUEUE handler + ETX prober) -> nfnetlink_queue
counters -> receivers, then senders after ``etx.settle_s`` -> wait for the
flows -> counters again -> stop everything -> delete the namespaces.  The
teardown runs at the end, on Ctrl-C (and SIGTERM), and when anything fails.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from experiments.config import ExperimentConfig
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Set as AbstractSet
from typing import Any, Iterator

from experiments.backends.kernel_counters import append_drops
from experiments.backends.kernel_plan import app_flow
from experiments.progress import DeliveryProgress
from experiments.backends.netns import mesh as meshmod
from experiments.backends.netns import babel, state
from experiments.backends.netns.sh import NetnsError, require_prerequisites
from experiments.build import flow_plans, mac_on, new_key, start_rep, write_key, write_meta
from experiments.schema import Variant
from experiments.stopping import Terminated, stop_reason
from routing.drivers.eventlog import write_failure
from routing.drivers.link_shaper import SHAPER_QUEUE, LatenessBoard

START_MARGIN_S = 1.0
READY_TIMEOUT_S = 20.0
STOP_GRACE_S = 5.0
PROBE_PORT = 7700


class RunFailed(RuntimeError):
    pass


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


class Procs:
    """The processes this run started, by role name; all are stopped in :meth:`stop_all`."""

    def __init__(self, rep_dir: Path) -> None:
        self.rep_dir = rep_dir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, ns: str | None, module: str, conf: dict[str, Any],
              pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
        """Start ``python -m module --config <name>.json`` in namespace ``ns`` (None: the root namespace);
        ``pass_fds``: descriptors the process inherits under the same numbers."""
        cpath = self.rep_dir / f"{name}.json"
        cpath.write_text(json.dumps(conf))
        return self.start_cmd(name, ns, [sys.executable, "-m", module, "--config", str(cpath)], pass_fds)

    def start_cmd(self, name: str, ns: str | None, argv: list[str],
                  pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
        """Start ``argv`` in namespace ``ns`` (None: the root namespace), its stderr in ``<name>.stderr``."""
        where = ["ip", "netns", "exec", ns] if ns is not None else []
        with open(self.rep_dir / f"{name}.stderr", "wb") as err:
            p = subprocess.Popen([*where, *argv], stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                 pass_fds=pass_fds)
        self.procs[name] = p
        return p

    def failed(self, allow_done: set[str]) -> str | None:
        """A message for the first process that died (an app in ``allow_done`` may end with 0)."""
        for name, p in self.procs.items():
            code = p.poll()
            if code is None or (code == 0 and name in allow_done):
                continue
            # a daemon that could not write its log (<node>.log, medium.log) says so by its exit code
            disk = write_failure(code, self.rep_dir / f"{name.split('.')[0]}.log")
            why = str(disk) if disk is not None else self.tail(name) or "no error output"
            return f"{name} exited with code {code} before the flows finished: {why}"
        return None

    def tail(self, name: str, n: int = 5) -> str:
        try:
            text = (self.rep_dir / f"{name}.stderr").read_text(errors="replace").strip()
        except OSError:
            return ""
        return " | ".join(text.splitlines()[-n:])

    def stop_all(self) -> dict[str, int | None]:
        """SIGTERM, then SIGKILL after STOP_GRACE_S; routing daemons (``*.babeld``) after the rest, so no node
        logs the routes they withdraw on their way out as route changes."""
        last = {n for n in self.procs if n.endswith(".babeld")}
        for group in ([n for n in self.procs if n not in last], sorted(last)):
            for n in group:
                if self.procs[n].poll() is None:
                    self.procs[n].send_signal(signal.SIGTERM)
            deadline = time.time() + STOP_GRACE_S
            for n in group:
                p = self.procs[n]
                try:
                    p.wait(timeout=max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        return {n: p.returncode for n, p in self.procs.items()}


def _wait_files(paths: list[Path], procs: Procs, timeout: float, may_end: AbstractSet[str] = frozenset()) -> None:
    end = time.time() + timeout
    while not all(p.exists() for p in paths):
        msg = procs.failed(set(may_end))
        if msg:
            raise RunFailed(msg)
        if time.time() > end:
            missing = [p.name for p in paths if not p.exists()]
            raise RunFailed(f"not ready after {timeout} s: {', '.join(missing)}")
        time.sleep(0.05)


def run_rep(variant: Variant, repetition: int, rep_dir: Path) -> dict[str, Any]:
    require_prerequisites()
    cfg, seed, meta = start_rep(variant, repetition, rep_dir, "netns")
    rid = state.new_run_id()
    plan = meshmod.plan_mesh(cfg, rid)
    with state.locked():
        left = state.leftovers()
        if left:
            raise NetnsError(f"leftovers of an earlier netns run: {', '.join(left)}; "
                             "remove them with `aspan clean` (as root) and run again")
        state.record_run(rid, plan.nodes)
    meta["netns"] = {"run_id": rid, "namespaces": {n: plan.ns(n) for n in plan.nodes},
                     "links": [[l.a, l.b, l.dev_a, l.dev_b] for l in plan.links],
                     "handlers": plan.handlers, "congestion": cfg.netns.congestion,
                     "loss_in_handler": sorted(plan.handler_loss), "loss_statistic": plan.loss_rates,
                     "sack": plan.sack, "advmss": plan.advmss, "traffic": cfg.netns.traffic,
                     "link": cfg.link.to_dict() if plan.link is not None else None}   # what the shapers emulate
    write_meta(rep_dir, meta)   # status running: the run id is on disk before its namespaces exist
    procs = Procs(rep_dir)
    old_term = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        state.ensure_unreachable_route()
        meshmod.setup(plan)
        if plan.babel_hello_s is not None:
            meta["babeld"] = _start_babeld(plan, procs, rep_dir)
            write_meta(rep_dir, meta)
        _run_flows(cfg, plan, procs, rep_dir, seed, variant, repetition, meta)
    except RunFailed as e:
        meta["status"] = "failed"
        meta["error"] = str(e)
    except NetnsError as e:
        meta["status"] = "failed"
        meta["error"] = str(e)
    except KeyboardInterrupt as e:
        meta["status"] = "interrupted"
        meta["error"] = stop_reason(e)
        raise
    finally:
        # finish the teardown whatever arrives (a second Ctrl-C must not leave namespaces behind)
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            meta["exit_codes"] = procs.stop_all()
            errors = meshmod.teardown(plan)
            state.forget_run(rid)
            state.release_route()
            if errors:
                meta["teardown_errors"] = errors
        finally:
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGINT, old_int)
            write_meta(rep_dir, meta)
    return meta


def _start_babeld(plan: meshmod.MeshPlan, procs: Procs, rep_dir: Path) -> dict[str, Any]:
    """babeld in every namespace (experiments/backends/netns/babel.py); returns once each node has a route to
    every other and no route has changed for babel.quiet_s (meta.json's ``babeld``: the Hello interval, when
    the routes last changed, the version)."""
    missing = babel.missing()
    if missing:
        raise NetnsError("routing.daemon babeld needs " + "; ".join(missing) + " (apt install babeld iptables)")
    assert plan.babel_hello_s is not None
    for i, n in enumerate(plan.nodes):
        files = {"pid": str(rep_dir / f"{n}.babeld.pid"), "state": str(rep_dir / f"{n}.babeld.state")}
        conf = rep_dir / f"{n}.babeld.conf"
        conf.write_text(babel.config_text(i + 1, sorted(plan.devs[n].values()), plan.addrs[n], plan.babel_hello_s,
                                          files))
        procs.start_cmd(f"{n}.babeld", plan.ns(n), [babel.BABELD, "-c", str(conf)])
    took = babel.wait_converged({n: plan.ns(n) for n in plan.nodes}, plan.addrs, lambda: procs.failed(set()),
                                babel.quiet_s(plan.babel_hello_s))
    version = subprocess.run([babel.BABELD, "-V"], capture_output=True, text=True, timeout=10)
    return {"hello_s": plan.babel_hello_s, "converged_s": took,
            "version": (version.stderr or version.stdout).strip()}


def _start_daemons(cfg: ExperimentConfig, plan: meshmod.MeshPlan, procs: Procs, rep_dir: Path, seed: int,
                   t0: float, deadline: float, apps: set[str]) -> None:
    """One daemon per node (NFQUEUE handler, link shaper, ETX prober), after the medium daemon if there is
    a medium (it must hold the first probe already); returns when all are ready.  With ``auth.mac`` each
    daemon gets the repetition's fresh key in ``<node>.key`` (mode 0600), which it reads and deletes at
    start: its probe socket seals and verifies probes and LSAs (routing.drivers.udp_probe; issue 27, item 4); what
    a daemon that failed early did not delete is deleted here once all are up or one failed."""
    nx = cfg.netns
    if plan.medium:
        conf = {"experiment": cfg.to_dict(), "seed": seed, "log": str(rep_dir / "medium.log"), "t0": t0,
                "ready_file": str(rep_dir / "medium.ready"), "deadline": deadline, "queue": SHAPER_QUEUE,
                "max_len": nx.queue_maxlen, "probe_port": PROBE_PORT, "realtime": nx.realtime,
                "nodes": {n: {"ns": plan.ns(n), "devs": {dev: nbr for nbr, dev in plan.devs[n].items()}}
                          for n in plan.nodes}}
        procs.start("medium", None, "experiments.backends.netns.medium", conf)
        _wait_files([rep_dir / "medium.ready"], procs, READY_TIMEOUT_S, apps)
    ready = []
    # the daemons' shared LatenessBoard (routing/drivers/link_shaper.py): each inherits the memfd; ours is closed
    # once they are started, so the memory goes with the last daemon and nothing is left to clean up
    board = LatenessBoard.create_fd() if plan.link is not None else None
    key = new_key() if mac_on(cfg, "netns") else None   # per repetition; never logged (issue 13)
    try:
        try:
            for n in plan.nodes:
                link = meshmod.link_conf(plan, n)
                if link is not None:
                    link["board_fd"] = board
                conf = {"experiment": cfg.to_dict(), "node": n, "seed": seed, "t0": t0, "deadline": deadline,
                        "log": str(rep_dir / f"{n}.log"), "ready_file": str(rep_dir / f"{n}.ready"),
                        "handlers": plan.handlers, "queue": meshmod.QUEUE_NUM, "option": nx.option,
                        "probe_port": PROBE_PORT, "max_len": nx.queue_maxlen, "ns": plan.ns(n),
                        "handler_loss": n in plan.handler_loss, "link": link, "realtime": nx.realtime,
                        "queue_bound": plan.handlers != "kernel" and (n in plan.forwarders or n in plan.senders
                                                                      or meshmod.queued_input(plan, n)),
                        "kernel_routes": {"devs": {plan.addrs[m]: dev for m, dev in plan.devs[n].items()},
                                          "advmss": plan.advmss}}
                if key is not None:
                    conf["auth_key_file"] = str(write_key(rep_dir / f"{n}.key", key))
                procs.start(f"{n}.node", plan.ns(n), "experiments.backends.netns.node", conf,
                            pass_fds=(board,) if board is not None else ())
                ready.append(rep_dir / f"{n}.ready")
        finally:
            if board is not None:
                os.close(board)
        _wait_files(ready, procs, READY_TIMEOUT_S, apps)
    finally:
        _forget_keys(rep_dir, plan.nodes)


def _forget_keys(rep_dir: Path, nodes: list[str]) -> None:
    """Delete the key files a daemon did not read (it deletes its own once read; issue 13, item 3)."""
    for n in nodes:
        (rep_dir / f"{n}.key").unlink(missing_ok=True)


@contextmanager
def mesh_session(cfg: ExperimentConfig, rep_dir: Path, seed: int = 1,
                 max_s: float = 600.0) -> Iterator[meshmod.MeshPlan]:
    """The mesh of ``cfg`` with its node daemons running and no flows (bench/netns_link.py and the
    tests measure it with their own tools inside the namespaces); always torn down."""
    require_prerequisites()
    rid = state.new_run_id()
    plan = meshmod.plan_mesh(cfg, rid)
    with state.locked():
        left = state.leftovers()
        if left:
            raise NetnsError(f"leftovers of an earlier netns run: {', '.join(left)}; remove them with `aspan clean`")
        state.record_run(rid, plan.nodes)
    procs = Procs(rep_dir)
    try:
        state.ensure_unreachable_route()
        meshmod.setup(plan)
        now = time.time()
        _start_daemons(cfg, plan, procs, rep_dir, seed, now, now + max_s, set())
        yield plan
        msg = procs.failed(set())
        if msg:
            raise RunFailed(msg)
    finally:
        procs.stop_all()
        meshmod.teardown(plan)
        state.forget_run(rid)
        state.release_route()


def _run_flows(cfg: ExperimentConfig, plan: meshmod.MeshPlan, procs: Procs, rep_dir: Path, seed: int,
               variant: Variant, repetition: int, meta: dict[str, Any]) -> None:
    """Apps first (they prepare their data, then wait for ``go.json``), then t0 and the daemons.

    The daemons time ETX settling and loss ``down`` intervals from t0, so t0 is
    fixed only once the apps are ready: a sender that is still generating its
    payload cannot start its flow late and shift the loss pattern against it.
    """
    nx = cfg.netns
    settle = cfg.etx.flow_start_s
    max_dur = cfg.limits.max_duration_s
    addrs = plan.addrs
    go = rep_dir / "go.json"
    apps: set[str] = set()
    app_ready: list[Path] = []
    done: list[Path] = []
    for fp in flow_plans(cfg, seed, 0.0):
        flow = app_flow(fp, addrs)
        for role, node in (("receiver", fp.receiver), ("sender", fp.sender)):
            name = f"{node}.{role}{fp.index}"
            conf = {"role": role, "node": node, "flow": flow, "traffic": nx.traffic,
                    "congestion": nx.congestion, "poll_ms": nx.cwnd_poll_ms, "variant": cfg.tcp.variant,
                    "log": str(rep_dir / f"{node}.log"), "go_file": str(go),
                    "ready_file": str(rep_dir / f"{name}.ready"), "done_file": str(rep_dir / f"{name}.done")}
            procs.start(name, plan.ns(node), "experiments.backends.netns.tcpapp", conf)
            apps.add(name)
            app_ready.append(rep_dir / f"{name}.ready")
            done.append(rep_dir / f"{name}.done")
    _wait_files(app_ready, procs, READY_TIMEOUT_S, apps)
    t0 = time.time() + START_MARGIN_S
    t_flows = t0 + settle
    meta["auth"] = mac_on(cfg, "netns")      # the probe socket's MAC (the kernel's data carries none)
    _start_daemons(cfg, plan, procs, rep_dir, seed, t0, t_flows + max_dur + 60.0, apps)
    late = time.time() - t_flows
    if late > 0:
        meta["late_start_s"] = round(late, 3)   # the nodes were not up by t_flows: settling was shorter
    queued = [n for n in plan.nodes if plan.handlers != "kernel" and (n in plan.forwarders or n in plan.senders
                                                                        or meshmod.queued_input(plan, n))]
    before = {n: meshmod.nfq_counters(plan.ns(n)) for n in queued}
    shaped = plan.nodes if plan.held else []     # every node's incoming links are held (shaper or medium)
    before_link = {n: meshmod.nfq_counters(plan.ns(n), SHAPER_QUEUE) for n in shaped}
    (rep_dir / "go.tmp").write_text(json.dumps({"t0": t0, "t_flows": t_flows}))
    (rep_dir / "go.tmp").replace(go)
    progress = DeliveryProgress(f"{variant.name} rep {repetition}",
                        sum(f.segments * f.segment_size for f in cfg.flows),
                        rep_dir / f"{cfg.flows[0]['receiver']}.log")
    end_by = t_flows + max_dur
    try:
        while not all(p.exists() for p in done):
            msg = procs.failed(apps)
            if msg:
                raise RunFailed(msg)
            progress.poll()
            if time.time() > end_by:
                meta["status"] = "incomplete"
                meta["error"] = f"flows not finished after {max_dur} s"
                break
            time.sleep(0.1)
        progress.poll()
    finally:
        progress.finish()
        after = {n: meshmod.nfq_counters(plan.ns(n)) for n in queued}
        meta["nfqueue"] = {n: {"before": before[n], "after": after[n]} for n in queued}
        after_link = {n: meshmod.nfq_counters(plan.ns(n), SHAPER_QUEUE) for n in shaped}
        if shaped:
            meta["nfqueue_link"] = {n: {"before": before_link[n], "after": after_link[n]} for n in shaped}
        stat = {n: meshmod.statistic_drops(plan, n) for n in plan.loss_rates}
        if stat:
            meta["statistic_drops"] = stat
        links = {n: meshmod.link_counters(plan, n) for n in plan.nodes}
        meta["links"] = links
        meta["tcp_counters"] = {n: meshmod.tcp_counters(plan.ns(n))
                                for n in sorted({fp.sender for fp in cfg.flows} | {fp.receiver for fp in cfg.flows})}
        meta["exit_codes"] = procs.stop_all()
        for n in queued:
            b, a = before[n] or {}, after[n] or {}
            for key in ("queue_dropped", "user_dropped"):
                append_drops(rep_dir / f"{n}.log", n, "queue", a.get(key, 0) - b.get(key, 0), f"nfqueue {key}")
        for n in shaped:      # the link shaper's kernel queue overflowed (held packets count against max_len)
            b, a = before_link[n] or {}, after_link[n] or {}
            for key in ("queue_dropped", "user_dropped"):
                append_drops(rep_dir / f"{n}.log", n, "queue", a.get(key, 0) - b.get(key, 0),
                              f"nfqueue {'medium' if plan.medium else 'link shaper'} {key}")
        for n, devs in links.items():
            for dev, c in devs.items():
                append_drops(rep_dir / f"{n}.log", n, "queue", c.get("qdisc_dropped", 0), f"qdisc {dev}")
        for n, count in stat.items():
            append_drops(rep_dir / f"{n}.log", n, "loss", count, "iptables statistic")
    if meta["status"] == "running":
        meta["status"] = "ok"
