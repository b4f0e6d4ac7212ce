"""Logs -> pandas -> figures and a report. Reads only run directories (docs/LOGS.md).

Public API (imported lazily, so ``plots.logs``/``plots.summary`` do not load matplotlib):
``load, Run`` (plots.analysis: a run directory as one frame per event type),
``read_node_log, load_rep, iter_reps, RepLogs`` (plots.logs), ``rep_flows, FlowInfo, flow_names``
(plots.flows: a repetition's flows, and the mapping from the logged flow id
``src:sport>dst:dport`` to the name ``A->D:6000`` every table and figure uses), ``SUMMARY_COLUMNS, summarize_flows, summarize_rep`` (plots.summary: one row
per (variant, repetition, flow)), ``write_summary`` (plots.run_summary), ``write_report,
write_compare_report`` (plots.report), ``plot_command`` (plots.cli).
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "load": "plots.analysis", "Run": "plots.analysis",
    "RepLogs": "plots.logs", "read_node_log": "plots.logs", "load_rep": "plots.logs",
    "iter_reps": "plots.logs", "SUMMARY_COLUMNS": "plots.summary",
    "rep_flows": "plots.flows", "FlowInfo": "plots.flows", "flow_names": "plots.flows",
    "summarize_flows": "plots.summary", "write_compare_report": "plots.report",
    "summarize_rep": "plots.summary", "write_summary": "plots.run_summary",
    "write_report": "plots.report", "plot_command": "plots.cli",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'plots' has no attribute {name!r}")
