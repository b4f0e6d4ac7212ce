"""What the two medium daemons share: the local backend's medium process
(experiments/backends/medium_process.py) and the netns backend's medium daemon
(experiments/backends/netns/medium.py).

Both carry every frame of a repetition through one :class:`routing.medium.dcf.Medium`, are started by
the runner with ``--config FILE``, stop when their parent (the runner) is gone, log each frame that
leaves the medium the same way, and end ``medium.log`` with one ``mac`` event per station
(docs/MEDIUM.md, docs/LOGS.md).  Their common life is :func:`run_daemon`; each daemon brings only
what carries its frames (sockets on loopback, NFQUEUE verdicts in the namespaces).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Protocol

from experiments.config import ExperimentConfig
from experiments.records import write_whole
from experiments.medium_spec import build_medium, replay_signals
from experiments.radio_loss import attach as attach_radio_loss
from routing.drivers.eventlog import EventLog, fail_process
from routing.medium.dcf import Delivered, Dropped, Medium


class Stoppable(Protocol):
    stop_event: threading.Event

    def stop(self) -> None: ...


class Daemon(Stoppable, Protocol):
    def run(self, deadline: float | None) -> None: ...
    def now_ns(self) -> int: ...
    def close(self) -> None: ...
    def counters(self) -> dict[str, Any]: ...


def watch_parent(proc: Stoppable) -> None:
    """Stop ``proc`` once the process that started this one is gone (a runner killed with SIGKILL
    leaves no daemon behind): checked every second from a daemon thread."""
    parent = os.getppid()

    def watch() -> None:
        while not proc.stop_event.wait(1.0):
            if os.getppid() != parent:
                proc.stop()
                return

    threading.Thread(target=watch, daemon=True).start()


def log_mac_stats(log: EventLog, medium: Medium, now: float, elapsed_s: float) -> None:
    """One ``mac`` event per station: its link layer's counters over the ``elapsed_s`` of the run."""
    for name, st in medium.stations.items():
        log.emit(now, "mac", station=name, elapsed_s=elapsed_s, **asdict(st.stats))


def epoch_seconds(proc: Daemon) -> Callable[[int], float]:
    """The daemon's medium time (ns since it started: ``proc.now_ns()``) as wall-clock seconds, the nodes'
    clock (their loss specs' times are on it: experiments/radio_loss.py)."""
    base = time.time() - proc.now_ns() / 1e9
    return lambda ns: base + ns / 1e9


def serve(proc: Daemon, medium: Medium, log: EventLog, conf: dict[str, Any], started: dict[str, Any],
          stopped: Callable[[], dict[str, Any]]) -> None:
    """A medium daemon's life once ``proc`` is built: SIGTERM/SIGINT and the parent's end stop it,
    ``node_start`` (with ``started``), the ready file the runner waits for (written whole), the run until
    stopped or ``conf["deadline"]``, then, however the run ended, the ``mac`` counters and ``node_stop``
    (with ``stopped()``)."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: proc.stop())
    watch_parent(proc)
    log.emit(time.time(), "node_start", address="medium", pid=os.getpid(), **started)
    log.flush()
    write_whole(Path(conf["ready_file"]), str(os.getpid()))   # WriteError names it (a full disk)
    try:
        proc.run(conf.get("deadline"))
    finally:
        t = time.time()
        log_mac_stats(log, medium, t, round(proc.now_ns() / 1e9, 6))
        log.emit(t, "node_stop", address="medium", **stopped())


def log_delivered(log: EventLog, t: float, now_ns: int, medium: Medium, o: Delivered) -> None:
    """The ``frame`` event of a frame the medium delivered (``late_us``: how late the daemon handed it on)."""
    f = o.frame
    log.emit(t, "frame", src=f.src, dst=f.dst, bytes=f.nbytes, attempts=f.attempts, collisions=f.collisions,
             airtime_us=round(f.airtime_ns / 1000, 1), rate=medium.phy.rate_name(f.rate),
             late_us=round((now_ns - o.at_ns) / 1000, 1))


def log_dropped(log: EventLog, t: float, o: Dropped) -> None:
    """The ``drop`` event of a frame the medium dropped (``queue``, ``mac_retry``)."""
    f = o.frame
    log.emit(t, "drop", reason=o.reason, src=f.src, dst=f.dst, attempts=f.attempts, len=f.nbytes)


def run_daemon(conf: dict[str, Any], make: Callable[[Medium, EventLog], tuple[Daemon, dict[str, Any]]],
               flow_start: Callable[[Any], float]) -> int:
    """A medium daemon from its config to its exit code: the medium of ``conf["experiment"]``, the daemon
    ``make`` builds around it (with what its ``node_start`` says), loss standing for radio errors and
    recorded signals on the nodes' clock (``flow_start(cfg)``: when the flows start, read when first
    needed), :func:`serve`, then ``close`` however it ended.  Any error ends in ``node_error`` and an
    exit code naming it (a write failure too)."""
    log = EventLog(Path(conf["log"]), "medium", batch=True)
    code = 0
    try:
        cfg = ExperimentConfig.from_dict(conf["experiment"], "", "experiment of " + str(conf.get("log")))
        medium = build_medium(cfg, conf["seed"], replay=False)     # replay_signals below: the nodes' clock
        proc, started = make(medium, log)
        try:
            # loss that stands for radio errors, drawn per attempt here, on the nodes' clock
            attach_radio_loss(medium, cfg, conf["seed"], lambda: flow_start(cfg), epoch_seconds(proc))
            # recorded signals too (medium.signal_trace): the trace's second 0 is the flows' start
            replay_signals(medium, cfg, lambda: flow_start(cfg), epoch_seconds(proc))
            serve(proc, medium, log, conf, started, proc.counters)
        finally:
            proc.close()
        log.flush()   # a write error of the last lines ends here, not in close
    except Exception as e:
        code = fail_process(log, e)   # node_error, traceback, exit code (names a write failure)
    finally:
        log.close()
    return code


def config_main(argv: list[str], module: str, what: str, run: Callable[[dict[str, Any]], int]) -> int:
    """``python -m <module> --config FILE``: ``run`` with the JSON config the runner wrote (exit 2 and a
    message naming the file when it cannot be read)."""
    if len(argv) != 2 or argv[0] != "--config":
        print(f"usage: python -m {module} --config FILE", file=sys.stderr)
        return 2
    try:
        conf = json.loads(Path(argv[1]).read_text())
    except (OSError, ValueError) as e:
        print(f"{what}: cannot read config {argv[1]}: {e}", file=sys.stderr)
        return 2
    return run(conf)
