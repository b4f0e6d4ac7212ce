"""Turn one resolved variant configuration into node cores (shared by every backend)."""
from __future__ import annotations

import json
import math
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any

from aspan.agent import SnoopAgent
from aspan.events import Emit, EventSink, as_sink
from aspan.adaptive import AdaptiveQosConfig, QosLearner
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.schemes import make_agent
from etx.estimator import EtxTable
from experiments.config import ExperimentConfig
from experiments.medium_spec import positions
from experiments.radio_loss import is_radio, node_side
from experiments.records import write_whole
from routing.drivers.capture import OverlayTap
from fieldspec import ConfigError
from routing.overlay.engine import ForwardingEngine
from routing.forwarding.flowlog import FlowLog
from routing.links.loss import absolute_times, build_loss_model, node_rng
from routing.overlay.node import NodeCore, ProbeSettings, Routing
from routing.topology.graph import LinkCost, path_of
from routing.topology.linkstate import LinkStateRouter, LinkStateSettings
from routing.kernel.ip_option import MAX_NIBBLE
from routing.topology.routes import RouteTable, graph_of, route_summary, topology_routes
from tcp_user.bulk import BulkReceiver, BulkSender
from tcp_user.config import TcpConfig

SENDER_PORT = 5000
RECEIVER_PORT = 6000


@dataclass
class FlowPlan:
    index: int
    sender: str
    receiver: str
    segments: int
    segment_size: int
    start: float          # absolute, on the backend's clock
    sport: int
    dport: int
    data_seed: int
    variant: str

    def name(self, addrs: Mapping[str, str]) -> str:
        return f"{addrs[self.sender]}:{self.sport}>{addrs[self.receiver]}:{self.dport}"


def route_tables(cfg: ExperimentConfig, link_cost: LinkCost | None = None) -> dict[str, RouteTable]:
    """Per node name: its route table over the topology's graph (hop count, or ``link_cost`` per directed
    link for the etx metric), the YAML's overrides on top."""
    return topology_routes(cfg.topology, link_cost)


def kernel_data_plane(cfg: ExperimentConfig, backend: str) -> bool:
    """Does ``backend`` forward this variant's packets by kernel routes (netns; pi with pi.data_plane kernel)?"""
    return backend == "netns" or (backend == "pi" and cfg.pi.data_plane == "kernel")


#: The most hops a flow's route may have on the kernel data plane (netns; pi with ``pi.data_plane: kernel``):
#: every data segment carries its hop count in the A-SPAN IPv4 option's 4-bit ``hops`` field
#: (routing.kernel.ip_option; 1 leaving the sender, h arriving after h hops), which saturates at 15.
MAX_KERNEL_HOPS = MAX_NIBBLE


def route_hop_problems(cfg: ExperimentConfig) -> list[tuple[str, str]]:
    """(field path, reason) for every flow whose route is longer than the option's ``hops`` field can count.

    Only the flows' routes matter: the option is stamped on data segments, which follow the route from
    their sender to their receiver; routes no flow takes carry no option, whatever their length.
    """
    topo = cfg.topology
    hops = route_summary(topo, route_tables(cfg))
    problems = []
    for i, f in enumerate(cfg.flows):
        path = path_of(hops, f.sender, f.receiver)
        if path is not None and len(path) - 1 > MAX_KERNEL_HOPS:
            problems.append((f"flows[{i}]", f"the route {' -> '.join(path)} has {len(path) - 1} hops; the kernel "
                             "data plane carries the hop count in the A-SPAN IPv4 option's 4-bit hops field "
                             f"(routing/kernel/ip_option.py), so a flow's route may have at most {MAX_KERNEL_HOPS} hops"))
    return problems


def refuse_route_hops(source: str, variants: Sequence[tuple[str, Mapping[str, Any]]], backend: str,
                      error: type[ConfigError]) -> None:
    """Raise ``error`` naming the first variant and flow whose route the kernel data plane cannot count
    (:func:`route_hop_problems`): on netns, and on pi with ``pi.data_plane: kernel``.  A variant's config
    may be given as its mapping (ExperimentConfig.of)."""
    for name, given in variants:
        cfg = ExperimentConfig.of(given)
        if kernel_data_plane(cfg, backend):
            for path, why in route_hop_problems(cfg)[:1]:
                raise error(source, f"variants[{name}].{path}", f"cannot run on backend {backend}: {why}")


#: The user-space TCP's fields that kernel TCP (netns; pi with ``pi.data_plane: kernel``) sets by its own
#: rules, and what Linux does instead.  A variant that sets one away from its default asks for something the
#: kernel will not do, so it is refused (:func:`refuse_user_tcp`); at the defaults Linux's own rules apply
#: (docs/NETNS.md).  ``tcp.variant`` is not here: the kernel plans ``sack`` as net.ipv4.tcp_sack.
KERNEL_TCP_OWN: dict[str, str] = {
    "init_cwnd": "Linux starts with 10 segments (RFC 6928)",
    "rcv_buffer_segments": "Linux sizes its receive buffer itself (net.ipv4.tcp_rmem, autotuning)",
    "min_rto_s": "Linux's minimum RTO is 200 ms",
    "initial_rto_s": "Linux's initial RTO is 1 s (RFC 6298)",
    "max_rto_s": "Linux caps the RTO at 120 s",
    "snack": "kernel TCP has no SNACK option; run SNACK with --backend sim or local",
    "delayed_ack": "Linux delays its ACKs by its own rules (quick ACKs at the start, at most 200 ms)",
    "delack_s": "Linux's delayed-ACK timer is its own (40 to 200 ms)",
    "limited_transmit": "Linux always sends on the first two duplicate ACKs (RFC 3042)",
    "rack": "Linux runs RACK-TLP by its own net.ipv4.tcp_recovery (on by default)",
    "timestamps": "Linux uses RFC 7323 timestamps by its own net.ipv4.tcp_timestamps (on by default)",
    "newreno": "Linux's recovery without SACK is NewReno's (RFC 6582) by its own rules (with PRR, RFC 6937)",
    "frto": "Linux runs F-RTO by its own net.ipv4.tcp_frto (on by default)",
}


def refuse_user_tcp(source: str, variants: Sequence[tuple[str, ExperimentConfig]], backend: str,
                    error: type[ConfigError], defaults: Mapping[str, Any]) -> None:
    """Raise ``error`` naming the first variant that sets a :data:`KERNEL_TCP_OWN` field away from its
    default (``defaults``: the schema's tcp defaults) where the kernel's TCP carries the flows."""
    for name, cfg in variants:
        if not kernel_data_plane(cfg, backend):
            continue
        for key, why in KERNEL_TCP_OWN.items():
            value = getattr(cfg.tcp, key)
            if value != defaults[key]:
                raise error(source, f"variants[{name}].tcp.{key}", f"{value!r} is a setting of the user-space "
                            f"TCP; on backend {backend} kernel TCP carries the flows: {why}")


def link_state(cfg: ExperimentConfig) -> bool:
    """Do the nodes route by flooded link state (routing.topology.linkstate)?  With the etx metric (static: the
    routes fixed when settling ends) and with ``routing.dynamic``; hop-count static routes need none.
    Not when ``routing.daemon`` hands the routes to babeld (:func:`babeld_routes`)."""
    return (cfg.routing.metric == "etx" or cfg.routing.dynamic) and not babeld_routes(cfg)


def babeld_routes(cfg: ExperimentConfig) -> bool:
    """Does babeld compute and install the routes (``routing.daemon: babeld``; netns only)?"""
    return cfg.routing.daemon == "babeld"


def measured_routes(cfg: ExperimentConfig) -> bool:
    """Do the nodes find their routes while the run goes (our link state, or babeld), so that the routes
    they ended with come from their logs' ``route`` events (:func:`logged_routes`)?"""
    return link_state(cfg) or babeld_routes(cfg)


#: Why babeld runs on the netns backend only.
BABELD_REFUSED = {
    "sim": "babeld is a real daemon in real time; the sim's nodes live in virtual time",
    "local": "the local backend's nodes share the root namespace's loopback: babeld would install its routes "
             "into the machine's own kernel table, and the overlay does not forward by kernel routes",
    "pi": "babeld on the Pis is not deployed by aspan deploy yet; run it with --backend netns",
}


def refuse_routing_daemon(source: str, variants: Sequence[tuple[str, ExperimentConfig]], backend: str,
                          error: type[ConfigError]) -> None:
    """Raise ``error`` naming the first variant with ``routing.daemon: babeld`` on a backend other than netns."""
    for name, cfg in variants:
        if babeld_routes(cfg) and backend in BABELD_REFUSED:
            raise error(source, f"variants[{name}].routing.daemon", f"cannot run on backend {backend}: "
                        f"{BABELD_REFUSED[backend]}")


def link_state_settings(cfg: ExperimentConfig) -> LinkStateSettings:
    r = cfg.routing
    return LinkStateSettings(advertise_s=r.advertise_s, hold_s=r.hold_s, dead_s=r.dead_s,
                             margin=r.margin, switch_after_s=r.switch_after_s)


def node_router(cfg: ExperimentConfig, name: str, etx: EtxTable, table: RouteTable) -> LinkStateRouter | None:
    """Node ``name``'s link-state router over its ETX table (None without link-state routing): link cost
    ETX (``routing.metric: etx``) or 1 per live link (``hops``); ``table``: the routes it starts with (the
    schema refuses route overrides with link-state routing)."""
    if not link_state(cfg):
        return None
    topo = cfg.topology
    addrs = topo.addresses
    graph = graph_of(topo)
    if cfg.routing.metric == "etx":
        def cost(nbr: str, now: float) -> float:
            return etx.link(nbr).etx()
    else:
        def cost(nbr: str, now: float) -> float:
            return 1.0
    return LinkStateRouter(addrs[name], [addrs[m] for m in graph.neighbours(name)], addrs.values(),
                           link_state_settings(cfg), cost, lambda nbr: etx.link(nbr).last_heard,
                           initial=table.as_dict())


def node_routing(cfg: ExperimentConfig, name: str, etx: EtxTable, table: RouteTable, t0: float) -> Routing | None:
    """What drives node ``name``'s router on the overlay (routing.overlay.node.Routing): static routes by ETX are
    computed once when settling ends (``t0 + etx.settle_s``); dynamic routes from halfway through settling
    (at least two advertisement intervals after probing starts), and then whenever the link state changes."""
    router = node_router(cfg, name, etx, table)
    if router is None:
        return None
    t_flows = t0 + cfg.etx.flow_start_s
    first = t0 + max(2 * cfg.routing.advertise_s, cfg.etx.settle_s / 2)
    return Routing(router, first, None if cfg.routing.dynamic else t_flows)


def link_state_record(cfg: ExperimentConfig, tables: dict[str, RouteTable],
                      routers: dict[str, LinkStateRouter]) -> dict[str, Any]:
    """meta.json's ``routing`` after a run with link-state routing: the routes the nodes ended with
    (``tables``, per node name) and the link costs each node last advertised (its own LSA), ``"A>B"``:
    the cost of sending from A to B; a link a node did not advertise (down, or never heard) is null."""
    topo = cfg.topology
    addrs = topo.addresses
    name_of = {a: n for n, a in addrs.items()}
    costs: dict[str, float] = {f"{u}>{v}": math.inf for a, b in topo.links for u, v in ((a, b), (b, a))}
    for n, router in routers.items():
        own = router.database().get(addrs[n])
        for v, c in (own.links if own is not None else ()):
            costs[f"{n}>{name_of[v]}"] = c
    rec = route_record(cfg, tables, measured=True, costs=costs)
    rec["link_state"] = True
    rec["route_changes"] = {n: r.stats["route_changes"] for n, r in routers.items()}
    return rec


def medium_positions(cfg: ExperimentConfig) -> dict[str, list[float]] | None:
    """The dcf medium's node positions for meta.json (plots draws the mesh there), None without them."""
    if cfg.medium.model == "none":
        return None
    pos = positions(cfg)
    return None if pos is None else {n: [round(float(x), 3), round(float(y), 3)] for n, (x, y) in pos.items()}


def route_record(cfg: ExperimentConfig, tables: dict[str, RouteTable], measured: bool = False,
                 costs: dict[str, float] | None = None) -> dict[str, Any]:
    """What meta.json and routes.json say of the routes: the metric, the links, every node's next hop per
    destination (names), each flow's path, and with the etx metric the link costs they came from
    (``"A>B"``: ETX of sending from A to B)."""
    topo = cfg.topology
    hops = route_summary(topo, tables)
    rec: dict[str, Any] = {"metric": cfg.routing.metric, "dynamic": cfg.routing.dynamic,
                           "measured": measured,
                           "links": [list(p) for p in topo.links], "routes": hops,
                           "paths": [path_of(hops, f.sender, f.receiver) for f in cfg.flows]}
    if costs is not None:
        rec["link_etx"] = {k: (round(v, 4) if math.isfinite(v) else None) for k, v in costs.items()}
    return rec


def flow_plans(cfg: ExperimentConfig, seed: int, t_flows: float) -> list[FlowPlan]:
    return [FlowPlan(i, f.sender, f.receiver, f.segments, f.segment_size,
                     t_flows + f.start_s, SENDER_PORT + i, RECEIVER_PORT + i, seed * 1000 + i,
                     f.variant or cfg.tcp.variant)
            for i, f in enumerate(cfg.flows)]


def configured_flows(cfg: ExperimentConfig) -> list[str]:
    """The data direction ``src:sport>dst:dport`` of every flow of the experiment: the traffic that explains
    a node's per-packet log lines (routing.forwarding.flowlog.FlowLog.explains)."""
    addrs = cfg.topology.addresses
    return [fp.name(addrs) for fp in flow_plans(cfg, 0, 0.0)]


def node_sink(cfg: ExperimentConfig, log: EventSink | Emit | None) -> FlowLog:
    """A node's event sink: ``log``, with the lines of traffic no configured flow explains aggregated
    (routing.forwarding.flowlog; docs/LOGS.md, "Traffic no configured flow explains")."""
    return FlowLog(as_sink(log), configured_flows(cfg))


def tcp_config(cfg: ExperimentConfig, mss: int, variant: str | None = None) -> TcpConfig:
    t = cfg.tcp
    return TcpConfig(variant=variant or t.variant, mss=mss, init_cwnd=t.init_cwnd,
                     rcv_buffer=t.rcv_buffer_segments * mss, min_rto=t.min_rto_s,
                     max_rto=t.max_rto_s, initial_rto=t.initial_rto_s,
                     snack=t.snack, delayed_ack=t.delayed_ack, delack_s=t.delack_s,
                     limited_transmit=t.limited_transmit, rack=t.rack, timestamps=t.timestamps,
                     newreno=t.newreno, frto=t.frto)


def scheme_config(cfg: ExperimentConfig) -> SchemeConfig:
    """The snoop scheme of a resolved configuration (A-SPAN when the keys are absent)."""
    s = cfg.snoop
    defaults = SchemeConfig()
    return SchemeConfig(scheme=s.scheme, snoop_tick=s.snoop_tick_s, max_local_rxmit=s.max_local_rxmit,
                        max_cached_segments=s.max_cached_segments)


def header_fields(cfg: ExperimentConfig) -> AspanFields:
    s = cfg.snoop
    return AspanFields.stamped(s.pkt_qos, s.snoop_after, s.snoop_limit)


def adaptive_qos(cfg: ExperimentConfig) -> AdaptiveQosConfig | None:
    """The adaptive sender's settings (aspan.adaptive; issue 29), or None for a fixed pkt_qos."""
    s = cfg.snoop
    if s.sender_qos != "adaptive":
        return None
    return AdaptiveQosConfig(arms=tuple(float(a) for a in s.qos_arms), epoch_s=s.qos_epoch_s,
                             guard=s.qos_guard, margin=s.qos_margin, recheck_epochs=s.qos_recheck_epochs,
                             reprobe_epochs=s.qos_reprobe_epochs, start=s.pkt_qos)


def node_loss_spec(cfg: ExperimentConfig, name: str, t_flows: float) -> dict[str, Any]:
    """Node ``name``'s loss model spec, its times moved to absolute time (flows start at ``t_flows``); none when
    the spec is radio errors (``layer: radio``: the medium applies it, experiments/radio_loss.py)."""
    return absolute_times(node_side(cfg.loss.of_node(name)), t_flows)


def node_link_loss_specs(cfg: ExperimentConfig, name: str, t_flows: float) -> dict[str, dict[str, Any]]:
    """Previous-hop name -> the loss spec of the link it sends to ``name`` over, for the links that have
    their own (``loss.links``, resolved by the schema into directed ``"X>Y"`` keys), down intervals in
    absolute time; none for a link whose spec is radio errors (the medium applies it, and it still wins over
    the node's)."""
    out: dict[str, dict[str, Any]] = {}
    for key, spec in cfg.loss.links.items():
        frm, to = key.split(">")
        if to == name:
            out[frm] = absolute_times(node_side(spec), t_flows)
    return out


def refuse_link_loss(source: str, variants: Sequence[tuple[str, ExperimentConfig]], backend: str,
                     error: type[ConfigError]) -> None:
    """Raise ``error`` naming the first variant with ``loss.links`` on the kernel data plane (netns; pi with
    ``pi.data_plane: kernel``): a link's own loss model needs the previous hop of every packet a node hears,
    which the NFQUEUE handlers do not know (a ``layer: radio`` spec is the medium's, which knows the sender)."""
    for name, cfg in variants:
        kernel = backend == "netns" or (backend == "pi" and cfg.pi.data_plane == "kernel")
        if kernel and any(not is_radio(s) for s in cfg.loss.links.values()):
            raise error(source, f"variants[{name}].loss.links",
                        "the kernel data plane's handlers apply the node's loss model and do not know which "
                        "neighbour sent a packet, so a loss per link would be ignored; use loss.nodes, or "
                        "--backend sim or local")


def node_agent(cfg: ExperimentConfig, name: str, log: EventSink | Emit) -> SnoopAgent:
    """Node ``name``'s snoop agent: the scheme ``snoop.scheme`` with the experiment's snoop settings."""
    s = cfg.snoop
    return make_agent(name, SnoopConfig(policy=s.policy, fixed_hop=s.fixed_hop,
                                        dupack=s.dupack, cache_bytes=s.cache_bytes),
                      as_sink(log),  # type: ignore[arg-type]  # make_agent's annotation says Emit; agents take a sink
                      scheme_config(cfg))


def build_node(cfg: ExperimentConfig, name: str, seed: int, log: EventSink | Emit,
               t0: float, internal_probes: bool = True, apps: bool = True,
               routes: dict[str, RouteTable] | None = None) -> NodeCore:
    """The node core of ``name``: engine, snoop agent, ETX table, loss model and its TCP apps.

    ``t0`` is when probing starts on the backend's clock; flows start after
    ``etx.settle_s``.  Loss ``down`` intervals are relative to the flow start.
    With ``apps=False`` the node gets no bulk-transfer apps (for the socket API).
    ``log``: the node's event log (routing.drivers.eventlog.EventLog) or an ``emit`` function.
    ``routes``: every node's route table (:func:`route_tables`), when a backend building every node in one
    process computed them once (else this node's are computed here: all of them, for a large mesh a cost).
    """
    # with the bulk apps, the experiment's flows are all the node's own; without (the socket API) any
    # application may open flows, so every flow is the node's own
    sink = node_sink(cfg, log) if apps else as_sink(log)
    emit = sink.emit
    addrs = cfg.topology.addresses
    table = (routes or route_tables(cfg))[name]
    etx_cfg = cfg.etx
    t_flows = t0 + etx_cfg.flow_start_s
    loss = build_loss_model(node_loss_spec(cfg, name, t_flows), node_rng(seed, name, "loss"))
    etx = EtxTable(table.neighbours, window=etx_cfg.window, mode=etx_cfg.mode,
                   before_full=etx_cfg.before_full, initial=etx_cfg.initial)
    agent = node_agent(cfg, name, sink)
    # hop limit: more transmissions than there are nodes means a loop (issue 13, item 5)
    engine = ForwardingEngine(addrs[name], table, loss, agent, etx.quality, sink,
                              hop_limit=len(cfg.topology.nodes))
    link_specs = node_link_loss_specs(cfg, name, t_flows)
    if link_specs:
        engine.step.set_link_loss({addrs[frm]: build_loss_model(spec, node_rng(seed, f"{frm}>{name}", "loss"))
                                   for frm, spec in link_specs.items()})
    jrng = node_rng(seed, name, "jitter")
    probes = ProbeSettings(etx_cfg.interval_s, etx_cfg.warmup_interval_s, t_flows,
                           etx_cfg.log_interval_s, t0)
    node = NodeCore(name, addrs[name], engine, etx, list(table.neighbours), probes, emit,
                    jitter=lambda: jrng.uniform(-0.1, 0.1), internal_probes=internal_probes,
                    routing=node_routing(cfg, name, etx, table, t0))
    for fp in (flow_plans(cfg, seed, t_flows) if apps else []):
        tcfg = tcp_config(cfg, fp.segment_size, fp.variant)
        fname = fp.name(addrs)
        if fp.sender == name:
            iss = node_rng(seed, f"flow{fp.index}", "iss-sender").getrandbits(32)
            sender = BulkSender(tcfg, fname, fp.segments, fp.data_seed, iss, fp.start, emit)
            qos = adaptive_qos(cfg)
            node.bind(sender, fp.sport, addrs[fp.receiver], fp.dport, header_fields(cfg),
                      QosLearner(qos, fname, emit) if qos is not None else None)
        elif fp.receiver == name:
            iss = node_rng(seed, f"flow{fp.index}", "iss-receiver").getrandbits(32)
            receiver = BulkReceiver(tcfg, fname, fp.segments, fp.data_seed, iss, emit)
            node.bind(receiver, fp.dport, addrs[fp.sender], fp.sport, AspanFields())
    return node


#: ``auth.mac: auto`` per backend: on where strangers share the medium (the Pis' open IBSS cell), off on
#: loopback (only this machine reaches it; the MAC's cost would skew comparisons with earlier runs).
AUTH_AUTO = {"pi": True, "local": False}


def mac_on(cfg: ExperimentConfig, backend: str) -> bool:
    """Does this run use the authenticated overlay (routing.overlay.auth)?"""
    mode = cfg.auth.mac
    return AUTH_AUTO.get(backend, False) if mode == "auto" else bool(mode)


def new_key() -> bytes:
    """A fresh experiment key (256 bits) for one repetition's nodes."""
    return secrets.token_bytes(32)


def write_key(path: Path, key: bytes) -> Path:
    """The key file a node reads once and deletes (mode 0600; never in a log or meta.json)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key.hex())
    return path


def overlay_tap(cfg: ExperimentConfig, path: Path, address: str) -> OverlayTap | None:
    """The node's capture when the experiment asks for one (``capture.enabled``), else None."""
    c = cfg.capture
    if not c.enabled:
        return None
    return OverlayTap(path, address, int(c.max_mb * 1e6))


def write_meta(rep_dir: Path, meta: dict[str, Any]) -> None:
    """``meta.json``, written whole or kept as it was (experiments.records.write_whole: WriteError names
    the file and the reason); with link-state routing, the routes the nodes ended with first (logged_routes)."""
    logged_routes(rep_dir, meta)
    write_whole(rep_dir / "meta.json", json.dumps(meta, indent=1, sort_keys=True) + "\n")


def logged_routes(rep_dir: Path, meta: dict[str, Any]) -> None:
    """With link-state routing on a backend whose nodes run apart (local, netns, pi), meta.json's ``routing``
    becomes the routes the nodes ended with: the starting routes with every ``route`` event of the node logs
    applied in time order (the sim, holding the routers, writes them itself: :func:`link_state_record`)."""
    r = meta.get("routing")
    if not isinstance(r, dict) or not r.get("link_state") or r.get("measured"):
        return
    name_of = {a: n for n, a in (meta.get("nodes") or {}).items()}
    routes = {n: dict(t) for n, t in r["routes"].items()}
    events = []
    for log in sorted(rep_dir.glob("*.log")):
        with log.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if '"ev":"route"' in line:
                    try:
                        e = json.loads(line)
                    except ValueError:      # a crashed node's last line: the readers skip it too
                        continue
                    events.append((float(e["t"]), str(e["node"]), name_of.get(e["dst"]), name_of.get(e["new"])))
    counts: dict[str, int] = {}
    for _t, node, dst, new in sorted(events, key=lambda x: x[0]):
        if node in routes and dst is not None:
            counts[node] = counts.get(node, 0) + 1
            if new is None:
                routes[node].pop(dst, None)
            else:
                routes[node][dst] = new
    r.update(routes=routes, measured=bool(events), route_changes=counts,
             paths=[path_of(routes, f["sender"], f["receiver"]) for f in meta.get("flows") or []])


def rep_seed(cfg: ExperimentConfig, repetition: int) -> int:
    """The seed of one repetition: the YAML's ``seed`` + repetition, so repetition k of every
    variant sees the same randomness (loss, ETX jitter, ISS, payload)."""
    return cfg.seed + repetition


def start_rep(variant: Any, repetition: int, rep_dir: Path, backend: str) -> tuple[ExperimentConfig, int, dict[str, Any]]:
    """What every backend does first: the variant's config, the repetition's seed, the rep
    directory, and the initial meta.json contents."""
    cfg = variant.config
    seed = rep_seed(cfg, repetition)
    rep_dir.mkdir(parents=True, exist_ok=True)
    meta = base_meta(cfg, variant.name, repetition, seed, backend, variant.sweep_value)
    # status "running" until the backend writes how it ended: a runner killed with SIGKILL leaves this record
    # (plots: "the runner did not record how the repetition ended"); a full disk fails here, before any node
    write_meta(rep_dir, meta)
    return cfg, seed, meta


def base_meta(cfg: ExperimentConfig, variant: str, repetition: int, seed: int, backend: str,
              sweep_value: Any = None) -> dict[str, Any]:
    return {"variant": variant, "repetition": repetition, "seed": seed, "backend": backend,
            "sweep_value": sweep_value, "nodes": dict(cfg.topology.addresses),
            "flows": [{"sender": f.sender, "receiver": f.receiver, "segments": f.segments,
                       "segment_size": f.segment_size, "variant": f.variant or cfg.tcp.variant,
                       "start_s": f.start_s}
                      for f in cfg.flows],
            "snoop": cfg.snoop.to_dict(), "clock_offsets": {}, "status": "running", "error": None,
            "scenario": cfg.scenario,
            # the starting routes (hop count); with link-state routing, those the nodes ended with (write_meta)
            "routing": dict(route_record(cfg, route_tables(cfg)), link_state=measured_routes(cfg),
                            daemon=cfg.routing.daemon),
            # where the medium's nodes stand (metres), random placements resolved; null without positions
            "positions": medium_positions(cfg),
            # the loss `down` intervals (relative to the flow start): the summary's reroute and recovery times
            "failures": failures(cfg)}


def failures(cfg: ExperimentConfig) -> list[dict[str, Any]]:
    """Every ``down`` interval of the loss specs, ``where`` "node B" (all B hears) or "link A>B" (what B hears
    from A), in start order; a node without a spec of its own takes loss.default's."""
    loss = cfg.loss
    out = [{"where": f"node {n}", "down": list(iv)}
           for n in cfg.topology.nodes for iv in loss.of_node(n).get("down", [])]
    out += [{"where": f"link {k}", "down": list(iv)} for k, spec in loss.links.items()
            for iv in spec.get("down", [])]
    return sorted(out, key=lambda f: (f["down"][0], f["where"]))
