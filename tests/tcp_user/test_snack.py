"""SNACK-TCP's rules (paper 002, Sun, Li, Liew, Sec. III-A and III-B, Figure 5), one test each.

tcp_user/snack.py implements both ends of the SNACK option:

* the receiver (Sec. III-A, as the module reads it): every ACK carries the first byte of each
  MSS-sized piece missing below the highest out-of-order byte, lowest first, at most six
  ("The value 6 is used in our simulations"), as 32-bit sequence numbers;
* the sender (Sec. III-B, Figure 5): a record per reported loss counts the reports; once a loss has
  been reported ``snack_threshold`` times it is resent and its record "set to a negative value, say
  -1"; "If MH still receives loss information, the times record will remain negative"; an ACK
  deletes "the records of the packets that have been acknowledged".  Reports of numbers the sender
  has not sent, or that are acknowledged already, name no outstanding loss and are ignored.

Each test is written from these rules (and RFC 9293 sec. 3.4's modular sequence numbers), not from
a mutant's text.
"""
from __future__ import annotations

import pytest
from tcp_user.segment import MAX_SNACK, SEQ_MASK
from tcp_user.snack import SnackSender, snack_entries
from tests.cores import ack_seg, bulk, client, pair, seq_of


MSS = 1000


def block(start: int, n: int) -> list:
    """A reassembly-queue entry: ``n`` bytes held from ``start`` (unwrapped, relative to the IRS)."""
    return [start, b"x" * n]


# ---------------------------------------------------------------- the receiver (Sec. III-A)
def test_a_hole_is_reported_once_per_mss_from_its_first_byte_with_a_short_last_piece() -> None:
    # RCV.NXT 1, data held from 2501: the hole [1, 2501) is three pieces, the last 500 bytes
    assert snack_entries([block(2501, 1000)], 1, MSS, 0) == (1, 1001, 2001)


def test_a_hole_of_exactly_whole_segments_has_one_entry_per_segment_and_no_more() -> None:
    # the hole [1, 2001) is two segments: a third entry would name held data
    assert snack_entries([block(2001, 1000)], 1, MSS, 0) == (1, 1001)
    # a one-byte hole is one entry
    assert snack_entries([block(2, 5)], 1, MSS, 0) == (1,)


def test_every_hole_below_the_highest_held_byte_lowest_first_and_none_above() -> None:
    # held: [1001, 2001), [3001, 3501), [5001, 6001); holes [1, 1001), [2001, 3001), [3501, 5001)
    blocks = [block(1001, 1000), block(3001, 500), block(5001, 1000)]
    assert snack_entries(blocks, 1, MSS, 0) == (1, 2001, 3501, 4501)
    # with RCV.NXT inside nothing held: the first hole starts at RCV.NXT itself
    assert snack_entries([block(9000, 10)], 4321, MSS, 0) == tuple(range(4321, 9000, MSS))


def test_at_most_six_entries_the_six_lowest() -> None:
    assert MAX_SNACK == 6
    # exactly six holes: all six
    six = [block(2 * k * MSS + MSS + 1, MSS) for k in range(6)]
    assert snack_entries(six, 1, MSS, 0) == tuple(2 * k * MSS + 1 for k in range(6))
    # seven holes: the six lowest
    seven = [block(2 * k * MSS + MSS + 1, MSS) for k in range(7)]
    assert snack_entries(seven, 1, MSS, 0) == tuple(2 * k * MSS + 1 for k in range(6))
    # one hole of ten segments: its first six
    assert snack_entries([block(10 * MSS + 1, MSS)], 1, MSS, 0) == tuple(k * MSS + 1 for k in range(6))
    # six in the first hole and more in the next: the second hole is not reached
    assert snack_entries([block(6 * MSS + 1, 10), block(9 * MSS, 10)], 1, MSS, 0) == \
        tuple(k * MSS + 1 for k in range(6))


def test_no_held_data_no_entry() -> None:
    assert snack_entries([], 1, MSS, 0) == ()
    assert snack_entries([], 5001, MSS, 123) == ()


def test_entries_are_32_bit_sequence_numbers_from_the_irs() -> None:
    irs = SEQ_MASK - 1500               # the peer's sequence numbers wrap inside the hole
    got = snack_entries([block(3001, 10)], 1, MSS, irs)
    assert got == ((irs + 1) & SEQ_MASK, (irs + 1001) & SEQ_MASK, (irs + 2001) & SEQ_MASK)
    assert got == (SEQ_MASK - 1499, SEQ_MASK - 499, 500)
    assert all(0 <= x <= SEQ_MASK for x in got)


def test_the_mss_sets_the_spacing() -> None:
    assert snack_entries([block(1201, 1)], 1, 400, 0) == (1, 401, 801)
    assert snack_entries([block(1201, 1)], 1, 1200, 0) == (1,)


# ---------------------------------------------------------------- the sender (Sec. III-B, Figure 5)
ISS = 5000


UNA = 1


SND_MAX = 10_001                        # ten segments sent


def wire(rel: int, iss: int = ISS) -> int:
    return (iss + rel) & SEQ_MASK


def test_a_loss_is_due_on_its_threshold_th_report_and_not_before() -> None:
    s = SnackSender(2)
    s.on_entries((wire(1001),), ISS, UNA, SND_MAX)
    assert s.take_due() == [] and s.reports == {1001: 1}
    s.on_entries((wire(1001),), ISS, UNA, SND_MAX)
    assert s.take_due() == [1001]
    assert s.reports == {1001: -1}      # "set to a negative value, say -1"


@pytest.mark.parametrize("threshold", [1, 3, 4])
def test_the_threshold_counts_reports(threshold: int) -> None:
    s = SnackSender(threshold)
    for k in range(1, threshold):
        s.on_entries((wire(2001),), ISS, UNA, SND_MAX)
        assert s.take_due() == [] and s.reports == {2001: k}
    s.on_entries((wire(2001),), ISS, UNA, SND_MAX)
    assert s.take_due() == [2001]


def test_a_resent_loss_stays_negative_and_is_not_resent_again() -> None:
    s = SnackSender(2)
    for _ in range(2):
        s.on_entries((wire(1),), ISS, UNA, SND_MAX)
    assert s.take_due() == [1]
    for _ in range(5):                  # "the times record will remain negative"
        s.on_entries((wire(1),), ISS, UNA, SND_MAX)
        assert s.reports == {1: -1}
    assert s.take_due() == []


def test_each_entry_of_one_ack_is_one_report_of_its_own_loss() -> None:
    s = SnackSender(2)
    s.on_entries((wire(1), wire(2001), wire(4001)), ISS, UNA, SND_MAX)
    assert s.reports == {1: 1, 2001: 1, 4001: 1} and s.due == []
    s.on_entries((wire(4001), wire(1)), ISS, UNA, SND_MAX)
    assert s.take_due() == [4001, 1]    # in the order reported
    assert s.reports == {1: -1, 2001: 1, 4001: -1}


def test_take_due_hands_each_loss_over_once() -> None:
    s = SnackSender(1)
    s.on_entries((wire(1), wire(1001)), ISS, UNA, SND_MAX)
    assert s.take_due() == [1, 1001]
    assert s.take_due() == [] and s.due == []


def test_reports_of_acknowledged_or_unsent_numbers_are_ignored() -> None:
    s = SnackSender(1)
    una, snd_max = 3001, 8001
    # below SND.UNA (acknowledged), at SND.MAX and beyond (never sent): no record at all
    s.on_entries((wire(3000), wire(1), wire(8001), wire(9000)), ISS, una, snd_max)
    assert s.reports == {} and s.take_due() == []
    # SND.UNA itself (the first unacknowledged byte) and SND.MAX - 1 (the last sent) are outstanding
    s.on_entries((wire(3001), wire(8000)), ISS, una, snd_max)
    assert s.take_due() == [3001, 8000]


def test_the_syn_is_no_data_loss() -> None:
    # before any data is acknowledged SND.UNA may be 0 (the SYN's number): a report of it is no loss
    s = SnackSender(1)
    s.on_entries((wire(0),), ISS, 0, SND_MAX)
    assert s.reports == {} and s.take_due() == []
    s.on_entries((wire(1),), ISS, 0, SND_MAX)
    assert s.take_due() == [1]


def test_entries_are_unwrapped_from_32_bits_near_snd_una() -> None:
    iss = SEQ_MASK - 2000               # our sequence numbers wrap at relative 2001
    s = SnackSender(1)
    s.on_entries(((iss + 1001) & SEQ_MASK, (iss + 3001) & SEQ_MASK), iss, 1001, 6001)
    assert (iss + 3001) & SEQ_MASK == 1000      # past the wrap on the wire
    assert s.take_due() == [1001, 3001]


def test_an_ack_forgets_the_records_it_covers_and_only_those() -> None:
    s = SnackSender(3)
    s.on_entries((wire(1), wire(1001), wire(2001)), ISS, UNA, SND_MAX)
    s.forget_below(1001)                # "deleting the records of the packets that have been acknowledged"
    assert s.reports == {1001: 1, 2001: 1}
    s.forget_below(2002)
    assert s.reports == {}
    s.forget_below(5000)                # nothing to forget
    assert s.reports == {}


def test_a_forgotten_loss_reported_anew_counts_from_zero() -> None:
    s = SnackSender(2)
    s.on_entries((wire(1001),), ISS, UNA, SND_MAX)
    s.forget_below(2001)
    s.on_entries((wire(2001),), ISS, 2001, SND_MAX)
    assert s.reports == {2001: 1} and s.take_due() == []


def test_an_ignored_entry_does_not_hide_the_entries_after_it() -> None:
    # lowest first: a number the ACK already covers (the option was built before the ACK moved on)
    # comes before the outstanding ones, which still count
    s = SnackSender(1)
    s.on_entries((wire(1), wire(2001), wire(20_000), wire(4001)), ISS, 1001, SND_MAX)
    assert s.take_due() == [2001, 4001]


def test_a_loss_already_resent_does_not_hide_the_losses_after_it() -> None:
    # the lowest hole was resent and is still reported: the holes above it are counted as usual
    s = SnackSender(2)
    for _ in range(2):
        s.on_entries((wire(1),), ISS, UNA, SND_MAX)
    assert s.take_due() == [1]
    for _ in range(2):
        s.on_entries((wire(1), wire(3001)), ISS, UNA, SND_MAX)
    assert s.take_due() == [3001]
    assert s.reports == {1: -1, 3001: -1}


# ====================================================================================================
# SNACK-NS (paper 002): the receiver's SNACK option, SNACK-Snoop and SNACK-TCP, in virtual time.


# ---------------------------------------------------------------- SNACK-TCP (the sender)
SENDER_ISS = 7000


def loaded_sender(**cfg):
    a, rec = client("reno", iss=SENDER_ISS, init_cwnd=8, **cfg)
    a.send(bytes(20_000))
    sent = a.segments_to_send(0.5)
    assert len(sent) == 8
    return a, rec


def test_sender_resends_a_loss_reported_twice_without_touching_cwnd():
    a, rec = loaded_sender(snack=True)
    base = seq_of(SENDER_ISS, 0)
    lost = (seq_of(SENDER_ISS, 0), seq_of(SENDER_ISS, 2))
    cwnd = a.cwnd
    a.on_segment(_with_snack(ack_seg(a, base), lost), 1.0)     # first report: counted only
    assert a.segments_to_send(1.0) == []
    for k in range(5):                           # more reports: no fast retransmit, no more resends
        a.on_segment(_with_snack(ack_seg(a, base), lost), 1.1 + k * 0.01)
        out = a.segments_to_send(1.1 + k * 0.01)
        assert [s.seq for s in out if s.payload] == ([seq_of(SENDER_ISS, 0), seq_of(SENDER_ISS, 2)] if k == 0 else [])
    assert a.cwnd == cwnd and not a.in_recovery
    assert rec.of("loss") == [] and a.stats["snack_retransmissions"] == 2
    assert [f["seq"] for f in rec.of("rtx")] == [seq_of(SENDER_ISS, 0), seq_of(SENDER_ISS, 2)]


def test_records_are_dropped_once_acknowledged_and_a_new_ack_counts_too():
    a, _ = loaded_sender(snack=True)
    a.on_segment(_with_snack(ack_seg(a, seq_of(SENDER_ISS, 1)), (seq_of(SENDER_ISS, 3),)), 1.0)   # new ACK
    a.segments_to_send(1.0)
    a.on_segment(_with_snack(ack_seg(a, seq_of(SENDER_ISS, 1)), (seq_of(SENDER_ISS, 3),)), 1.1)
    assert [s.seq for s in a.segments_to_send(1.1) if s.payload] == [seq_of(SENDER_ISS, 3)]
    a.on_segment(ack_seg(a, seq_of(SENDER_ISS, 8)), 1.2)
    assert a._snack.reports == {}


def test_without_snack_the_same_acks_are_plain_dupacks():
    a, rec = loaded_sender()
    base = seq_of(SENDER_ISS, 0)
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


# ====================================================================================================
# The readable parts of tcp_user: the state table, the congestion-control registry, SNACK-TCP.


MASK = 0xFFFFFFFF


# ---------------------------------------------------------------- SNACK-TCP pieces
def test_snack_entries_list_one_hole_per_mss_up_to_six() -> None:
    blocks = [[3001, b"x" * 1000], [9001, b"y" * 1000]]   # holes [1001, 3001) and [4001, 9001)
    irs = MASK - 500                                        # 32-bit values wrap
    got = snack_entries(blocks, 1001, 1000, irs)
    assert got == tuple((irs + s) & MASK for s in (1001, 2001, 4001, 5001, 6001, 7001))
    assert snack_entries([], 1001, 1000, irs) == ()


def test_snack_sender_resends_at_the_threshold_once() -> None:
    iss = MASK - 2000                                       # entries wrap past 2**32
    s = SnackSender(threshold=2)
    entry = (iss + 3001) & MASK
    s.on_entries((entry,), iss, una=1001, snd_max=10_001)
    assert s.take_due() == []
    s.on_entries((entry,), iss, una=1001, snd_max=10_001)
    assert s.take_due() == [3001]
    s.on_entries((entry, (iss + 20_001) & MASK), iss, una=1001, snd_max=10_001)   # beyond SND.MAX
    assert s.take_due() == [] and s.reports == {3001: -1}
    s.forget_below(4001)
    assert s.reports == {}
