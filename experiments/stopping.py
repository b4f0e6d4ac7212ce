"""How a run ends: SIGTERM handled like Ctrl-C, and the exit status of ``aspan run`` (issue 13, item 1).

A run that is stopped (SIGINT or SIGTERM) stops its nodes, writes ``meta.json`` with status
``interrupted`` and the ``summary.csv`` of what it has, then exits with :data:`EXIT_INTERRUPTED`.
"""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterable, Iterator
from typing import Any

EXIT_OK = 0            # every repetition ran and ended ok
EXIT_NOT_OK = 1        # some repetition failed or is incomplete (summary.csv says which)
EXIT_USAGE = 2         # a bad experiment or inventory file, or a bad option: nothing ran
EXIT_INTERRUPTED = 130  # stopped by SIGINT (Ctrl-C) or SIGTERM (128 + SIGINT, the shell's convention)


class Terminated(KeyboardInterrupt):
    """SIGTERM to the runner: handled like Ctrl-C (nodes stopped, meta.json and summary.csv written)."""


def stop_reason(e: BaseException) -> str:
    """``meta.json`` ``error`` of an interrupted repetition."""
    return "stopped by SIGTERM" if isinstance(e, Terminated) else "stopped by Ctrl-C"


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _first_stop(signum: int, frame: Any) -> None:
    """The first SIGINT or SIGTERM: every later one is ignored, so that a second Ctrl-C or ``kill`` cannot
    cut short the stop of the nodes and the writing of meta.json and summary.csv (a second signal 0.1 s
    after the first used to leave meta.json at ``running``); then the stop is raised."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` in the main thread and SIGINT KeyboardInterrupt,
    once: after the first, both are ignored until the context ends (:func:`_first_stop`)."""
    try:
        old = {sig: signal.signal(sig, _first_stop) for sig in STOP_SIGNALS}
    except ValueError:          # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM are ignored: the records of an ending get written whole."""
    try:
        old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    except ValueError:          # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def exit_status(statuses: Iterable[str | None], expected: int) -> int:
    """The exit code of a run from its repetitions' statuses (``expected``: how many should have run)."""
    got = list(statuses)
    if "interrupted" in got:
        return EXIT_INTERRUPTED
    if len(got) == expected and all(s == "ok" for s in got):
        return EXIT_OK
    return EXIT_NOT_OK
