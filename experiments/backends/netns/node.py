"""The per-node daemon of the netns backend: NFQUEUE snoop handler + ETX prober, in the node's namespace.

``python -m experiments.backends.netns.node --config FILE`` (started by the
backend with ``ip netns exec``).  It ends on SIGTERM/SIGINT, at its deadline,
or when the runner that started it disappears.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from etx.estimator import EtxTable
from experiments.config import ExperimentConfig
from experiments.backends.netns.babel import BabelWatch
from experiments.backends.node_main import read_key
from experiments.build import (adaptive_qos, babeld_routes, header_fields, node_agent, node_loss_spec, node_routing, node_sink,
                               route_tables)
from experiments.link_spec import link_queue, link_schedule
from routing.overlay.auth import MeshAuth
from routing.drivers.capture import KernelTap
from routing.drivers.eventlog import EventLog, fail_process
from routing.forwarding.flowlog import exact_totals
from routing.kernel.forwarder import KernelForwarder
from routing.drivers.kernel_routes import KernelRoutes
from routing.topology.linkstate import RouteChange, apply_changes, log_changes
from routing.drivers.link_shaper import LatenessBoard, LinkShaper
from routing.links.linkem import LinkParams, LinkQueue
from routing.links.mahimahi import OpportunityQueue
from routing.links.loss import build_loss_model, node_rng
from routing.drivers.nfq import NfqDriver
from routing.topology.routes import RouteTable
from routing.drivers.station import StationRecorder, recorder_from_config
from routing.forwarding.step import DROP_REASONS
from routing.drivers.udp_probe import UdpProber


def forwarder(cfg: ExperimentConfig, name: str, seed: int, t_flows: float, prober: UdpProber,
               log: EventLog, option: int, handler_loss: bool, table: RouteTable) -> KernelForwarder:
    """Node ``name``'s snoop step: loss model, snoop agent (``snoop.scheme``), routes (as in build_node).

    Without ``handler_loss`` the node's loss is the iptables statistic match and its
    handler sees nothing it hears, so it gets no loss model.
    """
    addrs = cfg.topology.addresses
    spec = node_loss_spec(cfg, name, t_flows) if handler_loss else {"model": "none"}
    loss = build_loss_model(spec, node_rng(seed, name, "loss"))
    sink = node_sink(cfg, log)     # the lines of traffic no configured flow explains aggregated (routing.forwarding.flowlog)
    agent = node_agent(cfg, name, sink)
    return KernelForwarder(addrs[name], table.next_hop, prober.quality, agent, loss, header_fields(cfg),
                           option, sink, adaptive_qos(cfg))


_forwarder = forwarder   # the old name (tests/test_flowlog.py)


def probe_auth(conf: dict[str, Any], address: str, neighbours: Sequence[str]) -> MeshAuth | None:
    """The probe socket's MAC with the run's key (``auth.mac``; issue 27, item 4) when the runner handed the
    node a key file (read once and deleted: experiments.backends.node_main.read_key), else None.  Sequence
    numbers start at the clock in microseconds, as on the overlay (node_main.node_auth)."""
    if not conf.get("auth_key_file"):
        return None
    return MeshAuth(read_key(conf["auth_key_file"]), address, neighbours, first_seq=time.time_ns() // 1000)


def all_drops(step_drops: dict[str, int] | None, probe_drops: dict[str, int]) -> dict[str, int]:
    """``node_stop`` ``drops``: what the node did not take, by reason, the forwarding step's (None: no snoop
    handler) and the probe socket's together (issue 27, item 4); ``probes.drops`` keeps the socket's share."""
    return {r: (step_drops or {}).get(r, 0) + probe_drops.get(r, 0) for r in DROP_REASONS}


REALTIME_PRIORITY = 10        # netns.realtime: SCHED_RR, below the kernel's own threads (50 and up)


def go_realtime() -> None:
    """netns.realtime: this thread (and the threads it starts) SCHED_RR at REALTIME_PRIORITY, woken on time
    under CPU load: a normal task can wait for the next scheduler tick (4 ms at HZ=250) before it releases
    a held packet; the kernel's RT throttling keeps 5 % for the rest."""
    os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(REALTIME_PRIORITY))


def link_shaper(cfg: ExperimentConfig, link: dict[str, Any], name: str, log: EventLog, max_len: int,
                t_flows: float) -> LinkShaper:
    """The emulated links into node ``name`` (``link["in"]``: its veth -> the neighbour at the other end
    and the link's rate, delay and queue, or with ``link.mahimahi`` the trace's opportunities from the flows'
    start ``t_flows``; routing.drivers.link_shaper holds the verdicts).  ``link["board_fd"]``:
    the run's LatenessBoard, inherited from the runner (absent: every hop counts from the kernel's stamp)."""
    links: dict[int, tuple[str, LinkParams | LinkQueue | OpportunityQueue]] = {}
    schedule = link_schedule(cfg)
    for dev, d in link["in"].items():
        rate = math.inf if d["rate_bps"] is None else float(d["rate_bps"])
        params = LinkParams(rate, d["delay_s"], d["queue_packets"])
        links[socket.if_nametoindex(dev)] = (f"{d['from']}->{name}", link_queue(params, t_flows, schedule))
    board = LatenessBoard.from_fd(link["board_fd"]) if link.get("board_fd") is not None else None
    return LinkShaper(link["queue"], links, log.emit, max_len=max_len, board=board)


def run_node(conf: dict[str, Any]) -> int:
    name = conf["node"]
    cfg = ExperimentConfig.from_dict(conf["experiment"], "", "experiment of " + str(conf.get("log")))
    log = EventLog(Path(conf["log"]), name, batch=True)
    addr = cfg.topology.addresses[name]
    parent = os.getppid()
    stop = threading.Event()
    driver: NfqDriver | None = None
    prober: UdpProber | None = None
    tap: KernelTap | None = None
    shaper: LinkShaper | None = None
    watch: BabelWatch | None = None
    stations: StationRecorder | None = None
    code = 0
    try:
        if conf.get("realtime"):
            go_realtime()
        log.emit(time.time(), "node_start", address=addr, pid=os.getpid(), handlers=conf["handlers"],
                 ns=conf["ns"], realtime=bool(conf.get("realtime")), auth=bool(conf.get("auth_key_file")))
        log.flush()
        etx_cfg = cfg.etx
        t_flows = conf["t0"] + etx_cfg.flow_start_s
        table = route_tables(cfg)[name]
        etx = EtxTable(table.neighbours, window=etx_cfg.window, mode=etx_cfg.mode,
                       before_full=etx_cfg.before_full, initial=etx_cfg.initial)
        jrng = node_rng(conf["seed"], name, "jitter")

        def interval(now: float) -> float:
            base = etx_cfg.warmup_interval_s if now < t_flows else etx_cfg.interval_s
            return base * (1.0 + jrng.uniform(-0.1, 0.1))

        routing = node_routing(cfg, name, etx, table, conf["t0"])
        kroutes = None
        if routing is not None:
            kr = conf["kernel_routes"]
            kroutes = KernelRoutes(addr, kr["devs"], kr["advmss"])

            def on_routes(changes: list[RouteChange], now: float) -> None:
                assert routing is not None and kroutes is not None
                kroutes.apply(changes)       # the kernel's first: the log says what is in force
                apply_changes(routing.router, changes, table, log.emit, now)

        if babeld_routes(cfg):
            def on_babel(changes: list[RouteChange], routes: dict[str, str], now: float) -> None:
                table.replace({d: v for d, v in routes.items() if v in table.neighbours})
                log_changes(changes, log.emit, now)
            watch = BabelWatch(addr, list(cfg.topology.addresses.values()), table.as_dict(), on_babel,
                               node_loss_spec(cfg, name, t_flows).get("down", []), log.emit)
        prober = UdpProber(addr, conf["probe_port"], etx, interval, log.emit, etx_cfg.log_interval_s,
                           routing=routing, on_routes=on_routes if routing is not None else None,
                           jitter=lambda: jrng.uniform(-0.1, 0.1), auth=probe_auth(conf, addr, table.neighbours))
        fw = None
        if conf["handlers"] == "snoop":
            fw = forwarder(cfg, name, conf["seed"], t_flows, prober, log, conf["option"], conf["handler_loss"],
                            table)
            if cfg.capture.enabled:               # the packets as they leave the handler (docs/LOGS.md)
                tap = KernelTap(Path(conf["log"]).with_suffix(".pcapng"), int(cfg.capture.max_mb * 1e6))
                fw.capture(tap)

        def flush() -> None:                      # after every batch of packets
            log.flush()
            if tap is not None:
                tap.writer.flush()
        if conf.get("link"):
            shaper = link_shaper(cfg, conf["link"], name, log, conf["max_len"], t_flows)
        if conf["queue_bound"]:
            driver = NfqDriver(conf["queue"], fw, log.emit, flush, max_len=conf["max_len"])

        def halt(*_: Any) -> None:
            stop.set()
            if driver is not None:
                driver.stop()

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, halt)
        prober.start()
        if watch is not None:
            watch.start()
        stations = recorder_from_config(conf.get("station_dump"), log.emit)   # the Pis' kernel plane only
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        ready = Path(conf["ready_file"])
        ready.with_suffix(".tmp").write_text(str(os.getpid()))
        ready.with_suffix(".tmp").replace(ready)

        def tick(now: float) -> bool:
            if fw is not None:
                fw.step.flush_drops(now)
            log.flush()
            if prober is not None and prober.error is not None:
                raise prober.error
            if watch is not None and watch.error is not None:
                raise watch.error
            return not (stop.is_set() or now >= conf["deadline"] or os.getppid() != parent)

        if driver is not None:
            driver.run(tick, shaper)
        elif shaper is not None:
            shaper.run(tick)
        else:
            while tick(time.time()):
                stop.wait(0.2)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        prober.stop()                 # its threads end and its drops are logged before node_stop
        extra: dict[str, Any] = {"probes": dict(prober.stats, drops=dict(prober.drops)),
                                 **({"routing": dict(routing.router.stats, kernel_routes=kroutes.installed)}
                                    if routing is not None and kroutes is not None else {}), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
                                 "user_s": round(ru.ru_utime, 3), "sys_s": round(ru.ru_stime, 3),
                                 "cpu_run_s": round(ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime, 3)}
        if watch is not None:
            watch.stop()
            extra["routing"] = dict(watch.stats, daemon="babeld")
        if stations is not None:
            stations.stop()
            extra["station_dump"] = dict(stations.stats)
        if driver is not None:
            extra["queue"] = dict(driver.stats)
        if shaper is not None:
            shaper.flush_drops(time.time())
            extra["link"] = dict(shaper.stats, drops={n: q.dropped for n, q in shaper.links.values()})
        if fw is not None:
            fw.step.flush_drops(time.time(), final=True)
            extra.update(exact_totals(fw.step), packets=dict(fw.stats), cache_segments=fw.agent.cache_segments,
                         snoop=dict(fw.agent.stats))
            if tap is not None:                   # fw.capture(tap) made it fw.tap
                extra["capture"] = tap.writer.stats()
        extra["drops"] = all_drops(extra.get("drops"), prober.drops)
        log.emit(time.time(), "node_stop", address=addr, **extra)
        log.flush()   # a write error of the last lines ends here, not in close
    except Exception as e:
        code = fail_process(log, e)   # node_error, traceback, exit code (names a write failure)
    finally:
        stop.set()
        if prober is not None:
            prober.stop()
        if watch is not None:
            watch.stop()
        if stations is not None:
            stations.stop()
        try:
            if shaper is not None:
                shaper.close()     # accepts what is still held, unbinds the queue
        finally:
            log.close()
        if tap is not None:
            tap.close()
    return code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.backends.netns.node")
    ap.add_argument("--config", required=True)
    args = ap.parse_args(argv)
    try:
        conf = json.loads(Path(args.config).read_text())
    except (OSError, ValueError) as e:
        print(f"netns node: cannot read config {args.config}: {e}", file=sys.stderr)
        return 2
    return run_node(conf)


if __name__ == "__main__":
    sys.exit(main())
