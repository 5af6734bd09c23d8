"""The significance tests of the discpower study: names, options and the tests computed once
from the whole score matrix.

Every test of :mod:`irsim.stats` runs in discpower. The Monte Carlo ones run in the study's
kernel, sharded over pairs x replicates: the paired and unpaired bootstrap and randomised
Tukey HSD on the batched kernels of :mod:`irsim.stats.resample`
(:mod:`~irsim.experiments.discpower.kernel`), the randomisation test by
:func:`irsim.stats.randomisation_test` on each shard's pairs (:func:`randomisation_asl`).
The others are computed here at the end, in fixed blocks of pairs, by the functions of
:mod:`irsim.stats` (:func:`closed_form_asl`): Wilcoxon (:func:`irsim.stats.wilcoxon`), sign
(:func:`irsim.stats.sign_test`), Tukey HSD (:func:`irsim.stats.tukey_hsd`) and the t test
(two-sided p of :func:`irsim.stats.ttest.t_statistic`: scipy's ``ttest_rel``, also for a
pair whose differences are a constant non-zero value: t = +-inf and p = 0; a pair whose
differences are all 0, such as two identical runs, gets p = 1 where scipy gives NaN: no
evidence of a difference, never significant, and no NaN in the tables, the corrections or
the agreement of tests).

The estimated difference required for ASL < alpha, as far as a test defines one: t,
``t(1 - alpha/2, n-1) sd / sqrt(n)`` max over pairs; Tukey HSD, the honestly significant
difference ``q(1 - alpha; k, (k-1)(n-1)) sqrt(MS_error / n)``; the bootstrap tests and
randomised Tukey HSD, as in Sakai (2006) (:mod:`irsim.experiments.discpower`). Wilcoxon and
the sign test are rank and sign statistics (no difference of scores reaches significance by
itself): null. The randomisation test's analogue of the bootstrap's (the ceil(alpha B)-th
largest ``|mean(s z)|`` per pair) would need the sign-flip sums, which
:func:`irsim.stats.randomisation_test` does not return: not computed (null).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from irsim.kit.common import PAIR_UNIT, unit_ranges
from irsim.stats.anova import anova_two_way, tukey_hsd
from irsim.stats.randomisation import randomisation_test
from irsim.stats.registry import SIMULTANEOUS
from irsim.stats.sign import sign_test
from irsim.stats.ttest import t_statistic
from irsim.stats.wilcoxon import WILCOXON_METHODS, ZERO_METHODS, wilcoxon

__all__ = ["TESTS", "RESAMPLED", "CLOSED_FORM", "SIMULTANEOUS", "WILCOXON_METHODS",
           "ZERO_METHODS", "RANDOMISATION_STREAM", "TestOptions", "closed_form_asl",
           "randomisation_asl"]

#: Tests discpower runs, by config name (those of :data:`irsim.stats.TESTS`).
TESTS = ("paired_bootstrap", "unpaired_bootstrap", "t", "randomised_tukey_hsd", "wilcoxon",
         "sign", "randomisation", "tukey_hsd")
#: Tests drawing random replicates (computed by the study's kernel).
RESAMPLED = ("paired_bootstrap", "unpaired_bootstrap", "randomised_tukey_hsd", "randomisation")
#: Tests computed once from the whole matrix.
CLOSED_FORM = ("t", "wilcoxon", "sign", "tukey_hsd")
#: Random stream of the randomisation test's sign vectors.
RANDOMISATION_STREAM = "discpower/randomisation"
#: Pairs per block of the closed-form tests (bounds memory; results do not depend on it).
_BLOCK = 8 * PAIR_UNIT


@dataclass(frozen=True)
class TestOptions:
    """Options of the tests that have them (as :func:`irsim.stats.wilcoxon`,
    :func:`irsim.stats.sign_test`).

    Attributes
    ----------
    wilcoxon_method : {"auto", "exact", "approx", "r"}
    wilcoxon_correction : bool
        Continuity correction of the normal approximation.
    wilcoxon_zero_method : {"wilcox", "pratt"}
    sign_threshold : float
        Differences ``|z| <= threshold`` are ties of the sign test (dropped).
    """

    __test__ = False  # not a pytest class

    wilcoxon_method: str = "auto"
    wilcoxon_correction: bool = False
    wilcoxon_zero_method: str = "wilcox"
    sign_threshold: float = 0.0


def closed_form_asl(test: str, x: np.ndarray, alphas: tuple[float, ...],
                    options: TestOptions = TestOptions()
                    ) -> tuple[np.ndarray, dict[float, float | None]]:
    """Two-sided p-values of every system pair of `x` (pairs ``a < b`` in row-major order) by
    `test`, and the estimated difference required for p < alpha (None: not defined).

    Parameters
    ----------
    test : {"t", "wilcoxon", "sign", "tukey_hsd"}
    x : ndarray, shape (systems, topics)
        Per-topic values (the logs for ``AG`` metrics).
    alphas : tuple of float
    options : TestOptions

    Returns
    -------
    asl : ndarray, shape (pairs,)
    estimated : dict
        Per alpha, the estimated difference (t, Tukey HSD) or None.

    Examples
    --------
    >>> x = np.array([[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3],
    ...               [0.6, 0.2, 0.1, 0.3, 0.2, 0.3]])
    >>> p, est = closed_form_asl("tukey_hsd", x, (0.05,))
    >>> p.round(4).tolist(), round(est[0.05], 4)
    ([0.0073, 0.0232, 0.7615], 0.1281)
    >>> p, est = closed_form_asl("sign", x, (0.05,))
    >>> p.tolist(), est
    ([0.0625, 0.03125, 0.375], {0.05: None})
    """
    k, n = x.shape
    ia, ib = np.triu_indices(k, 1)
    P = len(ia)
    if test == "tukey_hsd":
        res = anova_two_way(x)
        se = math.sqrt(float(res.ms_error) / n)
        est = {a: float(sps.studentized_range.isf(a, k, res.df_error)) * se for a in alphas}
        return tukey_hsd(x).pvalue, est
    asl = np.empty(P)
    sd = np.empty(P) if test == "t" else None
    for p0, p1 in unit_ranges(0, P, _BLOCK):
        z = x[ia[p0:p1]] - x[ib[p0:p1]]
        if test == "t":
            # all-zero differences: scipy's NaN reported as p = 1 (identical runs)
            asl[p0:p1] = np.nan_to_num(2.0 * sps.t.sf(np.abs(t_statistic(z)), df=n - 1),
                                       nan=1.0)
            sd[p0:p1] = z.std(axis=1, ddof=1)
        elif test == "wilcoxon":
            asl[p0:p1] = wilcoxon(z, method=options.wilcoxon_method,
                                  correction=options.wilcoxon_correction,
                                  zero_method=options.wilcoxon_zero_method).pvalue
        elif test == "sign":
            asl[p0:p1] = sign_test(z, threshold=options.sign_threshold).pvalue
        else:
            raise ValueError(f"{test!r} is not a closed-form test of discpower")
    if sd is None:
        return asl, {a: None for a in alphas}
    # the smallest |mean| with p < alpha, max over pairs
    return asl, {a: float((sps.t.isf(a / 2, df=n - 1) * sd / math.sqrt(n)).max())
                 for a in alphas}


def randomisation_asl(x: np.ndarray, ia: np.ndarray, ib: np.ndarray, *, B: int, seed: int,
                      pvalue: str) -> np.ndarray:
    """P-values of the randomisation test (:func:`irsim.stats.randomisation_test`, stream
    :data:`RANDOMISATION_STREAM`) of the pairs ``(ia, ib)`` of `x`: the same sign vectors
    for every pair, so a pair's p-value does not depend on the others (nor on sharding).
    Monte Carlo with B sign vectors, exact when ``2**n <= B`` (as the function's ``auto``).

    Examples
    --------
    >>> x = np.array([[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3]])
    >>> randomisation_asl(x, np.array([0]), np.array([1]), B=100, seed=0,
    ...                   pvalue="count").tolist()     # exact: 2**6 <= 100
    [0.0625]
    """
    return np.asarray(randomisation_test(x[ia], x[ib], B=B, seed=seed,
                                         study=RANDOMISATION_STREAM, pvalue_mode=pvalue
                                         ).pvalue, np.float64).reshape(len(ia))
