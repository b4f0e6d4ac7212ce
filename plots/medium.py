"""Figures and a table of the radio medium (docs/MEDIUM.md), from the logs only.

A run whose experiment.yaml sets ``medium.model`` other than ``none`` gets, in its report:
per-node airtime share, link-layer retries and drops, and throughput vs hops.  The numbers come
from each node's ``mac`` event (written once at the end of a repetition), its ``drop`` events
with reason ``mac_retry``, and summary.csv's goodput.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from plots.style import colors, figure, legend, new_figure, title, variant_ticks
from plots.style import save as _save   # one name per module, replaced by tests that only collect figures
from plots.logs import PARQUET, iter_reps, load_experiment
from plots.numbers import plain

__all__ = ["medium_variants", "mac_frame", "MediumRuns", "draw_medium", "medium_figures", "medium_section",
           "medium_table", "FIGURE_PREFIX"]

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
            if '"mac"' in line:   # a cheap filter (compact or spaced JSON); the event name decides
                e = json.loads(line)
                if e.get("ev") == "mac":
                    out.append(e)
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


def _plain_sweep_value(value: Any) -> Any:
    """A factorial sweep's ``{field: value}`` as the text of its values (one line per combination)."""
    return ", ".join(map(str, value.values())) if isinstance(value, dict) else value


@dataclass
class MediumRuns:
    """The medium data of one run, or of several runs drawn together (variants named ``label: variant``)."""

    mac: pd.DataFrame                  # mac_frame rows, ``variant`` labelled
    order: list[str]                   # labelled variants in the runs' order
    summary: pd.DataFrame              # completed summary rows of the medium variants, ``variant`` labelled
    hops: dict[str, int | None]        # labelled variant -> hops of its first flow
    sweep_field: str | None            # the swept field (None: no sweep)
    sweep_values: dict[str, Any]       # labelled variant -> its swept value

    @classmethod
    def of(cls, run_dir: Path, summary: pd.DataFrame | None = None) -> "MediumRuns | None":
        """The medium data of one run (None if no variant ran on a medium).  ``summary``: the run's rows
        (default: its summary.csv, if any)."""
        run_dir = Path(run_dir)
        experiment = load_experiment(run_dir)
        configs = medium_variants(experiment)
        if not configs:
            return None
        name = str
        mac = mac_frame(run_dir)
        mac = mac[mac["variant"].isin(list(configs))]
        if summary is None:
            csv = run_dir / "summary.csv"
            summary = pd.read_csv(csv) if csv.is_file() else pd.DataFrame(columns=["variant", "goodput_mbps"])
        s = summary[summary["status"] == "ok"] if "status" in summary else summary
        s = s[s["variant"].isin(list(configs))]
        order = [name(str(v["name"])) for v in experiment.get("variants") or []
                 if isinstance(v, dict) and str(v.get("name")) in configs]
        svals = {name(str(v.get("name"))): _plain_sweep_value(v.get("sweep_value"))
                 for v in experiment.get("variants") or [] if isinstance(v, dict)}
        sweep = experiment.get("sweep") or {}
        field = (" x ".join(map(str, sweep["factors"])) if isinstance(sweep.get("factors"), dict)
                 else str(sweep.get("field")) if sweep else None)
        return cls(mac, order, s[["variant", "goodput_mbps"]].copy(),
                   {name(v): _hops(cfg) for v, cfg in configs.items()}, field, svals)

    @classmethod
    def combine(cls, parts: list["MediumRuns"]) -> "MediumRuns":
        """Several runs' data in one (their variants are labelled apart); the first run's swept field."""
        return cls(pd.concat([p.mac for p in parts], ignore_index=True),
                   [v for p in parts for v in p.order],
                   pd.concat([p.summary for p in parts], ignore_index=True),
                   {k: v for p in parts for k, v in p.hops.items()},
                   next((p.sweep_field for p in parts if p.sweep_field), None),
                   {k: v for p in parts for k, v in p.sweep_values.items()})

    def labelled(self, label: str) -> "MediumRuns":
        """The same data with every variant named ``label: variant`` (runs drawn together)."""
        if not label:
            return self
        name = {v: f"{label}: {v}" for v in {*self.order, *self.hops, *self.sweep_values,
                                              *self.mac["variant"], *self.summary["variant"]}}
        return MediumRuns(self.mac.assign(variant=self.mac["variant"].map(name)), [name[v] for v in self.order],
                          self.summary.assign(variant=self.summary["variant"].map(name)),
                          {name[k]: v for k, v in self.hops.items()}, self.sweep_field,
                          {name[k]: v for k, v in self.sweep_values.items()})

    def counters(self) -> pd.DataFrame:
        """One row per (variant, repetition): the MAC counters summed over nodes."""
        return self.mac.groupby(["variant", "repetition"], sort=False)[list(MAC_FIELDS[:-1])].sum()


def airtime_figure(mac: pd.DataFrame, order: list[str], out_dir: Path) -> list[Path]:
    """Heat map: share of the run's time each node's exchanges held the air (mean over repetitions)."""
    share = mac.groupby(["variant", "node"])["airtime_share"].mean().unstack("node")
    share = share.reindex([v for v in order if v in share.index])
    nodes = sorted(share.columns)
    share = share[nodes]
    fig, ax = new_figure(max(4.8, 2.4 + 0.6 * len(nodes)), max(2.6, 1.6 + 0.35 * len(share)))
    values = share.to_numpy(dtype=float)
    im = ax.imshow(values, aspect="auto", cmap="viridis", vmin=0)
    ax.set_xticks(range(len(nodes)), nodes)
    ax.set_yticks(range(len(share)), share.index)
    top = np.nanmax(values) if np.isfinite(values).any() else 1.0
    for i in range(len(share)):
        for j in range(len(nodes)):
            v = share.iat[i, j]
            if not np.isnan(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize="small",
                        color="w" if v < 0.5 * top else "k")
    fig.colorbar(im, ax=ax, label="airtime share")
    ax.set_xlabel("node")
    title(ax, "Airtime share per node\n(data + SIFS + ACK per attempt / run time)", fontsize="medium")
    return _save(fig, out_dir, f"{FIGURE_PREFIX}airtime")


RETRY_METRICS = ["retries", "collisions", "hidden", "mac_drops", "queue_drops"]


def retries_figure(mac: pd.DataFrame, order: list[str], out_dir: Path) -> list[Path]:
    """Per variant: link-layer retries, collisions (of which hidden), retry-limit and queue drops,
    summed over nodes, mean over repetitions.

    The counts span from 0 (no hidden station, no drop) to thousands of retries.  A log axis cannot
    show 0 (the old figure drew count + 0.5, a number nobody counted); a linear axis hides a few drops
    next to thousands of retries.  So a symlog axis, in every run (the same figure reads the same way
    across runs): linear from 0 to 1, logarithmic above; 0 stays 0 and 1 stays 1."""
    per_rep = mac.groupby(["variant", "repetition"])[RETRY_METRICS].sum()
    mean = per_rep.groupby("variant").mean()
    mean = mean.reindex([v for v in order if v in mean.index])
    fig, ax = new_figure(min(14.0, max(6.4, 0.45 * len(mean) * len(RETRY_METRICS) + 2.0)))
    x = np.arange(len(mean))
    w = 0.8 / len(RETRY_METRICS)
    for k, (m, color) in enumerate(zip(RETRY_METRICS, colors(len(RETRY_METRICS)))):
        ax.bar(x + (k - (len(RETRY_METRICS) - 1) / 2) * w, mean[m].to_numpy(dtype=float), w, label=m,
               color=color, alpha=0.85)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("frames per repetition (symlog: linear to 1, log above)")
    variant_ticks(ax, x, list(mean.index))
    ax.grid(axis="y", alpha=0.3)
    title(ax, "Link-layer retries, collisions and drops\n(all nodes, mean over repetitions)", fontsize="medium")
    legend(ax)
    return _save(fig, out_dir, f"{FIGURE_PREFIX}retries")


def throughput_figure(data: MediumRuns, out_dir: Path) -> list[Path]:
    """Goodput vs hops (mean over repetitions): one line per swept value when the run sweeps a field, else
    one point per variant; for a sweep over several chain lengths also goodput vs the swept value with one
    line per hop count.  Not drawn ([]) unless the variants cover at least two hop counts: one x value has
    nothing to show against hops (the sweep figures show a sweep at one hop count)."""
    s = data.summary.copy()
    s["hops"] = [data.hops.get(v) for v in s["variant"]]
    s["sweep"] = [data.sweep_values.get(v) for v in s["variant"]]
    s = s.dropna(subset=["hops", "goodput_mbps"])
    if s.empty or s["hops"].nunique() < 2:
        return []
    field = data.sweep_field
    g = s.groupby(["sweep", "hops"], dropna=False)["goodput_mbps"].mean().reset_index()
    panels = 2 if field and g["sweep"].nunique() >= 2 else 1
    fig = figure(6.4 * panels, 4.2)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    ax = axes[0]
    if field:   # one line per swept value
        for sv, part in g.groupby("sweep", dropna=False):
            part = part.sort_values("hops")
            ax.plot(part["hops"], part["goodput_mbps"], marker="o", label=f"{field}={sv}")
    else:       # one point per variant at its hop count
        per_variant = s.groupby("variant", sort=False).agg(hops=("hops", "first"), goodput=("goodput_mbps", "mean"))
        for (v, row), color in zip(per_variant.iterrows(), colors(len(per_variant))):
            ax.plot([row["hops"]], [row["goodput"]], marker="o", linestyle="", label=str(v), color=color)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("hops")
    ax.set_ylabel("goodput (Mbit/s, mean over repetitions)")
    title(ax, "Throughput vs hops")
    ax.grid(alpha=0.3)
    legend(ax, fontsize="small")
    if panels == 2:
        ax = axes[1]
        for h, part in g.groupby("hops"):
            part = part.sort_values("sweep")
            ax.plot(part["sweep"], part["goodput_mbps"], marker="o", label=f"{h:g} hops")
        if all(isinstance(v, (int, float)) and v > 0 for v in g["sweep"]):
            ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_xlabel(str(field))
        ax.set_ylabel("goodput (Mbit/s)")
        title(ax, f"Goodput vs {field}")
        ax.grid(alpha=0.3)
        legend(ax, fontsize="small")
    return _save(fig, out_dir, f"{FIGURE_PREFIX}throughput_hops")


def draw_medium(data: MediumRuns | None, out_dir: Path) -> dict[str, list[Path]]:
    """Draw the medium figures of ``data`` into ``out_dir``: {figure key (``medium_*``): paths}."""
    if data is None:
        return {}
    drawn = []
    if not data.mac.empty:
        drawn += [airtime_figure(data.mac, data.order, out_dir), retries_figure(data.mac, data.order, out_dir)]
    drawn.append(throughput_figure(data, out_dir))
    return {paths[0].stem: paths for paths in drawn if paths}


def medium_figures(run_dir: Path, out_dir: Path | None = None,
                   summary: pd.DataFrame | None = None) -> dict[str, list[Path]]:
    """Draw the medium figures of a run ({} if no variant ran on a medium)."""
    return draw_medium(MediumRuns.of(Path(run_dir), summary=summary), out_dir or Path(run_dir) / "figures")


CAPTIONS = {f"{FIGURE_PREFIX}airtime": "Medium: airtime share per node",
            f"{FIGURE_PREFIX}retries": "Medium: link-layer retries, collisions and drops",
            f"{FIGURE_PREFIX}throughput_hops": "Medium: throughput vs hops"}


def medium_table(data: MediumRuns) -> list[str]:
    """Per variant, summed over nodes, mean over repetitions: the MAC counters."""
    if data.mac.empty:
        return []
    mean = data.counters().groupby("variant", sort=False).mean()
    mean = mean.reindex([v for v in data.order if v in mean.index])
    cols = list(MAC_FIELDS[:-1])
    lines = ["Per variant, summed over nodes, mean over repetitions:", "",
             "| variant | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for v, row in mean.iterrows():
        lines.append(f"| {v} | " + " | ".join(plain(row[c]) for c in cols) + " |")
    return lines + [""]


def medium_section(base: Path, figs: dict[str, list[Path]] | None = None,
                   data: MediumRuns | None = None) -> list[str]:
    """The report's medium section (figures and a per-variant table); [] when no medium was present.
    ``base``: the report's directory (a run directory, whose medium data is read unless ``data`` is
    given); ``figs``: the figures :func:`draw_medium` drew already (drawn into ``base/figures`` when None)."""
    base = Path(base)
    data = data if data is not None else MediumRuns.of(base)
    if data is None:
        return []
    figs = draw_medium(data, base / "figures") if figs is None else figs
    if not figs and data.mac.empty:
        return []
    lines = ["## Radio medium", ""]
    for key, paths in figs.items():
        png = next((p for p in paths if p.suffix == ".png"), paths[0])
        rel = png.resolve().relative_to(base.resolve()).as_posix()
        lines += [f"### {CAPTIONS[key]}", "", f"![{CAPTIONS[key]}]({rel})", ""]
    return lines + medium_table(data)
