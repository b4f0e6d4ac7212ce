"""The files of recorded links, read and written: a trace's rows (.csv or .parquet, ``aspan trace extract``)
and a Mahimahi ``mm-link`` trace (one delivery opportunity a line, in milliseconds).

The neutral home of the file I/O of routing.links.trace_loss, routing.links.mahimahi and
routing.medium.signal_trace (the cores that replay what these functions read, without touching a file
themselves) and of ``aspan trace``; like fieldspec it imports nothing of the project.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable

MAX_ROWS = 10_000_000      # a bound on what a trace file may make a node hold (about 16 bytes a row)


class TraceError(ValueError):
    """A trace that cannot be replayed; ``key`` names the setting at fault (file, run or link)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def is_data_row(row: dict[str, Any]) -> bool:
    """Does a trace row hold one data transmission (``source`` ``data``: experiments/trace_fates.py) rather
    than an interval of the probes (``probes``, or no ``source``: traces written before it)?"""
    return row.get("source") == "data"


def probe_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the probes' intervals (:func:`is_data_row`)."""
    return [r for r in rows if not is_data_row(r)]


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a trace file (.csv with the standard library, .parquet with pandas)."""
    p = Path(path)
    if not p.is_file():
        raise TraceError("file", f"{p}: no such trace file")
    if p.suffix == ".parquet":
        import pandas as pd
        df = pd.read_parquet(p)
        if len(df) > MAX_ROWS:
            raise TraceError("file", f"{p}: {len(df)} rows, more than {MAX_ROWS}")
        return df.to_dict("records")
    if p.suffix != ".csv":
        raise TraceError("file", f"{p}: expected a .parquet or .csv trace (aspan trace extract)")
    with p.open(newline="", encoding="utf-8") as f:
        rows = []
        for i, r in enumerate(csv.DictReader(f)):
            if i >= MAX_ROWS:
                raise TraceError("file", f"{p}: more than {MAX_ROWS} rows")
            rows.append(r)
        return rows


MAX_LINES = 2_000_000       # a bound on what a trace file may make a process hold (about 50 bytes a line
                            # while parsed, 32 after: 33 minutes of a 12 Mbit/s link)


class MahimahiError(ValueError):
    """A file that is not a Mahimahi trace (names the file and the line)."""


def read_mahimahi(path: str | Path) -> list[int]:
    """The opportunities of a Mahimahi trace file, in milliseconds (MahimahiError naming file and line)."""
    p = Path(path)
    if not p.is_file():
        raise MahimahiError(f"{p}: no such Mahimahi trace file")
    out: list[int] = []
    with p.open(encoding="ascii", errors="replace") as f:
        for i, line in enumerate(f, 1):
            s = line.strip()
            if not s:
                continue
            if len(out) >= MAX_LINES:
                raise MahimahiError(f"{p}: more than {MAX_LINES} opportunities")
            if not s.isdigit():
                raise MahimahiError(f"{p}:{i}: expected a whole number of milliseconds, got {s[:40]!r}")
            ms = int(s)
            if out and ms < out[-1]:
                raise MahimahiError(f"{p}:{i}: {ms} ms is before the line above ({out[-1]} ms)")
            out.append(ms)
    if not out or out[-1] <= 0:
        raise MahimahiError(f"{p}: a trace needs at least one opportunity after 0 ms (its last line is its period)")
    return out


def write_mahimahi(path: str | Path, ms: Iterable[int]) -> int:
    """Write opportunities one a line; the number written."""
    n = 0
    with Path(path).open("w", encoding="ascii") as f:
        for t in ms:
            f.write(f"{t}\n")
            n += 1
    return n


