"""The pkt_effort arithmetic and the placement policies (paper, Design)."""
import pytest

from aspan.fields import AspanFields, quantise
from aspan.policy import SnoopConfig, update_effort, wants_cache

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
