"""Repetitions on a Dask cluster: ``aspan run EXP --scheduler tcp://HOST:8786`` (issue 26, item 2).

Each repetition is one task of ``dask.distributed``: a worker runs it in a temporary directory of its own
(the node processes of the local backend on the worker's own loopback) and sends every file of the
repetition back; the runner writes them into ``RUN_DIR/<variant>/rep<k>/`` as if it had run here, so the
summary is the one a local run of the same seeds writes.  A worker that dies while running a repetition:
the scheduler gives the task to a live worker (Dask reschedules the tasks of a lost worker); a repetition
whose worker died twice is not run a third time but recorded ``failed`` (:data:`ATTEMPTS`), and the run
goes on.  Dask is an extra (``pip install -e '.[cluster]'``); this module imports it only when a run asks
for a scheduler.  docs/GUIDE.md, "Running on a Dask cluster".
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator

from experiments.build import base_meta, rep_seed, write_meta
from experiments.provenance import process_provenance
from experiments.records import write_whole
from experiments.schema import ExperimentError

ATTEMPTS = 2            # a repetition runs at most twice: once, and once more if its worker died
CONNECT_TIMEOUT_S = 10.0
# What a backend needs that a cluster's worker cannot give (refused before the run starts).
CLUSTER_REFUSED = {
    "netns": "the netns backend needs root and makes network namespaces on the machine that runs it; "
             "run it without --scheduler",
    "pi": "the pi backend drives the Pis from one machine, one repetition at a time; run it without --scheduler",
}

Task = tuple[str, Any, int, str, "dict[str, Any] | None"]   # the runner's (backend, variant, rep, rep_dir, options)


def need_dask() -> None:
    """Dask is the ``cluster`` extra: say how to get it instead of a traceback."""
    import importlib.util
    if importlib.util.find_spec("distributed") is None:
        raise ExperimentError("--scheduler", "scheduler", "running on a Dask cluster needs dask.distributed: "
                              "pip install -e '.[cluster]'")


def connect(address: str) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address``; ExperimentError naming --scheduler if none
    answers within CONNECT_TIMEOUT_S."""
    need_dask()
    from distributed import Client
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise ExperimentError("--scheduler", "scheduler", f"no Dask scheduler answers at {address}: {e}") from None


def loopback_problem() -> str | None:
    """Why this machine cannot run the local backend's node processes on its loopback (None if it can): the
    nodes bind 127.0.1.x and the medium 127.0.2.x (experiments.backends.loopback), all of 127.0.0.0/8,
    which Linux routes to loopback and other systems may not."""
    for addr in ("127.0.1.1", "127.0.2.1"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind((addr, 0))
            except OSError as e:
                return f"cannot bind {addr} (the local backend's node addresses, 127.0.0.0/8): {e.strerror}"
    return None


def _worker_facts() -> dict[str, Any]:
    """Run on every worker (Client.run): its provenance and whether it can run the local backend."""
    return {"provenance": process_provenance(), "loopback": loopback_problem()}


def check_cluster(client: Any, backend: str) -> list[str]:
    """Refuse, before the run starts, a cluster whose workers cannot run ``backend`` (ExperimentError naming
    --scheduler; the backends no cluster runs, CLUSTER_REFUSED, the runner's check_run refuses); returns
    lines worth saying (workers of another version or commit than this process)."""
    try:
        facts = client.run(_worker_facts)
    except Exception as e:   # a worker without the project cannot unpickle the function: its error, named
        raise ExperimentError("--scheduler", "scheduler", f"a worker cannot run the project's code (is "
                              f"aspan-testbed installed on every worker?): {type(e).__name__}: {e}") from None
    if not facts:
        raise ExperimentError("--scheduler", "scheduler", f"the scheduler {client.scheduler.address} has no workers")
    if backend == "local":
        bad = {w: f["loopback"] for w, f in facts.items() if f["loopback"]}
        if bad:
            raise ExperimentError("--scheduler", "scheduler", "the local backend runs each repetition's node "
                                  "processes on the worker's own loopback, which these workers cannot: "
                                  + "; ".join(f"{w}: {why}" for w, why in sorted(bad.items())))
    here = process_provenance()
    notes = []
    for w, f in sorted(facts.items()):
        there = f["provenance"]
        if (there["version"], there["git"].get("commit")) != (here["version"], here["git"].get("commit")):
            notes.append(f"worker {w} runs aspan-testbed {there['version']} commit {there['git'].get('commit')}, "
                         f"this process {here['version']} commit {here['git'].get('commit')}: its repetitions' "
                         "meta.json say so (provenance)")
    return notes


def _attempt(name: str) -> list[str]:
    """The workers that started this task before, this worker added (a ``distributed.Variable`` per task:
    the client sets it to [] before submitting, and a task attempt runs only after the previous one's
    worker was lost)."""
    from distributed import Variable, get_worker
    var = Variable(name)
    before = [str(w) for w in var.get()]
    var.set([*before, get_worker().address])
    return before


def remote_rep(run_one: Callable[[Task], dict[str, Any]], task: Task, attempts: str) -> dict[str, Any]:
    """One repetition on a worker, in a temporary directory: ``meta``, every file (path relative to the rep
    directory -> bytes) and the ``error`` it raised (a traceback's text), or ``lost``: the workers that
    died running it before (at ATTEMPTS, it is not run again)."""
    before = _attempt(attempts)
    if len(before) >= ATTEMPTS:
        return {"lost": before}
    backend, variant, rep, _rep_dir, options = task
    with tempfile.TemporaryDirectory(prefix="aspan-rep-") as tmp:
        rep_dir = Path(tmp) / "rep"
        meta, error = None, None
        try:
            meta = run_one((backend, variant, rep, str(rep_dir), options))
        except Exception:
            error = traceback.format_exc()
        files = {p.relative_to(rep_dir).as_posix(): p.read_bytes()
                 for p in sorted(rep_dir.rglob("*")) if p.is_file()}
    return {"meta": meta, "files": files, "error": error, "retried_after": before}


def _store(rep_dir: Path, files: dict[str, bytes]) -> None:
    """The repetition's files into ``rep_dir``, each written whole; a path leaving it is refused."""
    for rel, data in files.items():
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            raise ValueError(f"a worker sent the file {rel!r}, outside its repetition's directory")
        path = rep_dir.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, data)


def _lost_meta(task: Task, why: str) -> dict[str, Any]:
    """The meta.json of a repetition no worker finished: ``failed``, ``error`` ``why``."""
    backend, variant, rep, _rep_dir, _options = task
    meta = base_meta(variant.config, variant.name, rep, rep_seed(variant.config, rep), backend, variant.sweep_value)
    meta["status"] = "failed"
    meta["error"] = why
    return meta


def run_tasks(client: Any, tasks: list[Task], run_one: Callable[[Task], dict[str, Any]],
              done: Callable[[int, Task, dict[str, Any]], None], check_disk: Callable[[], None]) -> None:
    """Every task on the cluster; as each ends, its files are written into its rep directory and ``done(i,
    task, meta)`` says so (i: how many have ended).  A task whose worker died :data:`ATTEMPTS` times gets a
    meta.json ``failed`` saying so, and the run goes on; a repetition that raised is written back, then its
    error raised (as a local pool does).  Interrupted: nothing new starts, the tasks are cancelled."""
    from distributed import Variable, as_completed
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker
    run_id = uuid.uuid4().hex[:12]
    futures = {}
    for i, task in enumerate(tasks):
        name = f"aspan-{run_id}-{i}-attempts"
        Variable(name, client=client).set([])
        fut = client.submit(remote_rep, run_one, task, name, key=f"aspan-rep-{run_id}-{i}", pure=False)
        futures[fut] = (task, name)
    try:
        for n, fut in enumerate(as_completed(list(futures), loop=client.loop), 1):
            task, name = futures[fut]
            rep_dir = Path(task[3])
            try:
                out = fut.result()
            except KilledWorker as e:   # the scheduler's own limit (distributed.scheduler.allowed-failures)
                out = {"why": f"the scheduler gave up on it: {e}"}
            except FutureCancelledError as e:
                out = {"why": f"the cluster cancelled it: {e}"}
            Variable(name, client=client).delete()
            if "lost" in out:
                out["why"] = (f"the worker running it died {len(out['lost'])} time(s) ({', '.join(out['lost'])}); "
                              f"a repetition runs at most {ATTEMPTS} times on a cluster")
            if "why" in out:
                meta = _lost_meta(task, out["why"])
                rep_dir.mkdir(parents=True, exist_ok=True)
                write_meta(rep_dir, meta)
            else:
                _store(rep_dir, out["files"])
                if out["error"] is not None:
                    raise RuntimeError(f"{task[1].name} rep {task[2]} failed on a worker:\n{out['error']}")
                meta = out["meta"]
                if out["retried_after"]:   # said in its meta.json
                    meta["retried_after_lost_workers"] = out["retried_after"]
                    write_meta(rep_dir, meta)
            done(n, task, meta)
            check_disk()
    except BaseException:
        client.cancel(list(futures))
        for task, name in futures.values():   # the attempt records of the tasks that did not end
            Variable(name, client=client).delete()
        raise


@contextlib.contextmanager
def loopback_cluster(workers: int = 2, log_dir: Path | None = None,
                     start_timeout_s: float = 120.0) -> Iterator[str]:
    """A Dask scheduler and ``workers`` single-thread workers on 127.0.0.1, each a separate process
    (``dask scheduler``, ``dask worker`` of this Python's environment), for the tests and bench sim_speed;
    yields the scheduler's address and stops every process it started however the block ends (SIGTERM
    to each process group, a worker's nanny with its worker, then SIGKILL)."""
    need_dask()
    from distributed import Client
    dask = str(Path(sys.executable).with_name("dask"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="aspan-dask-") as tmp:
        logs = log_dir or Path(tmp)
        procs: list[subprocess.Popen[bytes]] = []

        def start(name: str, args: list[str]) -> None:
            with open(logs / f"{name}.log", "wb") as log:
                procs.append(subprocess.Popen([dask, *args], stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, cwd=tmp, start_new_session=True))
        try:
            start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(port),
                                "--dashboard-address", "127.0.0.1:0"])
            for i in range(workers):
                start(f"worker{i}", ["worker", address, "--nthreads", "1", "--nworkers", "1", "--host", "127.0.0.1",
                                     "--dashboard-address", "127.0.0.1:0", "--local-directory", f"{tmp}/worker{i}"])
            with Client(address, timeout=start_timeout_s, set_as_default=False) as client:
                client.wait_for_workers(workers, timeout=start_timeout_s)
            yield address
        finally:
            _stop_groups(procs)


def _stop_groups(procs: list[subprocess.Popen[bytes]], grace_s: float = 20.0) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
