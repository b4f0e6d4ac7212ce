"""aspan/agent.py, the A-SPAN snoop agent: caching, freeing, local retransmission and suppression under both
dupack disciplines, and the rules its mutation run found unpinned (events, expiry, the flow table).
"""
from aspan.agent import SnoopAgent, AckVerdict
from aspan.fields import AspanFields, quantise
from aspan.policy import SnoopConfig
from aspan.events import EventWriter


# ====================================================================================================
# The snoop cache: caching, freeing, local retransmission and suppression under both dupack disciplines.

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


# ====================================================================================================
# Rules of aspan/agent.py that the mutation run (bench/mutation.py, docs/MUTATION.md) found unpinned.
#
# What the snoop agent tells the log (docs/LOGS.md: ``cache`` after every change of the cache with the
# node's segments and bytes and, for routing.forwarding.flowlog, the flow; ``hit`` with the 32-bit sequence number
# of the segment resent; ``cache_full`` with the segment not cached) and its counters (one per event),
# the flow bounds of issue 13 (a flow refused is forwarded as not cached; a flow expires after
# ``flow_idle_s`` unheard, data and ACKs alike keeping it alive), and the ``once`` dupack discipline
# (the dupacks in flight behind a lost segment, one per whole segment of its length, are held back).


NAME = "10.2.1.1:5000>10.2.1.4:6000"


class Recorder(EventWriter):
    """Every event with its time, and the flow a ``cache`` line belongs to (routing.forwarding.flowlog reads it)."""

    def __init__(self):
        self.events = []

    def emit(self, now, ev, **fields):
        self.events.append((now, ev, fields))

    def cache(self, now, segments, nbytes, flow=None):
        self.events.append((now, "cache", {"segments": segments, "bytes": nbytes, "flow": flow}))

    def of(self, ev):
        return [(t, f) for t, e, f in self.events if e == ev]


def recording_agent(**cfg):
    log = Recorder()
    return SnoopAgent("C", SnoopConfig(policy=cfg.pop("policy", "every"), **cfg), log), log


def send(a, k, now, length=MSS, base=0, fields=None):
    return a.on_data(FLOW, (base + k * length) % 2**32, length, fields or AspanFields(), 0.995, 2, now, f"p{k}")


def test_cache_events_carry_time_size_and_flow_and_counters_count_each_event():
    a, log = recording_agent()
    send(a, 0, 1.0)
    send(a, 1, 2.0)
    a.on_ack(FLOW, 1 * MSS, 3.0)                    # frees segment 0
    a.on_ack(FLOW, 2 * MSS, 4.0)                    # frees segment 1
    assert log.of("cache") == [(1.0, {"segments": 1, "bytes": 1000, "flow": NAME}),
                               (2.0, {"segments": 2, "bytes": 2000, "flow": NAME}),
                               (3.0, {"segments": 1, "bytes": 1000, "flow": NAME}),
                               (4.0, {"segments": 0, "bytes": 0, "flow": NAME})]
    assert (a.stats["cached"], a.stats["freed"]) == (2, 2)


def test_hits_are_logged_and_counted_once_each_with_the_32_bit_sequence_number():
    a, log = recording_agent()
    base = 2**32 - 2 * MSS                          # segment 3 lies past the 32-bit wrap
    for k in range(5):
        send(a, k, 0.5, base=base)
    a.on_ack(FLOW, (base + 3 * MSS) % 2**32, 1.0)
    for t in (1.1, 1.2):
        v = a.on_ack(FLOW, (base + 3 * MSS) % 2**32, t)
        assert v.retransmit == ["p3"] and not v.forward
    seq3 = (base + 3 * MSS) % 2**32
    assert log.of("hit") == [(1.1, {"flow": NAME, "seq": seq3}), (1.2, {"flow": NAME, "seq": seq3})]
    assert (a.stats["hits"], a.stats["suppressed"], a.stats["local_retransmissions"]) == (2, 2, 2)


def test_cache_full_is_logged_with_its_time_flow_and_segment():
    a, log = recording_agent(cache_bytes=0)
    assert send(a, 4, 7.0) is False
    assert log.of("cache_full") == [(7.0, {"flow": NAME, "seq": 4 * MSS})]


def test_a_refused_flow_is_forwarded_as_not_cached():
    a, log = recording_agent(policy="adaptive", max_flows=1)
    send(a, 0, 0.0)
    other = ("10.2.1.9", 1, "10.2.1.4", 2)
    f = AspanFields(1.0, 1.0)
    assert a.on_data(other, 0, MSS, f, 0.9, 1, 0.1, "x") is False          # no room for a second flow
    assert f.pkt_effort == quantise(0.9) and f.snoop_count == 0            # effort multiplied, not restarted
    assert a.stats["flows_refused"] == 1 and a.cache_segments == 1


def test_a_flow_expires_after_exactly_flow_idle_s_unheard():
    a, _ = recording_agent(flow_idle_s=10.0)
    send(a, 0, 0.0)
    assert a.expire_idle(9.5) == 0
    assert a.expire_idle(10.0) == 1 and a.cache_segments == 0 and a.cache_bytes == 0


def test_data_and_acks_of_a_known_flow_keep_it_alive():
    a, _ = recording_agent(flow_idle_s=10.0)
    send(a, 0, 0.0)
    send(a, 1, 6.0)                                  # data of the known flow at 6
    assert a.expire_idle(12.0) == 0
    a.on_ack(FLOW, 1 * MSS, 14.0)                    # an ACK at 14
    assert a.expire_idle(20.0) == 0
    assert a.expire_idle(24.0) == 1


def test_once_counts_the_dupacks_in_flight_in_whole_segments_of_the_lost_ones_length():
    # lost segment 1000..2000; 2,500 bytes sent after it: two whole segments' worth, so one dupack
    # beyond the one that triggers the retransmission is expected and held, the next resends
    a, _ = recording_agent(dupack="once")
    a.on_data(FLOW, 0, MSS, AspanFields(), 0.995, 2, 0.0, "p0")
    a.on_data(FLOW, MSS, MSS, AspanFields(), 0.995, 2, 0.0, "p1")
    a.on_data(FLOW, 2 * MSS, 2500, AspanFields(), 0.995, 2, 0.0, "tail")
    a.on_ack(FLOW, MSS, 1.0)
    assert [a.on_ack(FLOW, MSS, 1.1 + i / 10).retransmit for i in range(3)] == [["p1"], [], ["p1"]]


def test_once_with_one_byte_segments():
    a, _ = recording_agent(dupack="once")
    for k in range(5):
        a.on_data(FLOW, k, 1, AspanFields(), 0.995, 2, 0.0, f"b{k}")
    a.on_ack(FLOW, 1, 1.0)
    # 3 one-byte segments after the lost one (byte 1): the first dupack resends, two are held
    assert [a.on_ack(FLOW, 1, 1.1 + i / 10).retransmit for i in range(4)] == [["b1"], [], [], ["b1"]]


def test_an_ack_verdict_carries_the_snack_entries_it_is_given():
    assert AckVerdict(snack=(3, 4)).snack == (3, 4)
    assert AckVerdict().snack is None and AckVerdict().forward is True and AckVerdict().retransmit == []


def test_a_new_flow_sweeps_the_idle_flows_out_at_most_every_quarter_of_flow_idle_s():
    # issue 13: new flows sweep idle ones out every flow_idle_s / 4 (counted from the node's start at 0)
    a, _ = recording_agent(flow_idle_s=4.0)
    flow = lambda k: ("10.2.1.1", 5000 + k, "10.2.1.4", 6000)   # noqa: E731
    a.on_data(flow(0), 0, MSS, AspanFields(), 0.995, 2, 0.0, "a")   # A, alive until 4.0
    a.on_data(flow(1), 0, MSS, AspanFields(), 0.995, 2, 3.0, "b")   # B at 3.0: a sweep, nothing idle
    a.on_data(flow(2), 0, MSS, AspanFields(), 0.995, 2, 4.0, "c")   # 1.0 since the sweep: A goes
    assert a.stats["flows_expired"] == 1 and flow(0) not in a._flows
    a.on_data(flow(3), 0, MSS, AspanFields(), 0.995, 2, 6.1, "d")   # a sweep, B (3.0) not idle yet
    a.on_data(flow(4), 0, MSS, AspanFields(), 0.995, 2, 7.0, "e")   # 0.9 since the sweep: none
    assert a.stats["flows_expired"] == 1 and flow(1) in a._flows
    a.on_data(flow(5), 0, MSS, AspanFields(), 0.995, 2, 7.2, "f")   # 1.1 since: B goes
    assert a.stats["flows_expired"] == 2 and flow(1) not in a._flows


def test_a_full_flow_table_sweeps_before_it_refuses_a_new_flow():
    a, _ = recording_agent(flow_idle_s=4.0, max_flows=1)
    a.on_data(FLOW, 0, MSS, AspanFields(), 0.995, 2, 0.0, "a")
    other = ("10.2.1.9", 1, "10.2.1.4", 2)
    assert a.on_data(other, 0, MSS, AspanFields(), 0.995, 2, 3.5, "x") is False    # full: refused
    assert a.on_data(other, 0, MSS, AspanFields(), 0.995, 2, 4.0, "x") is True     # FLOW idle 4 s: room
    assert (a.stats["flows_refused"], a.stats["flows_expired"]) == (1, 1)


def test_expiry_logs_the_cache_it_leaves_and_only_when_it_freed_segments():
    a, log = recording_agent(flow_idle_s=10.0)
    send(a, 0, 0.0)
    send(a, 1, 0.0)
    b = ("10.2.1.9", 1, "10.2.1.4", 2)
    a.on_data(b, 0, 500, AspanFields(), 0.995, 2, 5.0, "b0")
    assert a.expire_idle(10.0) == 1
    assert log.of("cache")[-1] == (10.0, {"segments": 1, "bytes": 500, "flow": None})
    quiet, qlog = recording_agent(policy="none", flow_idle_s=10.0)              # caches nothing
    send(quiet, 0, 0.0)
    assert quiet.expire_idle(10.0) == 1 and qlog.of("cache") == []
    assert a.expire_idle(15.0) == 1 and a.stats["flows_expired"] == 2


def test_a_dupack_answered_from_the_cache_is_held_back_as_a_boolean_verdict():
    for dupack in ("every", "once"):
        a, _ = recording_agent(dupack=dupack)
        for k in range(4):
            send(a, k, 0.0)
        a.on_ack(FLOW, MSS, 1.0)
        first, second = a.on_ack(FLOW, MSS, 1.1), a.on_ack(FLOW, MSS, 1.2)
        assert first.forward is False and second.forward is False


def test_the_first_sweep_is_counted_from_the_nodes_start():
    a, _ = recording_agent(flow_idle_s=1.0)
    a.on_data(FLOW, 0, MSS, AspanFields(), 0.995, 2, 0.0, "a")
    a.on_data(("10.2.1.9", 1, "10.2.1.4", 2), 0, MSS, AspanFields(), 0.995, 2, 1.0, "b")
    assert a.stats["flows_expired"] == 1
