"""The interface queue as deep as a Pi's (issue 24, item 7): ``medium.queue_packets: 1000`` (Linux's
txqueuelen default) is accepted, and where the 50-packet queue drops a burst, the deep one holds it and
turns the drops into delay: the last frame waits for every frame before it (virtual time, the medium core)."""
from __future__ import annotations

import random

from experiments.schema import load_experiment
from routing.medium.dcf import Delivered, Dropped, Frame, Medium, Phy, Topology

PI_TXQUEUELEN = 1000


def test_the_schema_accepts_a_pis_queue() -> None:
    doc = {"medium": {"model": "dcf", "standard": "n", "rate_control": "minstrel", "queue_packets": PI_TXQUEUELEN},
           "flows": [{"segments": 10}]}
    assert load_experiment(doc, "q.yaml").variants[0].config["medium"]["queue_packets"] == PI_TXQUEUELEN


def _burst(queue_packets: int, n: int = 1000) -> tuple[int, int, list[int]]:
    """``n`` frames of 1,500 bytes handed to A's queue at once (a TCP window, a burst from above): (queue drops,
    delivered, each delivered frame's delay in ns)."""
    phy = Phy.preset("g")
    medium = Medium(phy, Topology.from_graph({"A": ["B"], "B": ["A"]}), queue_packets, random.Random(1))
    outs = []
    for i in range(n):
        outs += medium.send(0, Frame("A", "B", i, 1500))
    while (t := medium.next_timer()) is not None:
        outs += medium.advance(t)
    drops = sum(isinstance(o, Dropped) and o.reason == "queue" for o in outs)
    delays = [o.at_ns for o in outs if isinstance(o, Delivered)]
    return drops, len(delays), delays


def test_a_deep_queue_turns_drops_into_delay() -> None:
    drops, delivered, delays = _burst(50)
    assert drops == 950 and delivered == 50
    deep_drops, deep_delivered, deep_delays = _burst(PI_TXQUEUELEN)
    assert deep_drops == 0 and deep_delivered == 1000
    per_frame = Phy.preset("g").exchange_ns(1500)   # data + SIFS + ACK, plus DIFS and backoff between
    # the last frame waits for the 999 before it: about 1000 exchanges (backoff: 7.5 slots of 9 us on average)
    assert 1000 * per_frame < max(deep_delays) < 1000 * (per_frame + Phy.preset("g").difs_ns + 16 * 9000)
    assert max(deep_delays) > 15 * max(delays)
