"""routing/forwarding/step.py, the one forwarding step: both adapters (overlay and kernel) make the same
decisions, the rules its mutation run found unpinned, and drop lines limited per reason and second.
"""
from __future__ import annotations

import json
from aspan.agent import SnoopAgent, GeneratedAck
from aspan.policy import SnoopConfig
from plots.logs import load_rep
from plots.summary import summarize_rep
from routing.overlay.engine import ForwardingEngine, Deliver, Drop, Transmit
from routing.drivers.eventlog import EventLog
from routing.links.loss import NoLoss, BitError, LinkDown
from routing.topology.routes import chain_routes
from routing.forwarding.step import (DROP_LINES_PER_S, LOCAL_RTX_NOTE, HOP_LIMIT, DropLines, ForwardingStep, Held,
                                     cache_note)
from dataclasses import dataclass
from typing import Any
import pytest
from scapy.all import IP, TCP, Raw
from aspan.events import CallbackSink, EventWriter
from aspan.fields import AspanFields, quantise
from aspan.scheme_config import SchemeConfig
from aspan.schemes import make_agent
from routing.kernel.ip_option import decode_option, stamp_option
from routing.kernel.ipv4 import find_option, parse_tcp
from routing.kernel.forwarder import HOOK_FWD, HOOK_IN, HOOK_OUT, KernelForwarder
from routing.overlay.auth import MeshAuth
from routing.overlay.wire import (AUTH_TRAILER_LEN, DATA, HEADER_LEN, MacKey, Packet, decode, encode, link_id,
                                  reseal)
from tcp_user.segment import ACK, SYN, Segment
import random


# ====================================================================================================
# Issue 13, item 4: drop lines are limited per reason and second; counters and totals stay exact.

A, B, C, D = "10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"


def node(log):
    return ForwardingEngine(B, chain_routes([A, B, C, D])[B], NoLoss(), SnoopAgent("B", SnoopConfig()),
                            lambda n: 1.0, log)


def test_a_flood_of_junk_writes_a_bounded_number_of_lines_and_exact_totals(tmp_path):
    rep = tmp_path / "v" / "rep0"
    rep.mkdir(parents=True)
    (rep / "meta.json").write_text(json.dumps({"variant": "v", "repetition": 0, "status": "ok"}))
    log = EventLog(rep / "B.log", "B")
    eng = node(log)
    n_per_s, seconds = 5000, 3
    for k in range(n_per_s * seconds):
        eng.on_datagram(b"junk%d" % k, 100.0 + k / n_per_s)
    eng.step.flush_drops(100.0 + seconds, final=True)
    log.emit(100.0 + seconds, "node_stop", address=B, drops=eng.drops)
    log.close()
    lines = [json.loads(l) for l in (rep / "B.log").read_text().splitlines()]
    drops = [e for e in lines if e["ev"] == "drop"]
    assert len(drops) == seconds * (DROP_LINES_PER_S + 1)          # not 15,000 lines
    assert sum(e.get("count", 1) for e in drops) == n_per_s * seconds
    assert [e["count"] for e in drops if "count" in e] == [n_per_s - DROP_LINES_PER_S] * seconds
    assert lines[-1]["drops"]["malformed"] == n_per_s * seconds   # node_stop: exact
    assert [e["t"] for e in lines] == sorted(e["t"] for e in lines)
    assert summarize_rep(load_rep(rep))["drops_malformed"] == n_per_s * seconds


def test_few_drops_are_logged_one_by_one():
    events = []
    eng = node(lambda now, ev, **f: events.append((ev, f)))
    for k in range(DROP_LINES_PER_S):
        eng.on_datagram(b"x", float(k) / 100)
    eng.step.flush_drops(10.0, final=True)
    assert len(events) == DROP_LINES_PER_S and all("count" not in f for _, f in events)


# ====================================================================================================
# Conformance: the overlay adapter and the kernel adapter around the one forwarding step (routing.forwarding.step).
#
# One scripted scenario per snoop scheme (segments and ACKs, scripted losses, duplicate
# ACKs, SACK blocks, timers firing) is driven through routing.overlay.engine.ForwardingEngine
# with overlay packets, with encoded datagrams (version 2) and with sealed datagrams of
# the authenticated overlay (version 3), and through routing.kernel.forwarder.KernelForwarder with
# IPv4 bytes.
# Both must give the same decision for every packet (passed on or held back, the
# header fields it leaves with, what is resent from the cache, which new ACKs go
# out), the same counters and the same sequence of log events, fields that only
# one data plane has aside (a malformed packet's ``detail`` and ``size``).
#
# What the kernel data plane cannot carry is left out of the scripts: SNACK entries
# (no TCP option for them; netns refuses the snack scheme, so SNACK-Snoop runs here
# on SACK-only ACKs) and window scaling other than 0 (tests/routing/kernel/test_forwarder.py).


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


# ====================================================================================================
# Rules of routing/forwarding/step.py that the mutation run (bench/mutation.py, docs/MUTATION.md) found unpinned.
#
# tests/routing/forwarding/test_step.py compares two data planes that run this same step, so it cannot see a
# wrong rule in the step itself; these tests drive one ForwardingStep by hand and check what it says,
# counts and logs (docs/LOGS.md): the next hop and its delivery ratio handed to the agent, one ``tx``
# line and count per transmission with its kind and hop index, local retransmissions routed to the
# flow's destination (or dropped as ``no_route``), every drop counted and its line rate limited per
# reason and second (issue 13, item 4), the hop limit, the loss model per previous hop.


FLOW_KEY = (A, 5000, D, 6000)


FLOW = "10.2.1.1:5000>10.2.1.4:6000"


class Log(EventWriter):
    def __init__(self):
        self.events = []
        self.flushed = []

    def emit(self, now, ev, **fields):
        self.events.append((now, ev, fields))

    def flush_counts(self, now, final=False):
        self.flushed.append((now, final))

    def of(self, ev):
        return [(t, f) for t, e, f in self.events if e == ev]


class Agent(SnoopAgent):
    """A-SPAN's agent, recording what the step hands it."""

    def __init__(self, **cfg):
        super().__init__("B", SnoopConfig(**cfg))
        self.data_calls, self.ack_calls, self.due = [], [], []

    def on_data(self, flow, seq, length, fields, p_next, hop_index, now, packet):
        self.data_calls.append((flow, seq, length, p_next, hop_index, now, packet))
        return super().on_data(flow, seq, length, fields, p_next, hop_index, now, packet)

    def on_ack(self, flow, ack, now, **details):
        self.ack_calls.append((flow, ack, now, details))
        return super().on_ack(flow, ack, now, **details)

    def on_timer(self, now):
        return self.due


def step(routes=None, quality=None, **cfg):
    routes = {D: C, C: C, A: A} if routes is None else routes
    log, agent = Log(), Agent(policy=cfg.pop("policy", "every"), **cfg)
    s = ForwardingStep(B, routes.get, quality or {C: 0.8, A: 0.9}.get, agent, NoLoss(), log)
    return s, agent, log


def held(seq=0, length=1000, hop=1):
    return Held(f"pkt{seq}", FLOW_KEY, FLOW, seq, length, hop)


def test_data_goes_to_the_next_hop_with_its_delivery_ratio_and_is_logged_once():
    s, agent, log = step()
    h = held(seq=7000, hop=1)
    assert s.data(2.0, h, D, AspanFields(), "fwd") == C
    assert agent.data_calls == [(FLOW_KEY, 7000, 1000, 0.8, 1, 2.0, h)]
    assert log.of("tx") == [(2.0, {"flow": FLOW, "seq": 7000, "len": 1000, "kind": "fwd", "hop": 1})]
    assert s.tx == {"send": 0, "fwd": 1, "local": 0}
    assert s.data(2.5, held(seq=8000, hop=0), D, AspanFields(), "send") == C
    s.data(2.6, held(seq=9000, hop=1), D, AspanFields(), "fwd")
    assert s.tx == {"send": 1, "fwd": 2, "local": 0}


def test_data_without_a_route_is_not_sent_counted_or_given_to_the_agent():
    s, agent, log = step(routes={})
    assert s.data(1.0, held(), D, AspanFields(), "fwd") is None
    assert agent.data_calls == [] and log.events == [] and s.tx["fwd"] == 0


def test_explain_notes_why_a_segment_was_cached_and_nothing_when_it_was_not():
    s, _, _ = step(policy="adaptive")
    s.explain = True
    h = held()
    s.data(1.0, h, D, AspanFields(pkt_effort=1.0, pkt_qos=0.9), "fwd")    # 1.0 x 0.8 < 0.9: cached
    assert s.agent.data_calls[-1][-1] is h and s.agent.on_ack(FLOW_KEY, 0, 1.1).forward    # the Held is cached
    assert s.agent.on_ack(FLOW_KEY, 0, 1.2).retransmit == [h]
    assert s.note == ("cached here (A-SPAN): pkt_effort 1.000000 x p(next hop) 0.800000 = 0.800000 "
                      "< pkt_qos 0.900000")
    s.data(1.0, held(seq=1000, hop=0), D, AspanFields(pkt_effort=1.0, pkt_qos=0.9), "send")  # not at the sender
    assert s.note is None
    assert cache_note("every", 1.0, 0.8, 0.5) == "cached here (policy every)"
    assert cache_note("perfect", 0.25, 0.5, 0.5).startswith("cached here (A-SPAN): pkt_effort 0.250000 x ")


def test_an_unsnooped_relay_is_a_fwd_transmission_without_a_hop_index():
    s, _, log = step()
    s.relayed_unsnooped(3.0, FLOW, 42, 500)
    assert log.of("tx") == [(3.0, {"flow": FLOW, "seq": 42, "len": 500, "kind": "fwd", "hop": None})]
    s.relayed_unsnooped(3.1, FLOW, 542, 500)
    assert s.tx["fwd"] == 2


def test_local_retransmissions_go_toward_the_flows_destination_or_are_dropped_as_no_route():
    s, _, log = step(routes={D: C})
    routed, stranded = held(seq=1000, hop=2), Held("x", (A, 1, "10.9.9.9", 2), "f", 5, 300, 1)
    assert s.local(4.0, [stranded, routed]) == [(routed, C)]          # a stranded copy stops no other
    assert log.of("tx") == [(4.0, {"flow": FLOW, "seq": 1000, "len": 1000, "kind": "local", "hop": 2})]
    assert s.tx["local"] == 1 and s.drops["no_route"] == 1
    assert s.local(4.1, [routed, routed]) == [(routed, C), (routed, C)] and s.tx["local"] == 3
    assert log.of("drop") == [(4.0, {"reason": "no_route", "ptype": "tcp", "flow": "f", "seq": 5, "len": 300})]


def test_the_agents_timers_are_resent_through_local():
    s, agent, log = step()
    agent.due = [held(seq=3000, hop=1)]
    assert s.timer(6.0) == [(agent.due[0], C)] and s.tx["local"] == 1
    assert log.of("tx")[-1][0] == 6.0
    assert s.next_timer() is None


def test_an_ack_reaches_the_agent_with_its_details_only_when_the_agent_reads_them():
    s, agent, _ = step()
    s.ack(1.0, FLOW_KEY, 500, 8000, (1, 2), "ackpkt")
    assert agent.ack_calls == [(FLOW_KEY, 500, 1.0, {})]
    s.ack_details = True
    s.ack(1.5, FLOW_KEY, 600, 8000, (1, 2), "ackpkt")
    assert agent.ack_calls[-1] == (FLOW_KEY, 600, 1.5, {"window": 8000, "snack": (1, 2), "packet": "ackpkt"})


def test_a_generated_ack_is_counted_and_logged():
    s, _, log = step()
    assert s.generated() == []
    s.ack_sent(2.0, GeneratedAck("tpl", 4000, 65535, "ack_all"), FLOW)
    s.ack_sent(2.1, GeneratedAck("tpl", 5000, 65535, "slack"), FLOW)
    assert s.acks_generated == 2
    assert log.of("ack_gen")[0] == (2.0, {"flow": FLOW, "ack": 4000, "window": 65535, "reason": "ack_all"})


def test_the_hop_limit_is_reached_at_hop_limit_transmissions():
    s, _, _ = step()
    assert HOP_LIMIT == 64
    assert not s.expired(HOP_LIMIT - 1) and s.expired(HOP_LIMIT) and s.expired(HOP_LIMIT + 1)
    low = ForwardingStep(B, {}.get, {}.get, Agent(), NoLoss(), Log(), hop_limit=3)
    assert not low.expired(2) and low.expired(3)


def test_a_link_with_its_own_loss_model_uses_it_and_the_others_use_the_nodes():
    s, _, _ = step()
    s.set_link_loss({A: LinkDown([[0.0, 10.0]])})
    assert s.lost_from(5.0, 100, A) is True
    assert s.lost_from(5.0, 100, C) is False and s.lost_from(5.0, 100, None) is False
    assert s.lost_from(20.0, 100, A) is False
    s.set_link_loss({A: BitError(1.0, random.Random(1))})           # loses every packet of size > 0
    assert s.lost_from(1.0, 100, A) is True and s.lost_from(1.0, 0, A) is False


def test_every_drop_is_counted_its_reason_kept_and_its_line_rate_limited():
    s, _, log = step()
    for k in range(DROP_LINES_PER_S + 5):
        s.drop(10.0 + k / 1000, "malformed", "udp")
    s.drop(10.5, "ttl")
    assert s.drops["malformed"] == DROP_LINES_PER_S + 5 and s.drops["ttl"] == 1 and s.last_drop == "ttl"
    assert len(log.of("drop")) == DROP_LINES_PER_S + 1
    assert log.of("drop")[0] == (10.0, {"reason": "malformed", "ptype": "udp"})
    s.flush_drops(10.6)                                   # malformed's second is not over
    assert len(log.of("drop")) == DROP_LINES_PER_S + 1 and log.flushed == [(10.6, False)]
    s.flush_drops(11.0)                                   # now it is: one line with the count
    assert log.of("drop")[-1] == (11.0, {"reason": "malformed", "count": 5, "since": 10.0})
    s.flush_drops(12.0, final=True)
    assert len(log.of("drop")) == DROP_LINES_PER_S + 2 and log.flushed[-1] == (12.0, True)
    for k in range(DROP_LINES_PER_S + 2):                 # a second's worth at 20.0, flushed within it
        s.drop(20.0 + k / 1000, "queue")
    s.flush_drops(20.5, final=True)
    assert log.of("drop")[-1] == (20.5, {"reason": "queue", "count": 2, "since": 20.0})


def test_drop_lines_count_per_kind_and_second_and_write_the_count_when_the_next_second_starts():
    lines = []
    d = DropLines(lambda now, kind, count, since: lines.append((now, kind, count, since)))
    assert all(d.one_line(1.0, "x") for _ in range(DROP_LINES_PER_S))
    assert not d.one_line(1.5, "x") and not d.one_line(1.9, "x")
    assert d.one_line(1.9, "y")                           # another kind has its own budget
    assert d.one_line(2.0, "x")                           # a new second: a line again ...
    assert lines == [(2.0, "x", 2, 1.0)]                  # ... and the last one's count written
    assert all(d.one_line(2.5, "x") for _ in range(DROP_LINES_PER_S - 1))
    assert not d.one_line(2.99, "x")
    d.flush(2.999, final=False)                           # its second is not over: nothing
    assert lines == [(2.0, "x", 2, 1.0)]
    d.flush(3.0, final=False)
    assert lines[-1] == (3.0, "x", 1, 2.0)
    d.flush(3.5, final=True)                              # nothing left to write
    assert len(lines) == 2


def test_a_drop_count_line_is_written_once_and_its_since_rounded():
    lines = []
    d = DropLines(lambda now, kind, count, since: lines.append((now, kind, count, since)))
    t0 = 1.2500004
    for _ in range(DROP_LINES_PER_S + 3):
        d.one_line(t0, "x")
    d.flush(1.5)                                          # final by default: within the second too
    d.flush(1.6)
    assert lines == [(1.5, "x", 3, 1.25)]
    assert isinstance(lines[0][2], int)
    d.one_line(t0 + 0.5, "x")                             # its second goes on, counting from zero
    d.one_line(t0 + 0.6, "x")
    d.flush(7.0)
    assert lines[-1] == (7.0, "x", 2, 1.25)


@pytest.mark.parametrize("reason", ["loss", "queue", "malformed", "no_route", "suppressed", "ttl", "stranger",
                                    "forged", "replay", "mac_retry", "rts_retry", "refused"])
def test_every_documented_drop_reason_has_a_counter(reason):
    s, _, _ = step()
    s.drop(1.0, reason)
    assert s.drops[reason] == 1 and sum(s.drops.values()) == 1


def test_a_new_step_explains_nothing_has_no_drop_and_uses_the_nodes_loss_for_every_link():
    s, _, _ = step()
    assert (s.explain, s.note, s.last_drop) == (False, None, "")
    s.data(1.0, held(), D, AspanFields(pkt_effort=1.0, pkt_qos=0.9), "fwd")      # cached, but no capture
    assert s.note is None
    assert s.lost_from(1.0, 100, A) is False                                      # no link model: NoLoss


def test_a_drops_details_reach_its_log_line():
    s, _, log = step()
    s.drop(1.0, "malformed", detail="short header", size=3)
    s.drop(1.1, "suppressed", "tcp", FLOW, None, 4000, 0)
    assert log.of("drop") == [(1.0, {"reason": "malformed", "detail": "short header", "size": 3}),
                              (1.1, {"reason": "suppressed", "ptype": "tcp", "flow": FLOW, "ack": 4000, "len": 0})]
