"""The 802.11 PHY of the medium: timing presets, airtime, the rate-set rules and their checks (no state).

Airtime (:meth:`Phy.data_ns`, :meth:`Phy.ack_ns`, :meth:`Phy.exchange_ns`): PLCP preamble + header, then the
MPDU (MAC header + FCS + LLC/SNAP + the packet) at the PHY rate; SIFS; the ACK frame (14 octets, 9.3.1.3) at the
basic rate; DIFS = aSIFSTime + 2 x aSlotTime (10.3.2.3.5); EIFS = SIFS + ACK + DIFS (10.3.2.3.7); the RTS/CTS
threshold and the Duration fields (10.3.5, 9.2.5.2).  With ``airtime == "txtime"`` each frame takes the PPDU
duration of its MPDU at its rate (routing.medium.rates.txtime_ns), its Ack and RTS/CTS the control response
rate (10.6.6.5).  ``airtime == "simple"`` (b and g at one rate) is preamble + bits / rate: no OFDM symbol
padding, no signal extension.  The DCF that spends this airtime is routing.medium.dcf.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from routing.medium.error_model import MODES, Mode
from routing.medium.rates import (DSSS, HR_DSSS, HT, MANDATORY_KBPS, Rate, RateError, Timing, control_response_rate,
                                  dsss_rate, ht20_rate, ofdm_rate, rate_set, txtime_ns)

__all__ = ["PRESETS", "Phy", "MediumError", "MAC_OVERHEAD_BYTES", "ACK_BYTES", "RTS_BYTES", "CTS_BYTES",
           "LONG_RETRY_LIMIT", "NAV_MODELS", "timing_problems", "AIRTIMES", "RATE_CONTROLS", "HT_STANDARDS",
           "DEFAULT_MCS", "US", "default_airtime", "fixed_rate", "basic_rate_set", "rate_problems", "error_mode"]

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
