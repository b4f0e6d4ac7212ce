"""docs/GUIDE.md's experiment table matches experiments/*.yaml."""
from __future__ import annotations

from tests import ROOT
import re
import pytest
from experiments.schema import load_file




ROW = re.compile(r"^\| `(experiments/[^`]+\.yaml)` \| [^|]* \| ([^|]*) \|")


def table_rows(readme: str) -> dict[str, str]:
    """``{file: variants cell}`` of the README's experiment table."""
    rows = {}
    for line in readme.splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = m.group(2).strip()
    return rows


def check_cell(cell: str, variants: list[str]) -> list[str]:
    """What is wrong with one variants cell (``N: `a`, `b`[, ...]``); [] when it matches."""
    m = re.match(r"^(\d+)\b", cell)
    if not m:
        return [f"cell {cell!r} does not start with the number of variants"]
    problems = []
    if int(m.group(1)) != len(variants):
        problems.append(f"says {m.group(1)} variants, the file makes {len(variants)}")
    named = re.findall(r"`([^`]+)`", cell)
    unknown = [n for n in named if n not in variants]
    if unknown:
        problems.append(f"names {unknown}, not variants of the file")
    if "..." not in cell and sorted(named) != sorted(variants):
        problems.append(f"lists {named}, the file makes {variants}")
    return problems


def test_readme_table_matches_experiment_files() -> None:
    rows = table_rows((ROOT / "docs" / "GUIDE.md").read_text(encoding="utf-8"))
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "experiments").glob("*.yaml"))
    assert sorted(rows) == files, "docs/GUIDE.md's table and experiments/*.yaml list different files"
    problems = {}
    for rel, cell in rows.items():
        variants = [v.name for v in load_file(ROOT / rel).variants]
        found = check_cell(cell, variants)
        if found:
            problems[rel] = found
    assert problems == {}


@pytest.mark.parametrize("cell, ok", [
    ("2: `a`, `b`", True),
    ("4: `a`, `b`", False),          # wrong count (the paper-lossy row before issue 15)
    ("2: `a`, `c`", False),          # a name the file does not make
    ("2: `a`", False),               # incomplete without "..."
    ("2: `a`, ...", True),
    ("a and b", False),
])
def test_check_cell_catches_mismatches(cell: str, ok: bool) -> None:
    assert (check_cell(cell, ["a", "b"]) == []) is ok
