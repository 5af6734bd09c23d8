"""Wilcoxon signed-rank test for many pairs at once: exact, normal approximation, R mode.

Ranks of ``|z|`` are computed for all pairs at once (average ranks for ties). The exact
null distribution of ``W+`` given the observed ranks comes from a dynamic programme over
doubled ranks (integers even with ties), run once per distinct rank multiset: for untied
pairs it is the classical Wilcoxon distribution, with ties it is the exact permutation
(sign-flip) distribution of the rank statistic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from irsim.params import Choice
from irsim.stats._validation import (
    DEFAULT_MEMORY_BUDGET,
    check_alternative,
    check_choice,
    check_int,
    paired_iv,
    row_chunks,
)

__all__ = ["WILCOXON_METHODS", "WilcoxonResult", "wilcoxon"]



class WilcoxonMethod(Choice):
    """How the signed-rank test's p-value is computed (:func:`wilcoxon`)."""

    auto = "auto"
    exact = "exact"
    approx = "approx"
    r = "r"


class ZeroMethod(Choice):
    """Zero differences in the signed-rank test: dropped or ranked (:func:`wilcoxon`)."""

    wilcox = "wilcox"
    pratt = "pratt"


WILCOXON_METHODS = WilcoxonMethod.values()
ZERO_METHODS = ZeroMethod.values()


@dataclass(frozen=True)
class WilcoxonResult:
    """Result of :func:`wilcoxon`.

    Attributes
    ----------
    statistic : ndarray
        ``W+``, the sum of the ranks of the positive differences (R's ``V``; scipy reports
        ``min(W+, W-)`` for two-sided tests).
    pvalue : ndarray
    r_minus : ndarray
        ``W-``.
    zstatistic : ndarray
        Normal deviate of the approximation (with the continuity correction if used);
        NaN where the exact distribution was used.
    exact : ndarray of bool
        Whether the p-value is exact.
    n : ndarray of int
        Differences ranked (nonzero ones for ``zero_method='wilcox'``).
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    r_minus: np.ndarray
    zstatistic: np.ndarray
    exact: np.ndarray
    n: np.ndarray


def _doubled_ranks(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Twice the average ranks (1-based) of each row of `a`, and each element's tie size."""
    p, n = a.shape
    order = np.argsort(a, axis=-1, kind="stable")
    s = np.take_along_axis(a, order, axis=-1)
    idx = np.broadcast_to(np.arange(n), (p, n))
    new = np.ones((p, n), dtype=bool)
    new[:, 1:] = s[:, 1:] != s[:, :-1]
    last = np.ones((p, n), dtype=bool)
    last[:, :-1] = new[:, 1:]
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    end = np.minimum.accumulate(np.where(last, idx, n - 1)[:, ::-1], axis=-1)[:, ::-1]
    r2, ties = np.empty((p, n), np.int64), np.empty((p, n), np.int64)
    np.put_along_axis(r2, order, start + end + 2, axis=-1)
    np.put_along_axis(ties, order, end - start + 1, axis=-1)
    return r2, ties


def _exact_tails(values: np.ndarray, w2: np.ndarray, budget: int) -> tuple[np.ndarray, ...]:
    """``P(W2 >= w2)`` and ``P(W2 <= w2)`` where ``W2 = sum_i s_i values_i``, s_i fair 0/1.

    `values` (rows, n) are non-negative integers (doubled ranks, 0 = not signed).
    """
    key = np.sort(values, axis=-1)
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    length = int(uniq.sum(axis=-1).max()) + 1
    ge, le = np.empty(len(values)), np.empty(len(values))
    for rows in row_chunks(len(uniq), 8 * 5 * length, budget):
        u = uniq[rows]
        prob = np.zeros((len(u), length))
        prob[:, 0] = 1.0
        pos = np.arange(length)
        for i in range(u.shape[1]):
            v = u[:, i]
            if not v.any():
                continue
            src = pos[None, :] - v[:, None]
            shifted = np.take_along_axis(prob, np.maximum(src, 0), axis=-1)
            shifted[src < 0] = 0.0
            prob += shifted
            prob *= 0.5
        sf = np.cumsum(prob[:, ::-1], axis=-1)[:, ::-1]  # P(W2 >= s), accurate in the tail
        cdf = np.cumsum(prob, axis=-1)  # P(W2 <= s)
        mine = (inverse >= rows.start) & (inverse < rows.stop)
        local, obs = inverse[mine] - rows.start, w2[mine]
        ge[mine], le[mine] = sf[local, obs], cdf[local, obs]
    return np.minimum(ge, 1.0), np.minimum(le, 1.0)


def wilcoxon(
    x: np.ndarray,
    y: np.ndarray | None = None,
    *,
    alternative: str = "two-sided",
    method: str = "auto",
    correction: bool = False,
    zero_method: str = "wilcox",
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> WilcoxonResult:
    """Wilcoxon signed-rank test of the differences ``z = x - y`` for every pair.

    Parameters
    ----------
    x, y : array_like, shape (..., n)
        Scores (or differences in `x` when `y` is None).
    alternative : {"two-sided", "less", "greater"}
        ``greater``: the differences tend to be positive.
    method : {"auto", "exact", "approx", "r"}
        ``exact``: the exact null distribution of ``W+`` given the observed ranks (the
        classical one without ties). ``approx``: normal approximation with tie-corrected
        variance, plus a continuity correction of 0.5 if `correction`. ``auto``: exact for
        pairs with at most 50 untied ranks or at most 13 differences, approximate
        otherwise. ``r``: R's ``wilcox.test(x, y, paired = TRUE)`` defaults - exact when
        fewer than 50 nonzero differences without ties or zeros, else the approximation
        with continuity correction (this reproduces published p-values).
    correction : bool
        Continuity correction of the approximation (``approx``/``auto``).
    zero_method : {"wilcox", "pratt"}
        ``wilcox`` drops zero differences (R, scipy's default); ``pratt`` ranks them and
        then ignores them in ``W+``.
    memory_budget : int
        Bytes for the exact distributions of one chunk of pairs.

    Returns
    -------
    WilcoxonResult
        A pair without any nonzero difference has p = 1.

    Notes
    -----
    Ties are exact float equalities of ``|z|``, as in R and scipy.

    Examples
    --------
    >>> z = np.array([0.12, -0.03, 0.25, 0.08, 0.31, -0.02, 0.17, 0.09])
    >>> r = wilcoxon(z, method="exact")
    >>> float(r.statistic), round(float(r.pvalue), 6)
    (33.0, 0.039062)
    >>> r = wilcoxon(z, method="approx", correction=True, alternative="greater")
    >>> round(float(r.zstatistic), 4), round(float(r.pvalue), 6)
    (2.0304, 0.021158)
    """
    alternative = check_alternative(alternative)
    method = check_choice("wilcoxon method", method, WILCOXON_METHODS)
    zero_method = check_choice("zero_method", zero_method, ZERO_METHODS)
    budget = check_int("memory_budget", memory_budget, 1)
    d = paired_iv(x, y)
    z = d.values
    zero = z == 0.0
    n0 = np.count_nonzero(zero, axis=-1)
    r2, ties = _doubled_ranks(np.abs(z))
    if zero_method == "wilcox":
        r2 = np.where(zero, 0, r2 - 2 * n0[:, None])
        count = z.shape[-1] - n0
        n_all, n_zero = count, np.zeros_like(n0)
    else:
        r2 = np.where(zero, 0, r2)
        count = np.full_like(n0, z.shape[-1])
        n_all, n_zero = count, n0
    tie_term = np.where(zero, 0, ties * ties - 1).sum(axis=-1)  # sum over groups t^3 - t
    has_ties = ((ties > 1) & ~zero).any(axis=-1)
    w2_plus = np.where(z > 0, r2, 0).sum(axis=-1)
    w2_minus = np.where(z < 0, r2, 0).sum(axis=-1)

    if method == "exact":
        exact = np.ones(len(z), dtype=bool)
    elif method == "approx":
        exact = np.zeros(len(z), dtype=bool)
    elif method == "auto":
        exact = ((count <= 50) & ~has_ties) | (z.shape[-1] <= 13)
    else:
        exact = (count < 50) & ~has_ties & (n0 == 0)
        correction = True
    nonzero = z.shape[-1] - n0  # pratt counts the zeros in `count`, not as evidence
    exact &= nonzero > 0

    # normal approximation (all pairs: cheap)
    mean = (n_all * (n_all + 1) - n_zero * (n_zero + 1)) / 4.0
    var = ((n_all * (n_all + 1) * (2 * n_all + 1) - n_zero * (n_zero + 1) * (2 * n_zero + 1))
           / 24.0 - tie_term / 48.0)
    se = np.sqrt(np.maximum(var, 0.0))
    dev = w2_plus / 2.0 - mean
    if correction:
        sign = {"greater": 1.0, "less": -1.0}.get(alternative)
        dev = dev - 0.5 * (np.sign(dev) if sign is None else sign)
    with np.errstate(divide="ignore", invalid="ignore"):
        zstat = dev / se
    if alternative == "two-sided":
        p = 2.0 * sps.norm.sf(np.abs(zstat))
    elif alternative == "greater":
        p = sps.norm.sf(zstat)
    else:
        p = sps.norm.cdf(zstat)

    if exact.any():
        ge, le = _exact_tails(r2[exact], w2_plus[exact], budget)
        pe = {"greater": ge, "less": le}.get(alternative)
        p[exact] = 2.0 * np.minimum(ge, le) if pe is None else pe
        zstat[exact] = np.nan
    p = np.where(nonzero > 0, np.minimum(p, 1.0), 1.0)
    return WilcoxonResult(
        d.out(w2_plus / 2.0), d.out(p), d.out(w2_minus / 2.0), d.out(zstat), d.out(exact),
        d.out(count.astype(np.int64)),
    )
