"""aspan/ackall.py's rules at their edges (issue 30, mutation run; paper 004's rules as the module states them).

ACK-all acknowledges only with the receiver's own ACK as the template and only within the receiver's
window (so nothing before both arrived); a window update only when the node advertised *less than* two
segments; every receiver ACK the sender already has is held back and counted.
"""
from __future__ import annotations

from aspan.ackall import AckAllSnoopAgent
from aspan.agent import GeneratedAck
from tests.cores import FLOW, MSS, hear_ack, send_segments, scheme_agent
import pytest
from aspan.fields import AspanFields
from aspan.slack import SlackSnoopAgent


def test_no_acknowledgement_without_the_receivers_ack_as_template():
    a, _ = scheme_agent(AckAllSnoopAgent, "ackall")
    send_segments(a, [0])
    a.on_ack(FLOW, 1 * MSS, 0.01, window=10_000, packet=None)    # an ACK whose packet the node did not get
    send_segments(a, [1], t=0.02)
    assert a.take_generated() == []


def test_no_acknowledgement_without_the_receivers_window():
    a, _ = scheme_agent(AckAllSnoopAgent, "ackall")
    send_segments(a, [0])
    a.on_ack(FLOW, 1 * MSS, 0.01, window=None, packet="ack")     # no window known: no right edge
    send_segments(a, [1], t=0.02)
    assert a.take_generated() == []


def test_no_window_update_when_the_node_advertised_two_segments():
    a, _ = started()
    send_segments(a, range(1, 9), t=0.02)                          # acked_to 9000, edge 11000: window 2000
    assert a.take_generated()[-1] == GeneratedAck("ack", 9000, 2000, "ackall")
    assert not hear_ack(a, 5 * MSS, 0.05, window=10_000).forward   # the edge moves to 15000
    assert a.take_generated() == []


def test_each_held_back_ack_is_counted_once():
    a, _ = started()
    send_segments(a, [1, 2, 3], t=0.02)
    a.take_generated()
    before = a.stats["suppressed"]
    hear_ack(a, 2 * MSS, 0.03)
    hear_ack(a, 3 * MSS, 0.04)
    assert a.stats["suppressed"] - before == 2


def test_a_receiver_ack_below_cached_data_is_replaced_by_an_ack_of_that_data():
    a, _ = started()
    send_segments(a, [1], t=0.02)
    send_segments(a, [3, 4], t=0.03)                               # 2 bypassed this node's cache
    assert [(g.ack, g.reason) for g in a.take_generated()] == [(2000, "ackall"), (2000, "ackall"), (2000, "ackall")]
    v = hear_ack(a, 3 * MSS, 0.05)                             # the receiver got 2: we hold 3 and 4 beyond it
    assert not v.forward
    assert a.take_generated() == [GeneratedAck("ack", 5000, 3000 + 64_000 - 5000, "ackall")]   # to the edge


def test_a_duplicate_ack_repeats_the_window_the_receiver_last_gave():
    a, _ = scheme_agent(AckAllSnoopAgent, "ackall")
    send_segments(a, [0])
    assert hear_ack(a, 1 * MSS, 0.01, window=10_000).forward    # edge 11000
    assert hear_ack(a, 2 * MSS, 0.02, window=5_000).forward     # 1 bypassed the node: passed on, window 5000
    send_segments(a, [3], t=0.03)                                  # above a hole: a duplicate ACK, same window
    assert a.take_generated() == [GeneratedAck("ack", 2000, 5000, "ackall")]


# ====================================================================================================
# SLACK (paper 003) and ACK-all Modified Snoop (paper 004), driven in virtual time.


# ---------------------------------------------------------------- ACK-all
def started(**kw):
    """An ACK-all node that has seen segment 0 and the receiver's ACK for it (window 10 segments)."""
    a, log = scheme_agent(AckAllSnoopAgent, "ackall", **kw)
    send_segments(a, [0])
    assert a.take_generated() == []                       # no receiver ACK seen yet: nothing to copy
    assert hear_ack(a, 1 * MSS, 0.01, window=10_000).forward   # the receiver is ahead: its ACK goes on
    return a, log


def test_every_cached_segment_is_acknowledged_to_the_sender():
    a, _ = started()
    send_segments(a, [1, 2], t=0.02)
    assert a.take_generated() == [GeneratedAck("ack", 2000, 9000, "ackall"),
                                  GeneratedAck("ack", 3000, 8000, "ackall")]


def test_a_segment_above_a_hole_draws_a_duplicate_ack_with_the_same_window():
    a, _ = started()
    send_segments(a, [1, 2, 4, 5], t=0.02)                         # 3 lost upstream of this node
    assert [(g.ack, g.window) for g in a.take_generated()] == [(2000, 9000), (3000, 8000),
                                                               (3000, 8000), (3000, 8000)]
    send_segments(a, [3], t=0.05)                                  # the sender's retransmission
    assert [(g.ack, g.window) for g in a.take_generated()] == [(6000, 5000)]


def test_receiver_acks_the_sender_already_has_are_held_back():
    a, _ = started()
    send_segments(a, [1, 2, 3], t=0.02)
    a.take_generated()
    assert not hear_ack(a, 2 * MSS, 0.03).forward              # new for the cache, old for the sender
    assert a.cache_segments == 2
    dup = [hear_ack(a, 2 * MSS, 0.04) for _ in range(3)]       # segment 2 lost below this node
    assert [(v.forward, v.retransmit) for v in dup] == [(False, []), (False, ["pkt2"]), (False, [])]


def test_the_receiver_ahead_of_the_node_is_passed_on():
    a, _ = started()
    send_segments(a, [1], t=0.02)
    a.take_generated()
    send_segments(a, [2, 3], t=0.03, hop=2)
    a.take_generated()
    v = hear_ack(a, 6 * MSS, 0.05)                             # e.g. data that bypassed this node's cache
    assert v.forward and a._flows[FLOW].acked_to == 6000


def test_no_limit_on_local_retransmissions_of_data_acknowledged_for_the_receiver():
    a, _ = started(max_local_rxmit=1)
    send_segments(a, [1], t=0.02)
    a.take_generated()
    resent = 0
    for _ in range(5):
        resent += len(a.on_timer(a.next_timer()))
    assert resent == 5


def test_window_update_when_the_node_advertised_less_than_two_segments():
    a, _ = started()
    send_segments(a, range(1, 10), t=0.02)                         # acked_to 10000, edge 11000: window 1000
    assert a.take_generated()[-1] == GeneratedAck("ack", 10_000, 1000, "ackall")
    assert not hear_ack(a, 5 * MSS, 0.05, window=10_000).forward   # edge moves to 15000
    assert a.take_generated() == [GeneratedAck("ack", 10_000, 5000, "window")]
    hear_ack(a, 6 * MSS, 0.06, window=10_000)                  # window 5000 >= 2 segments: no update
    assert a.take_generated() == []


def test_a_node_that_does_not_cache_the_flow_leaves_its_acks_alone():
    a, _ = scheme_agent(AckAllSnoopAgent, "ackall", policy="fixed")   # caches at hop 1 only
    send_segments(a, [0, 1, 2], hop=2)
    assert hear_ack(a, 1 * MSS, 0.01).forward and hear_ack(a, 1 * MSS, 0.02).forward
    assert a.take_generated() == []


@pytest.mark.parametrize("cls,scheme", [(SlackSnoopAgent, "slack"), (AckAllSnoopAgent, "ackall")])
def test_unknown_flows_pass(cls, scheme):
    a, _ = scheme_agent(cls, scheme)
    v = a.on_ack(("1.1.1.1", 1, "2.2.2.2", 2), 5, 0.0, window=100, packet="x")
    assert v.forward and a.take_generated() == []


def test_data_beyond_the_receivers_window_is_not_acknowledged():
    a, _ = started()                                      # edge 11000
    send_segments(a, range(1, 11), t=0.02)                         # 1..10: segment 10 ends at 11000
    assert a.take_generated()[-1] == GeneratedAck("ack", 11_000, 0, "ackall")
    a.on_data(FLOW, 11_000, 1, AspanFields(), 1.0, 2, 0.03, "probe")   # a zero-window probe
    assert a.take_generated() == [GeneratedAck("ack", 11_000, 0, "ackall")]
    assert a._flows[FLOW].acked_to == 11_000


def test_a_retransmission_of_acknowledged_data_is_answered():
    a, _ = started()
    send_segments(a, [1, 2], t=0.02)
    a.take_generated()
    hear_ack(a, 3 * MSS, 0.03)                                 # the receiver has it all; held back
    assert send_segments(a, [2], t=0.5) == [False]                  # the sender's RTO: our ACK was lost
    assert a.take_generated() == [GeneratedAck("ack", 3000, 8000, "ackall")]


def test_ackall_samples_rtt_from_the_latest_transmission():
    a, _ = started()
    send_segments(a, [1], t=0.0)
    send_segments(a, [2], t=0.5)
    st = a._flows[FLOW]
    srtt = st.srtt
    hear_ack(a, 3 * MSS, 0.52)                                 # latest send 0.5: sample 20 ms
    assert st.srtt == pytest.approx(0.125 * srtt + 0.875 * 0.02)
