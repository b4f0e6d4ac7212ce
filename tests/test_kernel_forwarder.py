"""routing.kernel.forwarder: the snoop step on raw kernel packets, driven with crafted bytes (no root, no queue)."""
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, TCP, UDP, Raw

from aspan.agent import SnoopAgent
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from routing.kernel.ip_option import decode_option
from routing.kernel.ipv4 import find_option, parse_tcp
from routing.kernel.forwarder import HOOK_FWD, HOOK_IN, HOOK_OUT, KernelForwarder
from routing.links.loss import Bernoulli, NoLoss

ADDR = {"A": "10.2.1.1", "B": "10.2.1.2", "C": "10.2.1.3", "D": "10.2.1.4"}
CHAIN = "ABCD"
P = 0.995
FLOW = "10.2.1.1:5000>10.2.1.4:6000"


class Events(list):
    def emit(self, now, ev, **fields):
        self.append({"t": now, "ev": ev, **fields})

    def of(self, ev):
        return [e for e in self if e["ev"] == ev]


def node(name, policy="adaptive", qos=0.99, loss=None, dupack="every"):
    """A forwarder of node ``name`` on the chain A-B-C-D with p = 0.995 on every link."""
    i = CHAIN.index(name)

    def next_hop(dst):
        j = CHAIN.index({v: k for k, v in ADDR.items()}[dst])
        if j == i:
            return None
        return ADDR[CHAIN[i + 1 if j > i else i - 1]]

    ev = Events()
    agent = SnoopAgent(name, SnoopConfig(policy=policy, dupack=dupack), ev.emit)
    fw = KernelForwarder(ADDR[name], next_hop, lambda nbr: P, agent, loss or NoLoss(),
                         AspanFields(1.0, qos, 0, 0, 0), 94, ev.emit)
    return fw, ev


def data(seq, payload=1000, src="A", dst="D"):
    return bytes(IP(src=ADDR[src], dst=ADDR[dst], ttl=64) / TCP(sport=5000, dport=6000, seq=seq, ack=1, flags="PA")
                 / Raw(b"d" * payload))


def ack(n, flags="A"):
    return bytes(IP(src=ADDR["D"], dst=ADDR["A"], ttl=64) / TCP(sport=6000, dport=5000, seq=1, ack=n, flags=flags))


def fields_of(pkt):
    return decode_option(pkt, find_option(pkt, (pkt[0] & 15) * 4, 94))


def through(seq, qos=0.99, nodes=None):
    """A data segment sent by A and relayed by B and C; returns the bytes leaving each node."""
    nodes = nodes or {n: node(n, qos=qos) for n in "ABC"}
    out = {}
    pkt = data(seq)
    for n, hook in (("A", HOOK_OUT), ("B", HOOK_FWD), ("C", HOOK_FWD)):
        v = nodes[n][0].on_packet(hook, pkt, 1.0)
        assert v.accept
        pkt = v.payload if v.payload is not None else pkt
        out[n] = pkt
    return out, nodes


def test_the_sender_stamps_the_option_at_hop_index_zero_and_logs_send():
    fw, ev = node("A")
    v = fw.on_packet(HOOK_OUT, data(1000), 1.0)
    assert v.accept and v.payload is not None
    fields, hops = fields_of(v.payload)
    assert hops == 1 and abs(fields.pkt_effort - P) < 1e-4 and abs(fields.pkt_qos - 0.99) < 1e-4
    assert fw.agent.cache_segments == 0                  # the sender's layer never caches (except perfect)
    assert ev.of("tx") == [{"t": 1.0, "ev": "tx", "flow": FLOW, "seq": 1000, "len": 1000, "kind": "send", "hop": 0}]
    assert bytes(IP(v.payload)[TCP]) == bytes(IP(data(1000))[TCP])


def test_pkt_qos_099_caches_at_c_only_and_100_at_b_and_c():
    """docs/DESIGN.md: with p = 0.995 per hop, 0.99 caches at C (0.995^3 < 0.99), 1.00 at B and C."""
    out, nodes = through(1000, qos=0.99)
    assert nodes["B"][0].agent.cache_segments == 0 and nodes["C"][0].agent.cache_segments == 1
    f, hops = fields_of(out["C"])
    assert hops == 3 and f.snoop_count == 1 and abs(f.pkt_effort - P) < 1e-4   # restarted at C
    f, hops = fields_of(out["B"])
    assert hops == 2 and f.snoop_count == 0 and abs(f.pkt_effort - P * P) < 1e-4
    _, nodes = through(1000, qos=1.0)
    assert nodes["B"][0].agent.cache_segments == 1 and nodes["C"][0].agent.cache_segments == 1
    tx = [e for n in "ABC" for e in nodes[n][1].of("tx")]
    assert [(e["kind"], e["hop"]) for e in tx] == [("send", 0), ("fwd", 1), ("fwd", 2)]


def test_a_dupack_for_a_cached_segment_is_dropped_and_the_copy_injected():
    out, nodes = through(1000)
    through(2000, nodes=nodes)
    c, ev = nodes["C"]
    assert c.on_packet(HOOK_FWD, ack(1000), 2.0).accept          # first ACK for 1000: a new ACK, passed on
    v = c.on_packet(HOOK_FWD, ack(1000), 2.1)                     # duplicate: segment 1000 is cached at C
    assert not v.accept and v.inject == [out["C"]]               # exactly the bytes C sent to D
    assert ev.of("hit")[0]["seq"] == 1000
    assert ev.of("tx")[-1] == {"t": 2.1, "ev": "tx", "flow": FLOW, "seq": 1000, "len": 1000, "kind": "local",
                               "hop": 2}
    drop = ev.of("drop")[-1]
    assert drop["reason"] == "suppressed" and drop["flow"] == "10.2.1.4:6000>10.2.1.1:5000"
    assert c.drops["suppressed"] == 1


def test_a_higher_ack_frees_the_cache_and_unknown_flows_pass():
    _, nodes = through(1000)
    through(2000, nodes=nodes)
    c, ev = nodes["C"]
    assert c.agent.cache_segments == 2
    assert c.on_packet(HOOK_FWD, ack(3000), 3.0).accept
    assert c.agent.cache_segments == 0 and ev.of("cache")[-1]["segments"] == 0
    other = bytes(IP(src="10.2.1.4", dst="10.2.1.1") / TCP(sport=9, dport=9, ack=5, flags="A"))
    assert c.on_packet(HOOK_FWD, other, 3.1).accept and c.on_packet(HOOK_FWD, other, 3.2).accept


def test_the_loss_model_applies_to_what_a_node_hears_not_to_what_it_sends():
    fw, ev = node("B", loss=Bernoulli(1.0, random.Random(1)))
    assert not fw.on_packet(HOOK_FWD, data(1), 1.0).accept
    assert not fw.on_packet(HOOK_IN, bytes(IP(src=ADDR["A"], dst=ADDR["B"]) / UDP(dport=7700) / Raw(b"p")), 1.0).accept
    assert fw.on_packet(HOOK_OUT, data(1, src="B"), 1.0).accept
    drops = ev.of("drop")
    assert [d["reason"] for d in drops] == ["loss", "loss"] and drops[0]["flow"] == FLOW and drops[1]["ptype"] == "udp"
    assert fw.drops["loss"] == 2


def test_data_for_this_node_keeps_its_option_and_probes_pass():
    fw, ev = node("D")
    out, _ = through(1000)
    v = fw.on_packet(HOOK_IN, out["C"], 1.0)
    assert v.accept and v.payload is None and not ev
    assert fw.on_packet(HOOK_IN, bytes(IP(src=ADDR["C"], dst=ADDR["D"]) / UDP(dport=7700) / Raw(b"p")), 1.0).accept


def test_a_segment_without_the_option_is_relayed_without_snooping():
    fw, ev = node("B", qos=1.0)
    v = fw.on_packet(HOOK_FWD, data(1000), 1.0)
    assert v.accept and v.payload is None and fw.agent.cache_segments == 0
    assert fw.stats["no_option"] == 1 and ev.of("tx")[0]["hop"] is None


def test_retransmissions_of_the_sender_are_logged():
    fw, ev = node("A")
    for seq in (1000, 2000, 1000):
        fw.on_packet(HOOK_OUT, data(seq), 1.0)
    assert [e["seq"] for e in ev.of("rtx")] == [1000]
    assert [e["kind"] for e in ev.of("tx")] == ["send"] * 3


def test_policy_none_caches_nothing_and_passes_every_ack():
    nodes = {n: node(n, policy="none") for n in "ABC"}
    through(1000, nodes=nodes)
    c = nodes["C"][0]
    assert c.agent.cache_segments == 0
    assert all(c.on_packet(HOOK_FWD, ack(1000), 1.0 + i).accept for i in range(4))


def test_malformed_packets_are_counted_and_dropped():
    fw, ev = node("B")
    v = fw.on_packet(HOOK_FWD, b"\x45\x00\x00", 1.0)
    assert not v.accept and fw.drops["malformed"] == 1 and ev.of("drop")[0]["reason"] == "malformed"


@settings(max_examples=300)
@given(st.sampled_from([HOOK_IN, HOOK_FWD, HOOK_OUT]), st.binary(max_size=100), st.integers(0, 60))
def test_no_bytes_crash_the_forwarder(hook, junk, cut):
    fw, _ = node("B", qos=1.0)
    valid = through(1000)[0]["A"]
    for blob in (junk, valid[:cut], valid[:20] + junk):
        v = fw.on_packet(hook, blob, 1.0)
        assert v.accept in (True, False)
    assert parse_tcp(valid, 94).opt_offset == 20
