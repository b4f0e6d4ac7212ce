"""experiments/reference.py: docs/YAML.md is what the schema declares, so its defaults cannot drift."""
from __future__ import annotations

from tests import ROOT
from experiments.reference import reference_markdown
from experiments.schema import FLOW_SPEC, SCHEMA, loss_spec
from fieldspec import Field


def test_docs_yaml_md_is_the_generated_reference():
    assert (ROOT / "docs" / "YAML.md").read_text(encoding="utf-8") == reference_markdown(), \
        "docs/YAML.md is stale: python -m experiments.reference --write"


def test_every_field_of_the_schema_is_in_the_reference_with_its_default():
    text = reference_markdown()
    for name, node in SCHEMA.items():
        fields = node.items() if isinstance(node, dict) else [("", node)]
        for key, f in fields:
            assert isinstance(f, Field)
            path = f"{name}.{key}" if key else name
            assert f"| `{path}` |" in text, path
    for key in FLOW_SPEC:
        assert f"| `flows[].{key}` |" in text
    for key in loss_spec():
        assert f"| `{key}` |" in text
    assert "| `repetitions` | an integer | `1` |" in text       # the README's old block said 5
    assert "| `loss.default` | a mapping | `{\"model\": \"none\"}` |" in text
