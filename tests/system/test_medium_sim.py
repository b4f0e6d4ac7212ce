"""The ``medium:`` section: validation, the sim backend driving the DCF medium, the backends that refuse it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
import pytest
from experiments.runner import run_experiment
from experiments.schema import ExperimentError, load_experiment


DOC: dict[str, Any] = {
    "name": "medt", "backend": "sim", "seed": 2, "repetitions": 1,
    "etx": {"settle_s": 1.0},
    "medium": {"model": "dcf"},
    "flows": [{"sender": "A", "receiver": "D", "segments": 300}],
    "variants": [{"name": "reno"}],
}


def errors(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ExperimentError) as e:
        load_experiment(doc, "m.yaml")
    return {err.path: err.message for err in e.value.errors}


def test_the_default_is_no_medium() -> None:
    exp = load_experiment({"flows": [{"segments": 10}]}, "m.yaml")
    assert exp.variants[0].config["medium"]["model"] == "none"


def test_wrong_medium_fields_are_named() -> None:
    found = errors({"medium": {"model": "csma", "retry_limit": 0}})
    assert "expected one of none, dcf" in found["medium.model"]
    assert "medium.retry_limit" in found
    found = errors({"medium": {"model": "dcf", "standard": "ac"}})
    assert "expected one of b, g, a, n, n-sgi" in found["medium.standard"]
    found = errors({"medium": {"model": "dcf", "positions": {"Z": [0, 0], "B": [1, 2, 3]}}})
    assert "unknown node" in found["medium.positions.Z"]
    assert "[x, y]" in found["medium.positions.B"]
    found = errors({"medium": {"model": "dcf", "range_m": 300, "cs_range_m": 200}})
    assert "medium.range_m" in found["medium.cs_range_m"]
    found = errors({"medium": {"model": "dcf", "hears": {"A": ["B"], "B": ["A", "Q"]}}})
    assert "expected a list of node names" in found["medium.hears.B"]


def test_chain_neighbours_out_of_range_are_refused() -> None:
    found = errors({"medium": {"model": "dcf", "spacing_m": 300}})   # 300 m > range 250 m
    assert "B does not hear A" in found["medium.positions.B"]
    found = errors({"medium": {"model": "dcf", "hears": {"A": ["B"], "B": ["C"], "C": ["B", "D"], "D": ["C"]}}})
    assert "does not hear A" in found["medium.hears.B"]


def run(tmp: Path, doc: dict[str, Any] = DOC) -> Path:
    return run_experiment(load_experiment(doc, "medt.yaml"), out=tmp, jobs=1, plot=False, progress=lambda s: None)


def test_sim_drives_the_medium_deterministically(tmp_path: Path) -> None:
    a = run(tmp_path / "a")
    b = run(tmp_path / "b")
    for n in "ABCD":
        assert (a / "reno/rep0" / f"{n}.log").read_bytes() == (b / "reno/rep0" / f"{n}.log").read_bytes()
    assert (a / "summary.csv").read_bytes() == (b / "summary.csv").read_bytes()
    meta = json.loads((a / "reno/rep0/meta.json").read_text())
    assert meta["status"] == "ok"
    mac = {}
    for n in "ABCD":
        for line in (a / "reno/rep0" / f"{n}.log").read_text().splitlines():
            e = json.loads(line)
            if e["ev"] == "mac":
                mac[n] = e
    assert set(mac) == set("ABCD")
    # every node transmitted (data one way, ACKs the other, probes both) and held the air for it
    assert all(m["attempts"] >= m["frames"] > 0 and m["airtime_ns"] > 0 for m in mac.values())
    # A and D are hidden from each other's receivers on the 200 m chain: some hidden collisions
    assert mac["A"]["hidden"] + mac["D"]["hidden"] > 0


def test_a_different_seed_gives_a_different_medium(tmp_path: Path) -> None:
    a = run(tmp_path / "a")
    b = run(tmp_path / "b", dict(DOC, seed=7))
    assert (a / "reno/rep0/B.log").read_bytes() != (b / "reno/rep0/B.log").read_bytes()


def test_the_pi_backend_refuses_dcf_before_the_run(tmp_path: Path) -> None:
    exp = load_experiment(dict(DOC, backend="sim"), "medt.yaml")
    from experiments.runner import check_backend_support
    with pytest.raises(ExperimentError) as e:
        check_backend_support(exp, "pi")
    assert e.value.path == "variants[reno].medium.model"
    assert "cannot run on backend pi" in e.value.message
    assert not (tmp_path / "medt").exists()


def test_sim_local_and_netns_carry_the_medium(tmp_path: Path) -> None:
    from experiments.runner import check_backend_support
    exp = load_experiment(dict(DOC, backend="sim"), "medt.yaml")
    check_backend_support(exp, "sim")
    check_backend_support(exp, "local")   # the medium process carries it (tests/loopback/test_medium_local.py)
    check_backend_support(exp, "netns")   # the netns medium daemon (tests/root/test_netns_link.py)


def test_the_report_shows_the_medium_only_when_present(tmp_path: Path) -> None:
    from plots.medium import medium_section
    with_medium = run(tmp_path / "a")
    lines = medium_section(with_medium)
    assert lines[0] == "## Radio medium"
    assert (with_medium / "figures" / "medium_airtime.png").is_file()
    assert (with_medium / "figures" / "medium_retries.png").is_file()
    # one chain, one hop count: throughput vs hops has one x value, nothing to show (issue 28, item 5)
    assert not (with_medium / "figures" / "medium_throughput_hops.png").exists()
    assert any(line.startswith("| reno |") for line in lines)
    two = dict(DOC, variants=[{"name": "reno"}, {"name": "h2", "topology": {"chain": ["A", "B", "C"]},
                                                 "flows": [{"sender": "A", "receiver": "C", "segments": 300}]}])
    two_hops = run(tmp_path / "c", two)
    from plots.run_summary import write_summary
    write_summary(two_hops)
    assert "figures/medium_throughput_hops.png" in "\n".join(medium_section(two_hops))
    assert (two_hops / "figures" / "medium_throughput_hops.svg").is_file()
    without = run(tmp_path / "b", dict(DOC, medium={"model": "none"}))
    assert medium_section(without) == []
    assert not (without / "figures").exists()


def test_a_link_setting_next_to_the_medium_is_refused_not_ignored() -> None:
    found = errors({"medium": {"model": "dcf"}, "link": {"delay_ms": 5}})
    assert "replaces the links" in found["link.delay_ms"]
    # every explicit link field is refused, even one equal to the sim's own value (null means "the links")
    assert "replaces the links" in errors({"medium": {"model": "dcf"}, "link": {"rate_mbps": 10}})["link.rate_mbps"]
    load_experiment({"medium": {"model": "none"}, "link": {"delay_ms": 5}, "flows": [{"segments": 1}]}, "m.yaml")


def test_the_medium_is_deterministic_across_processes_whatever_the_hash_seed(tmp_path: Path) -> None:
    """Two `aspan run` processes with different PYTHONHASHSEED give byte-identical node logs (a set of
    node names iterated in the medium would not)."""
    import os
    import subprocess
    import sys

    import yaml
    doc = dict(DOC, topology={"chain": ["A", "B", "C", "D", "E", "F"]},
               flows=[{"sender": "A", "receiver": "F", "segments": 150}])
    path = tmp_path / "medt.yaml"
    path.write_text(yaml.safe_dump(doc))
    runs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}"
        subprocess.run([sys.executable, "-m", "experiments", "run", str(path), "--out", str(out), "--no-plot"],
                       check=True, capture_output=True, env=dict(os.environ, PYTHONHASHSEED=seed))
        runs.append(next(out.glob("medt/*/reno/rep0")))
    for n in "ABCDEF":
        assert (runs[0] / f"{n}.log").read_bytes() == (runs[1] / f"{n}.log").read_bytes(), n
