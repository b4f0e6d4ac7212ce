"""Backends: where an experiment runs, one module (or package) each.

Their registry is :data:`experiments.backend_registry.BACKENDS` (it imports no backend, so the schema
can import it); its names are importable from here too.
"""
from __future__ import annotations

from experiments.backend_registry import BACKENDS, Backend, RepRunner

__all__ = ["BACKENDS", "Backend", "RepRunner"]
