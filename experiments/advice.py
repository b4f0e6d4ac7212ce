"""Warnings about settings that run, but give numbers a peer would not get (``aspan validate`` and ``aspan run``
print them; nothing is refused).

* ``medium.airtime: simple`` (the default for 802.11b/g at one rate) is preamble + bits / rate: without the
  OFDM symbol padding and the signal extension it gives a frame less airtime than the standard's TXTIME
  (about 8 % less for a 1000-byte frame at 54 Mbit/s), so a link carries more than the standard allows.
  Warned where the difference for the flows' segments is over :data:`AIRTIME_TOLERANCE`.
* ``medium.reception: range`` (the default) loses a frame to any transmission that overlaps it from within
  carrier-sense range, even one whose signal is far weaker than the frame's: on a multi-hop mesh with nodes
  that sense senders they cannot decode, every such overlap is a loss that reception by signal and
  interference (``reception: sinr``, as ns-3 models it) would often survive.  Warned where a flow crosses
  two hops or more and some node senses a sender it does not hear.
"""
from __future__ import annotations

from experiments.build import route_record, route_tables
from experiments.config import ExperimentConfig
from experiments.medium_spec import airtime, phy, topology
from experiments.schema import Experiment

AIRTIME_TOLERANCE = 0.01


def airtime_advice(c: ExperimentConfig) -> str | None:
    if c.medium.model == "none" or airtime(c.medium.to_dict()) != "simple":
        return None
    size = max(f.segment_size for f in c.flows) + 40     # IPv4 and TCP headers around the segment
    simple = phy(c).exchange_ns(size)
    standard = phy({**c.to_dict(), "medium": {**c.medium.to_dict(), "airtime": "txtime"}}).exchange_ns(size)
    gap = (standard - simple) / standard
    if abs(gap) <= AIRTIME_TOLERANCE:
        return None
    return (f"airtime simple gives a {size}-byte frame's exchange {abs(gap) * 100:.1f} % "
            f"{'less' if gap > 0 else 'more'} airtime than the standard's TXTIME ({simple / 1000:.1f} us against "
            f"{standard / 1000:.1f} us), so the links carry {'more' if gap > 0 else 'less'} than 802.11 allows; "
            "set medium.airtime: txtime for the standard's durations")


def reception_advice(c: ExperimentConfig) -> str | None:
    if c.medium.model == "none" or c.medium.reception != "range":
        return None
    topo = topology(c)
    hidden = sorted((n, s) for n in topo.senses for s in topo.senses[n] - topo.hears[n])
    if not hidden:
        return None
    if not any(len(path or []) >= 3 for path in route_record(c, route_tables(c))["paths"]):
        return None
    n, s = hidden[0]
    return (f"reception range loses every frame that a transmission from within carrier-sense range overlaps "
            f"(here {n} senses {s} but cannot decode it, and a flow crosses two hops or more): frames whose "
            "signal would survive the interference are lost too; medium.reception: sinr judges each frame by "
            "its signal, noise and interference, as ns-3 does")


def advice(exp: Experiment) -> list[str]:
    """One line per warning, naming the file and the variants it concerns (the same warning once)."""
    found: dict[tuple[str, str], list[str]] = {}
    for v in exp.variants:
        for field, text in (("medium.airtime", airtime_advice(v.config)),
                            ("medium.reception", reception_advice(v.config))):
            if text is not None:
                found.setdefault((field, text), []).append(v.name)
    out = []
    for (field, text), names in found.items():
        if len(exp.variants) == 1:
            out.append(f"{exp.source}: {field}: {text}")
        elif len(names) == 1:
            out.append(f"{exp.source}: variants[{names[0]}].{field}: {text}")
        else:
            out.append(f"{exp.source}: {field}: {text} (variants {', '.join(names)})")
    return out


__all__ = ["advice", "airtime_advice", "reception_advice", "AIRTIME_TOLERANCE"]
