"""Capacity of the local backend's medium process (experiments/backends/medium_process.py) in frames/s.

One sender blasts overlay-sized datagrams (1,060 bytes) at the medium process over one directed pair,
a sink counts what comes out.  The medium is made so fast (100 Gbit/s, 1 us slots, no preamble) that
the emulated airtime is no limit: what is measured is the process's own cost per frame.  Compare with
the frame rate of the medium it emulates: a saturated 802.11b hop carries about 600 such frames/s
(docs/MEDIUM.md), 802.11g about 3,000.

Run: .venv/bin/python -m bench medium_capacity [--frames 30000]
"""
from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time
from pathlib import Path

from experiments.backends import medium_process
from experiments.backends.local import free_port
from experiments.schema import load_experiment

# 1 us slots and SIFS: the least the schema accepts (issue 24, item 8: no 802.11 PHY has less); at 100 Gbit/s
# and cw_min 1 an exchange still holds the air for about 3 us, far below the process's cost per frame
FAST = {"model": "dcf", "standard": "g", "rate_mbps": 100_000, "basic_rate_mbps": 100_000, "slot_us": 1,
        "sifs_us": 1, "preamble_us": 0, "cw_min": 1, "queue_packets": 1000, "hears": {"A": ["B"], "B": ["A"]}}


def measure(frames: int, payload: int = 1060, pace_every: int = 200, pace_s: float = 0.002) -> dict[str, float]:
    cfg = load_experiment({"topology": {"chain": ["A", "B"]}, "medium": FAST,
                           "flows": [{"sender": "A", "receiver": "B", "segments": 1}]}, "capacity").variants[0].config
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sink.bind(("127.0.1.2", 0))
    sink.settimeout(1.0)
    udp = {"A": ("127.0.1.1", 9), "B": sink.getsockname()}
    with tempfile.TemporaryDirectory() as tmp:
        proc, peers = medium_process.start(cfg, 1, Path(tmp), udp, free_port("127.0.2.1"), time.time() + 600,
                                           time.time() + 10)
        try:
            dst = tuple(peers["A"][cfg.topology.addresses["B"]])
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            data = bytes([0xA5, 2, 1]) + bytes(payload - 3)   # not a probe (ptype 1): acknowledged, retried
            times: list[float] = []

            def count() -> None:   # the sink reads while the sender sends (its buffer is small)
                while True:
                    try:
                        sink.recv(65536)
                    except TimeoutError:
                        return
                    times.append(time.perf_counter())

            reader = threading.Thread(target=count)
            reader.start()
            t0 = time.perf_counter()
            for i in range(frames):
                tx.sendto(data, dst)
                if i % pace_every == pace_every - 1:
                    time.sleep(pace_s)
            sent_s = time.perf_counter() - t0
            reader.join()
            got = len(times)
            first, last = (times[0], times[-1]) if times else (0.0, 0.0)
        finally:
            proc.terminate()
            proc.wait()
    span = max(last - first, 1e-9)
    return {"sent": frames, "delivered": got, "send_rate": frames / sent_s, "frames_per_s": got / span}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench medium_capacity")
    ap.add_argument("--frames", type=int, default=10000)
    args = ap.parse_args(argv)
    print("| offered frames/s | delivered | delivered frames/s |")
    print("|---:|---:|---:|")
    for rate in (2000, 5000, 10000, 20000, 40000):
        r = measure(args.frames, pace_every=max(1, rate // 500), pace_s=0.002)
        print(f"| {r['send_rate']:,.0f} | {r['delivered'] / r['sent']:.1%} | {r['frames_per_s']:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
