"""Rules of routing/forwarding/step.py that the mutation run (bench/mutation.py, docs/MUTATION.md) found unpinned.

tests/test_step_conformance.py compares two data planes that run this same step, so it cannot see a
wrong rule in the step itself; these tests drive one ForwardingStep by hand and check what it says,
counts and logs (docs/LOGS.md): the next hop and its delivery ratio handed to the agent, one ``tx``
line and count per transmission with its kind and hop index, local retransmissions routed to the
flow's destination (or dropped as ``no_route``), every drop counted and its line rate limited per
reason and second (issue 13, item 4), the hop limit, the loss model per previous hop.
"""
import random

import pytest

from aspan.agent import GeneratedAck, SnoopAgent
from aspan.events import EventWriter
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from routing.links.loss import BitError, LinkDown, NoLoss
from routing.forwarding.step import DROP_LINES_PER_S, HOP_LIMIT, DropLines, ForwardingStep, Held, cache_note

A, B, C, D = "10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"
KEY = (A, 5000, D, 6000)
FLOW = "10.2.1.1:5000>10.2.1.4:6000"


class Log(EventWriter):
    def __init__(self):
        self.events = []
        self.flushed = []

    def emit(self, now, ev, **fields):
        self.events.append((now, ev, fields))

    def flush_counts(self, now, final=False):
        self.flushed.append((now, final))

    def of(self, ev):
        return [(t, f) for t, e, f in self.events if e == ev]


class Agent(SnoopAgent):
    """A-SPAN's agent, recording what the step hands it."""

    def __init__(self, **cfg):
        super().__init__("B", SnoopConfig(**cfg))
        self.data_calls, self.ack_calls, self.due = [], [], []

    def on_data(self, flow, seq, length, fields, p_next, hop_index, now, packet):
        self.data_calls.append((flow, seq, length, p_next, hop_index, now, packet))
        return super().on_data(flow, seq, length, fields, p_next, hop_index, now, packet)

    def on_ack(self, flow, ack, now, **details):
        self.ack_calls.append((flow, ack, now, details))
        return super().on_ack(flow, ack, now, **details)

    def on_timer(self, now):
        return self.due


def step(routes=None, quality=None, **cfg):
    routes = {D: C, C: C, A: A} if routes is None else routes
    log, agent = Log(), Agent(policy=cfg.pop("policy", "every"), **cfg)
    s = ForwardingStep(B, routes.get, quality or {C: 0.8, A: 0.9}.get, agent, NoLoss(), log)
    return s, agent, log


def held(seq=0, length=1000, hop=1):
    return Held(f"pkt{seq}", KEY, FLOW, seq, length, hop)


def test_data_goes_to_the_next_hop_with_its_delivery_ratio_and_is_logged_once():
    s, agent, log = step()
    h = held(seq=7000, hop=1)
    assert s.data(2.0, h, D, AspanFields(), "fwd") == C
    assert agent.data_calls == [(KEY, 7000, 1000, 0.8, 1, 2.0, h)]
    assert log.of("tx") == [(2.0, {"flow": FLOW, "seq": 7000, "len": 1000, "kind": "fwd", "hop": 1})]
    assert s.tx == {"send": 0, "fwd": 1, "local": 0}
    assert s.data(2.5, held(seq=8000, hop=0), D, AspanFields(), "send") == C
    s.data(2.6, held(seq=9000, hop=1), D, AspanFields(), "fwd")
    assert s.tx == {"send": 1, "fwd": 2, "local": 0}


def test_data_without_a_route_is_not_sent_counted_or_given_to_the_agent():
    s, agent, log = step(routes={})
    assert s.data(1.0, held(), D, AspanFields(), "fwd") is None
    assert agent.data_calls == [] and log.events == [] and s.tx["fwd"] == 0


def test_explain_notes_why_a_segment_was_cached_and_nothing_when_it_was_not():
    s, _, _ = step(policy="adaptive")
    s.explain = True
    h = held()
    s.data(1.0, h, D, AspanFields(pkt_effort=1.0, pkt_qos=0.9), "fwd")    # 1.0 x 0.8 < 0.9: cached
    assert s.agent.data_calls[-1][-1] is h and s.agent.on_ack(KEY, 0, 1.1).forward    # the Held is cached
    assert s.agent.on_ack(KEY, 0, 1.2).retransmit == [h]
    assert s.note == ("cached here (A-SPAN): pkt_effort 1.000000 x p(next hop) 0.800000 = 0.800000 "
                      "< pkt_qos 0.900000")
    s.data(1.0, held(seq=1000, hop=0), D, AspanFields(pkt_effort=1.0, pkt_qos=0.9), "send")  # not at the sender
    assert s.note is None
    assert cache_note("every", 1.0, 0.8, 0.5) == "cached here (policy every)"
    assert cache_note("perfect", 0.25, 0.5, 0.5).startswith("cached here (A-SPAN): pkt_effort 0.250000 x ")


def test_an_unsnooped_relay_is_a_fwd_transmission_without_a_hop_index():
    s, _, log = step()
    s.relayed_unsnooped(3.0, FLOW, 42, 500)
    assert log.of("tx") == [(3.0, {"flow": FLOW, "seq": 42, "len": 500, "kind": "fwd", "hop": None})]
    s.relayed_unsnooped(3.1, FLOW, 542, 500)
    assert s.tx["fwd"] == 2


def test_local_retransmissions_go_toward_the_flows_destination_or_are_dropped_as_no_route():
    s, _, log = step(routes={D: C})
    routed, stranded = held(seq=1000, hop=2), Held("x", (A, 1, "10.9.9.9", 2), "f", 5, 300, 1)
    assert s.local(4.0, [stranded, routed]) == [(routed, C)]          # a stranded copy stops no other
    assert log.of("tx") == [(4.0, {"flow": FLOW, "seq": 1000, "len": 1000, "kind": "local", "hop": 2})]
    assert s.tx["local"] == 1 and s.drops["no_route"] == 1
    assert s.local(4.1, [routed, routed]) == [(routed, C), (routed, C)] and s.tx["local"] == 3
    assert log.of("drop") == [(4.0, {"reason": "no_route", "ptype": "tcp", "flow": "f", "seq": 5, "len": 300})]


def test_the_agents_timers_are_resent_through_local():
    s, agent, log = step()
    agent.due = [held(seq=3000, hop=1)]
    assert s.timer(6.0) == [(agent.due[0], C)] and s.tx["local"] == 1
    assert log.of("tx")[-1][0] == 6.0
    assert s.next_timer() is None


def test_an_ack_reaches_the_agent_with_its_details_only_when_the_agent_reads_them():
    s, agent, _ = step()
    s.ack(1.0, KEY, 500, 8000, (1, 2), "ackpkt")
    assert agent.ack_calls == [(KEY, 500, 1.0, {})]
    s.ack_details = True
    s.ack(1.5, KEY, 600, 8000, (1, 2), "ackpkt")
    assert agent.ack_calls[-1] == (KEY, 600, 1.5, {"window": 8000, "snack": (1, 2), "packet": "ackpkt"})


def test_a_generated_ack_is_counted_and_logged():
    s, _, log = step()
    assert s.generated() == []
    s.ack_sent(2.0, GeneratedAck("tpl", 4000, 65535, "ack_all"), FLOW)
    s.ack_sent(2.1, GeneratedAck("tpl", 5000, 65535, "slack"), FLOW)
    assert s.acks_generated == 2
    assert log.of("ack_gen")[0] == (2.0, {"flow": FLOW, "ack": 4000, "window": 65535, "reason": "ack_all"})


def test_the_hop_limit_is_reached_at_hop_limit_transmissions():
    s, _, _ = step()
    assert HOP_LIMIT == 64
    assert not s.expired(HOP_LIMIT - 1) and s.expired(HOP_LIMIT) and s.expired(HOP_LIMIT + 1)
    low = ForwardingStep(B, {}.get, {}.get, Agent(), NoLoss(), Log(), hop_limit=3)
    assert not low.expired(2) and low.expired(3)


def test_a_link_with_its_own_loss_model_uses_it_and_the_others_use_the_nodes():
    s, _, _ = step()
    s.set_link_loss({A: LinkDown([[0.0, 10.0]])})
    assert s.lost_from(5.0, 100, A) is True
    assert s.lost_from(5.0, 100, C) is False and s.lost_from(5.0, 100, None) is False
    assert s.lost_from(20.0, 100, A) is False
    s.set_link_loss({A: BitError(1.0, random.Random(1))})           # loses every packet of size > 0
    assert s.lost_from(1.0, 100, A) is True and s.lost_from(1.0, 0, A) is False


def test_every_drop_is_counted_its_reason_kept_and_its_line_rate_limited():
    s, _, log = step()
    for k in range(DROP_LINES_PER_S + 5):
        s.drop(10.0 + k / 1000, "malformed", "udp")
    s.drop(10.5, "ttl")
    assert s.drops["malformed"] == DROP_LINES_PER_S + 5 and s.drops["ttl"] == 1 and s.last_drop == "ttl"
    assert len(log.of("drop")) == DROP_LINES_PER_S + 1
    assert log.of("drop")[0] == (10.0, {"reason": "malformed", "ptype": "udp"})
    s.flush_drops(10.6)                                   # malformed's second is not over
    assert len(log.of("drop")) == DROP_LINES_PER_S + 1 and log.flushed == [(10.6, False)]
    s.flush_drops(11.0)                                   # now it is: one line with the count
    assert log.of("drop")[-1] == (11.0, {"reason": "malformed", "count": 5, "since": 10.0})
    s.flush_drops(12.0, final=True)
    assert len(log.of("drop")) == DROP_LINES_PER_S + 2 and log.flushed[-1] == (12.0, True)
    for k in range(DROP_LINES_PER_S + 2):                 # a second's worth at 20.0, flushed within it
        s.drop(20.0 + k / 1000, "queue")
    s.flush_drops(20.5, final=True)
    assert log.of("drop")[-1] == (20.5, {"reason": "queue", "count": 2, "since": 20.0})


def test_drop_lines_count_per_kind_and_second_and_write_the_count_when_the_next_second_starts():
    lines = []
    d = DropLines(lambda now, kind, count, since: lines.append((now, kind, count, since)))
    assert all(d.one_line(1.0, "x") for _ in range(DROP_LINES_PER_S))
    assert not d.one_line(1.5, "x") and not d.one_line(1.9, "x")
    assert d.one_line(1.9, "y")                           # another kind has its own budget
    assert d.one_line(2.0, "x")                           # a new second: a line again ...
    assert lines == [(2.0, "x", 2, 1.0)]                  # ... and the last one's count written
    assert all(d.one_line(2.5, "x") for _ in range(DROP_LINES_PER_S - 1))
    assert not d.one_line(2.99, "x")
    d.flush(2.999, final=False)                           # its second is not over: nothing
    assert lines == [(2.0, "x", 2, 1.0)]
    d.flush(3.0, final=False)
    assert lines[-1] == (3.0, "x", 1, 2.0)
    d.flush(3.5, final=True)                              # nothing left to write
    assert len(lines) == 2


def test_a_drop_count_line_is_written_once_and_its_since_rounded():
    lines = []
    d = DropLines(lambda now, kind, count, since: lines.append((now, kind, count, since)))
    t0 = 1.2500004
    for _ in range(DROP_LINES_PER_S + 3):
        d.one_line(t0, "x")
    d.flush(1.5)                                          # final by default: within the second too
    d.flush(1.6)
    assert lines == [(1.5, "x", 3, 1.25)]
    assert isinstance(lines[0][2], int)
    d.one_line(t0 + 0.5, "x")                             # its second goes on, counting from zero
    d.one_line(t0 + 0.6, "x")
    d.flush(7.0)
    assert lines[-1] == (7.0, "x", 2, 1.25)


@pytest.mark.parametrize("reason", ["loss", "queue", "malformed", "no_route", "suppressed", "ttl", "stranger",
                                    "forged", "replay", "mac_retry", "rts_retry", "refused"])
def test_every_documented_drop_reason_has_a_counter(reason):
    s, _, _ = step()
    s.drop(1.0, reason)
    assert s.drops[reason] == 1 and sum(s.drops.values()) == 1


def test_a_new_step_explains_nothing_has_no_drop_and_uses_the_nodes_loss_for_every_link():
    s, _, _ = step()
    assert (s.explain, s.note, s.last_drop) == (False, None, "")
    s.data(1.0, held(), D, AspanFields(pkt_effort=1.0, pkt_qos=0.9), "fwd")      # cached, but no capture
    assert s.note is None
    assert s.lost_from(1.0, 100, A) is False                                      # no link model: NoLoss


def test_a_drops_details_reach_its_log_line():
    s, _, log = step()
    s.drop(1.0, "malformed", detail="short header", size=3)
    s.drop(1.1, "suppressed", "tcp", FLOW, None, 4000, 0)
    assert log.of("drop") == [(1.0, {"reason": "malformed", "detail": "short header", "size": 3}),
                              (1.1, {"reason": "suppressed", "ptype": "tcp", "flow": FLOW, "ack": 4000, "len": 0})]
