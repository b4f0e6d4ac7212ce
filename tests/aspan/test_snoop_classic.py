"""aspan/snoop_classic.py's rules one by one, as ns-2's ``tcp/snoop.cc`` writes them (issue 30, mutation run).

Each test names the ns-2 function whose rule it pins (``snoop_insert``, ``snoop_cleanbufs_``,
``snoop_ack``, ``snoop_rxmit``, ``snoop_rtt``, ``SnoopRxmitHandler::handle``, ``timeout()``) and
checks it at its edges: a segment ending exactly at the ACK, the dupack that crosses RTX_THRESH,
the last local retransmission allowed, a timer due exactly now.  Sequence numbers are in bytes
(the module's docstring says how they map to ns-2's packet numbers); defaults are ns-2's
(SchemeConfig: srtt 0.1 s, rttvar 0.25 s, g 0.125, SnoopTick 0.1 s, RTX_THRESH 1).
"""
from __future__ import annotations

import pytest
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.snoop_classic import ClassicSnoopAgent, MultihopSnoopAgent
from tests.cores import Log
from aspan.schemes import make_agent


NAME = "10.2.1.1:5000>10.2.1.4:6000"


WRAP = 1 << 32


def flow(a):
    return a._flows[FLOW]


def rto0():
    """ns-2's first local RTO: max(srtt + 4 rttvar, SnoopTick) with the defaults."""
    return 0.1 + 4 * 0.25


# ---------------------------------------------------------------- snoop_insert
def test_in_sequence_data_is_cached_in_order_and_only_the_first_segment_arms_the_timer():
    a, log = agent()
    feed(a, [0], t=0.0)
    feed(a, [1], t=0.5)                                   # in sequence: no SNOOP_TAIL, the timer runs on
    st = flow(a)
    assert st.cache.seqs == [0, 1000] and st.last_seen == 1000 and st.high_end == 2000
    e = st.meta[1000]
    assert (e.snd_time, e.num_rxmit, e.sender_rxmit, e.rtx_time) == (0.5, 0, False, None)
    assert a.next_timer() == pytest.approx(rto0())
    assert st.timer_armed == 0.0
    assert a.stats["cached"] == 2 and a.cache_segments == 2 and a.cache_bytes == 2000
    assert log.of("cache") == [{"segments": 1, "bytes": 1000}, {"segments": 2, "bytes": 2000}]


def test_a_reordered_segment_is_inserted_in_place_and_restarts_the_timer():
    a, _ = agent()
    feed(a, [0, 2, 3], t=0.0)
    feed(a, [1], t=0.3)                                   # below lastSeen_, never cached: reordered
    st = flow(a)
    assert st.cache.seqs == [0, 1000, 2000, 3000]
    assert st.last_seen == 3000                           # lastSeen_ stays the highest
    assert not st.meta[1000].sender_rxmit                 # not the lowest cached: not marked
    assert st.exp_from == 0                               # expNextAck_ = buftail_
    assert a.next_timer() == pytest.approx(0.3 + rto0())  # SNOOP_TAIL: the timer restarts
    assert st.timer_armed == 0.3


def test_a_reordered_segment_that_becomes_the_lowest_is_marked_as_a_sender_retransmission():
    a, _ = agent()
    feed(a, [0, 1, 3, 4])
    a.on_ack(FLOW, 2 * MSS, 0.0)                          # frees 0 and 1 (no sample: rtt 0)
    feed(a, [2], t=0.2)                                   # the sender's retransmission of a hole
    st = flow(a)
    assert st.cache.seqs == [2000, 3000, 4000]
    assert st.meta[2000].sender_rxmit and st.meta[2000].num_rxmit == 0
    assert st.exp_from == 2000
    assert a.next_timer() == pytest.approx(0.2 + rto0())
    # its dupacks are the sender's business: they pass (snoop_ack: senderRxmit)
    assert verdicts(a, 2 * MSS, 3, t=0.3) == [(True, [])] * 3


def test_a_segment_cached_before_is_a_sender_retransmission():
    a, _ = agent()
    feed(a, range(3))
    a.on_ack(FLOW, 1 * MSS, 0.05)
    verdicts(a, 1 * MSS, 2, t=0.1)                        # the second dupack resends segment 1 locally
    st = flow(a)
    assert st.meta[1000].num_rxmit == 1 and st.meta[1000].rtx_time == 0.1
    feed(a, [1], t=0.4)                                   # then the sender resends it too
    e = st.meta[1000]
    assert (e.num_rxmit, e.sender_rxmit, e.snd_time, e.rtx_time) == (0, True, 0.4, None)
    assert a.cache_segments == 2 and a.cache_bytes == 2000 and a.stats["cached"] == 3
    assert a.next_timer() == pytest.approx(0.4 + a.timeout(st))


def test_a_longer_copy_replaces_a_cached_segment_and_a_shorter_one_does_not():
    a, _ = agent()
    a.on_data(FLOW, 0, 1, AspanFields(), 1.0, 2, 0.0, "probe")          # a one-byte window probe
    a.on_data(FLOW, 0, MSS, AspanFields(), 1.0, 2, 0.1, "full")         # then the full segment
    st = flow(a)
    assert st.cache.entries[0] == (MSS, "full") and a.cache_bytes == MSS and a.cache_segments == 1
    a.on_data(FLOW, 0, 10, AspanFields(), 1.0, 2, 0.2, "short")
    assert st.cache.entries[0] == (MSS, "full") and a.cache_bytes == MSS
    assert st.high_end == MSS


def test_data_ending_exactly_at_the_last_ack_is_not_cached_and_data_past_it_is():
    a, _ = agent()
    feed(a, range(2))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    assert a.on_data(FLOW, 1000, MSS, AspanFields(), 1.0, 2, 0.1, "old") is False   # ends at the ACK
    assert a.on_data(FLOW, 1500, MSS, AspanFields(), 1.0, 2, 0.1, "part") is True   # half new
    assert flow(a).cache.seqs == [1500]


def test_a_full_flow_cache_forwards_uncached_counts_and_still_tracks_the_highest_segment():
    a, log = agent(max_cached_segments=2)
    assert feed(a, [0, 1, 2, 4]) == [True, True, False, False]
    st = flow(a)
    assert st.last_seen == 4000 and a.stats["cache_full"] == 2 and a.stats["cached"] == 2
    assert log.of("cache_full") == [{"flow": NAME, "seq": 2000}, {"flow": NAME, "seq": 4000}]
    assert feed(a, [3]) == [False]                        # below lastSeen_: lastSeen_ stays
    assert st.last_seen == 4000
    assert feed(a, [1], t=0.2) == [True]                  # cached before: a full cache takes it again
    assert st.meta[1000].sender_rxmit


def test_the_node_byte_bound_refuses_a_segment_too():
    from aspan.agent import SEGMENT_COST
    log = Log()
    a = ClassicSnoopAgent("C", SnoopConfig(policy="every", cache_bytes=2 * (MSS + SEGMENT_COST)), log,
                          SchemeConfig(scheme="classic"))
    assert feed(a, range(3)) == [True, True, False]
    assert a.stats["cache_full"] == 1


def test_the_header_is_rewritten_as_cached_or_not():
    a, _ = agent(max_cached_segments=1)
    f0, f1 = AspanFields(), AspanFields()
    a.on_data(FLOW, 0, MSS, f0, 0.5, 2, 0.0, "p0")        # cached: effort restarts at p(next)
    a.on_data(FLOW, MSS, MSS, f1, 0.5, 2, 0.0, "p1")      # cache full: effort x p(next)
    assert (f0.snoop_count, f0.pkt_effort) == (1, pytest.approx(0.5, abs=1e-3))
    assert (f1.snoop_count, f1.pkt_effort) == (0, pytest.approx(0.5, abs=1e-3))
    f2 = AspanFields(pkt_effort=0.5)
    a2, _ = agent(policy="none")
    assert a2.on_data(FLOW, 0, MSS, f2, 0.5, 2, 0.0, "p") is False
    assert (f2.snoop_count, f2.pkt_effort) == (0, pytest.approx(0.25, abs=1e-3))


def test_a_refused_flow_is_forwarded_unsnooped():
    log = Log()
    a = ClassicSnoopAgent("C", SnoopConfig(policy="every", max_flows=1), log, SchemeConfig(scheme="classic"))
    assert a.on_data(FLOW, 0, MSS, AspanFields(), 1.0, 2, 0.0, "p") is True
    other = ("10.2.1.9", 1, "10.2.1.4", 6000)
    f = AspanFields()
    assert a.on_data(other, 0, MSS, f, 0.5, 2, 0.0, "q") is False
    assert f.snoop_count == 0 and f.pkt_effort == pytest.approx(0.5, abs=1e-3)
    assert a.stats["flows_refused"] == 1 and other not in a._flows
    assert a.on_ack(other, MSS, 0.1).forward


def test_sequence_numbers_wrap_at_two_to_the_32():
    a, log = agent()
    base = WRAP - 2 * MSS
    for i in range(4):
        a.on_data(FLOW, (base + i * MSS) % WRAP, MSS, AspanFields(), 1.0, 2, 0.0, f"pkt{i}")
    st = flow(a)
    assert st.cache.seqs == [base + i * MSS for i in range(4)]
    a.on_ack(FLOW, (base + 3 * MSS) % WRAP, 0.05)          # 1000 after the wrap
    assert st.cache.seqs == [base + 3 * MSS] and st.last_ack == WRAP + MSS
    got = verdicts(a, MSS, 2, t=0.1)
    assert got == [(True, []), (False, ["pkt3"])]
    assert [f["seq"] for f in log.of("hit")] == [MSS, MSS]


# ---------------------------------------------------------------- snoop_ack case 3, snoop_cleanbufs_
def test_a_new_ack_frees_whole_segments_only_and_counts_them():
    a, log = agent()
    feed(a, range(4))
    v = a.on_ack(FLOW, 2 * MSS + 500, 0.05)
    assert (v.forward, v.retransmit, v.snack) == (True, [], None)
    st = flow(a)
    assert st.cache.seqs == [2000, 3000] and st.last_ack == 2500
    assert a.stats["freed"] == 2 and a.cache_segments == 2 and a.cache_bytes == 2000
    assert log.of("cache")[-1] == {"segments": 2, "bytes": 2000}
    assert set(st.meta) == {2000, 3000}
    n = len(log.of("cache"))
    a.on_ack(FLOW, 2 * MSS + 900, 0.06)                   # a new ACK that frees nothing: no cache event
    assert len(log.of("cache")) == n and a.stats["freed"] == 2
    a.on_ack(FLOW, 3 * MSS, 0.07)                         # ends exactly at the ACK: freed
    assert st.cache.seqs == [3000] and a.stats["freed"] == 3


def test_a_new_ack_restarts_the_timer_or_stops_it_when_nothing_is_left():
    a, _ = agent()
    feed(a, range(2))
    a.on_ack(FLOW, MSS, 0.5)                              # armed before the sample (snoop_cleanbufs_)
    st = flow(a)
    assert a.next_timer() == pytest.approx(0.5 + rto0()) and st.timer_armed == 0.5
    a.on_ack(FLOW, 2 * MSS, 0.6)
    assert a.next_timer() is None


def test_the_new_ack_resets_the_dupack_state():
    a, _ = agent()
    feed(a, range(6))
    a.on_ack(FLOW, MSS, 0.05)
    verdicts(a, MSS, 2)                                   # expecting 5 - 2 = 3 more
    st = flow(a)
    assert st.exp_dupacks == 3 and st.exp_from == 1001
    a.on_ack(FLOW, 3 * MSS, 0.2)
    assert (st.exp_dupacks, st.exp_from, st.last_ack) == (0, 3000, 3000)
    a.on_ack(FLOW, 6 * MSS, 0.3)                          # all freed: expNextAck_ is the ACK
    assert (st.exp_dupacks, st.exp_from) == (0, 6000)


def test_an_old_ack_passes_untouched():
    a, _ = agent()
    feed(a, range(4))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    st = flow(a)
    before = (st.last_ack, list(st.cache.seqs), st.srtt, st.timer, dict(a.stats))
    v = a.on_ack(FLOW, MSS, 0.5)
    assert (v.forward, v.retransmit) == (True, [])
    assert (st.last_ack, list(st.cache.seqs), st.srtt, st.timer, dict(a.stats)) == before
    assert st.last_heard == 0.5 and st.last_active == 0.5


def test_an_ack_of_an_unknown_flow_passes_and_makes_no_state():
    a, _ = agent()
    v = a.on_ack(FLOW, MSS, 0.0)
    assert (v.forward, v.retransmit) == (True, []) and a._flows == {}


def test_the_rtt_sample_is_from_the_highest_freed_segment_not_the_latest_sent():
    a, _ = agent()
    feed(a, [0, 1, 2, 3], t=0.0)
    a.on_ack(FLOW, MSS, 0.0)
    verdicts(a, MSS, 2, t=0.4)                            # segment 1 resent locally at 0.4
    a.on_ack(FLOW, 3 * MSS, 0.5)                          # frees 1 (sent 0.4) and 2 (sent 0.0)
    assert flow(a).srtt == pytest.approx(0.125 * 0.1 + 0.875 * 0.5)


@pytest.mark.parametrize("rttvar0", [0.25, 0.0])
def test_snoop_rtt_weights_the_new_sample_by_one_minus_g_and_starts_rttvar_from_the_first_delta(rttvar0):
    a, _ = agent(initial_rttvar=rttvar0, rtt_gain=0.25)
    feed(a, [0], t=0.0)
    a.on_ack(FLOW, MSS, 0.3)
    st = flow(a)
    srtt = 0.25 * 0.1 + 0.75 * 0.3
    assert st.srtt == pytest.approx(srtt)
    delta = abs(0.3 - srtt)
    assert st.rttvar == pytest.approx(0.25 * delta + 0.75 * rttvar0 if rttvar0 else delta)


def test_a_sample_of_zero_is_not_taken():
    a, _ = agent()
    feed(a, [0], t=0.2)
    a.on_ack(FLOW, MSS, 0.2)
    st = flow(a)
    assert (st.srtt, st.rttvar, st.min_rtt) == (0.1, 0.25, None)


def test_timeout_is_srtt_plus_four_rttvar_floored_at_the_snoop_tick():
    a, _ = agent(initial_srtt=0.3, initial_rttvar=0.05, snoop_tick=0.4)
    st = a._new_flow(FLOW)
    assert a.timeout(st) == pytest.approx(0.5)
    a2, _ = agent(initial_srtt=0.1, initial_rttvar=0.05, snoop_tick=0.4)
    assert a2.timeout(a2._new_flow(FLOW)) == pytest.approx(0.4)


# ---------------------------------------------------------------- snoop_ack case 2 (the dupack rule)
def test_a_dupack_below_the_lowest_cached_segment_passes_and_is_no_hit():
    a, log = agent()
    feed(a, [0, 1, 3])
    a.on_ack(FLOW, 2 * MSS, 0.05)                         # the receiver waits for 2; 3 is cached
    assert verdicts(a, 2 * MSS, 3) == [(True, [])] * 3
    assert a.stats["hits"] == 0 and log.of("hit") == [] and flow(a).thresh == 0


@pytest.mark.parametrize("thresh", [0, 1, 2])
def test_rtx_thresh_unexpected_dupacks_pass_then_the_next_resends_and_sets_the_expected_count(thresh):
    a, log = agent(rtx_thresh=thresh)
    feed(a, range(6))
    a.on_ack(FLOW, MSS, 0.05)                             # 1..5 cached: five from the lost one up
    assert verdicts(a, MSS, thresh + 1) == [(True, [])] * thresh + [(False, ["pkt1"])]
    st = flow(a)
    assert st.exp_dupacks == 5 - (thresh + 1) and st.exp_from == 1001 and st.thresh == 0
    assert a.stats["hits"] == thresh + 1 and log.of("hit") == [{"flow": NAME, "seq": 1000}] * (thresh + 1)


def test_the_rtx_thresh_counter_outlives_a_new_ack_as_ns2s_static_counter_does():
    a, _ = agent()
    feed(a, range(6))
    a.on_ack(FLOW, MSS, 0.05)
    assert verdicts(a, MSS, 1) == [(True, [])]            # counted: 1 of RTX_THRESH
    a.on_ack(FLOW, 2 * MSS, 0.1)
    assert verdicts(a, 2 * MSS, 1) == [(False, ["pkt2"])]  # the counter was at the threshold already


def test_the_rtx_thresh_counter_is_per_flow():
    a, _ = agent()
    other = ("10.2.1.9", 7, "10.2.1.4", 6000)
    for f in (FLOW, other):
        for i in range(3):
            a.on_data(f, i * MSS, MSS, AspanFields(), 1.0, 2, 0.0, (f[0], i))
        a.on_ack(f, MSS, 0.05)
    assert a.on_ack(FLOW, MSS, 0.1).forward               # each flow's first dupack passes
    assert a.on_ack(other, MSS, 0.1).forward
    assert a.on_ack(other, MSS, 0.11).retransmit == [("10.2.1.9", 1)]


def test_the_expected_dupacks_are_held_back_one_by_one_and_counted():
    a, _ = agent()
    feed(a, range(6))
    a.on_ack(FLOW, MSS, 0.05)
    verdicts(a, MSS, 2)
    st = flow(a)
    assert st.exp_dupacks == 3 and a.stats["suppressed"] == 1
    assert verdicts(a, MSS, 1) == [(False, [])]
    assert st.exp_dupacks == 2 and a.stats["suppressed"] == 2 and a.stats["local_retransmissions"] == 1


def test_a_dupack_for_a_segment_resent_once_already_passes_and_expects_the_rest():
    a, _ = agent()
    feed(a, range(5))
    a.on_ack(FLOW, MSS, 0.05)
    assert a.on_timer(a.next_timer()) == ["pkt1"]         # the timer resent it
    st = flow(a)
    assert verdicts(a, MSS, 2, t=1.3) == [(True, []), (True, [])]   # numRxmit 1: no second resend
    # the timer set expNextAck_ past the resent segment: 2..4 are counted, minus RTX_THRESH + 1
    assert st.exp_dupacks == 3 - 2 and st.meta[1000].num_rxmit == 1
    assert verdicts(a, MSS, 2, t=1.4) == [(False, []), (True, [])]


def test_the_inconsistent_state_resends_while_resent_fewer_than_two_times_and_lower_states_pass():
    a, _ = agent(rtx_thresh=2)
    feed(a, range(2))
    a.on_ack(FLOW, MSS, 0.05)                             # one cached: expected 1 - 3 = -2
    assert verdicts(a, MSS, 3) == [(True, []), (True, []), (False, ["pkt1"])]
    assert flow(a).exp_dupacks == -2
    assert verdicts(a, MSS, 2) == [(True, [])] * 2        # neither -1 nor positive: the sender's business


def test_a_dupack_resend_over_the_local_limit_passes():
    a, _ = agent(max_local_rxmit=1)
    feed(a, range(2))
    a.on_ack(FLOW, MSS, 0.05)                             # expected -1 after the first resend
    assert verdicts(a, MSS, 3) == [(True, []), (False, ["pkt1"]), (True, [])]   # SNOOP_MAX_RXMIT 1
    assert a.stats["local_retransmissions"] == 1 and a.stats["suppressed"] == 1


def test_snoop_rxmit_stamps_the_segment_counts_and_restarts_the_timer():
    a, _ = agent()
    feed(a, range(6))
    a.on_ack(FLOW, MSS, 0.05)
    st = flow(a)
    rto = a.timeout(st)
    verdicts(a, MSS, 2, t=0.3)
    e = st.meta[1000]
    assert (e.snd_time, e.rtx_time, e.num_rxmit) == (0.3, 0.3, 1)
    assert a.stats["local_retransmissions"] == 1
    assert a.next_timer() == pytest.approx(0.3 + rto) and st.timer_armed == 0.3


# ---------------------------------------------------------------- the local timer (SnoopRxmitHandler)
def test_the_timer_fires_when_due_exactly_and_resends_the_lowest_before_any_ack():
    a, log = agent()
    feed(a, range(3))
    t = a.next_timer()
    assert a.on_timer(t - 1e-9) == []
    assert a.on_timer(t) == ["pkt0"]                      # no ACK yet: the lowest cached is awaited
    st = flow(a)
    assert st.exp_from == 1 and a.stats["local_timeouts"] == 1
    assert log.of("local_rto") == [{"flow": NAME, "seq": 0, "rto": pytest.approx(a.timeout(st))}]
    assert a.next_timer() == pytest.approx(t + a.timeout(st))


def test_the_timer_over_the_local_limit_resends_nothing_and_stops():
    a, log = agent(max_local_rxmit=1)
    feed(a, range(2))
    assert a.on_timer(a.next_timer()) == ["pkt0"]
    assert a.on_timer(a.next_timer()) == []
    assert a.next_timer() is None and a.stats["local_timeouts"] == 1 and len(log.of("local_rto")) == 1


def test_each_flow_has_its_own_timer_and_the_earliest_is_next():
    a, _ = agent()
    other = ("10.2.1.9", 7, "10.2.1.4", 6000)
    a.on_data(FLOW, 0, MSS, AspanFields(), 1.0, 2, 0.5, "late")
    a.on_data(other, 0, MSS, AspanFields(), 1.0, 2, 0.2, "early")
    assert a.next_timer() == pytest.approx(0.2 + rto0())
    assert a.on_timer(0.2 + rto0()) == ["early"]          # only the flow that is due
    assert a.next_timer() == pytest.approx(0.5 + rto0())
    assert a.on_timer(0.5 + rto0()) == ["late"]


def test_no_timer_without_cached_data():
    a, _ = agent(policy="none")
    feed(a, range(2))
    assert a.next_timer() is None and a.on_timer(10.0) == []


# ---------------------------------------------------------------- premature local retransmissions
def _premature_setup(ack_at):
    """A clean sample of 20 ms, then segment 1 resent by the timer and acknowledged ``ack_at`` later."""
    a, log = agent()
    feed(a, range(3))
    a.on_ack(FLOW, MSS, 0.02)
    t = a.next_timer()
    assert a.on_timer(t) == ["pkt1"]
    a.on_ack(FLOW, 2 * MSS, t + ack_at)
    return a, log


def test_an_ack_one_shortest_rtt_after_the_resend_is_not_premature_and_a_sooner_one_is():
    a, log = _premature_setup(0.02)                       # (the exact edge, in binary-exact times: below)
    assert a.stats["premature"] == 0 and log.of("premature") == []
    a, log = _premature_setup(0.0199)
    assert a.stats["premature"] == 1
    assert log.of("premature") == [{"flow": NAME, "seq": 1000, "after": 0.0199, "min_rtt": 0.02}]


def test_no_premature_count_before_a_clean_sample():
    a, _ = agent()
    feed(a, range(2))
    assert a.on_timer(a.next_timer()) == ["pkt0"]         # resent before any ACK: no shortest RTT known
    a.on_ack(FLOW, MSS, a.next_timer() - 1.0)
    assert a.stats["premature"] == 0 and flow(a).min_rtt is None


def test_the_shortest_rtt_comes_from_clean_segments_only_and_keeps_the_least():
    a, _ = agent()
    feed(a, [0], t=0.0)
    a.on_ack(FLOW, MSS, 0.05)
    st = flow(a)
    assert st.min_rtt == pytest.approx(0.05)
    feed(a, [1], t=0.1)
    a.on_ack(FLOW, 2 * MSS, 0.2)                          # a longer sample does not replace it
    assert st.min_rtt == pytest.approx(0.05)
    feed(a, [2], t=0.3)
    feed(a, [2], t=0.31)                                  # the sender resent it: no clean sample
    a.on_ack(FLOW, 3 * MSS, 0.32)
    assert st.min_rtt == pytest.approx(0.05)
    feed(a, [3], t=0.4)
    a.on_ack(FLOW, 4 * MSS, 0.43)                         # a shorter clean one does
    assert st.min_rtt == pytest.approx(0.03)
    feed(a, [4], t=0.5)
    a.on_ack(FLOW, 5 * MSS, 0.5)                          # a zero sample is no RTT
    assert st.min_rtt == pytest.approx(0.03)


def test_the_shortest_rtt_is_the_least_clean_sample_of_one_ack():
    a, _ = agent()
    feed(a, [0], t=0.0)
    feed(a, [1], t=0.04)
    a.on_ack(FLOW, 2 * MSS, 0.05)                         # samples 0.05 and 0.01: the last freed counts
    assert flow(a).min_rtt == pytest.approx(0.01)


# ---------------------------------------------------------------- the agent's contract
def test_a_new_agent_counts_nothing_and_reads_no_ack_details():
    a, _ = agent()
    assert {k: a.stats[k] for k in ("premature", "local_timeouts", "acks_generated")} == \
        {"premature": 0, "local_timeouts": 0, "acks_generated": 0}
    assert ClassicSnoopAgent.reads_ack_details is False and ClassicSnoopAgent.generates_acks is False
    assert a.scheme.scheme == "classic" and a.take_generated() == []
    plain = ClassicSnoopAgent("C", SnoopConfig(policy="every"))
    assert plain.scheme.scheme == "classic" and plain.scheme.snoop_tick == 0.1


def test_a_flow_starts_from_the_schemes_srtt_and_rttvar():
    a, _ = agent(initial_srtt=0.7, initial_rttvar=0.3)
    st = a._new_flow(FLOW)
    assert (st.name, st.srtt, st.rttvar) == (NAME, 0.7, 0.3)


def test_a_generated_ack_is_32_bit_with_its_window_clamped_and_counted():
    from aspan.agent import GeneratedAck
    a, _ = agent()
    feed(a, [0])
    st = flow(a)
    a._generate(st, "tmpl", WRAP + 5, -3, "r1")
    a._generate(st, "tmpl", 7, WRAP + 9, "r2")
    assert a.take_generated() == [GeneratedAck("tmpl", 5, 0, "r1"), GeneratedAck("tmpl", 7, WRAP - 1, "r2")]
    assert a.take_generated() == [] and a.stats["acks_generated"] == 2


def test_multihop_caches_from_the_first_forwarding_node_on():
    a, _ = agent(MultihopSnoopAgent, policy="none", scheme="multihop")
    assert [a.wants(AspanFields(), 1.0, h) for h in (0, 1, 2)] == [False, True, True]


# ---------------------------------------------------------------- the triage's tests (the rules behind the first run's survivors)
class Sink:
    """An event sink that keeps the flow a ``cache`` event is about (routing.forwarding.flowlog reads it)."""

    def __init__(self):
        self.events = []

    def emit(self, now, ev, **f):
        self.events.append((now, ev, f))

    def tx(self, now, flow, seq, length, kind, hop):
        self.emit(now, "tx", flow=flow, seq=seq, len=length, kind=kind, hop=hop)

    def cache(self, now, segments, nbytes, flow=None):
        self.events.append((now, "cache", {"segments": segments, "bytes": nbytes, "flow": flow}))

    def cache_full(self, now, flow, seq):
        self.emit(now, "cache_full", flow=flow, seq=seq)

    def hit(self, now, flow, seq):
        self.emit(now, "hit", flow=flow, seq=seq)


def test_every_event_is_logged_at_the_time_it_happens_and_cache_events_name_their_flow():
    sink = Sink()
    a = ClassicSnoopAgent("C", SnoopConfig(policy="every"), sink,
                          SchemeConfig(scheme="classic", max_cached_segments=3))
    for i, t in enumerate((0.0, 0.1, 0.2, 0.3)):
        a.on_data(FLOW, i * MSS, MSS, AspanFields(), 1.0, 2, t, f"pkt{i}")
    a.on_ack(FLOW, MSS, 0.4)
    a.on_ack(FLOW, MSS, 0.5)
    a.on_ack(FLOW, MSS, 0.6)                              # resends segment 1
    a.on_ack(FLOW, 2 * MSS, 0.7)                          # frees it 0.1 s after the resend
    due = a.next_timer()
    a.on_timer(due)
    got = [(t, e, f.get("flow")) for t, e, f in sink.events if e in ("cache", "cache_full", "hit", "local_rto")]
    assert got == [(0.0, "cache", NAME), (0.1, "cache", NAME), (0.2, "cache", NAME), (0.3, "cache_full", NAME),
                   (0.4, "cache", NAME), (0.5, "hit", NAME), (0.6, "hit", NAME), (0.7, "cache", NAME),
                   (due, "local_rto", NAME)]


def test_the_premature_and_local_rto_events_carry_their_time_and_microsecond_values():
    a, log = agent()
    feed(a, [0, 1, 2, 3], t=0.0)
    a.on_ack(FLOW, MSS, 0.123456789)                      # clean sample: min RTT 0.123456789
    verdicts(a, MSS, 2, t=1.0)                            # segment 1 resent locally at 1.0
    a.on_ack(FLOW, 2 * MSS, 1.0 + 0.0177777777)           # sooner than the shortest RTT: premature
    [(t, ev)] = [(t, f) for t, e, f in log.events if e == "premature"]
    assert t == 1.0 + 0.0177777777
    assert ev == {"flow": NAME, "seq": 1000, "after": 0.017778, "min_rtt": 0.123457}
    st = flow(a)
    due = a.next_timer()
    a.on_timer(due)
    [(t, ev)] = [(t, f) for t, e, f in log.events if e == "local_rto"]
    assert t == due and ev == {"flow": NAME, "seq": 2000, "rto": round(a.timeout(st), 6)}
    assert ev["rto"] != round(a.timeout(st), 7)           # the sample made it longer than 6 digits


def test_an_ack_exactly_the_shortest_rtt_after_a_resend_is_not_premature_in_exact_times():
    a, _ = agent()
    feed(a, [0, 1, 2], t=0.0)
    a.on_ack(FLOW, MSS, 0.25)                             # min RTT 0.25 (exact in binary)
    verdicts(a, MSS, 2, t=1.0)                            # resent at 1.0
    a.on_ack(FLOW, 2 * MSS, 1.25)                         # exactly 0.25 later: the resend's own ACK, maybe
    assert a.stats["premature"] == 0


def test_every_premature_retransmission_and_every_local_timeout_is_counted():
    a, _ = agent()
    feed(a, [0, 1, 2, 3], t=0.0)
    a.on_ack(FLOW, MSS, 0.25)
    verdicts(a, MSS, 2, t=1.0)                            # segment 1 resent by a dupack
    a.on_ack(FLOW, 2 * MSS, 1.01)                         # premature 1
    assert a.on_timer(a.next_timer()) == ["pkt2"]         # segment 2 resent by the timer
    t = a.next_timer()
    a.on_ack(FLOW, 3 * MSS, t - a.timeout(flow(a)) + 0.01)   # 10 ms after that resend: premature 2
    assert a.stats["premature"] == 2
    assert a.on_timer(a.next_timer()) == ["pkt3"]
    assert a.on_timer(a.next_timer()) == ["pkt3"]
    assert a.stats["local_timeouts"] == 3


def test_a_segment_at_the_highest_seen_is_in_sequence_not_a_reordering():
    a, _ = agent(max_cached_segments=2)
    feed(a, [0, 1, 2])                                    # 2 is seen (lastSeen_) but the cache is full
    a.on_ack(FLOW, 2 * MSS, 0.05)                         # frees 0 and 1
    assert feed(a, [2], t=0.3) == [True]                  # the sender resends 2: seq == lastSeen_
    assert not flow(a).meta[2000].sender_rxmit            # ns-2: only seq < lastSeen_ is marked
    assert verdicts(a, 2 * MSS, 2, t=0.4) == [(True, []), (False, ["pkt2"])]


def test_a_copy_of_the_same_length_keeps_the_cached_packet():
    a, _ = agent()
    feed(a, [0, 1])
    a.on_data(FLOW, 0, MSS, AspanFields(), 1.0, 2, 0.2, "again")    # the sender resends 0 (ns-2: no savepkt_)
    assert flow(a).cache.entries[0] == (MSS, "pkt0")
    assert a.on_timer(a.next_timer()) == ["pkt0"]


def test_after_a_partial_ack_the_expected_dupacks_count_the_partly_acknowledged_segment():
    a, _ = agent()
    feed(a, range(6))
    a.on_ack(FLOW, MSS + 500, 0.05)                       # the receiver holds half of segment 1
    assert verdicts(a, MSS + 500, 2) == [(True, []), (False, ["pkt1"])]
    assert flow(a).exp_dupacks == 5 - 2                   # 1..5 cached from the awaited one up


def test_classic_snoop_caches_where_the_adaptive_policy_says():
    log = Log()
    a = ClassicSnoopAgent("C", SnoopConfig(policy="adaptive"), log, SchemeConfig(scheme="classic"))
    qos = dict(pkt_qos=0.9, pkt_effort=1.0)
    assert a.on_data(FLOW, 0, MSS, AspanFields(**qos), 0.8, 2, 0.0, "p0") is True      # effort 0.8 < 0.9
    assert a.on_data(FLOW, MSS, MSS, AspanFields(**qos), 0.95, 2, 0.0, "p1") is False  # 0.95: not
    assert a.wants(AspanFields(**qos), 0.8, 2) is True and a.wants(AspanFields(**qos), 0.95, 2) is False


# ====================================================================================================
# Classic Snoop (ns-2 snoop.cc) and Multihop Snoop (paper 000), driven in virtual time.


FLOW = ("10.2.1.1", 5000, "10.2.1.4", 6000)


MSS = 1000


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
