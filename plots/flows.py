"""The flows of one repetition and the events that belong to each (docs/LOGS.md, "Several flows").

A flow is named in the logs by its data direction ``"src:sport>dst:dport"`` (mesh addresses);
everything a reader sees -- summary.csv, the figures, the report and the analysis API's ``flow``
column -- names it ``sender->receiver:dport`` with node names (``A->D:6000``).  The two forms
must both exist (the nodes log addresses, and know no names); :func:`rep_flows` and
:func:`flow_names` are the one mapping between them (docs/LOGS.md, "Flow names").

Which events belong to a flow:

- events whose ``flow`` field is the flow's id;
- with a single flow in the repetition, every event without a ``flow`` field too (older logs);
- with several flows, a sender-side event without ``flow`` (``cwnd``, ``loss``, ``rtx``) at a
  node that sends exactly one flow belongs to that flow; any other event without ``flow`` belongs
  to no flow (the ``cache`` and ``drop`` events: those are summarised per repetition).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from plots.logs import RepLogs

__all__ = ["FlowInfo", "rep_flows", "flow_events", "flow_label", "flow_names", "SENDER_EVENTS"]

SENDER_EVENTS = ("cwnd", "loss", "rtx", "flow_start")
# events whose ``flow`` is always the data direction (docs/LOGS.md)
DATA_EVENTS = ("flow_start", "flow_end", "tx", "deliver", "cwnd", "loss", "rtx")


@dataclass(frozen=True)
class FlowInfo:
    """One flow of a repetition.

    ``key``: the logged flow id ("" when the flow never logged one, e.g. it never started);
    ``label``: ``sender->receiver:dport`` (``sender->receiver`` without a logged id);
    ``sender``/``receiver``: node names; ``segments``/``segment_size`` from ``flow_start``
    or meta.json; ``n_flows``: the number of flows in the repetition.
    """

    key: str
    label: str
    sender: str
    receiver: str
    segments: int | None
    segment_size: float | None
    n_flows: int = 1


def _addr_to_name(meta: dict[str, Any]) -> dict[str, str]:
    nodes = meta.get("nodes") or {}
    return {str(a): str(n) for n, a in nodes.items()} if isinstance(nodes, dict) else {}


def _name(value: Any, addr_to_name: dict[str, str]) -> str:
    s = "" if value is None else str(value)
    return addr_to_name.get(s, addr_to_name.get(s.split(":")[0], s))


def flow_label(key: str, addr_to_name: dict[str, str]) -> tuple[str, str, str]:
    """``(label, sender, receiver)`` of a logged id ``src:sport>dst:dport``."""
    src, _, dst = key.partition(">")
    sender, receiver = _name(src, addr_to_name), _name(dst, addr_to_name)
    port = dst.rsplit(":", 1)[1] if ":" in dst else ""
    return (f"{sender}->{receiver}:{port}" if port else f"{sender}->{receiver}"), sender, receiver


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if f != f else f


def rep_flows(rep: RepLogs) -> list[FlowInfo]:
    """The flows of a repetition, in the order of meta.json ``flows``: each one's logged id
    (``key``, ``10.2.1.1:5000>10.2.1.5:6000``) and name (``label``, ``A->D:6000``, the
    ``flow`` of summary.csv, the figures, the report and the analysis API).

    Logged ids come from ``flow_start`` events (then any other event's ``flow``, for a log cut
    before ``flow_start``); each meta flow takes the first logged id with its sender and receiver,
    an id with a ``flow_start`` before any other.  Logged ids no meta flow claims come after if
    they started (``flow_start``) or if meta.json names no flows: other connections between the
    same nodes (iperf3's control connection on kernel TCP) are not flows of the experiment.  A meta
    flow that logged nothing keeps ``key`` "".  Always at least one flow (an empty one when neither
    meta nor the log names any).
    """
    meta, ev = rep.meta, rep.events
    names = _addr_to_name(meta)
    starts = ev[ev["ev"] == "flow_start"]
    logged: list[str] = []
    if "flow" in ev:
        data_dir = ev[ev["ev"].isin(DATA_EVENTS)]  # not drop: a dropped ACK names its own direction
        # each part's distinct ids in order of first appearance: what dict.fromkeys keeps of all
        ids = (list(pd.unique(starts["flow"].dropna().astype(str)))
               + list(pd.unique(data_dir["flow"].dropna().astype(str))))
        logged = [k for k in dict.fromkeys(ids) if ">" in k]
    start_of = {}
    if "flow" in starts:
        for rec in starts.to_dict("records"):
            if isinstance(rec.get("flow"), str):
                start_of.setdefault(rec["flow"], rec)
    meta_flows = [f for f in (meta.get("flows") or []) if isinstance(f, dict)]
    out: list[tuple[str, str, str, str, Any, Any]] = []
    claimed: set[str] = set()
    started = [k for k in logged if k in start_of]
    for f in meta_flows:
        sender, receiver = _name(f.get("sender"), names), _name(f.get("receiver"), names)
        key = next((k for k in started + logged if k not in claimed
                    and flow_label(k, names)[1:] == (sender, receiver)), "")
        claimed.add(key)
        label = flow_label(key, names)[0] if key else f"{sender}->{receiver}"
        out.append((key, label, sender, receiver, f.get("segments"), f.get("segment_size")))
    for key in logged:
        if key not in claimed and (key in start_of or not meta_flows):
            label, sender, receiver = flow_label(key, names)
            out.append((key, label, sender, receiver, None, None))
    if not out:
        sender = str(starts["node"].iloc[0]) if len(starts) else ""
        out.append(("", "", sender, "", None, None))
    flows = []
    for key, label, sender, receiver, segs, size in out:
        start = start_of.get(key, {})
        seg_n = _num(start.get("segments"))
        seg_n = seg_n if seg_n is not None else _num(segs)
        size_n = _num(start.get("segment_size"))
        size_n = size_n if size_n is not None else _num(size)
        flows.append(FlowInfo(key, label, sender, receiver,
                              None if seg_n is None else int(seg_n), size_n, len(out)))
    return flows


def flow_events(rep: RepLogs, flow: FlowInfo, flows: list[FlowInfo]) -> pd.DataFrame:
    """The events of ``rep`` that belong to ``flow`` (rules in the module docstring)."""
    ev = rep.events
    if len(flows) <= 1:
        return ev
    has = ev["flow"].astype(object) if "flow" in ev else pd.Series(None, index=ev.index,
                                                                   dtype=object)
    mine = has == flow.key if flow.key else pd.Series(False, index=ev.index)
    missing = has.isna()
    sends = sum(1 for f in flows if f.sender == flow.sender)
    if sends == 1:
        mine = mine | (missing & ev["ev"].isin(SENDER_EVENTS) & (ev["node"] == flow.sender))
    return ev[mine]


def flow_names(logs: RepLogs, ids: pd.Series) -> pd.Series:
    """The summary's and figures' name of each logged flow id (the mapping of docs/LOGS.md,
    "Flow names"): a flow of the repetition gets its :func:`plots.flows.rep_flows` label; any other
    id (an ACK's direction in a ``drop`` event) ``sender->receiver:dport`` of that direction."""
    names = {f.key: f.label for f in rep_flows(logs) if f.key}
    addr = _addr_to_name(logs.meta)
    return ids.map(lambda k: k if not isinstance(k, str) or ">" not in k
                   else names.get(k) or flow_label(k, addr)[0])
