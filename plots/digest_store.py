"""Digests on disk: ``<variant>/rep<k>/digest.npz`` next to a compacted repetition's events.

A digest (plots.digest) is written when a repetition is compacted (plots.compact) and read by
the summary and the figures instead of the events.  It is used only while it still describes
the repetition: its key is a hash of ``events.parquet``, ``meta.json`` and the source of the
modules that compute digests, so changed events, a changed meta.json or changed summary code
make it stale, and it is then computed again (and rewritten when the caller may write into the
run).  A repetition that still has JSON Lines logs is always digested from them, never cached.

Format: a NumPy ``.npz`` (no pickle) holding the arrays, and the rest as one JSON text.
"""
from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from plots.digest import Drawn, FlowDigest, Hist, RepDigest, json_default, digest_rep
from plots.logs import PARQUET, iter_reps, load_rep

__all__ = ["DIGEST", "digest_key", "write_digest", "read_digest", "rep_digest", "run_digests"]

DIGEST = "digest.npz"
FORMAT = "aspan-digest-1"
# The modules whose code decides a digest's numbers: a change to any of them invalidates digests.
_CODE = ("digest.py", "digest_store.py", "summary.py", "flows.py", "logs.py")
_code_hash: str | None = None


def _code() -> str:
    global _code_hash
    if _code_hash is None:
        h = hashlib.blake2b(FORMAT.encode(), digest_size=16)
        here = Path(__file__).resolve().parent
        for name in _CODE:
            h.update((here / name).read_bytes())
        _code_hash = h.hexdigest()
    return _code_hash


def digest_key(rep_dir: Path) -> str | None:
    """The key a cached digest of ``rep_dir`` must carry; None when the repetition is not
    (only) compacted, so its digest is never cached."""
    rep_dir = Path(rep_dir)
    events = rep_dir / PARQUET
    if not events.is_file() or any(rep_dir.glob("*.log")) or not (rep_dir / "meta.json").is_file():
        return None
    h = hashlib.blake2b(_code().encode(), digest_size=16)
    for part in (events, rep_dir / "meta.json"):
        h.update(part.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def write_digest(rep_dir: Path, digest: RepDigest, key: str) -> Path:
    """Write ``rep_dir/digest.npz`` (through a temporary file, so a reader never sees half)."""
    arrays: dict[str, np.ndarray] = {}
    flows = []
    for i, f in enumerate(digest.flows):
        for name, hist in (("cwnd", f.cwnd), ("tx", f.tx)):
            arrays[f"f{i}.{name}.v"], arrays[f"f{i}.{name}.c"] = hist.values, hist.counts
        for name, drawn in (("cwnd_drawn", f.cwnd_drawn), ("tx_drawn", f.tx_drawn)):
            arrays[f"f{i}.{name}.t"], arrays[f"f{i}.{name}.y"] = drawn.t, drawn.y
        flows.append({"row": f.row, "flow": f.flow, "n_flows": f.n_flows})
    nodes = sorted(digest.cache)
    for j, node in enumerate(nodes):
        arrays[f"c{j}.t"], arrays[f"c{j}.y"] = digest.cache[node].t, digest.cache[node].y
    doc = {"format": FORMAT, "key": key, "variant": digest.variant, "repetition": digest.repetition,
           "meta": digest.meta, "bad_lines_by_node": digest.bad_lines_by_node, "flows": flows,
           "cache_nodes": nodes}
    text = json.dumps(doc, default=json_default, allow_nan=True)
    arrays["doc"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    path = Path(rep_dir) / DIGEST
    tmp = path.with_name(DIGEST + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)
    return path


def read_digest(rep_dir: Path, key: str) -> RepDigest | None:
    """The digest cached in ``rep_dir`` if it carries ``key``; None if absent or stale.
    ValueError naming the file when it exists but cannot be read."""
    path = Path(rep_dir) / DIGEST
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
        doc = json.loads(arrays.pop("doc").tobytes().decode("utf-8"))
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{path}: not a readable digest ({exc}); delete it to recompute") from None
    if doc.get("format") != FORMAT or doc.get("key") != key:
        return None
    flows = []
    for i, f in enumerate(doc["flows"]):
        a = lambda name: arrays[f"f{i}.{name}"]   # noqa: E731
        flows.append(FlowDigest(row=f["row"], flow=f["flow"], n_flows=int(f["n_flows"]),
                                cwnd=Hist(a("cwnd.v"), a("cwnd.c")),
                                cwnd_drawn=Drawn(a("cwnd_drawn.t"), a("cwnd_drawn.y")),
                                tx=Hist(a("tx.v"), a("tx.c")),
                                tx_drawn=Drawn(a("tx_drawn.t"), a("tx_drawn.y"))))
    cache = {node: Drawn(arrays[f"c{j}.t"], arrays[f"c{j}.y"])
             for j, node in enumerate(doc["cache_nodes"])}
    return RepDigest(str(doc["variant"]), int(doc["repetition"]), doc["meta"],
                     {str(k): int(v) for k, v in doc["bad_lines_by_node"].items()}, flows, cache)


def rep_digest(rep_dir: Path, variant: str, repetition: int, write: bool = True) -> RepDigest:
    """The digest of one repetition: the cached one if current, else computed from its logs
    (and cached when the repetition is compacted and ``write``)."""
    rep_dir = Path(rep_dir)
    key = digest_key(rep_dir)
    if key is not None:
        cached = read_digest(rep_dir, key)
        if cached is not None and cached.variant == variant and cached.repetition == repetition:
            return cached
    digest = digest_rep(load_rep(rep_dir), variant, repetition)
    if key is not None and write:
        write_digest(rep_dir, digest, key)
    return digest


def _rep_digest_task(args: tuple[Path, str, int, bool]) -> RepDigest:
    return rep_digest(*args)


def run_digests(run_dir: Path, write: bool = True, jobs: int | None = None
                ) -> list[tuple[Path, RepDigest]]:
    """``(rep_dir, digest)`` of every repetition of a run, in iter_reps order.  Those not cached are
    computed by ``jobs`` worker processes (default: up to 2, as the runner)."""
    reps = list(iter_reps(Path(run_dir)))
    out: dict[int, RepDigest] = {}
    todo = []
    for i, (variant, k, rep_dir) in enumerate(reps):
        key = digest_key(rep_dir)
        cached = read_digest(rep_dir, key) if key is not None else None
        if cached is not None and cached.variant == variant and cached.repetition == k:
            out[i] = cached
        else:
            todo.append(i)
    jobs = min(jobs or min(os.cpu_count() or 1, 2), len(todo))
    tasks = [(reps[i][2], reps[i][0], reps[i][1], write) for i in todo]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(_rep_digest_task, tasks))
    else:
        done = [_rep_digest_task(t) for t in tasks]
    out.update(zip(todo, done))
    return [(reps[i][2], out[i]) for i in range(len(reps))]
