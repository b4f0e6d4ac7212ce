"""The forwarding engine: one packet + now -> actions, driven with scripted losses."""
from aspan.agent import SnoopAgent
from aspan.fields import AspanFields, quantise
from aspan.policy import SnoopConfig
from routing.overlay.engine import Deliver, Drop, ForwardingEngine, Transmit
from routing.topology.routes import RouteTable, chain_routes
from routing.overlay.auth import MeshAuth
from routing.overlay.wire import DATA, PROBE, Packet, Probe, decode, decode_authentic, encode, wire_size
from tcp_user.segment import ACK, Segment
import random
import pytest
from aspan.scheme_config import SchemeConfig
from aspan.schemes import make_agent
from routing.links.loss import BitError, Composite, LinkDown, build_loss_model, drop_packet


A, B, C, D = "10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"


class Scripted:
    """Loss model that drops the packets whose call numbers are listed."""

    def __init__(self, drops=()):
        self.drops, self.n = set(drops), 0

    def drop(self, now):
        self.n += 1
        return self.n in self.drops


def engine(addr=C, policy="adaptive", loss=None, p=0.995):
    events = []
    emit = lambda now, ev, **f: events.append((ev, f))
    agent = SnoopAgent(addr, SnoopConfig(policy=policy), emit)
    tables = chain_routes([A, B, C, D])
    return ForwardingEngine(addr, tables[addr], loss or Scripted(), agent, lambda n: p, emit), events


def data(seq, hops=2, effort=0.990025, qos=0.99):
    return Packet(DATA, A, 5000, D, 6000, hops, AspanFields(effort, qos), Segment(seq, 0, ACK, 0, (), b"x" * 1000))


def ack(n):
    return Packet(DATA, D, 6000, A, 5000, 1, AspanFields(), Segment(0, n, ACK, 64000))


def test_forward_caches_at_c_and_rewrites_effort():
    eng, events = engine()
    [act] = eng.on_packet(data(0), 1.0)
    assert isinstance(act, Transmit) and act.next_hop == D
    assert act.packet.hops == 3
    assert act.packet.fields.pkt_effort == quantise(0.995) and act.packet.fields.snoop_count == 1
    assert eng.agent.cache_segments == 1
    assert ("tx", {"flow": f"{A}:5000>{D}:6000", "seq": 0, "len": 1000, "kind": "fwd", "hop": 2}) in events


def test_dupack_answered_from_cache_and_not_forwarded():
    eng, events = engine()
    for s in range(4):
        eng.on_packet(data(s * 1000), 1.0)
    assert isinstance(eng.on_packet(ack(1000), 1.1)[0], Transmit)   # new ack goes on to B
    acts = eng.on_packet(ack(1000), 1.2)                             # dupack: segment 1000 cached
    assert [type(a) for a in acts] == [Transmit, Drop]
    assert acts[0].next_hop == D and acts[0].packet.segment.seq == 1000
    assert acts[1].reason == "suppressed"
    assert ("tx", {"flow": f"{A}:5000>{D}:6000", "seq": 1000, "len": 1000, "kind": "local", "hop": 2}) in events


def stamped(seq, tsval):
    pkt = data(seq)
    pkt.segment.tsval, pkt.segment.tsecr = tsval, 7
    return pkt


def test_a_local_retransmission_carries_the_flows_latest_tsval_and_the_cached_copy_stays():
    """RFC 7323 PAWS: a cached copy goes out with the latest TSval seen on its flow when that is newer (a copy with
    its first TSval would be dropped for ever by a receiver whose TS.Recent a sender retransmission moved)."""
    eng, _ = engine()
    sent = [stamped(s * 1000, 100 + s) for s in range(4)]
    for pkt in sent:
        eng.on_packet(pkt, 1.0)
    eng.on_packet(stamped(0, 500), 1.05)               # the sender's own retransmission of data D may have had
    eng.on_packet(ack(1000), 1.1)
    rtx = eng.on_packet(ack(1000), 1.2)[0]
    assert isinstance(rtx, Transmit) and rtx.packet.segment.seq == 1000
    assert rtx.packet.segment.tsval == 500 and rtx.packet.segment.tsecr == 7 and eng.tsval.refreshed == 1
    assert rtx.packet is not sent[1] and sent[1].segment.tsval == 101       # the cached copy itself is unchanged
    again = eng.on_packet(ack(1000), 1.3)[0]
    assert again.packet.segment.tsval == 500 and eng.tsval.refreshed == 2


def test_an_older_tsval_never_replaces_a_newer_one_and_the_flows_are_bounded():
    from routing.overlay.engine import LatestTsval
    t = LatestTsval(max_flows=2)
    t.note(("a", 1, "b", 2), 10)
    t.note(("a", 1, "b", 2), 5)                         # reordered: older
    assert t.latest[("a", 1, "b", 2)] == 10
    t.note(("a", 1, "b", 2), (1 << 32) - 1)             # 2^32 - 1 is before 10 in the modular order: kept out
    assert t.latest[("a", 1, "b", 2)] == 10
    t.note(("x", 1, "y", 2), (1 << 32) - 1)
    t.note(("x", 1, "y", 2), 3)                          # across the 2^32 wrap 3 is after 2^32 - 1
    assert t.latest[("x", 1, "y", 2)] == 3
    t.note(("c", 1, "d", 2), 1)
    assert len(t.latest) == 2 and ("a", 1, "b", 2) not in t.latest and ("c", 1, "d", 2) in t.latest
    plain = data(0)
    assert t.refresh(("c", 1, "d", 2), plain) is plain   # no option: unchanged
    newer = stamped(0, 9)
    assert t.refresh(("c", 1, "d", 2), newer) is newer and t.refreshed == 0

def test_loss_model_applies_to_every_packet_heard_including_probes():
    eng, events = engine(loss=Scripted(drops={1, 3}))
    probe = Packet(PROBE, B, 0, C, 0, probe=Probe(1, -1.0))
    assert isinstance(eng.on_packet(probe, 0.0)[0], Drop)
    assert isinstance(eng.on_packet(probe, 0.0)[0], Deliver)
    assert eng.on_packet(data(0), 0.0)[0].reason == "loss"
    assert eng.drops["loss"] == 2


def test_malformed_datagrams_are_counted_not_raised():
    eng, events = engine()
    for junk in (b"", b"\x00" * 50, encode(data(0))[:-3]):
        [act] = eng.on_datagram(junk, 0.0)
        assert isinstance(act, Drop) and act.reason == "malformed"
    assert eng.drops["malformed"] == 3
    assert isinstance(eng.on_datagram(encode(data(0)), 0.0)[0], Transmit)


def test_no_route_is_a_counted_drop():
    eng, _ = engine()
    pkt = data(0)
    pkt.dst = "10.9.9.9"
    assert eng.on_packet(pkt, 0.0)[0].reason == "no_route"
    assert eng.drops["no_route"] == 1


def test_sender_layer_applies_first_hop_and_perfect_snoop_intercepts_dupacks():
    eng, _ = engine(addr=A, policy="perfect")
    pkt = Packet(DATA, A, 5000, D, 6000, 0, AspanFields(1.0, 1.0), Segment(0, 0, ACK, 0, (), b"y" * 1000))
    [act] = eng.send_local(pkt, 0.0)
    assert act.next_hop == B and act.packet.fields.snoop_count == 1
    assert eng.agent.cache_segments == 1
    ack0 = Packet(DATA, D, 6000, A, 5000, 3, AspanFields(), Segment(0, 0, ACK, 64000))
    assert isinstance(eng.on_packet(ack0, 0.1)[-1], Deliver)        # first ack for 0: new
    acts = eng.on_packet(Packet(DATA, D, 6000, A, 5000, 3, AspanFields(), Segment(0, 0, ACK, 64000)), 0.2)
    assert [type(a) for a in acts] == [Transmit, Drop]               # the dupack never reaches TCP


def test_adaptive_sender_never_caches():
    eng, _ = engine(addr=A, policy="adaptive")
    pkt = Packet(DATA, A, 5000, D, 6000, 0, AspanFields(1.0, 1.0), Segment(0, 0, ACK, 0, (), b"y" * 10))
    eng.send_local(pkt, 0.0)
    assert eng.agent.cache_segments == 0
    assert pkt.fields.pkt_effort == quantise(0.995)


def test_route_table_rejects_non_neighbour_next_hop():
    import pytest
    with pytest.raises(ValueError, match="not a neighbour"):
        RouteTable({D: C}, [B])


def test_a_routing_loop_ends_at_the_hop_limit_with_reason_ttl():
    """Issue 13, item 5: B and C send D's packets to each other (routes built without the checks);
    the packet circles until the hop limit, then is dropped as ttl, never failing to encode."""
    events = []
    emit = lambda now, ev, **f: events.append((ev, f))
    tables = {B: RouteTable({D: C}, [A, C]), C: RouteTable({D: B}, [B, D])}
    engines = {a: ForwardingEngine(a, tables[a], Scripted(), SnoopAgent(a, SnoopConfig()), lambda n: 1.0, emit,
                                   hop_limit=4) for a in (B, C)}
    pkt, at, hops_seen = data(0, hops=1), B, []
    for _ in range(10):
        [act] = engines[at].on_datagram(encode(pkt), 1.0)
        if isinstance(act, Drop):
            break
        out = act.packet if isinstance(act.packet, Packet) else decode(bytes(act.packet))   # relayed: bytes
        hops_seen.append(out.hops)
        pkt, at = out, act.next_hop
    assert isinstance(act, Drop) and act.reason == "ttl"
    assert hops_seen == [2, 3, 4]
    assert engines[at].drops["ttl"] == 1
    assert ("drop", {"reason": "ttl", "ptype": "tcp", "flow": f"{A}:5000>{D}:6000", "seq": 0, "ack": 0,
                     "len": 1000}) in events


def test_a_relayed_datagram_in_a_full_queue_is_logged_as_the_packet_it_carries():
    """The UDP driver drops what its socket cannot take with engine.drop; a datagram the relay path
    rewrote (bytes, not a Packet) is counted and logged with its flow, seq and length like a Packet."""
    eng, events = engine()
    [act] = eng.on_datagram(encode(data(0)), 1.0)
    assert isinstance(act, Transmit) and not isinstance(act.packet, Packet)
    dropped = eng.drop(act.packet, "queue", 1.1)
    assert dropped.reason == "queue" and dropped.packet == decode(bytes(act.packet))
    assert eng.drops["queue"] == 1
    assert ("drop", {"reason": "queue", "ptype": "tcp", "flow": f"{A}:5000>{D}:6000", "seq": 0, "ack": 0,
                     "len": 1000}) in events


def test_a_sealed_datagram_relayed_and_dropped_from_a_full_queue_is_logged_as_its_packet():
    """The authenticated overlay: what the relay path passes on stays version 3, re-sealed by the driver
    for the next hop (which opens it); dropped from a full queue after that, it is logged like a Packet."""
    key = bytes(range(32))
    eng, events = engine()      # at C: data from B, on to D
    b, c, d = MeshAuth(key, B, [C], 1), MeshAuth(key, C, [B, D], 1), MeshAuth(key, D, [C], 1)
    sealed = b.seal(data(0), C)
    c.verify(sealed, B)
    [act] = eng.on_authentic(sealed, 1.0, B)
    assert isinstance(act, Transmit) and act.next_hop == D and not isinstance(act.packet, Packet)
    c.reseal(act.packet, D)
    heard = d.open(bytes(act.packet), C)
    assert heard.hops == 3 and heard.segment.payload == data(0).segment.payload   # came with hop index 2
    assert heard == decode_authentic(bytes(act.packet))
    dropped = eng.drop(act.packet, "queue", 1.1)
    assert dropped.reason == "queue" and dropped.packet == heard
    assert ("drop", {"reason": "queue", "ptype": "tcp", "flow": f"{A}:5000>{D}:6000", "seq": 0, "ack": 0,
                     "len": 1000}) in events


def test_a_relay_drops_a_full_hop_count_and_relays_a_full_snoop_count():
    """Hostile input: a hop count of 255 is out of hops (dropped as ttl); a snoop_count of 255 is relayed
    from its bytes, the count saturated (issue 27, item 5: it used to take the packet path and fail to
    encode 256); neither stops the node."""
    eng, _ = engine()
    [act] = eng.on_datagram(encode(data(0, hops=255)), 1.0)
    assert isinstance(act, Drop) and act.reason == "ttl"
    pkt = data(1000)
    pkt.fields.snoop_count = 255
    [act] = eng.on_datagram(encode(pkt), 1.0)
    assert isinstance(act, Transmit) and isinstance(act.packet, bytearray)
    assert decode(bytes(act.packet)).fields.snoop_count == 255


# ====================================================================================================
# The forwarding engine with the snoop schemes: generated ACKs, SNACK rewriting, size-aware loss.


class NoLoss:
    def drop(self, now):
        return False


def scheme_engine(scheme, addr=C, policy="every", loss=None):
    events = []
    emit = lambda now, ev, **f: events.append((ev, f))
    agent = make_agent(addr, SnoopConfig(policy=policy), emit, SchemeConfig(scheme=scheme))
    return ForwardingEngine(addr, chain_routes([A, B, C, D])[addr], loss or NoLoss(), agent,
                            lambda n: 1.0, emit), events


def scheme_data(i, hops=2):
    return Packet(DATA, A, 5000, D, 6000, hops, AspanFields(), Segment(i * 1000, 0, ACK, 0, (), b"x" * 1000))


def scheme_ack(n, window=64_000, snack=()):
    return Packet(DATA, D, 6000, A, 5000, 1, AspanFields(), Segment(777, n, ACK, window, (), b"", snack))


def test_ackall_acks_go_toward_the_sender_as_new_packets():
    eng, events = scheme_engine("ackall")
    eng.on_packet(scheme_data(0), 0.0)
    eng.on_packet(scheme_ack(1000, window=10_000), 0.01)
    acts = eng.on_packet(scheme_data(1), 0.02)
    assert [type(x) for x in acts] == [Transmit, Transmit]
    gen, fwd = acts
    assert gen.next_hop == B and fwd.next_hop == D
    g = gen.packet
    assert (g.src, g.sport, g.dst, g.dport) == (D, 6000, A, 5000)
    assert (g.segment.seq, g.segment.ack, g.segment.flags, g.segment.window) == (777, 2000, ACK, 9000)
    assert ("ack_gen", {"flow": f"{A}:5000>{D}:6000", "ack": 2000, "window": 9000, "reason": "ackall"}) in events
    held = eng.on_packet(scheme_ack(2000, window=10_000), 0.03)
    assert [type(x) for x in held] == [Drop] and held[0].reason == "suppressed"


def test_slack_dupacks_come_out_of_the_timer():
    eng, events = scheme_engine("slack")
    for i in range(3):
        eng.on_packet(scheme_data(i), 0.0)
    eng.on_packet(scheme_ack(1000), 0.01)
    acts = eng.on_timer(eng.next_timer())
    kinds = [(x.next_hop, x.packet.segment.ack, bool(x.packet.segment.payload)) for x in acts]
    assert kinds == [(D, 0, True)] + [(B, 1000, False)] * 3      # local resend, then 3 dupacks
    assert sum(1 for e, f in events if e == "ack_gen" and f["reason"] == "slack") == 3


@pytest.mark.parametrize("scheme", ["classic", "ackall"])
def test_a_local_retransmission_out_of_the_timer_carries_the_flows_latest_tsval(scheme):
    """The classic-Snoop family resends out of its timer too; those copies carry the latest TSval as the ones
    out of a dupack do (a stale one was dropped by the receiver's PAWS for ever: ACK-all over Reno with
    timestamps and Limited Transmit stalled on the 0.5 % chain before the timer path re-stamped)."""
    eng, _ = scheme_engine(scheme)
    sent = []
    for i in range(3):
        pkt = scheme_data(i)
        pkt.segment.tsval, pkt.segment.tsecr = 100 + i, 7
        sent.append(pkt)
        eng.on_packet(pkt, 0.0)
    probe = scheme_data(3)
    probe.segment.tsval = 900                      # a later segment of the flow (a window probe, new data)
    eng.on_packet(probe, 0.005)
    eng.on_packet(scheme_ack(1000), 0.01)
    acts = eng.on_timer(eng.next_timer())
    resent = [x for x in acts if isinstance(x, Transmit) and x.next_hop == D and x.packet.segment.payload]
    assert [x.packet.segment.seq for x in resent] == [1000]
    assert resent[0].packet.segment.tsval == 900 and resent[0].packet.segment.tsecr == 7
    assert sent[1].segment.tsval == 101 and eng.tsval.refreshed == 1   # the cached copy itself is unchanged


def test_snack_entries_are_rewritten_without_touching_the_shared_segment():
    eng, _ = scheme_engine("snack")
    for i in (0, 1, 2, 4):
        eng.on_packet(scheme_data(i), 0.0)
    eng.on_packet(scheme_ack(2000), 0.01)
    pkt = scheme_ack(2000, snack=(2000, 3000))
    original = pkt.segment
    acts = eng.on_packet(pkt, 0.02)
    fwd = [x for x in acts if isinstance(x, Transmit) and x.next_hop == B]
    assert [x.packet.segment.snack for x in fwd] == [(3000,)]
    assert original.snack == (2000, 3000)                         # other nodes' copies unchanged


def test_aspan_agent_accepts_the_new_keywords_and_generates_nothing():
    eng, _ = scheme_engine("aspan", policy="every")
    eng.on_packet(scheme_data(0), 0.0)
    assert [type(x) for x in eng.on_packet(scheme_ack(1000, snack=(5,)), 0.01)] == [Transmit]


# ---------------------------------------------------------------- bit errors
def test_bit_error_loss_grows_with_packet_size():
    m = BitError(1 / 65536, random.Random(1))
    assert m.packet_loss(1075) == pytest.approx(1 - (1 - 1 / 65536) ** (8 * 1075))
    assert m.packet_loss(1075) == pytest.approx(0.12298, abs=1e-5)
    assert m.packet_loss(75) < m.packet_loss(1075) / 10
    assert BitError(1.0, random.Random(1)).packet_loss(1) == 1.0
    assert BitError(0.0, random.Random(1)).packet_loss(10**6) == 0.0


def test_bit_error_drops_match_the_rate():
    m = BitError(1 / 131072, random.Random(7))
    n = 20_000
    lost = sum(m.drop_sized(0.0, 1075) for _ in range(n)) / n
    assert lost == pytest.approx(m.packet_loss(1075), abs=0.01)


def test_drop_packet_passes_the_size_only_to_size_aware_models():
    always = BitError(1.0, random.Random(1))
    assert drop_packet(always, 0.0, 10) and not drop_packet(always, 0.0, 0)
    assert drop_packet(NoLoss(), 0.0, 10) is False
    comp = Composite([BitError(0.0, random.Random(1)), LinkDown([[1.0, 2.0]])])
    assert drop_packet(comp, 1.5, 10) and not drop_packet(comp, 0.5, 10)


def test_build_loss_model_bit_error_and_errors():
    m = build_loss_model({"model": "bit-error", "ber": 1e-5, "down": [[0, 1]]}, random.Random(1))
    assert isinstance(m, Composite) and isinstance(m.models[0], BitError)
    with pytest.raises(ValueError, match="'ber' is required"):
        build_loss_model({"model": "bit-error"}, random.Random(1))
    with pytest.raises(ValueError, match="'ber'"):
        build_loss_model({"model": "bit-error", "ber": 2}, random.Random(1))


def test_engine_applies_bit_errors_by_wire_size():
    always_big = BitError(1e-3, random.Random(3))          # data ~100 % lost, a bare ACK ~45 %
    eng, _ = scheme_engine("aspan", loss=always_big)
    assert wire_size(scheme_data(0)) > 1000
    lost_data = sum(isinstance(eng.on_packet(scheme_data(0), 0.0)[0], Drop) for _ in range(200))
    lost_acks = sum(isinstance(eng.on_packet(scheme_ack(1000), 0.0)[0], Drop) for _ in range(200))
    assert lost_data == 200 and 50 < lost_acks < 150
