"""Per-run plotting data: each rep is loaded once, reduced to its summary row and the few
series the figures need (cwnd, transmissions per packet, snoop cache size), then dropped."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from plots.flows import FlowInfo, flow_events, rep_flows
from plots.analysis import load
from plots.logs import RepLogs, aligned_times
from plots.summary import (SUMMARY_COLUMNS, FlowRoles, flow_roles, read_summary, rep_rows,
                           sender_cwnd_segments, summary_frame, tx_counts, write_summary_rows)

__all__ = ["RepData", "VariantGroup", "RunData", "load_run", "sweep_spec", "sweep_value_for"]


@dataclass
class RepData:
    """What the figures and the report need from one (variant, repetition, flow).

    ``row`` is the flow's summary row; ``cwnd`` and ``tx_counts`` are the flow's; ``cache``
    (per node) belongs to the whole repetition and is shared by its flows.
    """

    variant: str
    repetition: int
    rep_dir: Path
    meta: dict[str, Any]
    row: dict[str, Any]
    bad_lines: int
    bad_lines_by_node: dict[str, int]
    cwnd: pd.DataFrame          # t (s since flow start), cwnd_seg
    tx_counts: np.ndarray       # transmissions per segment, in (flow, seq) order
    cache: dict[str, pd.DataFrame] = field(default_factory=dict)  # node -> t, segments
    sweep_value: Any = None
    flow: str = ""
    n_flows: int = 1

    @property
    def status(self) -> str:
        """``failed`` if meta or the summary row says so, else the summary row's status."""
        if self.meta.get("status") == "failed":
            return "failed"
        return str(self.row.get("status") or "ok")

    @property
    def failed(self) -> bool:
        return self.status == "failed"


@dataclass
class VariantGroup:
    """One line/bar in a figure: a variant of a run, or one flow of it when the run has
    several flows (``label`` is the legend text)."""

    label: str
    variant: str
    reps: list[RepData]
    flow: str = ""

    @property
    def usable(self) -> list[RepData]:
        """Reps that go into figures: every rep whose status is not ``failed``."""
        return [r for r in self.reps if not r.failed]

    def representative(self) -> RepData | None:
        """First completed (status ok) rep, else the first usable one."""
        usable = self.usable
        ok = [r for r in usable if r.status == "ok"]
        return (ok or usable or [None])[0]


@dataclass
class RunData:
    """A run directory reduced for plotting."""

    run_dir: Path
    experiment: dict[str, Any]
    reps: list[RepData]
    summary: pd.DataFrame
    sweep: tuple[str, list[Any]] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.run_dir.name

    @property
    def multi_flow(self) -> bool:
        """True when some repetition has several flows (figures then draw one line per flow)."""
        return any(r.n_flows > 1 for r in self.reps)

    @property
    def backend(self) -> str:
        """The backend of experiment.yaml, else of the first rep's meta.json ("" if unknown)."""
        found = self.experiment.get("backend") or next(
            (r.meta.get("backend") for r in self.reps if r.meta.get("backend")), "")
        return str(found or "")

    def variants(self) -> list[str]:
        """Variant names in iter_reps order."""
        return list(dict.fromkeys(r.variant for r in self.reps))

    def flows(self) -> list[str]:
        """Flow labels in order of first appearance."""
        return list(dict.fromkeys(r.flow for r in self.reps))

    def groups(self, prefix: str = "") -> list[VariantGroup]:
        """One VariantGroup per variant, or per (variant, flow) when the run has several flows;
        labels ``prefix: variant [flow]`` when a prefix is given."""
        head = f"{prefix}: " if prefix else ""
        if not self.multi_flow:
            return [VariantGroup(head + v, v, [r for r in self.reps if r.variant == v])
                    for v in self.variants()]
        out = []
        for v in self.variants():
            for f in self.flows():
                reps = [r for r in self.reps if r.variant == v and r.flow == f]
                if reps:
                    out.append(VariantGroup(f"{head}{v} {f}", v, reps, f))
        return out

    def rep_groups(self, prefix: str = "") -> list[VariantGroup]:
        """One VariantGroup per variant with one RepData per repetition (its first flow): for
        the per-repetition quantities (snoop cache, drops) that flows share."""
        head = f"{prefix}: " if prefix else ""
        out = []
        for v in self.variants():
            seen: dict[int, RepData] = {}
            for r in self.reps:
                if r.variant == v:
                    seen.setdefault(r.repetition, r)
            out.append(VariantGroup(head + v, v, list(seen.values())))
        return out


def sweep_spec(experiment: dict[str, Any]) -> tuple[str, list[Any]] | None:
    """``(field, values)`` of ``experiment['sweep']`` if it is a dict with both, else None."""
    sweep = experiment.get("sweep")
    if not isinstance(sweep, dict) or "field" not in sweep:
        return None
    values = sweep.get("values")
    return str(sweep["field"]), list(values) if isinstance(values, list) else []


def _lookup(d: dict[str, Any], dotted: str) -> Any:
    if dotted in d:
        return d[dotted]
    cur: Any = d
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            cur = None
            break
        cur = cur[part]
    if cur is not None:
        return cur
    return d.get(dotted.split(".")[-1])


def _as_float(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def sweep_value_for(meta: dict[str, Any], variant: str, experiment: dict[str, Any],
                    spec: tuple[str, list[Any]]) -> Any:
    """The swept value of a rep: meta ``sweep_value``, else the variant's entry in
    experiment.yaml (``field`` as a dotted path), else a sweep value written in the variant name.
    None when the rep is not part of the sweep (e.g. a baseline)."""
    if meta.get("sweep_value") is not None:
        return meta["sweep_value"]
    fld, values = spec
    for v in experiment.get("variants") or []:
        if isinstance(v, dict) and str(v.get("name")) == variant:
            found = _lookup(v, fld)
            if found is not None and not isinstance(found, (dict, list)):
                return found
    numbers = [float(x) for x in re.findall(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", variant)]
    for value in values:
        f = _as_float(value)
        if f is not None and any(math.isclose(f, n) for n in numbers):
            return value
        if f is None and str(value) in variant:
            return value
    return None


def _rep_data(rep: RepLogs, variant: str, repetition: int, row: dict[str, Any],
              flow: FlowInfo, flows: list[FlowInfo]) -> RepData:
    ev = rep.events
    roles = flow_roles(rep)
    t_all = aligned_times(ev, rep.meta)
    starts = t_all[(ev["ev"] == "flow_start") & ev["node"].isin(list(roles.senders))]
    t0 = float(starts.min()) if len(starts) else (float(t_all.min()) if len(t_all) else 0.0)
    if len(flows) > 1:
        view = RepLogs(meta=rep.meta, events=flow_events(rep, flow, flows), rep_dir=rep.rep_dir)
        cwnd = sender_cwnd_segments(view, FlowRoles(frozenset({flow.sender}),
                                                    frozenset({flow.receiver}), 1))
    else:
        view = rep
        cwnd = sender_cwnd_segments(rep, roles)
    cwnd = cwnd[["t", "cwnd_seg"]].dropna()
    cwnd = cwnd.assign(t=cwnd["t"] - t0).reset_index(drop=True)
    return RepData(variant, repetition, rep.rep_dir or Path("."), rep.meta, row,
                   rep.bad_lines, dict(rep.bad_lines_by_node), cwnd, tx_counts(view.events),
                   _cache_series(rep, t_all, t0), flow=flow.label, n_flows=len(flows))


def _cache_series(rep: RepLogs, t_all: pd.Series, t0: float) -> dict[str, pd.DataFrame]:
    """Per node: t (s since the first flow start), segments of every ``cache`` event."""
    ev = rep.events
    cache_ev = ev[ev["ev"] == "cache"]
    cache: dict[str, pd.DataFrame] = {}
    if not cache_ev.empty and "segments" in cache_ev:
        t_cache = t_all[cache_ev.index] - t0
        frame = pd.DataFrame({"node": cache_ev["node"].astype(str).to_numpy(),
                              "t": t_cache.to_numpy(dtype=np.float64),
                              "segments": cache_ev["segments"].to_numpy(dtype=np.float64)})
        for node, part in frame.groupby("node", sort=True):
            cache[str(node)] = part[["t", "segments"]].dropna().reset_index(drop=True)
    return cache


def _rep_key(row: dict[str, Any]) -> tuple[str, int, str]:
    flow = row.get("flow")
    return (str(row.get("variant")), int(row.get("repetition")),
            "" if flow is None or flow is pd.NA else str(flow))


def load_run(run_dir: Path, resummarize: bool = False, write: bool = True) -> RunData:
    """Load every rep of a run once (one RepData per flow).

    With ``write`` (the default), summary.csv is written when missing or ``resummarize``;
    with ``write=False`` nothing is written and missing rows are computed from the logs.
    When summary.csv exists and is kept, its rows are the ones shown (matched on variant,
    repetition and flow); a flow missing from it uses the row computed from its logs (noted).
    """
    run = load(run_dir)              # the analysis API (plots.analysis): the same reading of the logs
    run_dir, experiment = run.run_dir, run.experiment
    spec = sweep_spec(experiment)
    reps: list[RepData] = []
    for variant, k, logs in run.reps():
        flows = rep_flows(logs)
        for flow, row in zip(flows, rep_rows(logs, variant, k)):
            data = _rep_data(logs, variant, k, row, flow, flows)
            if spec is not None:
                data.sweep_value = sweep_value_for(logs.meta, variant, experiment, spec)
            reps.append(data)
        del logs
    notes: list[str] = []
    csv = run_dir / "summary.csv"
    computed = summary_frame([r.row for r in reps])
    if not csv.is_file() or resummarize:
        if write:
            write_summary_rows(run_dir, [r.row for r in reps])
        elif csv.is_file() or reps:
            notes.append("summary computed from the logs (the run's summary.csv "
                         + ("ignored: --resummarize" if csv.is_file() else "is missing")
                         + "; nothing written into the run)")
        return RunData(run_dir, experiment, reps, computed, spec, notes)
    try:
        summary = read_summary(csv)
    except (ValueError, OSError) as exc:  # empty or garbled file: keep it, show the logs
        notes.append(f"summary.csv unreadable ({exc}): using values computed from the "
                     "logs (rerun with --resummarize)")
        return RunData(run_dir, experiment, reps, computed, spec, notes)
    if summary["flow"].isna().all() and len(summary):
        notes.append("summary.csv has no flow column (written before per-flow rows): using "
                     "values computed from the logs (rerun with --resummarize)")
        return RunData(run_dir, experiment, reps, computed, spec, notes)
    by_key = {}
    for rec in summary[SUMMARY_COLUMNS].astype(object).to_dict("records"):
        try:
            by_key[_rep_key(rec)] = {k: (None if v is pd.NA else v) for k, v in rec.items()}
        except (TypeError, ValueError):
            continue
    for r in reps:
        key = _rep_key(r.row)
        if key in by_key:
            r.row = by_key[key]
        else:
            notes.append(f"summary.csv has no row for {key[0]} rep {key[1]} flow {key[2]}: "
                         "using values computed from its logs (rerun with --resummarize)")
    return RunData(run_dir, experiment, reps, summary, spec, notes)
