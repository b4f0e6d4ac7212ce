"""Reception by signal and interference (``medium.reception: sinr``, issue 24 item 2) in virtual time: the
grey zone, capture, carrier sense by energy, measured links, determinism, the schema, and a sim run.
"""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any
import pytest
from experiments.medium_spec import build_medium, phy
from experiments.schema import ExperimentError, load_experiment
from routing.medium.error_model import MODES
from routing.medium.dcf import Delivered, Dropped, Frame, Medium, Topology
from routing.medium.reception import frame_success, phy_sections
from tests.experiments.test_medium_spec import refused_lines


MODERN = {"rx_sensitivity_dbm": -101.0}   # a radio that detects frames far below the standard's -82 dBm minimum (ns-3's RxSensitivity)


def config(chain: list[str], positions: dict[str, list[float]], links: list[list[str]] | None = None,
           **medium: Any) -> dict[str, Any]:
    """The resolved configuration of a dcf medium with reception sinr on ``chain`` (or the graph of ``links``
    over the nodes of ``chain``) at ``positions``."""
    topo = {"chain": chain} if links is None else {"nodes": chain, "links": links}
    doc = {"topology": topo, "flows": [{"sender": chain[0], "receiver": chain[-1], "segments": 1}],
           "medium": dict(model="dcf", reception="sinr", positions=positions, queue_packets=5000, **medium)}
    return load_experiment(doc, "m.yaml").variants[0].config


class ScriptedRng:
    """randint(0, cw) answers from a script (0 when it runs out)."""

    def __init__(self, *draws: int) -> None:
        self.draws = list(draws)

    def randint(self, lo: int, hi: int) -> int:
        return self.draws.pop(0) if self.draws else 0


def run(m: Medium) -> list[Delivered | Dropped]:
    out: list[Delivered | Dropped] = []
    while (t := m.next_timer()) is not None:
        out.extend(m.advance(t))
    return out


# ---- the error model over a frame ------------------------------------------------------------------
def test_a_frame_is_cut_into_chunks_where_interference_starts_and_ends() -> None:
    mode = MODES["cck-11"]
    pre, end = 192_000, 192_000 + 400_000
    s, n, i = 1.0, 0.1, 0.05
    alone = frame_success(mode, 0, end, pre, s, n, [])
    # header: 192 bits of DBPSK at SINR 10; payload: 400 us x 11 Mbit/s of CCK-11 at SINR 10
    from routing.medium.error_model import chunk_success_rate as csr
    assert alone == pytest.approx(csr("dsss-1", 10.0, 192) * csr("cck-11", 10.0, 4400), rel=1e-12)
    # an interferer over the second half of the payload: that chunk at SINR 1 / 0.15
    half = frame_success(mode, 0, end, pre, s, n, [(pre + 200_000, end + 50_000, i)])
    assert half == pytest.approx(csr("dsss-1", 10.0, 192) * csr("cck-11", 10.0, 2200) * csr("cck-11", s / (n + i), 2200),
                                 rel=1e-12)
    # two interferers overlapping each other sum in mW over their common chunk
    two = frame_success(mode, 0, end, pre, s, n, [(pre, pre + 100_000, i), (pre + 50_000, pre + 100_000, i)])
    assert two == pytest.approx(csr("dsss-1", 10.0, 192) * csr("cck-11", 10.0, 3300) * csr("cck-11", s / (n + i), 550)
                                * csr("cck-11", s / (n + 2 * i), 550), rel=1e-12)
    # OFDM: the SIGNAL field is the last 4 us of the preamble, at 6 Mbit/s
    assert phy_sections(MODES["ofdm-54"], 0, 100_000, 20_000) == [(16_000, 20_000, MODES["ofdm-6"]),
                                                                   (20_000, 100_000, MODES["ofdm-54"])]


# ---- the grey zone -----------------------------------------------------------------------------------
def delivery(distance: float, rate: float, frames: int = 300, seed: int = 1) -> float:
    """Per attempt: the share of A's data frames B received, A and B ``distance`` m apart."""
    m = build_medium(config(["A", "B"], {"A": [0, 0], "B": [distance, 0]}, rate_mbps=rate, **MODERN), seed)
    for k in range(frames):
        m.send(0, Frame("A", "B", k, 1000))
    run(m)
    st = m.stations["A"].stats
    assert st.collisions == st.faded   # nobody else on the air: every loss is the channel's
    return 1 - st.collisions / st.attempts


def test_delivery_falls_with_distance_and_faster_at_a_higher_rate() -> None:
    distances = [60, 90, 100, 105, 115, 180, 200, 215]
    fast = [delivery(d, 11) for d in distances]
    slow = [delivery(d, 2) for d in distances]
    for curve in (fast, slow):
        assert all(a >= b - 0.05 for a, b in zip(curve, curve[1:])), curve    # falls with distance (draws aside)
        assert curve[0] > 0.98 and curve[-1] < 0.5
        assert any(0.1 < x < 0.9 for x in curve), curve                       # a grey zone, not a cliff
    # 11 Mbit/s is lost where 2 Mbit/s still gets through
    assert fast[distances.index(115)] < 0.1 and slow[distances.index(115)] > 0.98
    d50 = [min(d for d, x in zip(distances, c) if x < 0.5) for c in (fast, slow)]
    assert d50[0] < d50[1]


# ---- capture ------------------------------------------------------------------------------------------
def hidden_pair(strong_m: float, weak_m: float, strong_slots: int = 0, weak_slots: int = 0, **medium: Any) -> Medium:
    """S and W send to R at once (R at 0, S at -strong_m, W at +weak_m); S and W do not sense each other."""
    cfg = config(["S", "R", "W"], {"S": [-strong_m, 0], "R": [0, 0], "W": [weak_m, 0]}, **medium)
    m = build_medium(cfg, 1)
    assert "W" not in m.topo.senses["S"] and "S" not in m.topo.senses["W"]
    m.rng = ScriptedRng(strong_slots, weak_slots)   # type: ignore[assignment]
    m.send(0, Frame("S", "R", "strong", 1000))
    m.send(0, Frame("W", "R", "weak", 1000))
    return m


def first_attempts(m: Medium) -> dict[str, bool]:
    """Whether each sender's first attempt reached R (the medium's outputs, then its counters)."""
    run(m)
    return {n: m.stations[n].stats.collisions == 0 for n in ("S", "W")}


def test_the_stronger_of_two_overlapping_frames_is_captured_the_weaker_is_lost() -> None:
    # R decodes W at 80 m (-81.2 dBm, just above the -82 dBm sensitivity); S and W, 100 m apart, are hidden
    assert first_attempts(hidden_pair(20, 80)) == {"S": True, "W": False}
    # the strong frame starting 3 slots into the weak one is captured too
    assert first_attempts(hidden_pair(20, 80, strong_slots=3)) == {"S": True, "W": False}


def test_the_stronger_frame_is_lost_when_its_sinr_does_not_suffice() -> None:
    # S at 70 m is stronger than W at 80 m (by 1.7 dB), too little for 11 Mbit/s CCK: both lost
    assert first_attempts(hidden_pair(70, 80)) == {"S": False, "W": False}
    # where sinr captures S, the range model (on the same who-senses-whom) loses both to the overlap
    m = hidden_pair(20, 80)
    m.radio = None
    assert first_attempts(m) == {"S": False, "W": False}


def test_the_receiver_is_held_by_the_stronger_frame_even_where_both_sinrs_would_do() -> None:
    # at 1 Mbit/s DBPSK (Eb/N0 = 22 x SINR) a frame survives a SINR of 0 dB: S at 60 m and W at 62 m would
    # both get through by their SINRs alone, but R locks on the stronger (by 0.43 dB) and loses the other
    one = {"rate_mbps": 1, "basic_rate_mbps": 1}
    assert first_attempts(hidden_pair(60, 62, **one)) == {"S": True, "W": False}
    assert first_attempts(hidden_pair(60, 62, strong_slots=3, **one)) == {"S": True, "W": False}
    # equal signals capture neither
    assert first_attempts(hidden_pair(60, 60, **one)) == {"S": False, "W": False}


# ---- carrier sense by energy --------------------------------------------------------------------------
def collided_share(cs_threshold_dbm: float, seed: int = 3) -> tuple[float, Medium]:
    """A and C, 100 m apart, saturate B between them; the share of their attempts lost at B."""
    cfg = config(["A", "B", "C"], {"A": [0, 0], "B": [50, 0], "C": [100, 0]}, cs_threshold_dbm=cs_threshold_dbm)
    m = build_medium(cfg, seed)
    for k in range(200):
        m.send(0, Frame("A", "B", k, 1000))
        m.send(0, Frame("C", "B", k, 1000))
    run(m)
    a, c = m.stations["A"].stats, m.stations["C"].stats
    return (a.collisions + c.collisions) / (a.attempts + c.attempts), m


def test_carrier_sense_by_energy_threshold() -> None:
    # A's signal at C: 16.02 - 40.1 - 30 log10(100) = -84.1 dBm: under the -82 dBm sensitivity, so C
    # cannot decode A; with an energy threshold of -90 dBm it senses A all the same, with -82 it does not
    energy, sensing = collided_share(-90.0)
    hidden, deaf = collided_share(-82.0)
    for m in (sensing, deaf):
        assert "C" not in m.topo.hears["A"] and {"A", "C"} <= m.topo.hears["B"] <= m.topo.senses["B"]
    assert "C" in sensing.topo.senses["A"] and "C" not in deaf.topo.senses["A"]
    assert energy < 0.1 and hidden > 0.3 and hidden > 5 * energy
    # a threshold above the sensitivity adds nothing: every decoded frame already holds the station busy
    assert collided_share(-62.0)[1].topo.senses == deaf.topo.senses


# ---- measured links override the path loss ----------------------------------------------------------
def test_a_measured_signal_replaces_the_path_loss_of_its_direction_only() -> None:
    far = {"A": [0, 0], "B": [300, 0]}
    cfg = config(["A", "B"], far, rate_mbps=11, signal_dbm={"B": {"A": -60.0}, "A": {"B": -60.0}}, **MODERN)
    m = build_medium(cfg, 1)
    assert m.radio is not None and m.radio.rx_mw["B"]["A"] == pytest.approx(1e-6)
    for k in range(100):
        m.send(0, Frame("A", "B", k, 1000))
    out = run(m)
    assert sum(isinstance(o, Delivered) for o in out) == 100 and m.stations["A"].stats.collisions == 0
    # without the measure, 300 m is far beyond 11 Mbit/s CCK (-98.4 dBm); a weak measured one kills a near link
    assert delivery(300, 11, frames=20) == 0.0
    near = config(["A", "B"], {"A": [0, 0], "B": [10, 0]}, signal_dbm={"B": {"A": -95.0}, "A": {"B": -95.0}}, **MODERN)
    m = build_medium(near, 1)
    m.send(0, Frame("A", "B", 0, 1000))
    assert [type(o) for o in run(m)] == [Dropped]
    # one direction only: B's frames still reach A at 10 m by the path loss
    one_way = config(["A", "B"], {"A": [0, 0], "B": [10, 0]}, signal_dbm={"B": {"A": -95.0}}, **MODERN)
    sig = build_medium(one_way, 1).radio
    assert sig is not None and sig.rx_mw["A"]["B"] > 1e-6 > 1e-9 > sig.rx_mw["B"]["A"]   # -54.1 dBm, -95 dBm


def test_a_frame_under_the_sensitivity_is_never_decoded_whatever_its_sinr() -> None:
    # B's signal at A: -90 dBm, under the -82 dBm sensitivity, yet 4 dB over the noise, where B's ACKs at
    # 2 Mbit/s would get through by their SINR alone: A never detects them and tries its frame 7 times
    cfg = config(["A", "B"], {"A": [0, 0], "B": [10, 0]})
    radio = build_medium(cfg, 1).radio
    assert radio is not None
    radio.rx_mw["A"]["B"] = 10 ** (-90.0 / 10)
    m = Medium(phy(cfg), Topology({"A": frozenset(), "B": frozenset({"A"})}, {"A": frozenset(), "B": frozenset({"A"})}),
               10, random.Random(1), radio)
    m.send(0, Frame("A", "B", "x", 1000))
    assert [type(o) for o in run(m)] == [Delivered]          # delivered once (duplicates detected), never dropped
    st = m.stations["A"].stats
    assert (st.attempts, st.ack_lost, st.collisions) == (7, 7, 0)


class Draws:
    """random() answers from a script."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


def test_the_addressee_of_a_frame_it_received_waits_difs_not_eifs() -> None:
    # nav duration: who decodes a frame goes back to DIFS after it, who senses it undecoded waits EIFS
    # (10.3.2.3.7).  11 Mbit/s at 100 m: a data frame arrives with probability 0.78; the one draw says it did,
    # so its addressee decoded it (a second draw for it would say otherwise)
    m = build_medium(config(["A", "B"], {"A": [0, 0], "B": [100, 0]}, nav="duration", **MODERN), 1)
    assert m.radio is not None
    m.radio.rng = Draws(0.5, 0.99, 0.99)   # type: ignore[assignment]
    m.send(0, Frame("A", "B", "x", 1000))
    assert [type(o) for o in run(m)] == [Delivered]
    assert m.stations["B"].eifs is False and m.stations["A"].eifs is False
    assert m.radio.rng.values == [0.99, 0.99]   # the ACK (2 Mbit/s at 9.9 dB) is certain: no draw


# ---- determinism -------------------------------------------------------------------------------------
def busy_mesh(seed: int, shadowing_seed: int = 1) -> list[tuple[int, str, str, Any]]:
    pos = {"A": [0, 0], "B": [90, 0], "C": [180, 0], "D": [90, 80]}
    cfg = config(["A", "B", "C", "D"], pos, [["A", "B"], ["B", "C"], ["A", "D"]], shadowing_sigma_db=4.0,
                 shadowing_seed=shadowing_seed, **MODERN)
    m = build_medium(cfg, seed)
    for k in range(60):
        m.send(k * 100_000, Frame("A", "B", k, 1000))
        m.send(k * 100_000, Frame("C", "B", k, 1000))
        m.send(k * 100_000, Frame("D", "A", k, 500))
    return [(o.at_ns, o.frame.src, o.frame.dst, o.frame.payload if isinstance(o, Delivered) else o.reason)
            for o in run(m)]


def test_the_same_seed_gives_the_same_run_and_another_seed_another() -> None:
    assert busy_mesh(5) == busy_mesh(5)
    assert busy_mesh(5) != busy_mesh(6)
    # the shadowing comes from its own seed: the links differ, whatever the run's seed
    assert busy_mesh(5, shadowing_seed=2) != busy_mesh(5)


def test_the_reception_draws_come_from_the_runs_seed() -> None:
    # a lone link in the grey zone: no contention, so only the reception draws decide which attempts fail
    def attempts(seed: int) -> list[int]:
        m = build_medium(config(["A", "B"], {"A": [0, 0], "B": [100, 0]}, rate_mbps=11, **MODERN), seed)
        frames = [Frame("A", "B", k, 1000) for k in range(50)]
        for f in frames:
            m.send(0, f)
        run(m)
        return [f.attempts for f in frames]
    assert attempts(1) == attempts(1) and attempts(1) != attempts(2)


def test_shadowing_is_the_same_both_ways_and_drawn_from_its_seed() -> None:
    pos = {"A": [0, 0], "B": [90, 0], "C": [180, 0]}
    sig = build_medium(config(["A", "B", "C"], pos, shadowing_sigma_db=6.0, **MODERN), 1).radio
    plain = build_medium(config(["A", "B", "C"], pos, **MODERN), 1).radio
    assert sig is not None and plain is not None
    for a, b in (("A", "B"), ("B", "C"), ("A", "C")):
        assert sig.rx_mw[a][b] == pytest.approx(sig.rx_mw[b][a])
        assert sig.rx_mw[a][b] != pytest.approx(plain.rx_mw[a][b])
    assert build_medium(config(["A", "B", "C"], pos, shadowing_sigma_db=6.0, **MODERN), 2).radio.rx_mw == sig.rx_mw  # type: ignore[union-attr]


# ---- RTS/CTS under sinr -----------------------------------------------------------------------------
def test_rts_cts_protects_hidden_senders_under_sinr_too() -> None:
    # A and C, 140 m apart, cannot sense each other (-88.4 dBm); B between them senses both (-79.4 dBm)
    def collisions(rts: int | None) -> int:
        cfg = config(["A", "B", "C"], {"A": [0, 0], "B": [70, 0], "C": [140, 0]}, rts_threshold=rts)
        m = build_medium(cfg, 3)
        assert "C" not in m.topo.senses["A"] and {"A", "C"} <= m.topo.senses["B"]
        for k in range(150):
            m.send(0, Frame("A", "B", k, 1000))
            m.send(0, Frame("C", "B", k, 1000))
        run(m)
        return m.stations["A"].stats.collisions + m.stations["C"].stats.collisions
    without, with_rts = collisions(None), collisions(0)
    assert without > 50 and with_rts < without / 5


# ---- the schema ---------------------------------------------------------------------------------------
FLOWS = [{"sender": "A", "receiver": "D", "segments": 10}]


def errors(medium: dict[str, Any], **doc: Any) -> dict[str, str]:
    with pytest.raises(ExperimentError) as e:
        load_experiment(dict(doc, flows=FLOWS, medium=dict(model="dcf", **medium)), "m.yaml")
    return {err.path: err.message for err in e.value.errors}


@pytest.mark.parametrize("key,value", [("tx_power_dbm", 10.0), ("path_loss_exponent", 2.0), ("shadowing_sigma_db", 4.0),
                                       ("cs_threshold_dbm", -62.0), ("signal_dbm", {"B": {"A": -50.0}})])
def test_sinr_settings_without_reception_sinr_are_refused(key: str, value: Any) -> None:
    found = errors({key: value})
    assert list(found) == [f"medium.{key}"] and "medium.reception is 'range'" in found[f"medium.{key}"]


@pytest.mark.parametrize("key,value,words", [
    ("tx_power_dbm", 40.0, "expected -30 to 30"), ("reference_loss_db", 0.0, "passive channel attenuates"),
    ("path_loss_exponent", 0.5, "expected 1 to 8"), ("shadowing_sigma_db", -1.0, "expected 0 to 20"),
    ("noise_floor_dbm", -120.0, "k T B"), ("cs_threshold_dbm", math.inf, "expected -150 to 0"),
    ("rx_sensitivity_dbm", math.nan, "expected -150 to 0"), ("rate_mbps", 7, "802.11b has no 7 Mbit/s rate"),
    ("basic_rate_mbps", 24, "802.11b has no 24 Mbit/s rate"), ("range_m", 300, "the signal decides"),
    ("hears", {"A": ["B"]}, "the signal decides"),
])
def test_impossible_sinr_settings_are_refused_naming_the_field(key: str, value: Any, words: str) -> None:
    found = errors({"reception": "sinr", key: value})
    assert words in found[f"medium.{key}"], found


def test_measured_signals_are_checked() -> None:
    found = errors({"reception": "sinr", "signal_dbm": {"B": {"A": 20.0, "B": -50.0, "A2": -60.0}, "Z": {"A": -50},
                                                        "C": {"D": "loud"}}})
    assert "exceeds the transmit power 16.0206 dBm" in found["medium.signal_dbm.B.A"]
    assert "a sender other than B" in found["medium.signal_dbm.B.B"]
    assert "a sender other than B" in found["medium.signal_dbm.B.A2"]
    assert "unknown node" in found["medium.signal_dbm.Z"]
    assert "a signal in dBm" in found["medium.signal_dbm.C.D"]


def test_sinr_needs_positions() -> None:
    found = errors({"reception": "sinr"}, topology={"nodes": ["A", "B", "C", "D"],
                                                    "links": [["A", "B"], ["B", "C"], ["C", "D"]]})
    assert "computes the signal from distances" in found["medium.reception"]


def test_chain_neighbours_that_cannot_decode_each_other_are_refused() -> None:
    # 100 m at the defaults: 16.02 - 40.1 - 60 = -84.1 dBm, under the -82 dBm sensitivity
    found = errors({"reception": "sinr", "spacing_m": 100})
    assert "B does not hear A" in found["medium.positions.B"]


def test_defaults_are_filled_in_and_a_variant_goes_back_to_range_with_nulls() -> None:
    doc = {"flows": FLOWS, "medium": {"model": "dcf", "reception": "sinr", "spacing_m": 80, "tx_power_dbm": 20.0},
           "variants": [{"name": "sinr"}, {"name": "range", "medium": {"reception": "range", "tx_power_dbm": None}}]}
    sinr, rng = (v.config["medium"] for v in load_experiment(doc, "m.yaml").variants)
    assert sinr["tx_power_dbm"] == 20.0 and sinr["cs_threshold_dbm"] == -82.0 and sinr["noise_floor_dbm"] == -93.97
    assert rng["reception"] == "range" and rng["tx_power_dbm"] is None and rng["cs_threshold_dbm"] is None
    doc["variants"][1]["medium"] = {"reception": "range"}
    with pytest.raises(ExperimentError, match="tx_power_dbm: set to 20.0 but medium.reception is 'range'"):
        load_experiment(doc, "m.yaml")


BAD = {"name": "bad", "backend": "sim", "flows": FLOWS,
       "medium": {"model": "dcf", "reception": "sinr", "noise_floor_dbm": -120, "rate_mbps": 7},
       "variants": [{"name": "v", "medium": {"reception": "range", "noise_floor_dbm": None, "rate_mbps": None,
                                             "cs_threshold_dbm": -70}}]}


def test_validate_and_run_refuse_the_same_sinr_lines(tmp_path: Path) -> None:
    _, lines = refused_lines(tmp_path, BAD)
    assert [line.split(": ")[3] for line in lines] == ["medium.noise_floor_dbm", "medium.rate_mbps",
                                                       "variants[v].medium.cs_threshold_dbm"]
