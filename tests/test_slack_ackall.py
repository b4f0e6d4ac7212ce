"""SLACK (paper 003) and ACK-all Modified Snoop (paper 004), driven in virtual time."""
import pytest

from aspan.ackall import AckAllSnoopAgent
from aspan.agent import GeneratedAck
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.slack import SlackSnoopAgent
from test_snoop_classic import Log

FLOW = ("10.2.1.1", 5000, "10.2.1.4", 6000)
MSS = 1000
WND = 64_000


def make(cls, scheme, policy="every", **kw):
    log = Log()
    return cls("C", SnoopConfig(policy=policy), log, SchemeConfig(scheme=scheme, **kw)), log


def feed(a, idx, t=0.0, hop=2):
    return [a.on_data(FLOW, i * MSS, MSS, AspanFields(), 1.0, hop, t, f"pkt{i}") for i in idx]


def ack(a, n, t, window=WND, packet="ack"):
    return a.on_ack(FLOW, n, t, window=window, packet=packet)


# ---------------------------------------------------------------- SLACK
def test_silent_timeout_releases_the_last_ack_as_three_dupacks_once():
    a, log = make(SlackSnoopAgent, "slack")
    feed(a, range(5))
    assert ack(a, 1 * MSS, 0.01, packet="ack1000").forward
    t = a.next_timer()                                    # nothing heard after the ACK
    assert a.on_timer(t) == ["pkt1"]                      # the local retransmission goes on too
    assert a.take_generated() == [GeneratedAck("ack1000", 1000, WND, "slack")] * 3
    assert log.of("slack") == [{"flow": "10.2.1.1:5000>10.2.1.4:6000", "ack": 1000}]
    assert a.on_timer(a.next_timer()) == ["pkt1"]         # still silent: no second release
    assert a.take_generated() == [] and a.stats["slack_releases"] == 1


def test_dupacks_heard_mean_a_lossy_link_not_a_disconnection():
    a, _ = make(SlackSnoopAgent, "slack")
    feed(a, range(5))
    ack(a, 1 * MSS, 0.01)
    ack(a, 1 * MSS, 0.02)                                 # a dupack after the timer was set
    a.on_timer(a.next_timer())
    assert a.take_generated() == []


def test_a_new_disconnection_releases_again_once_the_ack_clock_ran():
    a, _ = make(SlackSnoopAgent, "slack")
    feed(a, range(8))
    ack(a, 1 * MSS, 0.01, packet="ack1000")
    a.on_timer(a.next_timer())
    assert len(a.take_generated()) == 3
    t = a.next_timer() - 0.05
    ack(a, 2 * MSS, t, window=60_000, packet="ack2000")     # the resend got through: one ACK
    a.on_timer(a.next_timer())                              # silent again (nothing above it arrived)
    assert a.take_generated() == []                         # same disconnection: no second release
    t = a.next_timer() - 0.05
    ack(a, 3 * MSS, t, packet="ack3000")
    ack(a, 4 * MSS, t + 0.001, window=60_000, packet="ack4000")   # ACKs at the normal pace again
    a.on_timer(a.next_timer())
    assert a.take_generated() == [GeneratedAck("ack4000", 4000, 60_000, "slack")] * 3


def test_held_back_acks_are_not_the_template():
    a, _ = make(SlackSnoopAgent, "slack")
    feed(a, range(6))
    ack(a, 2 * MSS, 0.01, packet="new")
    ack(a, 2 * MSS, 0.02, packet="dup1")                  # passes (RTX_THRESH)
    ack(a, 2 * MSS, 0.03, packet="dup2")                  # held back: not the last forwarded
    assert a._flows[FLOW].ack_template == "dup1"


# ---------------------------------------------------------------- ACK-all
def started(**kw):
    """An ACK-all node that has seen segment 0 and the receiver's ACK for it (window 10 segments)."""
    a, log = make(AckAllSnoopAgent, "ackall", **kw)
    feed(a, [0])
    assert a.take_generated() == []                       # no receiver ACK seen yet: nothing to copy
    assert ack(a, 1 * MSS, 0.01, window=10_000).forward   # the receiver is ahead: its ACK goes on
    return a, log


def test_every_cached_segment_is_acknowledged_to_the_sender():
    a, _ = started()
    feed(a, [1, 2], t=0.02)
    assert a.take_generated() == [GeneratedAck("ack", 2000, 9000, "ackall"),
                                  GeneratedAck("ack", 3000, 8000, "ackall")]


def test_a_segment_above_a_hole_draws_a_duplicate_ack_with_the_same_window():
    a, _ = started()
    feed(a, [1, 2, 4, 5], t=0.02)                         # 3 lost upstream of this node
    assert [(g.ack, g.window) for g in a.take_generated()] == [(2000, 9000), (3000, 8000),
                                                               (3000, 8000), (3000, 8000)]
    feed(a, [3], t=0.05)                                  # the sender's retransmission
    assert [(g.ack, g.window) for g in a.take_generated()] == [(6000, 5000)]


def test_receiver_acks_the_sender_already_has_are_held_back():
    a, _ = started()
    feed(a, [1, 2, 3], t=0.02)
    a.take_generated()
    assert not ack(a, 2 * MSS, 0.03).forward              # new for the cache, old for the sender
    assert a.cache_segments == 2
    dup = [ack(a, 2 * MSS, 0.04) for _ in range(3)]       # segment 2 lost below this node
    assert [(v.forward, v.retransmit) for v in dup] == [(False, []), (False, ["pkt2"]), (False, [])]


def test_the_receiver_ahead_of_the_node_is_passed_on():
    a, _ = started()
    feed(a, [1], t=0.02)
    a.take_generated()
    feed(a, [2, 3], t=0.03, hop=2)
    a.take_generated()
    v = ack(a, 6 * MSS, 0.05)                             # e.g. data that bypassed this node's cache
    assert v.forward and a._flows[FLOW].acked_to == 6000


def test_no_limit_on_local_retransmissions_of_data_acknowledged_for_the_receiver():
    a, _ = started(max_local_rxmit=1)
    feed(a, [1], t=0.02)
    a.take_generated()
    resent = 0
    for _ in range(5):
        resent += len(a.on_timer(a.next_timer()))
    assert resent == 5


def test_window_update_when_the_node_advertised_less_than_two_segments():
    a, _ = started()
    feed(a, range(1, 10), t=0.02)                         # acked_to 10000, edge 11000: window 1000
    assert a.take_generated()[-1] == GeneratedAck("ack", 10_000, 1000, "ackall")
    assert not ack(a, 5 * MSS, 0.05, window=10_000).forward   # edge moves to 15000
    assert a.take_generated() == [GeneratedAck("ack", 10_000, 5000, "window")]
    ack(a, 6 * MSS, 0.06, window=10_000)                  # window 5000 >= 2 segments: no update
    assert a.take_generated() == []


def test_a_node_that_does_not_cache_the_flow_leaves_its_acks_alone():
    a, _ = make(AckAllSnoopAgent, "ackall", policy="fixed")   # caches at hop 1 only
    feed(a, [0, 1, 2], hop=2)
    assert ack(a, 1 * MSS, 0.01).forward and ack(a, 1 * MSS, 0.02).forward
    assert a.take_generated() == []


@pytest.mark.parametrize("cls,scheme", [(SlackSnoopAgent, "slack"), (AckAllSnoopAgent, "ackall")])
def test_unknown_flows_pass(cls, scheme):
    a, _ = make(cls, scheme)
    v = a.on_ack(("1.1.1.1", 1, "2.2.2.2", 2), 5, 0.0, window=100, packet="x")
    assert v.forward and a.take_generated() == []


def test_data_beyond_the_receivers_window_is_not_acknowledged():
    a, _ = started()                                      # edge 11000
    feed(a, range(1, 11), t=0.02)                         # 1..10: segment 10 ends at 11000
    assert a.take_generated()[-1] == GeneratedAck("ack", 11_000, 0, "ackall")
    a.on_data(FLOW, 11_000, 1, AspanFields(), 1.0, 2, 0.03, "probe")   # a zero-window probe
    assert a.take_generated() == [GeneratedAck("ack", 11_000, 0, "ackall")]
    assert a._flows[FLOW].acked_to == 11_000


def test_a_retransmission_of_acknowledged_data_is_answered():
    a, _ = started()
    feed(a, [1, 2], t=0.02)
    a.take_generated()
    ack(a, 3 * MSS, 0.03)                                 # the receiver has it all; held back
    assert feed(a, [2], t=0.5) == [False]                  # the sender's RTO: our ACK was lost
    assert a.take_generated() == [GeneratedAck("ack", 3000, 8000, "ackall")]


def test_ackall_samples_rtt_from_the_latest_transmission():
    a, _ = started()
    feed(a, [1], t=0.0)
    feed(a, [2], t=0.5)
    st = a._flows[FLOW]
    srtt = st.srtt
    ack(a, 3 * MSS, 0.52)                                 # latest send 0.5: sample 20 ms
    assert st.srtt == pytest.approx(0.125 * srtt + 0.875 * 0.02)
