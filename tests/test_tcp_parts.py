"""The readable parts of tcp_user: the state table, the congestion-control registry, SNACK-TCP."""
from __future__ import annotations

import pytest

import tcp_user.config
from tcp_user.config import TcpConfig
from tcp_user.congestion import CONGESTION_CONTROLS, CongestionControl
from tcp_user.connection import TcpConnection
from tcp_user.snack import SnackSender, snack_entries
from tcp_user.state import TRANSITIONS, Event, State, TcpStateError, next_state
from test_tcp_harness import bulk, pair, seq_of

MASK = 0xFFFFFFFF


# ---------------------------------------------------------------- states
def test_the_table_refuses_an_event_not_allowed_in_the_state() -> None:
    with pytest.raises(TcpStateError, match=r"'fin acked' is not allowed in state ESTABLISHED"):
        next_state(State.ESTABLISHED, Event.FIN_ACKED)
    with pytest.raises(TcpStateError, match="not allowed in state CLOSED"):
        next_state(State.CLOSED, Event.TIME_WAIT_EXPIRED)
    assert next_state(State.FIN_WAIT_2, Event.FIN_RECEIVED) is State.TIME_WAIT


def test_a_connection_refuses_an_illegal_transition_and_keeps_its_state() -> None:
    a, _, ra, _ = pair()
    a.connect(0.0)
    with pytest.raises(TcpStateError):
        a._fire(0.0, Event.FIN_RECEIVED)     # a FIN cannot be received in SYN_SENT
    assert a.state == "SYN_SENT"
    assert [f["state"] for f in ra.of("state")] == ["SYN_SENT"]


def test_the_table_has_no_self_loops_and_reaches_every_state() -> None:
    reached = {State.CLOSED}
    for event, moves in TRANSITIONS.items():
        for src, dst in moves.items():
            assert src != dst, f"{event}: {src} -> itself"
            reached.add(dst)
    assert reached == set(State)
    assert set(TRANSITIONS) == set(Event)


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_state_events_carry_the_plain_names(variant: str) -> None:
    a, b, ra, rb = pair(variant, time_wait=0.5)
    sim, data = bulk(a, b, 20_000)
    sim.drop("a", seq_of(1000, 3), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    states = [f["state"] for f in ra.of("state")]
    assert states == ["SYN_SENT", "ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT", "CLOSED"]
    assert all(type(s) is str for s in states)      # logs write the name, not an enum repr
    assert [f["state"] for f in rb.of("state")] == ["SYN_RCVD", "ESTABLISHED", "CLOSE_WAIT",
                                                   "LAST_ACK", "CLOSED"]


# ---------------------------------------------------------------- congestion-control registry
def test_every_variant_name_maps_to_a_congestion_control_class() -> None:
    assert tcp_user.config.VARIANTS == tuple(CONGESTION_CONTROLS)
    assert set(tcp_user.config.VARIANTS) >= {"reno", "sack"}
    for name in tcp_user.config.VARIANTS:
        cls = CONGESTION_CONTROLS[name]
        assert issubclass(cls, CongestionControl)
        conn = TcpConnection(TcpConfig(variant=name))
        assert type(conn.congestion_control) is cls


def test_only_sack_keeps_a_scoreboard() -> None:
    assert TcpConnection(TcpConfig(variant="reno")).congestion_control.scoreboard is None
    assert TcpConnection(TcpConfig(variant="sack")).congestion_control.scoreboard is not None


class FixedWindow(CongestionControl):
    """A toy variant: cwnd never moves; losses are left to the retransmission timer."""

    def is_dupack(self, seg, prev_wnd, new_sacked) -> bool:
        return False

    def on_dupack(self, now: float) -> None:
        raise AssertionError("is_dupack() said no")

    def grow(self, now: float, newly: int) -> None:
        pass

    def on_rto(self, now: float) -> None:
        self.recovery_point = self.conn._snd_max


def test_a_registered_toy_variant_is_accepted_and_transfers(monkeypatch) -> None:
    with pytest.raises(ValueError, match="unknown TCP variant 'toy'"):
        TcpConfig(variant="toy")
    monkeypatch.setitem(CONGESTION_CONTROLS, "toy", FixedWindow)
    assert "toy" in tcp_user.config.VARIANTS
    a, b, ra, _ = pair("toy", init_cwnd=4)
    assert isinstance(a.congestion_control, FixedWindow)
    sim, data = bulk(a, b, 30_000)
    sim.drop("a", seq_of(1000, 5), 1)
    sim.drop("a", seq_of(1000, 17), 1)
    sim.run()
    assert bytes(sim.received["b"]) == data
    assert {f["cwnd"] for f in ra.of("cwnd")} == {4000}
    assert [f["kind"] for f in ra.of("loss")] == ["rto", "rto"]
    assert a.stats["dupacks_received"] == 0


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
