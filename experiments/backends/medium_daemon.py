"""What the two medium daemons share: the local backend's medium process
(experiments/backends/medium_process.py) and the netns backend's medium daemon
(experiments/backends/netns/medium.py).

Both carry every frame of a repetition through one :class:`routing.medium.Medium`, are started by
the runner with ``--config FILE``, stop when their parent (the runner) is gone, and end
``medium.log`` with one ``mac`` event per station (docs/MEDIUM.md, docs/LOGS.md).
"""
from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Protocol

from routing.eventlog import EventLog
from routing.medium import Medium


class Stoppable(Protocol):
    stop_event: threading.Event

    def stop(self) -> None: ...


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
