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
the generic path would give (tests/routing/drivers/test_eventlog.py checks it).

A write that fails (``ENOSPC``: disk full, ``EIO``, ...) raises :class:`WriteError` naming the file and
the reason, once: the process is to stop (issue 27, item 1).  What is emitted after it is discarded and
counted (``lines_lost``).  :func:`fail_process` is how every node and daemon ends on an error: its
``node_error`` line if the disk still takes it, the traceback on stderr, and an exit code that tells the
runner the reason even when nothing could be written (:func:`write_failure`).
"""
from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from aspan.events import EventWriter

FLUSH_LINES = 512          # a full batch is written at once: 512 lines of about 130 bytes, some 64 KB
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode   # one encoder: json.dumps builds one per call
#: A process that could not write its own log exits with WRITE_FAILED_EXIT + errno (128: ENOSPC, 105: EIO),
#: so the runner can name the file and the reason though nothing reached the disk (docs/LOGS.md).
WRITE_FAILED_EXIT = 100


class WriteError(OSError):
    """A file could not be written (a node log; the runner's records: experiments.records): ``str()`` names
    the file and the reason."""

    def __init__(self, path: Path, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"

    def __reduce__(self) -> tuple[Any, ...]:   # raised in a worker process, re-raised in the runner
        return (_write_error, (self.filename, self.errno, self.strerror))


def _write_error(path: str, err: int, reason: str) -> WriteError:
    return WriteError(Path(path), OSError(err, reason))


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
        self.failed: WriteError | None = None   # the first write error; later lines are discarded
        self.lines_lost = 0

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
            if self.failed is not None:        # reported once already: the process is ending
                self.lines_lost += n
                return
            formats = self._formats
            data = "".join([x if x.__class__ is str else formats[len(x)] % x for x in batch]).encode()
            try:
                self._write(data)
            except OSError as e:
                self.lines_lost += n
                self.failed = WriteError(self.path, e)
                raise self.failed from e
            self.lines += n

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        while view:
            k = os.write(self._fd, view)
            view = view[k:]

    def last_words(self, now: float, error: str) -> bool:
        """Write a ``node_error`` line now, even after a write error (space may be free again); False if the
        disk did not take it."""
        line = self.format(now, "node_error", {"error": error}).encode()
        with self._lock:
            if self._fd is None:
                return False
            try:
                self._write(line)
            except OSError:
                return False
            self.lines += 1
            return True

    def close(self) -> None:
        """Write what is pending and close; a write error is raised (once, see :meth:`flush`) after the
        file is closed."""
        try:
            self.flush()
        finally:
            with self._lock:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None


def fail_process(log: EventLog, error: BaseException) -> int:
    """How a node or daemon ends on ``error``: a ``node_error`` line (if the disk takes it), the traceback on
    stderr (if that can be written), and the exit code: WRITE_FAILED_EXIT + errno when its own log could not
    be written, else 1."""
    if log.failed is None:
        try:
            log.flush()       # the lines of before the error
        except WriteError:
            assert log.failed is not None   # recorded: the exit code below reports it
    log.last_words(time.time(), f"{type(error).__name__}: {error}")
    try:
        traceback.print_exception(error, file=sys.stderr)
        sys.stderr.flush()
    except OSError:   # stderr is a file on the same full disk: counted; the exit code carries the reason
        log.lines_lost += 1
    failed = log.failed
    if failed is not None and failed.errno is not None and 0 < failed.errno < 256 - WRITE_FAILED_EXIT:
        return WRITE_FAILED_EXIT + failed.errno
    return 1


def write_failure(exit_code: int | None, log: Path) -> WriteError | None:
    """The write failure a node's exit code reports (:func:`fail_process`): ``cannot write <log>: <reason>``;
    None when the code means something else."""
    if exit_code is None or not WRITE_FAILED_EXIT < exit_code < 256:
        return None
    err = exit_code - WRITE_FAILED_EXIT
    return WriteError(log, OSError(err, os.strerror(err))) if err in errno.errorcode else None


def close_logs(logs: Any) -> None:
    """Close every log of ``logs``; the first write error is raised once all are closed."""
    first: WriteError | None = None
    for lg in logs:
        try:
            lg.close()
        except WriteError as e:
            first = first or e
    if first is not None:
        raise first
