"""The registries own their names, and docs/DESIGN.md's three worked examples work as written.

Each example's file and registry line are taken from docs/DESIGN.md itself ("Registries: adding
a scheme, a loss model or a backend"): the file becomes a module (in sys.modules only, under the
name the page gives it), the registry line is added to its registry, and the test checks what
the page says it does.  Every registration is undone after the test.
"""
from __future__ import annotations

from tests import ROOT
import random
import re
import sys
import types
from pathlib import Path
from typing import Any
import pytest
import yaml
import aspan.schemes
import experiments.backends
import routing.links.loss
from aspan.policy import POLICIES
from aspan.schemes import SCHEMES
from experiments.backends import BACKENDS
from experiments.cli import build_parser, main
from experiments.runner import run_experiment
from experiments.schema import SCHEMA, ExperimentError, load_experiment, load_file
from plots.summary import read_summary
from routing.links.loss import MODELS, build_loss_model
from tcp_user.config import VARIANTS




DESIGN = ROOT / "docs" / "DESIGN.md"


def example(heading: str) -> tuple[str, str]:
    """(the file, the registry line) of the example under ``### heading`` in docs/DESIGN.md."""
    text = DESIGN.read_text()
    start = text.index(f"### {heading}\n")
    ends = [i for i in (text.find("\n## ", start), text.find("\n### ", start + 1)) if i != -1]
    end = min(ends, default=len(text))
    blocks = re.findall(r"```python\n(.*?)```", text[start:end], re.S)
    assert len(blocks) == 2, f"docs/DESIGN.md, {heading!r}: expected the file and the registry line"
    return blocks[0], blocks[1]


def load_example(monkeypatch: pytest.MonkeyPatch, heading: str, module: str, registry: dict[str, Any],
                 registry_module: types.ModuleType) -> types.ModuleType:
    """Make the example's file the module ``module`` and add its registry line to ``registry``."""
    source, line = example(heading)
    mod = types.ModuleType(module)
    mod.__file__ = f"<docs/DESIGN.md: {heading}>"
    monkeypatch.setitem(sys.modules, module, mod)
    exec(compile(source, mod.__file__, "exec"), vars(mod))
    parent, _, short = module.rpartition(".")
    names = {**vars(registry_module), **vars(mod), short: mod}
    entries = eval("{" + line.strip() + "}", names)
    for name, entry in entries.items():
        monkeypatch.setitem(registry, name, entry)
    return mod


def small_experiment(**over: Any) -> dict[str, Any]:
    doc = {"name": "toy", "seed": 1, "repetitions": 1, "etx": {"settle_s": 1.0},
           "loss": {"default": {"model": "bernoulli", "rate": 0.005}},
           "flows": [{"sender": "A", "receiver": "D", "segments": 200}]}
    doc.update(over)
    return doc


# ---- the registries are where the names come from -----------------------------------------
def test_the_schema_and_the_command_line_take_their_names_from_the_registries():
    assert tuple(SCHEMES) == ("aspan", "classic", "multihop", "snack", "slack", "ackall")
    snoop, tcp = SCHEMA["snoop"], SCHEMA["tcp"]
    for spec, names in [(snoop["scheme"], SCHEMES), (snoop["policy"], POLICIES), (tcp["variant"], VARIANTS),
                        (SCHEMA["backend"], BACKENDS)]:
        assert all(spec.check(n) is None for n in names)
        assert "expected one of " + ", ".join(names) in spec.check("no-such-name")
    run = next(a for a in build_parser()._subparsers._group_actions[0].choices["run"]._actions
               if a.dest == "backend")
    assert list(run.choices) == list(BACKENDS)


def test_a_registered_name_is_known_without_reimporting_anything(monkeypatch):
    """The checks read the registries when they check, not when the schema was imported."""
    with pytest.raises(ExperimentError, match="backend: expected one of sim, local, netns, pi, got 'later'"):
        load_experiment({"backend": "later"}, "x.yaml")
    monkeypatch.setitem(BACKENDS, "later", experiments.backends.Backend("nowhere", "registered late"))
    assert load_experiment({"backend": "later"}, "x.yaml").base["backend"] == "later"


def test_the_registries_and_the_schema_import_nothing_heavy():
    """The schema (and so every registry it reads) loads without matplotlib, pandas, numpy,
    netfilterqueue, scapy or Fabric: backends are imported by name only when they run."""
    import subprocess
    code = ("import sys, experiments.schema, experiments.cli; experiments.cli.build_parser(); "
            "heavy = ('matplotlib', 'pandas', 'numpy', 'netfilterqueue', 'scapy', 'fabric', 'paramiko'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---- docs/DESIGN.md: Adding a snoop scheme ---------------------------------------------------
def test_the_toy_scheme_validates_and_caches_nothing_in_a_sim_run(monkeypatch, tmp_path):
    load_example(monkeypatch, "Adding a snoop scheme", "aspan.nosnoop", SCHEMES, aspan.schemes)
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(small_experiment(variants=[
        {"name": "aspan-every", "snoop": {"scheme": "aspan", "policy": "every"}},
        {"name": "nosnoop-every", "snoop": {"scheme": "nosnoop", "policy": "every"}}])))
    exp = load_file(path)
    assert [v.config["snoop"]["scheme"] for v in exp.variants] == ["aspan", "nosnoop"]
    run_dir = run_experiment(exp, backend="sim", out=tmp_path / "runs", jobs=1, plot=False,
                             progress=lambda s: None)
    rows = {r["variant"]: r for r in read_summary(run_dir).to_dict("records")}
    assert rows["aspan-every"]["status"] == rows["nosnoop-every"]["status"] == "ok"
    assert rows["aspan-every"]["cache_insertions"] > 0
    assert rows["nosnoop-every"]["cache_insertions"] == 0
    assert rows["nosnoop-every"]["segments"] == 200


def test_without_its_registry_line_the_toy_scheme_is_refused():
    with pytest.raises(ExperimentError, match=r"snoop.scheme: expected one of aspan, .*, got 'nosnoop'"):
        load_experiment({"snoop": {"scheme": "nosnoop"}}, "x.yaml")


# ---- docs/DESIGN.md: Adding a loss model -----------------------------------------------------
def test_the_toy_loss_model_validates_and_drops_every_nth_packet(monkeypatch):
    load_example(monkeypatch, "Adding a loss model", "routing.links.loss_nth", MODELS, routing.links.loss)
    cfg = load_experiment(small_experiment(loss={"default": {"model": "every-nth", "n": 3}}), "x.yaml").variants[0].config
    assert cfg["loss"]["default"] == {"model": "every-nth", "n": 3, "down": []}
    model = build_loss_model(cfg["loss"]["default"], random.Random(1))
    assert [t for t in range(1, 11) if model.drop(float(t))] == [3, 6, 9]
    default = load_experiment(small_experiment(loss={"default": {"model": "every-nth"}}), "x.yaml")
    assert default.variants[0].config["loss"]["default"]["n"] == 10
    with pytest.raises(ExperimentError) as e:
        load_experiment(small_experiment(loss={"default": {"model": "every-nth", "n": 0}}), "bad.yaml")
    assert (e.value.source, e.value.path) == ("bad.yaml", "loss.default.n") and ">= 1" in e.value.message
    with pytest.raises(ExperimentError, match="loss.default.rate: not a setting of model 'every-nth'"):
        load_experiment(small_experiment(loss={"default": {"model": "every-nth", "rate": 0.1}}), "bad.yaml")


# ---- docs/DESIGN.md: Adding a backend --------------------------------------------------------
def test_the_toy_backend_is_accepted_and_dispatched_by_the_runner(monkeypatch, tmp_path, capsys):
    mod = load_example(monkeypatch, "Adding a backend", "experiments.backends.dry", BACKENDS, experiments.backends)
    calls: list[tuple[str, int]] = []
    real = mod.run_rep

    def counting(variant: Any, repetition: int, rep_dir: Path) -> dict[str, Any]:
        calls.append((variant.name, repetition))
        return real(variant, repetition, rep_dir)

    monkeypatch.setattr(mod, "run_rep", counting)
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(small_experiment(backend="dry", repetitions=2,
                                                    variants=[{"name": "a"}, {"name": "b"}])))
    assert load_file(path).base["backend"] == "dry"
    # every repetition is incomplete: the run says so with exit status 1 (issue 13, item 1)
    assert main(["run", str(path), "--backend", "dry", "--no-plot", "--out", str(tmp_path / "runs")]) == 1
    assert calls == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    run_dir = next((tmp_path / "runs" / "toy").iterdir())
    rows = read_summary(run_dir).to_dict("records")
    assert [(r["variant"], r["repetition"], r["status"], r["backend"]) for r in rows] == \
        [(v, k, "incomplete", "dry") for v in "ab" for k in (0, 1)]
