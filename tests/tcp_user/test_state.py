"""tcp_user/state.py: the states and the one transition table (RFC 9293 figure 5), and a connection that
refuses an event its state does not allow.
"""
from __future__ import annotations

import pytest
from tcp_user.state import (RECV_STATES, SEND_STATES, SYNCHRONIZED, TRANSITIONS, Event, State, TcpStateError,
                            next_state)


# ====================================================================================================
# tcp_user/segment.py and tcp_user/state.py, rule by rule (issue 30, mutation run).
#
# segment.py: the header's control bits where RFC 9293 sec. 3.1 puts them (FIN 0x01, SYN 0x02, RST 0x04,
# ACK 0x10), four SACK blocks without timestamps (RFC 2018 sec. 3), six SNACK entries (paper 002), the
# sequence space consumed (RFC 9293 sec. 3.4: SEG.LEN counts SYN and FIN), and the modular comparison
# done once (RFC 9293 sec. 3.4; RFC 1982's half-space rule): a 32-bit number is the unwrapped one nearest
# the reference, at most 2**31 - 1 ahead or 2**31 behind.
#
# state.py: RFC 9293 sec. 3.3.2 (figure 5) as the module's table writes it, with the two departures its
# docstring names; an event outside the table is refused with the event and the states it is allowed in.

# ---------------------------------------------------------------- state.py
S, E = State, Event


#: RFC 9293 figure 5 as the module implements it (RST in SYN_RCVD -> CLOSED; CLOSE in SYN_SENT/SYN_RCVD
#: deferred until ESTABLISHED, so not in the table)
EXPECTED = {
    E.CONNECT: {S.CLOSED: S.SYN_SENT},
    E.LISTEN: {S.CLOSED: S.LISTEN},
    E.CLOSE: {S.LISTEN: S.CLOSED, S.ESTABLISHED: S.FIN_WAIT_1, S.CLOSE_WAIT: S.LAST_ACK},
    E.SYN_RECEIVED: {S.LISTEN: S.SYN_RCVD, S.SYN_SENT: S.SYN_RCVD},
    E.SYN_ACKED: {S.SYN_SENT: S.ESTABLISHED, S.SYN_RCVD: S.ESTABLISHED},
    E.FIN_RECEIVED: {S.ESTABLISHED: S.CLOSE_WAIT, S.FIN_WAIT_1: S.CLOSING, S.FIN_WAIT_2: S.TIME_WAIT},
    E.FIN_ACKED: {S.FIN_WAIT_1: S.FIN_WAIT_2, S.CLOSING: S.TIME_WAIT, S.LAST_ACK: S.CLOSED},
    E.RESET: {s: S.CLOSED for s in (S.SYN_SENT, S.SYN_RCVD, S.ESTABLISHED, S.FIN_WAIT_1, S.FIN_WAIT_2,
                                    S.CLOSING, S.TIME_WAIT, S.CLOSE_WAIT, S.LAST_ACK)},
    E.ABORT: {s: S.CLOSED for s in (S.SYN_SENT, S.SYN_RCVD, S.ESTABLISHED, S.CLOSE_WAIT, S.FIN_WAIT_1,
                                    S.CLOSING, S.LAST_ACK)},
    E.TIME_WAIT_EXPIRED: {S.TIME_WAIT: S.CLOSED},
}


def test_the_transition_table_is_rfc_9293_figure_5() -> None:
    assert TRANSITIONS == EXPECTED
    for event, moves in EXPECTED.items():
        for src, dst in moves.items():
            assert next_state(src, event) is dst


def test_the_state_sets() -> None:
    assert SEND_STATES == {S.ESTABLISHED, S.CLOSE_WAIT, S.FIN_WAIT_1, S.CLOSING, S.LAST_ACK}
    assert RECV_STATES == {S.ESTABLISHED, S.FIN_WAIT_1, S.FIN_WAIT_2}
    # RFC 9293 sec. 3.10.7.4 "Otherwise": every state but CLOSED, LISTEN and SYN_SENT
    assert SYNCHRONIZED == set(State) - {S.CLOSED, S.LISTEN, S.SYN_SENT}


def test_a_state_is_its_name() -> None:
    for s in State:
        assert s == s.name and s.value == s.name and str(s) == s.name


EVENT_NAMES = {E.CONNECT: "connect", E.LISTEN: "listen", E.CLOSE: "close", E.SYN_RECEIVED: "syn received",
               E.SYN_ACKED: "syn acked", E.FIN_RECEIVED: "fin received", E.FIN_ACKED: "fin acked",
               E.RESET: "reset", E.ABORT: "abort", E.TIME_WAIT_EXPIRED: "time-wait expired"}


def test_every_event_outside_the_table_is_refused_naming_the_event_and_where_it_is_allowed() -> None:
    assert {e: e.value for e in Event} == EVENT_NAMES
    for event, moves in EXPECTED.items():
        for state in set(State) - set(moves):
            with pytest.raises(TcpStateError) as err:
                next_state(state, event)
            head, _, allowed = str(err.value).partition(" (only in ")
            assert head == f"TCP event {EVENT_NAMES[event]!r} is not allowed in state {state.name}"
            assert allowed.endswith(")") and set(allowed[:-1].split(", ")) == {s.name for s in moves}
            assert err.value.__cause__ is None and err.value.__suppress_context__


# ====================================================================================================
# The readable parts of tcp_user: the state table, the congestion-control registry, SNACK-TCP.


# ---------------------------------------------------------------- states
def test_the_table_refuses_an_event_not_allowed_in_the_state() -> None:
    with pytest.raises(TcpStateError, match=r"'fin acked' is not allowed in state ESTABLISHED"):
        next_state(State.ESTABLISHED, Event.FIN_ACKED)
    with pytest.raises(TcpStateError, match="not allowed in state CLOSED"):
        next_state(State.CLOSED, Event.TIME_WAIT_EXPIRED)
    assert next_state(State.FIN_WAIT_2, Event.FIN_RECEIVED) is State.TIME_WAIT


def test_the_table_has_no_self_loops_and_reaches_every_state() -> None:
    reached = {State.CLOSED}
    for event, moves in TRANSITIONS.items():
        for src, dst in moves.items():
            assert src != dst, f"{event}: {src} -> itself"
            reached.add(dst)
    assert reached == set(State)
    assert set(TRANSITIONS) == set(Event)
