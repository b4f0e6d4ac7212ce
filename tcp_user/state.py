"""The TCP connection states and the one table of transitions between them.

In the manner of h11's ``_state.py``: a state is an enum member, an event is what makes the
state change, and :data:`TRANSITIONS` lists, per event, every state it may happen in and
where it leads.  :func:`next_state` is the only way :class:`~tcp_user.connection.TcpConnection`
changes state; an event the table does not allow in the current state raises
:class:`TcpStateError` instead of silently doing something.

The states are those of RFC 9293 sec. 3.3.2 (figure 5).  :class:`State` is a ``StrEnum``:
a member compares equal to its name as a plain string (``conn.state == "ESTABLISHED"``), and
the ``state`` log event carries exactly that string.

Where this table departs from RFC 9293 (deliberately, as the connection always did):

* A RST in SYN_RCVD leads to CLOSED, also after a passive open (the RFC returns to LISTEN);
  a listening endpoint here serves one connection.
* A SYN_SENT or SYN_RCVD endpoint whose user called close() stays put with its FIN queued
  and enters FIN_WAIT_1 (event CLOSE) as soon as it is ESTABLISHED.
"""
from __future__ import annotations

from enum import Enum, StrEnum


class State(StrEnum):
    """RFC 9293 sec. 3.3.2 connection states; each value is its log name."""

    CLOSED = "CLOSED"
    LISTEN = "LISTEN"
    SYN_SENT = "SYN_SENT"
    SYN_RCVD = "SYN_RCVD"
    ESTABLISHED = "ESTABLISHED"
    FIN_WAIT_1 = "FIN_WAIT_1"
    FIN_WAIT_2 = "FIN_WAIT_2"
    CLOSING = "CLOSING"
    TIME_WAIT = "TIME_WAIT"
    CLOSE_WAIT = "CLOSE_WAIT"
    LAST_ACK = "LAST_ACK"


class Event(Enum):
    """What moves a connection from one state to the next."""

    CONNECT = "connect"                  # user: active OPEN
    LISTEN = "listen"                    # user: passive OPEN
    CLOSE = "close"                      # user: CLOSE (or a close() deferred until ESTABLISHED)
    SYN_RECEIVED = "syn received"        # a SYN that does not acknowledge ours
    SYN_ACKED = "syn acked"              # the peer acknowledged our SYN
    FIN_RECEIVED = "fin received"        # the peer's FIN is in order
    FIN_ACKED = "fin acked"              # the peer acknowledged our FIN
    RESET = "reset"                      # an acceptable RST arrived
    ABORT = "abort"                      # max_retries consecutive RTOs without progress
    TIME_WAIT_EXPIRED = "time-wait expired"   # the 2*MSL timer (TcpConfig.time_wait)


S = State

# States in which our side may still (re)transmit data or FIN.
SEND_STATES = frozenset({S.ESTABLISHED, S.CLOSE_WAIT, S.FIN_WAIT_1, S.CLOSING, S.LAST_ACK})
# States in which the peer may still send us data (we have not seen its FIN).
RECV_STATES = frozenset({S.ESTABLISHED, S.FIN_WAIT_1, S.FIN_WAIT_2})
# RFC 9293 sec. 3.10.7.4: "Otherwise" -- the states whose segments go through the
# sequence-number acceptability test.
SYNCHRONIZED = frozenset({S.SYN_RCVD, S.ESTABLISHED, S.FIN_WAIT_1, S.FIN_WAIT_2, S.CLOSING,
                          S.TIME_WAIT, S.CLOSE_WAIT, S.LAST_ACK})

TRANSITIONS: dict[Event, dict[State, State]] = {
    # RFC 9293 sec. 3.10.1 OPEN call
    Event.CONNECT: {S.CLOSED: S.SYN_SENT},
    Event.LISTEN: {S.CLOSED: S.LISTEN},
    # RFC 9293 sec. 3.10.4 CLOSE call (SYN_SENT / SYN_RCVD: see the module docstring)
    Event.CLOSE: {S.LISTEN: S.CLOSED, S.ESTABLISHED: S.FIN_WAIT_1, S.CLOSE_WAIT: S.LAST_ACK},
    # RFC 9293 sec. 3.10.7.2 (LISTEN) and 3.10.7.3 (SYN_SENT: simultaneous open)
    Event.SYN_RECEIVED: {S.LISTEN: S.SYN_RCVD, S.SYN_SENT: S.SYN_RCVD},
    # RFC 9293 sec. 3.10.7.3 (SYN+ACK) and 3.10.7.4 fifth (SYN_RCVD: the ACK of our SYN)
    Event.SYN_ACKED: {S.SYN_SENT: S.ESTABLISHED, S.SYN_RCVD: S.ESTABLISHED},
    # RFC 9293 sec. 3.10.7.4 eighth: the FIN bit
    Event.FIN_RECEIVED: {S.ESTABLISHED: S.CLOSE_WAIT, S.FIN_WAIT_1: S.CLOSING,
                         S.FIN_WAIT_2: S.TIME_WAIT},
    # RFC 9293 sec. 3.10.7.4 fifth: the ACK field, once it covers our FIN
    Event.FIN_ACKED: {S.FIN_WAIT_1: S.FIN_WAIT_2, S.CLOSING: S.TIME_WAIT, S.LAST_ACK: S.CLOSED},
    # RFC 9293 sec. 3.10.7.3 and 3.10.7.4 second: an acceptable RST
    Event.RESET: {s: S.CLOSED for s in (S.SYN_SENT, *sorted(SYNCHRONIZED))},
    # RFC 9293 sec. 3.8.3 / RFC 1122 4.2.3.5 R2: give up after too many retransmissions
    Event.ABORT: {s: S.CLOSED for s in (S.SYN_SENT, S.SYN_RCVD, *sorted(SEND_STATES))},
    # RFC 9293 sec. 3.10.8: the time-wait timeout
    Event.TIME_WAIT_EXPIRED: {S.TIME_WAIT: S.CLOSED},
}


class TcpStateError(RuntimeError):
    """An event happened in a state where :data:`TRANSITIONS` does not allow it."""


def next_state(state: State, event: Event) -> State:
    """The state ``event`` leads to from ``state``; :class:`TcpStateError` if not allowed."""
    try:
        return TRANSITIONS[event][state]
    except KeyError:
        allowed = ", ".join(str(s) for s in TRANSITIONS[event])
        raise TcpStateError(f"TCP event {event.value!r} is not allowed in state {state} "
                            f"(only in {allowed})") from None
