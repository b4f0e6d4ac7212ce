"""The prober driver: one thread per neighbour that sends an ETX probe every interval (paper, Design).

The estimator itself (etx.estimator) has no threads; this driver only decides
*when* to probe and hands the work to a callback that runs under the node's lock.
"""
from __future__ import annotations

import threading
import time
from typing import Callable


class ProberThread(threading.Thread):
    """Calls ``probe(neighbour)`` every ``interval(now)`` seconds until ``stop`` is set."""

    def __init__(self, neighbour: str, interval: Callable[[float], float],
                 probe: Callable[[str], None], stop: threading.Event,
                 on_error: Callable[[BaseException], None]) -> None:
        super().__init__(name=f"prober-{neighbour}", daemon=True)
        self.neighbour = neighbour
        self._interval = interval
        self._probe = probe
        self._halt = stop
        self._on_error = on_error

    def run(self) -> None:
        try:
            while not self._halt.wait(max(0.0, self._interval(time.time()))):
                self._probe(self.neighbour)
        except BaseException as e:  # reported to the node, which stops and logs it
            self._on_error(e)
