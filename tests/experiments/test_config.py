"""The typed experiment (experiments/config.py): frozen, read by attribute, and the same mapping on disk
and across processes as the schema resolved it (issue 38, item 3)."""
from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import pytest
import yaml

from experiments.config import ConfigShapeError, EtxSection, ExperimentConfig, FlowSection, frozen, plain
from experiments.schema import SCHEMA, load_experiment, load_file

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = sorted((ROOT / "experiments").glob("*.yaml"))


def _small(**over: object) -> ExperimentConfig:
    doc = {"flows": [{"sender": "A", "receiver": "D", "segments": 10}], **over}
    return load_experiment(doc, "small.yaml").variants[0].config


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.name)
def test_every_variant_of_every_experiment_round_trips_to_the_same_bytes(path: Path) -> None:
    """to_dict gives the schema's mapping key for key, in order (so experiment.yaml and the JSON configs of
    node processes are byte for byte what they were), and from_dict reads it back to an equal config."""
    for v in load_file(path).variants:
        d = v.config.to_dict()
        again = ExperimentConfig.from_dict(json.loads(json.dumps(d)))
        assert again == v.config
        assert json.dumps(again.to_dict()) == json.dumps(d)
        assert yaml.safe_dump(again.to_dict(), sort_keys=False) == yaml.safe_dump(d, sort_keys=False)


def test_every_section_and_field_of_the_schema_is_typed() -> None:
    """The dataclasses declare exactly the schema's sections and fields, in the schema's order."""
    top = [f.name for f in dataclasses.fields(ExperimentConfig)]
    assert top == [k for k in SCHEMA if k not in ("variants", "sweep")]
    cfg = _small()
    for name, spec in SCHEMA.items():
        if isinstance(spec, dict):
            assert [f.name for f in dataclasses.fields(getattr(cfg, name))] == list(spec), name


def test_the_config_is_frozen_all_the_way_down() -> None:
    cfg = _small(loss={"default": {"model": "bernoulli", "rate": 0.01}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.etx.settle_s = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.topology.addresses["A"] = "10.2.1.9"  # type: ignore[index]
    with pytest.raises(TypeError):
        cfg.loss.default["rate"] = 0.5  # type: ignore[index]
    assert isinstance(cfg.topology.nodes, tuple) and isinstance(cfg.flows[0], FlowSection)
    assert not hasattr(cfg.etx, "__dict__")        # slots: no stray attribute can be set


def test_the_flow_start_is_derived_from_the_settling() -> None:
    cfg = _small(etx={"settle_s": 2.5})
    assert cfg.etx.flow_start_s == 2.5
    assert dataclasses.replace(cfg.etx, settle_s=7).flow_start_s == 7
    assert isinstance(cfg.etx, EtxSection)


def test_derived_helpers_read_the_fields() -> None:
    cfg = _small(loss={"default": {"model": "bernoulli", "rate": 0.01}, "nodes": {"B": {"rate": 0.2}}},
                 routing={"metric": "etx"}, etx={"settle_s": 5})
    assert cfg.loss.of_node("B")["rate"] == 0.2 and cfg.loss.of_node("C")["rate"] == 0.01
    assert cfg.routing.link_state and not cfg.routing.babeld


def test_a_mapping_that_is_not_a_resolved_experiment_is_refused_naming_the_field() -> None:
    d = _small().to_dict()
    d["etx"]["settle_seconds"] = d["etx"].pop("settle_s")
    with pytest.raises(ConfigShapeError) as e:
        ExperimentConfig.from_dict(d, source="A.node.json")
    assert (e.value.source, e.value.path) == ("A.node.json", "etx.settle_seconds")
    assert "settle_s" in e.value.message
    d = _small().to_dict()
    del d["tcp"]["delack_s"]
    with pytest.raises(ConfigShapeError, match="tcp.delack_s: missing"):
        ExperimentConfig.from_dict(d)
    d = _small().to_dict()
    d["flows"][0]["rate"] = 3
    with pytest.raises(ConfigShapeError, match=r"flows\[0\].rate: unknown field"):
        ExperimentConfig.from_dict(d)
    with pytest.raises(ConfigShapeError, match="limits: expected a mapping"):
        ExperimentConfig.from_dict({**_small().to_dict(), "limits": 600})


def test_it_pickles_as_its_mapping() -> None:
    """A repetition sent to a worker process (sim --jobs, Dask) carries the config."""
    cfg = _small(medium={"model": "dcf", "positions": {"A": [0, 0], "B": [200, 0], "C": [400, 0], "D": [600, 0]}})
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert pickle.loads(pickle.dumps(cfg.medium)) == cfg.medium


def test_the_mapping_view_is_plain_data() -> None:
    """``cfg["section"]`` (the schema's validators and the tests read it) is the plain value, a copy."""
    cfg = _small()
    view = cfg["topology"]
    assert view == cfg.topology.to_dict() and isinstance(view["nodes"], list)
    view["nodes"].append("Z")
    assert "Z" not in cfg.topology.nodes
    with pytest.raises(KeyError):
        cfg["topologie"]
    assert cfg.get("topologie", "none") == "none"
    assert plain(frozen({"a": [1, {"b": (2,)}]})) == {"a": [1, {"b": [2]}]}


#: the schema and its validators, which read the resolved mapping (a dict while it is validated)
MAPPING_READERS = ("experiments/schema.py", "experiments/config.py", "experiments/medium_spec.py",
                   "experiments/link_spec.py", "experiments/topology_spec.py", "experiments/radio_loss.py")


def _config_subscripts(path: Path) -> list[int]:
    """Lines of ``cfg["..."]``, ``config["..."]`` and ``<x>.config["..."]`` (a string key) in ``path``."""
    import ast
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            v = node.value
            if (isinstance(v, ast.Name) and v.id in ("cfg", "config")) or (isinstance(v, ast.Attribute) and v.attr == "config"):
                out.append(node.lineno)
    return out


def test_no_module_outside_the_schema_reads_the_config_by_key() -> None:
    """Backends, build.py, the runner, deploy and plots read the typed config by attribute (mypy checks
    those); only the schema and its validators read the mapping."""
    found = []
    for pkg in ("aspan", "etx", "routing", "tcp_user", "experiments", "deploy", "bench"):
        for f in sorted((ROOT / pkg).rglob("*.py")):
            rel = f.relative_to(ROOT).as_posix()
            if rel not in MAPPING_READERS:
                found += [f"{rel}:{line}" for line in _config_subscripts(f)]
    assert not found, "read by key, not by attribute:\n" + "\n".join(found)


def test_the_scan_finds_a_read_by_key(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f(cfg, v):\n    return cfg['etx']['settle_s'] + v.config[\"seed\"] + cfg.etx.settle_s\n")
    assert _config_subscripts(f) == [2, 2]          # one per read: cfg["etx"] and v.config["seed"]
