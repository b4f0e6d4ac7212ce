"""Figures and a table of the radio medium (docs/MEDIUM.md), from the logs only.

A run whose experiment.yaml sets ``medium.model`` other than ``none`` gets, in its report:
per-node airtime share, link-layer retries and drops, and throughput vs hops.  The numbers come
from each node's ``mac`` event (written once at the end of a repetition), its ``drop`` events
with reason ``mac_retry``, and summary.csv's goodput.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import networkx as nx  # noqa: E402
import pandas as pd  # noqa: E402

from plots.logs import PARQUET, iter_reps, load_experiment  # noqa: E402

__all__ = ["medium_variants", "mac_frame", "medium_figures", "medium_section", "FIGURE_PREFIX"]

FIGURE_PREFIX = "medium_"   # the file name (and figure key) of every figure drawn here starts so

MAC_FIELDS = ("frames", "attempts", "retries", "collisions", "hidden", "ack_lost", "mac_drops", "queue_drops",
              "airtime_ns")


def medium_variants(experiment: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """variant -> its resolved config, for the variants that ran on a medium."""
    out = {}
    for v in experiment.get("variants") or []:
        cfg = v.get("config") if isinstance(v, dict) else None
        if isinstance(cfg, dict) and (cfg.get("medium") or {}).get("model", "none") != "none":
            out[str(v["name"])] = cfg
    return out


def _mac_lines(path: Path) -> list[dict[str, Any]]:
    """The node's ``mac`` events (only those lines are parsed)."""
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if '"ev":"mac"' in line:
                out.append(json.loads(line))
    return out


def _mac_events(rep_dir: Path) -> list[tuple[dict[str, Any], str]]:
    """The repetition's ``mac`` events with the node its file names: from the JSON Lines logs, and
    from ``events.parquet`` once compacted (only those rows are read; a field the event did not
    carry is left out, as in its JSON line)."""
    out = [(e, log.stem) for log in sorted(rep_dir.glob("*.log")) for e in _mac_lines(log)]
    compacted = rep_dir / PARQUET
    if compacted.is_file():
        import pyarrow.parquet as pq
        try:
            table = pq.read_table(compacted, filters=[("ev", "==", "mac")])
        except (OSError, ValueError) as exc:
            raise ValueError(f"{compacted}: not readable as the repetition's events ({exc})") from None
        for rec in table.to_pylist():
            e = {k: v for k, v in rec.items() if v is not None and v == v}   # NaN: not carried
            out.append((e, str(e.get("node", ""))))
    return out


def mac_frame(run_dir: Path) -> pd.DataFrame:
    """One row per (variant, repetition, node) with the node's MAC counters, ``end_s`` (how long the
    medium ran: ``elapsed_s``) and ``airtime_share`` (airtime / end_s)."""
    rows = []
    for variant, rep, rep_dir in iter_reps(Path(run_dir)):
        for e, file_node in _mac_events(rep_dir):
            node = e.get("station") or e.get("node", file_node)   # medium.log (local backend): one per station
            row = {"variant": variant, "repetition": rep, "node": node, "end_s": e.get("elapsed_s", e["t"])}
            row.update({k: e.get(k, 0) for k in MAC_FIELDS})
            rows.append(row)
    frame = pd.DataFrame(rows, columns=["variant", "repetition", "node", "end_s", *MAC_FIELDS])
    frame["airtime_share"] = frame["airtime_ns"] / 1e9 / frame["end_s"].where(frame["end_s"] > 0)
    return frame


def _hops(cfg: dict[str, Any]) -> int | None:
    """Hops of the first flow's shortest path over the graph (the chain when only a chain is given), None if unknown."""
    topo = cfg.get("topology") or {}
    nodes = topo.get("nodes") or topo.get("chain") or []
    links = topo.get("links") or list(zip(nodes, nodes[1:]))
    flows = cfg.get("flows") or []
    if not flows or flows[0].get("sender") not in nodes or flows[0].get("receiver") not in nodes:
        return None
    g = nx.Graph(list(map(tuple, links)))
    try:
        return int(nx.shortest_path_length(g, flows[0]["sender"], flows[0]["receiver"]))
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return None


def _save(fig: Any, out_dir: Path, name: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def airtime_figure(mac: pd.DataFrame, order: list[str], out_dir: Path) -> Path:
    """Heat map: share of the run's time each node's exchanges held the air (mean over repetitions)."""
    share = mac.groupby(["variant", "node"])["airtime_share"].mean().unstack("node")
    share = share.reindex([v for v in order if v in share.index])
    nodes = sorted(share.columns)
    share = share[nodes]
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(nodes), 1.2 + 0.32 * len(share)))
    im = ax.imshow(share.to_numpy(dtype=float), aspect="auto", cmap="viridis", vmin=0)
    ax.set_xticks(range(len(nodes)), nodes)
    ax.set_yticks(range(len(share)), share.index)
    for i in range(len(share)):
        for j in range(len(nodes)):
            v = share.iat[i, j]
            if not np.isnan(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="w" if v < 0.5 * np.nanmax(share.to_numpy()) else "k")
    fig.colorbar(im, ax=ax, label="airtime share")
    ax.set_title("Airtime share per node (data + SIFS + ACK per attempt / run time)")
    return _save(fig, out_dir, "medium_airtime")


def retries_figure(mac: pd.DataFrame, order: list[str], out_dir: Path) -> Path:
    """Per variant: link-layer retries, collisions (of which hidden), retry-limit and queue drops,
    summed over nodes, mean over repetitions."""
    metrics = ["retries", "collisions", "hidden", "mac_drops", "queue_drops"]
    per_rep = mac.groupby(["variant", "repetition"])[metrics].sum()
    mean = per_rep.groupby("variant").mean()
    mean = mean.reindex([v for v in order if v in mean.index])
    fig, ax = plt.subplots(figsize=(max(6.4, 0.5 * len(mean) * len(metrics) / 2), 4.2))
    x = np.arange(len(mean))
    w = 0.8 / len(metrics)
    for k, m in enumerate(metrics):
        ax.bar(x + (k - (len(metrics) - 1) / 2) * w, mean[m].to_numpy(dtype=float) + 0.5, w, label=m)
    ax.set_yscale("log")
    ax.set_xticks(x, mean.index, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("frames per repetition (+0.5, log scale)")
    ax.set_title("Link-layer retries, collisions and drops (all nodes)")
    ax.legend(fontsize=7)
    return _save(fig, out_dir, "medium_retries")


def throughput_figure(run_dir: Path, configs: dict[str, dict[str, Any]], experiment: dict[str, Any],
                      out_dir: Path) -> Path | None:
    """Goodput vs hops (mean over repetitions): one line per swept value when the run sweeps a field, else
    one point per variant; for a sweep over several chain lengths also goodput vs the swept value with one
    line per hop count."""
    summary = run_dir / "summary.csv"
    if not summary.is_file():
        return None
    s = pd.read_csv(summary)
    s = s[s["status"] == "ok"] if "status" in s else s
    svals = {str(v.get("name")): v.get("sweep_value") for v in experiment.get("variants") or [] if isinstance(v, dict)}
    s = s[s["variant"].isin(list(configs))].copy()
    s["hops"] = [_hops(configs[v]) for v in s["variant"]]
    s["sweep"] = [svals.get(v) for v in s["variant"]]
    if s.empty:
        return None
    sweep = experiment.get("sweep") or {}
    g = s.groupby(["sweep", "hops"], dropna=False)["goodput_mbps"].mean().reset_index()
    panels = 2 if sweep and g["hops"].nunique() >= 2 else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.4 * panels, 4.2), squeeze=False)
    ax = axes[0][0]
    if sweep:   # one line per swept value
        for sv, part in g.groupby("sweep", dropna=False):
            part = part.sort_values("hops")
            ax.plot(part["hops"], part["goodput_mbps"], marker="o", label=f"{sweep.get('field', '')}={sv}")
    else:       # one point per variant at its hop count
        per_variant = s.groupby("variant", sort=False).agg(hops=("hops", "first"), goodput=("goodput_mbps", "mean"))
        for v, row in per_variant.iterrows():
            ax.plot([row["hops"]], [row["goodput"]], marker="o", linestyle="", label=str(v))
    ax.set_xlabel("hops")
    ax.set_ylabel("goodput (Mbit/s, mean over repetitions)")
    ax.set_title("Throughput vs hops")
    ax.legend(fontsize=7)
    if panels == 2:
        ax = axes[0][1]
        for h, part in g.groupby("hops"):
            part = part.sort_values("sweep")
            ax.plot(part["sweep"], part["goodput_mbps"], marker="o", label=f"{h} hops")
        if all(isinstance(v, (int, float)) and v > 0 for v in g["sweep"]):
            ax.set_xscale("log", base=2)
        ax.set_xlabel(str(sweep.get("field")))
        ax.set_ylabel("goodput (Mbit/s)")
        ax.set_title(f"Goodput vs {sweep.get('field')}")
        ax.legend(fontsize=7)
    return _save(fig, out_dir, "medium_throughput_hops")


def medium_figures(run_dir: Path, out_dir: Path | None = None) -> dict[str, Path]:
    """Draw the medium figures of a run ({} if no variant ran on a medium)."""
    run_dir = Path(run_dir)
    experiment = load_experiment(run_dir)
    configs = medium_variants(experiment)
    if not configs:
        return {}
    out_dir = out_dir or run_dir / "figures"
    mac = mac_frame(run_dir)
    mac = mac[mac["variant"].isin(list(configs))]
    order = [str(v["name"]) for v in experiment.get("variants") or [] if isinstance(v, dict)]
    figs: dict[str, Path] = {}
    if not mac.empty:
        figs["airtime"] = airtime_figure(mac, order, out_dir)
        figs["retries"] = retries_figure(mac, order, out_dir)
    tp = throughput_figure(run_dir, configs, experiment, out_dir)
    if tp is not None:
        figs["throughput_hops"] = tp
    return figs


CAPTIONS = {"airtime": "Medium: airtime share per node",
            "retries": "Medium: link-layer retries, collisions and drops",
            "throughput_hops": "Medium: throughput vs hops"}


def medium_section(run_dir: Path, figs: dict[str, Path] | None = None) -> list[str]:
    """The report's medium section (figures and a per-variant table); [] when no medium was present.
    ``figs``: the figures :func:`medium_figures` drew already (drawn here when None)."""
    run_dir = Path(run_dir)
    figs = medium_figures(run_dir) if figs is None else figs
    if not figs:
        return []
    lines = ["## Radio medium", ""]
    for key, path in figs.items():
        rel = path.relative_to(run_dir).as_posix()
        lines += [f"### {CAPTIONS[key]}", "", f"![{CAPTIONS[key]}]({rel})", ""]
    mac = mac_frame(run_dir)
    if not mac.empty:
        per_rep = mac.groupby(["variant", "repetition"])[list(MAC_FIELDS[:-1])].sum()
        mean = per_rep.groupby("variant").mean()
        order = [str(v["name"]) for v in load_experiment(run_dir).get("variants") or [] if isinstance(v, dict)]
        mean = mean.reindex([v for v in order if v in mean.index])
        lines += ["Per variant, summed over nodes, mean over repetitions:", "",
                  "| variant | " + " | ".join(MAC_FIELDS[:-1]) + " |", "|---|" + "---:|" * (len(MAC_FIELDS) - 1)]
        for v, row in mean.iterrows():
            lines.append(f"| {v} | " + " | ".join(f"{row[c]:.0f}" for c in MAC_FIELDS[:-1]) + " |")
        lines.append("")
    return lines
