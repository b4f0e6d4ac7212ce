"""aspan/snack.py's rules one by one (issue 30, mutation run): SNACK-Snoop, paper 002 Sec. III-B.

"Transmissions from FH to MH": a loss the receiver reports and this node caches is counted per
report and resent locally when its count reaches ``snack_threshold``, once (the record then stays
negative); the entries this node recovers are taken off the ACK, the others (never cached here, or
over the local limit) stay on it for upstream; a duplicate ACK whose missing segment is cached here
is held back unless entries for upstream remain.  ACKs without entries follow classic Snoop.
"""
from __future__ import annotations

import pytest
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.snack import SnackFlow, SnackSnoopAgent


NAME = "10.2.1.1:5000>10.2.1.4:6000"


WRAP = 1 << 32


def snoop(**scheme):
    events = []
    a = SnackSnoopAgent("C", SnoopConfig(policy="every"),
                        lambda now, ev, **f: events.append((now, ev, f)), SchemeConfig(scheme="snack", **scheme))
    return a, events


def of(events, kind):
    return [f for _, e, f in events if e == kind]


def v3(v):
    return v.forward, v.retransmit, v.snack


def test_the_agent_reads_the_snack_entries_and_makes_no_acks():
    assert SnackSnoopAgent.reads_ack_details is True and SnackSnoopAgent.generates_acks is False
    a, _ = snoop()
    feed(a, [0])
    assert isinstance(a._flows[FLOW], SnackFlow) and a._flows[FLOW].reports == {}


def test_an_unknown_flow_or_an_old_ack_passes_with_its_entries_untouched():
    a, _ = snoop()
    assert v3(a.on_ack(FLOW, MSS, 0.0, snack=(MSS,))) == (True, [], None)
    feed(a, range(4))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    st = a._flows[FLOW]
    assert v3(a.on_ack(FLOW, MSS, 0.06, snack=(2000, 3000))) == (True, [], None)   # overtaken: as it came
    assert st.reports == {} and st.last_ack == 2000 and st.last_heard == 0.06


def test_each_report_counts_and_the_threshold_th_resends_once_with_its_event():
    a, events = snoop(snack_threshold=3)
    feed(a, range(5))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    st = a._flows[FLOW]
    assert v3(a.on_ack(FLOW, 2 * MSS, 0.06, snack=(3000,))) == (False, [], ())
    assert st.reports == {3000: 1}
    assert v3(a.on_ack(FLOW, 2 * MSS, 0.07, snack=(3000,))) == (False, [], ())
    assert st.reports == {3000: 2}
    assert v3(a.on_ack(FLOW, 2 * MSS, 0.08, snack=(3000,))) == (False, ["pkt3"], ())
    assert st.reports == {3000: -1}
    assert [(t, f) for t, e, f in events if e == "snack_rtx"] == [(0.08, {"flow": NAME, "seq": 3000})]
    e = st.meta[3000]
    assert (e.num_rxmit, e.rtx_time) == (1, 0.08) and a.stats["local_retransmissions"] == 1
    assert v3(a.on_ack(FLOW, 2 * MSS, 0.09, snack=(3000,))) == (False, [], ())      # stays negative
    assert st.reports == {3000: -1} and a.stats["local_retransmissions"] == 1


def test_a_threshold_of_one_resends_at_the_first_report():
    a, _ = snoop(snack_threshold=1)
    feed(a, range(4))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    assert v3(a.on_ack(FLOW, 2 * MSS, 0.06, snack=(2000, 3000))) == (False, ["pkt2", "pkt3"], ())


def test_entries_below_the_ack_are_stale_and_dropped_from_the_ack():
    a, _ = snoop()
    feed(a, range(4))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    v = a.on_ack(FLOW, 2 * MSS, 0.06, snack=(1000, 1999, 2000))
    assert v.snack == () and a._flows[FLOW].reports == {2000: 1}


def test_entries_not_cached_here_stay_on_the_ack_as_they_came():
    a, _ = snoop()
    feed(a, [0, 1, 3])
    a.on_ack(FLOW, 2 * MSS, 0.05)
    v = a.on_ack(FLOW, 2 * MSS, 0.06, snack=(2500, 2000, 3000))
    assert v.snack == (2500, 2000) and a._flows[FLOW].reports == {3000: 1}


def test_an_entry_over_the_local_limit_stays_on_the_ack_for_upstream():
    a, events = snoop(max_local_rxmit=1)
    feed(a, range(4))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    assert a.on_timer(a.next_timer()) == ["pkt2"]         # its one local retransmission
    st = a._flows[FLOW]
    v = a.on_ack(FLOW, 2 * MSS, 1.3, snack=(2000,))
    assert v3(v) == (False, [], ())                       # first report: counted, held back here
    v = a.on_ack(FLOW, 2 * MSS, 1.31, snack=(2000,))
    assert v3(v) == (True, [], (2000,))                   # second: may not resend, upstream may
    assert st.reports == {2000: 1} and of(events, "snack_rtx") == []


def test_a_new_ack_frees_forgets_the_reports_below_it_and_keeps_those_above():
    a, _ = snoop()
    feed(a, range(6))
    a.on_ack(FLOW, 1 * MSS, 0.05)
    a.on_ack(FLOW, 1 * MSS, 0.06, snack=(1000, 2000, 4000))
    st = a._flows[FLOW]
    assert st.reports == {1000: 1, 2000: 1, 4000: 1}
    v = a.on_ack(FLOW, 2 * MSS, 0.07, snack=(4000,))
    assert v3(v) == (True, ["pkt4"], ())                  # a new ACK is never held back
    assert st.reports == {2000: 1, 4000: -1}
    assert st.last_ack == 2000 and a.cache_segments == 4 and a.stats["freed"] == 2
    assert a.stats["hits"] == 1                           # the earlier dupack only
    assert a.next_timer() == pytest.approx(0.07 + a.timeout(st))   # restarted by the resend (snoop_rxmit)


def test_a_dupack_for_a_segment_cached_here_is_a_hit_and_held_back_unless_entries_remain():
    a, events = snoop()
    feed(a, [0, 1, 2, 4])
    a.on_ack(FLOW, 2 * MSS, 0.05)
    assert v3(a.on_ack(FLOW, 2 * MSS, 0.06, snack=(2000,))) == (False, [], ())
    assert a.stats["hits"] == 1 and a.stats["suppressed"] == 1
    assert of(events, "hit") == [{"flow": NAME, "seq": 2000}]
    assert v3(a.on_ack(FLOW, 2 * MSS, 0.07, snack=(3000,))) == (True, [], (3000,))
    assert a.stats["hits"] == 2 and a.stats["suppressed"] == 1


def test_a_dupack_for_a_segment_not_cached_here_goes_on_and_is_no_hit():
    a, events = snoop()
    feed(a, [0, 1, 3])
    a.on_ack(FLOW, 2 * MSS, 0.05)
    assert v3(a.on_ack(FLOW, 2 * MSS, 0.06, snack=(3000,))) == (True, [], ())
    assert a.stats["hits"] == 0 and a.stats["suppressed"] == 0 and of(events, "hit") == []


def test_entries_are_unwrapped_against_the_ack_across_the_wrap():
    a, events = snoop(snack_threshold=1)
    base = WRAP - 2 * MSS
    for i in range(4):
        a.on_data(FLOW, (base + i * MSS) % WRAP, MSS, AspanFields(), 1.0, 2, 0.0, f"pkt{i}")
    a.on_ack(FLOW, (base + MSS) % WRAP, 0.05)
    v = a.on_ack(FLOW, (base + MSS) % WRAP, 0.06, snack=((base + MSS) % WRAP, MSS))
    assert v3(v) == (False, ["pkt1", "pkt3"], ())
    assert [f["seq"] for f in of(events, "snack_rtx")] == [(base + MSS) % WRAP, MSS]
    assert of(events, "hit")[-1]["seq"] == (base + MSS) % WRAP


def test_an_ack_with_entries_keeps_the_flow_alive():
    a, _ = snoop()
    feed(a, range(3))
    a.on_ack(FLOW, MSS, 0.05)
    idle = a.config.flow_idle_s
    a.on_ack(FLOW, MSS, idle - 1.0, snack=(MSS,))         # the receiver still reports its loss
    assert a.expire_idle(idle + 0.5) == 0 and FLOW in a._flows
    assert a._flows[FLOW].last_heard == idle - 1.0


def test_a_hit_is_logged_at_its_time_and_every_held_back_ack_is_counted():
    a, events = snoop()
    feed(a, range(4))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    a.on_ack(FLOW, 2 * MSS, 0.06, snack=(3000,))
    a.on_ack(FLOW, 2 * MSS, 0.07, snack=(3000,))
    assert [(t, f["seq"]) for t, e, f in events if e == "hit"] == [(0.06, 2000), (0.07, 2000)]
    assert a.stats["suppressed"] == 2


def test_an_entry_resent_already_does_not_stop_the_entries_after_it():
    a, _ = snoop()
    feed(a, range(5))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    a.on_ack(FLOW, 2 * MSS, 0.06, snack=(2000,))
    assert a.on_ack(FLOW, 2 * MSS, 0.07, snack=(2000,)).retransmit == ["pkt2"]
    a.on_ack(FLOW, 2 * MSS, 0.08, snack=(2000, 4000))
    assert a.on_ack(FLOW, 2 * MSS, 0.09, snack=(2000, 4000)).retransmit == ["pkt4"]


def test_an_entry_over_the_local_limit_does_not_stop_the_entries_after_it():
    a, _ = snoop(max_local_rxmit=1)
    feed(a, range(5))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    assert a.on_timer(a.next_timer()) == ["pkt2"]
    a.on_ack(FLOW, 2 * MSS, 1.3, snack=(2000, 3000))
    v = a.on_ack(FLOW, 2 * MSS, 1.31, snack=(2000, 3000))
    assert v3(v) == (True, ["pkt3"], (2000,))


# ====================================================================================================
# SNACK-NS (paper 002): the receiver's SNACK option, SNACK-Snoop and SNACK-TCP, in virtual time.


FLOW = ("10.2.1.1", 5000, "10.2.1.4", 6000)


MSS = 1000


# ---------------------------------------------------------------- SNACK-Snoop (the snoop node)
def snack_snoop():
    events = []
    a = SnackSnoopAgent("C", SnoopConfig(policy="every"),
                        lambda now, ev, **f: events.append((ev, f)), SchemeConfig(scheme="snack"))
    return a, events


def feed(a, idx, t=0.0):
    for i in idx:
        a.on_data(FLOW, i * MSS, MSS, AspanFields(), 1.0, 2, t, f"pkt{i}")


def test_cached_losses_are_resent_together_on_the_second_report_and_taken_off():
    a, events = snack_snoop()
    feed(a, range(8))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    first = a.on_ack(FLOW, 2 * MSS, 0.06, snack=(2000, 4000, 5000))
    assert (first.forward, first.retransmit, first.snack) == (False, [], ())
    second = a.on_ack(FLOW, 2 * MSS, 0.07, snack=(2000, 4000, 5000))
    assert (second.forward, second.retransmit, second.snack) == (False, ["pkt2", "pkt4", "pkt5"], ())
    third = a.on_ack(FLOW, 2 * MSS, 0.08, snack=(2000, 4000, 5000))
    assert (third.forward, third.retransmit) == (False, [])      # records stay negative
    assert [f["seq"] for e, f in events if e == "snack_rtx"] == [2000, 4000, 5000]
    assert a.stats["local_retransmissions"] == 3


def test_losses_not_cached_here_stay_on_the_ack_for_upstream():
    a, _ = snack_snoop()
    feed(a, [0, 1, 3, 4])                        # segment 2 never reached this node
    a.on_ack(FLOW, 2 * MSS, 0.05)
    v = a.on_ack(FLOW, 2 * MSS, 0.06, snack=(2000, 3000))
    assert (v.forward, v.retransmit, v.snack) == (True, [], (2000,))
    v = a.on_ack(FLOW, 2 * MSS, 0.07, snack=(2000, 3000))
    assert (v.forward, v.retransmit, v.snack) == (True, ["pkt3"], (2000,))


def test_dupack_for_a_cached_loss_goes_on_when_upstream_entries_remain():
    a, _ = snack_snoop()
    feed(a, [0, 1, 2, 4])                        # 3 lost upstream of this node; 2 lost below it
    a.on_ack(FLOW, 2 * MSS, 0.05)
    v = a.on_ack(FLOW, 2 * MSS, 0.06, snack=(2000, 3000))
    assert (v.forward, v.snack) == (True, (3000,))


def test_new_ack_with_snack_frees_and_counts():
    a, _ = snack_snoop()
    feed(a, range(6))
    a.on_ack(FLOW, 1 * MSS, 0.05, snack=(1000, 3000))
    v = a.on_ack(FLOW, 2 * MSS, 0.06, snack=(3000,))        # new ACK: 1000 arrived
    assert (v.forward, v.retransmit, v.snack) == (True, ["pkt3"], ())
    assert a.cache_segments == 4 and 1000 not in a._flows[FLOW].reports


def test_ack_without_snack_follows_classic_snoop():
    a, _ = snack_snoop()
    feed(a, range(6))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    got = [(v.forward, v.retransmit) for v in (a.on_ack(FLOW, 2 * MSS, 0.06) for _ in range(2))]
    assert got == [(True, []), (False, ["pkt2"])]
