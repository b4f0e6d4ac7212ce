"""plots/stats.py: every interval of the reports, against SciPy's results on fixed data.

SciPy is not a dependency of the project; the reference numbers below were computed once with SciPy 1.17.1
(``scipy.stats.ttest_rel(B, A).confidence_interval()``, ``ttest_ind(B, A, equal_var=False)`` and
``scipy.stats.t.ppf``; the log-scale delta intervals with ``numpy.cov`` and ``t.ppf(0.975, df)`` in the
formulas of the module docstring) and written here.
"""
from __future__ import annotations

import math

import pytest

from plots.stats import (MIN_REPETITIONS, Sample, compare, log_ratio, mean_interval, paired_by_seed, paired_difference,
                         paired_log_ratio, t_quantile, welch_difference)

A = [5.1, 4.8, 5.6, 5.0, 4.7]
B = [5.9, 5.2, 6.3, 5.8, 5.1]     # B = A + about 0.6, seed by seed


@pytest.mark.parametrize("df, expected", [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281),
                                          (30, 2.0423), (1e9, 1.9600)])
def test_t_quantile_matches_the_tables(df: float, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("df, scipy_ppf", [(2.5, 3.5746548420036817), (3.7, 2.8675207071911895),
                                           (7.3, 2.345066736547703)])
def test_t_quantile_at_fractional_df_matches_scipy(df: float, scipy_ppf: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(scipy_ppf, rel=1e-9)


def test_paired_difference_matches_scipy_ttest_rel() -> None:
    iv = paired_difference(list(zip(A, B)))
    assert (iv.estimate, iv.lo, iv.hi) == pytest.approx((0.62, 0.3655346028508295, 0.8744653971491707), rel=1e-9)
    assert iv.significant and iv.method == "paired t"


def test_welch_difference_matches_scipy_ttest_ind() -> None:
    iv = welch_difference(Sample.of(A), Sample.of(B))
    assert (iv.lo, iv.hi) == pytest.approx((-0.02576950356094454, 1.2657695035609464), rel=1e-9)
    # the same values unpaired: the seeds' shared luck is not used, and 0 is inside
    assert not iv.significant
    iv2 = welch_difference(Sample.of([31, 12, 44, 27]), Sample.of([9, 3, 20, 11, 15]))
    assert (iv2.lo, iv2.hi) == pytest.approx((-36.60463747900141, 2.8046374790014106), rel=1e-9)


def test_log_ratio_delta_method_matches_the_reference() -> None:
    iv = log_ratio(Sample.of([31, 12, 44, 27]), Sample.of([9, 3, 20, 11, 15]))
    assert (iv.estimate, iv.lo, iv.hi) == pytest.approx(
        (0.4070175438596491, 0.1829260126032187, 0.9056299793123377), rel=1e-9)
    assert iv.significant and iv.null == 1.0
    # symmetric on the log scale, not around the estimate
    assert math.log(iv.hi / iv.estimate) == pytest.approx(math.log(iv.estimate / iv.lo))


def test_paired_log_ratio_matches_the_reference() -> None:
    iv = paired_log_ratio(list(zip([40, 35, 52, 38], [12, 15, 19, 10])))
    assert (iv.estimate, iv.lo, iv.hi) == pytest.approx(
        (0.3393939393939394, 0.2487085261014032, 0.46314554592460005), rel=1e-9)


def test_a_ratio_of_noisy_counts_never_goes_below_zero() -> None:
    """Counts with a wide spread: the Fieller interval this replaced gave 0.86 [-1.84, 184.16]."""
    for iv in (log_ratio(Sample.of([1, 30, 2]), Sample.of([0, 25, 3])),
               paired_log_ratio([(1, 0), (30, 25), (2, 3)])):
        assert iv.lo is not None and iv.hi is not None
        assert 0 < iv.lo < iv.estimate < iv.hi


def test_too_few_repetitions_or_no_spread_give_no_interval_and_say_why() -> None:
    assert MIN_REPETITIONS == 3
    two = [welch_difference(Sample.of([1, 3]), Sample.of([2, 6])), log_ratio(Sample.of([1, 3]), Sample.of([2, 6])),
           paired_difference([(1, 2), (3, 6)]), paired_log_ratio([(1, 2), (3, 6)])]
    for iv in two:
        assert iv.lo is None and iv.hi is None and not iv.significant
        assert iv.why == "no interval: 2 repetitions on a side, needs 3"
    flat = [welch_difference(Sample.of([5, 5, 5]), Sample.of([7, 7, 7])),
            paired_difference([(5, 7), (6, 8), (9, 11)]),          # the differences do not vary
            paired_log_ratio([(1, 2), (2, 4), (3, 6)]),            # B = 2 A, seed by seed
            log_ratio(Sample.of([4, 4, 4]), Sample.of([2, 2, 2]))]
    for iv in flat:
        assert iv.lo is None and "no spread" in iv.why and not iv.significant
    assert flat[0].estimate == 2.0 and flat[2].estimate == 2.0
    zero = log_ratio(Sample.of([0, 0, 0]), Sample.of([1, 2, 3]))
    assert zero.lo is None and "baseline's mean is not positive" in zero.why


def test_compare_pairs_by_seed_only_when_the_seeds_are_the_same() -> None:
    a = {1: 5.1, 2: 4.8, 3: 5.6, 4: 5.0, 5: 4.7}
    b = {1: 5.9, 2: 5.2, 3: 6.3, 4: 5.8, 5: 5.1}
    c = compare(a, b)
    assert c.paired and c.diff.method == "paired t" and c.diff.significant
    other = compare(a, {k + 10: v for k, v in b.items()})
    assert not other.paired and other.diff.method == "Welch" and not other.diff.significant
    assert paired_by_seed({1: 1.0}, {2: 1.0}) is None and paired_by_seed({}, {}) is None


def test_the_mean_interval_matches_scipy_t_interval() -> None:
    """scipy.stats.t.interval(0.95, 4, loc=mean(A), scale=sem(A)) = (4.60453160093349, 5.47546839906651)."""
    iv = mean_interval(Sample.of(A))
    assert (iv.estimate, iv.lo, iv.hi) == pytest.approx((5.04, 4.60453160093349, 5.47546839906651), rel=1e-9)
    assert not iv.significant      # nothing to exclude: a mean is not a comparison
    assert mean_interval(Sample.of([1, 2])).lo is None and mean_interval(Sample.of([3, 3, 3])).why.endswith(
        "(every repetition gave the same value)")
