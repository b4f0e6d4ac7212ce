"""Read a run directory: per-node JSON-Lines event logs, meta.json, experiment.yaml.

The layout and the event schema are defined in ``docs/LOGS.md``; this module only parses.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd
import yaml

__all__ = [
    "RepLogs",
    "read_node_log",
    "load_rep",
    "iter_reps",
    "load_experiment",
    "variant_order",
    "check_run_dir",
    "read_meta",
    "rebuilt_meta",
    "is_run_dir",
    "aligned_times",
]

BASE_COLUMNS = ["t", "node", "ev"]
_REP_RE = re.compile(r"^rep(\d+)$")
PARQUET = "events.parquet"                         # a compacted repetition's events (plots.compact)
PARQUET_JSON_COLUMNS = b"aspan_json_columns"       # its metadata: the columns stored as JSON text
PARQUET_BAD_LINES = b"aspan_bad_lines"             # and the lines each node's reader skipped
RUN_DIR_EXPECTED = ("a run directory: a directory holding experiment.yaml and/or "
                    "<variant>/rep<k>/meta.json (see docs/LOGS.md)")


@dataclass
class RepLogs:
    """One (variant, repetition): its meta.json, every node's events, skipped lines.

    ``events`` has columns ``t, node, ev`` then every field seen (NaN where absent), all nodes
    concatenated in node-name order, each node's events in file order.
    """

    meta: dict[str, Any]
    events: pd.DataFrame
    bad_lines: int = 0
    bad_lines_by_node: dict[str, int] = field(default_factory=dict)
    rep_dir: Path | None = None


def _valid_event(obj: Any) -> bool:
    return isinstance(obj, dict) and "t" in obj and "ev" in obj


def _parse_all_at_once(lines: list[str]) -> list[dict] | None:
    """The fast path: every line one valid event, parsed as one JSON array; None if any is not."""
    try:
        parsed = json.loads("[" + ",".join(lines) + "]")
    except ValueError:
        return None  # some line is broken: the caller parses line by line and counts it
    # The count check catches lines that are not exactly one JSON value each.
    if len(parsed) == len(lines) and all(_valid_event(o) for o in parsed):
        return parsed
    return None


def _parse_lines(lines: list[str]) -> tuple[list[dict], int]:
    """Parse JSON lines; fast path parses all at once, slow path line by line."""
    if not lines:
        return [], 0
    parsed = _parse_all_at_once(lines)
    if parsed is not None:
        return parsed, 0
    events: list[dict] = []
    bad = 0
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if _valid_event(obj):
            events.append(obj)
        else:
            bad += 1
    return events, bad


def read_node_log(path: Path) -> tuple[list[dict], int]:
    """Parse one node's JSONL log.

    Returns the events (dicts, file order) and the number of skipped lines: lines that are not
    a JSON object with ``t`` and ``ev`` (e.g. the truncated last line of a crashed node, or
    undecodable bytes). Blank lines are ignored and not counted. Events without ``node`` get
    the file's stem as node name.
    """
    path = Path(path)
    text = path.read_bytes().decode("utf-8", errors="replace")
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if not lines:
        return [], 0
    # Parse the last line apart so a truncated tail keeps the fast path for the rest.
    events, bad = _parse_lines(lines[:-1])
    tail, tail_bad = _parse_lines(lines[-1:])
    events.extend(tail)
    bad += tail_bad
    for e in events:
        if "node" not in e:
            e["node"] = path.stem
    return events, bad


def events_frame(events: list[dict]) -> pd.DataFrame:
    """Build one DataFrame from event dicts, ``t, node, ev`` first."""
    if not events:
        return pd.DataFrame({"t": pd.Series(dtype="float64"),
                             "node": pd.Series(dtype="object"),
                             "ev": pd.Series(dtype="object")})
    df = pd.DataFrame(events)
    rest = [c for c in df.columns if c not in BASE_COLUMNS]
    df = df[BASE_COLUMNS + rest]
    df["t"] = pd.to_numeric(df["t"], errors="coerce")
    return df


def read_meta(rep_dir: Path) -> dict[str, Any]:
    """``rep_dir/meta.json``; when it is missing or not whole (a runner killed with SIGKILL, a full disk),
    the record rebuilt from experiment.yaml and the directory's names (:func:`rebuilt_meta`); ValueError
    when there are no node logs to rebuild from either."""
    rep_dir = Path(rep_dir)
    meta_path = rep_dir / "meta.json"
    try:
        text = meta_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return rebuilt_meta(rep_dir, "no meta.json")
    try:
        meta = json.loads(text)
    except ValueError as exc:
        return rebuilt_meta(rep_dir, f"{meta_path} is not valid JSON ({exc})")
    if not isinstance(meta, dict):
        return rebuilt_meta(rep_dir, f"{meta_path} is not a JSON object")
    return meta


_read_meta = read_meta   # the old name


def has_logs(rep_dir: Path) -> bool:
    """Does ``rep_dir`` hold node logs (``*.log`` or a compacted ``events.parquet``)?"""
    return any(Path(rep_dir).glob("*.log")) or (Path(rep_dir) / PARQUET).is_file()


def rebuilt_meta(rep_dir: Path, why: str) -> dict[str, Any]:
    """The meta.json a repetition without a whole one would have had (issue 27, item 6), from what is
    known for sure: variant and repetition from the directory names, the variant's nodes, flows, seed
    and backend from the run's experiment.yaml.  Its ``status`` is ``unrecorded`` (the summary turns it
    into ``incomplete`` when a flow did not end), and ``rebuilt`` says why and what was assumed.
    ValueError naming the directory when it holds no node log either: nothing to rebuild from."""
    rep_dir = Path(rep_dir)
    m = _REP_RE.match(rep_dir.name)
    if m is None or not has_logs(rep_dir):
        raise ValueError(f"{rep_dir}: {why} and no node logs to rebuild it from; expected a "
                         "<variant>/rep<k>/ directory of a run directory (see docs/LOGS.md)")
    variant, repetition = rep_dir.parent.name, int(m.group(1))
    experiment = load_experiment(rep_dir.parent.parent)
    config = next((v.get("config") for v in experiment.get("variants") or []
                   if isinstance(v, dict) and v.get("name") == variant), None)
    meta: dict[str, Any] = {"variant": variant, "repetition": repetition, "status": "unrecorded",
                            "error": why, "clock_offsets": {}}
    assumed = [f"variant {variant} and repetition {repetition} from the directory names"]
    if isinstance(config, dict) and isinstance(config.get("topology"), dict):
        seed = config.get("seed")
        meta.update(backend=experiment.get("backend"), sweep_value=None,
                    # the runner's rule (experiments.build.rep_seed): the YAML's seed + repetition
                    seed=seed + repetition if isinstance(seed, int) else None,
                    nodes=dict(config["topology"].get("addresses") or {}), snoop=config.get("snoop"),
                    flows=[{"sender": f.get("sender"), "receiver": f.get("receiver"),
                            "segments": f.get("segments"), "segment_size": f.get("segment_size"),
                            "variant": f.get("variant") or (config.get("tcp") or {}).get("variant")}
                           for f in config.get("flows") or [] if isinstance(f, dict)])
        assumed.append("backend, nodes, flows and seed (the YAML's seed + repetition) from experiment.yaml")
    else:
        assumed.append("no experiment.yaml entry for the variant: nodes and flows from the logs, "
                       "seed and backend unknown")
    assumed.append("the status from the logs: unrecorded if every flow ended, else incomplete")
    meta["rebuilt"] = f"{why}: rebuilt; assumed " + "; ".join(assumed)
    return meta


def read_parquet_events(path: Path) -> tuple[pd.DataFrame, dict[str, int]]:
    """The events of a compacted repetition as the JSON Lines reader gives them, and its skipped lines."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    df = table.to_pandas()
    for col in json.loads(meta.get(PARQUET_JSON_COLUMNS, b"[]")):
        # the few rows that carry the field (node_stop's drops) are decoded, the rest stay NaN
        values = np.full(len(df), float("nan"), dtype=object)
        text = df[col].to_numpy(dtype=object)
        for i in np.flatnonzero([isinstance(v, str) for v in text]):
            values[i] = json.loads(text[i])
        df[col] = pd.Series(values, index=df.index, dtype=object)
    return df, {str(k): int(v) for k, v in json.loads(meta.get(PARQUET_BAD_LINES, b"{}")).items()}


def load_rep(rep_dir: Path) -> RepLogs:
    """Load ``rep_dir/meta.json`` and the node logs into one :class:`RepLogs`: every ``*.log``
    (JSON Lines), or ``events.parquet`` once the repetition was compacted (plots.compact)."""
    rep_dir = Path(rep_dir)
    meta = read_meta(rep_dir)
    all_events: list[dict] = []
    bad_by_node: dict[str, int] = {}
    for log in sorted(rep_dir.glob("*.log")):
        events, bad = read_node_log(log)
        all_events.extend(events)
        if bad:
            bad_by_node[log.stem] = bad
    frame = events_frame(all_events)
    compacted = rep_dir / PARQUET
    if compacted.is_file():
        stored, stored_bad = read_parquet_events(compacted)
        frame = stored if not all_events else pd.concat([stored, frame], ignore_index=True)
        for node, n in stored_bad.items():
            bad_by_node[node] = bad_by_node.get(node, 0) + n
    return RepLogs(meta=meta, events=frame,
                   bad_lines=sum(bad_by_node.values()), bad_lines_by_node=bad_by_node,
                   rep_dir=rep_dir)


# A resolved experiment.yaml of a big run is large (variants.yaml: 140 kB, 2.5 s with the pure
# Python parser): it is parsed with libyaml when PyYAML has it, and once per file version.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_experiments: dict[tuple[str, int, int], dict[str, Any]] = {}


def load_experiment(run_dir: Path) -> dict[str, Any]:
    """The resolved ``experiment.yaml`` of a run as a dict ({} if absent; a fresh copy each call)."""
    path = Path(run_dir) / "experiment.yaml"
    if not path.is_file():
        return {}
    st = path.stat()
    memo = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _experiments:
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: not valid YAML ({exc})") from None
        _experiments[memo] = data if isinstance(data, dict) else {}
    return copy.deepcopy(_experiments[memo])


def variant_order(experiment: dict[str, Any]) -> list[str]:
    """Variant names in the order listed in ``experiment['variants']`` (list of dicts with name)."""
    variants = experiment.get("variants")
    if not isinstance(variants, list):
        return []
    names = [v["name"] for v in variants if isinstance(v, dict) and "name" in v]
    return [str(n) for n in names]


def _rep_dirs(run_dir: Path) -> list[tuple[str, int, Path]]:
    """Every ``<variant>/rep<k>/`` with a meta.json or node logs (a repetition whose runner was killed
    before it wrote meta.json still has its logs: read_meta rebuilds the rest)."""
    found = []
    for rep in run_dir.glob("*/rep*/"):
        m = _REP_RE.match(rep.name)
        if m and rep.is_dir() and ((rep / "meta.json").is_file() or has_logs(rep)):
            found.append((rep.parent.name, int(m.group(1)), rep))
    return found


def is_run_dir(path: Path) -> bool:
    """True if ``path`` looks like a run directory (experiment.yaml or rep dirs)."""
    path = Path(path)
    return path.is_dir() and ((path / "experiment.yaml").is_file() or bool(_rep_dirs(path)))


def check_run_dir(path: Path) -> Path:
    """Return ``path`` if it is a run directory, else raise ValueError saying what was expected."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: does not exist; expected {RUN_DIR_EXPECTED}")
    if not is_run_dir(path):
        raise ValueError(f"{path}: not a run directory; expected {RUN_DIR_EXPECTED}")
    return path


def iter_reps(run_dir: Path) -> Iterator[tuple[str, int, Path]]:
    """Yield ``(variant, repetition, rep_dir)`` for every ``<variant>/rep<k>/`` with meta.json.

    Variants follow the order of ``experiment.yaml`` ``variants`` (a list of dicts with
    ``name``); variants not listed there, or all of them without such a list, come
    alphabetically after. Repetitions ascend.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"{run_dir}: not a directory; expected {RUN_DIR_EXPECTED}")
    order = {name: i for i, name in enumerate(variant_order(load_experiment(run_dir)))}
    found = _rep_dirs(run_dir)
    found.sort(key=lambda r: (order.get(r[0], len(order)), r[0], r[1]))
    yield from found


def aligned_times(events: pd.DataFrame, meta: dict[str, Any]) -> pd.Series:
    """Event times on the reference clock: ``t - clock_offsets[node]`` (offset 0 if absent).

    Convention: ``clock_offsets[node]`` is the node clock minus the reference clock, in seconds.
    """
    offsets = meta.get("clock_offsets") or {}
    t = events["t"].astype("float64")
    if not offsets or events.empty:
        return t
    off = events["node"].map({str(k): float(v) for k, v in offsets.items()})
    return t - off.astype("float64").fillna(0.0).to_numpy(dtype=np.float64)
