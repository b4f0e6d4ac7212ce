"""Baseline for the loopback benchmarks: the fastest plain Python UDP relay chain on this machine.

A sender pushes 1,000-byte datagrams through two relay processes (recv -> sendto,
nothing else) to a sink, paced by a window of ``window`` datagrams acknowledged by the sink.
What the overlay reaches is printed as a ratio of this, measured in the same run.
"""
from __future__ import annotations

import multiprocessing as mp
import socket
import time

PAYLOAD = 1000
HOSTS = ["127.0.1.11", "127.0.1.12", "127.0.1.13", "127.0.1.14"]


def _relay(me: tuple[str, int], nxt: tuple[str, int], prev: tuple[str, int], seconds: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(me)
    s.settimeout(0.5)
    end = time.time() + seconds + 3
    while time.time() < end:
        try:
            data, src = s.recvfrom(65535)
        except socket.timeout:
            continue
        s.sendto(data, nxt if src == prev else prev)


def _sink(me: tuple[str, int], prev: tuple[str, int], seconds: float, out: "mp.Queue[int]") -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(me)
    s.settimeout(0.5)
    n = 0
    end = time.time() + seconds + 3
    while time.time() < end:
        try:
            data, _ = s.recvfrom(65535)
        except socket.timeout:
            continue
        n += 1
        s.sendto(data[:40], prev)  # a small "ACK" back along the chain
    out.put(n)


def relay_baseline_mbps(seconds: float = 5.0, window: int = 64, port: int = 47900) -> float:
    addrs = [(h, port) for h in HOSTS]
    q: "mp.Queue[int]" = mp.Queue()
    procs = [mp.Process(target=_relay, args=(addrs[1], addrs[2], addrs[0], seconds)),
             mp.Process(target=_relay, args=(addrs[2], addrs[3], addrs[1], seconds)),
             mp.Process(target=_sink, args=(addrs[3], addrs[2], seconds, q))]
    for p in procs:
        p.start()
    time.sleep(0.5)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(addrs[0])
    s.settimeout(0.2)
    data = b"x" * PAYLOAD
    inflight = 0
    sent = 0
    t0 = time.time()
    while time.time() - t0 < seconds:
        while inflight < window:
            s.sendto(data, addrs[1])
            inflight += 1
            sent += 1
        try:
            s.recvfrom(100)
            inflight -= 1
        except socket.timeout:
            inflight = 0  # something was lost: reopen the window
    s.close()
    received = q.get(timeout=seconds + 10)
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.terminate()
    return received * PAYLOAD * 8 / seconds / 1e6
