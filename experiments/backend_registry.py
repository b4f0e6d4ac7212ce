"""The registry of backends: :data:`BACKENDS`, the one list of where an experiment can run.

The schema (``backend:``), ``aspan run --backend`` and the runner take the names from it.
Each entry names the module that implements the backend; the runner imports it only when the
backend runs (netns needs netfilterqueue, pi needs Fabric), so this module imports nothing of the
project: the schema imports it downwards, as it imports the other registries (loss models, policies,
schemes).  A backend module has ``make_run_rep(options) -> run_rep``, where ``run_rep(variant,
repetition, rep_dir)`` runs one repetition, writes the node logs and ``meta.json`` into ``rep_dir``
(docs/LOGS.md) and returns the meta dict.  Adding a backend: its module, and one line here
(docs/DESIGN.md, "Adding a backend").
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

RepRunner = Callable[[Any, int, Path], dict[str, Any]]
"""(variant, repetition, rep_dir) -> the repetition's meta dict."""


@dataclass(frozen=True)
class Backend:
    """One backend: the module that implements it (imported lazily) and how the runner schedules it."""

    module: str                 # has make_run_rep(options) -> RepRunner
    doc: str
    parallel: bool = False      # repetitions run in parallel by default (--jobs, default min(cores, 2))
    exclusive: str = ""         # why it runs one repetition at a time, whatever --jobs says ("" = it may not)

    def make_run_rep(self, options: dict[str, Any]) -> RepRunner:
        factory: Callable[[dict[str, Any]], RepRunner] = importlib.import_module(self.module).make_run_rep
        return factory(options)


BACKENDS: dict[str, Backend] = {
    "sim": Backend("experiments.backends.sim", "virtual time, seeded, in this process", parallel=True),
    "local": Backend("experiments.backends.local", "one process per node on loopback UDP"),
    "netns": Backend("experiments.backends.netns", "network namespaces, kernel TCP through NFQUEUE (root)"),
    "pi": Backend("experiments.backends.pi", "Raspberry Pis over SSH (Fabric)",
                  exclusive="the pi backend runs one repetition at a time (the hosts are shared)"),
}
