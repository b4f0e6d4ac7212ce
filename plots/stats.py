"""Confidence intervals for comparing two runs over their repetitions (no SciPy needed).

Two runs A (the baseline) and B give, per variant and flow, independent samples of a metric (one
value per repetition).  The comparison report shows, at 95 %:

- the difference of the means, B - A, with **Welch's t interval** (unequal variances; the degrees
  of freedom by the Welch-Satterthwaite equation): B. L. Welch, "The generalization of 'Student's'
  problem when several different population variances are involved", Biometrika 34 (1947) 28-35;
- the ratio of the means, B / A, with **Fieller's interval**: E. C. Fieller, "Some problems in
  interval estimation", J. R. Statist. Soc. B 16 (1954) 175-185, for independent samples with
  unequal variances and Welch-Satterthwaite degrees of freedom as in A. C. Tamhane and B. R. Logan,
  "Finding the maximum safe dose level for heteroscedastic data", J. Biopharm. Stat. 14 (2004)
  843-856.  Fieller's set is bounded only when A's mean is distinguishable from 0 at that level
  (``m_a^2 > t^2 v_a``); otherwise there is no finite interval and :func:`fieller_ratio` says so,
  where the delta method would print a misleadingly finite one.

The t quantile comes from the regularized incomplete beta function (continued fraction, as in
Numerical Recipes, 3rd ed., section 6.4), bisected; :func:`t_quantile` is checked against tables.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

__all__ = ["Sample", "Interval", "t_quantile", "welch_difference", "fieller_ratio"]

LEVEL = 0.95


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
    """A point estimate and its confidence interval; ``lo``/``hi`` None with a ``why`` when there is none."""

    estimate: float
    lo: float | None
    hi: float | None
    why: str = ""


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


def _usable(a: Sample, b: Sample) -> str:
    if a.n < 2 or b.n < 2:
        return "needs 2 repetitions on each side"
    return ""


def welch_difference(a: Sample, b: Sample, level: float = LEVEL) -> Interval:
    """B - A with Welch's t interval."""
    est = b.mean - a.mean
    why = _usable(a, b)
    if why:
        return Interval(est, None, None, why)
    se2 = a.se2 + b.se2
    if se2 == 0:   # every repetition equal on both sides: the difference is exact
        return Interval(est, est, est)
    half = t_quantile(0.5 + level / 2, _welch_df([(a.se2, a.n), (b.se2, b.n)])) * math.sqrt(se2)
    return Interval(est, est - half, est + half)


def fieller_ratio(a: Sample, b: Sample, level: float = LEVEL) -> Interval:
    """B / A with Fieller's interval (independent samples, Welch-Satterthwaite df at the estimate)."""
    if a.mean == 0:
        return Interval(math.nan, None, None, "the baseline's mean is 0")
    est = b.mean / a.mean
    why = _usable(a, b)
    if why:
        return Interval(est, None, None, why)
    if a.se2 == 0 and b.se2 == 0:
        return Interval(est, est, est)
    df = _welch_df([(b.se2, b.n), (est * est * a.se2, a.n)])
    q = t_quantile(0.5 + level / 2, df) ** 2
    # {rho : (m_b - rho m_a)^2 <= q (v_b + rho^2 v_a)}: a quadratic in rho
    qa = a.mean * a.mean - q * a.se2
    if qa <= 0:
        return Interval(est, None, None, "unbounded: the baseline's mean is not distinguishable from 0")
    qb = a.mean * b.mean
    qc = b.mean * b.mean - q * b.se2
    root = math.sqrt(max(qb * qb - qa * qc, 0.0))
    return Interval(est, (qb - root) / qa, (qb + root) / qa)
