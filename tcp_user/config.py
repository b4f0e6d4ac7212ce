"""Configuration of one user-space TCP connection."""
from __future__ import annotations

from dataclasses import dataclass

from tcp_user.congestion import CONGESTION_CONTROLS

_MAX_U32 = (1 << 32) - 1


def __getattr__(name: str) -> tuple[str, ...]:
    # ``VARIANTS``: the names of the congestion-control registry, read when asked for, so a
    # variant registered later (a test's toy class) is listed too.
    if name == "VARIANTS":
        return tuple(CONGESTION_CONTROLS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(slots=True)
class TcpConfig:
    """Knobs of :class:`tcp_user.connection.TcpConnection`.

    Sizes are bytes unless stated otherwise; ``init_cwnd`` is in segments; times are seconds.
    """

    variant: str = "reno"          # a name of tcp_user.congestion.CONGESTION_CONTROLS: "reno"
                                   # (RFC 5681 Reno) or "sack" (RFC 2018 + RFC 6675 recovery)
    mss: int = 1000                # payload bytes per segment (SMSS)
    init_cwnd: int = 2             # IW in segments (RFC 5681 sec. 3.1 allows up to 4 for mss 1000)
    rcv_buffer: int = 64_000       # receive buffer; advertised window = free space
    min_rto: float = 0.2           # RFC 6298 (2.4) says 1 s; Linux uses 0.2 s
    max_rto: float = 60.0          # RFC 6298 (2.5)
    initial_rto: float = 1.0       # RFC 6298 (2.1)
    dupack_threshold: int = 3      # RFC 5681 sec. 3.2 / RFC 6675 DupThresh
    init_ssthresh: int = 1 << 30   # RFC 5681 sec. 3.1: "arbitrarily high"
    time_wait: float = 1.0         # TIME_WAIT duration (stands in for 2*MSL); 0 leaves it at once
    max_retries: int = 15          # consecutive RTOs without progress before aborting; 0 = never
    # RFC 3042 / RFC 5681 sec. 3.2 step 1, as Linux has it; off: plain Reno / RFC 6675 (ns-2's TCP).
    # sack only, rack: RACK-TLP (RFC 8985, tcp_user.rack) beside the dupack rule, as Linux's default
    # tcp_recovery = 1: a lost retransmission or a tail loss found without waiting for the timer.
    # Both off by default until the sender has timestamps (RFC 7323): without them, turned on, a Reno flow
    # at 30 % loss lives on backed-off timeouts Karn's rule cannot clear (docs/REPRODUCTION.md, "The
    # user-space TCP against kernel TCP").
    limited_transmit: bool = False
    rack: bool = False
    # RFC 7323: the Timestamps option, offered on the SYN and used when both sides offer it: RTTM (an RTT
    # sample from TSecr when Karn's rule leaves none, as Linux's tcp_ack_update_rtt, which clears the RTO
    # backoff, RFC 6298 sec. 5.7), TS.Recent and PAWS at the receiver.  Off: no option (the papers' TCP).
    timestamps: bool = False
    ts_hz: int = 1000              # the timestamp clock, ticks per second (RFC 7323 sec. 5.4: 1 ms to 1 s a tick)
    # Reno only: after an RTO, ignore dupacks for data sent before it (RFC 6582 sec. 4 style
    # guard against a false fast retransmit).  Off = plain RFC 5681 / 4.4BSD Reno.  The SACK
    # variant always applies RFC 6675 sec. 5.1's equivalent rule.
    reno_rto_guard: bool = False
    # Reno only: NewReno (RFC 6582 sec. 3.2): a partial ACK in fast recovery resends the next unacknowledged
    # segment and stays in recovery until ``recover`` (SND.MAX at entry) is acknowledged; a third dupack starts
    # no second fast retransmit for the same window (nor for data sent before a timeout).  Off: RFC 5681 Reno.
    newreno: bool = False
    # F-RTO (RFC 5682 sec. 2, the basic algorithm, for both variants): after a timeout, new data instead of
    # go-back-N while the first two ACKs decide whether the timeout was spurious; spurious: cwnd and ssthresh
    # are undone to their values before it (as Linux's undo, not RFC 4015's response), ``frto_spurious``.
    frto: bool = False
    # Paper 002 (SNACK-NS): the receiver puts up to 6 lost sequence numbers (the holes of its
    # out-of-order queue, one per MSS, lowest first) on every ACK; the sender (SNACK-TCP)
    # retransmits a loss once it has been reported ``snack_threshold`` times, without touching
    # cwnd, and does not count ACKs that carry SNACK entries as duplicate ACKs.  Off: plain TCP.
    snack: bool = False
    snack_threshold: int = 2        # paper 002, Sec. III-B: "we set the parameter as 2"
    # Delayed ACKs (RFC 1122 sec. 4.2.3.2, RFC 5681 sec. 4.2), as kernel TCP always has them: an ACK for every
    # second full-sized segment, or ``delack_s`` after the first one not yet acknowledged.  Off: an ACK for
    # every segment (ns-2's TCPSink, which the papers used).
    delayed_ack: bool = False
    delack_s: float = 0.2           # RFC 1122: under 0.5 s; 4.4BSD's 200 ms tick (Linux adapts between 40 and 200 ms)

    def __post_init__(self) -> None:
        if self.variant not in CONGESTION_CONTROLS:
            raise ValueError(f"variant: unknown TCP variant {self.variant!r} "
                             f"(expected one of {tuple(CONGESTION_CONTROLS)})")
        _check_int("mss", self.mss, 1, 0xFFFF)
        _check_int("init_cwnd", self.init_cwnd, 1)
        _check_int("rcv_buffer", self.rcv_buffer, 1, _MAX_U32)
        _check_int("dupack_threshold", self.dupack_threshold, 1)
        _check_int("init_ssthresh", self.init_ssthresh, 1)
        _check_int("max_retries", self.max_retries, 0)
        _check_int("snack_threshold", self.snack_threshold, 1)
        _check_int("ts_hz", self.ts_hz, 1, 1000)
        for name in ("min_rto", "max_rto", "initial_rto"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name}: must be a positive number, got {value!r}")
        if self.min_rto > self.max_rto:
            raise ValueError(f"min_rto: {self.min_rto} exceeds max_rto {self.max_rto}")
        if isinstance(self.time_wait, bool) or not isinstance(self.time_wait, (int, float)) \
                or not self.time_wait >= 0:
            raise ValueError(f"time_wait: must be a number >= 0, got {self.time_wait!r}")
        if isinstance(self.delack_s, bool) or not isinstance(self.delack_s, (int, float)) \
                or not 0 < self.delack_s <= 0.5:
            raise ValueError(f"delack_s: must be in (0, 0.5] (RFC 1122 sec. 4.2.3.2), got {self.delack_s!r}")
        for name in ("limited_transmit", "reno_rto_guard", "snack", "delayed_ack", "rack", "timestamps",
                     "newreno", "frto"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: must be a bool, got {getattr(self, name)!r}")


def _check_int(name: str, value: object, lo: int, hi: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}: must be an int, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name}: must be {bound}, got {value}")
