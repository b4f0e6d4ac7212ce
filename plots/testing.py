"""Build synthetic run directories (docs/LOGS.md layout) for tests and examples.

Nothing here runs a network: it writes meta.json, experiment.yaml and JSONL node logs from
hand-written events.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import yaml

__all__ = ["FLOW", "FLOW_DA", "NODES", "ev", "write_experiment", "write_rep",
           "basic_flow_events", "reverse_flow_events"]

NODES = {"A": "10.2.1.1", "B": "10.2.1.2", "C": "10.2.1.3", "D": "10.2.1.4"}
FLOW = "10.2.1.1:5001>10.2.1.4:6001"
FLOW_DA = "10.2.1.4:5002>10.2.1.1:6002"   # the second flow of reverse_flow_events: D -> A


def ev(t: float, node: str, name: str, **fields: Any) -> dict[str, Any]:
    """One event dict ``{"t", "node", "ev", **fields}``."""
    return {"t": t, "node": node, "ev": name, **fields}


def write_experiment(run_dir: Path, variants: Iterable[str | dict[str, Any]],
                     **extra: Any) -> Path:
    """Write ``run_dir/experiment.yaml`` with ``variants`` (names or dicts) and extra keys."""
    run_dir.mkdir(parents=True, exist_ok=True)
    doc = {"name": run_dir.name,
           "variants": [v if isinstance(v, dict) else {"name": v} for v in variants], **extra}
    path = run_dir / "experiment.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def write_rep(run_dir: Path, variant: str, repetition: int, events: Iterable[dict[str, Any]],
              *, status: str = "ok", error: str | None = None, segments: int = 3,
              segment_size: int = 1000, clock_offsets: dict[str, float] | None = None,
              backend: str = "sim", seed: int | None = None, tail: dict[str, str] | None = None,
              flows: list[dict[str, Any]] | None = None, **meta_extra: Any) -> Path:
    """Write ``run_dir/<variant>/rep<repetition>/`` with meta.json and one log per node.

    Events go to ``<node>.log`` by their ``node`` (every node of NODES gets a file, possibly
    empty). ``tail`` maps a node to raw text appended to its log (e.g. a truncated line).
    """
    rep_dir = run_dir / variant / f"rep{repetition}"
    rep_dir.mkdir(parents=True, exist_ok=True)
    meta = {"variant": variant, "repetition": repetition,
            "seed": seed if seed is not None else 1000 + repetition, "backend": backend,
            "nodes": dict(NODES),
            "flows": flows if flows is not None else [
                {"sender": "A", "receiver": "D", "segments": segments,
                 "segment_size": segment_size, "variant": variant}],
            "clock_offsets": clock_offsets or {n: 0.0 for n in NODES},
            "status": status, "error": error, **meta_extra}
    (rep_dir / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    per_node: dict[str, list[str]] = {n: [] for n in NODES}
    for e in events:
        per_node.setdefault(e["node"], []).append(json.dumps(e))
    for node, lines in per_node.items():
        text = "".join(line + "\n" for line in lines) + (tail or {}).get(node, "")
        (rep_dir / f"{node}.log").write_text(text, encoding="utf-8")
    return rep_dir


def basic_flow_events(*, snoop: bool = True, finish: bool = True, losses: int = 1,
                      cwnds: Iterable[int] = (2000, 3000, 4000, 5000),
                      t_start: float = 1.0, t_end: float = 3.0) -> list[dict[str, Any]]:
    """A 3-segment flow A->B->C->D (segment_size 1000).

    Transmissions per packet: seq 0 -> 3; seq 1000 -> 6 (A send, B fwd, C drops it, B again
    (``local`` with ``snoop``, else ``fwd``), C fwd, then A's TCP retransmission and B fwd);
    seq 2000 -> 3.
    Sender cwnd values ``cwnds`` (mss 1000). ``losses`` dupack losses plus one RTO.
    With ``snoop``: cache events at B (1,2,3,2,0) and C (1,4,0), 2 hits at B.
    Drops: one ``loss`` at C, one ``queue`` at B, one ``malformed`` at D.
    """
    f = FLOW
    out = [ev(0.0, n, "node_start", address=a) for n, a in NODES.items()]
    out.append(ev(t_start, "A", "flow_start", flow=f, segments=3, segment_size=1000,
                  variant="v"))
    for i, c in enumerate(cwnds):
        out.append(ev(t_start + 0.1 * i, "A", "cwnd", cwnd=c, ssthresh=65535, mss=1000))
    # seq 0: three hops
    out += [ev(1.1, "A", "tx", flow=f, seq=0, len=1000, kind="send", hop=0),
            ev(1.2, "B", "tx", flow=f, seq=0, len=1000, kind="fwd", hop=1),
            ev(1.3, "C", "tx", flow=f, seq=0, len=1000, kind="fwd", hop=2)]
    # seq 1000: six transmissions in all
    out += [ev(1.1, "A", "tx", flow=f, seq=1000, len=1000, kind="send", hop=0),
            ev(1.2, "B", "tx", flow=f, seq=1000, len=1000, kind="fwd", hop=1),
            ev(1.3, "C", "drop", reason="loss", ptype="data", flow=f, seq=1000),
            ev(1.5, "B", "tx", flow=f, seq=1000, len=1000,
               kind="local" if snoop else "fwd", hop=1),
            ev(1.6, "C", "tx", flow=f, seq=1000, len=1000, kind="fwd", hop=2),
            ev(1.9, "A", "tx", flow=f, seq=1000, len=1000, kind="send", hop=0),
            ev(2.0, "B", "tx", flow=f, seq=1000, len=1000, kind="fwd", hop=1)]
    # seq 2000: three hops
    out += [ev(2.1, "A", "tx", flow=f, seq=2000, len=1000, kind="send", hop=0),
            ev(2.2, "B", "tx", flow=f, seq=2000, len=1000, kind="fwd", hop=1),
            ev(2.3, "C", "tx", flow=f, seq=2000, len=1000, kind="fwd", hop=2)]
    out += [ev(1.8 + 0.01 * i, "A", "loss", kind="dupack", seq=1000) for i in range(losses)]
    out += [ev(1.85, "A", "loss", kind="rto", seq=1000),
            ev(1.9, "A", "rtx", seq=1000, len=1000),
            ev(1.4, "B", "drop", reason="queue", ptype="ack"),
            ev(2.5, "D", "drop", reason="malformed"),
            ev(1.0, "B", "etx", nbr="C", forward=0.99, reverse=0.98, quality=1.03),
            ev(2.9, "D", "deliver", flow=f, bytes=3000)]
    if snoop:
        out += [ev(1.2 + 0.01 * i, "B", "cache", segments=s, bytes=1000 * s)
                for i, s in enumerate([1, 2, 3, 2, 0])]
        out += [ev(1.3 + 0.01 * i, "C", "cache", segments=s, bytes=1000 * s)
                for i, s in enumerate([1, 4, 0])]
        out += [ev(1.45, "B", "hit", flow=f, seq=1000), ev(1.47, "B", "hit", flow=f, seq=1000)]
    if finish:
        out += [ev(t_end - 0.1, "A", "flow_end", flow=f, bytes=3000, sha256="ab"),
                ev(t_end, "D", "flow_end", flow=f, bytes=3000, sha256="ab", ok=True)]
    out.sort(key=lambda e: e["t"])
    return out


def reverse_flow_events(t_start: float = 1.5, t_end: float = 2.5) -> list[dict[str, Any]]:
    """A second flow D->C->B->A of 2 segments (``FLOW_DA``), for two-flow runs together with
    :func:`basic_flow_events` (meta flows A->D then D->A).

    Transmissions per packet: seq 0 -> 3, seq 1000 -> 4 (C forwards it twice, the second a
    ``local`` retransmission). Sender D: cwnd 10, 20, 30 segments (mss 1000), two RTO losses
    (flow-less, as an old log), one hit at C. No cache events (the caches are per node).
    """
    f = FLOW_DA
    out = [ev(t_start, "D", "flow_start", flow=f, segments=2, segment_size=1000, variant="v")]
    out += [ev(t_start + 0.1 * i, "D", "cwnd", flow=f, cwnd=c, ssthresh=65535, mss=1000)
            for i, c in enumerate((10_000, 20_000, 30_000))]
    out += [ev(1.6, "D", "tx", flow=f, seq=0, len=1000, kind="send", hop=0),
            ev(1.7, "C", "tx", flow=f, seq=0, len=1000, kind="fwd", hop=1),
            ev(1.8, "B", "tx", flow=f, seq=0, len=1000, kind="fwd", hop=2),
            ev(1.6, "D", "tx", flow=f, seq=1000, len=1000, kind="send", hop=0),
            ev(1.7, "C", "tx", flow=f, seq=1000, len=1000, kind="fwd", hop=1),
            ev(1.9, "C", "tx", flow=f, seq=1000, len=1000, kind="local", hop=1),
            ev(2.0, "B", "tx", flow=f, seq=1000, len=1000, kind="fwd", hop=2),
            ev(1.85, "C", "hit", flow=f, seq=1000),
            ev(1.7, "D", "loss", kind="rto", seq=0),          # no flow field: D sends one flow
            ev(1.75, "D", "loss", kind="rto", seq=1000),
            ev(2.0, "A", "drop", reason="loss", ptype="ack", flow="10.2.1.1:6002>10.2.1.4:5002"),
            ev(t_end - 0.1, "D", "flow_end", flow=f, bytes=2000, sha256="cd"),
            ev(t_end, "A", "flow_end", flow=f, bytes=2000, sha256="cd", ok=True)]
    out.sort(key=lambda e: e["t"])
    return out
