"""The ``medium:`` section refuses what no radio can be (issue 24, item 8), in ``aspan validate`` and
``aspan run`` alike, and a variant can clear the base file's mappings with null.
"""
from __future__ import annotations

from tests import ROOT
import subprocess
import sys
from pathlib import Path
from typing import Any
import pytest
import yaml
from experiments.schema import ExperimentError, load_experiment
from routing.medium.phy import MediumError, Phy




FLOWS = [{"sender": "A", "receiver": "D", "segments": 10}]


def errors(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ExperimentError) as e:
        load_experiment(dict(doc, flows=FLOWS), "m.yaml")
    assert all(err.source == "m.yaml" for err in e.value.errors)
    return {err.path: err.message for err in e.value.errors}


def dcf(**medium: Any) -> dict[str, Any]:
    return {"medium": dict(model="dcf", **medium)}


def test_a_slot_or_sifs_below_the_physical_floor_is_refused() -> None:
    # 0.0001 us passed the old "> 0" check and rounded to a slot of 0 ns: the run hung to its time limit
    found = errors(dcf(slot_us=0.0001, sifs_us=0.5))
    assert "at least 1 us" in found["medium.slot_us"] and "got 0.0001" in found["medium.slot_us"]
    assert "at least 1 us" in found["medium.sifs_us"]
    load_experiment(dict(dcf(slot_us=1, sifs_us=1), flows=FLOWS), "m.yaml")   # the floor itself is a radio
    with pytest.raises(MediumError, match="slot_us"):
        Phy.preset("b", slot_us=0.0001)    # the core refuses it too (one rule: routing.medium.phy.timing_problems)


def test_cw_min_above_cw_max_is_refused_against_the_preset_too() -> None:
    found = errors(dcf(cw_min=63, cw_max=31))
    assert "aCWmin 63 exceeds aCWmax 31" in found["medium.cw_min"]
    found = errors(dcf(cw_max=15))               # preset b: aCWmin 31
    assert "aCWmin 31 exceeds aCWmax 15" in found["medium.cw_min"]
    load_experiment(dict(dcf(standard="g", cw_max=15), flows=FLOWS), "m.yaml")   # g: aCWmin 15 = aCWmax


@pytest.mark.parametrize("setting", [{"rate_mbps": 2}, {"positions": {"A": [0, 0]}}, {"range_m": 300},
                                     {"standard": "g"}, {"queue_packets": 10}])
def test_medium_settings_without_a_medium_are_refused_naming_the_field(setting: dict[str, Any]) -> None:
    (key, value), = setting.items()
    found = errors({"medium": setting})           # model: none, the default
    assert list(found) == [f"medium.{key}"]
    assert "medium.model is 'none'" in found[f"medium.{key}"] and "ignored" in found[f"medium.{key}"]


def test_the_absent_medium_and_defaults_restated_are_accepted() -> None:
    load_experiment({"flows": FLOWS}, "m.yaml")
    load_experiment({"medium": {"model": "none", "queue_packets": 50, "positions": None}, "flows": FLOWS}, "m.yaml")


def test_two_nodes_at_one_position_are_refused_naming_both() -> None:
    found = errors(dcf(positions={"A": [0, 0], "B": [200, 0], "C": [200, 0], "D": [400, 0]}))
    assert "nodes B and C stand at the same position [200, 0]" in found["medium.positions.C"]
    # a given position on top of a drawn one (line: A at 0, B at 200, ...): the given node is named
    found = errors(dcf(positions={"D": [200, 0]}))
    assert "nodes B and D stand at the same position" in found["medium.positions.D"]


def test_a_variant_clears_the_base_files_positions_with_null() -> None:
    base = dcf(positions={"A": [0, 0], "B": [150, 0], "C": [300, 0], "D": [450, 0]})
    doc = dict(base, flows=FLOWS, variants=[{"name": "kept"}, {"name": "cleared", "medium": {"positions": None}},
                                            {"name": "off", "medium": {"model": "none", "positions": None}}])
    exp = load_experiment(doc, "m.yaml")
    kept, cleared, off = (v.config["medium"] for v in exp.variants)
    assert kept["positions"]["B"] == [150, 0]
    assert cleared["positions"] == {}         # the line placement again: 200 m apart
    assert off["model"] == "none" and off["positions"] == {}
    # null is any setting's default, not only a mapping's
    doc["variants"] = [{"name": "off", "medium": {"model": "none", "positions": None, "queue_packets": None}}]
    doc["medium"]["queue_packets"] = 10
    assert load_experiment(doc, "m.yaml").variants[0].config["medium"]["queue_packets"] == 50
    # without the null the base's positions stay and a medium-less variant is refused, naming them
    doc["variants"] = [{"name": "off", "medium": {"model": "none"}}]
    found = errors(doc)
    assert "medium.model is 'none'" in found["variants[off].medium.positions"]


BAD = {"name": "bad", "backend": "sim", "flows": FLOWS,
       "medium": {"model": "dcf", "slot_us": 0.0001, "cw_min": 64, "cw_max": 32,
                  "positions": {"A": [0, 0], "B": [0, 0]}},
       "variants": [{"name": "v", "medium": {"model": "none", "rate_mbps": 2, "slot_us": None, "cw_min": None,
                                             "cw_max": None, "positions": None}}]}


def refused_lines(tmp_path: Path, doc: dict[str, Any]) -> tuple[Path, list[str]]:
    """``doc`` written as bad.yaml: ``aspan validate`` and ``aspan run`` both exit 2 with the same lines, and
    nothing starts; the file and the lines."""
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(doc))
    out = tmp_path / "runs"
    lines = {}
    for cmd in (["validate", str(p)], ["run", str(p), "--out", str(out), "--no-plot"]):
        r = subprocess.run([sys.executable, "-m", "experiments", *cmd], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 2, r.stderr
        lines[cmd[0]] = r.stderr.splitlines()
    assert lines["validate"] == lines["run"]
    assert not out.exists()   # nothing started
    return p, lines["run"]


def test_validate_and_run_refuse_the_same_lines(tmp_path: Path) -> None:
    p, lines = refused_lines(tmp_path, BAD)
    assert lines == [
        f"aspan: error: {p}: medium.slot_us: expected at least 1 us (no 802.11 PHY has less: DMG's aSlotTime is 5 us, "
        "aSIFSTime 3 us), got 0.0001",
        f"aspan: error: {p}: medium.cw_min: aCWmin 64 exceeds aCWmax 32 (10.3.3: the window grows from aCWmin to aCWmax)",
        f"aspan: error: {p}: medium.positions.B: nodes A and B stand at the same position [0, 0]; give each node its own",
        f"aspan: error: {p}: variants[v].medium.rate_mbps: set to 2 but medium.model is 'none' (no medium: the setting "
        "would be ignored); set medium.model dcf, or remove it (a variant turning off a base file's medium sets it to null)",
    ]
