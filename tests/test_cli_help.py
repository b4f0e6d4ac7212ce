"""Issue 28, item 9: what a new user meets first: the install, ``aspan --help``/``--version``, the README."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from experiments.cli import build_parser, main
from experiments.stopping import EXIT_INTERRUPTED, EXIT_NOT_OK, EXIT_OK, EXIT_USAGE

ROOT = Path(__file__).resolve().parent.parent


def _parsers(parser: argparse.ArgumentParser, path: str = "aspan"):
    """Every parser and sub-parser, with its command path."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_argument_has_help_text() -> None:
    missing = []
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{path} {a.dest}" for a in action._choices_actions if not a.help]
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"arguments without help text: {missing}"


def test_help_lists_the_exit_codes(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for code in (EXIT_OK, EXIT_NOT_OK, EXIT_USAGE, EXIT_INTERRUPTED):
        assert re.search(rf"^\s+{code}\s+\S", out, re.M), f"exit code {code} not in aspan --help"


def test_version(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out.strip() == f"aspan {version}"


def test_deploy_help_is_written_for_users(capsys: pytest.CaptureFixture) -> None:
    import experiments.deploy_cli as deploy_cli
    with pytest.raises(SystemExit):
        main(["deploy", "--help"])
    out = capsys.readouterr().out
    assert "``" not in out and "application layer" not in out     # not the module's docstring
    assert deploy_cli.__doc__.splitlines()[0] not in out
    assert "pip install -e '.[pi]'" in out


def test_the_license_is_an_spdx_string() -> None:
    """setuptools >= 77 prints a deprecation banner for a ``project.license`` table on every install."""
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(doc["project"]["license"], str)
    assert any(re.match(r"setuptools>=(\d+)", r) and int(re.match(r"setuptools>=(\d+)", r).group(1)) >= 77
               for r in doc["build-system"]["requires"])


def test_readme_names_the_pi_extra_where_the_pis_first_appear() -> None:
    readme = (ROOT / "README.md").read_text()
    first = readme.index("Raspberry Pi")
    paragraph = readme[first:readme.index("\n\n", first)]
    assert "'.[pi]'" in paragraph


def test_make_has_a_quick_subset_named_in_the_readme() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test-fast:", makefile, re.M)
    assert 'not root and not slow' in makefile
    readme = (ROOT / "README.md").read_text()
    assert "make test-fast" in readme
    r = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True)
    assert re.search(r"takes about \d+", r.stdout), r.stdout


def test_python_m_experiments_version() -> None:
    r = subprocess.run([sys.executable, "-m", "experiments", "--version"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("aspan ")
