"""Loss as radio error (issue 24, item 7): ``layer: radio`` on a loss spec is drawn by the dcf medium per
transmission attempt and retried by the link layer; ``layer: above_mac`` (the default) is dropped by the
receiving node and not retried.  Virtual time (the medium core, the sim backend); one local run.
"""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any
import pytest
from experiments.radio_loss import RadioErrors, radio_errors
from experiments.runner import check_backend_support, run_experiment
from experiments.schema import ExperimentError, load_experiment
from routing.links.loss import Bernoulli, packet_dropper
from routing.medium.dcf import Delivered, Dropped, Frame, Medium, Topology
from routing.medium.phy import Phy


DIAMOND = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]


# ---- the medium core: a Bernoulli 0.3 radio error on one link, retried ---------------------------------
def _one_link(retry_limit: int, n: int = 3000, radio: bool = True) -> tuple[int, int, Medium]:
    """``n`` frames A -> B, one at a time, on a two-station medium whose A>B attempts a Bernoulli 0.3 loses;
    returns (delivered, mac_retry drops, medium)."""
    phy = Phy.preset("b", retry_limit=retry_limit)
    medium = Medium(phy, Topology.from_graph({"A": ["B"], "B": ["A"]}), 50, random.Random(1))
    if radio:
        errs = RadioErrors({("A", "B"): packet_dropper(Bernoulli(0.3, random.Random(7)))}, {})
        medium.radio_loss = lambda src, dst, ns, size: errs.lost(src, dst, ns / 1e9, size)
    delivered = dropped = 0
    now = 0
    for i in range(n):
        outs = medium.send(now, Frame("A", "B", i, 1000))
        while (t := medium.next_timer()) is not None:
            now = t
            outs += medium.advance(t)
        delivered += sum(isinstance(o, Delivered) for o in outs)
        dropped += sum(isinstance(o, Dropped) and o.reason == "mac_retry" for o in outs)
    return delivered, dropped, medium


def test_radio_errors_are_retried_up_to_the_retry_limit() -> None:
    # retry_limit 2 (attempts in all, dot11ShortRetryLimit): a frame is dropped when both attempts fail, 0.3^2
    n = 3000
    delivered, dropped, medium = _one_link(2, n)
    st = medium.stations["A"].stats
    assert delivered + dropped == n
    assert 0.07 < dropped / n < 0.11                      # 0.09 = 0.3^2 (binomial sd 0.005)
    assert st.errors > 0.25 * n and st.retries == st.attempts - n
    assert st.mac_drops == dropped and st.collisions == 0
    # the default 7 attempts: 0.3^7 = 2e-4 of the frames lost, 1 / 0.7 = 1.43 attempts per frame
    delivered, dropped, medium = _one_link(7, n)
    st = medium.stations["A"].stats
    assert dropped <= 5 and delivered == n - dropped
    assert 1.35 < st.attempts / n < 1.50
    # without radio loss: every frame at its first attempt
    delivered, dropped, medium = _one_link(2, 200, radio=False)
    assert delivered == 200 and medium.stations["A"].stats.attempts == 200


def test_a_link_spec_wins_over_the_receivers_and_says_where_it_applies() -> None:
    always = packet_dropper(Bernoulli(1.0, random.Random(1)))
    errs = RadioErrors({("A", "B"): None, ("C", "B"): always}, {"B": always})
    assert not errs.lost("A", "B", 0.0, 100)     # A>B's own spec is above the MAC: the node's radio spec not used
    assert errs.lost("C", "B", 0.0, 100) and errs.lost("D", "B", 0.0, 100)   # C>B's own; D>B the receiver's
    assert not errs.lost("B", "A", 0.0, 100)     # A has no radio spec


# ---- the schema: layer, and its refusals ------------------------------------------------------------------
def _doc(layer: str | None, medium: bool | dict[str, Any] = True, **over: Any) -> dict[str, Any]:
    """The diamond, a flow A -> D, Bernoulli 0.3 on A-B at ``layer``, on the dcf medium (True: 802.11g, or the
    medium section given) or none (False)."""
    spec: dict[str, Any] = {"model": "bernoulli", "rate": 0.3}
    if layer is not None:
        spec["layer"] = layer
    doc: dict[str, Any] = {
        "name": "radiol", "backend": "sim", "seed": 3, "repetitions": 1, "etx": {"settle_s": 1.0},
        "topology": {"nodes": ["A", "B", "C", "D"], "links": DIAMOND},
        "routing": {"metric": "hops"}, "tcp": {"variant": "sack"},
        "loss": {"links": {"A-B": spec}},
        "flows": [{"sender": "A", "receiver": "D", "segments": 300}],
        "variants": [{"name": "v"}]}
    if medium:
        doc["medium"] = medium if isinstance(medium, dict) else {"model": "dcf", "standard": "g"}
    doc.update(over)
    return doc


def _errors(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ExperimentError) as e:
        load_experiment(doc, "r.yaml")
    return {err.path: err.message for err in e.value.errors}


def test_layer_is_validated_and_above_mac_resolves_as_before() -> None:
    cfg = load_experiment(_doc(None), "r.yaml").variants[0].config
    same = load_experiment(_doc("above_mac"), "r.yaml").variants[0].config
    assert cfg["loss"]["links"]["A>B"] == same["loss"]["links"]["A>B"] == {"model": "bernoulli", "rate": 0.3, "down": []}
    radio = load_experiment(_doc("radio"), "r.yaml").variants[0].config
    assert radio["loss"]["links"]["A>B"]["layer"] == "radio"
    assert "expected one of above_mac, radio" in _errors(_doc("phy"))["loss.links.A-B.layer"]


def test_radio_without_the_medium_is_refused_with_the_reason() -> None:
    found = _errors(_doc("radio", medium=False))
    assert "medium.model is 'none'" in found["loss.links.A>B.layer"]
    doc = _doc(None, medium=False, loss={"default": {"model": "bernoulli", "rate": 0.1, "layer": "radio"}})
    assert "retried by the link layer" in _errors(doc)["loss.default.layer"]
    # a variant that turns the medium off is refused too
    doc = _doc("radio", variants=[{"name": "v"}, {"name": "off", "medium": {"model": "none", "standard": None}}])
    assert any("layer" in p and "no link layer" in m for p, m in _errors(doc).items())


def test_every_backend_with_the_medium_takes_it() -> None:
    clock = _doc(None, loss={"links": {"A-B": {"model": "bernoulli", "rate": 0.3, "layer": "radio",
                                                "down": [[1.0, 2.0]]}}})
    for doc in (_doc("radio"), clock):
        exp = load_experiment(doc, "r.yaml")
        for backend in ("sim", "local", "netns"):   # netns: a radio link spec is the medium daemon's (it knows the sender)
            check_backend_support(exp, backend)


def test_the_medium_draws_the_spec_the_node_would() -> None:
    cfg = load_experiment(_doc("radio"), "r.yaml").variants[0].config
    errs = radio_errors(cfg, 3, 1.0)
    assert errs is not None and errs.links[("A", "B")] is not None and errs.links[("B", "A")] is not None
    assert errs.nodes == {}
    assert radio_errors(load_experiment(_doc(None), "r.yaml").variants[0].config, 3, 1.0) is None


# ---- the sim backend: a diamond, and crossing flows -------------------------------------------------------
def _run(tmp: Path, doc: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, dict[str, Any]]]:
    out = run_experiment(load_experiment(doc, "radiol.yaml"), out=tmp, jobs=1, plot=False, progress=lambda s: None)
    with open(out / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    mac = {}
    for log in (out / "v/rep0").glob("*.log"):
        for line in log.read_text().splitlines():
            e = json.loads(line)
            if e["ev"] == "mac":
                mac[log.stem] = e
    return rows, mac


@pytest.mark.parametrize("flows", [
    [{"sender": "A", "receiver": "D", "segments": 300}],
    # crossing flows: A -> D over A-B-D and C -> B over C-A-B, both through the lossy A-B
    [{"sender": "A", "receiver": "D", "segments": 200}, {"sender": "C", "receiver": "B", "segments": 200}],
], ids=["diamond", "crossing"])
def test_sim_retries_radio_loss_and_not_loss_above_the_mac(tmp_path: Path, flows: list[dict[str, Any]]) -> None:
    limits = {"max_duration_s": 60}
    radio_rows, radio_mac = _run(tmp_path / "radio", _doc("radio", flows=flows, limits=limits))
    above_rows, above_mac = _run(tmp_path / "above", _doc(None, flows=flows, limits=limits))
    assert all(r["status"] == "ok" for r in radio_rows)   # above the MAC, 30 % each way may stall TCP past 60 s
    # radio: the nodes drop nothing for loss; A and B's attempts over A-B are lost and retried
    assert int(radio_rows[0]["drops_loss"]) == 0
    assert radio_mac["A"]["errors"] > 0 and radio_mac["B"]["errors"] > 0
    assert radio_mac["A"]["retries"] >= radio_mac["A"]["errors"]
    # above the MAC: the node drops 30 % of what crosses A-B, the medium loses nothing to errors
    assert int(above_rows[0]["drops_loss"]) > 0
    assert all(m["errors"] == 0 for m in above_mac.values())
    # end to end: the retries hide the loss from TCP (7 attempts: 0.3^7 per frame reaches it)
    radio_losses = sum(int(r["losses_dupack"]) + int(r["losses_rto"]) for r in radio_rows)
    above_losses = sum(int(r["losses_dupack"]) + int(r["losses_rto"]) for r in above_rows)
    assert radio_losses <= 3 < above_losses
    segments = sum(f["segments"] for f in flows)
    assert radio_losses < 0.05 * segments      # far below the link's 0.3: the link layer retried the rest


def test_sim_radio_loss_exhausts_a_small_retry_limit(tmp_path: Path) -> None:
    """B's node spec as radio error (Bernoulli 0.3 on every attempt B is sent): with retry_limit 2 a frame to B
    is dropped as mac_retry when both attempts fail (0.3^2 from the errors alone; A and D, hidden from each
    other, add collisions), with the default 7 almost never; the nodes drop nothing for loss either way."""
    def run(limit: int | None, out: Path) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        medium = {"model": "dcf", "standard": "g", "retry_limit": limit}
        rows, mac = _run(out, _doc(None, medium, limits={"max_duration_s": 60},
                                   loss={"nodes": {"B": {"model": "bernoulli", "rate": 0.3, "layer": "radio"}}}))
        return rows[0], mac
    row2, mac2 = run(2, tmp_path / "two")
    row7, mac7 = run(None, tmp_path / "seven")
    assert int(row2["drops_loss"]) == 0 == int(row7["drops_loss"])
    assert mac2["A"]["errors"] > 0 and mac7["A"]["errors"] > 0
    assert mac2["A"]["mac_drops"] > 30 and mac2["A"]["mac_drops"] > 5 * mac7["A"]["mac_drops"]
    assert mac2["C"]["errors"] == 0 == mac7["C"]["errors"]   # C sends only to A and D, which have no radio spec


def test_sim_radio_down_interval_follows_the_flow_start(tmp_path: Path) -> None:
    """A radio spec that follows the clock: A-B down for 0.5 s from 0.3 s after the flow start (settling 1 s):
    every attempt over A-B fails then, so A's frames to B are dropped as mac_retry inside that interval (plus
    one exchange's retries), and none outside it; the nodes drop nothing for loss."""
    doc = _doc(None, loss={"links": {"A-B": {"model": "none", "layer": "radio", "down": [[0.3, 0.8]]}}},
               limits={"max_duration_s": 60})
    out = run_experiment(load_experiment(doc, "radiol.yaml"), out=tmp_path, jobs=1, plot=False, progress=lambda s: None)
    drops = [json.loads(line) for line in (out / "v/rep0/A.log").read_text().splitlines()]
    # one line per drop, or (past the line rate) a count line written later, its drops since ``since``
    times = [e.get("since", e["t"]) for e in drops if e["ev"] == "drop" and e.get("reason") == "mac_retry"]
    assert times and all(1.3 <= t < 1.85 for t in times), times
    with open(out / "summary.csv", newline="") as f:
        assert int(next(csv.DictReader(f))["drops_loss"]) == 0
