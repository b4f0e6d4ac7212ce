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


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` in the main thread (as SIGINT raises KeyboardInterrupt)."""
    try:
        old = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:          # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM are ignored: the records of an ending get written whole."""
    try:
        old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
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
