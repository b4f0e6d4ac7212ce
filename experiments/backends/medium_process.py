"""The local backend's medium process: every overlay datagram crosses the DCF medium (as wmediumd does
for Mininet-WiFi).

The runner (experiments.backends.local) gives each node, for each neighbour, the address of a socket
of this process instead of the neighbour's own: a datagram arriving on the socket of the directed
pair (src, dst) is a frame from src to dst.  The frame goes into routing.medium.dcf's core with the wall
clock as its time (ns since the process started); the process sleeps until the core's next event,
then sends each delivered frame on to the receiver's real UDP address, or logs its drop.  The core's
schedule is exact; the process only adds its own lateness to each delivery (measured: ``late_us``
in the ``frame`` events, and ``bench medium_capacity``).

``medium.log`` is a node log (docs/LOGS.md) of the node ``medium``: one ``frame`` event per frame
that left the medium (``src``, ``dst``, ``bytes``, ``attempts``, ``collisions``, ``airtime_us``, ``rate``,
``late_us``), ``drop`` events (``queue``, ``mac_retry``), and a ``mac`` event per station at the end.

Run by the runner: ``python -m experiments.backends.medium_process --config FILE``.
"""
from __future__ import annotations

import json
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time
from experiments.config import ExperimentConfig
from pathlib import Path
from typing import Any

from experiments.backends.loopback import MEDIUM_FD_MARGIN, directed_links, local_problem, pair_address
from experiments.backends.medium_daemon import config_main, log_delivered, log_dropped, run_daemon
from experiments.records import write_whole
from routing.drivers.eventlog import EventLog, write_failure
from routing.medium.dcf import Delivered, Frame, Medium, Output
from routing.overlay.wire import IP_UDP_OVERHEAD, MAX_DATAGRAM, PROBE

PTYPE_OFFSET = 2        # routing.overlay.wire: magic, version, ptype, ...
T0_FILE = "medium.t0.json"   # the nodes' t0, written by the runner once the process is ready (write_t0)
MAX_SLEEP_S = 0.2


class MediumProcess:
    """Sockets around one :class:`Medium`; ``pairs`` maps (src, dst) node names to the address to bind."""

    def __init__(self, medium: Medium, pairs: dict[tuple[str, str], tuple[str, int]],
                 nodes: dict[str, tuple[str, int]], log: EventLog) -> None:
        self.medium = medium
        self.nodes = nodes
        self.log = log
        self.stop_event = threading.Event()
        self.by_fd: dict[int, tuple[socket.socket, str, str]] = {}
        self.by_pair: dict[tuple[str, str], socket.socket] = {}
        for (src, dst), addr in pairs.items():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            s.bind(addr)
            s.setblocking(False)
            self.by_fd[s.fileno()] = (s, src, dst)
            self.by_pair[(src, dst)] = s
        self._base = time.monotonic_ns()
        self.frames_in = 0
        self.frames_out = 0
        self.send_errors = 0

    def now_ns(self) -> int:
        return time.monotonic_ns() - self._base

    def stop(self) -> None:
        self.stop_event.set()

    def run(self, deadline: float | None) -> None:
        # epoll (selectors): select() takes no descriptor above 1023, and a large mesh has more pairs
        sel = selectors.DefaultSelector()
        for s, src, dst in self.by_fd.values():
            sel.register(s, selectors.EVENT_READ, (s, src, dst))
        try:
            self._loop(sel, deadline)
        finally:
            sel.close()

    def _loop(self, sel: selectors.BaseSelector, deadline: float | None) -> None:
        medium = self.medium
        while not self.stop_event.is_set():
            if deadline is not None and time.time() > deadline:
                return
            nxt = medium.next_timer()
            wait = MAX_SLEEP_S if nxt is None else min(MAX_SLEEP_S, max(0.0, (nxt - self.now_ns()) / 1e9))
            ready = sel.select(wait)
            self._handle(medium.advance(self.now_ns()))
            for key, _ in ready:
                s, src, dst = key.data
                while True:
                    try:
                        data = s.recv(MAX_DATAGRAM)
                    except BlockingIOError:
                        break
                    self.frames_in += 1
                    now = self.now_ns()
                    self._handle(medium.advance(now))
                    acked = len(data) <= PTYPE_OFFSET or data[PTYPE_OFFSET] != PROBE  # probes: group-addressed
                    self._handle(medium.send(now, Frame(src, dst, data, len(data) + IP_UDP_OVERHEAD, acked)))

    def _handle(self, outs: list[Output]) -> None:
        if not outs:
            return
        t = time.time()
        now = self.now_ns()
        for o in outs:
            if isinstance(o, Delivered):
                f = o.frame
                try:
                    # sent from the socket the receiver knows as its peer ``src`` (pair dst -> src), so a
                    # node that names the previous hop by the datagram's source (captures) names src
                    self.by_pair[(f.dst, f.src)].sendto(f.payload, self.nodes[f.dst])
                    self.frames_out += 1
                except OSError as e:
                    self.send_errors += 1
                    self.log.emit(t, "drop", reason="queue", src=f.src, dst=f.dst, detail=f"send: {e}")
                    continue
                log_delivered(self.log, t, now, self.medium, o)
            else:
                log_dropped(self.log, t, o)

    def counters(self) -> dict[str, Any]:
        """What ``node_stop`` says of the frames."""
        return {"frames_in": self.frames_in, "frames_out": self.frames_out, "send_errors": self.send_errors}

    def close(self) -> None:
        for s, _, _ in self.by_fd.values():
            s.close()


class MediumFailed(RuntimeError):
    """The medium process of a local repetition did not start (the repetition fails with this message)."""


def start(cfg: ExperimentConfig, seed: int, rep_dir: Path, udp: dict[str, tuple[str, int]], port: int,
          deadline: float, start_by: float) -> tuple["subprocess.Popen[bytes]", dict[str, dict[str, list[Any]]]]:
    """Start the medium process of a local repetition; wait until its sockets are bound (by ``start_by``).
    Returns the process and, per node, the peers to give it: every graph neighbour, reached through the medium
    (one socket per directed graph link: a node sends to nobody else).  What cannot fit is refused before the
    run (experiments.backends.loopback.refuse_local); here it would be an error."""
    names = cfg.topology.nodes
    addrs = cfg.topology.addresses
    problem = local_problem(cfg)
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    plan: list[dict[str, Any]] = [{"src": a, "dst": b, "ip": pair_address(i), "port": port}
                                  for i, (a, b) in enumerate(directed_links(cfg))]
    ready = rep_dir / "medium.ready"
    conf = {"experiment": cfg.to_dict(), "seed": seed, "log": str(rep_dir / "medium.log"), "ready_file": str(ready),
            "t0_file": str(rep_dir / T0_FILE),
            "deadline": deadline, "pairs": plan, "nodes": {n: list(a) for n, a in udp.items()}}
    cpath = rep_dir / "medium.node.json"
    write_whole(cpath, json.dumps(conf))
    with open(rep_dir / "medium.stderr", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "experiments.backends.medium_process", "--config", str(cpath)],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    started = time.time()
    while not ready.exists():
        if proc.poll() is not None or time.time() > start_by:
            exited = proc.poll() is not None
            if not exited:
                proc.terminate()
                proc.wait()
            failed = write_failure(proc.returncode, rep_dir / "medium.log")
            if failed is not None:
                raise failed         # the disk is full or failing (experiments.records)
            why = (rep_dir / "medium.stderr").read_text(errors="replace")[-500:].strip() or "no error output"
            raise MediumFailed(f"the medium process exited with code {proc.returncode} before it was ready: {why}"
                               if exited else f"the medium process was not ready after {max(0.0, start_by - started):.0f} s "
                               f"(the machine too loaded?): {why}")
        time.sleep(0.02)
    peers: dict[str, dict[str, list[Any]]] = {n: {} for n in names}
    for p in plan:
        peers[p["src"]][addrs[p["dst"]]] = [p["ip"], p["port"]]
    return proc, peers



def _raise_open_files(need: int) -> None:
    """One socket per directed pair: the soft limit of open files up to ``need``, as far as the hard one allows
    (refuse_local refused a mesh above the hard one before the run)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY else min(need, hard), hard))


def flow_start(t0_file: Path, cfg: ExperimentConfig) -> float:
    """When the nodes' flows start (their t0 + settling), from the file the runner writes once t0 is fixed."""
    return float(json.loads(t0_file.read_text())["t0"]) + cfg.etx.flow_start_s


def write_t0(rep_dir: Path, t0: float) -> None:
    """The nodes' t0 for the medium process (:func:`flow_start`), written whole before any node starts."""
    write_whole(rep_dir / T0_FILE, json.dumps({"t0": t0}))


def run_medium(conf: dict[str, Any]) -> int:
    def make(medium: Medium, log: EventLog) -> tuple[MediumProcess, dict[str, Any]]:
        pairs = {(p["src"], p["dst"]): (p["ip"], p["port"]) for p in conf["pairs"]}
        _raise_open_files(len(pairs) + MEDIUM_FD_MARGIN)
        proc = MediumProcess(medium, pairs, {n: tuple(a) for n, a in conf["nodes"].items()}, log)
        return proc, {"pairs": len(pairs)}
    # the nodes' t0 is fixed once this process is ready, and the runner writes it (t0_file) before any node
    # starts, so it is there by the first frame
    return run_daemon(conf, make, lambda cfg: flow_start(Path(conf["t0_file"]), cfg))


def main(argv: list[str]) -> int:
    return config_main(argv, "experiments.backends.medium_process", "medium process", run_medium)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
