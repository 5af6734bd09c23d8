"""Sakai's bootstrap hypothesis tests (SIGIR 2006) for many pairs at once.

- :func:`paired_bootstrap`: studentised test of ``z = x - y``, resampling the centred
  differences ``w = z - mean(z)`` (METHODS.md section 2).
- :func:`unpaired_bootstrap`: shift-free test of any summary ``M`` (mean, geometric mean,
  mean of the worst k topics): ``x*`` and ``y*`` are drawn together from
  ``concat(x, y)``.

One set of bootstrap samples (count matrices from :mod:`irsim.sampling.topics`) serves
every pair, as in the paper, so the result of a pair does not depend on the other pairs,
on chunking or on the memory budget.

Both tests run on the batched kernels of :mod:`irsim.stats.resample`, the same the
discpower study runs (:func:`~irsim.stats.resample.paired_ratio` with :func:`count_t`,
:func:`~irsim.stats.resample.unpaired_weights` with
:func:`~irsim.stats.resample.unpaired_replicates`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irsim.errors import ConfigError, InputError
from irsim.exact import Exact
from irsim.params import Choice
from irsim.sampling.topics import bootstrap_counts, bootstrap_indices, indices_to_counts
from irsim.stats._validation import (
    DEFAULT_MEMORY_BUDGET,
    check_alternative,
    check_alternatives,
    check_choice,
    check_int,
    data_iv,
    monte_carlo_iv,
    paired_iv,
    row_chunks,
)
from irsim.stats.resample import (
    gmean_scores,
    log_scores,
    paired_ratio,
    resampled_counts,
    studentized_t,
    unpaired_parts,
    unpaired_replicates,
    unpaired_weights,
)
from irsim.stats.ties import count_extreme, tie_tolerance

__all__ = ["SUMMARIES", "BootstrapTestResult", "paired_bootstrap", "unpaired_bootstrap",
           "count_t"]

#: Summaries of :func:`unpaired_bootstrap`.
SUMMARIES = ("mean", "gmean", "worst")


class BootstrapStatistic(Choice):
    """The paired bootstrap's statistic: studentised (``t``, Sakai) or the mean difference
    (``mean``, Urbano)."""

    t = "t"
    mean = "mean"

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


def count_t(p: np.ndarray, t_obs: np.ndarray, n: int, alternative: str = "two-sided",
            s1: np.ndarray | None = None) -> np.ndarray:
    """Per row, replicates of the paired studentised bootstrap at least as extreme as
    `t_obs` (ties within :func:`~irsim.stats.ties.tie_tolerance` of a t statistic, scale 1),
    from ``p = s2 / s1^2`` of :func:`~irsim.stats.resample.paired_ratio`.

    Equal to :func:`~irsim.stats.ties.count_extreme` on ``t*`` (scale 1): ``|t*| >= a`` iff
    ``p <= (1 + (n-1) / a^2) / n``; the one-sided alternatives take the sign of ``t*`` from
    `s1` (``t* >= a``: ``s1 > 0`` and ``|t*| >= a`` for ``a > 0``, else all but the
    replicates with ``t* < a``; ``less`` mirrors ``greater``).

    Parameters
    ----------
    p : ndarray, shape (pairs, B)
    t_obs : ndarray, shape (pairs,)
    n : int
        Topics.
    alternative : {"two-sided", "greater", "less"}
    s1 : ndarray, shape (pairs, B), optional
        The resampled sums of centred differences (needed by the one-sided alternatives).

    Returns
    -------
    ndarray of int64, shape (pairs,)

    Examples
    --------
    >>> t = np.array([[2.0, 1.0, 0.0], [1.0, 0.0, 0.0]])     # |t*|, n = 5
    >>> with np.errstate(divide="ignore"):
    ...     p = (1 + 4 / t ** 2) / 5
    >>> count_t(p, np.array([2.0, 0.0]), 5).tolist()
    [1, 3]
    >>> s1 = np.array([[1.0, -1.0, 0.0], [-1.0, 0.0, 0.0]])  # signs: t* = 2, -1, 0 / -1, 0, 0
    >>> count_t(p, np.array([0.5, -0.5]), 5, "greater", s1).tolist()
    [1, 2]
    """
    b = p.shape[1]
    tol = tie_tolerance(t_obs, 1.0)  # t is O(1): absolute floor for t = 0 +- rounding
    if alternative == "two-sided":
        a = np.abs(t_obs) - tol
        sign = None
    else:
        if s1 is None:
            raise ValueError(f"count_t needs s1 (the signs of t*) for alternative="
                             f"{alternative!r}")
        a = (t_obs if alternative == "greater" else -t_obs) - tol
        sign = s1 if alternative == "greater" else -s1
    with np.errstate(divide="ignore"):
        limit = ((1.0 + (n - 1) / (a * a)) / n)[:, None]
    if sign is None:  # two-sided; a <= 0 (|t_obs| = 0): every replicate counts
        return np.where(a > 0, np.count_nonzero(p <= limit, axis=1), b).astype(np.int64)
    pos = a > 0
    # a > 0: t* >= a (positive and |t*| >= a); a <= 0: all but t* < a (negative, |t*| > |a|)
    hit = np.where(pos[:, None], (sign > 0) & (p <= limit), (sign < 0) & (p < limit))
    cnt = np.count_nonzero(hit, axis=1)
    return np.where(pos, cnt, b - cnt).astype(np.int64)


def paired_bootstrap(
    x: np.ndarray,
    y: np.ndarray | None = None,
    *,
    alternative: str | tuple[str, ...] = "two-sided",
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
        Scores (or differences in `x` when `y` is None); n >= 3 for ``statistic="t"`` (on
        2 topics every resample of the centred differences has ``t* = 0``), n >= 2 for
        ``"mean"``.
    alternative : {"two-sided", "less", "greater"} or a sequence of them
        One-sided tests count ``t(w*b) >= t(z)`` (greater) or ``<=`` (less). Several
        alternatives are counted on the same bootstrap samples in one pass; ``pvalue`` and
        ``count`` then have a trailing axis, one entry per alternative.
    statistic : {"t", "mean"}
        ``t``: Sakai's studentised test. ``mean``: the shift method (Urbano et al. 2019,
        METHODS.md section 6): the bootstrap means ``m*b = mean(z*b)``, centred by their own
        mean over the B samples, ``|m*b - mean(m*)|`` compared with ``|mean(z)|``.
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
    followed by :func:`irsim.stats.ties.count_extreme` (scale 1); the batched path
    (:func:`irsim.stats.resample.paired_ratio` and :func:`count_t`, shared with the
    discpower study) compares ``s2/s1^2`` (resampled sums of ``w`` and ``w^2``) with a
    per-pair threshold inside cache-sized blocks instead of materialising ``t*``.

    Examples
    --------
    >>> rng = np.random.default_rng(7)
    >>> x = rng.uniform(0, 1, (3, 30))
    >>> y = x - np.array([[0.0], [0.05], [0.2]]) + rng.normal(0, 0.1, (3, 30))
    >>> r = paired_bootstrap(x, y, B=2000, seed=1)
    >>> r.pvalue.round(3).tolist()
    [0.604, 0.0, 0.0]
    """
    alternatives, several = check_alternatives(alternative)
    statistic = check_choice("paired bootstrap statistic", statistic, BootstrapStatistic.values())
    mc = monte_carlo_iv(B=B, seed=seed, study=study, pvalue_mode=pvalue_mode,
                        memory_budget=memory_budget, key=key)
    # studentised on 2 topics: the centred differences are (d, -d) and every resample has
    # t* = 0, so every ASL would be 0 (refused); the shift method is defined from n = 2
    d = paired_iv(x, y, min_n=3 if statistic == "t" else 2)
    z, n = d.values, d.n
    mean = z.mean(axis=-1)
    obs = np.atleast_1d(studentized_t(z)) if statistic == "t" else mean
    w = z - mean[:, None]
    scale = np.abs(z).mean(axis=-1)  # of mean(w*b), for ties at 0
    count = np.zeros((len(z), len(alternatives)), np.int64)
    chunks = list(mc.replicate_chunks(8 * n))
    kept, cbar = None, np.zeros(n)
    # counts drawn as bincount's int64 (no float pass) for the shift method and kept as
    # small integers (the kernel converts them block by block); floats for the studentised
    drawn = np.float64 if statistic == "t" else np.int64
    if statistic == "mean":
        # m*b - mean(m*) = (c_b - cbar) . z / n, where cbar is the mean count of each topic
        # over the B samples: a property of the samples alone, summed in a first pass that
        # keeps the counts as small integers (n B bytes) if they fit the memory budget (else
        # the second pass draws them again); drawn in small chunks (no large temporaries)
        small = np.uint8 if n < 2**8 else np.uint16 if n < 2**16 else np.int64
        if n * mc.B * np.dtype(small).itemsize <= mc.memory_budget:
            kept = np.empty((mc.B, n), small)
        for start, stop in mc.replicate_chunks(max(8 * n, mc.memory_budget >> 13)):
            counts = bootstrap_counts(mc.seed, mc.study, n, start, stop, key=mc.key,
                                      dtype=drawn)
            cbar += counts.sum(axis=0)  # integer sums: exact
            if kept is not None:
                kept[start:stop] = counts
        cbar /= mc.B
        if kept is not None:
            count += resampled_counts(z, kept, obs, alternatives, scale, center=cbar,
                                      divisor=n)
            chunks = []
    for start, stop in chunks:
        counts = bootstrap_counts(mc.seed, mc.study, n, start, stop, key=mc.key,
                                  dtype=drawn)
        if statistic == "t":  # p = s2 / s1^2 orders |t*| (resample.paired_ratio)
            ct = np.ascontiguousarray(counts.T, dtype=np.float64)
            for rows in row_chunks(len(z), 16 * (stop - start), _CACHE_BYTES):
                wr = w[rows]
                s1 = Exact(wr, l1=n).right(ct)
                p = paired_ratio(wr, wr * wr, ct, s1)
                for j, alt in enumerate(alternatives):
                    count[rows, j] += count_t(p, obs[rows], n, alt, s1)
            continue
        count += resampled_counts(z, counts, obs, alternatives, scale, center=cbar,
                                  divisor=n)
    if not several:
        count = count[:, 0]
    return BootstrapTestResult(d.out(obs), d.out(mc.pvalue(count)), d.out(count), mc.B)


def _worst_k(v: np.ndarray, k: int) -> np.ndarray:
    """Mean of the k smallest values along the last axis (the worst-k summary)."""
    return np.partition(v, k - 1, axis=-1)[..., :k].mean(axis=-1)


def _worst_mean(v: np.ndarray, idx: np.ndarray, k: int) -> np.ndarray:
    """Mean of the k smallest of ``v[p, idx[b]]`` for every row p and resample b."""
    return _worst_k(v[:, idx], k)  # (rows, B, draws) -> (rows, B)


def _summary(v: np.ndarray, summary: str, k: int) -> np.ndarray:
    if summary == "mean":
        return v.mean(axis=-1)
    if summary == "gmean":
        return gmean_scores(v)
    return _worst_k(v, k)


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
    lx, ly = (log_scores(xv), log_scores(yv)) if summary == "gmean" else (xv, yv)
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
        # the batched path (resample.unpaired_weights / unpaired_replicates, shared with
        # the discpower study): x's and y's parts of every replicate are one GEMM each
        w, div = unpaired_weights(indices_to_counts(idx[:, :n], n + m),
                                  indices_to_counts(idx[:, n:], n + m), n, summary)
        for rows in row_chunks(dx.rows, 16 * w.shape[1], _CACHE_BYTES):
            rep = unpaired_replicates(unpaired_parts(lx[rows], w[:n], div),
                                      unpaired_parts(ly[rows], w[n:], div), summary)
            count[rows] += count_extreme(rep, observed[rows], alternative, scale[rows])
    return BootstrapTestResult(dx.out(observed), dx.out(mc.pvalue(count)), dx.out(count),
                               mc.B)
