"""Loss that stands for radio errors (issue 24, item 7): ``layer: radio`` on a loss spec.

A loss spec (``loss.default``, ``loss.nodes.<n>``, ``loss.links.<A-B>``) says where its losses happen:

* ``layer: above_mac`` (the default, and what every loss was before): the receiving node drops the
  packet after the link layer delivered it (routing.forwarding.step), so nothing retries it but TCP;
* ``layer: radio``: the loss is a radio error of each transmission attempt.  The node drops nothing for
  that spec; the DCF medium (routing.medium.dcf) draws every data attempt's fate from the model instead
  (:meth:`routing.medium.dcf.Medium.frame_error`'s place, :attr:`routing.medium.dcf.Medium.radio_loss`), so a
  lost attempt gets no ACK and is sent again, up to the retry limit (IEEE 802.11-2020 10.3.4.4), and
  a frame whose attempts all fail is dropped as ``mac_retry``.  Group-addressed frames (ETX probes)
  are sent once: an error loses them, as it does above the MAC.

Which model a frame from A to B meets is the rule of routing.forwarding.step (docs/LOGS.md, "Loss per link"): the
link's own spec (``loss.links``, directed ``A>B``) when it has one, else B's (``loss.nodes.B``, else
``loss.default``); that spec's ``layer`` then says where it applies.  Each model is built as the node
would build it (same spec, same seeded RNG stream: experiments.build.build_node), so a radio spec meets
the same loss process per attempt as the node-side one per packet delivered.

``layer: radio`` needs ``medium.model: dcf`` (there is no link layer to retry without it): the schema
refuses it otherwise (:func:`radio_problems`).  Every backend with the medium draws it (sim, the local
medium process, the netns medium daemon: :func:`attach`); pi refuses the medium itself.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from fieldspec import STR, Field, one_of
from routing.links.loss import absolute_times, build_loss_model, node_rng, packet_dropper

LAYERS = ("above_mac", "radio")
LAYER_FIELD = Field(STR, "above_mac", one_of(*LAYERS),
                    "above_mac: the receiving node drops the packet (not retried) | radio: each transmission "
                    "attempt on the dcf medium is lost (retried by the link layer up to its retry limit)")

def is_radio(spec: Mapping[str, Any]) -> bool:
    return spec.get("layer", "above_mac") == "radio"


def node_side(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What the receiving node applies of ``spec``: nothing for a radio spec (the medium applies it)."""
    return {"model": "none"} if is_radio(spec) else dict(spec)


def _radio_specs(cfg: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(field path, spec) of every radio spec of the resolved loss section."""
    loss = cfg["loss"]
    specs = [("loss.default", loss["default"])] + [(f"loss.nodes.{n}", s) for n, s in loss["nodes"].items()]
    specs += [(f"loss.links.{k}", s) for k, s in loss.get("links", {}).items()]
    return [(p, s) for p, s in specs if isinstance(s, dict) and is_radio(s)]


def radio_problems(cfg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field path, reason) for each radio spec without the medium that would retry it."""
    if cfg["medium"]["model"] == "dcf":
        return []
    return [(f"{path}.layer", "layer radio is an error of each transmission attempt, retried by the link layer of "
             f"the dcf medium; medium.model is {cfg['medium']['model']!r} (no link layer): set medium.model dcf, "
             "or layer above_mac") for path, _ in _radio_specs(cfg)]


Dropper = Callable[[float, int], bool]


class RadioErrors:
    """The radio specs of one repetition, as the medium draws them: per directed link and per receiver.

    ``lost(src, dst, now, size)``: is this data attempt of ``size`` bytes (the IP packet, as the node-side
    models see it) from ``src`` to ``dst`` lost to a radio error?  ``now`` on the clock the specs' times
    were moved to (routing.links.loss.absolute_times).  One draw of one model per attempt."""

    def __init__(self, links: dict[tuple[str, str], Dropper | None], nodes: dict[str, Dropper]) -> None:
        # links: every link with its own spec; None where that spec is above the MAC (it wins over the node's)
        self.links = links
        self.nodes = nodes

    def lost(self, src: str, dst: str, now: float, size: int) -> bool:
        key = (src, dst)
        drop = self.links[key] if key in self.links else self.nodes.get(dst)
        return drop is not None and drop(now, size)


def radio_errors(cfg: Mapping[str, Any], seed: int, t_flows: float) -> RadioErrors | None:
    """The medium's radio errors of ``cfg`` (flows start at ``t_flows`` on the medium's clock); None when no
    spec is radio (the medium then draws nothing: every result stays as it was)."""
    if not _radio_specs(cfg):
        return None

    def dropper(spec: dict[str, Any], stream: str) -> Dropper:
        spec = {k: v for k, v in absolute_times(spec, t_flows).items() if k != "layer"}
        return packet_dropper(build_loss_model(spec, node_rng(seed, stream, "loss")))   # build_node's stream

    loss = cfg["loss"]
    links: dict[tuple[str, str], Dropper | None] = {}
    for key, spec in loss.get("links", {}).items():
        frm, to = key.split(">")
        links[(frm, to)] = dropper(spec, key) if is_radio(spec) else None
    nodes = {}
    for n in cfg["topology"]["nodes"]:
        spec = loss["nodes"].get(n, loss["default"])
        if is_radio(spec):
            nodes[n] = dropper(spec, n)
    return RadioErrors(links, nodes)


def attach(medium: Any, cfg: Mapping[str, Any], seed: int, t_flows: Callable[[], float],
           seconds: Callable[[int], float]) -> None:
    """Give ``medium`` (routing.medium.dcf.Medium) the radio errors of ``cfg``; ``seconds(ns)``: the medium's time
    in ns on the specs' clock; ``t_flows()``: when the flows start on that clock, asked at the first draw (the
    local medium process starts before the nodes fix it).  Nothing when no spec is radio."""
    if not _radio_specs(cfg):
        return
    errs: RadioErrors | None = None

    def lost(src: str, dst: str, ns: int, size: int) -> bool:
        nonlocal errs
        if errs is None:
            errs = radio_errors(cfg, seed, t_flows())
            assert errs is not None
        return errs.lost(src, dst, seconds(ns), size)

    medium.radio_loss = lost
