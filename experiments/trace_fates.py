"""What the data met on each link (issue 41, item 1): a row per data transmission and directed link.

Every node logs a ``tx`` line per data segment it sends, forwards or resends from its cache (``flow``, ``seq``,
``hop``: docs/LOGS.md).  A transmission by A of a segment of flow F goes to A's next hop B toward F's
receiver (meta.json's routes, changed by A's ``route`` lines).  Its fate on the link A>B:

* B forwards it: B's ``tx`` of the same (flow, seq) at hop + 1, the first after A's and at most
  :data:`MAX_HOP_DELAY_S` later (a TCP retransmission of the same seq is matched to the latest copy A sent
  before B's): **heard**, with the one-way delay B's time - A's time (the sim and the namespaces share one
  clock; elsewhere the times are aligned by meta.json's ``clock_offsets``);
* B is F's receiver: B's ``drop`` line of reason ``loss`` for (flow, seq) marks it **lost**; else heard
  (the delay is not known: the receiver logs no line per segment);
* otherwise **lost**.

Two things make a fate unknown, and such a transmission gets no row (the replay falls back to the probes
there): a ``drop`` line of reason ``queue`` at A (A's own queue dropped it: not the link's doing; matched to
the latest copy A sent before it), and a second where a node's drop lines ran out (a ``count`` line: its
drops beyond the 20 a second that get a line are not named), which hides which of A's copies its queue
dropped (reason ``queue`` at A) or which the receiver lost (reason ``loss`` at a receiver B), from the last
drop that got its line in that second to the second's end.

The rows have the trace's columns (experiments/trace.py) with ``source`` ``data``, ``t_s`` the send time
after the flows' start, ``dt_s`` 0, ``sent`` 1, ``heard`` 0 or 1, ``delivery`` = ``heard``, and ``delay_s``.
"""
from __future__ import annotations

import bisect
import math
from collections import defaultdict
from typing import Any

import pandas as pd

from plots.logs import RepLogs, aligned_times

#: a forwarder's copy more than this after the sender's is not the same transmission (a queue of 50
#: packets at 1 Mbit/s drains in 0.6 s; the medium's retries add milliseconds)
MAX_HOP_DELAY_S = 5.0

Key = tuple[str, int, int]      # (flow, seq, hop index of the receiving end's transmission; -1 unknown)


def _hop(v: Any) -> int:
    return -1 if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)


class _Routes:
    """Each node's next hop toward each destination (names) over time: meta.json's routes, then its
    ``route`` lines (addresses) in time order."""

    def __init__(self, meta: dict[str, Any], ev: pd.DataFrame, name_of: dict[str, str]) -> None:
        start = ((meta.get("routing") or {}).get("routes") or {})
        self.changes: dict[tuple[str, str], tuple[list[float], list[str | None]]] = {}
        for node, table in start.items():
            for dst, nxt in (table or {}).items():
                self.changes[(str(node), str(dst))] = ([-math.inf], [str(nxt)])
        if "dst" in ev:
            for r in ev[ev["ev"] == "route"].sort_values("ta", kind="stable").itertuples():
                times, hops = self.changes.setdefault((str(r.node), name_of.get(str(r.dst), str(r.dst))), ([], []))
                new = getattr(r, "new", None)
                times.append(float(r.ta))
                hops.append(None if new is None or (isinstance(new, float) and math.isnan(new))
                            else name_of.get(str(new), str(new)))

    def next_hop(self, node: str, dst: str, t: float) -> str | None:
        ch = self.changes.get((node, dst))
        if ch is None:
            return None
        i = bisect.bisect_right(ch[0], t) - 1
        return ch[1][i] if i >= 0 else None


def _blind_windows(ev: pd.DataFrame, reason: str) -> dict[str, list[tuple[float, float]]]:
    """Per node, the stretches in which its ``drop`` lines of ``reason`` ran out: a ``count`` line covers the
    second from its ``since``, whose first 20 drops got a line each, so only what came after the last of
    those lines is unnamed."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    if "count" not in ev or "since" not in ev:
        return out
    lines = ev[(ev["ev"] == "drop") & (ev["reason"] == reason)]
    for node, g in lines.groupby("node"):
        named = sorted(g.loc[g["count"].isna(), "ta"].astype(float))
        for r in g[g["count"].notna()].itertuples():
            since = float(r.since) - (float(r.t) - float(r.ta))        # to the aligned clock, as the line's t
            i = bisect.bisect_left(named, since + 1.0) - 1
            start = named[i] if i >= 0 and named[i] >= since else since
            out[str(node)].append((start, since + 1.0))
    return out


def _inside(windows: list[tuple[float, float]], t: float) -> bool:
    return any(a <= t < b for a, b in windows)


def _latest_before(times: list[float], used: list[bool], t: float) -> int | None:
    """The index of the latest time <= ``t`` not yet used, within MAX_HOP_DELAY_S."""
    i = bisect.bisect_right(times, t) - 1
    while i >= 0 and t - times[i] <= MAX_HOP_DELAY_S:
        if not used[i]:
            return i
        i -= 1
    return None


def rep_fates(rep: RepLogs, variant: str, repetition: int, t0: float) -> list[dict[str, Any]]:
    """The fate rows of one repetition (module docstring); ``t0``: the flows' start on the aligned clock."""
    ev = rep.events
    if ev.empty or "flow" not in ev or "seq" not in ev:
        return []
    ev = ev.assign(ta=aligned_times(ev, rep.meta))
    nodes = {str(n): str(a) for n, a in (rep.meta.get("nodes") or {}).items()}
    name_of = {a: n for n, a in nodes.items()}
    routes = _Routes(rep.meta, ev, name_of)
    tx = ev[(ev["ev"] == "tx") & ev["flow"].notna() & ev["seq"].notna()].sort_values("ta", kind="stable")
    data = ev["len"].fillna(0) > 0 if "len" in ev else pd.Series(False, index=ev.index)
    drops = ev[(ev["ev"] == "drop") & ev["flow"].notna() & ev["seq"].notna() & data]
    # what each node sent: per (node, flow, seq, hop + 1) the times, in order
    sent: dict[tuple[str, Key], list[float]] = defaultdict(list)
    for r in tx.itertuples():
        k = (str(r.node), (str(r.flow), int(r.seq), _hop(r.hop) + 1 if _hop(r.hop) >= 0 else -1))
        sent[k].append(float(r.ta))
    delay: dict[tuple[str, Key], list[float]] = {k: [math.nan] * len(v) for k, v in sent.items()}
    fate: dict[tuple[str, Key], list[int | None]] = {k: [0] * len(v) for k, v in sent.items()}
    used = {k: [False] * len(v) for k, v in sent.items()}
    senders: dict[Key, list[str]] = defaultdict(list)          # who sent each (flow, seq, hop + 1)
    by_segment: dict[tuple[str, str, int], list[tuple[str, Key]]] = defaultdict(list)
    for k in sent:
        senders[k[1]].append(k[0])
        by_segment[(k[0], k[1][0], k[1][1])].append(k)

    def receiver(flow: str) -> str | None:
        """The receiver's name of a flow written "src:sport>dst:dport"."""
        return name_of.get(flow.partition(">")[2].rpartition(":")[0])

    # A's own queue drops: no fate on the link
    for r in drops[drops["reason"] == "queue"].itertuples():
        for k in by_segment.get((str(r.node), str(r.flow), int(r.seq)), []):
            i = _latest_before(sent[k], used[k], float(r.ta))
            if i is not None:
                used[k][i] = True
                fate[k][i] = None
                break
    # heard by a forwarder: its transmission at the next hop index
    for r in (tx[tx["kind"] == "fwd"].itertuples() if "kind" in tx else ()):
        key: Key = (str(r.flow), int(r.seq), _hop(r.hop))
        dest = receiver(key[0])
        for node in senders.get(key, []):
            k = (node, key)
            if node == str(r.node) or dest is None or routes.next_hop(node, dest, float(r.ta)) != str(r.node):
                continue
            i = _latest_before(sent[k], used[k], float(r.ta))
            if i is not None:
                used[k][i] = True
                fate[k][i] = 1
                delay[k][i] = float(r.ta) - sent[k][i]
                break
    # at a receiver: its loss lines name what it lost; the rest it heard
    lost_at: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for r in drops[drops["reason"] == "loss"].itertuples():
        lost_at[(str(r.node), str(r.flow), int(r.seq))].append(float(r.ta))
    blind_queue, blind_loss = _blind_windows(ev, "queue"), _blind_windows(ev, "loss")
    out: list[dict[str, Any]] = []
    for k, times in sent.items():
        node, (flow, seq, _h) = k
        dest = receiver(flow)
        if dest is None:
            continue
        for i, t in enumerate(times):
            known = fate[k][i]
            nxt = routes.next_hop(node, dest, t)
            if known is None or nxt is None:
                continue
            got: int = known
            if nxt == dest and not used[k][i]:
                lost_times = lost_at.get((nxt, flow, seq), [])
                j = bisect.bisect_left(lost_times, t)
                got = 0 if j < len(lost_times) and lost_times[j] - t <= MAX_HOP_DELAY_S else 1
                if j < len(lost_times) and got == 0:
                    lost_times.pop(j)
                if _inside(blind_loss.get(nxt, []), t):
                    continue
            if got == 0 and _inside(blind_queue.get(node, []), t):
                continue
            out.append({"variant": variant, "repetition": repetition, "link": f"{node}>{nxt}",
                        "t_s": round(t - t0, 6), "dt_s": 0.0, "sent": 1, "heard": int(got),
                        "delivery": float(got), "source": "data",
                        "delay_s": round(delay[k][i], 6) if got else math.nan})
    out.sort(key=lambda r: (r["link"], r["t_s"]))
    return out
