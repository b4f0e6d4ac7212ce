"""Issue 27, item 4, as root: on the netns backend the probe socket carries probes and LSAs sealed with the
run's key (``auth.mac``).  A process in neighbour C's namespace, without the key, floods B's probe port with
probes "from C" reporting that C hears nothing of B: with the MAC off they hold B's estimate of C at 0 (the
issue's attack, the control), with it on each is dropped as ``forged``, counted exactly and logged at the
drop lines' rate, and the estimate stays where the real probes put it.

Skips without root and the tools like tests/root/test_netns_backend.py (whose fixture checks that nothing of
this test's runs is left: namespaces, interfaces, processes, iptables rules); fails under
ASPAN_REQUIRE_ROOT_TESTS=1.
"""
from tests import ROOT
import json
import os
import signal
import subprocess
import sys
import time
import pytest
from tests.runs import kill_group, start_run, wait_for, events, write_exp




FORGED = 1500          # probes the attacker sends, over ATTACK_S


ATTACK_S = 3.0


ATTACKER = """
import socket, sys, time
from routing.overlay.wire import PROBE, Packet, Probe, encode
me, victim, port, n, span = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((me, 0))
t0 = time.time()
for i in range(n):
    s.sendto(encode(Packet(PROBE, me, port, victim, port, probe=Probe(10**6 + i, 0.0))), (victim, port))
    time.sleep(max(0.0, t0 + span * (i + 1) / n - time.time()))
"""


def stop_run(p: subprocess.Popen) -> None:
    """A run this test left going (it failed): Ctrl-C, so the runner removes its namespaces and daemons
    (they live in their own sessions: a SIGKILL to the runner's group would leave them), then SIGKILL."""
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(90)
        except subprocess.TimeoutExpired:
            kill_group(p)


@pytest.mark.parametrize("mac", [True, False])
def test_forged_probes_from_a_neighbours_namespace_without_the_key(netns, mac):
    exp = write_exp(netns, segments=20000, loss=0.0, settle=3.0, max_s=90, auth={"mac": mac},
                    etx={"settle_s": 3.0, "log_interval_s": 0.25})
    p = start_run(exp, netns / "runs", "--no-plot")
    try:
        rep = wait_for(lambda: next((netns / "runs" / "t").glob("*/sack/rep0"), None), 60, "the rep dir")
        wait_for(lambda: all((rep / f"{n}.ready").exists() for n in "ABCD"), 60, "the node daemons")
        wait_for(lambda: '"etx"' in (rep / "B.log").read_text(), 60, "B's first ETX line")
        conf = json.loads((rep / "B.node.json").read_text())
        addrs, port = conf["experiment"]["topology"]["addresses"], conf["probe_port"]
        ns_c = json.loads((rep / "C.node.json").read_text())["ns"]
        assert not list(rep.glob("*.key")), "key files left in the run directory once the daemons are up"
        t_start = time.time()
        subprocess.run(["ip", "netns", "exec", ns_c, sys.executable, "-c", ATTACKER, addrs["C"], addrs["B"],
                        str(port), str(FORGED), str(ATTACK_S)], cwd=ROOT, check=True, timeout=60,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        t_end = time.time()
        out, _ = p.communicate(timeout=240)
    finally:
        stop_run(p)
    assert p.returncode == 0, out
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["auth"] is mac and meta["status"] == "ok"
    b = events(rep, "B")
    assert b[0]["auth"] is mac
    during = [e["forward"] for e in b if e["ev"] == "etx" and e["nbr"] == addrs["C"]
              and t_start + 0.3 <= e["t"] <= t_end - 0.1]
    assert len(during) >= 5, during
    [stop] = [e for e in b if e["ev"] == "node_stop"]
    drops = stop["probes"]["drops"]
    if not mac:        # the control: without the key B believes them (what the MAC is for)
        assert sum(f == 0.0 for f in during) >= len(during) // 2, during
        assert drops["forged"] == 0
        return
    assert all(f >= 0.99 for f in during), during          # no loss configured: the real reports say 1
    assert drops["forged"] == FORGED and drops["stranger"] == drops["replay"] == drops["malformed"] == 0
    assert stop["drops"]["forged"] == FORGED                  # node_stop drops: the socket's share included
    lines = [e for e in b if e["ev"] == "drop" and e["reason"] == "forged"]
    assert all(e["ptype"] == "probe" for e in lines)
    assert sum(e.get("count", 1) for e in lines) == FORGED
    assert len([e for e in lines if "count" not in e]) <= 20 * (ATTACK_S + 2)   # routing.forwarding.step.DROP_LINES_PER_S
    for n in "ABCD":   # the real probes and LSAs all verified: every neighbour was heard
        [s] = [e for e in events(rep, n) if e["ev"] == "node_stop"]
        assert s["probes"]["probes_heard"] > 0, n
        if n != "B":
            assert sum(s["probes"]["drops"].values()) == 0, (n, s["probes"]["drops"])


def test_sealed_lsas_reroute_a_flow_around_a_deaf_node_on_a_diamond(netns):
    """With ``auth.mac`` the link-state advertisements travel sealed too: on a diamond whose relay B goes deaf
    a second after the flow starts, A and D reroute through C as without the MAC (tests/root/test_netns_graph.py),
    every node accepted LSAs, and no probe socket dropped a real node's probe or LSA."""
    import yaml

    from tests.runs import run_dir
    from tests.root.test_netns_graph import DIAMOND, planned_paths, write_graph_exp

    exp, cfg = write_graph_exp(netns, DIAMOND, [{"sender": "A", "receiver": "D", "segments": 4000}], {},
                               routing={"metric": "etx", "dynamic": True}, netns={"rate_mbit": 4},
                               auth={"mac": True})
    doc = yaml.safe_load(exp.read_text())
    doc["loss"]["nodes"]["B"] = {"model": "bernoulli", "rate": 0.0, "down": [[1.0, 300]]}
    doc["etx"]["settle_s"] = 3.0
    exp.write_text(yaml.safe_dump(doc))
    assert planned_paths(cfg) == [["A", "B", "D"]]
    p = start_run(exp, netns / "runs", "--no-plot")
    try:
        out, _ = p.communicate(timeout=180)
    finally:
        stop_run(p)
    assert p.returncode == 0, out
    rep = run_dir(netns / "runs") / "aspan" / "rep0"
    assert json.loads((rep / "meta.json").read_text())["auth"] is True
    addrs = cfg["topology"]["addresses"]
    [end] = [e for e in events(rep, "D") if e["ev"] == "flow_end"]
    assert end["ok"] is True
    for node, dst in (("A", "D"), ("D", "A")):
        moved = [e for e in events(rep, node) if e["ev"] == "route" and e["dst"] == addrs[dst]]
        assert moved and moved[-1]["new"] == addrs["C"], (node, moved)
    for n in "ABCD":
        stop = next(e for e in events(rep, n) if e["ev"] == "node_stop")
        assert stop["routing"]["lsa_accepted"] > 0, n
        probe_drops = stop["probes"]["drops"]
        assert probe_drops["forged"] == probe_drops["replay"] == probe_drops["stranger"] == 0, (n, probe_drops)
