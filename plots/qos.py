"""The adaptive sender's choices over time (issue 29): pkt_qos in use under the cwnd, on one time axis.

The sender logs one ``qos`` event per flow at the end of every epoch (aspan.adaptive): the pkt_qos that
ran in it (``pkt_qos``), the one the next epoch runs (``next_qos``), its phase and decision.  The figure
``qos_time`` draws, for each variant whose sender adapts (meta.json ``snoop.sender_qos: adaptive``), the
representative repetition's cwnd (top) and the pkt_qos in use (bottom), over the same "time since flow
start" as ``cwnd_time``; a switch of the incumbent is a vertical line through both.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from plots.data import RepData, VariantGroup
from plots.flows import rep_flows
from plots.logs import aligned_times, load_rep

__all__ = ["QosSeries", "qos_series", "is_adaptive"]

OFFSET = 0.02    # each further variant's pkt_qos line is drawn this much higher, so equal choices stay apart


@dataclass(frozen=True)
class QosSeries:
    """One flow's pkt_qos in use: a step series (``t`` since the first flow start, ``qos``), and the
    times the incumbent changed (``switches``)."""

    t: np.ndarray
    qos: np.ndarray
    switches: np.ndarray


def is_adaptive(rep: RepData) -> bool:
    """Did this repetition's sender adapt pkt_qos?"""
    snoop = rep.meta.get("snoop")
    return isinstance(snoop, dict) and snoop.get("sender_qos") == "adaptive"


def qos_series(rep: RepData) -> QosSeries | None:
    """The pkt_qos series of ``rep``'s flow from its logs (None: the flow logged no ``qos`` event)."""
    logs = load_rep(rep.rep_dir)
    ev = logs.events
    if ev.empty or "ev" not in ev:
        return None
    t_all = aligned_times(ev, logs.meta)
    starts = t_all[ev["ev"] == "flow_start"]
    t0 = float(starts.min()) if len(starts) else 0.0
    q = ev[ev["ev"] == "qos"]
    if q.empty:
        return None
    key = _flow_key(rep, logs)
    if key and "flow" in q:
        q = q[q["flow"].astype(str) == key]
    if q.empty:
        return None
    t = (t_all[q.index] - t0).to_numpy(float)
    epoch = float((rep.meta.get("snoop") or {}).get("qos_epoch_s", 1.0))
    ran = q["pkt_qos"].to_numpy(float)
    nxt = q["next_qos"].to_numpy(float)
    ts = np.concatenate([[t[0] - epoch], t])
    qs = np.concatenate([[ran[0]], nxt])
    switched = (q["decision"].astype(str) == "switched").to_numpy() if "decision" in q else np.zeros(len(q), bool)
    return QosSeries(ts, qs, t[switched])


def _flow_key(rep: RepData, logs: Any) -> str:
    """The logged id (``src:sport>dst:dport``) of ``rep``'s flow."""
    flows = rep_flows(logs)
    match = next((f for f in flows if f.label == rep.flow), flows[0] if flows else None)
    return match.key if match is not None else ""


def qos_over_time(groups: Sequence[VariantGroup], out_dir: Path, save: Any, new_fig: Any,
                  colors: Any) -> list[Path]:
    """Figure ``qos_time`` (see the module docstring); nothing when no variant adapts."""
    from plots.style import legend, title
    chosen: list[tuple[VariantGroup, RepData, QosSeries]] = []
    for g in groups:
        rep = g.representative()
        if rep is None or not is_adaptive(rep):
            continue
        s = qos_series(rep)
        if s is not None:
            chosen.append((g, rep, s))
    if not chosen:
        return []
    fig, (top, bottom) = new_fig(2)
    for i, ((g, rep, s), color) in enumerate(zip(chosen, colors(len(chosen)))):
        drawn = rep.digest.cwnd_drawn
        top.step(drawn.t, drawn.y, where="post", color=color, lw=0.8, label=f"{g.label} (rep {rep.repetition})")
        bottom.step(s.t, s.qos + OFFSET * i, where="post", color=color, lw=1.2)   # apart where they agree
        for x in s.switches:
            for ax in (top, bottom):
                ax.axvline(x, color=color, lw=0.8, ls="--")
    top.set_ylabel("congestion window (segments)")
    top.set_ylim(bottom=0)
    legend(top, fontsize="small")
    title(top, "Adaptive pkt_qos: cwnd and the setting in use", fontsize="medium")
    bottom.set_ylabel("pkt_qos in use" + (" (lines offset)" if len(chosen) > 1 else ""))
    bottom.set_xlabel("time since flow start (s)")
    bottom.set_ylim(-0.05, 1.05 + OFFSET * (len(chosen) - 1))
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    return save(fig, out_dir, "qos_time")

