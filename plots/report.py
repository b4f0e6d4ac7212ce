"""``run_dir/report.md`` (and ``report.html``, the same as one self-contained file: plots/html.py):
figures, summary tables, and what went wrong (failed/incomplete reps, skipped log lines)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from plots.data import RunData, flow_names, load_run
from plots.medium import FIGURE_PREFIX as MEDIUM, MediumRuns, medium_figures, medium_section
from plots.mesh import compare_panels, is_mesh_key, mesh_figures, mesh_section
from plots.figures import FIGURES, SWEEP_METRICS, SweepSeries, write_figures
from plots.html import write_html
from plots.lateness import Lateness, lateness_section, run_lateness
from plots.numbers import mean_std, plain
from plots.qos import is_adaptive
from plots.reference import figure_caption, reference_section
from plots.style import current
from plots.summary import FLOAT_FORMAT, SUMMARY_COLUMNS, summary_frame

__all__ = ["MAIN_COLUMNS", "write_report", "write_compare_report", "compare_medium", "run_media", "run_figures",
           "sweep_series", "applicable_figures", "snoops"]

MAIN_COLUMNS = ["duration_s", "goodput_mbps", "delivered_share", "delivered_mbps", "losses_dupack", "losses_rto", "cwnd_median",
                "tx_per_pkt_p50", "tx_per_pkt_p99", "tx_per_pkt_max", "cache_max_segments",
                "cache_insertions", "cache_mean_segments", "snoop_hits",
                "local_retransmissions"]


def _fmt(v: Any) -> str:
    if v is None or v is pd.NA:
        return ""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return plain(v)
    return str(v).replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return lines


def _mean_std(values: pd.Series) -> str:
    return mean_std(pd.to_numeric(values, errors="coerce").astype(float).dropna().tolist())


def sweep_series(data: RunData, label: str = "") -> list[SweepSeries]:
    """The run's sweep as SweepSeries: one, or one per flow when the run has several flows
    (empty if experiment.yaml has no sweep)."""
    if data.sweep is None:
        return []
    fld, values = data.sweep
    ports = current().ports
    groups = data.groups(label, ports=ports)
    head = f"{label}: " if label else ""
    if any(isinstance(r.meta.get("sweep_value"), dict) for r in data.reps):
        return _factorial_series(groups, fld, values, head)
    if not data.multi_flow:
        return [SweepSeries(label or "mean over repetitions", fld, values, groups)]
    names = flow_names(data.flows(), ports)
    return [SweepSeries(f"{head}{names[flow]}", fld, values, [g for g in groups if g.flow == flow])
            for flow in data.flows()]


def _factorial_series(groups: list[Any], fld: str, values: list[Any], head: str) -> list[SweepSeries]:
    """A factorial sweep drawn against its factor ``fld``: one series per combination of the other
    factors' values (and per flow), labelled ``field=value, ...``."""
    series: dict[str, list[Any]] = {}
    for g in groups:
        sv = g.reps[0].meta.get("sweep_value") if g.reps else None
        others = ", ".join(f"{k}={v}" for k, v in sv.items() if k != fld) if isinstance(sv, dict) else "not swept"
        key = head + (f"{others} {g.flow}" if g.flow else others).strip()
        series.setdefault(key or "mean over repetitions", []).append(g)
    return [SweepSeries(key, fld, values, gs) for key, gs in series.items()]


def run_figures(data: RunData, label: str = "", out_dir: Path | None = None
                ) -> dict[str, list[Path]]:
    """Write all figures of one run into ``out_dir`` (default ``run_dir/figures/``): the paper's,
    then the mesh (plots/mesh.py) and the medium's (plots/medium.py, keys ``medium_*``), which the
    report shows in their own sections."""
    out_dir = out_dir or data.run_dir / "figures"
    figures = write_figures(data.groups(label, ports=current().ports), out_dir, sweep_series(data, label),
                            data.rep_groups(label))
    figures.update(mesh_figures(data.run_dir, out_dir))
    figures.update(medium_figures(data.run_dir, out_dir, data.summary))
    return figures


def snoops(data: RunData) -> bool:
    """True if some variant snoops: a snoop policy other than none in meta.json, or any
    logged cache event."""
    for r in data.reps:
        policy = (r.meta.get("snoop") or {}).get("policy") if isinstance(
            r.meta.get("snoop"), dict) else None
        if (policy and policy != "none") or r.has_cache:
            return True
    return False


def applicable_figures(data: RunData) -> dict[str, str]:
    """Caption of every figure that applies to the run's experiment: the snoop figures only
    when something snoops, the adaptive sender's only when a sender adapts pkt_qos, the scheme
    figures only when variants set ``scenario``, the sweep figures only with a sweep."""
    from plots.schemes import by_scenario
    captions = {}
    has_schemes = bool(by_scenario(data.groups()))
    has_snoop = snoops(data)
    has_adaptive = any(is_adaptive(r) for r in data.reps)
    for key, (_f, caption) in FIGURES.items():
        if key.startswith("schemes_") and not has_schemes:
            continue
        if key.startswith("snoop_") and not has_snoop:
            continue
        if key == "qos_time" and not has_adaptive:
            continue
        captions[key] = figure_caption(key, caption)
    if data.sweep is not None:
        for metric, label in SWEEP_METRICS.items():
            if metric.startswith("cache_") and not has_snoop:
                continue
            captions[f"sweep_{metric}"] = (f"Sweep over {data.sweep[0]}: {label} (line: mean; "
                                           "dots: one per repetition)")
        if has_snoop:
            captions["sweep_memory"] = (f"Sweep over {data.sweep[0]}: snoop memory: insertions "
                                        "and time-averaged occupancy summed over nodes, and "
                                        "the largest cache at one node")
    return captions


def _figure_section(base: Path, captions: dict[str, str],
                    figures: dict[str, list[Path]]) -> list[str]:
    lines = ["## Figures", ""]
    for key, paths in figures.items():
        if is_mesh_key(key) or key.startswith(MEDIUM):   # the "Mesh" and "Radio medium" sections show them
            continue
        png = next((p for p in paths if p.suffix == ".png"), paths[0])
        rel = png.resolve().relative_to(base.resolve()).as_posix()
        caption = captions.get(key, key)
        lines += [f"### {caption}", "", f"![{caption}]({rel})", ""]
    missing = [c for k, c in captions.items() if k not in figures]
    if missing:
        lines += ["Not drawn (no data): " + "; ".join(missing) + ".", ""]
    return lines


def _aggregate_rows(data: RunData, label: str = "") -> list[list[Any]]:
    rows = []
    for g in data.groups(label):
        frame = pd.DataFrame([r.row for r in g.usable], columns=SUMMARY_COLUMNS)
        n_failed = len(g.reps) - len(g.usable)
        n_incomplete = sum(1 for r in g.usable if r.status == "incomplete")
        rows.append([g.label, len(g.usable) - n_incomplete, n_incomplete, n_failed]
                    + [_mean_std(frame[c]) for c in MAIN_COLUMNS])
    return rows


def _aggregate_header(data: Sequence[RunData]) -> list[str]:
    multi = any(d.multi_flow for d in data)
    return [("variant flow" if multi else "variant"), "reps ok", "incomplete", "failed"] + MAIN_COLUMNS


def _flows_note(data: Sequence[RunData]) -> list[str]:
    if not any(d.multi_flow for d in data):
        return []
    return ["One row per (variant, flow). Flows are named sender->receiver:port. "
            "cache_max_segments, cache_insertions, cache_mean_segments and the drops describe "
            "the whole repetition (every node, every flow: cache and drop events carry no "
            "flow), so every flow of a repetition shows the same value (docs/LOGS.md).", ""]


AGGREGATE_NOTE = ("Incomplete repetitions (the flow did not finish within limits.max_duration_s) are counted "
                  "apart and kept: they have no duration_s or goodput_mbps (those of a finished transfer), and "
                  "delivered_share (of the flow) and delivered_mbps (the bytes over the time it ran) say what they "
                  "delivered; for a finished flow delivered_mbps is its goodput.")


def _aggregate_section(data: RunData) -> list[str]:
    return ["## Summary (mean ± std over repetitions, failed reps excluded)", "", AGGREGATE_NOTE, "",
            *_flows_note([data]),
            *_table(_aggregate_header([data]), _aggregate_rows(data)), ""]


def _scheme_section(runs: Sequence[RunData], labels: Sequence[str] = ("",)) -> list[str]:
    """Mean ± std per (scenario, scheme) when variants set ``scenario`` (plots/schemes.py); with
    several runs, a ``run`` column first."""
    from plots.schemes import SCHEME_METRICS, by_scenario, scheme_label
    labelled = len(runs) > 1 or any(labels)
    rows = []
    for data, label in zip(runs, labels):
        for s, groups in by_scenario(data.groups()).items():
            for g in groups:
                cells = []
                for get, _label in SCHEME_METRICS.values():
                    cells.append(_mean_std(pd.Series([get(r) for r in g.usable], dtype="float64")))
                rows.append(([label or data.run_dir.name] if labelled else [])
                            + [s, scheme_label(g, s), len(g.usable)] + cells)
    if not rows:
        return []
    header = (["run"] if labelled else []) + ["scenario", "scheme", "reps"] + list(SCHEME_METRICS)
    return ["## Schemes per scenario (mean ± std over repetitions)", "", *_table(header, rows), ""]


def _per_rep_section(runs: Sequence[RunData], labels: Sequence[str] = ("",)) -> list[str]:
    """Every summary row; with several runs a ``label`` column first (as in the comparison's summary.csv)."""
    labelled = len(runs) > 1 or any(labels)
    rows = [([label] if labelled else []) + [r.row.get(c) for c in SUMMARY_COLUMNS]
            for data, label in zip(runs, labels) for r in data.reps]
    header = (["label"] if labelled else []) + SUMMARY_COLUMNS
    return ["## Per repetition and flow (summary.csv)", "", *_table(header, rows), ""]


def _problems_section(data: RunData) -> list[str]:
    lines = ["## Problems", ""]
    bad = [r for r in data.reps if r.status != "ok"]
    for r in bad:
        err = r.meta.get("error")
        lines.append(f"- {r.variant} rep {r.repetition}: **{r.status}**"
                     + (" (excluded from figures)" if r.failed else "")
                     + (f": {err}" if err else ""))
    for r in data.reps:
        if r.bad_lines:
            per_node = ", ".join(f"{n}: {k}" for n, k in sorted(r.bad_lines_by_node.items()))
            lines.append(f"- {r.variant} rep {r.repetition}: skipped {r.bad_lines} bad log "
                         f"line(s) ({per_node})")
    if data.sweep is not None:
        outside = sorted({r.variant for r in data.reps if r.sweep_value is None})
        if outside:
            lines.append(f"- not part of the sweep over {data.sweep[0]} (no sweep value): "
                         + ", ".join(outside))
    lines += [f"- {note}" for note in data.notes]
    if len(lines) == 2:
        lines.append("None: every repetition completed and every log line was read.")
    return lines + [""]


def _header(data: RunData) -> list[str]:
    lines = [f"Run directory: `{data.run_dir}`", ""]
    name = data.experiment.get("name")
    if name:
        lines += [f"Experiment: {name}" + (f" (backend {data.backend})" if data.backend else ""),
                  ""]
    lines += provenance_lines(data.run_dir)
    if data.sweep is not None:
        lines += [f"Sweep: `{data.sweep[0]}` over {', '.join(map(str, data.sweep[1]))}", ""]
    if data.multi_flow:
        lines += ["Flows: " + ", ".join(data.flows()), ""]
    if data.reps:
        from plots.compare import repetitions_text
        lines += ["Variants: " + ", ".join(data.variants()), "",
                  f"Repetitions per variant: {repetitions_text(data)}", ""]
    else:
        lines += ["No repetitions found (no <variant>/rep<k>/meta.json).", ""]
    return lines


def provenance_lines(run_dir: Path) -> list[str]:
    """Where the run came from (RUN_DIR/provenance.json, written by the runner: experiments.provenance);
    a line saying so for a run without it (written before issue 26) or with an unreadable one."""
    try:
        prov = json.loads((Path(run_dir) / "provenance.json").read_text())
    except FileNotFoundError:
        return ["Provenance: not recorded (no provenance.json: a run of an older version)", ""]
    except (OSError, ValueError) as e:
        return [f"Provenance: provenance.json unreadable ({e})", ""]
    git = prov.get("git") or {}
    commit = (git["commit"][:12] + (" (dirty: tracked files changed)" if git.get("dirty") else "")
              if git.get("commit") else f"unknown ({git.get('note', 'not recorded')})")
    packages = ", ".join(f"{k} {v}" for k, v in (prov.get("packages") or {}).items() if v)
    return ["Provenance:", "",
            f"- command: `{prov.get('command', '?')}` (in `{prov.get('cwd', '?')}`)",
            f"- project: aspan-testbed {prov.get('version') or 'not installed'}, commit {commit}",
            f"- host: {prov.get('host', '?')} ({prov.get('platform', '?')}), Python {prov.get('python', '?')}",
            f"- backend {prov.get('backend', '?')}; repetitions ran on {prov.get('executor', '?')}; "
            f"started {prov.get('started', '?')}",
            f"- packages: {packages}", ""]


def write_report(run_dir: Path, data: RunData | None = None,
                 figures: dict[str, list[Path]] | None = None,
                 lateness: list[Lateness] | None = None, baseline: str | None = None) -> Path:
    """Write ``run_dir/report.md`` (figures embedded by relative path, summary tables, problems).

    ``data``/``figures``/``lateness`` reuse what a caller already loaded/drew/read; by default the
    run is loaded (summary.csv kept if present), the figures drawn and the medium's lateness read.
    ``baseline``: the variant the others are compared with (plots/baseline.py; default the experiment's
    ``baseline`` field, else the first variant); a name that is no variant is a ValueError, before anything
    is written.
    """
    from plots.baseline import baseline_variant, versus_section
    data = data if data is not None else load_run(Path(run_dir))
    base = baseline_variant(data, baseline) if data.variants() else ""
    if figures is None:
        figures = run_figures(data)
    if lateness is None:
        lateness = run_lateness(data.run_dir)
    lines = [f"# Report: {data.run_dir.name}", "", *_header(data)]
    lines += _figure_section(data.run_dir, applicable_figures(data), figures)
    lines += mesh_section(data.run_dir, figures)   # [] unless some variant's graph is known
    medium = {key: paths for key, paths in figures.items() if key.startswith(MEDIUM)}
    # [] unless a variant ran on a medium (plots/medium.py)
    lines += medium_section(data.run_dir, medium, MediumRuns.of(data.run_dir, data.summary))
    lines += lateness_section([("", lateness)])
    lines += reference_section(str(data.experiment.get("name") or ""), data.summary, plain)
    lines += _aggregate_section(data)
    lines += versus_section(data, base) if base else []
    lines += _scheme_section([data])
    lines += _per_rep_section([data])
    lines += _problems_section(data)
    path = data.run_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    write_html(path)          # report.html beside it: one self-contained file
    return path


def run_media(runs: Sequence[RunData]) -> list[MediumRuns | None]:
    """Each run's medium data (None for a run without a medium)."""
    return [MediumRuns.of(d.run_dir, d.summary) for d in runs]


def compare_medium(media: Sequence[MediumRuns | None], labels: Sequence[str]) -> MediumRuns | None:
    """The medium data of the runs drawn together (variants ``label: variant``); None if none ran on one."""
    found = [m.labelled(label) for m, label in zip(media, labels) if m is not None]
    return MediumRuns.combine(found) if found else None


def write_compare_report(out: Path, runs: Sequence[RunData], labels: Sequence[str],
                         figures: dict[str, list[Path]],
                         lateness: Sequence[list[Lateness]] | None = None,
                         media: Sequence[MediumRuns | None] | None = None) -> Path:
    """Write ``out/report.md`` and ``out/summary.csv`` (every run's rows, with ``label`` and
    ``run_dir`` columns added) for runs drawn together; nothing is written into the runs.  Every
    section of a single run's report appears (each run's rows labelled), and the differences and
    ratios of every run against the first, with 95 % intervals (plots/compare.py)."""
    from plots.compare import difference_section, repetitions_text
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lateness = list(lateness) if lateness is not None else [run_lateness(d.run_dir) for d in runs]
    media = list(media) if media is not None else run_media(runs)
    combined = compare_medium(media, labels)
    captions: dict[str, str] = {}
    for d in runs:
        captions.update(applicable_figures(d))
    lines = ["# Report: " + (" vs ".join(labels) if len(runs) > 1 else runs[0].run_dir.name), ""]
    lines += ["| label | run directory | experiment | backend | variants | repetitions per variant | flows |",
              "|---|---|---|---|---|---|---|"]
    for d, label in zip(runs, labels):
        lines.append(f"| {label or '-'} | `{d.run_dir}` | {d.experiment.get('name', '')} | "
                     f"{d.backend} | {len(d.variants())} | {repetitions_text(d)} | {len([f for f in d.flows() if f])} |")
    lines += ["", "Legends: `label: variant` (the label of each run above; `--label` sets it).",
              "Nothing was written into the run directories above.", ""]
    for d, label in zip(runs, labels):
        if d.sweep is not None:
            lines += [f"Sweep of {label or d.run_dir.name}: `{d.sweep[0]}` over "
                      f"{', '.join(map(str, d.sweep[1]))}", ""]
    lines += _figure_section(out, captions, figures)
    lines += mesh_section(out, figures, compare_panels([d.run_dir for d in runs], labels, loads=False))
    medium = {key: paths for key, paths in figures.items() if key.startswith(MEDIUM)}
    lines += medium_section(out, medium, combined) if combined is not None else []
    lines += lateness_section(list(zip(labels, lateness)))
    rows = [row for d, label in zip(runs, labels) for row in _aggregate_rows(d, label)]
    lines += ["## Summary (mean ± std over repetitions, failed reps excluded)", "", AGGREGATE_NOTE, "",
              *_flows_note(runs), *_table(_aggregate_header(runs), rows), ""]
    lines += difference_section(runs, labels, media)
    from plots.baseline import baseline_variant, versus_section
    for d, label in zip(runs, labels):     # within each run: its variants against its baseline (plots/baseline.py)
        section = versus_section(d, baseline_variant(d)) if d.variants() else []
        if section:
            lines += [section[0], "", f"Run **{label or d.run_dir.name}**.", *section[1:]]
    lines += _scheme_section(runs, labels)
    lines += _per_rep_section(runs, labels)
    problems = [(label, _problems_section(d)[2:]) for d, label in zip(runs, labels)]
    lines += ["## Problems", ""]
    if all(p[0].startswith("None") for _label, p in problems):
        lines += [problems[0][1][0], ""]
    for (label, found), d in zip(problems, runs):
        if not found[0].startswith("None"):
            lines += [f"### {label or d.run_dir.name}", "", *found]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    write_html(path)
    frames = []
    for d, label in zip(runs, labels):
        f = summary_frame([r.row for r in d.reps])
        frames.append(f.assign(label=label, run_dir=str(d.run_dir)))
    if frames:
        pd.concat(frames, ignore_index=True).to_csv(out / "summary.csv", index=False,
                                                    float_format=FLOAT_FORMAT,
                                                    lineterminator="\n")
    return path
