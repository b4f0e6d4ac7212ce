"""The snoop schemes a node can run, selected by ``snoop.scheme``: the one registry of their names.

| scheme     | class                  | paper |
|------------|------------------------|-------|
| ``aspan``    | :class:`aspan.agent.SnoopAgent` | 001: A-SPAN (the baseline system) |
| ``classic``  | :class:`aspan.snoop_classic.ClassicSnoopAgent` | Balakrishnan et al. 1995, as ns-2's snoop.cc |
| ``multihop`` | :class:`aspan.snoop_classic.MultihopSnoopAgent` | 000: classic Snoop on every node, SnoopTick |
| ``snack``    | :class:`aspan.snack.SnackSnoopAgent` | 002: SNACK-Snoop (with ``tcp.snack`` for SNACK-TCP) |
| ``slack``    | :class:`aspan.slack.SlackSnoopAgent` | 003: Slow-ACK on disconnections |
| ``ackall``   | :class:`aspan.ackall.AckAllSnoopAgent` | 004: Modified Snoop, ACK-all |

Every scheme but ``multihop`` caches where ``snoop.policy`` says.  The experiment schema takes
the scheme names, and which policies each scheme runs with, from :data:`SCHEMES`; adding a
scheme is its agent class in a module of its own and one line here (docs/DESIGN.md,
"Adding a snoop scheme").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from aspan.ackall import AckAllSnoopAgent
from aspan.agent import Emit, SnoopAgent
from aspan.policy import POLICIES, SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.slack import SlackSnoopAgent
from aspan.snack import SnackSnoopAgent
from aspan.snoop_classic import ClassicSnoopAgent, MultihopSnoopAgent

__all__ = ["Scheme", "SCHEMES", "AgentFactory", "CACHING_POLICIES", "make_agent"]

AgentFactory = Callable[[str, SnoopConfig, "Emit | None", SchemeConfig], SnoopAgent]
"""(node, node-side snoop settings, event sink, scheme settings) -> the node's agent."""

CACHING_POLICIES = tuple(p for p in POLICIES if p != "none")


@dataclass(frozen=True)
class Scheme:
    """One snoop scheme: how to make its agent, and the ``snoop.policy`` values it runs with."""

    make: AgentFactory
    paper: str                                  # where its rules come from (docs/VARIANTS.md)
    policies: tuple[str, ...] = POLICIES        # the snoop.policy values the schema accepts with it
    policy_note: str = ""                       # why the others are refused (in the schema's error)


def _aspan(node: str, config: SnoopConfig, emit: Emit | None, scheme: SchemeConfig) -> SnoopAgent:
    return SnoopAgent(node, config, emit)       # A-SPAN has no scheme settings


_CACHES_NOWHERE = "caches nowhere with policy none"

SCHEMES: dict[str, Scheme] = {
    "aspan": Scheme(_aspan, "001: A-SPAN (the baseline system)"),
    "classic": Scheme(ClassicSnoopAgent, "classic Snoop (ns-2 snoop.cc)", CACHING_POLICIES, _CACHES_NOWHERE),
    "multihop": Scheme(MultihopSnoopAgent, "000: Multihop Snoop", ("every", "none"),
                       "caches on every forwarding node (paper 000)"),
    "snack": Scheme(SnackSnoopAgent, "002: SNACK-Snoop", CACHING_POLICIES, _CACHES_NOWHERE),
    "slack": Scheme(SlackSnoopAgent, "003: SLACK", CACHING_POLICIES, _CACHES_NOWHERE),
    "ackall": Scheme(AckAllSnoopAgent, "004: ACK-all", CACHING_POLICIES, _CACHES_NOWHERE),
}


def make_agent(node: str, config: SnoopConfig, emit: Emit | None = None,
               scheme: SchemeConfig | None = None) -> SnoopAgent:
    """The snoop agent of ``node`` for ``scheme.scheme`` (default: A-SPAN)."""
    scheme = scheme or SchemeConfig()
    entry = SCHEMES.get(scheme.scheme)
    if entry is None:
        raise ValueError(f"snoop.scheme: expected one of {', '.join(SCHEMES)}, got {scheme.scheme!r}")
    return entry.make(node, config, emit, scheme)
