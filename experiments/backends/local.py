"""Local backend: one ``aspan node`` process per node on loopback UDP (no root needed).

Node i listens on 127.0.1.(i+1) (standing in for the Pis' 10.2.1.x; past 254 nodes 127.1.b.x:
experiments.backends.loopback); the mesh addresses in the packets stay those of the YAML.  A node's
UDP peers are its graph neighbours (it sends to nobody else).  Every process started here is
stopped here: at the end, on Ctrl-C and when a node fails.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from experiments.backends import medium_process
from experiments.backends.loopback import directed_links, node_address
from experiments.build import mac_on, new_key, start_rep, write_key, write_meta
from experiments.progress import DeliveryProgress
from experiments.records import is_disk_error, write_whole
from experiments.schema import Variant
from experiments.stopping import stop_reason
from routing.drivers.eventlog import write_failure

START_MARGIN_S = 1.5   # time for the processes to start before probing begins
MEDIUM_START_S = 60.0  # how long the medium process may take to bind its sockets (a loaded machine: seconds)
STOP_GRACE_S = 5.0


class NodeFailed(RuntimeError):
    """A node process ended before the flows did; ``disk_error``: it could not write its log (the run stops)."""

    def __init__(self, message: str, disk_error: OSError | None = None) -> None:
        super().__init__(message)
        self.disk_error = disk_error


def loopback_address(index: int) -> str:
    """Node ``index``'s address (experiments.backends.loopback.node_address)."""
    return node_address(index)


def free_port(host: str = "127.0.1.1") -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind((host, 0))
        return s.getsockname()[1]
    finally:
        s.close()


def _stop_all(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.time() + STOP_GRACE_S
    for p in procs.values():
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _last_node_error(log: Path) -> str | None:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if '"node_error"' in line:
            try:
                return str(json.loads(line)["error"])
            except (ValueError, KeyError):
                return line
    return None


def node_failure_reason(rep_dir: Path, node: str, exit_code: int | None = None) -> str:
    """Why a node died: its last ``node_error`` event, else what its exit code says of a write failure
    (routing.drivers.eventlog.fail_process), else the last line of its stderr."""
    err = _last_node_error(rep_dir / f"{node}.log")
    if err is not None:
        return err
    failed = write_failure(exit_code, rep_dir / f"{node}.log")
    if failed is not None:
        return str(failed)
    try:
        lines = (rep_dir / f"{node}.stderr").read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log and no error output"
    return lines[-1] if lines else "no error output (killed by a signal?)"


def run_rep(variant: Variant, repetition: int, rep_dir: Path) -> dict[str, Any]:
    cfg, seed, meta = start_rep(variant, repetition, rep_dir, "local")
    names = cfg.topology.nodes
    addrs = cfg.topology.addresses
    port = free_port()
    udp = {n: (loopback_address(i), port) for i, n in enumerate(names)}
    settle = cfg.etx.flow_start_s
    max_dur = cfg.limits.max_duration_s
    t0 = time.time() + START_MARGIN_S
    deadline = t0 + MEDIUM_START_S + settle + max_dur + 30.0    # the medium's: it may take MEDIUM_START_S to start
    endpoints = {f.sender for f in cfg.flows} | {f.receiver for f in cfg.flows}
    meta["udp"] = {n: list(a) for n, a in udp.items()}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    disk_error: OSError | None = None
    key = new_key() if mac_on(cfg, "local") else None
    meta["auth"] = key is not None
    progress = DeliveryProgress(f"{variant.name} rep {repetition}",
                        sum(f.segments * f.segment_size for f in cfg.flows),
                        rep_dir / f"{cfg.flows[0]['receiver']}.log")
    try:
        via_medium = None   # medium.model dcf: every datagram crosses the medium process (medium_process.py)
        if cfg.medium.model != "none":
            procs["medium"], via_medium = medium_process.start(cfg, seed, rep_dir, udp, free_port("127.0.2.1"),
                                                               deadline, time.time() + MEDIUM_START_S)
            # the nodes' clock starts once the medium is up: a slow start on a loaded machine costs no settling
            t0 = time.time() + START_MARGIN_S
            medium_process.write_t0(rep_dir, t0)   # its radio losses follow the nodes' clock (experiments/radio_loss.py)
        deadline = t0 + settle + max_dur + 30.0
        neighbours: dict[str, list[str]] = {n: [] for n in names}
        for a, b in directed_links(cfg):
            neighbours[a].append(b)
        for n in names:
            conf = {"experiment": cfg.to_dict(), "node": n, "seed": seed, "t0": t0, "deadline": deadline,
                    "log": str(rep_dir / f"{n}.log"), "done_file": str(rep_dir / f"{n}.done"),
                    "bind": list(udp[n]),
                    "peers": via_medium[n] if via_medium else {addrs[m]: list(udp[m]) for m in neighbours[n]}}
            if key is not None:
                conf["auth_key_file"] = str(write_key(rep_dir / f"{n}.key", key))
            cpath = rep_dir / f"{n}.node.json"
            write_whole(cpath, json.dumps(conf))
            with open(rep_dir / f"{n}.stderr", "wb") as err:
                procs[n] = subprocess.Popen([sys.executable, "-m", "experiments", "node", "--config", str(cpath)],
                                            stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        end_by = t0 + settle + max_dur
        while True:
            for n, p in procs.items():
                if p.poll() is not None:
                    raise NodeFailed(f"node {n} exited with code {p.returncode} before the flows finished: "
                                     f"{node_failure_reason(rep_dir, n, p.returncode)}",
                                     write_failure(p.returncode, rep_dir / f"{n}.log"))
            progress.poll()
            if all((rep_dir / f"{n}.done").exists() for n in endpoints):
                break
            if time.time() > end_by:
                meta["status"] = "incomplete"
                meta["error"] = f"flows not finished after {max_dur} s"
                break
            time.sleep(0.2)
        progress.poll()
        if meta["status"] == "running":
            meta["status"] = "ok"
    except NodeFailed as e:
        meta["status"] = "failed"
        meta["error"] = str(e)
        disk_error = e.disk_error
    except medium_process.MediumFailed as e:       # the medium process died or never started: nothing ran
        meta["status"] = "failed"
        meta["error"] = str(e)
    except OSError as e:
        if not is_disk_error(e):
            raise
        meta["status"] = "failed"                  # a record of the runner's could not be written
        meta["error"] = str(e)
        disk_error = e
    except KeyboardInterrupt as e:   # SIGINT, or SIGTERM (experiments.stopping.Terminated)
        meta["status"] = "interrupted"
        meta["error"] = stop_reason(e)
        raise
    finally:
        progress.finish()
        _stop_all(procs)
        for n in names:     # a node that never started leaves its key file: it goes too
            (rep_dir / f"{n}.key").unlink(missing_ok=True)
        meta["exit_codes"] = {n: p.returncode for n, p in procs.items()}
        write_meta(rep_dir, meta)
    if disk_error is not None:
        raise disk_error          # the disk is full or failing: the runner stops the run (experiments.runner)
    return meta


def make_run_rep(options: dict[str, Any]) -> Callable[[Variant, int, Path], dict[str, Any]]:
    """The runner's entry point (experiments.backend_registry.BACKENDS); this backend takes no options."""
    return run_rep
