"""The forwarding engine with the snoop schemes: generated ACKs, SNACK rewriting, size-aware loss."""
import random

import pytest

from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.schemes import make_agent
from routing.overlay.engine import Drop, ForwardingEngine, Transmit
from routing.links.loss import BitError, Composite, LinkDown, build_loss_model, drop_packet
from routing.topology.routes import chain_routes
from routing.overlay.wire import DATA, Packet, wire_size
from tcp_user.segment import ACK, Segment

A, B, C, D = "10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"


class NoLoss:
    def drop(self, now):
        return False


def engine(scheme, addr=C, policy="every", loss=None):
    events = []
    emit = lambda now, ev, **f: events.append((ev, f))
    agent = make_agent(addr, SnoopConfig(policy=policy), emit, SchemeConfig(scheme=scheme))
    return ForwardingEngine(addr, chain_routes([A, B, C, D])[addr], loss or NoLoss(), agent,
                            lambda n: 1.0, emit), events


def data(i, hops=2):
    return Packet(DATA, A, 5000, D, 6000, hops, AspanFields(), Segment(i * 1000, 0, ACK, 0, (), b"x" * 1000))


def ack(n, window=64_000, snack=()):
    return Packet(DATA, D, 6000, A, 5000, 1, AspanFields(), Segment(777, n, ACK, window, (), b"", snack))


def test_ackall_acks_go_toward_the_sender_as_new_packets():
    eng, events = engine("ackall")
    eng.on_packet(data(0), 0.0)
    eng.on_packet(ack(1000, window=10_000), 0.01)
    acts = eng.on_packet(data(1), 0.02)
    assert [type(x) for x in acts] == [Transmit, Transmit]
    gen, fwd = acts
    assert gen.next_hop == B and fwd.next_hop == D
    g = gen.packet
    assert (g.src, g.sport, g.dst, g.dport) == (D, 6000, A, 5000)
    assert (g.segment.seq, g.segment.ack, g.segment.flags, g.segment.window) == (777, 2000, ACK, 9000)
    assert ("ack_gen", {"flow": f"{A}:5000>{D}:6000", "ack": 2000, "window": 9000, "reason": "ackall"}) in events
    held = eng.on_packet(ack(2000, window=10_000), 0.03)
    assert [type(x) for x in held] == [Drop] and held[0].reason == "suppressed"


def test_slack_dupacks_come_out_of_the_timer():
    eng, events = engine("slack")
    for i in range(3):
        eng.on_packet(data(i), 0.0)
    eng.on_packet(ack(1000), 0.01)
    acts = eng.on_timer(eng.next_timer())
    kinds = [(x.next_hop, x.packet.segment.ack, bool(x.packet.segment.payload)) for x in acts]
    assert kinds == [(D, 0, True)] + [(B, 1000, False)] * 3      # local resend, then 3 dupacks
    assert sum(1 for e, f in events if e == "ack_gen" and f["reason"] == "slack") == 3


def test_snack_entries_are_rewritten_without_touching_the_shared_segment():
    eng, _ = engine("snack")
    for i in (0, 1, 2, 4):
        eng.on_packet(data(i), 0.0)
    eng.on_packet(ack(2000), 0.01)
    pkt = ack(2000, snack=(2000, 3000))
    original = pkt.segment
    acts = eng.on_packet(pkt, 0.02)
    fwd = [x for x in acts if isinstance(x, Transmit) and x.next_hop == B]
    assert [x.packet.segment.snack for x in fwd] == [(3000,)]
    assert original.snack == (2000, 3000)                         # other nodes' copies unchanged


def test_aspan_agent_accepts_the_new_keywords_and_generates_nothing():
    eng, _ = engine("aspan", policy="every")
    eng.on_packet(data(0), 0.0)
    assert [type(x) for x in eng.on_packet(ack(1000, snack=(5,)), 0.01)] == [Transmit]


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
    eng, _ = engine("aspan", loss=always_big)
    assert wire_size(data(0)) > 1000
    lost_data = sum(isinstance(eng.on_packet(data(0), 0.0)[0], Drop) for _ in range(200))
    lost_acks = sum(isinstance(eng.on_packet(ack(1000), 0.0)[0], Drop) for _ in range(200))
    assert lost_data == 200 and 50 < lost_acks < 150
