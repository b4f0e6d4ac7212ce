"""Reception by signal and interference (``medium.reception: sinr``): who hears whom, and whether a frame arrives.

The signal of each sender at each receiver (:func:`signals_dbm`) comes from routing.medium.propagation (transmit
power, log-distance path loss, shadowing), or from a measured value per directed link that replaces it.
From the signals (:func:`hears_and_senses`):

* a receiver detects the preamble of, and so can decode, a sender whose signal is at least the
  receiver sensitivity ``rx_sensitivity_dbm`` (default -82 dBm: IEEE Std 802.11-2016 17.3.10.6's
  minimum sensitivity of 6 Mbit/s, and ns-3's default ThresholdPreambleDetectionModel, MinimumRssi
  -82 dBm; real radios detect weaker frames: set it lower); weaker frames are never synchronised to;
* carrier sense (IEEE Std 802.11-2016 17.3.10.6, CCA requirements): a station senses the medium busy
  while a frame it detects is on the air (its PHY is receiving it), and by energy while a transmission
  whose signal at it is at least ``cs_threshold_dbm`` is on the air (default -82 dBm, the level at which
  a valid preamble must set CCA busy; -62 dBm, 20 dB above it, is the mandatory energy-detect level).
  A threshold below the sensitivity makes a station sense, without decoding, frames it cannot detect
  (it then waits EIFS after them with ``nav: duration``); one above it adds nothing.  The threshold
  applies to each transmission's own signal, not to the sum of several: two frames each under it do
  not make the medium busy together.

A frame addressed to ``r`` (:meth:`SinrReception.success_probability`, :func:`frame_success`) is lost when
``r`` transmits during it (half duplex) or when another transmission overlapping it is at least as strong
at ``r`` (the receiver is held by the stronger frame: capture of the stronger frame whether it comes first
or second, as measured by Lee et al., "An experimental study on the capture effect in 802.11a networks",
WiNTECH 2007; a tie captures neither).  Otherwise it arrives with the probability the NIST error-rate
model (routing.medium.error_model) gives, chunk by chunk as ns-3's InterferenceHelper computes it: the frame is
cut wherever an overlapping transmission starts or ends; over each chunk the SINR is the signal over the
noise floor plus the sum, in mW, of every overlapping transmission's signal at ``r`` (whatever its
strength: interference is not limited to a range); the success probabilities of the chunks multiply.
The PHY header is a section of its own: for DSSS/CCK modes the whole long PLCP preamble and header
(192 bits at 1 Mbit/s DBPSK, clause 16); for OFDM modes the SIGNAL field, the last 4 us of the preamble
(24 bits, BPSK rate 1/2 at 6 Mbit/s, clause 17); the training symbols before it are not evaluated, as
in ns-3.  The payload (the rest of the frame) is at the frame's mode.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Iterable

from routing.medium.error_model import MODES, Mode, chunk_success_rate
from routing.medium.propagation import dbm_to_mw, log_distance_loss_db, shadowing_db
from routing.medium.signal_trace import SignalReplay

__all__ = ["SinrReception", "frame_success", "phy_sections", "signals_dbm", "hears_and_senses",
           "DSSS_HEADER_NS", "OFDM_SIGNAL_NS"]

DSSS_HEADER_NS = 192_000   # long PLCP preamble (144 bits) + header (48 bits) at 1 Mbit/s (clause 16.2.2)
OFDM_SIGNAL_NS = 4_000     # the SIGNAL field: one OFDM symbol (clause 17.3.4)


def phy_sections(mode: Mode, start: int, end: int, preamble_ns: int) -> list[tuple[int, int, Mode]]:
    """The evaluated sections of a frame [start, end) sent in ``mode`` after ``preamble_ns`` of PLCP
    preamble + header: (from, to, mode) for the header, then the payload."""
    payload_at = start + preamble_ns
    if mode.dsss:
        header = (start + max(0, preamble_ns - DSSS_HEADER_NS), payload_at, MODES["dsss-1"])
    else:
        header = (payload_at - min(preamble_ns, OFDM_SIGNAL_NS), payload_at, MODES["ofdm-6"])
    return [s for s in (header, (payload_at, end, mode)) if s[1] > s[0]]


def frame_success(mode: Mode, start: int, end: int, preamble_ns: int, signal_mw: float, noise_mw: float,
                  interferers: Iterable[tuple[int, int, float]]) -> float:
    """The probability that a frame [start, end) (ns) received at ``signal_mw`` over ``noise_mw`` arrives
    intact, given the overlapping transmissions (from, to, signal at the receiver in mW): the product of
    the chunk success rates, the frame cut at every start and end of an interferer."""
    spans = [(max(a, start), min(b, end), p) for a, b, p in interferers if min(b, end) > max(a, start)]
    success = 1.0
    for s0, s1, smode in phy_sections(mode, start, end, preamble_ns):
        cuts = sorted({s0, s1, *(t for a, b, _ in spans for t in (a, b) if s0 < t < s1)})
        for t0, t1 in zip(cuts, cuts[1:]):
            interference = math.fsum(p for a, b, p in spans if a <= t0 and b >= t1)
            sinr = signal_mw / (noise_mw + interference)
            success *= chunk_success_rate(smode, sinr, (t1 - t0) * smode.rate_mbps / 1000.0)
            if success == 0.0:
                return 0.0
    return success


def signals_dbm(positions: dict[str, tuple[float, float]], tx_power_dbm: float, reference_loss_db: float,
                exponent: float, shadowing_sigma_db: float, shadowing_seed: int,
                measured: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """``out[r][s]``: the signal of sender ``s`` at receiver ``r`` in dBm: the measured value where
    ``measured[r][s]`` gives one, else tx power - log-distance loss - shadowing of the pair."""
    out: dict[str, dict[str, float]] = {}
    for r, (rx, ry) in positions.items():
        row = {}
        for s, (sx, sy) in positions.items():
            if s == r:
                continue
            given = measured.get(r, {}).get(s)
            if given is not None:
                row[s] = float(given)
                continue
            loss = log_distance_loss_db(math.hypot(sx - rx, sy - ry), reference_loss_db, exponent)
            row[s] = tx_power_dbm - loss - shadowing_db(shadowing_seed, r, s, shadowing_sigma_db)
        out[r] = row
    return out


def hears_and_senses(signals: dict[str, dict[str, float]], rx_sensitivity_dbm: float,
                     cs_threshold_dbm: float) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """Per receiver: the senders it can decode (signal >= sensitivity) and those it senses: every one it
    decodes (its PHY is busy receiving it) and every one at least as strong as the carrier-sense threshold."""
    hears = {r: frozenset(s for s, dbm in row.items() if dbm >= rx_sensitivity_dbm) for r, row in signals.items()}
    senses = {r: hears[r] | frozenset(s for s, dbm in row.items() if dbm >= cs_threshold_dbm)
              for r, row in signals.items()}
    return hears, senses


@dataclass
class SinrReception:
    """The radio of one medium: every signal in mW, the noise floor, the modes of data and control
    frames, and the generator of the reception draws (its own: the backoff draws stay as they are)."""

    rx_mw: dict[str, dict[str, float]]   # rx_mw[receiver][sender]
    noise_mw: float
    data_mode: Mode
    control_mode: Mode
    rng: random.Random
    #: recorded signals replacing ``rx_mw`` of the links they cover, by time (routing.medium.signal_trace)
    replay: SignalReplay | None = None

    def signal_mw(self, rx: str, src: str, t_ns: int) -> float:
        """The signal of ``src`` at ``rx`` at ``t_ns``: the replayed one where a trace covers the pair."""
        if self.replay is not None:
            mw = self.replay.mw(rx, src, t_ns)
            if mw is not None:
                return mw
        return self.rx_mw[rx][src]

    @classmethod
    def from_dbm(cls, signals: dict[str, dict[str, float]], noise_dbm: float, data_mode: Mode,
                 control_mode: Mode, rng: random.Random) -> "SinrReception":
        return cls({r: {s: dbm_to_mw(v) for s, v in row.items()} for r, row in signals.items()},
                   dbm_to_mw(noise_dbm), data_mode, control_mode, rng)

    def success_probability(self, src: str, rx: str, start: int, end: int, preamble_ns: int, mode: Mode,
                            overlaps: Iterable[tuple[str, int, int]]) -> float:
        """The probability that ``rx`` receives the frame ``src`` sends over [start, end), given the other
        transmissions (sender, from, to) that overlapped it: 0 if ``rx`` itself sent one (half duplex) or
        one was at least as strong at ``rx`` (capture by the stronger frame), else :func:`frame_success`."""
        signal = self.signal_mw(rx, src, start)
        interferers = []
        for o_src, a, b in overlaps:
            if min(b, end) <= max(a, start):
                continue   # touches it only at an edge
            other = self.signal_mw(rx, o_src, start) if o_src != rx else 0.0
            if o_src == rx or other >= signal:
                return 0.0
            interferers.append((a, b, other))
        return frame_success(mode, start, end, preamble_ns, signal, self.noise_mw, interferers)

    def draw(self, p: float) -> bool:
        """True with probability ``p`` (no draw when the outcome is certain)."""
        if p >= 1.0:
            return True
        if p <= 0.0:
            return False
        return self.rng.random() < p
