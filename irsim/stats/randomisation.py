"""Randomisation (sign-flip permutation) test of paired differences, for many pairs at once.

The statistic is the mean difference; under the null hypothesis each topic's difference
is as likely to have either sign. Monte Carlo: ``B`` random sign vectors shared by all
pairs (:func:`irsim.sampling.signs.sign_flips`), applied and counted in cache-resident
blocks (:func:`irsim.stats.resample.resampled_counts`; several alternatives in one pass).
Exact: all ``2**n`` sign vectors, enumerated as two halves of bit patterns
(:func:`irsim.sampling.signs.sign_patterns`); the ``2**n`` sums ``a + b`` are counted
against the threshold by one batched sort-merge of the half sums (meet in the middle), so
the work per pair is ``O(2**(n/2) n)`` instead of ``O(2**n n)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irsim.errors import ConfigError
from irsim.sampling.signs import sign_flips, sign_patterns
from irsim.stats._validation import (
    DEFAULT_MEMORY_BUDGET,
    check_alternatives,
    check_choice,
    monte_carlo_iv,
    paired_iv,
    row_chunks,
)
from irsim.stats.resample import resampled_counts
from irsim.stats.ties import tie_tolerance

__all__ = ["MAX_EXACT_N", "RandomisationResult", "randomisation_test"]

#: Largest n for exact enumeration (2**20 half sums per pair).
MAX_EXACT_N = 40


@dataclass(frozen=True)
class RandomisationResult:
    """Result of :func:`randomisation_test`.

    Attributes
    ----------
    statistic : ndarray
        Mean difference ``mean(x - y)``.
    pvalue : ndarray
    count : ndarray of int
        Sign vectors at least as extreme as the observed one.
    n_resamples : int
        ``B`` (Monte Carlo) or ``2**n`` (exact).
    exact : bool
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    count: np.ndarray
    n_resamples: int
    exact: bool


def _count_pairs_at_least(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per row, ``#{(i, j): a[i] + b[j] >= c}``, by one stable sort of queries and values.

    Queries ``c - a[i]`` are placed before the values ``b`` so that on equality a query
    sorts first; each value then sees exactly the queries ``<=`` it.
    """
    q = a.shape[-1]
    merged = np.concatenate([c[:, None] - a, b], axis=-1)
    order = np.argsort(merged, axis=-1, kind="stable")
    is_query = order < q
    queries_before = np.cumsum(is_query, axis=-1)
    return np.where(is_query, 0, queries_before).sum(axis=-1)


def _exact_counts(z: np.ndarray, thresholds: np.ndarray, budget: int) -> np.ndarray:
    """``#{s in {-1, 1}^n : s . z >= threshold}`` per row (threshold per row)."""
    n = z.shape[-1]
    h = n // 2
    lo, hi = sign_patterns(h), sign_patterns(n - h)
    out = np.empty(len(z), np.int64)
    per_row = 8 * 6 * (len(lo) + len(hi))
    for rows in row_chunks(len(z), per_row, budget):
        a = z[rows, :h] @ lo.T
        b = z[rows, h:] @ hi.T
        out[rows] = _count_pairs_at_least(a, b, thresholds[rows])
    return out


def randomisation_test(
    x: np.ndarray,
    y: np.ndarray | None = None,
    *,
    alternative: str | tuple[str, ...] = "two-sided",
    B: int = 10000,
    method: str = "auto",
    seed: int = 0,
    study: str = "stats/randomisation",
    key: tuple[int, ...] = (),
    pvalue_mode: str = "count",
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> RandomisationResult:
    """Paired randomisation test: random sign flips of ``z = x - y``, statistic ``mean(z)``.

    Parameters
    ----------
    x, y : array_like, shape (..., n)
        Scores (or differences in `x` when `y` is None).
    alternative : {"two-sided", "less", "greater"} or a sequence of them
        Two-sided counts ``|mean(s z)| >= |mean(z)|``; ``greater`` counts
        ``mean(s z) >= mean(z)``. Several alternatives are counted on the same sign vectors
        in one pass; ``pvalue`` and ``count`` then have a trailing axis, one entry per
        alternative (each equal to a call with that alternative alone).
    B : int
        Monte Carlo sign vectors.
    method : {"auto", "exact", "monte_carlo"}
        ``exact`` enumerates all ``2**n`` sign vectors (n <= 40); ``auto`` does so when
        ``2**n <= B`` (as scipy.stats.permutation_test), else Monte Carlo.
    seed, study, key
        Random stream of the sign vectors; vector ``b`` is the same for every pair, chunk
        and memory budget.
    pvalue_mode : {"count", "plus_one"}
        Monte Carlo p-value ``count/B`` or ``(count+1)/(B+1)``; exact p is ``count/2**n``.
    memory_budget : int
        Bytes of sign vectors held at once: all B of them (int8, ``n B`` bytes) if they fit,
        else chunks of them.

    Returns
    -------
    RandomisationResult

    Notes
    -----
    Sums are compared with a tolerance (:func:`irsim.stats.ties.tie_tolerance`,
    relative with a floor at ``TIE_RTOL * sum|z|``), so that discrete scores give exact
    p-values despite rounding. For ``n`` with
    ``2**n <= B`` the exact two-sided p-value equals scipy's ``permutation_test`` with
    ``permutation_type='samples'`` (which doubles the smaller one-sided p-value: the same
    number, as the sign-flip distribution is symmetric).

    Examples
    --------
    >>> z = np.array([0.2, 0.2, 0.2, 0.4, 0.0, 0.1, 0.0, 0.2, -0.2, 0.0,
    ...               0.1, 0.0, -0.1, 0.2, 0.3, 0.2, 0.0, -0.1, -0.1, -0.1])
    >>> r = randomisation_test(z, method="exact")
    >>> int(r.count), r.n_resamples
    (69120, 1048576)
    >>> r = randomisation_test(z, B=20000, seed=1)
    >>> bool(abs(r.pvalue - 69120 / 1048576) < 0.01)
    True
    >>> both = randomisation_test(z, B=20000, seed=1, alternative=("two-sided", "greater"))
    >>> int(both.count[0]) == int(r.count), both.pvalue.shape
    (True, (2,))
    """
    alternatives, several = check_alternatives(alternative)
    method = check_choice("randomisation method", method, ("auto", "exact", "monte_carlo"))
    mc = monte_carlo_iv(B=B, seed=seed, study=study, pvalue_mode=pvalue_mode,
                        memory_budget=memory_budget, key=key)
    d = paired_iv(x, y)
    z, n = d.values, d.n
    s_obs = z.sum(axis=-1)
    scale = np.abs(z).sum(axis=-1)  # of the sums s.z, for ties at 0
    exact = method == "exact" or (method == "auto" and n <= MAX_EXACT_N and 2**n <= mc.B)

    def result(count: np.ndarray, pvalue: np.ndarray, total: int) -> RandomisationResult:
        if not several:
            count, pvalue = count[:, 0], pvalue[:, 0]
        return RandomisationResult(d.out(s_obs / n), d.out(pvalue), d.out(count), total,
                                   exact)

    if exact:
        if n > MAX_EXACT_N:
            raise ConfigError(f"exact randomisation test enumerates 2**n sign vectors; "
                              f"n = {n} > {MAX_EXACT_N}: use method='monte_carlo'")
        tol = tie_tolerance(s_obs, scale)
        count = np.empty((len(z), len(alternatives)), np.int64)
        # all counts are of s.z >= c; the sign-flip distribution is symmetric
        for j, alt in enumerate(alternatives):
            if alt == "greater":
                count[:, j] = _exact_counts(z, s_obs - tol, mc.memory_budget)
            elif alt == "less":
                count[:, j] = _exact_counts(z, -s_obs - tol, mc.memory_budget)
            else:
                thr = np.abs(s_obs) - tol
                count[:, j] = np.where(thr > 0, 2 * _exact_counts(z, thr, mc.memory_budget),
                                       2**n)
        return result(count, count / 2**n, 2**n)
    count = np.zeros((len(z), len(alternatives)), np.int64)
    # the signs as int8 (n B bytes; the kernel converts them block by block): all B in one
    # call if they fit the memory budget, drawn in small chunks (no temporaries of the
    # budget's size); else chunks of them (8,000 resamples at the default budget). The
    # counts do not depend on the chunking
    small = max(8 * n, mc.memory_budget >> 13)
    whole = n * mc.B <= mc.memory_budget
    if whole:
        signs = np.empty((mc.B, n), np.int8)
        for start, stop in mc.replicate_chunks(small):
            signs[start:stop] = sign_flips(mc.seed, mc.study, n, start, stop, key=mc.key,
                                           dtype=np.int8)
        count += resampled_counts(z, signs, s_obs, alternatives, scale)
        return result(count, mc.pvalue(count), mc.B)
    for start, stop in mc.replicate_chunks(small):
        signs = sign_flips(mc.seed, mc.study, n, start, stop, key=mc.key, dtype=np.int8)
        count += resampled_counts(z, signs, s_obs, alternatives, scale)
    return result(count, mc.pvalue(count), mc.B)
