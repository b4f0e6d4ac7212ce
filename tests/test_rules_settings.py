"""Rules of the settings and small drivers the mutation run covers (issue 30, item 3): the snoop schemes'
registry and settings (aspan/schemes.py, aspan/scheme_config.py), the TCP settings (tcp_user/config.py),
the bulk application (tcp_user/bulk.py) and the prober's timing (etx/drivers/prober.py).  Each test names the
rule it pins."""
from __future__ import annotations

import re

import pytest

import tcp_user.config as tcp_config
from aspan.scheme_config import SchemeConfig
from tcp_user.config import TcpConfig


# ---- tcp_user/config.py: each knob's range, at its edges, and the error naming knob and value -----------
@pytest.mark.parametrize("name, lowest, highest", [
    ("mss", 1, 0xFFFF),                    # a segment carries at least one byte; the MSS option is 16 bits
    ("init_cwnd", 1, None),
    ("rcv_buffer", 1, (1 << 32) - 1),      # the window is a 32-bit quantity once scaled
    ("dupack_threshold", 1, None),
    ("init_ssthresh", 1, None),
    ("max_retries", 0, None),              # 0: never abort
    ("snack_threshold", 1, None),          # paper 002: reports of a loss before it is resent
])
def test_integer_knobs_take_their_edges_and_refuse_one_past_them_naming_knob_and_value(name, lowest, highest):
    assert getattr(TcpConfig(**{name: lowest}), name) == lowest
    bound = f">= {lowest}" if highest is None else f"in [{lowest}, {highest}]"
    with pytest.raises(ValueError, match=re.escape(f"{name}: must be {bound}, got {lowest - 1}")):
        TcpConfig(**{name: lowest - 1})
    if highest is not None:
        assert getattr(TcpConfig(**{name: highest}), name) == highest
        with pytest.raises(ValueError, match=re.escape(f"{name}: must be {bound}, got {highest + 1}")):
            TcpConfig(**{name: highest + 1})
    with pytest.raises(ValueError, match=re.escape(f"{name}: must be an int, got True")):
        TcpConfig(**{name: True})


def test_the_timers_edges():
    """RFC 6298's bounds: each RTO a positive number, the minimum not above the maximum (equal is a fixed
    RTO); TIME_WAIT at least 0; RFC 1122 sec. 4.2.3.2's delayed-ACK timeout in (0, 0.5]."""
    assert TcpConfig(min_rto=5.0, max_rto=5.0).min_rto == 5.0
    with pytest.raises(ValueError, match=re.escape("min_rto: 5.5 exceeds max_rto 5.0")):
        TcpConfig(min_rto=5.5, max_rto=5.0)
    assert TcpConfig(time_wait=0).time_wait == 0
    with pytest.raises(ValueError, match=re.escape("time_wait: must be a number >= 0, got -0.001")):
        TcpConfig(time_wait=-0.001)
    with pytest.raises(ValueError, match=re.escape("time_wait: must be a number >= 0, got True")):
        TcpConfig(time_wait=True)
    assert TcpConfig(delack_s=0.5).delack_s == 0.5
    for bad in (0, 0.0, 0.5001, True, "0.2"):
        with pytest.raises(ValueError, match=re.escape(f"delack_s: must be in (0, 0.5] (RFC 1122 sec. 4.2.3.2), "
                                                       f"got {bad!r}")):
            TcpConfig(delack_s=bad)


def test_variants_lists_the_congestion_registry_and_other_names_are_not_attributes():
    from tcp_user.congestion import CONGESTION_CONTROLS
    assert tcp_config.VARIANTS == tuple(CONGESTION_CONTROLS) and "sack" in tcp_config.VARIANTS
    with pytest.raises(AttributeError, match=re.escape("module 'tcp_user.config' has no attribute 'variants'")):
        tcp_config.variants  # noqa: B018


# ---- aspan/scheme_config.py: ns-2's defaults and each setting's range -----------------------------------
@pytest.mark.parametrize("name", ["max_local_rxmit", "max_cached_segments", "snack_threshold"])
def test_scheme_counts_take_one_and_refuse_zero_naming_setting_and_value(name):
    assert getattr(SchemeConfig(**{name: 1}), name) == 1
    with pytest.raises(ValueError, match=re.escape(f"snoop.{name}: expected >= 1, got 0")):
        SchemeConfig(**{name: 0})


def test_scheme_gain_threshold_and_tick_edges():
    """ns-2's g_ a weight in [0, 1] (both ends allowed), RTX_THRESH from 0 (act on the first unexpected
    dupack), a SnoopTick of 0 allowed (no floor on the local timeout)."""
    assert SchemeConfig(rtt_gain=0).rtt_gain == 0 and SchemeConfig(rtt_gain=1).rtt_gain == 1
    for bad in (-0.01, 1.01):
        with pytest.raises(ValueError, match=re.escape(f"rtt_gain: expected a value in [0, 1], got {bad}")):
            SchemeConfig(rtt_gain=bad)
    assert SchemeConfig(rtx_thresh=0).rtx_thresh == 0
    with pytest.raises(ValueError, match=re.escape("rtx_thresh: expected >= 0, got -1")):
        SchemeConfig(rtx_thresh=-1)
    assert SchemeConfig(snoop_tick=0).snoop_tick == 0
    with pytest.raises(ValueError, match=re.escape("snoop.snoop_tick_s: expected >= 0, got -0.1")):
        SchemeConfig(snoop_tick=-0.1)


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


# ---- aspan/schemes.py: make_agent hands the agent its settings and event sink; unknown names named ----
@pytest.mark.parametrize("scheme", ["aspan", "classic", "multihop", "snack", "slack", "ackall"])
def test_make_agent_gives_the_agent_the_sink_and_the_scheme_settings_it_was_given(scheme):
    from aspan.policy import SnoopConfig
    from aspan.schemes import make_agent
    got: list[tuple] = []
    settings = SchemeConfig(scheme=scheme, snoop_tick=0.7, max_local_rxmit=3)
    agent = make_agent("B", SnoopConfig(policy="every"), lambda t, ev, **f: got.append((t, ev, f)), settings)
    agent._emit(1.5, "probe_of_the_sink", n=1)          # whatever the agent logs goes to the given sink
    assert got == [(1.5, "probe_of_the_sink", {"n": 1})]
    if scheme != "aspan":                               # A-SPAN has no scheme settings
        assert agent.scheme is settings


def test_make_agent_names_the_schemes_when_given_an_unknown_one():
    from aspan.policy import SnoopConfig
    from aspan.schemes import make_agent
    with pytest.raises(ValueError, match=re.escape("snoop.scheme: expected one of aspan, classic, multihop, snack, "
                                                   "slack, ackall, got 'vegas'")):
        make_agent("B", SnoopConfig(), None, SchemeConfig(scheme="vegas"))
