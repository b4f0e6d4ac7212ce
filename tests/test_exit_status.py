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
