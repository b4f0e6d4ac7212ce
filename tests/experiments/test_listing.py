"""experiments/listing.py: ``aspan list``."""
from __future__ import annotations

import json
import os
import time

import yaml

from experiments.cli import main
from experiments.listing import bound_s, last_run_s, listed
from experiments.schema import load_experiment

DIAMOND = {"topology": {"links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]},
           "flows": [{"sender": "A", "receiver": "D", "segments": 100}, {"sender": "C", "receiver": "B",
                                                                        "segments": 50}],
           "etx": {"settle_s": 2.0}, "limits": {"max_duration_s": 30}, "repetitions": 2,
           "variants": [{"name": "a"}, {"name": "b", "limits": {"max_duration_s": 60}}]}


def test_the_bound_is_every_repetition_until_its_limit_on_real_time_backends_only():
    exp = load_experiment({**DIAMOND, "backend": "local"}, "d.yaml")
    assert bound_s(exp, "local") == 2 * (2 + 30 + 5) + 2 * (2 + 60 + 5)
    assert bound_s(exp, "sim") is None


def test_last_run_is_the_newest_finished_run_directory(tmp_path):
    exp = load_experiment({**DIAMOND, "name": "d"}, "d.yaml")
    assert last_run_s(exp, tmp_path) is None
    for stamp, started, took in (("20261201-100000", "2026-12-01T10:00:00+00:00", 50),
                                 ("20261202-100000", "2026-12-02T10:00:00+00:00", 120)):
        run = tmp_path / "runs" / "d" / stamp
        run.mkdir(parents=True)
        (run / "provenance.json").write_text(json.dumps({"started": started}))
        (run / "summary.csv").write_text("variant\n")
        t = time.mktime(time.strptime(started[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone + took
        os.utime(run / "summary.csv", (t, t))
    (tmp_path / "runs" / "d" / "20261203-100000").mkdir()         # unfinished: no summary.csv
    assert abs(last_run_s(exp, tmp_path) - 120) < 2


def test_list_names_each_file_and_refuses_an_invalid_one(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({**DIAMOND, "description": "two crossing flows\nmore", "backend": "local"}))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"repetitions": 0}))
    row = listed(good, tmp_path)
    assert (row.backend, row.variants, row.repetitions, row.segments, row.description) == \
        ("local", 2, 2, 150, "two crossing flows")
    assert main(["list", str(good)]) == 0
    assert "| local | 2 x 2 | 150 | 3 min |" in capsys.readouterr().out
    assert main(["list", str(good), str(bad)]) == 2
    assert "invalid" in capsys.readouterr().out and "repetitions" in listed(bad, tmp_path).error


def test_list_shows_every_shipped_experiment_from_any_directory(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "experiments/first-diamond.yaml | sim | 2 x 8 | 2,000 |" in out
