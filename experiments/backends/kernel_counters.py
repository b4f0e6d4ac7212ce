"""What the kernel counted on a kernel-TCP node, read the same way in a namespace and on a Pi.

The netns backend reads these files inside its namespaces, the pi backend's kernel data plane
over SSH; both parse the text here and write the kernel's drops into the node logs here.
Pure parsing and one log append: no process, no socket.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

# TCP counters of an endpoint (/proc/net/netstat, TcpExt) that tell what happened to snooped traffic at
# the kernel: segments discarded by PAWS (a stale TSval), duplicates the receiver reported with D-SACK,
# out-of-order arrivals, and undone (spurious) retransmissions at the sender.
TCP_EXT_COUNTERS = ("PAWSEstab", "TCPDSACKOldSent", "TCPDSACKRecv", "TCPOFOQueue", "TCPSpuriousRTOs",
                    "TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo")

NFQ_FIELDS = ("queue", "portid", "waiting", "copy_mode", "copy_range", "queue_dropped", "user_dropped",
              "id_sequence")


def parse_tcpext(text: str) -> dict[str, int]:
    """The TcpExt counters of a /proc/net/netstat text (a line of names, then a line of values)."""
    lines = text.splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], (int(x) for x in values.split()[1:])))
    return {}


def parse_statistic_drops(listing: str) -> int:
    """The packet count of the statistic DROP rule in an ``iptables -L -v -x -n`` listing (0 if none)."""
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "DROP" and "statistic" in line:
            return int(parts[0])
    return 0


def parse_nfq(text: str) -> dict[int, dict[str, int]]:
    """/proc/net/netfilter/nfnetlink_queue -> {queue: counters}.

    ``queue_dropped``: the queue was full (max_len); ``user_dropped``: the
    netlink socket to the handler was full (ENOBUFS, which netfilterqueue
    swallows).  Both are forwarder overload, never wireless loss.
    """
    out: dict[int, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < len(NFQ_FIELDS) or not all(p.lstrip("-").isdigit() for p in parts[:len(NFQ_FIELDS)]):
            continue
        rec = dict(zip(NFQ_FIELDS, (int(p) for p in parts)))
        out[rec["queue"]] = rec
    return out


def append_drops(log: Path, node: str, reason: str, count: int, detail: str) -> None:
    """Drops counted by the kernel (queue overflow, statistic match), one ``drop`` event each."""
    if count <= 0:
        return
    line = json.dumps({"t": round(time.time(), 6), "node": node, "ev": "drop", "reason": reason,
                       "detail": detail}, separators=(",", ":")) + "\n"
    with open(log, "a") as f:
        f.write(line * count)
