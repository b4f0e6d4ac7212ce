"""Python cost per packet of the NFQUEUE handler, without a queue: crafted packets through the callbacks.

The snoop handler's extra cost over accept-only is what decides ``bench netns_goodput``'s
snoop / accept-only ratio (the queue round trip and the kernel's forwarding are common to
both).  This feeds a bulk flow of crafted kernel packets, as the netns run queues them,
through ``NfqDriver``'s real callbacks with a stand-in for netfilterqueue's Packet:

* A (the sender): its TCP's data segments on LOCAL_OUT (the option is inserted);
* B and C (forwarders): the data segments as A (B) left them on FORWARD, plus one pure
  ACK of D's per two data segments (ACK traffic of the bulk flow), each acknowledging
  the data of 400 segments before (the window in flight: B caches about 400 segments
  on average under policy every in bench netns_goodput), so caches stay bounded.

The snoop forwarders are built as the node daemon builds them (``node.forwarder``, with
the real ``EventLog`` writing to a temporary file, flushed every ``--batch`` packets as
the driver flushes after each batch), with p = 1 on every link and no loss: the netns
benchmark's setting.  Baseline in the same run: the accept-only callback on the same
packet stream.  Rounds interleave the modes; the table shows the fastest round of each.

Run: .venv/bin/python -m bench handler_cost [--packets 60000] [--rounds 5] [--batch 64]
No root, no netfilterqueue needed.
"""
from __future__ import annotations

import argparse
import gc
import os
import struct
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from routing.drivers.eventlog import EventLog
from experiments.backends.netns.node import forwarder
from experiments.schema import load_experiment
from routing.kernel.ipv4 import checksum
from routing.kernel.forwarder import HOOK_FWD, HOOK_OUT
from routing.drivers.nfq import NfqDriver

ADDR = {"A": "10.2.1.1", "B": "10.2.1.2", "C": "10.2.1.3", "D": "10.2.1.4"}
SPORT, DPORT = 40000, 5201
MSS = 1448
TS_OPT = b"\x01\x01\x08\x0a" + bytes(8)   # NOP NOP timestamps, as Linux sends them
WINDOW = 400                               # segments in flight: an ACK acknowledges up to 400 segments back


def _packet(src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: int, payload: int,
            ident: int) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (32 // 4) << 4, flags,
                      502, 0, 0) + TS_OPT
    total = 20 + len(tcp) + payload
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ident & 0xFFFF, 0x4000, 64, 6, 0,
                               bytes(map(int, src.split("."))), bytes(map(int, dst.split(".")))))
    struct.pack_into("!H", ip, 10, checksum(ip))
    return bytes(ip) + tcp + b"\x5a" * payload


class FakePacket:
    """The parts of netfilterqueue.Packet the callbacks use (the verdict is only recorded)."""

    __slots__ = ("hook", "_payload", "given", "verdict")

    def __init__(self, hook: int, payload: bytes) -> None:
        self.hook = hook
        self._payload = payload
        self.given: bytes | None = None
        self.verdict = 0

    def get_payload(self) -> bytes:
        return self._payload

    def set_payload(self, payload: bytes) -> None:
        self.given = payload

    def accept(self) -> None:
        self.verdict = 1

    def drop(self) -> None:
        self.verdict = 2


def _config(policy: str) -> dict[str, Any]:
    doc = {"name": "bench-handler", "backend": "netns", "tcp": {"variant": "sack"},
           "flows": [{"sender": "A", "receiver": "D", "segments": 1000, "segment_size": MSS}],
           "snoop": {"policy": policy}, "variants": [{"name": "m"}]}
    return load_experiment(doc, "bench-handler.yaml").variants[0].config


class _Quality:
    """The prober's ``quality`` with p = 1 everywhere (no loss, as in bench netns_goodput)."""

    def quality(self, neighbour: str) -> float:
        return 1.0


def _driver(node: str, policy: str | None, log: EventLog) -> NfqDriver:
    fw = None
    if policy is not None:
        fw = forwarder(_config(policy), node, 1, 0.0, _Quality(), log, 94, True)   # type: ignore[arg-type]
    return NfqDriver.without_queue(fw, log.emit, log.flush)


def _streams(n: int) -> dict[str, list[tuple[int, bytes]]]:
    """(hook, bytes) queued at A, B and C for ``n`` data segments of one bulk flow."""
    a = ADDR["A"]
    d = ADDR["D"]
    data = [_packet(a, d, SPORT, DPORT, 1000 + i * MSS, 1, 0x18, MSS, i) for i in range(n)]
    acks = {i: _packet(d, a, DPORT, SPORT, 1, 1000 + (i - WINDOW) * MSS, 0x10, 0, i)
            for i in range(WINDOW + 1, n, 2)}
    out: dict[str, list[tuple[int, bytes]]] = {"A": [(HOOK_OUT, p) for p in data]}
    with tempfile.TemporaryDirectory() as tmp:   # the bytes A and B pass on, from their real forwarders
        log = EventLog(Path(tmp) / "x.log", "X", batch=True)
        prev = data
        for node in "BC":
            up = chr(ord(node) - 1)
            drv = _driver(up, "none", log)
            hook = HOOK_OUT if up == "A" else HOOK_FWD
            sent = []
            for p in prev:
                pkt = FakePacket(hook, p)
                drv._handle(pkt)
                sent.append(pkt.given or p)
            stream: list[tuple[int, bytes]] = []
            for i, p in enumerate(sent):
                stream.append((HOOK_FWD, p))
                if i in acks:
                    stream.append((HOOK_FWD, acks[i]))
            out[node] = stream
            prev = sent
            log.flush()
        log.close()
    return out


def _time(cb: Callable[[Any], None], flush: Callable[[], None], stream: list[tuple[int, bytes]],
          batch: int) -> float:
    """Seconds per packet of ``cb`` over ``stream`` (packet objects made inside, as netfilterqueue does)."""
    gc.collect()
    t0 = time.perf_counter()
    for i in range(0, len(stream), batch):
        for hook, p in stream[i:i + batch]:
            cb(FakePacket(hook, p))
        flush()
    return (time.perf_counter() - t0) / len(stream)


MODES = [("accept-only", None), ("snoop (policy none)", "none"), ("snoop (policy every)", "every")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench handler_cost")
    ap.add_argument("--packets", type=int, default=60000, help="data segments of the flow")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64, help="packets per batch (one log flush each)")
    args = ap.parse_args(argv)
    streams = _streams(args.packets)
    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for node in "ABC":
                for mode, policy in MODES:
                    if node == "A" and policy == "every":
                        continue                       # the sender's layer never caches under every
                    log = EventLog(Path(tmp) / f"{node}-{r}.log", node, batch=True)
                    drv = _driver(node, policy, log)
                    cb = drv._accept_only if policy is None else drv._handle
                    s = _time(cb, log.flush, streams[node], args.batch)
                    log.close()
                    os.unlink(log.path)
                    best[node, mode] = min(best.get((node, mode), s), s)
    load = os.getloadavg()[0]
    print(f"handler callbacks, {args.packets} data segments (+ACKs at B, C), batches of {args.batch}, "
          f"fastest of {args.rounds} rounds; load average {load:.1f} on {os.cpu_count()} CPUs")
    print(f"{'node':<5} {'mode':<22} {'us/packet':>10} {'extra over accept-only':>24} {'/ accept-only':>14}")
    for node in "ABC":
        base = best[node, "accept-only"]
        for mode, _ in MODES:
            if (node, mode) not in best:
                continue
            s = best[node, mode]
            print(f"{node:<5} {mode:<22} {1e6 * s:10.2f} {1e6 * (s - base):24.2f} {s / base:14.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
