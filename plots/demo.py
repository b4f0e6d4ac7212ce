"""The last lines of ``make demo``: what the run measured, what the numbers mean, what to open.

``python -m plots.demo RUNS_DIR`` takes the newest run under ``RUNS_DIR`` (``runs/demo-mesh``: the
timestamped directories ``aspan run`` writes) or a run directory itself, and prints per variant the
means over its repetitions of the numbers the paper's Figs. 5-6 compare, the paper's claims beside
this run's ratios (plots.reference), and where the report and figures are.  Exit status 1 when
there is no run with a summary.csv (the demo did not produce what it promised).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from plots.numbers import plain
from plots.overview import report_holds
from plots.reference import CLAIMS, METRIC_NAMES, claim_ratio, metric_values
from plots.summary import read_summary

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ("goodput_mbps", "losses", "cwnd_median", "tx_per_pkt_p99")
MESH_NOTE = {"demo-mesh": " (sim backend, shared 802.11g medium: the mesh's numbers, not this machine's CPU)"}
# Why A-SPAN with the paper's dupack rule costs goodput on the demo's cell, as docs/REPRODUCTION.md
# measures it ("The paper's dupack rule feeds on itself"; the cell rows of "On a shared medium").
WHY_GOODPUT = {"demo-mesh": (
    "Why A-SPAN's goodput is lower: with the paper's dupack rule the snoop node resends a segment on every dupack "
    "and each surplus copy brings another dupack ({rtx} local retransmissions for {segments} segments in {variant}); "
    "docs/REPRODUCTION.md measures those copies taking the shared air and overflowing C's queue in this cell.")}


def why_goodput(summary: "pd.DataFrame", name: str) -> list[str]:
    """The demo's one line on why A-SPAN costs goodput (WHY_GOODPUT), for its experiment only and only when
    this run shows the cost: a variant that retransmitted locally has a lower mean goodput than sack.  It
    names the variant that retransmitted most, with its mean local retransmissions and segments."""
    import pandas as pd
    if name not in WHY_GOODPUT or "local_retransmissions" not in summary or "goodput_mbps" not in summary:
        return []
    rows = summary[summary["status"].astype(str) == "ok"] if "status" in summary else summary
    means = rows.groupby(rows["variant"].astype(str), sort=False)[["goodput_mbps", "local_retransmissions"]].agg(
        lambda c: pd.to_numeric(c, errors="coerce").mean())
    if "sack" not in means.index:
        return []
    costly = means[(means["local_retransmissions"] > 0) & (means["goodput_mbps"] < means.loc["sack", "goodput_mbps"])]
    if costly.empty:
        return []
    variant = str(costly["local_retransmissions"].idxmax())
    segments = pd.to_numeric(rows.loc[rows["variant"].astype(str) == variant, "segments"], errors="coerce").mean() \
        if "segments" in rows else float("nan")
    return ["", WHY_GOODPUT[name].format(rtx=plain(costly.loc[variant, "local_retransmissions"]),
                                         segments=plain(segments) if segments == segments else "?", variant=variant)]


MEANING = [
    "What the numbers mean{note}:",
    "  losses: loss events the TCP sender saw (three duplicate ACKs or a timeout); A-SPAN's snoop caches",
    "          repair losses near where they happen, so the sender should see fewer (paper Fig. 5a).",
    "  cwnd median: the sender's congestion window in segments; fewer losses should let it stay larger (Fig. 5b).",
    "  tx/pkt p99: transmissions of a packet over all nodes, 99th percentile: what local retransmissions",
    "          cost (Fig. 6); goodput: what the receiver got per second, which the paper does not report.",
]


def latest_run(path: Path) -> Path | None:
    """``path`` if it is a run (has summary.csv), else its newest subdirectory that is one."""
    if (path / "summary.csv").is_file():
        return path
    runs = sorted(p for p in path.glob("*/summary.csv"))
    return runs[-1].parent if runs else None


def demo_lines(run_dir: Path) -> list[str]:
    """The lines ``make demo`` ends with (see the module docstring)."""
    import yaml
    summary = read_summary(run_dir)
    name = str((yaml.safe_load((run_dir / "experiment.yaml").read_text()) or {}).get("name", "")) \
        if (run_dir / "experiment.yaml").is_file() else ""
    variants = list(dict.fromkeys(summary["variant"].astype(str)))
    width = max(len(v) for v in variants) if variants else 7
    header = f"  {'variant':<{width}}  " + "  ".join(f"{c:>14}" for c in ("goodput Mbit/s", "losses",
                                                                        "cwnd median", "tx/pkt p99"))
    lines = ["", f"Run {run_dir} ({name or 'experiment'}), means over repetitions:", header]
    for v in variants:
        cells = []
        for metric in COLUMNS:
            vals = metric_values(summary, v, metric)
            cells.append(plain(sum(vals) / len(vals)) if vals else "failed")
        lines.append(f"  {v:<{width}}  " + "  ".join(f"{c:>14}" for c in cells))
    claims = [(c, claim_ratio(summary, c)) for c in CLAIMS if name in c.experiments]
    claims = [(c, r) for c, r in claims if r is not None]
    if claims:
        lines += ["", "The paper's claims against this run:"]
        for c, r in claims:
            what = (f"{c.baseline} / {c.variant} {METRIC_NAMES[c.metric]}" if c.fewer
                    else f"{c.variant} / {c.baseline} {METRIC_NAMES[c.metric]}")
            ref = f", docs/REPRODUCTION.md {plain(c.ours)}x" if c.ours is not None else ""
            lines.append(f"  {c.figure} {what}: paper {c.paper}{ref}, this run {plain(r)}x")
        lines.append(f"  (reference: {claims[0][0].source})")
    lines += why_goodput(summary, name)
    holds = report_holds(run_dir, summary, name)     # only the sections this run's report has
    lines += ["", MEANING[0].format(note=MESH_NOTE.get(name, "")), *MEANING[1:], "",
              f"Open {run_dir / 'report.html'} (or report.md): the figures titled with the paper's questions"
              + "".join(f", {h}" for h in holds) + ";",
              f"figures in {run_dir / 'figures'}."]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m plots.demo RUNS_DIR_OR_RUN_DIR", file=sys.stderr)
        return 2
    run = latest_run(Path(args[0]))
    if run is None:
        print(f"plots.demo: no run with a summary.csv in {args[0]}", file=sys.stderr)
        return 1
    print("\n".join(demo_lines(run)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
