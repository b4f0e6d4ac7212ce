"""The netns backend as root: real kernel TCP through NFQUEUE snoop agents, and nothing left behind.

Without root (or iptables-legacy, ip, ethtool, tc, netfilterqueue) these tests
skip and say why; with ASPAN_REQUIRE_ROOT_TESTS=1 (CI, .ci/run) they fail instead.
"""
from tests import ROOT
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
import pandas as pd
import pytest
from tests.runs import (alive, kill_group, start_run, wait_for, assert_nothing_left, events, run_dir,
                        write_exp)
from experiments.backends.netns import mesh, state
from experiments.backends.netns.sh import run
from experiments.schema import load_experiment


CONTRACT = ["variant", "flow", "repetition", "seed", "segments", "duration_s", "goodput_mbps", "losses_dupack",
            "losses_rto", "cwnd_median", "tx_per_pkt_p50", "tx_per_pkt_p99", "tx_per_pkt_max",
            "cache_max_segments", "snoop_hits", "local_retransmissions", "backend", "integrity_ok",
            "drops_loss", "drops_queue", "drops_malformed", "status"]


def test_the_leftover_check_sees_its_own_runs_only(netns):
    """Issue 27, item 8: a namespace of another run (alive: its owner recorded, as a concurrent run's is)
    does not fail the check; one of the test's own runs does."""
    mine, other = state.new_run_id(), state.new_run_id()
    rep = netns / "runs" / "t" / "x" / "v" / "rep0"
    rep.mkdir(parents=True)
    (rep / "meta.json").write_text(json.dumps({"netns": {"run_id": mine, "namespaces": {"A": state.ns_name(mine, "A")}}}))
    state.record_run(other, ["Z"])
    try:
        run(["ip", "netns", "add", state.ns_name(other, "Z")])
        assert assert_nothing_left(netns) == {mine}         # the other run's namespace is not ours
        state.record_run(mine, ["A"])
        run(["ip", "netns", "add", state.ns_name(mine, "A")])
        with pytest.raises(AssertionError, match="our namespaces"):
            assert_nothing_left(netns, timeout=1)
    finally:
        for rid, node in ((mine, "A"), (other, "Z")):
            run(["ip", "netns", "del", state.ns_name(rid, node)], check=False)
            state.forget_run(rid)


def test_the_adaptive_sender_stamps_its_choice_on_kernel_tcp(netns):
    """Issue 29: A's NFQUEUE handler runs the pkt_qos learner for the kernel's flow: it scores the ACKs it
    hears, stamps each arm in turn, and caching happens at B and C only while 1.00 is stamped."""
    # 2 % loss per node: the relays cache only once a lost probe puts p below 1, and at 0.5 % a fast machine's
    # 4 s flow often ended before B's or C's probes had lost any (cached == [] on a quiet machine here)
    exp = write_exp(netns, segments=20000, max_s=120, loss=0.02, variants=[
        {"name": "adaptive", "tcp": {"variant": "sack"},
         "snoop": {"policy": "adaptive", "dupack": "once", "sender_qos": "adaptive", "qos_epoch_s": 0.2}}])
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    rep = run_dir(netns / "runs") / "adaptive" / "rep0"
    df = pd.read_csv(rep.parent.parent / "summary.csv")
    assert (df["status"] == "ok").all() and df["integrity_ok"].all()
    q = [e for e in events(rep, "A") if e["ev"] == "qos"]
    assert len(q) >= 3 and len({e["flow"] for e in q}) == 1           # one learner: the one flow A sends
    assert {e["phase"] for e in q} >= {"warmup", "reprobe"} and {e["pkt_qos"] for e in q} == {0.0, 1.0}
    assert all(e["score_mbps"] > 0 for e in q if "score_mbps" in e)
    for n in "BCD":
        assert not [e for e in events(rep, n) if e["ev"] == "qos"]
    ran = [(e["t"] - 0.2, e["t"], e["pkt_qos"]) for e in q]      # each epoch: [start, end) and its arm
    late = 0.1                                                    # a packet stamped at an epoch's end, in flight (a loaded CI)
    log = {n: events(rep, n) for n in "BC"}
    inserts = {n: [] for n in "BC"}                               # when B or C inserted a segment
    for n in "BC":
        held = 0
        for e in log[n]:
            if e["ev"] == "cache":
                if e["segments"] > held:
                    inserts[n].append(e["t"])
                held = e["segments"]
    assert inserts["B"] and inserts["C"]

    def stamped_one(t: float) -> bool:
        return any(a <= t < b + late and arm == 1.0 for a, b, arm in ran) or t > ran[-1][1]

    # B hears only what A stamped: it caches only in 1.00 epochs
    assert all(stamped_one(t) for t in inserts["B"]), [t for t in inserts["B"] if not stamped_one(t)][:10]
    # C hears that and B's local retransmissions, which carry the stamp A gave the copy B cached (one local
    # RTO earlier, so possibly in a 0.00 epoch): C's other inserts follow one of those
    local = [e["t"] for e in log["B"] if e["ev"] == "tx" and e.get("kind") == "local"]
    odd = [t for t in inserts["C"] if not stamped_one(t) and not any(0 <= t - u < late for u in local)]
    assert not odd, (odd[:10], len(local))


def test_kernel_tcp_through_snoop_agents(netns):
    exp = write_exp(netns, variants=[
        {"name": "sack", "tcp": {"variant": "sack"}},
        # policy every: the agents cache at B and C whatever the probes saw.  With adaptive, caching waits for
        # a lost probe (p < 1); at 36 Mbit/s on a quiet machine this 0.7 s flow ended before any, and the
        # agents never cached (4 runs of 4 here, the landed code too).  Adaptive on kernel TCP: the tests above
        # and below.
        {"name": "aspan", "tcp": {"variant": "sack"}, "snoop": {"policy": "every", "dupack": "once"}}],
        settle=2.0, capture={"enabled": True, "max_mb": 50})     # 2 s: every node logs its ETX before the flow
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    run_d = run_dir(netns / "runs")
    df = pd.read_csv(run_d / "summary.csv").set_index("variant", drop=False)
    assert list(df.columns[: len(CONTRACT)]) == CONTRACT
    assert (df["backend"] == "netns").all() and (df["status"] == "ok").all() and df["integrity_ok"].all()
    assert (df["segments"] == 3000).all() and (df["tx_per_pkt_p50"] >= 3).all()   # A, B and C transmit
    assert (df["drops_loss"] > 0).all() and (df["drops_malformed"] == 0).all()
    assert df.loc["sack", "snoop_hits"] == 0 and df.loc["sack", "cache_max_segments"] == 0
    assert df.loc["aspan", "snoop_hits"] > 0 and df.loc["aspan", "local_retransmissions"] > 0
    assert df.loc["aspan", "cache_max_segments"] > 0
    for v in ("sack", "aspan"):
        rep = run_d / v / "rep0"
        meta = json.loads((rep / "meta.json").read_text())
        assert meta["backend"] == "netns" and set(meta["exit_codes"].values()) == {0}
        assert set(meta["nfqueue"]) == set("ABC")                 # D queues nothing: statistic-match loss
        assert set(meta["statistic_drops"]) == set("AD")
        assert all(c["before"] is not None and c["after"] is not None for c in meta["nfqueue"].values())
        a = events(rep, "A")
        cwnd = [e for e in a if e["ev"] == "cwnd"]
        assert cwnd and all(e["cwnd"] % e["mss"] == 0 and e["mss"] == 1000 for e in cwnd)
        assert {e["kind"] for e in a if e["ev"] == "loss"} <= {"dupack", "rto"}
        assert [e["ev"] for e in a].count("flow_end") == 1
        for n in "ABCD":
            evs = [e["ev"] for e in events(rep, n)]
            assert evs[0] == "node_start" and "node_stop" in evs and "etx" in evs
        d_end = [e for e in events(rep, "D") if e["ev"] == "flow_end"]
        assert d_end[0]["ok"] is True and d_end[0]["bytes"] == 3_000_000
        # captures: each handler wrote what left it, the A-SPAN option as rewritten, with its decisions
        for n in "ABC":
            [stop] = [e for e in events(rep, n) if e["ev"] == "node_stop"]
            assert stop["capture"]["packets"] > 3000 and stop["capture"]["cut"] is False
        from scapy.all import IP, rdpcap
        first = rdpcap(str(rep / "B.pcapng"), count=50)
        assert first[0].haslayer(IP)
        # the comments are stored as written: the snooping variant's forwarders noted what they cached
        cached = any(b"cached here" in (rep / f"{n}.pcapng").read_bytes() for n in "BC")
        assert cached == (v == "aspan")


def test_the_schemes_of_papers_000_to_004_on_kernel_tcp(netns):
    """classic, multihop and ACK-all at 1 % loss per node: timers, local retransmissions, forged ACKs."""
    snoop_c = {"policy": "fixed", "fixed_hop": 2}
    exp = write_exp(netns, loss=0.01, tcp={"variant": "reno"}, netns={"congestion": "reno"}, variants=[
        {"name": "classic", "snoop": {"scheme": "classic", **snoop_c}},
        {"name": "multihop", "snoop": {"scheme": "multihop", "snoop_tick_s": 0.2}},
        {"name": "ackall", "snoop": {"scheme": "ackall", **snoop_c}}])
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    run_d = run_dir(netns / "runs")
    df = pd.read_csv(run_d / "summary.csv").set_index("variant", drop=False)
    assert (df["status"] == "ok").all() and df["integrity_ok"].all() and (df["segments"] == 3000).all()
    assert (df["local_retransmissions"] > 0).all() and (df["snoop_hits"] > 0).all()
    for v in df.index:
        rep = run_d / v / "rep0"
        meta = json.loads((rep / "meta.json").read_text())
        assert meta["tcp_counters"]["D"]["PAWSEstab"] == 0     # every local retransmission got past PAWS
        caching = {n for n in "ABCD" if any(e["ev"] == "cache" for e in events(rep, n))}
        assert caching == ({"B", "C"} if v == "multihop" else {"C"})
    gen = [e for e in events(run_d / "ackall" / "rep0", "C") if e["ev"] == "ack_gen"]
    assert len(gen) > 1000 and {e["reason"] for e in gen} <= {"ackall", "window"}   # C acknowledges for D


def test_slack_releases_dupacks_when_the_receiver_falls_silent(netns):
    """Paper 003 on kernel TCP: D hears nothing for 0.3 s; C's silent local timeout releases three dupacks."""
    exp = write_exp(netns, segments=4000, loss=0.0, tcp={"variant": "reno"},
                    netns={"congestion": "reno", "rate_mbit": 10},
                    # the rate limit's queue lets cwnd pass ns-2's 100 cached segments; an uncached loss has no timer
                    variants=[{"name": "slack", "snoop": {"scheme": "slack", "policy": "fixed", "fixed_hop": 2,
                                                          "max_cached_segments": 1000},
                               "loss": {"default": {"model": "none"},
                                        "nodes": {"D": {"model": "none", "down": [[1.0, 1.3]]}}}}])
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    df = pd.read_csv(run_dir(netns / "runs") / "summary.csv")
    assert (df["status"] == "ok").all() and df["integrity_ok"].all() and (df["drops_loss"] > 0).all()
    rep = run_dir(netns / "runs") / "slack" / "rep0"
    c = events(rep, "C")
    assert any(e["ev"] == "local_rto" for e in c)              # the driver ran the agent's timer
    releases = [e for e in c if e["ev"] == "slack"]
    gen = [e for e in c if e["ev"] == "ack_gen"]
    assert releases and len(gen) == 3 * len(releases) and {e["reason"] for e in gen} == {"slack"}
    d_drops = [e for e in events(rep, "D") if e["ev"] == "drop"]
    assert d_drops and all(e["reason"] == "loss" for e in d_drops)   # the down interval, in D's handler


def test_iperf3_through_snooping_forwarders(netns):
    exp = write_exp(netns, segments=4000, variants=[
        {"name": "aspan", "tcp": {"variant": "sack"}, "snoop": {"policy": "adaptive", "pkt_qos": 1.0},
         "netns": {"traffic": "iperf3", "congestion": "cubic"}}])
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    df = pd.read_csv(run_dir(netns / "runs") / "summary.csv")
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    rep = run_dir(netns / "runs") / "aspan" / "rep0"
    end = [e for e in events(rep, "A") if e["ev"] == "flow_end"][0]
    assert end["bytes"] >= 4_000_000 and end["retransmits"] >= 0
    fwd = [e for e in events(rep, "B") if e["ev"] == "tx" and e["flow"].endswith(":6000")]
    assert fwd and all(e["hop"] == 1 for e in fwd)          # the data stream was stamped at A


def test_reno_cubic_and_bbr_senders_log_their_cwnd_and_pacing_rate(netns):
    """netns.congestion bbr runs Linux's BBR (paced by TCP itself): every flow completes through the snoop agents,
    the sender's flow_start names its control and its cwnd events carry the socket's pacing rate."""
    exp = write_exp(netns, segments=2000, loss=0.01, variants=[
        {"name": cc, "tcp": {"variant": "sack"}, "netns": {"congestion": cc}} for cc in ("reno", "cubic", "bbr")])
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    df = pd.read_csv(run_dir(netns / "runs") / "summary.csv")
    assert df["integrity_ok"].all() and (df["status"] == "ok").all() and len(df) == 3
    for cc in ("reno", "cubic", "bbr"):
        log = events(run_dir(netns / "runs") / cc / "rep0", "A")
        start = [e for e in log if e["ev"] == "flow_start"][0]
        assert start["congestion"] == cc
        rates = [e["pacing_bps"] for e in log if e["ev"] == "cwnd" and e.get("pacing_bps") is not None]
        assert rates and all(r > 0 for r in rates), cc

def test_full_size_segments_carry_the_option_without_black_holes(netns):
    """1460-byte segments asked for: the routes' advmss caps them at 1440 + 12 (timestamps), 1500 bytes with the option."""
    exp = write_exp(netns, segments=2000, loss=0.0, variants=[
        {"name": "full", "tcp": {"variant": "sack"}, "flows": [{"sender": "A", "receiver": "D", "segments": 2000,
                                                                "segment_size": 1460}]}])
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    df = pd.read_csv(run_dir(netns / "runs") / "summary.csv")
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    rep = run_dir(netns / "runs") / "full" / "rep0"
    lens = {e["len"] for e in events(rep, "C") if e["ev"] == "tx"}
    assert max(lens) == 1440                                 # 20 IP + 8 option + 32 TCP + 1440 = 1500
    assert {e["mss"] for e in events(rep, "A") if e["ev"] == "cwnd"} == {1440}


def test_kernel_forwarding_and_accept_only_modes(netns):
    exp = write_exp(netns, segments=3000, loss=0.01, variants=[
        {"name": "kernel", "netns": {"handlers": "kernel"}}, {"name": "accept", "netns": {"handlers": "accept"}}])
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    df = pd.read_csv(run_dir(netns / "runs") / "summary.csv")
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    assert (df["drops_loss"] > 0).all()                     # the iptables statistic match, counted after the run
    meta = json.loads((run_dir(netns / "runs") / "kernel" / "rep0" / "meta.json").read_text())
    assert set(meta["statistic_drops"]) == set("ABCD") and "nfqueue" in meta and meta["nfqueue"] == {}


def test_nothing_leaves_the_mesh(netns):
    """The root namespace routes the test range nowhere; the nodes have no route out."""
    cfg = load_experiment({"name": "t"}, "t.yaml").variants[0].config
    plan = mesh.plan_mesh(cfg, state.new_run_id())
    with state.locked():
        state.record_run(plan.rid, plan.nodes)
    try:
        state.ensure_unreachable_route()
        mesh.setup(plan)
        assert run(["ip", "route", "get", "10.2.1.4"], check=False).returncode != 0      # unreachable
        r = run(["ip", "route", "get", "192.0.2.1"], ns=plan.ns("A"), check=False)
        assert r.returncode != 0 and "unreachable" in r.stderr.lower()
        routes = run(["ip", "route", "show"], ns=plan.ns("B")).stdout
        assert "default" not in routes and "10.2.1.4 via 10.2.1.3" in routes
        links = run(["ip", "-o", "link", "show"], ns=plan.ns("B")).stdout
        assert plan.devs["B"]["A"] in links and plan.devs["B"]["C"] in links
        assert plan.devs["B"]["A"] not in run(["ip", "-o", "link", "show"]).stdout   # never in the root namespace
        ok = run([sys.executable, "-c", "import socket; s=socket.socket(); s.settimeout(5); "
                  "s.connect_ex(('10.2.1.4', 9)) and print('reached')"], ns=plan.ns("A"), check=False)
        assert ok.returncode == 0          # D answers (RST) through B and C: the mesh forwards
        off = run(["ethtool", "-k", plan.devs["B"]["C"]], ns=plan.ns("B")).stdout
        assert "tcp-segmentation-offload: off" in off and "generic-receive-offload: off" in off
    finally:
        mesh.teardown(plan)
        state.forget_run(plan.rid)
        state.release_route()


def _wait_flowing(out: Path) -> Path:
    run_d = wait_for(lambda: next((out / "t").glob("*"), None), 60, "run dir")
    rep = wait_for(lambda: next(run_d.glob("*/rep0"), None), 60, "rep dir")
    wait_for(lambda: (rep / "D.log").exists() and '"deliver"' in (rep / "D.log").read_text(), 120, "data flowing")
    return rep


def _ctrl_c_mid_run(tmp: Path) -> None:
    exp = write_exp(tmp, segments=50_000, loss=0.0, settle=0.3, netns={"rate_mbit": 5})
    p = start_run(exp, tmp / "runs", "--no-plot")
    try:
        rep = _wait_flowing(tmp / "runs")
        os.killpg(p.pid, signal.SIGINT)
        p.communicate(timeout=60)
    finally:
        kill_group(p)
    assert p.returncode != 0
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["netns"]["run_id"]
    assert not [ns for ns in state.list_namespaces() if meta["netns"]["run_id"] in ns]


def _killed_handler(tmp: Path) -> None:
    exp = write_exp(tmp, segments=50_000, loss=0.0, settle=0.3, netns={"rate_mbit": 5})
    p = start_run(exp, tmp / "runs", "--no-plot")
    try:
        rep = _wait_flowing(tmp / "runs")
        pid = next(e["pid"] for e in events(rep, "B") if e["ev"] == "node_start")
        os.kill(pid, signal.SIGKILL)
        out, _ = p.communicate(timeout=90)
    finally:
        kill_group(p)
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "failed" and "B.node exited with code -9" in meta["error"], meta["error"]
    assert "rep 0: failed (B.node exited" in out
    assert not alive(pid)


def test_twenty_runs_leave_no_namespace_rule_or_process(netns):
    """18 complete runs, one stopped with Ctrl-C mid-run, one whose B handler is killed."""
    (netns / "full").mkdir()
    exp = write_exp(netns / "full", segments=300, settle=0.3, reps=18)
    p = start_run(exp, netns / "full" / "runs", "--no-plot")
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out
    df = pd.read_csv(run_dir(netns / "full" / "runs") / "summary.csv")
    assert len(df) == 18 and (df["status"] == "ok").all() and df["integrity_ok"].all()
    assert len(assert_nothing_left(netns)) == 18          # a run id per repetition, each found and gone
    (netns / "ctrlc").mkdir()
    _ctrl_c_mid_run(netns / "ctrlc")
    assert len(assert_nothing_left(netns)) == 19
    (netns / "killed").mkdir()
    _killed_handler(netns / "killed")
    assert len(assert_nothing_left(netns)) == 20


def test_a_run_refuses_leftovers_and_aspan_clean_removes_them(netns):
    exp = write_exp(netns, segments=50_000, loss=0.0, settle=0.3, netns={"rate_mbit": 5})
    p = start_run(exp, netns / "runs", "--no-plot")
    try:
        rep = _wait_flowing(netns / "runs")
        rid = json.loads((rep / "A.node.json").read_text())["ns"].split("-")[1]
        os.kill(p.pid, signal.SIGKILL)               # the runner dies without cleaning up
        p.wait()
    finally:
        kill_group(p)
    left = [ns for ns in state.list_namespaces() if rid in ns]
    assert len(left) == 4
    again = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--out", str(netns / "again"),
                            "--no-plot"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "leftovers of an earlier netns run" in again.stderr
    assert "aspan clean" in again.stderr
    clean = subprocess.run([sys.executable, "-m", "experiments", "clean"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert clean.returncode == 0 and f"aspn-{rid}-B" in clean.stdout
    assert not [ns for ns in state.list_namespaces() if rid in ns]
    assert not (state.STATE_DIR / f"{rid}.json").exists()
