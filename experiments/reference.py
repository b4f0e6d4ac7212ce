"""The experiment YAML reference, generated from the schema itself (docs/YAML.md).

Every field's type, default and meaning come from the declarations the validator checks files against
(:data:`experiments.schema.SCHEMA`, ``FLOW_SPEC``, :func:`experiments.schema.loss_spec` and the loss-model
registry), so the reference cannot drift from what ``aspan validate`` accepts: tests/experiments/
test_reference.py fails when docs/YAML.md is not what this module writes.

    python -m experiments.reference            # print it
    python -m experiments.reference --write    # rewrite docs/YAML.md
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fieldspec import Field, type_name

DOC = Path(__file__).resolve().parent.parent / "docs" / "YAML.md"

INTRO = """\
# Experiment YAML reference

Generated from the schema by `python -m experiments.reference --write` (do not edit by hand: the tests
compare this file with what the schema declares). Every field may be left out; its default is given.
A wrong field, type or value is reported with the file and the field path before anything starts
(`aspan validate FILE`, and `aspan validate FILE --backend B` for what backend B cannot run).

A file is a mapping of the top-level fields and sections below. `variants` is a list of
`{name: ..., <any section or field>: ...}`, each overriding the top level; `sweep` makes one variant per
value (or per combination of values) of dotted field paths. The shipped files in `experiments/` are
examples of every feature (`aspan list` names them).
"""


def _value(v: Any) -> str:
    """A default as YAML would write it."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"' if v == "" else v
    return json.dumps(v)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(fields: dict[str, Field], prefix: str) -> list[str]:
    rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for key, f in fields.items():
        rows.append(f"| `{prefix}{key}` | {_cell(type_name(f.types))} | `{_cell(_value(f.default))}` | "
                    f"{_cell(f.doc)} |")
    return rows


def _loss_models() -> list[str]:
    from routing.links.loss import MODELS
    out = ["| model | its settings |", "|---|---|"]
    for name, kind in MODELS.items():
        keys = ", ".join(f"`{k}`" for k in kind.settings) or "none"
        out.append(f"| `{name}` | {keys} |")
    return out


def reference_markdown() -> str:
    """The whole reference (docs/YAML.md)."""
    from experiments.schema import FLOW_SPEC, SCHEMA, loss_spec
    top = {k: v for k, v in SCHEMA.items() if isinstance(v, Field)}
    sections = {k: v for k, v in SCHEMA.items() if isinstance(v, dict)}
    lines = [INTRO, "## Top-level fields", "", *_table(top, ""), ""]
    lines += ["## `flows[]`", "", "Each flow is a bulk transfer from `sender` to `receiver`.", "",
              *_table(FLOW_SPEC, "flows[]."), ""]
    for name, fields in sections.items():
        lines += [f"## `{name}`", ""]
        if name == "loss":
            lines += ["`loss.default`, every `loss.nodes.<node>` and every `loss.links.<A-B or A>B>` is a loss spec "
                      "(the next table).", ""]
        lines += [*_table(fields, f"{name}."), ""]
        if name == "loss":
            lines += ["### A loss spec", "", "`model` picks the model; the settings that model does not use are "
                      "refused.", "", *_table(loss_spec(), ""), "", "The models (routing/links/loss.py, "
                      "`MODELS`) and the settings each takes:", "", *_loss_models(), ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.reference", description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {DOC.relative_to(DOC.parent.parent)}")
    args = ap.parse_args(argv)
    text = reference_markdown()
    if args.write:
        DOC.write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
