"""The snoop cache: caching, freeing, local retransmission and suppression under both dupack disciplines."""
from aspan.agent import SnoopAgent
from aspan.fields import AspanFields, quantise
from aspan.policy import SnoopConfig

FLOW = ("10.2.1.1", 5000, "10.2.1.4", 6000)
MSS = 1000


class Log:
    def __init__(self):
        self.events = []

    def __call__(self, now, ev, **f):
        self.events.append((ev, f))

    def names(self, ev):
        return [f for e, f in self.events if e == ev]


def agent(dupack="every", cache_bytes=10**9, policy="every"):
    log = Log()
    return SnoopAgent("C", SnoopConfig(policy=policy, dupack=dupack, cache_bytes=cache_bytes), log), log


def feed(a, seqs, base=0, hop=2):
    for s in seqs:
        a.on_data(FLOW, base + s * MSS, MSS, AspanFields(), 0.995, hop, 0.0, f"pkt{s}")


def test_cache_and_free_on_new_ack():
    a, log = agent()
    feed(a, range(5))
    assert (a.cache_segments, a.cache_bytes) == (5, 5 * MSS)
    v = a.on_ack(FLOW, 3 * MSS, 1.0)
    assert v.forward and v.retransmit == []
    assert (a.cache_segments, a.cache_bytes) == (2, 2 * MSS)
    assert log.names("cache")[-1] == {"segments": 2, "bytes": 2000}


def test_dupack_every_retransmits_each_time_and_suppresses():
    a, log = agent("every")
    feed(a, range(6))
    assert a.on_ack(FLOW, 2 * MSS, 1.0).forward          # new ack: frees 0,1
    for _ in range(4):                                     # segment 2 lost, 3 dupacks + 1
        v = a.on_ack(FLOW, 2 * MSS, 1.1)
        assert not v.forward and v.retransmit == ["pkt2"]
    assert a.stats["local_retransmissions"] == 4
    assert len(log.names("hit")) == 4


def test_dupack_once_retransmits_once_then_suppresses_inflight_dupacks():
    a, _ = agent("once")
    feed(a, range(6))                                     # segments 0..5 forwarded
    a.on_ack(FLOW, 2 * MSS, 1.0)
    verdicts = [a.on_ack(FLOW, 2 * MSS, 1.1) for _ in range(3)]  # dupacks from segments 3,4,5
    assert [v.retransmit for v in verdicts] == [["pkt2"], [], []]
    assert not any(v.forward for v in verdicts)
    # the local retransmission was lost too: one more dupack than expected -> resend
    v = a.on_ack(FLOW, 2 * MSS, 1.3)
    assert v.retransmit == ["pkt2"] and not v.forward
    assert a.stats["local_retransmissions"] == 2
    # recovery: a new ack resets the discipline
    assert a.on_ack(FLOW, 6 * MSS, 1.5).forward
    assert a.cache_segments == 0


def test_dupack_for_uncached_segment_is_forwarded():
    a, _ = agent()
    feed(a, [0, 1, 3])  # segment 2 never reached this node
    a.on_ack(FLOW, 2 * MSS, 1.0)
    v = a.on_ack(FLOW, 2 * MSS, 1.1)
    assert v.forward and v.retransmit == []


def test_unknown_flow_and_old_ack_pass_through():
    a, _ = agent()
    assert a.on_ack(("1.1.1.1", 1, "2.2.2.2", 2), 5, 0.0).forward
    feed(a, range(3))
    a.on_ack(FLOW, 2 * MSS, 1.0)
    v = a.on_ack(FLOW, 1 * MSS, 1.1)  # older than the last ack
    assert v.forward and v.retransmit == []


def test_cache_bound_counts_cache_full():
    from aspan.agent import SEGMENT_COST
    a, log = agent(cache_bytes=2 * (MSS + SEGMENT_COST))   # the bound counts what a segment costs
    feed(a, range(4))
    assert a.cache_segments == 2
    assert a.stats["cache_full"] == 2
    assert [f["seq"] for f in log.names("cache_full")] == [2000, 3000]


def test_cache_full_leaves_effort_uncut():
    a, _ = agent(cache_bytes=0, policy="adaptive")
    f = AspanFields(1.0, 1.0)
    assert a.on_data(FLOW, 0, MSS, f, 0.9, 1, 0.0, "p") is False
    assert f.pkt_effort == quantise(0.9) and f.snoop_count == 0


def test_sequence_wraparound():
    a, _ = agent()
    base = 2**32 - 2 * MSS
    for i in range(4):
        a.on_data(FLOW, (base + i * MSS) % 2**32, MSS, AspanFields(), 1.0, 1, 0.0, f"p{i}")
    a.on_ack(FLOW, (base + 3 * MSS) % 2**32, 1.0)  # acks across the wrap
    assert a.cache_segments == 1
    v = a.on_ack(FLOW, (base + 3 * MSS) % 2**32, 1.1)
    assert v.retransmit == ["p3"]


def test_already_acked_data_is_not_cached():
    a, _ = agent()
    feed(a, range(3))
    a.on_ack(FLOW, 3 * MSS, 1.0)
    feed(a, [1])  # a late TCP retransmission of acknowledged data
    assert a.cache_segments == 0


def test_segment_ending_exactly_at_the_last_ack_is_acknowledged_and_not_cached():
    # A cumulative ACK of 3000 acknowledges every byte below 3000 (the cache frees a segment whose end
    # is <= the ACK: FlowCache.free_below), so a late copy of segment 2 (2000..3000) has nothing left
    # to protect: SnoopAgent.on_data's "already acknowledged" rule, end <= last ACK.
    a, log = agent()
    feed(a, range(3))
    a.on_ack(FLOW, 3 * MSS, 1.0)
    assert (a.cache_segments, a.cache_bytes, a.stats["freed"]) == (0, 0, 3)
    f = AspanFields(1.0, 1.0)
    assert a.on_data(FLOW, 2 * MSS, MSS, f, 0.995, 2, 2.0, "late2") is False
    assert (a.cache_segments, a.cache_bytes, a.stats["cached"]) == (0, 0, 3)
    assert f.pkt_effort == quantise(0.995) and f.snoop_count == 0   # forwarded as not cached
    assert len(log.names("cache")) == 4   # 3 cached, 1 freed: nothing since
    # the segment just above the ACK is not acknowledged: it is cached
    assert a.on_data(FLOW, 3 * MSS, MSS, AspanFields(), 0.995, 2, 2.0, "pkt3") is True
    assert a.cache_segments == 1
