"""One summary row per (variant, repetition), computed from the event logs (docs/LOGS.md)."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from plots.flows import FlowInfo, flow_events, rep_flows
from plots.logs import RepLogs, aligned_times
from plots.routing import flow_recovery, route_changes, route_changes_settling

__all__ = [
    "SUMMARY_COLUMNS",
    "SUMMARY_DTYPES",
    "REP_COLUMNS",
    "FlowRoles",
    "FlowInfo",
    "rep_flows",
    "flow_events",
    "delivery",
    "summarize_flows",
    "cache_time_mean",
    "flow_roles",
    "tx_counts",
    "sender_cwnd_segments",
    "cwnd_time_mean",
    "summarize_rep",
    "rep_row",
    "rep_rows",
    "summary_frame",
    "write_summary_rows",
    "summary_csv",
    "read_summary",
]

# The columns that identify a row come first (issue 28: two flows of one repetition must not
# look like duplicate rows), then the measures in the order they were added.
KEY_COLUMNS: tuple[str, ...] = ("variant", "flow", "repetition", "seed")
SUMMARY_COLUMNS: list[str] = [
    *KEY_COLUMNS, "segments", "duration_s", "goodput_mbps",
    "losses_dupack", "losses_rto", "cwnd_median", "tx_per_pkt_p50", "tx_per_pkt_p99",
    "tx_per_pkt_max", "cache_max_segments", "snoop_hits", "local_retransmissions",
    "backend", "integrity_ok", "drops_loss", "drops_queue", "drops_malformed", "status",
    "cache_insertions", "premature_retransmissions", "cwnd_mean",
    "n_flows", "cache_mean_segments",
    "route_changes", "reroute_s", "recovery_s",
    *"delivered_bytes delivered_segments delivered_share ran_s delivered_mbps".split(),
    "route_changes_settling",
]
# Columns that describe the whole repetition (every node, every flow): the ``cache`` and
# ``drop`` events carry no flow (docs/LOGS.md), so every flow row of a repetition repeats them.
REP_COLUMNS: tuple[str, ...] = ("cache_max_segments", "cache_insertions", "cache_mean_segments",
                                "drops_loss", "drops_queue", "drops_malformed", "n_flows", "route_changes",
                                "route_changes_settling")

_INT = "Int64"
SUMMARY_DTYPES: dict[str, str] = {
    "variant": "object", "repetition": _INT, "seed": _INT, "segments": _INT,
    "duration_s": "float64", "goodput_mbps": "float64", "losses_dupack": _INT,
    "losses_rto": _INT, "cwnd_median": "float64", "tx_per_pkt_p50": "float64",
    "tx_per_pkt_p99": "float64", "tx_per_pkt_max": _INT, "cache_max_segments": _INT,
    "snoop_hits": _INT, "local_retransmissions": _INT, "backend": "object",
    "integrity_ok": "boolean", "drops_loss": _INT, "drops_queue": _INT,
    "drops_malformed": _INT, "status": "object", "cache_insertions": _INT,
    "premature_retransmissions": _INT, "cwnd_mean": "float64",
    "flow": "object", "n_flows": _INT, "cache_mean_segments": "float64",
    "route_changes": _INT, "reroute_s": "float64", "recovery_s": "float64",
    "delivered_bytes": _INT, "delivered_segments": _INT, "delivered_share": "float64", "ran_s": "float64",
    "delivered_mbps": "float64", "route_changes_settling": _INT,
}
FLOAT_FORMAT = "%.6g"
_BOOL_TEXT = {"true": True, "false": False, "1": True, "0": False}
NAN = float("nan")


@dataclass(frozen=True)
class FlowRoles:
    """Node names of the TCP senders and receivers of a rep, and the expected flow count."""

    senders: frozenset[str]
    receivers: frozenset[str]
    n_flows: int


def _node_name(value: Any, addr_to_name: dict[str, str]) -> str | None:
    if value is None:
        return None
    s = str(value)
    return addr_to_name.get(s, addr_to_name.get(s.split(":")[0], s))


def flow_roles(rep: RepLogs) -> FlowRoles:
    """Senders/receivers from meta ``flows`` (names or addresses) and the logged flow events.

    Senders: nodes that logged ``flow_start`` plus meta senders. Receivers: meta receivers,
    the destination address of each logged flow id, and nodes whose ``flow_end`` carries ``ok``.
    """
    meta, ev = rep.meta, rep.events
    nodes = meta.get("nodes") or {}
    addr_to_name = {str(a): str(n) for n, a in nodes.items()} if isinstance(nodes, dict) else {}
    flows = [f for f in (meta.get("flows") or []) if isinstance(f, dict)]
    senders = {_node_name(f.get("sender"), addr_to_name) for f in flows}
    receivers = {_node_name(f.get("receiver"), addr_to_name) for f in flows}
    starts = ev[ev["ev"] == "flow_start"]
    senders |= set(starts["node"].astype(str))
    if "flow" in starts:
        for flow in starts["flow"].dropna().astype(str).unique():
            if ">" in flow:
                receivers.add(_node_name(flow.split(">", 1)[1], addr_to_name))
    ends = ev[ev["ev"] == "flow_end"]
    if "ok" in ends:
        receivers |= set(ends.loc[ends["ok"].notna(), "node"].astype(str))
    senders.discard(None)
    receivers.discard(None)
    n_start = starts["flow"].nunique() if "flow" in starts else len(starts)
    return FlowRoles(frozenset(senders), frozenset(receivers), max(len(flows), n_start, 1))


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df else pd.Series(np.nan, index=df.index, dtype="float64")


def tx_counts(events: pd.DataFrame) -> np.ndarray:
    """Transmissions per data segment: count of ``tx`` per (flow, seq) over all nodes."""
    tx = events[events["ev"] == "tx"]
    if tx.empty:
        return np.zeros(0, dtype=np.int64)
    keys = pd.DataFrame({"flow": _col(tx, "flow").astype(object),
                         "seq": _col(tx, "seq").astype(object)})
    return keys.groupby(["flow", "seq"], dropna=False, sort=True).size().to_numpy(np.int64)


def _sender_rows(events: pd.DataFrame, ev_name: str, senders: frozenset[str]) -> pd.DataFrame:
    rows = events[events["ev"] == ev_name]
    if senders:
        rows = rows[rows["node"].isin(list(senders))]
    return rows


def sender_cwnd_segments(rep: RepLogs, roles: FlowRoles | None = None) -> pd.DataFrame:
    """The sender's cwnd log as a frame ``t`` (reference clock), ``node``, ``cwnd_seg``.

    ``cwnd_seg = cwnd / mss``; an event without ``mss`` uses the flow's segment size.
    """
    roles = roles or flow_roles(rep)
    rows = _sender_rows(rep.events, "cwnd", roles.senders)
    mss = _col(rows, "mss").astype("float64")
    if mss.isna().any():
        mss = mss.fillna(_segment_size(rep))
    seg = _col(rows, "cwnd").astype("float64") / mss
    return pd.DataFrame({"t": aligned_times(rows, rep.meta).to_numpy(),
                         "node": rows["node"].astype(str).to_numpy(),
                         "cwnd_seg": seg.to_numpy(dtype=np.float64)})


def _segment_size(rep: RepLogs) -> float:
    starts = rep.events[rep.events["ev"] == "flow_start"]
    if "segment_size" in starts and starts["segment_size"].notna().any():
        return float(starts["segment_size"].dropna().iloc[0])
    for f in rep.meta.get("flows") or []:
        if isinstance(f, dict) and f.get("segment_size"):
            return float(f["segment_size"])
    return NAN


def _segments(rep: RepLogs) -> int | None:
    starts = rep.events[rep.events["ev"] == "flow_start"]
    if "segments" in starts and starts["segments"].notna().any():
        per_flow = starts.dropna(subset=["segments"])
        if "flow" in per_flow:
            per_flow = per_flow.drop_duplicates(subset=["flow"], keep="last")
        return int(per_flow["segments"].sum())
    flows = [f for f in rep.meta.get("flows") or [] if isinstance(f, dict)]
    if flows and all(f.get("segments") is not None for f in flows):
        return int(sum(int(f["segments"]) for f in flows))
    return None


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or (isinstance(value, float) and math.isnan(value)) \
            else int(value)
    except (TypeError, ValueError):
        return None


def _flow_timing(rep: RepLogs, roles: FlowRoles) -> dict[str, Any]:
    """duration_s, goodput_mbps, integrity_ok and whether every flow finished."""
    ev = rep.events
    t = aligned_times(ev, rep.meta)
    start_mask = (ev["ev"] == "flow_start") & ev["node"].isin(list(roles.senders))
    end_mask = (ev["ev"] == "flow_end") & ev["node"].isin(list(roles.receivers))
    ends = ev[end_mask]
    if "flow" in ends:
        ends = ends.drop_duplicates(subset=["flow"], keep="last")
    finished = len(ends) >= roles.n_flows
    out: dict[str, Any] = {"duration_s": NAN, "goodput_mbps": NAN, "integrity_ok": None,
                           "finished": finished}
    if "ok" in ends and ends["ok"].notna().any():
        out["integrity_ok"] = bool(ends["ok"].dropna().astype(bool).all())
    if not finished or not start_mask.any():
        return out
    duration = float(t[end_mask].max() - t[start_mask].min())
    out["duration_s"] = duration
    if duration > 0 and "bytes" in ends and ends["bytes"].notna().any():
        out["goodput_mbps"] = float(ends["bytes"].sum()) * 8.0 / duration / 1e6
    return out


def delivery(rep: RepLogs, view: RepLogs, roles: FlowRoles, segments: int | None,
             segment_size: float | None, timing: dict[str, Any]) -> dict[str, Any]:
    """What a flow delivered, finished or not: ``delivered_bytes`` (the receiver's last ``deliver`` or
    ``flow_end``), ``delivered_segments`` (whole segments of them), ``delivered_share`` (of the flow's
    ``segments`` x ``segment_size``), ``ran_s`` (from the flow's start to its end, or to the repetition's
    stop, its last ``node_stop``, when it did not finish) and ``delivered_mbps`` (the bytes over ``ran_s``:
    the goodput of a finished flow, what an unfinished one achieved while it ran).  Empty cells when the
    flow never started."""
    out: dict[str, Any] = dict.fromkeys(("delivered_bytes", "delivered_segments"))
    out.update(delivered_share=NAN, ran_s=NAN, delivered_mbps=NAN)
    ev = view.events
    t = aligned_times(ev, rep.meta)
    start = t[(ev["ev"] == "flow_start") & ev["node"].isin(list(roles.senders))]
    if start.empty:
        return out
    got = ev[ev["ev"].isin(["deliver", "flow_end"]) & ev["node"].isin(list(roles.receivers))]
    sizes = pd.to_numeric(_col(got, "bytes"), errors="coerce").dropna()
    delivered = int(sizes.max()) if len(sizes) else 0   # cumulative: the last count is the largest
    out["delivered_bytes"] = delivered
    if segment_size and segment_size > 0:
        out["delivered_segments"] = segments if timing["finished"] and segments is not None \
            else int(delivered // segment_size)
        if segments:
            out["delivered_share"] = delivered / (segments * segment_size)
    if timing["finished"]:
        ran = timing["duration_s"]
    else:
        all_t = aligned_times(rep.events, rep.meta)
        stops = all_t[rep.events["ev"] == "node_stop"]
        ran = float((stops if len(stops) else all_t).max() - start.min())
    out["ran_s"] = ran
    if ran == ran and ran > 0:
        out["delivered_mbps"] = delivered * 8.0 / ran / 1e6
    return out


def cwnd_time_mean(rep: RepLogs, roles: FlowRoles | None = None) -> float:
    """Time-weighted mean of the sender's cwnd in segments, from its first cwnd event to its
    ``flow_end`` (or its last cwnd event); several senders: the mean of their means."""
    roles = roles or flow_roles(rep)
    frame = sender_cwnd_segments(rep, roles).dropna()
    if frame.empty:
        return NAN
    ev = rep.events
    ends = ev[(ev["ev"] == "flow_end") & ev["node"].isin(list(roles.senders))]
    end_t = aligned_times(ends, rep.meta) if len(ends) else pd.Series(dtype="float64")
    means = []
    for node, part in frame.groupby("node", sort=True):
        t = part["t"].to_numpy(dtype=np.float64)
        y = part["cwnd_seg"].to_numpy(dtype=np.float64)
        order = np.argsort(t, kind="stable")
        t, y = t[order], y[order]
        node_end = end_t[ends["node"].astype(str).to_numpy() == node] if len(ends) else end_t
        stop = float(node_end.max()) if len(node_end) else float(t[-1])
        widths = np.diff(np.append(t, max(stop, float(t[-1]))))
        total = float(widths.sum())
        means.append(float((y * widths).sum() / total) if total > 0 else float(y.mean()))
    return float(np.mean(means))


def _status(meta: dict[str, Any], finished: bool) -> str:
    status = str(meta.get("status") or "ok")
    if status in ("failed", "interrupted"):   # how it ended, whatever the flows did
        return status
    if status == "running":   # the runner never recorded the ending (killed): plots.data.unrecorded_ending
        status = "unrecorded"
    return status if finished else "incomplete"


def _flow_row(rep: RepLogs, flow: FlowInfo, flows: list[FlowInfo]) -> dict[str, Any]:
    """The per-flow columns of one flow's row (rules for which events count: plots/flows.py)."""
    if len(flows) <= 1:
        view, roles = rep, flow_roles(rep)
        segments = _segments(rep)
    else:
        view = RepLogs(meta=rep.meta, events=flow_events(rep, flow, flows), rep_dir=rep.rep_dir)
        roles = FlowRoles(frozenset({flow.sender}), frozenset({flow.receiver}), 1)
        segments = flow.segments
    ev = view.events
    counts = tx_counts(ev)
    cwnd = sender_cwnd_segments(view, roles)["cwnd_seg"].dropna()
    loss_kind = _col(_sender_rows(ev, "loss", roles.senders), "kind")
    tx_kind = _col(ev[ev["ev"] == "tx"], "kind")
    timing = _flow_timing(view, roles)
    size = flow.segment_size if len(flows) > 1 else _segment_size(rep)
    return {
        **delivery(rep, view, roles, segments, None if size is None or size != size else float(size), timing),
        "segments": segments,
        "duration_s": timing["duration_s"],
        "goodput_mbps": timing["goodput_mbps"],
        "losses_dupack": int((loss_kind == "dupack").sum()),
        "losses_rto": int((loss_kind == "rto").sum()),
        "cwnd_median": float(np.median(cwnd.to_numpy())) if len(cwnd) else NAN,
        "tx_per_pkt_p50": float(np.percentile(counts, 50, method="linear")) if len(counts)
        else NAN,
        "tx_per_pkt_p99": float(np.percentile(counts, 99, method="linear")) if len(counts)
        else NAN,
        "tx_per_pkt_max": int(counts.max()) if len(counts) else None,
        "snoop_hits": int((ev["ev"] == "hit").sum()),
        "local_retransmissions": int((tx_kind == "local").sum()),
        "integrity_ok": timing["integrity_ok"],
        "status": _status(rep.meta, timing["finished"]),
        "premature_retransmissions": int((ev["ev"] == "premature").sum()),
        "cwnd_mean": cwnd_time_mean(view, roles),
        "flow": flow.label,
        **flow_recovery(rep, flow, ev),     # plots.routing: from a failure to the flow's recovery
    }


def _rep_columns(rep: RepLogs, n_flows: int) -> dict[str, Any]:
    """The columns that describe the whole repetition (REP_COLUMNS and the identifiers)."""
    ev, meta = rep.events, rep.meta
    cache = _col(ev[ev["ev"] == "cache"], "segments").dropna()
    drops = ev[ev["ev"] == "drop"]
    drop_reason = _col(drops, "reason")
    return {
        "variant": meta.get("variant"),
        "repetition": _int_or_none(meta.get("repetition")),
        "seed": meta.get("seed"),
        "cache_max_segments": int(cache.max()) if len(cache) else 0,
        "backend": meta.get("backend"),
        "drops_loss": _drop_total(drops, drop_reason, "loss"),
        "drops_queue": _drop_total(drops, drop_reason, "queue") + _socket_drops(ev),
        "drops_malformed": _drop_total(drops, drop_reason, "malformed"),
        "cache_insertions": _cache_insertions(ev),
        "n_flows": n_flows,
        "cache_mean_segments": cache_time_mean(rep),
        "route_changes": route_changes(rep),
        "route_changes_settling": route_changes_settling(rep),
    }


def summarize_flows(rep: RepLogs) -> list[dict[str, Any]]:
    """One summary row (keys = SUMMARY_COLUMNS) per flow of a rep, in rep_flows order."""
    flows = rep_flows(rep)
    shared = _rep_columns(rep, len(flows))
    rows = []
    for flow in flows:
        row = {**shared, **_flow_row(rep, flow, flows)}
        rows.append({**{c: row[c] for c in SUMMARY_COLUMNS}, **factor_values(rep.meta)})
    return rows


def factor_values(meta: dict[str, Any]) -> dict[str, Any]:
    """A factorial sweep's ``{field: value}`` of a repetition (meta.json ``sweep_value`` is a mapping then:
    experiments.schema): columns appended after SUMMARY_COLUMNS, named by the dotted field, so that the
    summary groups by any factor.  {} for a one-field sweep or none (their summary is unchanged)."""
    sv = meta.get("sweep_value")
    return {str(k): v for k, v in sv.items()} if isinstance(sv, dict) else {}


def summarize_rep(rep: RepLogs) -> dict[str, Any]:
    """The summary row of a single-flow rep; ValueError if the rep has several flows
    (use :func:`summarize_flows`)."""
    rows = summarize_flows(rep)
    if len(rows) != 1:
        raise ValueError(f"{rep.rep_dir}: {len(rows)} flows; use summarize_flows for one row "
                         "per flow")
    return rows[0]


def cache_time_mean(rep: RepLogs) -> float:
    """Time-averaged snoop cache occupancy summed over nodes (segments).

    Per node, the cache size is a step function (0 before its first ``cache`` event); its mean
    over the window from the first ``flow_start`` to the last ``flow_end`` (or the last event
    when no flow ended) is summed over nodes. 0 when nothing was cached; NaN without a window.
    """
    areas = cache_areas(rep)
    if areas is None:
        return 0.0
    per_node, window = areas
    if not window > 0:
        return NAN
    total = 0.0
    for area in per_node.values():
        total += area
    return total / window


def cache_node_means(rep: RepLogs) -> dict[str, float]:
    """Per node that logged a ``cache`` event: its time-averaged occupancy (segments), the term
    :func:`cache_time_mean` sums; {} when nothing was cached, NaN values without a window."""
    areas = cache_areas(rep)
    if areas is None:
        return {}
    per_node, window = areas
    return {node: (area / window if window > 0 else NAN) for node, area in per_node.items()}


def cache_areas(rep: RepLogs) -> tuple[dict[str, float], float] | None:
    """Per node (in name order), the integral of its cache size over the flows' window
    (segment-seconds), and the window's length (not positive: no window); None when no
    ``cache`` event carries ``segments``."""
    ev = rep.events
    rows = ev[ev["ev"] == "cache"]
    if rows.empty or "segments" not in rows:
        return None
    t = aligned_times(ev, rep.meta)
    starts = t[ev["ev"] == "flow_start"]
    ends = t[ev["ev"] == "flow_end"]
    t0 = float(starts.min()) if len(starts) else float(t.min())
    t1 = float(ends.max()) if len(ends) else float(t.max())
    if not t1 > t0:
        return {}, t1 - t0
    per_node: dict[str, float] = {}
    t_cache = t[rows.index]
    for node, idx in rows.groupby("node", sort=True).groups.items():
        times = t_cache[idx].to_numpy(dtype=np.float64)
        seg = rows.loc[idx, "segments"].astype(float).to_numpy()
        order = np.argsort(times, kind="stable")
        times, seg = times[order], seg[order]
        # value in force at t0, then the steps inside the window
        before = seg[times <= t0]
        inside = (times > t0) & (times < t1)
        knots = np.concatenate(([t0], times[inside], [t1]))
        values = np.concatenate(([before[-1] if len(before) else 0.0], seg[inside]))
        per_node[str(node)] = float((values * np.diff(knots)).sum())
    return per_node, t1 - t0


def _drop_total(drops: pd.DataFrame, reason: pd.Series, which: str) -> int:
    """Drops of one reason: a ``drop`` line is one drop, or ``count`` drops when it sums those over
    the per-second line limit (docs/LOGS.md)."""
    mine = reason == which
    if "count" not in drops:
        return int(mine.sum())
    counts = pd.to_numeric(drops["count"], errors="coerce").fillna(1)
    return int(counts[mine].sum())


def _socket_drops(ev: pd.DataFrame) -> int:
    """Receive-buffer overflows the live nodes counted at stop (node_stop ``socket_drops``)."""
    stops = ev[ev["ev"] == "node_stop"]
    if stops.empty or "socket_drops" not in stops:
        return 0
    return int(pd.to_numeric(stops["socket_drops"], errors="coerce").fillna(0).sum())


def _cache_insertions(ev: pd.DataFrame) -> int:
    """Segments stored in any node's cache over the run: the sum, per node, of the increases of its size.

    The paper's memory cost (Figures 8-9) is about how much the mesh stores, not only the
    largest single cache, which the window bounds at every caching node.
    """
    rows = ev[ev["ev"] == "cache"]
    if rows.empty:
        return 0
    total = 0
    for _, g in rows.groupby("node", sort=False):
        seg = g["segments"].astype(float).to_numpy()
        steps = np.diff(np.concatenate(([0.0], seg)))
        total += int(steps[steps > 0].sum())
    return total


def summary_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> DataFrame with SUMMARY_COLUMNS and their dtypes, then any other key of the rows (a factorial
    sweep's factors: :func:`factor_values`) in the order first seen."""
    rows = list(rows)
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in SUMMARY_COLUMNS))
    df = pd.DataFrame(rows, columns=SUMMARY_COLUMNS + extra)
    for col, dtype in SUMMARY_DTYPES.items():
        try:
            if dtype == _INT:
                df[col] = pd.to_numeric(df[col].astype(object)).astype(_INT)
            elif dtype == "boolean":
                df[col] = df[col].astype("boolean")
            elif dtype == "float64":
                df[col] = pd.to_numeric(df[col].astype(object)).astype("float64")
            else:
                df[col] = df[col].astype(object)
        except (TypeError, ValueError):
            df[col] = df[col].astype(object)  # e.g. a non-integer seed: keep as given
    return df


def summary_csv(rows: Iterable[dict[str, Any]]) -> tuple[pd.DataFrame, str]:
    """The summary frame of ``rows`` and its CSV text; deterministic bytes for the same rows."""
    df = summary_frame(rows)
    return df, df.to_csv(index=False, float_format=FLOAT_FORMAT, lineterminator="\n")


def write_summary_rows(run_dir: Path, rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Write ``run_dir/summary.csv`` from ready rows, whole or not at all (a temporary file renamed
    over it: a full disk leaves the old file as it was)."""
    df, text = summary_csv(rows)
    path = Path(run_dir) / "summary.csv"
    tmp = path.with_name(".summary.csv.tmp")
    try:
        tmp.write_bytes(text.encode())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return df


def rep_rows(rep: RepLogs, variant: str, repetition: int) -> list[dict[str, Any]]:
    """summarize_flows, with variant/repetition taken from the directory when meta lacks them."""
    rows = summarize_flows(rep)
    for row in rows:
        if row["variant"] is None:
            row["variant"] = variant
        if row["repetition"] is None:
            row["repetition"] = repetition
    return rows


def rep_row(rep: RepLogs, variant: str, repetition: int) -> dict[str, Any]:
    """rep_rows of a single-flow rep (ValueError with several flows)."""
    rows = rep_rows(rep, variant, repetition)
    if len(rows) != 1:
        raise ValueError(f"{rep.rep_dir}: {len(rows)} flows; use rep_rows")
    return rows[0]


def read_summary(path: Path) -> pd.DataFrame:
    """Read a summary.csv (a run dir or the file) back with SUMMARY_DTYPES where possible.

    Extra columns written by a backend are kept after the contract columns.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "summary.csv"
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    rows = df.replace({"": None}).to_dict("records")
    for row in rows:
        row["integrity_ok"] = _BOOL_TEXT.get(str(row.get("integrity_ok")).lower())
    out = summary_frame(rows)
    extra = [c for c in df.columns if c not in SUMMARY_COLUMNS]
    for c in extra:
        out[c] = df[c].replace({"": None}).to_numpy(dtype=object)
    return out
