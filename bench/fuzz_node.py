"""Flood a real node process with hostile datagrams on loopback and check its accounting (issue 13, item 6).

One ``aspan node`` process (node B of the chain A-B-C-D, the local backend's config, no flows; its
neighbours' addresses lead nowhere) hears ``--count`` datagrams from one socket bound to its neighbour
A's UDP address (no node A runs: the flood is what a hostile neighbour sends; a node drops anything
from an address that is not a neighbour's as ``stranger`` before it is parsed, issue 27 item 3, which
``--stranger`` floods instead) as fast as it can send them: random bytes, truncated, bit-flipped and
field-absurd encodings (tests/test_fuzz_node's kinds, drawn with a seeded RNG).  Reports the send and processing rates, the accounting
``sent = received by the node + dropped by the kernel (socket buffer full)``, the node's drops by
reason, its log size, and its RSS before and after.  Loopback only.
With ``--forged`` the datagrams are instead well-formed data segments of a flow no experiment
configured (A's address to D's, 1000-byte payloads), which B forwards and snoops: the flood of issue 27,
item 2, whose log volume is bounded (docs/LOGS.md, "Traffic no configured flow explains").
Run: .venv/bin/python -m bench fuzz_node [--count N] [--mac] [--forged] [--stranger]
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aspan.fields import AspanFields
from experiments.backends.local import free_port, loopback_address
from experiments.build import new_key, write_key
from experiments.schema import load_experiment
from routing.overlay.wire import DATA, PROBE, Packet, Probe, encode
from tcp_user.segment import ACK, SYN, Segment

MESH = ["10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def rx_queue(bind: tuple[str, int]) -> int | None:
    """Bytes waiting in the receive queue of the UDP socket bound to ``bind`` (/proc/net/udp; the flood's
    own socket, on neighbour A's address, has the same port)."""
    ip, port = bind
    want = "%08X:%04X" % (int.from_bytes(socket.inet_aton(ip), "little"), port)
    for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
        cols = line.split()
        if cols[1] == want:
            return int(cols[4].split(":")[1], 16)
    return None


def junk_pool(rng: random.Random, n: int = 4096) -> list[bytes]:
    """Datagrams of every hostile kind, reused round-robin by the flood."""
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out.append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300))))
            continue
        if rng.random() < 0.5:
            pkt = Packet(DATA, rng.choice(MESH), rng.choice([0, 5000, 6000, 65535]), rng.choice(MESH),
                         rng.choice([0, 5000, 6000]), rng.choice([0, 1, 2, 254, 255]),
                         AspanFields(rng.choice([0.0, 1.0]), rng.choice([0.0, 1.0]), rng.randrange(256),
                                     rng.randrange(256), rng.randrange(256)),
                         Segment(rng.getrandbits(32), rng.getrandbits(32), rng.choice([ACK, SYN, 0]),
                                 rng.getrandbits(32), (), b"x" * rng.choice([0, 1, 1000])))
        else:
            pkt = Packet(PROBE, rng.choice(MESH), 0, rng.choice(MESH), 0, probe=Probe(rng.getrandbits(32), -1.0))
        data = bytearray(encode(pkt))
        if kind == 1:
            data = data[: rng.randrange(len(data))]
        elif kind == 2:
            bit = rng.randrange(len(data) * 8)
            data[bit // 8] ^= 1 << (bit % 8)
        out.append(bytes(data))
    return out


def forged_pool(rng: random.Random, n: int = 4096) -> list[bytes]:
    """Well-formed data segments of flows no experiment configured (A -> D, sender ports above the
    configured ones), consecutive sequence numbers: B forwards each, and caches it while there is room."""
    out = []
    for i in range(n):
        seg = Segment((1000 * i) % (1 << 32), rng.getrandbits(32), ACK, 65535, (), b"f" * 1000)
        out.append(encode(Packet(DATA, MESH[0], 40000 + i % 16, MESH[3], 6000, 1, AspanFields(), seg)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench fuzz_node")
    ap.add_argument("--count", type=int, default=1_000_000, help="datagrams to send (default 1,000,000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mac", action="store_true", help="the node runs the authenticated overlay")
    ap.add_argument("--forged", action="store_true",
                    help="well-formed data segments of a flow no experiment configured, instead of junk")
    ap.add_argument("--stranger", action="store_true",
                    help="send from an address that is not a neighbour's (every datagram a stranger's)")
    args = ap.parse_args(argv)
    exp = load_experiment({"name": "fuzz", "etx": {"settle_s": 0}, "flows": [{"segments": 1}],
                           "snoop": {"policy": "every"}}, "fuzz.yaml")
    cfg = exp.variants[0].config
    names = list(cfg.topology.nodes)
    port = free_port()
    udp = {n: (loopback_address(i), port) for i, n in enumerate(names)}
    assert all(ipaddress.ip_address(a).is_loopback for a, _ in udp.values())   # traffic to loopback only
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        now = time.time()
        conf = {"experiment": cfg.to_dict(), "node": "B", "seed": 1, "t0": now, "deadline": now + 3600,
                "log": str(d / "B.log"), "done_file": str(d / "B.done"), "bind": list(udp["B"]),
                "peers": {cfg.topology.addresses[m]: list(udp[m]) for m in names if m != "B"}}
        if args.mac:
            conf["auth_key_file"] = str(write_key(d / "B.key", new_key()))
        (d / "B.node.json").write_text(json.dumps(conf))
        node = subprocess.Popen([sys.executable, "-m", "experiments", "node", "--config", str(d / "B.node.json")],
                                stdout=subprocess.DEVNULL, stderr=open(d / "B.stderr", "wb"))
        try:
            deadline = time.time() + 20
            while '"node_start"' not in ((d / "B.log").read_text() if (d / "B.log").exists() else ""):
                if time.time() > deadline or node.poll() is not None:
                    raise SystemExit(f"the node did not start: {(d / 'B.stderr').read_text()}")
                time.sleep(0.05)
            time.sleep(0.5)
            rss0 = rss_kib(node.pid)
            pool = (forged_pool if args.forged else junk_pool)(random.Random(args.seed))
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((loopback_address(20), 0) if args.stranger else udp["A"])   # a stranger, or neighbour A
            target = udp["B"]
            t0 = time.perf_counter()
            for i in range(args.count):
                s.sendto(pool[i % len(pool)], target)
            t_sent = time.perf_counter() - t0
            while (rx_queue(target) or 0) > 0:   # until the node has read everything the kernel kept
                time.sleep(0.01)
            t_done = time.perf_counter() - t0
            s.close()
            rss1 = rss_kib(node.pid)
        finally:
            node.send_signal(signal.SIGTERM)
            node.wait(30)
        events = [json.loads(line) for line in (d / "B.log").read_text().splitlines()]
        log_bytes = os.path.getsize(d / "B.log")
    [stop] = [e for e in events if e["ev"] == "node_stop"]
    rx, kdrops = stop["rx_datagrams"], stop["socket_drops"] or 0
    drops = {k: v for k, v in stop["drops"].items() if v}
    print(f"sent {args.count} datagrams in {t_sent:.1f} s ({args.count / t_sent:,.0f}/s); the node read "
          f"{rx} of them in {t_done:.1f} s ({rx / t_done:,.0f}/s){' with the MAC on' if args.mac else ''}")
    print(f"accounting: sent {args.count} = received {rx} + kernel drops {kdrops} "
          f"-> {'holds' if rx + kdrops == args.count else 'DOES NOT HOLD'}")
    print(f"drops by reason (node_stop): {drops}, sum {sum(drops.values())}; "
          f"forwarded {stop.get('tx', {}).get('fwd', sum(1 for e in events if e['ev'] == 'tx'))} data segments "
          f"({sum(1 for e in events if e['ev'] == 'tx')} tx lines)")
    print(f"log: {len(events)} lines, {log_bytes / 1e3:.0f} kB ({log_bytes / 1e6 / t_done:.3f} MB/s over "
          f"{t_done:.1f} s); RSS {rss0 / 1024:.1f} MiB before, "
          f"{rss1 / 1024:.1f} MiB after; exit code {node.returncode}")
    fates_ok = True
    if args.stranger:                    # nothing from a stranger is parsed (issue 27, item 3)
        fates_ok = drops == {"stranger": rx}
        print(f"every datagram read dropped as stranger: {'yes' if fates_ok else 'NO'}")
    if args.forged and "tx" in stop:     # every datagram the node read: forwarded or dropped (node_stop, exact)
        fates = stop["tx"]["fwd"] + sum(drops.values())
        fates_ok = fates == rx
        print(f"node_stop: forwarded {stop['tx']['fwd']} + dropped {sum(drops.values())} = {fates} "
              f"{'=' if fates_ok else '!='} received {rx}; unexplained events {stop['unexplained']}")
    return 0 if rx + kdrops == args.count and fates_ok and node.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
