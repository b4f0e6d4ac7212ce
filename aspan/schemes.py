"""The snoop schemes a node can run, selected by ``snoop.scheme`` (one class each).

| scheme     | class                  | paper |
|------------|------------------------|-------|
| ``aspan``    | :class:`aspan.agent.SnoopAgent` | 001: A-SPAN (the baseline system) |
| ``classic``  | :class:`aspan.snoop_classic.ClassicSnoopAgent` | Balakrishnan et al. 1995, as ns-2's snoop.cc |
| ``multihop`` | :class:`aspan.snoop_classic.MultihopSnoopAgent` | 000: classic Snoop on every node, SnoopTick |
| ``snack``    | :class:`aspan.snack.SnackSnoopAgent` | 002: SNACK-Snoop (with ``tcp.snack`` for SNACK-TCP) |
| ``slack``    | :class:`aspan.slack.SlackSnoopAgent` | 003: Slow-ACK on disconnections |
| ``ackall``   | :class:`aspan.ackall.AckAllSnoopAgent` | 004: Modified Snoop, ACK-all |

Every scheme but ``multihop`` caches where ``snoop.policy`` says.
"""
from __future__ import annotations

from aspan.ackall import AckAllSnoopAgent
from aspan.agent import Emit, SnoopAgent
from aspan.policy import SnoopConfig
from aspan.scheme_config import SCHEMES, SchemeConfig
from aspan.slack import SlackSnoopAgent
from aspan.snack import SnackSnoopAgent
from aspan.snoop_classic import ClassicSnoopAgent, MultihopSnoopAgent

__all__ = ["SCHEMES", "SCHEME_CLASSES", "make_agent"]

SCHEME_CLASSES: dict[str, type[SnoopAgent]] = {
    "aspan": SnoopAgent,
    "classic": ClassicSnoopAgent,
    "multihop": MultihopSnoopAgent,
    "snack": SnackSnoopAgent,
    "slack": SlackSnoopAgent,
    "ackall": AckAllSnoopAgent,
}
assert tuple(SCHEME_CLASSES) == SCHEMES


def make_agent(node: str, config: SnoopConfig, emit: Emit | None = None,
               scheme: SchemeConfig | None = None) -> SnoopAgent:
    """The snoop agent of ``node`` for ``scheme.scheme`` (default: A-SPAN)."""
    scheme = scheme or SchemeConfig()
    cls = SCHEME_CLASSES[scheme.scheme]
    if cls is SnoopAgent:
        return SnoopAgent(node, config, emit)
    return cls(node, config, emit, scheme)  # type: ignore[call-arg]
