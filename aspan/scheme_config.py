"""Settings of the snoop schemes of the other papers (classic Snoop and its descendants).

The defaults are those of ns-2's ``snoop.cc`` / ``ns-default.tcl`` (the Snoop every
paper here compares against): SnoopTick 0.1 s, initial srtt 0.1 s and rttvar 0.25 s,
gain g = 0.125, at most 10 local retransmissions of one segment (SNOOP_MAX_RXMIT), at
most 100 cached segments per flow (SNOOP_MAXWIND).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class SchemeConfig:
    """Node-side settings of the classic-Snoop family (ignored by the A-SPAN agent).

    ``scheme`` names an entry of :data:`aspan.schemes.SCHEMES` (checked there, by ``make_agent``).
    """

    scheme: str = "aspan"
    snoop_tick: float = 0.1          # ns-2 SnoopTick: minimum local RTO (paper 000 uses 1 s)
    max_local_rxmit: int = 10        # ns-2 SNOOP_MAX_RXMIT: local retransmissions of one segment
    max_cached_segments: int = 100   # ns-2 SNOOP_MAXWIND: per-flow cache bound
    rtt_gain: float = 0.125          # ns-2 g_: srtt = g*srtt + (1-g)*rtt (sic, see snoop_classic)
    initial_srtt: float = 0.1        # ns-2 srtt_ default
    initial_rttvar: float = 0.25     # ns-2 rttvar_ default
    rtx_thresh: int = 1              # ns-2 RTX_THRESH: unexpected dupacks let through before acting
    snack_threshold: int = 2         # paper 002 Sec. III-B: reports of a loss before it is resent

    def __post_init__(self) -> None:
        if not self.snoop_tick >= 0:
            raise ValueError(f"snoop.snoop_tick_s: expected >= 0, got {self.snoop_tick}")
        for name in ("max_local_rxmit", "max_cached_segments", "snack_threshold"):
            if getattr(self, name) < 1:
                raise ValueError(f"snoop.{name}: expected >= 1, got {getattr(self, name)}")
        if not 0 <= self.rtt_gain <= 1:
            raise ValueError(f"rtt_gain: expected a value in [0, 1], got {self.rtt_gain}")
        if self.rtx_thresh < 0:
            raise ValueError(f"rtx_thresh: expected >= 0, got {self.rtx_thresh}")
