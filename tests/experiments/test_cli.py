"""Issue 28, item 9: what a new user meets first: the install, ``aspan --help``/``--version``, the README."""
from __future__ import annotations

from tests import ROOT
import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path
import pytest
from experiments.cli import build_parser, main
from experiments.stopping import EXIT_INTERRUPTED, EXIT_NOT_OK, EXIT_OK, EXIT_USAGE
import yaml




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


# ====================================================================================================
# Command-line overrides are checked like the file's fields, and `aspan validate --backend B` and
# `aspan deploy run --dry-run` refuse what `aspan run` refuses on that backend (issue 26, item 4).


# a diamond (two paths) with two crossing flows: the checks are about the options, any graph is the same
DIAMOND = {"name": "opts", "backend": "sim", "repetitions": 1, "etx": {"settle_s": 0.5},
           "topology": {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]},
           "flows": [{"sender": "A", "receiver": "D", "segments": 20}, {"sender": "C", "receiver": "B", "segments": 20}],
           "variants": [{"name": "reno"}, {"name": "sack", "tcp": {"variant": "sack"}}]}


def write(tmp_path: Path, doc: dict, name: str = "e.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc))
    return p


@pytest.mark.parametrize("args, field, words", [
    (["--repetitions", "0"], "--repetitions: repetitions", "expected a value >= 1, got 0"),
    (["--repetitions", "-1"], "--repetitions: repetitions", "expected a value >= 1, got -1"),
    (["--jobs", "0"], "--jobs: jobs", "expected a value >= 1, got 0"),
    (["--jobs", "-3"], "--jobs: jobs", "expected a value >= 1, got -3"),
    (["--variants", "nope"], "variants", "--variants 'nope' matches none of reno, sack"),
    (["--variants", ""], "variants", "matches none of reno, sack"),
])
def test_a_bad_override_exits_2_naming_the_field_and_runs_nothing(tmp_path, capsys, args, field, words):
    p = write(tmp_path, DIAMOND)
    out = tmp_path / "runs"
    assert main(["run", str(p), "--out", str(out), "--no-plot", *args]) == 2
    err = capsys.readouterr().err
    assert f"{field}: " in err and words in err, err
    assert not out.exists()        # refused before the run directory was made


def test_an_unknown_backend_exits_2_naming_the_option(tmp_path, capsys):
    p = write(tmp_path, DIAMOND)
    for cmd in (["run", str(p), "--backend", "ns3"], ["validate", str(p), "--backend", "ns3"]):
        with pytest.raises(SystemExit) as e:
            main(cmd)
        assert e.value.code == 2
        assert "argument --backend: invalid choice: 'ns3'" in capsys.readouterr().err


def test_check_run_refuses_jobs_below_one_for_any_caller(tmp_path, capsys):
    p = write(tmp_path, DIAMOND)
    from experiments.runner import check_run
    from experiments.schema import ExperimentError, load_file
    with pytest.raises(ExperimentError) as e:
        check_run(load_file(p), "sim", jobs=0)
    assert (e.value.source, e.value.path) == ("--jobs", "jobs")
    check_run(load_file(p), "sim", jobs=2)     # a good value passes


def _inventory(tmp_path: Path) -> Path:
    (tmp_path / "id_test").write_text("not a real key\n")
    inv = {"defaults": {"user": "pi", "key_file": "id_test", "iface": "wlan0", "install_dir": "/home/pi/aspan"},
           "mesh": {"ssid": "aspan-mesh", "channel": 6},
           "hosts": [{"name": f"pi-{n.lower()}", "node": n, "host": f"192.0.2.{10 + i}",
                      "mesh_address": f"10.2.1.{i + 1}"} for i, n in enumerate("ABCD")]}
    return write(tmp_path, inv, "inv.yaml")


def _errors(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("aspan: error:")]


def test_validate_refuses_a_link_on_pi_as_run_does(tmp_path, capsys):
    pytest.importorskip("fabric")
    p = write(tmp_path, {**DIAMOND, "backend": "local", "link": {"rate_mbps": 5}})
    inv = _inventory(tmp_path)
    out = tmp_path / "runs"
    assert main(["validate", str(p)]) == 0                          # the file's backend, local, emulates links
    assert main(["validate", str(p), "--backend", "sim"]) == 0
    capsys.readouterr()
    assert main(["validate", str(p), "--backend", "pi"]) == 2
    validate = _errors(capsys)
    assert main(["run", str(p), "--backend", "pi", "--inventory", str(inv), "--out", str(out), "--no-plot"]) == 2
    assert _errors(capsys) == validate
    assert validate == [f"aspan: error: {p}: variants[reno].link.rate_mbps: cannot run on backend pi: on the Pis "
                        "the links are the real radios; remove link.* (an emulated link would come on top of them)"]
    assert not out.exists()


def test_validate_and_the_deploy_dry_run_refuse_a_medium_on_pi_as_run_does(tmp_path, capsys):
    pytest.importorskip("fabric")
    p = write(tmp_path, {**DIAMOND, "medium": {"model": "dcf"}})
    inv = _inventory(tmp_path)
    out = tmp_path / "runs"
    assert main(["validate", str(p), "--backend", "pi"]) == 2
    validate = _errors(capsys)
    assert validate and "variants[reno].medium.model: 'dcf' cannot run on backend pi" in validate[0]
    assert main(["run", str(p), "--backend", "pi", "--inventory", str(inv), "--out", str(out)]) == 2
    assert _errors(capsys) == validate
    assert main(["deploy", "run", "-i", str(inv), "--dry-run", str(p), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert [ln for ln in captured.err.splitlines() if ln.startswith("aspan: error:")] == validate
    assert "== " not in captured.out           # no repetition's commands printed
    assert not out.exists()


def test_the_deploy_dry_run_checks_repetitions_as_run_does(tmp_path, capsys):
    pytest.importorskip("fabric")
    p = write(tmp_path, DIAMOND)
    inv = _inventory(tmp_path)
    assert main(["deploy", "run", "-i", str(inv), "--dry-run", str(p), "--repetitions", "0"]) == 2
    assert "--repetitions: repetitions: expected a value >= 1, got 0" in capsys.readouterr().err
    assert main(["deploy", "run", "-i", str(inv), "--dry-run", str(p), "--repetitions", "1"]) == 0
    assert capsys.readouterr().out.count("== ") == 2      # 2 variants x 1 repetition


def test_validate_and_run_warn_of_settings_a_peer_would_not_get(tmp_path, capsys):
    """medium.airtime simple at 802.11g and reception range on a multi-hop mesh run, with a warning naming the
    field and the variants (experiments.advice); the standard's airtime, sinr reception, one hop or no medium
    draw none; nothing is refused."""
    from experiments.advice import advice
    from experiments.cli import main
    from experiments.schema import load_experiment
    chain = {"medium": {"model": "dcf", "standard": "g", "spacing_m": 200}, "flows": [{"sender": "A", "receiver": "D"}],
             "variants": [{"name": "simple"}, {"name": "txtime", "medium": {"airtime": "txtime"}}]}
    found = advice(load_experiment(chain, "c.yaml"))
    assert len(found) == 2
    assert found[0].startswith("c.yaml: variants[simple].medium.airtime: airtime simple gives a 1040-byte frame's "
                               "exchange 6.9 % less airtime")
    assert found[1].startswith("c.yaml: medium.reception: reception range loses") and \
        found[1].endswith("(variants simple, txtime)")
    assert advice(load_experiment({**chain, "flows": [{"sender": "A", "receiver": "B"}]}, "c.yaml"))[1:] == []
    assert advice(load_experiment({"flows": [{"sender": "A", "receiver": "D"}]}, "n.yaml")) == []
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({**chain, "backend": "sim"}))
    assert main(["validate", str(f)]) == 0
    err = capsys.readouterr().err
    assert err.count("aspan: warning: ") == 2 and "medium.airtime" in err


def test_summary_prints_the_table_of_a_run_and_run_ends_with_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 40, item 3, on the diamond with crossing flows: aspan run ends with the table of means and
    aspan summary RUN prints it again, against the baseline chosen; a wrong one is refused, naming --baseline."""
    p = write(tmp_path, {**DIAMOND, "repetitions": 3})
    assert main(["run", str(p), "--out", str(tmp_path / "out"), "--no-plot"]) == 0
    out = capsys.readouterr().out
    run = next((tmp_path / "out" / "opts").iterdir())
    table = out[out.index("Run "):]
    assert "goodput / reno" in table and "No report yet" in table
    for variant in ("reno", "sack"):
        for flow in ("A->D:6000", "C->B:6001"):
            assert re.search(rf"^  {variant}\s+{re.escape(flow)}\s+3 ok\s+100 %", table, re.M), (variant, flow)
    assert main(["summary", str(run), "--baseline", "sack"]) == 0
    again = capsys.readouterr().out
    assert "goodput / sack" in again and re.search(r"^  sack\s+A->D:6000.*\(baseline\)$", again, re.M)
    assert main(["summary", str(run), "--baseline", "cubic"]) == 2
    assert "--baseline: 'cubic' is not a variant of this run (variants: reno, sack)" in capsys.readouterr().err
    assert main(["summary", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_a_baseline_field_names_a_variant_and_is_not_per_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, {**DIAMOND, "baseline": "cubic", "variants": [{"name": "reno", "baseline": "sack"},
                                                                      {"name": "sack"}]})
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert f"{p}: variants[0].baseline: cannot be set per variant" in err
    assert f"{p}: baseline: names no variant: 'cubic' is not one of sack" in err   # reno's own error aside
    assert main(["validate", str(write(tmp_path, {**DIAMOND, "baseline": "sack"}, "ok.yaml"))]) == 0


def test_set_writes_fields_at_the_top_level_and_variants_keep_their_own() -> None:
    """``--set PATH=VALUE``: the value read as YAML at the file's top level; the document given is not changed;
    a variant setting the field keeps its value, and a note says so."""
    from experiments.schema import load_experiment, set_fields
    doc, notes = set_fields(DIAMOND, ["tcp.rack=true", "tcp.variant=sack", "loss.default={model: bernoulli, rate: 0.01}"],
                            "e.yaml")
    assert "tcp" not in DIAMOND and doc["tcp"] == {"rack": True, "variant": "sack"}
    assert doc["loss"]["default"] == {"model": "bernoulli", "rate": 0.01}
    assert notes == ["--set tcp.variant: variant sack sets it itself and keeps 'sack'"]
    exp = load_experiment(doc, "e.yaml")
    got = {v.name: (v.config.tcp.variant, v.config.tcp.rack, v.config.loss.default["rate"]) for v in exp.variants}
    assert got == {"reno": ("sack", True, 0.01), "sack": ("sack", True, 0.01)}


@pytest.mark.parametrize("item, where, words", [
    ("tcp.rack", "--set: tcp.rack", "expected PATH=VALUE"),
    ("=1", "--set: =1", "expected PATH=VALUE"),
    ("tcp..rack=1", "--set: tcp..rack=1", "expected PATH=VALUE"),
    ("variants=[]", "--set: variants", "sets the top level only"),
    ("sweep.values=[1]", "--set: sweep.values", "sets the top level only"),
    ("name.x=1", "e.yaml: name", "is not a mapping, so --set name.x cannot go inside it"),
    ("tcp.rack=[1", "--set: tcp.rack", "is not valid YAML"),
    ("tcp.nope=1", "e.yaml: tcp.nope", "unknown field"),
    ("tcp.rack=3", "e.yaml: tcp.rack", "expected"),
])
def test_a_bad_set_exits_2_naming_it_in_validate_and_run(tmp_path, capsys, item, where, words):
    p = write(tmp_path, DIAMOND)
    out = tmp_path / "runs"
    assert main(["validate", str(p), "--set", item]) == 2
    err = capsys.readouterr().err
    assert where.replace("e.yaml", str(p)) + ": " in err and words in err, err
    assert main(["run", str(p), "--out", str(out), "--no-plot", "--set", item]) == 2
    err = capsys.readouterr().err
    assert where.replace("e.yaml", str(p)) + ": " in err and words in err, err
    assert not out.exists()


def test_run_with_set_records_the_field_and_validate_refuses_as_run_does(tmp_path, capsys):
    p = write(tmp_path, DIAMOND)
    assert main(["run", str(p), "--out", str(tmp_path / "out"), "--no-plot", "--set", "tcp.timestamps=true",
                 "--set", "tcp.variant=sack"]) == 0
    err = capsys.readouterr().err
    assert err.count("--set tcp.variant: variant sack sets it itself") == 1
    run = next((tmp_path / "out" / "opts").iterdir())
    resolved = yaml.safe_load((run / "experiment.yaml").read_text())
    assert resolved["base"]["tcp"]["timestamps"] is True and resolved["base"]["tcp"]["variant"] == "sack"
    assert [v["config"]["tcp"]["timestamps"] for v in resolved["variants"]] == [True, True]
    assert [v["config"]["tcp"]["variant"] for v in resolved["variants"]] == ["sack", "sack"]
    # a user-space TCP field on a kernel plane: refused by validate as by run, before anything starts
    assert main(["validate", str(p), "--backend", "netns", "--set", "tcp.timestamps=true"]) == 2
    assert "tcp.timestamps: True is a setting of the user-space TCP" in capsys.readouterr().err
