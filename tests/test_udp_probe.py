"""The kernel data plane's probe socket (routing/udp_probe.py) against a hostile neighbour (issue 27, items
3-4, in part): junk and datagrams from strangers are dropped, counted exactly by reason and logged at the
drop lines' rate; a probe from the neighbour is taken.  On loopback addresses only (127.0.0.x)."""
from __future__ import annotations

import socket
import time

from etx.estimator import EtxTable
from routing.step import DROP_LINES_PER_S
from routing.udp_probe import UdpProber
from routing.wire import PROBE, Packet, Probe, encode

ME, NBR, STRANGER = "127.0.0.1", "127.0.0.2", "127.0.0.3"


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
    assert prober.drops == {"malformed": junk, "stranger": forged}
    assert prober.stats["probes_heard"] == 1
    assert prober.etx.link(NBR).forward() == 0.0          # only the real probe's report counted
    drops = [e for e in events if e["ev"] == "drop"]
    one_by_one = [e for e in drops if "count" not in e]
    assert len(one_by_one) <= 2 * DROP_LINES_PER_S * (1 + int(events[-1]["t"] - events[0]["t"]) + 1)
    assert sum(e.get("count", 1) for e in drops if e["reason"] == "malformed") == junk   # every drop logged or counted
    assert sum(e.get("count", 1) for e in drops if e["reason"] == "stranger") == forged
    assert all(e["ptype"] == "probe" for e in drops)
