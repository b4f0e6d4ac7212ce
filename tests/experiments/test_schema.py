"""Experiment YAML validation: wrong files are rejected before anything starts, naming file and field."""
from tests import ROOT
import subprocess
import sys
import pytest
import yaml
from experiments.schema import ExperimentError, load_experiment, load_file
from experiments.build import scheme_config, tcp_config




EXP_DIR = ROOT / "experiments"


@pytest.mark.parametrize("doc, path, text", [
    ({"snop": {}}, "snop", "did you mean 'snoop'"),
    ({"snoop": {"pkt_qos": 1.5}}, "snoop.pkt_qos", "<= 1"),
    ({"snoop": {"policy": "sometimes"}}, "snoop.policy", "expected one of"),
    ({"tcp": {"variant": 3}}, "tcp.variant", "expected a string"),
    ({"repetitions": True}, "repetitions", "expected an integer"),
    ({"repetitions": 0}, "repetitions", ">= 1"),
    ({"flows": [{"sender": "A", "receiver": "Z"}]}, "flows[0].receiver", "unknown node"),
    ({"flows": [{"sender": "A", "receiver": "A"}]}, "flows[0]", "same node"),
    ({"flows": [{"sender": "A", "receiver": "D", "segmnts": 3}]}, "flows[0].segmnts", "unknown field"),
    ({"flows": [{"sender": "A", "receiver": "D", "variant": "vegas"}]}, "flows[0].variant", "expected one of"),
    ({"topology": {"chain": ["A"]}}, "topology.chain", "at least two"),
    ({"topology": {"addresses": {"A": "10.2.1.300"}}}, "topology.addresses.A", "IPv4"),
    ({"loss": {"default": {"model": "bernoulli", "rate": 2}}}, "loss.default.rate", "<= 1"),
    ({"loss": {"nodes": {"Q": {"model": "none"}}}}, "loss.nodes.Q", "unknown node"),
    ({"loss": {"default": {"model": "bernoulli", "down": [[5, 1]]}}}, "loss.default.down[0]", "start < end"),
    ({"variants": [{"name": "x", "tcp": {"variant": "cubic"}}]}, "variants[x].tcp.variant", "expected one of"),
    ({"variants": [{"name": "x", "seed": 3}]}, "variants[0].seed", "per variant"),
    ({"variants": [{"name": "x"}, {"name": "x"}]}, "variants", "repeat"),
    ({"sweep": {"field": "snoop.qos", "values": [1]}}, "sweep.field", "dotted path"),
    ({"sweep": {"field": "snoop.pkt_qos", "values": [1.2]}}, "variants[pkt_qos-1.2].snoop.pkt_qos", "<= 1"),
    ([1, 2], "", "mapping"),
    ({"loss": {"default": {"model": "gilbert-elliott", "rate": 0.1}}}, "loss.default.rate", "not a setting"),
])
def test_errors_name_file_and_field(doc, path, text):
    with pytest.raises(ExperimentError) as e:
        load_experiment(doc, "bad.yaml")
    assert e.value.source == "bad.yaml"
    assert e.value.path == path
    assert text in str(e.value)


def test_defaults_variants_and_sweep():
    exp = load_experiment({"variants": [{"name": "reno"},
                                        {"name": "aspan", "tcp": {"variant": "sack"},
                                         "snoop": {"policy": "adaptive"}}],
                           "sweep": {"field": "snoop.pkt_qos", "values": [0.9, 1.0]}}, "x.yaml")
    assert [v.name for v in exp.variants] == ["reno-0.9", "reno-1.0", "aspan-0.9", "aspan-1.0"]
    a = exp.variants[3].config
    assert a["snoop"]["pkt_qos"] == 1.0 and a["snoop"]["policy"] == "adaptive" and a["tcp"]["variant"] == "sack"
    assert a["topology"]["addresses"] == {"A": "10.2.1.1", "B": "10.2.1.2", "C": "10.2.1.3", "D": "10.2.1.4"}
    assert a["etx"]["window"] == 1000 and a["loss"]["default"]["model"] == "none"


def test_unreadable_and_invalid_yaml_files(tmp_path):
    with pytest.raises(ExperimentError, match="cannot read"):
        load_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("snoop: [unclosed\n")
    with pytest.raises(ExperimentError, match="not valid YAML"):
        load_file(bad)


@pytest.mark.parametrize("path", sorted(EXP_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_experiment_validates(path):
    exp = load_file(path)
    assert exp.variants
    assert yaml.safe_dump(exp.resolved())
    # `aspan run FILE` with no option runs every variant on the file's backend: none may be refused there
    from experiments.runner import check_backend_support
    check_backend_support(exp, exp.base.get("backend", "local"))


def test_netns_refuses_snack_which_kernel_tcp_cannot_run(tmp_path):
    from experiments.runner import run_experiment
    exp = load_experiment({"variants": [{"name": "a"}, {"name": "snoop", "snoop": {"scheme": "snack", "policy": "fixed", "fixed_hop": 2}}]}, "x.yaml")
    with pytest.raises(ExperimentError, match=r"variants\[snoop\]\.snoop\.scheme: kernel TCP has no SNACK option"):
        run_experiment(exp, backend="netns", out=tmp_path, plot=False, progress=lambda s: None)
    assert not any(tmp_path.iterdir())  # refused before a run directory was made
    exp = load_experiment({"tcp": {"snack": True}}, "y.yaml")
    with pytest.raises(ExperimentError, match="kernel TCP has no SNACK option"):
        run_experiment(exp, backend="netns", out=tmp_path, plot=False, progress=lambda s: None)


def test_run_selects_variants_by_pattern_and_names_the_choices_when_none_match():
    from experiments.runner import select_variants
    exp = load_experiment({"variants": [{"name": "lossy-reno"}, {"name": "lossy-aspan"}, {"name": "disc-reno"}]}, "v.yaml")
    assert [v.name for v in select_variants(exp, "disc-*, lossy-reno")] == ["lossy-reno", "disc-reno"]
    with pytest.raises(ExperimentError, match=r"v.yaml: variants: --variants 'x\*' matches none of lossy-reno, lossy-aspan, disc-reno"):
        select_variants(exp, "x*")


def test_the_experiment_is_typed_and_frozen_and_overrides_make_a_new_one():
    import dataclasses
    from experiments.config import ExperimentConfig
    from experiments.runner import apply_overrides
    exp = load_experiment({"repetitions": 3, "variants": [{"name": "a"}, {"name": "b"}]}, "v.yaml")
    assert isinstance(exp.base, ExperimentConfig) and exp.base.repetitions == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        exp.base = exp.base  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        exp.base.repetitions = 5  # type: ignore[misc]
    chosen = apply_overrides(exp, 7, "b")
    assert chosen.base.repetitions == 7 and [v.name for v in chosen.variants] == ["b"]
    assert [v.config.repetitions for v in chosen.variants] == [7]      # what experiment.json records
    assert exp.base.repetitions == 3 and len(exp.variants) == 2        # the loaded one unchanged
    assert chosen.resolved()["base"]["repetitions"] == 7
    with pytest.raises(ExperimentError, match="--repetitions"):
        apply_overrides(exp, 0, None)


THREE_ERRORS = """\
seed: -1
tcp: {variant: cubic}
variants:
  - {name: a}
  - {name: b, snoop: {pkt_qos: 2}}
"""


def test_every_error_of_a_file_is_reported_at_once(tmp_path):
    p = tmp_path / "three.yaml"
    p.write_text(THREE_ERRORS)
    with pytest.raises(ExperimentError) as e:
        load_file(p)
    assert [(err.source, err.path) for err in e.value.errors] == \
        [(str(p), "seed"), (str(p), "tcp.variant"), (str(p), "variants[b].snoop.pkt_qos")]
    assert e.value.path == "seed"          # the first error is the error itself
    assert str(e.value).splitlines() == [str(err) for err in e.value.errors]
    r = subprocess.run([sys.executable, "-m", "experiments", "validate", str(p), str(ROOT / "experiments" / "fig4-no-loss.yaml")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"aspan: error: {p}: seed: expected a value >= 0, got -1",
        f"aspan: error: {p}: tcp.variant: expected one of reno, sack, got 'cubic'",
        f"aspan: error: {p}: variants[b].snoop.pkt_qos: expected a value <= 1, got 2"]
    assert "fig4-no-loss.yaml: ok" in r.stdout   # the other file is still checked


def test_one_error_is_reported_as_before():
    with pytest.raises(ExperimentError) as e:
        load_experiment({"seed": -1}, "one.yaml")
    assert e.value.errors == [e.value] and str(e.value) == "one.yaml: seed: expected a value >= 0, got -1"


# ====================================================================================================
# The schema fields of the snoop schemes: defaults unchanged, errors naming the field.


@pytest.mark.parametrize("doc, path, text", [
    ({"snoop": {"scheme": "tcp-westwood"}}, "snoop.scheme", "expected one of aspan, classic"),
    ({"snoop": {"scheme": "classic"}}, "snoop.policy", "caches nowhere with policy none"),
    ({"snoop": {"scheme": "multihop", "policy": "fixed"}}, "snoop.policy", "every forwarding node"),
    ({"snoop": {"snoop_tick_s": -1}}, "snoop.snoop_tick_s", ">= 0"),
    ({"snoop": {"max_local_rxmit": 0}}, "snoop.max_local_rxmit", ">= 1"),
    ({"snoop": {"max_cached_segments": 0}}, "snoop.max_cached_segments", ">= 1"),
    ({"tcp": {"snack": "yes"}}, "tcp.snack", "true/false"),
    ({"loss": {"default": {"model": "bit-error", "ber": 2}}}, "loss.default.ber", "<= 1"),
    ({"loss": {"default": {"model": "bit-error", "rate": 0.1}}}, "loss.default.rate", "not a setting"),
    ({"scenario": 3}, "scenario", "expected a string"),
])
def test_scheme_field_errors(doc, path, text):
    with pytest.raises(ExperimentError) as e:
        load_experiment(doc, "bad.yaml")
    assert e.value.path == path and text in str(e.value)


def test_defaults_keep_aspan_and_plain_tcp():
    cfg = load_experiment({}, "x.yaml").variants[0].config
    assert cfg["snoop"]["scheme"] == "aspan" and cfg["tcp"]["snack"] is False and cfg["scenario"] == ""
    sc = scheme_config(cfg)
    assert (sc.scheme, sc.snoop_tick, sc.max_local_rxmit, sc.max_cached_segments) == ("aspan", 0.1, 10, 100)
    assert tcp_config(cfg, 1000).snack is False


def test_scheme_values_reach_the_node_configuration():
    exp = load_experiment({"scenario": "bursty",
                           "variants": [{"name": "m", "snoop": {"scheme": "multihop", "snoop_tick_s": 1.0}},
                                        {"name": "s", "scenario": "other", "tcp": {"snack": True},
                                         "snoop": {"scheme": "snack", "policy": "every"}},
                                        {"name": "b", "loss": {"default": {"model": "bit-error",
                                                                           "ber": 1e-5}}}]}, "x.yaml")
    m, s, b = (v.config for v in exp.variants)
    assert scheme_config(m).scheme == "multihop" and scheme_config(m).snoop_tick == 1.0
    assert m["scenario"] == "bursty" and s["scenario"] == "other"
    assert tcp_config(s, 1000).snack is True and scheme_config(s).scheme == "snack"
    assert b["loss"]["default"] == {"model": "bit-error", "ber": 1e-5, "down": []}


def test_a_config_without_the_new_keys_builds_aspan():
    cfg = load_experiment({}, "x.yaml").variants[0].config
    for key in ("scheme", "snoop_tick_s", "max_local_rxmit", "max_cached_segments"):
        del cfg["snoop"][key]
    assert scheme_config(cfg).scheme == "aspan"


def test_the_newreno_and_frto_keys_reach_the_user_space_tcp_off_by_default():
    exp = load_experiment({"variants": [{"name": "plain"},
                                        {"name": "on", "tcp": {"newreno": True, "frto": True}}]}, "x.yaml")
    plain, on = (tcp_config(v.config, 1000) for v in exp.variants)
    assert (plain.newreno, plain.frto) == (False, False)
    assert (on.newreno, on.frto) == (True, True)
