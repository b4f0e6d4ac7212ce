"""The TCP segment as the testbed carries it (no ports: those live in the overlay header)."""
from __future__ import annotations

from dataclasses import dataclass

FIN = 0x01
SYN = 0x02
RST = 0x04
ACK = 0x10
KNOWN_FLAGS = FIN | SYN | RST | ACK

MAX_SACK_BLOCKS = 4  # RFC 2018 allows 4 without timestamps
MAX_SNACK = 6        # paper 002: a SNACK option carries up to 6 lost sequence numbers

TS_MOD = 1 << 32     # RFC 7323 sec. 3: TSval and TSecr are 32-bit

SEQ_MOD = 1 << 32
SEQ_MASK = SEQ_MOD - 1
_HALF = 1 << 31


def unwrap(x32: int, base32: int, ref: int) -> int:
    """The unwrapped (relative to ``base32``) sequence number closest to ``ref`` whose
    32-bit wire value is ``x32`` (RFC 9293 sec. 3.4's modular comparison, done once)."""
    d = (x32 - base32 - ref) & SEQ_MASK
    if d & _HALF:
        d -= SEQ_MOD
    return ref + d


def sack_ranges(blocks: tuple[tuple[int, int], ...], iss: int, ack: int,
                high: int) -> list[tuple[int, int]]:
    """The SACK blocks of an ACK as unwrapped ``[start, end)`` ranges above ``ack``: cut at the cumulative
    ACK, and left out when stale (nothing above it) or bogus (beyond ``high``, the sender's HighData)."""
    out = []
    for left, right in blocks:
        s = unwrap(left, iss, ack)
        e = unwrap(right, iss, ack)
        if s < ack:
            s = ack
        if e <= s or e > high:
            continue
        out.append((s, e))
    return out


@dataclass(slots=True)
class Segment:
    """One TCP segment.

    ``seq`` and ``ack`` are 32-bit byte sequence numbers.  ``sack`` holds up to
    four (left, right) blocks, right edge exclusive (RFC 2018).  ``snack`` holds
    up to six sequence numbers the receiver reports lost (paper 002).
    ``window`` is the receiver window in bytes (no scaling: the field is 32 bits).
    ``tsval``/``tsecr``: the Timestamps option (RFC 7323 sec. 3), both 32-bit; ``tsval`` None: no option.
    """

    seq: int
    ack: int = 0
    flags: int = 0
    window: int = 0
    sack: tuple[tuple[int, int], ...] = ()
    payload: bytes = b""
    snack: tuple[int, ...] = ()
    tsval: int | None = None
    tsecr: int = 0

    @property
    def length(self) -> int:
        """Sequence space consumed: payload bytes, plus one each for SYN and FIN."""
        return len(self.payload) + (1 if self.flags & SYN else 0) + (1 if self.flags & FIN else 0)

    @property
    def is_pure_ack(self) -> bool:
        return self.flags == ACK and not self.payload



def ts_before(a: int, b: int) -> bool:
    """RFC 7323 sec. 5.3 (PAWS): is timestamp ``a`` earlier than ``b`` in the 32-bit modular order?"""
    return 0 < ((b - a) & SEQ_MASK) < _HALF
