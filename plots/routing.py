"""What the routes did during a repetition: changes, and how fast a flow got over a failure (issue 23).

From the node logs' ``route`` events (routing.topology.linkstate: one per next hop that changed, with ``dst``,
``old``, ``new``, ``metric``) and meta.json's ``failures`` (the loss specs' ``down`` intervals,
relative to the flow start).  For each flow and the first failure that begins while it runs:

* ``reroute_s``: from the failure to the first route change toward the flow's receiver anywhere in
  the mesh (None, an empty cell: no node changed its route to the receiver after the failure: static routes, or
  the failure was not on the flow's path);
* ``recovery_s``: from the failure to the receiver's first ``deliver`` event after the path was
  repaired (rerouted, or else the failure's end).  The receiver logs ``deliver`` every
  DELIVER_LOG_BYTES (100 kB, tcp_user/bulk.py): that is the resolution.  None: the flow ended first,
  or no failure happened while it ran.
"""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from plots.flows import FlowInfo
from plots.logs import RepLogs, aligned_times

__all__ = ["route_changes", "route_changes_settling", "route_events", "flow_recovery", "flows_start", "time_marks"]


def route_events(rep: RepLogs) -> pd.DataFrame:
    """The ``route`` events of the repetition with their aligned time ``ta`` (empty without any)."""
    ev = rep.events
    if ev.empty or "ev" not in ev:
        return pd.DataFrame(columns=["ta", "node", "dst", "old", "new", "metric"])
    routes = ev[ev["ev"] == "route"].copy()
    routes["ta"] = aligned_times(routes, rep.meta)
    return routes


def _split_at_flows_start(rep: RepLogs) -> tuple[int, int]:
    """(changes before the flows started, changes from then on): the ``route`` events of every node, split at
    :func:`flows_start`.  Before it the routes settle (ETX probing, the first link-state floods, babeld's first
    hellos); those changes are the protocol converging, not the mesh reacting.  A run without a ``flow_start``
    counts every change as the flows'."""
    routes = route_events(rep)
    start = flows_start(rep)
    if start is None or routes.empty:
        return 0, len(routes)
    settling = int((routes["ta"] < start).sum())
    return settling, len(routes) - settling


def route_changes(rep: RepLogs) -> int:
    """Next-hop changes of every node once the flows had started (the ``route`` events from :func:`flows_start`
    on; the settling ones are :func:`route_changes_settling`)."""
    return _split_at_flows_start(rep)[1]


def route_changes_settling(rep: RepLogs) -> int:
    """Next-hop changes of every node before the flows started: the routes settling."""
    return _split_at_flows_start(rep)[0]


def flows_start(rep: RepLogs) -> float | None:
    """When the flows started on the aligned clock (what ``down`` intervals are relative to): the earliest
    ``flow_start`` less its flow's ``start_s`` (meta.json's flows; 0 when a run did not record it)."""
    ev = rep.events
    starts = ev[ev["ev"] == "flow_start"] if not ev.empty and "ev" in ev else ev
    if starts.empty:
        return None
    t = aligned_times(starts, rep.meta)
    offsets = {}
    nodes = rep.meta.get("nodes") or {}
    for f in rep.meta.get("flows") or []:
        if isinstance(f, dict) and f.get("sender") in nodes:
            offsets.setdefault(str(f["sender"]), float(f.get("start_s") or 0.0))
    return float(min(tt - offsets.get(str(n), 0.0) for tt, n in zip(t, starts["node"])))


def flow_recovery(rep: RepLogs, flow: FlowInfo, flow_ev: pd.DataFrame) -> dict[str, float | None]:
    """``reroute_s`` and ``recovery_s`` of ``flow`` (module docstring; None where there is none: an empty
    cell); ``flow_ev``: the flow's own events."""
    out: dict[str, float | None] = {"reroute_s": None, "recovery_s": None}
    t0 = flows_start(rep)
    fails = [f for f in rep.meta.get("failures") or [] if isinstance(f, dict) and len(f.get("down") or ()) == 2]
    if t0 is None or not fails or flow_ev.empty:
        return out
    t = aligned_times(flow_ev, rep.meta)
    began = t[flow_ev["ev"] == "flow_start"]
    ended = t[flow_ev["ev"] == "flow_end"]
    start = float(began.min()) if len(began) else t0
    end = float(ended.max()) if len(ended) else math.inf
    fail = next((f for f in fails if start <= t0 + float(f["down"][0]) < end), None)
    if fail is None:
        return out
    t_fail, t_back = t0 + float(fail["down"][0]), t0 + float(fail["down"][1])
    receiver = str((rep.meta.get("nodes") or {}).get(flow.receiver, ""))
    routes = route_events(rep)
    if not routes.empty and "dst" in routes:
        toward = routes[(routes["dst"].astype(str) == receiver) & (routes["ta"] >= t_fail)]
        if len(toward):
            out["reroute_s"] = float(toward["ta"].min()) - t_fail
    repaired = t_fail + out["reroute_s"] if out["reroute_s"] is not None else t_back
    # not the last word of a stopped run (``at_stop``): it says what was received, not when
    at_stop = flow_ev["at_stop"].eq(True) if "at_stop" in flow_ev else pd.Series(False, index=flow_ev.index)
    delivered = t[(flow_ev["ev"] == "deliver") & ~at_stop & (t >= repaired)]
    if len(delivered):
        out["recovery_s"] = float(delivered.min()) - t_fail
    return out


def time_marks(meta: dict[str, Any], row: dict[str, Any], flow_start_s: float = 0.0) -> list[tuple[str, float, float]]:
    """What a figure over "time since flow start" marks for one flow: ``("down", start, end)`` for each
    failure (meta.json ``failures``, relative to when the flows started; ``flow_start_s``: this flow's own
    start after that), and ``("reroute", t, t)`` / ``("recovered", t, t)`` from the flow's summary row."""
    marks: list[tuple[str, float, float]] = []
    for f in meta.get("failures") or []:
        down = f.get("down") if isinstance(f, dict) else None
        if isinstance(down, (list, tuple)) and len(down) == 2:
            mark = ("down", float(down[0]) - flow_start_s, float(down[1]) - flow_start_s)
            if mark not in marks:          # "A-B" is two directed links down at once: one mark
                marks.append(mark)
    first = next((m for m in marks if m[0] == "down" and m[1] >= 0), None)
    if first is not None:
        for kind, col in (("reroute", "reroute_s"), ("recovered", "recovery_s")):
            v = row.get(col)
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                marks.append((kind, first[1] + float(v), first[1] + float(v)))
    return marks
