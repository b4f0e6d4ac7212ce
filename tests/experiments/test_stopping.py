"""experiments/stopping.py: how a run's stop is raised, once."""
from __future__ import annotations

import os
import signal
import time

import pytest

from experiments.stopping import Terminated, sigterm_as_interrupt, stop_reason


def _deliver(sig: int) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(0.05)             # the handler runs between bytecodes of the main thread


@pytest.mark.parametrize("first,second", [(signal.SIGTERM, signal.SIGTERM), (signal.SIGTERM, signal.SIGINT),
                                          (signal.SIGINT, signal.SIGINT), (signal.SIGINT, signal.SIGTERM)])
def test_the_first_stop_is_raised_and_a_second_cannot_cut_the_records_short(first, second):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    wrote = []
    with sigterm_as_interrupt():
        with pytest.raises(KeyboardInterrupt) as stop:
            _deliver(first)
        assert isinstance(stop.value, Terminated) == (first == signal.SIGTERM)
        assert stop_reason(stop.value) == ("stopped by SIGTERM" if first == signal.SIGTERM else "stopped by Ctrl-C")
        _deliver(second)             # while the nodes stop and the records are written: ignored
        wrote.append("meta.json")
    assert wrote == ["meta.json"]
    assert {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} == before
