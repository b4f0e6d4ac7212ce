"""One TCP connection as a sans-I/O state machine.

The parts live in their own modules: the states and their one transition table in
:mod:`tcp_user.state`, congestion control and loss recovery (Reno, SACK per RFC 6675) in
:mod:`tcp_user.congestion`, SNACK-TCP (paper 002) in :mod:`tcp_user.snack`, the SACK
scoreboard and the reassembly queue in :mod:`tcp_user.sack`.  This module holds the rest:
the segment arrival rules of RFC 9293, the send machinery, RTT estimation and timers.

Nothing here touches sockets, threads or clocks: every input that depends on time
carries ``now`` (seconds).  The driver feeds segments in (:meth:`on_segment`), fires
timers (:meth:`on_timer` once ``now >= next_timer()``) and transmits whatever
:meth:`segments_to_send` returns.

Sequence numbers.  Internally every sequence number is an *unwrapped* int relative
to the initial sequence number of its direction (ISS for what we send, IRS for what
we receive): the SYN is 0, data starts at 1, and numbers never wrap.  Incoming 32-bit
values are unwrapped against a nearby reference (SND.UNA / RCV.NXT) -- this is the
RFC 9293 sec. 3.4 modular comparison done once at the boundary -- and outgoing ones are
``(ISS + rel) mod 2**32``.  The public ``snd_una``/``snd_nxt``/``rcv_nxt`` are the
32-bit wire values.

Choices where the RFCs leave room (or where this code deliberately departs):

* Every data segment is ACKed at once (no delayed ACKs); each ACK is built when the
  segment arrives, so ACKs queued between two :meth:`segments_to_send` calls keep their
  own SACK blocks.  If the app reads before that ACK leaves, the ACK carries the opened
  window instead of a separate window update.
* Advertised window = free receive buffer (in-order unread + out-of-order bytes count as
  used), but the right edge is never moved left (RFC 9293 sec. 3.8.6.2.2 / RFC 1122
  4.2.2.16): out-of-order data lies inside the window already advertised, so it cannot
  overflow the buffer and must not make later in-flight segments unacceptable.
* The retransmission timer is restarted when a fast retransmit is sent (4.4BSD, Linux);
  RFC 6298 only restarts it on new ACKs, which with min_rto ~ 2 RTT lets it expire while
  the retransmission is still in flight.
* Sender SWS avoidance (RFC 1122 4.2.3.4, no Nagle): a segment is sent if it is full
  sized, ends the queued data, or fills at least half the largest window the peer
  offered; the persist timer overrides this.  Zero-window probes carry one byte.
* RTT: as Linux takes it (:mod:`tcp_user.sent`): a sample from every ACK that newly
  acknowledges a segment sent only once, cumulatively, else by a new SACK block; none from an
  ACK that cumulatively acknowledges a retransmitted segment (Karn's rule, per segment).  Each
  sample sets the RTO again and so clears its backoff.  Clock granularity G = 0.

Events reported through ``emit(now, ev, **fields)``:
``cwnd`` (cwnd, ssthresh) on every change of either and once at ESTABLISHED;
``loss`` (kind "dupack" | "rto", seq = SND.UNA) at every detected loss;
``state`` (state) on every transition; ``rtx`` (seq, len) for every retransmitted
data segment.
"""
from __future__ import annotations

from typing import Any, Callable

from tcp_user.config import TcpConfig
from tcp_user.congestion import CONGESTION_CONTROLS, CongestionControl
from tcp_user.sack import Reassembly
from tcp_user.segment import (ACK, FIN, MAX_SACK_BLOCKS, RST, SEQ_MASK, SYN, Segment, sack_ranges, ts_before,
                              unwrap)
from tcp_user.sent import SentLog
from tcp_user.snack import SnackSender, snack_entries
from tcp_user.state import (RECV_STATES, SEND_STATES, SYNCHRONIZED, TRANSITIONS, Event, State,
                            next_state)

Emit = Callable[..., None]

MASK = SEQ_MASK

# States in which the user may still queue data (RFC 9293 sec. 3.10.2 SEND call).
_SEND_ALLOWED = frozenset({State.CLOSED, State.LISTEN, State.SYN_SENT, State.SYN_RCVD,
                           State.ESTABLISHED, State.CLOSE_WAIT})

# RFC 6298 sec. 5.7: RTO after a SYN timeout when no RTT sample exists.
_SYN_TIMEOUT_RTO = 3.0


def _no_emit(now: float, ev: str, **fields: Any) -> None:
    return None


class TcpConnection:
    """One endpoint of a TCP connection (see the module docstring)."""

    def __init__(self, config: TcpConfig, iss: int = 0, emit: Emit | None = None, ts_offset: int = 1) -> None:
        self.config = config
        self._emit: Emit = emit or _no_emit
        self._mss = config.mss
        self._iss = iss & MASK
        self.state: State = State.CLOSED
        self._opened = False               # connect() or listen() was called

        # --- send side (unwrapped, relative to ISS: SYN = 0, data from 1) ---
        self._snd_una = 0
        self._snd_nxt = 0
        self._snd_max = 0                  # highest sequence sent + 1 (RFC 6675 HighData)
        self._probe_end = 0                # end of the last zero-window probe byte
        self._sndbuf = bytearray()         # unacknowledged + unsent data
        self._sndbuf_base = 1              # sequence number of _sndbuf[0]
        self._data_end = 1                 # one past the last byte the app queued
        self._fin_queued = False
        self._snd_wnd = 0                  # peer's advertised window
        self._max_snd_wnd = 0
        self._snd_wl1 = -1                 # RFC 9293 SND.WL1 / SND.WL2 (unwrapped)
        self._snd_wl2 = -1

        # --- congestion control (tcp_user.congestion; cwnd changes go through _set_cwnd) ---
        self.cwnd = config.init_cwnd * config.mss
        self.ssthresh = config.init_ssthresh
        self._cc: CongestionControl = CONGESTION_CONTROLS[config.variant](self)
        self._sack = self._cc.uses_sack    # we send SACK blocks and keep a scoreboard
        self._force_one = False            # after an RTO: send one segment regardless of windows
        self._probe_pending = False        # persist timer fired
        self._force_small = False          # persist expiry: allow a sub-MSS segment (SWS override)
        # SNACK-TCP sender (paper 002), only with config.snack
        self._snack: SnackSender | None = SnackSender(config.snack_threshold) if config.snack else None

        # --- RTT estimation (RFC 6298) ---
        self.srtt: float | None = None
        self.rttvar: float | None = None
        self.rto: float = config.initial_rto
        self._sent = SentLog()             # each in-flight segment's last transmission (RTT samples)
        self._syn_retransmitted = False
        self._rto_consecutive = 0

        # --- timers (absolute times) ---
        self._rto_deadline: float | None = None
        self._persist_deadline: float | None = None
        self._persist_backoff = 0
        self._tw_deadline: float | None = None
        self._delack_deadline: float | None = None   # config.delayed_ack: the ACK timer (RFC 1122 4.2.3.2)
        self._delack_segments = 0          # full-sized segments received since the last ACK went out

        # --- receive side (unwrapped, relative to IRS) ---
        self._have_irs = False
        self._irs = 0
        self._rcv_nxt = 0
        self._rcvbuf = bytearray()         # in-order data not yet read by the app
        self._reasm = Reassembly(self._sack)   # out-of-order data
        self._rcv_fin: int | None = None   # sequence number of the peer's FIN, once seen
        self._rcv_adv_edge = 0             # highest right window edge advertised

        # --- timestamps (RFC 7323), only with config.timestamps and a peer that offered them on its SYN ---
        self._ts_ok = False                # negotiated (sec. 3.2: both SYNs carried the option)
        self._ts_offset = ts_offset & MASK # TSval = ticks of ``now`` + this (a fixed offset per connection)
        self._ts_recent: int | None = None # TS.Recent (sec. 4.3), None until the peer's SYN set it
        self._last_ack_sent = 0            # Last.ACK.sent (sec. 4.3): RCV.NXT carried by our last ACK, unwrapped
        self._clock = 0.0                  # the latest ``now`` seen (the TSval of ACKs queued on input)

        self._pending: list[Segment] = []  # pure ACKs / RSTs built on input, sent next
        self.bytes_acked = 0
        self.bytes_received = 0
        self.stats: dict[str, int] = {
            "segments_sent": 0, "data_segments_sent": 0, "acks_sent": 0,
            "retransmissions": 0, "bytes_retransmitted": 0, "ctl_retransmissions": 0,
            "losses_dupack": 0, "losses_rto": 0, "dupacks_received": 0,
            "segments_received": 0, "ooo_segments_received": 0, "dup_segments_received": 0,
            "window_probes": 0, "window_updates": 0, "rtt_samples": 0, "aborted": 0,
            "snack_acks": 0, "snack_retransmissions": 0, "ts_rtt_samples": 0, "paws_drops": 0,
            "frto_spurious": 0,
        }

    # ------------------------------------------------------------------ public view
    @property
    def snd_una(self) -> int:
        return (self._iss + self._snd_una) & MASK

    @property
    def snd_nxt(self) -> int:
        return (self._iss + self._snd_nxt) & MASK

    @property
    def rcv_nxt(self) -> int:
        return (self._irs + self._rcv_nxt) & MASK if self._have_irs else 0

    @property
    def snd_wnd(self) -> int:
        """The peer's last advertised window."""
        return self._snd_wnd

    @property
    def timestamps(self) -> bool:
        """RFC 7323 timestamps negotiated on this connection."""
        return self._ts_ok

    @property
    def rtt_samples(self) -> int:
        return self.stats["rtt_samples"]

    @property
    def in_recovery(self) -> bool:
        return self._cc.in_recovery

    @property
    def congestion_control(self) -> CongestionControl:
        """The variant's congestion control (see :mod:`tcp_user.congestion`)."""
        return self._cc

    @property
    def flight_size(self) -> int:
        """RFC 5681 FlightSize: sent but not cumulatively acknowledged (sequence space)."""
        return self._snd_max - self._snd_una

    @property
    def sacked_blocks(self) -> list[tuple[int, int]]:
        """The sender's scoreboard as 32-bit (left, right) pairs."""
        sb = self._cc.scoreboard
        if sb is None:
            return []
        iss = self._iss
        return [((iss + s) & MASK, (iss + e) & MASK) for s, e in sb.blocks]

    @property
    def all_acked(self) -> bool:
        """Everything sent or queued (SYN, data, FIN if closed) is acknowledged."""
        return self._opened and self._snd_una >= self._end_seq()

    @property
    def is_closed(self) -> bool:
        return self.state in (State.CLOSED, State.TIME_WAIT) and self._opened

    def next_timer(self) -> float | None:
        best: float | None = None
        for t in (self._rto_deadline, self._persist_deadline, self._tw_deadline, self._delack_deadline,
                  self._cc.timer_at):
            if t is not None and (best is None or t < best):
                best = t
        return best

    # ------------------------------------------------------------------ user calls
    def connect(self, now: float) -> None:
        """Active open: the SYN goes out with the next :meth:`segments_to_send`."""
        if self.state != State.CLOSED or self._opened:
            raise RuntimeError(f"connect() in state {self.state}")
        self._opened = True
        self._snd_nxt = 0
        self._fire(now, Event.CONNECT)

    def listen(self, now: float | None = None) -> None:
        """Passive open.  (``now`` is optional and only used for the ``state`` event.)"""
        if self.state != State.CLOSED or self._opened:
            raise RuntimeError(f"listen() in state {self.state}")
        self._opened = True
        self._fire(now, Event.LISTEN)

    def send(self, data: bytes) -> None:
        """Queue ``data`` for transmission (the buffer is unbounded)."""
        if self._fin_queued:
            raise RuntimeError("send() after close()")
        if self.state not in _SEND_ALLOWED:
            raise RuntimeError(f"send() in state {self.state}")
        if data:
            self._sndbuf += data
            self._data_end += len(data)

    def close(self, now: float) -> None:
        """Send a FIN after all queued data (RFC 9293 sec. 3.10.4)."""
        st = self.state
        if self._fin_queued or st == State.CLOSED:
            return
        if st in (State.SYN_SENT, State.SYN_RCVD):
            self._fin_queued = True         # CLOSE fires once established
        elif st == State.LISTEN:
            self._fire(now, Event.CLOSE)    # nothing to send: back to CLOSED
        elif st in TRANSITIONS[Event.CLOSE]:    # ESTABLISHED, CLOSE_WAIT: FIN after the data
            self._fin_queued = True
            self._fire(now, Event.CLOSE)

    def read(self, max_bytes: int = -1) -> bytes:
        """In-order received data; freeing buffer space may produce a window update."""
        buf = self._rcvbuf
        n = len(buf) if max_bytes < 0 else min(max_bytes, len(buf))
        if n <= 0:
            return b""
        if n == len(buf):                   # all of it (the usual case): one copy
            data = bytes(buf)
            buf.clear()
        else:
            data = bytes(buf[:n])
            del buf[:n]
        if self._have_irs and self.state in RECV_STATES:
            pending = self._pending
            if pending and pending[-1].flags == ACK and not pending[-1].payload:
                # The ACK for the data just read has not left yet: let it carry the
                # opened window instead of sending a separate update.
                wnd = self._rcv_wnd()
                pending[-1].window = wnd
                if self._rcv_nxt + wnd > self._rcv_adv_edge:
                    self._rcv_adv_edge = self._rcv_nxt + wnd
            else:
                # RFC 1122 sec. 4.2.3.3: update once the right edge can move by
                # min(RCV.BUFF / 2, MSS).
                advertised = self._rcv_adv_edge - self._rcv_nxt
                opened = self._rcv_wnd() - advertised >= min(self.config.rcv_buffer // 2, self._mss)
                # A delayed ACK that waits will carry the opened window: an update goes at once only when the
                # peer is down to half the buffer (as Linux's tcp_cleanup_rbuf), or every read would undo the delay.
                waiting = self._delack_deadline is not None and 2 * advertised > self.config.rcv_buffer
                if opened and not waiting:
                    self.stats["window_updates"] += 1
                    self._queue_ack()
        return data

    # ------------------------------------------------------------------ input
    def on_segment(self, seg: Segment, now: float) -> None:
        self.stats["segments_received"] += 1
        self._clock = now
        st = self.state
        if st in SYNCHRONIZED:
            self._on_synchronized(seg, now)
        elif st == State.SYN_SENT:
            self._on_syn_sent(seg, now)
        elif st == State.LISTEN:
            self._on_listen(seg, now)
        else:
            self._reply_rst(seg)

    def _on_listen(self, seg: Segment, now: float) -> None:
        # RFC 9293 sec. 3.10.7.2
        if seg.flags & (RST | ACK) or not seg.flags & SYN:
            return
        self._have_irs = True
        self._irs = seg.seq
        self._rcv_nxt = 1
        self._ts_negotiate(seg)
        self._snd_wnd = self._max_snd_wnd = seg.window
        self._snd_wl1, self._snd_wl2 = 0, 0
        self._snd_nxt = 0                   # SYN+ACK goes out next
        self._fire(now, Event.SYN_RECEIVED)

    def _on_syn_sent(self, seg: Segment, now: float) -> None:
        # RFC 9293 sec. 3.10.7.3
        flags = seg.flags
        ack_ok = False
        if flags & ACK:
            ack = unwrap(seg.ack, self._iss, self._snd_una)
            if not 0 < ack <= self._snd_max:
                return
            ack_ok = True
        if flags & RST:
            if ack_ok:
                self._fire(now, Event.RESET)
            return
        if not flags & SYN:
            return
        self._have_irs = True
        self._irs = seg.seq
        self._rcv_nxt = 1
        self._rcv_adv_edge = 0
        self._ts_negotiate(seg)
        if ack_ok:
            self._established(now)
            self._process_ack(seg, 0, now)  # the SYN: sequence number 0 of the peer's side
            self._queue_ack()
        else:                               # simultaneous open: resend SYN as SYN+ACK
            self._snd_wnd = self._max_snd_wnd = seg.window
            self._snd_wl1, self._snd_wl2 = 0, 0
            self._snd_nxt = 0
            self._fire(now, Event.SYN_RECEIVED)

    def _on_synchronized(self, seg: Segment, now: float) -> None:
        flags = seg.flags
        plen = len(seg.payload)
        seglen = plen + (1 if flags & SYN else 0) + (1 if flags & FIN else 0)
        rcv_nxt = self._rcv_nxt
        seq = unwrap(seg.seq, self._irs, rcv_nxt)
        if self._paws_reject(seg):
            return
        wnd = self._rcv_wnd()
        # RFC 9293 sec. 3.10.7.4, first: is the segment acceptable?
        if seglen == 0:
            ok = seq == rcv_nxt if wnd == 0 else rcv_nxt <= seq < rcv_nxt + wnd
        elif wnd == 0:
            ok = seq == rcv_nxt and plen == 0 and bool(flags & FIN)   # a bare FIN needs no space
        else:
            last = seq + seglen - 1
            ok = rcv_nxt <= seq < rcv_nxt + wnd or rcv_nxt <= last < rcv_nxt + wnd
        if not ok:
            if flags & RST:
                return
            if self.state == State.SYN_RCVD and flags & SYN and seq == 0:
                ack = unwrap(seg.ack, self._iss, self._snd_una)
                if flags & ACK and 0 < ack <= self._snd_max:
                    # simultaneous open (RFC 9293 fig. 7): the peer's SYN+ACK acks our SYN
                    self._established(now)
                    self._process_ack(seg, seq, now)
                    self._queue_ack()
                else:
                    self._snd_nxt = 0       # peer repeated its SYN: repeat our SYN+ACK
                return
            if seglen and seq + seglen <= rcv_nxt:
                self.stats["dup_segments_received"] += 1
            self._queue_ack()
            if self.state == State.TIME_WAIT and flags & FIN:
                self._tw_deadline = now + self.config.time_wait
            return
        self._ts_recent_update(seg, seq)
        if flags & RST:                     # second: RST (minimal: any in-window RST)
            self._fire(now, Event.RESET)
            return
        if flags & SYN:                     # fourth: SYN in window -> challenge ACK (RFC 5961)
            self._queue_ack()
            return
        if not flags & ACK:                 # fifth: no ACK bit -> drop
            return
        if self.state == State.SYN_RCVD:
            ack = unwrap(seg.ack, self._iss, self._snd_una)
            if not 0 < ack <= self._snd_max:
                return
            self._established(now)
        if not self._process_ack(seg, seq, now) or self.state == State.CLOSED:
            return
        if seglen and self.state in RECV_STATES:   # seventh/eighth: text and FIN
            self._process_data(seq, seg.payload, bool(flags & FIN), wnd, now)
        elif seglen:
            self._queue_ack()

    # ------------------------------------------------------------------ ACK processing
    def _process_ack(self, seg: Segment, seq: int, now: float) -> bool:
        """RFC 9293 sec. 3.10.7.4, fifth: the ACK field.  False: drop the segment.
        ``seq``: the segment's sequence number, unwrapped (relative to IRS)."""
        una = self._snd_una
        ack = unwrap(seg.ack, self._iss, una)
        top = self._snd_max if self._snd_max > self._probe_end else self._probe_end
        if ack > top:                       # ACKs something not yet sent: ACK, drop
            self._queue_ack()
            return False
        if ack < una:                       # old duplicate ACK: ignore it (not the data)
            return True
        prev_wnd = self._snd_wnd
        # RFC 9293 sec. 3.10.7.4: send window update
        if self._snd_wl1 < seq or (self._snd_wl1 == seq and self._snd_wl2 <= ack):
            self._snd_wnd = seg.window
            self._snd_wl1 = seq
            self._snd_wl2 = ack
            if seg.window > self._max_snd_wnd:
                self._max_snd_wnd = seg.window
            if seg.window > 0 and self._persist_deadline is not None:
                self._persist_deadline = None
                self._persist_backoff = 0
        cc = self._cc
        new_sacked = cc.on_sack_blocks(seg.sack, ack) if seg.sack else 0
        sacked_at = self._newly_sacked_sent_at(seg.sack, ack) if new_sacked else None
        snack = self._snack
        if ack > una:
            self._on_new_ack(ack, now, sacked_at, seg)
            if snack is not None and seg.snack:
                self._on_snack(snack, seg.snack)
            return True
        if sacked_at is not None:           # a duplicate ACK's new SACK block times a segment too (Linux)
            self._rtt_sample(now - sacked_at)
        self._take_delivered(now)
        if snack is not None and seg.snack:
            # Paper 002, Sec. III-B: SNACK-TCP handles the reported losses itself, "without
            # starting up TCP congestion control": such an ACK is not a duplicate ACK.
            self._on_snack(snack, seg.snack)
            return True
        # RFC 5681 sec. 2: a duplicate ACK carries no data, SYN or FIN and arrives while
        # data is outstanding; the variant decides the rest (window unchanged, new SACKs)
        if seg.payload or seg.flags & (SYN | FIN) or self._snd_max <= una:
            return True
        if not cc.is_dupack(seg, prev_wnd, new_sacked):
            return True
        self.stats["dupacks_received"] += 1
        cc.frto_ack(now, False)             # F-RTO (RFC 5682 sec. 2.1 steps 2a / 3a)
        cc.on_dupack(now)
        return True

    def _take_delivered(self, now: float) -> None:
        """Hand the segments this ACK delivered to the congestion control (RACK reads their times)."""
        delivered = self._sent.delivered
        if delivered:
            self._cc.on_delivered(now, delivered)
            delivered.clear()

    def _newly_sacked_sent_at(self, blocks: tuple[tuple[int, int], ...], ack: int) -> float | None:
        """The earliest transmission time of a segment sent once that these SACK blocks newly cover
        (Linux's ``first_sackt``), None if there is none; the blocks are marked SACKed in the log."""
        first: float | None = None
        for s, e in sack_ranges(blocks, self._iss, ack, self._snd_max):
            t = self._sent.on_sacked(s, e)
            if t is not None and (first is None or t < first):
                first = t
        return first

    def _on_snack(self, snack: SnackSender, entries: tuple[int, ...]) -> None:
        """SNACK-TCP (paper 002): count the reports; see :class:`tcp_user.snack.SnackSender`."""
        self.stats["snack_acks"] += 1
        snack.on_entries(entries, self._iss, self._snd_una, self._snd_max)

    def _on_new_ack(self, ack: int, now: float, sacked_at: float | None = None, seg: Segment | None = None) -> None:
        una = self._snd_una
        flight = self._snd_max - una        # FlightSize before this ACK (RFC 7661 sec. 4.3)
        # RFC 6298 sec. 2 + Karn, per segment as Linux's tcp_clean_rtx_queue: the earliest newly
        # acknowledged segment sent once, unless a retransmitted one is acknowledged too; else what a
        # new SACK block of this ACK timed
        sent_at, retransmitted = self._sent.on_cumulative_ack(ack)
        if retransmitted or sent_at is None:
            sent_at = sacked_at
        if sent_at is not None:
            self._rtt_sample(now - sent_at)
        elif seg is not None:
            self._rttm(seg, now)
        self._take_delivered(now)
        data_end = self._data_end
        acked = ack if ack < data_end else data_end     # data acknowledged up to here (no FIN)
        newly = acked - (una if una > 1 else 1)
        if newly > 0:
            self.bytes_acked += newly
        else:
            newly = 0
        self._snd_una = ack
        if ack > self._snd_max:             # a zero-window probe byte was accepted
            self._snd_max = ack
        if self._snd_nxt < ack:
            self._snd_nxt = ack
        drop = acked - self._sndbuf_base
        if drop > 0:
            del self._sndbuf[:drop]
            self._sndbuf_base += drop
        if self._snack is not None:         # paper 002, Figure 5: forget acknowledged losses
            self._snack.forget_below(ack)
        self._rto_consecutive = 0
        # RFC 6298 sec. 5.2 / 5.3 (before the congestion control, whose probe timer must not outlast it)
        if ack >= self._snd_max:
            self._rto_deadline = None
        else:
            self._rto_deadline = now + self.rto
        self._cc.on_new_ack(now, ack, newly, flight)    # recovery exit or cwnd growth
        # our FIN acknowledged?
        if (self._fin_queued and ack >= self._data_end + 1
                and self.state in TRANSITIONS[Event.FIN_ACKED]):
            self._fire(now, Event.FIN_ACKED)

    # ------------------------------------------------------------------ data receipt
    def _process_data(self, seq: int, payload: bytes, fin: bool, wnd: int, now: float) -> None:
        """RFC 9293 sec. 3.10.7.4, seventh and eighth: the segment text and the FIN bit, within
        ``wnd``, the receive window the segment was found acceptable in."""
        rcv_nxt = self._rcv_nxt
        right = rcv_nxt + wnd
        data = payload
        if seq < rcv_nxt:                   # trim what we already have
            data = data[rcv_nxt - seq:]
            seq = rcv_nxt
        if seq + len(data) > right:         # trim beyond the window (the FIN with it)
            data = data[: max(0, right - seq)]
            fin = False
        if fin and self._rcv_fin is None:
            self._rcv_fin = seq + len(data)
        in_order = bool(data) and seq == rcv_nxt and not self._reasm.blocks
        full = len(data) >= self._mss
        if data:
            if seq == rcv_nxt:
                buf = self._rcvbuf
                before = len(buf)
                buf += data
                rcv_nxt += len(data)
                if self._reasm.blocks:
                    rcv_nxt = self._reasm.pull(rcv_nxt, buf)
                self.bytes_received += len(buf) - before
            else:
                self.stats["ooo_segments_received"] += 1
                if self._reasm.add(seq, data) == 0:
                    self.stats["dup_segments_received"] += 1
        if self._rcv_fin is not None and rcv_nxt == self._rcv_fin:
            rcv_nxt += 1                    # the FIN is in order: consume it
            self._rcv_nxt = rcv_nxt
            self._rcv_fin = None
            self._fire(now, Event.FIN_RECEIVED)     # only called in RECV_STATES
            in_order = False
        self._rcv_nxt = rcv_nxt
        if self.config.delayed_ack and in_order:
            self._delay_ack(now, full)
        else:
            self._queue_ack()

    def _delay_ack(self, now: float, full: bool) -> None:
        """Delayed ACKs (RFC 1122 sec. 4.2.3.2, RFC 5681 sec. 4.2): an in-order segment is acknowledged with
        the second full-sized one, or when ``delack_s`` has passed since the first unacknowledged one
        (at most 500 ms); anything out of order, filling a hole, or carrying a FIN is acknowledged at once
        (:meth:`_process_data`).  An ACK piggybacked on data counts too (:meth:`_ack_fields`)."""
        if full:
            self._delack_segments += 1
            if self._delack_segments >= 2:
                self._queue_ack()
                return
        if self._delack_deadline is None:
            self._delack_deadline = now + self.config.delack_s

    def _rcv_wnd(self) -> int:
        """Window to advertise: free buffer space, never moving the right edge left
        (RFC 9293 sec. 3.8.6.2.2 / RFC 1122 sec. 4.2.2.16: do not shrink the window).

        Out-of-order bytes count as used space, but they lie inside the previously
        advertised window, so they never shrink it; the buffer can still not overflow.
        """
        free = self.config.rcv_buffer - len(self._rcvbuf) - self._reasm.nbytes
        held = self._rcv_adv_edge - self._rcv_nxt
        w = free if free > held else held
        return w if w < MASK else MASK

    # ------------------------------------------------------------------ timers
    def on_timer(self, now: float) -> None:
        self._clock = now
        if self._tw_deadline is not None and now >= self._tw_deadline:
            self._tw_deadline = None
            self._fire(now, Event.TIME_WAIT_EXPIRED)
            return
        if self._delack_deadline is not None and now >= self._delack_deadline:
            self._queue_ack()                # the delayed ACK's timer ran out (clears it)
        cc_at = self._cc.timer_at
        if cc_at is not None and now >= cc_at and self.state in SEND_STATES:
            # RACK's reordering timer, the tail loss probe (tcp_user.rack): before the RTO, which a probe
            # due at the same time replaces (RFC 8985 sec. 7.3)
            self._cc.on_timer(now)
        if self._rto_deadline is not None and now >= self._rto_deadline:
            self._rto_deadline = None
            self._on_rto(now)
        if self._persist_deadline is not None and now >= self._persist_deadline:
            self._persist_deadline = None
            self._persist_backoff += 1
            self._probe_pending = True

    def _on_rto(self, now: float) -> None:
        st = self.state
        cfg = self.config
        if st in (State.SYN_SENT, State.SYN_RCVD):
            if cfg.max_retries and self._rto_consecutive >= cfg.max_retries:
                self._abort(now)
                return
            self._rto_consecutive += 1
            self.rto = min(self.rto * 2, cfg.max_rto)          # RFC 6298 sec. 5.5
            self._count_loss(now, "rto", rto=self.rto)
            self._snd_nxt = 0                                   # resend SYN (or SYN+ACK)
            self._rto_deadline = now + self.rto                 # sec. 5.6
            return
        if st not in SEND_STATES or self._snd_una >= self._snd_max:
            return
        if cfg.max_retries and self._rto_consecutive >= cfg.max_retries:
            self._abort(now)
            return
        self._rto_consecutive += 1
        backed_off = min(self.rto * 2, cfg.max_rto)             # RFC 6298 sec. 5.5
        self._count_loss(now, "rto", rto=backed_off)
        self._cc.on_rto(now)                                    # ssthresh, loss window, recovery
        self.rto = backed_off
        self._snd_nxt = self._snd_una                           # go-back-N from SND.UNA
        self._force_one = True
        self._rto_deadline = now + self.rto                     # RFC 6298 sec. 5.6

    def _rtt_sample(self, r: float) -> None:
        # RFC 6298 sec. 2.2 / 2.3 (G = 0), 2.4 (min), 2.5 (max)
        if r < 0:
            return
        if self.srtt is None or self.rttvar is None:
            self.srtt = r
            self.rttvar = r / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - r)
            self.srtt = 0.875 * self.srtt + 0.125 * r
        rto = self.srtt + 4 * self.rttvar
        cfg = self.config
        self.rto = min(max(rto, cfg.min_rto), cfg.max_rto)      # also clears any backoff
        self.stats["rtt_samples"] += 1

    # ------------------------------------------------------------------ output
    def segments_to_send(self, now: float) -> list[Segment]:
        self._clock = now
        out = self._pending                 # the ACKs / RSTs queued on input go first
        self._pending = []
        if out:
            stats = self.stats
            stats["acks_sent"] += len(out)
            stats["segments_sent"] += len(out)
        st = self.state
        if st in (State.SYN_SENT, State.SYN_RCVD):
            if self._snd_nxt == 0:
                out.append(self._build(0, 0, now))
                self._snd_nxt = 1
            return out
        if st not in SEND_STATES:
            return out
        if self._snack is not None and self._snack.due:
            self._output_snack(self._snack, now, out)
        self._cc.frto_send_new(now, out)    # F-RTO's two new segments after a timeout (RFC 5682 step 2b)
        self._cc.send(now, out)             # the window, or the variant's recovery rules
        # RFC 9293 sec. 3.8.6.1: persist timer while the peer's window keeps data back
        if (self._snd_una == self._snd_max and self._snd_nxt < self._data_end
                and self._rto_deadline is None and self._persist_deadline is None):
            backoff = self.rto * (1 << min(self._persist_backoff, 30))
            self._persist_deadline = now + min(backoff, self.config.max_rto)
        return out

    def _output_snack(self, snack: SnackSender, now: float, out: list[Segment]) -> None:
        """SNACK-TCP retransmissions: outside cwnd, which they leave as it is (paper 002)."""
        for s in snack.take_due():
            if self._snd_una <= s < self._snd_max:
                n = self._seg_len(s)
                if n > 0:
                    out.append(self._build(s, n, now))
                    self.stats["snack_retransmissions"] += 1

    def _output_window(self, now: float, out: list[Segment]) -> None:
        """Send within min(cwnd, rwnd) (every variant outside its own recovery output)."""
        cc = self._cc
        una = self._snd_una
        if cc.fast_rtx_pending:             # RFC 5681 sec. 3.2 step 3
            cc.fast_rtx_pending = False
            if una < self._snd_max:
                out.append(self._build(una, self._seg_len(una), now))
                self._rto_deadline = now + self.rto     # restart, as 4.4BSD and Linux do
        if self._probe_pending:
            self._probe_pending = False
            nxt = self._snd_nxt
            if nxt < self._data_end and una + self._snd_wnd <= nxt:
                out.append(self._zero_window_probe(nxt))
                return
            self._force_small = True
        end_seq = self._end_seq()
        data_end = self._data_end
        sb = cc.scoreboard                  # None unless the variant keeps one (SACK)
        cwnd = self.cwnd + cc.lt_extra if not cc.in_recovery else self.cwnd
        right = una + self._snd_wnd                     # peer's window edge
        while self._snd_nxt < end_seq:
            nxt = self._snd_nxt
            if sb is not None and sb.blocks and nxt < self._snd_max:
                skip = sb.skip(nxt)                     # never resend SACKed data
                if skip != nxt:
                    self._snd_nxt = skip
                    continue
            if self._force_one:                         # after an RTO: one segment, windows or not
                self._force_one = False
                n = self._seg_len(nxt) if nxt < data_end else 0
            elif nxt >= data_end:
                n = 0                                   # the FIN alone needs no window
            else:
                outstanding = nxt - una
                if cc.rto_recovery and sb is not None:   # RFC 6675 sec. 5.1: SACKed
                    outstanding -= sb.sacked_between(una, nxt)  # data is not in flight
                usable = min(cwnd - outstanding, right - nxt)
                if usable <= 0:                         # the windows are full
                    break
                n = self._seg_len(nxt)
                if usable < n:
                    # RFC 1122 sec. 4.2.3.4 sender SWS avoidance: a partial segment only if
                    # it is at least half the largest window the peer ever offered.
                    if self._force_small or 2 * usable >= self._max_snd_wnd:
                        n = usable
                    else:
                        break
            out.append(self._build(nxt, n, now))
            self._force_small = False
        self._force_small = False

    def _seg_len(self, start: int) -> int:
        """Payload for a segment at ``start``: at most one MSS, never into SACKed data."""
        n = self._data_end - start
        if n <= 0:
            return 0
        if n > self._mss:
            n = self._mss
        sb = self._cc.scoreboard
        if sb is not None and sb.blocks and start < self._snd_max:
            ns = sb.next_start(start)
            if ns is not None and ns - start < n:
                n = ns - start
        return n

    def _build(self, start: int, n: int, now: float) -> Segment:
        """A SYN / data / FIN segment at ``start`` with ``n`` payload bytes; does the
        bookkeeping (SND.NXT/HighData, counters, RTT timing, RTO timer)."""
        stats = self.stats
        if start == 0:
            flags = SYN | ACK if self._have_irs else SYN
            payload = b""
            length = 1
        else:
            flags = ACK
            if n:
                off = start - self._sndbuf_base
                payload = bytes(self._sndbuf[off: off + n])
            else:
                payload = b""
            length = n
            if self._fin_queued and start + n == self._data_end:
                flags |= FIN
                length += 1
        ack32, wnd, sack = self._ack_fields()
        seg = Segment((self._iss + start) & MASK, ack32, flags, wnd, sack, payload)
        if self._ts_ok or (start == 0 and not self._have_irs and self.config.timestamps):
            self._ts_stamp(seg, now)        # RFC 7323 sec. 3.2: offered on our SYN, else only once negotiated
        end = start + length
        stats["segments_sent"] += 1
        if n:
            stats["data_segments_sent"] += 1
        if start < self._snd_max:           # a retransmission
            if n:
                stats["retransmissions"] += 1
                stats["bytes_retransmitted"] += n
                self._emit(now, "rtx", seq=(self._iss + start) & MASK, len=n)
            else:
                stats["ctl_retransmissions"] += 1
            if start == 0:
                self._syn_retransmitted = True
        self._sent.on_transmit(start, end, now)     # Karn: a resent segment gives no sample
        if end > self._snd_max:
            self._snd_max = end
        if start <= self._snd_nxt < end:    # (out-of-band retransmissions leave SND.NXT alone)
            self._snd_nxt = end
        if self._rto_deadline is None:      # RFC 6298 sec. 5.1
            self._rto_deadline = now + self.rto
        return seg

    def _zero_window_probe(self, nxt: int) -> Segment:
        """One byte beyond a zero window (RFC 9293 sec. 3.8.6.1); SND.NXT stays put."""
        off = nxt - self._sndbuf_base
        ack32, wnd, sack = self._ack_fields()
        if nxt + 1 > self._probe_end:
            self._probe_end = nxt + 1
        self.stats["window_probes"] += 1
        self.stats["segments_sent"] += 1
        seg = Segment((self._iss + nxt) & MASK, ack32, ACK, wnd, sack, bytes(self._sndbuf[off: off + 1]))
        if self._ts_ok:
            self._ts_stamp(seg, self._clock)
        return seg

    def _ack_fields(self) -> tuple[int, int, tuple[tuple[int, int], ...]]:
        self._delack_deadline = None        # this segment carries the ACK a delayed one would have
        self._delack_segments = 0
        if not self._have_irs:
            return 0, min(self.config.rcv_buffer, MASK), ()
        rcv_nxt = self._rcv_nxt
        wnd = self._rcv_wnd()
        if rcv_nxt + wnd > self._rcv_adv_edge:
            self._rcv_adv_edge = rcv_nxt + wnd
        self._last_ack_sent = rcv_nxt       # RFC 7323 sec. 4.3 Last.ACK.sent
        irs = self._irs
        sack: tuple[tuple[int, int], ...] = ()
        if self._sack and self._reasm.blocks:
            sack = tuple(((irs + s) & MASK, (irs + e) & MASK)
                         for s, e in self._reasm.sack_blocks(rcv_nxt, MAX_SACK_BLOCKS))
        return (irs + rcv_nxt) & MASK, wnd, sack

    def _queue_ack(self) -> None:
        """Queue a pure ACK reflecting the receive state right now (and the delayed ACK, if one waits, with it)."""
        ack32, wnd, sack = self._ack_fields()
        snack = (snack_entries(self._reasm.blocks, self._rcv_nxt, self._mss, self._irs)
                 if self.config.snack and self._have_irs and self._reasm.blocks else ())
        seg = Segment((self._iss + self._snd_nxt) & MASK, ack32, ACK, wnd, sack, b"", snack)
        if self._ts_ok:
            self._ts_stamp(seg, self._clock)
        self._pending.append(seg)

    def _reply_rst(self, seg: Segment) -> None:
        # RFC 9293 sec. 3.10.7.1: a segment for a closed connection draws a RST
        if seg.flags & RST or not self._opened:
            return
        if seg.flags & ACK:
            self._pending.append(Segment(seg.ack, 0, RST, 0))
        else:
            self._pending.append(Segment(0, (seg.seq + seg.length) & MASK, RST | ACK, 0))

    # ------------------------------------------------------------------ timestamps (RFC 7323)
    def _ts_now(self, now: float) -> int:
        """TSval for ``now``: a clock of ``config.ts_hz`` ticks per second (RFC 7323 sec. 5.4), plus the offset."""
        return (int(now * self.config.ts_hz) + self._ts_offset) & MASK

    def _ts_stamp(self, seg: Segment, now: float) -> None:
        """RFC 7323 sec. 3.2 / 4.3: TSval is our clock, TSecr echoes TS.Recent (0 on our own SYN)."""
        seg.tsval = self._ts_now(now)
        seg.tsecr = self._ts_recent if self._ts_recent is not None else 0

    def _ts_negotiate(self, syn: Segment) -> None:
        """RFC 7323 sec. 3.2: timestamps are used only if both SYNs carry the option; the peer's SYN sets
        TS.Recent.  A SYN+ACK without it turns them off for this connection (we offered on our SYN)."""
        self._ts_ok = self.config.timestamps and syn.tsval is not None
        self._ts_recent = syn.tsval if self._ts_ok else None

    def _paws_reject(self, seg: Segment) -> bool:
        """RFC 7323 sec. 5.3 R1 (PAWS): a non-RST segment whose TSval is older than TS.Recent is not acceptable:
        acknowledge it and drop it (counted in ``paws_drops``).  A segment without the option is let through
        (as Linux; RFC 7323 sec. 3.2 allows dropping it).  The 24-day idle rule (R1's last sentence) is left out:
        no connection here lives that long."""
        if not self._ts_ok or seg.tsval is None or self._ts_recent is None or seg.flags & RST:
            return False
        if not ts_before(seg.tsval, self._ts_recent):
            return False
        self.stats["paws_drops"] += 1
        self._queue_ack()
        return True

    def _ts_recent_update(self, seg: Segment, seq: int) -> None:
        """RFC 7323 sec. 4.3 (2): TS.Recent takes SEG.TSval if it is not older and the segment starts at or below
        Last.ACK.sent; with delayed ACKs the echo is so the earliest unacknowledged segment's."""
        tsval = seg.tsval
        if (self._ts_ok and tsval is not None and seq <= self._last_ack_sent
                and (self._ts_recent is None or not ts_before(tsval, self._ts_recent))):
            self._ts_recent = tsval

    def _rttm(self, seg: Segment, now: float) -> None:
        """RFC 7323 sec. 4 (RTTM) as Linux's tcp_ack_update_rtt: an ACK acknowledging new data for which Karn's
        rule left no sample (every newly acknowledged segment retransmitted) is timed by its TSecr.  That
        sample resets the RTO from SRTT and so clears the backoff (RFC 6298 sec. 5.7, RFC 7323 sec. 4.3):
        without it only retransmissions moving during a timeout's go-back-N keep the RTO backed off."""
        if not self._ts_ok or seg.tsval is None or not seg.tsecr:
            return
        ticks = (self._ts_now(now) - seg.tsecr) & MASK
        if ticks & (1 << 31):               # an echo from the future: not ours
            return
        self.stats["ts_rtt_samples"] += 1
        self._rtt_sample(ticks / self.config.ts_hz)

    # ------------------------------------------------------------------ helpers
    def _end_seq(self) -> int:
        return self._data_end + (1 if self._fin_queued else 0)

    def _fire(self, now: float | None, event: Event) -> None:
        """The one place the state changes: the table decides where ``event`` leads (and
        refuses it if not allowed); entering CLOSED or TIME_WAIT settles the timers.  The
        ``state`` event carries the state's name (``now`` None: listen() without a time)."""
        new = next_state(self.state, event)
        self.state = new
        if new is State.CLOSED:
            self._rto_deadline = None
            self._persist_deadline = None
            self._tw_deadline = None
        elif new is State.TIME_WAIT:        # RFC 9293 sec. 3.10.7.4: start the 2*MSL timer
            self._rto_deadline = None
            self._persist_deadline = None
            self._tw_deadline = now + self.config.time_wait
        if now is not None:
            self._emit(now, "state", state=new.value)

    def _set_cwnd(self, now: float, cwnd: int, ssthresh: int) -> None:
        if cwnd != self.cwnd or ssthresh != self.ssthresh:
            self.cwnd = cwnd
            self.ssthresh = ssthresh
            self._emit(now, "cwnd", cwnd=cwnd, ssthresh=ssthresh)

    def _count_loss(self, now: float, kind: str, **extra: float) -> None:
        """A loss the sender saw; a timeout's event carries ``rto``, the backed-off timer it restarts."""
        self.stats["losses_dupack" if kind == "dupack" else "losses_rto"] += 1
        self._emit(now, "loss", kind=kind, seq=(self._iss + self._snd_una) & MASK, **extra)

    def _established(self, now: float) -> None:
        if self._syn_retransmitted:
            # RFC 5681 sec. 3.1: IW is one segment after a lost SYN or SYN+ACK
            self.cwnd = self._mss
            if self.srtt is None:           # RFC 6298 sec. 5.7
                self.rto = min(max(_SYN_TIMEOUT_RTO, self.config.initial_rto), self.config.max_rto)
        self._rto_consecutive = 0
        self._fire(now, Event.SYN_ACKED)
        self._emit(now, "cwnd", cwnd=self.cwnd, ssthresh=self.ssthresh)
        if self._fin_queued:                # close() was called before ESTABLISHED
            self._fire(now, Event.CLOSE)

    def _abort(self, now: float) -> None:
        self.stats["aborted"] += 1
        self._fire(now, Event.ABORT)
