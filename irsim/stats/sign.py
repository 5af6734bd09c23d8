"""Sign test with a tie threshold, for many pairs at once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from irsim.errors import ConfigError
from irsim.stats._validation import check_alternative, paired_iv

__all__ = ["SignTestResult", "sign_test"]


@dataclass(frozen=True)
class SignTestResult:
    """Result of :func:`sign_test`.

    Attributes
    ----------
    statistic : ndarray of int
        Number of topics with ``z > threshold`` (wins of x).
    pvalue : ndarray
    n : ndarray of int
        Topics left after dropping ties ``|z| <= threshold``.
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    n: np.ndarray


def sign_test(
    x: np.ndarray,
    y: np.ndarray | None = None,
    *,
    alternative: str = "two-sided",
    threshold: float = 0.0,
) -> SignTestResult:
    """Exact binomial sign test of the differences ``z = x - y`` per pair.

    Topics with ``|z| <= threshold`` are ties and dropped (Urbano et al. use 0.01); of
    the ``m`` left, ``k`` favour x; the p-value is that of
    ``scipy.stats.binomtest(k, m, 0.5)``. A pair with no topic left has p = 1.

    Parameters
    ----------
    x, y : array_like, shape (..., n)
        Scores (or differences in `x` when `y` is None).
    alternative : {"two-sided", "less", "greater"}
        ``greater``: x tends to win.
    threshold : float
        Tie threshold (>= 0).

    Returns
    -------
    SignTestResult

    Examples
    --------
    >>> z = np.array([[0.2, 0.1, 0.3, -0.05, 0.005, 0.4, 0.2, 0.1]])
    >>> r = sign_test(z, threshold=0.01)
    >>> r.statistic.tolist(), r.n.tolist(), round(float(r.pvalue[0]), 4)
    ([6], [7], 0.125)
    """
    alternative = check_alternative(alternative)
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise ConfigError(f"threshold must be a number >= 0, got {threshold!r}") from None
    if not threshold >= 0.0:
        raise ConfigError(f"threshold must be >= 0, got {threshold}")
    d = paired_iv(x, y)
    z = d.values
    k = np.count_nonzero(z > threshold, axis=-1)
    m = k + np.count_nonzero(z < -threshold, axis=-1)
    if alternative == "greater":
        p = sps.binom.sf(k - 1, m, 0.5)
    elif alternative == "less":
        p = sps.binom.cdf(k, m, 0.5)
    else:
        # the binomial(m, 1/2) is symmetric: the outcomes no likelier than k are those at
        # least as far from m/2, so binomtest's two-sided p is twice the smaller tail
        p = 2.0 * np.minimum(sps.binom.cdf(k, m, 0.5), sps.binom.sf(k - 1, m, 0.5))
    p = np.where(m > 0, np.minimum(p, 1.0), 1.0)
    return SignTestResult(d.out(k.astype(np.int64)), d.out(p), d.out(m.astype(np.int64)))
