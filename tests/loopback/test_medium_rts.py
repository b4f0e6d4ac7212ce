"""``medium.rts_threshold`` on every backend with a medium (issue 24, item 1): the sim, the local medium
process and the netns medium daemon build their medium with experiments.medium_spec.build_medium, so
each runs RTS/CTS from the same setting; the schema refuses it where it cannot mean anything.
"""
from __future__ import annotations

import json
from pathlib import Path
from tests.system.test_medium_rts import run_rts


def test_rts_cts_in_the_local_medium_process(tmp_path: Path) -> None:
    doc = {"name": "medl", "backend": "local", "seed": 1, "repetitions": 1, "etx": {"settle_s": 1.0},
           "medium": {"model": "dcf", "standard": "b", "rts_threshold": 0},
           "flows": [{"sender": "A", "receiver": "D", "segments": 200}], "limits": {"max_duration_s": 60}}
    d = run_rts(tmp_path, doc)
    rep = d / "default" / "rep0"
    assert json.loads((rep / "meta.json").read_text())["status"] == "ok"
    mac = {e["station"]: e for e in map(json.loads, (rep / "medium.log").read_text().splitlines()) if e["ev"] == "mac"}
    assert all(mac[n]["rts"] > 0 for n in "ABCD"), mac   # every unicast frame went with RTS/CTS (probes without)
