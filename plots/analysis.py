"""The analysis API: a run directory as pandas frames, one per event type (docs/LOGS.md, "Analysis").

::

    import plots
    run = plots.load("runs/paper-lossy/20261123-101500")
    tx = run.frame("tx")            # every variant and repetition: variant, repetition, node, t, flow, seq, ...
    tx.groupby(["variant", "repetition", "flow", "seq"]).size()     # transmissions per packet

Every frame has ``variant``, ``repetition``, ``node``, ``t`` (seconds on the reference clock:
the node's ``t`` minus its ``meta.json`` clock offset) and the event's own fields (docs/LOGS.md,
"Event log"); a field an event does not carry is left out.

One name per flow (issue 28): a frame's ``flow`` is the name summary.csv, the figures and the
report use, ``sender->receiver:dport`` with node names (``A->D:6000``, from
:func:`plots.flows.rep_flows`); the id the node logged (``10.2.1.1:5000>10.2.1.5:6000``) is kept
as ``flow_id``.  The integer fields of docs/LOGS.md (:data:`INT_FIELDS`: ``seq``, ``len``,
``hop``, ...) are integer columns (pandas ``Int64``, missing values ``<NA>``), not floats.  The summary (plots.summary) and the
figures (plots.data) read the run through the same :meth:`Run.reps`, one repetition at a time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from plots.flows import flow_names
from plots.logs import RepLogs, aligned_times, check_run_dir, iter_reps, load_experiment, load_rep

KEYS = ["variant", "repetition", "node", "t"]
# Event fields that are integers in docs/LOGS.md ("Event log"): sequence numbers, lengths, hop
# counts, sizes in bytes or segments.
INT_FIELDS = ("seq", "ack", "len", "hop", "segments", "segment_size", "bytes", "cwnd", "ssthresh")


@dataclass
class Run:
    """A run directory: its resolved experiment and its repetitions' logs."""

    run_dir: Path
    experiment: dict[str, Any]
    _frames: dict[str, pd.DataFrame] | None = field(default=None, repr=False)

    def reps(self) -> Iterator[tuple[str, int, RepLogs]]:
        """``(variant, repetition, logs)`` for every repetition, in the experiment's variant order;
        loaded one at a time, so a large run never holds more than one repetition's logs."""
        for variant, k, rep_dir in iter_reps(self.run_dir):
            yield variant, k, load_rep(rep_dir)

    def frames(self) -> dict[str, pd.DataFrame]:
        """Event name -> one frame of that event over every variant and repetition (loaded once)."""
        if self._frames is None:
            parts: dict[str, list[pd.DataFrame]] = {}
            for variant, k, logs in self.reps():
                ev = logs.events
                if ev.empty:
                    continue
                ev = ev.assign(t=aligned_times(ev, logs.meta), variant=variant, repetition=k)
                if "flow" in ev:
                    ev = ev.assign(flow_id=ev["flow"], flow=flow_names(logs, ev["flow"]))
                for name, part in ev.groupby("ev", sort=False):
                    parts.setdefault(str(name), []).append(part.dropna(axis=1, how="all"))
            self._frames = {name: _tidy(pd.concat(p, ignore_index=True)) for name, p in parts.items()}
        return self._frames

    def frame(self, ev: str) -> pd.DataFrame:
        """One event type over the whole run (an empty frame with the key columns if none was logged)."""
        return self.frames().get(ev, pd.DataFrame({k: pd.Series(dtype="object") for k in KEYS}))


def _integers(df: pd.DataFrame) -> pd.DataFrame:
    """The :data:`INT_FIELDS` columns as ``Int64`` (left as they are if a value is not whole)."""
    for c in INT_FIELDS:
        if c in df and df[c].dtype.kind == "f":
            vals = df[c].dropna()
            if (vals == vals.round()).all():
                df[c] = df[c].astype("Int64")
    return df


def _tidy(df: pd.DataFrame) -> pd.DataFrame:
    rest = [c for c in df.columns if c not in KEYS and c != "ev"]
    return _integers(df[KEYS + rest].copy())


def load(run_dir: str | Path) -> Run:
    """The run directory ``run_dir`` (ValueError naming what is missing if it is not one)."""
    run_dir = check_run_dir(Path(run_dir))
    return Run(run_dir, load_experiment(run_dir))
