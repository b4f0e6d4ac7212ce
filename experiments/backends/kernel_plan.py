"""The kernel-TCP plan of one run: what the netns backend and the pi backend's kernel data plane build.

From a resolved experiment, one :class:`MeshPlan`: every node's address, its interfaces towards its
neighbours, its routes, which nodes forward and send, where the loss model is applied (the NFQUEUE
handler or the iptables statistic match), the sysctls and the iptables rules of each node.  The netns
backend (experiments/backends/netns/) creates it in namespaces and veths; the pi backend's kernel data
plane (experiments/backends/pi_kernel.py) applies the same rules and sysctls to the Pis over SSH.
No process, no file, no socket here: only the plan.
"""
from __future__ import annotations

from experiments.config import ExperimentConfig
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

from experiments.build import FlowPlan, route_hop_problems, route_tables
from experiments.link_spec import emulated_link
from experiments.radio_loss import node_side
from routing.drivers.link_shaper import SHAPER_QUEUE
from routing.drivers.nfq import INJECT_MARK
from routing.kernel.ipv4 import OPTION_LEN
from routing.links.linkem import LinkParams

NS_PREFIX = "aspn-"     # the netns backend's namespaces: aspn-<run id>-<node>


class PlanError(ValueError):
    """The experiment cannot be planned for kernel TCP; the message names the field."""


def ns_name(rid: str, node: str) -> str:
    """The namespace of ``node`` in run ``rid`` (the netns backend)."""
    return f"{NS_PREFIX}{rid}-{node}"


def veth_name(rid: str, link: int, end: str) -> str:
    """``an<run id><link><a|b>``: at most 15 characters up to link 999."""
    name = f"an{rid}{link}{end}"
    if len(name) > 15:
        raise PlanError(f"interface name {name} is longer than 15 characters")
    return name


def babel_hello_s(cfg: Any) -> float | None:
    """The Hello interval of a babeld run, None when the builtin routing runs."""
    r = cfg.routing
    return float(r.babel_hello_s) if r.daemon == "babeld" else None


def app_flow(fp: FlowPlan, addrs: Mapping[str, str]) -> dict[str, Any]:
    """The ``flow`` of a kernel-TCP app's config (netns/tcpapp.py), from the experiment's flow plan: the
    netns backend and the Pis' kernel data plane write the same."""
    return {"name": fp.name(addrs), "src": addrs[fp.sender], "sport": fp.sport, "dst": addrs[fp.receiver],
            "dport": fp.dport, "segments": fp.segments, "segment_size": fp.segment_size,
            "data_seed": fp.data_seed, "start_s": fp.start}


QUEUE_NUM = 0
HANDLER_MODES = ("snoop", "accept", "kernel")


@dataclass
class Link:
    index: int
    a: str
    b: str
    dev_a: str
    dev_b: str


@dataclass
class MeshPlan:
    """Everything the setup creates, computed up front from the resolved experiment."""

    rid: str
    nodes: list[str]
    addrs: dict[str, str]
    links: list[Link]
    devs: dict[str, dict[str, str]]                 # node -> neighbour node -> its veth towards it
    routes: dict[str, list[tuple[str, str, str]]]   # node -> (dst address, next-hop address, dev)
    forwarders: set[str]
    senders: set[str]
    sack: bool
    mtu: int
    rate_mbit: float
    handlers: str
    loss_rates: dict[str, float] = field(default_factory=dict)   # node -> rate of its iptables statistic match
    handler_loss: set[str] = field(default_factory=set)          # nodes whose NFQUEUE handler applies the loss model
    link: LinkParams | None = None          # the emulated link of every direction (None: plain veths)
    medium: bool = False                    # medium.model dcf: the medium daemon holds what every node hears
    babel_hello_s: float | None = None      # routing.daemon babeld: its Hello interval (netns/babel.py)
    babel_loss: dict[str, float] = field(default_factory=dict)   # node -> Bernoulli rate of the Babel packets it hears
    adaptive_qos: bool = False              # snoop.sender_qos adaptive: the senders' handlers hear their ACKs

    @property
    def held(self) -> bool:
        """Does every node queue what it hears (queue 1) to be held: by its link shaper or by the medium?"""
        return self.link is not None or self.medium

    @property
    def advmss(self) -> int:
        return self.mtu - 40 - OPTION_LEN

    def ns(self, node: str) -> str:
        return ns_name(self.rid, node)

    def dev_prefix(self) -> str:
        return f"an{self.rid}"


def plan_mesh(cfg: ExperimentConfig, rid: str) -> MeshPlan:
    """The mesh of a resolved variant configuration (PlanError naming the field if kernel TCP cannot run it).

    The addresses are the experiment's: the netns backend first checks that they are inside its test
    range (experiments/backends/netns/mesh.py); the pi backend's kernel data plane plans with the
    inventory's mesh addresses.
    """
    names = list(cfg.topology.nodes)
    addrs = dict(cfg.topology.addresses)
    for path, why in route_hop_problems(cfg)[:1]:
        raise PlanError(f"{path}: {why}")
    for key in ("snoop_after", "snoop_limit"):
        if cfg.snoop[key] > 15:
            raise PlanError(f"snoop.{key}: the netns backend's IPv4 option holds 0..15, got {cfg.snoop[key]}")
    nx = cfg.netns
    by_addr = {a: n for n, a in addrs.items()}
    tables = route_tables(cfg)
    links: list[Link] = []
    devs: dict[str, dict[str, str]] = {n: {} for n in names}
    for i, (a, b) in enumerate(cfg.topology.links):      # one veth pair per edge, in the links' order
        link = Link(i, a, b, veth_name(rid, i, "a"), veth_name(rid, i, "b"))
        links.append(link)
        devs[a][b] = link.dev_a
        devs[b][a] = link.dev_b
    routes: dict[str, list[tuple[str, str, str]]] = {}
    for n in names:
        rows = []
        for dst, via in tables[n].as_dict().items():
            if dst == addrs[n]:
                continue
            via_node = by_addr[via]
            if via_node not in devs[n]:
                raise PlanError(f"topology: {n} routes {dst} via {via}, which is not linked to it")
            rows.append((dst, via, devs[n][via_node]))
        routes[n] = rows
    forwarders = {n for n in names if len(devs[n]) >= 2}
    senders = {f.sender for f in cfg.flows}
    handlers = nx.handlers
    loss_rates: dict[str, float] = {}
    handler_loss: set[str] = set()
    perfect = cfg.snoop.policy == "perfect"
    for n in names:
        spec = node_side(cfg.loss.nodes.get(n, cfg.loss.default))   # layer radio: the medium's
        plain = spec["model"] in ("none", "bernoulli") and not spec.get("down")   # down intervals: handler only
        # A node whose handler must see what it hears anyway (a forwarder; a perfect-snoop sender, whose
        # layer answers dupacks) applies its loss model there; so does one whose model the statistic
        # match cannot express.  Every other node drops with the iptables statistic match and queues
        # nothing it hears (the receiver: the option stays in, nothing to do).
        if handlers == "snoop" and (n in forwarders or (perfect and n in senders) or not plain):
            handler_loss.add(n)
        elif not plain:
            raise PlanError(f"loss of node {n}: model {spec['model']}" + (" with down intervals" if spec.get("down") else "")
                             + " needs netns.handlers: snoop (the iptables statistic match is Bernoulli only)")
        elif spec["model"] == "bernoulli" and spec["rate"] > 0:
            loss_rates[n] = float(spec["rate"])
    babel_loss = {}
    for n in names:
        spec = node_side(cfg.loss.nodes.get(n, cfg.loss.default))
        if spec["model"] == "bernoulli" and spec["rate"] > 0:
            babel_loss[n] = float(spec["rate"])
    adaptive = cfg.snoop.get("sender_qos", "fixed") == "adaptive"
    if adaptive and handlers != "snoop":
        raise PlanError(f"snoop.sender_qos adaptive needs netns.handlers: snoop (the sender's NFQUEUE handler "
                         f"learns pkt_qos from the ACKs it hears and stamps it); got {handlers!r}")
    return MeshPlan(rid, names, addrs, links, devs, routes, forwarders, senders,
                    cfg.tcp.variant == "sack", nx.mtu, float(nx.rate_mbit), handlers, loss_rates,
                    handler_loss, emulated_link(cfg), cfg.medium.model != "none", babel_hello_s(cfg),
                    babel_loss if babel_hello_s(cfg) is not None else {}, adaptive)


def queued_input(plan: MeshPlan, n: str) -> bool:
    """Does node ``n`` queue what it hears (INPUT)?  Where its handler applies the loss model.

    Accept-only handlers queue the same packets as the snoop handlers would
    (their loss comes from the statistic match), so the benchmark compares like with like.
    """
    if plan.handlers == "kernel":
        return False
    if plan.handlers == "snoop":
        return n in plan.handler_loss
    return n in plan.forwarders


def sysctls(plan: MeshPlan, n: str) -> list[str]:
    out = [f"net.ipv4.ip_forward={1 if n in plan.forwarders else 0}",
           "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
           "net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.default.send_redirects=0",
           "net.ipv4.conf.all.accept_redirects=0", "net.ipv4.conf.default.accept_redirects=0"]
    if n in plan.senders:
        out.append(f"net.ipv4.tcp_sack={1 if plan.sack else 0}")   # the sender's namespace decides SACK
    if plan.babel_hello_s is not None:
        # babeld speaks from the veths' IPv6 link-local addresses: usable at once, not after duplicate address
        # detection (the first Hellos would fail and the first link costs come out lossy)
        out += ["net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.default.dad_transmits=0"]
    return out


def rule_specs(plan: MeshPlan, n: str, dev: str, forward_in: str | None = None) -> list[tuple[str, str, str]]:
    """Node ``n``'s rules as (table, built-in chain, rule): the netns namespaces and the Pis share them.

    filter: NFQUEUE on what a forwarder relays (FORWARD; on a Pi only what comes in on
    ``forward_in``), what a TCP sender sends into the mesh (OUTPUT: the option is stamped
    there) and what a node hears when its handler applies the loss model (INPUT, see
    :func:`queued_input`; at a sender that adapts pkt_qos, at least the TCP it hears: its ACKs).  raw: the iptables statistic match drops a packet heard with
    the node's loss rate on every node whose handler does not apply the loss model.
    ``dev`` matches the mesh interfaces (``an<rid>+`` in netns, ``wlan0`` on a Pi).

    With an emulated link (``plan.link``) every packet heard on a mesh interface is first queued to
    the node's link shaper (raw PREROUTING, the earliest hook: routing/drivers/link_shaper.py; with
    ``plan.medium`` to the medium daemon, experiments/backends/netns/medium.py), and the
    statistic match moves to mangle PREROUTING, right after it: a packet lost at the listener has
    still crossed the link (as on the sim), and an accepted NFQUEUE verdict skips the rest of its chain.
    ``--queue-bypass``: until the node's daemon has bound the queue (start-up), packets pass unheld.
    """
    q = f"-j NFQUEUE --queue-num {QUEUE_NUM}"
    out: list[tuple[str, str, str]] = []
    if plan.babel_hello_s is not None:
        # babeld's routes carry no advmss: clamp the MSS of every SYN instead, so full-size segments with the
        # A-SPAN option still fit the MTU (as the routes' advmss does without babeld)
        out.append(("mangle", "OUTPUT", f"-o {dev} -p tcp --tcp-flags SYN,RST SYN -j TCPMSS --set-mss {plan.advmss}"))
    if plan.held:
        out.append(("raw", "PREROUTING", f"-i {dev} -j NFQUEUE --queue-num {SHAPER_QUEUE} --queue-bypass"))
    rate = plan.loss_rates.get(n)
    if rate:
        out.append((statistic_table(plan), "PREROUTING",
                    f"-i {dev} -m statistic --mode random --probability {rate:.6f} -j DROP"))
    if plan.handlers != "kernel":
        if queued_input(plan, n):
            out.append(("filter", "INPUT", f"-i {dev} {q}"))
        if n in plan.forwarders:
            out.append(("filter", "FORWARD", (f"-i {forward_in} " if forward_in else "") + q))
        if n in plan.senders:
            out.append(("filter", "OUTPUT", f"-o {dev} -p tcp -m mark ! --mark {INJECT_MARK:#x} {q}"))
            if plan.adaptive_qos and not queued_input(plan, n):
                # the adaptive sender (aspan.adaptive) scores pkt_qos by the ACKs its TCP receives
                out.append(("filter", "INPUT", f"-i {dev} -p tcp {q}"))
    return out


def statistic_table(plan: MeshPlan) -> str:
    """Where the statistic match sits: raw, or mangle behind the link shaper (:func:`rule_specs`)."""
    return "mangle" if plan.held else "raw"
