"""A shared 802.11 medium (DCF) as a core without I/O: frames in, deliveries and drops out, time in ns.

The PHY it spends (timing, airtime, rate sets) is routing.medium.phy; this module is the MAC.

The rules, each in one place, named as IEEE Std 802.11-2020 names them:

* airtime (:meth:`Phy.data_ns`, :meth:`Phy.ack_ns`, :meth:`Phy.exchange_ns`): PLCP preamble + header,
  then the MPDU (MAC header + FCS + LLC/SNAP + the packet) at the PHY rate; SIFS; the ACK frame
  (14 octets, 9.3.1.3) at the basic rate (``airtime == "txtime"``: per frame and rate, below);
* DIFS = aSIFSTime + 2 x aSlotTime (10.3.2.3.5);
* backoff (10.3.3, :meth:`Medium._draw_backoff`): a random number of slots in [0, CW]; CW starts at
  aCWmin and becomes 2 x (CW + 1) - 1 after each failed attempt, at most aCWmax; back to aCWmin after
  a success or a drop;
* countdown (10.3.4.3, :meth:`Medium._contend`, :meth:`Medium._freeze`): a station counts its slots
  down only after the medium has been idle for DIFS, and freezes the count while the medium is busy;
* carrier sense (10.3.2.1, 10.3.2.4): a station senses busy while any node in its carrier-sense
  range transmits; nodes in the sender's range defer for the whole exchange (data, SIFS, ACK: the NAV
  of the Duration field, or EIFS after a frame they could not decode: the same order of time);
* reception (:meth:`Medium._overlap`): a frame is lost at its receiver when another transmission
  from a node in the receiver's interference (= carrier-sense) range overlaps it, or the receiver
  itself transmits (half duplex).  When the sender could not sense the interferer it is a hidden
  terminal; otherwise both picked the same slot.  No capture, unless ``capture`` (:class:`RangeCapture`,
  ``medium.capture_db``) gives ns-2's rule: a frame being received survives a later one capture_db weaker.
  With a ``radio`` (routing.medium.reception.SinrReception, ``medium.reception: sinr``) instead (:meth:`Medium._receive`,
  :meth:`Medium._decodes`): each frame's fate at a receiver is drawn at its end from the error model's
  success probability for its SINR, chunk by chunk, with interference from every overlapping
  transmission summed in mW; the stronger of overlapping frames can be captured; ``Topology`` then
  comes from the signals (decode above the receiver sensitivity, sense above the energy threshold);
* retries (10.3.4.4, dot11ShortRetryLimit): a unicast frame without its ACK is sent again; after
  ``retry_limit`` attempts in all the link layer drops it (reason ``mac_retry``);
* duplicate detection (10.3.2.14): a frame delivered once is not delivered again when only its ACK
  was lost;
* group-addressed frames (ETX probes here) get no ACK and are sent once (10.3.6);
* each station has an interface queue, drop-tail in packets (reason ``queue``).

With ``Phy.nav == "duration"`` (set by an RTS threshold; IEEE Std 802.11-2016 clauses) the exchange
hold above gives way to the standard's virtual carrier sense:

* RTS/CTS (:meth:`Phy.uses_rts`, 10.3.5): before a unicast frame whose MPDU is longer than
  dot11RTSThreshold; RTS 20 and CTS 14 octets at the basic rate (9.3.1.2, 9.3.1.3); the addressee
  answers after SIFS unless its NAV is set; CTSTimeout = SIFS + slot + aRxPHYStartDelay (10.3.2.7);
* NAV (:meth:`Medium._heard`, :meth:`Medium._set_nav`, 10.3.2.4): a station that decodes a frame not
  addressed to it defers until the frame's end plus its Duration field (:meth:`Phy.rts_duration_ns`,
  :meth:`Phy.cts_duration_ns`, :meth:`Phy.data_duration_ns`; 9.2.5.2);
* EIFS (:attr:`Phy.eifs_ns`, 10.3.2.3.7): after a frame a station sensed but could not decode, it
  waits EIFS = SIFS + ACK + DIFS instead of DIFS;
* retries (:meth:`Medium._done`, 10.3.4.4): RTSs without CTS against dot11ShortRetryLimit (reason
  ``rts_retry``), data frames without ACK after a CTS against dot11LongRetryLimit (``mac_retry``).

Rates (``Phy.airtime == "txtime"``, IEEE Std 802.11-2020 via routing.medium.rates and routing.medium.phy):

* airtime: each data attempt takes the PPDU duration of its MPDU at its rate (:func:`routing.medium.rates.txtime_ns`:
  DSSS/HR-DSSS 15-16, OFDM 17, ERP-OFDM 18, HT mixed format 19.4.3); its Ack, and an RTS and CTS before
  it, the duration of 14 / 20 octets at the control response rate of that rate (10.6.6.5); the
  Duration fields (NAV) and the exchange hold from the same calls; EIFS's AckTxTime at the lowest basic
  rate (10.3.2.3.7); group-addressed frames at the lowest basic rate (mac80211's rate_control_send_low);
* rate control (:meth:`Medium.controller`): one controller per (station, receiver), ``fixed``
  (routing.medium.rate_control.minstrel.FixedRate) or ``minstrel`` (routing.medium.rate_control.minstrel.Minstrel, seeded from the medium's seed
  and the link's names); at a frame's first attempt it gives the retry chain [(rate, tries), ...], cut
  to the retry limit that applies (dot11ShortRetryLimit, or dot11LongRetryLimit with RTS/CTS; 10.3.4.4);
  data attempt k goes at the rate of the stage k falls in; the frame is dropped (``mac_retry``) when the
  chain is spent; when it ends, ``report()`` once per stage it used (:meth:`Medium._report_rates`); RTSs
  without a CTS are not reported (they go at a basic rate);
* reception: :meth:`Medium.frame_error` is the probability that a data frame no other transmission
  corrupted is lost at its rate: 0 for reception by range (every rate succeeds alike, so Minstrel climbs
  to the top rate); the hook an error model per rate fills; :attr:`Medium.radio_loss` beside it, a YAML loss
  model that stands for radio errors (``layer: radio``, experiments/radio_loss.py), drawn per attempt the same way;
* stats: data attempts and acknowledged ones per rate (``StationStats.rate_attempts``, ``rate_acks``).

Simplifications, stated: a station draws a backoff before every frame (no immediate access after an
idle DIFS); a failed exchange keeps the sender as long as a successful one (ACKTimeout ~ SIFS + ACK);
propagation delay is zero; with ``airtime == "simple"`` (b and g at a fixed rate, the default) OFDM
symbol padding and the signal extension are not modelled (airtime = preamble + bits / rate;
``txtime`` has them); no A-MPDU (one MPDU per channel access); no capture with range
reception unless ``capture_db`` gives ns-2's rule; a NAV set by an RTS is not reset when no data follows.
Times are integer nanoseconds, so the arithmetic is exact and runs repeat.
"""
from __future__ import annotations

import heapq
import math
import random
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from routing.medium.error_model import Mode
from routing.medium.phy import (CTS_BYTES, MAC_OVERHEAD_BYTES, RATE_CONTROLS, RTS_BYTES, MediumError, Phy,
                                error_mode)
from routing.medium.rate_control.minstrel import Chain, FixedRate, Minstrel, fit_retry_limit
from routing.medium.rates import Rate
from routing.medium.reception import SinrReception

__all__ = ["Topology", "RangeCapture", "Frame", "Delivered", "Dropped", "StationStats", "Medium",
           "RateController", "chain_stages", "chain_rate"]



@dataclass(frozen=True)
class RangeCapture:
    """ns-2's capture on reception by range (``medium.capture_db``): ns-2's MAC (mac-802_11.cc,
    ``Mac802_11::recv``; ns-default.tcl ``Phy/WirelessPhy set CPThresh_ 10.0``) keeps the frame it is receiving
    when a frame that arrives during it is at least CPThresh weaker, and otherwise loses both; a frame that
    arrives while another is being received is never kept, whatever its strength (the MAC stays on the first).
    Signals from distances under d^-``exponent`` (ns-2's TwoRayGround beyond its crossover: 4)."""

    positions: dict[str, tuple[float, float]]
    capture_db: float
    exponent: float = 4.0

    def keeps(self, victim: "_Tx", interferer: "_Tx", rx: str) -> bool:
        """Does ``rx``, receiving ``victim``, keep it against ``interferer``: ``victim`` began first (not in the
        same slot), ``rx`` sends neither, and the interferer is ``capture_db`` weaker at ``rx``."""
        if rx in (interferer.src, victim.src) or not victim.start < interferer.start:
            return False
        d_signal = math.dist(self.positions[victim.src], self.positions[rx])
        d_interferer = math.dist(self.positions[interferer.src], self.positions[rx])
        return 10 * self.exponent * math.log10(d_interferer / d_signal) >= self.capture_db


@dataclass(frozen=True)
class Topology:
    """Who hears whom.  ``hears[n]``: the nodes whose frames n decodes (communication range);
    ``senses[n]``: the nodes n senses as busy and that interfere at n (carrier-sense range, a superset)."""

    hears: dict[str, frozenset[str]]
    senses: dict[str, frozenset[str]]

    @classmethod
    def from_positions(cls, positions: dict[str, tuple[float, float]], range_m: float, cs_range_m: float) -> "Topology":
        def within(a: str, r: float) -> frozenset[str]:
            ax, ay = positions[a]
            return frozenset(b for b, (bx, by) in positions.items() if b != a and math.hypot(bx - ax, by - ay) <= r)
        return cls({n: within(n, range_m) for n in positions},
                   {n: within(n, max(range_m, cs_range_m)) for n in positions})

    @classmethod
    def from_graph(cls, hears: dict[str, Iterable[str]], senses: dict[str, Iterable[str]] | None = None) -> "Topology":
        """An explicit graph; ``senses`` defaults to ``hears`` and always includes it (one who decodes also senses)."""
        h = {n: frozenset(v) for n, v in hears.items()}
        s = {n: frozenset(senses.get(n, ())) | h[n] if senses else h[n] for n in h}
        return cls(h, s)


@dataclass(slots=True, eq=False)
class Frame:
    """One MPDU: ``payload`` is the driver's packet, opaque here; ``acked`` False for group-addressed frames."""

    src: str
    dst: str
    payload: Any
    nbytes: int
    acked: bool = True
    attempts: int = 0
    collisions: int = 0      # attempts lost at the receiver
    delivered: bool = False
    short_retries: int = 0   # SRC of a frame sent with RTS/CTS: RTSs without their CTS (10.3.4.4)
    long_retries: int = 0    # LRC of a frame sent with RTS/CTS: data frames without their ACK
    data_attempts: int = 0   # data frames sent (attempts less the RTSs that got no CTS)
    airtime_ns: int = 0      # the airtime its exchanges held (as StationStats.airtime_ns)
    rate: Rate | None = None   # airtime txtime: the rate of its current (or last) attempt
    chain: Chain | None = None   # airtime txtime, unicast: the retry chain [(rate, tries)] its controller gave


def chain_stages(chain: Chain, attempts: int) -> list[tuple[Rate, int]]:
    """The stages of ``chain`` that ``attempts`` data attempts used, in order: [(rate, attempts at it)]."""
    out = []
    for rate, tries in chain:
        if attempts <= 0:
            break
        used = min(tries, attempts)
        out.append((rate, used))
        attempts -= used
    return out


def chain_rate(chain: Chain, attempt: int) -> Rate:
    """The rate of data attempt number ``attempt`` (1, 2, ...): that of the stage it falls in."""
    for rate, tries in chain:
        if attempt <= tries:
            return rate
        attempt -= tries
    return chain[-1][0]


@dataclass(slots=True)
class Delivered:
    at_ns: int
    frame: Frame


@dataclass(slots=True)
class Dropped:
    at_ns: int
    frame: Frame
    reason: str   # "queue" (interface queue full) | "mac_retry" (retry limit reached) | "rts_retry" (RTS retry limit)


Output = Delivered | Dropped


@dataclass(slots=True)
class StationStats:
    """Counters of one station, logged at the end of a run (docs/MEDIUM.md)."""

    frames: int = 0          # frames that left the queue (sent or dropped by the link layer)
    attempts: int = 0        # transmissions, retries included
    retries: int = 0         # attempts after the first
    collisions: int = 0      # attempts whose data frame was corrupted at the receiver
    hidden: int = 0          # ... of which by a node this station could not sense
    ack_lost: int = 0        # data received but the ACK was corrupted
    mac_drops: int = 0       # frames dropped after retry_limit attempts
    queue_drops: int = 0     # frames refused by the full interface queue
    airtime_ns: int = 0      # time this station's exchanges held the medium (data + SIFS + ACK per attempt)
    rts: int = 0             # RTS frames sent (rts_threshold)
    rts_failed: int = 0      # ... answered by no CTS that this station decoded
    rts_drops: int = 0       # frames dropped after dot11ShortRetryLimit RTSs without CTS (reason rts_retry)
    faded: int = 0           # reception sinr: collisions with no overlapping transmission (noise and path loss alone)
    errors: int = 0          # attempts whose data frame Medium.frame_error lost (not collisions, not faded)
    rate_attempts: dict[str, int] = field(default_factory=dict)   # data attempts per rate (Phy.rate_name)
    rate_acks: dict[str, int] = field(default_factory=dict)       # ... of which acknowledged


@dataclass(slots=True, eq=False)
class _Tx:
    """One radiated frame (data or ACK) while it is in the air."""

    src: str
    dst: str
    start: int
    end: int
    frame: Frame
    corrupted: bool = False
    hidden: bool = False
    faded: bool = False     # reception sinr: corrupted with nothing else on the air (noise and path loss)
    kind: str = "data"      # data | ack | rts | cts
    nav_ns: int = 0         # its Duration field: the NAV it sets at the stations that decode it (nav "duration")
    garbled: set[str] = field(default_factory=set)   # nav "duration": the stations where it cannot be decoded
    # reception sinr: (sender, start, end) of the transmissions that were on the air with it (not the _Tx
    # themselves: a chain of references would keep every frame of a busy medium alive)
    overlaps: list[tuple[str, int, int]] | None = None


@dataclass(slots=True, eq=False)
class _Station:
    name: str
    queue: deque[Frame] = field(default_factory=deque)
    cw: int = 0
    backoff: int | None = None      # slots left for the head frame (None: not drawn yet)
    count_from: int | None = None   # when the countdown (after DIFS) began; None: frozen or not contending
    attempt_at: int = 0
    token: int = 0                  # invalidates a scheduled attempt after a freeze
    busy: int = 0                   # transmissions in progress that this station senses
    idle_since: int = 0
    in_exchange: bool = False       # its own exchange is in progress
    nav_until: int = 0              # nav "duration": the NAV (virtual carrier sense) runs until then (10.3.2.4)
    eifs: bool = False              # nav "duration": the last frame it sensed could not be decoded (10.3.2.3.7)
    responding: int = 0             # nav "duration": its own CTS or ACK is on the air
    stats: StationStats = field(default_factory=StationStats)


class RateController(Protocol):
    """What the medium asks of a link's rate control (routing.medium.rate_control.minstrel: FixedRate, Minstrel)."""

    def choose(self, now_ns: int) -> Chain: ...
    def report(self, now_ns: int, rate: Rate, attempts: int, success: int) -> None: ...


class Medium:
    """The DCF medium of one run.  ``send`` a frame; ``advance(t)`` at each ``next_timer()``; outputs come back.

    ``rate_control`` (``fixed`` | ``minstrel``, airtime txtime only for minstrel) gives each (station,
    receiver) its own controller, seeded from ``seed`` and the link's names (:meth:`controller`)."""

    def __init__(self, phy: Phy, topology: Topology, queue_packets: int, rng: random.Random,
                 radio: SinrReception | None = None, rate_control: str = "fixed", seed: int = 0,
                 capture: RangeCapture | None = None) -> None:
        if capture is not None and radio is not None:
            raise MediumError("capture_db: ns-2's capture rule is for reception range; reception sinr captures by SINR")
        #: reception range: ns-2's capture rule (RangeCapture); None: any overlap sensed at the receiver loses a frame
        self.capture = capture
        if rate_control not in RATE_CONTROLS:
            raise MediumError(f"rate_control: expected one of {', '.join(RATE_CONTROLS)}, got {rate_control!r}")
        if rate_control != "fixed" and not phy.txtime:
            raise MediumError(f"rate_control {rate_control}: chooses among the standard's rates, which need "
                              "airtime txtime (the simple airtime has one rate)")
        self.rate_control = rate_control
        self.seed = seed
        self._controllers: dict[tuple[str, str], RateController] = {}   # at most one per pair of nodes
        # the error model's draws (frame_error > 0 only): their own generator, so that range reception
        # draws nothing and keeps every backoff of today's runs
        self._error_rng = random.Random(seed * 1_000_003 + 17)
        #: loss that stands for radio errors (``layer: radio``, experiments/radio_loss.py):
        #: ``radio_loss(src, dst, now_ns, packet_bytes)`` True loses that data attempt, as a frame error
        #: (retried up to the retry limit); None: none (nothing drawn)
        self.radio_loss: Callable[[str, str, int, int], bool] | None = None
        self.phy = phy
        self.topo = topology
        self.queue_packets = queue_packets
        self.rng = rng
        # reception sinr (routing.medium.reception): a frame's fate at each receiver by its SINR; None: range
        # (within hears, lost to any overlapping transmission sensed at the receiver)
        self.radio = radio
        self.stations = {n: _Station(n, cw=phy.cw_min) for n in topology.hears}
        # who senses a sender (the graph may be asymmetric): n senses src when src is in senses[n].
        # Sorted tuples: the order of freezes and resumes decides equal-time events, and a set's order
        # of strings changes with PYTHONHASHSEED from process to process.
        self._sensed_by = {src: tuple(sorted(n for n in topology.senses if src in topology.senses[n]))
                           for src in topology.hears}
        self._sensing = {src: tuple(self.stations[n] for n in names) for src, names in self._sensed_by.items()}
        self._nav = phy.nav == "duration"
        self._air: list[_Tx] = []   # frames in the air: at most one per station
        self._heap: list[tuple[int, int, str, Any]] = []
        self._order = 0
        self._out: list[Output] = []

    # ---- driver interface -------------------------------------------------
    def send(self, now: int, frame: Frame) -> list[Output]:
        """Queue ``frame`` at its sender; a full interface queue drops it (drop-tail)."""
        st = self.stations[frame.src]
        if len(st.queue) >= self.queue_packets:
            st.stats.queue_drops += 1
            return [Dropped(now, frame, "queue")]
        st.queue.append(frame)
        if len(st.queue) == 1 and not st.in_exchange:
            self._next_frame(st, now)
        return []

    def next_timer(self) -> int | None:
        heap = self._heap
        # an attempt frozen since it was scheduled does nothing (_on_attempt): drop it here rather than
        # have the driver wake for it (a token only grows, so a stale attempt stays stale)
        while heap and heap[0][2] == "attempt" and heap[0][3][1] != heap[0][3][0].token:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def advance(self, now: int) -> list[Output]:
        """Run every medium event due at or before ``now``; the deliveries and drops they made."""
        heap = self._heap
        while heap and heap[0][0] <= now:
            t, _, kind, arg = heapq.heappop(heap)
            getattr(self, "_on_" + kind)(t, arg)
        out, self._out = self._out, []
        return out

    @property
    def events(self) -> int:
        """Medium events run so far (scheduled and popped)."""
        return self._order - len(self._heap)

    def queued(self, node: str) -> int:
        return len(self.stations[node].queue)

    # ---- rates (issue 24, item 3; docs/MEDIUM.md "Rates and rate control") ----------------------------
    def controller(self, src: str, dst: str) -> RateController:
        """The rate control of the link ``src`` -> ``dst`` (airtime txtime): made at its first frame."""
        key = (src, dst)
        c = self._controllers.get(key)
        if c is None:
            phy = self.phy
            if self.rate_control == "minstrel":
                # seeded per link from the medium's seed (crc32: stable across processes, unlike hash())
                seed = self.seed * 2**32 + zlib.crc32(f"{src}>{dst}".encode())
                c = Minstrel(phy.rates, phy.timing(), phy.basic_rates, seed=seed, retry_limit=phy.retry_limit)
            else:
                c = FixedRate(phy.rate, phy.retry_limit)  # type: ignore[arg-type]
            self._controllers[key] = c
        return c

    def frame_error(self, src: str, dst: str, rate: Rate | None, psdu_bytes: int) -> float:
        """The probability that ``dst`` loses a data frame of ``psdu_bytes`` from ``src`` sent at ``rate``
        (None: simple airtime) that no other transmission corrupted.  Reception by range: 0, and nothing is
        drawn.  The hook for an error model per rate (SINR reception; tests inject per-rate loss here)."""
        return 0.0

    def _lost_to_error(self, tx: _Tx) -> bool:
        """Is the data attempt ``tx``, which no other transmission corrupted, lost to a frame error: the error
        model's (:meth:`frame_error`) or a loss model's that stands for radio errors (:attr:`radio_loss`)?
        Both are drawn, so that neither's stream depends on the other."""
        f = tx.frame
        radio = self.radio_loss is not None and self.radio_loss(tx.src, tx.dst, tx.end, f.nbytes)
        p = self.frame_error(tx.src, tx.dst, f.rate, f.nbytes + MAC_OVERHEAD_BYTES)
        return (p > 0 and self._error_rng.random() < p) or radio

    def _choose_rate(self, frame: Frame, now: int) -> None:
        """airtime txtime: the rate of the attempt about to start.  A unicast frame asks its link's controller
        for the retry chain at its first attempt, cut to the retry limit that applies to it (dot11LongRetryLimit
        with RTS/CTS, else dot11ShortRetryLimit: 10.3.4.4); data attempt k uses the stage k falls in.  Group
        frames go at the lowest basic rate."""
        phy = self.phy
        if not phy.txtime:
            return
        if not frame.acked:
            frame.rate = phy.group_rate
            return
        if frame.chain is None:
            limit = phy.long_retry_limit if phy.uses_rts(frame.nbytes) else phy.retry_limit
            frame.chain = fit_retry_limit(self.controller(frame.src, frame.dst).choose(now), limit)
        frame.rate = chain_rate(frame.chain, frame.data_attempts + 1)

    def _data_sent(self, st: _Station, frame: Frame, hold: int) -> None:
        """Book one data attempt: its airtime, its rate."""
        frame.data_attempts += 1
        frame.airtime_ns += hold
        st.stats.airtime_ns += hold
        name = self.phy.rate_name(frame.rate)
        st.stats.rate_attempts[name] = st.stats.rate_attempts.get(name, 0) + 1

    def _report_rates(self, st: _Station, frame: Frame, now: int, success: bool) -> None:
        """The frame's end: its rate counts, and (txtime, unicast) one report per chain stage it used, the
        success on the last (routing.medium.rate_control.minstrel's API)."""
        if success and frame.acked:
            name = self.phy.rate_name(frame.rate)
            st.stats.rate_acks[name] = st.stats.rate_acks.get(name, 0) + 1
        if frame.chain is None:
            return
        stages = chain_stages(frame.chain, frame.data_attempts)
        ctl = self.controller(frame.src, frame.dst)
        for i, (rate, used) in enumerate(stages):
            ctl.report(now, rate, used, int(success and i == len(stages) - 1))

    # ---- events -----------------------------------------------------------
    def _at(self, t: int, kind: str, arg: Any) -> None:
        self._order += 1
        heapq.heappush(self._heap, (t, self._order, kind, arg))

    def _on_attempt(self, t: int, arg: tuple[_Station, int]) -> None:
        st, token = arg
        if token != st.token:
            return  # frozen since it was scheduled
        st.count_from = None
        if st.responding:   # nav "duration": its own CTS or ACK started in this very slot: count again after it
            st.backoff = 0
            return
        st.backoff = None
        self._transmit(st, t)

    def _on_data_end(self, t: int, tx: _Tx) -> None:
        self._air.remove(tx)
        if self.radio is not None:
            self._receive(tx)
        if self._nav:
            self._heard(tx, t)
            self._unbusy(tx.src, t)
        frame = tx.frame
        ok = not tx.corrupted
        errored = ok and self._lost_to_error(tx)   # no collision, but the error model lost it
        ok = ok and not errored
        if ok and not frame.delivered:
            frame.delivered = True   # duplicate detection (10.3.2.14): once only
            self._out.append(Delivered(t, frame))
        sender = self.stations[tx.src]
        frame.collisions += int(not ok)
        if not frame.acked:
            self._done(sender, t, success=True)
            return
        if ok:
            self._at(t + self.phy.sifs_ns, "ack_start", tx)
        else:
            if errored:
                sender.stats.errors += 1
            else:
                sender.stats.collisions += 1
                sender.stats.hidden += int(tx.hidden)
                sender.stats.faded += int(tx.faded)
            self._at(t + self.phy.sifs_ns + self.phy.ack_ns(frame.rate), "ack_timeout", sender)

    def _on_ack_start(self, t: int, data: _Tx) -> None:
        ack = _Tx(data.dst, data.src, t, t + self.phy.ack_ns(data.frame.rate), data.frame, kind="ack")
        self._radiate(ack, t)
        self._at(ack.end, "ack_end", ack)

    def _on_ack_end(self, t: int, ack: _Tx) -> None:
        self._air.remove(ack)
        if self.radio is not None:
            self._receive(ack)
        if self._nav:
            self._heard(ack, t)
            self._responded(ack, t)
        self._unbusy(ack.src, t)
        sender = self.stations[ack.dst]
        if ack.corrupted:
            sender.stats.ack_lost += 1
        self._done(sender, t, success=not ack.corrupted)

    def _on_ack_timeout(self, t: int, sender: _Station) -> None:
        self._done(sender, t, success=False)

    def _on_busy_end(self, t: int, src: str) -> None:
        self._unbusy(src, t)

    # ---- RTS/CTS (nav "duration" only; IEEE 802.11-2016 10.3.2.7, 10.3.5) ----------------------------
    def _on_rts_end(self, t: int, rts: _Tx) -> None:
        """The addressee answers an RTS it decoded with a CTS after SIFS, unless its NAV says the medium
        is busy (10.3.2.7); otherwise the sender gives up after CTSTimeout."""
        self._air.remove(rts)
        if self.radio is not None:
            self._receive(rts)
        self._heard(rts, t)
        self._unbusy(rts.src, t)
        if not rts.corrupted and self.stations[rts.dst].nav_until <= t:
            self._at(t + self.phy.sifs_ns, "cts_start", rts)
        else:
            self._at(t + self.phy.cts_timeout_ns, "cts_timeout", self.stations[rts.src])

    def _on_cts_start(self, t: int, rts: _Tx) -> None:
        f = rts.frame
        cts = _Tx(rts.dst, rts.src, t, t + self.phy.control_ns(CTS_BYTES, f.rate), f, kind="cts",
                  nav_ns=self.phy.cts_duration_ns(f.nbytes, f.rate))
        self._radiate(cts, t)
        self._at(cts.end, "cts_end", cts)

    def _on_cts_end(self, t: int, cts: _Tx) -> None:
        """A CTS the sender decoded: its SRC is reset and the data frame follows after SIFS (10.3.4.4)."""
        self._air.remove(cts)
        if self.radio is not None:
            self._receive(cts)
        self._heard(cts, t)
        self._responded(cts, t)
        self._unbusy(cts.src, t)
        sender = self.stations[cts.dst]
        if cts.corrupted:
            self._rts_failed(sender, t)
        else:
            cts.frame.short_retries = 0
            self._at(t + self.phy.sifs_ns, "data_start", sender)

    def _on_cts_timeout(self, t: int, sender: _Station) -> None:
        self._rts_failed(sender, t)

    def _on_data_start(self, t: int, st: _Station) -> None:
        self._send_data(st, st.queue[0], t)

    def _on_nav_end(self, t: int, arg: tuple[_Station, int]) -> None:
        st, until = arg
        if st.nav_until == until:   # else extended since: a later nav_end ends it
            self._idle(st, t)

    def _heard(self, tx: _Tx, now: int) -> None:
        """``tx`` ends: each station that sensed it and decoded it (in communication range, not garbled
        there) sets its NAV from the Duration field unless it is the addressee (10.3.2.4), and goes back to
        DIFS; each that sensed it without decoding it waits EIFS instead of DIFS (10.3.2.3.7)."""
        hears = self.topo.hears
        for s in self._sensing[tx.src]:
            if self.radio is None:
                decoded = tx.src in hears[s.name] and s.name not in tx.garbled
            elif s.name == tx.dst:
                decoded = not tx.corrupted
            else:
                decoded = self._decodes(tx, s.name)
            s.eifs = not decoded
            if decoded and s.name != tx.dst and tx.nav_ns > 0:
                self._set_nav(s, now + tx.nav_ns, now)

    def _responded(self, tx: _Tx, now: int) -> None:
        """The end of a station's own CTS or ACK: it no longer keeps its own countdown frozen."""
        responder = self.stations[tx.src]
        responder.responding -= 1
        self._idle(responder, now)

    def _set_nav(self, st: _Station, until: int, now: int) -> None:
        """Virtual carrier sense: the NAV counts as one more busy transmission until ``until``; a NAV is only
        ever extended, never shortened (10.3.2.4)."""
        if until <= st.nav_until:
            return
        if st.nav_until <= now:
            self._busy(st, now)
        st.nav_until = until
        self._at(until, "nav_end", (st, until))

    def _rts_failed(self, st: _Station, now: int) -> None:
        frame = st.queue[0]
        frame.short_retries += 1
        st.stats.rts_failed += 1
        self._done(st, now, success=False, rts_failed=True)

    # ---- DCF ---------------------------------------------------------------
    def _next_frame(self, st: _Station, now: int) -> None:
        """The head of the queue contends: a fresh backoff, counted down once the medium is idle."""
        if st.queue:
            st.backoff = self._draw_backoff(st)
            self._contend(st, now)

    def _draw_backoff(self, st: _Station) -> int:
        """Backoff slots: uniform in [0, CW] (10.3.3)."""
        return self.rng.randint(0, st.cw)

    def _contend(self, st: _Station, now: int) -> None:
        """Count the backoff down from DIFS after the medium went idle (10.3.4.3); nothing while busy."""
        if st.busy or st.in_exchange or st.backoff is None or st.count_from is not None:
            return
        st.count_from = max(now, st.idle_since + (self.phy.eifs_ns if st.eifs else self.phy.difs_ns))
        st.attempt_at = st.count_from + st.backoff * self.phy.slot_ns
        st.token += 1
        self._at(st.attempt_at, "attempt", (st, st.token))

    def _freeze(self, st: _Station, now: int) -> None:
        """The medium went busy: keep the slots not yet counted.  A station whose count ends in this
        very slot transmits anyway (it cannot sense a transmission that starts in the same slot)."""
        if st.count_from is None or st.attempt_at <= now:
            return
        if now > st.count_from:
            st.backoff = st.backoff - (now - st.count_from) // self.phy.slot_ns  # type: ignore[operator]
        st.count_from = None
        st.token += 1

    def _transmit(self, st: _Station, now: int) -> None:
        frame = st.queue[0]
        frame.attempts += 1
        st.in_exchange = True
        st.stats.attempts += 1
        st.stats.retries += int(frame.attempts > 1)
        self._choose_rate(frame, now)
        if self._nav:
            if self.phy.uses_rts(frame.nbytes, frame.acked):
                self._send_rts(st, frame, now)
            else:
                self._send_data(st, frame, now)
            return
        phy = self.phy
        data_ns = phy.data_ns(frame.nbytes, frame.rate)
        hold = phy.exchange_ns(frame.nbytes, frame.rate) if frame.acked else data_ns
        self._data_sent(st, frame, hold)
        tx = _Tx(st.name, frame.dst, now, now + data_ns, frame)
        if st.name not in self.topo.hears[frame.dst]:
            tx.corrupted = True   # out of range: nobody acknowledges
        self._radiate(tx, now, hold)
        self._at(tx.end, "data_end", tx)

    def _send_rts(self, st: _Station, frame: Frame, now: int) -> None:
        phy = self.phy
        st.stats.rts += 1
        rts_ns = phy.rts_exchange_ns(frame.rate)
        st.stats.airtime_ns += rts_ns
        frame.airtime_ns += rts_ns
        rts = _Tx(st.name, frame.dst, now, now + phy.control_ns(RTS_BYTES, frame.rate), frame, kind="rts",
                  nav_ns=phy.rts_duration_ns(frame.nbytes, frame.rate))
        if st.name not in self.topo.hears[frame.dst]:
            rts.corrupted = True
        self._radiate(rts, now)
        self._at(rts.end, "rts_end", rts)

    def _send_data(self, st: _Station, frame: Frame, now: int) -> None:
        """nav "duration": the data frame holds the air only while it radiates; the stations that decode it
        defer through SIFS + ACK by its Duration field, the others by EIFS."""
        phy = self.phy
        data_ns = phy.data_ns(frame.nbytes, frame.rate)
        self._data_sent(st, frame, phy.exchange_ns(frame.nbytes, frame.rate) if frame.acked else data_ns)
        tx = _Tx(st.name, frame.dst, now, now + data_ns, frame, nav_ns=phy.data_duration_ns(frame.acked, frame.rate))
        if st.name not in self.topo.hears[frame.dst]:
            tx.corrupted = True
        self._radiate(tx, now)
        self._at(tx.end, "data_end", tx)

    def _radiate(self, tx: _Tx, now: int, hold: int | None = None) -> None:
        """``tx`` goes on the air: it and the frames already there may corrupt each other; the nodes that
        sense its sender are busy for ``hold`` ns (the exchange, for data: NAV), else while it radiates."""
        if self.radio is not None:   # reception sinr: each reception is judged at the frame's end (_receive)
            tx.overlaps = [(o.src, o.start, o.end) for o in self._air]
            for other in self._air:
                other.overlaps.append((tx.src, tx.start, tx.end))  # type: ignore[union-attr]
        else:
            for other in self._air:
                self._overlap(other, tx)
                self._overlap(tx, other)
                if self._nav:
                    self._garble(other, tx)
                    self._garble(tx, other)
        self._air.append(tx)
        # carrier sense: busy at each station that senses the sender (range: within cs_range_m; sinr: it
        # decodes the sender, or the signal there is at least cs_threshold_dbm: IEEE 802.11-2016 17.3.10.6)
        for s in self._sensing[tx.src]:
            self._busy(s, now)
        if self._nav and tx.kind in ("ack", "cts"):
            responder = self.stations[tx.src]
            responder.responding += 1
            self._busy(responder, now)
        if hold is not None:
            self._at(now + hold, "busy_end", tx.src)

    def _busy(self, s: _Station, now: int) -> None:
        s.busy += 1
        if s.count_from is not None and s.attempt_at > now:   # else _freeze has nothing to do
            self._freeze(s, now)

    def _garble(self, victim: _Tx, interferer: _Tx) -> None:
        """nav "duration": ``victim`` cannot be decoded wherever ``interferer`` is sensed (unless captured there:
        :class:`RangeCapture`), nor at its sender."""
        victim.garbled.add(interferer.src)
        capture = self.capture
        victim.garbled.update(self._sensed_by[interferer.src] if capture is None else
                              (s for s in self._sensed_by[interferer.src] if not capture.keeps(victim, interferer, s)))

    def _receive(self, tx: _Tx) -> None:
        """reception sinr, at the end of ``tx``: its addressee receives it with the probability the error model
        gives for its SINR over its length (routing.medium.reception); else it is corrupted, *hidden* if an
        overlapping sender could not be sensed by its sender, *faded* if nothing overlapped it."""
        others = [src for src, _, _ in tx.overlaps or () if src != tx.src]
        if tx.corrupted or not self._decodes(tx, tx.dst):   # corrupted already: the addressee cannot hear the sender
            tx.corrupted = True
            tx.faded = not others
            tx.hidden = any(o not in self.topo.senses[tx.src] for o in others)

    def _decodes(self, tx: _Tx, rx: str) -> bool:
        """reception sinr: one draw of whether ``rx`` decodes ``tx`` (routing.medium.reception.SinrReception); never
        when ``rx`` cannot detect its sender (under the receiver sensitivity)."""
        radio = self.radio
        assert radio is not None
        if tx.src not in self.topo.hears[rx]:
            return False
        mode = self._mode(tx)
        p = radio.success_probability(tx.src, rx, tx.start, tx.end, self.phy.preamble_ns, mode, tx.overlaps or ())
        return radio.draw(p)

    def _mode(self, tx: _Tx) -> Mode:
        """reception sinr: the error model's mode of ``tx``: airtime simple, the radio's data or control mode;
        txtime, that of the frame's rate (data) or of its control response rate (RTS, CTS, Ack)."""
        radio = self.radio
        assert radio is not None
        rate = tx.frame.rate
        if rate is None:
            return radio.data_mode if tx.kind == "data" else radio.control_mode
        return error_mode(rate if tx.kind == "data" else self.phy.response_rate(rate))

    def _overlap(self, victim: _Tx, interferer: _Tx) -> None:
        """Reception of ``victim`` fails when ``interferer`` radiates in its receiver's interference range,
        or from the receiver itself (half duplex).  Hidden: the victim's sender could not sense it."""
        rx = victim.dst
        if interferer.src == rx or interferer.src in self.topo.senses[rx]:
            if self.capture is not None and self.capture.keeps(victim, interferer, rx):
                return
            if not victim.corrupted:
                victim.corrupted = True
                victim.hidden = interferer.src != victim.src and interferer.src not in self.topo.senses[victim.src]

    def _unbusy(self, src: str, now: int) -> None:
        for s in self._sensing[src]:
            self._idle(s, now)

    def _idle(self, s: _Station, now: int) -> None:
        s.busy -= 1
        if s.busy == 0:
            s.idle_since = now
            if s.backoff is not None and not s.in_exchange and s.count_from is None:   # else _contend returns
                self._contend(s, now)

    @staticmethod
    def _chain_used_up(frame: Frame) -> bool:
        """Every try of the frame's retry chain spent (it may hold fewer than the retry limit)."""
        return frame.chain is not None and frame.data_attempts >= sum(tries for _, tries in frame.chain)

    def _done(self, st: _Station, now: int, success: bool, rts_failed: bool = False) -> None:
        """The exchange is over: next frame after a success or a drop, else the same frame again.
        Without RTS/CTS a frame has ``retry_limit`` attempts (dot11ShortRetryLimit: its MPDU is not longer
        than dot11RTSThreshold); with it, dot11ShortRetryLimit RTSs without a CTS (SRC, reset by each CTS)
        and dot11LongRetryLimit data frames without an ACK (LRC), whichever comes first (10.3.4.4)."""
        st.in_exchange = False
        st.idle_since = max(st.idle_since, now)   # DIFS again after its own exchange
        frame = st.queue[0]
        rts = self.phy.uses_rts(frame.nbytes, frame.acked)
        if rts and not success and not rts_failed:
            frame.long_retries += 1   # the data frame went (a CTS came) and its ACK did not
        if not success and frame.acked:
            if rts and frame.short_retries >= self.phy.retry_limit:
                drop = "rts_retry"
            elif (frame.long_retries >= self.phy.long_retry_limit if rts else frame.attempts >= self.phy.retry_limit) \
                    or self._chain_used_up(frame):
                drop = "mac_retry"
            else:   # the same frame again, after a longer backoff
                st.cw = self.phy.next_cw(st.cw)
                self._next_frame(st, now)
                return
            if not frame.delivered:   # else only its ACKs were lost: the receiver has it
                st.stats.mac_drops += drop == "mac_retry"
                st.stats.rts_drops += drop == "rts_retry"
                self._out.append(Dropped(now, frame, drop))
        self._report_rates(st, frame, now, success)
        st.queue.popleft()
        st.stats.frames += 1
        st.cw = self.phy.cw_min
        self._next_frame(st, now)
