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
of the link's ETX at the interval's end, 1 / (forward x reverse); empty when infinite); on the Pis also
what the drivers said (routing/drivers/station.py): ``signal_dbm`` (B hearing A), ``tx_bitrate_mbps``,
``tx_retries``, ``tx_failed`` and ``expected_mbps`` (A sending to B).

With ``fates`` (what ``aspan trace extract`` writes unless ``--probes-only``), also a row per data
transmission and link, what the data met (experiments/trace_fates.py: columns ``source`` and ``delay_s``).

Intervals where the counters went back (the neighbour restarted) are left out.  ``aspan trace extract
RUN -o trace.parquet`` (or ``.csv``) writes it; the loss model ``trace`` (routing/links/trace_loss.py) replays
a link of it; ``aspan trace export-mahimahi`` writes a link of it as a Mahimahi mm-link trace
(:func:`mahimahi_opportunities`).
"""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from routing.links import mahimahi, trace_loss
from tracefiles import TraceError, probe_rows

from experiments import trace_fates
from plots.logs import RepLogs, aligned_times, iter_reps, load_rep
from plots.routing import flows_start

COLUMNS = ["variant", "repetition", "link", "t_s", "dt_s", "sent", "heard", "delivery", "etx",
           "signal_dbm", "tx_bitrate_mbps", "tx_retries", "tx_failed", "expected_mbps"]
STATION_COLUMNS = COLUMNS[9:14]
#: the columns of a trace that holds what the data met (experiments/trace_fates.py): ``source`` says what
#: measured a row (``probes``: an interval of the probes' counters; ``data``: one data transmission), and
#: ``delay_s`` a transmission's one-way delay when known
FATE_COLUMNS = COLUMNS + ["source", "delay_s"]


def rep_trace(rep_dir: Path, variant: str, repetition: int, fates: bool = False) -> pd.DataFrame:
    """The trace rows of one repetition (module docstring); with ``fates`` also a row per data
    transmission and link (experiments/trace_fates.py), the probe rows then marked ``source`` ``probes``."""
    rep = load_rep(rep_dir)
    df = _probe_rows(rep, variant, repetition)
    if not fates:
        return df
    t0 = flows_start(rep)
    fate_rows = [] if t0 is None else trace_fates.rep_fates(rep, variant, repetition, t0)   # no flow: no data
    data = pd.DataFrame(fate_rows, columns=FATE_COLUMNS)
    df = df.assign(source="probes", delay_s=math.nan)
    return pd.concat([d for d in (df, data) if not d.empty], ignore_index=True) if not (df.empty and data.empty) \
        else pd.DataFrame(columns=FATE_COLUMNS)


def _probe_rows(rep: RepLogs, variant: str, repetition: int) -> pd.DataFrame:
    """The probes' rows of one repetition (module docstring)."""
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
    df = pd.DataFrame(rows, columns=COLUMNS)
    _add_station_columns(df, ev, rep.meta, t0)
    return df


def _add_station_columns(df: pd.DataFrame, ev: pd.DataFrame, meta: dict[str, Any], t0: float) -> None:
    """The Pis' driver view (``station`` events, routing/drivers/station.py) beside each row of link A>B: the signal B
    heard A at (B's dump, the last sample of the interval), and A's sending to B (A's dump): its bitrate, its
    retries and failures during the interval, the driver's expected throughput.  Empty without the events
    (every backend but pi) or without the MAC addresses meta.json's ``mac_filter`` records.  O((rows + events)
    log events): each interval's samples found by binary search."""
    st = ev[ev["ev"] == "station"] if "mac" in ev else ev.iloc[0:0]
    macs = {str(n): str(m).lower() for n, m in ((meta.get("mac_filter") or {}).get("macs") or {}).items()}
    if st.empty or not macs or df.empty:
        return
    st = st.assign(ta=aligned_times(st, meta) - t0).sort_values("ta", kind="stable")
    by = {k: g for k, g in st.groupby(["node", "mac"])}

    def column(g: pd.DataFrame, col: str, j: np.ndarray) -> np.ndarray:
        return g[col].to_numpy(dtype=float)[np.maximum(j, 0)] if col in g else np.full(len(j), np.nan)

    # per link, each interval's samples found by binary search (the events sorted once), not by a scan
    for link, idx in df.groupby("link").groups.items():
        a, b = str(link).split(">")
        t = df.loc[idx, "t_s"].to_numpy(dtype=float)
        end = t + df.loc[idx, "dt_s"].to_numpy(dtype=float)
        heard = by.get((b, macs.get(a, "")))
        if heard is not None:                        # B's dump about A: the interval's last sample
            ta = heard["ta"].to_numpy(dtype=float)
            j = np.searchsorted(ta, end, side="right") - 1
            inside = (j >= 0) & (ta[np.maximum(j, 0)] > t)
            df.loc[idx[inside], "signal_dbm"] = column(heard, "signal_dbm", j)[inside]
        sent = by.get((a, macs.get(b, "")))
        if sent is not None:                         # A's dump about B: the last sample, and the one before
            ta = sent["ta"].to_numpy(dtype=float)
            j = np.searchsorted(ta, end, side="right") - 1
            inside = (j >= 0) & (ta[np.maximum(j, 0)] > t)
            k = np.searchsorted(ta, t, side="right") - 1
            for col in ("tx_bitrate_mbps", "expected_mbps"):
                df.loc[idx[inside], col] = column(sent, col, j)[inside]
            for col in ("tx_retries", "tx_failed"):
                during = column(sent, col, j) - column(sent, col, k)
                df.loc[idx[inside & (k >= 0)], col] = during[inside & (k >= 0)]


def extract(run_dir: Path, variant: str | None = None, repetition: int | None = None,
            fates: bool = False) -> pd.DataFrame:
    """The trace of every repetition of ``run_dir`` (or of one variant / repetition); ``fates``: with what
    the data met (:func:`rep_trace`)."""
    parts = [rep_trace(d, v, k, fates) for v, k, d in iter_reps(run_dir)
             if (variant is None or v == variant) and (repetition is None or k == repetition)]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=FATE_COLUMNS if fates else COLUMNS)
    return pd.concat(parts, ignore_index=True)


def mahimahi_opportunities(rows: list[dict[str, Any]], link: str, run: str | None, rate_mbps: float,
                           source: str = "trace") -> list[int]:
    """Link ``link`` of a trace as a Mahimahi mm-link trace: its delivery opportunities in ms from the recorded
    flows' start to the end of its last interval, for a link of nominal ``rate_mbps`` (routing/links/mahimahi.py,
    "Export"; the delivery at each moment as the loss model ``trace`` replays it).  TraceError naming what
    is missing; ValueError when the link delivered nothing at all."""
    series = trace_loss.link_series(rows, link, run, source)
    replay = trace_loss.TraceLoss(series, at=0.0, offset_s=0.0, loop=False, rng=random.Random(0))
    t_last, _d, dt_last = series[-1]
    end_s = t_last + (dt_last if dt_last > 0 else 1.0)
    if not end_s > 0:
        raise TraceError("link", f"{source}: link {link!r} has no interval after the flows' start")
    ms = mahimahi.opportunities(lambda t: 1.0 - replay.rate(t), end_s, rate_mbps)
    if not ms or ms[-1] <= 0:
        raise ValueError(f"{source}: link {link!r} delivered too little at {rate_mbps} Mbit/s for a delivery "
                         "opportunity after 0 ms (Mahimahi needs one)")
    return ms


def write(df: pd.DataFrame, path: Path) -> None:
    """``.parquet`` or ``.csv`` by the file's suffix (ValueError otherwise)."""
    if path.suffix == ".parquet":
        df.to_parquet(path, index=False)
    elif path.suffix == ".csv":
        df.to_csv(path, index=False)
    else:
        raise ValueError(f"{path}: expected a .parquet or .csv file name")


def table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A trace file's rows (tracefiles.read_rows: a csv's are strings) as a table, numbers as numbers: the
    probes' intervals (tracefiles.probe_rows: what the data met is left out)."""
    rows = probe_rows(rows)
    df = pd.DataFrame(rows, columns=COLUMNS if not rows else None)
    for col in COLUMNS[3:]:
        if col in df:
            df[col] = pd.to_numeric(df[col].replace("", np.nan))
    return df


def select(df: pd.DataFrame, run: str | None, source: str = "trace") -> pd.DataFrame:
    """The rows of ``run`` (``"V"``: every repetition of variant V; ``"V/repK"``: one; None: all).
    ValueError naming ``source`` and what it holds when nothing matches."""
    if run is None:
        return df
    variant, _, rep = run.partition("/")
    rows = df[df["variant"].astype(str) == variant]
    if rep:
        if not (rep.startswith("rep") and rep[3:].isdigit()):
            raise ValueError(f"{source}: run {run!r}: expected VARIANT or VARIANT/repK")
        rows = rows[rows["repetition"].astype(int) == int(rep[3:])]
    if rows.empty:
        have = sorted({f"{v}/rep{int(k)}" for v, k in zip(df["variant"], df["repetition"])})
        raise ValueError(f"{source}: no run {run!r}; it holds {', '.join(have) or 'nothing'}")
    return rows


def loss_bins(df: pd.DataFrame, bin_s: float) -> pd.DataFrame:
    """Loss per directed link (columns) and bin of ``bin_s`` seconds after the flows' start (index: the bin's
    start): 1 - Σheard / Σsent over the bin's intervals (an interval counts in the bin its middle is in: a
    node logs its counters at its own times, 3.8 s and 4.8 s say, and what it lost from 4.0 s to 4.3 s belongs
    to the bin from 4 s, not to the one its start is in), pooled over every repetition in ``df``.  Settling
    (t_s < 0) is left out; NaN where no probe was sent."""
    if not bin_s > 0:
        raise ValueError(f"bin_s must be > 0, got {bin_s}")
    rows = df[pd.to_numeric(df["t_s"]) >= 0].copy()
    middle = pd.to_numeric(rows["t_s"]) + pd.to_numeric(rows["dt_s"]) / 2
    rows["bin"] = (middle // bin_s) * bin_s
    sums = rows.groupby(["bin", "link"])[["sent", "heard"]].sum()
    loss = 1.0 - sums["heard"] / sums["sent"].where(sums["sent"] > 0)
    return loss.unstack("link").sort_index()


def compare_table(tables: list[pd.DataFrame], labels: list[str], bin_s: float) -> str:
    """A markdown table of the loss per link and bin (:func:`loss_bins`) of each trace side by side: a row per
    bin, per link a column per trace (``A>B recorded``), in %; ``-`` where a trace has no interval."""
    bins = [loss_bins(t, bin_s) for t in tables]
    links = sorted(set().union(*(b.columns for b in bins)))
    index = sorted(set().union(*(b.index for b in bins)))
    head = ["t (s)"] + [f"{link} {label}" for link in links for label in labels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for t in index:
        cells = [f"{t:g}-{t + bin_s:g}"]
        for link in links:
            for b in bins:
                v = b[link].get(t, float("nan")) if link in b.columns else float("nan")
                cells.append("-" if pd.isna(v) else f"{100 * v:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
