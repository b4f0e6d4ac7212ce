"""The README's first experiment: its file is experiments/first-diamond.yaml, and the table the README shows is
what ``aspan run`` prints for it (the sim is deterministic: the same numbers on every machine)."""
from __future__ import annotations

import re
import subprocess
import sys

import yaml

from tests import ROOT


def _readme_blocks() -> tuple[dict, list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    part = text[text.index("## A first experiment of your own"):text.index("## Where to go next")]
    doc = yaml.safe_load(re.search(r"```yaml\n(.*?)```", part, re.S).group(1))
    table = re.search(r"```\n(  variant .*?)```", part, re.S).group(1).splitlines()
    return doc, [line for line in table if line.strip()]


def test_the_readme_file_is_the_shipped_one():
    doc, _ = _readme_blocks()
    shipped = yaml.safe_load((ROOT / "experiments" / "first-diamond.yaml").read_text())
    for key in ("name", "description"):
        doc.pop(key, None)
        shipped.pop(key, None)
    assert doc == shipped


def test_the_readme_table_is_what_the_run_prints(tmp_path):
    _, table = _readme_blocks()
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(ROOT / "experiments" / "first-diamond.yaml"),
                        "--no-plot", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    printed = [line.rstrip() for line in r.stdout.splitlines()]
    for line in table:
        assert line.rstrip() in printed, (line, r.stdout)
