"""The mesh of one run: a namespace per node, a veth pair per link of the topology's graph, routes, rules.

Any connected graph: link ``i`` of ``topology.links`` (sorted pairs ``[a, b]``) is the veth pair
``an<rid><i>a`` (in a's namespace) -- ``an<rid><i>b`` (in b's), so a node has one veth per
neighbour; a chain's links are numbered from its first node, as before graphs.

Addressing: every node keeps the single mesh address of the YAML (the Pis'
10.2.1.x), put as a /32 on each of its veths, with a /32 host route per
neighbour and a /32 route ``via`` the next hop for every other node (the static
routes over the graph, experiments.build.route_tables: shortest by hop count, with
routing.topology.graph's tie-break).  No namespace has a default route and no veth ends in
the root namespace, so nothing can leave the mesh.

The A-SPAN option adds 8 bytes where a data segment enters the mesh.  Every
mesh route carries ``advmss MTU-48`` (20 IP + 20 TCP + 8 option), so both ends
advertise an MSS that leaves room for it: full-size segments are 1500 bytes on
the wire with the option, never black-holed.  TSO/GSO/GRO are off on every veth
(with offloads on, one dropped "packet" would be a 64 KB super-segment).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from experiments.backends.netns import babel, state
from experiments.backends.netns.sh import IPTABLES, IPTABLES_RESTORE, NetnsError, run
from experiments.backends.netns.tcpapp import parse_tcpext
from experiments.build import route_hop_problems, route_tables
from experiments.link_spec import emulated_link
from experiments.radio_loss import node_side
from routing.kernel.ipv4 import OPTION_LEN
from routing.drivers.link_shaper import SHAPER_QUEUE
from routing.links.linkem import LinkParams
from routing.drivers.nfq import INJECT_MARK

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
        return state.ns_name(self.rid, node)

    def dev_prefix(self) -> str:
        return f"an{self.rid}"


def plan_mesh(cfg: dict[str, Any], rid: str, check_range: bool = True) -> MeshPlan:
    """The mesh of a resolved variant configuration (NetnsError if the netns backend cannot build it).

    ``check_range``: keep every address inside the test range (the netns backend); the pi
    backend's kernel data plane plans with the inventory's mesh addresses instead.
    """
    names = list(cfg["topology"]["nodes"])
    addrs = dict(cfg["topology"]["addresses"])
    if check_range:
        state.check_addresses(addrs)
    for path, why in route_hop_problems(cfg)[:1]:
        raise NetnsError(f"{path}: {why}")
    for key in ("snoop_after", "snoop_limit"):
        if cfg["snoop"][key] > 15:
            raise NetnsError(f"snoop.{key}: the netns backend's IPv4 option holds 0..15, got {cfg['snoop'][key]}")
    nx = cfg["netns"]
    by_addr = {a: n for n, a in addrs.items()}
    tables = route_tables(cfg)
    links: list[Link] = []
    devs: dict[str, dict[str, str]] = {n: {} for n in names}
    for i, (a, b) in enumerate(cfg["topology"]["links"]):      # one veth pair per edge, in the links' order
        link = Link(i, a, b, state.veth_name(rid, i, "a"), state.veth_name(rid, i, "b"))
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
                raise NetnsError(f"topology: {n} routes {dst} via {via}, which is not linked to it")
            rows.append((dst, via, devs[n][via_node]))
        routes[n] = rows
    forwarders = {n for n in names if len(devs[n]) >= 2}
    senders = {f["sender"] for f in cfg["flows"]}
    handlers = nx["handlers"]
    loss_rates: dict[str, float] = {}
    handler_loss: set[str] = set()
    perfect = cfg["snoop"]["policy"] == "perfect"
    for n in names:
        spec = node_side(cfg["loss"]["nodes"].get(n, cfg["loss"]["default"]))   # layer radio: the medium's
        plain = spec["model"] in ("none", "bernoulli") and not spec.get("down")   # down intervals: handler only
        # A node whose handler must see what it hears anyway (a forwarder; a perfect-snoop sender, whose
        # layer answers dupacks) applies its loss model there; so does one whose model the statistic
        # match cannot express.  Every other node drops with the iptables statistic match and queues
        # nothing it hears (the receiver: the option stays in, nothing to do).
        if handlers == "snoop" and (n in forwarders or (perfect and n in senders) or not plain):
            handler_loss.add(n)
        elif not plain:
            raise NetnsError(f"loss of node {n}: model {spec['model']}" + (" with down intervals" if spec.get("down") else "")
                             + " needs netns.handlers: snoop (the iptables statistic match is Bernoulli only)")
        elif spec["model"] == "bernoulli" and spec["rate"] > 0:
            loss_rates[n] = float(spec["rate"])
    babel_loss = {}
    for n in names:
        spec = node_side(cfg["loss"]["nodes"].get(n, cfg["loss"]["default"]))
        if spec["model"] == "bernoulli" and spec["rate"] > 0:
            babel_loss[n] = float(spec["rate"])
    adaptive = cfg["snoop"].get("sender_qos", "fixed") == "adaptive"
    if adaptive and handlers != "snoop":
        raise NetnsError(f"snoop.sender_qos adaptive needs netns.handlers: snoop (the sender's NFQUEUE handler "
                         f"learns pkt_qos from the ACKs it hears and stamps it); got {handlers!r}")
    return MeshPlan(rid, names, addrs, links, devs, routes, forwarders, senders,
                    cfg["tcp"]["variant"] == "sack", nx["mtu"], float(nx["rate_mbit"]), handlers, loss_rates,
                    handler_loss, emulated_link(cfg), cfg["medium"]["model"] != "none", babel.hello_s_of(cfg),
                    babel_loss if babel.hello_s_of(cfg) is not None else {}, adaptive)


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


# ---- setup -------------------------------------------------------------------------
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


def _ip_batch(plan: MeshPlan, n: str) -> str:
    addr = plan.addrs[n]
    lines = ["link set lo up"]
    for dev in plan.devs[n].values():
        lines += [f"link set {dev} mtu {plan.mtu}", f"addr add {addr}/32 dev {dev}", f"link set {dev} up"]
    for dst, via, dev in plan.routes[n]:
        if dst == via:
            lines.append(f"route add {dst}/32 dev {dev} src {addr} advmss {plan.advmss}")
    for dst, via, dev in plan.routes[n]:
        if dst != via and plan.babel_hello_s is None:     # with babeld, babeld installs the routes beyond neighbours
            lines.append(f"route add {dst}/32 via {via} dev {dev} src {addr} onlink advmss {plan.advmss}")
    return "\n".join(lines) + "\n"


_sysctls = sysctls   # the old name (tests)


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


def _iptables_rules(plan: MeshPlan, n: str) -> str:
    """The iptables-restore input of node ``n``'s namespace (:func:`rule_specs`)."""
    specs = rule_specs(plan, n, f"{plan.dev_prefix()}+")
    lines = []
    for table in ("raw", "mangle", "filter"):
        lines += [f"*{table}"] + [f"-A {c} {r}" for t, c, r in specs if t == table] + ["COMMIT"]
    return "\n".join(lines) + "\n"


def setup(plan: MeshPlan) -> None:
    """Create the mesh.  On failure the caller tears down what exists (see :func:`teardown`)."""
    for n in plan.nodes:
        run(["ip", "netns", "add", plan.ns(n)])
    for n in plan.nodes:
        run(["sysctl", "-q", "-w", *sysctls(plan, n)], ns=plan.ns(n))
    batch = "".join(f"link add {l.dev_a} netns {plan.ns(l.a)} type veth peer name {l.dev_b} netns {plan.ns(l.b)}\n"
                    for l in plan.links)
    if batch:
        run(["ip", "-batch", "-"], stdin=batch)
    for n in plan.nodes:
        ns = plan.ns(n)
        for dev in plan.devs[n].values():
            run(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"], ns=ns)
            if plan.rate_mbit > 0:
                burst = max(2 * plan.mtu + 100, int(plan.rate_mbit * 1e6 / 8 * 0.004))
                run(["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{plan.rate_mbit}mbit",
                     "burst", str(burst), "latency", "50ms"], ns=ns)
        run(["ip", "-batch", "-"], ns=ns, stdin=_ip_batch(plan, n))
        run([IPTABLES_RESTORE], ns=ns, stdin=_iptables_rules(plan, n))
        if plan.babel_hello_s is not None:
            run([f"{babel.IP6TABLES}-restore"], ns=ns, stdin=babel.loss_rules(plan.babel_loss.get(n, 0.0), plan.dev_prefix()))


def teardown(plan: MeshPlan) -> list[str]:
    """Kill every process left in the run's namespaces and delete them; returns errors (never raises)."""
    errors = []
    for n in plan.nodes:
        ns = plan.ns(n)
        try:
            if ns in state.list_namespaces():
                state.delete_namespace(ns)
        except NetnsError as e:
            errors.append(str(e))
    return errors


def statistic_drops(plan: MeshPlan, n: str) -> int:
    """Packets the node's iptables statistic rule dropped so far (0 without such a rule)."""
    if n not in plan.loss_rates:
        return 0
    out = run([IPTABLES, "-t", statistic_table(plan), "-L", "PREROUTING", "-v", "-x", "-n"], ns=plan.ns(n),
              check=False).stdout
    return parse_statistic_drops(out)


def statistic_table(plan: MeshPlan) -> str:
    """Where the statistic match sits: raw, or mangle behind the link shaper (:func:`rule_specs`)."""
    return "mangle" if plan.held else "raw"


def parse_statistic_drops(listing: str) -> int:
    """The packet count of the statistic DROP rule in an ``iptables -L -v -x -n`` listing (0 if none)."""
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "DROP" and "statistic" in line:
            return int(parts[0])
    return 0


NFQ_FIELDS = ("queue", "portid", "waiting", "copy_mode", "copy_range", "queue_dropped", "user_dropped",
              "id_sequence")


def parse_nfq(text: str) -> dict[int, dict[str, int]]:
    """/proc/net/netfilter/nfnetlink_queue -> {queue: counters}.

    ``queue_dropped``: the queue was full (max_len); ``user_dropped``: the
    netlink socket to the handler was full (ENOBUFS, which netfilterqueue
    swallows).  Both are forwarder overload, never wireless loss.
    """
    out: dict[int, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < len(NFQ_FIELDS) or not all(p.lstrip("-").isdigit() for p in parts[:len(NFQ_FIELDS)]):
            continue
        rec = dict(zip(NFQ_FIELDS, (int(p) for p in parts)))
        out[rec["queue"]] = rec
    return out


def nfq_counters(ns: str, queue: int = QUEUE_NUM) -> dict[str, int] | None:
    """Counters of ``queue`` inside ``ns`` (None if no handler has it bound)."""
    r = run(["cat", "/proc/net/netfilter/nfnetlink_queue"], ns=ns, check=False)
    return parse_nfq(r.stdout).get(queue)


def link_conf(plan: MeshPlan, n: str) -> dict[str, Any] | None:
    """The node daemon's ``link``: its shaper's queue and, per veth of ``n``, the link that ends there."""
    if plan.link is None:
        return None
    p = plan.link
    rate = None if p.rate_bps == float("inf") else p.rate_bps       # JSON has no infinity
    return {"queue": SHAPER_QUEUE,
            "in": {dev: {"from": nbr, "rate_bps": rate, "delay_s": p.delay_s, "queue_packets": p.queue_packets}
                   for nbr, dev in plan.devs[n].items()}}


def link_counters(plan: MeshPlan, n: str) -> dict[str, dict[str, int]]:
    """Per veth of node ``n``: packets and drops of the interface and its root qdisc (tbf when rate-limited).

    A qdisc drop is a queue drop (the rate limit's queue was full), never wireless loss.
    """
    out: dict[str, dict[str, int]] = {}
    r = run(["ip", "-s", "-j", "link", "show"], ns=plan.ns(n), check=False)
    try:
        links = json.loads(r.stdout or "[]")
    except ValueError:
        links = []
    for link in links:
        dev = link.get("ifname", "")
        if dev not in plan.devs[n].values():
            continue
        st = link.get("stats64", {})
        out[dev] = {"rx_packets": st.get("rx", {}).get("packets", 0), "rx_dropped": st.get("rx", {}).get("dropped", 0),
                    "tx_packets": st.get("tx", {}).get("packets", 0), "tx_dropped": st.get("tx", {}).get("dropped", 0),
                    "qdisc_dropped": 0}
    q = run(["tc", "-s", "-j", "qdisc", "show"], ns=plan.ns(n), check=False)
    try:
        qdiscs = json.loads(q.stdout or "[]")
    except ValueError:
        qdiscs = []
    for qd in qdiscs:
        dev = qd.get("dev")
        if dev in out and qd.get("root") and qd.get("kind") == "tbf":
            out[dev]["qdisc_dropped"] = int(qd.get("drops", 0))
    return out


# TCP counters of an endpoint's namespace (/proc/net/netstat, TcpExt) that tell what happened to
# snooped traffic at the kernel: segments discarded by PAWS (a stale TSval), duplicates the receiver
# reported with D-SACK, out-of-order arrivals, and undone (spurious) retransmissions at the sender.
TCP_EXT_COUNTERS = ("PAWSEstab", "TCPDSACKOldSent", "TCPDSACKRecv", "TCPOFOQueue", "TCPSpuriousRTOs",
                    "TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo")


def tcp_counters(ns: str) -> dict[str, int]:
    """:data:`TCP_EXT_COUNTERS` of namespace ``ns`` (counted since the namespace was made: this run)."""
    r = run(["cat", "/proc/net/netstat"], ns=ns, check=False)
    ext = parse_tcpext(r.stdout)
    return {k: ext[k] for k in TCP_EXT_COUNTERS if k in ext}
