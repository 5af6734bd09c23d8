"""Sakai's bootstrap hypothesis tests (SIGIR 2006) for many pairs at once.

- :func:`paired_bootstrap`: studentised test of ``z = x - y``, resampling the centred
  differences ``w = z - mean(z)`` (METHODS.md section 2).
- :func:`unpaired_bootstrap`: shift-free test of any summary ``M`` (mean, geometric mean,
  mean of the worst k topics): ``x*`` and ``y*`` are drawn together from
  ``concat(x, y)``.

One set of bootstrap samples (count matrices from :mod:`irsim.sampling.topics`) serves
every pair, as in the paper, so the result of a pair does not depend on the other pairs,
on chunking or on the memory budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irsim.errors import ConfigError, InputError
from irsim.sampling.topics import bootstrap_counts, bootstrap_indices, indices_to_counts
from irsim.stats._validation import (
    DEFAULT_MEMORY_BUDGET,
    check_alternative,
    check_choice,
    check_int,
    data_iv,
    monte_carlo_iv,
    paired_iv,
    row_chunks,
)
from irsim.stats.resample import (
    ZERO_VAR_RTOL,
    studentized_t,
    unpaired_bootstrap_replicates,
)
from irsim.stats.ties import count_extreme, tie_tolerance

__all__ = ["SUMMARIES", "BootstrapTestResult", "paired_bootstrap", "unpaired_bootstrap"]

#: Summaries of :func:`unpaired_bootstrap`.
SUMMARIES = ("mean", "gmean", "worst")

#: Target bytes of one block of (pairs x resamples) sums: small enough to stay in cache
#: between the GEMM that writes it and the comparisons that read it.
_CACHE_BYTES = 1 << 20


@dataclass(frozen=True)
class BootstrapTestResult:
    """Result of :func:`paired_bootstrap` and :func:`unpaired_bootstrap`.

    Attributes
    ----------
    statistic : ndarray
        Paired: ``t(z)``, the one-sample t statistic of the differences (0 for constant
        differences). Unpaired: ``M(x) - M(y)``.
    pvalue : ndarray
        Achieved significance level (ASL).
    count : ndarray of int
        Bootstrap samples at least as extreme as observed.
    n_resamples : int
        ``B``.
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    count: np.ndarray
    n_resamples: int


def _t_squared_threshold(a: np.ndarray, n: int) -> np.ndarray:
    """``K(a) = n a^2 / (n - 1 + a^2)``: ``t*^2 >= a^2`` iff ``s1^2 >= K(a) s2``."""
    a2 = a * a
    return n * a2 / (n - 1.0 + a2)


def _paired_counts(w: np.ndarray, t_obs: np.ndarray, counts: np.ndarray,
                   alternative: str) -> np.ndarray:
    """Studentised bootstrap counts of one block of resamples, in cache-sized chunks.

    Equal to ``count_extreme(paired_bootstrap_replicates(w, counts)[0], t_obs, alt, 1.0)``
    (see :mod:`irsim.stats.resample`) without forming ``t*``. With ``s1``, ``s2`` the
    resampled sums of ``w`` and ``w^2``, ``t*^2 = (n-1) s1^2 / (n s2 - s1^2)`` increases
    with ``s1^2/s2``, so ``|t*| >= a`` iff ``s1^2 >= K(a) s2``; the constant-resample rule
    of :data:`~irsim.stats.resample.ZERO_VAR_RTOL` (``var <= rtol * meansq``, then
    ``t* = 0``) reads ``s1^2 >= (n - rtol (n-1)) s2``.
    """
    n = w.shape[-1]
    ct = np.ascontiguousarray(counts.T, dtype=np.float64)
    b = ct.shape[1]
    q_const = n - ZERO_VAR_RTOL * (n - 1)
    tol = tie_tolerance(t_obs, 1.0)  # t is O(1): absolute floor for t = 0 +- rounding
    # count t* >= a: rows with a > 0 count hits, the others B minus the misses t* < a
    if alternative == "two-sided":
        a = np.abs(t_obs) - tol
    else:
        a = t_obs - tol if alternative == "greater" else -t_obs - tol
    k = _t_squared_threshold(a, n)
    pos = a > 0
    out = np.empty(len(w), np.int64)
    for rows in row_chunks(len(w), 16 * b, _CACHE_BYTES):
        wr = w[rows]
        m = len(wr)
        s = np.concatenate([wr, wr * wr]) @ ct
        s1, s2 = s[:m], s[m:]
        lim = s2 * q_const  # constant resample iff s1^2 >= lim
        s2 *= k[rows, None]  # K s2
        if alternative == "two-sided":
            sq = np.multiply(s1, s1, out=s1)
            hit = np.count_nonzero((sq >= s2) & (sq < lim), axis=-1)
            out[rows] = np.where(pos[rows], hit, b)
            continue
        if alternative == "less":
            np.negative(s1, out=s1)  # t* <= t_obs  <=>  -t* >= -t_obs
        sq = s1 * np.abs(s1)  # signed s1^2
        p = pos[rows, None]
        # a > 0: t* >= a and not constant; a <= 0: t* < a (t* < 0 and not constant)
        hit = np.where(p, sq >= s2, sq < -s2) & (np.abs(sq) < lim)
        cnt = np.count_nonzero(hit, axis=-1)
        out[rows] = np.where(pos[rows], cnt, b - cnt)
    return out


def paired_bootstrap(
    x: np.ndarray,
    y: np.ndarray | None = None,
    *,
    alternative: str = "two-sided",
    statistic: str = "t",
    B: int = 1000,
    seed: int = 0,
    study: str = "stats/paired_bootstrap",
    key: tuple[int, ...] = (),
    pvalue_mode: str = "count",
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> BootstrapTestResult:
    """Sakai's paired studentised bootstrap test for every pair (row) at once.

    ``z = x - y``, ``t(z) = mean(z)/(sd(z)/sqrt(n))``; the null is imposed by centring,
    ``w = z - mean(z)``; each bootstrap sample ``b`` draws n topics with replacement and
    ``t(w*b)`` is computed likewise (0 for a constant resample). Two-sided
    ``ASL = #{b : |t(w*b)| >= |t(z)|} / B``.

    Parameters
    ----------
    x, y : array_like, shape (..., n)
        Scores (or differences in `x` when `y` is None); n >= 2.
    alternative : {"two-sided", "less", "greater"}
        One-sided tests count ``t(w*b) >= t(z)`` (greater) or ``<=`` (less).
    statistic : {"t", "mean"}
        ``t``: Sakai's studentised test. ``mean``: the shift method (Urbano et al. 2019),
        comparing ``mean(w*b)`` with ``mean(z)`` (METHODS.md's Urbano reference values).
    B : int
        Bootstrap samples.
    seed, study, key
        Random stream of the topic samples (shared by all pairs with the same n).
    pvalue_mode : {"count", "plus_one"}
        ``count/B`` (Sakai) or ``(count+1)/(B+1)``.
    memory_budget : int
        Bytes for one chunk of count matrices.

    Returns
    -------
    BootstrapTestResult
        ``statistic`` is ``t(z)`` or ``mean(z)``.

    Notes
    -----
    The studentised counts equal those of :func:`irsim.stats.resample.paired_bootstrap_replicates`
    followed by :func:`irsim.stats.ties.count_extreme` (scale 1); this fused path compares
    ``s1^2/s2`` (resampled sums of ``w`` and ``w^2``) to a per-pair threshold inside
    cache-sized blocks instead of materialising ``t*``.

    Examples
    --------
    >>> rng = np.random.default_rng(7)
    >>> x = rng.uniform(0, 1, (3, 30))
    >>> y = x - np.array([[0.0], [0.05], [0.2]]) + rng.normal(0, 0.1, (3, 30))
    >>> r = paired_bootstrap(x, y, B=2000, seed=1)
    >>> r.pvalue.round(3).tolist()
    [0.604, 0.0, 0.0]
    """
    alternative = check_alternative(alternative)
    statistic = check_choice("paired bootstrap statistic", statistic, ("t", "mean"))
    mc = monte_carlo_iv(B=B, seed=seed, study=study, pvalue_mode=pvalue_mode,
                        memory_budget=memory_budget, key=key)
    d = paired_iv(x, y, min_n=2)
    z, n = d.values, d.n
    mean = z.mean(axis=-1)
    obs = np.atleast_1d(studentized_t(z)) if statistic == "t" else mean
    w = z - mean[:, None]
    scale = np.abs(z).mean(axis=-1)  # of mean(w*b), for ties at 0
    count = np.zeros(len(z), np.int64)
    for start, stop in mc.replicate_chunks(8 * n):
        counts = bootstrap_counts(mc.seed, mc.study, n, start, stop, key=mc.key)
        if statistic == "t":
            count += _paired_counts(w, obs, counts, alternative)
            continue
        weights = np.ascontiguousarray(counts.T) / n
        for rows in row_chunks(len(z), 8 * (stop - start), _CACHE_BYTES):
            count[rows] += count_extreme(w[rows] @ weights, obs[rows], alternative,
                                         scale[rows])
    return BootstrapTestResult(d.out(obs), d.out(mc.pvalue(count)), d.out(count), mc.B)


def _worst_mean(v: np.ndarray, idx: np.ndarray, k: int) -> np.ndarray:
    """Mean of the k smallest of ``v[p, idx[b]]`` for every row p and resample b."""
    g = v[:, idx]  # (rows, B, draws)
    return np.partition(g, k - 1, axis=-1)[..., :k].mean(axis=-1)


def _summary(v: np.ndarray, summary: str, k: int) -> np.ndarray:
    if summary == "mean":
        return v.mean(axis=-1)
    if summary == "gmean":
        return np.exp(np.log(v + 1e-5).mean(axis=-1))
    return np.partition(v, k - 1, axis=-1)[..., :k].mean(axis=-1)


def unpaired_bootstrap(
    x: np.ndarray,
    y: np.ndarray,
    *,
    alternative: str = "two-sided",
    summary: str = "mean",
    k: int | None = None,
    B: int = 1000,
    seed: int = 0,
    study: str = "stats/unpaired_bootstrap",
    key: tuple[int, ...] = (),
    pvalue_mode: str = "count",
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> BootstrapTestResult:
    """Sakai's unpaired bootstrap test of ``M(x) - M(y)`` for every pair at once.

    ``v = concat(x, y)``; bootstrap sample ``b`` draws ``n + m`` values of ``v`` with
    replacement, the first n form ``x*b`` and the rest ``y*b``;
    ``d*b = M(x*b) - M(y*b)``; two-sided ``ASL = #{b : |d*b| >= |M(x) - M(y)|} / B``.

    Parameters
    ----------
    x : array_like, shape (..., n)
    y : array_like, shape (..., m)
        Leading shapes must agree; n and m may differ.
    alternative : {"two-sided", "less", "greater"}
        One-sided: ``d*b >= d`` (greater) or ``<=`` (less).
    summary : {"mean", "gmean", "worst"}
        ``M``: arithmetic mean; geometric mean ``exp(mean(log(v + 1e-5)))`` (Sakai's
        G-metrics); or the mean of the `k` lowest values (worst-k topics, via a gather).
    k : int, optional
        Worst topics for ``summary="worst"`` (1 <= k <= min(n, m)).
    B, seed, study, key, pvalue_mode, memory_budget
        As :func:`paired_bootstrap`.

    Returns
    -------
    BootstrapTestResult

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> x = rng.beta(2, 3, (2, 40))
    >>> y = np.stack([rng.beta(2, 3, 40), rng.beta(1, 4, 40)])
    >>> r = unpaired_bootstrap(x, y, B=2000, seed=1)
    >>> r.pvalue.round(3).tolist()
    [0.726, 0.0]
    >>> unpaired_bootstrap(x, y, summary="worst", k=10, B=500).pvalue.shape
    (2,)
    """
    alternative = check_alternative(alternative)
    summary = check_choice("unpaired bootstrap summary", summary, SUMMARIES)
    mc = monte_carlo_iv(B=B, seed=seed, study=study, pvalue_mode=pvalue_mode,
                        memory_budget=memory_budget, key=key)
    dx, dy = data_iv(x, "x"), data_iv(y, "y")
    if dx.lead != dy.lead:
        raise InputError(f"x and y must have the same leading shape, got {dx.lead} and "
                         f"{dy.lead}")
    n, m = dx.n, dy.n
    if summary == "worst":
        if k is None:
            raise ConfigError("summary='worst' needs k, the number of worst topics")
        k = check_int("k", k, 1, min(n, m))
    xv, yv = dx.values, dy.values
    mx, my = _summary(xv, summary, k), _summary(yv, summary, k)
    observed, scale = mx - my, np.abs(mx) + np.abs(my)
    v = np.concatenate([xv, yv], axis=-1)
    count = np.zeros(dx.rows, np.int64)
    for start, stop in mc.replicate_chunks(8 * 3 * (n + m)):
        idx = bootstrap_indices(mc.seed, mc.study, n + m, start, stop, key=mc.key)
        if summary == "worst":
            per_row = 8 * (stop - start) * (n + m) * 2
            for rows in row_chunks(dx.rows, per_row, mc.memory_budget):
                rep = (_worst_mean(v[rows], idx[:, :n], k)
                       - _worst_mean(v[rows], idx[:, n:], k))
                count[rows] += count_extreme(rep, observed[rows], alternative, scale[rows])
            continue
        first = indices_to_counts(idx[:, :n], n + m)
        second = indices_to_counts(idx[:, n:], n + m)
        for rows in row_chunks(dx.rows, 16 * (stop - start), _CACHE_BYTES):
            rep = unpaired_bootstrap_replicates(xv[rows], yv[rows], first, second,
                                                summary=summary)
            count[rows] += count_extreme(rep, observed[rows], alternative, scale[rows])
    return BootstrapTestResult(dx.out(observed), dx.out(mc.pvalue(count)), dx.out(count),
                               mc.B)
