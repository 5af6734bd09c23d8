"""The simultaneous tests' arithmetic of experiment=multiple_testing: Tukey HSD's critical
range (:func:`critical_range`) and the counts of the randomised Tukey HSD's permuted ranges
below each pair's observed difference (:func:`count_below`)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import stats as sps

__all__ = ["critical_range", "count_below"]


@lru_cache(maxsize=256)
def critical_range(m: int, n: int, alpha: float) -> float:
    """Tukey HSD's critical value ``q(1 - alpha; m, (m - 1)(n - 1))``: the ``1 - alpha``
    quantile of the studentized range of m means with the residual degrees of freedom of a
    two-way ANOVA without replication on n topics (computed once per process and
    arguments: each is a numerical inversion).

    Examples
    --------
    >>> round(critical_range(3, 10, 0.05), 4)    # q(0.95; 3, 18), the textbook 3.61
    3.6093
    """
    return float(sps.studentized_range.ppf(1.0 - alpha, m, (m - 1) * (n - 1)))


def count_below(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Per row r and threshold p: ``#{b : values[r, b] < thresholds[r, p]}`` (searchsorted
    ``left`` on each row's sorted values, for all rows at once by one stable sort of the
    thresholds followed by the values).

    Examples
    --------
    >>> count_below(np.array([[0.1, 0.3, 0.2], [1.0, 1.0, 0.0]]),
    ...              np.array([[0.2, 0.0, 0.5], [1.0, 2.0, 0.5]])).tolist()
    [[1, 0, 3], [1, 3, 1]]
    """
    p = thresholds.shape[1]
    both = np.concatenate([thresholds, values], axis=1)
    order = np.argsort(both, axis=1, kind="stable")
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(both.shape[1])[None, :], axis=1)
    # thresholds before thresholds[r, p] in the merged order: its rank among the thresholds
    t_order = np.argsort(thresholds, axis=1, kind="stable")
    t_rank = np.empty_like(t_order)
    np.put_along_axis(t_rank, t_order, np.arange(p)[None, :], axis=1)
    return position[:, :p] - t_rank
