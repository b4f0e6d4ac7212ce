"""Paper 000's Table 1 with RTS/CTS (experiments/medium-rts.yaml; docs/REPRODUCTION.md, "Paper 000, Table 1,
with RTS/CTS"): the ``ns2phy`` variants stand for ns-2's radio (WirelessPhy with TwoRayGround: decode above
RXThresh, 250 m; sense above CSThresh, 550 m; capture when the frame held is CPThresh = 10 dB stronger,
mac-802_11.cc ``Mac802_11::recv``).  On the 200 m chain that radio and our ``reception: range`` agree on who
decodes and who senses whom; they differ in what an overlap does: a sender 200 m from its receiver is
12 dB above an interferer 400 m away (d^-4 beyond the two-ray crossover), which ns-2 survives and a range
circle does not.  In virtual time, from the experiment file itself."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from experiments.medium_spec import build_medium, signals
from experiments.schema import load_file
from routing.medium import Frame, Medium
from tests.test_medium import ScriptedRng, run

RTS_YAML = Path(__file__).resolve().parent.parent / "experiments" / "medium-rts.yaml"


def variant(name: str) -> dict[str, Any]:
    exp = load_file(RTS_YAML)
    return next(v.config for v in exp.variants if v.name == name)


@pytest.mark.parametrize("rts", ["", "-rts"])
def test_the_ns2phy_variants_decode_and_sense_exactly_as_ns2s_250_and_550_m(rts: str) -> None:
    ns2 = build_medium(variant(f"reno{rts}-ns2phy"), 1).topo
    circle = build_medium(variant(f"reno{rts}"), 1).topo
    assert ns2 == circle
    assert ns2.hears["C"] == {"B", "D"} and ns2.senses["C"] == {"A", "B", "D", "E"}
    assert ns2.senses["A"] == {"B", "C"}   # 600 m: not sensed (ns-2: under CSThresh)


def test_the_ns2phy_signals_fall_as_d_to_the_4_two_ray_ground() -> None:
    s = signals(variant("reno-ns2phy"))
    assert s["C"]["B"] - s["C"]["A"] == pytest.approx(40 * math.log10(2))   # 200 m -> 400 m: 12.04 dB
    assert s["A"]["B"] > -82 > s["A"]["C"] >= -95.7 > s["A"]["D"]


def hidden_senders(name: str) -> Medium:
    """B -> C and E -> D start in the same slot, and (every backoff 0) again at each retry: B and E (600 m)
    do not sense each other; each receiver has its sender 200 m away and the other sender 400 m away."""
    m = build_medium(variant(name), 1)
    m.rng = ScriptedRng(0, 0)   # type: ignore[assignment]
    m.send(0, Frame("B", "C", "b", 1040))
    m.send(0, Frame("E", "D", "e", 1040))
    return m


def test_a_frame_from_200_m_survives_an_interferer_400_m_away_on_ns2s_radio_not_in_a_range_circle() -> None:
    circle = hidden_senders("reno")
    assert sorted(o[1:] for o in run(circle)) == [("mac_retry", "B", "C"), ("mac_retry", "E", "D")]   # every attempt collides
    assert all(circle.stations[n].stats.collisions == 7 for n in "BE")
    ns2 = hidden_senders("reno-ns2phy")
    assert sorted(o[1:] for o in run(ns2)) == [("deliver", "B", "C"), ("deliver", "E", "D")]   # both delivered, at the first attempt
    assert all(ns2.stations[n].stats.attempts == 1 and ns2.stations[n].stats.collisions == 0 for n in "BE")
