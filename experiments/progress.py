"""Progress of a running repetition.

:class:`DeliveryProgress` (local and pi backends): bytes delivered at the receiver, drawn by tqdm on a
terminal.  The local backend reads the receiver's log for ``deliver``/``flow_end`` events (:meth:`poll`);
the pi backend passes the bytes it learned over SSH (:meth:`show`).

:func:`rep_line` and :class:`LiveLine` (sim backend): a line per repetition with its virtual seconds, the
segments each flow delivered and an ETA, redrawn about every second.

On a terminal they draw; on a pipe (a log file, CI) nothing unless asked (``aspan run --progress``): the
runner's own line per repetition (``[k/N] variant rep r: ok``) is the one line a captured output gets.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Callable, TextIO

from tqdm import tqdm


class DeliveryProgress:
    """``label``: what runs (variant and repetition); ``total``: the bytes the flows deliver."""

    def __init__(self, label: str, total: int, log_path: Path | None = None, out: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.path = log_path
        self.out = out or sys.stderr
        self.delivered = 0
        self._pos = 0
        self._tty = self.out.isatty()
        self._bar = tqdm(total=total, desc=label, unit="B", unit_scale=True, file=self.out, leave=True,
                         disable=not progress_wanted(self.out), dynamic_ncols=True)

    def show(self, delivered: int) -> None:
        """The receiver has delivered ``delivered`` bytes so far."""
        if delivered > self.delivered:
            self._bar.update(delivered - self.delivered)
            self.delivered = delivered

    def poll(self) -> None:
        """Read the receiver's log from where the last call stopped (whole lines only)."""
        if self.path is None:
            return
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                chunk = f.read()
        except OSError:
            return
        end = chunk.rfind(b"\n")
        if end < 0:
            return
        self._pos += end + 1
        best = self.delivered
        for line in chunk[: end + 1].splitlines():
            if b'"ev":"deliver"' in line or b'"ev":"flow_end"' in line:
                try:
                    best = max(best, int(json.loads(line).get("bytes", 0)))
                except (ValueError, TypeError, AttributeError):
                    continue     # a line cut by a crashed writer: the next poll reads the rest
        self.show(best)

    def finish(self) -> None:
        self._bar.close()


#: ``aspan run --progress`` sets it, so that the repetitions (in this process or the pool's workers, which
#: inherit the environment) draw their line on a pipe too; a terminal gets it without asking.
PROGRESS_ENV = "ASPAN_PROGRESS"


def progress_wanted(out: TextIO | None = None) -> bool:
    """Draw the live line: asked for (``--progress``), or ``out`` (default stderr) is a terminal."""
    out = out or sys.stderr
    return os.environ.get(PROGRESS_ENV) == "1" or out.isatty()


def rep_line(label: str, clock: str, now: float, until: float, flows: list[tuple[str, int, int]],
             elapsed_s: float, start: float = 0.0) -> str:
    """One repetition's live line: where its clock is (``clock``: virtual or real seconds, of ``until``), the
    segments each flow delivered of its total, and the ETA: the wall time left until the flows finish or the
    clock reaches ``until``, whichever comes first, at the pace so far (``elapsed_s`` of wall time since the
    clock was at ``start``).  ``flows``: (name, delivered segments, segments)."""
    parts = [f"{label}: {now:.1f}/{until:.0f} s {clock}"]
    parts += [f"{name} {got}/{total} seg" for name, got, total in flows]
    got, total = sum(f[1] for f in flows), sum(f[2] for f in flows)
    etas = []
    if elapsed_s > 0 and now > start:
        etas.append(elapsed_s * (until - now) / (now - start))
    if elapsed_s > 0 and 0 < got < total:
        etas.append(elapsed_s * (total - got) / got)
    parts.append(f"ETA {min(etas):.0f} s" if etas else "ETA ?")
    return ", ".join(parts)


class LiveLine:
    """Writes a repetition's line at most every ``every_s`` of wall time: redrawn in place on a terminal, one
    plain line each time on a pipe (only when asked: :func:`progress_wanted`); :meth:`done` clears it."""

    def __init__(self, out: TextIO | None = None, every_s: float = 1.0, wall: Callable[[], float] = time.monotonic,
                 enabled: bool | None = None) -> None:
        self.out = out or sys.stderr
        self.tty = self.out.isatty()
        self.every_s = every_s if self.tty else max(every_s, 5.0)
        self.enabled = progress_wanted(self.out) if enabled is None else enabled
        self.wall = wall
        self.started = wall()
        self._last = -math.inf

    def due(self) -> bool:
        return self.enabled and self.wall() - self._last >= self.every_s

    def show(self, line: str) -> None:
        self._last = self.wall()
        self.out.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
        self.out.flush()

    def done(self) -> None:
        if self.enabled and self.tty and self._last > -math.inf:
            self.out.write("\r\x1b[K")
            self.out.flush()
