"""aspan/ackall.py's rules at their edges (issue 30, mutation run; paper 004's rules as the module states them).

ACK-all acknowledges only with the receiver's own ACK as the template and only within the receiver's
window (so nothing before both arrived); a window update only when the node advertised *less than* two
segments; every receiver ACK the sender already has is held back and counted.
"""
from __future__ import annotations

from aspan.ackall import AckAllSnoopAgent
from aspan.agent import GeneratedAck
from test_slack_ackall import FLOW, MSS, ack, feed, make, started


def test_no_acknowledgement_without_the_receivers_ack_as_template():
    a, _ = make(AckAllSnoopAgent, "ackall")
    feed(a, [0])
    a.on_ack(FLOW, 1 * MSS, 0.01, window=10_000, packet=None)    # an ACK whose packet the node did not get
    feed(a, [1], t=0.02)
    assert a.take_generated() == []


def test_no_acknowledgement_without_the_receivers_window():
    a, _ = make(AckAllSnoopAgent, "ackall")
    feed(a, [0])
    a.on_ack(FLOW, 1 * MSS, 0.01, window=None, packet="ack")     # no window known: no right edge
    feed(a, [1], t=0.02)
    assert a.take_generated() == []


def test_no_window_update_when_the_node_advertised_two_segments():
    a, _ = started()
    feed(a, range(1, 9), t=0.02)                          # acked_to 9000, edge 11000: window 2000
    assert a.take_generated()[-1] == GeneratedAck("ack", 9000, 2000, "ackall")
    assert not ack(a, 5 * MSS, 0.05, window=10_000).forward   # the edge moves to 15000
    assert a.take_generated() == []


def test_each_held_back_ack_is_counted_once():
    a, _ = started()
    feed(a, [1, 2, 3], t=0.02)
    a.take_generated()
    before = a.stats["suppressed"]
    ack(a, 2 * MSS, 0.03)
    ack(a, 3 * MSS, 0.04)
    assert a.stats["suppressed"] - before == 2



def test_a_receiver_ack_below_cached_data_is_replaced_by_an_ack_of_that_data():
    a, _ = started()
    feed(a, [1], t=0.02)
    feed(a, [3, 4], t=0.03)                               # 2 bypassed this node's cache
    assert [(g.ack, g.reason) for g in a.take_generated()] == [(2000, "ackall"), (2000, "ackall"), (2000, "ackall")]
    v = ack(a, 3 * MSS, 0.05)                             # the receiver got 2: we hold 3 and 4 beyond it
    assert not v.forward
    assert a.take_generated() == [GeneratedAck("ack", 5000, 3000 + 64_000 - 5000, "ackall")]   # to the edge


def test_a_duplicate_ack_repeats_the_window_the_receiver_last_gave():
    a, _ = make(AckAllSnoopAgent, "ackall")
    feed(a, [0])
    assert ack(a, 1 * MSS, 0.01, window=10_000).forward    # edge 11000
    assert ack(a, 2 * MSS, 0.02, window=5_000).forward     # 1 bypassed the node: passed on, window 5000
    feed(a, [3], t=0.03)                                  # above a hole: a duplicate ACK, same window
    assert a.take_generated() == [GeneratedAck("ack", 2000, 5000, "ackall")]
