"""Per-run plotting data: each repetition reduced to its digest (plots.digest: the summary rows,
the histograms and the drawn series the figures need), read from disk when the repetition is
compacted and its digest is current, else computed from its logs."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from plots.digest import Drawn, FlowDigest, Hist, RepDigest, rep_series
from plots.analysis import load
from plots.flows import rep_flows
from plots.logs import load_rep
from plots.summary import SUMMARY_COLUMNS, read_summary, summary_frame, write_summary_rows

__all__ = ["RepData", "VariantGroup", "RunData", "load_run", "sweep_spec", "sweep_value_for", "flow_names"]


def flow_names(flows: list[str], ports: bool = True) -> dict[str, str]:
    """The legend name of each flow label (``A->D:6001``): the label itself, or, with ``ports`` False,
    its sender and receiver alone (``A->D``) when no other of ``flows`` has the same pair; flows that
    share a pair keep their ports, which is what tells them apart."""
    def pair(label: str) -> str:
        head, sep, port = label.rpartition(":")
        return head if sep and port.isdigit() else label
    if ports:
        return {f: f for f in flows}
    count: dict[str, int] = {}
    for f in dict.fromkeys(flows):
        count[pair(f)] = count.get(pair(f), 0) + 1
    return {f: pair(f) if count[pair(f)] == 1 else f for f in flows}


@dataclass
class RepData:
    """What the figures and the report need from one (variant, repetition, flow).

    ``row`` is the flow's summary row; ``digest`` holds the flow's cwnd and transmissions per
    packet (histograms and drawn series); ``cache_drawn`` (per node) belongs to the whole
    repetition and is shared by its flows.  ``cwnd``, ``tx_counts`` and ``cache`` give the full
    series, read from the logs when first asked for (the figures never need them).
    """

    variant: str
    repetition: int
    rep_dir: Path
    meta: dict[str, Any]
    row: dict[str, Any]
    bad_lines: int
    bad_lines_by_node: dict[str, int]
    digest: FlowDigest
    cache_drawn: dict[str, Drawn] = field(default_factory=dict)  # node -> t, segments (drawn)
    sweep_value: Any = None
    flow: str = ""
    n_flows: int = 1
    _full: tuple[pd.DataFrame, np.ndarray, dict[str, pd.DataFrame]] | None = field(
        default=None, repr=False)

    @property
    def status(self) -> str:
        """``failed`` if meta or the summary row says so, else the summary row's status."""
        if self.meta.get("status") == "failed":
            return "failed"
        return str(self.row.get("status") or "ok")

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def has_cache(self) -> bool:
        """True when the repetition logged cache sizes (some node snooped)."""
        return bool(self.cache_drawn)

    @property
    def cwnd_hist(self) -> Hist:
        return self.digest.cwnd

    @property
    def tx_hist(self) -> Hist:
        return self.digest.tx

    def _series(self) -> tuple[pd.DataFrame, np.ndarray, dict[str, pd.DataFrame]]:
        if self._full is None:
            logs = load_rep(self.rep_dir)
            flows = rep_flows(logs)
            flow = next((f for f in flows if f.label == self.flow), flows[0])
            self._full = rep_series(logs, flow, flows)
        return self._full

    @property
    def cwnd(self) -> pd.DataFrame:
        """The flow's cwnd: ``t`` (s since the first flow start), ``cwnd_seg`` (from the logs)."""
        return self._series()[0]

    @property
    def tx_counts(self) -> np.ndarray:
        """Transmissions per segment, in (flow, seq) order (from the logs)."""
        return self._series()[1]

    @property
    def cache(self) -> dict[str, pd.DataFrame]:
        """Per node: ``t``, ``segments`` of every cache event of the repetition (from the logs)."""
        return self._series()[2]


@dataclass
class VariantGroup:
    """One line/bar in a figure: a variant of a run, or one flow of it when the run has
    several flows (``label`` is the legend text)."""

    label: str
    variant: str
    reps: list[RepData]
    flow: str = ""
    run: str = ""          # the run's legend prefix (a comparison of runs), "" for one run

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

    def groups(self, prefix: str = "", ports: bool = True) -> list[VariantGroup]:
        """One VariantGroup per variant, or per (variant, flow) when the run has several flows;
        labels ``prefix: variant [flow]`` when a prefix is given; with ``ports`` False, a flow is named
        by its sender and receiver alone where it is the only flow between them (:func:`flow_names`)."""
        head = f"{prefix}: " if prefix else ""
        if not self.multi_flow:
            return [VariantGroup(head + v, v, [r for r in self.reps if r.variant == v], run=prefix)
                    for v in self.variants()]
        out = []
        names = flow_names(self.flows(), ports)
        for v in self.variants():
            for f in self.flows():
                reps = [r for r in self.reps if r.variant == v and r.flow == f]
                if reps:
                    out.append(VariantGroup(f"{head}{v} {names[f]}", v, reps, f, run=prefix))
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


def sweep_spec(experiment: dict[str, Any], by: str | None = None) -> tuple[str, list[Any]] | None:
    """``(field, values)`` of ``experiment['sweep']`` if it is a dict with both, else None.  A factorial
    sweep (``factors``): the factor ``by`` (default the first), the figures' x axis; ValueError naming
    the factors if ``by`` is none of them."""
    sweep = experiment.get("sweep")
    factors = sweep.get("factors") if isinstance(sweep, dict) else None
    if isinstance(factors, dict) and factors:
        if by is not None and by not in factors:
            raise ValueError(f"--by {by}: not a factor of the run's sweep; expected one of {', '.join(factors)}")
        fld = by if by is not None else next(iter(factors))
        return fld, list(factors[fld]) if isinstance(factors[fld], list) else []
    if by is not None:
        raise ValueError(f"--by {by}: the run has no factorial sweep (sweep.factors)")
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
    fld, values = spec
    if isinstance(meta.get("sweep_value"), dict):   # a factorial sweep: the value of the factor drawn
        return meta["sweep_value"].get(fld)
    if meta.get("sweep_value") is not None:
        return meta["sweep_value"]
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


def _rep_data(digest: RepDigest, rep_dir: Path, flow: FlowDigest) -> RepData:
    return RepData(digest.variant, digest.repetition, rep_dir, digest.meta, dict(flow.row),
                   digest.bad_lines, dict(digest.bad_lines_by_node), flow, digest.cache,
                   flow=flow.flow, n_flows=flow.n_flows)


def _rep_key(row: dict[str, Any]) -> tuple[str, int, str]:
    flow = row.get("flow")
    return (str(row.get("variant")), int(row.get("repetition")),
            "" if flow is None or flow is pd.NA else str(flow))


def unrecorded_ending(variant: str, repetition: int, meta: dict[str, Any]) -> list[str]:
    """A note when the runner did not record how a repetition ended (issue 27, item 6): meta.json
    missing or not whole (rebuilt: plots.logs.rebuilt_meta), or still ``running``."""
    if meta.get("rebuilt"):
        return [f"{variant} rep {repetition}: {meta['rebuilt']}"]
    if meta.get("status") == "running":
        return [f"{variant} rep {repetition}: meta.json says running: the runner did not record how it "
                "ended (killed, or still running); assumed its status from the logs: unrecorded if every "
                "flow ended, else incomplete"]
    return []


def load_run(run_dir: Path, resummarize: bool = False, write: bool = True, by: str | None = None) -> RunData:
    """Load every rep of a run once (one RepData per flow).

    With ``write`` (the default), summary.csv is written when missing or ``resummarize``;
    with ``write=False`` nothing is written and missing rows are computed from the logs.
    When summary.csv exists and is kept, its rows are the ones shown (matched on variant,
    repetition and flow); a flow missing from it uses the row computed from its logs (noted).
    ``by``: the factor of a factorial sweep the sweep figures draw on their x axis (sweep_spec).
    """
    from plots.digest_store import run_digests
    run = load(run_dir)              # the analysis API (plots.analysis): the same reading of the logs
    run_dir, experiment = run.run_dir, run.experiment
    spec = sweep_spec(experiment, by)
    reps: list[RepData] = []
    notes: list[str] = []
    for rep_dir, digest in run_digests(run_dir, write=write):
        notes += unrecorded_ending(digest.variant, digest.repetition, digest.meta)
        for flow in digest.flows:
            data = _rep_data(digest, rep_dir, flow)
            if spec is not None:
                data.sweep_value = sweep_value_for(digest.meta, digest.variant, experiment, spec)
            reps.append(data)
    if not reps and resummarize:   # asked to recompute the summary: an empty one would say nothing ran
        raise ValueError(f"{run_dir}: no repetition has node logs or a meta.json: nothing to summarize")
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
