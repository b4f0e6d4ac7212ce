"""A shared 802.11 medium (DCF) as a core without I/O: frames in, deliveries and drops out, time in ns.

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

Rates (issue 24, item 3; ``Phy.airtime == "txtime"``, IEEE Std 802.11-2020 via routing.medium.rates):

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
symbol padding and the signal extension are not modelled (airtime = preamble + bits / rate, as issue 11
defines it; ``txtime`` has them); no A-MPDU (one MPDU per channel access); no capture with range
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
from functools import cached_property, lru_cache
from typing import Any, Callable, Iterable, Protocol

from routing.medium.error_model import MODES, Mode
from routing.medium.rate_control.minstrel import Chain, FixedRate, Minstrel, fit_retry_limit
from routing.medium.rates import (DSSS, HR_DSSS, HT, MANDATORY_KBPS, Rate, RateError, Timing, control_response_rate,
                           dsss_rate, ht20_rate, ofdm_rate, rate_set, txtime_ns)
from routing.medium.reception import SinrReception

__all__ = ["PRESETS", "Phy", "Topology", "RangeCapture", "Frame", "Delivered", "Dropped", "StationStats", "Medium",
           "MediumError",
           "MAC_OVERHEAD_BYTES", "ACK_BYTES", "RTS_BYTES", "CTS_BYTES", "LONG_RETRY_LIMIT", "NAV_MODELS",
           "timing_problems", "AIRTIMES", "RATE_CONTROLS", "HT_STANDARDS", "default_airtime", "fixed_rate",
           "basic_rate_set", "rate_problems", "RateController", "chain_stages", "chain_rate", "error_mode"]

US = 1000  # ns per microsecond

MAC_OVERHEAD_BYTES = 24 + 4 + 8   # data MAC header (9.3.2.1), FCS, LLC/SNAP header around the IP packet
ACK_BYTES = 14                    # Ack frame: Frame Control 2, Duration 2, RA 6, FCS 4 (9.3.1.3)
RTS_BYTES = 20                    # RTS frame: Frame Control 2, Duration 2, RA 6, TA 6, FCS 4 (9.3.1.2)
CTS_BYTES = 14                    # CTS frame: Frame Control 2, Duration 2, RA 6, FCS 4 (9.3.1.3)
LONG_RETRY_LIMIT = 4              # dot11LongRetryLimit's default (annex C), as Linux's (mac80211 long retry 4)
NAV_MODELS = ("exchange", "duration")

# Timing presets.  b: HR/DSSS (clause 16), long preamble (192 us), ACK at 2 Mb/s.
# g: ERP-OFDM (clause 18) with short slot, 20 us preamble + SIGNAL, 6 us signal extension ignored, ACK at 24 Mb/s.
# a: OFDM (clause 17, 5 GHz): slot 9, SIFS 16.  n, n-sgi: HT20 mixed format in the 2.4 GHz band (clause 19):
# the ERP short slot, SIFS 10, HT-mixed preamble 36 us; data at MCS 7 (65, short GI 72.2 Mb/s), Ack at 24.
# a, n and n-sgi have only the standard's PPDU durations (airtime "txtime"); their preamble_us is only
# aRxPHYStartDelay in the CTSTimeout.
PRESETS: dict[str, dict[str, float]] = {
    "b": {"slot_us": 20, "sifs_us": 10, "preamble_us": 192, "cw_min": 31, "cw_max": 1023, "retry_limit": 7,
          "rate_mbps": 11, "basic_rate_mbps": 2},
    "g": {"slot_us": 9, "sifs_us": 10, "preamble_us": 20, "cw_min": 15, "cw_max": 1023, "retry_limit": 7,
          "rate_mbps": 54, "basic_rate_mbps": 24},
    "a": {"slot_us": 9, "sifs_us": 16, "preamble_us": 20, "cw_min": 15, "cw_max": 1023, "retry_limit": 7,
          "rate_mbps": 54, "basic_rate_mbps": 24},
    "n": {"slot_us": 9, "sifs_us": 10, "preamble_us": 36, "cw_min": 15, "cw_max": 1023, "retry_limit": 7,
          "rate_mbps": 65, "basic_rate_mbps": 24},
    "n-sgi": {"slot_us": 9, "sifs_us": 10, "preamble_us": 36, "cw_min": 15, "cw_max": 1023, "retry_limit": 7,
              "rate_mbps": 72.2, "basic_rate_mbps": 24},
}
HT_STANDARDS = ("n", "n-sgi")   # the fixed rate is an MCS (medium.mcs), not rate_mbps
# "simple": preamble + bits / rate at one rate (issue 11's airtime; b and g only, kept byte for byte);
# "txtime": the standard's PPDU durations (routing.medium.rates.txtime_ns) at each frame's rate.
AIRTIMES = ("simple", "txtime")
RATE_CONTROLS = ("fixed", "minstrel")
DEFAULT_MCS = 7


def default_airtime(standard: str, rate_control: str) -> str:
    """``simple`` for b and g at a fixed rate (today's medium, unchanged), else ``txtime``."""
    return "simple" if standard in ("b", "g") and rate_control == "fixed" else "txtime"


def fixed_rate(standard: str, rate_mbps: float | None = None, mcs: int | None = None) -> Rate:
    """The data rate of ``medium.rate_control: fixed`` with the standard's PPDU durations: ``rate_mbps`` of
    b (DSSS/HR-DSSS, long preamble), g (ERP-OFDM) or a (OFDM); ``mcs`` of n (long GI) or n-sgi (short GI).
    Default: the standard's top rate (11, 54, 54, MCS 7)."""
    if standard in HT_STANDARDS:
        if rate_mbps is not None:
            raise RateError(f"standard {standard} names its rate by mcs (0..7), not in Mb/s")
        return ht20_rate(DEFAULT_MCS if mcs is None else mcs, short_gi=standard == "n-sgi")
    if mcs is not None:
        raise RateError(f"only with standard n or n-sgi (HT); standard {standard} names its rate by rate_mbps")
    mbps = PRESETS[standard]["rate_mbps"] if rate_mbps is None else rate_mbps
    if standard == "b":
        return dsss_rate(mbps)
    if mbps != int(mbps):
        raise RateError(f"OFDM rate {mbps} Mb/s: expected one of 6, 9, 12, 18, 24, 36, 48, 54")
    return ofdm_rate(int(mbps), erp=standard == "g")


def basic_rate_set(standard: str, basic_rate_mbps: float | None = None) -> tuple[Rate, ...]:
    """The BSS basic rate set: the PHY's mandatory rates (15.1, 16.1, 17.3.5.1) up to ``basic_rate_mbps``
    (default: b 2, the others 24).  HT at 2.4 GHz answers with ERP-OFDM, a at 5 GHz with OFDM (10.6.6.5)."""
    mbps = PRESETS[standard]["basic_rate_mbps"] if basic_rate_mbps is None else basic_rate_mbps
    if standard == "b":
        mandatory = [dsss_rate(k / 1000) for k in MANDATORY_KBPS["hr-dsss"]]
    else:
        mandatory = [ofdm_rate(k // 1000, erp=standard != "a") for k in MANDATORY_KBPS["ofdm"]]
    if round(mbps * 1000) not in {r.kbps for r in mandatory}:
        raise RateError(f"basic_rate_mbps {mbps:g}: with standard {standard} expected a mandatory rate: "
                        + ", ".join(f"{r.kbps / 1000:g}" for r in mandatory))
    return tuple(r for r in mandatory if r.kbps <= round(mbps * 1000))


def rate_problems(standard: str, airtime: str, rate_control: str = "fixed", rate_mbps: float | None = None,
                  mcs: int | None = None, basic_rate_mbps: float | None = None,
                  preamble_us: float | None = None) -> list[tuple[str, str]]:
    """(setting, why) for each rate setting (``medium.*``) that does not fit the standard, the airtime
    model or the rate control; [] when the medium can be built."""
    if airtime == "simple":
        if standard not in ("b", "g"):
            return [("airtime", f"simple (preamble + bits / rate) is the b and g model only; standard {standard} "
                                "has the standard's PPDU durations: leave airtime out or set txtime")]
        if rate_control != "fixed":
            return [("airtime", f"rate_control {rate_control} chooses among the standard's rates, whose "
                                "durations are airtime txtime: leave airtime out or set txtime")]
        if mcs is not None:
            return [("mcs", f"only with standard n or n-sgi (HT); standard {standard} names its rate by rate_mbps")]
        return []
    out = []
    if preamble_us is not None:
        out.append(("preamble_us", "with airtime txtime the PHY clause gives each PPDU's preamble and header "
                                   "(routing.medium.rates); leave preamble_us out"))
    if rate_control != "fixed":
        out += [(key, f"fixes the rate of every frame; rate_control {rate_control} chooses it per frame: "
                      "leave it out, or set rate_control fixed")
                for key, v in (("rate_mbps", rate_mbps), ("mcs", mcs)) if v is not None]
    else:
        try:
            fixed_rate(standard, rate_mbps, mcs)
        except RateError as e:
            out.append(("mcs" if mcs is not None and standard not in HT_STANDARDS else "rate_mbps", str(e)))
    try:
        basic_rate_set(standard, basic_rate_mbps)
    except RateError as e:
        out.append(("basic_rate_mbps", str(e)))
    return out


def error_mode(rate: Rate) -> Mode:
    """The mode of routing.medium.error_model for ``rate``: the same modulation and coding (DSSS, CCK, OFDM and
    ERP-OFDM alike, HT MCS k).  An HT short-GI rate takes its long-GI mode: the same symbols, whose error
    rate per bit the GI does not change; the model counts the bits of a chunk at the long-GI rate, 10 %
    fewer than short GI sends, so it slightly over-states a short-GI frame's success."""
    if rate.modulation == DSSS:
        name = f"dsss-{rate.kbps // 1000}"
    elif rate.modulation == HR_DSSS:
        name = f"cck-{rate.kbps / 1000:g}"
    elif rate.modulation == HT:
        name = f"ht-mcs{rate.mcs}"
    else:
        name = f"ofdm-{rate.kbps // 1000}"
    return MODES[name]


@lru_cache(maxsize=4096)   # bounded: packet lengths x rates of one run
def _txtime(rate: Rate, length: int) -> int:
    return txtime_ns(rate, length)


@lru_cache(maxsize=256)
def _response_rate(rate: Rate, basic: tuple[Rate, ...]) -> Rate:
    return control_response_rate(rate, basic)


class MediumError(ValueError):
    """A medium that cannot be built (a node out of every range, a bad setting)."""


# The physical floor of the time settings, in us.  The shortest of any 802.11 PHY are the DMG PHY's
# (clause 20: aSlotTime 5 us, aSIFSTime 3 us); a time below 1 us is not a radio's (and below 0.5 ns it
# would round to 0 ns: a slot of 0 never counts down, and a run ends incomplete with no error).
MIN_SLOT_US = 1.0
MIN_SIFS_US = 1.0


def timing_problems(p: dict[str, float]) -> list[tuple[str, str]]:
    """(setting, why) for each resolved timing setting (PRESETS' keys) no radio can have: a slot or SIFS
    under the physical floor, aCWmin above aCWmax (10.3.3: CW grows from aCWmin up to aCWmax)."""
    out = []
    for key, floor in (("slot_us", MIN_SLOT_US), ("sifs_us", MIN_SIFS_US)):
        if not p[key] >= floor:
            out.append((key, f"expected at least {floor:g} us (no 802.11 PHY has less: DMG's aSlotTime is 5 us, "
                             f"aSIFSTime 3 us), got {p[key]}"))
    if p["cw_min"] > p["cw_max"]:
        out.append(("cw_min", f"aCWmin {p['cw_min']} exceeds aCWmax {p['cw_max']} (10.3.3: the window grows from "
                              "aCWmin to aCWmax)"))
    return out


@dataclass(frozen=True)
class Phy:
    """PHY and MAC timing of one medium (all times in ns).

    Every airtime method takes the ``rate`` of the data frame it belongs to (None: the medium's one rate).
    With ``airtime == "simple"`` the rate is ignored: preamble + bits / ``rate_bps`` (control frames at
    ``basic_rate_bps``), today's model.  With ``"txtime"`` a data frame takes the standard's PPDU duration
    at its rate (routing.medium.rates.txtime_ns) and a control frame (RTS, CTS, Ack) the same at the control
    response rate of that data rate (10.6.6.5, routing.medium.rates.control_response_rate)."""

    slot_ns: int
    sifs_ns: int
    preamble_ns: int
    cw_min: int
    cw_max: int
    retry_limit: int      # dot11ShortRetryLimit: transmission attempts of a frame in all
    rate_bps: float       # data frames
    basic_rate_bps: float  # control frames (ACK, RTS, CTS)
    # dot11RTSThreshold: frames whose MPDU is longer go with RTS/CTS; None: never (Linux's default, "off")
    rts_threshold: int | None = None
    long_retry_limit: int = LONG_RETRY_LIMIT   # dot11LongRetryLimit: data attempts of a frame sent with RTS/CTS
    # "exchange": every station that senses the sender defers for its whole exchange (data, SIFS, ACK);
    # "duration": NAV from the Duration field of each frame a station decodes (10.3.2.4), EIFS after a
    # frame it senses but cannot decode (10.3.2.3.7), physical carrier sense only while a frame is on the air
    nav: str = "exchange"
    airtime: str = "simple"        # AIRTIMES
    standard: str = ""             # txtime: b | g | a | n | n-sgi (routing.medium.rates.rate_set)
    rate: Rate | None = None       # txtime: the fixed rate (rate_control fixed)
    rates: tuple[Rate, ...] = ()   # txtime: the rates a rate controller chooses from, slowest first
    basic_rates: tuple[Rate, ...] = ()   # txtime: the BSS basic rate set (control responses, group frames)

    @classmethod
    def preset(cls, standard: str, rts_threshold: int | None = None, nav: str | None = None,
               long_retry_limit: int | None = None, airtime: str | None = None, mcs: int | None = None,
               **over: float | None) -> "Phy":
        """The timing of ``standard`` (PRESETS' keys), with any setting of PRESETS overridden (None: keep).
        ``nav`` None: ``duration`` with an RTS threshold (the CTS's NAV is what RTS/CTS is for), else
        ``exchange`` (the model's behaviour before RTS/CTS, kept as the default).  ``airtime`` None:
        :func:`default_airtime` at a fixed rate; ``mcs``: the fixed rate of n and n-sgi."""
        if standard not in PRESETS:
            raise MediumError(f"standard: expected one of {', '.join(PRESETS)}, got {standard!r}")
        airtime = airtime or default_airtime(standard, "fixed")
        if airtime not in AIRTIMES:
            raise MediumError(f"airtime: expected one of {', '.join(AIRTIMES)}, got {airtime!r}")
        p = dict(PRESETS[standard])
        p.update({k: v for k, v in over.items() if v is not None})
        problems = rate_problems(standard, airtime, "fixed", over.get("rate_mbps"), mcs, over.get("basic_rate_mbps"),
                                 over.get("preamble_us")) + timing_problems(p)
        if problems:
            raise MediumError("; ".join(f"{k}: {why}" for k, why in problems))
        rates: dict[str, Any] = {}
        if airtime == "txtime":
            rate = fixed_rate(standard, over.get("rate_mbps"), mcs)
            basic = basic_rate_set(standard, over.get("basic_rate_mbps"))
            rates = {"standard": standard, "rate": rate, "rates": rate_set(standard), "basic_rates": basic}
            p["rate_mbps"] = rate.bps / 1e6
        return cls(slot_ns=round(p["slot_us"] * US), sifs_ns=round(p["sifs_us"] * US),
                   preamble_ns=round(p["preamble_us"] * US), cw_min=int(p["cw_min"]), cw_max=int(p["cw_max"]),
                   retry_limit=int(p["retry_limit"]), rate_bps=p["rate_mbps"] * 1e6,
                   basic_rate_bps=p["basic_rate_mbps"] * 1e6, rts_threshold=rts_threshold,
                   long_retry_limit=LONG_RETRY_LIMIT if long_retry_limit is None else long_retry_limit,
                   nav=nav or ("exchange" if rts_threshold is None else "duration"), airtime=airtime, **rates)

    def __post_init__(self) -> None:
        if self.nav not in NAV_MODELS:
            raise MediumError(f"nav: expected one of {', '.join(NAV_MODELS)}, got {self.nav!r}")
        if self.rts_threshold is not None and self.nav != "duration":
            raise MediumError("rts_threshold: RTS/CTS works through the NAV its Duration fields set (10.3.2.4): "
                              "it needs nav 'duration'")
        if self.airtime not in AIRTIMES:
            raise MediumError(f"airtime: expected one of {', '.join(AIRTIMES)}, got {self.airtime!r}")
        if self.airtime == "txtime" and (self.rate is None or not self.rates or not self.basic_rates):
            raise MediumError("airtime txtime needs a rate, the rate set and the basic rate set (Phy.preset)")

    @property
    def difs_ns(self) -> int:
        """DIFS = aSIFSTime + 2 x aSlotTime (10.3.2.3.5)."""
        return self.sifs_ns + 2 * self.slot_ns

    @property
    def txtime(self) -> bool:
        return self.airtime == "txtime"

    def data_ns(self, packet_bytes: int, rate: Rate | None = None) -> int:
        """Airtime of a data frame carrying ``packet_bytes`` of IP packet (at ``rate``; None: the medium's)."""
        if self.txtime:
            return _txtime(self.rate if rate is None else rate, packet_bytes + MAC_OVERHEAD_BYTES)
        return self.preamble_ns + math.ceil((packet_bytes + MAC_OVERHEAD_BYTES) * 8 * 1e9 / self.rate_bps)

    def ack_ns(self, rate: Rate | None = None) -> int:
        """Airtime of the link-layer ACK answering a data frame at ``rate``."""
        return self.control_ns(ACK_BYTES, rate)

    def exchange_ns(self, packet_bytes: int, rate: Rate | None = None) -> int:
        """The issue's airtime of a unicast frame: preamble + bytes / rate + SIFS + ACK."""
        return self.data_ns(packet_bytes, rate) + self.sifs_ns + self.ack_ns(rate)

    def control_ns(self, nbytes: int, rate: Rate | None = None) -> int:
        """Airtime of a control frame (RTS, CTS, ACK) of the exchange of a data frame at ``rate``: simple, at
        the basic rate; txtime, at the control response rate of ``rate`` (10.6.6.5).  The RTS goes at the
        same rate, so that its CTS (the response to the RTS) is at the RTS's rate too."""
        if self.txtime:
            return _txtime(self.response_rate(rate), nbytes)
        return self.preamble_ns + math.ceil(nbytes * 8 * 1e9 / self.basic_rate_bps)

    def response_rate(self, rate: Rate | None = None) -> Rate:
        """txtime: the rate of the Ack or CTS answering a frame at ``rate`` (10.6.6.5)."""
        return _response_rate(self.rate if rate is None else rate, self.basic_rates)  # type: ignore[arg-type]

    @property
    def group_rate(self) -> Rate | None:
        """txtime: group-addressed frames (ETX probes) go at the lowest basic rate, as mac80211 sends them
        (rate_control_send_low) whatever the rate control; simple: None (the medium's one rate)."""
        return self.basic_rates[0] if self.txtime else None

    @property
    def eifs_ns(self) -> int:
        """EIFS = aSIFSTime + AckTxTime + DIFS (10.3.2.3.7), AckTxTime at the lowest rate: simple, the one
        basic rate; txtime, the lowest basic rate (the lowest mandatory rate of the PHY: b 1, OFDM 6 Mb/s)."""
        if self.txtime:
            return self.sifs_ns + _txtime(self.basic_rates[0], ACK_BYTES) + self.difs_ns
        return self.sifs_ns + self.ack_ns() + self.difs_ns

    @property
    def cts_timeout_ns(self) -> int:
        """CTSTimeout = aSIFSTime + aSlotTime + aRxPHYStartDelay (10.3.2.7), aRxPHYStartDelay taken as the
        PLCP preamble + header (192 us for HR/DSSS long preamble, as clause 16 gives; OFDM's 25 us ~ 20 us)."""
        return self.sifs_ns + self.slot_ns + self.preamble_ns

    def uses_rts(self, packet_bytes: int, acked: bool = True) -> bool:
        """RTS/CTS precedes an individually addressed frame whose MPDU is longer than dot11RTSThreshold
        (IEEE 802.11-2016 10.3.5; dot11RTSThreshold 0: every such frame)."""
        return acked and self.rts_threshold is not None and packet_bytes + MAC_OVERHEAD_BYTES > self.rts_threshold

    def rts_exchange_ns(self, rate: Rate | None = None) -> int:
        """RTS, SIFS, CTS: the part of an exchange that RTS/CTS adds."""
        return self.control_ns(RTS_BYTES, rate) + self.sifs_ns + self.control_ns(CTS_BYTES, rate)

    def attempt_ns(self, packet_bytes: int, acked: bool = True, rate: Rate | None = None) -> int:
        """The airtime one successful attempt of a frame takes: [RTS, SIFS, CTS, SIFS,] data[, SIFS, ACK]."""
        if not acked:
            return self.data_ns(packet_bytes, rate)
        rts = self.rts_exchange_ns(rate) + self.sifs_ns if self.uses_rts(packet_bytes) else 0
        return rts + self.exchange_ns(packet_bytes, rate)

    # Duration field of each frame (9.2.5.2, a non-QoS STA outside a TXOP): the time after the frame's end
    # that the rest of the exchange needs; a station that decodes a frame not addressed to it sets its NAV
    # to that much (10.3.2.4).
    def rts_duration_ns(self, packet_bytes: int, rate: Rate | None = None) -> int:
        """RTS: 3 x SIFS + CTS + data + ACK."""
        return (3 * self.sifs_ns + self.control_ns(CTS_BYTES, rate) + self.data_ns(packet_bytes, rate)
                + self.ack_ns(rate))

    def cts_duration_ns(self, packet_bytes: int, rate: Rate | None = None) -> int:
        """CTS: the RTS's Duration less SIFS and the CTS itself (10.3.2.7)."""
        return self.rts_duration_ns(packet_bytes, rate) - self.sifs_ns - self.control_ns(CTS_BYTES, rate)

    def data_duration_ns(self, acked: bool, rate: Rate | None = None) -> int:
        """Unicast data: SIFS + ACK; group-addressed: 0 (no ACK follows).  The ACK's own Duration is 0."""
        return self.sifs_ns + self.ack_ns(rate) if acked else 0

    def next_cw(self, cw: int) -> int:
        """The contention window after a failed attempt: 2 x (CW + 1) - 1, at most aCWmax (10.3.3)."""
        return min(2 * (cw + 1) - 1, self.cw_max)

    def timing(self) -> Timing:
        """aSlotTime, aSIFSTime, aCWmin as routing.medium.rates (and Minstrel's airtime estimates) take them."""
        def us(ns: int) -> float:
            return ns // US if ns % US == 0 else ns / US
        return Timing(us(self.slot_ns), us(self.sifs_ns), self.cw_min)  # type: ignore[arg-type]

    def rate_name(self, rate: Rate | None) -> str:
        """How stats and logs name a rate: routing.medium.rates' name (``erp-54``, ``ht-mcs7``); simple airtime:
        the medium's one rate in Mb/s (``11Mbps``)."""
        return rate.name if rate is not None else self._simple_rate_name

    @cached_property
    def _simple_rate_name(self) -> str:
        return f"{self.rate_bps / 1e6:g}Mbps"


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
