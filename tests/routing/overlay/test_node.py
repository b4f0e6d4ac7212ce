"""Issue 13, item 6: hostile datagrams at a node core.  Nothing raises, and every datagram is
accounted for once: the last action the engine returns for it is its fate (forwarded, delivered or
dropped), and a drop is counted exactly when the fate is a drop.
"""
import random
from hypothesis import HealthCheck, event, given, settings, strategies as st
from aspan.fields import AspanFields
from experiments.build import build_node
from experiments.schema import load_experiment
from routing.overlay.engine import Deliver, Drop, Transmit
from routing.overlay.wire import DATA, PROBE, Packet, Probe, encode
from tcp_user.segment import ACK, FIN, RST, SYN, Segment
from tests.cores import packets


MESH = ["10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"]


u32 = st.integers(0, 2**32 - 1)


mesh = st.sampled_from(MESH)


@st.composite
def absurd(draw):
    """Valid encodings with extreme values, between the mesh's addresses and ports of its flows."""
    ptype = draw(st.sampled_from([DATA, DATA, PROBE]))
    fields = AspanFields(draw(st.sampled_from([0.0, 1e-5, 1.0])), draw(st.sampled_from([0.0, 1.0])),
                         draw(st.integers(0, 255)), draw(st.integers(0, 255)), draw(st.integers(0, 255)))
    pkt = Packet(ptype, draw(mesh), draw(st.sampled_from([0, 5000, 6000, 65535])), draw(mesh),
                 draw(st.sampled_from([0, 5000, 6000, 65535])), draw(st.sampled_from([0, 1, 2, 3, 254, 255])), fields)
    if ptype == DATA:
        edge = st.sampled_from([0, 1, 2**31 - 1, 2**31, 2**32 - 1])
        pkt.segment = Segment(draw(st.one_of(edge, u32)), draw(st.one_of(edge, u32)),
                              draw(st.sampled_from([0, ACK, SYN, SYN | ACK, FIN | ACK, RST, SYN | FIN | RST | ACK])),
                              draw(st.one_of(edge, u32)),
                              tuple(draw(st.lists(st.tuples(u32, u32), max_size=4))),
                              draw(st.sampled_from([b"", b"x", b"y" * 1000])),
                              tuple(draw(st.lists(u32, max_size=6))))
    else:
        pkt.probe = Probe(draw(u32), draw(st.sampled_from([-1.0, 0.0, 1.0])))
    return encode(pkt)


@st.composite
def mangled(draw):
    data = encode(draw(packets())) if draw(st.booleans()) else draw(absurd())
    how = draw(st.sampled_from(["truncate", "flip", "as-is"]))
    if how == "truncate":
        return data[: draw(st.integers(0, len(data) - 1))]
    if how == "flip":
        b = bytearray(data)
        i = draw(st.integers(0, len(b) * 8 - 1))
        b[i // 8] ^= 1 << (i % 8)
        return bytes(b)
    return data


datagrams = st.lists(st.one_of(st.binary(max_size=200), absurd(), mangled()), min_size=1, max_size=40)


def _node(scheme: str, policy: str):
    exp = load_experiment({"name": "f", "etx": {"settle_s": 0},
                           "loss": {"default": {"model": "bernoulli", "rate": 0.1}},
                           "snoop": {"scheme": scheme, "policy": policy},
                           "flows": [{"segments": 50}]})
    return build_node(exp.variants[0].config, "B", 3, None, 0.0)


@given(datagrams, st.sampled_from([("aspan", "every"), ("classic", "every"), ("ackall", "every"),
                                   ("slack", "every"), ("snack", "every"), ("aspan", "adaptive")]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_hostile_datagram_is_accounted_for_once_and_nothing_raises(batch, scheme):
    node = _node(*scheme)
    eng = node.engine
    now = 1.0
    for data in batch:
        before = sum(eng.drops.values())
        actions = eng.on_datagram(data, now)
        assert actions, "a datagram without a fate"
        fate = actions[-1]
        event(f"fate {type(fate).__name__}" + (f" {fate.reason}" if isinstance(fate, Drop) else ""))
        assert isinstance(fate, (Transmit, Deliver, Drop))
        assert all(not isinstance(a, Drop) for a in actions[:-1])   # the chain has every route
        assert sum(eng.drops.values()) - before == (1 if isinstance(fate, Drop) else 0)
        if isinstance(fate, Deliver):        # the node core's part: endpoints, ETX, or a counted drop
            before = sum(eng.drops.values())
            node._run([fate], now)
            if fate.packet.ptype == PROBE:    # heard from a neighbour, or dropped as a stranger's
                assert sum(eng.drops.values()) - before == (fate.packet.src not in node.neighbours)
        node.on_timer(now)
        now += 0.01


def test_a_seeded_flood_through_the_whole_node_core_never_raises():
    rng = random.Random(13)
    node = _node("aspan", "every")
    heard = 0
    for k in range(20000):
        n = rng.randrange(0, 120)
        data = bytes(rng.randrange(256) for _ in range(n))
        node.on_datagram(data, 1.0 + k * 1e-4)
        heard += 1
    assert sum(node.engine.drops.values()) == heard      # junk: every one dropped, counted once
