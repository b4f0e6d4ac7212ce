"""The snoop schemes of papers 000-004 on kernel packets (routing.kernel.forwarder), in virtual time with crafted bytes.

What the NFQUEUE handler adds for them: the agent's timer, the ACK's window in bytes
(scaled as the handshake said), and new ACKs forged from the receiver's ACK.
"""
import pytest
from scapy.all import IP, TCP, Raw

from aspan.agent import SnoopAgent
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from aspan.scheme_config import SchemeConfig
from aspan.schemes import make_agent
from routing.kernel.forge import forge_ack
from routing.kernel.ipv4 import PacketError, tcp_options
from routing.kernel.forwarder import HOOK_FWD, HOOK_OUT, KernelForwarder
from routing.links.loss import NoLoss

from test_kernel_forwarder import ADDR, CHAIN, FLOW, Events

MSS = 1000
WSCALE = 7


def forwarder(name, scheme, policy="every"):
    i = CHAIN.index(name)
    names = {v: k for k, v in ADDR.items()}

    def next_hop(dst):
        j = CHAIN.index(names[dst])
        return None if j == i else ADDR[CHAIN[i + 1 if j > i else i - 1]]

    ev = Events()
    agent = make_agent(name, SnoopConfig(policy=policy), ev.emit, SchemeConfig(scheme=scheme))
    fw = KernelForwarder(ADDR[name], next_hop, lambda nbr: 0.99, agent, NoLoss(),
                         AspanFields(1.0, 0.99, 0, 0, 0), 94, ev.emit)
    return fw, ev


def syn(frm, to, sport, dport, flags="S", wscale=WSCALE):
    opts = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (1, 0))] + ([("WScale", wscale)] if wscale is not None else [])
    return bytes(IP(src=ADDR[frm], dst=ADDR[to]) / TCP(sport=sport, dport=dport, seq=0, flags=flags, options=opts))


def handshake(fw, wscale=WSCALE):
    fw.on_packet(HOOK_FWD, syn("A", "D", 5000, 6000, "S", wscale), 0.0)
    fw.on_packet(HOOK_FWD, syn("D", "A", 6000, 5000, "SA", wscale), 0.0)


def data(seq, tsval=1000):
    """A segment as A's forwarder sends it into the mesh (with the A-SPAN option)."""
    a, _ = forwarder("A", "aspan", policy="none")
    raw = bytes(IP(src=ADDR["A"], dst=ADDR["D"]) / TCP(sport=5000, dport=6000, seq=seq, ack=1, flags="PA",
                                                       options=[("NOP", None), ("NOP", None), ("Timestamp", (tsval, 7))])
                / Raw(b"d" * MSS))
    v = a.on_packet(HOOK_OUT, raw, 0.0)
    return v.payload


def ack(n, window=100, ts=(5000, 1000), sack=None):
    opts = [("NOP", None), ("NOP", None), ("Timestamp", ts)]
    if sack:
        opts += [("NOP", None), ("NOP", None), ("SAck", sack)]
    return bytes(IP(src=ADDR["D"], dst=ADDR["A"], ttl=62) / TCP(sport=6000, dport=5000, seq=1, ack=n, flags="A",
                                                                window=window, options=opts))


def checked(raw):
    """The packet parsed by scapy, after checking both checksums against scapy's own."""
    p = IP(raw)
    ip_sum, tcp_sum = p.chksum, p[TCP].chksum
    del p.chksum
    del p[TCP].chksum
    q = IP(bytes(p))
    assert (ip_sum, tcp_sum) == (q.chksum, q[TCP].chksum)
    return p


# ---------------------------------------------------------------- forged ACKs
def test_a_forged_ack_keeps_the_template_and_drops_its_sack_blocks():
    t = ack(1 + MSS, window=300, ts=(5000, 1000), sack=(1 + 2 * MSS, 1 + 3 * MSS))
    p = checked(forge_ack(t, 1 + 4 * MSS, 77, tsecr=1234))
    assert (p.src, p.dst, p.ttl, p[TCP].sport, p[TCP].dport, p[TCP].seq) == (ADDR["D"], ADDR["A"], 62, 6000, 5000, 1)
    assert (p[TCP].ack, p[TCP].window, str(p[TCP].flags)) == (1 + 4 * MSS, 77, "A")
    assert p[TCP].options == [("NOP", None), ("NOP", None), ("Timestamp", (5000, 1234))]
    assert len(p[TCP].payload) == 0 and p.len == len(forge_ack(t, 1, 1))


def test_a_forged_ack_without_timestamps_has_no_options_and_bad_templates_raise():
    t = bytes(IP(src=ADDR["D"], dst=ADDR["A"]) / TCP(sport=6000, dport=5000, ack=5, flags="A"))
    p = checked(forge_ack(t, 9, 10))
    assert p[TCP].options == [] and p[TCP].dataofs == 5
    with pytest.raises(PacketError):
        forge_ack(t[:30], 9, 10)
    bad = bytearray(t[:20]) + bytes(TCP(sport=1, dport=2, dataofs=6, flags="A")) + b"\x08\x09\x00\x00"
    bad[2:4] = len(bad).to_bytes(2, "big")
    with pytest.raises(PacketError, match="TCP option length"):
        tcp_options(bytes(bad), 20)


def test_tcp_options_reads_window_scale_and_timestamps():
    o = tcp_options(syn("A", "D", 5000, 6000), 20)
    assert (o.wscale, o.tsval, o.tsecr) == (WSCALE, 1, 0)
    o = tcp_options(syn("A", "D", 5000, 6000, wscale=None), 20)
    assert o.wscale is None


# ---------------------------------------------------------------- the agents' view of kernel ACKs
class Spy(SnoopAgent):
    """Records what on_ack was given (an agent that declares it reads the details gets them)."""

    reads_ack_details = True

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.seen = []

    def on_ack(self, flow, ack, now, *, window=None, snack=(), packet=None):
        self.seen.append((window, packet))
        return super().on_ack(flow, ack, now)


@pytest.mark.parametrize("wscale_a,wscale_d,expected", [(WSCALE, WSCALE, 100 << WSCALE), (None, WSCALE, 100),
                                                        (WSCALE, None, 100)])
def test_ack_windows_reach_the_agent_in_bytes_scaled_only_when_both_syns_agreed(wscale_a, wscale_d, expected):
    ev = Events()
    fw = KernelForwarder(ADDR["B"], lambda d: ADDR["C"] if d == ADDR["D"] else ADDR["A"], lambda n: 0.99,
                         Spy("B", SnoopConfig(policy="every"), ev.emit), NoLoss(), AspanFields(1.0, 0.99, 0, 0, 0))
    fw.on_packet(HOOK_FWD, syn("A", "D", 5000, 6000, "S", wscale_a), 0.0)
    fw.on_packet(HOOK_FWD, syn("D", "A", 6000, 5000, "SA", wscale_d), 0.0)
    fw.on_packet(HOOK_FWD, data(1), 0.1)
    a = ack(1 + MSS, window=100)
    fw.on_packet(HOOK_FWD, a, 0.2)
    assert fw.agent.seen == [(expected, a)]


def test_without_the_handshake_the_window_is_unknown():
    ev = Events()
    fw = KernelForwarder(ADDR["B"], lambda d: ADDR["C"] if d == ADDR["D"] else ADDR["A"], lambda n: 0.99,
                         Spy("B", SnoopConfig(policy="every"), ev.emit), NoLoss(), AspanFields(1.0, 0.99, 0, 0, 0))
    fw.on_packet(HOOK_FWD, data(1), 0.1)
    fw.on_packet(HOOK_FWD, ack(1 + MSS), 0.2)
    assert fw.agent.seen[0][0] is None


def test_the_aspan_agent_gets_no_details():
    fw, _ = forwarder("B", "aspan")
    assert fw.step.ack_details is False
    assert fw.next_timer() is None and fw.on_timer(10.0) == []


# ---------------------------------------------------------------- classic Snoop's timer
@pytest.mark.parametrize("scheme", ["classic", "multihop"])
def test_the_local_timer_resends_the_segment_as_it_left_this_node(scheme):
    fw, ev = forwarder("C", scheme)
    handshake(fw)
    sent = [fw.on_packet(HOOK_FWD, data(1 + i * MSS), 0.0).payload for i in range(3)]
    fw.on_packet(HOOK_FWD, ack(1 + MSS), 0.05)           # segment 0 arrived; the timer covers segment 1
    due = fw.next_timer()
    assert due is not None and due > 0.05
    assert fw.on_timer(due - 1e-3) == []
    assert fw.on_timer(due) == [sent[1]]
    assert ev.of("tx")[-1] == {"t": due, "ev": "tx", "flow": FLOW, "seq": 1 + MSS, "len": MSS, "kind": "local",
                               "hop": 1}                  # the option's hop index: A sent it straight to C
    assert ev.of("local_rto") and fw.stats["tx_local"] == 1


def test_classic_dupack_resends_and_holds_back_the_expected_dupacks():
    fw, ev = forwarder("C", "classic")
    handshake(fw)
    sent = [fw.on_packet(HOOK_FWD, data(1 + i * MSS), 0.0).payload for i in range(5)]
    assert fw.on_packet(HOOK_FWD, ack(1 + MSS), 0.05).accept
    assert fw.on_packet(HOOK_FWD, ack(1 + MSS), 0.06).accept        # RTX_THRESH: the first dupack passes
    v = fw.on_packet(HOOK_FWD, ack(1 + MSS), 0.07)
    assert (v.accept, v.inject) == (False, [sent[1]])
    v = fw.on_packet(HOOK_FWD, ack(1 + MSS), 0.08)
    assert (v.accept, v.inject) == (False, [])


# ---------------------------------------------------------------- SLACK
def test_slack_releases_three_copies_of_the_last_forwarded_ack():
    fw, ev = forwarder("C", "slack")
    handshake(fw)
    for i in range(4):
        fw.on_packet(HOOK_FWD, data(1 + i * MSS, tsval=2000 + i), 0.0)
    last = ack(1 + MSS, window=90, ts=(5000, 2000), sack=(1 + 2 * MSS, 1 + 3 * MSS))
    assert fw.on_packet(HOOK_FWD, last, 0.05).accept
    out = fw.on_timer(fw.next_timer())                    # silence: the receiver side is gone
    acks = [checked(p) for p in out if len(p) < 100]
    assert len(acks) == 3 and len(out) == 4               # three ACKs and the local retransmission
    for p in acks:
        assert (p[TCP].ack, p[TCP].window, p[TCP].seq) == (1 + MSS, 90, 1)
        assert p[TCP].options == [("NOP", None), ("NOP", None), ("Timestamp", (5000, 2000))]
    assert [(e["ack"], e["reason"], e["flow"]) for e in ev.of("ack_gen")] == [(1 + MSS, "slack", FLOW)] * 3
    assert fw.stats["ack_gen"] == 3


# ---------------------------------------------------------------- ACK-all
def test_ackall_acknowledges_cached_data_for_the_receiver_with_its_scaled_window():
    fw, ev = forwarder("C", "ackall")
    handshake(fw)
    fw.on_packet(HOOK_FWD, data(1, tsval=3000), 0.0)
    v = fw.on_packet(HOOK_FWD, ack(1 + MSS, window=100, ts=(6000, 3000)), 0.05)  # the receiver's ACK goes on
    assert v.accept and v.inject == []
    v = fw.on_packet(HOOK_FWD, data(1 + MSS, tsval=3001), 0.06)
    assert v.accept and len(v.inject) == 1
    p = checked(v.inject[0])
    edge = 1 + MSS + (100 << WSCALE)                      # the receiver's right window edge, never moved
    assert p[TCP].ack == 1 + 2 * MSS
    assert p[TCP].window == (edge - (1 + 2 * MSS)) >> WSCALE
    assert p[TCP].options == [("NOP", None), ("NOP", None), ("Timestamp", (6000, 3001))]   # echoes the data
    assert (p.src, p.dst) == (ADDR["D"], ADDR["A"])
    assert ev.of("ack_gen")[-1]["reason"] == "ackall"
    v = fw.on_packet(HOOK_FWD, ack(1 + 2 * MSS, window=100, ts=(6001, 3001)), 0.1)
    assert not v.accept                                   # the sender has this acknowledgment already


def test_a_bad_template_is_counted_not_raised():
    fw, ev = forwarder("C", "ackall")

    class G:
        template, ack, window, reason = b"\x45junk", 5, 10, "ackall"

    fw.agent._outbox.append(G())
    assert fw.on_timer(1.0) == [] and fw.stats["ack_gen_errors"] == 1
    assert ev.of("send_error")
    for _ in range(1499):                                  # per packet: counted, lines bounded (issue 27, item 2)
        fw.agent._outbox.append(G())
    assert fw.on_timer(1.1) == [] and fw.stats["ack_gen_errors"] == 1500
    assert [e["count"] for e in ev.of("send_error")] == [*range(1, 11), 1000]


@pytest.mark.parametrize("scheme", ["aspan", "classic"])
def test_a_local_retransmission_carries_the_latest_tsval_so_paws_accepts_it(scheme):
    """RFC 7323, 5: a receiver discards a segment whose TSval is older than TS.Recent."""
    fw, _ = forwarder("C", scheme)
    handshake(fw)
    sent = [fw.on_packet(HOOK_FWD, data(1 + i * MSS, tsval=1000 + i), 0.0).payload for i in range(5)]
    for t in (0.05, 0.06, 0.07):
        v = fw.on_packet(HOOK_FWD, ack(1 + MSS), t)
    [again] = v.inject
    p = checked(again)
    assert p[TCP].options[2] == ("Timestamp", (1004, 7)) and p[TCP].seq == 1 + MSS
    assert bytes(p[TCP].payload) == bytes(IP(sent[1])[TCP].payload)
    assert fw.stats["ts_refreshed"] == fw.stats["tx_local"] >= 1
    assert IP(sent[1])[TCP].options[2] == ("Timestamp", (1001, 7))    # the cached copy itself is unchanged
