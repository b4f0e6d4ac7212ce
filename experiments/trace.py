"""Link traces (issue 25): what every directed link delivered, per interval, recorded by any run.

Every node logs an ``etx`` event per neighbour every ``etx.log_interval_s`` (1 s by default), on every
backend, with two counters (etx.estimator.EtxTable.log_fields): ``heard``, the neighbour's probes heard
so far, and ``seq``, the highest probe sequence number among them.  Between two such events of node B
about neighbour A, the directed link A>B carried Δheard of the Δseq probes A sent: its delivery over that
interval, finer than the ETX window (1,000 probes), measured by the probes, as ETX sees the link.

:func:`extract` turns a run directory into one table, a row per (variant, repetition, directed link,
interval), with these columns (docs/LOGS.md, "Link traces"):

``variant, repetition, link`` ("A>B": what B heard from A), ``t_s`` (the interval's start, seconds after
the flows started; negative while settling), ``dt_s``, ``sent`` (Δseq), ``heard`` (Δheard, at most
``sent``), ``delivery`` (heard / sent; empty when A sent nothing in the interval), ``etx`` (B's estimate
of the link's ETX at the interval's end, 1 / (forward x reverse); empty when infinite).

Intervals where the counters went back (the neighbour restarted) are left out.  ``aspan trace extract
RUN -o trace.parquet`` (or ``.csv``) writes it; the loss model ``trace`` (routing/trace_loss.py) replays
a link of it.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from plots.logs import aligned_times, iter_reps, load_rep
from plots.routing import flows_start

COLUMNS = ["variant", "repetition", "link", "t_s", "dt_s", "sent", "heard", "delivery", "etx"]


def rep_trace(rep_dir: Path, variant: str, repetition: int) -> pd.DataFrame:
    """The trace rows of one repetition (module docstring)."""
    rep = load_rep(rep_dir)
    ev = rep.events
    if ev.empty or "ev" not in ev or "heard" not in ev:
        return pd.DataFrame(columns=COLUMNS)
    etx = ev[(ev["ev"] == "etx") & ev["heard"].notna()].copy()
    if etx.empty:
        return pd.DataFrame(columns=COLUMNS)
    etx["ta"] = aligned_times(etx, rep.meta)
    t0 = flows_start(rep)
    t0 = float(etx["ta"].min()) if t0 is None else t0
    name_of = {str(a): str(n) for n, a in (rep.meta.get("nodes") or {}).items()}
    rows: list[dict[str, Any]] = []
    for (node, nbr), g in etx.sort_values("ta").groupby(["node", "nbr"], sort=True):
        prev = None
        for t, heard, seq, fwd, rev in zip(g["ta"], g["heard"], g["seq"], g["forward"], g["reverse"]):
            cur = (float(t), int(heard), None if pd.isna(seq) else int(seq))
            if prev is not None:
                sent = 0 if cur[2] is None else cur[2] - (-1 if prev[2] is None else prev[2])
                got = cur[1] - prev[1]
                if sent >= 0 and 0 <= got:
                    got = min(got, sent)      # late probes credited now belong to earlier intervals
                    d = fwd * rev
                    rows.append({"variant": variant, "repetition": repetition,
                                 "link": f"{name_of.get(str(nbr), nbr)}>{name_of.get(str(node), node)}",
                                 "t_s": round(prev[0] - t0, 6), "dt_s": round(cur[0] - prev[0], 6),
                                 "sent": sent, "heard": got, "delivery": got / sent if sent else math.nan,
                                 "etx": 1.0 / d if d > 0 else math.nan})
            prev = cur
    return pd.DataFrame(rows, columns=COLUMNS)


def extract(run_dir: Path, variant: str | None = None, repetition: int | None = None) -> pd.DataFrame:
    """The trace of every repetition of ``run_dir`` (or of one variant / repetition)."""
    parts = [rep_trace(d, v, k) for v, k, d in iter_reps(run_dir)
             if (variant is None or v == variant) and (repetition is None or k == repetition)]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(parts, ignore_index=True)


def write(df: pd.DataFrame, path: Path) -> None:
    """``.parquet`` or ``.csv`` by the file's suffix (ValueError otherwise)."""
    if path.suffix == ".parquet":
        df.to_parquet(path, index=False)
    elif path.suffix == ".csv":
        df.to_csv(path, index=False)
    else:
        raise ValueError(f"{path}: expected a .parquet or .csv file name")
