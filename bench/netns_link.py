"""The netns backend's emulated links: configured vs measured ping RTT and iperf3 rate (issue 11, item 4).

For each (rate R Mbit/s, delay D ms) and each chain length h (hops), the bench builds the netns mesh
with ``link: {rate_mbps: R, delay_ms: D}`` and the node daemons running (snoop handlers by default),
then measures from the first node to the last:

* ping RTT: the median of ``--pings`` pings (``ping -U``: user-to-user time; plain ping takes the reply's
  kernel receive timestamp, which is set when the packet comes off the veth, before the receiving
  node's shaper has held it for the last link);  expected: 2 h D plus the serialisation of the
  84-byte echo request and reply on every link, 2 h x 84 x 8 / R;
* iperf3 rate (TCP, SACK, ``-O`` seconds omitted for slow start): the receiver's goodput; expected
  R x payload / IP packet (1440 / 1500 with the snoop handlers' 8-byte option, 1440 / 1492 without),
  since the link's rate counts IP bytes.

Run (root): .venv/bin/python -m bench netns_link [--pairs 1:5,10:2,2:20] [--hops 1,3] [--pings 20]
            [--seconds 8] [--omit 3] [--handlers snoop|accept|kernel] [--realtime]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from experiments.backends.netns.node import REALTIME_PRIORITY
from experiments.backends.netns.run import mesh_session
from experiments.backends.netns.sh import run
from experiments.schema import load_experiment

PING_BYTES = 84           # IP size of a default echo request / reply (56 bytes of data)
PAYLOAD = 1440            # a full segment's TCP payload (advmss 1452 minus 12 bytes of timestamps; docs/NETNS.md)


@dataclass
class Measured:
    rate_mbps: float
    delay_ms: float
    hops: int
    rtt_expected_ms: float
    rtt_median_ms: float
    goodput_expected_mbps: float
    goodput_mbps: float
    link_drops: int
    late_mean_us: float
    late_1ms: int             # releases more than 1 ms late (all nodes)
    steal: float              # share of the vCPUs' time the hypervisor took during the measurement

    @property
    def rtt_error(self) -> float:
        return self.rtt_median_ms / self.rtt_expected_ms - 1.0

    @property
    def rate_error(self) -> float:
        return self.goodput_mbps / self.goodput_expected_mbps - 1.0


def chain_config(rate_mbps: float, delay_ms: float, hops: int, handlers: str = "snoop",
                 queue_packets: int | None = None, realtime: bool = False) -> dict:
    """A chain of ``hops`` links, every direction emulated; no loss, SACK at the sender."""
    chain = [chr(ord("A") + i) for i in range(hops + 1)]
    link: dict = {"rate_mbps": rate_mbps, "delay_ms": delay_ms}
    if queue_packets is not None:
        link["queue_packets"] = queue_packets
    doc = {"name": "netns-link", "backend": "netns", "topology": {"chain": chain}, "link": link,
           "flows": [{"sender": chain[0], "receiver": chain[-1]}], "tcp": {"variant": "sack"},
           "netns": {"handlers": handlers, "realtime": realtime}}
    return load_experiment(doc, "bench/netns_link.py").variants[0].config


def expected_rtt_ms(rate_mbps: float, delay_ms: float, hops: int) -> float:
    return 2 * hops * (delay_ms + PING_BYTES * 8 / (rate_mbps * 1e6) * 1e3)


def expected_goodput_mbps(rate_mbps: float, handlers: str) -> float:
    ip = PAYLOAD + 12 + 40 + (8 if handlers == "snoop" else 0)
    return rate_mbps * PAYLOAD / ip


def cpu_times() -> tuple[int, int]:
    """(steal, total) of all CPUs since boot, in USER_HZ ticks (/proc/stat): on a VM, steal is the time
    its vCPUs were ready to run but the hypervisor ran something else (docs/NETNS.md, "Emulated links")."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the CPUs' time stolen between two :func:`cpu_times` readings."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def ping_median_ms(ns: str, dst: str, count: int, interval: float = 0.2, realtime: bool = False) -> float:
    """The median RTT of ``count`` pings; ``realtime``: ping itself runs SCHED_RR, so that its own
    wake-up under CPU load (up to a scheduler tick) is not counted as the links' time."""
    return statistics.median(ping_rtts_ms(ns, dst, count, interval, realtime))


def ping_rtts_ms(ns: str, dst: str, count: int, interval: float = 0.2, realtime: bool = False) -> list[float]:
    """The RTT of each of ``count`` pings that got a reply (RuntimeError if fewer than half did)."""
    pre = ["chrt", "-r", str(REALTIME_PRIORITY)] if realtime else []   # as the node daemons
    r = run([*pre, "ping", "-U", "-n", "-c", str(count), "-i", str(interval), dst], ns=ns, check=False,
            timeout=count * interval + 30)
    rtts = [float(x.split("time=")[1].split()[0]) for x in r.stdout.splitlines() if "time=" in x]
    if len(rtts) < count // 2:
        raise RuntimeError(f"ping {dst}: {len(rtts)} of {count} replies: {r.stdout[-300:]} {r.stderr[-300:]}")
    return rtts


@contextlib.contextmanager
def iperf3_server(ns: str) -> Iterator[None]:
    """A one-test iperf3 server (``-s -1``) in namespace ``ns``, given half a second to listen;
    waited for on exit (killed if it has not ended 10 s later)."""
    srv = subprocess.Popen(["ip", "netns", "exec", ns, "iperf3", "-s", "-1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        yield
    finally:
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


def iperf3_mbps(server_ns: str, client_ns: str, dst: str, seconds: float, omit: float) -> float:
    """The receiver's goodput of a TCP iperf3 test, the first ``omit`` seconds (slow start) left out."""
    with iperf3_server(server_ns):
        r = run(["iperf3", "-c", dst, "-t", str(seconds), "-O", str(omit), "-J"], ns=client_ns, check=False,
                timeout=seconds + omit + 60)
    data = json.loads(r.stdout or "{}")
    if "end" not in data or "sum_received" not in data["end"]:
        raise RuntimeError(f"iperf3 -c {dst}: {data.get('error', r.stderr[-300:])}")
    return data["end"]["sum_received"]["bits_per_second"] / 1e6


def _link_stats(rep_dir: Path, nodes: list[str]) -> tuple[int, float, int]:
    """Drop-tail drops, the mean lateness of released packets and the releases more than 1 ms late,
    from the daemons' node_stop."""
    drops = released = late = late_1ms = 0
    for n in nodes:
        for line in (rep_dir / f"{n}.log").read_text().splitlines():
            e = json.loads(line)
            if e["ev"] == "node_stop" and "link" in e:
                drops += e["link"]["link_drops"]
                released += e["link"]["released"]
                late += e["link"]["late_sum_us"]
                late_1ms += e["link"]["late_1ms"]
    return drops, (late / released if released else 0.0), late_1ms


def measure(rate_mbps: float, delay_ms: float, hops: int, pings: int = 20, seconds: float = 8.0,
            omit: float = 3.0, handlers: str = "snoop", rate: bool = True, realtime: bool = False) -> Measured:
    """One configuration, measured in a fresh mesh (torn down before returning)."""
    cfg = chain_config(rate_mbps, delay_ms, hops, handlers, realtime=realtime)
    chain = list(cfg.topology.nodes)
    with tempfile.TemporaryDirectory(prefix="netns-link-") as tmp:
        rep = Path(tmp)
        with mesh_session(cfg, rep) as plan:
            dst = plan.addrs[chain[-1]]
            t0 = cpu_times()
            rtt = ping_median_ms(plan.ns(chain[0]), dst, pings, realtime=realtime)
            steal = steal_share(t0, cpu_times())
            good = iperf3_mbps(plan.ns(chain[-1]), plan.ns(chain[0]), dst, seconds, omit) if rate else float("nan")
        drops, late, late_1ms = _link_stats(rep, chain)
    return Measured(rate_mbps, delay_ms, hops, expected_rtt_ms(rate_mbps, delay_ms, hops), rtt,
                    expected_goodput_mbps(rate_mbps, handlers), good, drops, late, late_1ms, steal)


def table(rows: list[Measured]) -> str:
    out = ["| R Mbit/s | D ms | hops | RTT expected ms | RTT median ms | error | goodput expected Mbit/s "
           "| goodput Mbit/s | error | drop-tail drops | mean lateness us | late > 1 ms | steal during pings |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in rows:
        out.append(f"| {m.rate_mbps:g} | {m.delay_ms:g} | {m.hops} | {m.rtt_expected_ms:.2f} | {m.rtt_median_ms:.2f} | "
                   f"{m.rtt_error:+.1%} | {m.goodput_expected_mbps:.3f} | {m.goodput_mbps:.3f} | {m.rate_error:+.1%} | "
                   f"{m.link_drops} | {m.late_mean_us:.0f} | {m.late_1ms} | {m.steal:.0%} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench netns_link")
    ap.add_argument("--pairs", default="1:5,10:2,2:20", help="R:D pairs (Mbit/s : ms), comma-separated")
    ap.add_argument("--hops", default="1,3")
    ap.add_argument("--pings", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--omit", type=float, default=3.0)
    ap.add_argument("--handlers", default="snoop", choices=["snoop", "accept", "kernel"])
    ap.add_argument("--realtime", action="store_true", help="netns.realtime (daemons SCHED_RR), ping SCHED_RR too")
    args = ap.parse_args(argv)
    pairs = [tuple(float(x) for x in p.split(":")) for p in args.pairs.split(",")]
    rows = []
    for hops in (int(h) for h in args.hops.split(",")):
        for r, d in pairs:
            m = measure(r, d, hops, args.pings, args.seconds, args.omit, args.handlers, realtime=args.realtime)
            print(f"R {r:g} Mbit/s, D {d:g} ms, {hops} hop(s): RTT {m.rtt_median_ms:.2f} ms "
                  f"(expected {m.rtt_expected_ms:.2f}), goodput {m.goodput_mbps:.3f} Mbit/s "
                  f"(expected {m.goodput_expected_mbps:.3f})", flush=True)
            rows.append(m)
    print()
    print(table(rows))
    bad = [m for m in rows if abs(m.rtt_error) > 0.1 or abs(m.rate_error) > 0.1]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} within 10 % ({args.handlers} handlers"
          f"{', realtime' if args.realtime else ''})")
    return 0
