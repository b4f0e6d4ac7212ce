"""The A-SPAN header fields (paper, Design: "Packet Header Fields for A-SNAP") and their one precision.

pkt_effort and pkt_qos are probabilities.  Every data plane carries them as the
same 16-bit fixed-point number (``k / FIXED_ONE``, k = 0..65535): the IPv4 option
of the kernel data plane has 16 bits for each, the overlay wire carries the same
16-bit words, and the virtual-time backend, which never encodes a packet, holds
the same grid values as floats.  :func:`quantise` is the one rounding rule,
applied wherever a value is written into a header (the sender's stamp, every
forwarding node's update): so a node decides to cache on exactly the same numbers
on every backend (docs/DESIGN.md, "One precision for the header fields").
"""
from __future__ import annotations

from dataclasses import dataclass

FIXED_ONE = 65535   # 1.0 in the header's 16-bit fixed point
#: The largest snoop_count the header holds (one byte on the overlay; the kernel option's nibble holds
#: less and saturates on its own: routing.kernel.ip_option).  The count saturates here (aspan.policy.update_effort).
SNOOP_COUNT_MAX = 255
_ONE = 65535.0      # the same as a float: the same products and quotients, without converting an int each time


def to_fixed(x: float) -> int:
    """The 16-bit word of a probability: clamped to [0, 1], rounded half up to the nearest 1/65535."""
    return int((0.0 if x < 0.0 else 1.0 if x > 1.0 else x) * FIXED_ONE + 0.5)


def quantise(x: float) -> float:
    """``x`` on the header's grid: the value a receiver decodes from the word :func:`to_fixed` writes
    (``to_fixed(x) / FIXED_ONE``, written out: it runs for every data packet a node sends)."""
    return int((0.0 if x < 0.0 else 1.0 if x > 1.0 else x) * _ONE + 0.5) / _ONE


@dataclass(slots=True)
class AspanFields:
    """Fields every data packet carries.

    pkt_effort:  product of the delivery ratios of the hops travelled since the
                 packet was last cached (starts at 1 at the sender).
    pkt_qos:     threshold set by the sender; a node caches when effort < pkt_qos.
    snoop_after: the first ``snoop_after`` forwarding nodes never cache.
    snoop_limit: at most this many nodes cache one packet (0 = no limit).
    snoop_count: how many nodes have cached this packet so far (added by nodes).

    pkt_effort and pkt_qos hold grid values (:func:`quantise`) once a sender stamped them.
    """

    pkt_effort: float = 1.0
    pkt_qos: float = 1.0
    snoop_after: int = 0
    snoop_limit: int = 0
    snoop_count: int = 0

    def copy(self) -> "AspanFields":
        return AspanFields(self.pkt_effort, self.pkt_qos, self.snoop_after,
                           self.snoop_limit, self.snoop_count)

    @classmethod
    def stamped(cls, pkt_qos: float, snoop_after: int = 0, snoop_limit: int = 0) -> "AspanFields":
        """The header a sender puts on a new data packet: pkt_effort 1, pkt_qos on the grid."""
        return cls(1.0, quantise(pkt_qos), snoop_after, snoop_limit, 0)
