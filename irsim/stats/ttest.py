"""Paired t test for many pairs at once, with effect size, margin of error and CI."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from irsim.stats._validation import (
    check_alternative,
    check_confidence_level,
    paired_iv,
)
from irsim.stats.ci import ConfidenceInterval, location_interval
from irsim.stats.resample import ZERO_VAR_RTOL, studentized_t

__all__ = ["PairedTResult", "paired_t", "t_statistic"]


@dataclass(frozen=True)
class PairedTResult:
    """Result of :func:`paired_t` (arrays of the pairs' leading shape).

    Attributes
    ----------
    statistic : ndarray
        ``t = mean(z) / (sd(z)/sqrt(n))``.
    pvalue : ndarray
    df : int
        ``n - 1``.
    mean : ndarray
        Mean difference.
    sd : ndarray
        Standard deviation of the differences (ddof=1).
    effect_size : ndarray
        ``mean / sd`` (Sakai's standardised mean difference).
    n : int
    alternative : str
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    df: int
    mean: np.ndarray
    sd: np.ndarray
    effect_size: np.ndarray
    n: int
    alternative: str

    @property
    def standard_error(self) -> np.ndarray:
        """``sd / sqrt(n)``."""
        return self.sd / np.sqrt(self.n)

    def _quantile(self, confidence_level: float) -> float:
        level = check_confidence_level(confidence_level)
        tail = (1 - level) / 2 if self.alternative == "two-sided" else 1 - level
        return float(sps.t.isf(tail, self.df))

    def margin_of_error(self, confidence_level: float = 0.95) -> np.ndarray:
        """Half width of the (two-sided) interval: ``t_{df} * sd / sqrt(n)``; for a
        one-sided alternative, the distance to the finite limit."""
        return self._quantile(confidence_level) * self.standard_error

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Interval for the mean difference (one-sided for 'less'/'greater', as scipy)."""
        return location_interval(np.asarray(self.mean), np.asarray(self.standard_error),
                                 self._quantile(confidence_level), self.alternative)


def paired_t(
    x: np.ndarray, y: np.ndarray | None = None, *, alternative: str = "two-sided"
) -> PairedTResult:
    """Paired t test of ``mean(x - y) = 0`` for every pair (row) at once.

    Parameters
    ----------
    x, y : array_like, shape (..., n)
        Per-topic scores of the two systems of each pair; if `y` is None, `x` holds the
        differences ``z``. n >= 2.
    alternative : {"two-sided", "less", "greater"}
        ``greater``: the mean of ``x - y`` is positive.

    Returns
    -------
    PairedTResult
        Equal to :func:`scipy.stats.ttest_rel` (statistic, p-value, CI); a pair with
        zero variance has ``t = +-inf`` (p = 0) or NaN (all differences 0), as scipy.

    Examples
    --------
    >>> x = np.array([0.7, 0.3, 0.2, 0.6, 0.4, 0.4, 0.0, 0.7, 0.1, 0.5])
    >>> y = np.array([0.5, 0.1, 0.0, 0.2, 0.4, 0.3, 0.0, 0.5, 0.3, 0.5])
    >>> r = paired_t(x, y)
    >>> round(float(r.statistic), 4), round(float(r.pvalue), 4), r.df
    (2.0913, 0.066, 9)
    >>> round(float(r.effect_size), 4), round(float(r.margin_of_error()), 4)
    (0.6613, 0.119)
    """
    alternative = check_alternative(alternative)
    d = paired_iv(x, y, min_n=2)
    z, n = d.values, d.n
    mean = z.mean(axis=-1)
    sd = z.std(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / np.sqrt(n))
        effect = mean / sd
    df = n - 1
    if alternative == "two-sided":
        p = 2.0 * sps.t.sf(np.abs(t), df)
    elif alternative == "greater":
        p = sps.t.sf(t, df)
    else:
        p = sps.t.cdf(t, df)
    return PairedTResult(d.out(t), d.out(np.minimum(p, 1.0)), df, d.out(mean), d.out(sd),
                         d.out(effect), n, alternative)


def t_statistic(z: np.ndarray) -> np.ndarray:
    """One-sample t statistic of each row of differences `z`, with scipy's zero-variance
    results: the vectorised t of the studies' paired t test.

    A row of constant non-zero differences has ``t = +-inf`` (p = 0) and a row of zeros
    ``t = NaN`` (p = NaN: never significant, as ``p < alpha`` is False), exactly as
    :func:`scipy.stats.ttest_rel`. Every other row has the value of
    :func:`irsim.stats.resample.studentized_t` (sums of ``z`` and ``z**2``, the arithmetic of
    the bootstrap kernels; within a few ulps of scipy), including the rows that rule treats
    as constant: variance below :data:`~irsim.stats.resample.ZERO_VAR_RTOL` of the mean
    square, where scipy's own rounding gives ``|t| > 1e5`` and p below 1e-10 (here: inf, 0).

    Parameters
    ----------
    z : ndarray, shape (..., n)
        Differences, n >= 2.

    Returns
    -------
    ndarray, shape (...)

    Examples
    --------
    >>> z = np.array([[0.1, 0.3, 0.2, 0.4], [0.2, 0.2, 0.2, 0.2], [0.0, 0.0, 0.0, 0.0]])
    >>> t = t_statistic(z)
    >>> round(float(t[0]), 6), t[1:].tolist()
    (3.872983, [inf, nan])
    >>> from scipy import stats
    >>> [float(p) for p in 2 * stats.t.sf(np.abs(t), df=3)][1:]
    [0.0, nan]
    """
    z = np.asarray(z, dtype=np.float64)
    n = z.shape[-1]
    t = np.array(studentized_t(z), dtype=np.float64, ndmin=1)
    s1 = np.atleast_1d(z.sum(-1)).reshape(t.shape)
    s2 = np.atleast_1d((z * z).sum(-1)).reshape(t.shape)
    mean = s1 / n
    constant = (s2 - n * mean * mean) / (n - 1) <= ZERO_VAR_RTOL * (s2 / n)
    m = mean[constant]
    t[constant] = np.where(m > 0, np.inf, np.where(m < 0, -np.inf, np.nan))
    return t.reshape(z.shape[:-1]) if z.ndim > 1 else t[0]
