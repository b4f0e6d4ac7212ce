"""Emulated links on the local backend (routing/overlay/udp_link.py): the ``link:`` section on loopback UDP.

The rule itself is routing.links.linkem's (tests/routing/links/test_linkem.py); here: what the UDP driver's holding adds
(release order, the node's bound, lateness counted), and whole local runs against the sim's, on a chain,
on a diamond (two paths) with crossing flows, and with a Mahimahi trace.
"""
from __future__ import annotations

import math
from typing import Any
import pytest
from experiments.link_spec import egress_links
from experiments.runner import check_backend_support
from experiments.schema import ExperimentError, load_experiment
from routing.links.linkem import LinkParams, LinkQueue
from routing.overlay.udp_link import EgressLinks
from routing.overlay.wire import IP_UDP_OVERHEAD


def links(rate_mbps: float = 8.0, delay_ms: float = 5.0, queue: int = 3, max_held: int = 100) -> EgressLinks:
    p = LinkParams(rate_mbps * 1e6, delay_ms / 1000.0, queue)
    return EgressLinks({"10.0.0.2": LinkQueue(p), "10.0.0.3": LinkQueue(p)}, max_held=max_held)


def test_a_datagram_is_due_after_its_serialisation_with_udp_and_ip_headers_plus_the_delay():
    e = links()
    data = bytes(972)                      # 972 + 28 = 1000 bytes on the link: 1 ms at 8 Mbit/s
    assert e.hold("10.0.0.2", 10.0, data, ("127.0.1.2", 9), "p1")
    assert e.next_due() == pytest.approx(10.0 + 0.001 + 0.005)
    assert list(e.due(10.0059)) == []
    assert list(e.due(10.006)) == [(data, ("127.0.1.2", 9), "p1")]
    assert e.held() == 0 and e.next_due() is None
    assert IP_UDP_OVERHEAD == 28


def test_datagrams_on_one_link_queue_behind_each_other_and_links_are_independent():
    e = links()
    for i in range(3):
        assert e.hold("10.0.0.2", 0.0, bytes(972), "a", i)
    assert e.hold("10.0.0.3", 0.0, bytes(972), "b", "other")
    got = [p for _, _, p in e.due(1.0)]
    # the other link's datagram is not behind the first link's three: it is due with the first of them
    assert got == [0, "other", 1, 2]
    assert e.stats["released"] == 4 and e.stats["held_max"] == 4


def test_drop_tail_at_the_links_queue_and_at_the_nodes_bound_and_both_counted():
    e = links(queue=2)
    assert e.hold("10.0.0.2", 0.0, bytes(972), "a", 0)
    assert e.hold("10.0.0.2", 0.0, bytes(972), "a", 1)
    assert not e.hold("10.0.0.2", 0.0, bytes(972), "a", 2)     # two waiting or being serialised
    assert e.hold("10.0.0.2", 0.0011, bytes(972), "a", 3)      # the first has left the queue (in flight)
    assert e.stats["link_drops"] == 1
    b = links(rate_mbps=math.inf, delay_ms=100.0, queue=1, max_held=2)
    assert b.hold("10.0.0.2", 0.0, b"x", "a", 0) and b.hold("10.0.0.2", 0.0, b"x", "a", 1)
    assert not b.hold("10.0.0.3", 0.0, b"x", "a", 2)           # in flight over the delay: the node's bound
    assert b.stats["link_drops"] == 1 and b.held() == 2
    with pytest.raises(ValueError, match="max_held"):
        links(max_held=0)


def test_a_late_release_is_counted_and_does_not_move_the_links_schedule():
    e = links(rate_mbps=8.0, delay_ms=0.0, queue=10)
    for i in range(3):
        e.hold("10.0.0.2", 0.0, bytes(972), "a", i)
    assert [p for _, _, p in e.due(0.0025)] == [0, 1]          # due at 1 ms and 2 ms: 1.5 and 0.5 ms late
    assert e.stats["late_max_us"] == 1500 and e.stats["late_sum_us"] == 2000 and e.stats["late_1ms"] == 1
    assert e.next_due() == pytest.approx(0.003)                # the third still due at 3 ms


def doc(backend: str, link: dict[str, Any], topology: dict[str, Any], flows: list[dict[str, Any]],
        **extra: Any) -> dict[str, Any]:
    return {"name": "lk", "backend": backend, "seed": 5, "repetitions": 1, "topology": topology, "link": link,
            "etx": {"settle_s": 1.0}, "tcp": {"variant": "sack"}, "limits": {"max_duration_s": 90},
            "flows": flows, "variants": [{"name": "v"}], **extra}


CHAIN = {"nodes": ["A", "B", "C"], "links": [["A", "B"], ["B", "C"]]}


def test_local_now_accepts_the_link_section_and_pi_still_refuses_it():
    exp = load_experiment(doc("local", {"rate_mbps": 2}, CHAIN, [{"sender": "A", "receiver": "C", "segments": 5}]),
                          "l.yaml")
    check_backend_support(exp, "local")
    with pytest.raises(ExperimentError, match=r"link\.rate_mbps: cannot run on backend pi"):
        check_backend_support(exp, "pi")
    cfg = exp.variants[0].config
    made = egress_links(cfg, ["10.2.1.2"], 100.0)
    assert made is not None and list(made.queues) == ["10.2.1.2"]
    assert made.queues["10.2.1.2"].params == LinkParams(2e6, 0.0, 50)
    plain = load_experiment(doc("local", {}, CHAIN, [{"sender": "A", "receiver": "C", "segments": 5}]), "l.yaml")
    assert egress_links(plain.variants[0].config, ["10.2.1.2"], 100.0) is None   # nothing set: nothing held


def test_the_counters_step_once_per_datagram_and_a_release_is_late_past_one_ms():
    """``node_stop``'s ``link`` (docs/LOGS.md): held and released per datagram, drops of either bound,
    the most held at once, and lateness in microseconds: summed, its maximum, and releases more than 1 ms
    late (exactly 1 ms is not)."""
    p = LinkParams(math.inf, 0.5, 1)
    e = EgressLinks({"a": LinkQueue(p), "b": LinkQueue(p)}, max_held=3)
    assert "a" in e and "c" not in e
    for _ in range(3):
        assert e.hold("a", 0.0, b"x", "A", None)
    assert not e.hold("b", 0.0, b"x", "B", None) and not e.hold("b", 0.0, b"x", "B", None)   # the node's bound
    assert len(list(e.due(0.501))) == 3                          # each 1 ms late: 1000 us, not "over 1 ms"
    assert e.hold("b", 1.0, b"x", "B", None) and e.hold("a", 1.0, b"x", "A", None)
    assert [a for _, a, _ in e.due(1.501001)] == ["B", "A"]       # 1001 us late: over 1 ms
    assert e.hold("a", 2.0, b"x", "A", None)
    assert len(list(e.due(3.5))) == 1                            # a whole second late
    assert e.stats == {"held": 6, "released": 6, "link_drops": 2, "held_max": 3, "late_max_us": 1_000_000,
                       "late_sum_us": 3 * 1000 + 2 * 1001 + 1_000_000, "late_1ms": 3}
    full = EgressLinks({"a": LinkQueue(LinkParams(8e6, 0.0, 1))})
    assert full.stats == dict.fromkeys(e.stats, 0)               # every counter from 0
    assert full.hold("a", 0.0, bytes(972), "A", None)
    assert not full.hold("a", 0.0, b"x", "A", None) and not full.hold("a", 0.0, b"x", "A", None)   # its queue
    assert full.stats["link_drops"] == 2
    one = EgressLinks({"a": LinkQueue(p)}, max_held=1)           # a bound of one datagram is allowed
    assert one.hold("a", 0.0, b"x", "A", None) and not one.hold("a", 0.0, b"x", "A", None)
