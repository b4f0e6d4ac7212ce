"""Runs say where they came from: RUN_DIR/provenance.json, each repetition's meta.json and the report name
the project's version and commit (dirty or not), the host, Python and package versions, the command line
and the backend (issue 26, item 3).
"""
from __future__ import annotations

import json
import shlex
import socket
import subprocess
from importlib.metadata import version
from pathlib import Path
import pytest
import yaml
from experiments.cli import main
from experiments.provenance import git_state, project_root




# a diamond with two crossing flows, short: provenance is per run and per repetition, whatever the graph
DOC = {"name": "prov", "backend": "sim", "repetitions": 2, "etx": {"settle_s": 0.5},
       "topology": {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]},
       "flows": [{"sender": "A", "receiver": "D", "segments": 30}, {"sender": "C", "receiver": "B", "segments": 30}]}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


def test_a_run_records_its_provenance_in_provenance_json_meta_json_and_the_report(tmp_path, capsys):
    exp = tmp_path / "prov.yaml"
    exp.write_text(yaml.safe_dump(DOC))
    argv = ["run", str(exp), "--out", str(tmp_path / "runs"), "--jobs", "1"]
    assert main(argv) == 0, capsys.readouterr().err
    run_dir = next((tmp_path / "runs" / "prov").iterdir())
    prov = json.loads((run_dir / "provenance.json").read_text())
    assert prov["command"] == shlex.join(["aspan", *argv])
    assert prov["backend"] == "sim" and "this host" in prov["executor"]
    assert prov["version"] == version("aspan-testbed")
    assert prov["host"] == socket.gethostname()
    assert prov["packages"]["numpy"] == version("numpy") and prov["packages"]["pandas"] == version("pandas")
    assert prov["python"].count(".") == 2
    assert prov["git"] == git_state(project_root())      # the checkout's own state, checked below
    for rep in ("rep0", "rep1"):
        meta = json.loads((run_dir / "default" / rep / "meta.json").read_text())
        assert meta["status"] == "ok"
        assert meta["provenance"]["host"] == socket.gethostname()
        assert meta["provenance"]["git"] == prov["git"] and meta["provenance"]["packages"] == prov["packages"]
    report = (run_dir / "report.md").read_text()
    assert f"- command: `{prov['command']}`" in report
    commit = prov["git"]["commit"]
    assert (f"commit {commit[:12]}" if commit else "commit unknown (not a git checkout") in report


def test_the_commit_and_dirty_flag_of_a_checkout(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f.py").write_text("x = 1\n")
    git(repo, "add", "f.py")
    git(repo, "commit", "-qm", "one")
    head = git(repo, "rev-parse", "HEAD").strip()
    assert git_state(repo) == {"commit": head, "dirty": False}
    (repo / "new.py").write_text("untracked\n")            # untracked files do not count
    assert git_state(repo) == {"commit": head, "dirty": False}
    (repo / "f.py").write_text("x = 2\n")
    assert git_state(repo) == {"commit": head, "dirty": True}


def test_no_commit_is_claimed_outside_a_checkout_of_the_project_itself(tmp_path, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    state = git_state(plain)
    assert state["commit"] is None and state["dirty"] is None and "not a git checkout" in state["note"]
    # an installed copy inside some other repository (site-packages of a venv in a checkout)
    repo = tmp_path / "other"
    (repo / "venv" / "site-packages").mkdir(parents=True)
    git(repo, "init", "-q")
    state = git_state(repo / "venv" / "site-packages")
    assert state["commit"] is None and "lies inside the repository" in state["note"]
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))  # no git at all
    assert git_state(repo)["note"] == "git is not installed"


@pytest.mark.parametrize("present", [True, False])
def test_the_report_says_when_a_run_has_no_provenance(tmp_path, present):
    from plots.report import provenance_lines
    if present:
        (tmp_path / "provenance.json").write_text("{not json")
        assert "provenance.json unreadable" in provenance_lines(tmp_path)[0]
    else:
        assert provenance_lines(tmp_path)[0].startswith("Provenance: not recorded")
