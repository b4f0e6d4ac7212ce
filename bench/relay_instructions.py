"""Instructions per datagram of an overlay relay, counted by valgrind: a load-independent relay cost.

``bench local_goodput`` measures a relay's CPU per datagram in a real run, which on this shared
2-core machine moves by 20 % or more between runs.  This feeds relay B of the paper's chain, built
as a local node process builds it (``experiments.build.build_node``, with its batched event log),
the datagrams of one bulk flow A -> D: each data segment (1,000 bytes, hop 1, stamped by A) and one
pure ACK of D's per two segments, each acknowledging the segment before, so the cache stays small.
What the node hands back is encoded as the UDP driver would send it (routing.drivers.udp.UdpNode._send), so
the count covers decoding, the forwarding step, the snoop agent, the log and encoding; not the
socket calls.  The row with the MAC on feeds the authenticated overlay's datagrams (version 3, sealed
by A and C) as the UDP driver does: verified, then handed to the node, what leaves sealed or
re-sealed for the next hop.  The instructions per datagram are those of two passes minus one pass, as in
``bench handler_instructions``; ``--tree DIR`` measures another checkout the same way::

    git worktree add --detach /tmp/before 257af2c
    .venv/bin/python -m bench relay_instructions --tree /tmp/before

Needs valgrind (apt install valgrind); no root.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from bench.handler_instructions import compare_table

# (scheme, policy, the authenticated overlay): with the MAC, the datagrams are sealed as A and C seal
# them, verified as B's driver does, and what B sends is sealed or re-sealed for its next hop
MODES = [("aspan", "adaptive", False), ("aspan", "every", False), ("classic", "every", False),
         ("aspan", "adaptive", True)]

# passes over one stream of datagrams at relay B, in the tree on PYTHONPATH (relay paths that return a
# Packet and those that return the datagram's bytes alike)
_PROBE = r"""
import sys, tempfile
from pathlib import Path
from aspan.fields import AspanFields
from experiments.build import build_node
from experiments.schema import load_experiment
from routing.drivers.eventlog import EventLog
from routing.overlay.auth import MeshAuth
from routing.overlay.wire import DATA, IP_UDP_OVERHEAD, Packet, encode
from tcp_user.segment import ACK, Segment

scheme, policy, mac, n, passes = sys.argv[1], sys.argv[2], sys.argv[3] == "mac", int(sys.argv[4]), int(sys.argv[5])
doc = {"name": "relay", "backend": "local", "snoop": {"scheme": scheme, "policy": policy},
       "flows": [{"sender": "A", "receiver": "D", "segments": n}]}
cfg = load_experiment(doc, "relay.yaml").variants[0].config
addr = cfg["topology"]["addresses"]
key = bytes(range(32))
seal_a = MeshAuth(key, addr["A"], [addr["B"]], 1)
seal_c = MeshAuth(key, addr["C"], [addr["B"]], 1)
auth = MeshAuth(key, addr["B"], [addr["A"], addr["C"]], 1)


def wire(pkt, neighbour, frm):     # a datagram as neighbour frm sends it to B (sealed when the MAC is on)
    return (neighbour.seal(pkt, addr["B"]), frm) if mac else (encode(pkt), frm)


stream = []
for p in range(2):      # two passes' worth whatever ``passes`` is: building the stream cancels out
    for i in range(n):
        seq = (p * n + i) * 1000
        stream.append(wire(Packet(DATA, addr["A"], 40000, addr["D"], 5001, 1, AspanFields.stamped(0.98, 1, 1),
                                  Segment(seq, 1, ACK, 65535, (), bytes(1000), ())), seal_a, addr["A"]))
        if i % 2:
            stream.append(wire(Packet(DATA, addr["D"], 5001, addr["A"], 40000, 2, AspanFields(),
                                      Segment(1, seq, ACK, 65535, (), b"", ())), seal_c, addr["C"]))
with tempfile.TemporaryDirectory() as tmp:
    log = EventLog(Path(tmp) / "B.log", "B", batch=True)
    node = build_node(cfg, "B", 1, log, 0.0, apps=False)
    on_datagram, t = node.on_datagram, 100.0
    # as routing.drivers.udp's driver does it (a tree before the authenticated relay path opens every datagram)
    relay_path = hasattr(node, "on_authentic")
    for k, (data, frm) in enumerate(stream[:len(stream) // 2 * passes]):
        t += 1e-4
        if not mac:
            out = on_datagram(data, t)
        elif relay_path:
            auth.verify(data, frm)
            out = node.on_authentic(data, t, frm)
        else:
            out = node.on_packet(auth.open(data, frm), t, frm, len(data) + IP_UDP_OVERHEAD)
        for nxt, pkt in out:
            if pkt.__class__ is Packet:
                encode(pkt) if not mac else auth.seal(pkt, nxt)
            elif mac:
                auth.reseal(pkt, nxt)
        if k % 64 == 63:
            log.flush()
    log.close()
print(len(stream) // 2)
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench relay_instructions")
    ap.add_argument("--segments", type=int, default=3000, help="data segments of the flow per pass")
    ap.add_argument("--tree", type=Path, help="also measure this checkout (before), next to this tree (after)")
    args = ap.parse_args(argv)
    compare_table("relay_instructions",
                  f"relay B under callgrind, {args.segments} data segments and an ACK per two: instructions per "
                  f"datagram, one pass (two passes minus one)",
                  f"{'scheme':<8} {'policy':<9} {'MAC':<4}",
                  [(f"{scheme:<8} {policy:<9} {'on' if mac else 'off':<4}", _PROBE,
                    [scheme, policy, "mac" if mac else "plain", str(args.segments)]) for scheme, policy, mac in MODES],
                  args.tree)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
