"""Statistical power and topic set size (Sakai, "Topic set size design", Information Retrieval
Journal 19, 2016; METHODS.md section 8).

Three designs give the number of topics ``n`` a test collection needs:

- **paired t test**: the smallest ``n`` whose two-sided paired t test at level ``alpha`` has
  power at least ``1 - beta`` against a true difference ``min_diff``, when per-topic
  differences have variance ``var_diff``. Power by the noncentral t distribution with
  ``n - 1`` degrees of freedom and noncentrality ``sqrt(n) * min_diff / sqrt(var_diff)``
  (:func:`paired_t_power`; both rejection tails counted).
- **one-way ANOVA over m systems**: the smallest ``n`` (topics per system) whose F test at
  level ``alpha`` has power ``1 - beta`` in the worst case for a range ``min_diff`` between
  the best and the worst of ``m`` systems: two systems ``min_diff`` apart, the others at
  their mean, so ``lambda = n * min_diff**2 / (2 * var)``; noncentral F with ``m - 1`` and
  ``m (n - 1)`` degrees of freedom (:func:`anova_power`).
- **confidence interval**: the smallest ``n`` whose expected half-width of the
  ``1 - alpha`` t interval of a mean difference is at most ``delta``:
  ``t_{1-alpha/2, n-1} * c4(n) * sqrt(var / n)`` with ``E[s] = c4(n) sigma``,
  ``c4(n) = sqrt(2 / (n-1)) Gamma(n/2) / Gamma((n-1)/2)`` (:func:`ci_half_width`).

Every function is vectorised: arguments broadcast against each other, and the ``*_n`` solvers
search all entries at once (doubling, then bisection over integers; power and expected
half-width are monotone in ``n``).

Examples
--------
>>> int(paired_t_n(0.05, 2 * 0.02, alpha=0.05, beta=0.2))
128
>>> int(anova_n(10, 0.05, 0.02, alpha=0.05, beta=0.2))
252
>>> int(ci_n(0.02, 2 * 0.02, alpha=0.05))
387
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import special
from scipy import stats as sps

from irsim.errors import ConfigError

__all__ = ["paired_t_power", "paired_t_n", "anova_power", "anova_n", "ci_half_width", "ci_n",
           "smallest_n", "N_MAX"]

#: Largest n the solvers look at; an entry needing more is reported as -1.
N_MAX = 10**8


def _check(alpha: ArrayLike, beta: ArrayLike | None = None) -> None:
    a = np.asarray(alpha, float)
    if not ((a > 0) & (a < 1)).all():
        raise ConfigError(f"alpha must be in (0, 1), got {alpha!r}")
    if beta is not None:
        b = np.asarray(beta, float)
        if not ((b > 0) & (b < 1)).all():
            raise ConfigError(f"beta must be in (0, 1), got {beta!r}")


def _positive(value: ArrayLike, name: str) -> np.ndarray:
    v = np.asarray(value, float)
    if not (np.isfinite(v) & (v > 0)).all():
        raise ConfigError(f"{name} must be positive and finite, got {value!r}")
    return v


def paired_t_power(n: ArrayLike, min_diff: ArrayLike, var_diff: ArrayLike, *,
                   alpha: ArrayLike = 0.05) -> np.ndarray:
    """Power of the two-sided paired t test on `n` topics against a true mean difference
    `min_diff`, per-topic differences of variance `var_diff`.

    ``P(|T| > t_{1-alpha/2, n-1})`` for ``T`` noncentral t with ``n - 1`` degrees of
    freedom and noncentrality ``sqrt(n) min_diff / sqrt(var_diff)`` (as
    ``statsmodels.stats.power.TTestPower``).

    Examples
    --------
    >>> round(float(paired_t_power(50, 0.05, 0.04, alpha=0.05)), 4)
    0.4104
    """
    n = np.asarray(n, float)
    df = n - 1.0
    nc = np.sqrt(n) * np.asarray(min_diff, float) / np.sqrt(np.asarray(var_diff, float))
    crit = sps.t.isf(np.asarray(alpha, float) / 2.0, df)
    return sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc)


def anova_power(n: ArrayLike, m: ArrayLike, min_diff: ArrayLike, var: ArrayLike, *,
                alpha: ArrayLike = 0.05) -> np.ndarray:
    """Power of the one-way ANOVA F test over `m` systems with `n` topics each, when the best
    and the worst system are `min_diff` apart (the others at their mean) and scores have
    within-group variance `var`.

    Noncentral F with ``m - 1`` and ``m (n - 1)`` degrees of freedom and
    ``lambda = n min_diff**2 / (2 var)`` (Sakai 2016; as
    ``statsmodels.stats.power.FTestAnovaPower`` with ``nobs = m n`` and
    ``f**2 = min_diff**2 / (2 m var)``).

    Examples
    --------
    >>> round(float(anova_power(100, 10, 0.05, 0.02, alpha=0.05)), 4)
    0.3502
    """
    n = np.asarray(n, float)
    m = np.asarray(m, float)
    lam = n * np.asarray(min_diff, float) ** 2 / (2.0 * np.asarray(var, float))
    df1, df2 = m - 1.0, m * (n - 1.0)
    crit = sps.f.isf(np.asarray(alpha, float), df1, df2)
    return sps.ncf.sf(crit, df1, df2, lam)


def ci_half_width(n: ArrayLike, var: ArrayLike, *, alpha: ArrayLike = 0.05) -> np.ndarray:
    """Expected half-width of the ``1 - alpha`` t interval of a mean of `n` values of
    variance `var`: ``t_{1-alpha/2, n-1} c4(n) sqrt(var / n)``, ``c4(n) = E[s] / sigma``
    for normal data.

    Examples
    --------
    >>> round(float(ci_half_width(50, 0.04, alpha=0.05)), 5)
    0.05655
    """
    n = np.asarray(n, float)
    c4 = np.sqrt(2.0 / (n - 1.0)) * np.exp(special.gammaln(n / 2.0)
                                          - special.gammaln((n - 1.0) / 2.0))
    t = sps.t.isf(np.asarray(alpha, float) / 2.0, n - 1.0)
    return t * c4 * np.sqrt(np.asarray(var, float) / n)


def smallest_n(ok: Callable[[np.ndarray], np.ndarray], shape: tuple[int, ...], *,
               n_min: int = 2, n_max: int = N_MAX) -> np.ndarray:
    """Smallest integer ``n >= n_min`` with ``ok(n)`` true, entry by entry, for a criterion
    `ok` (arrays of n of `shape` -> bool) monotone in ``n``; -1 where even `n_max` fails.

    Examples
    --------
    >>> smallest_n(lambda n: n * n >= np.array([10, 2, 1000]), (3,)).tolist()
    [4, 2, 32]
    """
    hi = np.full(shape, n_min, np.int64)
    done = ok(hi)
    lo = np.where(done, n_min - 1, n_min).astype(np.int64)  # ok(lo) false (or lo < n_min)
    while not done.all():
        nxt = np.where(done, hi, np.minimum(hi * 2, n_max))
        now = ok(np.maximum(nxt, n_min))
        lo = np.where(done, lo, np.where(now, lo, nxt))
        hi = nxt
        stuck = ~done & ~now & (hi >= n_max)
        done = done | now | stuck
        if stuck.any():
            hi = np.where(stuck, -1, hi)
            lo = np.where(stuck, -2, lo)
    # invariant: ok(hi) and not ok(lo) (or lo = n_min - 1); bisect until hi = lo + 1
    while ((hi - lo) > 1).any():
        open_ = (hi - lo) > 1
        mid = np.where(open_, (lo + hi) // 2, hi)
        now = ok(np.maximum(mid, n_min))
        hi = np.where(open_ & now, mid, hi)
        lo = np.where(open_ & ~now, mid, lo)
    return hi


def paired_t_n(min_diff: ArrayLike, var_diff: ArrayLike, *, alpha: ArrayLike = 0.05,
               beta: ArrayLike = 0.2) -> np.ndarray:
    """Topics the paired t test needs: the smallest ``n >= 2`` with
    :func:`paired_t_power` ``>= 1 - beta`` (arguments broadcast; -1: more than
    :data:`N_MAX`).

    Examples
    --------
    >>> paired_t_n([0.05, 0.1], 0.04, alpha=0.05, beta=0.2).tolist()
    [128, 34]
    """
    _check(alpha, beta)
    d = _positive(min_diff, "min_diff")
    v = _positive(var_diff, "var_diff")
    d, v, a, b = np.broadcast_arrays(d, v, np.asarray(alpha, float), np.asarray(beta, float))
    return smallest_n(lambda n: paired_t_power(n, d, v, alpha=a) >= 1.0 - b, d.shape)


def anova_n(m: ArrayLike, min_diff: ArrayLike, var: ArrayLike, *, alpha: ArrayLike = 0.05,
            beta: ArrayLike = 0.2) -> np.ndarray:
    """Topics a one-way ANOVA over `m` systems needs: the smallest ``n >= 2`` with
    :func:`anova_power` ``>= 1 - beta``.

    Examples
    --------
    >>> anova_n([2, 10], 0.05, 0.02, alpha=0.05, beta=0.2).tolist()
    [127, 252]
    """
    _check(alpha, beta)
    mm = np.asarray(m)
    if not (np.asarray(mm) >= 2).all() or not np.array_equal(mm, np.round(mm)):
        raise ConfigError(f"m must be integers >= 2, got {m!r}")
    d = _positive(min_diff, "min_diff")
    v = _positive(var, "var")
    mm, d, v, a, b = np.broadcast_arrays(mm.astype(float), d, v, np.asarray(alpha, float),
                                         np.asarray(beta, float))
    return smallest_n(lambda n: anova_power(n, mm, d, v, alpha=a) >= 1.0 - b, d.shape)


def ci_n(delta: ArrayLike, var: ArrayLike, *, alpha: ArrayLike = 0.05) -> np.ndarray:
    """Topics for an expected CI half-width of at most `delta`: the smallest ``n >= 2`` with
    :func:`ci_half_width` ``<= delta``.

    Examples
    --------
    >>> ci_n([0.05, 0.1], 0.04, alpha=0.05).tolist()
    [64, 18]
    """
    _check(alpha)
    d = _positive(delta, "delta")
    v = _positive(var, "var")
    d, v, a = np.broadcast_arrays(d, v, np.asarray(alpha, float))
    return smallest_n(lambda n: ci_half_width(n, v, alpha=a) <= d, d.shape)
