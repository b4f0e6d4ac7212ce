import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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


@pytest.fixture
def no_leftover_nodes(tmp_path):
    """Fails the test if it leaves an `aspan node` process of its own (config under tmp_path) running.

    The local backend starts each node as ``python -m experiments node --config <rep dir>/X.node.json``."""
    def ours() -> set[int]:
        r = subprocess.run(["pgrep", "-f", f"experiments node --config {tmp_path}"], capture_output=True, text=True)
        return {int(p) for p in r.stdout.split()}
    yield
    wait_for(lambda: not ours(), 15, f"node processes of {tmp_path} to end")


def kill_group(p: subprocess.Popen) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


# The quick subset (``make test-fast``, README "The two commands"): ``-m "not root and not slow"``.
# root: the modules that need root (namespaces, iptables, sshd of the virtual Pis, captures in
# namespaces); they skip without it anyway, but take minutes with it.  slow: the modules that run real
# node processes on loopback in real time (seconds to minutes each).  Everything else (the protocol
# cores, the sim in virtual time, schema, plots) stays in the quick subset.
ROOT_MODULES = frozenset({"test_netns_backend", "test_netns_graph", "test_netns_link", "test_deploy_vpi",
                          "test_deploy_vpi_arm64",
                          "test_capture"})
SLOW_MODULES = frozenset({"test_local_backend", "test_local_mesh", "test_medium_local", "test_variants_local",
                          "test_exit_status", "test_sockets"})


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        if module in ROOT_MODULES:
            item.add_marker(pytest.mark.root)
        if module in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
