"""Helpers of the whole-system tests (tests/system/, tests/loopback/, tests/root/): start an ``aspan run``
in a process group, wait for a condition, read a run's node logs, and check that a netns run left nothing behind.
"""
from tests import ROOT
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
import yaml
from experiments.backends.netns import state
from experiments.backends.netns.sh import run
import time


REQUIRED = os.environ.get("ASPAN_REQUIRE_ROOT_TESTS") == "1"


def _our_processes(tag: str) -> list[str]:
    r = subprocess.run(["pgrep", "-af", "experiments.backends.netns"], capture_output=True, text=True)
    return [line for line in r.stdout.splitlines() if tag in line]


def our_run_ids(tmp_path: Path) -> set[str]:
    """The run ids of the netns runs this test made: every run writes its namespaces' names under the test's
    directory (meta.json, written before the namespaces exist, and each daemon's <node>.node.json)."""
    ids = set()
    for f in tmp_path.rglob("*.json"):
        ids.update(m.group(1) for m in re.finditer(r"aspn-([0-9a-f]{6})-", f.read_text(errors="replace")))
    return ids


def assert_nothing_left(tmp_path: Path, timeout: float = 20) -> set[str]:
    """No namespace, interface or process of the netns runs made under ``tmp_path`` is left; returns their
    run ids.  Only what carries those run ids counts: another run on the machine cannot fail it."""
    ours = our_run_ids(tmp_path)
    wait_for(lambda: not [ns for ns in state.list_namespaces() if state.run_id_of(ns) in ours], timeout,
             f"our namespaces (runs {sorted(ours)}) to disappear")
    wait_for(lambda: not _our_processes(str(tmp_path)), 20, "our handler and app processes to end")
    names = [line.split(": ")[1].split("@")[0] for line in run(["ip", "-o", "link", "show"]).stdout.splitlines()]
    assert not [n for n in names if any(re.fullmatch(rf"an{rid}\d+[ab]", n) for rid in ours)], names
    return ours


def write_exp(tmp: Path, segments: int = 3000, loss: float = 0.005, variants=None, max_s: float = 60,
              settle: float = 0.5, reps: int = 1, **extra) -> Path:
    doc = {"name": "t", "backend": "netns", "repetitions": reps,
           "loss": {"default": {"model": "bernoulli", "rate": loss} if loss else {"model": "none"}},
           "etx": {"settle_s": settle}, "limits": {"max_duration_s": max_s},
           "flows": [{"sender": "A", "receiver": "D", "segments": segments}],
           "variants": variants or [{"name": "sack", "tcp": {"variant": "sack"}}]}
    doc.update(extra)
    p = tmp / "t.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def run_dir(out: Path) -> Path:
    [d] = list((out / "t").iterdir())
    return d


def events(rep: Path, node: str) -> list[dict]:
    return [json.loads(l) for l in (rep / f"{node}.log").read_text().splitlines()]




def node_pids(rep_dir: Path) -> dict[str, int]:
    """PIDs of the node processes of a local run, read from their logs' node_start events."""
    import json
    pids = {}
    for log in rep_dir.glob("*.log"):
        for line in log.read_text().splitlines():
            if '"node_start"' in line:
                pids[log.stem] = json.loads(line)["pid"]
                break
    return pids


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not running; /proc tells
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def wait_for(cond, timeout: float, what: str, step: float = 0.1):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def start_run(exp: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "experiments", "run", str(exp), "--out", str(out), *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def kill_group(p: subprocess.Popen) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
