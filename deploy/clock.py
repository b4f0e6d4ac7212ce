"""Clock offset of a host against the orchestrator, by SSH round trips (midpoint method).

One SSH channel runs a small loop on the host that answers every line it reads with
the host's ``time.time()``.  Each sample reads the orchestrator's clock, sends a line,
waits for the answer and reads the clock again; assuming the host read its clock
halfway through the round trip, ``offset = host_time - (t_sent + t_received) / 2``.
The sample with the shortest round trip is kept; its error is at most half of it.

The loop runs in one process started before the first sample, so neither the
login shell's start-up (which may take a good part of a second) nor a fork per
sample sits inside a round trip: timing a fresh ``date +%s.%N`` per SSH command
would bias the offset by half the shell's start-up time.

The sign is the run directory's: ``offset = node clock - reference clock`` (docs/LOGS.md).
"""
from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from typing import Callable

from deploy.hosts import HostError, Remote

_LOOP = ('import sys, time; print("ready", flush=True); '
         '[print(repr(time.time()), flush=True) for _ in iter(sys.stdin.readline, "")]')
SAMPLES = 8
TIMEOUT_S = 15.0


def clock_command(python: str) -> str:
    return f"{shlex.quote(python)} -u -c {shlex.quote(_LOOP)}"


@dataclass(frozen=True)
class ClockSample:
    offset: float   # host clock - orchestrator clock, seconds
    rtt: float      # round trip of the sample kept, seconds

    @property
    def error_bound(self) -> float:
        return self.rtt / 2


def best_sample(samples: list[tuple[float, float, float]]) -> ClockSample:
    """From (t_sent, host_time, t_received) triples: the offset of the shortest round trip."""
    if not samples:
        raise ValueError("no clock samples")
    t1, remote, t2 = min(samples, key=lambda s: s[2] - s[0])
    return ClockSample(remote - (t1 + t2) / 2, t2 - t1)


def measure(remote: Remote, samples: int = SAMPLES, clock: Callable[[], float] = time.time) -> ClockSample:
    """Measure ``remote``'s clock offset with ``samples`` round trips (0 under ``--dry-run``)."""
    cmd = clock_command(remote.host.python)
    remote.say(f"run: {cmd}   (then {samples} round trips on its stdin/stdout)")
    if remote.dry_run:
        return ClockSample(0.0, 0.0)
    remote.open()
    transport = remote.conn.client.get_transport()
    if transport is None:
        raise HostError("clock: no SSH transport")
    chan = transport.open_session(timeout=TIMEOUT_S)
    try:
        chan.settimeout(TIMEOUT_S)
        chan.exec_command(cmd)
        out = chan.makefile("rb")
        first = out.readline().strip()
        if first != b"ready":
            err = chan.makefile_stderr("rb").read().decode(errors="replace").strip()
            raise HostError(f"clock: {cmd!r} did not start: {first.decode(errors='replace') or err or 'no output'}")
        triples = []
        for _ in range(samples):
            t1 = clock()
            chan.sendall(b"\n")
            line = out.readline()
            t2 = clock()
            try:
                triples.append((t1, float(line), t2))
            except ValueError:
                raise HostError(f"clock: expected seconds since the epoch, got {line!r}") from None
        chan.shutdown_write()
    finally:
        chan.close()
    return best_sample(triples)
