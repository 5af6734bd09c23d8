"""Kendall's tau-b from the signs of item-pair differences: one implementation for every
study (discpower's rank correlation between metrics, test_errors' dependence between systems).

For two rankings of ``k`` items, ``S = sum over item pairs of sign(D_1) sign(D_2)``
(concordant minus discordant pairs) and the pairs tied under each ranking ``t_1, t_2`` give
tau-b ``= S / sqrt((n0 - t_1)(n0 - t_2))`` with ``n0 = k(k-1)/2`` (tau-a when there are no
ties; what :func:`scipy.stats.kendalltau` computes by default). These are integer sums over
pairs, so blocks of pairs add up in any order. Sakai's Z0 test (SIGIR 2006, Eq. 12):
``Z0 = |tau| / sqrt(2(2k+5) / (9k(k-1)))``, standard normal under no correlation.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as sps

__all__ = ["pair_signs", "concordance", "ties", "tau_b", "tau_b_matrix", "z0_test"]


def pair_signs(d: np.ndarray) -> np.ndarray:
    """Signs (int8) of pair differences whose exact ties are already 0.

    Examples
    --------
    >>> pair_signs(np.array([0.2, 0.0, -1e-3])).tolist()
    [1, 0, -1]
    """
    return np.sign(d).astype(np.int8)


def concordance(s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """``sum over pairs of sign1 * sign2`` (concordant minus discordant), per sample.

    Parameters
    ----------
    s1, s2 : ndarray of int8, shape (pairs, samples)

    Returns
    -------
    ndarray of int64, shape (samples,)

    Examples
    --------
    >>> s1 = np.array([[1, 1], [1, -1], [-1, 0]], np.int8)
    >>> s2 = np.array([[1, -1], [1, -1], [1, 1]], np.int8)
    >>> concordance(s1, s2).tolist()
    [1, 0]
    """
    return np.multiply(s1, s2, dtype=np.int64).sum(axis=0)


def ties(s: np.ndarray) -> np.ndarray:
    """Pairs with sign 0 (tied systems), per sample.

    Examples
    --------
    >>> ties(np.array([[1, 0], [0, 0]], np.int8)).tolist()
    [1, 2]
    """
    return np.count_nonzero(s == 0, axis=0).astype(np.int64)


def tau_b(conc: np.ndarray, ties1: np.ndarray, ties2: np.ndarray, systems: int
                ) -> np.ndarray:
    """Tau-b from concordance sums and tie counts (NaN when a ranking is all tied).

    Examples
    --------
    >>> from scipy.stats import kendalltau
    >>> x, y = np.array([1., 2., 3., 3.]), np.array([2., 1., 3., 4.])
    >>> a, b = np.triu_indices(4, 1)
    >>> s1, s2 = pair_signs(x[a] - x[b]), pair_signs(y[a] - y[b])
    >>> tau = tau_b(concordance(s1[:, None], s2[:, None]), ties(s1[:, None]),
    ...                   ties(s2[:, None]), 4)
    >>> bool(np.isclose(tau[0], kendalltau(x, y).statistic))
    True
    """
    n0 = systems * (systems - 1) // 2
    denom = np.sqrt((n0 - np.asarray(ties1, np.float64)) * (n0 - np.asarray(ties2, np.float64)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, np.asarray(conc, np.float64) / denom, np.nan)


def z0_test(tau: float, systems: int) -> tuple[float, float]:
    """Sakai's Z0 statistic for Kendall's tau over `systems` systems and its two-sided
    p-value.

    Examples
    --------
    >>> z0, p = z0_test(0.34, 30)
    >>> round(z0, 3), round(p, 4)  # Sakai: for 30 runs, significant at 0.01 above 0.34
    (2.639, 0.0083)
    """
    k = systems
    if k < 2 or not math.isfinite(tau):
        return float("nan"), float("nan")
    z0 = abs(tau) / math.sqrt(2.0 * (2 * k + 5) / (9.0 * k * (k - 1)))
    return z0, float(2.0 * sps.norm.sf(z0))


def tau_b_matrix(scores: ArrayLike) -> np.ndarray:
    """Tau-b between every two rows of `scores` (rows = rankings, columns = items), at once:
    the sign products of all item pairs as one matrix product.

    Examples
    --------
    >>> from scipy.stats import kendalltau
    >>> x = np.array([[1, 2, 3, 4], [1, 3, 2, 4], [4, 3, 2, 1.], [1, 1, 2, 2]])
    >>> tau_b_matrix(x).round(4)[0].tolist()
    [1.0, 0.6667, -1.0, 0.8165]
    >>> bool(np.isclose(tau_b_matrix(x)[1, 3], kendalltau(x[1], x[3]).statistic))
    True
    """
    a = np.asarray(scores, np.float64)
    n = a.shape[1]
    iu = np.triu_indices(n, 1)
    sgn = np.sign(a[:, iu[1]] - a[:, iu[0]])  # (rows, n(n-1)/2)
    conc = sgn @ sgn.T
    tied = len(iu[0]) - np.count_nonzero(sgn, axis=1)
    return tau_b(conc, tied[:, None], tied[None, :], n)
