"""Experiments: YAML files for every figure, the schema, the runner and the backends."""
