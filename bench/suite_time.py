"""The test suite's time and what it goes to (issue 37, item 5): pytest once, its time summed per test file.

Runs ``pytest -q`` with a JUnit XML report (any further arguments go to pytest, e.g. ``-m "not root"``),
then prints the wall time, the load average at the start and the end, and the files that took longest,
each with its share of the summed test time (setup and teardown of fixtures included, as pytest counts
them in the test that triggered them).  Exits with pytest's status.

Run: .venv/bin/python -m bench suite_time [--top 15] [PYTEST ARGS...]
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def per_file(junit: Path) -> dict[str, float]:
    """Seconds per test file from a JUnit XML report of pytest."""
    totals: dict[str, float] = collections.defaultdict(float)
    for case in ET.parse(junit).getroot().iter("testcase"):
        # the classname is the module's dotted path: tests.routing.medium.test_dcf (tests laid out by package)
        module = case.get("classname", "").split(".")
        end = next((i for i, m in enumerate(module) if m.startswith("test_")), None)
        parts = module[:end + 1] if end is not None else module[:1]
        if parts and parts[0] != "tests":
            parts = ["tests", *parts]
        totals["/".join(parts) + ".py"] += float(case.get("time", 0.0))
    return dict(totals)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench suite_time", description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=15)
    args, rest = ap.parse_known_args(argv)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="aspan-suite-time-") as tmp:
        junit = Path(tmp) / "junit.xml"
        t0 = time.monotonic()
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             f"--junitxml={junit}", *rest], cwd=ROOT).returncode
        wall = time.monotonic() - t0
        totals = per_file(junit) if junit.exists() else {}
    load1 = os.getloadavg()
    summed = sum(totals.values()) or 1.0
    print(f"\nsuite: {wall / 60:.1f} min wall (load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end)")
    for f, s in sorted(totals.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {s / 60:6.1f} min  {100 * s / summed:5.1f} %  {f}")
    return rc
