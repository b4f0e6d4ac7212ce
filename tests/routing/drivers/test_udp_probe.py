"""The kernel data plane's probe socket (routing/drivers/udp_probe.py) against a hostile neighbour (issue 27, items
3-4): junk and datagrams from strangers are dropped, counted exactly by reason and logged at the drop lines'
rate; a probe from the neighbour is taken; with the run's key (``auth.mac``) only probes sealed for the link
and fresh are.  On loopback addresses only (127.0.0.x).
"""
from __future__ import annotations

import socket
import time
import pytest
from etx.estimator import EtxTable
from routing.overlay.auth import MeshAuth
from routing.forwarding.step import DROP_LINES_PER_S
from routing.drivers.udp_probe import UdpProber
from routing.overlay.wire import PROBE, Packet, Probe, encode


ME, NBR, STRANGER, NBR2 = "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"


KEY = bytes(range(32))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((ME, 0))
        return s.getsockname()[1]


def wait_for(cond, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_junk_and_strangers_are_counted_exactly_and_logged_at_a_bounded_rate() -> None:
    port = free_port()
    events: list[dict] = []
    prober = UdpProber(ME, port, EtxTable([NBR]), lambda now: 3600.0,
                       lambda t, ev, **kw: events.append({"t": t, "ev": ev, **kw}), log_interval_s=0.2)
    prober.start()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as nbr, \
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stranger:
            nbr.bind((NBR, port))
            stranger.bind((STRANGER, port))
            junk, forged = 600, 300
            probe = encode(Packet(PROBE, NBR, port, ME, port, probe=Probe(0, 0.0)))
            # in batches the socket buffer holds (what the kernel drops before the prober reads is not the point)
            for b in range(0, junk, 50):                            # junk from the neighbour's own address
                for i in range(b, b + 50):
                    nbr.sendto(b"junk %d" % i, (ME, port))
                assert wait_for(lambda: prober.drops["malformed"] >= b + 50), prober.drops
            for b in range(0, forged, 50):                          # a well-formed probe "from" the neighbour
                for _ in range(50):
                    stranger.sendto(probe, (ME, port))
                assert wait_for(lambda: prober.drops["stranger"] >= b + 50), prober.drops
            nbr.sendto(probe, (ME, port))                           # the real one
            assert wait_for(lambda: prober.stats["probes_heard"] == 1)
    finally:
        prober.stop()
    assert prober.drops == {"malformed": junk, "stranger": forged, "forged": 0, "replay": 0}
    assert prober.stats["probes_heard"] == 1
    assert prober.etx.link(NBR).forward() == 0.0          # only the real probe's report counted
    drops = [e for e in events if e["ev"] == "drop"]
    one_by_one = [e for e in drops if "count" not in e]
    assert len(one_by_one) <= 2 * DROP_LINES_PER_S * (1 + int(events[-1]["t"] - events[0]["t"]) + 1)
    assert sum(e.get("count", 1) for e in drops if e["reason"] == "malformed") == junk   # every drop logged or counted
    assert sum(e.get("count", 1) for e in drops if e["reason"] == "stranger") == forged
    assert all(e["ptype"] == "probe" for e in drops)


def probe(src: str, seq: int, ratio: float, port: int = 7700) -> Packet:
    return Packet(PROBE, src, port, ME, port, probe=Probe(seq, ratio))


def core_prober(auth: MeshAuth | None = None) -> UdpProber:
    """A prober whose threads never start: :meth:`UdpProber._heard` is driven with scripted datagrams and
    times (the rule without a network or a clock)."""
    return UdpProber(ME, 0, EtxTable([NBR, NBR2]), lambda now: 3600.0, lambda *a, **k: None, auth=auth)


@pytest.mark.parametrize("mac", [False, True])
def test_forged_probes_from_a_stranger_address_do_not_move_the_estimate(mac):
    """With or without the MAC (issue 27, item 3): 500 probes "from" the neighbour, reporting that it hears
    nothing of this node, from a stranger's address, and 500 from the other neighbour's address naming the
    first in their header: all ``stranger``, as is junk from the stranger's address (nothing from it is
    parsed); the estimate stays where the real probes put it."""
    seal = MeshAuth(KEY, NBR, [ME], 1)
    seal2 = MeshAuth(KEY, NBR2, [ME], 1)
    prober = core_prober(MeshAuth(KEY, ME, [NBR, NBR2], 1) if mac else None)
    try:
        for s in range(10):
            pkt = probe(NBR, s, 1.0)
            prober._heard(seal.seal(pkt, ME) if mac else encode(pkt), NBR, 1.0 + s * 0.1)
        link = prober.etx.link(NBR)
        before = (link.probes.received, link.forward(), prober.quality(NBR))
        assert before == (10, 1.0, 1.0)
        for s in range(10, 510):
            pkt = probe(NBR, s, 0.0)
            prober._heard(seal.seal(pkt, ME) if mac else encode(pkt), STRANGER, 2.0 + s * 1e-3)
            prober._heard(seal2.seal(pkt, ME) if mac else encode(pkt), NBR2, 2.0 + s * 1e-3)
        for i in range(10):
            prober._heard(b"junk %d" % i, STRANGER, 3.0)
        assert (link.probes.received, link.forward(), prober.quality(NBR)) == before
        assert prober.drops == {"stranger": 1010, "forged": 0, "replay": 0, "malformed": 0}
    finally:
        prober.stop()


def test_with_the_key_only_sealed_fresh_probes_for_this_link_count():
    """Issue 27, item 4, at the core: from the neighbour's own address, a plain probe, one sealed with another
    key, one sealed for another link and a bit-flipped one are ``forged``, the same sealed probe again is a
    ``replay``, junk is ``forged`` (its tag cannot verify); none moves the estimate; the sealed one counts."""
    seal = MeshAuth(KEY, NBR, [ME, NBR2], 1)
    prober = core_prober(MeshAuth(KEY, ME, [NBR, NBR2], 1))
    try:
        good = seal.seal(probe(NBR, 1, 1.0), ME)
        prober._heard(good, NBR, 1.0)
        link = prober.etx.link(NBR)
        assert (link.probes.received, link.forward()) == (1, 1.0)
        flipped = bytearray(seal.seal(probe(NBR, 2, 0.0), ME))
        flipped[12] ^= 4
        for data in (encode(probe(NBR, 3, 0.0)),                                   # no MAC at all
                     MeshAuth(bytes(32), NBR, [ME], 1).seal(probe(NBR, 4, 0.0), ME),   # another key
                     seal.seal(probe(NBR, 5, 0.0), NBR2),                          # sealed for NBR -> NBR2
                     bytes(flipped), b"junk", b""):
            prober._heard(data, NBR, 2.0)
        prober._heard(good, NBR, 3.0)                                              # replayed
        assert prober.drops == {"stranger": 0, "forged": 6, "replay": 1, "malformed": 0}
        assert (link.probes.received, link.forward()) == (1, 1.0)
    finally:
        prober.stop()


def test_two_probers_with_the_key_hear_each_other_and_a_keyless_one_is_not_heard() -> None:
    """Real sockets: ME and NBR probe each other with the run's key and each hears the other's sealed
    probes; a third prober on NBR2 without the key is dropped as ``forged`` at ME, never heard."""
    port = free_port()
    events: list[dict] = []
    emit = lambda t, ev, **kw: events.append({"t": t, "ev": ev, **kw})   # noqa: E731
    fast = lambda now: 0.01                                                   # noqa: E731
    me = UdpProber(ME, port, EtxTable([NBR, NBR2]), fast, emit, auth=MeshAuth(KEY, ME, [NBR, NBR2], 1),
                   log_interval_s=0.2)
    nbr = UdpProber(NBR, port, EtxTable([ME]), fast, lambda *a, **k: None, auth=MeshAuth(KEY, NBR, [ME], 1))
    keyless = UdpProber(NBR2, port, EtxTable([ME]), fast, lambda *a, **k: None)
    for p in (me, nbr, keyless):
        p.start()
    try:
        assert wait_for(lambda: me.stats["probes_heard"] >= 20 and nbr.stats["probes_heard"] >= 20
                        and me.drops["forged"] >= 20)
    finally:
        for p in (me, nbr, keyless):
            p.stop()
    assert me.etx.link(NBR).probes.received == me.stats["probes_heard"]      # every one heard came from NBR
    assert me.etx.link(NBR2).probes.received == 0 and me.drops["replay"] == 0 and me.drops["stranger"] == 0
    assert nbr.drops == {"stranger": 0, "forged": 0, "replay": 0, "malformed": 0}
    assert me.quality(NBR) > 0.5            # NBR's reports of ME's sealed probes arrived
    assert sum(e.get("count", 1) for e in events if e["ev"] == "drop" and e["reason"] == "forged") == me.drops["forged"]
