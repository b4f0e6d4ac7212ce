"""A scripted two-endpoint network in virtual time for the tcp_user tests (plus its own tests).

``Sim`` wires two :class:`TcpConnection` objects ``"a"`` and ``"b"`` through a link with a
fixed one-way delay.  Everything happens in virtual time: the loop jumps to the next
arrival or timer, delivers one segment at a time, lets the receiving side read (if asked)
and drains both sides' output.  Specific transmissions can be dropped by sequence number
and occurrence, or by a predicate.
"""
from __future__ import annotations

from tcp_user.segment import FIN, SYN, Segment
from tests.cores import bulk, pair, seq_of


# ---------------------------------------------------------------- tests of the harness itself
def test_harness_drops_by_occurrence() -> None:
    a, b, _, _ = pair()
    sim, data = bulk(a, b, 5000)
    sim.drop("a", seq_of(1000, 2), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    dropped = [s for _, n, s in sim.dropped if n == "a"]
    assert [s.seq for s in dropped] == [seq_of(1000, 2)]
    assert [s.seq for _, s in sim.data_sent("a")].count(seq_of(1000, 2)) == 2


def test_harness_flags_and_lengths() -> None:
    assert Segment(seq=0, flags=SYN).length == 1
    assert Segment(seq=0, flags=FIN, payload=b"ab").length == 3
