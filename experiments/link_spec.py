"""The ``link:`` section of an experiment: its fields, what each backend makes of them, and refusals.

Every field defaults to null, meaning "the backend's own links":

* sim: its independent wires, 10 Mbit/s, 2 ms, a 50-packet drop-tail queue (:data:`SIM_LINK`), exactly
  as before the fields became optional, so the sim's results do not change;
* netns: plain veths (no rate limit, no delay); whatever is set explicitly is emulated by the node
  daemons holding each packet's NFQUEUE verdict (routing/drivers/link_shaper.py, docs/NETNS.md);
* local: loopback UDP (no rate limit, no delay); whatever is set explicitly is emulated by each node
  holding the datagrams it sends until they would have crossed the link (routing/overlay/udp_link.py);
* pi cannot emulate a link (its links are the radios), so an explicit field is refused before the run
  starts (:data:`LINK_REFUSED`), never ignored;
* ``mahimahi``: a Mahimahi trace's delivery opportunities serve each link direction instead of a rate
  (routing/links/mahimahi.py), on sim, local and netns.

The link rule itself (serialisation, delay, drop-tail) is routing.links.linkem, shared by sim, local and netns.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import tracefiles
from routing.links import mahimahi
from fieldspec import INT, NUM, STR, ConfigError, Field, beside_source, in_range
from routing.links.linkem import LinkParams, LinkQueue
from routing.overlay.udp_link import EgressLinks

F = Field

LINK_SCHEMA: dict[str, Field] = {
    "rate_mbps": F(NUM, None, in_range(0, lo_open=True),
                   "link rate per direction (null: the backend's own; sim 10, netns and local no limit)"),
    "delay_ms": F(NUM, None, in_range(0), "one-way propagation delay (null: the backend's own; sim 2, netns and "
                                          "local 0)"),
    "queue_packets": F(INT, None, in_range(1), "drop-tail queue per link direction, packets waiting or being "
                                               "serialised (null: the backend's own; sim, netns and local 50)"),
    "mahimahi": F(STR, None, None, "a Mahimahi mm-link trace (one line per delivery opportunity, ms; relative to "
                                   "the experiment file) serving every link direction instead of rate_mbps; ms 0 "
                                   "is the flows' start (routing/links/mahimahi.py)"),
}

#: The sim's own links (and the default queue of an emulated netns link): the values the schema had
#: as defaults before they became null.
SIM_LINK = {"rate_mbps": 10.0, "delay_ms": 2.0, "queue_packets": 50}

#: Why a backend refuses an explicit ``link`` field (checked by experiments.runner.check_backend_support).
LINK_REFUSED = {
    "pi": "on the Pis the links are the real radios; remove link.* (an emulated link would come on top of them)",
}


def explicit(cfg: Mapping[str, Any]) -> list[str]:
    """The ``link`` fields the experiment sets (in schema order)."""
    return [k for k in LINK_SCHEMA if cfg["link"].get(k) is not None]


def check_mahimahi(src: str, cfg: dict[str, Any], error: type[ConfigError], errs: list[ConfigError]) -> None:
    """``link.mahimahi``: made absolute (from the experiment file's directory, so that every node daemon reads
    it wherever it runs) and read once here, so that a file that is not a trace is reported before the run;
    not with ``link.rate_mbps`` (two rates for one link)."""
    link = cfg["link"]
    if link.get("mahimahi") is None:
        return
    link["mahimahi"] = beside_source(src, link["mahimahi"])
    try:
        tracefiles.read_mahimahi(link["mahimahi"])
    except tracefiles.MahimahiError as e:
        errs.append(error(src, "link.mahimahi", str(e)))
    if link.get("rate_mbps") is not None:
        errs.append(error(src, "link.rate_mbps", "a Mahimahi trace is the link's rate (link.mahimahi); set one of them"))


def link_schedule(cfg: Mapping[str, Any]) -> mahimahi.Schedule | None:
    """``link.mahimahi``'s opportunities, read once per process (None without)."""
    path = cfg["link"].get("mahimahi")
    return None if path is None else mahimahi.Schedule.read(path)


def link_queue(params: LinkParams, t_flows: float, schedule: mahimahi.Schedule | None
               ) -> LinkQueue | mahimahi.OpportunityQueue:
    """A fresh queue for one link direction: routing.links.linkem's rule with ``params``, or with a Mahimahi
    ``schedule`` (:func:`link_schedule`) its opportunities from ``t_flows`` on, ``params``' delay and queue."""
    if schedule is None:
        return LinkQueue(params)
    return mahimahi.OpportunityQueue(schedule, t_flows, params.delay_s, params.queue_packets)


def sim_link(cfg: Mapping[str, Any]) -> LinkParams:
    """The sim's link: each null field resolved to :data:`SIM_LINK`."""
    v = {k: (cfg["link"][k] if cfg["link"].get(k) is not None else SIM_LINK[k]) for k in SIM_LINK}
    return LinkParams(v["rate_mbps"] * 1e6, v["delay_ms"] / 1000.0, int(v["queue_packets"]))


def emulated_link(cfg: Mapping[str, Any]) -> LinkParams | None:
    """The link the netns and local backends emulate, or None (no field set: plain veths or loopback, nothing
    held).

    A null rate is no serialisation time (the veth's, loopback's), a null delay 0, a null queue the sim's
    50 packets (so ``link: {rate_mbps: 2}`` gives the same link on sim, local and netns).
    """
    link = cfg["link"]
    if not explicit(cfg):
        return None
    rate = link["rate_mbps"] * 1e6 if link.get("rate_mbps") is not None else math.inf
    delay = link["delay_ms"] / 1000.0 if link.get("delay_ms") is not None else 0.0
    queue = link["queue_packets"] if link.get("queue_packets") is not None else SIM_LINK["queue_packets"]
    return LinkParams(rate, delay, int(queue))


def egress_links(cfg: Mapping[str, Any], neighbours: list[str], t_flows: float) -> EgressLinks | None:
    """A local node's emulated links to its ``neighbours`` (mesh addresses), a Mahimahi schedule's ms 0 at
    ``t_flows``; None when the experiment sets no link field (datagrams go out at once, as always)."""
    params = emulated_link(cfg)
    if params is None:
        return None
    schedule = link_schedule(cfg)
    return EgressLinks({n: link_queue(params, t_flows, schedule) for n in neighbours})


def refuse_link(source: str, variants: Sequence[tuple[str, Mapping[str, Any]]], backend: str,
                error: type[ConfigError]) -> None:
    """Raise ``error`` naming the first variant and field ``backend`` cannot emulate."""
    for name, cfg in variants:
        fields = explicit(cfg)
        if fields and backend in LINK_REFUSED:
            raise error(source, f"variants[{name}].link.{fields[0]}",
                        f"cannot run on backend {backend}: {LINK_REFUSED[backend]}")
        if fields and backend == "netns" and cfg["netns"]["rate_mbit"] > 0:
            raise error(source, f"variants[{name}].netns.rate_mbit",
                        "two rate limits on one veth: netns.rate_mbit (tc tbf) and link."
                        f"{fields[0]} (held NFQUEUE verdicts); set one of them")
