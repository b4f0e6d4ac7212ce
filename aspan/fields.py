"""The A-SPAN header fields (paper, Design: "Packet Header Fields for A-SNAP")."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class AspanFields:
    """Fields every data packet carries.

    pkt_effort:  product of the delivery ratios of the hops travelled since the
                 packet was last cached (starts at 1 at the sender).
    pkt_qos:     threshold set by the sender; a node caches when effort < pkt_qos.
    snoop_after: the first ``snoop_after`` forwarding nodes never cache.
    snoop_limit: at most this many nodes cache one packet (0 = no limit).
    snoop_count: how many nodes have cached this packet so far (added by nodes).
    """

    pkt_effort: float = 1.0
    pkt_qos: float = 1.0
    snoop_after: int = 0
    snoop_limit: int = 0
    snoop_count: int = 0

    def copy(self) -> "AspanFields":
        return AspanFields(self.pkt_effort, self.pkt_qos, self.snoop_after,
                           self.snoop_limit, self.snoop_count)
