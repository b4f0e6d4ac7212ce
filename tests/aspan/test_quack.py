"""The quACK core (aspan.quack): the arithmetic against worked examples, the wire form, and the sender's half
with forged and stale quACKs."""
from __future__ import annotations

import random

import pytest

from aspan.quack import (MAX_THRESHOLD, MODULUS, PowerSumQuack, QuackError, QuackSender, coefficients, decode,
                         encode_quack, evaluate, missing_count, parse_quack, power_sums)


def quack_of(ids: list[int], threshold: int) -> PowerSumQuack:
    q = PowerSumQuack(threshold)
    for x in ids:
        q.insert(x)
    return q


def test_power_sums_worked_example() -> None:
    # 1 + 2 + 3 = 6, 1 + 4 + 9 = 14, 1 + 8 + 27 = 36
    assert power_sums([1, 2, 3], 3) == [6, 14, 36]
    q = quack_of([1, 2, 3], 3)
    assert (q.sums, q.count, q.last) == ([6, 14, 36], 3, 3)


def test_power_sums_reduce_mod_the_prime() -> None:
    # p - 1 is -1: its odd powers are p - 1, its even powers 1; p itself is 0
    assert MODULUS == 2**32 - 5
    assert power_sums([MODULUS - 1], 4) == [MODULUS - 1, 1, MODULUS - 1, 1]
    assert power_sums([MODULUS], 2) == [0, 0]
    assert power_sums([2**31], 2) == [2**31, pow(2, 62, MODULUS)]


def test_newtons_identities_worked_example() -> None:
    # sent {1, 2, 3}, relay saw {1}: the difference is the sums of {2, 3}: 5, 13, 35; e1 = 5,
    # e2 = (e1 S1 - S2) / 2 = (25 - 13) / 2 = 6, so x^2 - 5x + 6 = (x - 2)(x - 3)
    diff = quack_of([1, 2, 3], 3).minus(quack_of([1], 3))
    assert diff.sums == [5, 13, 35] and diff.count == 2 and diff.last is None
    assert coefficients(diff.sums, 2) == [1, MODULUS - 5, 6]
    assert [evaluate([1, MODULUS - 5, 6], x) for x in (1, 2, 3, 4)] == [2, 0, 0, 2]
    assert decode(diff, [1, 2, 3]) == [2, 3]
    # three roots 1, 2, 3: x^3 - 6x^2 + 11x - 6
    assert coefficients([6, 14, 36], 3) == [1, MODULUS - 6, 11, MODULUS - 6]
    assert coefficients([6, 14, 36], 0) == [1]
    with pytest.raises(QuackError, match="need 4 power sums"):
        coefficients([6, 14, 36], 4)


def test_decode_random_losses_up_to_the_threshold() -> None:
    rng = random.Random(7)
    for threshold in (1, 4, 20):
        ids = [rng.getrandbits(32) for _ in range(500)]
        lost = rng.sample(ids, threshold)
        seen = [x for x in ids if x not in lost]
        diff = quack_of(ids, threshold).minus(quack_of(seen, threshold))
        assert missing_count(diff) == threshold
        assert decode(diff, ids) == [x for x in ids if x in lost]


def test_decode_refuses_more_than_the_threshold_and_negative_counts() -> None:
    ids = list(range(10, 20))
    diff = quack_of(ids, 3).minus(quack_of(ids[:6], 3))
    with pytest.raises(QuackError, match="4 packets missing, more than the threshold 3"):
        decode(diff, ids)
    backwards = quack_of(ids[:6], 3).minus(quack_of(ids, 3))
    assert missing_count(backwards) == -4
    with pytest.raises(QuackError, match="counts 4 packet"):
        decode(backwards, ids)
    assert decode(quack_of(ids, 3).minus(quack_of(ids, 3)), ids) == []


def test_a_repeated_identifier_is_returned_at_each_place() -> None:
    ids = [5, 9, 5, 11]
    diff = quack_of(ids, 2).minus(quack_of([5, 9, 11], 2))
    assert decode(diff, ids) == [5, 5]


def test_thresholds_and_identifiers_are_bounded() -> None:
    with pytest.raises(QuackError, match="threshold 0 outside"):
        PowerSumQuack(0)
    with pytest.raises(QuackError, match=f"threshold {MAX_THRESHOLD + 1} outside"):
        PowerSumQuack(MAX_THRESHOLD + 1)
    with pytest.raises(QuackError, match="2 power sums for threshold 3"):
        PowerSumQuack(3, [1, 2])
    with pytest.raises(QuackError, match="not 32-bit"):
        PowerSumQuack(2).insert(2**32)
    with pytest.raises(QuackError, match="not 32-bit"):
        PowerSumQuack(2).remove(-1)
    with pytest.raises(QuackError, match="threshold 3 against 2"):
        PowerSumQuack(2).minus(PowerSumQuack(3))


def test_insert_then_remove_is_nothing() -> None:
    q = quack_of([3, 8, 2**32 - 1], 5)
    q.remove(8)
    assert q.sums == power_sums([3, 2**32 - 1], 5) and q.count == 2
    q.remove(3)
    q.remove(2**32 - 1)
    assert q.sums == [0] * 5 and q.count == 0
    q.remove(1)
    assert q.count == 2**32 - 1 and missing_count(q) == -1   # the count wraps as on the wire


def test_wire_round_trip_and_malformed_quacks() -> None:
    q = quack_of([7, 2**32 - 1, 123456789], 4)
    data = encode_quack(q)
    assert len(data) == 4 * 6 and data[:8] == (3).to_bytes(4, "big") + (123456789).to_bytes(4, "big")
    back = parse_quack(data, 4)
    assert (back.sums, back.count, back.last, back.threshold) == (q.sums, 3, 123456789, 4)
    empty = parse_quack(encode_quack(PowerSumQuack(2)), 2)
    assert empty.count == 0 and empty.last is None
    with pytest.raises(QuackError, match="quACK of 23 bytes, 24 expected for threshold 4"):
        parse_quack(data[:-1], 4)
    with pytest.raises(QuackError, match="20 expected for threshold 3"):
        parse_quack(data, 3)
    bad = data[:8] + MODULUS.to_bytes(4, "big") + data[12:]
    with pytest.raises(QuackError, match="S_1 = 4294967291 is not reduced"):
        parse_quack(bad, 4)


def relay_after(ids: list[int], threshold: int) -> PowerSumQuack:
    return quack_of(ids, threshold)


def test_sender_finds_the_losses_before_the_relays_last_and_not_the_packets_in_flight() -> None:
    s = QuackSender(threshold=4)
    for x in range(100, 110):
        s.sent(x)
    seen = [100, 101, 103, 104, 106]          # 102 and 105 lost; 107-109 in flight beyond last = 106
    v = s.on_quack(relay_after(seen, 4))
    assert v is not None and v.lost == [102, 105] and v.received == 5
    assert list(s.log) == [107, 108, 109]
    # the next quACK is cumulative; 102 and 105 are settled and never reported again; 108 is lost
    for x in (110, 111):
        s.sent(x)
    v = s.on_quack(relay_after(seen + [107, 109, 110], 4))
    assert v is not None and v.lost == [108] and v.received == 3 and list(s.log) == [111]
    assert s.stats["lost"] == 3 and s.stats["quacks"] == 2 and s.stats["sent"] == 12
    # nothing new lost
    v = s.on_quack(relay_after(seen + [107, 109, 110, 111], 4))
    assert v is not None and v.lost == [] and v.received == 1 and not s.log


def test_sender_before_the_relay_saw_anything() -> None:
    s = QuackSender(threshold=2)
    s.sent(1)
    v = s.on_quack(PowerSumQuack(2))
    assert v is not None and v.lost == [] and v.received == 0 and list(s.log) == [1]


def test_forged_and_stale_quacks_change_nothing_and_are_counted() -> None:
    s = QuackSender(threshold=3)
    for x in (11, 12, 13, 14):
        s.sent(x)
    before = (list(s.log), list(s.quack.sums), s.quack.count)
    assert s.on_quack(relay_after([11, 99], 3)) is None                  # its last was never sent
    assert s.stats["unknown_last"] == 1
    forged = PowerSumQuack(3, [17, 4, 2024], 2, 13)                      # says one of 11-13 lost; no root
    assert s.on_quack(forged) is None and s.stats["inconsistent"] == 1
    too_many = PowerSumQuack(3, [0, 0, 0], 2**31 + 5, 13)                  # a count from nowhere
    assert s.on_quack(too_many) is None and s.stats["undecodable"] == 1
    assert (list(s.log), list(s.quack.sums), s.quack.count) == before
    with pytest.raises(QuackError, match="threshold 2, this flow's is 3"):
        s.on_quack(PowerSumQuack(2))
    v = s.on_quack(relay_after([11, 13], 3))                              # the true one still decodes
    assert v is not None and v.lost == [12]


def test_more_losses_than_the_threshold_are_undecodable_until_reset() -> None:
    s = QuackSender(threshold=2)
    for x in range(1, 8):
        s.sent(x)
    assert s.on_quack(relay_after([1, 7], 2)) is None and s.stats["undecodable"] == 1
    s.reset()
    assert not s.log and s.quack.count == 0 and s.quack.sums == [0, 0]
    s.sent(20)
    s.sent(21)
    v = s.on_quack(relay_after([21], 2))   # the relay reset its quACK too
    assert v is not None and v.lost == [20]


def test_the_log_is_bounded_and_its_overflow_counted() -> None:
    s = QuackSender(threshold=2, max_log=3)
    for x in range(1, 6):
        s.sent(x)
    assert list(s.log) == [3, 4, 5] and s.stats["log_overflow"] == 2
    # 1 and 2 left the log but not the sums: a quACK that saw them all decodes; one that lost 1 cannot
    assert s.on_quack(relay_after([1, 2, 3, 4], 2)).lost == []
    s2 = QuackSender(threshold=2, max_log=3)
    for x in range(1, 6):
        s2.sent(x)
    assert s2.on_quack(relay_after([2, 3, 4], 2)) is None and s2.stats["inconsistent"] == 1
    with pytest.raises(QuackError, match="max_log 0"):
        QuackSender(2, max_log=0)


def test_relay_sends_every_n_packets_and_the_sender_decodes_it() -> None:
    from aspan.quack import QuackRelay
    relay = QuackRelay(threshold=3, every_packets=4)
    sender = QuackSender(threshold=3)
    lost = {3, 6}
    got = []
    for i in range(1, 13):
        sender.sent(1000 + i)
        if i in lost:
            continue
        wire = relay.on_packet("f", 1000 + i, now=i * 0.01)
        if wire is not None:
            v = sender.on_quack(parse_quack(wire, 3))
            assert v is not None
            got += v.lost
    assert got == [1003, 1006]
    assert relay.stats == {"packets": 10, "quacks": 2, "flows": 1, "evicted": 0, "resets": 0}


def test_relay_sends_on_a_period_and_bounds_its_flows() -> None:
    from aspan.quack import QuackRelay
    relay = QuackRelay(threshold=2, every_packets=None, every_s=0.1, max_flows=2)
    assert relay.on_packet("a", 1, now=0.0) is None
    assert relay.on_packet("a", 2, now=0.05) is None
    wire = relay.on_packet("a", 3, now=0.1)
    assert wire is not None and parse_quack(wire, 2).count == 3 and parse_quack(wire, 2).last == 3
    assert relay.on_packet("a", 4, now=0.15) is None
    relay.on_packet("b", 1, now=0.2)
    relay.on_packet("a", 5, now=0.21)      # a heard again: b is now the least recently heard
    relay.on_packet("c", 1, now=0.3)
    assert len(relay) == 2 and relay.stats["evicted"] == 1 and relay.stats["flows"] == 3
    wire = relay.on_packet("a", 6, now=0.31)   # a kept its quACK: 1..6, due by the period
    assert wire is not None and parse_quack(wire, 2).count == 6
    relay.on_packet("b", 2, now=0.4)       # b was evicted: it starts over (and evicts c)
    relay.reset("b")
    relay.reset("nobody")
    assert relay.stats["resets"] == 1 and len(relay) == 1


def test_relay_parameters_are_checked() -> None:
    from aspan.quack import QuackRelay
    with pytest.raises(QuackError, match="^a relay needs every_packets or every_s: else it never sends a quACK$"):
        QuackRelay(2, every_packets=None, every_s=None)
    with pytest.raises(QuackError, match="every_packets 0"):
        QuackRelay(2, every_packets=0)
    with pytest.raises(QuackError, match="every_s 0"):
        QuackRelay(2, every_s=0)
    with pytest.raises(QuackError, match="max_flows 0"):
        QuackRelay(2, max_flows=0)
    with pytest.raises(QuackError, match="threshold 65 outside"):
        QuackRelay(65)


def test_the_boundaries_of_every_bound() -> None:
    """Identifier 0 and 2**32 - 1, threshold 64, every_packets, max_flows and max_log of 1 are all allowed; the
    count reads as negative from 2**31 on; copies keep ``last``; an empty quACK's ``last`` is 0 on the wire."""
    from aspan.quack import ID_MOD, QuackRelay
    q = quack_of([0, ID_MOD - 1], MAX_THRESHOLD)
    assert len(q.sums) == MAX_THRESHOLD and q.last == ID_MOD - 1 and q.copy().last == ID_MOD - 1
    q.remove(0)
    assert q.count == 1
    assert missing_count(PowerSumQuack(1, [0], ID_MOD // 2 - 1)) == ID_MOD // 2 - 1
    assert missing_count(PowerSumQuack(1, [0], ID_MOD // 2)) == -(ID_MOD // 2)
    assert encode_quack(PowerSumQuack(2))[4:8] == b"\x00\x00\x00\x00"
    relay = QuackRelay(1, every_packets=1, max_flows=1)
    assert relay.on_packet("a", 5, 0.0) is not None and relay.on_packet("b", 6, 0.0) is not None
    assert len(relay) == 1
    sender = QuackSender(1, max_log=1)
    sender.sent(9)
    assert list(sender.log) == [9]


def test_defaults_and_exact_emission_points() -> None:
    """The relay's defaults (a quACK every 2 packets, 256 flows) and the sender's (a log of 4096): a quACK goes out
    on the packet that makes the count, not after it."""
    from aspan.quack import QuackRelay
    relay = QuackRelay(2)
    assert (relay.every_packets, relay.every_s, relay.max_flows) == (2, None, 256)
    assert QuackSender(2).max_log == 4096
    three = QuackRelay(2, every_packets=3)
    assert [three.on_packet("f", i, 0.0) is not None for i in range(1, 8)] == [False, False, True, False, False,
                                                                              True, False]


def test_every_counter_counts_each_time() -> None:
    from aspan.quack import QuackRelay
    s = QuackSender(threshold=1)
    for x in (1, 2, 3, 4):
        s.sent(x)
    for _ in range(2):
        assert s.on_quack(quack_of([77], 1)) is None                     # unknown last, twice
    for _ in range(2):
        assert s.on_quack(quack_of([4], 1)) is None                      # 3 missing, threshold 1, twice
    forged = PowerSumQuack(1, [5], 1, 2)                                 # says 1 of (1, 2) lost: x = 3 - 5, no root
    for _ in range(2):
        assert s.on_quack(forged) is None
    assert (s.stats["unknown_last"], s.stats["undecodable"], s.stats["inconsistent"]) == (2, 2, 2)
    relay = QuackRelay(1, max_flows=1)
    for flow in ("a", "b", "c"):
        relay.on_packet(flow, 1, 0.0)
    assert relay.stats["evicted"] == 2
    relay.reset("nobody")
    assert relay.stats["resets"] == 0
    relay.reset("c")
    relay.on_packet("c", 1, 0.0)
    relay.reset("c")
    assert relay.stats["resets"] == 2
