"""Batched resampling kernels shared by the tests in :mod:`irsim.stats` and the studies.

All kernels take many pairs at once (arrays ``(pairs, n)``) and a block of resamples given as
a count matrix ``(B, n)`` (how often each topic is drawn in each resample), so a block of
resampled sums is one GEMM. They hold no randomness: draws come from :mod:`irsim.sampling`.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ZERO_VAR_RTOL",
    "TIE_RTOL",
    "studentized_t",
    "paired_bootstrap_replicates",
    "unpaired_bootstrap_replicates",
]

#: A resample whose variance is below this share of its mean square counts as constant
#: (t* = 0). GEMM sums carry ~n*eps relative error, far below it; real score differences,
#: far above it.
ZERO_VAR_RTOL = 1e-12

#: Relative tolerance of "as extreme as observed" (see :func:`irsim.stats.ties.count_extreme`).
#: It absorbs the rounding difference between a GEMM and a direct sum so that exact ties of
#: discrete metrics count as ties (scipy uses 100*eps; GEMMs need a little more).
TIE_RTOL = 1e-9


def _t_from_sums(s1: np.ndarray, s2: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Studentised t and mean from sums of x and x^2 over n values."""
    mean = s1 / n
    meansq = s2 / n
    var = (s2 - n * mean * mean) / (n - 1)
    constant = var <= ZERO_VAR_RTOL * meansq
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(var / n)
    t[constant] = 0.0
    return t, mean


def studentized_t(z: np.ndarray) -> np.ndarray:
    """One-sample t statistic ``mean(z) / (sd(z) / sqrt(n))`` along the last axis.

    ``sd`` has ddof=1; a constant row has t = 0 (the convention of Sakai's test, where a
    zero-variance sample carries no evidence).

    Examples
    --------
    >>> round(float(studentized_t(np.array([0.1, 0.3, 0.2, 0.4]))), 6)
    3.872983
    >>> float(studentized_t(np.array([0.2, 0.2, 0.2])))
    0.0
    """
    z = np.asarray(z, dtype=np.float64)
    n = z.shape[-1]
    t, _ = _t_from_sums(np.atleast_1d(z.sum(-1)), np.atleast_1d((z * z).sum(-1)), n)
    return t.reshape(z.shape[:-1]) if z.ndim > 1 else t[0]


def paired_bootstrap_replicates(
    w: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Studentised bootstrap replicates of many centred difference vectors.

    Parameters
    ----------
    w : ndarray, shape (pairs, n)
        Per-topic differences, usually centred (``w = z - mean(z)``, Sakai 2006), so that
        the replicates follow the null hypothesis.
    counts : ndarray, shape (B, n)
        Resample count matrix (row sums n).

    Returns
    -------
    t_star : ndarray, shape (pairs, B)
        ``mean(w*b) / (sd(w*b)/sqrt(n))``; 0 for a constant resample.
    mean_star : ndarray, shape (pairs, B)
        ``mean(w*b)``.

    Examples
    --------
    >>> w = np.array([[0.1, -0.1, 0.3, -0.3]])
    >>> c = np.array([[1., 1., 1., 1.], [2., 0., 2., 0.], [4., 0., 0., 0.]])
    >>> t, m = paired_bootstrap_replicates(w, c)
    >>> np.round(m, 3).tolist(), np.round(t, 4).tolist()
    ([[0.0, 0.2, 0.1]], [[0.0, 3.4641, 0.0]])
    """
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[-1]
    ct = np.ascontiguousarray(np.asarray(counts, dtype=np.float64).T)
    s1 = w @ ct
    s2 = (w * w) @ ct
    return _t_from_sums(s1, s2, n)


def unpaired_bootstrap_replicates(
    x: np.ndarray, y: np.ndarray, first: np.ndarray, second: np.ndarray, *, summary: str = "mean"
) -> np.ndarray:
    """Unpaired (shuffle) bootstrap replicates ``M(x*b) - M(y*b)`` for many pairs.

    ``v = concat(x, y)``; resample b draws ``n + m`` values of ``v`` with replacement, the
    first ``n`` form ``x*b`` and the rest ``y*b`` (Sakai 2006, Fig. 3).

    Parameters
    ----------
    x : ndarray, shape (pairs, n)
    y : ndarray, shape (pairs, m)
    first, second : ndarray, shape (B, n + m)
        Count matrices over the ``n + m`` positions of ``v`` for the first ``n`` draws and
        the last ``m`` draws of each resample.
    summary : {"mean", "gmean"}
        ``M``: arithmetic mean, or geometric mean ``exp(mean(log(v + 1e-5)))`` (Sakai's
        G-metrics). Other summaries (e.g. mean of the worst k) need the index gather of
        :func:`irsim.stats.bootstrap.unpaired_bootstrap`.

    Returns
    -------
    ndarray, shape (pairs, B)

    Examples
    --------
    >>> x, y = np.array([[0.1, 0.3]]), np.array([[0.2, 0.0]])
    >>> first = np.array([[1., 0., 0., 1.]])   # x* = (0.1, 0.0)
    >>> second = np.array([[1., 1., 0., 0.]])  # y* = (0.1, 0.3)
    >>> np.round(unpaired_bootstrap_replicates(x, y, first, second), 6).tolist()
    [[-0.15]]
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, m = x.shape[-1], y.shape[-1]
    v = np.concatenate([x, y], axis=-1)
    if summary == "mean":
        diff = np.asarray(first, np.float64) / n - np.asarray(second, np.float64) / m
        return v @ np.ascontiguousarray(diff.T)
    if summary == "gmean":
        lv = np.log(v + 1e-5)
        a = np.exp(lv @ np.ascontiguousarray(np.asarray(first, np.float64).T) / n)
        b = np.exp(lv @ np.ascontiguousarray(np.asarray(second, np.float64).T) / m)
        return a - b
    raise ValueError(f"summary must be 'mean' or 'gmean', got {summary!r}")
