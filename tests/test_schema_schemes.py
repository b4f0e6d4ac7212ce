"""The schema fields of the snoop schemes: defaults unchanged, errors naming the field."""
import pytest

from experiments.build import scheme_config, tcp_config
from experiments.schema import ExperimentError, load_experiment


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
