"""802.11 PHY rates and PPDU durations (issue 24, item 3): a pure module, no I/O, integer nanoseconds.

Every duration is the standard's TXTIME of a PPDU carrying ``length`` octets of PSDU (the MPDU: MAC
header, body, FCS), as IEEE Std 802.11-2020 defines it per PHY:

* DSSS (clause 15: 1, 2 Mb/s) and HR/DSSS (clause 16: 5.5, 11 Mb/s, CCK): PLCP preamble + PLCP header
  (long: 144 + 48 us; short, only at 2, 5.5 and 11 Mb/s: 72 + 24 us), then ceil(8 x LENGTH / rate) us
  (:func:`dsss_txtime_ns`);
* OFDM (clause 17, 802.11a) and ERP-OFDM (clause 18, 802.11g): T_PREAMBLE 16 us + T_SIGNAL 4 us +
  4 us x ceil((16 + 8 x LENGTH + 6) / N_DBPS), plus the 6 us aSignalExtension for ERP-OFDM
  (:func:`ofdm_txtime_ns`);
* HT mixed format (clause 19.4.3), HT20, MCS 0-7, one spatial stream, BCC: L-STF 8 + L-LTF 8 + L-SIG 4
  + HT-SIG 8 + HT-STF 4 + one HT-LTF 4 = 36 us, then N_SYM = ceil((8 x LENGTH + 16 + 6) / N_DBPS)
  symbols of 4 us (long GI) or, with the short GI, 4 us x ceil(3.6 us x N_SYM / 4 us) (the standard
  rounds the short-GI data field up to the 4 us symbol grid of L-SIG); plus the signal extension in
  the 2.4 GHz band (:func:`ht_mf_txtime_ns`).

Control responses (:func:`control_response_rate`, 10.6.6.5): an Ack or CTS goes at the highest rate of
the BSS basic rate set that is not above the eliciting frame's rate (for an HT PPDU: its non-HT
reference rate) and of its modulation class; if none, at the highest mandatory rate of that PHY that
is not above it.

Integration (what routing.medium.dcf does with this module and :mod:`routing.medium.rate_control.minstrel` when
``medium.airtime`` is ``txtime``; routing.medium.dcf's docstring has the details):

1. Each station keeps one rate controller per outgoing link (per receiver): a
   :class:`routing.medium.rate_control.minstrel.FixedRate` for ``medium.rate_control: fixed`` (today's behaviour: one
   rate, ``retry_limit`` tries) or a :class:`routing.medium.rate_control.minstrel.Minstrel` for ``minstrel``, built from
   the PHY's rate set (:func:`rate_set`) and the medium's seed.
2. When a frame reaches the head of the queue, the medium asks ``controller.choose(now_ns)`` for the
   retry chain ``[(rate, tries), ...]`` (already cut to the retry limit: dot11ShortRetryLimit, or
   dot11LongRetryLimit with RTS/CTS).  Attempt k of the frame uses the stage that k falls in.
3. The airtime of each attempt is :func:`txtime_ns` of the MPDU at that stage's rate; the Ack that
   answers it is :func:`txtime_ns` of 14 octets at :func:`control_response_rate`; the Duration
   fields (NAV) follow from the same two numbers: the medium's ``Phy.data_ns`` / ``Phy.ack_ns`` make
   these calls with the rate as an argument.
4. When the frame ends (Ack, or the last try of the chain, or the retry limit), the medium calls
   ``controller.report(now_ns, rate, attempts, successes)`` once per stage it used, with that stage's
   attempts and 1 success on the stage that got the Ack.  A drop is the end of the chain without one.
5. The reception model decides each attempt's success from the rate (the SINR work of item 2): the
   controller only ever sees the outcomes, as minstrel does.

Aggregation (A-MPDU) is left out: one MPDU per channel access.  What that costs an HT link is
:func:`mac_efficiency` (tested in tests/routing/medium/test_rates.py): one 1500-byte IP packet per access at HT20 MCS 7,
long GI, 2.4 GHz, with DIFS and the mean initial backoff, Ack at 24 Mb/s, delivers 32.1 Mb/s of the
65 Mb/s PHY rate (49.4 %); at 54 Mb/s ERP-OFDM the same exchange delivers 30.5 Mb/s (56.5 %), so
without aggregation HT20 MCS 7 is only 5 % better than 802.11g at the MAC.  The same formula with 8
MPDUs in one A-MPDU answered by one BlockAck (``mpdus=8``) gives 56.3 Mb/s (86.6 %): the medium
under-states the goodput of an aggregating HT radio with a full queue by that factor (1.75) when it
sends 8-MPDU aggregates, and by more with longer ones.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = ["Rate", "Timing", "DSSS", "HR_DSSS", "OFDM", "ERP_OFDM", "HT", "MAC_OVERHEAD_BYTES", "ACK_BYTES",
           "dsss_txtime_ns", "ofdm_txtime_ns", "ht_mf_txtime_ns", "txtime_ns", "dsss_rate", "ofdm_rate",
           "ht20_rate", "rate_set", "rate_by_name", "NON_HT_REFERENCE_KBPS", "control_response_rate",
           "TIMINGS", "exchange_ns", "access_ns", "mac_efficiency", "ampdu_psdu_bytes", "RateError"]

US = 1000  # ns per microsecond

# Modulation classes (10.6.6.5 lists them; the control response keeps the class of the frame it answers).
DSSS = "dsss"          # clause 15, 1 and 2 Mb/s
HR_DSSS = "hr-dsss"    # clause 16, 5.5 and 11 Mb/s (CCK)
OFDM = "ofdm"          # clause 17 (802.11a, 5 GHz)
ERP_OFDM = "erp-ofdm"  # clause 18 (802.11g, 2.4 GHz): OFDM timing plus the signal extension
HT = "ht"              # clause 19 (802.11n)

MAC_OVERHEAD_BYTES = 24 + 4 + 8  # data MAC header (9.3.2.1), FCS, LLC/SNAP: as routing.medium.phy.MAC_OVERHEAD_BYTES
ACK_BYTES = 14                   # Ack frame (9.3.1.3)
BLOCK_ACK_BYTES = 32             # compressed BlockAck: 16 octets of header, BA Control 2, SSC 2, bitmap 8, FCS 4 (9.3.1.9)
MPDU_DELIMITER_BYTES = 4         # A-MPDU subframe's MPDU delimiter (9.7)

# DSSS/HR-DSSS PLCP (15.2.2, 16.2.2): long = 144 us SYNC+SFD preamble + 48 us header;
# short (16.2.2.3) = 72 us preamble + 24 us header, not defined for 1 Mb/s.
DSSS_LONG_PLCP_US = 144 + 48
DSSS_SHORT_PLCP_US = 72 + 24
# OFDM (17.4.3; clause 17's timing-related parameters, 20 MHz): T_PREAMBLE 16 us, T_SIGNAL 4 us, T_SYM 4 us;
# SERVICE field 16 bits, tail 6 bits.
OFDM_PREAMBLE_US = 16
OFDM_SIGNAL_US = 4
OFDM_SYMBOL_US = 4
SERVICE_BITS = 16
TAIL_BITS = 6
SIGNAL_EXTENSION_US = 6  # aSignalExtension of the ERP (clause 18); HT's TXTIME adds it in the 2.4 GHz band (19.4.3)
# HT mixed format (clause 19's timing-related constants): L-STF 8, L-LTF 8, L-SIG 4, HT-SIG 8, HT-STF 4,
# HT-LTF 4 per LTF.
HT_MF_PREAMBLE_US = 8 + 8 + 4 + 8 + 4 + 4   # one spatial stream: N_LTF = 1
HT_SGI_SYMBOL_NS = 3600                      # T_SYMS, short GI
HT_LGI_SYMBOL_NS = 4000                      # T_SYM, long GI

# Data bits per OFDM symbol (clause 17's modulation-dependent parameters) and HT20 one-stream N_DBPS
# (19.5, the MCS parameters for 20 MHz, N_SS = 1, MCS 0-7).
OFDM_N_DBPS = {6: 24, 9: 36, 12: 48, 18: 72, 24: 96, 36: 144, 48: 192, 54: 216}
HT20_N_DBPS = (26, 52, 78, 104, 156, 208, 234, 260)
# Mandatory rates (15.1, 16.1, 17.3.5.1): the fall-back of the control response rule.
MANDATORY_KBPS = {HR_DSSS: (1000, 2000, 5500, 11000), OFDM: (6000, 12000, 24000),
                  ERP_OFDM: (6000, 12000, 24000)}
# Non-HT reference rate of HT MCS 0-7 (the rate 10.6.6.5.2 compares; 9.7.9 in 802.11-2012): the non-HT rate of the same
# modulation and coding rate (BPSK 1/2 -> 6 Mb/s ... 64-QAM 3/4 and 5/6 -> 54 Mb/s).
NON_HT_REFERENCE_KBPS = (6000, 12000, 18000, 24000, 36000, 48000, 54000, 54000)


class RateError(ValueError):
    """A rate that does not exist, or a length a PHY cannot carry."""


@dataclass(frozen=True)
class Rate:
    """One PHY rate as the TXVECTOR names it.

    ``kbps`` is the data rate in kbit/s, rounded for the short GI (7.2 Mb/s is 7222 kbit/s); the
    duration functions use ``n_dbps`` and the symbol time, never ``kbps``, for OFDM and HT.
    """
    name: str
    modulation: str
    kbps: int
    n_dbps: int = 0              # OFDM, ERP-OFDM, HT: data bits per symbol
    mcs: int | None = None       # HT only
    short_gi: bool = False       # HT only
    short_preamble: bool = False  # DSSS/HR-DSSS only
    band_ghz: float = 2.4        # ERP-OFDM and HT carry the signal extension at 2.4 GHz only

    @property
    def bps(self) -> float:
        """The exact data rate in bit/s (N_DBPS / T_SYM for OFDM and HT)."""
        if self.modulation == HT:
            return self.n_dbps * 1e9 / (HT_SGI_SYMBOL_NS if self.short_gi else HT_LGI_SYMBOL_NS)
        return self.kbps * 1e3

    @property
    def signal_extension_us(self) -> int:
        return SIGNAL_EXTENSION_US if self.modulation in (ERP_OFDM, HT) and self.band_ghz < 3 else 0


def _check_length(length: int) -> None:
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        raise RateError(f"PSDU length {length!r}: expected a positive number of octets")


def dsss_txtime_ns(rate: Rate, length: int) -> int:
    """TXTIME of a DSSS/HR-DSSS PPDU: PLCP preamble + header + ceil(8 x LENGTH / rate) us (clauses 15, 16;
    the CCK LENGTH example table, Table 18-2 of 802.11-2007, gives 744 us for 1023 octets at 11 Mb/s)."""
    _check_length(length)
    plcp = DSSS_SHORT_PLCP_US if rate.short_preamble else DSSS_LONG_PLCP_US
    payload_us = -(-8 * length * 1000 // rate.kbps)  # ceil, exact in integers
    return (plcp + payload_us) * US


def ofdm_txtime_ns(rate: Rate, length: int) -> int:
    """TXTIME of an OFDM / ERP-OFDM PPDU (17.4.3; clause 18 for ERP): 16 + 4 + 4 x ceil((16 + 8L + 6) / N_DBPS)
    us, plus aSignalExtension (6 us) for ERP-OFDM."""
    _check_length(length)
    n_sym = -(-(SERVICE_BITS + 8 * length + TAIL_BITS) // rate.n_dbps)
    return (OFDM_PREAMBLE_US + OFDM_SIGNAL_US + OFDM_SYMBOL_US * n_sym + rate.signal_extension_us) * US


def ht_mf_txtime_ns(rate: Rate, length: int) -> int:
    """TXTIME of an HT mixed-format PPDU, one stream, BCC, no STBC (19.4.3):

    long GI:  T_LEG_PREAMBLE + T_L-SIG + T_HT-SIG + T_HT-PREAMBLE + T_SYM x N_SYM + SignalExtension
    short GI: ... + T_SYM x ceil(T_SYMS x N_SYM / T_SYM) + SignalExtension
    with N_SYM = ceil((8 x LENGTH + 16 + 6 x N_ES) / N_DBPS), N_ES = 1 for MCS 0-7 at 20 MHz.
    """
    _check_length(length)
    n_sym = -(-(8 * length + SERVICE_BITS + TAIL_BITS) // rate.n_dbps)
    if rate.short_gi:
        data_ns = HT_LGI_SYMBOL_NS * -(-(HT_SGI_SYMBOL_NS * n_sym) // HT_LGI_SYMBOL_NS)
    else:
        data_ns = HT_LGI_SYMBOL_NS * n_sym
    return (HT_MF_PREAMBLE_US + rate.signal_extension_us) * US + data_ns


def txtime_ns(rate: Rate, length: int) -> int:
    """The PPDU duration of ``length`` PSDU octets at ``rate``, per its PHY's clause."""
    if rate.modulation in (DSSS, HR_DSSS):
        return dsss_txtime_ns(rate, length)
    if rate.modulation in (OFDM, ERP_OFDM):
        return ofdm_txtime_ns(rate, length)
    if rate.modulation == HT:
        return ht_mf_txtime_ns(rate, length)
    raise RateError(f"rate {rate.name}: unknown modulation {rate.modulation!r}")


# --- the rate tables ---------------------------------------------------------------------------------

def dsss_rate(mbps: float, short_preamble: bool = False) -> Rate:
    """1 and 2 Mb/s (DSSS, clause 15), 5.5 and 11 Mb/s (HR/DSSS, clause 16)."""
    kbps = round(mbps * 1000)
    if isinstance(mbps, bool) or kbps not in (1000, 2000, 5500, 11000):   # (a bool is a number: True == 1)
        raise RateError(f"DSSS/HR-DSSS rate {mbps} Mb/s: expected one of 1, 2, 5.5, 11")
    if short_preamble and kbps == 1000:
        raise RateError("the short PLCP preamble is not defined for 1 Mb/s (16.2.2.3)")
    modulation = DSSS if kbps <= 2000 else HR_DSSS
    name = f"dsss-{mbps:g}" + ("-short" if short_preamble else "")
    return Rate(name, modulation, kbps, short_preamble=short_preamble)


def ofdm_rate(mbps: int, erp: bool = True) -> Rate:
    """6..54 Mb/s: ERP-OFDM (802.11g, 2.4 GHz, with the signal extension) or OFDM (802.11a, 5 GHz)."""
    if mbps not in OFDM_N_DBPS:
        raise RateError(f"OFDM rate {mbps} Mb/s: expected one of {', '.join(map(str, OFDM_N_DBPS))}")
    if erp:
        return Rate(f"erp-{mbps}", ERP_OFDM, mbps * 1000, n_dbps=OFDM_N_DBPS[mbps], band_ghz=2.4)
    return Rate(f"ofdm-{mbps}", OFDM, mbps * 1000, n_dbps=OFDM_N_DBPS[mbps], band_ghz=5.0)


def ht20_rate(mcs: int, short_gi: bool = False, band_ghz: float = 2.4) -> Rate:
    """HT20 MCS 0-7, one spatial stream (Table 19-27)."""
    if isinstance(mcs, bool) or not isinstance(mcs, int) or not 0 <= mcs <= 7:   # (a bool is an int: True == 1)
        raise RateError(f"HT MCS {mcs!r}: expected 0..7 (one spatial stream)")
    n_dbps = HT20_N_DBPS[mcs]
    kbps = round(n_dbps * 1e6 / (HT_SGI_SYMBOL_NS if short_gi else HT_LGI_SYMBOL_NS))
    name = f"ht-mcs{mcs}" + ("-sgi" if short_gi else "") + ("" if band_ghz < 3 else "-5g")
    return Rate(name, HT, kbps, n_dbps=n_dbps, mcs=mcs, short_gi=short_gi, band_ghz=band_ghz)


def rate_set(standard: str) -> tuple[Rate, ...]:
    """The data rates a station of ``standard`` may use, slowest first: ``b`` (1-11, long preamble),
    ``g`` (ERP-OFDM 6-54), ``a`` (OFDM 6-54), ``n`` (HT20 MCS 0-7, long GI), ``n-sgi`` (HT20 MCS 0-7,
    long and short GI: the two minstrel_ht groups of one stream)."""
    if standard == "b":
        return tuple(dsss_rate(m) for m in (1, 2, 5.5, 11))
    if standard in ("g", "a"):
        return tuple(ofdm_rate(m, erp=standard == "g") for m in OFDM_N_DBPS)
    if standard == "n":
        return tuple(ht20_rate(m) for m in range(8))
    if standard == "n-sgi":
        return tuple(sorted((ht20_rate(m, sgi) for m in range(8) for sgi in (False, True)), key=lambda r: r.bps))
    raise RateError(f"rate set {standard!r}: expected one of b, g, a, n, n-sgi")


def rate_by_name(name: str) -> Rate:
    """The rate called ``name`` (as :attr:`Rate.name` spells it), e.g. ``dsss-11``, ``erp-54``, ``ht-mcs7-sgi``."""
    candidates = [dsss_rate(m, s) for m in (1, 2, 5.5, 11) for s in (False, True) if not (s and m == 1)]
    candidates += [ofdm_rate(m, e) for m in OFDM_N_DBPS for e in (True, False)]
    candidates += [ht20_rate(m, g, b) for m in range(8) for g in (False, True) for b in (2.4, 5.0)]
    for r in candidates:
        if r.name == name:
            return r
    raise RateError(f"unknown rate {name!r}")


# --- control response rate (10.6.6.5) -----------------------------------------------------------------

def _response_class(rate: Rate) -> tuple[str, ...]:
    """The modulation classes a control response to ``rate`` may use: the eliciting frame's own class
    (DSSS and HR/DSSS count as one, 16.1), and non-HT OFDM for an HT PPDU (ERP-OFDM at 2.4 GHz)."""
    if rate.modulation in (DSSS, HR_DSSS):
        return (DSSS, HR_DSSS)
    if rate.modulation == HT:
        return (ERP_OFDM,) if rate.band_ghz < 3 else (OFDM,)
    return (rate.modulation,)


def control_response_rate(data_rate: Rate, basic_rates: Iterable[Rate]) -> Rate:
    """The rate of the Ack (or CTS) answering a frame sent at ``data_rate`` (10.6.6.5.2): the highest
    rate of the BSS basic rate set that is not above the eliciting rate (an HT PPDU: its non-HT
    reference rate) and is of an allowed modulation class; when no basic rate qualifies, the highest
    mandatory rate of that PHY not above it."""
    ref_kbps = NON_HT_REFERENCE_KBPS[data_rate.mcs] if data_rate.modulation == HT else data_rate.kbps
    classes = _response_class(data_rate)
    basic = [r.kbps for r in basic_rates if r.modulation in classes and r.kbps <= ref_kbps]
    kbps = max(basic) if basic else max(k for k in MANDATORY_KBPS[classes[-1]] if k <= ref_kbps)
    if classes[-1] == HR_DSSS:
        # the response keeps the eliciting frame's PREAMBLE_TYPE (10.6.6.5.2); 1 Mb/s has only the long one
        return dsss_rate(kbps / 1000, data_rate.short_preamble and kbps > 1000)
    return ofdm_rate(kbps // 1000, erp=classes[-1] == ERP_OFDM)


# --- MAC timing and efficiency ------------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    """The PHY characteristics the DCF uses: aSlotTime, aSIFSTime, aCWmin (each PHY clause's characteristics table)."""
    slot_us: int
    sifs_us: int
    cw_min: int

    @property
    def difs_ns(self) -> int:
        """DIFS = aSIFSTime + 2 x aSlotTime (10.3.2.3.5)."""
        return (self.sifs_us + 2 * self.slot_us) * US

    @property
    def mean_backoff_ns(self) -> int:
        """The mean of the first backoff, uniform in [0, aCWmin] slots (10.3.3): aCWmin / 2 slots."""
        return self.cw_min * self.slot_us * US // 2


# b: DSSS slot 20, SIFS 10, CWmin 31; g: ERP short slot 9, SIFS 10, CWmin 15; a: OFDM 9/16/15;
# n (2.4 GHz): HT in the 2.4 GHz band uses the ERP short slot and SIFS 10.
TIMINGS = {"b": Timing(20, 10, 31), "g": Timing(9, 10, 15), "a": Timing(9, 16, 15), "n": Timing(9, 10, 15)}


def ampdu_psdu_bytes(mpdus: int, mpdu_bytes: int) -> int:
    """The PSDU of an A-MPDU of ``mpdus`` equal MPDUs (9.7): each subframe is a 4-octet MPDU delimiter
    and the MPDU, padded to a multiple of 4 octets except the last."""
    if mpdus < 1:
        raise RateError(f"A-MPDU of {mpdus} MPDUs: expected at least 1")
    padded = mpdu_bytes + (-mpdu_bytes) % 4
    return mpdus * (MPDU_DELIMITER_BYTES + padded) - (padded - mpdu_bytes)


def exchange_ns(rate: Rate, mpdu_bytes: int, timing: Timing, basic_rates: Sequence[Rate], mpdus: int = 1) -> int:
    """One acknowledged PPDU: data + SIFS + the response at the control response rate: an Ack for one
    MPDU, a (compressed) BlockAck for an A-MPDU of ``mpdus`` > 1."""
    resp_rate = control_response_rate(rate, basic_rates)
    if mpdus == 1:
        data, resp = txtime_ns(rate, mpdu_bytes), txtime_ns(resp_rate, ACK_BYTES)
    else:
        data, resp = txtime_ns(rate, ampdu_psdu_bytes(mpdus, mpdu_bytes)), txtime_ns(resp_rate, BLOCK_ACK_BYTES)
    return data + timing.sifs_us * US + resp


def access_ns(rate: Rate, mpdu_bytes: int, timing: Timing, basic_rates: Sequence[Rate], mpdus: int = 1) -> int:
    """One channel access without contention from others: DIFS + the mean initial backoff + the exchange."""
    return timing.difs_ns + timing.mean_backoff_ns + exchange_ns(rate, mpdu_bytes, timing, basic_rates, mpdus)


def mac_efficiency(rate: Rate, packet_bytes: int, timing: Timing, basic_rates: Sequence[Rate], mpdus: int = 1) -> float:
    """Goodput of ``mpdus`` IP packets of ``packet_bytes`` per channel access, as a fraction of the PHY
    rate: 8 x packets / :func:`access_ns` / rate.  ``mpdus=1`` is what the medium models (no A-MPDU)."""
    t_ns = access_ns(rate, packet_bytes + MAC_OVERHEAD_BYTES, timing, basic_rates, mpdus)
    return 8 * packet_bytes * mpdus * 1e9 / t_ns / rate.bps
