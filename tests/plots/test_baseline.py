"""Issue 40, items 1-3: what an incomplete repetition delivered, every variant against a baseline with paired
intervals (plots/baseline.py), and the table of means (plots/overview.py, ``aspan summary``), on tiny sim runs of
a diamond (two paths, one lossy: hop count takes it and does not finish) and of crossing flows."""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from experiments.runner import run_experiment
from experiments.schema import load_experiment
from plots.analysis import load
from plots.baseline import baseline_variant, means_lines, versus
from plots.cli import plot_command
from plots.compare import differences
from plots.data import load_run
from plots.overview import overview_lines
from plots.stats import paired_difference

DIAMOND = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]
MAX_S = 4.0


def _run(root: Path, doc: dict[str, Any]) -> Path:
    return run_experiment(load_experiment(doc, f"{doc['name']}.yaml"), out=root, jobs=1, plot=False,
                          progress=lambda s: None)


@pytest.fixture(scope="module")
def diamond(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hops takes A-B-D, whose links lose 10 % each way: it does not finish 2000 segments in MAX_S; etx does."""
    doc = {"name": "diamond", "backend": "sim", "seed": 1, "repetitions": 3, "etx": {"settle_s": 1.0},
           "limits": {"max_duration_s": MAX_S},
           "topology": {"nodes": ["A", "B", "C", "D"], "links": DIAMOND},
           "loss": {"default": {"model": "bernoulli", "rate": 0.005},
                    "links": {"A-B": {"model": "bernoulli", "rate": 0.1}, "B-D": {"model": "bernoulli", "rate": 0.1}}},
           "flows": [{"sender": "A", "receiver": "D", "segments": 2000, "segment_size": 1000}],
           "variants": [{"name": "hops", "routing": {"metric": "hops"}}, {"name": "etx", "routing": {"metric": "etx"}}]}
    run = _run(tmp_path_factory.mktemp("diamond"), doc)
    assert plot_command([run]) == 0
    return run


@pytest.fixture(scope="module")
def crossing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two flows crossing a square (A->D and C->B), sack against A-SPAN, 3 repetitions."""
    doc = {"name": "crossing", "backend": "sim", "seed": 5, "repetitions": 3, "etx": {"settle_s": 1.0},
           "topology": {"links": [["A", "B"], ["B", "D"], ["D", "C"], ["C", "A"]]},
           "loss": {"default": {"model": "bernoulli", "rate": 0.02}}, "baseline": "sack",
           "flows": [{"sender": "A", "receiver": "D", "segments": 150}, {"sender": "C", "receiver": "B", "segments": 150}],
           "variants": [{"name": "aspan", "snoop": {"policy": "adaptive", "pkt_qos": 0.99}},
                        {"name": "sack", "tcp": {"variant": "sack"}}]}
    return _run(tmp_path_factory.mktemp("crossing"), doc)


def _rows(run: Path) -> list[dict[str, str]]:
    with (run / "summary.csv").open() as f:
        return list(csv.DictReader(f))


def test_an_incomplete_repetition_carries_what_it_delivered(diamond: Path) -> None:
    rows = _rows(diamond)
    hops = [r for r in rows if r["variant"] == "hops"]
    assert [r["status"] for r in hops] == ["incomplete"] * 3
    deliver = load(diamond).frame("deliver")
    for r in hops:
        assert r["duration_s"] == "" and r["goodput_mbps"] == ""        # no finished transfer
        mine = deliver[(deliver["variant"] == "hops") & (deliver["repetition"] == int(r["repetition"]))]
        got = int(mine["bytes"].max())
        assert 0 < got < 2000 * 1000 and int(r["delivered_bytes"]) == got
        assert bool(mine["at_stop"].eq(True).any())          # the last word of the stopped receiver
        assert int(r["delivered_segments"]) == got // 1000
        assert float(r["delivered_share"]) == pytest.approx(got / 2e6, rel=1e-5)
        assert float(r["ran_s"]) == pytest.approx(MAX_S)
        assert float(r["delivered_mbps"]) == pytest.approx(got * 8 / MAX_S / 1e6, rel=1e-5)
    for r in (r for r in rows if r["variant"] == "etx"):
        assert r["status"] == "ok" and r["delivered_share"] == "1" and r["delivered_mbps"] == r["goodput_mbps"]


def test_the_report_counts_incomplete_repetitions_and_compares_deliveries(diamond: Path) -> None:
    report = (diamond / "report.md").read_text()
    assert re.search(r"^\| hops \| 0 \| 3 \| 0 \|", report, re.M)     # reps ok, incomplete, failed
    assert re.search(r"^\| etx \| 3 \| 0 \| 0 \|", report, re.M)
    section = report[report.index("## Against the baseline hops"):]
    share = next(line for line in section.splitlines() if line.startswith("| etx | A->D:6000 | delivered_share |"))
    assert "by seed" in share and "hops: 3 of 3 incomplete, compared by what was delivered" in share
    assert "| goodput_mbps |" not in section.split("##")[1]
    # between runs too: a side with incomplete repetitions is compared by its deliveries, and says so
    data = load_run(diamond, write=False)
    hops = [d for d in differences(data, data) if d.variant == "hops"]
    assert {d.metric for d in hops} >= {"delivered_share", "delivered_mbps"}
    assert not {d.metric for d in hops} & {"goodput_mbps", "duration_s"}
    assert all(d.note.startswith("A: 3 of 3 incomplete; B: 3 of 3 incomplete") for d in hops)


def test_variants_of_one_run_are_paired_by_seed(diamond: Path) -> None:
    data = load_run(diamond, write=False)
    assert baseline_variant(data) == "hops"
    rows = {v.metric: v for v in versus(data, "hops")}
    frame = pd.read_csv(diamond / "summary.csv")
    by_seed = frame.pivot(index="seed", columns="variant", values="tx_per_pkt_p99")
    tx = rows["tx_per_pkt_p99"].result
    assert tx.paired
    want = paired_difference(list(zip(by_seed["hops"], by_seed["etx"])))
    assert (tx.diff.estimate, tx.diff.lo, tx.diff.hi) == (want.estimate, want.lo, want.hi)
    ratio = rows["delivered_mbps"].result.ratio
    assert ratio.lo is not None and 0 < ratio.lo < ratio.estimate < ratio.hi and ratio.significant


def test_the_table_of_means_names_each_flow_and_the_yaml_baseline(crossing: Path) -> None:
    data = load_run(crossing, write=False)
    assert baseline_variant(data) == "sack" and baseline_variant(data, "aspan") == "aspan"
    with pytest.raises(ValueError, match=r"--baseline: 'reno' is not a variant of this run"):
        baseline_variant(data, "reno")
    lines = means_lines(data)
    assert lines[0].split()[:4] == ["variant", "flow", "repetitions", "delivered"] and "goodput / sack" in lines[0]
    flows = {(line.split()[0], line.split()[1]) for line in lines[1:5]}
    assert flows == {(v, f) for v in ("aspan", "sack") for f in ("A->D:6000", "C->B:6001")}
    assert all("3 ok" in line for line in lines[1:5])
    assert [line for line in lines if line.startswith("sack")][0].rstrip().endswith("(baseline)")
    aspan = [line for line in lines if line.startswith("aspan")]
    assert all(re.search(r"\[[\d.]+, [\d.]+\]", line) for line in aspan)     # ratio interval, above 0
    rows = versus(data, "sack")
    assert {v.flow for v in rows} == {"A->D:6000", "C->B:6001"} and all(v.result.paired for v in rows)
    text = "\n".join(overview_lines(data))
    assert "No report yet: aspan plot" in text and "radio medium" not in text


def test_too_few_repetitions_say_so(tmp_path: Path) -> None:
    doc = {"name": "two", "backend": "sim", "seed": 2, "repetitions": 2, "etx": {"settle_s": 1.0},
           "topology": {"nodes": ["A", "B", "C", "D"], "links": DIAMOND},
           "loss": {"default": {"model": "bernoulli", "rate": 0.02}},
           "flows": [{"sender": "A", "receiver": "D", "segments": 100}],
           "variants": [{"name": "sack", "tcp": {"variant": "sack"}}, {"name": "reno", "tcp": {"variant": "reno"}}]}
    data = load_run(_run(tmp_path, doc), write=False)
    for v in versus(data, "sack"):
        for iv in (v.result.diff, v.result.ratio):
            assert iv.lo is None and not iv.significant
            assert iv.why in ("no interval: 2 repetitions on a side, needs 3",
                              "no interval: no spread (every repetition gave the same value)",
                              "no ratio: the baseline's mean is not positive")
    assert "(n<3)" in "\n".join(means_lines(data))
