"""Issue 27, item 1: a disk that fills up or fails, for the nodes, the runner and the medium daemons.

The repetition that meets the full disk fails with a message naming the file and the reason, its nodes
stop, the repetitions that finished keep their rows in summary.csv, meta.json is whole (or as it was) and
``aspan run`` exits 1 (2 means a bad file: nothing ran).  The runs are made on a small tmpfs: those tests
need root (they skip without it and say why; with ASPAN_REQUIRE_ROOT_TESTS=1 they fail instead).  The
write paths themselves are tested without root, with a write that raises ENOSPC or EIO.
"""
from __future__ import annotations

from tests import ROOT
import errno
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
import pytest
import yaml
from tests.runs import wait_for
from experiments.cli import main
from experiments.records import RESERVE_NAME
from experiments.stopping import EXIT_NOT_OK


REQUIRED = os.environ.get("ASPAN_REQUIRE_ROOT_TESTS") == "1"


# ---- runs on a small tmpfs (root) ------------------------------------------------------------
@pytest.fixture
def small_disk():
    """A function mounting a tmpfs of the given size under a unique /tmp path; unmounted at the end."""
    if os.geteuid() != 0:
        msg = "disk-full tests mount a tmpfs: they need root"
        if REQUIRED:
            pytest.fail(msg + " (ASPAN_REQUIRE_ROOT_TESTS=1: these tests must run here)")
        pytest.skip(msg)
    mounts: list[Path] = []

    def mount(size: str) -> Path:
        where = Path(f"/tmp/aspan-diskfull-{uuid.uuid4().hex[:12]}")
        where.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
        mounts.append(where)
        return where

    try:
        yield mount
    finally:
        for where in mounts:
            subprocess.run(["umount", str(where)], check=False)
            where.rmdir()


def _exp(tmp_path: Path, reps: int, segments: int, **extra) -> Path:
    doc = {"name": "t", "repetitions": reps, "etx": {"settle_s": 0.3}, "limits": {"max_duration_s": 60},
           "flows": [{"sender": "A", "receiver": "D", "segments": segments}], **extra}
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def _run(exp: Path, out: Path, backend: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--backend", backend,
                           "--out", str(out), "--no-plot"], cwd=ROOT, capture_output=True, text=True, timeout=300)


def _our_nodes(where: Path) -> list[str]:
    r = subprocess.run(["pgrep", "-af", f"--config {where}"], capture_output=True, text=True)
    return r.stdout.splitlines()


def _check_records(run: Path, full_rep: Path, finished: int) -> None:
    """The finished repetitions' rows, the failed one's whole meta.json naming the file, no reserve left."""
    rows = [r.split(",") for r in (run / "summary.csv").read_text().splitlines()]
    header, rows = rows[0], rows[1:]
    status = header.index("status")
    assert [r[status] for r in rows[:finished]] == ["ok"] * finished
    meta = json.loads((full_rep / "meta.json").read_text())
    assert meta["status"] == "failed" and "No space left on device" in meta["error"], meta["error"]
    assert str(full_rep) in meta["error"]
    assert not (run / RESERVE_NAME).exists()


def test_a_local_run_whose_disk_fills_up_fails_that_repetition_and_keeps_the_others(tmp_path, small_disk):
    # a repetition of 1,000 segments writes about 440 kB of logs (550 kB before cwnd stopped growing past
    # what the window uses: fewer cwnd lines): the third does not fit in 2.2 MB (1 MB of it is the runner's
    # reserve for the records of the ending)
    disk = small_disk("2200k")
    r = _run(_exp(tmp_path, 3, 1000), disk, "local")
    assert r.returncode == EXIT_NOT_OK, r.stderr
    assert "No space left on device" in r.stderr and "Traceback" not in r.stderr, r.stderr
    [run] = list((disk / "t").iterdir())
    reps = sorted((run / "default").iterdir())
    full = next(rep for rep in reps if json.loads((rep / "meta.json").read_text())["status"] != "ok")
    assert f"aspan: error: cannot write {full}/" in r.stderr
    _check_records(run, full, reps.index(full))
    assert not [p for p in full.iterdir() if p.suffix == ".tmp"]
    wait_for(lambda: not _our_nodes(disk), 15, "the nodes to end")


def test_a_sim_run_in_worker_processes_whose_disk_fills_up(tmp_path, small_disk):
    """The sim backend writes its logs in the runner's workers: the error crosses the process pool.  Six
    repetitions write about 2.3 MB of logs (380 kB each since cwnd stopped growing past what the window uses):
    more than the 2 MB disk even without the runner's 1 MB reserve (once in seven runs at 2.5 MB, every
    repetition fitted: not understood, noted in the session's issue note)."""
    disk = small_disk("2048k")
    r = _run(_exp(tmp_path, 6, 1000), disk, "sim")
    assert r.returncode == EXIT_NOT_OK, r.stderr
    assert "No space left on device" in r.stderr and "Traceback" not in r.stderr, r.stderr
    [run] = list((disk / "t").iterdir())
    reps = list((run / "default").iterdir())
    metas = {rep: json.loads((rep / "meta.json").read_text()) for rep in reps if (rep / "meta.json").exists()}
    # a repetition that the full disk kept from writing its first record ran nothing: no node wrote a line
    assert all(not list(rep.glob("*.log")) for rep in reps if rep not in metas)
    failed = [rep for rep, m in metas.items() if m["status"] == "failed"]
    assert failed and all("No space left on device" in metas[rep]["error"] for rep in failed)
    ok = sum(m["status"] == "ok" for m in metas.values())
    rows = (run / "summary.csv").read_text().splitlines()[1:]
    assert ok >= 1 and sum(",ok," in row for row in rows) == ok
    assert not (run / RESERVE_NAME).exists()


def test_a_local_medium_daemon_whose_disk_fills_up_fails_the_repetition(tmp_path, small_disk):
    """medium.model dcf: the medium process logs every frame; on a full disk it (or a node) names its log."""
    disk = small_disk("1536k")
    r = _run(_exp(tmp_path, 2, 1000, medium={"model": "dcf"}), disk, "local")
    assert r.returncode == EXIT_NOT_OK, r.stderr
    assert "No space left on device" in r.stderr and "Traceback" not in r.stderr, r.stderr
    [run] = list((disk / "t").iterdir())
    rep = run / "default" / "rep0"
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "failed" and "No space left on device" in meta["error"]
    assert "exited with code 128" in meta["error"] and f"cannot write {rep}/" in meta["error"]
    wait_for(lambda: not _our_nodes(disk), 15, "the nodes and the medium process to end")


def _fill(disk: Path) -> None:
    """Fill ``disk`` to the last byte."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError) as e:
            while True:
                os.write(fd, b"\0" * 4096)
        assert e.value.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_disk_full_before_the_start_is_a_clear_error(tmp_path, small_disk):
    disk = small_disk("256k")
    _fill(disk)
    r = _run(_exp(tmp_path, 1, 100), disk / "out", "local")
    assert r.returncode == EXIT_NOT_OK, r.stderr
    assert "Traceback" not in r.stderr and "No space left on device" in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("aspan: error: ")


def test_in_process_a_disk_error_is_exit_1_not_2(tmp_path, small_disk):
    """The exit code of main() itself (the CLI's handler), on a disk full before the start."""
    disk = small_disk("64k")
    _fill(disk)
    assert main(["run", str(_exp(tmp_path, 1, 100)), "--backend", "sim", "--out", str(disk / "o"),
                 "--no-plot"]) == EXIT_NOT_OK
