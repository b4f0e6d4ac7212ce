"""Congestion control and loss recovery of the user-space TCP, one small class per variant.

The connection (:class:`tcp_user.connection.TcpConnection`) owns the sequence space, the
buffers, the RTT estimator and the timers; a :class:`CongestionControl` owns the rules that
decide how much may be in flight and what to do about losses.  The connection calls it at
five points:

=====================  ==========================================================
``on_sack_blocks``     an ACK carries SACK blocks (merge them, RFC 6675 Update())
``is_dupack``          does this ACK count as a duplicate ACK (RFC 5681 sec. 2)?
``on_new_ack``         the cumulative ACK advanced (cwnd grows only if cwnd-limited)
``on_dupack``          a duplicate ACK arrived
``on_rto``             the retransmission timer expired (after the loss is counted)
``send``               transmit what the windows allow (``segments_to_send``)
=====================  ==========================================================

``cwnd`` and ``ssthresh`` stay public attributes of the connection; a variant changes them
through ``conn._set_cwnd`` so that every change is logged (the ``cwnd`` event).

:data:`CONGESTION_CONTROLS` maps each ``tcp.variant`` name to its class.  Adding a variant is
writing its class and adding one line there; :data:`tcp_user.config.VARIANTS` and the
validation of :class:`tcp_user.config.TcpConfig` follow the registry.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

from tcp_user.sack import Scoreboard
from tcp_user.segment import Segment, unwrap


class Sender(Protocol):
    """What a congestion control reads and calls of its connection (tcp_user.connection.TcpConnection).

    Declared here rather than imported, so that the connection, which builds its congestion control
    from the registry below, and the variants do not import each other.
    """

    config: Any               # tcp_user.config.TcpConfig (config imports this module for its registry)
    cwnd: int
    ssthresh: int
    rto: float
    flight_size: int
    _iss: int
    _snd_una: int
    _snd_nxt: int
    _snd_max: int
    _snd_wnd: int
    _max_snd_wnd: int
    _data_end: int
    _rto_deadline: float | None

    def _set_cwnd(self, now: float, cwnd: int, ssthresh: int) -> None: ...
    def _count_loss(self, now: float, kind: str, **extra: float) -> None: ...
    def _seg_len(self, start: int) -> int: ...
    def _build(self, start: int, n: int, now: float) -> Segment: ...
    def _output_window(self, now: float, out: list[Segment]) -> None: ...
    def _end_seq(self) -> int: ...



def is_cwnd_limited(flight_size: int, cwnd: int, mss: int) -> bool:
    """Whether the sender was cwnd-limited when an ACK arrived: the FlightSize just before the
    ACK left no room in cwnd for another full segment.

    RFC 7661 sec. 4.3 (after RFC 2861, which it obsoletes): cwnd is "validated" only by being
    used; a sender that is not cwnd-limited -- the receiver's window or the application holds
    it back -- must not keep raising a cwnd it does not use (RFC 5681 sec. 3.1's growth rules
    assume the window is full).  The test is the simplest form of that condition (the output
    stopped because cwnd was full: Linux's tcp_is_cwnd_limited asks the same outside slow
    start); RFC 7661's pipeACK estimate and non-validated phase are not implemented.
    """
    return flight_size + mss > cwnd


class CongestionControl(ABC):
    """What every variant shares: RFC 5681 slow start, congestion avoidance and the RTO
    response, plus the recovery state the connection's output reads.

    Subclasses decide what a duplicate ACK is and what it triggers (:meth:`is_dupack`,
    :meth:`on_dupack`) and how recovery ends (:meth:`on_recovery_ack`).
    """

    uses_sack: ClassVar[bool] = False
    """True: the receiver reports SACK blocks (RFC 2018) and :attr:`scoreboard` is kept."""

    def __init__(self, conn: Sender) -> None:
        self.conn = conn
        self.config = conn.config
        self.mss = conn.config.mss
        self.dupacks = 0                   # consecutive duplicate ACKs
        self.lt_extra = 0                  # RFC 3042 limited-transmit allowance (bytes)
        self.in_recovery = False           # Reno fast recovery / RFC 6675 loss recovery
        self.recovery_point = 0            # RFC 6675 RecoveryPoint (Reno: SND.MAX at the last RTO)
        self.fast_rtx_pending = False      # retransmit the segment at SND.UNA with the next output
        self.rto_recovery = False          # slow start after an RTO, until RecoveryPoint (SACK)
        self.scoreboard: Scoreboard | None = None   # RFC 6675 scoreboard, when uses_sack
        self._last_rto_una: int | None = None       # SND.UNA at the last RTO

    # ------------------------------------------------------------------ ACK input
    def on_sack_blocks(self, blocks: tuple[tuple[int, int], ...], ack: int) -> int:
        """Merge the SACK blocks of an ACK; returns the bytes newly SACKed (no SACK: 0)."""
        return 0

    @abstractmethod
    def is_dupack(self, seg: Segment, prev_wnd: int, new_sacked: int) -> bool:
        """Whether a pure ACK that does not advance SND.UNA, sent while data is
        outstanding, is a duplicate ACK.  ``prev_wnd`` is the peer's window before it."""

    @abstractmethod
    def on_dupack(self, now: float) -> None:
        """A duplicate ACK arrived."""

    def on_new_ack(self, now: float, ack: int, newly: int, flight: int) -> None:
        """SND.UNA advanced to ``ack``, acknowledging ``newly`` bytes of data; ``flight`` is
        the FlightSize just before this ACK (what the sender had in use)."""
        self.dupacks = 0
        self.lt_extra = 0
        self._last_rto_una = None
        if self.rto_recovery and ack >= self.recovery_point:
            self.rto_recovery = False
        if self.in_recovery:
            self.on_recovery_ack(now, ack)
        elif newly and is_cwnd_limited(flight, self.conn.cwnd, self.mss):   # RFC 7661 sec. 4.3
            self.grow(now, newly)

    def on_recovery_ack(self, now: float, ack: int) -> None:
        """A new ACK during recovery.  Default: recovery ends at once (RFC 5681 sec. 3.2
        step 6, "deflate" cwnd to ssthresh)."""
        self.exit_recovery(now)

    def exit_recovery(self, now: float) -> None:
        self.in_recovery = False
        ssthresh = self.conn.ssthresh
        self.conn._set_cwnd(now, ssthresh, ssthresh)

    def grow(self, now: float, newly: int) -> None:
        """RFC 5681 sec. 3.1: slow start below ssthresh (eq. 2, at most one SMSS per ACK),
        congestion avoidance above it (eq. 3, about one SMSS per RTT)."""
        conn = self.conn
        mss = self.mss
        cwnd = conn.cwnd
        if cwnd < conn.ssthresh:
            cwnd += newly if newly < mss else mss
        else:
            inc = mss * mss // cwnd
            cwnd += inc if inc > 0 else 1
        conn._set_cwnd(now, cwnd, conn.ssthresh)

    # ------------------------------------------------------------------ timeout
    def on_rto(self, now: float) -> None:
        """The retransmission timer expired with data outstanding.

        RFC 5681 sec. 3.1: ssthresh set to "no more than" eq. (4) -- held if this same
        segment already timed out -- and cwnd to the loss window of one segment.  A timeout
        during fast/loss recovery keeps the recovery's ssthresh when that is lower (the
        inflated flight would raise it; Linux does so too).
        """
        conn = self.conn
        mss = self.mss
        una = conn._snd_una
        ssthresh = conn.ssthresh
        if self._last_rto_una != una:
            eq4 = max(conn.flight_size // 2, 2 * mss)
            ssthresh = min(eq4, ssthresh) if self.in_recovery else eq4
        self._last_rto_una = una
        conn._set_cwnd(now, mss, ssthresh)
        self.in_recovery = False
        self.dupacks = 0
        self.lt_extra = 0
        self.fast_rtx_pending = False
        self.recovery_point = conn._snd_max

    # ------------------------------------------------------------------ output
    def send(self, now: float, out: list[Segment]) -> None:
        """Transmit what the windows allow (the connection's min(cwnd, rwnd) sender)."""
        self.conn._output_window(now, out)

    def limited_transmit(self) -> None:
        """RFC 3042 / RFC 5681 sec. 3.2 step 1: the first two dupacks each allow one
        more segment beyond cwnd, if ``limited_transmit`` is on."""
        if self.config.limited_transmit and self.dupacks < self.config.dupack_threshold:
            self.lt_extra = min(self.dupacks, 2) * self.mss


class Reno(CongestionControl):
    """RFC 5681 Reno: fast retransmit at the third duplicate ACK, fast recovery with cwnd
    inflation, leaving recovery on the first new ACK."""

    def is_dupack(self, seg: Segment, prev_wnd: int, new_sacked: int) -> bool:
        # RFC 5681 sec. 2 (DUPLICATE ACKNOWLEDGMENT, condition e): the window is unchanged
        return seg.window == prev_wnd

    def on_dupack(self, now: float) -> None:
        conn = self.conn
        mss = self.mss
        if self.in_recovery:               # RFC 5681 sec. 3.2 step 4: inflate
            conn._set_cwnd(now, conn.cwnd + mss, conn.ssthresh)
            return
        self.dupacks += 1
        cfg = self.config
        # reno_rto_guard: after an RTO, ignore dupacks for data sent before it (RFC 6582 sec. 4)
        if self.dupacks == cfg.dupack_threshold and not (
                cfg.reno_rto_guard and conn._snd_una < self.recovery_point):
            # RFC 5681 sec. 3.2 steps 2-3: fast retransmit, enter fast recovery
            ssthresh = max(conn.flight_size // 2, 2 * mss)     # eq. (4)
            self.in_recovery = True
            self.lt_extra = 0
            self.fast_rtx_pending = True
            conn._count_loss(now, "dupack")
            conn._set_cwnd(now, ssthresh + 3 * mss, ssthresh)
        else:
            self.limited_transmit()


class SackRecovery(CongestionControl):
    """SACK (RFC 2018) with the conservative loss recovery of RFC 6675: a scoreboard, pipe
    instead of cwnd inflation, NextSeg() choosing what to send, recovery until RecoveryPoint."""

    uses_sack = True

    def __init__(self, conn: Sender) -> None:
        super().__init__(conn)
        self.scoreboard = Scoreboard()
        self.high_rxt = 0                  # RFC 6675 HighRxt (one past)

    def on_sack_blocks(self, blocks: tuple[tuple[int, int], ...], ack: int) -> int:
        """RFC 6675 sec. 5 Update(): merge the reported SACK blocks."""
        iss = self.conn._iss
        high = self.conn._snd_max
        sb = self.scoreboard
        added = 0
        for left, right in blocks:
            s = unwrap(left, iss, ack)
            e = unwrap(right, iss, ack)
            if s < ack:
                s = ack
            if e <= s or e > high:          # stale (below ACK) or bogus (beyond HighData)
                continue
            added += sb.add(s, e)
        return added

    def is_dupack(self, seg: Segment, prev_wnd: int, new_sacked: int) -> bool:
        # RFC 6675 sec. 2: a duplicate ACK is one that SACKs new data (or, without SACK
        # blocks, the RFC 5681 definition)
        return new_sacked > 0 or (not seg.sack and seg.window == prev_wnd)

    def on_new_ack(self, now: float, ack: int, newly: int, flight: int) -> None:
        self.scoreboard.advance(ack)
        super().on_new_ack(now, ack, newly, flight)

    def on_recovery_ack(self, now: float, ack: int) -> None:
        # RFC 6675 sec. 5 (A): recovery ends once RecoveryPoint is acknowledged; a partial
        # ACK leaves cwnd alone (pipe shrinks instead)
        if ack >= self.recovery_point:
            self.exit_recovery(now)

    def on_dupack(self, now: float) -> None:
        if self.in_recovery:
            return                          # RFC 6675: pipe accounting does the rest
        self.dupacks += 1
        conn = self.conn
        cfg = self.config
        # RFC 6675 sec. 5 steps (1)-(2); sec. 5.1: not before RecoveryPoint after an RTO
        if conn._snd_una >= self.recovery_point and (
                self.dupacks >= cfg.dupack_threshold
                or self.scoreboard.is_lost(conn._snd_una, cfg.dupack_threshold, self.mss)):
            self.enter_recovery(now)
        else:
            self.limited_transmit()

    def enter_recovery(self, now: float) -> None:
        """RFC 6675 sec. 5 step (4)."""
        conn = self.conn
        mss = self.mss
        self.recovery_point = conn._snd_max
        ssthresh = max(conn.flight_size // 2, 2 * mss)
        self.in_recovery = True
        self.lt_extra = 0
        self.high_rxt = conn._snd_una
        self.fast_rtx_pending = True
        conn._count_loss(now, "dupack")
        conn._set_cwnd(now, ssthresh, ssthresh)

    def on_rto(self, now: float) -> None:
        super().on_rto(now)
        # RFC 6675 sec. 5.1: keep the scoreboard (our receiver never reneges), do not start
        # a new recovery before RecoveryPoint, skip SACKed data when resending.  (HighRxt is read
        # only in recovery, and enter_recovery sets it first.)
        self.rto_recovery = True

    def send(self, now: float, out: list[Segment]) -> None:
        if self.in_recovery:
            self._send_in_recovery(now, out)
        else:
            self.conn._output_window(now, out)

    def _send_in_recovery(self, now: float, out: list[Segment]) -> None:
        """RFC 6675 sec. 5 step (C): transmit while cwnd - pipe >= 1 SMSS, per NextSeg()."""
        conn = self.conn
        mss = self.mss
        una = conn._snd_una
        sb = self.scoreboard
        if self.fast_rtx_pending:          # step (4.3): the first segment, regardless of pipe
            self.fast_rtx_pending = False
            if una < conn._snd_max:
                n = conn._seg_len(una)
                out.append(conn._build(una, n, now))
                conn._rto_deadline = now + conn.rto     # restart, as 4.4BSD and Linux do
                end = una + max(n, 1)
                if end > self.high_rxt:
                    self.high_rxt = end
        holes = sb.holes(una, self.config.dupack_threshold, mss)
        pipe = sb.pipe(una, conn._snd_max, self.high_rxt, holes)   # SetPipe()
        data_end = conn._data_end
        end_seq = conn._end_seq()
        while conn.cwnd - pipe >= mss:
            start = -1
            high_rxt = self.high_rxt
            for a, b, lost in holes:        # NextSeg rule (1): lost, un-SACKed, above HighRxt
                if not lost:
                    break
                s = a if a > high_rxt else high_rxt
                if s < b:
                    start = s
                    break
            if start < 0:                   # rule (2): new data, if the peer's window allows
                nxt = conn._snd_nxt
                if nxt < end_seq and nxt >= conn._snd_max:
                    n = min(mss, data_end - nxt) if nxt < data_end else 0
                    room = una + conn._snd_wnd - nxt
                    if n == 0 or room >= n or (room > 0 and 2 * room >= conn._max_snd_wnd):
                        n = n if n == 0 or room >= n else room
                        out.append(conn._build(nxt, n, now))
                        pipe += n
                        continue
                for a, b, _lost in holes:   # rule (3): any un-SACKed octet above HighRxt
                    s = a if a > high_rxt else high_rxt
                    if s < b:
                        start = s
                        break
            n = conn._seg_len(start) if start >= 0 else 0
            if n <= 0:
                break
            out.append(conn._build(start, n, now))
            if start + n > self.high_rxt:
                self.high_rxt = start + n
            pipe += n


# The registry: ``tcp.variant`` name -> class.  One line per variant.
CONGESTION_CONTROLS: dict[str, type[CongestionControl]] = {
    "reno": Reno,            # RFC 5681
    "sack": SackRecovery,    # RFC 2018 + RFC 6675
}
