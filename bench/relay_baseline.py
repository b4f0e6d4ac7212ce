"""Baseline for the loopback benchmarks: the fastest plain Python UDP relay chain on this machine.

A sender pushes 1,000-byte datagrams through two relay processes (recv -> sendto,
nothing else) to a sink, paced by a window of ``window`` datagrams acknowledged by the sink.
What the overlay reaches is printed as a ratio of this, measured in the same run.

Each relay also reports its CPU time and how often it slept (voluntary context switches) per
datagram.  With the default window of 64 the relays find many datagrams at every wake-up; with a
window of a few datagrams they run in the regime of the overlay's ACK-clocked TCP flow, where a
relay wakes for every few datagrams and each wake-up (scheduler, an inter-processor interrupt on a
VM) costs as much as the forwarding itself.  That is the floor a relay's CPU per datagram is
compared with (bench/local_goodput.py).
"""
from __future__ import annotations

import multiprocessing as mp
import resource
import socket
import time
from dataclasses import dataclass

PAYLOAD = 1000
HOSTS = ["127.0.1.11", "127.0.1.12", "127.0.1.13", "127.0.1.14"]


@dataclass
class RelayCost:
    datagrams: int
    cpu_s: float
    sleeps: int

    @property
    def cpu_us_per_datagram(self) -> float:
        return 1e6 * self.cpu_s / max(self.datagrams, 1)

    @property
    def datagrams_per_sleep(self) -> float:
        return self.datagrams / max(self.sleeps, 1)


@dataclass
class Baseline:
    mbps: float
    window: int
    relays: list[RelayCost]

    @property
    def relay_cpu_us(self) -> float:
        """CPU per datagram, the mean of the relays."""
        return sum(r.cpu_us_per_datagram for r in self.relays) / len(self.relays)

    @property
    def relay_datagrams_per_sleep(self) -> float:
        return sum(r.datagrams_per_sleep for r in self.relays) / len(self.relays)


def _relay(me: tuple[str, int], nxt: tuple[str, int], prev: tuple[str, int], seconds: float,
           out: "mp.Queue[tuple[str, int, float, int]]") -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(me)
    s.settimeout(0.5)
    end = time.time() + seconds + 3
    n = 0
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    while time.time() < end:
        try:
            data, src = s.recvfrom(65535)
        except socket.timeout:
            continue
        n += 1
        s.sendto(data, nxt if src == prev else prev)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    # the idle timeouts at the end add a few sleeps and almost no CPU
    out.put(("relay", n, ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime, ru.ru_nvcsw - ru0.ru_nvcsw))


def _sink(me: tuple[str, int], prev: tuple[str, int], seconds: float,
          out: "mp.Queue[tuple[str, int, float, int]]") -> None:
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
    out.put(("sink", n, 0.0, 0))


def relay_baseline(seconds: float = 5.0, window: int = 64, port: int = 47900) -> Baseline:
    """Run the plain chain for ``seconds`` with ``window`` datagrams in flight."""
    addrs = [(h, port) for h in HOSTS]
    q: "mp.Queue[tuple[str, int, float, int]]" = mp.Queue()
    procs = [mp.Process(target=_relay, args=(addrs[1], addrs[2], addrs[0], seconds, q)),
             mp.Process(target=_relay, args=(addrs[2], addrs[3], addrs[1], seconds, q)),
             mp.Process(target=_sink, args=(addrs[3], addrs[2], seconds, q))]
    for p in procs:
        p.start()
    try:
        time.sleep(0.5)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(addrs[0])
            s.settimeout(0.2)
            data = b"x" * PAYLOAD
            inflight = 0
            t0 = time.time()
            while time.time() - t0 < seconds:
                while inflight < window:
                    s.sendto(data, addrs[1])
                    inflight += 1
                try:
                    s.recvfrom(100)
                    inflight -= 1
                except socket.timeout:
                    inflight = 0  # something was lost: reopen the window
        reports = [q.get(timeout=seconds + 10) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join()
    received = next(n for kind, n, _, _ in reports if kind == "sink")
    relays = [RelayCost(n, cpu, sleeps) for kind, n, cpu, sleeps in reports if kind == "relay"]
    return Baseline(received * PAYLOAD * 8 / seconds / 1e6, window, relays)

