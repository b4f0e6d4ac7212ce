"""Emulated links on the netns backend, as root (issue 11, item 4): held NFQUEUE verdicts give the
configured RTT and rate, a full link queue drops tail and says so.

Skips without root and the tools like tests/root/test_netns_backend.py; fails instead under
ASPAN_REQUIRE_ROOT_TESTS=1.  The daemons and ping run SCHED_RR (netns.realtime) so that another job
loading the CPUs does not decide the result (docs/NETNS.md, "Emulated links").

RTT bounds: the issue's 10 % on the median of the pings, and on the smallest (what the links add when
no release came late).  Releases do come late by 3-20 ms a few times a second on this VM (the
hypervisor deschedules a vCPU; node_stop ``link.late_max_us``), which used to put the median 15-29 %
over: each hop counted the previous hop's late release as link time.  The next hop now takes such a
packet as let go on time (routing.drivers.link_shaper.LatenessBoard), so only the last hop of each direction
can still lengthen a ping (docs/NETNS.md, "Emulated links").

What the VM cannot give is measured, not excused: the hypervisor's steal during the pings (/proc/stat)
is in every message.  When a median misses 10 % while the hypervisor took more than STEAL_RETRY of the
vCPUs' time, the pings are taken again in the same mesh, up to ATTEMPTS times (at 19-37 % steal the
medians were +9 to +30 % with or without the LatenessBoard: docs/NETNS.md).  A miss with less steal
fails.  When every attempt missed under more steal, the median cannot be judged on this machine at
this moment: the test checks everything else and then skips, saying so with every attempt's numbers.
"""
import dataclasses
from tests import ROOT
import json
import statistics
import subprocess
import sys
import numpy as np
import pandas as pd
import pytest
import yaml
from bench.netns_link import (chain_config, cpu_times, expected_goodput_mbps, expected_rtt_ms, iperf3_mbps,
                              ping_rtts_ms, steal_share)
from tests.runs import REQUIRED, events, run_dir, write_exp
from experiments.backends.netns.run import mesh_session
from experiments.backends.netns.sh import run


STEAL_RETRY = 0.15


ATTEMPTS = 4


def pings_within(ns: str, dst: str, count: int, want_ms: float) -> tuple[list[float], list[str], bool]:
    """(the RTTs of ``count`` realtime pings, what was measured on each attempt, whether the median can be
    judged): another attempt only while the median misses 10 % under more than STEAL_RETRY steal."""
    said = []
    for attempt in range(1, ATTEMPTS + 1):
        t0 = cpu_times()
        rtts = ping_rtts_ms(ns, dst, count, realtime=True)
        steal = steal_share(t0, cpu_times())
        med = statistics.median(rtts)
        said.append(f"attempt {attempt}: median {med:.2f} ms ({med / want_ms - 1:+.1%} of {want_ms:.2f}), "
                    f"min {min(rtts):.2f}, max {max(rtts):.2f}, steal {steal:.0%}")
        if abs(med / want_ms - 1) <= 0.10 or steal <= STEAL_RETRY:
            print("; ".join(said))
            return rtts, said, True
    print("; ".join(said))
    return rtts, said, False


def judge_median(rtts: list[float], want_ms: float, said: list[str], judged: bool) -> None:
    """The issue's 10 % on the median, or a skip when every attempt was taken under heavy steal."""
    if not judged:
        pytest.skip(f"median RTT not judged: the hypervisor took more than {STEAL_RETRY:.0%} of the vCPUs "
                    f"during each of {ATTEMPTS} measurements and each missed 10 %: " + "; ".join(said))
    assert statistics.median(rtts) == pytest.approx(want_ms, rel=0.10), (rtts, said)


@pytest.fixture(autouse=True)
def _ping_and_chrt():
    """ping and chrt measure the RTT (bench/netns_link.py): skip without them, or fail under ASPAN_REQUIRE_ROOT_TESTS=1."""
    import shutil
    missing = [t for t in ("ping", "chrt") if shutil.which(t) is None]
    if missing:
        msg = f"the emulated links' tests need {', '.join(missing)} (.ci/run installs them)"
        if REQUIRED:
            pytest.fail(msg)
        pytest.skip(msg)


def test_ping_rtt_and_iperf3_rate_match_the_configured_link(netns):
    rate, delay, hops = 5.0, 10.0, 3
    cfg = chain_config(rate, delay, hops, realtime=True)
    a, d = cfg["topology"]["chain"][0], cfg["topology"]["chain"][-1]
    want_rtt = expected_rtt_ms(rate, delay, hops)          # 60 ms of delay + 0.8 ms of serialisation
    with mesh_session(cfg, netns) as plan:
        rtts, said, judged = pings_within(plan.ns(a), plan.addrs[d], 11, want_rtt)
        good = iperf3_mbps(plan.ns(d), plan.ns(a), plan.addrs[d], 5, 2)
        rules = run(["iptables-legacy", "-t", "raw", "-S", "PREROUTING"], ns=plan.ns("B")).stdout
    assert "NFQUEUE --queue-num 1" in rules
    assert min(rtts) == pytest.approx(want_rtt, rel=0.10), (rtts, said)
    want = expected_goodput_mbps(rate, "snoop")
    assert good == pytest.approx(want, rel=0.10), (good, want)
    stops = [e for n in cfg["topology"]["chain"] for e in events(netns, n) if e["ev"] == "node_stop"]
    assert len(stops) == 4 and all(e["link"]["released"] > 0 and e["link"]["unknown_dev"] == 0 for e in stops)
    # every forwarded ping and TCP segment was looked up on the LatenessBoard: C and D took the requests B
    # and C let go, A and B the replies C and B let go (each with at least the wake-up's lateness)
    assert all(e["link"]["carried"] >= len(rtts) for e in stops), [e["link"] for e in stops]
    judge_median(rtts, want_rtt, said, judged)


@pytest.mark.parametrize("handlers", ["accept", "kernel"])
def test_every_handlers_mode_holds_the_links(netns, handlers):
    """Without the snoop handler (accept-only, plain kernel forwarding) the daemons still hold every link."""
    cfg = chain_config(1.0, 10.0, 2, handlers, realtime=True)
    want = expected_rtt_ms(1.0, 10.0, 2)                   # 40 ms + 4 x 0.67 ms
    with mesh_session(cfg, netns) as plan:
        rtts, said, judged = pings_within(plan.ns("A"), plan.addrs["C"], 7, want)
    assert min(rtts) == pytest.approx(want, rel=0.10), (rtts, said)
    starts = [e for n in "ABC" for e in events(netns, n) if e["ev"] == "node_start"]
    assert {e["handlers"] for e in starts} == {handlers} and all(e["realtime"] for e in starts)
    judge_median(rtts, want, said, judged)


def test_without_a_link_section_nothing_is_held(netns):
    cfg = chain_config(1.0, 50.0, 1)
    cfg = dataclasses.replace(cfg, link=dataclasses.replace(cfg.link, rate_mbps=None, delay_ms=None, queue_packets=None))
    with mesh_session(cfg, netns) as plan:
        rtt = statistics.median(ping_rtts_ms(plan.ns("A"), plan.addrs["B"], 5))
        rules = run(["iptables-legacy-save"], ns=plan.ns("B")).stdout
    assert rtt < 20 and "queue-num 1" not in rules


def test_a_run_with_a_small_link_queue_drops_tail_and_counts_it(netns):
    """The whole backend: bulk kernel TCP over 3 emulated hops with a 4-packet queue, 1 % loss per node."""
    exp = write_exp(netns, segments=1500, loss=0.01, settle=0.5,
                    link={"rate_mbps": 4, "delay_ms": 5, "queue_packets": 4})
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--out", str(netns / "runs"),
                        "--no-plot"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rd = run_dir(netns / "runs")
    rep = rd / "sack" / "rep0"
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["netns"]["link"] == {"rate_mbps": 4, "delay_ms": 5, "queue_packets": 4,
                                                           "mahimahi": None}
    link_drops = [e for n in "ABCD" for e in events(rep, n) if e["ev"] == "drop" and "link" in e]
    assert link_drops and {e["reason"] for e in link_drops} == {"queue"}
    assert {e["link"] for e in link_drops} <= {"A->B", "B->C", "C->D", "D->C", "C->B", "B->A"}
    counted = sum(e["link"]["link_drops"] for n in "ABCD" for e in events(rep, n) if e["ev"] == "node_stop")
    assert counted == sum(e.get("count", 1) for e in link_drops)
    # the statistic match (A and D) now sits in mangle, behind the shaper, and is still counted
    assert set(meta["statistic_drops"]) == {"A", "D"} and sum(meta["statistic_drops"].values()) > 0
    row = pd.read_csv(rd / "summary.csv").iloc[0]
    assert row["drops_queue"] >= counted > 0 and row["integrity_ok"]
    # 1500 segments of 1000 bytes at 4 Mbit/s take at least 3 s: the link, not the veth, set the pace
    assert row["goodput_mbps"] < 4.0


# ---- the DCF medium on netns (experiments/backends/netns/medium.py) ---------------------------------
def test_the_dcf_medium_carries_kernel_tcp_like_the_sim(netns):
    """A 4-node 802.11b chain: the medium daemon holds every frame of every namespace; goodput is the
    medium's (near the sim's for the same file, far below the plain veths'), with retries, hidden-terminal
    collisions and a mac event per station in medium.log."""
    doc = {"name": "t", "repetitions": 1, "medium": {"model": "dcf", "standard": "b"},
           "loss": {"default": {"model": "none"}}, "etx": {"settle_s": 1}, "tcp": {"variant": "sack"},
           "netns": {"realtime": True}, "limits": {"max_duration_s": 120},
           "flows": [{"sender": "A", "receiver": "D", "segments": 600}], "variants": [{"name": "sack"}]}
    exp = netns / "t.yaml"
    exp.write_text(yaml.safe_dump(doc))
    good = {}
    for backend in ("sim", "netns"):
        out = netns / backend
        r = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--backend", backend,
                            "--out", str(out), "--no-plot"], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        row = pd.read_csv(run_dir(out) / "summary.csv").iloc[0]
        assert row["status"] == "ok" and row["integrity_ok"]
        good[backend] = row["goodput_mbps"]
    rep = run_dir(netns / "netns") / "sack" / "rep0"
    mac = {e["station"]: e for e in events(rep, "medium") if e["ev"] == "mac"}
    assert set(mac) == {"A", "B", "C", "D"} and all(m["attempts"] >= m["frames"] > 0 for m in mac.values())
    assert sum(m["hidden"] for m in mac.values()) > 0          # A and C cannot sense each other (200 m spacing)
    frames = [e for e in events(rep, "medium") if e["ev"] == "frame"]
    assert {(e["src"], e["dst"]) for e in frames} >= {("A", "B"), ("B", "C"), ("C", "D"), ("D", "C")}
    stop = next(e for e in events(rep, "medium") if e["ev"] == "node_stop")
    assert stop["frames_out"] == len(frames) and stop["unknown_dev"] == 0
    # the daemon's lateness, as the report gives it (issue 28, item 4): the frames' late_us, pooled
    from plots.lateness import run_lateness
    (late,) = run_lateness(run_dir(netns / "netns"))
    assert late.frames == len(frames)
    assert late.p99_us == pytest.approx(float(np.percentile([e["late_us"] for e in frames], 99)))
    # kernel TCP acknowledges every second segment, user TCP every one: fewer ACK frames, a bit more goodput
    assert 0.8 * good["sim"] < good["netns"] < 1.5 * good["sim"] < 2.0, good


def test_a_dying_medium_daemon_fails_the_repetition_and_leaves_nothing(netns):
    import os
    import signal
    from tests.runs import alive, kill_group, start_run, wait_for
    doc = {"name": "t", "repetitions": 1, "medium": {"model": "dcf"}, "loss": {"default": {"model": "none"}},
           "etx": {"settle_s": 0.3}, "limits": {"max_duration_s": 120},
           "flows": [{"sender": "A", "receiver": "D", "segments": 50_000}], "variants": [{"name": "sack"}]}
    exp = netns / "t.yaml"
    exp.write_text(yaml.safe_dump(doc))
    p = start_run(exp, netns / "runs", "--backend", "netns", "--no-plot")
    try:
        run_d = wait_for(lambda: next((netns / "runs" / "t").glob("*"), None), 60, "run dir")
        rep = wait_for(lambda: next(run_d.glob("*/rep0"), None), 60, "rep dir")
        wait_for(lambda: (rep / "D.log").exists() and '"deliver"' in (rep / "D.log").read_text(), 120, "data flowing")
        pid = next(e["pid"] for e in events(rep, "medium") if e["ev"] == "node_start")
        os.kill(pid, signal.SIGKILL)
        p.communicate(timeout=90)
    finally:
        kill_group(p)
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "failed" and "medium exited with code -9" in meta["error"], meta["error"]
    assert not alive(pid)
