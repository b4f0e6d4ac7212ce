"""Issue 13, item 2: a node's snoop state stays bounded under any input (forged flows, tiny segments)."""
import gc
import tracemalloc

import pytest

from aspan.agent import FLOW_COST, SEGMENT_COST
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.schemes import make_agent
from aspan.scheme_config import SchemeConfig
from routing.engine import ForwardingEngine
from routing.loss import NoLoss
from routing.routes import chain_routes
from routing.wire import DATA, Packet, encode
from tcp_user.segment import ACK, Segment

A, B, C, D = "10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"
SCHEMES = ["aspan", "classic", "ackall", "slack", "snack"]


def relay(scheme: str, **cfg) -> ForwardingEngine:
    agent = make_agent("B", SnoopConfig(policy="every", **cfg), None, SchemeConfig(scheme=scheme))
    return ForwardingEngine(B, chain_routes([A, B, C, D])[B], NoLoss(), agent, lambda n: 1.0)


def forged(i: int, seq: int = 0) -> bytes:
    """A 1-byte data segment of forged flow ``i`` (a different source port each), on its way to D."""
    return encode(Packet(DATA, A, 1024 + i % 60000, D, 6000 + i // 60000, 1, AspanFields(),
                         Segment(seq, 0, ACK, 0, (), b"x")))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_forged_flows_are_bounded_refused_and_counted(scheme):
    eng = relay(scheme, max_flows=256)
    n = 3000
    datagrams = [forged(i) for i in range(n)]
    for d in datagrams:
        eng.on_datagram(d, 10.0)
    agent = eng.agent
    assert len(agent._flows) == 256
    assert agent.stats["flows_refused"] == n - 256
    assert agent.cache_segments == 256          # the refused flows were forwarded, not cached


@pytest.mark.parametrize("scheme", SCHEMES)
def test_idle_flows_expire_with_their_segments(scheme):
    eng = relay(scheme, max_flows=100, flow_idle_s=60.0)
    for i in range(100):
        eng.on_datagram(forged(i), 0.0)
    assert eng.agent.cache_segments == 100
    eng.on_datagram(forged(100), 30.0)          # full, nothing idle yet: refused
    assert eng.agent.stats["flows_refused"] == 1
    eng.on_datagram(forged(101), 61.0)          # every earlier flow is idle: expired, room again
    agent = eng.agent
    assert agent.stats["flows_expired"] == 100 and len(agent._flows) == 1
    assert agent.cache_segments == 1 and agent.cache_bytes == 1


def test_tiny_segments_count_what_they_cost():
    cache_bytes = 200_000
    eng = relay("aspan", cache_bytes=cache_bytes)
    for seq in range(2000):
        eng.on_datagram(forged(0, seq), 1.0)
    agent = eng.agent
    # payload 1 byte each, so a payload-only bound would have taken all 2000
    assert agent.cache_segments == cache_bytes // (SEGMENT_COST + 1)
    assert agent.stats["cache_full"] == 2000 - agent.cache_segments


def test_memory_of_a_hostile_flood_stays_below_the_documented_bound():
    """100,000 forged flows of 1-byte segments: the relay's snoop state stays below
    max_flows x FLOW_COST + cache_bytes (docs/DESIGN.md, "Bounded state")."""
    cache_bytes, max_flows = 1_000_000, 1024
    eng = relay("classic", cache_bytes=cache_bytes, max_flows=max_flows)
    datagrams = [forged(i, seq) for i in range(2000) for seq in range(50)]   # 100,000 datagrams
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for d in datagrams:
            eng.on_datagram(d, 5.0)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert eng.agent.stats["flows_refused"] > 0
    assert grown < max_flows * FLOW_COST + cache_bytes, grown
