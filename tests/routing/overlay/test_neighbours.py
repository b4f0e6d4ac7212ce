"""Issue 27, item 3: neighbours only, with or without the MAC.  A datagram whose UDP source is not a
configured neighbour's is dropped as ``stranger`` before anything reads it (routing.overlay.neighbours, in
routing.drivers.udp's drain): forged probes from a stranger address do not move the ETX estimate, junk from a
stranger is a stranger's, junk from the neighbour's own address is still ``malformed``.  Loopback only.
"""
from __future__ import annotations

import threading
import time
import pytest
from experiments.build import build_node
from experiments.schema import load_experiment
from routing.overlay.auth import MeshAuth
from routing.drivers.eventlog import EventLog
from routing.overlay.neighbours import link_senders
from routing.forwarding.step import DROP_LINES_PER_S
from routing.drivers.udp import UdpNode
from routing.overlay.wire import PROBE, Packet, Probe, encode


A, B, C, D = "10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"


KEY = bytes(range(32))


ME = ("127.0.0.1", 0)


def test_link_senders_keeps_the_configured_neighbours_only():
    peers = {A: ("127.0.0.1", 7001), C: ("127.0.0.3", 7001), D: ("127.0.0.4", 7001)}   # the Pis' peers: everyone
    assert link_senders(peers, [A, C]) == {("127.0.0.1", 7001): A, ("127.0.0.3", 7001): C}


def _node_b(tmp_path, peers, auth=None):
    """Node B of the default chain (neighbours A and C) on loopback, without probers or apps."""
    cfg = load_experiment({"name": "t", "etx": {"settle_s": 0}, "flows": [{"segments": 1}]}).variants[0].config
    log = EventLog(tmp_path / "B.log", "B", batch=True)
    core = build_node(cfg, "B", 1, log, time.time(), internal_probes=False, apps=False)
    return UdpNode(core, ME, peers, log, deadline=time.time() + 30, auth=auth), log


class ScriptedSocket:
    """A socket stand-in that hands the drain scripted (datagram, UDP source) pairs: the driver's rule
    with no network and no timing."""

    def __init__(self, script):
        self.script = list(script)
        self.sent = []

    def recvfrom(self, _size):
        if not self.script:
            raise BlockingIOError
        return self.script.pop(0)

    def recv(self, size):             # a driver that does not ask for the source
        return self.recvfrom(size)[0]

    def sendto(self, data, addr):     # B answers nothing here (no endpoints); counted should it try
        self.sent.append((data, addr))


def forged_probe(seq: int) -> bytes:
    """A well-formed probe 'from' A reporting that B hears nothing of A (ratio 0): believed, it would
    drive B's forward ratio towards A to 0."""
    return encode(Packet(PROBE, A, 0, B, 0, probe=Probe(seq, 0.0)))


@pytest.mark.parametrize("mac", [False, True])
def test_forged_probes_from_a_stranger_address_do_not_move_the_estimate(tmp_path, mac):
    """At the driver's drain, with scripted datagrams: 500 forged probes from a stranger's address, and 500
    from neighbour C's address naming A, leave B's estimate of A where the real probes put it; each is
    counted as ``stranger``."""
    a_udp, c_udp, stranger = ("127.0.0.1", 7001), ("127.0.0.3", 7001), ("127.0.0.9", 7001)
    auth = MeshAuth(KEY, B, [A, C], 1) if mac else None
    node, log = _node_b(tmp_path, {A: a_udp, C: c_udp}, auth)
    try:
        seal = MeshAuth(KEY, A, [B], 1)
        real = [seal.seal(Packet(PROBE, A, 0, B, 0, probe=Probe(s, 1.0)), B) if mac
                else encode(Packet(PROBE, A, 0, B, 0, probe=Probe(s, 1.0))) for s in range(1, 11)]
        node.sock.close()
        node.sock = ScriptedSocket([(d, a_udp) for d in real])
        node._drain()
        link = node.core.etx.link(A)
        before = (link.probes.received, link.forward(), node.core.etx.quality(A))
        assert before[0] == 10 and before[1] == 1.0
        forged = [seal.seal(Packet(PROBE, A, 0, B, 0, probe=Probe(s, 0.0)), B) if mac else forged_probe(s)
                  for s in range(11, 511)]
        node.sock = ScriptedSocket([(d, stranger) for d in forged])
        node._drain(budget=1000)
        # neighbour C (with the key, when there is one) sends probes naming A: a probe measures the link it
        # came over, so its header must name the neighbour it came from (routing.overlay.neighbours.names_its_sender)
        seal_c = MeshAuth(KEY, C, [B], 1)
        from_c = [seal_c.seal(Packet(PROBE, A, 0, B, 0, probe=Probe(s, 0.0)), B) if mac else forged_probe(s)
                  for s in range(511, 1011)]
        node.sock = ScriptedSocket([(d, c_udp) for d in from_c])
        node._drain(budget=1000)
        assert (link.probes.received, link.forward(), node.core.etx.quality(A)) == before
        assert node.core.engine.drops["stranger"] == 1000 and node.rx_datagrams == 1010
        assert node.core.etx.link(C).probes.received == 0
        assert sum(v for k, v in node.core.engine.drops.items() if k != "stranger") == 0
    finally:
        log.close()


def _socket(bind=("127.0.0.1", 0)):
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(bind)
    return s


def test_on_real_sockets_strangers_are_dropped_and_junk_from_the_neighbour_is_malformed(tmp_path):
    """Node B on loopback with the MAC off, its neighbours' sockets held by the test: junk and forged
    probes from a third socket are ``stranger``, junk from A's own address is ``malformed``, the real
    probe from A is the only one the estimate takes; the drop lines are rate-limited and add up."""
    sa, sc, stranger = _socket(), _socket(), _socket()
    node, log = _node_b(tmp_path, {A: sa.getsockname(), C: sc.getsockname()})
    bind = node.bind_address
    stranger_src = "%s:%d" % stranger.getsockname()
    t = threading.Thread(target=node.run)
    t.start()
    n_forged, n_junk = 300, 200
    try:
        for i in range(n_forged):
            stranger.sendto(forged_probe(i + 1) if i % 2 else b"junk %d" % i, bind)
        for i in range(n_junk):
            sa.sendto(b"\xa5\x02 junk from the neighbour %d" % i, bind)
        sa.sendto(encode(Packet(PROBE, A, 0, B, 0, probe=Probe(1, 1.0))), bind)
        end = time.time() + 30
        while node.rx_datagrams < n_forged + n_junk + 1 and time.time() < end:
            time.sleep(0.02)
    finally:
        node.stop()
        t.join(10)
        for s in (sa, sc, stranger):
            s.close()
        node.core.engine.step.flush_drops(time.time(), final=True)   # as node_main does before node_stop
        log.close()
    drops = node.core.engine.drops
    assert node.rx_datagrams == n_forged + n_junk + 1, "the kernel dropped some: nothing to judge"
    assert (drops["stranger"], drops["malformed"]) == (n_forged, n_junk)
    link = node.core.etx.link(A)
    assert link.probes.received == 1 and link.forward() == 1.0
    import json
    events = [json.loads(line) for line in (tmp_path / "B.log").read_text().splitlines()]
    for reason, n in (("stranger", n_forged), ("malformed", n_junk)):
        lines = [e for e in events if e["ev"] == "drop" and e["reason"] == reason]
        assert sum(e.get("count", 1) for e in lines) == n
        span = 1 + int(lines[-1]["t"] - lines[0]["t"]) + 1
        assert len([e for e in lines if "count" not in e]) <= DROP_LINES_PER_S * span
    assert all(e["src"] == stranger_src for e in events
               if e["ev"] == "drop" and e["reason"] == "stranger" and "count" not in e)
