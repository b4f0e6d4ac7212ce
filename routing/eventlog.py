"""A node's event log file: JSON Lines, written by every backend (docs/LOGS.md).

One writer for the sim, local, netns and pi backends.  Several processes may append
to one file (the netns daemon and the TCP app of an endpoint): the file is opened
with O_APPEND and whole lines go out with one ``write`` each, so lines never
interleave.  Within a process lines are in the order they were emitted.

``batch=False`` writes every line at once (apps, a few events a second).  With
``batch=True`` lines collect until :meth:`EventLog.flush` (the drivers flush after
every batch of packets they handle) or until ``FLUSH_LINES`` are pending, so a
crash loses at most the batch in hand.  Appending is thread-safe without a lock
(one ``list.append``); only writing takes the lock.

The two events written for every data packet (``tx``, and the snoop agent's
``cache``) are kept as tuples and formatted when written, with the same text as
the generic path would give (tests/test_eventlog.py checks it).
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from aspan.events import EventWriter

FLUSH_LINES = 512          # a full batch is written at once: 512 lines of about 130 bytes, some 64 KB
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode   # one encoder: json.dumps builds one per call


class EventLog(EventWriter):
    """``<node>.log``: :class:`aspan.events.EventSink` on a file."""

    def __init__(self, path: Path, node: str, batch: bool = False) -> None:
        self.path = Path(path)
        self.node = node
        self.batch = batch
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._pending: list[str | tuple[Any, ...]] = []
        self._lock = threading.Lock()
        self._node_json = _ENCODE(node)
        node_fmt = self._node_json.replace("%", "%%")
        # a pending tuple -> its line, by the tuple's length (tx: 6 values, cache: 3)
        self._formats = {
            6: '{"t":%.6f,"node":' + node_fmt + ',"ev":"tx","flow":"%s","seq":%d,"len":%d,"kind":"%s","hop":%s}\n',
            3: '{"t":%.6f,"node":' + node_fmt + ',"ev":"cache","segments":%d,"bytes":%d}\n',
        }
        self.lines = 0

    # ---- writing events ------------------------------------------------------
    def emit(self, now: float, ev: str, **fields: Any) -> None:
        pending = self._pending
        pending.append(self.format(now, ev, fields))
        if not self.batch or len(pending) >= FLUSH_LINES:
            self.flush()

    def tx(self, now: float, flow: str, seq: int, length: int, kind: str, hop: int | None) -> None:
        """The ``tx`` event, formatted when written.  ``flow`` and ``kind`` are plain ASCII (addresses,
        ports, kind names): they need no escaping."""
        pending = self._pending
        pending.append((now, flow, seq, length, kind, "null" if hop is None else hop))
        if not self.batch or len(pending) >= FLUSH_LINES:
            self.flush()

    def cache(self, now: float, segments: int, nbytes: int, flow: str | None = None) -> None:
        """The snoop agent's ``cache`` event, formatted when written (``flow`` is not written)."""
        pending = self._pending
        pending.append((now, segments, nbytes))
        if not self.batch or len(pending) >= FLUSH_LINES:
            self.flush()

    def format(self, now: float, ev: str, fields: dict[str, Any]) -> str:
        """One JSON line: ints and plain strings formatted directly, the rest by json."""
        parts = [f'{{"t":{now:.6f},"node":{self._node_json},"ev":{_ENCODE(ev)}']
        for k, v in fields.items():
            t = type(v)
            if t is int:
                parts.append(f',"{k}":{v}')
            elif t is str and v.isascii() and v.isprintable() and '"' not in v and "\\" not in v:
                parts.append(f',"{k}":"{v}"')
            else:
                parts.append(f',{_ENCODE(k)}:{_ENCODE(v)}')
        parts.append("}\n")
        return "".join(parts)

    # ---- the file ------------------------------------------------------------
    def flush(self) -> None:
        """Write what is pending (a closed log drops it: nothing is written after :meth:`close`)."""
        with self._lock:
            pending = self._pending
            n = len(pending)
            if not n:
                return
            batch = pending[:n]
            del pending[:n]          # lines appended meanwhile (by another thread) stay for the next write
            if self._fd is None:
                return
            self.lines += n
            formats = self._formats
            data = "".join([x if x.__class__ is str else formats[len(x)] % x for x in batch]).encode()
            view = memoryview(data)
            while view:
                k = os.write(self._fd, view)
                view = view[k:]

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
