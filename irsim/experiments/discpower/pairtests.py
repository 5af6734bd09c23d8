"""The significance tests of the discpower study: options and the tests computed once from
the whole score matrix.

Every test of :data:`irsim.stats.TESTS` runs in discpower, as its registration says
(:class:`irsim.stats.registry.TestSpec`). The Monte Carlo ones run in the study's kernel,
sharded over pairs x replicates: those with a batched path (``batched``: the paired and
unpaired bootstrap and randomised Tukey HSD) on the batched kernels of
:mod:`irsim.stats.resample` (:mod:`~irsim.experiments.discpower.kernel`), the others (the
randomisation test) by their function on each shard's pairs (:func:`resampled_pair_asl`).
The closed-form ones are computed here at the end, in fixed blocks of pairs, by their
registered functions (:func:`closed_form_asl`): Wilcoxon (:func:`irsim.stats.wilcoxon`), sign
(:func:`irsim.stats.sign_test`), Tukey HSD (:func:`irsim.stats.tukey_hsd`) and the t test
(its batched path, two-sided p of :func:`irsim.stats.ttest.t_statistic`: scipy's
``ttest_rel``, also for a
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

from dataclasses import dataclass

import numpy as np

from irsim.kit.common import PAIR_UNIT, unit_ranges
from irsim.stats.registry import get_test
from irsim.stats.wilcoxon import WILCOXON_METHODS, ZERO_METHODS

__all__ = ["WILCOXON_METHODS", "ZERO_METHODS", "STREAM", "RANDOMISATION_STREAM",
           "TestOptions", "closed_form_asl", "resampled_pair_asl", "randomisation_asl"]

#: Random streams of the Monte Carlo tests run by their function: ``discpower/<test>``.
STREAM = "discpower"
#: Random stream of the randomisation test's sign vectors.
RANDOMISATION_STREAM = f"{STREAM}/randomisation"
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
    closed-form `test`, and the estimated difference required for p < alpha (None: not
    defined): the test's function on all pairs at once (a simultaneous test) or on fixed
    blocks of pairs (its batched path over differences where it has one), and its
    ``required_difference``.

    Parameters
    ----------
    test : str
        A closed-form test of :data:`irsim.stats.TESTS` (``t``, ``wilcoxon``, ``sign``,
        ``tukey_hsd``, ...).
    x : ndarray, shape (systems, topics)
        Per-topic values (the logs for ``AG`` metrics).
    alphas : tuple of float
    options : TestOptions
        The options a test takes by its registration (Wilcoxon's, the sign test's).

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
    spec = get_test(test)
    if spec.monte_carlo:
        raise ValueError(f"{test!r} is not a closed-form test")
    kw = spec.study_options(options)
    if spec.simultaneous:
        asl = np.asarray(spec.function(x, **kw).pvalue, np.float64)
    else:
        ia, ib = np.triu_indices(len(x), 1)
        asl = np.empty(len(ia))
        for p0, p1 in unit_ranges(0, len(ia), _BLOCK):
            asl[p0:p1] = spec.difference_pvalues(x[ia[p0:p1]] - x[ib[p0:p1]], **kw)
    if spec.required_difference is None:
        return asl, {a: None for a in alphas}
    return asl, spec.required_difference(x, alphas)


def resampled_pair_asl(test: str, x: np.ndarray, ia: np.ndarray, ib: np.ndarray, *, B: int,
                       seed: int, pvalue: str, options: TestOptions = TestOptions()
                       ) -> np.ndarray:
    """P-values of a Monte Carlo `test` without a batched path (the randomisation test) of
    the pairs ``(ia, ib)`` of `x`, by its function on these pairs (stream
    ``discpower/<test>``, unkeyed: every shard draws the same resamples, so a pair's p-value
    does not depend on the others, nor on sharding). The randomisation test is Monte Carlo
    with B sign vectors, exact when ``2**n <= B`` (as the function's ``auto``).

    Examples
    --------
    >>> x = np.array([[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3]])
    >>> resampled_pair_asl("randomisation", x, np.array([0]), np.array([1]), B=100, seed=0,
    ...                    pvalue="count").tolist()     # exact: 2**6 <= 100
    [0.0625]
    """
    spec = get_test(test)
    return spec.pvalues(x[ia], x[ib], **spec.study_options(options), B=B, seed=seed,
                        study=f"{STREAM}/{test}", pvalue_mode=pvalue).reshape(len(ia))


def randomisation_asl(x: np.ndarray, ia: np.ndarray, ib: np.ndarray, *, B: int, seed: int,
                      pvalue: str) -> np.ndarray:
    """P-values of the randomisation test (:func:`resampled_pair_asl`, stream
    :data:`RANDOMISATION_STREAM`) of the pairs ``(ia, ib)`` of `x`."""
    return resampled_pair_asl("randomisation", x, ia, ib, B=B, seed=seed, pvalue=pvalue)
