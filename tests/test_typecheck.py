"""mypy over the typed experiment and the modules that read it (pyproject.toml, [tool.mypy]; issue 38, item 3).

A wrong field name of the experiment (``cfg.etx.settle_seconds``) fails here, before anything runs.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy is not installed (it comes with the test extra: pip install -e '.[test]')")


def mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--config-file",
                           str(ROOT / "pyproject.toml"), *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_typed_experiment_and_its_readers_type_check() -> None:
    r = mypy()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success: no issues found" in r.stdout


def test_the_typed_experiment_passes_mypy_strict() -> None:
    r = mypy("--strict", "--follow-imports=silent", "experiments/config.py", "experiments/backends/kernel_counters.py")
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_wrong_field_name_is_an_error(tmp_path: Path) -> None:
    """A planted reader of ``exp.etx.settle_seconds`` (the field is ``settle_s``) and of a section that does
    not exist: mypy names both, and passes the same module with the right names."""
    bad = tmp_path / "planted_reader.py"
    bad.write_text("from experiments.config import ExperimentConfig\n\n\n"
                   "def flows_at(exp: ExperimentConfig, t0: float) -> float:\n"
                   "    return t0 + exp.etx.settle_seconds\n\n\n"
                   "def rate(exp: ExperimentConfig) -> float:\n"
                   "    return exp.radio.rate_mbps\n")
    r = mypy(str(bad))
    assert r.returncode == 1, r.stdout + r.stderr
    assert '"EtxSection" has no attribute "settle_seconds"' in r.stdout, r.stdout
    assert '"ExperimentConfig" has no attribute "radio"' in r.stdout, r.stdout
    good = tmp_path / "right_reader.py"
    good.write_text("from experiments.config import ExperimentConfig\n\n\n"
                    "def flows_at(exp: ExperimentConfig, t0: float) -> float:\n"
                    "    return t0 + exp.etx.flow_start_s\n")
    ok = mypy(str(good))
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_wrong_type_of_a_field_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "planted_type.py"
    bad.write_text("from experiments.config import ExperimentConfig\n\n\n"
                   "def nodes(exp: ExperimentConfig) -> int:\n"
                   "    return exp.topology.nodes\n")
    r = mypy(str(bad))
    assert r.returncode == 1 and "Incompatible return value type" in r.stdout, r.stdout
