"""The node's event log for the netns backend: JSON Lines appended by several processes.

A node's ``<node>.log`` is written by its NFQUEUE/prober daemon and, on the
endpoints, by its TCP app.  Both open the file with O_APPEND and write whole
lines with one ``write`` each, so lines never interleave; within one process
lines are in time order (docs/LOGS.md, docs/NETNS.md).
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

FLUSH_LINES = 512          # a full batch is written at once: 512 lines of about 130 bytes, some 64 KB
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode   # one encoder: json.dumps builds one per call


class AppendLog:
    """``emit(now, ev, **fields)`` as experiments.build.JsonlLog, with explicit batching.

    ``autoflush``: write every line at once (apps, a few events a second);
    otherwise lines collect until :meth:`flush` (the handler flushes after each
    batch of packets) or until 512 are pending.  Thread-safe: lines are appended
    to one list (an atomic operation) in the order they are emitted; only writing
    takes the lock.

    The two events written for every packet (``tx`` and the snoop agent's ``cache``)
    are kept as tuples and formatted when they are written, with the same text as
    the general path (one ``%`` per line instead of a call chain per packet).
    """

    def __init__(self, path: Path, node: str, autoflush: bool = True) -> None:
        self.path = Path(path)
        self.node = node
        self.autoflush = autoflush
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._pending: list[str | tuple[Any, ...]] = []
        self._lock = threading.Lock()
        self._node_json = json.dumps(node)
        node_fmt = self._node_json.replace("%", "%%")
        # pending tuple -> line, by the tuple's length (tx: 6 values, cache: 3)
        self._formats = {
            6: '{"t":%.6f,"node":' + node_fmt + ',"ev":"tx","flow":"%s","seq":%d,"len":%d,"kind":"%s","hop":%s}\n',
            3: '{"t":%.6f,"node":' + node_fmt + ',"ev":"cache","segments":%d,"bytes":%d}\n',
        }
        self.lines = 0

    def emit(self, now: float, ev: str, **fields: Any) -> None:
        pending = self._pending
        pending.append(self.format(now, ev, fields))
        if self.autoflush or len(pending) >= FLUSH_LINES:
            self.flush()

    def cache(self, now: float, segments: int, nbytes: int) -> None:
        """The snoop agent's ``cache`` event (docs/LOGS.md), on every cache change: formatted at flush
        (``SnoopAgent.use_cache_writer``)."""
        pending = self._pending
        pending.append((now, segments, nbytes))
        if self.autoflush or len(pending) >= FLUSH_LINES:
            self.flush()

    def format(self, now: float, ev: str, fields: dict[str, Any]) -> str:
        """One JSON line: ints and plain strings formatted directly (the hot path), the rest by json."""
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

    def tx(self, now: float, flow: str, seq: int, length: int, kind: str, hop: int | None) -> None:
        """The ``tx`` event (docs/LOGS.md): it is written for every data packet, so it is formatted at flush.

        ``flow`` and ``kind`` are plain ASCII (addresses, ports, kind names), so they need no escaping.
        """
        pending = self._pending
        pending.append((now, flow, seq, length, kind, "null" if hop is None else hop))
        if self.autoflush or len(pending) >= FLUSH_LINES:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending = self._pending
            n = len(pending)
            if self._fd is None or not n:
                return
            batch = pending[:n]
            del pending[:n]          # lines appended meanwhile (by another thread) stay for the next write
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
