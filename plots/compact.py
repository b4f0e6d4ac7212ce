"""Compact logs: a finished repetition's JSON Lines logs as one Parquet file (docs/LOGS.md, "Compact logs").

While a repetition runs, every node streams its log line by line (a crash loses nothing
before it).  Once it has ended, :func:`compact_rep` reads those logs with the same parser
as every reader (plots.logs.read_node_log), writes them as ``events.parquet`` (one row per
event, zstd-compressed columns) and removes the ``.log`` files only after reading the
Parquet file back and finding every event in it.  plots.logs.load_rep reads either form (plots.logs.read_parquet_events).

Columns whose values are not all strings or all numbers (``drops`` and other dicts, lists,
mixed types) are stored as JSON text and listed in the file's metadata, so a load gives back
the values the JSON Lines reader gives.  The lines a reader skipped (a crashed writer's last
line) are counted per node in the metadata, as the JSON Lines reader counts them.  The
repetition's digest (plots.digest_store: its summary rows and what the figures draw) is
written next to the events, so that ``aspan plot`` need not read them.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from plots.logs import (PARQUET, PARQUET_JSON_COLUMNS as _META_JSON, PARQUET_BAD_LINES as _META_BAD,
                        events_frame, read_node_log)



def _json_columns(df: pd.DataFrame) -> list[str]:
    out = []
    for col in df.columns:
        if df[col].dtype != object:
            continue
        kinds = {type(v) for v in df[col].dropna()}
        if kinds and kinds != {str}:
            out.append(col)
    return out


def compact_rep(rep_dir: Path) -> tuple[int, int]:
    """Replace ``rep_dir/*.log`` by ``rep_dir/events.parquet``; (bytes before, bytes after).

    Nothing is removed unless the Parquet file reads back with every event.  A repetition
    without logs, or already compacted, is left as it is: (0, 0).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    rep_dir = Path(rep_dir)
    logs = sorted(rep_dir.glob("*.log"))
    if not logs or (rep_dir / PARQUET).exists():
        return 0, 0
    events: list[dict[str, Any]] = []
    bad: dict[str, int] = {}
    for log in logs:
        evs, n_bad = read_node_log(log)
        events.extend(evs)
        if n_bad:
            bad[log.stem] = n_bad
    df = events_frame(events)
    js = _json_columns(df)
    for col in js:
        df[col] = df[col].map(lambda v: None if v is None or v is pd.NA or (isinstance(v, float) and v != v)
                              else json.dumps(v, separators=(",", ":")))
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           _META_JSON: json.dumps(js).encode(), _META_BAD: json.dumps(bad).encode()})
    tmp = rep_dir / (PARQUET + ".tmp")
    pq.write_table(table, tmp, compression="zstd")
    if pq.read_metadata(tmp).num_rows != len(df):
        tmp.unlink()
        raise OSError(f"{rep_dir}: the Parquet file does not hold every event; the logs are kept")
    tmp.replace(rep_dir / PARQUET)
    before = sum(p.stat().st_size for p in logs)
    for log in logs:
        log.unlink()
    digest = write_rep_digest(rep_dir)
    return before, (rep_dir / PARQUET).stat().st_size + digest.stat().st_size


def write_rep_digest(rep_dir: Path) -> Path:
    """Compute and cache the digest of a compacted repetition (plots.digest_store): what
    ``aspan plot`` and the summary read instead of its events.  Its directory name gives the
    variant and repetition when meta.json lacks them, as plots.logs.iter_reps does."""
    from plots.digest_store import DIGEST, digest_key, rep_digest
    rep_dir = Path(rep_dir)
    if digest_key(rep_dir) is None:
        raise ValueError(f"{rep_dir}: not a compacted repetition (no {PARQUET}, or .log files left)")
    k = int(rep_dir.name[3:]) if rep_dir.name[3:].isdigit() else 0
    rep_digest(rep_dir, rep_dir.parent.name, k, write=True)
    return rep_dir / DIGEST
