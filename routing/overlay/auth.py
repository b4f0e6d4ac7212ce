"""The authenticated overlay of one node (issue 13, item 3): seal what it sends, open what it hears.

Core without I/O: the UDP driver (routing.drivers.udp) and the kernel plane's probe socket (routing.drivers.udp_probe)
hand it every datagram from a neighbour's address with that neighbour's mesh address (what comes from any
other address they drop as ``stranger`` first, with or without the MAC: routing.overlay.neighbours) and ask it to
seal every packet they send.

* Every overlay packet, probes and data, travels as wire version 3: the transmitting node's
  sequence number and a keyed BLAKE2b tag under the experiment key, bound to the link
  (routing.overlay.wire.encode_auth).  The key is generated per run by the runner and reaches the nodes
  in a file they read once and delete; it is never logged.
* A node accepts packets only from its neighbours' addresses (``stranger``: the driver's rule, and
  :meth:`MeshAuth.verify` has no link key for anyone else), with a tag that
  verifies (``forged``), and a sequence number not seen before and not older than the replay
  window (``replay``; RFC 4303 sec. 3.4.3's sliding window, per neighbour).
"""
from __future__ import annotations

from collections.abc import Iterable

from routing.overlay.wire import AuthError, MacKey, Packet, decode_authentic, encode_auth, link_id, reseal, verify_auth

REPLAY_WINDOW = 1024   # sequence numbers behind the highest one that may still arrive (reordering)
AUTH_REASONS = ("stranger", "forged", "replay")


class ReplayWindow:
    """The sequence numbers accepted from one sender: above the highest, or within ``size`` below it
    and not seen yet (a bitmap; RFC 4303 sec. 3.4.3)."""

    __slots__ = ("size", "top", "bits")

    def __init__(self, size: int = REPLAY_WINDOW) -> None:
        self.size = size
        self.top = 0          # highest accepted; sequence numbers start at 1
        self.bits = 0         # bit k: top - k was accepted

    def accept(self, seq: int) -> bool:
        """Accept ``seq`` (and remember it) or refuse it as a replay.  Call only once its tag verified."""
        if seq > self.top:
            shift = seq - self.top
            self.bits = ((self.bits << shift) | 1) & ((1 << self.size) - 1) if shift < self.size else 1
            self.top = seq
            return True
        off = self.top - seq
        if off >= self.size or self.bits >> off & 1:
            return False
        self.bits |= 1 << off
        return True


class MeshAuth:
    """One node's sealing and opening.  ``first_seq`` (>= 1) must exceed any sequence number this node
    sent before under the same key: the driver starts from the clock in microseconds, so a node
    restarted within a run is not taken for a replay."""

    def __init__(self, key: bytes, address: str, neighbours: Iterable[str], first_seq: int,
                 window: int = REPLAY_WINDOW) -> None:
        if first_seq < 1:
            raise ValueError("sequence numbers start at 1")
        self.key = MacKey(key)
        self.address = address
        self.seq = first_seq - 1
        self._out = {n: link_id(address, n) for n in neighbours}
        self._in = {n: link_id(n, address) for n in neighbours}
        self._windows = {n: ReplayWindow(window) for n in neighbours}

    def seal(self, pkt: Packet, next_hop: str) -> bytes:
        """``pkt`` as the version-3 datagram for ``next_hop`` (a neighbour; WireError if it does not fit)."""
        self.seq += 1
        return encode_auth(pkt, self.key, self._link_to(next_hop), self.seq)

    def reseal(self, buf: bytearray, next_hop: str) -> None:
        """Write the trailer of the version-3 datagram ``buf`` (one this node passes on as bytes,
        routing.overlay.wire.relayed) for ``next_hop``, in place: a fresh sequence number and the tag."""
        self.seq += 1
        reseal(buf, self.key, self._link_to(next_hop), self.seq)

    def verify(self, data: bytes, sender: str | None) -> None:
        """Accept a datagram heard from neighbour ``sender`` (None: not a neighbour's address): its tag
        verifies and its sequence number is fresh (remembered from now on).  Raises AuthError with the
        drop reason (stranger, forged, replay).  Its contents are not parsed
        (routing.overlay.wire.decode_authentic, or the engine's relay path, does that next)."""
        link = self._in.get(sender) if sender is not None else None
        if link is None:
            raise AuthError("stranger")
        if not self._windows[sender].accept(verify_auth(data, self.key, link)):   # type: ignore[index]
            raise AuthError("replay")

    def open(self, data: bytes, sender: str | None) -> Packet:
        """The packet of a datagram heard from neighbour ``sender``: :meth:`verify`, then parsed.
        Raises AuthError with the drop reason, or WireError (malformed)."""
        self.verify(data, sender)
        return decode_authentic(data)

    def _link_to(self, next_hop: str) -> bytes:
        link = self._out.get(next_hop)
        if link is None:
            link = self._out[next_hop] = link_id(self.address, next_hop)
        return link
