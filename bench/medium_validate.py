"""Validation of the DCF medium (routing.medium.dcf) against published results; docs/MEDIUM.md has the table.

* chain: saturated traffic (the source's queue never empties) over chains of 1..8 hops, nodes 200 m
  apart, 250 m communication range, 550 m carrier sense: throughput vs hops (Li et al., MobiCom 2001:
  B, B/2, B/3, then at most B/4 for an ideal MAC, less with 802.11);
* hidden: two saturated senders to one receiver, hidden from each other or in each other's range.

The TCP window sweep (Fu et al., INFOCOM 2003) runs on the sim backend:
experiments/medium-tcp-window.yaml.

Run: .venv/bin/python -m bench medium_validate [--seconds 4] [--seeds 3] [--standard b|g] [--rts 0]
"""
from __future__ import annotations

import argparse
import random
import statistics

from routing.medium.dcf import Delivered, Frame, Medium, Topology
from routing.medium.phy import Phy

PACKET_BYTES = 1028   # 1000 bytes of payload in UDP/IPv4


def saturated_chain(hops: int, seconds: float = 4.0, seed: int = 1, standard: str = "b",
                    spacing_m: float = 200.0, queue_packets: int = 50, rts: int | None = None) -> dict[str, float]:
    """Payload Mbit/s delivered at the end of a chain of ``hops`` hops whose source always has a frame
    queued; each node forwards what it receives to the next.  The first fifth is warm-up."""
    names = [f"n{i}" for i in range(hops + 1)]
    topo = Topology.from_positions({n: (i * spacing_m, 0.0) for i, n in enumerate(names)}, 250.0, 550.0)
    m = Medium(Phy.preset(standard, rts_threshold=rts), topo, queue_packets, random.Random(seed))
    nxt = {a: b for a, b in zip(names, names[1:])}
    src, sink = names[0], names[-1]
    end, warm = round(seconds * 1e9), round(seconds * 1e9 / 5)
    delivered = queue_drops = 0

    def refill(now: int) -> None:
        while m.queued(src) < queue_packets:
            m.send(now, Frame(src, nxt[src], None, PACKET_BYTES))

    refill(0)
    while (t := m.next_timer()) is not None and t <= end:
        for o in m.advance(t):
            if not isinstance(o, Delivered):
                continue
            f = o.frame
            if f.dst == sink:
                delivered += t >= warm
            else:
                queue_drops += len(m.send(t, Frame(f.dst, nxt[f.dst], None, PACKET_BYTES)))
        refill(t)
    stats = [m.stations[n].stats for n in names]
    return {"mbps": delivered * (PACKET_BYTES - 28) * 8 / ((end - warm) / 1e9) / 1e6,
            "mac_drops": sum(s.mac_drops for s in stats), "queue_drops": queue_drops,
            "collisions": sum(s.collisions for s in stats), "attempts": sum(s.attempts for s in stats)}


def two_senders(hidden: bool, seconds: float = 4.0, seed: int = 1) -> dict[str, float]:
    """A and C saturate B; ``hidden``: A and C cannot sense each other (A - B - C), else all hear all."""
    if hidden:
        topo = Topology.from_graph({"A": ["B"], "B": ["A", "C"], "C": ["B"]})
    else:
        topo = Topology.from_graph({"A": ["B", "C"], "B": ["A", "C"], "C": ["A", "B"]})
    m = Medium(Phy.preset("b"), topo, 50, random.Random(seed))
    end = round(seconds * 1e9)
    got = 0
    while True:
        for s in "AC":
            while m.queued(s) < 50:
                m.send(m.next_timer() or 0, Frame(s, "B", None, PACKET_BYTES))
        t = m.next_timer()
        if t is None or t > end:
            break
        got += sum(isinstance(o, Delivered) for o in m.advance(t))
    st = [m.stations[s].stats for s in "AC"]
    att = sum(s.attempts for s in st)
    return {"mbps": got * (PACKET_BYTES - 28) * 8 / seconds / 1e6, "collided": sum(s.collisions for s in st) / att,
            "mac_drops": sum(s.mac_drops for s in st), "frames": sum(s.frames for s in st)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench medium_validate")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--standard", default="b")
    ap.add_argument("--rts", type=int, default=None, metavar="BYTES",
                    help="RTS/CTS before frames longer than this (0: every unicast frame; default: off)")
    args = ap.parse_args(argv)
    seeds = range(1, args.seeds + 1)
    print(f"saturated chain, 802.11{args.standard}, 200 m spacing, 250 m range, 550 m carrier sense, "
          f"{args.seconds} s x {args.seeds} seeds, RTS/CTS {'off' if args.rts is None else f'above {args.rts} bytes'}")
    print("| hops | Mbit/s (mean of seeds) | / 1 hop | Li et al. | link-layer drops | queue drops |")
    print("|---:|---:|---:|---|---:|---:|")
    one = None
    li = {1: "B", 2: "B/2", 3: "B/3"}
    for h in (1, 2, 3, 4, 5, 6, 8):
        runs = [saturated_chain(h, args.seconds, s, args.standard, rts=args.rts) for s in seeds]
        mbps = statistics.mean(r["mbps"] for r in runs)
        one = one or mbps
        print(f"| {h} | {mbps:.3f} | {mbps / one:.3f} | {li.get(h, '<= B/4 (ideal), ~B/7 (802.11)')} | "
              f"{sum(r['mac_drops'] for r in runs) / len(runs):.0f} | {sum(r['queue_drops'] for r in runs) / len(runs):.0f} |")
    print()
    print("two saturated senders to one receiver, 802.11b")
    print("| senders | Mbit/s | attempts collided | link-layer drops |")
    print("|---|---:|---:|---:|")
    for hidden in (False, True):
        runs = [two_senders(hidden, args.seconds, s) for s in seeds]
        label = "hidden from each other" if hidden else "in each other's range"
        print(f"| {label} | "
              f"{statistics.mean(r['mbps'] for r in runs):.3f} | {statistics.mean(r['collided'] for r in runs):.3f} | "
              f"{statistics.mean(r['mac_drops'] for r in runs):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
