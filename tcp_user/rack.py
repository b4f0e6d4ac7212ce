"""RACK: time-based loss detection (RFC 8985 sec. 6), beside RFC 6675's duplicate-ACK rule.

A segment is lost when a segment sent *after* it has been delivered (cumulatively or by SACK) and
more than the reordering window has passed since it was sent, one RTT of the delivered segment later:
``xmit_ts + RACK.rtt + reo_wnd <= now``.  Because it reasons about transmission times, not sequence
numbers, it also finds a *lost retransmission*, which RFC 6675 alone leaves to the retransmission timer.
Linux runs it by default (``net.ipv4.tcp_recovery = 1``).

The segments and their transmission times are the sender's :class:`tcp_user.sent.SentLog`; this
module keeps RACK's own state and marks records lost.  No I/O, times are ``now`` arguments.
Left out, and said here: DSACK-driven growth of the reordering window (RFC 8985 sec. 6.2 step 4's
``reo_wnd_mult``; this sender never receives DSACK), and the timestamp test of step 2 (no TCP
timestamps on this sender; the ``min_RTT`` test stands alone).
"""
from __future__ import annotations

from tcp_user.sent import SentLog


def sent_after(t1: float, order1: int, t2: float, order2: int) -> bool:
    """RFC 8985 sec. 6.2, RACK_sent_after: was the transmission (t1, order1) after (t2, order2)?  The RFC
    breaks a tie of times by sequence number; the sender's own count of transmissions (``order``) is
    exact, which matters in virtual time, where a whole burst, retransmission first, has one time."""
    return t1 > t2 or (t1 == t2 and order1 > order2)


class Rack:
    """RACK's state (RFC 8985 sec. 5.2): the most recently sent delivered segment, its RTT, min_RTT."""

    __slots__ = ("xmit_ts", "order", "rtt", "min_rtt", "reordering_seen", "timeout_at", "losses")

    def __init__(self) -> None:
        self.xmit_ts: float | None = None   # RACK.xmit_ts: sent last of the segments delivered
        self.order = 0                      # RACK.end_seq's role: which transmission it was
        self.rtt = 0.0                      # RACK.rtt: the RTT of that segment's delivery
        self.min_rtt: float | None = None   # RACK.min_RTT
        self.reordering_seen = False        # RACK.reord: a delivery below one delivered before
        self.timeout_at: float | None = None    # the reordering timer (sec. 6.2 step 5)
        self.losses = 0                     # segments marked lost, over the connection

    def on_delivered(self, xmit_ts: float, order: int, end: int, retransmitted: bool, now: float,
                     fack: int) -> None:
        """RFC 8985 sec. 6.2 steps 2-3, for one newly delivered segment ``[.., end)`` last sent at
        ``xmit_ts`` (transmission number ``order``); ``fack``: the highest sequence delivered before."""
        rtt = now - xmit_ts
        if retransmitted and self.min_rtt is not None and rtt < self.min_rtt:
            return                          # step 2: the original copy's ACK, perhaps; not a sample
        if not retransmitted and (self.min_rtt is None or rtt < self.min_rtt):
            self.min_rtt = rtt
        if end < fack:
            self.reordering_seen = True     # step 3: delivered below what was delivered before
        if self.xmit_ts is None or sent_after(xmit_ts, order, self.xmit_ts, self.order):
            self.xmit_ts = xmit_ts
            self.order = order
            self.rtt = rtt

    def reo_wnd(self, in_recovery: bool, sacked_segments: int, dupthresh: int, srtt: float | None) -> float:
        """RFC 8985 sec. 6.2 step 4: no window in recovery or past DupThresh SACKed segments while no
        reordering was seen; else min_RTT / 4, at most SRTT."""
        if self.min_rtt is None:
            return 0.0
        if not self.reordering_seen and (in_recovery or sacked_segments >= dupthresh):
            return 0.0
        wnd = self.min_rtt / 4
        return min(wnd, srtt) if srtt is not None else wnd

    def detect_loss(self, log: SentLog, una: int, now: float, reo_wnd: float) -> int:
        """RFC 8985 sec. 6.2 step 5: mark lost every record sent before RACK's segment whose time is up;
        arm the reordering timer for the others.  Returns how many were newly marked."""
        self.timeout_at = None
        if self.xmit_ts is None:
            return 0
        rack_ts, rack_order, horizon = self.xmit_ts, self.order, self.rtt + reo_wnd
        marked = 0
        latest: float | None = None
        for i in range(len(log.starts)):
            if log.sacked[i] or log.lost[i] or log.ends[i] <= una:
                continue
            t = log.times[i]
            if not sent_after(rack_ts, rack_order, t, log.order[i]):
                continue                    # sent after RACK's segment (a retransmission, say): not yet
            remaining = t + horizon - now
            if remaining <= 0:
                log.lost[i] = True
                marked += 1
            elif latest is None or now + remaining > latest:
                latest = now + remaining            # RFC 8985: the timer waits for the longest remaining
        self.timeout_at = latest
        self.losses += marked
        return marked


# ---- TLP: the tail loss probe (RFC 8985 sec. 7) ---------------------------------------------------
WCDELACKT = 0.2        # RFC 8985 sec. 7.2: the worst-case delayed-ACK timer added when one segment is out


def probe_timeout(srtt: float, flight: int, mss: int) -> float:
    """RFC 8985 sec. 7.2: PTO = 2 SRTT, plus WCDelAckT when only one segment is in flight (its ACK may
    be delayed)."""
    pto = 2 * srtt
    if flight <= mss:
        pto += WCDELACKT
    return pto


class Tlp:
    """One tail loss probe at a time (RFC 8985 sec. 7.3-7.4): ``end`` is TLP.end_seq while a probe is
    out, ``retrans`` whether it resent old data (TLP.is_retrans)."""

    __slots__ = ("end", "retrans", "pto_at", "pending", "probes", "recoveries")

    def __init__(self) -> None:
        self.end: int | None = None
        self.retrans = False
        self.pto_at: float | None = None    # the PTO timer
        self.pending = False                # the PTO fired: the next output sends the probe
        self.probes = 0
        self.recoveries = 0                 # losses the probe repaired (Linux TCPLossProbeRecovery)

    def on_ack(self, ack: int, advanced: bool, new_info: bool) -> bool:
        """RFC 8985 sec. 7.4 (Linux's tcp_process_tlp_ack): True when the ACK shows that the probe
        repaired a loss, so that the sender must reduce cwnd.  This sender's peers send no DSACK,
        so an ACK beyond a resent probe's end is taken as the loss of the original."""
        end = self.end
        if end is None or ack < end:
            return False
        if not self.retrans:
            self.end = None                 # a probe of new data was acknowledged: nothing was lost
            return False
        if ack > end:
            self.end = None
            self.recoveries += 1
            return True
        if not advanced and not new_info:
            self.end = None                 # a pure duplicate ACK: the original and the probe arrived
        return False
