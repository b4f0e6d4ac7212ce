"""Where a run came from: the project's version and commit, the host, Python and the packages that
made it, the command line and the backend (issue 26, item 3), so a figure can be traced back.

The runner writes :func:`run_provenance` to ``RUN_DIR/provenance.json`` before any repetition starts
(every way a run ends keeps it; the report shows it: plots.report), and each repetition's ``meta.json`` gets the :func:`process_provenance`
of the process that ran it under ``provenance`` (on a Dask cluster, a worker's host and its packages).
"""
from __future__ import annotations

import datetime as _dt
import functools
import platform
import shlex
import socket
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

DISTRIBUTION = "aspan-testbed"
# the packages a result depends on (pyproject.toml's dependencies and the cluster extra)
KEY_PACKAGES = ("numpy", "pandas", "matplotlib", "pyyaml", "pyarrow", "networkx", "dask", "distributed")
GIT_TIMEOUT_S = 10.0


def project_version() -> str | None:
    """The installed distribution's version (pyproject.toml), None if the source tree is not installed."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None


def package_versions() -> dict[str, str | None]:
    """Each of :data:`KEY_PACKAGES`: its installed version, None if it is not installed."""
    out: dict[str, str | None] = {}
    for name in KEY_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S)


def git_state(root: Path) -> dict[str, Any]:
    """``commit`` and ``dirty`` of the checkout the project's code is loaded from, or both None and a
    ``note`` saying why not (no git, not a checkout: an installed wheel or a tarball).  The checkout must
    be ``root`` itself: an installed copy inside some other repository (a venv in a checkout) does not
    take that repository's commit.  ``dirty``: a tracked file differs from the commit (untracked files
    are not counted)."""
    def unknown(note: str) -> dict[str, Any]:
        return {"commit": None, "dirty": None, "note": note}

    try:
        top = _git(root, "rev-parse", "--show-toplevel")
        if top.returncode != 0:
            said = top.stderr.strip().splitlines()
            return unknown(f"not a git checkout: {root} ({said[-1] if said else 'git failed'})")
        if Path(top.stdout.strip()).resolve() != root.resolve():
            return unknown(f"not a git checkout: {root} lies inside the repository {top.stdout.strip()}")
        head = _git(root, "rev-parse", "HEAD")
        status = _git(root, "status", "--porcelain", "--untracked-files=no")
    except FileNotFoundError:
        return unknown("git is not installed")
    except (OSError, subprocess.TimeoutExpired) as e:
        return unknown(f"git failed: {e}")
    if head.returncode != 0 or status.returncode != 0:
        return unknown(f"git failed: {(head.stderr or status.stderr).strip()}")
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def project_root() -> Path:
    """The directory holding the project's packages (a checkout's top, or site-packages when installed)."""
    return Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=1)
def process_provenance() -> dict[str, Any]:
    """What this process runs: host, Python, project version and commit, key packages.  Computed once per
    process: its code and packages were loaded when it started, so later edits of the checkout would
    not describe it."""
    return {"host": socket.gethostname(), "platform": platform.platform(),
            "python": platform.python_version(), "python_executable": sys.executable,
            "version": project_version(), "git": git_state(project_root()), "packages": package_versions()}


def run_provenance(command: list[str], backend: str, executor: str) -> dict[str, Any]:
    """The run's record: this process's provenance, the full command line, the backend, where the
    repetitions ran (``executor``: the local pool or a Dask scheduler's address) and when it started."""
    return {**process_provenance(), "command": shlex.join(command), "cwd": str(Path.cwd()),
            "backend": backend, "executor": executor,
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}

