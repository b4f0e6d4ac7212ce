"""The blocking socket-like API over real UDP nodes on loopback (threads in this process)."""
import hashlib
import random
import threading
import time
import pytest
from experiments.backends.local import free_port, loopback_address
from experiments.build import build_node
from experiments.schema import load_experiment
from routing.drivers.eventlog import EventLog
from routing.drivers.udp import UdpNode
from tcp_user.config import TcpConfig
from tcp_user.drivers.sockets import Listener, SocketTimeout, connect


@pytest.fixture
def mesh(tmp_path):
    """Four UDP nodes A-B-C-D on 127.0.1.x, 1 % loss per node, A-SPAN caching at pkt_qos 1.0."""
    exp = load_experiment({"loss": {"default": {"model": "bernoulli", "rate": 0.01}},
                           "etx": {"settle_s": 0.0},
                           "snoop": {"policy": "adaptive", "pkt_qos": 1.0}}, "sockets.yaml")
    cfg = exp.variants[0].config
    names = cfg["topology"]["chain"]
    addrs = cfg["topology"]["addresses"]
    port = free_port()
    udp = {n: (loopback_address(i), port) for i, n in enumerate(names)}
    nodes, threads, logs = {}, [], []
    for n in names:
        log = EventLog(tmp_path / f"{n}.log", n)
        logs.append(log)
        core = build_node(cfg, n, 7, log, time.time(), internal_probes=False, apps=False)
        nodes[n] = UdpNode(core, udp[n], {addrs[m]: udp[m] for m in names if m != n}, log)
    for node in nodes.values():
        t = threading.Thread(target=node.run, daemon=True)
        t.start()
        threads.append(t)
    yield nodes, addrs
    for node in nodes.values():
        node.stop()
    for t in threads:
        t.join(timeout=10)
        assert not t.is_alive()
    for log in logs:
        log.close()


def test_connect_accept_sendall_recv_close_across_the_chain(mesh):
    nodes, addrs = mesh
    data = random.Random(3).randbytes(300_000)
    got: dict[str, object] = {}
    listener = Listener(nodes["D"], 7000, TcpConfig(variant="sack"), iss=lambda: 4000)

    def server():
        s = listener.accept(timeout=20)
        h, n = hashlib.sha256(), 0
        while chunk := s.recv(65536, timeout=30):
            h.update(chunk)
            n += len(chunk)
        s.close(timeout=20)
        got["digest"], got["bytes"] = h.hexdigest(), n

    t = threading.Thread(target=server)
    t.start()
    c = connect(nodes["A"], addrs["D"], 7000, 7001, TcpConfig(variant="sack"), iss=2**32 - 1000, timeout=20)
    c.sendall(data)
    c.wait_acked(timeout=60)
    c.close(timeout=20)
    t.join(timeout=60)
    assert got == {"digest": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    assert c.conn.stats["retransmissions"] + nodes["B"].core.engine.agent.stats["local_retransmissions"] \
        + nodes["C"].core.engine.agent.stats["local_retransmissions"] > 0  # the 1 % loss was repaired


def test_connect_to_a_port_nobody_listens_on_times_out(mesh):
    nodes, addrs = mesh
    with pytest.raises(SocketTimeout, match="connection to 10.2.1.4:7999"):
        connect(nodes["A"], addrs["D"], 7999, 7002, TcpConfig(initial_rto=0.2), timeout=1.0)


def test_a_stop_racing_the_end_of_the_loop_never_writes_to_a_closed_pipe(tmp_path, monkeypatch):
    """stop() from another thread while the loop ends: its wake-up write must not find the pipe closed
    (it once failed with EBADF under load).  The write is held up until the loop has surely seen the
    stop request; the loop may close the pipe only after it."""
    import routing.drivers.udp as udp
    cfg = load_experiment({"etx": {"settle_s": 0.0}}, "stop.yaml").variants[0].config
    log = EventLog(tmp_path / "A.log", "A")
    core = build_node(cfg, "A", 7, log, time.time(), internal_probes=False, apps=False)
    node = UdpNode(core, (loopback_address(0), free_port()), {}, log)
    t = threading.Thread(target=node.run, daemon=True)
    t.start()
    real_write, held = udp.os.write, []

    def slow_write(fd, data):
        if fd == node._wake_w and not held:
            held.append(fd)
            node.stop_event.set()
            time.sleep(3 * udp.TICK_S)        # the loop wakes within TICK_S and ends meanwhile
        return real_write(fd, data)

    monkeypatch.setattr(udp.os, "write", slow_write)
    node.stop()
    t.join(timeout=10)
    assert held and not t.is_alive() and node._closed
    log.close()
