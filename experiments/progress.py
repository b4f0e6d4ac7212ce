"""Progress of a running repetition: bytes delivered at the receiver, drawn by tqdm.

On a terminal, one live bar per repetition; otherwise (a log file, CI) nothing: the runner's
own line per repetition (``[k/N] variant rep r: ok``) is the one line a captured output gets.  The local
backend reads the receiver's log for ``deliver``/``flow_end`` events (:meth:`poll`); the pi
backend passes the bytes it learned over SSH (:meth:`show`).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

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
                         disable=not self._tty, dynamic_ncols=True)

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
