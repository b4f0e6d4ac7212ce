"""Conformance: the overlay adapter and the kernel adapter around the one forwarding step (routing.forwarding.step).

One scripted scenario per snoop scheme (segments and ACKs, scripted losses, duplicate
ACKs, SACK blocks, timers firing) is driven through routing.overlay.engine.ForwardingEngine
with overlay packets, with encoded datagrams (version 2) and with sealed datagrams of
the authenticated overlay (version 3), and through routing.kernel.forwarder.KernelForwarder with
IPv4 bytes.
Both must give the same decision for every packet (passed on or held back, the
header fields it leaves with, what is resent from the cache, which new ACKs go
out), the same counters and the same sequence of log events, fields that only
one data plane has aside (a malformed packet's ``detail`` and ``size``).

What the kernel data plane cannot carry is left out of the scripts: SNACK entries
(no TCP option for them; netns refuses the snack scheme, so SNACK-Snoop runs here
on SACK-only ACKs) and window scaling other than 0 (tests/test_kernel_schemes.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from scapy.all import IP, TCP, Raw

from aspan.events import CallbackSink
from aspan.fields import AspanFields, quantise
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.schemes import make_agent
from routing.overlay.engine import Deliver, Drop, ForwardingEngine, Transmit
from routing.forwarding.step import LOCAL_RTX_NOTE
from routing.kernel.ip_option import decode_option, stamp_option
from routing.kernel.ipv4 import find_option, parse_tcp
from routing.kernel.forwarder import HOOK_FWD, HOOK_IN, HOOK_OUT, KernelForwarder
from routing.topology.routes import chain_routes
from routing.overlay.auth import MeshAuth
from routing.overlay.wire import AUTH_TRAILER_LEN, DATA, HEADER_LEN, MacKey, Packet, decode, encode, link_id, reseal
from tcp_user.segment import ACK, SYN, Segment

ADDR = {"A": "10.2.1.1", "B": "10.2.1.2", "C": "10.2.1.3", "D": "10.2.1.4"}
NAMES = {v: k for k, v in ADDR.items()}
MSS = 1000
P = {"A": 0.995, "B": 0.97, "C": 0.99}        # p(next hop toward D) at each node; p toward A is 0.98
ISS = 1


class ScriptedLoss:
    """Drops the heard packets whose index (0, 1, 2, ... in the order heard) is in ``lost``."""

    def __init__(self, lost: set[int]) -> None:
        self.lost = lost
        self.heard = 0

    def drop(self, now: float) -> bool:
        self.heard += 1
        return self.heard - 1 in self.lost


@dataclass
class Scheme:
    scheme: str = "aspan"
    policy: str = "adaptive"
    qos: float = 0.99
    dupack: str = "every"
    node: str = "B"


SCHEMES = {
    "aspan-0.99": Scheme(),
    "aspan-1.00": Scheme(qos=1.0),
    "aspan-every-once": Scheme(policy="every", dupack="once"),
    "aspan-fixed": Scheme(policy="fixed"),
    "aspan-perfect-at-sender": Scheme(policy="perfect", qos=1.0, node="A"),
    "classic": Scheme("classic", "every"),
    "multihop": Scheme("multihop", "every"),
    "snack": Scheme("snack", "every"),
    "slack": Scheme("slack", "every"),
    "ackall": Scheme("ackall", "every"),
}


def script(node: str) -> list[tuple[Any, ...]]:
    """The scenario: a handshake, 8 segments, a loss repaired from the cache by dupacks (with SACK
    blocks), a malformed packet, cumulative ACKs, a silence long enough for every timer, more data."""
    d = "out" if node == "A" else "fwd"
    steps: list[tuple[Any, ...]] = [("syn", 0.0), ("synack", 0.01)]
    t = 0.1
    for i in range(8):
        steps.append(("data", t, ISS + i * MSS, d))
        t += 0.01
    steps += [("ack", 0.30, ISS + MSS, 6000, ()), ("ack", 0.31, ISS + 2 * MSS, 6000, ())]
    for k in range(3, 7):       # segment 2 was lost beyond this node: dupacks with SACK blocks
        steps.append(("ack", 0.30 + 0.01 * k, ISS + 2 * MSS, 6000, ((ISS + 3 * MSS, ISS + k * MSS + MSS),)))
    steps += [("junk", 0.38), ("ack", 0.40, ISS + 8 * MSS, 8000, ()), ("timer", 0.45)]
    for i in range(8, 12):
        steps.append(("data", 0.5 + 0.01 * i, ISS + i * MSS, d))
    steps += [("ack", 0.7, ISS + 9 * MSS, 7000, ()), ("ack", 0.71, ISS + 9 * MSS, 7000, ()),
              ("timer", 2.0), ("timer", 6.0), ("ack", 6.5, ISS + 12 * MSS, 9000, ()), ("timer", 9.0)]
    return steps


# ---- the two data planes ----------------------------------------------------------------------------------------
def header(node: str, qos: float) -> tuple[AspanFields, int]:
    """The header a segment arrives with at ``node`` (stamped by A at hop 0, not cached on the way)."""
    f = AspanFields.stamped(qos)
    hops = 0
    for n in "ABC"[: "ABCD".index(node)]:
        f.pkt_effort = quantise(f.pkt_effort * P[n])
        hops += 1
    return f, hops


def quality(node: str):
    return lambda nbr: P[node] if NAMES[nbr] > node else 0.98


class Plane:
    """One adapter at one node, with its event recorder; ``run`` gives each step's neutral outcome."""

    def __init__(self, s: Scheme, lost: set[int]) -> None:
        self.s = s
        self.events: list[tuple[str, dict[str, Any]]] = []
        log = CallbackSink(lambda now, ev, **f: self.events.append((ev, f)))
        self.agent = make_agent(s.node, SnoopConfig(policy=s.policy, dupack=s.dupack), log,
                                SchemeConfig(scheme=s.scheme))
        self.loss = ScriptedLoss(lost)
        self.log = log

    def run(self, steps: list[tuple[Any, ...]]) -> list[Any]:
        out = []
        for st in steps:
            kind, now = st[0], st[1]
            if kind == "timer":
                res = []
                while (due := self.next_timer()) is not None and due <= now:
                    res.append(self.timer(due))
                out.append(("timer", res))
            else:
                out.append((kind, getattr(self, kind)(now, *st[2:])))
        return out


class Overlay(Plane):
    def __init__(self, s: Scheme, lost: set[int]) -> None:
        super().__init__(s, lost)
        routes = chain_routes([ADDR[n] for n in "ABCD"])[ADDR[s.node]]
        self.fw = ForwardingEngine(ADDR[s.node], routes, self.loss, self.agent, quality(s.node), self.log)

    def _pkt(self, src: str, dst: str, seg: Segment, hops: int, fields: AspanFields | None = None) -> Packet:
        sp, dp = (5000, 6000) if src == "A" else (6000, 5000)
        return Packet(DATA, ADDR[src], sp, ADDR[dst], dp, hops, fields or AspanFields(), seg)

    def _outcome(self, pkt: Packet, actions: list[Any]) -> dict[str, Any]:
        res: dict[str, Any] = {"pass": False, "resend": [], "acks": [], "fields": None}
        for a in actions:
            if isinstance(a, (Transmit, Deliver)) and a.packet is pkt:
                res["pass"] = True
                if pkt.segment is not None and pkt.segment.payload:
                    f = pkt.fields
                    res["fields"] = (f.pkt_effort, f.pkt_qos, f.snoop_count, pkt.hops)
            elif isinstance(a, Transmit):
                seg = a.packet.segment
                if seg.payload:
                    res["resend"].append(seg.seq)
                else:
                    res["acks"].append((seg.ack, seg.window))
            else:
                assert isinstance(a, Drop)
        return res

    def syn(self, now: float) -> Any:
        p = self._pkt("A", "D", Segment(0, 0, SYN, 65535), self._hops())
        if self.s.node == "A":
            return self._outcome(p, self.fw.send_local(p, now))
        return self._outcome(p, self._in(p, now))

    def synack(self, now: float) -> Any:
        p = self._pkt("D", "A", Segment(0, 1, SYN | ACK, 65535), 1)
        return self._outcome(p, self._in(p, now))

    def data(self, now: float, seq: int, d: str) -> Any:
        seg = Segment(seq, 1, ACK, 65535, (), b"d" * MSS)
        if d == "out":
            p = self._pkt("A", "D", seg, 0, AspanFields.stamped(self.s.qos))
            return self._outcome(p, self.fw.send_local(p, now))
        f, hops = header(self.s.node, self.s.qos)
        p = self._pkt("A", "D", seg, hops, f)
        return self._outcome(p, self.fw.on_packet(p, now))

    def ack(self, now: float, n: int, window: int, sack: tuple[tuple[int, int], ...]) -> Any:
        p = self._pkt("D", "A", Segment(1, n, ACK, window, sack), 1)
        return self._outcome(p, self._in(p, now))

    def junk(self, now: float) -> Any:
        return self._outcome(None, self.fw.on_datagram(b"\xa5\x02junk", now))  # type: ignore[arg-type]

    def _hops(self) -> int:
        return "ABCD".index(self.s.node)

    def _in(self, p: Packet, now: float) -> list[Any]:
        return self.fw.on_packet(p, now)

    def next_timer(self) -> float | None:
        return self.fw.next_timer()

    def timer(self, now: float) -> Any:
        return self._outcome(None, self.fw.on_timer(now))  # type: ignore[arg-type]

    def counters(self) -> dict[str, Any]:
        st = self.fw.step
        return {"drops": dict(st.drops), "tx": dict(st.tx), "acks": st.acks_generated, "agent": dict(self.agent.stats)}


class Datagram(Overlay):
    """The overlay adapter fed with encoded datagrams (``on_datagram``, as the UDP driver does): data
    segments and pure ACKs it passes on take the relay path (rewritten bytes, ForwardingEngine._relay),
    the rest the packet path.  What comes out is decoded and sorted by its note, since a relayed
    datagram is not the object that went in."""

    def __init__(self, s: Scheme, lost: set[int]) -> None:
        super().__init__(s, lost)
        self.relayed = 0        # heard datagrams passed on as rewritten bytes (the relay path was taken)
        self.relayable = 0      # heard data segments and pure ACKs without SACK blocks that were passed on

    def _in(self, p: Packet, now: float) -> list[Any]:
        self._heard = p
        return self.fw.on_datagram(encode(p), now)

    def data(self, now: float, seq: int, d: str) -> Any:
        if d == "out":
            return super().data(now, seq, d)
        f, hops = header(self.s.node, self.s.qos)
        p = self._pkt("A", "D", Segment(seq, 1, ACK, 65535, (), b"d" * MSS), hops, f)
        return self._outcome(p, self._in(p, now))

    def _outcome(self, pkt: Packet, actions: list[Any]) -> dict[str, Any]:
        res: dict[str, Any] = {"pass": False, "resend": [], "acks": [], "fields": None}
        for a in actions:
            if isinstance(a, Drop):
                continue
            as_bytes = a.packet.__class__ is not Packet
            out = self._sent(a)
            seg = out.segment
            if isinstance(a, Deliver) or (pkt is not None and a.note is None):
                assert (out.src, out.dst, seg.seq, seg.ack, seg.payload) == (
                    pkt.src, pkt.dst, pkt.segment.seq, pkt.segment.ack, pkt.segment.payload)
                res["pass"] = True
                self.relayed += as_bytes
                p = pkt.segment
                acks_too = not (self.agent.reads_ack_details or self.agent.generates_acks)   # else: the packet path
                self.relayable += isinstance(a, Transmit) and not p.sack and (bool(p.payload) or
                                                                               (p.flags == ACK and acks_too))
                if seg.payload:
                    res["fields"] = (out.fields.pkt_effort, out.fields.pkt_qos, out.fields.snoop_count, out.hops)
            elif a.note == LOCAL_RTX_NOTE:
                res["resend"].append(seg.seq)
            else:
                res["acks"].append((seg.ack, seg.window))
        return res

    def _sent(self, a: Any) -> Packet:
        """The packet of what the node hands back: relayed bytes decoded."""
        return a.packet if a.packet.__class__ is Packet else decode(bytes(a.packet))


KEY = bytes(range(32))


class Authentic(Datagram):
    """The overlay adapter on the authenticated overlay (wire version 3, ``on_authentic``), as the UDP
    driver drives it: every datagram is sealed by the neighbour it comes from and verified here
    (routing.overlay.auth.MeshAuth.verify), and everything that leaves is sealed (a packet) or re-sealed
    (relayed bytes) for its next hop and opened there, so the relay path's trailer is checked too."""

    def __init__(self, s: Scheme, lost: set[int]) -> None:
        super().__init__(s, lost)
        i = "ABCD".index(s.node)
        nbrs = [ADDR[n] for n in "ABCD"[max(0, i - 1):i + 2] if n != s.node]
        self.me = MeshAuth(KEY, ADDR[s.node], nbrs, 1)
        self.peers = {n: MeshAuth(KEY, n, [ADDR[s.node]], 1) for n in nbrs}

    def _from(self, p: Packet) -> str:
        """The neighbour a packet toward its destination comes from."""
        i = "ABCD".index(self.s.node)
        return ADDR["ABCD"[i - 1 if NAMES[p.dst] > self.s.node else i + 1]]

    def _in(self, p: Packet, now: float) -> list[Any]:
        self._heard = p
        frm = self._from(p)
        data = self.peers[frm].seal(p, ADDR[self.s.node])
        self.me.verify(data, frm)
        return self.fw.on_authentic(data, now, frm)

    def junk(self, now: float) -> Any:
        """Authentic junk: sealed by a neighbour (only a key holder can), yet not a packet."""
        frm = next(iter(self.peers))
        peer = self.peers[frm]
        peer.seq += 1
        data = bytearray(b"\xa5\x03\x07junk".ljust(HEADER_LEN, b"\0") + bytes(AUTH_TRAILER_LEN))   # type 7: none
        reseal(data, MacKey(KEY), link_id(frm, ADDR[self.s.node]), peer.seq)
        self.me.verify(bytes(data), frm)
        return self._outcome(None, self.fw.on_authentic(bytes(data), now, frm))  # type: ignore[arg-type]

    def _sent(self, a: Any) -> Packet:
        if isinstance(a, Deliver):
            return a.packet
        if a.packet.__class__ is Packet:
            data = self.me.seal(a.packet, a.next_hop)
        else:
            self.me.reseal(a.packet, a.next_hop)
            data = bytes(a.packet)
        return self.peers[a.next_hop].open(data, ADDR[self.s.node])


def _tcp(src: str, dst: str, seq: int, ack: int, flags: str, window: int, payload: bytes = b"",
         sack: tuple[tuple[int, int], ...] = ()) -> bytes:
    sp, dp = (5000, 6000) if src == "A" else (6000, 5000)
    opts = [("SAck", tuple(x for b in sack for x in b))] if sack else []
    return bytes(IP(src=ADDR[src], dst=ADDR[dst], ttl=64)
                 / TCP(sport=sp, dport=dp, seq=seq, ack=ack, flags=flags, window=window, options=opts) / Raw(payload))


class Kernel(Plane):
    def __init__(self, s: Scheme, lost: set[int]) -> None:
        super().__init__(s, lost)
        routes = chain_routes([ADDR[n] for n in "ABCD"])[ADDR[s.node]]
        self.fw = KernelForwarder(ADDR[s.node], routes.next_hop, quality(s.node), self.agent, self.loss,
                                  AspanFields.stamped(s.qos), 94, self.log)

    def _hook(self, frm_sender: bool) -> int:
        if self.s.node == "A":
            return HOOK_OUT if frm_sender else HOOK_IN
        return HOOK_FWD

    def _outcome(self, raw: bytes | None, v: Any) -> dict[str, Any]:
        res: dict[str, Any] = {"pass": False, "resend": [], "acks": [], "fields": None}
        if raw is not None and v.accept:
            res["pass"] = True
            out = v.payload if v.payload is not None else raw
            tcp = parse_tcp(out, 94)
            if tcp.payload_len:
                f, hops = decode_option(out, find_option(out, tcp.ihl, 94))
                res["fields"] = (f.pkt_effort, f.pkt_qos, f.snoop_count, hops)
        for inj in (v.inject if raw is not None else v):
            tcp = parse_tcp(inj, 94)
            if tcp.payload_len:
                res["resend"].append(tcp.seq)
            else:
                res["acks"].append((tcp.ack, int.from_bytes(inj[tcp.ihl + 14:tcp.ihl + 16], "big")))
        return res

    def syn(self, now: float) -> Any:
        raw = _tcp("A", "D", 0, 0, "S", 65535)
        return self._outcome(raw, self.fw.on_packet(self._hook(True), raw, now))

    def synack(self, now: float) -> Any:
        raw = _tcp("D", "A", 0, 1, "SA", 65535)
        return self._outcome(raw, self.fw.on_packet(self._hook(False), raw, now))

    def data(self, now: float, seq: int, d: str) -> Any:
        raw = _tcp("A", "D", seq, 1, "PA", 65535, b"d" * MSS)
        if d == "fwd":
            f, hops = header(self.s.node, self.s.qos)
            raw = stamp_option(raw, 20, f, hops)
        return self._outcome(raw, self.fw.on_packet(self._hook(True), raw, now))

    def ack(self, now: float, n: int, window: int, sack: tuple[tuple[int, int], ...]) -> Any:
        raw = _tcp("D", "A", 1, n, "A", window, sack=sack)
        return self._outcome(raw, self.fw.on_packet(self._hook(False), raw, now))

    def junk(self, now: float) -> Any:
        raw = b"\x45\x00\x00\x08junk"
        return self._outcome(raw, self.fw.on_packet(HOOK_FWD if self.s.node != "A" else HOOK_IN, raw, now))

    def next_timer(self) -> float | None:
        return self.fw.next_timer()

    def timer(self, now: float) -> Any:
        return self._outcome(None, self.fw.on_timer(now))

    def counters(self) -> dict[str, Any]:
        st = self.fw.step
        return {"drops": dict(st.drops), "tx": dict(st.tx), "acks": st.acks_generated, "agent": dict(self.agent.stats)}


ONE_PATH_ONLY = {"detail", "size"}   # a malformed packet's description differs by data plane


def comparable(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return [(ev, {k: v for k, v in f.items() if k not in ONE_PATH_ONLY}) for ev, f in events]


@pytest.mark.parametrize("lost", [set(), {9, 14}, {5, 16}], ids=["no-loss", "two-losses", "junk-lost"])
@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_both_data_planes_make_the_same_decisions(name, lost):
    s = SCHEMES[name]
    steps = script(s.node)
    overlay, kernel = Overlay(s, lost), Kernel(s, lost)
    datagram, authentic = Datagram(s, lost), Authentic(s, lost)
    a, b, c, d = overlay.run(steps), kernel.run(steps), datagram.run(steps), authentic.run(steps)
    for i, (x, y, z, w) in enumerate(zip(a, b, c, d)):
        assert x == y, f"step {i} {steps[i]}: overlay {x} != kernel {y}"
        assert x == z, f"step {i} {steps[i]}: overlay packets {x} != overlay datagrams {z}"
        assert x == w, f"step {i} {steps[i]}: overlay packets {x} != authenticated datagrams {w}"
    assert overlay.counters() == kernel.counters() == datagram.counters() == authentic.counters()
    assert (comparable(overlay.events) == comparable(kernel.events) == comparable(datagram.events)
            == comparable(authentic.events))


@pytest.mark.parametrize("plane", [Datagram, Authentic], ids=["version-2", "version-3"])
@pytest.mark.parametrize("name", ["aspan-0.99", "classic", "multihop"])
def test_a_relay_passes_datagrams_on_without_decoding_them(name, plane):
    """The relay path is taken (not only the packet path behind it): at a relay, the data segments without
    SACK blocks leave as rewritten datagrams, and so do such pure ACKs where the agent reads only their
    ACK number (A-SPAN); on the authenticated overlay too, where they leave re-sealed for the next hop."""
    s = SCHEMES[name]
    d = plane(s, set())
    d.run(script(s.node))
    assert d.relayed == d.relayable >= 12, (d.relayed, d.relayable)   # the script's 12 data segments at least


def test_the_scripts_exercise_what_they_claim():
    """Guards the comparison above against an empty scenario: caching, hits, local retransmissions,
    suppressed dupacks, new ACKs, timers, losses and a malformed packet all happen somewhere."""
    seen = {"cached": 0, "hits": 0, "local": 0, "suppressed": 0, "acks": 0, "timer_resends": 0, "loss": 0,
            "malformed": 0}
    for name, s in SCHEMES.items():
        k = Kernel(s, {9, 14})
        out = k.run(script(s.node))
        c = k.counters()
        seen["cached"] += c["agent"]["cached"]
        seen["hits"] += c["agent"]["hits"]
        seen["local"] += c["tx"]["local"]
        seen["suppressed"] += c["drops"]["suppressed"]
        seen["acks"] += c["acks"]
        seen["loss"] += c["drops"]["loss"]
        seen["malformed"] += c["drops"]["malformed"]
        seen["timer_resends"] += sum(len(r["resend"]) for kind, res in out if kind == "timer" for r in res)
    assert all(v > 0 for v in seen.values()), seen
