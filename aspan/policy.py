"""Where to cache: the A-SPAN adaptive rule and the simpler placement policies.

``hop_index`` counts the nodes that transmitted the packet before this one:
0 is the sender's own forwarding layer, 1 the first forwarding node (B in the
paper's chain A-B-C-D), 2 the second (C).
"""
from __future__ import annotations

from dataclasses import dataclass

from aspan.fields import SNOOP_COUNT_MAX, AspanFields, quantise

POLICIES = ("none", "fixed", "adaptive", "every", "perfect")
DUPACK_DISCIPLINES = ("every", "once")


@dataclass(slots=True)
class SnoopConfig:
    """Node-side snoop settings (the header fields pkt_qos, snoop_after, snoop_limit come with each packet)."""

    policy: str = "none"
    fixed_hop: int = 1            # policy "fixed": the hop that caches (1 = snoop_1 at B, 2 = snoop_2 at C)
    dupack: str = "every"         # "every": retransmit on each dupack (the paper); "once": classic Snoop
    cache_bytes: int = 4_000_000  # bound on the cache's memory per node: payload + SEGMENT_COST per segment
    max_flows: int = 1024         # flows with snoop state per node; a new flow beyond it is refused (issue 13)
    flow_idle_s: float = 120.0    # a flow's state (and its cached segments) expires after this long unheard

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"snoop.policy: expected one of {POLICIES}, got {self.policy!r}")
        if self.dupack not in DUPACK_DISCIPLINES:
            raise ValueError(f"snoop.dupack: expected one of {DUPACK_DISCIPLINES}, got {self.dupack!r}")
        if self.fixed_hop < 0:
            raise ValueError(f"snoop.fixed_hop: expected a hop index >= 0, got {self.fixed_hop}")
        if self.cache_bytes < 0:
            raise ValueError(f"snoop.cache_bytes: expected >= 0, got {self.cache_bytes}")
        if self.max_flows < 1 or self.flow_idle_s <= 0:
            raise ValueError(f"snoop flow bounds: expected max_flows >= 1 and flow_idle_s > 0, "
                             f"got {self.max_flows}, {self.flow_idle_s}")


def adaptive_wants_cache(fields: AspanFields, p_next: float, hop_index: int,
                         sender_may_cache: bool = False) -> bool:
    """The A-SPAN rule (paper, Design: "Routing Nodes on Receiving Data Packets").

    effort = pkt_effort x p(next hop); cache when effort < pkt_qos, but never in
    the first ``snoop_after`` forwarding nodes, never more than ``snoop_limit``
    times per packet (0 = no limit), and never at the sender unless
    ``sender_may_cache`` (the perfect snoop of Figure 10).
    """
    if hop_index == 0 and not sender_may_cache:
        return False
    if hop_index > 0 and hop_index <= fields.snoop_after:
        return False
    if fields.snoop_limit and fields.snoop_count >= fields.snoop_limit:
        return False
    return fields.pkt_effort * p_next < fields.pkt_qos


def update_effort(fields: AspanFields, p_next: float, cached: bool) -> None:
    """Rewrite the header before transmitting to the next hop (paper, Design, steps 1-2).

    Not cached: pkt_effort *= p(next hop).  Cached: pkt_effort restarts at 1 and
    is multiplied by p(next hop), and one more node has cached the packet.  The new
    pkt_effort is written at the header's precision (aspan.fields.quantise), as every
    data plane carries it.

    snoop_count saturates at SNOOP_COUNT_MAX, the most its header byte holds (issue 27, item 5): the
    paper's caching rule is unchanged (Design, "Routing Nodes on Receiving Data Packets": cache when the
    effort falls below pkt_qos), and the count exists only for snoop_limit ("limit the number of times a
    packet can be snooped", Design, "Packet Header Fields for A-SNAP"), which is at most 255 too: a
    saturated count still stops every limited packet, and one without a limit (0) never reads it.  The
    kernel option's 4-bit count saturates the same way (routing.kernel.ip_option).
    """
    if cached:
        fields.pkt_effort = quantise(p_next)
        if fields.snoop_count < SNOOP_COUNT_MAX:
            fields.snoop_count += 1
    else:
        fields.pkt_effort = quantise(fields.pkt_effort * p_next)


def wants_cache(config: SnoopConfig, fields: AspanFields, p_next: float, hop_index: int) -> bool:
    """Does this node's policy want a copy of this data packet?"""
    policy = config.policy
    if policy == "none":
        return False
    if policy == "adaptive":
        return adaptive_wants_cache(fields, p_next, hop_index)
    if policy == "perfect":
        return adaptive_wants_cache(fields, p_next, hop_index, sender_may_cache=True)
    if policy == "fixed":
        return hop_index == config.fixed_hop
    return hop_index >= 1  # "every" forwarding node
