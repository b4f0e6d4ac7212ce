"""aspan/scheme_config.py and aspan/schemes.py: the snoop schemes' settings at their edges, and make_agent
(issue 30, item 3).
"""
from __future__ import annotations

import re
import pytest
from aspan.scheme_config import SchemeConfig


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
