"""One TCP connection as a sans-I/O state machine: Reno (RFC 5681) or SACK (RFC 2018/6675).

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
* RTT: one segment timed at a time; Karn's rule also drops the sample when any data at
  or below the timed segment is retransmitted.  Clock granularity G = 0.

Events reported through ``emit(now, ev, **fields)``:
``cwnd`` (cwnd, ssthresh) on every change of either and once at ESTABLISHED;
``loss`` (kind "dupack" | "rto", seq = SND.UNA) at every detected loss;
``state`` (state) on every transition; ``rtx`` (seq, len) for every retransmitted
data segment.
"""
from __future__ import annotations

from typing import Any, Callable

from tcp_user.config import TcpConfig
from tcp_user.sack import Reassembly, Scoreboard
from tcp_user.segment import ACK, FIN, MAX_SACK_BLOCKS, MAX_SNACK, RST, SYN, Segment

Emit = Callable[..., None]

MASK = 0xFFFFFFFF
_HALF = 1 << 31
_MOD = 1 << 32

# States in which our side may still (re)transmit data or FIN.
_SEND_STATES = frozenset({"ESTABLISHED", "CLOSE_WAIT", "FIN_WAIT_1", "CLOSING", "LAST_ACK"})
# States in which the peer may still send us data (we have not seen its FIN).
_RECV_STATES = frozenset({"ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2"})
_SYNCHRONIZED = frozenset({"SYN_RCVD", "ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2", "CLOSING",
                           "TIME_WAIT", "CLOSE_WAIT", "LAST_ACK"})

# RFC 6298 sec. 5.7: RTO after a SYN timeout when no RTT sample exists.
_SYN_TIMEOUT_RTO = 3.0


def _no_emit(now: float, ev: str, **fields: Any) -> None:
    return None


def _unwrap(x32: int, base32: int, ref: int) -> int:
    """The unwrapped (relative to ``base32``) sequence number closest to ``ref`` whose
    32-bit wire value is ``x32``."""
    d = (x32 - base32 - ref) & MASK
    if d & _HALF:
        d -= _MOD
    return ref + d


class TcpConnection:
    """One endpoint of a TCP connection (see the module docstring)."""

    def __init__(self, config: TcpConfig, iss: int = 0, emit: Emit | None = None) -> None:
        self.config = config
        self._emit: Emit = emit or _no_emit
        self._mss = config.mss
        self._sack = config.variant == "sack"
        self._iss = iss & MASK
        self.state = "CLOSED"
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

        # --- congestion control (RFC 5681 / RFC 6675) ---
        self.cwnd = config.init_cwnd * config.mss
        self.ssthresh = config.init_ssthresh
        self._dupacks = 0
        self._lt_extra = 0                 # RFC 3042 limited-transmit allowance (bytes)
        self._in_recovery = False          # Reno fast recovery / RFC 6675 loss recovery
        self._recovery_point = 0           # RFC 6675 RecoveryPoint
        self._high_rxt = 0                 # RFC 6675 HighRxt (one past)
        self._rto_recovery = False         # slow start after an RTO, until RecoveryPoint
        self._fast_rtx_pending = False     # retransmit the segment at SND.UNA now
        self._force_one = False            # after an RTO: send one segment regardless of windows
        self._probe_pending = False        # persist timer fired
        self._force_small = False          # persist expiry: allow a sub-MSS segment (SWS override)
        self._scoreboard = Scoreboard()
        self._snack_reports: dict[int, int] = {}   # SNACK-TCP: seq -> times reported, -1 once resent
        self._snack_rtx: list[int] = []            # SNACK-TCP: losses to resend with the next output

        # --- RTT estimation (RFC 6298) ---
        self.srtt: float | None = None
        self.rttvar: float | None = None
        self.rto: float = config.initial_rto
        self._rtt_seq: int | None = None   # a sample is taken when this is ACKed
        self._rtt_time = 0.0
        self._syn_retransmitted = False
        self._rto_consecutive = 0
        self._last_rto_una: int | None = None

        # --- timers (absolute times) ---
        self._rto_deadline: float | None = None
        self._persist_deadline: float | None = None
        self._persist_backoff = 0
        self._tw_deadline: float | None = None

        # --- receive side (unwrapped, relative to IRS) ---
        self._have_irs = False
        self._irs = 0
        self._rcv_nxt = 0
        self._rcvbuf = bytearray()         # in-order data not yet read by the app
        self._reasm = Reassembly(self._sack)   # out-of-order data
        self._rcv_fin: int | None = None   # sequence number of the peer's FIN, once seen
        self._rcv_adv_edge = 0             # highest right window edge advertised

        self._pending: list[Segment] = []  # pure ACKs / RSTs built on input, sent next
        self.bytes_acked = 0
        self.bytes_received = 0
        self.stats: dict[str, int] = {
            "segments_sent": 0, "data_segments_sent": 0, "acks_sent": 0,
            "retransmissions": 0, "bytes_retransmitted": 0, "ctl_retransmissions": 0,
            "losses_dupack": 0, "losses_rto": 0, "dupacks_received": 0,
            "segments_received": 0, "ooo_segments_received": 0, "dup_segments_received": 0,
            "window_probes": 0, "window_updates": 0, "rtt_samples": 0, "aborted": 0,
            "snack_acks": 0, "snack_retransmissions": 0,
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
    def rtt_samples(self) -> int:
        return self.stats["rtt_samples"]

    @property
    def in_recovery(self) -> bool:
        return self._in_recovery

    @property
    def flight_size(self) -> int:
        """RFC 5681 FlightSize: sent but not cumulatively acknowledged (sequence space)."""
        return self._snd_max - self._snd_una

    @property
    def sacked_blocks(self) -> list[tuple[int, int]]:
        """The sender's scoreboard as 32-bit (left, right) pairs."""
        iss = self._iss
        return [((iss + s) & MASK, (iss + e) & MASK) for s, e in self._scoreboard.blocks]

    @property
    def all_acked(self) -> bool:
        """Everything sent or queued (SYN, data, FIN if closed) is acknowledged."""
        return self._opened and self._snd_una >= self._end_seq()

    @property
    def is_closed(self) -> bool:
        return self.state in ("CLOSED", "TIME_WAIT") and self._opened

    def next_timer(self) -> float | None:
        best: float | None = None
        for t in (self._rto_deadline, self._persist_deadline, self._tw_deadline):
            if t is not None and (best is None or t < best):
                best = t
        return best

    # ------------------------------------------------------------------ user calls
    def connect(self, now: float) -> None:
        """Active open: the SYN goes out with the next :meth:`segments_to_send`."""
        if self.state != "CLOSED" or self._opened:
            raise RuntimeError(f"connect() in state {self.state}")
        self._opened = True
        self._snd_nxt = 0
        self._set_state(now, "SYN_SENT")

    def listen(self, now: float | None = None) -> None:
        """Passive open.  (``now`` is optional and only used for the ``state`` event.)"""
        if self.state != "CLOSED" or self._opened:
            raise RuntimeError(f"listen() in state {self.state}")
        self._opened = True
        if now is None:
            self.state = "LISTEN"
        else:
            self._set_state(now, "LISTEN")

    def send(self, data: bytes) -> None:
        """Queue ``data`` for transmission (the buffer is unbounded)."""
        if self._fin_queued:
            raise RuntimeError("send() after close()")
        if self.state not in ("CLOSED", "LISTEN", "SYN_SENT", "SYN_RCVD", "ESTABLISHED", "CLOSE_WAIT"):
            raise RuntimeError(f"send() in state {self.state}")
        if data:
            self._sndbuf += data
            self._data_end += len(data)

    def close(self, now: float) -> None:
        """Send a FIN after all queued data (RFC 9293 sec. 3.10.4)."""
        st = self.state
        if self._fin_queued or st == "CLOSED":
            return
        if st == "LISTEN":
            self._set_state(now, "CLOSED")
        elif st in ("SYN_SENT", "SYN_RCVD"):
            self._fin_queued = True         # FIN_WAIT_1 once established
        elif st == "ESTABLISHED":
            self._fin_queued = True
            self._set_state(now, "FIN_WAIT_1")
        elif st == "CLOSE_WAIT":
            self._fin_queued = True
            self._set_state(now, "LAST_ACK")

    def read(self, max_bytes: int = -1) -> bytes:
        """In-order received data; freeing buffer space may produce a window update."""
        buf = self._rcvbuf
        n = len(buf) if max_bytes < 0 else min(max_bytes, len(buf))
        if n <= 0:
            return b""
        data = bytes(buf[:n])
        del buf[:n]
        if self._have_irs and self.state in _RECV_STATES:
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
                if self._rcv_wnd() - advertised >= min(self.config.rcv_buffer // 2, self._mss):
                    self.stats["window_updates"] += 1
                    self._queue_ack()
        return data

    # ------------------------------------------------------------------ input
    def on_segment(self, seg: Segment, now: float) -> None:
        self.stats["segments_received"] += 1
        st = self.state
        if st in _SYNCHRONIZED:
            self._on_synchronized(seg, now)
        elif st == "SYN_SENT":
            self._on_syn_sent(seg, now)
        elif st == "LISTEN":
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
        self._snd_wnd = self._max_snd_wnd = seg.window
        self._snd_wl1, self._snd_wl2 = 0, 0
        self._snd_nxt = 0                   # SYN+ACK goes out next
        self._set_state(now, "SYN_RCVD")

    def _on_syn_sent(self, seg: Segment, now: float) -> None:
        # RFC 9293 sec. 3.10.7.3
        flags = seg.flags
        ack_ok = False
        if flags & ACK:
            ack = _unwrap(seg.ack, self._iss, self._snd_una)
            if not 0 < ack <= self._snd_max:
                return
            ack_ok = True
        if flags & RST:
            if ack_ok:
                self._to_closed(now)
            return
        if not flags & SYN:
            return
        self._have_irs = True
        self._irs = seg.seq
        self._rcv_nxt = 1
        self._rcv_adv_edge = 0
        if ack_ok:
            self._established(now)
            self._process_ack(seg, now)
            self._queue_ack()
        else:                               # simultaneous open: resend SYN as SYN+ACK
            self._snd_wnd = self._max_snd_wnd = seg.window
            self._snd_wl1, self._snd_wl2 = 0, 0
            self._snd_nxt = 0
            self._set_state(now, "SYN_RCVD")

    def _on_synchronized(self, seg: Segment, now: float) -> None:
        flags = seg.flags
        plen = len(seg.payload)
        seglen = plen + (1 if flags & SYN else 0) + (1 if flags & FIN else 0)
        rcv_nxt = self._rcv_nxt
        seq = _unwrap(seg.seq, self._irs, rcv_nxt)
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
            if self.state == "SYN_RCVD" and flags & SYN and seq == 0:
                ack = _unwrap(seg.ack, self._iss, self._snd_una)
                if flags & ACK and 0 < ack <= self._snd_max:
                    # simultaneous open (RFC 9293 fig. 7): the peer's SYN+ACK acks our SYN
                    self._established(now)
                    self._process_ack(seg, now)
                    self._queue_ack()
                else:
                    self._snd_nxt = 0       # peer repeated its SYN: repeat our SYN+ACK
                return
            if seglen and seq + seglen <= rcv_nxt:
                self.stats["dup_segments_received"] += 1
            self._queue_ack()
            if self.state == "TIME_WAIT" and flags & FIN:
                self._tw_deadline = now + self.config.time_wait
            return
        if flags & RST:                     # second: RST (minimal: any in-window RST)
            self._to_closed(now)
            return
        if flags & SYN:                     # fourth: SYN in window -> challenge ACK (RFC 5961)
            self._queue_ack()
            return
        if not flags & ACK:                 # fifth: no ACK bit -> drop
            return
        if self.state == "SYN_RCVD":
            ack = _unwrap(seg.ack, self._iss, self._snd_una)
            if not 0 < ack <= self._snd_max:
                return
            self._established(now)
        if not self._process_ack(seg, now) or self.state == "CLOSED":
            return
        if seglen and self.state in _RECV_STATES:   # seventh/eighth: text and FIN
            self._process_data(seq, seg.payload, bool(flags & FIN), now)
        elif seglen:
            self._queue_ack()

    # ------------------------------------------------------------------ ACK processing
    def _process_ack(self, seg: Segment, now: float) -> bool:
        """RFC 9293 sec. 3.10.7.4, fifth: the ACK field.  False: drop the segment."""
        una = self._snd_una
        ack = _unwrap(seg.ack, self._iss, una)
        top = self._snd_max if self._snd_max > self._probe_end else self._probe_end
        if ack > top:                       # ACKs something not yet sent: ACK, drop
            self._queue_ack()
            return False
        if ack < una:                       # old duplicate ACK: ignore it (not the data)
            return True
        prev_wnd = self._snd_wnd
        seq = _unwrap(seg.seq, self._irs, self._rcv_nxt)
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
        new_sacked = 0
        if self._sack and seg.sack:
            new_sacked = self._update_scoreboard(seg.sack, ack)
        if ack > una:
            self._on_new_ack(ack, now)
            if self.config.snack and seg.snack:
                self._on_snack(seg.snack)
            return True
        if self.config.snack and seg.snack:
            # Paper 002, Sec. III-B: SNACK-TCP handles the reported losses itself, "without
            # starting up TCP congestion control": such an ACK is not a duplicate ACK.
            self._on_snack(seg.snack)
            return True
        # RFC 5681 sec. 2: duplicate ACK (RFC 6675 sec. 2: one that SACKs new data)
        if seg.payload or seg.flags & (SYN | FIN) or self._snd_max <= una:
            return True
        if self._sack:
            if not (new_sacked > 0 or (not seg.sack and seg.window == prev_wnd)):
                return True
        elif seg.window != prev_wnd:
            return True
        self.stats["dupacks_received"] += 1
        self._on_dupack(now)
        return True

    def _on_snack(self, entries: tuple[int, ...]) -> None:
        """SNACK-TCP (paper 002, Sec. III-B, Figure 5): count the reports of each lost segment;
        at ``snack_threshold`` reports resend it with the next output and mark it -1, which it
        stays while it is reported again.  Records at or below SND.UNA are dropped."""
        self.stats["snack_acks"] += 1
        una = self._snd_una
        reports = self._snack_reports
        for x32 in entries:
            s = _unwrap(x32, self._iss, una)
            if s < una or s >= self._snd_max or s < 1:
                continue
            count = reports.get(s, 0)
            if count < 0:
                continue
            count += 1
            if count >= self.config.snack_threshold:
                self._snack_rtx.append(s)
                count = -1
            reports[s] = count

    def _snack_entries(self) -> tuple[int, ...]:
        """The receiver's SNACK option (paper 002, Sec. III-A): the first byte of every MSS-sized
        piece missing below the highest out-of-order byte (the holes of the reassembly queue),
        lowest first, at most MAX_SNACK (6), as 32-bit sequence numbers."""
        out: list[int] = []
        lo = self._rcv_nxt
        mss = self._mss
        irs = self._irs
        for start, data in self._reasm.blocks:
            s = lo
            while s < start:
                if len(out) == MAX_SNACK:
                    return tuple(out)
                out.append((irs + s) & MASK)
                s += mss
            lo = start + len(data)
        return tuple(out)

    def _update_scoreboard(self, blocks: tuple[tuple[int, int], ...], ack: int) -> int:
        """RFC 6675 Update(): merge the reported SACK blocks; returns new bytes SACKed."""
        iss = self._iss
        high = self._snd_max
        sb = self._scoreboard
        added = 0
        for left, right in blocks:
            s = _unwrap(left, iss, ack)
            e = _unwrap(right, iss, ack)
            if s < ack:
                s = ack
            if e <= s or e > high:          # stale (below ACK) or bogus (beyond HighData)
                continue
            added += sb.add(s, e)
        return added

    def _on_new_ack(self, ack: int, now: float) -> None:
        una = self._snd_una
        # RFC 6298 sec. 2 + Karn: sample only an ACK covering a segment sent once.
        if self._rtt_seq is not None and ack >= self._rtt_seq:
            self._rtt_sample(now - self._rtt_time)
            self._rtt_seq = None
        data_end = self._data_end
        newly = min(ack, data_end) - max(una, 1)
        if newly > 0:
            self.bytes_acked += newly
        else:
            newly = 0
        self._snd_una = ack
        if ack > self._snd_max:             # a zero-window probe byte was accepted
            self._snd_max = ack
        if self._snd_nxt < ack:
            self._snd_nxt = ack
        drop = min(ack, data_end) - self._sndbuf_base
        if drop > 0:
            del self._sndbuf[:drop]
            self._sndbuf_base += drop
        if self._sack:
            self._scoreboard.advance(ack)
        if self._snack_reports:             # paper 002, Figure 5: forget acknowledged losses
            for s in [s for s in self._snack_reports if s < ack]:
                del self._snack_reports[s]
        self._dupacks = 0
        self._lt_extra = 0
        self._rto_consecutive = 0
        self._last_rto_una = None
        if self._rto_recovery and ack >= self._recovery_point:
            self._rto_recovery = False
        # congestion control
        if self._in_recovery:
            if not self._sack:
                # RFC 5681 sec. 3.2 step 6: deflate; plain Reno leaves recovery on any new ACK
                self._in_recovery = False
                self._set_cwnd(now, self.ssthresh, self.ssthresh)
            elif ack >= self._recovery_point:
                # RFC 6675 sec. 5 (A): recovery ends once RecoveryPoint is acknowledged
                self._in_recovery = False
                self._set_cwnd(now, self.ssthresh, self.ssthresh)
            # else: partial ACK inside RFC 6675 recovery -- cwnd stays, pipe shrinks
        elif newly:
            mss = self._mss
            cwnd = self.cwnd
            if cwnd < self.ssthresh:        # RFC 5681 sec. 3.1 slow start (eq. 2)
                cwnd += newly if newly < mss else mss
            else:                           # congestion avoidance (eq. 3)
                inc = mss * mss // cwnd
                cwnd += inc if inc > 0 else 1
            self._set_cwnd(now, cwnd, self.ssthresh)
        # RFC 6298 sec. 5.2 / 5.3
        if ack >= self._snd_max:
            self._rto_deadline = None
        else:
            self._rto_deadline = now + self.rto
        # our FIN acknowledged?
        if self._fin_queued and ack >= self._data_end + 1:
            st = self.state
            if st == "FIN_WAIT_1":
                self._set_state(now, "FIN_WAIT_2")
            elif st == "CLOSING":
                self._enter_time_wait(now)
            elif st == "LAST_ACK":
                self._to_closed(now)

    def _on_dupack(self, now: float) -> None:
        mss = self._mss
        if self._sack:
            if self._in_recovery:
                return                      # RFC 6675: pipe accounting does the rest
            self._dupacks += 1
            # RFC 6675 sec. 5 steps (1)-(2); sec. 5.1: not before RecoveryPoint after an RTO
            if self._snd_una >= self._recovery_point and (
                    self._dupacks >= self.config.dupack_threshold
                    or self._scoreboard.is_lost(self._snd_una, self.config.dupack_threshold, mss)):
                self._enter_sack_recovery(now)
            elif self.config.limited_transmit and self._dupacks < self.config.dupack_threshold:
                self._lt_extra = min(self._dupacks, 2) * mss
            return
        if self._in_recovery:               # RFC 5681 sec. 3.2 step 4: inflate
            self._set_cwnd(now, self.cwnd + mss, self.ssthresh)
            return
        self._dupacks += 1
        if self._dupacks == self.config.dupack_threshold and not (
                self.config.reno_rto_guard and self._snd_una < self._recovery_point):
            # RFC 5681 sec. 3.2 steps 2-3: fast retransmit, enter fast recovery
            ssthresh = max(self.flight_size // 2, 2 * mss)     # eq. (4)
            self._in_recovery = True
            self._lt_extra = 0
            self._fast_rtx_pending = True
            self._count_loss(now, "dupack")
            self._set_cwnd(now, ssthresh + 3 * mss, ssthresh)
        elif self.config.limited_transmit and self._dupacks < self.config.dupack_threshold:
            self._lt_extra = min(self._dupacks, 2) * mss       # RFC 3042

    def _enter_sack_recovery(self, now: float) -> None:
        # RFC 6675 sec. 5 step (4)
        mss = self._mss
        self._recovery_point = self._snd_max
        ssthresh = max(self.flight_size // 2, 2 * mss)
        self._in_recovery = True
        self._lt_extra = 0
        self._high_rxt = self._snd_una
        self._fast_rtx_pending = True
        self._count_loss(now, "dupack")
        self._set_cwnd(now, ssthresh, ssthresh)

    # ------------------------------------------------------------------ data receipt
    def _process_data(self, seq: int, payload: bytes, fin: bool, now: float) -> None:
        rcv_nxt = self._rcv_nxt
        right = rcv_nxt + self._rcv_wnd()
        data = payload
        if seq < rcv_nxt:                   # trim what we already have
            data = data[rcv_nxt - seq:]
            seq = rcv_nxt
        if seq + len(data) > right:         # trim beyond the window (the FIN with it)
            data = data[: max(0, right - seq)]
            fin = False
        if fin and self._rcv_fin is None:
            self._rcv_fin = seq + len(data)
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
            st = self.state
            if st == "ESTABLISHED":
                self._set_state(now, "CLOSE_WAIT")
            elif st == "FIN_WAIT_1":
                self._set_state(now, "CLOSING")
            elif st == "FIN_WAIT_2":
                self._enter_time_wait(now)
        self._rcv_nxt = rcv_nxt
        self._queue_ack()

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
        if self._tw_deadline is not None and now >= self._tw_deadline:
            self._tw_deadline = None
            self._to_closed(now)
            return
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
        if st in ("SYN_SENT", "SYN_RCVD"):
            if cfg.max_retries and self._rto_consecutive >= cfg.max_retries:
                self._abort(now)
                return
            self._rto_consecutive += 1
            self._count_loss(now, "rto")
            self._rtt_seq = None
            self.rto = min(self.rto * 2, cfg.max_rto)          # RFC 6298 sec. 5.5
            self._snd_nxt = 0                                   # resend SYN (or SYN+ACK)
            self._rto_deadline = now + self.rto                 # sec. 5.6
            return
        if st not in _SEND_STATES or self._snd_una >= self._snd_max:
            return
        if cfg.max_retries and self._rto_consecutive >= cfg.max_retries:
            self._abort(now)
            return
        self._rto_consecutive += 1
        mss = self._mss
        una = self._snd_una
        # RFC 5681 sec. 3.1: ssthresh set to "no more than" eq. (4); held if this segment
        # already timed out.  A timeout during fast/loss recovery keeps the recovery's
        # ssthresh when that is lower (the inflated flight would raise it; Linux does so too).
        ssthresh = self.ssthresh
        if self._last_rto_una != una:
            eq4 = max(self.flight_size // 2, 2 * mss)
            ssthresh = min(eq4, ssthresh) if self._in_recovery else eq4
        self._last_rto_una = una
        self._count_loss(now, "rto")
        self._set_cwnd(now, mss, ssthresh)                      # loss window = 1 segment
        self.rto = min(self.rto * 2, cfg.max_rto)               # RFC 6298 sec. 5.5
        self._in_recovery = False
        self._dupacks = 0
        self._lt_extra = 0
        self._fast_rtx_pending = False
        self._rtt_seq = None                                    # Karn
        self._snd_nxt = una                                     # go-back-N from SND.UNA
        self._recovery_point = self._snd_max
        if self._sack:
            # RFC 6675 sec. 5.1: keep the scoreboard (our receiver never reneges), do not
            # start a new recovery before RecoveryPoint, skip SACKed data when resending.
            self._high_rxt = una
            self._rto_recovery = True
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
        out: list[Segment] = []
        if self._pending:
            self.stats["acks_sent"] += len(self._pending)
            self.stats["segments_sent"] += len(self._pending)
            out.extend(self._pending)
            self._pending.clear()
        st = self.state
        if st in ("SYN_SENT", "SYN_RCVD"):
            if self._snd_nxt == 0:
                out.append(self._build(0, 0, now))
                self._snd_nxt = 1
            return out
        if st not in _SEND_STATES:
            return out
        if self._snack_rtx:
            self._output_snack(now, out)
        if self._sack and self._in_recovery:
            self._output_sack_recovery(now, out)
        else:
            self._output_window(now, out)
        # RFC 9293 sec. 3.8.6.1: persist timer while the peer's window keeps data back
        if (self._snd_una == self._snd_max and self._snd_nxt < self._data_end
                and self._rto_deadline is None and self._persist_deadline is None):
            backoff = self.rto * (1 << min(self._persist_backoff, 30))
            self._persist_deadline = now + min(backoff, self.config.max_rto)
        return out

    def _output_snack(self, now: float, out: list[Segment]) -> None:
        """SNACK-TCP retransmissions: outside cwnd, which they leave as it is (paper 002)."""
        for s in self._snack_rtx:
            if self._snd_una <= s < self._snd_max:
                n = self._seg_len(s)
                if n > 0:
                    out.append(self._build(s, n, now))
                    self.stats["snack_retransmissions"] += 1
        self._snack_rtx.clear()

    def _output_window(self, now: float, out: list[Segment]) -> None:
        """Send within min(cwnd, rwnd): Reno always, SACK outside RFC 6675 recovery."""
        mss = self._mss
        una = self._snd_una
        if self._fast_rtx_pending:          # RFC 5681 sec. 3.2 step 3
            self._fast_rtx_pending = False
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
        sb = self._scoreboard if self._sack else None
        cwnd = self.cwnd + self._lt_extra if not self._in_recovery else self.cwnd
        right = una + self._snd_wnd                     # peer's window edge
        while self._snd_nxt < end_seq:
            nxt = self._snd_nxt
            if sb is not None and sb.blocks and nxt < self._snd_max:
                skip = sb.skip(nxt)                     # never resend SACKed data
                if skip != nxt:
                    self._snd_nxt = skip
                    continue
            n = self._seg_len(nxt) if nxt < data_end else 0
            if self._force_one:
                self._force_one = False
            elif n > 0:
                outstanding = nxt - una
                if self._rto_recovery and sb is not None:
                    outstanding -= sb.sacked_between(una, nxt)
                usable = min(cwnd - outstanding, right - nxt)
                if usable < n:
                    # RFC 1122 sec. 4.2.3.4 sender SWS avoidance: a partial segment only if
                    # it is at least half the largest window the peer ever offered.
                    if usable > 0 and (self._force_small or 2 * usable >= self._max_snd_wnd):
                        n = usable
                    else:
                        break
            out.append(self._build(nxt, n, now))
            self._force_small = False
        self._force_small = False

    def _output_sack_recovery(self, now: float, out: list[Segment]) -> None:
        """RFC 6675 sec. 5 steps (C): transmit while cwnd - pipe >= 1 SMSS, per NextSeg()."""
        mss = self._mss
        una = self._snd_una
        sb = self._scoreboard
        if self._fast_rtx_pending:          # step (4.3): the first segment, regardless of pipe
            self._fast_rtx_pending = False
            if una < self._snd_max:
                n = self._seg_len(una)
                out.append(self._build(una, n, now))
                self._rto_deadline = now + self.rto     # restart, as 4.4BSD and Linux do
                end = una + max(n, 1)
                if end > self._high_rxt:
                    self._high_rxt = end
        dupthresh = self.config.dupack_threshold
        holes = sb.holes(una, dupthresh, mss)
        pipe = sb.pipe(una, self._snd_max, self._high_rxt, holes)
        data_end = self._data_end
        end_seq = self._end_seq()
        while self.cwnd - pipe >= mss:
            start = -1
            high_rxt = self._high_rxt
            for a, b, lost in holes:        # NextSeg rule (1): lost, un-SACKed, above HighRxt
                if not lost:
                    break
                s = a if a > high_rxt else high_rxt
                if s < b:
                    start = s
                    break
            if start < 0:                   # rule (2): new data, if the peer's window allows
                nxt = self._snd_nxt
                if nxt < end_seq and nxt >= self._snd_max:
                    n = min(mss, data_end - nxt) if nxt < data_end else 0
                    room = una + self._snd_wnd - nxt
                    if n == 0 or room >= n or (room > 0 and 2 * room >= self._max_snd_wnd):
                        n = n if n == 0 or room >= n else room
                        out.append(self._build(nxt, n, now))
                        pipe += n
                        continue
                for a, b, _lost in holes:   # rule (3): any un-SACKed octet above HighRxt
                    s = a if a > high_rxt else high_rxt
                    if s < b:
                        start = s
                        break
            n = self._seg_len(start) if start >= 0 else 0
            if n <= 0:
                break
            out.append(self._build(start, n, now))
            if start + n > self._high_rxt:
                self._high_rxt = start + n
            pipe += n

    def _seg_len(self, start: int) -> int:
        """Payload for a segment at ``start``: at most one MSS, never into SACKed data."""
        n = self._data_end - start
        if n <= 0:
            return 0
        if n > self._mss:
            n = self._mss
        if self._sack and self._scoreboard.blocks and start < self._snd_max:
            ns = self._scoreboard.next_start(start)
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
            if self._rtt_seq is not None and start < self._rtt_seq:
                self._rtt_seq = None        # Karn: the timed segment's ACK is now ambiguous
        elif self._rtt_seq is None:         # time one new segment at a time
            self._rtt_seq = end
            self._rtt_time = now
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
        return Segment((self._iss + nxt) & MASK, ack32, ACK, wnd, sack,
                       bytes(self._sndbuf[off: off + 1]))

    def _ack_fields(self) -> tuple[int, int, tuple[tuple[int, int], ...]]:
        if not self._have_irs:
            return 0, min(self.config.rcv_buffer, MASK), ()
        rcv_nxt = self._rcv_nxt
        wnd = self._rcv_wnd()
        if rcv_nxt + wnd > self._rcv_adv_edge:
            self._rcv_adv_edge = rcv_nxt + wnd
        irs = self._irs
        sack: tuple[tuple[int, int], ...] = ()
        if self._sack and self._reasm.blocks:
            sack = tuple(((irs + s) & MASK, (irs + e) & MASK)
                         for s, e in self._reasm.sack_blocks(rcv_nxt, MAX_SACK_BLOCKS))
        return (irs + rcv_nxt) & MASK, wnd, sack

    def _queue_ack(self) -> None:
        """Queue a pure ACK reflecting the receive state right now (no delayed ACKs)."""
        ack32, wnd, sack = self._ack_fields()
        snack = self._snack_entries() if self.config.snack and self._have_irs and self._reasm.blocks else ()
        self._pending.append(Segment((self._iss + self._snd_nxt) & MASK, ack32, ACK, wnd, sack,
                                     b"", snack))

    def _reply_rst(self, seg: Segment) -> None:
        # RFC 9293 sec. 3.10.7.1: a segment for a closed connection draws a RST
        if seg.flags & RST or not self._opened:
            return
        if seg.flags & ACK:
            self._pending.append(Segment(seg.ack, 0, RST, 0))
        else:
            self._pending.append(Segment(0, (seg.seq + seg.length) & MASK, RST | ACK, 0))

    # ------------------------------------------------------------------ helpers
    def _end_seq(self) -> int:
        return self._data_end + (1 if self._fin_queued else 0)

    def _set_state(self, now: float, state: str) -> None:
        if state != self.state:
            self.state = state
            self._emit(now, "state", state=state)

    def _set_cwnd(self, now: float, cwnd: int, ssthresh: int) -> None:
        if cwnd != self.cwnd or ssthresh != self.ssthresh:
            self.cwnd = cwnd
            self.ssthresh = ssthresh
            self._emit(now, "cwnd", cwnd=cwnd, ssthresh=ssthresh)

    def _count_loss(self, now: float, kind: str) -> None:
        self.stats["losses_dupack" if kind == "dupack" else "losses_rto"] += 1
        self._emit(now, "loss", kind=kind, seq=(self._iss + self._snd_una) & MASK)

    def _established(self, now: float) -> None:
        if self._syn_retransmitted:
            # RFC 5681 sec. 3.1: IW is one segment after a lost SYN or SYN+ACK
            self.cwnd = self._mss
            if self.srtt is None:           # RFC 6298 sec. 5.7
                self.rto = min(max(_SYN_TIMEOUT_RTO, self.config.initial_rto), self.config.max_rto)
        self._rto_consecutive = 0
        self._set_state(now, "ESTABLISHED")
        self._emit(now, "cwnd", cwnd=self.cwnd, ssthresh=self.ssthresh)
        if self._fin_queued:
            self._set_state(now, "FIN_WAIT_1")

    def _enter_time_wait(self, now: float) -> None:
        self._rto_deadline = None
        self._persist_deadline = None
        self._set_state(now, "TIME_WAIT")
        self._tw_deadline = now + self.config.time_wait

    def _to_closed(self, now: float) -> None:
        self._rto_deadline = None
        self._persist_deadline = None
        self._tw_deadline = None
        self._set_state(now, "CLOSED")

    def _abort(self, now: float) -> None:
        self.stats["aborted"] += 1
        self._to_closed(now)
