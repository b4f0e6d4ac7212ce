"""Backend netns: one network namespace per node, real kernel TCP through NFQUEUE snoop agents.

See docs/NETNS.md.  ``make_run_rep`` is the backend's entry point (experiments.backend_registry.BACKENDS),
``clean`` removes leftovers of a crashed run (``aspan clean``).
"""
from __future__ import annotations

from typing import Any, Callable


def make_run_rep(options: dict[str, Any]) -> Callable[..., dict[str, Any]]:
    """The runner's entry point; this backend takes no options."""
    return run_rep


def run_rep(*args: Any, **kwargs: Any) -> dict[str, Any]:
    from experiments.backends.netns.run import run_rep as _run_rep
    return _run_rep(*args, **kwargs)


def clean(force: bool = False) -> list[str]:
    from experiments.backends.netns.state import clean as _clean
    return _clean(force)
