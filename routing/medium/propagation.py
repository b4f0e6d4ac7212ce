"""The signal at each receiver: transmit power, log-distance path loss, log-normal shadowing, noise.

Pure functions (no state, no clock); routing.medium.reception puts them together for one medium.

* log-distance path loss (:func:`log_distance_loss_db`; Rappaport, *Wireless Communications*, 2nd ed.,
  eq. 4.68; ns-3's ``LogDistancePropagationLossModel``): L(d) = L(d0) + 10 n log10(d / d0) with the
  reference distance d0 = 1 m; nearer than d0 the loss is L(d0), as ns-3 does;
* the reference loss of free space (:func:`friis_loss_db`, Friis: 20 log10(4 pi d f / c)), the default
  L(d0) at 1 m on channel 1 (2412 MHz): 40.1 dB;
* log-normal shadowing (:func:`shadowing_db`; Rappaport eq. 4.69a): a zero-mean Gaussian in dB with
  standard deviation sigma, one value per unordered pair of nodes (the same both ways), drawn from a
  generator seeded by the seed and the pair's names only, so that it is the same in every run, every
  process and whatever the order the pairs are asked in;
* thermal noise (:func:`thermal_noise_dbm`): k T B at 290 K plus the receiver's noise figure, as ns-3's
  ``WifiPhy`` computes it (its default noise figure 7 dB): -93.97 dBm over 20 MHz.
"""
from __future__ import annotations

import math
import random

__all__ = ["dbm_to_mw", "mw_to_dbm", "log_distance_loss_db", "friis_loss_db", "shadowing_db", "thermal_noise_dbm",
           "BOLTZMANN", "SPEED_OF_LIGHT", "CHANNEL1_HZ", "KTB_20MHZ_DBM"]

BOLTZMANN = 1.3803e-23        # J/K, the value ns-3's WifiPhy uses
SPEED_OF_LIGHT = 299_792_458.0
CHANNEL1_HZ = 2.412e9         # 2.4 GHz channel 1
REFERENCE_M = 1.0             # d0 of the log-distance model


def dbm_to_mw(dbm: float) -> float:
    return 10.0 ** (dbm / 10.0)


def mw_to_dbm(mw: float) -> float:
    return 10.0 * math.log10(mw)


def log_distance_loss_db(distance_m: float, reference_loss_db: float, exponent: float) -> float:
    """L(d) = L(d0) + 10 n log10(d / d0), d0 = 1 m; L(d0) for d <= d0."""
    if distance_m <= REFERENCE_M:
        return reference_loss_db
    return reference_loss_db + 10.0 * exponent * math.log10(distance_m / REFERENCE_M)


def friis_loss_db(distance_m: float, frequency_hz: float) -> float:
    """Free-space path loss 20 log10(4 pi d f / c) (isotropic antennas)."""
    return 20.0 * math.log10(4.0 * math.pi * distance_m * frequency_hz / SPEED_OF_LIGHT)


def shadowing_db(seed: int, a: str, b: str, sigma_db: float) -> float:
    """The shadowing of the link a - b (either way round) in dB: N(0, sigma_db), drawn once from ``seed``
    and the pair.  random.Random of a str is seeded through SHA-512 (Python 3.2+), so no hash seed enters."""
    if sigma_db == 0.0:
        return 0.0
    lo, hi = sorted((a, b))
    return random.Random(f"shadowing:{seed}:{lo}:{hi}").gauss(0.0, sigma_db)


def thermal_noise_dbm(bandwidth_hz: float, noise_figure_db: float, kelvin: float = 290.0) -> float:
    """k T B in dBm plus the noise figure."""
    return mw_to_dbm(BOLTZMANN * kelvin * bandwidth_hz * 1000.0) + noise_figure_db


KTB_20MHZ_DBM = thermal_noise_dbm(20e6, 0.0)   # -100.97 dBm: no receiver's noise floor is below it
