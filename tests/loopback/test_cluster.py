"""Repetitions on a real Dask cluster on loopback: a scheduler and two workers started as separate processes
(`dask scheduler`, `dask worker`), stopped whatever happens (issue 26, item 2).  The summary of a cluster
run is byte-identical to a local run of the same seeds; a worker dying mid-repetition gets it retried once,
then failed; a cluster that cannot run the backend is refused before the run.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path
import pytest
import yaml


distributed = pytest.importorskip("distributed", reason="the cluster extra: pip install -e '.[cluster]'")


from experiments.cli import main  # noqa: E402


from experiments.cluster import loopback_cluster  # noqa: E402


# a diamond (two paths) with two crossing flows and loss, two variants x two repetitions
DOC = {"name": "clu", "backend": "sim", "repetitions": 2, "seed": 7, "etx": {"settle_s": 0.5},
       "topology": {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]},
       "loss": {"default": {"model": "bernoulli", "rate": 0.01}},
       "flows": [{"sender": "A", "receiver": "D", "segments": 300}, {"sender": "C", "receiver": "B", "segments": 300}],
       "variants": [{"name": "reno"}, {"name": "sack", "tcp": {"variant": "sack"}}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster(tmp_path):
    """tcp://127.0.0.1:PORT of a scheduler with two single-thread workers, all separate processes, stopped
    however the test ends (experiments.cluster.loopback_cluster)."""
    logs = tmp_path / "dask-logs"
    logs.mkdir()
    with loopback_cluster(2, logs) as address:
        yield address


def write(tmp_path: Path, doc: dict, name: str = "clu.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def only_run(out: Path) -> Path:
    runs = [d for d in out.glob("*/*") if d.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def rep_files(run_dir: Path) -> dict[str, bytes]:
    """Every file of every repetition; meta.json without its provenance (the process that ran it)."""
    out = {}
    for p in sorted(run_dir.glob("*/rep*/*")):
        data = p.read_bytes()
        if p.name == "meta.json":
            meta = json.loads(data)
            meta.pop("provenance")
            data = json.dumps(meta, sort_keys=True).encode()
        out[str(p.relative_to(run_dir))] = data
    return out


def test_a_cluster_run_writes_what_a_local_run_of_the_same_seeds_writes(cluster, tmp_path, capsys):
    exp = write(tmp_path, DOC)
    assert main(["run", str(exp), "--out", str(tmp_path / "here"), "--no-plot"]) == 0
    capsys.readouterr()
    assert main(["run", str(exp), "--out", str(tmp_path / "there"), "--no-plot", "--scheduler", cluster]) == 0
    err = capsys.readouterr().err
    here, there = only_run(tmp_path / "here"), only_run(tmp_path / "there")
    assert (there / "summary.csv").read_bytes() == (here / "summary.csv").read_bytes()
    assert rep_files(there) == rep_files(here) and len(rep_files(here)) == 4 * (4 + 1)   # 4 logs + meta each
    progress = [ln for ln in err.splitlines() if ln.startswith("[")]
    assert sorted(ln.split("] ")[0] for ln in progress) == ["[1/4", "[2/4", "[3/4", "[4/4"]
    assert all(ln.endswith(": ok") for ln in progress)
    prov = json.loads((there / "provenance.json").read_text())
    assert prov["executor"] == f"Dask scheduler {cluster}, 2 worker(s)"
    workers = {json.loads(p.read_text())["provenance"]["host"] for p in there.glob("*/rep*/meta.json")}
    assert workers == {socket.gethostname()}


def test_the_local_backend_runs_its_nodes_on_each_workers_loopback(cluster, tmp_path, capsys):
    doc = {**DOC, "backend": "local", "repetitions": 1, "variants": [{"name": "sack", "tcp": {"variant": "sack"}}],
           "flows": [{"sender": "A", "receiver": "D", "segments": 200}, {"sender": "C", "receiver": "B", "segments": 200}]}
    exp = write(tmp_path, doc)
    assert main(["run", str(exp), "--out", str(tmp_path / "there"), "--no-plot", "--scheduler", cluster]) == 0, \
        capsys.readouterr().err
    rep = only_run(tmp_path / "there") / "sack" / "rep0"
    assert json.loads((rep / "meta.json").read_text())["status"] == "ok"
    assert all((rep / f"{n}.log").stat().st_size > 0 for n in "ABCD")
    rows = (only_run(tmp_path / "there") / "summary.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 and all(",ok," in r for r in rows[1:])


def test_backends_no_cluster_runs_and_a_missing_scheduler_are_refused_before_the_run(tmp_path, capsys):
    exp = write(tmp_path, {**DOC, "backend": "netns"})
    out = tmp_path / "runs"
    assert main(["run", str(exp), "--out", str(out), "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "--scheduler: scheduler: backend netns: the netns backend needs root" in capsys.readouterr().err
    exp = write(tmp_path, DOC)
    assert main(["run", str(exp), "--out", str(out), "--scheduler", "tcp://127.0.0.1:1", "--jobs", "2"]) == 2
    assert "--jobs: jobs: with --scheduler the cluster's workers run the repetitions" in capsys.readouterr().err
    assert main(["run", str(exp), "--out", str(out), "--scheduler", f"tcp://127.0.0.1:{free_port()}"]) == 2
    assert "--scheduler: scheduler: no Dask scheduler answers at tcp://127.0.0.1:" in capsys.readouterr().err
    assert not out.exists()


def test_a_cluster_whose_workers_have_no_loopback_network_is_refused_for_local(monkeypatch):
    """check_cluster asks every worker (here: a stand-in client whose one worker cannot bind 127.0.1.1)."""
    from experiments.cluster import check_cluster
    from experiments.provenance import process_provenance
    from experiments.schema import ExperimentError

    class Client:
        def run(self, fn):
            return {"tcp://10.0.0.9:4000": {"provenance": process_provenance(),
                                            "loopback": "cannot bind 127.0.1.1 (...): Cannot assign requested address"}}
    assert check_cluster(Client(), "sim") == []                 # the sim needs no loopback
    with pytest.raises(ExperimentError) as e:
        check_cluster(Client(), "local")
    assert e.value.path == "scheduler" and "tcp://10.0.0.9:4000: cannot bind 127.0.1.1" in e.value.message


LONG = {**DOC, "repetitions": 1, "variants": [{"name": "long"}],
        "flows": [{"sender": "A", "receiver": "D", "segments": 16000}, {"sender": "C", "receiver": "B", "segments": 16000}]}


def _kill_workers_running(address: str, kills: int, killed: list[str], stop: threading.Event) -> None:
    """SIGKILL the worker process running the run's repetition, ``kills`` times (each time on the worker the
    scheduler gave it to next)."""
    with distributed.Client(address, timeout=30, set_as_default=False) as c:
        while len(killed) < kills and not stop.is_set():
            running = [w for w, keys in c.processing().items()
                       if any(str(k).startswith("aspan-rep-") for k in keys) and w not in killed]
            if running:
                time.sleep(0.5)   # well inside the repetition (it takes seconds)
                pid = c.run(os.getpid, workers=[running[0]])[running[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(running[0])
            time.sleep(0.05)


def run_while_killing(cluster: str, tmp_path: Path, kills: int) -> tuple[int, Path, list[str]]:
    exp = write(tmp_path, LONG)
    killed: list[str] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_workers_running, args=(cluster, kills, killed, stop), daemon=True)
    killer.start()
    try:
        code = main(["run", str(exp), "--out", str(tmp_path / "there"), "--no-plot", "--scheduler", cluster])
    finally:
        stop.set()
        killer.join(60)
    return code, only_run(tmp_path / "there"), killed


def test_a_worker_dying_mid_repetition_gets_it_retried_on_another_worker(cluster, tmp_path, capsys):
    code, run_dir, killed = run_while_killing(cluster, tmp_path, kills=1)
    assert len(killed) == 1
    assert code == 0, capsys.readouterr().err
    meta = json.loads((run_dir / "long" / "rep0" / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["retried_after_lost_workers"] == killed
    # the retried repetition is the same repetition: its summary is a local run's
    exp = write(tmp_path, LONG)
    assert main(["run", str(exp), "--out", str(tmp_path / "here"), "--no-plot"]) == 0
    assert (run_dir / "summary.csv").read_bytes() == (only_run(tmp_path / "here") / "summary.csv").read_bytes()


def test_a_repetition_whose_worker_died_twice_is_failed_and_the_run_exits_1(cluster, tmp_path, capsys):
    code, run_dir, killed = run_while_killing(cluster, tmp_path, kills=2)
    assert len(killed) == 2 and killed[0] != killed[1]
    assert code == 1
    meta = json.loads((run_dir / "long" / "rep0" / "meta.json").read_text())
    assert meta["status"] == "failed"
    assert meta["error"] == (f"the worker running it died 2 time(s) ({', '.join(killed)}); a repetition runs at "
                             "most 2 times on a cluster")
    assert "[1/1] long rep 0: failed (the worker running it died 2 time(s)" in capsys.readouterr().err
    assert ",failed," in (run_dir / "summary.csv").read_text()


def test_the_loopback_cluster_stops_every_process_it_started_even_on_an_error(tmp_path):
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="the block failed"):
        with loopback_cluster(1, tmp_path) as address:
            with distributed.Client(address, timeout=30, set_as_default=False) as c:
                pids += list(c.run(os.getpid).values()) + [c.run_on_scheduler(os.getpid)]
            assert all(_alive(p) for p in pids)
            raise RuntimeError("the block failed")
    deadline = time.monotonic() + 10       # a worker whose nanny died is reaped by init
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(pids) == 2 and not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
