"""babeld instead of the builtin link-state routing (issue 23, item 4): what is checked without root.

The configuration each namespace's babeld gets, the reading of the kernel's routes it installs, the route
events and the down gate of the node daemon's watcher (experiments/backends/netns/babel.py), the mesh
plan with babeld, and what the schema and every backend refuse.  The run itself: tests/root/test_netns_babel.py.
"""
from __future__ import annotations

from tests import ROOT
import socket
import struct
import pytest
import yaml
from experiments.backends.netns import babel
from experiments.backends.netns.mesh import _ip_batch, plan_mesh, rule_specs, sysctls
from experiments.runner import check_backend_support
from experiments.schema import ExperimentError, load_experiment
from routing.topology.linkstate import RouteChange


RING = {"nodes": ["A", "B", "C", "D", "E"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "E"], ["E", "D"]]}


BABELD = {"metric": "etx", "dynamic": True, "daemon": "babeld", "babel_hello_s": 0.5}


def doc(**over):
    d = {"name": "t", "backend": "netns", "repetitions": 1, "topology": RING,
         "loss": {"default": {"model": "bernoulli", "rate": 0.01},
                  "nodes": {"B": {"model": "bernoulli", "rate": 0.01, "down": [[5, 25]]}}},
         "flows": [{"sender": "A", "receiver": "D"}], "routing": dict(BABELD)}
    d.update(over)
    return d


def load(d):
    return load_experiment(d, "t.yaml")


# ---- the schema and the backends -------------------------------------------------------------------
def test_babeld_is_accepted_with_dynamic_etx_routes_and_bernoulli_losses():
    cfg = load(doc()).variants[0].config
    assert cfg["routing"]["daemon"] == "babeld" and cfg["routing"]["babel_hello_s"] == 0.5
    assert load(doc(routing={})).variants[0].config["routing"]["daemon"] == "builtin"


@pytest.mark.parametrize("routing, why", [
    ({"daemon": "babeld"}, "routing.metric: etx and routing.dynamic: true"),
    ({"daemon": "babeld", "metric": "etx"}, "routing.dynamic: true"),
    ({"daemon": "babeld", "dynamic": True}, "routing.metric: etx"),
    ({"daemon": "olsrd", "metric": "etx", "dynamic": True}, "builtin"),
    ({**BABELD, "babel_hello_s": 0}, ">= 0.05"),
])
def test_the_schema_refuses_what_babeld_cannot_be(routing, why):
    with pytest.raises(ExperimentError) as e:
        load(doc(routing=routing))
    assert "routing." in str(e.value) and why in str(e.value)


def test_losses_that_would_miss_babels_own_packets_are_refused():
    d = doc()
    d["loss"]["nodes"]["C"] = {"model": "gilbert-elliott"}
    with pytest.raises(ExperimentError, match=r"loss\.nodes\.C\.model.*Hellos"):
        load(d)
    d = doc()
    d["loss"]["links"] = {"A-B": {"model": "bernoulli", "rate": 0.1}}
    with pytest.raises(ExperimentError, match=r"loss\.links"):
        load(d)


@pytest.mark.parametrize("backend", ["sim", "local", "pi"])
def test_babeld_is_refused_before_the_run_on_every_backend_but_netns(backend):
    exp = load(doc())
    with pytest.raises(ExperimentError, match=rf"routing\.daemon.*backend {backend}"):
        check_backend_support(exp, backend)
    check_backend_support(exp, "netns")


def test_validate_refuses_babeld_on_the_sim_as_run_would(tmp_path):
    from experiments.cli import main
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(doc()))
    assert main(["validate", str(p), "--backend", "sim"]) == 2
    assert main(["validate", str(p), "--backend", "netns"]) == 0


# ---- the mesh with babeld --------------------------------------------------------------------------
def test_with_babeld_each_node_keeps_only_its_neighbours_routes_and_clamps_the_mss():
    cfg = load(doc()).variants[0].config
    plan = plan_mesh(cfg, "t1", check_range=False)
    assert plan.babel_hello_s == 0.5 and plan.babel_loss == {n: 0.01 for n in RING["nodes"]}
    batch = _ip_batch(plan, "A")
    assert "via" not in batch                                  # babeld installs every route beyond a neighbour
    assert batch.count("route add") == 2                       # A's two neighbours, B and C
    rules = [r for _t, c, r in rule_specs(plan, "A", "an+") if c == "OUTPUT" and "TCPMSS" in r]
    assert rules == [f"-o an+ -p tcp --tcp-flags SYN,RST SYN -j TCPMSS --set-mss {plan.advmss}"]
    assert "net.ipv6.conf.default.accept_dad=0" in sysctls(plan, "A")
    static = plan_mesh(load(doc(routing={})).variants[0].config, "t1", check_range=False)
    assert "via" in _ip_batch(static, "A") and static.babel_hello_s is None
    assert not [r for _t, _c, r in rule_specs(static, "A", "an+") if "TCPMSS" in r]
    assert "net.ipv6.conf.default.accept_dad=0" not in sysctls(static, "A")


def test_babeld_configuration_names_every_veth_and_redistributes_only_the_node():
    text = babel.config_text(3, ["v0", "v1"], "10.2.1.3", 0.5, {"pid": "/r/C.pid", "state": "/r/C.state"})
    lines = text.splitlines()
    assert "interface v0 type wireless hello-interval 0.5" in lines
    assert "interface v1 type wireless hello-interval 0.5" in lines
    assert lines.index("redistribute local ip 10.2.1.3/32 allow") < lines.index("redistribute local deny")
    assert f"kernel-priority {babel.KERNEL_PRIORITY}" in lines and babel.KERNEL_PRIORITY > 0
    assert "router-id 02:a5:00:00:00:03" in lines and "pid-file /r/C.pid" in lines


def test_babel_loss_rule_drops_its_packets_with_the_nodes_rate():
    assert "--dport 6696 -m statistic --mode random --probability 0.005000 -j DROP" in babel.loss_rules(0.005, "an7")
    assert "-A" not in babel.loss_rules(0.0, "an7")


# ---- the kernel's routes as babeld leaves them -----------------------------------------------------
def hexaddr(a: str) -> str:
    return "%08X" % struct.unpack("<I", socket.inet_aton(a))[0]


def proc_route(*rows: tuple[str, str, int, int]) -> str:
    """A /proc/net/route listing of host routes (dst, gateway or "", flags, metric)."""
    head = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
    return head + "".join(f"v0\t{hexaddr(d)}\t{hexaddr(g) if g else '00000000'}\t{fl:04X}\t0\t0\t{m}\tFFFFFFFF\t0\t0\t0\n"
                          for d, g, fl, m in rows)


def test_proc_route_reads_host_routes_the_lower_metric_and_not_unreachable_ones():
    text = proc_route(("10.2.1.2", "", 0x5, 0),                   # a neighbour, direct
                      ("10.2.1.2", "10.2.1.3", 0x7, 100),         # babeld's route to it, below the direct one
                      ("10.2.1.4", "10.2.1.2", 0x7, 100),         # a node two hops away
                      ("10.2.1.5", "", 0x201, 100))               # an unreachable route babeld left
    assert babel.parse_proc_route(text) == {"10.2.1.2": "10.2.1.2", "10.2.1.4": "10.2.1.2"}


def test_route_diff_names_every_changed_next_hop_and_never_the_node_itself():
    old = {"10.2.1.4": "10.2.1.2", "10.2.1.2": "10.2.1.2", "10.2.1.5": "10.2.1.3"}
    new = {"10.2.1.4": "10.2.1.3", "10.2.1.2": "10.2.1.2", "10.2.1.1": "10.2.1.1"}
    assert babel.route_diff(old, new, "10.2.1.1") == [RouteChange("10.2.1.4", "10.2.1.2", "10.2.1.3", None),
                                                      RouteChange("10.2.1.5", "10.2.1.3", None, None)]


def test_the_watch_logs_route_changes_and_applies_the_down_intervals_to_babels_packets():
    kernel = {"text": proc_route(("10.2.1.2", "", 0x5, 0), ("10.2.1.3", "", 0x5, 0), ("10.2.1.4", "10.2.1.2", 0x7, 100))}
    rules: list[list[str]] = []
    seen: list[tuple[list[RouteChange], dict[str, str], float]] = []
    logged: list[tuple[float, str, dict]] = []
    addrs = [f"10.2.1.{i}" for i in range(1, 6)]
    start = {"10.2.1.2": "10.2.1.2", "10.2.1.3": "10.2.1.3", "10.2.1.4": "10.2.1.2", "10.2.1.5": "10.2.1.3"}
    w = babel.BabelWatch("10.2.1.1", addrs, start, lambda c, r, t: seen.append((c, r, t)), [[10.0, 20.0]],
                         lambda t, ev, **f: logged.append((t, ev, f)), read=lambda: kernel["text"],
                         ip6tables=rules.append)
    w.poll(1.0)                          # babeld has no route to E yet: that is a change from the start
    assert seen == [([RouteChange("10.2.1.5", "10.2.1.3", None, None)],
                     {"10.2.1.2": "10.2.1.2", "10.2.1.3": "10.2.1.3", "10.2.1.4": "10.2.1.2"}, 1.0)]
    w.poll(2.0)
    assert len(seen) == 1 and rules == []
    w.poll(10.0)                         # the down interval starts: Babel's packets are dropped from now
    assert rules == [["-I", *babel.DOWN_RULE]] and logged[-1] == (10.0, "babel_down", {"on": True})
    kernel["text"] = proc_route(("10.2.1.2", "", 0x5, 0), ("10.2.1.3", "", 0x5, 0),
                                ("10.2.1.4", "10.2.1.3", 0x7, 100), ("10.2.1.5", "10.2.1.3", 0x7, 100))
    w.poll(12.0)
    assert seen[-1][0] == [RouteChange("10.2.1.4", "10.2.1.2", "10.2.1.3", None),
                           RouteChange("10.2.1.5", None, "10.2.1.3", None)] and seen[-1][2] == 12.0
    w.poll(19.9)
    assert len(rules) == 1
    w.poll(20.0)                         # and end with it
    assert rules[-1] == ["-D", *babel.DOWN_RULE] and logged[-1] == (20.0, "babel_down", {"on": False})
    assert w.stats == {"route_changes": 3, "polls": 6, "down_switches": 2}


def test_the_experiment_file_validates_on_netns_and_is_refused_on_the_sim():
    path = ROOT / "experiments" / "netns-babel.yaml"
    exp = load_experiment(yaml.safe_load(path.read_text()), str(path))
    assert [v.config["routing"]["daemon"] for v in exp.variants] == ["builtin", "builtin", "babeld", "babeld"]
    check_backend_support(exp, "netns")
    with pytest.raises(ExperimentError, match="babeld"):
        check_backend_support(exp, "sim")
