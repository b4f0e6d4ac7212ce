"""Numbers as the report's tables print them: plain notation (never ``1.8e+04``), sensible precision.

One rule for every table of report.md (and the comparison's): integers as integers; other values
to 3 significant digits but never fewer than the integer part (18000.4 -> ``18000``, 4.476 ->
``4.48``, 0.012345 -> ``0.0123``); a spread (std, interval half-width) to the decimals of the value
it goes with, so ``mean ± std`` line up.
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["decimals", "plain", "plain_at", "mean_std"]

SIGNIFICANT = 3


def decimals(value: float) -> int:
    """Decimals that show ``value`` to SIGNIFICANT significant digits (0 for |value| >= 10^(SIGNIFICANT-1))."""
    if value == 0 or not math.isfinite(value):
        return 0
    return max(0, SIGNIFICANT - 1 - math.floor(math.log10(abs(value))))


def plain_at(value: float, places: int) -> str:
    """``value`` with ``places`` decimals, plain notation; ``-0`` printed as ``0``."""
    if not math.isfinite(value):
        return "" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    text = f"{value:.{places}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def plain(value: Any) -> str:
    """One table cell: '' for None/NaN, integers (and integral floats) as integers, else SIGNIFICANT digits."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(f):
        return ""
    if f.is_integer() and abs(f) < 1e15:
        return str(int(f))
    return plain_at(f, decimals(f))


def mean_std(values: list[float]) -> str:
    """``mean ± std`` (ddof 1) in plain notation, the std to the mean's decimals; one value alone; '' if none."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return ""
    if len(vals) == 1:
        return plain(vals[0])
    mean = math.fsum(vals) / len(vals)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
    if std <= 1e-9 * max(1.0, abs(mean)):  # equal values: hide float round-off
        std = 0.0
    places = decimals(mean) if mean else decimals(std)
    return f"{plain_at(mean, places)} ± {plain_at(std, places)}"
