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
from typing import Any

from experiments.backends import kernel_plan
from experiments.config import ExperimentConfig
from experiments.backends.kernel_counters import TCP_EXT_COUNTERS, parse_nfq, parse_statistic_drops, parse_tcpext
from experiments.backends.kernel_plan import (HANDLER_MODES, QUEUE_NUM, Link, MeshPlan, PlanError, queued_input,
                                              rule_specs, statistic_table, sysctls)
from experiments.backends.netns import babel, state
from experiments.backends.netns.sh import IPTABLES, IPTABLES_RESTORE, NetnsError, run
from routing.drivers.link_shaper import SHAPER_QUEUE

# the plan and the counters' parsers live in experiments/backends/kernel_plan.py and kernel_counters.py
# (the pi backend's kernel data plane uses them too); these names stay importable from here
__all__ = ["HANDLER_MODES", "QUEUE_NUM", "Link", "MeshPlan", "TCP_EXT_COUNTERS", "link_conf", "link_counters",
           "nfq_counters", "parse_nfq", "parse_statistic_drops", "plan_mesh", "queued_input", "rule_specs",
           "setup", "statistic_drops", "statistic_table", "sysctls", "tcp_counters", "teardown"]


def plan_mesh(cfg: ExperimentConfig, rid: str, check_range: bool = True) -> MeshPlan:
    """The netns mesh of a resolved variant configuration: its addresses inside the test range (unless
    ``check_range`` is off), then :func:`experiments.backends.kernel_plan.plan_mesh`; NetnsError naming
    the field if it cannot be built."""
    if check_range:
        state.check_addresses(dict(cfg.topology.addresses))
    try:
        return kernel_plan.plan_mesh(cfg, rid)
    except PlanError as e:
        raise NetnsError(str(e)) from None


# ---- setup -------------------------------------------------------------------------
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


def tcp_counters(ns: str) -> dict[str, int]:
    """:data:`TCP_EXT_COUNTERS` of namespace ``ns`` (counted since the namespace was made: this run)."""
    r = run(["cat", "/proc/net/netstat"], ns=ns, check=False)
    ext = parse_tcpext(r.stdout)
    return {k: ext[k] for k in TCP_EXT_COUNTERS if k in ext}
