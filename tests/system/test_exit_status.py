"""Issue 13, item 1: the exit status of ``aspan run`` says how the run ended."""
from pathlib import Path
import yaml
from experiments.cli import main
from experiments.stopping import EXIT_INTERRUPTED, EXIT_NOT_OK, EXIT_OK, EXIT_USAGE, exit_status


def test_exit_status_from_the_repetitions():
    assert exit_status(["ok", "ok"], 2) == EXIT_OK
    assert exit_status(["ok", "incomplete"], 2) == EXIT_NOT_OK
    assert exit_status(["failed", "ok"], 2) == EXIT_NOT_OK
    assert exit_status(["ok"], 2) == EXIT_NOT_OK            # a repetition left no record
    assert exit_status(["ok", "interrupted"], 2) == EXIT_INTERRUPTED
    assert (EXIT_OK, EXIT_NOT_OK, EXIT_USAGE, EXIT_INTERRUPTED) == (0, 1, 2, 130)


def _exp(tmp_path: Path, max_s: float) -> Path:
    doc = {"name": "t", "repetitions": 1, "etx": {"settle_s": 0.5},
           "limits": {"max_duration_s": max_s}, "flows": [{"sender": "A", "receiver": "D", "segments": 300}]}
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_sim_run_ok_is_0_and_incomplete_is_1(tmp_path):
    exp = _exp(tmp_path, 60)
    assert main(["run", str(exp), "--backend", "sim", "--out", str(tmp_path / "ok"), "--no-plot"]) == EXIT_OK
    exp = _exp(tmp_path, 0.05)    # too short for 300 segments: incomplete
    assert main(["run", str(exp), "--backend", "sim", "--out", str(tmp_path / "inc"), "--no-plot"]) == EXIT_NOT_OK
    [run] = list((tmp_path / "inc" / "t").iterdir())
    assert "incomplete" in (run / "summary.csv").read_text()


def test_a_bad_file_is_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("flows: 3\n")
    assert main(["run", str(bad), "--backend", "sim"]) == EXIT_USAGE


def test_resummarize_works_on_a_run_directory_with_broken_repetitions(tmp_path):
    """A repetition with no log, one whose last line was cut: plot --resummarize still writes a row each."""
    import json
    run = tmp_path / "run"
    for k, status in enumerate(["failed", "interrupted"]):
        rep = run / "reno" / f"rep{k}"
        rep.mkdir(parents=True)
        (rep / "meta.json").write_text(json.dumps({"variant": "reno", "repetition": k, "status": status}))
    (run / "reno" / "rep0" / "A.log").write_text('{"t":1,"node":"A","ev":"node_start"}\n{"t":2,"no')
    assert main(["plot", str(run), "--resummarize"]) == EXIT_OK
    rows = (run / "summary.csv").read_text().splitlines()[1:]
    assert [r.split(",")[0:4:2] for r in rows] == [["reno", "0"], ["reno", "1"]]    # variant, repetition
    assert ["failed" in rows[0], "interrupted" in rows[1]] == [True, True]


def test_sigterm_stops_a_parallel_sim_run_with_its_records(tmp_path):
    """The sim backend runs repetitions in worker processes: SIGTERM to the runner stops them all,
    writes the summary of the repetitions done, and exits 130."""
    import os
    import signal
    import subprocess
    import sys
    import time
    doc = {"name": "t", "repetitions": 6, "etx": {"settle_s": 0.5}, "limits": {"max_duration_s": 600},
           "flows": [{"sender": "A", "receiver": "D", "segments": 6000}]}
    exp = tmp_path / "t.yaml"
    exp.write_text(yaml.safe_dump(doc))
    p = subprocess.Popen([sys.executable, "-m", "experiments", "run", str(exp), "--backend", "sim", "--jobs", "2",
                          "--no-plot", "--out", str(tmp_path / "runs")], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not list((tmp_path / "runs").glob("t/*/default/rep*/meta.json")):
            assert time.time() < deadline and p.poll() is None, "no repetition finished"
            time.sleep(0.1)
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == EXIT_INTERRUPTED, out
    [run] = list((tmp_path / "runs" / "t").iterdir())
    rows = (run / "summary.csv").read_text().splitlines()[1:]
    assert 1 <= len(rows) < 6
    left = subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout.split()
    assert not left, f"worker processes left: {left}"
