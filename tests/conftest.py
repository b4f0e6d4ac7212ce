"""Markers by folder, and the fixtures every folder may use.

Where a test lives says what it needs (docs/DESIGN.md, "Tests"):

- tests/root/: root (network namespaces, iptables, the virtual Pis' sshd, captures in namespaces); these tests
  skip without it (or fail under ASPAN_REQUIRE_ROOT_TESTS=1) and are marked ``root``;
- tests/loopback/: real node processes (or a Dask cluster) on loopback in real time, marked ``slow``;
- tests/system/: whole runs in virtual time on the sim backend and the command line end to end, marked ``system``;
- everything else (tests/<package>/...): unit tests of one module each, in virtual time.

``make test-fast`` runs ``-m "not root and not slow and not system"``.
"""
import subprocess
from pathlib import Path

import pytest
from tests.runs import wait_for


@pytest.fixture
def no_leftover_nodes(tmp_path):
    """Fails the test if it leaves an `aspan node` process of its own (config under tmp_path) running.

    The local backend starts each node as ``python -m experiments node --config <rep dir>/X.node.json``."""
    def ours() -> set[int]:
        r = subprocess.run(["pgrep", "-f", f"experiments node --config {tmp_path}"], capture_output=True, text=True)
        return {int(p) for p in r.stdout.split()}
    yield
    wait_for(lambda: not ours(), 15, f"node processes of {tmp_path} to end")


#: the marker of each folder of whole-system tests (pyproject.toml declares them); nothing else is marked
FOLDER_MARKERS = {"root": "root", "loopback": "slow", "system": "system"}
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        folder = Path(item.path).resolve().relative_to(TESTS).parts[0]
        marker = FOLDER_MARKERS.get(folder)
        if marker is not None:
            item.add_marker(getattr(pytest.mark, marker))
