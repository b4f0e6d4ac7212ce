"""The link rule (routing.links.linkem) in virtual time, and the ``link:`` section per backend (experiments.link_spec)."""
import math
import re
import pytest
from experiments.link_spec import SIM_LINK, emulated_link, sim_link
from experiments.runner import check_backend_support
from experiments.schema import ExperimentError, load_experiment
from routing.links.linkem import LinkParams, LinkQueue
from tests.cores import FakePacket


def q(rate_mbps: float = 8.0, delay_ms: float = 5.0, queue: int = 3) -> LinkQueue:
    return LinkQueue(LinkParams(rate_mbps * 1e6, delay_ms / 1000.0, queue))


def test_an_idle_link_delivers_after_serialisation_plus_delay():
    link = q()                                     # 1000 bytes at 8 Mbit/s: 1 ms
    assert link.admit(10.0, 1000) == pytest.approx(10.0 + 0.001 + 0.005)


def test_packets_queue_behind_each_other_and_the_link_idles_in_between():
    link = q()
    assert link.admit(0.0, 1000) == pytest.approx(0.006)
    assert link.admit(0.0, 1000) == pytest.approx(0.007)     # waits for the first one's serialisation
    assert link.admit(0.0005, 500) == pytest.approx(0.0075)  # 0.5 ms behind the two
    assert link.admit(1.0, 1000) == pytest.approx(1.006)     # idle again: no queueing


def test_drop_tail_counts_packets_waiting_or_being_serialised():
    link = q(queue=3)
    assert all(link.admit(0.0, 1000) is not None for _ in range(3))
    assert link.queued(0.0) == 3
    assert link.admit(0.0, 1000) is None and link.dropped == 1
    # the first packet's serialisation ends at 1 ms: it has left the queue (it is propagating)
    assert link.queued(0.001) == 2
    assert link.admit(0.001, 1000) == pytest.approx(0.004 + 0.005)
    assert link.admitted == 4 and link.queued(1.0) == 0


def test_the_rate_holds_over_a_long_saturated_run():
    link = q(rate_mbps=2.0, delay_ms=20.0, queue=50)
    arrivals = []
    t = 0.0
    for _ in range(2000):                          # offered 4 Mbit/s of 1500-byte packets: half are dropped
        a = link.admit(t, 1500)
        if a is not None:
            arrivals.append(a)
        t += 1500 * 8 / 4e6
    span = arrivals[-1] - arrivals[0]
    assert (len(arrivals) - 1) * 1500 * 8 / span == pytest.approx(2e6, rel=1e-9)
    assert link.dropped == 2000 - len(arrivals) and 900 < link.dropped < 1000


def test_an_unlimited_rate_only_delays():
    link = LinkQueue(LinkParams(math.inf, 0.002, 1))
    assert [link.admit(0.0, 1500) for _ in range(5)] == [0.002] * 5


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        LinkParams(0.0, 0.0, 1)
    with pytest.raises(ValueError):
        LinkParams(1e6, -1.0, 1)


# ---- the link: section ------------------------------------------------------------------------------
def cfg(link: dict | None = None, **extra) -> dict:
    doc = {"flows": [{"segments": 10}], **extra}
    if link is not None:
        doc["link"] = link
    return load_experiment(doc, "l.yaml").variants[0].config


def test_null_fields_are_the_sims_own_links_exactly_as_before():
    assert cfg()["link"] == {"rate_mbps": None, "delay_ms": None, "queue_packets": None, "mahimahi": None}
    assert sim_link(cfg()) == LinkParams(SIM_LINK["rate_mbps"] * 1e6, SIM_LINK["delay_ms"] / 1000, 50)
    assert sim_link(cfg({"rate_mbps": 2})) == LinkParams(2e6, 0.002, 50)


def test_netns_and_local_emulate_only_what_is_set():
    assert emulated_link(cfg()) is None
    assert emulated_link(cfg({"delay_ms": 5})) == LinkParams(math.inf, 0.005, 50)
    assert emulated_link(cfg({"rate_mbps": 1, "queue_packets": 7})) == LinkParams(1e6, 0.0, 7)


def test_an_explicit_null_or_a_bad_value_is_named():
    with pytest.raises(ExperimentError, match="link.delay_ms"):
        cfg({"delay_ms": -1})
    with pytest.raises(ExperimentError, match="link.rate_mbps"):
        cfg({"rate_mbps": None})


def test_pi_refuses_an_explicit_link_field_naming_variant_and_field():
    exp = load_experiment({"flows": [{"segments": 10}],
                           "variants": [{"name": "plain"}, {"name": "slow", "link": {"delay_ms": 5}}]}, "l.yaml")
    with pytest.raises(ExperimentError) as e:
        check_backend_support(exp, "pi")
    assert e.value.path == "variants[slow].link.delay_ms"
    assert "cannot run on backend pi" in e.value.message
    for backend in ("sim", "netns", "local"):        # each emulates it (local: routing/overlay/udp_link.py)
        check_backend_support(exp, backend)
    plain = load_experiment({"flows": [{"segments": 10}]}, "l.yaml")
    check_backend_support(plain, "pi")      # nothing set: the backend's own links


def test_netns_refuses_two_rate_limits():
    exp = load_experiment({"flows": [{"segments": 10}], "link": {"rate_mbps": 5}, "netns": {"rate_mbit": 5}}, "l.yaml")
    with pytest.raises(ExperimentError, match="two rate limits") as e:
        check_backend_support(exp, "netns")
    assert e.value.path == "variants[default].netns.rate_mbit"


def test_the_shaper_holds_each_verdict_until_the_packet_has_crossed_its_link():
    from routing.drivers.link_shaper import LinkShaper
    t = [0.0]
    lines = []
    sh = LinkShaper.without_queue({7: ("A->B", LinkParams(8e6, 0.005, 2)), 9: ("C->B", LinkParams(8e6, 0.005, 2))},
                                  lambda now, ev, **f: lines.append((now, ev, f)), 100, lambda: t[0])
    pkts = [FakePacket(7, 1000) for _ in range(3)] + [FakePacket(9, 1000)]
    for p in pkts:
        sh._on_packet(p)
    assert [p.verdict for p in pkts] == [None, None, "drop", None]   # A->B's queue holds 2; C->B is its own link
    assert lines == [(0.0, "drop", {"reason": "queue", "link": "A->B", "len": 1000})]
    assert sh.next_due() == pytest.approx(0.006)
    sh.release(0.0059)
    assert pkts[0].verdict is None
    sh.release(0.0061)
    assert [p.verdict for p in pkts] == ["accept", None, "drop", "accept"]
    sh.release(0.0071)
    assert pkts[1].verdict == "accept" and sh.next_due() is None
    assert sh.stats["released"] == 3 and sh.stats["link_drops"] == 1 and sh.stats["late_max_us"] == 100


def test_the_shaper_logs_at_most_a_line_rate_of_drops_and_sums_the_rest():
    from routing.drivers.link_shaper import LinkShaper
    from routing.forwarding.step import DROP_LINES_PER_S
    lines = []
    sh = LinkShaper.without_queue({1: ("A->B", LinkParams(1e3, 0.0, 1))},
                                  lambda now, ev, **f: lines.append(f), 10_000, lambda: 0.5)
    for _ in range(DROP_LINES_PER_S + 31):
        sh._on_packet(FakePacket(1, 1000))
    sh.flush_drops(2.0)
    assert sh.stats["link_drops"] == DROP_LINES_PER_S + 30
    assert len(lines) == DROP_LINES_PER_S + 1 and lines[-1]["count"] == 30


def ipv4(ttl: int = 64, ident: int = 7, option: bytes = b"", l4: bytes = bytes(range(8)) + b"payload") -> bytes:
    """An IPv4 packet as far as packet_key reads it (the header checksum is left wrong: not read)."""
    ihl = (20 + len(option)) // 4
    head = bytes([0x40 | ihl, 0]) + (20 + len(option) + len(l4)).to_bytes(2, "big") + ident.to_bytes(2, "big") + \
        b"\x40\x00" + bytes([ttl, 6]) + b"\x12\x34" + bytes([10, 2, 1, 1, 10, 2, 1, 4])
    return head + option + l4


def test_the_packet_key_is_the_same_on_every_hop_and_tells_packets_apart():
    from routing.drivers.link_shaper import packet_key
    k = packet_key(ipv4(option=bytes([94, 8, 1, 2, 3, 4, 5, 6])))
    assert k == packet_key(ipv4(ttl=63, option=bytes([94, 8, 9, 9, 9, 9, 9, 9])))   # forwarded: TTL, option rewritten
    assert k != packet_key(ipv4(ident=8, option=bytes(8)))                          # the next packet of the socket
    assert k != packet_key(ipv4(option=bytes(8), l4=bytes(range(1, 9))))            # another segment


def test_the_next_hop_does_not_count_a_late_release_as_link_time():
    """B lets a packet go 7 ms late; C takes it as having entered C's link when B should have let it go,
    so the two 10 ms links still take 20 ms (plus C's own lateness), once, and only for that packet."""
    from routing.drivers.link_shaper import LatenessBoard, LinkShaper
    t = [0.0]
    board = LatenessBoard(bytearray(LatenessBoard.SIZE))
    link = LinkParams(math.inf, 0.010, 50)
    b = LinkShaper.without_queue({1: ("A->B", link)}, lambda *a, **f: None, 100, lambda: t[0], board)
    c = LinkShaper.without_queue({2: ("B->C", link)}, lambda *a, **f: None, 100, lambda: t[0], board)
    pkt = ipv4()
    b._on_packet(FakePacket(1, len(pkt), pkt))
    t[0] = 0.017                                   # B's daemon was not running when the packet was due
    b.release(t[0])
    assert b.stats["late_max_us"] == 7000 and b.stats["late_1ms"] == 1
    at_c = FakePacket(2, len(pkt), pkt)
    c._on_packet(at_c)                             # stamped when it came off B's veth: 17 ms
    assert c.next_due() == pytest.approx(0.020)    # 10 + 10 ms, not 17 + 10
    assert c.stats["carried"] == 1 and c.stats["carried_max_us"] == 7000
    again = FakePacket(2, len(pkt), pkt)           # the same bytes again (a local retransmission): taken once
    c._on_packet(again)
    assert c.stats["carried"] == 1
    b._on_packet(FakePacket(1, len(pkt), pkt))     # 17 ms: due 27 ms, let go at 127 ms (100 ms late) ...
    b.release(0.127)
    t[0] = 0.127 + LatenessBoard.WINDOW_S + 0.01   # ... but it reaches C only after the window: not corrected
    c._on_packet(FakePacket(2, len(pkt), pkt))
    assert c.stats["carried"] == 1


# ---- the netns plan: where the shaper and the statistic match sit -----------------------------------
def test_the_netns_plan_queues_what_each_node_hears_to_its_shaper_before_the_statistic_match():
    from experiments.backends.netns import mesh
    plain = mesh.plan_mesh(cfg(loss={"default": {"model": "bernoulli", "rate": 0.01}}), "abc123")
    assert plain.link is None and mesh.link_conf(plain, "A") is None
    assert "queue-num 1" not in mesh._iptables_rules(plain, "A")
    assert ("raw", "PREROUTING") == mesh.rule_specs(plain, "A", "an+")[0][:2]          # statistic, as before
    p = mesh.plan_mesh(cfg({"rate_mbps": 2, "delay_ms": 5}, loss={"default": {"model": "bernoulli", "rate": 0.01}},
                           netns={"handlers": "kernel"}), "abc123")
    for n in "ABCD":                                  # every node, every handlers mode: the shaper holds what it hears
        specs = mesh.rule_specs(p, n, "an+")
        assert specs[0] == ("raw", "PREROUTING", "-i an+ -j NFQUEUE --queue-num 1 --queue-bypass")
    assert ("mangle", "PREROUTING", "-i an+ -m statistic --mode random --probability 0.010000 -j DROP") in \
        mesh.rule_specs(p, "A", "an+")
    assert mesh.statistic_table(p) == "mangle" and mesh.statistic_table(plain) == "raw"
    conf = mesh.link_conf(p, "B")
    assert conf["queue"] == 1 and {d["from"] for d in conf["in"].values()} == {"A", "C"}
    assert all(d == {"from": d["from"], "rate_bps": 2e6, "delay_s": 0.005, "queue_packets": 50}
               for d in conf["in"].values())
    unlimited = mesh.link_conf(mesh.plan_mesh(cfg({"delay_ms": 1}), "abc123"), "A")
    assert [d["rate_bps"] for d in unlimited["in"].values()] == [None]     # no rate: JSON null, not Infinity


def test_with_the_dcf_medium_every_node_queues_what_it_hears_for_the_medium_daemon():
    from experiments.backends.netns import mesh
    p = mesh.plan_mesh(cfg(medium={"model": "dcf"}), "abc123")
    assert p.medium and p.held and p.link is None and mesh.link_conf(p, "B") is None   # no per-node shaper
    assert all(mesh.rule_specs(p, n, "an+")[0] == ("raw", "PREROUTING", "-i an+ -j NFQUEUE --queue-num 1 --queue-bypass")
               for n in "ABCD")


def test_link_params_name_themselves_when_refused_and_any_positive_rate_is_a_rate():
    assert LinkParams(0.5, 0.0, 1).rate_bps == 0.5          # half a bit a second is slow, not wrong
    bad = "LinkParams(rate_bps=0.0, delay_s=0.0, queue_packets=1)"
    with pytest.raises(ValueError, match=re.escape(f"link: expected rate > 0, delay >= 0, queue >= 1, got {bad}")):
        LinkParams(0.0, 0.0, 1)
