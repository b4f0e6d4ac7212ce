"""The pkt_effort arithmetic and the placement policies (paper, Design)."""
from __future__ import annotations

import pytest
from aspan.fields import AspanFields, quantise, SNOOP_COUNT_MAX
from aspan.policy import SnoopConfig, update_effort, wants_cache, adaptive_wants_cache


P = 0.995  # the paper's 0.5 % loss per node, seen as a delivery ratio on every hop


def walk(policy: str, qos: float, hops: int = 3, p: float = P, snoop_after: int = 0,
         snoop_limit: int = 0, fixed_hop: int = 1) -> tuple[list[int], list[float]]:
    """Send one packet along a chain of ``hops`` links; return the hop indices that cached and the efforts sent."""
    cfg = SnoopConfig(policy=policy, fixed_hop=fixed_hop)
    f = AspanFields(1.0, qos, snoop_after, snoop_limit, 0)
    cached, efforts = [], []
    for hop in range(hops):  # hop 0 = the sender's forwarding layer (A), 1 = B, 2 = C
        c = wants_cache(cfg, f, p, hop)
        update_effort(f, p, c)
        if c:
            cached.append(hop)
        efforts.append(f.pkt_effort)
    return cached, efforts


def test_qos_099_caches_only_at_c():
    # A sends with effort 0.995; B: 0.995^2 = 0.990025 >= 0.99 -> no; C: 0.995^3 = 0.985 < 0.99 -> cache.
    cached, efforts = walk("adaptive", 0.99)
    assert cached == [2]
    assert efforts[0] == pytest.approx(quantise(0.995), abs=0)
    assert efforts[1] == quantise(quantise(0.995) * 0.995)       # 0.990021 on the header's grid
    assert efforts[2] == pytest.approx(quantise(0.995), abs=0)  # restarted at C: 1 x p(C->D)


def test_qos_100_caches_at_b_and_c():
    cached, efforts = walk("adaptive", 1.0)
    assert cached == [1, 2]
    assert efforts == [quantise(0.995)] * 3


def test_lower_qos_caches_later_or_never():
    assert walk("adaptive", 0.98)[0] == []          # 0.985 never falls below 0.98 on 3 hops
    assert walk("adaptive", 0.98, hops=5)[0] == [4]  # 0.995^5 = 0.975 < 0.98


def test_snoop_after_and_limit():
    assert walk("adaptive", 1.0, snoop_after=1)[0] == [2]
    assert walk("adaptive", 1.0, snoop_limit=1)[0] == [1]
    assert walk("adaptive", 1.0, hops=5, snoop_limit=2)[0] == [1, 2]


def test_perfect_caches_at_the_sender_too():
    assert walk("perfect", 1.0)[0] == [0, 1, 2]


def test_fixed_every_none():
    assert walk("fixed", 0.5, fixed_hop=1)[0] == [1]
    assert walk("fixed", 0.5, fixed_hop=2)[0] == [2]
    assert walk("every", 0.0)[0] == [1, 2]
    assert walk("none", 1.0)[0] == []


def test_perfect_link_never_triggers_adaptive():
    assert walk("adaptive", 1.0, p=1.0)[0] == []


def test_bad_config_is_named():
    with pytest.raises(ValueError, match="snoop.policy"):
        SnoopConfig(policy="sometimes")
    with pytest.raises(ValueError, match="snoop.dupack"):
        SnoopConfig(dupack="twice")


# ====================================================================================================
# aspan/policy.py's rules at their edges (issue 30, mutation run).
#
# The A-SPAN rule (paper, Design, "Routing Nodes on Receiving Data Packets"): cache when pkt_effort x p(next
# hop) < pkt_qos (strictly), never in the first ``snoop_after`` forwarding nodes, never once ``snoop_limit``
# nodes cached the packet (0: no limit), never at the sender but for the perfect snoop; the header rewrite
# (Design, steps 1-2): not cached, effort x p; cached, p alone and one more cacher, the count saturating at
# SNOOP_COUNT_MAX; the placement policies; the node settings refused with their field names.


def test_the_node_settings_defaults():
    c = SnoopConfig()
    assert (c.policy, c.fixed_hop, c.dupack, c.cache_bytes, c.max_flows, c.flow_idle_s) == \
        ("none", 1, "every", 4_000_000, 1024, 120.0)


@pytest.mark.parametrize("kw, says", [
    ({"policy": "some"}, r"^snoop.policy: expected one of \('none', 'fixed', 'adaptive', 'every', 'perfect'\), got 'some'$"),
    ({"dupack": "twice"}, r"^snoop.dupack: expected one of \('every', 'once'\), got 'twice'$"),
    ({"fixed_hop": -1}, r"^snoop.fixed_hop: expected a hop index >= 0, got -1$"),
    ({"cache_bytes": -1}, r"^snoop.cache_bytes: expected >= 0, got -1$"),
    ({"max_flows": 0}, r"^snoop flow bounds: expected max_flows >= 1 and flow_idle_s > 0, got 0, 120.0$"),
    ({"flow_idle_s": 0.0}, r"^snoop flow bounds: .* got 1024, 0.0$"),
])
def test_bad_settings_are_refused_with_their_field(kw, says):
    with pytest.raises(ValueError, match=says):
        SnoopConfig(**kw)


def test_the_edges_of_the_settings_are_accepted():
    c = SnoopConfig(fixed_hop=0, cache_bytes=0, max_flows=1, flow_idle_s=1e-9, dupack="once", policy="perfect")
    assert (c.fixed_hop, c.cache_bytes, c.max_flows) == (0, 0, 1)


def test_cache_only_when_the_effort_falls_strictly_below_the_qos():
    f = AspanFields(pkt_effort=0.5, pkt_qos=0.25)
    assert adaptive_wants_cache(f, 0.5, 1) is False                # 0.25 is not below 0.25
    assert adaptive_wants_cache(f, 0.49, 1) is True


def test_never_in_the_first_snoop_after_forwarding_nodes():
    f = AspanFields(pkt_effort=0.1, pkt_qos=1.0, snoop_after=2)
    assert [adaptive_wants_cache(f, 0.5, h) for h in (1, 2, 3)] == [False, False, True]
    f0 = AspanFields(pkt_effort=0.1, pkt_qos=1.0, snoop_after=0)
    assert adaptive_wants_cache(f0, 0.5, 1) is True


def test_never_at_the_sender_but_for_the_perfect_snoop():
    f = AspanFields(pkt_effort=0.1, pkt_qos=1.0)
    assert adaptive_wants_cache(f, 0.5, 0) is False
    assert adaptive_wants_cache(f, 0.5, 0, sender_may_cache=True) is True
    # snoop_after counts forwarding nodes only: it does not stop the perfect snoop at the sender
    assert adaptive_wants_cache(AspanFields(0.1, 1.0, snoop_after=3), 0.5, 0, sender_may_cache=True) is True


def test_never_once_snoop_limit_nodes_cached_the_packet():
    f = AspanFields(pkt_effort=0.1, pkt_qos=1.0, snoop_limit=2, snoop_count=1)
    assert adaptive_wants_cache(f, 0.5, 1) is True
    f.snoop_count = 2
    assert adaptive_wants_cache(f, 0.5, 1) is False
    unlimited = AspanFields(pkt_effort=0.1, pkt_qos=1.0, snoop_limit=0, snoop_count=200)
    assert adaptive_wants_cache(unlimited, 0.5, 1) is True


def test_the_header_rewrite_before_the_next_hop():
    f = AspanFields(pkt_effort=0.8, pkt_qos=0.5, snoop_count=3)
    update_effort(f, 0.7, cached=False)
    assert f.pkt_effort == quantise(0.8 * 0.7) and f.snoop_count == 3
    update_effort(f, 0.6, cached=True)
    assert f.pkt_effort == quantise(0.6) and f.snoop_count == 4
    f.snoop_count = SNOOP_COUNT_MAX - 1
    update_effort(f, 0.6, cached=True)
    assert f.snoop_count == SNOOP_COUNT_MAX
    update_effort(f, 0.6, cached=True)
    assert f.snoop_count == SNOOP_COUNT_MAX                        # saturated


def test_each_placement_policy():
    f = AspanFields(pkt_effort=0.1, pkt_qos=1.0)
    hops = (0, 1, 2, 3)
    assert [wants_cache(SnoopConfig(policy="none"), f, 0.5, h) for h in hops] == [False] * 4
    assert [wants_cache(SnoopConfig(policy="fixed", fixed_hop=2), f, 0.5, h) for h in hops] == \
        [False, False, True, False]
    assert [wants_cache(SnoopConfig(policy="every"), f, 0.5, h) for h in hops] == [False, True, True, True]
    assert [wants_cache(SnoopConfig(policy="adaptive"), f, 0.5, h) for h in hops] == [False, True, True, True]
    assert [wants_cache(SnoopConfig(policy="perfect"), f, 0.5, h) for h in hops] == [True, True, True, True]
    high = AspanFields(pkt_effort=1.0, pkt_qos=0.1)
    assert [wants_cache(SnoopConfig(policy=p), high, 0.5, 1) for p in ("adaptive", "perfect")] == [False, False]
