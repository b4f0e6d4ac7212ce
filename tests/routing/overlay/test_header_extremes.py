"""Issue 27, item 5: every header field at its extreme values (0, max - 1, max), through every path a
datagram can take at a relay: plain (version 2, the relay path for data and ACKs passing through),
with ``auth.mac`` (version 3), the packet path the relay path falls back to (taken for every datagram
when the node writes a capture), and the virtual-time backend's decoded packets.  Each datagram is
either delivered, or sent on with an encoding the next hop accepts, or dropped and counted under a
named reason; a ``tx`` line is never written for a segment that is not sent (the snoop_count 255 bug:
cached, logged as forwarded, then not encodable).
"""
import struct
import zlib
from hypothesis import HealthCheck, event, given, settings, strategies as st
from aspan.agent import SnoopAgent
from aspan.fields import SNOOP_COUNT_MAX, AspanFields
from aspan.policy import SnoopConfig
from routing.overlay import wire
from routing.overlay.auth import MeshAuth
from routing.drivers.capture import OverlayTap
from routing.overlay.engine import Deliver, Drop, ForwardingEngine, Transmit
from routing.links.loss import NoLoss
from routing.topology.routes import chain_routes
from routing.forwarding.step import DROP_REASONS
from routing.overlay.wire import DATA, MAX_HOPS, PROBE, Packet, Probe, decode, encode
from tcp_user.segment import ACK, SYN, Segment


A, B, C, D = MESH = ["10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"]


KEY = bytes(range(32))


#: Every field of the overlay header and of the DATA body, in wire order (routing.overlay.wire._PLAIN_DATA).
HEADER = [("magic", "B"), ("version", "B"), ("type", "B"), ("src", "4s"), ("sport", "H"), ("dst", "4s"),
          ("dport", "H"), ("hops", "B"), ("snoop_after", "B"), ("snoop_limit", "B"), ("snoop_count", "B"),
          ("pkt_effort", "H"), ("pkt_qos", "H")]


DATA_BODY = [("seq", "I"), ("ack", "I"), ("flags", "B"), ("nsack", "B"), ("nsnack", "B"), ("window", "I"),
             ("paylen", "H")]


PROBE_BODY = [("probe_seq", "I"), ("ratio", "f")]


EXTREMES = {"B": [0, 254, 255], "H": [0, 65534, 65535], "I": [0, 2**32 - 2, 2**32 - 1],
            "4s": [bytes(4), b"\xff\xff\xff\xfe", b"\xff\xff\xff\xff"],
            "f": [0.0, 1.0, -1.0, float("nan"), float("inf"), 3.4e38]}


def test_the_field_lists_are_the_wire_format():
    """Every field of the wire is drawn: the lists above are the structs of routing.overlay.wire."""
    assert "!" + "".join(code for _, code in HEADER + DATA_BODY) == wire._PLAIN_DATA.format
    assert "!" + "".join(code for _, code in HEADER) == wire._HEADER.format
    assert "!" + "".join(code for _, code in PROBE_BODY) == wire._PROBE.format


def _offsets(fields):
    out, off = {}, 0
    for name, code in fields:
        out[name] = (off, code)
        off += struct.calcsize("!" + code)
    return out


def base_packets():
    """What a relay B of the chain A-B-C-D hears: a data segment and a pure ACK passing through, a data
    segment and a SYN addressed to it, a probe from a neighbour."""
    f = AspanFields(1.0, 1.0, 0, 0, 0)
    return {
        "data through": Packet(DATA, A, 5000, D, 6000, 1, f, Segment(100, 7, ACK, 65535, (), b"d" * 100)),
        "ack through": Packet(DATA, D, 6000, A, 5000, 1, AspanFields(), Segment(7, 100, ACK, 65535)),
        "data to B": Packet(DATA, A, 5000, B, 6000, 1, f.copy(), Segment(100, 7, ACK, 65535, (), b"d" * 10)),
        "syn to B": Packet(DATA, A, 5000, B, 6000, 1, f.copy(), Segment(100, 0, SYN, 65535)),
        "probe": Packet(PROBE, A, 0, B, 0, 0, AspanFields(), probe=Probe(5, 0.5)),
    }


@st.composite
def extreme_packets(draw):
    """(base name, base packet, {field: extreme value}): one to three fields of the header, and of the
    DATA or PROBE body, set to 0, max - 1 or max."""
    bases = base_packets()
    name = draw(st.sampled_from(sorted(bases)))
    pkt = bases[name]
    fields = HEADER + (PROBE_BODY if pkt.ptype == PROBE else DATA_BODY)
    chosen = draw(st.permutations([n for n, _ in fields]))[:draw(st.integers(1, 3))]
    codes = dict(fields)
    return name, pkt, {f: draw(st.sampled_from(EXTREMES[codes[f]])) for f in chosen}


def patch(data: bytes, ptype: int, values: dict, trailer: int) -> bytearray:
    """``data`` with the fields in ``values`` overwritten; the trailer (``trailer`` bytes) left for the caller."""
    offs = _offsets(HEADER + (PROBE_BODY if ptype == PROBE else DATA_BODY))
    buf = bytearray(data)
    for name, value in values.items():
        off, code = offs[name]
        struct.pack_into("!" + code, buf, off, value)
    assert len(buf) > trailer
    return buf


def v2(pkt: Packet, values: dict) -> bytes:
    buf = patch(encode(pkt), pkt.ptype, values, 4)
    struct.pack_into("!I", buf, len(buf) - 4, zlib.crc32(memoryview(buf)[:-4]))   # a well-formed CRC
    return bytes(buf)


def auths() -> dict:
    nbrs = {A: [B], B: [A, C], C: [B, D], D: [C]}
    return {n: MeshAuth(KEY, n, nbrs[n], first_seq=1) for n in MESH}


def relay(tmp_path=None, hop_limit: int = 4, log=None) -> ForwardingEngine:
    """Node B, caching every segment it sends on (the most header rewriting)."""
    eng = ForwardingEngine(B, chain_routes(MESH)[B], NoLoss(), SnoopAgent("B", SnoopConfig(policy="every")),
                           lambda n: 0.5, log, hop_limit=hop_limit)
    if tmp_path is not None:
        eng.capture(OverlayTap(tmp_path / "B.pcapng", B, 10**7))
    return eng


def check_outcome(eng: ForwardingEngine, actions: list, before: dict, tx_before: int, mac: dict | None) -> None:
    """Delivered, or sent on with an encoding the next hop accepts, or dropped and counted by a named reason;
    one ``tx`` counted per data segment sent."""
    assert actions, "a datagram without a fate"
    drops = [a for a in actions if isinstance(a, Drop)]
    assert all(d.reason in DROP_REASONS for d in drops)
    delta = {r: eng.drops[r] - before[r] for r in DROP_REASONS}
    assert sum(delta.values()) == len(drops)
    for d in drops:
        assert delta[d.reason] >= 1
    sent_data = 0
    for a in actions:
        if isinstance(a, Transmit):
            assert a.next_hop in (A, C)
            if mac is None:
                got = decode(bytes(a.packet)) if not isinstance(a.packet, Packet) else decode(encode(a.packet))
            else:   # sealed for the next link, as the UDP driver does, and opened there
                if isinstance(a.packet, Packet):
                    data = mac[B].seal(a.packet, a.next_hop)
                else:
                    mac[B].reseal(a.packet, a.next_hop)
                    data = bytes(a.packet)
                got = mac[a.next_hop].open(data, B)
            assert got.hops <= MAX_HOPS and got.fields.snoop_count <= SNOOP_COUNT_MAX
            if got.segment is not None and got.segment.payload:
                sent_data += 1
        else:
            assert isinstance(a, (Deliver, Drop))
    assert sum(eng.step.tx.values()) - tx_before == sent_data   # logged as sent = sent


def feed(eng: ForwardingEngine, path: str, data: bytes, mac: dict | None) -> None:
    before, tx_before = dict(eng.drops), sum(eng.step.tx.values())
    if path == "sim":
        try:
            pkt = decode(data)
        except wire.WireError:
            event("sim: not decodable (dropped as malformed on the byte paths)")
            return
        actions = eng.on_packet(pkt, 1.0, A)
    elif path == "mac":
        try:
            mac[B].verify(data, A)
        except wire.AuthError as e:        # cannot happen: the tag was computed over the patched bytes
            raise AssertionError(e.reason) from None
        actions = eng.on_authentic(data, 1.0, A)
    else:
        actions = eng.on_datagram(data, 1.0, A)
    fate = actions[-1]
    event(f"{path}: {type(fate).__name__}" + (f" {fate.reason}" if isinstance(fate, Drop) else ""))
    check_outcome(eng, actions, before, tx_before, mac)


@given(extreme_packets(), st.sampled_from(["plain", "packet", "sim", "mac"]), st.sampled_from([4, 300]))
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
def test_every_header_extreme_is_delivered_sent_validly_or_dropped_and_counted(tmp_path, case, path, hop_limit):
    _name, pkt, values = case
    if path == "mac":
        mac = auths()
        buf = patch(mac[A].seal(pkt, B), pkt.ptype, values, wire.AUTH_TRAILER_LEN)
        mac[A].reseal(buf, B)          # the sender's tag over the patched bytes: the MAC lets it through
        data = bytes(buf)
        eng = relay(None, hop_limit)
    else:
        mac = None
        data = v2(pkt, values)
        eng = relay(tmp_path if path == "packet" else None, hop_limit)
    try:
        feed(eng, path, data, mac)
    finally:
        if eng.tap is not None:
            eng.tap.close()


def test_snoop_count_255_is_relayed_capped_and_counted_on_both_paths(tmp_path):
    """The datagram of the issue: a data segment with snoop_count 255 at a relay that caches it.  The
    relay path takes it (it used to fall back to the packet path, which could not encode 256), caches
    it, and sends it on with the count saturated at 255; the packet path sends the same bytes."""
    pkt = base_packets()["data through"]
    data = v2(pkt, {"snoop_count": 255})
    sent = []
    for eng in (relay(), relay(tmp_path)):
        [a] = eng.on_datagram(data, 1.0, A)
        assert isinstance(a, Transmit) and eng.step.tx["fwd"] == 1 and eng.agent.stats["cached"] == 1
        sent.append(bytes(a.packet) if not isinstance(a.packet, Packet) else encode(a.packet))
    eng.tap.close()
    assert isinstance(relay().on_datagram(data, 1.0, A)[0].packet, bytearray)   # the relay path, not the fallback
    assert sent[0] == sent[1]
    out = decode(sent[0])
    assert out.fields.snoop_count == 255 and out.hops == 2


def test_hops_255_is_dropped_as_ttl_whatever_the_hop_limit():
    """A packet whose hops byte is full cannot be sent on: dropped as ``ttl`` even on a mesh of more
    nodes than the byte counts (the hop limit is capped at MAX_HOPS)."""
    data = v2(base_packets()["data through"], {"hops": 255})
    eng = relay(None, hop_limit=1000)
    [a] = eng.on_datagram(data, 1.0, A)
    assert isinstance(a, Drop) and a.reason == "ttl" and eng.drops["ttl"] == 1
    data = v2(base_packets()["data through"], {"hops": 254})
    [a] = eng.on_datagram(data, 1.0, A)
    assert isinstance(a, Transmit) and decode(bytes(a.packet)).hops == 255
