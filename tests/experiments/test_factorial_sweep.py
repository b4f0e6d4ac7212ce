"""Factorial sweeps: ``sweep: {factors: {...}, only: [...]}`` expands every combination (or a listed subset),
names the variants from the values, and the summary and figures group by any factor (issue 26, item 1).
One-field sweeps keep their names and values.
"""
from __future__ import annotations

from tests import ROOT
import csv
from pathlib import Path
import pytest
import yaml
from experiments.cli import main
from experiments.schema import ExperimentError, load_experiment, load_file
from plots.summary import SUMMARY_COLUMNS




# a diamond (two paths) with two crossing flows
BASE = {"name": "fact", "backend": "sim", "repetitions": 1, "etx": {"settle_s": 0.5},
        "topology": {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]},
        "snoop": {"policy": "adaptive"},
        "flows": [{"sender": "A", "receiver": "D", "segments": 40}, {"sender": "C", "receiver": "B", "segments": 40}]}


FACTORS = {"snoop.pkt_qos": [0.9, 1.0], "tcp.variant": ["reno", "sack"]}


def test_every_combination_in_order_named_from_the_values():
    exp = load_experiment({**BASE, "sweep": {"factors": FACTORS}}, "f.yaml")
    assert [v.name for v in exp.variants] == ["pkt_qos-0.9-variant-reno", "pkt_qos-0.9-variant-sack",
                                              "pkt_qos-1.0-variant-reno", "pkt_qos-1.0-variant-sack"]
    for v in exp.variants:
        assert v.sweep_value == {"snoop.pkt_qos": v.config["snoop"]["pkt_qos"], "tcp.variant": v.config["tcp"]["variant"]}
        assert v.config["snoop"]["policy"] == "adaptive"     # the base file's other settings stay
    assert exp.variants[1].config["snoop"]["pkt_qos"] == 0.9 and exp.variants[1].config["tcp"]["variant"] == "sack"


def test_named_variants_times_the_factors_and_a_listed_subset():
    doc = {**BASE, "variants": [{"name": "lossy", "loss": {"default": {"model": "bernoulli", "rate": 0.01}}},
                                {"name": "clean"}],
           "sweep": {"factors": FACTORS, "only": [{"tcp.variant": "sack", "snoop.pkt_qos": 1.0},
                                                  {"snoop.pkt_qos": 0.9, "tcp.variant": "reno"}]}}
    exp = load_experiment(doc, "f.yaml")
    assert [v.name for v in exp.variants] == ["lossy-1.0-sack", "lossy-0.9-reno", "clean-1.0-sack", "clean-0.9-reno"]
    assert exp.variants[0].config["loss"]["default"]["rate"] == 0.01
    assert exp.variants[0].sweep_value == {"snoop.pkt_qos": 1.0, "tcp.variant": "sack"}


def test_one_factor_is_the_one_field_sweep_and_existing_sweeps_keep_their_names():
    one = load_experiment({**BASE, "sweep": {"factors": {"snoop.pkt_qos": [0.9, 1.0]}}}, "f.yaml")
    old = load_experiment({**BASE, "sweep": {"field": "snoop.pkt_qos", "values": [0.9, 1.0]}}, "f.yaml")
    assert [(v.name, v.sweep_value) for v in one.variants] == [(v.name, v.sweep_value) for v in old.variants] \
        == [("pkt_qos-0.9", 0.9), ("pkt_qos-1.0", 1.0)]
    fig = load_file(ROOT / "experiments" / "fig7-9-pkt-qos.yaml")
    assert [(v.name, v.sweep_value) for v in fig.variants] == [
        ("pkt_qos-0.9", 0.9), ("pkt_qos-0.95", 0.95), ("pkt_qos-0.97", 0.97), ("pkt_qos-0.99", 0.99),
        ("pkt_qos-1.0", 1.0)]
    window = load_file(ROOT / "experiments" / "medium-tcp-window.yaml")
    assert [v.name for v in window.variants][:3] == ["h4-1", "h4-2", "h4-3"] and window.variants[2].sweep_value == 3


@pytest.mark.parametrize("sweep, path, words", [
    ({"factors": {}}, "sweep.factors", "at least one field"),
    ({"factors": {"snoop.qos": [1]}}, "sweep.factors.snoop.qos", "dotted path of a scalar field"),
    ({"factors": {"snoop.pkt_qos": []}}, "sweep.factors.snoop.pkt_qos", "non-empty list"),
    ({"factors": {"snoop.pkt_qos": [0.9, 0.9]}}, "sweep.factors.snoop.pkt_qos", "values repeat"),
    ({"factors": FACTORS, "values": [1]}, "sweep.values", "unknown field"),
    ({"factors": FACTORS, "only": [{"snoop.pkt_qos": 0.9}]}, "sweep.only[0]", "a value for each factor"),
    ({"factors": FACTORS, "only": [{"snoop.pkt_qos": 0.5, "tcp.variant": "reno"}]}, "sweep.only[0].snoop.pkt_qos",
     "not one of the factor's values"),
    ({"factors": FACTORS, "only": [{"snoop.pkt_qos": 0.9, "tcp.variant": "reno"}] * 2}, "sweep.only[1]",
     "combination repeats"),
    ({"factors": {"snoop.pkt_qos": [0.9], "tcp.variant": ["re no"]}}, "sweep", "is not letters, digits"),
    ({"field": "tcp.variant", "values": ["../x"]}, "sweep", "is not letters, digits"),
    ({"factors": {"tcp.variant": ["reno"], "variants": [[]]}}, "sweep.factors.variants", "scalar field"),
    ({"factors": {"tcp.min_rto_s": [1], "limits.max_duration_s": [1]}, "only": []}, "sweep.only", "non-empty list"),
])
def test_a_wrong_sweep_is_refused_naming_the_field(sweep, path, words):
    doc = {**BASE, "sweep": sweep}
    with pytest.raises(ExperimentError) as e:
        load_experiment(doc, "f.yaml")
    found = {err.path: err.message for err in e.value.errors}
    assert path in found and words in found[path], found


def test_names_that_repeat_are_refused():
    doc = {**BASE, "sweep": {"factors": {"etx.window": [10, "10-10"]}}, "variants": [{"name": "v-10"}, {"name": "v"}]}
    with pytest.raises(ExperimentError) as e:       # v-10 x 10 and v x "10-10"
        load_experiment(doc, "f.yaml")
    assert e.value.path == "sweep" and "variant names repeat: v-10-10" in e.value.message


def run(tmp_path: Path, doc: dict) -> Path:
    exp = tmp_path / "fact.yaml"
    exp.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["run", str(exp), "--out", str(tmp_path / "runs")]) == 0
    return next((tmp_path / "runs" / doc["name"]).iterdir())


def test_a_factorial_run_appends_one_summary_column_per_factor_and_draws_by_any_factor(tmp_path, capsys):
    run_dir = run(tmp_path, {**BASE, "sweep": {"factors": FACTORS}})
    with open(run_dir / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
        header = next(csv.reader(open(run_dir / "summary.csv")))
    assert header == SUMMARY_COLUMNS + ["snoop.pkt_qos", "tcp.variant"]     # appended, the others unmoved
    assert len(rows) == 4 * 2                                               # 4 variants x 2 flows
    for r in rows:
        qos, variant = r["variant"].split("-")[1], r["variant"].split("-")[3]
        assert (float(r["snoop.pkt_qos"]), r["tcp.variant"]) == (float(qos), variant)
        assert r["status"] == "ok"
    figures = run_dir / "figures"
    assert (figures / "sweep_goodput_mbps.png").is_file()
    from plots.data import load_run
    from plots.report import sweep_series
    data = load_run(run_dir, write=False)
    flows = data.flows()
    assert len(flows) == 2
    by_qos = sweep_series(data)
    assert by_qos[0].field == "snoop.pkt_qos" and by_qos[0].values == [0.9, 1.0]
    assert sorted(s.label for s in by_qos) == sorted(f"tcp.variant={t} {f}" for t in ("reno", "sack") for f in flows)
    by_tcp = sweep_series(load_run(run_dir, write=False, by="tcp.variant"))
    assert by_tcp[0].field == "tcp.variant" and by_tcp[0].values == ["reno", "sack"]
    assert sorted(s.label for s in by_tcp) == sorted(f"snoop.pkt_qos={q} {f}" for q in (0.9, 1.0) for f in flows)
    for s in by_tcp:   # each line: both values of the drawn factor, one variant each
        assert sorted(r.sweep_value for g in s.groups for r in g.reps) == ["reno", "sack"]
    capsys.readouterr()
    assert main(["plot", str(run_dir), "--by", "tcp.variant"]) == 0
    assert main(["plot", str(run_dir), "--by", "tcp.init_cwnd"]) == 2
    assert "--by tcp.init_cwnd: not a factor of the run's sweep; expected one of snoop.pkt_qos, tcp.variant" \
        in capsys.readouterr().err


def test_a_one_field_sweep_run_has_no_factor_columns(tmp_path):
    run_dir = run(tmp_path, {**BASE, "name": "one", "sweep": {"field": "snoop.pkt_qos", "values": [0.9, 1.0]}})
    header = next(csv.reader(open(run_dir / "summary.csv")))
    assert header == SUMMARY_COLUMNS
