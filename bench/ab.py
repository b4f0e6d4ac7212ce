"""Before/after in one run: a benchmark of this tree against another revision, rounds interleaved.

``python -m bench ab REV BENCH [ARGS...]`` checks REV out into a temporary git worktree, then runs
``python -m bench BENCH ARGS`` alternately in REV's tree and in this one, ``--rounds`` times each (the
same interpreter and installed packages; each tree first on PYTHONPATH), and prints, for every
output line whose label both runs print, the median of each number over the rounds and the ratio
this tree / REV.  On a noisy machine the medians of interleaved rounds are what to quote; the load
average is printed with every round.

Example: ``python -m bench ab 1355d84 handler_cost --packets 20000 --rounds 1``
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_NUM = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")   # 16,000 is one number


def _run(tree: Path, bench: str, args: list[str]) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, "-m", "bench", bench, *args], cwd=tree, env=env, capture_output=True,
                       text=True, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"bench ab: {bench} failed in {tree} (exit {r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def _rows(out: str) -> dict[str, list[float]]:
    """label -> numbers of each output line that has both (the label is the line without its numbers)."""
    rows = {}
    for line in out.splitlines():
        nums = [float(x.replace(",", "")) for x in _NUM.findall(line)]
        label = " ".join(_NUM.sub("#", line).split())
        if nums and label.strip("# "):
            rows.setdefault(label, nums)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench ab")
    ap.add_argument("rev", help="the revision to compare against (before)")
    ap.add_argument("bench", help="the benchmark to run in both trees")
    ap.add_argument("--ab-rounds", type=int, default=3, help="interleaved rounds per tree")
    args, rest = ap.parse_known_args(argv)
    results: dict[str, list[dict[str, list[float]]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.rev], check=True,
                       capture_output=True)
        try:
            for r in range(args.ab_rounds):
                for side, tree in (("before", base), ("after", ROOT)):
                    print(f"round {r + 1} {side} ({args.rev if side == 'before' else 'this tree'}), "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)
                    results[side].append(_rows(_run(tree, args.bench, rest)))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    print(f"\n{args.bench} {' '.join(rest)}: medians of {args.ab_rounds} interleaved rounds, "
          f"before = {args.rev}, after = this tree")
    labels = [k for k in results["after"][0] if all(k in r for r in results["before"] + results["after"])]
    for label in labels:
        cols = []
        for i in range(len(results["after"][0][label])):
            try:
                b = statistics.median(r[label][i] for r in results["before"])
                a = statistics.median(r[label][i] for r in results["after"])
            except IndexError:
                continue
            cols.append(f"{b:g} -> {a:g}" + (f" ({a / b:.2f}x)" if b else ""))
        print(f"  {label}: " + "; ".join(cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
