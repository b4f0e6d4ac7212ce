"""``aspan node --config FILE``: one node process of the local (and Pi) backends.

The config file is written by the runner: the resolved variant configuration,
this node's name, seed, start time, UDP endpoints and where to log.  The node
ends by itself: on SIGTERM/SIGINT, at its deadline, or when its parent dies
(unless ``watch_parent`` is false: the pi backend's nodes outlive their SSH session).
"""
from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

from experiments.config import ExperimentConfig
from experiments.build import build_node, overlay_tap
from tcp_user.bulk import log_delivered
from experiments.link_spec import egress_links
from experiments.records import write_whole
from routing.overlay.auth import MeshAuth
from routing.drivers.eventlog import EventLog, fail_process
from routing.forwarding.flowlog import exact_totals
from routing.drivers.station import recorder_from_config
from routing.drivers.udp import UdpNode


def _watch_parent(node: UdpNode, parent: int) -> None:
    """Stop the node if the runner that started it disappears (no orphans)."""
    while not node.stop_event.wait(1.0):
        if os.getppid() != parent:
            node.stop()
            return


def read_key(path: str) -> bytes:
    """The experiment key from the file the runner wrote for this node; the file is deleted once read,
    so the key is in no run directory and no log (issue 13, item 3)."""
    p = Path(path)
    try:
        return bytes.fromhex(p.read_text().strip())
    finally:
        p.unlink(missing_ok=True)


def node_auth(conf: dict[str, Any], key: bytes | None, core: Any) -> MeshAuth | None:
    """The node's authenticated overlay when the runner handed it a key; sequence numbers start at
    the clock in microseconds, above anything an earlier life of this node sent."""
    if key is None:
        return None
    return MeshAuth(key, core.address, core.neighbours, first_seq=time.time_ns() // 1000)


def run_node(conf: dict[str, Any]) -> int:
    name = conf["node"]
    log = EventLog(Path(conf["log"]), name, batch=True)
    cfg = ExperimentConfig.from_dict(conf["experiment"], "", "experiment of " + str(conf.get("log")))
    addr = cfg.topology.addresses[name]
    exit_code = 0
    tap = None
    try:
        key = read_key(conf["auth_key_file"]) if conf.get("auth_key_file") else None
        log.emit(time.time(), "node_start", address=addr, bind=conf["bind"], pid=os.getpid(),
                 auth=key is not None)
        log.flush()
        core = build_node(cfg, name, conf["seed"], log, conf["t0"], internal_probes=False)
        tap = overlay_tap(cfg, Path(conf["log"]).with_suffix(".pcapng"), addr)
        if tap is not None:
            core.engine.capture(tap)
        apps = core.endpoints()
        done_file = Path(conf["done_file"])

        def all_done() -> bool:
            return bool(apps) and all(getattr(a, "done", True) for a in apps)

        def say_done() -> None:
            status = {"node": name, "ok": [getattr(a, "ok", None) for a in apps], "t": time.time()}
            write_whole(done_file, json.dumps(status))   # whole or not at all; WriteError names it

        # link.*: each datagram held until it has crossed its emulated link (routing/overlay/udp_link.py); ms 0 of a
        # Mahimahi trace is the flows' start, as on sim and netns
        links = egress_links(cfg, list(core.neighbours), conf["t0"] + cfg.etx.flow_start_s)
        node = UdpNode(core, tuple(conf["bind"]), {k: tuple(v) for k, v in conf["peers"].items()},
                       log, deadline=conf.get("deadline"), on_done=say_done, done=all_done,
                       auth=node_auth(conf, key, core), links=links)
        node.install_signal_handlers()
        stations = recorder_from_config(conf.get("station_dump"), log.emit)
        if conf.get("watch_parent", True):  # the pi backend starts nodes detached (watch_parent: false)
            threading.Thread(target=_watch_parent, args=(node, os.getppid()), daemon=True).start()
        try:
            node.run()
        finally:
            if stations is not None:
                stations.stop()
        log_delivered(core.endpoints(), time.time())
        core.engine.step.flush_drops(time.time(), final=True)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        flow = node.flow_cpu()
        log.emit(time.time(), "node_stop", address=addr, **exact_totals(core.engine.step),
                 cache_segments=core.engine.agent.cache_segments, snoop=dict(core.engine.agent.stats),
                 rx_datagrams=node.rx_datagrams,
                 tx_datagrams=node.tx_datagrams, cpu_s=round(ru.ru_utime + ru.ru_stime, 3),
                 socket_drops=node.kernel_drops, cpu_flow_s=None if flow is None else round(flow[0], 3),
                 rx_flow_datagrams=None if flow is None else flow[1],
                 sleeps_flow=None if flow is None else flow[2],
                 **({"capture": tap.writer.stats()} if tap is not None else {}), **core.routing_stats(),
                 **({"station_dump": dict(stations.stats)} if stations is not None else {}),
                 **({"link": dict(links.stats)} if links is not None else {}))
        log.flush()   # a write error of the last lines ends here, not in close
    except Exception as e:
        exit_code = fail_process(log, e)   # node_error, traceback, exit code (names a write failure)
    finally:
        log.close()
        if tap is not None:
            tap.close()
    return exit_code


def main(config_path: str) -> int:
    try:
        conf = json.loads(Path(config_path).read_text())
    except (OSError, ValueError) as e:
        print(f"aspan node: cannot read config {config_path}: {e}", file=sys.stderr)
        return 2
    return run_node(conf)
