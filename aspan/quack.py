"""The power-sum quACK of Sidekick (Yuan et al., *Sidekick: In-Network Assistance for Secure End-to-End
Transport Protocols*, NSDI 2024, Sec. 4), as a core without I/O.

A relay that cannot read a flow's packets (QUIC, or any encrypted transport) can still tell the sender
which of them it saw.  Each packet carries a 32-bit identifier that looks random (Sidekick takes bits of the
encrypted payload; our user-space TCP hashes its own segments).  The relay keeps, per flow, a *quACK*: how
many identifiers it saw, the last one, and the first ``threshold`` power sums of them modulo a prime,

    S_k = sum(x ** k for x in seen) mod p,     k = 1 .. threshold.

The sender keeps the same sums over what it sent.  The difference of the two is the power sums of the
multiset of packets the relay did not see; if there are at most ``threshold`` of them, Newton's identities
turn those sums into the coefficients of the monic polynomial whose roots they are, and the sender finds
them by evaluating that polynomial at each identifier of its log (no root finding is needed: the candidates
are known).  State is a fixed ``threshold + 2`` numbers per flow however many packets pass.

What is here: the arithmetic (:class:`PowerSumQuack`, :func:`coefficients`, :func:`decode`), the wire form
of a quACK with every field checked (:func:`parse_quack`), and the sender's half (:class:`QuackSender`):
its bounded log, what a quACK from the relay says was lost, and counters for every quACK it could not use.
"""
from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Sequence

#: The largest prime below 2**32 (identifiers are 32-bit).  The five identifiers at or above it alias
#: the five below 5: one more way two packets collide, as two equal identifiers do.
MODULUS = 4_294_967_291
ID_MOD = 1 << 32
#: A quACK claiming more power sums than this is refused (its size is the relay's memory per flow, and a
#: forged one must not make the sender do unbounded work).
MAX_THRESHOLD = 64


class QuackError(ValueError):
    """A quACK that cannot be used: malformed, of another threshold, or not decodable."""


def power_sums(ids: Iterable[int], threshold: int) -> list[int]:
    """``[S_1, ..., S_threshold]`` of ``ids`` modulo :data:`MODULUS` (the definition, for tests and logs)."""
    sums = [0] * threshold
    for x in ids:
        _accumulate(sums, x % MODULUS, 1)
    return sums


def _accumulate(sums: list[int], x: int, sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) ``x``'s powers ``x, x**2, ...`` to ``sums``."""
    power = 1
    for k in range(len(sums)):
        power = power * x % MODULUS
        sums[k] = (sums[k] + sign * power) % MODULUS


@dataclass(slots=True)
class PowerSumQuack:
    """The quACK of a set of identifiers: ``count`` (mod 2**32, as on the wire), ``last`` (the most recent
    identifier inserted, None before the first) and ``sums`` (``S_1 .. S_threshold`` mod :data:`MODULUS`)."""

    threshold: int
    sums: list[int] = field(default_factory=list)
    count: int = 0
    last: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.threshold <= MAX_THRESHOLD:
            raise QuackError(f"threshold {self.threshold} outside 1..{MAX_THRESHOLD}")
        if not self.sums:
            self.sums = [0] * self.threshold
        if len(self.sums) != self.threshold:
            raise QuackError(f"{len(self.sums)} power sums for threshold {self.threshold}")

    def insert(self, ident: int) -> None:
        """The relay saw (or the sender sent) the packet ``ident``."""
        _check_id(ident)
        _accumulate(self.sums, ident % MODULUS, 1)
        self.count = (self.count + 1) % ID_MOD
        self.last = ident

    def remove(self, ident: int) -> None:
        """Take ``ident`` out again (the sender, for a packet it no longer expects the relay to see)."""
        _check_id(ident)
        _accumulate(self.sums, ident % MODULUS, -1)
        self.count = (self.count - 1) % ID_MOD

    def minus(self, other: PowerSumQuack) -> PowerSumQuack:
        """The quACK of the multiset difference ``self - other`` (``last`` is not defined for it: None)."""
        if other.threshold != self.threshold:
            raise QuackError(f"threshold {other.threshold} against {self.threshold}")
        sums = [(a - b) % MODULUS for a, b in zip(self.sums, other.sums)]
        return PowerSumQuack(self.threshold, sums, (self.count - other.count) % ID_MOD)

    def copy(self) -> PowerSumQuack:
        return PowerSumQuack(self.threshold, list(self.sums), self.count, self.last)


def _check_id(ident: int) -> None:
    if not 0 <= ident < ID_MOD:
        raise QuackError(f"identifier {ident} is not 32-bit")


def coefficients(sums: Sequence[int], m: int) -> list[int]:
    """The monic polynomial ``x**m + c_1 x**(m-1) + ... + c_m`` whose roots have the power sums ``sums``
    (only ``sums[:m]`` are used), as ``[1, c_1, ..., c_m]`` mod :data:`MODULUS`.

    Newton's identities give the elementary symmetric polynomials: ``k e_k = sum_{i=1..k} (-1)**(i-1)
    e_{k-i} S_i``; the coefficients are ``c_k = (-1)**k e_k``.  Dividing by ``k`` needs ``k < p``, true for
    every ``k <= MAX_THRESHOLD``."""
    if not 0 <= m <= len(sums):
        raise QuackError(f"{m} roots need {m} power sums, have {len(sums)}")
    e = [1]
    for k in range(1, m + 1):
        acc = 0
        for i in range(1, k + 1):
            term = e[k - i] * sums[i - 1]
            acc += term if i % 2 else -term
        e.append(acc % MODULUS * pow(k, -1, MODULUS) % MODULUS)
    return [c if k % 2 == 0 else (-c) % MODULUS for k, c in enumerate(e)]


def evaluate(coeffs: Sequence[int], x: int) -> int:
    """The polynomial ``coeffs`` (highest power first) at ``x``, mod :data:`MODULUS` (Horner)."""
    acc = 0
    x %= MODULUS
    for c in coeffs:
        acc = (acc * x + c) % MODULUS
    return acc


def missing_count(difference: PowerSumQuack) -> int:
    """How many identifiers the difference holds: its count read as a signed 32-bit number (a negative
    one means the relay saw more than the sender's side accounts for)."""
    c = difference.count
    return c - ID_MOD if c >= ID_MOD // 2 else c


def decode(difference: PowerSumQuack, candidates: Iterable[int]) -> list[int]:
    """The candidates that are among the identifiers of ``difference`` (the sender's quACK minus the relay's),
    in the candidates' order.  A candidate listed twice that is a root is returned twice (two packets with
    one identifier cannot be told apart).  Raises :class:`QuackError` when the difference holds more
    identifiers than its threshold can decode, or a negative number of them."""
    m = missing_count(difference)
    if m < 0:
        raise QuackError(f"the relay counts {-m} packet(s) more than the sender's log")
    if m > difference.threshold:
        raise QuackError(f"{m} packets missing, more than the threshold {difference.threshold} can decode")
    if m == 0:
        return []
    coeffs = coefficients(difference.sums, m)
    return [x for x in candidates if evaluate(coeffs, x) == 0]


# ---- the wire form: count, last, then the power sums, each a 32-bit unsigned integer, network order ----

def encode_quack(q: PowerSumQuack) -> bytes:
    """``count``, ``last`` (0 before the first packet, when ``count`` is 0 too), ``S_1 .. S_t``."""
    return struct.pack(f"!II{q.threshold}I", q.count, q.last or 0, *q.sums)


def parse_quack(data: bytes, threshold: int) -> PowerSumQuack:
    """A quACK from the wire, for a flow whose quACKs have ``threshold`` sums; :class:`QuackError` names
    what is wrong (its length, a sum not reduced mod p)."""
    want = 4 * (2 + threshold)
    if len(data) != want:
        raise QuackError(f"quACK of {len(data)} bytes, {want} expected for threshold {threshold}")
    count, last, *sums = struct.unpack(f"!II{threshold}I", data)
    for k, s in enumerate(sums, start=1):
        if s >= MODULUS:
            raise QuackError(f"power sum S_{k} = {s} is not reduced mod {MODULUS}")
    return PowerSumQuack(threshold, sums, count, last if count else None)


# ---- the sender's half ----

@dataclass(slots=True)
class QuackVerdict:
    """What one quACK told the sender: ``lost`` identifiers (in the order sent) the relay did not see
    before its ``last``; ``received`` how many of the log's packets it did see."""

    lost: list[int]
    received: int


class QuackSender:
    """The sender's side of one flow: a quACK over every identifier sent and not yet settled, and the log of
    those identifiers in the order sent (at most ``max_log``).

    A relay's quACK covers what it saw up to its ``last`` identifier.  Paths deliver in order, so the packets
    sent after ``last`` are in flight, not lost: they are taken out of the difference before decoding, and
    the packets up to ``last`` that are roots are lost.  Those are settled: they leave the log, the received
    ones because the relay saw them, the lost ones also leave the sender's sums (they will never reach the
    relay: a retransmission is a new packet with a new identifier).  A quACK that cannot be used changes
    nothing and is counted in ``stats``: ``unknown_last`` (its last identifier is not in the log: forged,
    stale, or from before a log overflow), ``undecodable`` (more missing than the threshold, or a negative
    count), ``inconsistent`` (fewer roots in the log than missing packets: a forged or corrupt quACK, or a
    packet the log dropped).  ``log_overflow`` counts identifiers dropped from a full log; after one, quACKs
    that span it cannot be decoded until both sides reset (:meth:`reset`)."""

    def __init__(self, threshold: int, max_log: int = 4096) -> None:
        if max_log < 1:
            raise QuackError(f"max_log {max_log} must be at least 1")
        self.threshold = threshold
        self.max_log = max_log
        self.quack = PowerSumQuack(threshold)     # sums over the log's identifiers and those settled as seen
        self.log: deque[int] = deque()
        self.stats = {"sent": 0, "quacks": 0, "lost": 0, "unknown_last": 0, "undecodable": 0,
                      "inconsistent": 0, "log_overflow": 0}

    def sent(self, ident: int) -> None:
        """The sender put the packet ``ident`` on the path."""
        if len(self.log) >= self.max_log:
            self.log.popleft()
            self.stats["log_overflow"] += 1
        self.quack.insert(ident)
        self.log.append(ident)
        self.stats["sent"] += 1

    def on_quack(self, relay: PowerSumQuack) -> QuackVerdict | None:
        """Settle what the relay's cumulative quACK ``relay`` covers; None (and a counter) if it cannot be
        used."""
        self.stats["quacks"] += 1
        if relay.threshold != self.threshold:
            raise QuackError(f"quACK of threshold {relay.threshold}, this flow's is {self.threshold}")
        if relay.last is None:
            return QuackVerdict([], 0)
        try:   # its first occurrence: if two logged packets share the identifier, the other one may be in
            upto = self.log.index(relay.last)   # flight; the later guess would call it lost, this one skips
        except ValueError:                      # the quACK as inconsistent at worst
            self.stats["unknown_last"] += 1
            return None
        prefix = list(self.log)[:upto + 1]
        # the sender's sums over what it sent up to ``last`` (the in-flight tail taken out) minus the relay's
        difference = self.quack.copy()
        for ident in list(self.log)[upto + 1:]:
            difference.remove(ident)
        difference = difference.minus(relay)
        try:
            lost = decode(difference, prefix)
        except QuackError:
            self.stats["undecodable"] += 1
            return None
        if len(lost) < missing_count(difference):
            self.stats["inconsistent"] += 1
            return None
        for ident in lost:
            self.quack.remove(ident)
        for _ in prefix:
            self.log.popleft()
        self.stats["lost"] += len(lost)
        return QuackVerdict(lost, len(prefix) - len(lost))

    def reset(self) -> None:
        """Start over, with the relay's quACK for the flow reset too (after an overflow or a run of unusable
        quACKs): the log and the sums are empty."""
        self.quack = PowerSumQuack(self.threshold)
        self.log.clear()


# ---- the relay's half ----

class QuackRelay:
    """The relay's side: one cumulative :class:`PowerSumQuack` per flow it forwards, at most ``max_flows``
    of them (the least recently heard one makes room for a new flow, counted in ``evicted``), and when to
    send one: after every ``every_packets`` packets of the flow, or once ``every_s`` seconds have passed since
    the flow's last quACK (whichever comes first; None turns that trigger off).  A flow is whatever key the
    data plane gives (its 5-tuple, or the QUIC connection ID it can see)."""

    def __init__(self, threshold: int, every_packets: int | None = 2, every_s: float | None = None,
                 max_flows: int = 256) -> None:
        if every_packets is None and every_s is None:
            raise QuackError("a relay needs every_packets or every_s: else it never sends a quACK")
        if every_packets is not None and every_packets < 1:
            raise QuackError(f"every_packets {every_packets} must be at least 1")
        if every_s is not None and not every_s > 0:
            raise QuackError(f"every_s {every_s} must be positive")
        if max_flows < 1:
            raise QuackError(f"max_flows {max_flows} must be at least 1")
        PowerSumQuack(threshold)   # checks the threshold
        self.threshold, self.every_packets, self.every_s, self.max_flows = threshold, every_packets, every_s, max_flows
        self._flows: dict[object, _RelayFlow] = {}   # insertion order = least recently heard first
        self.stats = {"packets": 0, "quacks": 0, "flows": 0, "evicted": 0, "resets": 0}

    def on_packet(self, flow: object, ident: int, now: float) -> bytes | None:
        """The relay forwarded the packet ``ident`` of ``flow`` at ``now``; the quACK to send to the flow's
        sender, encoded, when one is due."""
        st = self._flows.pop(flow, None)
        if st is None:
            if len(self._flows) >= self.max_flows:
                del self._flows[next(iter(self._flows))]
                self.stats["evicted"] += 1
            st = _RelayFlow(PowerSumQuack(self.threshold), since=now)
            self.stats["flows"] += 1
        self._flows[flow] = st
        st.quack.insert(ident)
        st.unsent += 1
        self.stats["packets"] += 1
        due = (self.every_packets is not None and st.unsent >= self.every_packets) or \
              (self.every_s is not None and now - st.since >= self.every_s)
        if not due:
            return None
        st.unsent, st.since = 0, now
        self.stats["quacks"] += 1
        return encode_quack(st.quack)

    def reset(self, flow: object) -> None:
        """The flow's sender asked to start over (:meth:`QuackSender.reset`): its quACK is dropped."""
        if self._flows.pop(flow, None) is not None:
            self.stats["resets"] += 1

    def __len__(self) -> int:
        return len(self._flows)


@dataclass(slots=True)
class _RelayFlow:
    quack: PowerSumQuack
    since: float           # when its last quACK went out (or the flow was first heard)
    unsent: int = 0        # packets since then
