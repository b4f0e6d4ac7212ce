"""SNACK-NS (paper 002): the receiver's SNACK option, SNACK-Snoop and SNACK-TCP, in virtual time."""
import pytest

from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.snack import SnackSnoopAgent
from tcp_user.segment import ACK, MAX_SNACK
from test_tcp_harness import ack_seg, bulk, client, data_seg, pair, seq_of, server

FLOW = ("10.2.1.1", 5000, "10.2.1.4", 6000)
MSS = 1000


# ---------------------------------------------------------------- SNACK-Snoop (the snoop node)
def snoop():
    events = []
    a = SnackSnoopAgent("C", SnoopConfig(policy="every"),
                        lambda now, ev, **f: events.append((ev, f)), SchemeConfig(scheme="snack"))
    return a, events


def feed(a, idx, t=0.0):
    for i in idx:
        a.on_data(FLOW, i * MSS, MSS, AspanFields(), 1.0, 2, t, f"pkt{i}")


def test_cached_losses_are_resent_together_on_the_second_report_and_taken_off():
    a, events = snoop()
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
    a, _ = snoop()
    feed(a, [0, 1, 3, 4])                        # segment 2 never reached this node
    a.on_ack(FLOW, 2 * MSS, 0.05)
    v = a.on_ack(FLOW, 2 * MSS, 0.06, snack=(2000, 3000))
    assert (v.forward, v.retransmit, v.snack) == (True, [], (2000,))
    v = a.on_ack(FLOW, 2 * MSS, 0.07, snack=(2000, 3000))
    assert (v.forward, v.retransmit, v.snack) == (True, ["pkt3"], (2000,))


def test_dupack_for_a_cached_loss_goes_on_when_upstream_entries_remain():
    a, _ = snoop()
    feed(a, [0, 1, 2, 4])                        # 3 lost upstream of this node; 2 lost below it
    a.on_ack(FLOW, 2 * MSS, 0.05)
    v = a.on_ack(FLOW, 2 * MSS, 0.06, snack=(2000, 3000))
    assert (v.forward, v.snack) == (True, (3000,))


def test_new_ack_with_snack_frees_and_counts():
    a, _ = snoop()
    feed(a, range(6))
    a.on_ack(FLOW, 1 * MSS, 0.05, snack=(1000, 3000))
    v = a.on_ack(FLOW, 2 * MSS, 0.06, snack=(3000,))        # new ACK: 1000 arrived
    assert (v.forward, v.retransmit, v.snack) == (True, ["pkt3"], ())
    assert a.cache_segments == 4 and 1000 not in a._flows[FLOW].reports


def test_ack_without_snack_follows_classic_snoop():
    a, _ = snoop()
    feed(a, range(6))
    a.on_ack(FLOW, 2 * MSS, 0.05)
    got = [(v.forward, v.retransmit) for v in (a.on_ack(FLOW, 2 * MSS, 0.06) for _ in range(2))]
    assert got == [(True, []), (False, ["pkt2"])]


# ---------------------------------------------------------------- the receiver's SNACK option
def test_receiver_reports_holes_one_per_mss_lowest_first_at_most_six():
    b, _ = server("reno", snack=True)
    b.on_segment(data_seg(0), 0.1)
    b.on_segment(data_seg(3), 0.2)               # holes: 1, 2
    b.on_segment(data_seg(5), 0.3)               # holes: 1, 2, 4
    acks = [s for s in b.segments_to_send(0.3) if s.flags == ACK]
    assert [s.snack for s in acks] == [(), (seq_of(90_000, 1), seq_of(90_000, 2)),
                                       tuple(seq_of(90_000, i) for i in (1, 2, 4))]
    b.on_segment(data_seg(20), 0.4)              # holes 1, 2, 4, 6..19: only six reported
    [ack] = b.segments_to_send(0.4)
    assert ack.snack == tuple(seq_of(90_000, i) for i in (1, 2, 4, 6, 7, 8))
    assert len(ack.snack) == MAX_SNACK
    for i in (1, 2, 4, *range(6, 20)):
        b.on_segment(data_seg(i), 0.5)
    assert b.segments_to_send(0.5)[-1].snack == ()


def test_receiver_without_snack_sends_none():
    b, _ = server("reno")
    b.on_segment(data_seg(0), 0.1)
    b.on_segment(data_seg(2), 0.2)
    assert all(s.snack == () for s in b.segments_to_send(0.2))


# ---------------------------------------------------------------- SNACK-TCP (the sender)
ISS = 7000


def loaded_sender(**cfg):
    a, rec = client("reno", iss=ISS, init_cwnd=8, **cfg)
    a.send(bytes(20_000))
    sent = a.segments_to_send(0.5)
    assert len(sent) == 8
    return a, rec


def test_sender_resends_a_loss_reported_twice_without_touching_cwnd():
    a, rec = loaded_sender(snack=True)
    base = seq_of(ISS, 0)
    lost = (seq_of(ISS, 0), seq_of(ISS, 2))
    cwnd = a.cwnd
    a.on_segment(_with_snack(ack_seg(a, base), lost), 1.0)     # first report: counted only
    assert a.segments_to_send(1.0) == []
    for k in range(5):                           # more reports: no fast retransmit, no more resends
        a.on_segment(_with_snack(ack_seg(a, base), lost), 1.1 + k * 0.01)
        out = a.segments_to_send(1.1 + k * 0.01)
        assert [s.seq for s in out if s.payload] == ([seq_of(ISS, 0), seq_of(ISS, 2)] if k == 0 else [])
    assert a.cwnd == cwnd and not a.in_recovery
    assert rec.of("loss") == [] and a.stats["snack_retransmissions"] == 2
    assert [f["seq"] for f in rec.of("rtx")] == [seq_of(ISS, 0), seq_of(ISS, 2)]


def test_records_are_dropped_once_acknowledged_and_a_new_ack_counts_too():
    a, _ = loaded_sender(snack=True)
    a.on_segment(_with_snack(ack_seg(a, seq_of(ISS, 1)), (seq_of(ISS, 3),)), 1.0)   # new ACK
    a.segments_to_send(1.0)
    a.on_segment(_with_snack(ack_seg(a, seq_of(ISS, 1)), (seq_of(ISS, 3),)), 1.1)
    assert [s.seq for s in a.segments_to_send(1.1) if s.payload] == [seq_of(ISS, 3)]
    a.on_segment(ack_seg(a, seq_of(ISS, 8)), 1.2)
    assert a._snack.reports == {}


def test_without_snack_the_same_acks_are_plain_dupacks():
    a, rec = loaded_sender()
    base = seq_of(ISS, 0)
    for k in range(3):
        a.on_segment(_with_snack(ack_seg(a, base), (base,)), 1.0 + k * 0.01)
    assert a.in_recovery and [f["kind"] for f in rec.of("loss")] == ["dupack"]


def test_snack_transfer_completes_through_losses():
    a, b, _, _ = pair("reno", snack=True)
    sim, data = bulk(a, b, 60_000)
    for i in (5, 6, 7, 20, 33):
        sim.drop("a", seq_of(1000, i), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert a.stats["snack_retransmissions"] >= 3 and a.stats["losses_rto"] <= 1


def _with_snack(seg, entries):
    from dataclasses import replace
    return replace(seg, snack=tuple(e & 0xFFFFFFFF for e in entries))


@pytest.mark.parametrize("bad", [0, -1])
def test_snack_threshold_must_be_positive(bad):
    from tcp_user.config import TcpConfig
    with pytest.raises(ValueError, match="snack_threshold"):
        TcpConfig(snack=True, snack_threshold=bad)
