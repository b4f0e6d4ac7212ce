"""Issue 13, item 2: a node's snoop state stays bounded under any input (forged flows, tiny segments)."""
import gc
import tracemalloc
import pytest
from aspan.agent import FLOW_COST, REFUSED_FLOW_COST, SEGMENT_COST
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.schemes import make_agent
from aspan.scheme_config import SchemeConfig
from routing.overlay.engine import ForwardingEngine
from routing.links.loss import NoLoss
from routing.topology.routes import chain_routes
from routing.overlay.wire import DATA, Packet, encode
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
    assert agent.stats["datagrams_refused"] == n - 256
    assert agent.cache_segments == 256          # the refused flows were forwarded, not cached


@pytest.mark.parametrize("scheme", SCHEMES)
def test_flows_refused_counts_flows_and_datagrams_apart(scheme):
    """Issue 27, item 7: 10 refused flows of 50 datagrams each are 10 flows and 500 datagrams."""
    eng = relay(scheme, max_flows=16)
    for i in range(16):
        eng.on_datagram(forged(i), 1.0)
    for seq in range(50):
        for i in range(16, 26):
            eng.on_datagram(forged(i, seq), 1.0)
    stats = eng.agent.stats
    assert stats["flows_refused"] == 10 and stats["datagrams_refused"] == 500
    assert stats["refused_memory_cleared"] == 0


def test_the_memory_of_refused_flows_is_bounded():
    """Past max_flows remembered refused flows the set is cleared (counted): a flow refused again after
    that counts again, so flows_refused is an upper bound then; the set never holds more than max_flows."""
    eng = relay("aspan", max_flows=4)
    for i in range(4):
        eng.on_datagram(forged(i), 1.0)
    for rnd in range(2):
        for i in range(4, 4 + 9):           # 9 refused flows, memory of 4
            eng.on_datagram(forged(i, rnd), 1.0)
            assert len(eng.agent._refused) <= 4
    stats = eng.agent.stats
    assert stats["datagrams_refused"] == 18
    assert stats["refused_memory_cleared"] == 4          # at the 5th and 9th flow of each round
    assert 9 < stats["flows_refused"] <= 18


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
    max_flows x (FLOW_COST + REFUSED_FLOW_COST) + cache_bytes (docs/DESIGN.md, "Bounded state")."""
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
    assert eng.agent.stats["flows_refused"] == 2000 - max_flows
    assert grown < max_flows * (FLOW_COST + REFUSED_FLOW_COST) + cache_bytes, grown


def test_a_syn_flood_to_a_listener_is_bounded_and_closed_connections_are_reaped():
    """SYNs from forged ports each ask a listener for a connection: the node keeps at most
    routing.overlay.node.MAX_ACCEPTED of them, drops the rest as ``refused`` (counted), and forgets
    closed ones when it needs the room."""
    import threading
    import time

    from experiments.build import build_node
    from experiments.schema import load_experiment
    from routing.overlay.node import MAX_ACCEPTED
    from tcp_user.config import TcpConfig
    from tcp_user.segment import SYN
    from tcp_user.drivers.sockets import Listener
    from tcp_user.state import State

    cfg = load_experiment({"etx": {"settle_s": 0.0}}, "syn-flood.yaml").variants[0].config
    core = build_node(cfg, "D", 1, lambda *a, **k: None, time.time(), internal_probes=False, apps=False)

    class Host:
        lock = threading.RLock()

        def listen(self, port, factory):
            core.listen(port, factory)

    listener = Listener(Host(), 7000, TcpConfig(variant="sack"), iss=lambda: 1)

    def syn(i: int) -> bytes:
        return encode(Packet(DATA, A, 20000 + i, D, 7000, 3, AspanFields(), Segment(i, 0, SYN, 65535, (), b"")))

    now = time.time()
    Host.lock.acquire()            # the UDP driver holds the node's lock around on_datagram
    for i in range(2 * MAX_ACCEPTED):
        core.on_datagram(syn(i), now)
    assert len(core.endpoints()) == MAX_ACCEPTED
    assert core.engine.step.drops["refused"] == MAX_ACCEPTED
    assert len(listener._pending) == MAX_ACCEPTED
    # the handshakes of ten of them time out: their room is given to new connections
    for ep in core.endpoints()[:10]:
        ep.conn.state = State.CLOSED
    for i in range(2 * MAX_ACCEPTED, 2 * MAX_ACCEPTED + 12):
        core.on_datagram(syn(i), now)
    assert len(core.endpoints()) == MAX_ACCEPTED
    assert core.engine.step.drops["refused"] == MAX_ACCEPTED + 2
    assert len(listener._pending) == MAX_ACCEPTED
    Host.lock.release()
