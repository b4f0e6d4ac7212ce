"""Goodput against distance for the OFDM (802.11a) and HT20 (802.11n, MCS 0-7) rates under ``reception: sinr``
(issue 24, item 6); docs/MEDIUM.md, "Goodput against distance (OFDM and HT)" has the table.

One link A -> B of the medium core (built as every run builds it: experiments.medium_spec.build_medium from a
resolved experiment), A always holding a frame for B (saturated, UDP-like: 1,472 bytes of payload in 1,500-byte
IP packets, as iperf's UDP default and Copeland 2014's wmediumd measurement), ns-3's radio defaults (40 mW,
log-distance exponent 3 from free space at 1 m, noise floor k T B + 7 dB, NIST error-rate model), a receiver
that detects frames down to -101 dBm (so that the grey zone of the slowest rates is not cut off by the
standard's -82 dBm sensitivity).  Each fixed rate, and Minstrel (``rate_control: minstrel``), at each
distance; goodput is the payload B receives per second of virtual time, the first fifth left out (warm-up).

Run: .venv/bin/python -m bench medium_distance [--seconds 2] [--seeds 2] [--standard a|n]
"""
from __future__ import annotations

import argparse
import statistics
from typing import Any

from experiments.medium_spec import build_medium
from experiments.schema import load_experiment
from routing.medium.dcf import Delivered, Frame, Medium

PACKET_BYTES = 1500
PAYLOAD_BYTES = PACKET_BYTES - 28
DISTANCES_M = (10, 20, 30, 40, 50, 60, 70, 80, 100, 120, 140, 160)
RATES: dict[str, list[dict[str, Any]]] = {
    "a": [{"rate_mbps": r} for r in (6, 9, 12, 18, 24, 36, 48, 54)],
    "n": [{"mcs": k} for k in range(8)],
}


def link_medium(standard: str, distance_m: float, seed: int, **rate: Any) -> Medium:
    """The medium of a two-node experiment, B ``distance_m`` from A, reception sinr; ``rate``: ``mcs`` or
    ``rate_mbps`` (fixed), or ``rate_control="minstrel"``."""
    doc = {"topology": {"chain": ["A", "B"]}, "flows": [{"sender": "A", "receiver": "B", "segments": 1}],
           "medium": {"model": "dcf", "standard": standard, "reception": "sinr", "rx_sensitivity_dbm": -101,
                      "positions": {"A": [0, 0], "B": [distance_m, 0]}, **rate}}
    return build_medium(load_experiment(doc, "medium_distance").variants[0].config, seed)


def drive(m: Medium, start_ns: int, end_ns: int, count_from_ns: int = 0) -> int:
    """A always has a frame for B from ``start_ns`` until ``end_ns``; the frames B received from ``count_from_ns`` on."""
    got = 0
    while m.queued("A") < 2:
        m.send(start_ns, Frame("A", "B", None, PACKET_BYTES))
    while (t := m.next_timer()) is not None and t <= end_ns:
        got += sum(isinstance(o, Delivered) and t >= count_from_ns for o in m.advance(t))
        while m.queued("A") < 2:
            m.send(t, Frame("A", "B", None, PACKET_BYTES))
    return got


def saturated(m: Medium, seconds: float) -> float:
    """Payload Mbit/s that B receives while A always has a frame for it; the first fifth is warm-up."""
    end, warm = round(seconds * 1e9), round(seconds * 1e9 / 5)
    return drive(m, 0, end, warm) * PAYLOAD_BYTES * 8 / ((end - warm) / 1e9) / 1e6


def goodput(standard: str, distance_m: float, seconds: float, seeds: int, **rate: Any) -> float:
    return statistics.median(saturated(link_medium(standard, distance_m, s, **rate), seconds) for s in range(1, seeds + 1))


def rate_label(rate: dict[str, Any]) -> str:
    return f"MCS {rate['mcs']}" if "mcs" in rate else f"{rate['rate_mbps']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench medium_distance")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--standard", choices=sorted(RATES), default=None, help="default: both")
    args = ap.parse_args(argv)
    for standard in [args.standard] if args.standard else sorted(RATES):
        rates = RATES[standard]
        print(f"\n802.11{standard}, one saturated link, {PACKET_BYTES}-byte packets, reception sinr (ns-3 defaults, "
              f"sensitivity -101 dBm), {args.seconds} s x {args.seeds} seeds (median), goodput Mbit/s")
        print("| distance m | " + " | ".join(rate_label(r) for r in rates) + " | best fixed | Minstrel |")
        print("|---:|" + "---:|" * (len(rates) + 2))
        for d in DISTANCES_M:
            row = [goodput(standard, d, args.seconds, args.seeds, **r) for r in rates]
            best = max(range(len(rates)), key=lambda i: row[i])
            mins = goodput(standard, d, args.seconds, args.seeds, rate_control="minstrel")
            print(f"| {d} | " + " | ".join(f"{g:.2f}" for g in row) + f" | {rate_label(rates[best])} | {mins:.2f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
