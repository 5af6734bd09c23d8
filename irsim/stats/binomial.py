"""Confidence intervals for a binomial proportion (Monte Carlo rates: Type I error, power,
family-wise error), vectorised over any number of rates.

:func:`clopper_pearson` is exact (never below the level); :func:`wilson` is the score
interval, also for a fractional count (a sum of per-trial shares, such as the false discovery
proportions of many simulated collections).
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps
from scipy.special import ndtri

__all__ = ["clopper_pearson", "wilson"]


def clopper_pearson(k: np.ndarray, n: np.ndarray, level: float = 0.95
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) binomial confidence interval for ``k`` successes in ``n``.

    Examples
    --------
    >>> lo, hi = clopper_pearson(np.array([0, 5]), np.array([100, 100]))
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.0, 0.0164], [0.0362, 0.1128])
    """
    k = np.asarray(k, np.float64)
    n = np.asarray(n, np.float64)
    tail = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, sps.beta.ppf(tail, k, n - k + 1), 0.0)
        hi = np.where(k < n, sps.beta.ppf(1.0 - tail, k + 1, n - k), 1.0)
    return lo, hi


def wilson(k: np.ndarray, n: np.ndarray, level: float = 0.95
           ) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for `k` successes (may be fractional: a sum of shares) in `n`.

    Examples
    --------
    >>> lo, hi = wilson(np.array([0.0, 5.0]), np.array([100, 100]))
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.0, 0.0215], [0.037, 0.1118])
    """
    k = np.asarray(k, np.float64)
    n = np.asarray(n, np.float64)
    z = float(ndtri(0.5 + level / 2.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z / denom * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    # at p = 0 (1) the lower (upper) limit is 0 (1) exactly, not its rounding noise
    lo = np.where(p == 0.0, 0.0, np.clip(centre - half, 0.0, 1.0))
    hi = np.where(p == 1.0, 1.0, np.clip(centre + half, 0.0, 1.0))
    return lo, hi
