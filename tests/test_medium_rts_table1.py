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
from experiments.schema import ExperimentError, load_experiment, load_file
from routing.medium.dcf import Frame, Medium
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


# ---- medium.capture_db: ns-2's capture rule on reception range (routing.medium.dcf.RangeCapture) --------------
def capture_medium(positions: dict[str, list[float]], links: list[list[str]], sends: list[tuple[str, str, int]],
                   **medium: Any) -> Medium:
    """A range medium (250 / 550 m, 1 Mbit/s) over ``links`` at ``positions``, with ``capture_db`` 10 unless
    given; each (sender, receiver, backoff slots) queues one 1,040-byte frame at time 0, the backoffs scripted
    (0 once the script runs out)."""
    doc = {"topology": {"nodes": list(positions), "links": links},
           "flows": [{"sender": links[0][0], "receiver": links[0][1], "segments": 1}],
           "medium": dict(dict(model="dcf", rate_mbps=1, basic_rate_mbps=1, positions=positions, capture_db=10),
                          **medium)}
    m = build_medium(load_experiment(doc, "c.yaml").variants[0].config, 1)
    m.rng = ScriptedRng(*(slots for _, _, slots in sends))   # type: ignore[assignment]
    for src, dst, _ in sends:
        m.send(0, Frame(src, dst, f"{src}>{dst}", 1040))
    return m


LINE = {n: [200.0 * i, 0.0] for i, n in enumerate("ABCDE")}
LINE_LINKS = [["A", "B"], ["B", "C"], ["C", "D"], ["D", "E"]]


def first_attempt_lost(m: Medium) -> dict[str, bool]:
    run(m)
    return {n: st.stats.collisions > 0 for n, st in m.stations.items() if st.stats.attempts}


def test_capture_keeps_the_frame_held_against_a_later_one_10_db_weaker() -> None:
    # B -> C starts; E (400 m from C, 12 dB weaker under d^-4) starts 3 slots later: C keeps B's frame.
    # D, 200 m from E and 400 m from B, was receiving B's frame's energy first: ns-2 loses E's frame there
    assert first_attempt_lost(capture_medium(LINE, LINE_LINKS, [("B", "C", 0), ("E", "D", 3)])) == \
        {"B": False, "E": True}
    # without capture_db both are lost (today's range reception)
    assert first_attempt_lost(capture_medium(LINE, LINE_LINKS, [("B", "C", 0), ("E", "D", 3)], capture_db=None)) \
        == {"B": True, "E": True}


def test_capture_never_keeps_frames_that_start_in_the_same_slot() -> None:
    assert first_attempt_lost(capture_medium(LINE, LINE_LINKS, [("B", "C", 0), ("E", "D", 0)])) == \
        {"B": True, "E": True}


def test_capture_needs_the_ratio_an_interferer_300_m_away_is_only_7_db_weaker() -> None:
    # B -> C and X -> Y; X is 300 m from C (B and X, 500 m apart, do not sense each other at a carrier-sense
    # range of 450 m); M only links them
    pos = {"B": [0.0, 0.0], "C": [200.0, 0.0], "M": [350.0, 0.0], "X": [500.0, 0.0], "Y": [700.0, 0.0]}
    links = [["B", "C"], ["C", "M"], ["M", "X"], ["X", "Y"]]
    sends = [("B", "C", 0), ("X", "Y", 3)]
    lost = first_attempt_lost(capture_medium(pos, links, sends, cs_range_m=450))
    assert lost["B"] is True   # 40 log10(1.5) = 7.0 dB < 10
    assert first_attempt_lost(capture_medium(pos, links, sends, cs_range_m=450, capture_db=7.0))["B"] is False


def test_capture_on_a_diamond_with_crossing_flows() -> None:
    # A -> B and D -> C cross the diamond A-B-D, A-C-D; B stands near A and C near D (128 m), the far
    # sender 307 m away (15.2 dB weaker), A and D (400 m) hidden from each other.  D starts 2 slots into
    # A's frame: B keeps A's; C was already sensing A's frame when D's began, so D's is lost (ns-2's order).
    pos = {"A": [0.0, 0.0], "B": [100.0, 80.0], "C": [300.0, -80.0], "D": [400.0, 0.0]}
    links = [["A", "B"], ["A", "C"], ["B", "D"], ["C", "D"]]
    sends = [("A", "B", 0), ("D", "C", 2)]
    ranges = {"range_m": 320, "cs_range_m": 350}
    assert first_attempt_lost(capture_medium(pos, links, sends, capture_db=None, **ranges)) == {"A": True, "D": True}
    assert first_attempt_lost(capture_medium(pos, links, sends, **ranges)) == {"A": False, "D": True}


def capture_errors(medium: dict[str, Any], topology: dict[str, Any] | None = None) -> dict[str, str]:
    doc = {"topology": topology or {"chain": ["A", "B", "C"]},
           "flows": [{"sender": "A", "receiver": "C", "segments": 1}],
           "medium": {"model": "dcf", **medium}}
    with pytest.raises(ExperimentError) as e:
        load_experiment(doc, "c.yaml")
    return {err.path: err.message for err in e.value.errors}


@pytest.mark.parametrize("medium,topology,words", [
    ({"capture_db": 10, "reception": "sinr"}, None, "reception sinr captures by SINR"),
    ({"capture_db": 10, "hears": {"A": ["B"], "B": ["A", "C"], "C": ["B"]}}, None, "compares distances"),
    ({"capture_db": 10}, {"nodes": ["A", "B", "C"], "links": [["A", "B"], ["B", "C"]]}, "compares distances"),
    ({"capture_db": 0}, None, "more than 0"),
    ({"capture_db": 10, "capture_exponent": 0.5}, None, "expected 1 to 8"),
])
def test_impossible_capture_settings_are_refused_naming_the_field(medium: dict[str, Any], topology: Any,
                                                                  words: str) -> None:
    found = capture_errors(medium, topology)
    assert any(words in msg for path, msg in found.items() if path.startswith("medium.capture")), found


def test_a_capture_exponent_without_capture_db_is_refused() -> None:
    assert "only with medium.capture_db" in capture_errors({"capture_exponent": 4})["medium.capture_exponent"]


def test_capture_settings_without_a_medium_are_refused() -> None:
    assert "medium.model is 'none'" in capture_errors({"model": "none", "capture_db": 10})["medium.capture_db"]


def test_with_the_nav_a_third_station_decodes_the_frame_held_under_the_same_rule() -> None:
    # T decodes B (180 m) and senses E (522 m, 18.5 dB weaker), which B cannot sense (600 m); E starts 3 slots
    # into B's frame.  With capture T decodes B's frame and sets its NAV from the Duration field (SIFS + ACK);
    # without, T cannot decode it and waits EIFS instead (nav duration: 10.3.2.4, 10.3.2.3.7).
    pos = {"B": [0.0, 0.0], "C": [200.0, 0.0], "T": [100.0, 150.0], "M": [400.0, 0.0], "E": [600.0, 0.0],
           "Y": [800.0, 0.0]}
    links = [["B", "C"], ["B", "T"], ["T", "C"], ["C", "M"], ["M", "E"], ["E", "Y"]]
    for capture_db, nav_set in ((10, True), (None, False)):
        m = capture_medium(pos, links, [("B", "C", 0), ("E", "Y", 3)], nav="duration", capture_db=capture_db)
        data_end = m.phy.difs_ns + m.phy.data_ns(1040)
        m.advance(data_end)
        t = m.stations["T"]
        assert (t.nav_until == data_end + m.phy.sifs_ns + m.phy.ack_ns(), t.eifs) == (nav_set, not nav_set)
