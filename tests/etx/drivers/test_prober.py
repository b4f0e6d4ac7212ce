"""etx/drivers/prober.py: one probe per interval until stopped, the interval asked at the clock's time, a
failing probe handed to the node (issue 30, item 3).
"""
from __future__ import annotations



# ---- etx/drivers/prober.py: one probe per interval until stopped, errors handed to the node (paper, Design) ------
class FakeStop:
    """A stop event whose wait() returns False (the interval passed) ``rounds`` times, then True (stopped);
    it records each timeout it was given.  No real time passes."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.timeouts: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.timeouts.append(timeout)
        return len(self.timeouts) > self.rounds


def test_the_prober_probes_its_neighbour_once_per_interval_until_stopped():
    from etx.drivers.prober import ProberThread
    stop, probed, errors = FakeStop(3), [], []
    intervals = iter([0.1, 0.25, -1.0, 0.5])       # a negative interval (a late clock) waits 0, not a negative time
    p = ProberThread("10.2.1.2", lambda now: next(intervals), probed.append, stop, errors.append)  # type: ignore[arg-type]
    assert p.name == "prober-10.2.1.2" and p.daemon and p.neighbour == "10.2.1.2"
    p.run()                                       # in this thread: the loop's logic alone
    assert probed == ["10.2.1.2"] * 3 and errors == []
    assert stop.timeouts == [0.1, 0.25, 0.0, 0.5]


def test_the_probers_interval_is_asked_at_the_clocks_time():
    """The node's interval depends on the time (the warm-up's faster probes, then the paper's period):
    the prober asks it with the wall clock's now."""
    import time

    from etx.drivers.prober import ProberThread
    asked: list[float] = []

    def interval(now: float) -> float:
        asked.append(now)
        return 0.1
    before = time.time()
    ProberThread("B", interval, lambda n: None, FakeStop(2), lambda e: None).run()  # type: ignore[arg-type]
    assert len(asked) == 3 and all(isinstance(t, float) and before <= t <= time.time() for t in asked)


def test_a_failing_probe_ends_the_prober_and_is_handed_to_the_node():
    from etx.drivers.prober import ProberThread
    boom = OSError("sendto failed")
    errors: list[BaseException] = []

    def probe(nbr: str) -> None:
        raise boom
    p = ProberThread("B", lambda now: 0.1, probe, FakeStop(5), errors.append)  # type: ignore[arg-type]
    p.run()
    assert errors == [boom]
