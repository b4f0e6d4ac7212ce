"""Classic Snoop (ns-2 snoop.cc) and Multihop Snoop (paper 000), driven in virtual time."""
import pytest

from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.schemes import make_agent
from aspan.snoop_classic import ClassicSnoopAgent, MultihopSnoopAgent

FLOW = ("10.2.1.1", 5000, "10.2.1.4", 6000)
MSS = 1000


class Log:
    """Events an agent emitted, as (now, ev, fields); ``of(ev)``: the fields of one kind."""

    def __init__(self):
        self.events = []

    def __call__(self, now, ev, **f):
        self.events.append((now, ev, f))

    def of(self, ev):
        return [f for _, e, f in self.events if e == ev]


def agent(cls=ClassicSnoopAgent, policy="every", **scheme):
    log = Log()
    scheme.setdefault("scheme", "classic")
    return cls("C", SnoopConfig(policy=policy), log, SchemeConfig(**scheme)), log


def feed(a, idx, t=0.0, hop=2):
    return [a.on_data(FLOW, i * MSS, MSS, AspanFields(), 1.0, hop, t, f"pkt{i}") for i in idx]


def verdicts(a, ack, n, t=0.1):
    return [(v.forward, v.retransmit) for v in (a.on_ack(FLOW, ack, t) for _ in range(n))]


def test_cache_arms_the_timer_with_the_initial_rto():
    a, log = agent()
    assert feed(a, range(5)) == [True] * 5
    assert a.cache_segments == 5 and log.of("cache")[-1] == {"segments": 5, "bytes": 5000}
    assert a.next_timer() == pytest.approx(1.1)      # max(0.1 + 4 x 0.25, 0.1): ns-2 defaults


def test_new_ack_frees_restarts_timer_then_takes_the_ns2_rtt_sample():
    a, _ = agent()
    feed(a, range(3))
    v = a.on_ack(FLOW, 1 * MSS, 0.05)
    assert v.forward and v.retransmit == [] and a.cache_segments == 2
    assert a.next_timer() == pytest.approx(0.05 + 1.1)    # armed before the sample (snoop_cleanbufs_)
    st = a._flows[FLOW]
    assert st.srtt == pytest.approx(0.125 * 0.1 + 0.875 * 0.05)
    assert st.rttvar == pytest.approx(0.125 * abs(0.05 - st.srtt) + 0.875 * 0.25)
    assert a.timeout(st) == pytest.approx(st.srtt + 4 * st.rttvar)


def test_which_dupack_retransmits_and_which_are_held_back():
    a, log = agent()
    feed(a, range(6))
    a.on_ack(FLOW, 2 * MSS, 0.05)                         # segment 2 is the hole; 2..5 cached
    got = verdicts(a, 2 * MSS, 7)
    assert got == [(True, []),                            # RTX_THRESH: the first one passes
                   (False, ["pkt2"]),                     # then retransmit; expect 4 - 2 = 2 more
                   (False, []), (False, []),              # expected: held back
                   (True, []),                            # unexpected again: passes (RTX_THRESH)
                   (True, []),                            # resent once already: passes, expect 1
                   (False, [])]
    assert a.stats["local_retransmissions"] == 1 and a.stats["suppressed"] == 4
    assert len(log.of("hit")) == 7


def test_inconsistent_state_resends_at_most_twice():
    a, _ = agent()
    feed(a, range(2))
    a.on_ack(FLOW, 1 * MSS, 0.05)                         # only segment 1 cached: expected = -1
    assert verdicts(a, 1 * MSS, 4) == [(True, []), (False, ["pkt1"]), (False, ["pkt1"]), (True, [])]


def test_dupack_for_a_segment_not_cached_passes():
    a, _ = agent()
    feed(a, [0, 1, 3])
    a.on_ack(FLOW, 2 * MSS, 0.05)
    assert verdicts(a, 2 * MSS, 3) == [(True, [])] * 3


def test_sender_retransmission_is_marked_restarts_timer_and_its_dupacks_pass():
    a, _ = agent()
    feed(a, range(4))
    a.on_ack(FLOW, 1 * MSS, 0.05)
    feed(a, [1], t=0.3)                                    # the sender resent segment 1
    st = a._flows[FLOW]
    assert st.meta[1000].sender_rxmit and a.cache_segments == 3
    assert a.next_timer() == pytest.approx(0.3 + a.timeout(st))
    assert verdicts(a, 1 * MSS, 3, t=0.4) == [(True, [])] * 3


def test_timer_resends_the_tail_until_the_limit():
    a, log = agent(max_local_rxmit=2)
    feed(a, range(3))
    a.on_ack(FLOW, 1 * MSS, 0.05)
    st = a._flows[FLOW]
    rto = a.timeout(st)
    t1 = a.next_timer()
    assert t1 == pytest.approx(1.15)
    assert a.on_timer(1.0) == []                          # not yet
    assert a.on_timer(t1) == ["pkt1"]
    t2 = a.next_timer()
    assert t2 == pytest.approx(t1 + rto)                  # no backoff in ns-2
    assert a.on_timer(t2) == ["pkt1"]
    assert a.on_timer(a.next_timer()) == []               # SNOOP_MAX_RXMIT reached
    assert a.next_timer() is None
    assert [f["seq"] for f in log.of("local_rto")] == [1000, 1000]


def test_timer_does_nothing_when_the_awaited_segment_is_not_cached():
    a, _ = agent()
    feed(a, [0, 2])
    a.on_ack(FLOW, 1 * MSS, 0.05)                         # receiver waits for 1; tail is 2
    assert a.on_timer(5.0) == [] and a.next_timer() is None


@pytest.mark.parametrize("tick, expected", [(1.0, 1.0), (0.1, 0.1), (0.0, None)])
def test_snoop_tick_is_the_minimum_local_rto(tick, expected):
    a, _ = agent(snoop_tick=tick)
    for i in range(40):                                    # one segment every 10 ms, 2 ms RTT
        feed(a, [i], t=0.01 * i)
        a.on_ack(FLOW, (i + 1) * MSS, 0.01 * i + 0.002)
    st = a._flows[FLOW]
    assert a.timeout(st) == pytest.approx(expected if expected is not None else st.srtt + 4 * st.rttvar)
    if expected is None:
        assert a.timeout(st) < 0.01


def test_per_flow_cache_bound():
    a, log = agent(max_cached_segments=3)
    assert feed(a, range(5)) == [True, True, True, False, False]
    assert [f["seq"] for f in log.of("cache_full")] == [3000, 4000]


def test_already_acknowledged_data_is_not_cached():
    a, _ = agent()
    feed(a, range(3))
    a.on_ack(FLOW, 3 * MSS, 0.05)
    assert feed(a, [1], t=0.1) == [False] and a.cache_segments == 0


def test_premature_local_retransmission_is_counted_from_the_ack_that_follows():
    a, log = agent()
    feed(a, range(3))
    a.on_ack(FLOW, 1 * MSS, 0.02)                          # clean sample: min RTT 20 ms
    assert a.on_timer(1.12) == ["pkt1"]
    a.on_ack(FLOW, 2 * MSS, 1.125)                         # 5 ms after the resend < 20 ms: premature
    assert a.stats["premature"] == 1
    [ev] = log.of("premature")
    assert ev["seq"] == 1000 and ev["after"] == pytest.approx(0.005) and ev["min_rtt"] == pytest.approx(0.02)
    st = a._flows[FLOW]
    t = a.next_timer()
    assert a.on_timer(t) == ["pkt2"]
    a.on_ack(FLOW, 3 * MSS, t + 0.03)                      # 30 ms later: may be the resend's ACK
    assert a.stats["premature"] == 1 and st.min_rtt == pytest.approx(0.02)


def test_multihop_caches_on_every_forwarding_node_whatever_the_policy():
    a, _ = agent(MultihopSnoopAgent, policy="none", scheme="multihop")
    f = AspanFields()
    assert a.on_data(FLOW, 0, MSS, f, 1.0, 0, 0.0, "p0") is False     # the sender's own layer
    assert a.on_data(FLOW, 1000, MSS, f, 1.0, 1, 0.0, "p1") is True
    assert a.on_data(FLOW, 2000, MSS, f, 1.0, 3, 0.0, "p2") is True


def test_classic_follows_the_placement_policy():
    a, _ = agent(policy="fixed")                            # fixed_hop 1 (B)
    assert feed(a, [0], hop=2) == [False] and feed(a, [1], hop=1) == [True]


def test_make_agent_picks_the_class_of_the_scheme():
    cfg = SnoopConfig(policy="every")
    assert type(make_agent("C", cfg)).__name__ == "SnoopAgent"
    for scheme, name in [("classic", "ClassicSnoopAgent"), ("multihop", "MultihopSnoopAgent"),
                         ("snack", "SnackSnoopAgent"), ("slack", "SlackSnoopAgent"),
                         ("ackall", "AckAllSnoopAgent")]:
        assert type(make_agent("C", cfg, scheme=SchemeConfig(scheme=scheme))).__name__ == name
    with pytest.raises(ValueError, match="snoop.scheme: expected one of aspan, classic, multihop"):
        make_agent("C", cfg, scheme=SchemeConfig(scheme="bogus"))


def test_a_partly_acknowledged_segment_is_still_the_awaited_one():
    a, _ = agent()
    feed(a, range(3))
    a.on_ack(FLOW, 1500, 0.05)                             # the receiver took half of segment 1
    assert a.cache_segments == 2                           # segment 1 is not wholly acknowledged
    assert verdicts(a, 1500, 2) == [(True, []), (False, ["pkt1"])]
    assert a.on_timer(a.next_timer()) == ["pkt1"]


def test_rtt_sample_is_from_the_highest_freed_segment_as_in_ns2():
    a, _ = agent()
    feed(a, [0], t=0.0)
    feed(a, [1], t=0.5)
    a.on_ack(FLOW, 2 * MSS, 0.6)                           # frees 0 (sent 0.0) and 1 (sent 0.5)
    assert a._flows[FLOW].srtt == pytest.approx(0.125 * 0.1 + 0.875 * 0.1)
