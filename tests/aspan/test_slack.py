"""aspan/slack.py's rules one by one (issue 30, mutation run): SLACK, paper 003 Sec. 6, as the module states it.

* the release: at a local timeout, when no ACK of the flow was heard after the timer was set (an ACK
  heard at the very moment it was set is before it), the node sends three copies of the last ACK it
  forwarded toward the sender (its number and window), counts one release and logs ``slack``; then
  the classic local retransmission goes on;
* nothing to release without a forwarded ACK, and no release when an ACK was heard after the timer;
* once per disconnection: released again only after two ACKs of the flow less than one local RTO
  apart (the ACK clock ran);
* the template is the last ACK that went on toward the sender, with the packet given; an ACK that
  is held back or given without its packet is not.
"""
from __future__ import annotations

import pytest
from aspan.agent import GeneratedAck
from aspan.slack import SLACK_DUPACKS, SlackFlow, SlackSnoopAgent
from tests.cores import FLOW, MSS, WND, hear_ack, send_segments, scheme_agent


NAME = "10.2.1.1:5000>10.2.1.4:6000"


WRAP = 1 << 32


def slack(**kw):
    return scheme_agent(SlackSnoopAgent, "slack", **kw)


def test_three_dupacks_and_the_agent_makes_acks_from_the_ack_itself():
    assert SLACK_DUPACKS == 3
    assert SlackSnoopAgent.reads_ack_details is True and SlackSnoopAgent.generates_acks is True
    a, _ = slack()
    assert a.stats["slack_releases"] == 0
    send_segments(a, [0])
    st = a._flows[FLOW]
    assert isinstance(st, SlackFlow)
    assert (st.ack_template, st.ack_value, st.ack_window, st.armed) == (None, 0, 0, True)


def test_the_release_counts_logs_and_then_resends_locally():
    a, log = slack()
    send_segments(a, range(3))
    hear_ack(a, 1 * MSS, 0.01, window=5000, packet="A")
    t = a.next_timer()
    assert a.on_timer(t) == ["pkt1"]
    assert a.take_generated() == [GeneratedAck("A", 1000, 5000, "slack")] * 3
    assert a.stats["slack_releases"] == 1 and a.stats["acks_generated"] == 3
    assert [(now, f) for now, e, f in log.events if e == "slack"] == [(t, {"flow": NAME, "ack": 1000})]
    assert a.stats["local_timeouts"] == 1 and a._flows[FLOW].armed is False


def test_an_ack_heard_after_the_timer_was_set_means_no_silence():
    a, _ = slack()
    send_segments(a, range(4))
    hear_ack(a, 1 * MSS, 0.01, packet="A")                     # sets the timer at 0.01
    hear_ack(a, 2 * MSS, 0.5, packet="B")                      # restarts it at 0.5: heard at that moment
    a.on_timer(a.next_timer())
    assert len(a.take_generated()) == 3                   # nothing heard after 0.5: silent
    b, _ = slack()
    send_segments(b, range(4))
    hear_ack(b, 1 * MSS, 0.01, packet="A")
    b.on_ack(FLOW, 500, 0.2, window=WND, packet="old")    # an old ACK is heard too
    b.on_timer(b.next_timer())
    assert b.take_generated() == []


def test_no_release_before_an_ack_went_on():
    a, _ = slack()
    send_segments(a, range(2))
    assert a.on_timer(a.next_timer()) == ["pkt0"]         # silent, but nothing to copy
    assert a.take_generated() == [] and a.stats["slack_releases"] == 0
    assert a._flows[FLOW].armed is True


def test_an_ack_given_without_its_packet_is_no_template():
    a, _ = slack()
    send_segments(a, range(3))
    hear_ack(a, 1 * MSS, 0.01, packet="A")
    a.on_ack(FLOW, 2 * MSS, 0.02, window=9, packet=None)
    st = a._flows[FLOW]
    assert (st.ack_template, st.ack_value, st.ack_window) == ("A", 1000, WND)


def test_an_ack_without_a_window_gives_window_zero():
    a, _ = slack()
    send_segments(a, range(3))
    a.on_ack(FLOW, 1 * MSS, 0.01, window=None, packet="A")
    a.on_timer(a.next_timer())
    assert a.take_generated() == [GeneratedAck("A", 1000, 0, "slack")] * 3


def test_the_ack_is_copied_as_its_32_bit_number():
    a, log = slack()
    base = WRAP - MSS
    from aspan.fields import AspanFields
    for i in range(3):
        a.on_data(FLOW, (base + i * MSS) % WRAP, MSS, AspanFields(), 1.0, 2, 0.0, f"pkt{i}")
    hear_ack(a, 0, 0.01, packet="A")                           # 2**32: the ACK of the first segment, wrapped
    a.on_timer(a.next_timer())
    assert [g.ack for g in a.take_generated()] == [0] * 3
    assert log.of("slack")[0]["ack"] == 0


def test_the_ack_clock_rearms_only_for_acks_less_than_one_rto_apart():
    a, _ = slack()
    send_segments(a, range(8))
    hear_ack(a, 1 * MSS, 0.01, packet="A")
    a.on_timer(a.next_timer())
    a.take_generated()
    st = a._flows[FLOW]
    assert st.armed is False
    t = st.last_heard + a.timeout(st)                     # exactly one local RTO later: not "less than"
    hear_ack(a, 2 * MSS, t, packet="B")
    assert st.armed is False
    hear_ack(a, 3 * MSS, t + a.timeout(st) - 1e-6, packet="C")   # just under one RTO after the last: it ran
    assert st.armed is True


def test_no_release_for_an_unknown_flow_ack():
    a, _ = slack()
    v = a.on_ack(FLOW, MSS, 0.0, window=WND, packet="A")
    assert v.forward and a._flows == {} and a.take_generated() == []


@pytest.mark.parametrize("n_acks", [1, 2])
def test_held_back_dupacks_are_heard_but_not_copied(n_acks):
    a, _ = slack()
    send_segments(a, range(6))
    hear_ack(a, 1 * MSS, 0.01, packet="new")
    for k in range(n_acks):
        hear_ack(a, 1 * MSS, 0.02 + k * 0.01, packet=f"dup{k}")
    st = a._flows[FLOW]
    assert st.ack_template == "dup0" and st.last_heard == 0.01 + n_acks * 0.01


def test_the_agent_takes_the_classic_agents_arguments_by_keyword():
    from aspan.policy import SnoopConfig
    from aspan.scheme_config import SchemeConfig
    got = []
    a = SlackSnoopAgent(node="C", config=SnoopConfig(policy="every"),
                        emit=lambda now, ev, **f: got.append(ev), scheme=SchemeConfig(scheme="slack", snoop_tick=2.0))
    assert a.scheme.scheme == "slack" and a.scheme.snoop_tick == 2.0
    send_segments(a, [0])
    assert got == ["cache"]


def test_every_release_is_counted():
    a, _ = slack()
    send_segments(a, range(8))
    hear_ack(a, 1 * MSS, 0.01, packet="A")
    a.on_timer(a.next_timer())
    t = a.next_timer() - 0.05
    hear_ack(a, 2 * MSS, t, packet="B")
    hear_ack(a, 3 * MSS, t + 0.001, packet="C")                # the ACK clock ran: armed again
    a.on_timer(a.next_timer())
    assert a.stats["slack_releases"] == 2 and len(a.take_generated()) == 6


# ====================================================================================================
# SLACK (paper 003) and ACK-all Modified Snoop (paper 004), driven in virtual time.


# ---------------------------------------------------------------- SLACK
def test_silent_timeout_releases_the_last_ack_as_three_dupacks_once():
    a, log = scheme_agent(SlackSnoopAgent, "slack")
    send_segments(a, range(5))
    assert hear_ack(a, 1 * MSS, 0.01, packet="ack1000").forward
    t = a.next_timer()                                    # nothing heard after the ACK
    assert a.on_timer(t) == ["pkt1"]                      # the local retransmission goes on too
    assert a.take_generated() == [GeneratedAck("ack1000", 1000, WND, "slack")] * 3
    assert log.of("slack") == [{"flow": "10.2.1.1:5000>10.2.1.4:6000", "ack": 1000}]
    assert a.on_timer(a.next_timer()) == ["pkt1"]         # still silent: no second release
    assert a.take_generated() == [] and a.stats["slack_releases"] == 1


def test_dupacks_heard_mean_a_lossy_link_not_a_disconnection():
    a, _ = scheme_agent(SlackSnoopAgent, "slack")
    send_segments(a, range(5))
    hear_ack(a, 1 * MSS, 0.01)
    hear_ack(a, 1 * MSS, 0.02)                                 # a dupack after the timer was set
    a.on_timer(a.next_timer())
    assert a.take_generated() == []


def test_a_new_disconnection_releases_again_once_the_ack_clock_ran():
    a, _ = scheme_agent(SlackSnoopAgent, "slack")
    send_segments(a, range(8))
    hear_ack(a, 1 * MSS, 0.01, packet="ack1000")
    a.on_timer(a.next_timer())
    assert len(a.take_generated()) == 3
    t = a.next_timer() - 0.05
    hear_ack(a, 2 * MSS, t, window=60_000, packet="ack2000")     # the resend got through: one ACK
    a.on_timer(a.next_timer())                              # silent again (nothing above it arrived)
    assert a.take_generated() == []                         # same disconnection: no second release
    t = a.next_timer() - 0.05
    hear_ack(a, 3 * MSS, t, packet="ack3000")
    hear_ack(a, 4 * MSS, t + 0.001, window=60_000, packet="ack4000")   # ACKs at the normal pace again
    a.on_timer(a.next_timer())
    assert a.take_generated() == [GeneratedAck("ack4000", 4000, 60_000, "slack")] * 3


def test_held_back_acks_are_not_the_template():
    a, _ = scheme_agent(SlackSnoopAgent, "slack")
    send_segments(a, range(6))
    hear_ack(a, 2 * MSS, 0.01, packet="new")
    hear_ack(a, 2 * MSS, 0.02, packet="dup1")                  # passes (RTX_THRESH)
    hear_ack(a, 2 * MSS, 0.03, packet="dup2")                  # held back: not the last forwarded
    assert a._flows[FLOW].ack_template == "dup1"
