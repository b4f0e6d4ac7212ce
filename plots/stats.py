"""Every confidence interval of the reports: B against a baseline A over repetitions (no SciPy needed).

A and B are two variants of one run (B against the run's baseline variant) or the same variant of
two runs (B against the first run); each gives one value of a metric per repetition.  At 95 %:

- the difference of the means, B - A: **paired t** on the per-seed differences when both sides ran
  the same seeds (variants of one run do: every variant uses the same seed list, so the pairs share
  their random losses), else **Welch's t** (unequal variances, Welch-Satterthwaite degrees of
  freedom: B. L. Welch, Biometrika 34 (1947) 28-35);
- the ratio of the means, B / A, by the **delta method on the log scale**: log(m_b / m_a) plus or
  minus t times the standard error of log m_b - log m_a (squared: se_b^2/m_b^2 + se_a^2/m_a^2, less
  2 cov/(n m_a m_b) when paired), then exponentiated, so that the interval of a ratio of counts
  never goes below 0 (the replaced Fieller interval printed ``0.86 [-1.84, 184.16]`` on 2 repetitions).
  Degrees of freedom: n - 1 paired, Welch-Satterthwaite on the log-scale terms otherwise.

When an interval is not evidence it is not given, and ``why`` says so: fewer than MIN_REPETITIONS
values on a side (with 2, a t interval has 1 degree of freedom and means little), no spread at all
(every repetition gave the same value), or a ratio whose baseline mean is not positive.

The t quantile comes from the regularized incomplete beta function (continued fraction, as in
Numerical Recipes, 3rd ed., section 6.4), bisected; :func:`t_quantile` is checked against tables.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

__all__ = ["MIN_REPETITIONS", "Sample", "Interval", "Comparison", "t_quantile", "mean_interval", "welch_difference",
           "paired_difference", "log_ratio", "paired_log_ratio", "compare", "paired_by_seed"]

LEVEL = 0.95
MIN_REPETITIONS = 3   # fewer on a side: no interval is shown (the module docstring)


@dataclass(frozen=True)
class Sample:
    """Mean, sample variance (ddof 1) and size of one run's values of a metric."""

    mean: float
    var: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> "Sample":
        vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        n = len(vals)
        if not n:
            return cls(math.nan, math.nan, 0)
        mean = math.fsum(vals) / n
        var = math.fsum((v - mean) ** 2 for v in vals) / (n - 1) if n > 1 else math.nan
        if var <= 1e-24 * max(1.0, mean * mean):   # equal values: no round-off spread
            var = 0.0
        return cls(mean, var, n)

    @property
    def se2(self) -> float:
        """Squared standard error of the mean."""
        return self.var / self.n


@dataclass(frozen=True)
class Interval:
    """A point estimate and its confidence interval; ``lo``/``hi`` None with a ``why`` when there is none.

    ``null`` is the value of "no difference" (0 for B - A, 1 for B / A); ``method`` names the rule."""

    estimate: float
    lo: float | None
    hi: float | None
    why: str = ""
    null: float = 0.0
    method: str = ""

    @property
    def significant(self) -> bool:
        """True when there is an interval and it excludes the null value (never for a mean alone: null NaN)."""
        return (self.lo is not None and self.hi is not None and not math.isnan(self.null)
                and not self.lo <= self.null <= self.hi)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes 6.4)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _t_sf(t: float, df: float) -> float:
    """P(T > t) for t >= 0, Student's t with ``df`` degrees of freedom."""
    return 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile (p in (0.5, 1)) of Student's t with ``df`` > 0 (real) degrees of freedom."""
    if not 0.5 < p < 1.0 or not df > 0:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and df > 0, got p={p}, df={df}")
    z = NormalDist().inv_cdf(p)
    if df > 1e7:
        return z
    lo, hi = 0.0, max(2.0 * z, 1.0)
    while _t_sf(hi, df) > 1.0 - p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _t_sf(mid, df) > 1.0 - p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


def _welch_df(terms: Sequence[tuple[float, int]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of squared standard errors (se2, n)."""
    total = sum(se2 for se2, _n in terms)
    return total * total / sum(se2 * se2 / (n - 1) for se2, n in terms if se2 > 0)


def _too_few(*sizes: int) -> str:
    n = min(sizes)
    if n < MIN_REPETITIONS:
        return f"no interval: {n} repetition{'s' if n != 1 else ''} on a side, needs {MIN_REPETITIONS}"
    return ""


NO_SPREAD = "no interval: no spread (every repetition gave the same value)"


def _t(df: float, level: float) -> float:
    return t_quantile(0.5 + level / 2, df)


def mean_interval(a: Sample, level: float = LEVEL) -> Interval:
    """The mean of one sample with its t interval (n - 1 degrees of freedom); ``null`` is NaN (nothing to exclude)."""
    why = _too_few(a.n)
    if why:
        return Interval(a.mean, None, None, why, math.nan, "t")
    if a.var == 0:
        return Interval(a.mean, None, None, NO_SPREAD, math.nan, "t")
    half = _t(a.n - 1, level) * math.sqrt(a.se2)
    return Interval(a.mean, a.mean - half, a.mean + half, "", math.nan, "t")


def welch_difference(a: Sample, b: Sample, level: float = LEVEL) -> Interval:
    """B - A with Welch's t interval (independent samples)."""
    est = b.mean - a.mean
    why = _too_few(a.n, b.n)
    if why:
        return Interval(est, None, None, why, 0.0, "Welch")
    se2 = a.se2 + b.se2
    if se2 == 0:
        return Interval(est, None, None, NO_SPREAD, 0.0, "Welch")
    half = _t(_welch_df([(a.se2, a.n), (b.se2, b.n)]), level) * math.sqrt(se2)
    return Interval(est, est - half, est + half, "", 0.0, "Welch")


def _pairs(pairs: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in pairs if math.isfinite(float(x)) and math.isfinite(float(y))]


def paired_difference(pairs: Sequence[tuple[float, float]], level: float = LEVEL) -> Interval:
    """B - A with the paired t interval: ``pairs`` are (a, b) of the same seed."""
    pairs = _pairs(pairs)
    d = Sample.of([y - x for x, y in pairs])
    why = _too_few(d.n)
    if why:
        return Interval(d.mean, None, None, why, 0.0, "paired t")
    if d.var == 0:
        return Interval(d.mean, None, None, NO_SPREAD, 0.0, "paired t")
    half = _t(d.n - 1, level) * math.sqrt(d.se2)
    return Interval(d.mean, d.mean - half, d.mean + half, "", 0.0, "paired t")


def _log_interval(est: float, var_log: float, df: float, level: float, method: str) -> Interval:
    half = _t(df, level) * math.sqrt(var_log)
    return Interval(est, est * math.exp(-half), est * math.exp(half), "", 1.0, method)


def _ratio_undefined(ma: float, mb: float) -> str:
    if not ma > 0:
        return "no ratio: the baseline's mean is not positive"
    if not mb > 0:
        return "no interval: B's mean is 0 (the log scale needs positive means)"
    return ""


def log_ratio(a: Sample, b: Sample, level: float = LEVEL) -> Interval:
    """B / A (ratio of the means), delta method on the log scale, Welch-Satterthwaite df (independent samples)."""
    method = "log-scale delta, Welch df"
    est = b.mean / a.mean if a.n and a.mean > 0 else math.nan
    why = _ratio_undefined(a.mean, b.mean) or _too_few(a.n, b.n)
    if why:
        return Interval(est, None, None, why, 1.0, method)
    terms = [(a.se2 / (a.mean * a.mean), a.n), (b.se2 / (b.mean * b.mean), b.n)]
    var_log = terms[0][0] + terms[1][0]
    if var_log == 0:
        return Interval(est, None, None, NO_SPREAD, 1.0, method)
    return _log_interval(est, var_log, _welch_df(terms), level, method)


def paired_log_ratio(pairs: Sequence[tuple[float, float]], level: float = LEVEL) -> Interval:
    """B / A (ratio of the means) of (a, b) pairs of the same seed: delta method on the log scale with the
    pairs' covariance, n - 1 degrees of freedom."""
    method = "log-scale delta, paired"
    pairs = _pairs(pairs)
    a, b = Sample.of([x for x, _ in pairs]), Sample.of([y for _, y in pairs])
    est = b.mean / a.mean if a.n and a.mean > 0 else math.nan
    why = _ratio_undefined(a.mean, b.mean) or _too_few(a.n)
    if why:
        return Interval(est, None, None, why, 1.0, method)
    n = len(pairs)
    cov = math.fsum((x - a.mean) * (y - b.mean) for x, y in pairs) / (n - 1)
    var_log = a.se2 / a.mean ** 2 + b.se2 / b.mean ** 2 - 2 * cov / (n * a.mean * b.mean)
    if var_log <= 1e-24:   # B proportional to A seed by seed (or no spread): the ratio is exact
        return Interval(est, None, None, NO_SPREAD, 1.0, method)
    return _log_interval(est, var_log, n - 1, level, method)


def paired_by_seed(a: dict[object, float], b: dict[object, float]) -> list[tuple[float, float]] | None:
    """The (a, b) pairs of each seed when both sides ran the same seeds (each once), else None."""
    if not a or set(a) != set(b):
        return None
    return [(a[k], b[k]) for k in a]


@dataclass(frozen=True)
class Comparison:
    """B against A: both samples, B - A and B / A with their intervals, and whether they were paired."""

    a: Sample
    b: Sample
    diff: Interval
    ratio: Interval
    paired: bool


def compare(a: dict[object, float], b: dict[object, float], level: float = LEVEL) -> Comparison:
    """B against A, values keyed by seed: paired by seed where the seeds are the same, Welch otherwise."""
    sa, sb = Sample.of(list(a.values())), Sample.of(list(b.values()))
    pairs = paired_by_seed(a, b)
    if pairs is not None:
        return Comparison(sa, sb, paired_difference(pairs, level), paired_log_ratio(pairs, level), True)
    return Comparison(sa, sb, welch_difference(sa, sb, level), log_ratio(sa, sb, level), False)
