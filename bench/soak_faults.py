"""Soak with faults (issue 27, item 9): local runs for a set time, a fault injected in each on a schedule,
and after each the checks that nothing was lost, nothing was left running and the exit status was right.

The faults, in turn:

- ``relay_killed``: SIGKILL to the relay B mid-flow: exit 1, the repetition ``failed`` naming B;
- ``disk_full``: the output on a 2.5 MB tmpfs (root; skipped and said so without it), three repetitions
  that do not all fit: exit 1, "No space left on device" named, the finished repetitions' rows kept;
- ``junk_flood``: random datagrams sent for 2 s to the UDP port of node B mid-flow (loopback only): exit 0,
  the flow intact, the junk counted as ``malformed`` drops;
- ``sigterm``: SIGTERM to the runner mid-flow: exit 130, the repetition ``interrupted``.

After every run: the exit status is the expected one, every repetition with a meta.json has a whole one
and a row in summary.csv with the same status ("nothing lost"), no process of the run is left (``aspan
node --config <its dir>``) and no tmpfs stays mounted.

Run (root for disk_full): .venv/bin/python -m bench soak_faults [--minutes 10] [--segments 20000]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

ROOT = Path(__file__).resolve().parent.parent
FAULTS = ("relay_killed", "disk_full", "junk_flood", "sigterm")


@dataclass
class Outcome:
    fault: str
    seconds: float
    problems: list[str] = field(default_factory=list)


def _exp(tmp: Path, segments: int, reps: int = 1) -> Path:
    doc = {"name": "soak", "backend": "local", "repetitions": reps, "etx": {"settle_s": 0.5},
           "limits": {"max_duration_s": 120}, "loss": {"default": {"model": "bernoulli", "rate": 0.005}},
           "flows": [{"sender": "A", "receiver": "D", "segments": segments}],
           "variants": [{"name": "aspan", "tcp": {"variant": "sack"},
                         "snoop": {"policy": "adaptive", "pkt_qos": 0.99}}]}
    p = tmp / "soak.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def _start(exp: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "experiments", "run", str(exp), "--out", str(out), "--no-plot"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _wait(cond: Callable[[], object], timeout: float) -> object:
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise TimeoutError(f"not after {timeout} s")


def _flowing_rep(out: Path) -> Path:
    rep = _wait(lambda: next(out.glob("soak/*/aspan/rep0"), None), 60)
    assert isinstance(rep, Path)
    _wait(lambda: (rep / "D.log").exists() and '"deliver"' in (rep / "D.log").read_text(errors="replace"), 60)
    return rep


def _pid(rep: Path, node: str) -> int:
    for line in (rep / f"{node}.log").read_text().splitlines():
        if '"node_start"' in line:
            return int(json.loads(line)["pid"])
    raise ValueError(f"{rep}/{node}.log: no node_start")


def _left_running(out: Path) -> list[str]:
    r = subprocess.run(["pgrep", "-af", f"--config {out}"], capture_output=True, text=True)
    return r.stdout.splitlines()


def _check_records(out: Path, problems: list[str]) -> None:
    """Nothing lost: every repetition's meta.json is whole and has its row in summary.csv, same status."""
    runs = list(out.glob("soak/*"))
    if len(runs) != 1:
        problems.append(f"expected one run directory under {out}, found {len(runs)}")
        return
    run = runs[0]
    import pandas as pd
    try:
        summary = pd.read_csv(run / "summary.csv")
    except (OSError, ValueError) as e:
        problems.append(f"summary.csv unreadable: {e}")
        return
    for meta in sorted(run.glob("*/rep*/meta.json")):
        try:
            m = json.loads(meta.read_text())
        except ValueError as e:
            problems.append(f"{meta}: not whole ({e})")
            continue
        rows = summary[(summary["variant"] == m["variant"]) & (summary["repetition"] == m["repetition"])]
        if rows.empty:
            problems.append(f"{meta.parent}: no row in summary.csv")
        elif m["status"] in ("failed", "interrupted") and set(rows["status"]) != {m["status"]}:
            problems.append(f"{meta.parent}: summary says {set(rows['status'])}, meta.json {m['status']}")


def _finish(p: subprocess.Popen[str], out: Path, want_code: int, problems: list[str]) -> str:
    try:
        text, _ = p.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        text, _ = p.communicate()
        problems.append("the runner did not end within 180 s")
    if p.returncode != want_code:
        problems.append(f"exit status {p.returncode}, expected {want_code}: {text[-300:]}")
    try:
        _wait(lambda: not _left_running(out), 15)
    except TimeoutError:
        problems.append(f"left running: {_left_running(out)}")
    _check_records(out, problems)
    return text


def relay_killed(tmp: Path, segments: int) -> list[str]:
    problems: list[str] = []
    out = tmp / "out"
    p = _start(_exp(tmp, segments), out)
    rep = _flowing_rep(out)
    os.kill(_pid(rep, "B"), signal.SIGKILL)
    _finish(p, out, 1, problems)
    meta = json.loads((rep / "meta.json").read_text())
    if meta["status"] != "failed" or "node B exited with code -9" not in (meta["error"] or ""):
        problems.append(f"meta.json: {meta['status']}, {meta['error']}")
    return problems


def disk_full(tmp: Path, segments: int) -> list[str]:
    if os.geteuid() != 0:
        return ["skipped: mounting a tmpfs needs root"]
    problems: list[str] = []
    disk = Path(f"/tmp/aspan-soak-{uuid.uuid4().hex[:12]}")
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2560k", "tmpfs", str(disk)], check=True)
    try:
        p = _start(_exp(tmp, 1000, reps=3), disk)      # about 550 kB of logs a repetition: the third does not fit
        text = _finish(p, disk, 1, problems)
        if "No space left on device" not in text or "Traceback" in text:
            problems.append(f"output: {text[-300:]}")
    finally:
        subprocess.run(["umount", str(disk)], check=False)
        disk.rmdir()
    return problems


def junk_flood(tmp: Path, segments: int) -> list[str]:
    problems: list[str] = []
    out = tmp / "out"
    p = _start(_exp(tmp, segments), out)
    rep = _flowing_rep(out)
    host, port = json.loads((rep / "B.node.json").read_text())["bind"]
    rng = random.Random(27)
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        end = time.time() + 2.0
        while time.time() < end:
            s.sendto(rng.randbytes(rng.randint(1, 1400)), (host, port))     # loopback only: a node of this run
            sent += 1
    _finish(p, out, 0, problems)
    import pandas as pd
    row = pd.read_csv(next(out.glob("soak/*")) / "summary.csv").iloc[0]
    if row["status"] != "ok" or not bool(row["integrity_ok"]):
        problems.append(f"flow not intact under the flood: {row['status']}, integrity {row['integrity_ok']}")
    if not row["drops_malformed"] > 0:
        problems.append(f"{sent} junk datagrams sent, drops_malformed {row['drops_malformed']}")
    return problems


def sigterm(tmp: Path, segments: int) -> list[str]:
    problems: list[str] = []
    out = tmp / "out"
    p = _start(_exp(tmp, segments), out)
    rep = _flowing_rep(out)
    os.kill(p.pid, signal.SIGTERM)
    _finish(p, out, 130, problems)
    meta = json.loads((rep / "meta.json").read_text())
    if meta["status"] != "interrupted":
        problems.append(f"meta.json status {meta['status']}")
    return problems


RUNS: dict[str, Callable[[Path, int], list[str]]] = {
    "relay_killed": relay_killed, "disk_full": disk_full, "junk_flood": junk_flood, "sigterm": sigterm}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench soak_faults")
    ap.add_argument("--minutes", type=float, default=10.0, help="how long to go on starting runs")
    ap.add_argument("--segments", type=int, default=20000)
    args = ap.parse_args(argv)
    outcomes: list[Outcome] = []
    load0 = os.getloadavg()
    t_end = time.time() + args.minutes * 60
    i = 0
    while time.time() < t_end:
        fault = FAULTS[i % len(FAULTS)]
        i += 1
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix="aspan-soak-") as tmp:
            try:
                problems = RUNS[fault](Path(tmp), args.segments)
            except (TimeoutError, OSError, ValueError, KeyError) as e:
                problems = [f"{type(e).__name__}: {e}"]
        outcomes.append(Outcome(fault, time.time() - t0, problems))
        print(f"[{i}] {fault}: {'ok' if not problems else '; '.join(problems)} ({time.time() - t0:.1f} s)",
              flush=True)
    load1 = os.getloadavg()
    print(f"\nsoak_faults: {len(outcomes)} runs in {args.minutes:g} min, {args.segments} segments a run; "
          f"load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end\n")
    print("| fault | runs | all checks passed | skipped | median s | max s |")
    print("|---|---|---|---|---|---|")
    failed = 0
    for fault in FAULTS:
        mine = [o for o in outcomes if o.fault == fault]
        if not mine:
            continue
        skipped = sum(o.problems[:1] == ["skipped: mounting a tmpfs needs root"] for o in mine)
        good = sum(not o.problems for o in mine)
        failed += len(mine) - good - skipped
        secs = [o.seconds for o in mine]
        print(f"| {fault} | {len(mine)} | {good} | {skipped} | {statistics.median(secs):.1f} | {max(secs):.1f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
