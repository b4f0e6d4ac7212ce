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

FLUSH_BYTES = 1 << 16
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode   # one encoder: json.dumps builds one per call


class AppendLog:
    """``emit(now, ev, **fields)`` as experiments.build.JsonlLog, with explicit batching.

    ``autoflush``: write every line at once (apps, a few events a second);
    otherwise lines collect until :meth:`flush` (the handler flushes after each
    batch of packets) or until 64 KB are pending.  Thread-safe.
    """

    def __init__(self, path: Path, node: str, autoflush: bool = True) -> None:
        self.path = Path(path)
        self.node = node
        self.autoflush = autoflush
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._pending: list[str] = []
        self._size = 0
        self._lock = threading.Lock()
        self._node_json = json.dumps(node)
        self.lines = 0

    def emit(self, now: float, ev: str, **fields: Any) -> None:
        if ev == "cache" and len(fields) == 2:   # the snoop agent's event on every cache change
            line = (f'{{"t":{now:.6f},"node":{self._node_json},"ev":"cache","segments":{fields["segments"]:d},'
                    f'"bytes":{fields["bytes"]:d}}}\n')
        else:
            line = self.format(now, ev, fields)
        self._append(line)

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
        """The ``tx`` event (docs/LOGS.md), formatted directly: it is written for every data packet.

        ``flow`` and ``kind`` are plain ASCII (addresses, ports, kind names), so they need no escaping.
        """
        line = (f'{{"t":{now:.6f},"node":{self._node_json},"ev":"tx","flow":"{flow}","seq":{seq},'
                f'"len":{length},"kind":"{kind}","hop":{"null" if hop is None else hop}}}\n')
        self._append(line)

    def _append(self, line: str) -> None:
        """Queue one line; write now when autoflushing or once 64 KB are pending."""
        with self._lock:
            if self._fd is None:
                return
            self._pending.append(line)
            self._size += len(line)
            self.lines += 1
            if self.autoflush or self._size >= FLUSH_BYTES:
                self._write()

    def flush(self) -> None:
        with self._lock:
            if self._fd is not None and self._pending:
                self._write()

    def _write(self) -> None:
        data = "".join(self._pending).encode()
        self._pending.clear()
        self._size = 0
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)  # type: ignore[arg-type]
            view = view[n:]

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
