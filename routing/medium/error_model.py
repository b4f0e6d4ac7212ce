"""Chunk success rates of 802.11 modes for a given SINR: the NIST error-rate model, as ns-3 implements it.

A reception is split into chunks of constant SINR (routing.medium.reception); a chunk of ``nbits`` bits sent
in ``mode`` at signal-to-interference-plus-noise ratio ``sinr`` (linear, not dB) is received without
error with the probability :func:`chunk_success_rate` gives.  The formulas are those of ns-3's

* ``NistErrorRateModel`` (src/wifi/model/nist-error-rate-model.cc; G. Pei and T. Henderson, "Validation
  of OFDM error rate model in ns-3", Boeing, 2010, after Miller's NIST model) for the OFDM modes of
  802.11a/g (ERP-OFDM) and 802.11n (HT): the uncoded BER of BPSK, QPSK and square M-QAM in AWGN
  (:func:`bpsk_ber`, :func:`qpsk_ber`, :func:`qam_ber`), turned into a decoded bit error bound of the
  punctured convolutional code by its distance spectrum (:func:`coded_bit_error`: ``CalculatePe``;
  rate 1/2 and 2/3, 3/4 from the tables 3.1.1-3.1.2 ns-3 cites, 5/6 from Haccoun and Begin, IEEE
  Trans. Commun. 32(3), 1984, table V), the chunk succeeding with ``(1 - pe) ** nbits``;
* ``DsssErrorRateModel`` (src/wifi/model/dsss-error-rate-model.cc, G. Pei) for the DSSS and HR/DSSS
  modes of 802.11b, which the NIST model hands to it: DBPSK ``0.5 exp(-Eb/N0)`` and DQPSK (its
  ``DqpskFunction``) at 1 and 2 Mbit/s, with Eb/N0 = SINR x 22 MHz / bit rate; and for CCK at 5.5 and
  11 Mbit/s the Matlab ``berfit`` curves of the build without GSL (BER 0 above a SINR of 10, 0.5 below
  0.1), the chunk succeeding with ``(1 - ber) ** nbits``.

Differences from ns-3, stated: ``nbits`` is a real number (ns-3 truncates it to an integer); the
DQPSK constant uses math.pi (ns-3 writes 3.1415926).

The modes are named (:data:`MODES`, e.g. ``cck-11``, ``ofdm-54``, ``ht-mcs7``) so that a caller passes
the mode of each frame: today the medium has one data rate and one basic rate, and a per-frame rate
(issue 24, item 3) passes its own mode to the same function.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Mode", "MODES", "DSSS_MODES", "OFDM_MODES", "ErrorModelError", "chunk_success_rate", "mode_for_rate",
           "bpsk_ber", "qpsk_ber", "qam_ber", "coded_bit_error", "dbpsk_ber", "dqpsk_ber", "cck55_ber", "cck11_ber"]


class ErrorModelError(ValueError):
    """A mode the error model does not know."""


@dataclass(frozen=True)
class Mode:
    """One 802.11 modulation and coding: ``modulation`` is dbpsk | dqpsk | cck55 | cck11 (DSSS, HR/DSSS) or
    bpsk | qpsk | qam16 | qam64 (OFDM, HT), ``code_rate`` the convolutional code's (OFDM only)."""

    name: str
    rate_mbps: float
    modulation: str
    code_rate: tuple[int, int] | None = None

    @property
    def dsss(self) -> bool:
        return self.code_rate is None


def _ofdm(name: str, rate: float, modulation: str, code: tuple[int, int]) -> Mode:
    return Mode(name, rate, modulation, code)


# 802.11b (clauses 15-16): DSSS 1, 2 Mb/s; HR/DSSS CCK 5.5, 11 Mb/s.
DSSS_MODES = (Mode("dsss-1", 1, "dbpsk"), Mode("dsss-2", 2, "dqpsk"), Mode("cck-5.5", 5.5, "cck55"),
              Mode("cck-11", 11, "cck11"))
# 802.11a/g (clause 17, Table 17-4): rate, modulation, coding rate.
OFDM_MODES = (_ofdm("ofdm-6", 6, "bpsk", (1, 2)), _ofdm("ofdm-9", 9, "bpsk", (3, 4)),
               _ofdm("ofdm-12", 12, "qpsk", (1, 2)), _ofdm("ofdm-18", 18, "qpsk", (3, 4)),
               _ofdm("ofdm-24", 24, "qam16", (1, 2)), _ofdm("ofdm-36", 36, "qam16", (3, 4)),
               _ofdm("ofdm-48", 48, "qam64", (2, 3)), _ofdm("ofdm-54", 54, "qam64", (3, 4)))
# 802.11n HT20, one spatial stream, 800 ns guard interval (clause 19, Table 19-27): MCS 0-7.
HT_MODES = tuple(_ofdm(f"ht-mcs{i}", r, m, c) for i, (r, m, c) in enumerate((
    (6.5, "bpsk", (1, 2)), (13, "qpsk", (1, 2)), (19.5, "qpsk", (3, 4)), (26, "qam16", (1, 2)),
    (39, "qam16", (3, 4)), (52, "qam64", (2, 3)), (58.5, "qam64", (3, 4)), (65, "qam64", (5, 6)))))
MODES: dict[str, Mode] = {m.name: m for m in DSSS_MODES + OFDM_MODES + HT_MODES}

# The rates of each timing preset of routing.medium.dcf: b's DSSS/HR-DSSS; g (ERP, clause 18) has those and OFDM's.
_RATES = {"b": DSSS_MODES, "g": DSSS_MODES + OFDM_MODES}


def mode_for_rate(standard: str, rate_mbps: float) -> Mode:
    """The mode of ``standard`` (``b`` | ``g``) sending at ``rate_mbps``."""
    for m in _RATES[standard]:
        if m.rate_mbps == rate_mbps:
            return m
    raise ErrorModelError(f"802.11{standard} has no {rate_mbps:g} Mbit/s rate; its rates: "
                          f"{', '.join(f'{m.rate_mbps:g}' for m in _RATES[standard])}")


def rates_of(standard: str) -> tuple[float, ...]:
    return tuple(m.rate_mbps for m in _RATES[standard])


# ---- OFDM: ns-3 NistErrorRateModel -----------------------------------------------------------------
def bpsk_ber(snr: float) -> float:
    """GetBpskBer: 0.5 erfc(sqrt(snr))."""
    return 0.5 * math.erfc(math.sqrt(snr))


def qpsk_ber(snr: float) -> float:
    """GetQpskBer: 0.5 erfc(sqrt(snr / 2))."""
    return 0.5 * math.erfc(math.sqrt(snr / 2.0))


def qam_ber(m: int, snr: float) -> float:
    """GetQamBer for square M-QAM: z = sqrt(snr / (2 (M - 1) / 3)); ber = (sqrt(M) - 1) / (sqrt(M) log2 sqrt(M)) erfc(z).
    (ns-3's integer division 2 (M - 1) / 3 is exact for M = 16, 64, 256.)"""
    z = math.sqrt(snr / ((2 * (m - 1)) // 3))
    k = math.isqrt(m)
    return (k - 1) / (k * math.log2(k)) * math.erfc(z)


# Distance spectra of the punctured convolutional codes (CalculatePe): coefficient and exponent of D, and
# the divisor in front (1/2 for rate 1/2; 1/(2 b) for rate (b)/(b+1)).
_SPECTRA: dict[tuple[int, int], tuple[float, tuple[tuple[float, float], ...]]] = {
    (1, 2): (0.5, ((36.0, 10), (211.0, 12), (1404.0, 14), (11633.0, 16), (77433.0, 18), (502690.0, 20),
                   (3322763.0, 22), (21292910.0, 24), (134365911.0, 26))),
    (2, 3): (1.0 / 4.0, ((3.0, 6), (70.0, 7), (285.0, 8), (1276.0, 9), (6160.0, 10), (27128.0, 11),
                         (117019.0, 12), (498860.0, 13), (2103891.0, 14), (8784123.0, 15))),
    (3, 4): (1.0 / 6.0, ((42.0, 5), (201.0, 6), (1492.0, 7), (10469.0, 8), (62935.0, 9), (379644.0, 10),
                         (2253373.0, 11), (13073811.0, 12), (75152755.0, 13), (428005675.0, 14))),
    (5, 6): (1.0 / 10.0, ((92.0, 4), (528.0, 5), (8694.0, 6), (79453.0, 7), (792114.0, 8), (7375573.0, 9),
                          (67884974.0, 10), (610875423.0, 11), (5427275376.0, 12), (47664215639.0, 13))),
}


def coded_bit_error(p: float, code_rate: tuple[int, int]) -> float:
    """CalculatePe: the union bound on the decoded bit error of the code for a channel bit error ``p``,
    D = sqrt(4 p (1 - p)), capped at 1 (as GetFec*Ber caps it)."""
    d = math.sqrt(4.0 * p * (1.0 - p))
    front, terms = _SPECTRA[code_rate]
    return min(front * sum(c * d ** e for c, e in terms), 1.0)


_UNCODED = {"bpsk": bpsk_ber, "qpsk": qpsk_ber, "qam16": lambda s: qam_ber(16, s), "qam64": lambda s: qam_ber(64, s)}


def _ofdm_success(mode: Mode, sinr: float, nbits: float) -> float:
    """GetFecBpskBer / GetFecQpskBer / GetFecQamBer: (1 - pe) ** nbits, 1 when the uncoded BER is 0."""
    ber = _UNCODED[mode.modulation](sinr)
    if ber == 0.0:
        return 1.0
    assert mode.code_rate is not None
    return (1.0 - coded_bit_error(ber, mode.code_rate)) ** nbits


# ---- DSSS / HR-DSSS: ns-3 DsssErrorRateModel ---------------------------------------------------------
WLAN_SIR_PERFECT = 10.0      # the CCK fits: BER 0 above this SINR (linear)
WLAN_SIR_IMPOSSIBLE = 0.1    # ... and 0.5 below this one
_CHIP_RATE = 22_000_000.0    # the SINR is over 22 MHz: Eb/N0 = SINR x 22 MHz / bit rate


def dbpsk_ber(sinr: float) -> float:
    """GetDsssDbpskSuccessRate's BER: 0.5 exp(-Eb/N0), Eb/N0 = sinr x 22 (1 bit per symbol, 1 Msym/s)."""
    return 0.5 * math.exp(-sinr * _CHIP_RATE / 1_000_000.0)


def dqpsk_ber(sinr: float) -> float:
    """GetDsssDqpskSuccessRate's BER: DqpskFunction(Eb/N0), Eb/N0 = sinr x 22 / 2 (2 bits per symbol)."""
    x = sinr * _CHIP_RATE / 1_000_000.0 / 2.0
    if x <= 0.0:
        return 0.5
    return min(((math.sqrt(2.0) + 1.0) / math.sqrt(8.0 * math.pi * math.sqrt(2.0))) * (1.0 / math.sqrt(x))
               * math.exp(-(2.0 - math.sqrt(2.0)) * x), 0.5)


def cck55_ber(sinr: float) -> float:
    """GetDsssDqpskCck5_5SuccessRate without GSL: a1 exp(-((sinr - a2) / a3) ** a4) (Matlab berfit)."""
    if sinr > WLAN_SIR_PERFECT:
        return 0.0
    if sinr < WLAN_SIR_IMPOSSIBLE:
        return 0.5
    a1, a2, a3, a4 = 5.3681634344056195e-001, 3.3092430025608586e-003, 4.1654372361004000e-001, 1.0288981434358866e+000
    return a1 * math.exp(-(((sinr - a2) / a3) ** a4))


def cck11_ber(sinr: float) -> float:
    """GetDsssDqpskCck11SuccessRate without GSL: (a1 s^2 + a2 s + a3) / (s^3 + a4 s^2 + a5 s + a6) (Matlab berfit)."""
    if sinr > WLAN_SIR_PERFECT:
        return 0.0
    if sinr < WLAN_SIR_IMPOSSIBLE:
        return 0.5
    a1, a2, a3 = 7.9056742265333456e-003, -1.8397449399176360e-001, 1.0740689468707241e+000
    a4, a5, a6 = 1.0523316904502553e+000, 3.0552298746496687e-001, 2.2032715128698435e+000
    s = sinr
    return (a1 * s * s + a2 * s + a3) / (s * s * s + a4 * s * s + a5 * s + a6)


_DSSS = {"dbpsk": dbpsk_ber, "dqpsk": dqpsk_ber, "cck55": cck55_ber, "cck11": cck11_ber}


def chunk_success_rate(mode: str | Mode, sinr: float, nbits: float) -> float:
    """The probability that ``nbits`` bits sent in ``mode`` at ``sinr`` (linear) all arrive (ns-3's
    ErrorRateModel::GetChunkSuccessRate with the NIST model)."""
    m = mode if isinstance(mode, Mode) else MODES.get(mode)
    if m is None:
        raise ErrorModelError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    if not sinr >= 0.0 or not nbits >= 0.0:
        raise ErrorModelError(f"sinr and nbits must be >= 0, got {sinr!r}, {nbits!r}")
    if nbits == 0.0:
        return 1.0
    if m.dsss:
        return (1.0 - _DSSS[m.modulation](sinr)) ** nbits
    return _ofdm_success(m, sinr, nbits)
