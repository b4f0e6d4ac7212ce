"""``aspan deploy setup`` on four virtual Pis: from nothing, and again with the caches warm (issue 37, item 1).

One round is two setups, each on four new Pis (their install directories empty):

- ``cold``: an empty wheelhouse and an empty pip cache, what a new user's first setup meets;
- ``warm``: the wheelhouse and the pip cache that the cold setup of the same round filled.

The rounds are interleaved (cold, warm, cold, warm, ...) so that the machine's load falls on both alike;
the medians and the ratio warm / cold are printed, with the load average at the start and the end.
``--arch arm64`` takes the arm64 Raspberry Pi OS Pis of ``tests/root/vpi_arm64.py`` (their own root file
system, the project's venv built under qemu); the default is the x86 Pis that share this machine's.

Run (root): .venv/bin/python -m bench setup_vpi [--rounds 2] [--arch x86|arm64]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))          # the virtual Pi lab lives with the tests that use it


def _lab(arch: str, workdir: Path):
    if arch == "arm64":
        from vpi_arm64 import Arm64PiLab
        return Arm64PiLab(workdir)
    from vpi import VirtualPiLab
    return VirtualPiLab(workdir)


def one_setup(arch: str, base: Path, wheelhouse: Path, pip_cache: Path, timeout_s: float) -> float:
    """Seconds that ``aspan deploy setup`` took on four new Pis; raises if it failed."""
    lab = _lab(arch, base / "lab")
    try:
        lab.start()
        inv = lab.inventory(base / "inv.yaml", connect_timeout_s=10)
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "experiments", "deploy", "setup", "-i", str(inv),
                            "--wheelhouse", str(wheelhouse)], cwd=ROOT, capture_output=True, text=True,
                           timeout=timeout_s, env={**os.environ, "PIP_CACHE_DIR": str(pip_cache)})
        took = time.monotonic() - t0
        if r.returncode != 0:
            raise RuntimeError(f"aspan deploy setup failed (exit {r.returncode}):\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
        return took
    finally:
        lab.stop()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench setup_vpi", description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--arch", choices=("x86", "arm64"), default="x86")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds one setup may take")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("setup_vpi needs root (network namespaces, sshd)", file=sys.stderr)
        return 2
    load0 = os.getloadavg()
    cold: list[float] = []
    warm: list[float] = []
    with tempfile.TemporaryDirectory(prefix="aspan-bench-setup-") as tmp:
        for k in range(args.rounds):
            rnd = Path(tmp) / f"round{k}"
            wheelhouse, cache = rnd / "wheelhouse", rnd / "pip-cache"
            for label, into in (("cold", cold), ("warm", warm)):
                s = one_setup(args.arch, rnd / label, wheelhouse, cache, args.timeout)
                into.append(s)
                print(f"round {k + 1} {label}: {s:.1f} s", flush=True)
    load1 = os.getloadavg()
    c, w = statistics.median(cold), statistics.median(warm)
    print(f"aspan deploy setup, four {args.arch} virtual Pis, {args.rounds} interleaved rounds "
          f"(load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end):")
    print(f"  cold (empty wheelhouse, empty pip cache): median {c:.1f} s  {[round(x, 1) for x in cold]}")
    print(f"  warm (both filled by the cold setup):     median {w:.1f} s  {[round(x, 1) for x in warm]}")
    print(f"  warm / cold: {w / c:.2f}")
    return 0
