"""The netns backend's medium daemon: every packet crossing a veth crosses the DCF medium (issue 11, item 4).

With ``medium.model: dcf`` each node's namespace queues what it hears (raw PREROUTING, queue
:data:`routing.drivers.link_shaper.SHAPER_QUEUE`, the rule of the emulated links) and this one process,
in the root namespace, binds that queue in every namespace: it creates a ``NETLINK_NETFILTER``
socket inside each namespace (setns(2) through ctypes; Python 3.11 has no ``os.setns``) and hands
it to netfilterqueue (``NetfilterQueue(sockfd=...)``, as its README describes for other namespaces).
A packet that came in on node B's veth from A is a frame A -> B of the medium core
(``routing.medium.dcf.Medium``, the sim's and the local medium process's): the daemon holds its
verdict until the core delivers it (accept) or drops it (interface queue full: ``queue``; retry
limit: ``mac_retry``).  One process, because the medium is one state machine over all stations.

Stated limits (docs/MEDIUM.md): the frame has already left its sender's kernel when it enters the
medium, so the sender's interface queue is the medium's queue of what the kernel sent (TCP sees
its drops, not back-pressure); an ETX probe (UDP to the probe port) is one group-addressed frame
per neighbour, as on the local backend's medium process.

``medium.log`` is a node log of the node ``medium`` as on local: ``frame`` events (``src``,
``dst``, ``bytes``, ``attempts``, ``collisions``, ``airtime_us``, ``rate``, ``late_us``), ``drop`` events and
one ``mac`` event per station at the end.

Run by the runner: ``python -m experiments.backends.netns.medium --config FILE`` (root namespace).
"""
from __future__ import annotations

import ctypes
import os
import select
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from experiments.backends.medium_daemon import config_main, log_delivered, log_dropped, run_daemon
from experiments.backends.netns.node import go_realtime
from routing.drivers.eventlog import EventLog
from routing.drivers.link_shaper import SO_TIMESTAMP
from routing.medium.dcf import Delivered, Frame, Medium, Output

CLONE_NEWNET = 0x40000000
NETLINK_NETFILTER = 12
MAX_SLEEP_S = 0.2
SOCK_RCVBUF = 8 * 1024 * 1024


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def netlink_in(ns: str, devs: list[str]) -> tuple[socket.socket, dict[str, int]]:
    """A NETLINK_NETFILTER socket created inside namespace ``ns`` and the ifindex of each of ``devs``
    there; the calling thread is back in its own namespace on return."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
            index = {dev: socket.if_nametoindex(dev) for dev in devs}
        finally:
            _setns(own)
    finally:
        os.close(own)
        os.close(target)
    return sock, index


class NetnsMedium:
    """The queues of every namespace around one :class:`Medium`.

    ``nodes``: node -> (namespace, {veth: the neighbour at its other end}).
    """

    def __init__(self, medium: Medium, nodes: dict[str, tuple[str, dict[str, str]]], queue_num: int,
                 max_len: int, probe_port: int, log: EventLog) -> None:
        from netfilterqueue import NetfilterQueue

        self.medium = medium
        self.log = log
        self.probe_port = probe_port
        self.stop_event = threading.Event()
        self._base_mono = time.monotonic_ns()
        self._seen_ns = 0          # the latest time handed to the core (advance or send)
        self.stats = {"frames_in": 0, "frames_out": 0, "dropped": 0, "stamped": 0, "unknown_dev": 0}
        self.queues: list[Any] = []
        self._socks: list[socket.socket] = []
        self._stamp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)   # receive timestamps on (link_shaper)
        self._stamp.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP, 1)
        for node, (ns, devs) in nodes.items():
            sock, index = netlink_in(ns, list(devs))
            self._socks.append(sock)
            by_index = {index[dev]: nbr for dev, nbr in devs.items()}
            q = NetfilterQueue(sockfd=sock.fileno())
            q.bind(queue_num, self._callback(node, by_index), max_len=max_len, sock_len=SOCK_RCVBUF)
            self.queues.append(q)

    def now_ns(self) -> int:
        return time.monotonic_ns() - self._base_mono

    def stop(self) -> None:
        self.stop_event.set()

    def _callback(self, node: str, by_index: dict[int, str]) -> Any:
        def on_packet(pkt: Any) -> None:
            src = by_index.get(pkt.indev)
            if src is None:
                self.stats["unknown_dev"] += 1
                pkt.accept()
                return
            now = self.now_ns()
            ts = pkt.get_timestamp()        # when it came off the veth (as in routing.drivers.link_shaper) ...
            ago = time.time() - ts
            if ts > 0 and 0 <= ago < 1.0:
                self.stats["stamped"] += 1
                # ... but not before the last time the core has seen: it cannot take events in the past
                now = max(self._seen_ns, now - int(ago * 1e9))
            self._seen_ns = now
            self.stats["frames_in"] += 1
            self._handle(self.medium.advance(now))
            size = pkt.get_payload_len()
            self._handle(self.medium.send(now, Frame(src, node, pkt, size, not self._is_probe(pkt))))
        return on_packet

    def _is_probe(self, pkt: Any) -> bool:
        """ETX probes (UDP to the probe port) are group-addressed: sent once, never acknowledged."""
        data = pkt.get_payload()
        if len(data) < 24 or data[9] != socket.IPPROTO_UDP:
            return False
        ihl = (data[0] & 0x0F) * 4
        return len(data) >= ihl + 4 and int.from_bytes(data[ihl + 2:ihl + 4], "big") == self.probe_port

    def run(self, deadline: float | None) -> None:
        fds = {q.get_fd(): q for q in self.queues}
        medium = self.medium
        while not self.stop_event.is_set():
            if deadline is not None and time.time() > deadline:
                return
            nxt = medium.next_timer()
            wait = MAX_SLEEP_S if nxt is None else min(MAX_SLEEP_S, max(0.0, (nxt - self.now_ns()) / 1e9))
            ready, _, _ = select.select(list(fds), [], [], wait)
            self._seen_ns = self.now_ns()
            self._handle(medium.advance(self._seen_ns))
            for fd in ready:
                fds[fd].run(block=False)
            self.log.flush()

    def _handle(self, outs: list[Output]) -> None:
        if not outs:
            return
        t = time.time()
        now = self.now_ns()
        for o in outs:
            if isinstance(o, Delivered):
                o.frame.payload.accept()
                self.stats["frames_out"] += 1
                log_delivered(self.log, t, now, self.medium, o)
            else:
                o.frame.payload.drop()
                self.stats["dropped"] += 1
                log_dropped(self.log, t, o)

    def counters(self) -> dict[str, Any]:
        """What ``node_stop`` says of the packets."""
        return dict(self.stats)

    def close(self) -> None:
        """Accept what the medium still holds (the run is over), unbind every queue."""
        pending = {id(f): f for st in self.medium.stations.values() for f in st.queue if not f.delivered}
        for f in pending.values():               # queued or in the air (the head of its queue)
            f.payload.accept()
        for q in self.queues:
            q.unbind()
        for s in self._socks:
            s.close()
        self._stamp.close()



def run_medium(conf: dict[str, Any]) -> int:
    def make(medium: Medium, log: EventLog) -> tuple[NetnsMedium, dict[str, Any]]:
        if conf.get("realtime"):
            go_realtime()                                   # as the node daemons
        nodes = {n: (v["ns"], v["devs"]) for n, v in conf["nodes"].items()}
        return NetnsMedium(medium, nodes, conf["queue"], conf["max_len"], conf["probe_port"], log), {"nodes": len(nodes)}
    # the nodes' clock: their flows start at t0 + settling
    return run_daemon(conf, make, lambda cfg: conf["t0"] + cfg.etx.flow_start_s)


def main(argv: list[str]) -> int:
    return config_main(argv, "experiments.backends.netns.medium", "netns medium", run_medium)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
