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
``on_delivered``       segments newly delivered, with their transmission times (RACK)
``on_timer``           the variant's own timer (``timer_at``: RACK's reordering timer) ran out
``frto_ack``           F-RTO (RFC 5682, ``frto``): a duplicate ACK after a timeout (new ACKs: on_new_ack)
``frto_send_new``      F-RTO's two new segments after a timeout, before ``send``
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

from tcp_user.rack import Rack, Tlp, probe_timeout
from tcp_user.sack import Scoreboard
from tcp_user.segment import Segment, sack_ranges
from tcp_user.sent import SentLog


class Sender(Protocol):
    """What a congestion control reads and calls of its connection (tcp_user.connection.TcpConnection).

    Declared here rather than imported, so that the connection, which builds its congestion control
    from the registry below, and the variants do not import each other.
    """

    config: Any               # tcp_user.config.TcpConfig (config imports this module for its registry)
    cwnd: int
    ssthresh: int
    rto: float
    srtt: float | None
    _sent: SentLog
    flight_size: int
    _iss: int
    _snd_una: int
    _snd_nxt: int
    _snd_max: int
    _snd_wnd: int
    _max_snd_wnd: int
    _data_end: int
    _rto_deadline: float | None
    stats: dict[str, int]

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
        # F-RTO (RFC 5682 sec. 2.1, config.frto): which ACK after a timeout's retransmission comes next (2: the
        # first, 3: the second, 0: not detecting); recover (the RFC's: highest sequence sent, not one past)
        self.frto_step = 0
        self.frto_recover: int | None = None
        self.frto_new_pending = False      # step 2b: send up to two new segments with the next output
        self._frto_rtx_end = 0             # end of the segment step 1 retransmitted
        self._frto_undo = (0, 0)           # cwnd, ssthresh before the timeout

    # ------------------------------------------------------------------ ACK input
    def on_sack_blocks(self, blocks: tuple[tuple[int, int], ...], ack: int) -> int:
        """Merge the SACK blocks of an ACK; returns the bytes newly SACKed (no SACK: 0)."""
        return 0

    def on_delivered(self, now: float, delivered: list[tuple[float, int, int, bool]]) -> None:
        """Segments this ACK newly delivered: (last transmission time, its order, end, retransmitted) each.
        Default: nothing (only time-based loss detection reads them)."""

    @property
    def timer_at(self) -> float | None:
        """When :meth:`on_timer` is due (None: no timer of the variant's own)."""
        return None

    def on_timer(self, now: float) -> None:
        """The variant's own timer ran out."""

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
            self.on_recovery_ack(now, ack, newly)
        elif newly and is_cwnd_limited(flight, self.conn.cwnd, self.mss):   # RFC 7661 sec. 4.3
            self.grow(now, newly)
        self.frto_ack(now, True)            # F-RTO (RFC 5682): a new ACK after a timeout

    def on_recovery_ack(self, now: float, ack: int, newly: int) -> None:
        """A new ACK during recovery, acknowledging ``newly`` bytes.  Default: recovery ends at once
        (RFC 5681 sec. 3.2 step 6, "deflate" cwnd to ssthresh)."""
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
        if self.config.frto:
            self.frto_timeout(self.in_recovery)
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

    # ------------------------------------------------------------------ F-RTO (RFC 5682)
    def frto_timeout(self, in_recovery: bool) -> None:
        # RFC 5682 sec. 2.1 step 1: detect only if no earlier timeout's recovery is on (recover < SND.UNA)
        conn = self.conn
        una = conn._snd_una
        again = self.frto_recover is not None and self.frto_recover >= una
        self.frto_recover = conn._snd_max - 1
        # (nor after a timeout in fast recovery, as Linux: its cwnd there is no value to undo to)
        self.frto_step = 0 if again or in_recovery else 2
        self.frto_new_pending = False
        self._frto_rtx_end = una + conn._seg_len(una)
        self._frto_undo = (conn.cwnd, conn.ssthresh)

    def frto_ack(self, now: float, advanced: bool) -> None:
        """RFC 5682 sec. 2.1 steps 2-3: the first and second ACK after the timeout's retransmission, a new ACK
        (``advanced``) or a duplicate ACK, decide whether the timeout was spurious (any ACK outside them: nothing)."""
        step = self.frto_step
        conn = self.conn
        una = conn._snd_una
        if step == 2:
            self.frto_step = 0
            # step 2a: a dupack or an ACK short of the retransmitted segment (SND.UNA below its end either way), or
            # one covering recover: conventional recovery
            recover = self.frto_recover
            if recover is None or una > recover or una < self._frto_rtx_end:
                return
            # step 2b: new data instead of go-back-N, if the peer's window and the application allow it
            nxt = conn._snd_max
            if nxt < conn._data_end and nxt < una + conn._snd_wnd:
                self.frto_new_pending = True
                conn._snd_nxt = nxt
                self.frto_step = 3
        elif step == 3:
            self.frto_step = 0
            if advanced:
                self.frto_spurious(now)
            else:
                # step 3a: the loss was real: cwnd of (at most) 3 SMSS, slow start retransmitting from SND.UNA
                conn._set_cwnd(now, 3 * self.mss, conn.ssthresh)
                self.frto_new_pending = False
                conn._snd_nxt = una

    def frto_spurious(self, now: float) -> None:
        # RFC 5682 sec. 2.1 step 3b: spurious, recover = SND.UNA; the response (sec. 4) undoes cwnd and ssthresh to
        # their values before the timeout (as Linux; RFC 4015's Eifel response is not implemented)
        conn = self.conn
        conn.stats["frto_spurious"] += 1
        self.frto_recover = conn._snd_una
        self.recovery_point = conn._snd_una      # the timeout's RecoveryPoint / recover guard no longer holds
        self.rto_recovery = False
        self._last_rto_una = None
        cwnd, ssthresh = self._frto_undo
        conn._set_cwnd(now, cwnd, ssthresh)

    def frto_send_new(self, now: float, out: list[Segment]) -> None:
        """RFC 5682 sec. 2.1 step 2b: up to two new (never sent) segments, outside cwnd, within the peer's window."""
        if not self.frto_new_pending:
            return
        self.frto_new_pending = False
        conn = self.conn
        for _ in range(2):
            nxt = conn._snd_max
            n = min(conn._seg_len(nxt), conn._snd_una + conn._snd_wnd - nxt)
            if n <= 0:
                break
            out.append(conn._build(nxt, n, now))

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
    inflation, leaving recovery on the first new ACK; with ``newreno``, RFC 6582 NewReno: recovery
    lasts until ``recover`` (:attr:`recovery_point`) is acknowledged, each partial ACK resending the
    next hole."""

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
        # reno_rto_guard: after an RTO, ignore dupacks for data sent before it (RFC 6582 sec. 4);
        # newreno: the same test against ``recover``, set at each fast retransmit too
        if self.dupacks == cfg.dupack_threshold and not (
                (cfg.reno_rto_guard or cfg.newreno) and not self.covers_recover()):
            # RFC 5681 sec. 3.2 steps 2-3: fast retransmit, enter fast recovery
            ssthresh = max(conn.flight_size // 2, 2 * mss)     # eq. (4)
            if cfg.newreno:
                self.recovery_point = conn._snd_max            # RFC 6582 sec. 3.2 step 2: recover
            self.in_recovery = True
            self.lt_extra = 0
            self.fast_rtx_pending = True
            conn._count_loss(now, "dupack")
            conn._set_cwnd(now, ssthresh + 3 * mss, ssthresh)
        else:
            self.limited_transmit()

    def covers_recover(self) -> bool:
        # RFC 6582 sec. 3.2 step 2 (sec. 4.1): the cumulative ACK covers more than recover (one past here)
        return self.conn._snd_una >= self.recovery_point

    def on_recovery_ack(self, now: float, ack: int, newly: int) -> None:
        """RFC 5681 Reno leaves fast recovery on the first new ACK; NewReno (``newreno``) only on a full one."""
        if not self.config.newreno:
            super().on_recovery_ack(now, ack, newly)
        elif ack >= self.recovery_point:
            self.full_ack(now)
        else:
            self.partial_ack(now, newly)

    def partial_ack(self, now: float, newly: int) -> None:
        # RFC 6582 sec. 3.2 step 5: resend the first unacknowledged segment, deflate cwnd by the bytes
        # acknowledged (one SMSS added back if at least one SMSS was), stay in fast recovery.  The timer is
        # restarted on every partial ACK (the connection's RFC 6298 sec. 5.3 and the fast retransmit's
        # restart): sec. 4's Slow-but-Steady variant.  (cwnd is kept at one SMSS at least.)
        conn = self.conn
        mss = self.mss
        self.fast_rtx_pending = True
        cwnd = conn.cwnd - newly + (mss if newly >= mss else 0)
        conn._set_cwnd(now, cwnd if cwnd > mss else mss, conn.ssthresh)

    def full_ack(self, now: float) -> None:
        # RFC 6582 sec. 3.2 step 6, option (1): cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS), no burst
        conn = self.conn
        mss = self.mss
        self.in_recovery = False
        ssthresh = conn.ssthresh
        flight = conn.flight_size
        conn._set_cwnd(now, min(ssthresh, (flight if flight > mss else mss) + mss), ssthresh)


class SackRecovery(CongestionControl):
    """SACK (RFC 2018) with the conservative loss recovery of RFC 6675: a scoreboard, pipe
    instead of cwnd inflation, NextSeg() choosing what to send, recovery until RecoveryPoint."""

    uses_sack = True

    def __init__(self, conn: Sender) -> None:
        super().__init__(conn)
        self.scoreboard = Scoreboard()
        self.high_rxt = 0                  # RFC 6675 HighRxt (one past)
        # RFC 8985 RACK beside the dupack rule (config.rack, as Linux's tcp_recovery = 1)
        self.rack: Rack | None = Rack() if conn.config.rack else None
        self.tlp: Tlp | None = Tlp() if conn.config.rack else None    # RFC 8985 sec. 7, with RACK
        self._fack = 0                     # highest sequence delivered (RACK's reordering test)

    def on_sack_blocks(self, blocks: tuple[tuple[int, int], ...], ack: int) -> int:
        """RFC 6675 sec. 5 Update(): merge the reported SACK blocks."""
        sb = self.scoreboard
        return sum(sb.add(s, e) for s, e in sack_ranges(blocks, self.conn._iss, ack, self.conn._snd_max))

    def is_dupack(self, seg: Segment, prev_wnd: int, new_sacked: int) -> bool:
        # RFC 6675 sec. 2: a duplicate ACK is one that SACKs new data (or, without SACK
        # blocks, the RFC 5681 definition)
        return new_sacked > 0 or (not seg.sack and seg.window == prev_wnd)

    def on_delivered(self, now: float, delivered: list[tuple[float, int, int, bool]]) -> None:
        """RFC 8985 sec. 6.2 steps 2-3 for each newly delivered segment."""
        rack = self.rack
        if rack is None:
            return
        fack = self._fack
        for xmit_ts, order, end, retransmitted in delivered:
            rack.on_delivered(xmit_ts, order, end, retransmitted, now, fack)
            if end > self._fack:
                self._fack = end

    def rack_detect(self, now: float) -> None:
        """RFC 8985 sec. 6.2 steps 4-5, and its sec. 7.1 response: a loss RACK finds starts fast recovery
        (not before RecoveryPoint after a timeout, RFC 6675 sec. 5.1); in recovery the lost segments are
        resent first (:meth:`_send_in_recovery`)."""
        rack = self.rack
        if rack is None:
            return
        conn = self.conn
        cfg = self.config
        reo = rack.reo_wnd(self.in_recovery, self.scoreboard.sacked // self.mss, cfg.dupack_threshold, conn.srtt)
        if rack.detect_loss(conn._sent, conn._snd_una, now, reo) and not self.in_recovery \
                and conn._snd_una >= self.recovery_point:
            self.enter_recovery(now)

    @property
    def timer_at(self) -> float | None:
        rack, tlp = self.rack, self.tlp
        if rack is None or tlp is None:
            return None
        a, b = rack.timeout_at, tlp.pto_at
        return a if b is None else b if a is None else min(a, b)

    def on_timer(self, now: float) -> None:
        """RACK's reordering timer (RFC 8985 sec. 6.3): look for losses again; the PTO (sec. 7.3):
        send a probe with the next output."""
        rack, tlp = self.rack, self.tlp
        if rack is None or tlp is None:
            return
        if rack.timeout_at is not None and now >= rack.timeout_at:
            self.rack_detect(now)
        if tlp.pto_at is not None and now >= tlp.pto_at:
            tlp.pto_at = None
            conn = self.conn
            if not self.in_recovery and not self.rto_recovery and conn._snd_una < conn._snd_max:
                tlp.pending = True
                conn._rto_deadline = now + conn.rto     # sec. 7.3: the probe, then the RTO timer

    def schedule_probe(self, now: float) -> None:
        """RFC 8985 sec. 7.2: (re)start the PTO after new data went out or an ACK advanced, when no probe
        is out, outside recovery, with an RTT measured.  When the retransmission timer would fire first,
        the probe goes at its time instead (as Linux's tcp_schedule_loss_probe: min(PTO, RTO))."""
        tlp, conn = self.tlp, self.conn
        if tlp is None:
            return
        tlp.pto_at = None
        srtt = conn.srtt
        flight = conn._snd_max - conn._snd_una
        if srtt is None or flight <= 0 or tlp.end is not None or self.in_recovery or self.rto_recovery:
            return
        at = now + probe_timeout(srtt, flight, self.mss)
        rto_at = conn._rto_deadline
        tlp.pto_at = at if rto_at is None or at < rto_at else rto_at

    def on_new_ack(self, now: float, ack: int, newly: int, flight: int) -> None:
        self.scoreboard.advance(ack)
        super().on_new_ack(now, ack, newly, flight)
        tlp = self.tlp
        if tlp is not None and tlp.on_ack(ack, True, True):
            self.reduce_after_probe(now)
        self.rack_detect(now)
        self.schedule_probe(now)

    def reduce_after_probe(self, now: float) -> None:
        """RFC 8985 sec. 7.4.2: the probe repaired a loss; the congestion response is a cwnd reduction (as
        Linux enters and leaves CWR at once: ssthresh and cwnd to the variant's reduced window)."""
        conn = self.conn
        ssthresh = max(conn.cwnd // 2, 2 * self.mss)
        conn._set_cwnd(now, min(conn.cwnd, ssthresh), ssthresh)

    def on_recovery_ack(self, now: float, ack: int, newly: int) -> None:
        # RFC 6675 sec. 5 (A): recovery ends once RecoveryPoint is acknowledged; a partial
        # ACK leaves cwnd alone (pipe shrinks instead)
        if ack >= self.recovery_point:
            self.exit_recovery(now)

    def on_dupack(self, now: float) -> None:
        tlp = self.tlp
        if tlp is not None and tlp.on_ack(self.conn._snd_una, False, True):
            self.reduce_after_probe(now)
        self.rack_detect(now)               # RACK first: it may start recovery itself
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
        if self.tlp is not None:            # a recovery ends what a probe was for
            self.tlp.end = None
            self.tlp.pto_at = None

    def on_rto(self, now: float) -> None:
        super().on_rto(now)
        if self.tlp is not None:
            self.tlp.end = None
            self.tlp.pto_at = None
            self.tlp.pending = False
        # RFC 6675 sec. 5.1: keep the scoreboard (our receiver never reneges), do not start
        # a new recovery before RecoveryPoint, skip SACKed data when resending.  (HighRxt is read
        # only in recovery, and enter_recovery sets it first.)
        self.rto_recovery = True

    def send(self, now: float, out: list[Segment]) -> None:
        conn = self.conn
        high = conn._snd_max
        tlp = self.tlp
        if tlp is not None and tlp.pending:
            tlp.pending = False
            self._send_probe(now, out, tlp)
        if self.in_recovery:
            self._send_in_recovery(now, out)
        else:
            conn._output_window(now, out)
        if conn._snd_max > high and tlp is not None and tlp.end is None:
            self.schedule_probe(now)        # new data went out: the PTO starts again

    def _send_probe(self, now: float, out: list[Segment], tlp: Tlp) -> None:
        """RFC 8985 sec. 7.3: one new segment if the peer's window allows, else the last segment sent
        again; then the retransmission timer starts again."""
        conn = self.conn
        nxt = conn._snd_nxt
        n = conn._seg_len(nxt) if nxt == conn._snd_max else 0
        if n > 0 and nxt + n <= conn._snd_una + conn._snd_wnd:
            out.append(conn._build(nxt, n, now))
            tlp.retrans = False
        else:
            log = conn._sent
            i = len(log.starts) - 1
            while i >= 0 and log.sacked[i]:
                i -= 1
            if i < 0 or log.ends[i] <= conn._snd_una:
                return
            end = log.ends[i]
            start = max(log.starts[i], end - self.mss, conn._snd_una)
            n = conn._seg_len(start)
            if n <= 0:
                return
            out.append(conn._build(start, n, now))
            tlp.retrans = True
        tlp.end = conn._snd_max
        tlp.probes += 1
        conn._rto_deadline = now + conn.rto

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
        if self.rack is not None:
            pipe = self._send_rack_lost(now, out, pipe)
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


    def _send_rack_lost(self, now: float, out: list[Segment], pipe: int) -> int:
        """RFC 8985 sec. 7.1 with RFC 6675's NextSeg: the segments RACK marked lost go first, lowest first,
        while cwnd - pipe allows; one resent before (below HighRxt) is no longer in flight, so SetPipe's
        count of it comes off first.  Returns the pipe."""
        conn = self.conn
        mss = self.mss
        log = conn._sent
        una = conn._snd_una
        high_rxt = self.high_rxt
        lost = [(s, e) for s, e, gone, acked in zip(log.starts, log.ends, log.lost, log.sacked)
                if gone and not acked and e > una]
        for s, e in lost:
            if s < high_rxt:
                pipe -= min(e, high_rxt) - s
        for s, e in lost:
            if conn.cwnd - pipe < mss:
                break
            s = s if s > una else una
            n = min(e - s, conn._seg_len(s))
            if n <= 0:
                continue
            out.append(conn._build(s, n, now))
            if s + n > self.high_rxt:
                self.high_rxt = s + n
            pipe += n
        return pipe


# The registry: ``tcp.variant`` name -> class.  One line per variant.
CONGESTION_CONTROLS: dict[str, type[CongestionControl]] = {
    "reno": Reno,            # RFC 5681
    "sack": SackRecovery,    # RFC 2018 + RFC 6675
}
