"""The analysis API: a run directory as pandas frames, one per event type (docs/LOGS.md, "Analysis").

::

    import plots
    run = plots.load("runs/paper-lossy/20261123-101500")
    tx = run.frame("tx")            # every variant and repetition: variant, repetition, node, t, flow, seq, ...
    tx.groupby(["variant", "repetition", "flow", "seq"]).size()     # transmissions per packet

Every frame has ``variant``, ``repetition``, ``node``, ``t`` (seconds on the reference clock:
the node's ``t`` minus its ``meta.json`` clock offset) and the event's own fields (docs/LOGS.md,
"Event log"); a field an event does not carry is left out.  The summary (plots.summary) and the
figures (plots.data) read the run through the same :meth:`Run.reps`, one repetition at a time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from plots.logs import RepLogs, aligned_times, check_run_dir, iter_reps, load_experiment, load_rep

KEYS = ["variant", "repetition", "node", "t"]


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
                for name, part in ev.groupby("ev", sort=False):
                    parts.setdefault(str(name), []).append(part.dropna(axis=1, how="all"))
            self._frames = {name: _tidy(pd.concat(p, ignore_index=True)) for name, p in parts.items()}
        return self._frames

    def frame(self, ev: str) -> pd.DataFrame:
        """One event type over the whole run (an empty frame with the key columns if none was logged)."""
        return self.frames().get(ev, pd.DataFrame({k: pd.Series(dtype="object") for k in KEYS}))


def _tidy(df: pd.DataFrame) -> pd.DataFrame:
    rest = [c for c in df.columns if c not in KEYS and c != "ev"]
    return df[KEYS + rest]


def load(run_dir: str | Path) -> Run:
    """The run directory ``run_dir`` (ValueError naming what is missing if it is not one)."""
    run_dir = check_run_dir(Path(run_dir))
    return Run(run_dir, load_experiment(run_dir))
