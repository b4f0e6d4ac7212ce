"""The helpers the unit tests of the cores share, in one place: a scripted two-endpoint network for the
user-space TCP (``Sim``, ``pair``, ``client``, ``server`` and the segment builders), the snoop agents' event log
and flows, the DCF medium's scripted random numbers and exact times, the wire format's hypothesis strategies,
crafted kernel packets and the link shaper's fake NFQUEUE packets.  Everything is virtual time: no sockets, no
threads, no clock.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable

from hypothesis import strategies as st
from scapy.all import IP, TCP, Raw

from aspan.fields import FIXED_ONE, AspanFields
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from routing.medium.dcf import Delivered, Medium, Topology
from routing.medium.phy import Phy
from routing.overlay.wire import DATA, LSA, PROBE, Packet, Probe
from routing.topology.linkstate import Lsa
from tcp_user.config import TcpConfig
from tcp_user.connection import TcpConnection
from tcp_user.segment import ACK, FIN, RST, SYN, Segment


# ---- the user-space TCP: two endpoints through a scripted link in virtual time (tests/tcp_user/) -----------
# ``Sim`` wires two TcpConnection objects "a" and "b" through a link with a fixed one-way delay.  Everything
# happens in virtual time: the loop jumps to the next arrival or timer, delivers one segment at a time, lets the
# receiving side read (if asked) and drains both sides' output.  Specific transmissions can be dropped by
# sequence number and occurrence, or by a predicate.

MASK = 0xFFFFFFFF


@dataclass
class Recorder:
    """An ``emit`` callback that keeps every event."""

    events: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)

    def __call__(self, now: float, ev: str, **fields: Any) -> None:
        self.events.append((now, ev, fields))

    def of(self, ev: str) -> list[dict[str, Any]]:
        return [f for _, e, f in self.events if e == ev]

    def timed(self, ev: str) -> list[tuple[float, dict[str, Any]]]:
        return [(t, f) for t, e, f in self.events if e == ev]


DropRule = Callable[[str, Segment, int, float], bool]


class Sim:
    def __init__(self, a: TcpConnection, b: TcpConnection, delay: float = 0.05,
                 read: tuple[str, ...] = ("a", "b")) -> None:
        self.conns = {"a": a, "b": b}
        self.peer = {"a": "b", "b": "a"}
        self.delay = delay
        self.now = 0.0
        self.read = set(read)
        self.received = {"a": bytearray(), "b": bytearray()}
        self.sent: list[tuple[float, str, Segment]] = []          # every transmission
        self.delivered: list[tuple[float, str, Segment]] = []     # (time, destination, seg)
        self.dropped: list[tuple[float, str, Segment]] = []
        self._drop_at: dict[tuple[str, int], set[int]] = {}
        self._rules: list[DropRule] = []
        self._delays: list[Callable[[str, Segment, int, float], float]] = []
        self._dups: list[DropRule] = []
        self._count: dict[tuple[str, int], int] = {}
        self._q: list[tuple[float, int, str, Segment]] = []
        self._n = 0
        self.after_send: list[Callable[[float, str, Segment], None]] = []
        self.after_deliver: list[Callable[[float, str, Segment], None]] = []

    # -- loss scripting
    def drop(self, src: str, seq: int, *occurrences: int) -> None:
        """Drop the given transmissions (1 = first) of the segment ``src`` sends at ``seq``
        (32-bit value; only segments occupying sequence space are counted)."""
        self._drop_at.setdefault((src, seq & MASK), set()).update(occurrences or (1,))

    def drop_if(self, rule: DropRule) -> None:
        """``rule(src, seg, occurrence, now)`` -> True drops the transmission."""
        self._rules.append(rule)

    def delay_if(self, rule: Callable[[str, Segment, int, float], float]) -> None:
        """``rule(src, seg, occurrence, now)`` -> extra one-way delay (reordering)."""
        self._delays.append(rule)

    def duplicate_if(self, rule: DropRule) -> None:
        """``rule(src, seg, occurrence, now)`` -> True delivers the segment twice."""
        self._dups.append(rule)

    # -- plumbing
    def flush(self) -> None:
        for name, conn in self.conns.items():
            for seg in conn.segments_to_send(self.now):
                self._transmit(name, seg)

    def _transmit(self, src: str, seg: Segment) -> None:
        occ = 0
        if seg.length:
            key = (src, seg.seq)
            occ = self._count.get(key, 0) + 1
            self._count[key] = occ
        self.sent.append((self.now, src, seg))
        for hook in self.after_send:
            hook(self.now, src, seg)
        if occ and occ in self._drop_at.get((src, seg.seq), ()):
            self.dropped.append((self.now, src, seg))
            return
        if any(rule(src, seg, occ, self.now) for rule in self._rules):
            self.dropped.append((self.now, src, seg))
            return
        delay = self.delay + sum(rule(src, seg, occ, self.now) for rule in self._delays)
        copies = 2 if any(rule(src, seg, occ, self.now) for rule in self._dups) else 1
        for _ in range(copies):
            self._n += 1
            heapq.heappush(self._q, (self.now + delay, self._n, self.peer[src], seg))

    def next_time(self) -> float | None:
        cand = [t for t in (c.next_timer() for c in self.conns.values()) if t is not None]
        if self._q:
            cand.append(self._q[0][0])
        return min(cand) if cand else None

    def step(self) -> bool:
        t_next = self.next_time()
        if t_next is None:
            return False
        self.now = max(self.now, t_next)
        while self._q and self._q[0][0] <= self.now:
            _, _, dst, seg = heapq.heappop(self._q)
            conn = self.conns[dst]
            conn.on_segment(seg, self.now)
            self.delivered.append((self.now, dst, seg))
            for hook in self.after_deliver:
                hook(self.now, dst, seg)
            if dst in self.read:
                self.received[dst] += conn.read()
            self.flush()
        for conn in self.conns.values():
            t = conn.next_timer()
            if t is not None and t <= self.now:
                conn.on_timer(self.now)
                self.flush()
        return True

    def run(self, until: float = 10_000.0, stop: Callable[[], bool] | None = None,
            max_steps: int = 2_000_000) -> None:
        self.flush()
        for _ in range(max_steps):
            if stop is not None and stop():
                return
            t_next = self.next_time()
            if t_next is None or t_next > until:
                return
            self.step()
        raise AssertionError("simulation did not settle")

    # -- views
    def data_sent(self, src: str) -> list[tuple[float, Segment]]:
        return [(t, s) for t, n, s in self.sent if n == src and s.payload]


def pair(variant: str = "reno", *, iss_a: int = 1000, iss_b: int = 50_000,
         **cfg: Any) -> tuple[TcpConnection, TcpConnection, Recorder, Recorder]:
    """A connected-to-be client ``a`` (recorded) and listening server ``b``."""
    config = TcpConfig(variant=variant, **cfg)
    ra, rb = Recorder(), Recorder()
    a = TcpConnection(config, iss=iss_a, emit=ra)
    b = TcpConnection(config, iss=iss_b, emit=rb)
    b.listen()
    return a, b, ra, rb


def bulk(a: TcpConnection, b: TcpConnection, nbytes: int, *, delay: float = 0.05,
         seed: int = 1, close_b: bool = True) -> tuple[Sim, bytes]:
    """Prepare a ``nbytes`` bulk transfer a -> b (a connects, sends, closes; b closes when it
    sees the FIN).  Returns the simulator (not yet run) and the payload."""
    import random
    data = random.Random(seed).randbytes(nbytes)
    sim = Sim(a, b, delay=delay)
    a.connect(0.0)
    a.send(data)
    a.close(0.0)
    if close_b:
        def close_on_fin(now: float, dst: str, seg: Segment) -> None:
            if dst == "b" and b.state == "CLOSE_WAIT":
                b.close(now)
        sim.after_deliver.append(close_on_fin)
    return sim, data


def seq_of(iss: int, index: int, mss: int = 1000) -> int:
    """32-bit sequence number of data segment ``index`` (0-based) sent from ISS ``iss``."""
    return (iss + 1 + index * mss) & MASK


# ---------------------------------------------------------------- direct (hand-fed) endpoints
PEER_WINDOW = 64_000


def server(variant: str = "sack", *, iss: int = 7000, peer_iss: int = 90_000,
           **cfg: Any) -> tuple[TcpConnection, Recorder]:
    """A passive endpoint brought to ESTABLISHED by hand-made SYN and ACK from ``peer_iss``."""
    rec = Recorder()
    conn = TcpConnection(TcpConfig(variant=variant, **cfg), iss=iss, emit=rec)
    conn.listen()
    conn.on_segment(Segment(seq=peer_iss, flags=SYN, window=PEER_WINDOW), 0.0)
    synack = conn.segments_to_send(0.0)
    assert [s.flags for s in synack] == [SYN | ACK]
    conn.on_segment(Segment(seq=(peer_iss + 1) & MASK, ack=(iss + 1) & MASK, flags=ACK,
                            window=PEER_WINDOW), 0.0)
    assert conn.state == "ESTABLISHED"
    return conn, rec


def client(variant: str = "reno", *, iss: int = 7000, peer_iss: int = 90_000, rtt: float = 0.5,
           window: int = PEER_WINDOW, **cfg: Any) -> tuple[TcpConnection, Recorder]:
    """An active endpoint whose SYN (sent at t=0) is answered by a SYN+ACK at t=``rtt``."""
    rec = Recorder()
    conn = TcpConnection(TcpConfig(variant=variant, **cfg), iss=iss, emit=rec)
    conn.connect(0.0)
    assert [s.flags for s in conn.segments_to_send(0.0)] == [SYN]
    conn.on_segment(Segment(seq=peer_iss, ack=(iss + 1) & MASK, flags=SYN | ACK, window=window), rtt)
    assert conn.state == "ESTABLISHED"
    assert [s.flags for s in conn.segments_to_send(rtt)] == [ACK]
    return conn, rec


def ack_seg(conn: TcpConnection, ack: int, *, peer_iss: int = 90_000, window: int = PEER_WINDOW,
            sack: tuple[tuple[int, int], ...] = ()) -> Segment:
    """A pure ACK from the peer of a :func:`client` endpoint."""
    return Segment(seq=(peer_iss + 1) & MASK, ack=ack & MASK, flags=ACK, window=window, sack=sack)


def data_seg(index: int, *, peer_iss: int = 90_000, ack: int = 7001, mss: int = 1000,
             fin: bool = False) -> Segment:
    """Data segment ``index`` (0-based, ``mss`` bytes of ``bytes([index])``) from a peer."""
    return Segment(seq=seq_of(peer_iss, index, mss), ack=ack, flags=ACK | (FIN if fin else 0),
                   window=PEER_WINDOW, payload=bytes([index % 256]) * mss)


# ---- the snoop agents: their event log, one flow, the schemes' agents fed by hand (tests/aspan/) -----------

class Log:
    """Events an agent emitted, as (now, ev, fields); ``of(ev)``: the fields of one kind."""

    def __init__(self):
        self.events = []

    def __call__(self, now, ev, **f):
        self.events.append((now, ev, f))

    def of(self, ev):
        return [f for _, e, f in self.events if e == ev]


FLOW = ("10.2.1.1", 5000, "10.2.1.4", 6000)

MSS = 1000

WND = 64_000


def scheme_agent(cls, scheme, policy="every", **kw):
    log = Log()
    return cls("C", SnoopConfig(policy=policy), log, SchemeConfig(scheme=scheme, **kw)), log


def send_segments(a, idx, t=0.0, hop=2):
    return [a.on_data(FLOW, i * MSS, MSS, AspanFields(), 1.0, hop, t, f"pkt{i}") for i in idx]


def hear_ack(a, n, t, window=WND, packet="ack"):
    return a.on_ack(FLOW, n, t, window=window, packet=packet)


# ---- the DCF medium at 802.11b: exact times in ns, scripted backoff draws (tests/routing/medium/) ----------

B = Phy.preset("b")

DATA_1000 = 192_000 + 753_455          # preamble + (1000 + 36) * 8 / 11 Mb/s, rounded up to the ns

ACK_NS = 192_000 + 56_000                 # preamble + 14 * 8 / 2 Mb/s

DIFS = 50_000

SLOT = 20_000


class ScriptedRng:
    """randint(0, cw) answers from a script and records every cw asked for."""

    def __init__(self, *draws: int) -> None:
        self.draws = list(draws)
        self.windows: list[int] = []

    def randint(self, lo: int, hi: int) -> int:
        assert lo == 0
        self.windows.append(hi)
        return self.draws.pop(0) if self.draws else 0


def run_medium(m: Medium, until: int = 10**12) -> list[tuple[int, str, str, str]]:
    """Every output up to ``until``: (time, kind, src, dst)."""
    out = []
    while (t := m.next_timer()) is not None and t <= until:
        for o in m.advance(t):
            out.append((o.at_ns, "deliver" if isinstance(o, Delivered) else o.reason, o.frame.src, o.frame.dst))
    return out


def full_mesh(*nodes: str) -> Topology:
    return Topology.from_graph({n: [x for x in nodes if x != n] for n in nodes})


# ---- the wire format: hypothesis strategies of every packet (tests/routing/overlay/) -----------------------

u32 = st.integers(0, 2**32 - 1)

prob = st.integers(0, FIXED_ONE).map(lambda k: k / FIXED_ONE)   # the header's grid (aspan.fields)

ratio = st.floats(0.0, 1.0, width=32, allow_nan=False)          # a probe's ratio: f32

ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))

port = st.integers(0, 65535)

byte = st.integers(0, 255)

fields_st = st.builds(AspanFields, prob, prob, byte, byte, byte)

segment_st = st.builds(
    Segment, u32, u32,
    st.sampled_from([0, SYN, ACK, SYN | ACK, FIN | ACK, RST, ACK | RST]),
    u32,
    st.lists(st.tuples(u32, u32), max_size=4).map(tuple),
    st.binary(max_size=1500),
    st.lists(u32, max_size=6).map(tuple),
    st.one_of(st.none(), u32),          # RFC 7323 TSval (None: no Timestamps option)
    u32,
).map(lambda s: s if s.tsval is not None else Segment(s.seq, s.ack, s.flags, s.window, s.sack, s.payload,
                                                       s.snack))     # no option: TSecr 0

etx = st.integers(100, 65534).map(lambda h: h / 100)          # an LSA link's ETX: u16 hundredths, 1 .. MAX_ETX

lsa_st = st.builds(Lsa, ipv4, u32, st.lists(st.tuples(ipv4, etx), max_size=40).map(tuple))


@st.composite
def packets(draw):
    ptype = draw(st.sampled_from([DATA, PROBE, LSA]))
    pkt = Packet(ptype, draw(ipv4), draw(port), draw(ipv4), draw(port), draw(byte), draw(fields_st))
    if ptype == DATA:
        pkt.segment = draw(segment_st)
    elif ptype == PROBE:
        pkt.probe = Probe(draw(u32), draw(st.one_of(st.just(-1.0), ratio)))
    else:
        pkt.lsa = draw(lsa_st)
    return pkt


# ---- kernel packets: a TCP segment as scapy builds it (tests/routing/kernel/) ------------------------------

def tcp_bytes(payload: int = 100, options=None, flags: str = "A", seq: int = 1000, ack: int = 0, **ip) -> bytes:
    pkt = IP(src="10.2.1.1", dst="10.2.1.4", flags="DF", **ip)
    if options is not None:
        pkt.options = options
    return bytes(pkt / TCP(sport=5000, dport=6000, seq=seq, ack=ack, flags=flags) / Raw(b"x" * payload))


# ---- the netns link shaper's fake NFQUEUE packets (tests/routing/links/, tests/routing/drivers/) -----------

class FakePacket:
    def __init__(self, indev: int, size: int, payload: bytes = b"") -> None:
        self.indev, self.size, self.payload, self.verdict = indev, size, payload, None

    def get_payload_len(self) -> int:
        return self.size

    def get_payload(self) -> bytes:
        return self.payload

    def get_timestamp(self) -> float:
        return 0.0          # no receive timestamp: the shaper uses its clock

    def accept(self) -> None:
        assert self.verdict is None
        self.verdict = "accept"

    def drop(self) -> None:
        assert self.verdict is None
        self.verdict = "drop"
