"""Emulated links without netem: hold each packet's NFQUEUE verdict until it would have crossed the link.

This kernel has no ``tc netem``.  Instead every packet a node hears on a mesh veth is queued (raw
PREROUTING, queue :data:`SHAPER_QUEUE`) to this shaper in the node's daemon, which asks the link rule
of routing.links.linkem when the packet would arrive over the link it came in on (serialisation at the
rate behind the packets before it, then the delay; drop-tail when the queue is full) and accepts it
only then.  netfilterqueue (>= 1.0) lets a verdict be given after the callback returned: "You can
hang onto Packet objects and resolve them later, but note that packets continue to count against
the queue size limit until they've been given a verdict" (its README, ``Packet.accept``).

Why at the receiving end of a link, not at the sender's egress: a packet held at its sender's
POSTROUTING still belongs to the sending socket, and TCP small queues (tcp_small_queue_check) then
lets the sender have only about 1 ms of its pacing rate below TCP: the sender would stall at far
below the link rate.  Crossing the veth orphans the packet (netem orphans its packets for the same
reason), so the receiver can hold it for as long as the link says.  The veth itself takes no time,
so "arrived at the far end of the veth at t" is "entered the link at t".

Every packet over a mesh veth goes through here: data, ACKs, probes, local retransmissions, ping.
The held packets are bounded by the kernel queue's ``max_len`` (overflow: nfnetlink_queue
``queue_dropped``, logged as drop/queue by the backend) and, per link, by ``queue_packets`` waiting
(drop-tail: drop/queue with ``link``, counted in :attr:`LinkShaper.stats`).

A release's lateness is not link time (:class:`LatenessBoard`): a packet the previous hop let go late
enters the next link as if it had been let go on time, so the lateness of one hop's wake-up (the
vCPU descheduled by the hypervisor for 3-20 ms, measured) does not lengthen the next hop as well.
"""
from __future__ import annotations

import heapq
import itertools
import mmap
import os
import select
import socket
import struct
import time
import zlib
from typing import Any, Callable

from routing.links.linkem import LinkParams, LinkQueue, count_release
from routing.links.mahimahi import OpportunityQueue
from routing.forwarding.step import DropLines

SO_TIMESTAMP = getattr(socket, "SO_TIMESTAMP", 29)   # Python does not export it; asm-generic/socket.h: 29
SHAPER_QUEUE = 1             # queue 0 is the snoop handler's (experiments/backends/netns/mesh.py)
TICK_S = 0.2

Emit = Callable[..., None]


def packet_key(ip: bytes) -> int:
    """What identifies an IPv4 packet on every hop of its path: ID, fragment field, protocol, addresses and
    the first 8 bytes after the IP header (ports and sequence number, ICMP id and sequence, UDP length and
    checksum), not the TTL, the header checksum or the options, which forwarding changes (the A-SPAN option
    is rewritten on each forwarder)."""
    ihl = (ip[0] & 0x0F) * 4
    crc = zlib.crc32(ip[4:8])
    crc = zlib.crc32(ip[9:10], crc)
    crc = zlib.crc32(ip[12:20], crc)
    return zlib.crc32(ip[ihl:ihl + 8], crc)


class LatenessBoard:
    """How late each node let its packets go, read by the next hop (shared by the daemons of one run).

    A daemon's release can come late for reasons that are not the link's: its vCPU descheduled by the
    hypervisor (on the 2-core VM, 3-20 ms gaps a few times a second that coincide with the steal count of
    /proc/stat: docs/NETNS.md, "Emulated links"), a scheduler tick, the handler busy.  The kernel
    stamps the packet when it comes off the next veth, so without this the next hop would take the late
    release as link time, and every hop's lateness would add up along the path.  Instead the releasing
    node posts (packet key, lateness) here and the next node takes the packet as having entered its link
    that much earlier: its own hold absorbs the lateness when the hold is longer, and whatever is left
    is late again there and passed on.  Only the last hop's lateness (and the receiving application's
    own wake-up) stays in the end-to-end time.  The link stays FIFO (the earlier entry goes through
    LinkQueue.admit like any other): a packet that got onto the link after the late one should have,
    but before it arrived, still goes first, and the correction is lost by that much.

    A shared memory file (memfd, inherited from the runner) of ``SLOTS`` slots, indexed by the packet
    key: (key, lateness in us, release time).  Entries are taken once.  A slot another packet has
    overwritten only loses that packet's correction; the release time must be at most ``WINDOW_S``
    before the next hop's receive stamp, so a later copy of the same bytes (a local retransmission) is
    never corrected with its original's lateness.  Writers of different processes do not lock: a slot
    is written with one 16-byte copy, and a torn read would need two packets with keys in the same slot
    released within the microsecond.
    """

    SLOTS = 4096
    WINDOW_S = 0.2
    _SLOT = struct.Struct("<IId")          # key, lateness us, release time (CLOCK_REALTIME, s)
    SIZE = SLOTS * _SLOT.size

    def __init__(self, buf: Any) -> None:
        self._buf = buf

    @classmethod
    def from_fd(cls, fd: int) -> "LatenessBoard":
        """The run's board from an inherited file descriptor (closed here: the mapping keeps the memory)."""
        try:
            return cls(mmap.mmap(fd, cls.SIZE))
        finally:
            os.close(fd)

    @classmethod
    def create_fd(cls) -> int:
        """A new board for a run: an anonymous shared memory file of the right size (the runner passes it
        to every daemon and closes its own copy; it is gone when the last daemon exits)."""
        fd = os.memfd_create("aspan-link-lateness")
        os.ftruncate(fd, cls.SIZE)
        return fd

    def post(self, key: int, late_s: float, released: float) -> None:
        self._SLOT.pack_into(self._buf, (key % self.SLOTS) * self._SLOT.size,
                             key, min(int(late_s * 1e6), 0xFFFFFFFF), released)

    def take(self, key: int, stamp: float) -> float:
        """The lateness (s) of the release that sent this packet here, 0.0 when none was posted."""
        off = (key % self.SLOTS) * self._SLOT.size
        k, late_us, released = self._SLOT.unpack_from(self._buf, off)
        if k != key or not -0.001 <= stamp - released <= self.WINDOW_S:
            return 0.0
        self._SLOT.pack_into(self._buf, off, 0, 0, 0.0)
        return late_us / 1e6


class LinkShaper:
    """The incoming link directions of one node: ``links`` maps an ifindex to (link name, params or queue)."""

    def __init__(self, queue_num: int, links: dict[int, tuple[str, LinkParams | LinkQueue | OpportunityQueue]], emit: Emit,
                 max_len: int = 4096, sock_len: int = 8 * 1024 * 1024, board: LatenessBoard | None = None) -> None:
        from netfilterqueue import NetfilterQueue  # here: the arithmetic needs no C extension

        self._init_state(links, emit, max_len, time.time, board)
        self.keep_rx_timestamps()
        self._queue = NetfilterQueue()
        self._queue.bind(queue_num, self._on_packet, max_len=max_len, sock_len=sock_len)

    @classmethod
    def without_queue(cls, links: dict[int, tuple[str, LinkParams | LinkQueue | OpportunityQueue]], emit: Emit, max_len: int,
                      clock: Callable[[], float], board: LatenessBoard | None = None) -> "LinkShaper":
        """The callback and the release alone, on a given clock (tests feed them fake packets)."""
        self = cls.__new__(cls)
        self._init_state(links, emit, max_len, clock, board)
        return self

    def _init_state(self, links: dict[int, tuple[str, LinkParams | LinkQueue | OpportunityQueue]], emit: Emit, max_len: int,
                    clock: Callable[[], float], board: LatenessBoard | None) -> None:
        self.clock = clock
        # a link's rule: routing.links.linkem's from its LinkParams, or a queue with the same admit() (a Mahimahi
        # schedule: routing.links.mahimahi.OpportunityQueue)
        self.links = {ifx: (name, LinkQueue(p) if isinstance(p, LinkParams) else p) for ifx, (name, p) in links.items()}
        self._emit = emit
        self.max_len = max_len
        self._held: list[tuple[float, int, Any, int]] = []     # (release time, order, packet, key): a heap
        self._order = itertools.count()
        self._board = board
        self.stats = {"packets": 0, "stamped": 0, "released": 0, "link_drops": 0, "unknown_dev": 0, "held_max": 0,
                      "late_max_us": 0, "late_sum_us": 0, "late_1ms": 0, "carried": 0, "carried_max_us": 0}
        self._stamp_sock: socket.socket | None = None
        self._drop_lines = DropLines(lambda now, link, count, since: emit(now, "drop", reason="queue", link=link,
                                                                          count=count, since=since))

    def keep_rx_timestamps(self) -> None:
        """Hold a socket with SO_TIMESTAMP open: while any socket asks for receive timestamps the kernel
        stamps every packet as it is received (net_enable_timestamp; ping does the same), and
        NFQUEUE passes that stamp on (NFQA_TIMESTAMP).  Nothing is sent on it; closed in :meth:`close`."""
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP, 1)
        self._stamp_sock = s

    # ---- the callback: netfilterqueue calls it for each packet ------------------
    def _on_packet(self, pkt: Any) -> None:
        now = self.clock()
        # When the packet came off the veth (skb->tstamp, CLOCK_REALTIME, taken on receive while rx
        # timestamping is on: :meth:`keep_rx_timestamps`), not when this callback got to it: the
        # handler's wake-up latency must not lengthen the link.  0: no timestamp, use the clock.
        ts = pkt.get_timestamp()
        if 0.0 < ts <= now and now - ts < 1.0:
            self.stats["stamped"] += 1
            now = ts
        self.stats["packets"] += 1
        link = self.links.get(pkt.indev)
        if link is None:                  # not a mesh veth of this run (the rule matches only those)
            self.stats["unknown_dev"] += 1
            pkt.accept()
            return
        name, queue = link
        size = pkt.get_payload_len()
        key = 0
        if self._board is not None:
            key = packet_key(pkt.get_payload())
            carried = self._board.take(key, now)     # the previous hop let it go this late: not link time
            if carried > 0.0:
                now -= carried
                self.stats["carried"] += 1
                if carried * 1e6 > self.stats["carried_max_us"]:
                    self.stats["carried_max_us"] = int(carried * 1e6)
        arrive = queue.admit(now, size) if len(self._held) < self.max_len else None
        if arrive is None:
            pkt.drop()
            self._drop(now, name, size)
            return
        heapq.heappush(self._held, (arrive, next(self._order), pkt, key))
        if len(self._held) > self.stats["held_max"]:
            self.stats["held_max"] = len(self._held)

    def _drop(self, now: float, link: str, size: int) -> None:
        """A drop-tail drop: counted, and logged at the drop logs' line rate (routing.forwarding.step.DropLines)."""
        self.stats["link_drops"] += 1
        if self._drop_lines.one_line(now, link):
            self._emit(now, "drop", reason="queue", link=link, len=size)

    def flush_drops(self, now: float) -> None:
        """The summed drop lines of every link (the daemon calls it at the end)."""
        self._drop_lines.flush(now)

    # ---- the loop's side: release what is due -----------------------------------
    def fileno(self) -> int:
        return self._queue.get_fd()

    def on_readable(self) -> None:
        """Take every packet the kernel has queued, then accept what is due."""
        self._queue.run(block=False)
        self.release(self.clock())

    def next_due(self) -> float | None:
        return self._held[0][0] if self._held else None

    def release(self, now: float) -> None:
        """Accept every held packet whose arrival time has come; record how late each was (and post it
        for the next hop, before the verdict lets the packet go there)."""
        held = self._held
        board = self._board
        while held and held[0][0] <= now:
            due, _, pkt, key = heapq.heappop(held)
            if board is not None:
                board.post(key, now - due, now)
            pkt.accept()
            count_release(self.stats, due, now)

    def timeout(self, now: float, cap: float = TICK_S) -> float:
        """How long a select may wait before the next packet is due (at most ``cap``)."""
        due = self.next_due()
        return cap if due is None else min(cap, max(0.0, due - now))

    def run(self, tick: Callable[[float], bool], stop_fd: int | None = None) -> None:
        """The loop of a node with no snoop queue (the NfqDriver's loop serves both otherwise)."""
        fds = [self.fileno()] + ([stop_fd] if stop_fd is not None else [])
        while True:
            ready, _, _ = select.select(fds, [], [], self.timeout(time.time()))
            if self.fileno() in ready:
                self.on_readable()
            if stop_fd is not None and stop_fd in ready:
                os.read(stop_fd, 64)
            self.release(time.time())
            if not tick(time.time()):
                break

    def close(self) -> None:
        """Accept what is still held (the run is ending; nothing is left in the kernel queue), unbind."""
        for _, _, pkt, _ in self._held:
            pkt.accept()
        self._held.clear()
        self.flush_drops(time.time())
        self._queue.unbind()
        if self._stamp_sock is not None:
            self._stamp_sock.close()
