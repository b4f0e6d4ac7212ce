"""How late the real-time medium delivered its frames, and when that stops meaning 802.11.

On the local backend the medium process, on netns the medium daemon, log one ``frame`` event per
delivered frame in ``medium.log`` (docs/LOGS.md): ``late_us`` is how long after the DCF core's
delivery time the process actually sent the frame on, ``airtime_us`` the air the frame held over
its ``attempts`` transmissions.  The core's schedule is exact; lateness is the only error the
real-time medium adds (docs/MEDIUM.md), and it is CPU, not radio.

The rule (issue 28, item 4): when the 99th percentile of the lateness exceeds a tenth of the mean
airtime of one transmission (data + SIFS + ACK: ``sum(airtime_us) / sum(attempts)``), the
process's delays are no longer small next to the medium's own timing, so the run's contention,
retries and goodput stop meaning 802.11: the report and the terminal say so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from plots.logs import PARQUET, iter_reps
from plots.numbers import plain

__all__ = ["LATE_FRACTION", "Lateness", "frame_lateness", "run_lateness", "lateness_section",
           "lateness_warnings"]

LATE_FRACTION = 0.1          # warn when p99 lateness > this x the mean airtime per transmission
MEDIUM_LOG = "medium.log"    # the medium process's (local) or daemon's (netns) node log


@dataclass(frozen=True)
class Lateness:
    """The lateness of one variant's frames, pooled over its repetitions (microseconds)."""

    variant: str
    reps: int
    frames: int
    p50_us: float
    p99_us: float
    max_us: float
    airtime_us: float        # mean airtime of one transmission

    @property
    def limit_us(self) -> float:
        return LATE_FRACTION * self.airtime_us

    @property
    def too_late(self) -> bool:
        return bool(self.p99_us > self.limit_us)


def frame_lateness(rep_dir: Path) -> np.ndarray:
    """The repetition's frames as rows (late_us, airtime_us, attempts): from ``medium.log``, or from
    ``events.parquet`` once compacted (only the ``frame`` rows are read).  Empty (0 x 3) if none."""
    rows: list[tuple[float, float, float]] = []
    log = Path(rep_dir) / MEDIUM_LOG
    if log.is_file():
        with log.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if '"frame"' not in line:   # a cheap filter (compact or spaced JSON)
                    continue
                try:
                    e = json.loads(line)
                    if e.get("ev") != "frame":
                        continue
                    rows.append((float(e["late_us"]), float(e["airtime_us"]), float(e["attempts"])))
                except (ValueError, KeyError, TypeError):
                    continue   # a truncated last line, as the log readers skip it
    compacted = Path(rep_dir) / PARQUET
    if compacted.is_file():
        import pyarrow.parquet as pq
        try:
            table = pq.read_table(compacted, filters=[("ev", "==", "frame")])
        except (OSError, ValueError) as exc:
            raise ValueError(f"{compacted}: not readable as the repetition's events ({exc})") from None
        if {"late_us", "airtime_us", "attempts"} <= set(table.column_names):
            cols = [table.column(c).to_numpy(zero_copy_only=False).astype(float)
                    for c in ("late_us", "airtime_us", "attempts")]
            rows += [r for r in zip(*cols) if all(np.isfinite(r))]
    return np.asarray(rows, dtype=float).reshape(-1, 3)


def run_lateness(run_dir: Path) -> list[Lateness]:
    """One Lateness per variant whose repetitions logged frames (in the run's variant order)."""
    per_variant: dict[str, list[np.ndarray]] = {}
    for variant, _rep, rep_dir in iter_reps(Path(run_dir)):
        frames = frame_lateness(rep_dir)
        if len(frames):
            per_variant.setdefault(variant, []).append(frames)
    out = []
    for variant, parts in per_variant.items():
        f = np.concatenate(parts)
        late = f[:, 0]
        out.append(Lateness(variant, len(parts), len(f), float(np.percentile(late, 50)),
                            float(np.percentile(late, 99)), float(late.max()),
                            float(f[:, 1].sum() / max(f[:, 2].sum(), 1.0))))
    return out


def lateness_warnings(rows: list[Lateness], where: str = "") -> list[str]:
    """One sentence per variant whose p99 lateness exceeds LATE_FRACTION of the mean airtime."""
    head = f"{where}: " if where else ""
    return [f"{head}{r.variant}: the medium process delivered frames {plain(r.p99_us / 1000)} ms late at "
            f"p99, more than {LATE_FRACTION:g} x the mean airtime of a transmission "
            f"({plain(r.airtime_us / 1000)} ms): its timing is the CPU's, not 802.11's; read its "
            "retries, collisions and goodput with care (docs/MEDIUM.md)" for r in rows if r.too_late]


def lateness_section(runs: list[tuple[str, list[Lateness]]]) -> list[str]:
    """The report's "Medium lateness" section for one or more (label, rows); [] when no run logged frames."""
    if not any(rows for _label, rows in runs):
        return []
    labelled = len(runs) > 1 or any(label for label, _rows in runs)
    lines = ["## Medium lateness (real-time medium process)", "",
             "How late the medium process (local) or daemon (netns) delivered each frame after the DCF "
             "core's delivery time, pooled over repetitions; the core's schedule is exact, this is the "
             f"only error it adds. **Late** marks p99 above {LATE_FRACTION:g} x the mean airtime of one "
             "transmission (data + SIFS + ACK).", ""]
    head = (["run"] if labelled else []) + ["variant", "reps", "frames", "p50 ms", "p99 ms", "max ms",
                                            "airtime per transmission ms", "p99 / airtime", "late"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, rows in runs:
        for r in rows:
            cells = ([label or "-"] if labelled else []) + [
                r.variant, str(r.reps), str(r.frames), plain(r.p50_us / 1000), plain(r.p99_us / 1000),
                plain(r.max_us / 1000), plain(r.airtime_us / 1000),
                plain(r.p99_us / r.airtime_us) if r.airtime_us > 0 else "",
                "**late**" if r.too_late else "no"]
            lines.append("| " + " | ".join(cells) + " |")
    warnings = [w for label, rows in runs for w in lateness_warnings(rows, label)]
    lines += [""] + [f"> Warning: {w}." for w in warnings] + ([""] if warnings else [])
    return lines
