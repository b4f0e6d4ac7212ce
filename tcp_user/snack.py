"""SNACK-TCP (paper 002, SNACK-NS): both ends of the SNACK option in user-space TCP.

* The receiver (:func:`snack_entries`, Sec. III-A) puts up to six lost sequence numbers --
  the holes of its out-of-order queue, one per MSS, lowest first -- on every ACK.
* The sender (:class:`SnackSender`, Sec. III-B, Figure 5) counts how often each loss is
  reported and retransmits it once it was reported ``snack_threshold`` times, outside cwnd
  and without touching it.  An ACK carrying SNACK entries is not a duplicate ACK: the
  connection hands it here instead of to congestion control.

Sequence numbers inside the sender are *unwrapped* (relative to ISS), as everywhere in the
connection; the entries on the wire are 32-bit values.  Only used with ``TcpConfig.snack``.
"""
from __future__ import annotations

from tcp_user.segment import MAX_SNACK, SEQ_MASK, unwrap


def snack_entries(blocks: list[list], rcv_nxt: int, mss: int, irs: int) -> tuple[int, ...]:
    """The receiver's SNACK option (paper 002, Sec. III-A).

    ``blocks`` is the reassembly queue (``[start, data]``, ascending, unwrapped relative to
    the IRS).  Returns the first byte of every MSS-sized piece missing below the highest
    out-of-order byte, lowest first, at most :data:`MAX_SNACK` (6), as 32-bit numbers.
    """
    out: list[int] = []
    lo = rcv_nxt
    for start, data in blocks:
        s = lo
        while s < start:
            if len(out) == MAX_SNACK:
                return tuple(out)
            out.append((irs + s) & SEQ_MASK)
            s += mss
        lo = start + len(data)
    return tuple(out)


class SnackSender:
    """The sender's SNACK records (paper 002, Figure 5): sequence number -> times reported,
    or -1 once resent (it stays -1 while it is reported again)."""

    __slots__ = ("threshold", "reports", "due")

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold            # Sec. III-B: "we set the parameter as 2"
        self.reports: dict[int, int] = {}
        self.due: list[int] = []              # losses to resend with the next output

    def on_entries(self, entries: tuple[int, ...], iss: int, una: int, snd_max: int) -> None:
        """Count one report of each entry; entries below SND.UNA (acknowledged), at or beyond
        SND.MAX (never sent) or naming the SYN are ignored."""
        reports = self.reports
        threshold = self.threshold
        for x32 in entries:
            s = unwrap(x32, iss, una)
            if s < una or s >= snd_max or s < 1:
                continue
            count = reports.get(s, 0)
            if count < 0:
                continue
            count += 1
            if count >= threshold:
                self.due.append(s)
                count = -1
            reports[s] = count

    def forget_below(self, ack: int) -> None:
        """Figure 5: drop the records of losses the cumulative ACK now covers."""
        reports = self.reports
        if reports:
            for s in [s for s in reports if s < ack]:
                del reports[s]

    def take_due(self) -> list[int]:
        """The losses to resend now (the caller checks they are still outstanding)."""
        due = self.due
        self.due = []
        return due
