"""The experiment YAML: schema, defaults, validation, variants and sweeps.

Every field is declared once in ``SCHEMA`` with its type, default and check.
A wrong file is rejected before anything starts with an ``ExperimentError``
naming the file, the field path and what was expected.
"""
from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import yaml

from aspan.policy import DUPACK_DISCIPLINES, POLICIES
from aspan.schemes import SCHEMES
from etx.estimator import BEFORE_FULL_MODES, QUALITY_MODES
from experiments.backend_registry import BACKENDS
from experiments.config import ExperimentConfig
from experiments.congestion import KERNEL_CONGESTION
from experiments.link_spec import LINK_SCHEMA, check_mahimahi
from experiments.medium_spec import MEDIUM_SCHEMA, check_medium, radio_links_origin
from experiments.radio_loss import LAYER_FIELD, radio_problems
from fieldspec import (BOOL, INT, NUM, STR, ConfigError, Field, beside_source, fill, in_range, member_of,
                               one_of, one_of_int, raise_all, unknown_field)
from routing.links.loss import MODELS as LOSS_MODELS
from routing.topology.graph import METRICS
from experiments.topology_spec import check_graph, check_nodes_links
from deploy.radio import LEGACY_RATES
from tcp_user.config import VARIANTS

ROUTING_DAEMONS = ("builtin", "babeld")
BABEL_LOSS_MODELS = ("none", "bernoulli")   # what ip6tables can apply to babeld's packets too


class ExperimentError(ConfigError):
    """An experiment file is invalid.  The message names file, field and expectation."""


# ---- field declarations (fieldspec: shared with deploy.inventory) ---------
F = Field


def loss_spec() -> dict[str, Field]:
    """Every key of a loss spec: ``model``, the settings of every model of
    :data:`routing.links.loss.MODELS` (the registry), and ``down``.  Read at each use, so a model
    registered later is known."""
    spec: dict[str, Field] = {"model": F(STR, "none", member_of(LOSS_MODELS), "loss model")}
    for name, kind in LOSS_MODELS.items():
        for key, setting in kind.settings.items():
            if spec.setdefault(key, setting) != setting:
                raise ValueError(f"routing.links.loss.MODELS[{name!r}] declares setting {key!r} unlike another model")
    spec["down"] = F((list,), [], None, "intervals [[start_s, end_s], ...] (relative to the flow start) "
                     "where the node hears nothing")
    spec["layer"] = LAYER_FIELD   # where its losses happen (experiments/radio_loss.py)
    return spec


def _qos_arms(v: Any) -> str | None:
    """snoop.qos_arms: 2 to 8 distinct numbers in [0, 1] (aspan.adaptive.AdaptiveQosConfig)."""
    if not 2 <= len(v) <= 8:
        return f"expected 2 to 8 pkt_qos values, got {len(v)}"
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 1 for x in v):
        return f"expected numbers in [0, 1], got {v}"
    if len(set(v)) != len(v):
        return f"expected distinct values, got {v}"
    return None


def _or_none(check: Any) -> Any:
    """A check that lets null through (a setting left to the hardware)."""
    return lambda v: None if v is None else check(v)


def _legacy_rate(v: Any) -> str | None:
    return None if v in LEGACY_RATES else \
        f"expected one of the 802.11a/b/g rates {', '.join(f'{r:g}' for r in sorted(LEGACY_RATES))} (Mb/s), got {v!r}"


def _auth_mode(v: Any) -> str | None:
    return None if v in ("auto", True, False) else f"expected auto, true or false, got {v!r}"


SCHEMA: dict[str, Any] = {
    "name": F(STR, None, None, "experiment name (default: file name)"),
    "description": F(STR, "", None, "what the experiment is for, in free text; aspan list shows its first line"),
    "backend": F(STR, "local", member_of(BACKENDS), "where it runs (experiments.backend_registry.BACKENDS)"),
    "seed": F(INT, 1, in_range(0), "base seed; repetition k uses seed + k"),
    "repetitions": F(INT, 1, in_range(1), "runs per variant"),
    "out": F(STR, "runs", None, "output directory"),
    "baseline": F(STR, "", None, "the variant the report compares every other variant with, per flow, with 95 % "
                                 "intervals (default: the first variant; aspan plot/summary --baseline overrides it)"),
    "scenario": F(STR, "", None, "label of a group of variants; the scheme-comparison figures draw each scenario's variants side by side"),
    "topology": {
        "chain": F((list,), None, None, "node names in path order: the shorthand of a line (default A, B, C, D "
                                        "when neither links nor medium positions give the graph)"),
        "nodes": F((list,), None, None, "node names in order (addresses, tie-break of equal routes); default: "
                                        "in the order the links (or medium positions) name them"),
        "links": F((list,), None, None, "undirected links [[A, B], ...]; with a dcf medium and positions they may be "
                                        "left out: then every pair within communication range is a link"),
        "addresses": F((dict,), {}, None, "node -> mesh address (default 10.2.1.1, 10.2.1.2, ...)"),
        "routes": F((dict,), {}, None, "node -> {destination node: next-hop node}; overrides of the computed routes"),
    },
    "routing": {   # routing.topology.linkstate; docs/DESIGN.md, "Link-state routing"
        "metric": F(STR, "hops", member_of(METRICS), "hops: shortest paths by hop count | etx: minimum-ETX paths "
                                                     "from the link state the nodes flood (their probe estimates)"),
        "dynamic": F(BOOL, False, None, "false: routes fixed for the run (etx: as measured when settling ends) | "
                                        "true: every node keeps following the flooded link state and reroutes"),
        "advertise_s": F(NUM, 0.5, in_range(0, lo_open=True), "how often a node floods its link-state advertisement"),
        "hold_s": F(NUM, 3.0, in_range(0, lo_open=True), "an advertisement not refreshed for this long is forgotten"),
        "dead_s": F(NUM, 1.0, in_range(0, lo_open=True), "a neighbour not heard for this long: its link is down"),
        "margin": F(NUM, 0.1, in_range(0), "hysteresis: a new next hop whose path is better by this fraction takes "
                                           "over at once..."),
        "switch_after_s": F(NUM, 5.0, in_range(0), "...one better by less, after staying better this long"),
        "daemon": F(STR, "builtin", member_of(ROUTING_DAEMONS), "builtin: the nodes' own link-state core "
                    "(routing.topology.linkstate) | babeld: Debian's Babel daemon in each namespace computes and installs the "
                    "routes instead (netns only; experiments/backends/netns/babel.py)"),
        "babel_hello_s": F(NUM, 4.0, in_range(0.05, 655.35), "with daemon babeld: its Hello interval on every mesh "
                           "interface (babeld's -h, default 4 s); its update interval is four times that"),
    },
    "loss": {
        "default": F((dict,), {"model": "none"}, None, "loss spec of every node (see loss_spec())"),
        "nodes": F((dict,), {}, None, "node -> loss spec overriding the default"),
        "links": F((dict,), {}, None, "link -> loss spec of what crosses it, overriding the receiving node's: "
                                      "\"A-B\" both ways, \"A>B\" only what B hears from A (before A-B)"),
    },
    "logs": {
        "compact": F(BOOL, False, None, "after each repetition, its JSON Lines logs become one events.parquet "
                                        "(a fraction of the disk; docs/LOGS.md, Compact logs)"),
    },
    "capture": {
        "enabled": F(BOOL, False, None, "every node writes <node>.pcapng of what it hears and sends, with the snoop "
                                        "agent's decisions as packet comments (docs/LOGS.md, Captures)"),
        "max_mb": F(NUM, 100.0, in_range(0, lo_open=True), "size bound of each node's capture; a capture cut there "
                                                             "says so in node_stop"),
    },
    "link": LINK_SCHEMA,       # experiments.link_spec: null fields are each backend's own links
    "medium": MEDIUM_SCHEMA,   # docs/MEDIUM.md
    "etx": {
        "window": F(INT, 1000, in_range(1), "probes in the delivery-ratio window (paper: 1000)"),
        "interval_s": F(NUM, 0.1, in_range(0, lo_open=True), "probe interval per neighbour (paper: ~0.1 s)"),
        "mode": F(STR, "forward", member_of(QUALITY_MODES), "forward: the paper's one-way ratio; etx: df x dr"),
        "before_full": F(STR, "partial", member_of(BEFORE_FULL_MODES), "estimate before the window fills"),
        "initial": F(NUM, 1.0, in_range(0, 1), "forward ratio assumed before the neighbour reports one"),
        "settle_s": F(NUM, 5.0, in_range(0), "probing time before the flows start"),
        "warmup_interval_s": F(NUM, 0.005, in_range(0, lo_open=True), "probe interval while settling (fills the window fast)"),
        "log_interval_s": F(NUM, 1.0, in_range(0, lo_open=True), "how often each node logs its ETX values"),
    },
    "tcp": {
        "variant": F(STR, "reno", member_of(VARIANTS), "user-space TCP variant (tcp_user.config.VARIANTS)"),
        "init_cwnd": F(INT, 2, in_range(1), "initial cwnd in segments"),
        "rcv_buffer_segments": F(INT, 64, in_range(1), "receiver buffer in segments"),
        "min_rto_s": F(NUM, 0.2, in_range(0, lo_open=True), "minimum RTO"),
        "initial_rto_s": F(NUM, 1.0, in_range(0, lo_open=True), "RTO before the first RTT sample"),
        "max_rto_s": F(NUM, 60.0, in_range(0, lo_open=True), "RTO cap"),
        "snack": F(BOOL, False, None, "paper 002 SNACK: the receiver reports up to 6 lost segments, the sender resends one reported twice without a cwnd cut"),
        "delayed_ack": F(BOOL, False, None, "the user-space receiver acknowledges every second full-sized segment, or "
                         "after delack_s (RFC 5681 sec. 4.2); off: every segment (ns-2's sink). Kernel TCP "
                         "(netns, the Pis' kernel plane) always delays its ACKs by Linux's own rules"),
        "delack_s": F(NUM, 0.2, in_range(0, 0.5, lo_open=True), "the delayed ACK's timer (RFC 1122: at most 0.5 s)"),
        "limited_transmit": F(BOOL, False, None, "RFC 3042: each of the first two duplicate ACKs lets one new segment "
                              "out, as Linux does; false: plain RFC 5681 Reno / RFC 6675 (ns-2's TCP of the papers)"),
        "rack": F(BOOL, False, None, "sack only: RACK time-based loss detection (RFC 8985) beside the dupack rule, as "
                  "Linux (tcp_recovery 1): a lost retransmission is found without waiting for the timeout"),
        "timestamps": F(BOOL, False, None, "RFC 7323 Timestamps option, used when both SYNs offer it: RTT samples "
                        "from TSecr where Karn's rule leaves none (which clears the RTO backoff, as Linux), PAWS at "
                        "the receiver; false: no option (the papers' TCP). Kernel TCP (netns, the Pis' kernel "
                        "plane) always uses Linux's own (net.ipv4.tcp_timestamps, on): the key does not change it"),
        "newreno": F(BOOL, False, None, "reno only: NewReno partial ACKs (RFC 6582): in fast recovery a partial ACK "
                     "resends the next hole and recovery lasts until everything sent before it is acknowledged; "
                     "false: RFC 5681 Reno leaves fast recovery on the first new ACK"),
        "frto": F(BOOL, False, None, "F-RTO (RFC 5682, the basic algorithm): after a timeout, two new segments; when "
                  "the next two ACKs show the timeout was spurious, cwnd and ssthresh are undone to their values "
                  "before it; false: go-back-N after every timeout"),
    },
    "snoop": {
        "policy": F(STR, "none", member_of(POLICIES), "where to cache (aspan.policy.POLICIES)"),
        "pkt_qos": F(NUM, 1.0, in_range(0, 1), "header: cache when pkt_effort x p < pkt_qos (sender_qos adaptive: "
                     "the learner starts with the arm nearest it)"),
        "snoop_after": F(INT, 0, in_range(0, 255), "header: the first N forwarding nodes never cache"),
        "snoop_limit": F(INT, 0, in_range(0, 255), "header: at most N caching nodes per packet (0: no limit)"),
        "fixed_hop": F(INT, 1, in_range(0, 255), "policy fixed: the hop index that caches (1 = B, 2 = C)"),
        "dupack": F(STR, "every", member_of(DUPACK_DISCIPLINES), "every: retransmit on each dupack (paper); once: classic Snoop"),
        "cache_bytes": F(INT, 4_000_000, in_range(0), "cache bound per node"),
        "scheme": F(STR, "aspan", member_of(SCHEMES), "the snoop scheme (aspan.schemes.SCHEMES): aspan (paper 001) | classic (ns-2 Snoop) | multihop (paper 000) | snack (002) | slack (003) | ackall (004)"),
        "snoop_tick_s": F(NUM, 0.1, in_range(0), "classic-Snoop schemes: minimum local RTO (ns-2 SnoopTick; paper 000 uses 1 s)"),
        "max_local_rxmit": F(INT, 10, in_range(1), "classic-Snoop schemes: local retransmissions of one segment (ns-2 SNOOP_MAX_RXMIT)"),
        "max_cached_segments": F(INT, 100, in_range(1), "classic-Snoop schemes: cached segments per flow (ns-2 SNOOP_MAXWIND)"),
        # the adaptive sender (issue 29; aspan.adaptive, docs/VARIANTS.md "Adaptive pkt_qos")
        "sender_qos": F(STR, "fixed", one_of("fixed", "adaptive"),
                        "fixed: every data packet carries pkt_qos; adaptive: the sender picks pkt_qos per flow "
                        "from qos_arms by its ACK progress (aspan.adaptive)"),
        "qos_arms": F((list,), [0.0, 1.0], _qos_arms, "sender_qos adaptive: the pkt_qos values it chooses from"),
        "qos_epoch_s": F(NUM, 1.0, in_range(0, lo_open=True), "sender_qos adaptive: one measurement epoch"),
        "qos_guard": F(NUM, 0.25, in_range(0, 0.9), "sender_qos adaptive: fraction of an epoch not scored"),
        "qos_margin": F(NUM, 0.10, in_range(0, 10), "sender_qos adaptive: how much better a challenger must be"),
        "qos_recheck_epochs": F(INT, 2, in_range(1, 1000), "sender_qos adaptive: hold epochs before re-probing an "
                                "arm that may still be better"),
        "qos_reprobe_epochs": F(INT, 8, in_range(1, 1000), "sender_qos adaptive: hold epochs before a re-probe"),
    },
    "netns": {   # backend netns only (docs/NETNS.md); the other backends ignore this section
        "handlers": F(STR, "snoop", one_of("snoop", "accept", "kernel"),
                      "snoop: the NFQUEUE snoop agent on every node; accept: NFQUEUE accept-only; kernel: plain forwarding"),
        "congestion": F(STR, "reno", one_of(*KERNEL_CONGESTION),
                        "kernel TCP congestion control of the senders (bbr: Linux's BBR, paced by TCP itself; "
                        "refused where the kernel has none of it)"),
        "traffic": F(STR, "bulk", one_of("bulk", "iperf3"), "bulk: the Python kernel-TCP sender/receiver; iperf3"),
        "option": F(INT, 94, one_of_int(30, 94, 158, 222), "IPv4 option type of the A-SPAN fields (RFC 4727 experimental)"),
        "rate_mbit": F(NUM, 0.0, in_range(0), "tc tbf rate limit on every veth (0: none)"),
        "mtu": F(INT, 1500, in_range(576, 9000), "veth MTU (the routes' advmss leaves room for the 8-byte option)"),
        "cwnd_poll_ms": F(NUM, 5.0, in_range(0.5, 1000), "TCP_INFO sampling period of the sender"),
        "queue_maxlen": F(INT, 4096, in_range(1), "NFQUEUE length per node (a full queue drops: logged as drop/queue)"),
        "realtime": F(BOOL, False, None, "node daemons run SCHED_RR (priority 10): a held link verdict is released on "
                                         "time while other processes load the CPUs (docs/NETNS.md, Emulated links)"),
    },
    "auth": {   # the authenticated overlay (routing.overlay.auth; docs/DESIGN.md, "The authenticated overlay")
        "mac": F((str, bool), "auto", _auth_mode,
                 "auto | true | false: overlay packets carry a keyed MAC and sequence number, only neighbours are heard; "
                 "auto: on for pi (an open WiFi cell), off for local (loopback) and netns (where only the probes and "
                 "LSAs carry it: kernel TCP has no MAC); sim has no wire"),
    },
    "pi": {   # backend pi only (docs/PI.md); the other backends ignore this section
        "data_plane": F(STR, "udp", one_of("udp", "kernel"),
                        "udp: the user-space overlay (aspan node); kernel: kernel TCP through the NFQUEUE "
                        "node daemons of the netns backend (the netns section's handlers, traffic, congestion, "
                        "option, mtu, cwnd_poll_ms and queue_maxlen apply)"),
        # the radio of every Pi for the run (deploy/radio.py; checked against what iw says it can do, set back after)
        "bitrate_mbps": F((int, float, type(None)), None, _or_none(_legacy_rate),
                          "a fixed legacy (802.11a/b/g) bitrate, iw dev ... set bitrates (null: the driver's choice)"),
        "mcs": F((int, type(None)), None, _or_none(in_range(0, 7)), "a fixed HT20 MCS, one stream (null: the driver's choice)"),
        "rts_threshold": F((int, type(None)), None, _or_none(in_range(0, 65535)),
                           "RTS/CTS before frames longer than this many bytes, iw phy ... set rts (null: as it is)"),
        "txpower_dbm": F((int, float, type(None)), None, _or_none(in_range(-10, 30)),
                         "fixed transmit power, iw dev ... set txpower fixed (null: as it is)"),
    },
    "flows": F((list,), [{"sender": "A", "receiver": "D"}], None, "bulk transfers"),
    "limits": {
        "max_duration_s": F(NUM, 600.0, in_range(0, lo_open=True), "a run still going after this is stopped (status incomplete)"),
    },
    "variants": F((list,), [], None, "list of {name, ...overrides}"),
    "sweep": F((dict,), {}, None, "{field: dotted.path, values: [...]}: one variant per value (per variant); "
                                  "or {factors: {dotted.path: [...], ...}}: one per combination of the factors' "
                                  "values, only: [{dotted.path: value, ...}, ...] a listed subset of them"),
}

FLOW_SPEC = {
    "sender": F(STR, "A", None, "sending node"),
    "receiver": F(STR, "D", None, "receiving node"),
    "segments": F(INT, 16000, in_range(1), "segments to send"),
    "segment_size": F(INT, 1000, in_range(1, 60000), "payload bytes per segment (MSS)"),
    "start_s": F(NUM, 0.0, in_range(0), "start, relative to the end of ETX settling"),
    "variant": F(STR, None, member_of(VARIANTS), "TCP variant of this flow (default: tcp.variant)"),
}


# ---- validation -----------------------------------------------------------
def _unknown(src: str, path: str, key: str, known: list[str]) -> ExperimentError:
    return unknown_field(src, path, key, known, ExperimentError)  # type: ignore[return-value]


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k not in ("addresses", "routes", "nodes", "links"):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


Errors = list[ConfigError]


def _check_loss(src: str, path: str, spec: Any, errs: Errors) -> dict[str, Any]:
    """A loss spec with the defaults of its model only; a key of another model is an error."""
    found: Errors = []
    full = fill(src, path, loss_spec(), spec, ExperimentError, found)
    model_ok = not any(e.path == f"{path}.model" for e in found)
    errs.extend(found)
    allowed = (*LOSS_MODELS[full["model"]].settings, "down", "layer")
    for key in (spec if model_ok and isinstance(spec, dict) else {}):
        if key != "model" and key not in allowed and key in full:
            errs.append(ExperimentError(src, f"{path}.{key}", f"not a setting of model {full['model']!r}; "
                                        f"expected one of {', '.join(allowed)}"))
    # layer: kept only when radio, so that every spec above the MAC resolves as it did before the key existed
    full = {k: v for k, v in full.items() if k == "model" or (k in allowed and not (k == "layer" and v == "above_mac"))}
    for i, iv in enumerate(full["down"]):
        if not (isinstance(iv, list) and len(iv) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in iv)
                and 0 <= iv[0] < iv[1]):
            errs.append(ExperimentError(src, f"{path}.down[{i}]",
                                        f"expected [start_s, end_s] with 0 <= start < end, got {iv!r}"))
    kind = LOSS_MODELS[full["model"]] if model_ok else None
    if kind is not None and "file" in kind.settings:
        if not isinstance(full.get("file"), str):
            errs.append(ExperimentError(src, f"{path}.file", f"model {full['model']!r} needs a file"))
        else:   # relative to the experiment file's directory; absolute, so the nodes read it wherever they run
            full["file"] = beside_source(src, full["file"])
    if kind is not None and kind.check is not None and not any(e.path.startswith(f"{path}.") for e in found):
        if all(isinstance(full.get(k), str) for k in ("file", "link")) or "file" not in kind.settings:
            for key, why in kind.check(full):
                errs.append(ExperimentError(src, f"{path}.{key}", why))
        elif not isinstance(full.get("link"), str):
            errs.append(ExperimentError(src, f"{path}.link", f"model {full['model']!r} needs a link"))
    times = kind.times if kind is not None else ()
    if len(times) == 2 and all(isinstance(full.get(k), (int, float)) for k in times) \
            and not full[times[0]] < full[times[1]]:
        errs.append(ExperimentError(src, f"{path}.{times[1]}", f"must be after {times[0]} ({full[times[0]]}), "
                                    f"got {full[times[1]]}"))
    return full


def _check_override_loss(src: str, path: str, spec: Any, default: dict[str, Any], errs: Errors) -> dict[str, Any]:
    """A node's or a link's loss spec over ``loss.default``: with the default's model it inherits the
    default's settings; with another model it stands alone."""
    same_model = (spec or {}).get("model", default["model"]) == default["model"]
    return _check_loss(src, path, _deep_merge(default, spec or {}) if same_model else spec, errs)


def _check_semantics(src: str, cfg: dict[str, Any], errs: Errors) -> None:
    """Cross-field checks: nodes exist, addresses valid and unique, routes reach, flows sensible.
    Every error found is appended to ``errs``."""
    n_errs = len(errs)
    nodes_ok = check_nodes_links(src, cfg, ExperimentError, errs)
    nodes = cfg["topology"]["nodes"] or []
    topology_ok = nodes_ok and len(errs) == n_errs
    cfg["loss"]["default"] = _check_loss(src, "loss.default", cfg["loss"]["default"], errs)
    node_losses = {}    # a new mapping: loss.nodes is the YAML's own dict, which each variant's check reads again
    for n, spec in cfg["loss"]["nodes"].items():
        if nodes_ok and n not in nodes:
            errs.append(ExperimentError(src, f"loss.nodes.{n}", f"unknown node; expected one of {', '.join(nodes)}"))
            continue
        node_losses[n] = _check_override_loss(src, f"loss.nodes.{n}", spec, cfg["loss"]["default"], errs)
    cfg["loss"]["nodes"] = node_losses
    cfg["loss"]["links"] = _check_link_losses(src, cfg, nodes if nodes_ok else [], errs)
    if not cfg["flows"]:
        errs.append(ExperimentError(src, "flows", "expected at least one flow"))
    flows = []
    for i, fl in enumerate(cfg["flows"]):
        f = fill(src, f"flows[{i}]", FLOW_SPEC, fl, ExperimentError, errs)
        for role in ("sender", "receiver"):
            if nodes_ok and f[role] not in nodes:
                errs.append(ExperimentError(src, f"flows[{i}].{role}",
                                            f"unknown node {f[role]!r}; expected one of {', '.join(nodes)}"))
        if f["sender"] == f["receiver"]:
            errs.append(ExperimentError(src, f"flows[{i}]", "sender and receiver are the same node"))
        flows.append(f)
    cfg["flows"] = flows
    if cfg["tcp"]["min_rto_s"] > cfg["tcp"]["max_rto_s"]:
        errs.append(ExperimentError(src, "tcp.min_rto_s", "must not exceed tcp.max_rto_s"))
    _check_routing(src, cfg, errs)
    check_mahimahi(src, cfg, ExperimentError, errs)
    _check_scheme(src, cfg["snoop"], errs)
    from_radio = cfg["topology"]["links"] is None    # check_medium fills them from the radio
    if nodes_ok:
        n_errs = len(errs)
        check_medium(src, cfg, ExperimentError, errs)   # fills topology.links from positions when not listed
        topology_ok = topology_ok and len(errs) == n_errs
    errs.extend(ExperimentError(src, path, why) for path, why in radio_problems(cfg))
    if topology_ok and all(isinstance(f.get(r), str) and f[r] in nodes for f in flows for r in ("sender", "receiver")):
        # connected, flows joined, routes sound; links the radio gave are named by the field that placed the nodes
        check_graph(src, cfg, ExperimentError, errs, radio_links_origin(cfg) if from_radio else None)


def _check_routing(src: str, cfg: dict[str, Any], errs: Errors) -> None:
    """Timers of link-state routing that cannot work together (routing.topology.linkstate)."""
    r, etx = cfg["routing"], cfg["etx"]
    if not r["hold_s"] > r["advertise_s"]:
        errs.append(ExperimentError(src, "routing.hold_s", f"must exceed routing.advertise_s ({r['advertise_s']}): "
                                    "an advertisement would be forgotten before its next copy comes"))
    if (r["metric"] == "etx" or r["dynamic"]) and cfg["topology"].get("routes"):
        errs.append(ExperimentError(src, "topology.routes", "route overrides cannot be mixed with link-state routing "
                                    "(routing.metric etx or routing.dynamic): a pinned next hop is not in the "
                                    "flooded link state the other nodes route by, so their routes can loop "
                                    "back through it when a link fails"))
    if r["metric"] == "etx" and not r["dynamic"] and etx["settle_s"] < 2 * r["advertise_s"]:
        errs.append(ExperimentError(src, "etx.settle_s", f"static ETX routes are computed when settling ends, from "
                                    f"the link state flooded until then: settle for at least two advertisements "
                                    f"(2 x routing.advertise_s = {2 * r['advertise_s']} s), got {etx['settle_s']}"))
    if cfg["pi"]["bitrate_mbps"] is not None and cfg["pi"]["mcs"] is not None:
        errs.append(ExperimentError(src, "pi.mcs", "give a fixed legacy bitrate (pi.bitrate_mbps) or an HT MCS, "
                                    "not both: iw sets one bitrate mask"))
    if r["daemon"] == "babeld":
        _check_babeld(src, cfg, errs)
    if not r["dead_s"] > max(etx["interval_s"], etx["warmup_interval_s"]):
        errs.append(ExperimentError(src, "routing.dead_s", f"must exceed the probe interval etx.interval_s "
                                    f"({etx['interval_s']}): every link would look down between two probes"))


def _check_babeld(src: str, cfg: dict[str, Any], errs: Errors) -> None:
    """What babeld can stand in for (experiments/backends/netns/babel.py): dynamic routes by a link cost
    measured from the Hellos (RFC 8966 A.2.2, ETX-like), and losses that reach its IPv6 packets too."""
    r = cfg["routing"]
    if not (r["dynamic"] and r["metric"] == "etx"):
        errs.append(ExperimentError(src, "routing.daemon", "babeld routes dynamically by its own ETX-like link cost "
                                    "(RFC 8966, appendix A.2.2): set routing.metric: etx and routing.dynamic: true"))
    specs = [("loss.default", cfg["loss"]["default"])] + [(f"loss.nodes.{n}", s) for n, s in cfg["loss"]["nodes"].items()]
    for path, spec in specs:
        if isinstance(spec, dict) and spec.get("model", "none") not in BABEL_LOSS_MODELS:
            errs.append(ExperimentError(src, f"{path}.model", f"with routing.daemon babeld only "
                                        f"{' and '.join(BABEL_LOSS_MODELS)} (with down intervals) can be applied to "
                                        f"Babel's own packets (IPv6, dropped by ip6tables); {spec.get('model')!r} "
                                        "would reach the data and the ETX probes but not babeld's Hellos"))
    if cfg["loss"]["links"]:
        errs.append(ExperimentError(src, "loss.links", "with routing.daemon babeld a node's loss is applied to "
                                    "everything it hears (loss.default, loss.nodes); a loss per link is not"))


def _check_link_losses(src: str, cfg: dict[str, Any], nodes: list[str], errs: Errors) -> dict[str, Any]:
    """``loss.links`` resolved into directed keys ``"A>B"``: an undirected ``"A-B"`` gives both directions,
    a directed key wins over it; each spec filled like a node's (the default's settings when its model
    is the default's).  Whether each pair is a link of the graph is checked once the links are known."""
    out: dict[str, Any] = {}
    directed: dict[str, Any] = {}
    for key, spec in cfg["loss"]["links"].items():
        path = f"loss.links.{key}"
        ends = _link_key(str(key), nodes)
        if ends is None:
            errs.append(ExperimentError(src, path, f"expected \"A-B\" or \"A>B\" with A and B nodes "
                                        f"({', '.join(nodes)}), got {key!r}"))
            continue
        a, b, one_way = ends
        if _replays_own_link(spec, cfg["loss"]["default"]):
            # a trace without `link` under loss.links: each direction replays its own recording (issue 25)
            for u, v in ((a, b),) if one_way else ((a, b), (b, a)):
                (directed if one_way else out)[f"{u}>{v}"] = _check_override_loss(
                    src, path, dict(spec, link=f"{u}>{v}"), cfg["loss"]["default"], errs)
            continue
        full = _check_override_loss(src, path, spec, cfg["loss"]["default"], errs)
        if one_way:
            directed[f"{a}>{b}"] = full
        else:
            out[f"{a}>{b}"] = out[f"{b}>{a}"] = full
    out.update(directed)
    return out


def _replays_own_link(spec: Any, default: dict[str, Any]) -> bool:
    """A ``loss.links`` spec of model ``trace`` that names no recorded link, nor inherits one from the default."""
    if not isinstance(spec, dict) or "link" in spec or spec.get("model", default.get("model")) != "trace":
        return False
    return default.get("model") != "trace" or "link" not in default


def _link_key(key: str, nodes: list[str]) -> tuple[str, str, bool] | None:
    """(A, B, one way) of a ``loss.links`` key; None unless it names two distinct nodes exactly one way
    (node names may hold '-', so every split is tried)."""
    if ">" in key:
        a, _, b = key.partition(">")
        return (a, b, True) if a in nodes and b in nodes and a != b else None
    splits = [(key[:i], key[i + 1:]) for i, c in enumerate(key) if c == "-"]
    found = [(a, b) for a, b in splits if a in nodes and b in nodes and a != b]
    return (found[0][0], found[0][1], False) if len(found) == 1 else None


def _check_scheme(src: str, snoop: dict[str, Any], errs: Errors) -> None:
    """Where each snoop scheme caches: multihop on every forwarding node (paper 000), the
    others where snoop.policy says, so they need a policy that caches somewhere.  Each
    scheme's entry in aspan.schemes.SCHEMES says which policies it runs with."""
    name, policy = snoop["scheme"], snoop["policy"]
    scheme = SCHEMES[name]
    if policy not in scheme.policies:
        errs.append(ExperimentError(src, "snoop.policy", f"scheme {name!r} {scheme.policy_note}; expected policy "
                                    f"{' or '.join(scheme.policies)}, got {policy!r}"))
    if snoop["sender_qos"] == "adaptive" and policy not in ("adaptive", "perfect"):
        errs.append(ExperimentError(src, "snoop.sender_qos", "an adaptive pkt_qos changes only where the A-SPAN "
                                    "caching rule reads it (snoop.policy adaptive or perfect); with policy "
                                    f"{policy!r} every setting would behave the same"))


@dataclass(frozen=True)
class Variant:
    """One fully resolved configuration to run ``repetitions`` times (typed: experiments/config.py)."""

    name: str
    config: ExperimentConfig
    sweep_value: Any = None


@dataclass(frozen=True)
class Experiment:
    """A loaded experiment file: its top-level settings (``base``, typed as every variant is) and the
    variants its ``variants`` and ``sweep`` expand to.  Frozen: a command-line override makes a new one
    (:meth:`with_repetitions`, :meth:`with_variants`)."""

    source: str
    name: str
    base: ExperimentConfig
    variants: tuple[Variant, ...]
    sweep: dict[str, Any] | None = None

    def with_repetitions(self, repetitions: int) -> Experiment:
        """The same experiment run ``repetitions`` times (``--repetitions``), in its base and in every variant."""
        return replace(self, base=replace(self.base, repetitions=repetitions),
                       variants=tuple(replace(v, config=replace(v.config, repetitions=repetitions))
                                      for v in self.variants))

    def with_variants(self, variants: Sequence[Variant]) -> Experiment:
        """The same experiment with only ``variants`` (``--variants``)."""
        return replace(self, variants=tuple(variants))

    def resolved(self) -> dict[str, Any]:
        """The experiment as run: the base, the sweep, and every variant's full configuration."""
        out: dict[str, Any] = {"name": self.name, "source": self.source, "base": self.base.to_dict()}
        if self.sweep:
            out["sweep"] = dict(self.sweep)
        out["variants"] = [{"name": v.name, "sweep_value": v.sweep_value, "config": v.config.to_dict()}
                           for v in self.variants]
        return out


def _get_path(cfg: dict[str, Any], dotted: str) -> Any:
    if dotted.startswith("loss.default."):  # the loss spec is validated as a whole, by model
        return loss_spec().get(dotted[len("loss.default."):])
    node: Any = SCHEMA
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _set_path(cfg: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    parts = dotted.split(".")
    over: dict[str, Any] = {}
    cur = over
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
    return over


def load_experiment(data: dict[str, Any] | None, source: str = "experiment.yaml") -> Experiment:
    """Validate a parsed YAML document and expand variants and sweep.

    Every error of the document is reported at once: one ExperimentError per wrong field
    (``.errors``; the first is the error itself), each naming the file and the field path.
    An error of the top-level settings is named once, at its top-level path, not again per
    variant; an error of a variant's own settings is named ``variants[<name>].<path>``.
    """
    if not isinstance(data, dict):
        raise ExperimentError(source, "", "expected a YAML mapping at the top level")
    errs: Errors = []
    base = fill(source, "", SCHEMA, data, ExperimentError, errs)
    name = base["name"] or Path(source).stem
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        errs.append(ExperimentError(source, "name", f"expected letters, digits, '.', '_' or '-', got {name!r}"))
    base["name"] = name
    raw_variants = base.pop("variants")
    sweep = base.pop("sweep")
    _check_semantics(source, base, errs)
    seen = {(e.path, e.message) for e in errs}
    bare = {k: v for k, v in data.items() if k not in ("variants", "sweep")}
    specs = _variant_specs(source, raw_variants, errs)
    expanded = _expand_sweep(source, sweep, specs, bool(raw_variants), errs)
    resolved: list[tuple[str, dict[str, Any], Any]] = []
    for vname, over, sval in expanded:
        where = f"variants[{vname}]"
        found: Errors = []
        cfg = fill(source, "", SCHEMA, _deep_merge(bare, over), ExperimentError, found)
        fill_errors = len(found)
        cfg.pop("variants")
        cfg.pop("sweep")
        cfg["name"] = name
        _check_semantics(source, cfg, found)
        for i, e in enumerate(found):
            if (e.path, e.message) in seen:
                continue     # the top-level setting's error, named once above
            prefixed = i < fill_errors or raw_variants or sweep
            errs.append(ExperimentError(source, f"{where}.{e.path}" if prefixed else e.path, e.message))
        resolved.append((vname, cfg, sval))
    names = [vname for vname, _cfg, _sval in resolved]
    if base["baseline"] and resolved and base["baseline"] not in names:
        errs.append(ExperimentError(source, "baseline", f"names no variant: {base['baseline']!r} is not one of "
                                    + ", ".join(names)))
    raise_all(errs)
    variants = tuple(Variant(vname, ExperimentConfig.from_dict(cfg, "", source), sval) for vname, cfg, sval in resolved)
    return Experiment(source, name, ExperimentConfig.from_dict(base, "", source), variants, sweep or None)


def _variant_specs(source: str, raw_variants: list[Any], errs: Errors) -> list[tuple[str, dict[str, Any]]]:
    """(name, overrides) of each well-formed variant; the errors of the others go to ``errs``."""
    specs: list[tuple[str, dict[str, Any]]] = []
    for i, v in enumerate(raw_variants or [{"name": "default"}]):
        if not isinstance(v, dict) or not isinstance(v.get("name"), str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", v["name"]):
            errs.append(ExperimentError(source, f"variants[{i}].name", "expected a name of letters, digits, '.', '_' or '-'"))
            continue
        over = {k: val for k, val in v.items() if k != "name"}
        fixed = [k for k in over if k in ("variants", "sweep", "name", "repetitions", "seed", "out", "backend",
                                          "baseline")]
        for key in fixed:
            errs.append(ExperimentError(source, f"variants[{i}].{key}", "cannot be set per variant"))
        if not fixed:
            specs.append((v["name"], over))
    if len({n for n, _ in specs}) != len(specs):
        errs.append(ExperimentError(source, "variants", "variant names repeat"))
    return specs


Expanded = list[tuple[str, dict[str, Any], Any]]
NAME = re.compile(r"[A-Za-z0-9_.-]+")


def _expand_sweep(source: str, sweep: dict[str, Any], specs: list[tuple[str, dict[str, Any]]], named: bool,
                  errs: Errors) -> Expanded:
    """(variant name, overrides, sweep value) of every variant, the sweep expanded; none if it is wrong.

    ``{field, values}`` sweeps one field: the variants are named ``<variant>-<value>``, or
    ``<last part of the field>-<value>`` without named variants, and the sweep value is the value.
    ``{factors, only}`` sweeps several (a factorial design): every combination of the factors' values, in
    the factors' order, the last factor changing fastest, or only the combinations ``only`` lists; the
    names join the values (``<variant>-<v1>-<v2>``, or ``<f1>-<v1>-<f2>-<v2>``) and the sweep value is
    ``{field: value}``.  One factor is the one-field sweep, named and valued as such."""
    if not sweep:
        return [(n, o, None) for n, o in specs]
    n_errs = len(errs)
    factorial = "factors" in sweep
    known = ["factors", "only"] if factorial else ["field", "values"]
    for key in sweep:
        if key not in known:
            errs.append(_unknown(source, "sweep", key, known))
    factors = _sweep_factors(source, sweep, errs) if factorial else _one_field(source, sweep, errs)
    if len(errs) > n_errs:
        return []
    combos = _combinations(source, factors, sweep.get("only"), errs)
    if len(errs) > n_errs:
        return []
    fields = list(factors)
    out: Expanded = []
    for vname, over in specs:
        for combo in combos:
            words = [str(v) for v in combo] if named else [w for f, v in zip(fields, combo)
                                                           for w in (f.split(".")[-1], str(v))]
            name = "-".join([vname, *words] if named else words)
            if not NAME.fullmatch(name):
                errs.append(ExperimentError(source, "sweep", f"the variant name {name!r} its values make is not "
                                            "letters, digits, '.', '_' or '-'"))
                return []
            merged = over
            for f, v in zip(fields, combo):
                merged = _deep_merge(merged, _set_path({}, f, v))
            out.append((name, merged, combo[0] if len(fields) == 1 else dict(zip(fields, combo))))
    names = [n for n, _, _ in out]
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        errs.append(ExperimentError(source, "sweep", f"variant names repeat: {', '.join(repeated)} (two factors "
                                    "with the same last part and values, or a variant named like a sweep's)"))
        return []
    return out


def _scalar_field(source: str, path: str, field: Any, errs: Errors) -> bool:
    if isinstance(field, str) and isinstance(_get_path(SCHEMA, field), F) and field not in ("sweep", "variants"):
        return True
    errs.append(ExperimentError(source, path,
                                f"expected the dotted path of a scalar field (e.g. snoop.pkt_qos), got {field!r}"))
    return False


def _one_field(source: str, sweep: dict[str, Any], errs: Errors) -> dict[str, list[Any]]:
    """``{field: values}`` of a ``{field, values}`` sweep ({} with its errors in ``errs``)."""
    field, values = sweep.get("field"), sweep.get("values")
    ok = _scalar_field(source, "sweep.field", field, errs)
    if not isinstance(values, list) or not values:
        errs.append(ExperimentError(source, "sweep.values", "expected a non-empty list"))
        ok = False
    return {field: values} if ok else {}


def _sweep_factors(source: str, sweep: dict[str, Any], errs: Errors) -> dict[str, list[Any]]:
    """``sweep.factors``: a mapping of at least one scalar field to a non-empty list of distinct values."""
    factors = sweep["factors"]
    if not isinstance(factors, dict) or not factors:
        errs.append(ExperimentError(source, "sweep.factors", "expected a mapping {dotted.path: [values], ...} "
                                    "with at least one field"))
        return {}
    for field, values in factors.items():
        if not _scalar_field(source, f"sweep.factors.{field}", field, errs):
            continue
        if not isinstance(values, list) or not values:
            errs.append(ExperimentError(source, f"sweep.factors.{field}", "expected a non-empty list of values"))
        elif len({repr(v) for v in values}) != len(values):
            errs.append(ExperimentError(source, f"sweep.factors.{field}", f"values repeat: {values!r}"))
    return factors


def _combinations(source: str, factors: dict[str, list[Any]], only: Any, errs: Errors) -> list[tuple[Any, ...]]:
    """Every combination of the factors' values, or those ``only`` lists (each gives every factor one of
    its values); errors into ``errs``."""
    if only is None:
        return list(itertools.product(*factors.values()))
    if not isinstance(only, list) or not only:
        errs.append(ExperimentError(source, "sweep.only", "expected a non-empty list of combinations "
                                    "{dotted.path: value, ...}"))
        return []
    out: list[tuple[Any, ...]] = []
    for i, combo in enumerate(only):
        where = f"sweep.only[{i}]"
        if not isinstance(combo, dict) or set(combo) != set(factors):
            errs.append(ExperimentError(source, where, f"expected a value for each factor ({', '.join(factors)}) "
                                        f"and nothing else, got {combo!r}"))
            continue
        for field, values in factors.items():
            if not any(type(combo[field]) is type(v) and combo[field] == v for v in values):
                errs.append(ExperimentError(source, f"{where}.{field}", f"{combo[field]!r} is not one of the "
                                            f"factor's values {values!r}"))
        values_of = tuple(combo[f] for f in factors)
        if values_of in out:
            errs.append(ExperimentError(source, where, f"combination repeats: {combo!r}"))
        out.append(values_of)
    return out


def set_fields(data: Any, items: Sequence[str], source: str) -> tuple[dict[str, Any], list[str]]:
    """The document ``data`` with each ``PATH=VALUE`` of ``items`` (``aspan run --set tcp.rack=true``) written
    at its top level, the value read as YAML, as if the file said it there: a variant that sets the same field
    keeps its own value.  Returns the new document (``data`` is not changed) and one note per variant that
    does so.  :class:`ExperimentError` (source ``--set``) for an item that is not ``PATH=VALUE`` or that
    names ``variants``, ``sweep`` or a path through a value that is not a mapping; the field itself is
    checked by the schema as any field of the file."""
    doc = copy.deepcopy(data) if isinstance(data, dict) else {}
    notes: list[str] = []
    for item in items:
        path, sep, text = item.partition("=")
        keys = path.split(".")
        if not sep or not all(keys):
            raise ExperimentError("--set", item, "expected PATH=VALUE, e.g. tcp.rack=true")
        if keys[0] in ("variants", "sweep"):
            raise ExperimentError("--set", path, "sets the top level only; variants and sweep are the file's")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ExperimentError("--set", path, f"value {text!r} is not valid YAML: {e}") from None
        node = doc
        for i, k in enumerate(keys[:-1]):
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ExperimentError(source, ".".join(keys[:i + 1]), f"is not a mapping, so --set {path} cannot "
                                      "go inside it")
        node[keys[-1]] = value
        for v in (doc.get("variants") or []):
            over: Any = v
            for k in keys:
                over = over.get(k, _UNSET) if isinstance(over, dict) else _UNSET
            if over is not _UNSET:
                notes.append(f"--set {path}: variant {v.get('name')} sets it itself and keeps {over!r}")
    return doc, notes


_UNSET = object()


def load_file(path: str | Path, sets: Sequence[str] = (), notes: list[str] | None = None) -> Experiment:
    """Read and validate an experiment YAML file, with ``sets`` (:func:`set_fields`) applied first; the notes
    of the sets go to ``notes``."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ExperimentError(str(p), "", f"cannot read: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ExperimentError(str(p), "", f"not valid YAML: {e}") from None
    if sets:
        data, said = set_fields(data, sets, str(p))
        if notes is not None:
            notes.extend(said)
    return load_experiment(data, str(p))
