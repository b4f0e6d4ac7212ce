"""``run_dir/summary.csv`` of a whole run, from its repetitions' digests.

Apart from plots.summary (which computes the rows, and which the digests call) so that the
summary of a run is built from digests like the figures, without the two modules importing each
other.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from plots.digest_store import run_digests
from plots.logs import check_run_dir
from plots.summary import summary_csv, write_summary_rows

__all__ = ["write_summary", "summary_text"]


def _rows(run_dir: Path) -> list[dict]:
    run_dir = check_run_dir(Path(run_dir))
    return [f.row for _rep_dir, digest in run_digests(run_dir) for f in digest.flows]


def summary_text(run_dir: Path) -> str:
    """The text :func:`write_summary` would write (the runner writes it itself, through its reserve
    of room for a full disk: experiments.records)."""
    return summary_csv(_rows(run_dir))[1]


def write_summary(run_dir: Path) -> pd.DataFrame:
    """Summarize every rep of ``run_dir`` (iter_reps order, one row per flow) and write
    ``run_dir/summary.csv``; the rows come from the repetitions' digests (plots.digest_store:
    cached next to a compacted repetition's events, else computed from its logs), as the
    figures' do."""
    return write_summary_rows(run_dir, _rows(run_dir))
