"""Confidence intervals for a mean of per-topic scores, and from a bootstrap distribution.

Two entry points (METHODS.md section 5):

- :func:`mean_ci` - an interval for the mean of each row of ``x`` (samples x topics):
  ``normal`` and ``t`` from the sample standard error; ``percentile``, ``basic``, ``bca``,
  ``logit`` and ``studentised_logit`` (Park 2011) from a bootstrap of the mean, drawn once
  as a count matrix shared by all rows and applied as a GEMM.
- :func:`bootstrap_ci` - an interval for one statistic per row from its bootstrap
  distribution (e.g. the corpus bootstrap of AP of Cormack & Lynam 2006): ``normal``
  (``theta +- z sd*``), ``logit`` (on ``logit(theta)`` with values clamped to
  ``[eps, 1 - eps]``), ``percentile``, ``basic``, ``bca`` (given an acceleration) and
  ``studentised_logit`` (given the sample size).

Percentile-type intervals interpolate the sorted bootstrap distribution linearly
(``numpy.quantile``'s default, as :func:`scipy.stats.bootstrap`), so given the same
resamples they equal scipy's intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy import stats as sps

from irsim.errors import ConfigError, InputError
from irsim.exact import Exact
from irsim.sampling.topics import bootstrap_counts
from irsim.stats._validation import (
    DEFAULT_MEMORY_BUDGET,
    check_alternative,
    check_choice,
    check_confidence_level,
    check_int,
    data_iv,
    monte_carlo_iv,
    row_chunks,
)
from irsim.stats.ties import tie_tolerance

__all__ = [
    "CI_METHODS",
    "BOOTSTRAP_CI_METHODS",
    "LOGIT_METHODS",
    "LOGIT_EPS",
    "outside_unit_interval",
    "ConfidenceInterval",
    "CIResult",
    "mean_ci",
    "bootstrap_ci",
    "mean_acceleration",
    "location_interval",
    "mean_interval_grid",
]

#: Interval methods for a mean of per-topic scores (config names).
CI_METHODS = ("normal", "t", "percentile", "basic", "bca", "logit", "studentised_logit")
#: Methods of :func:`bootstrap_ci` (all but ``t``, which needs the data).
BOOTSTRAP_CI_METHODS = ("normal", "percentile", "basic", "bca", "logit", "studentised_logit")
#: Values are clamped to ``[LOGIT_EPS, 1 - LOGIT_EPS]`` before a logit (Cormack-Lynam).
LOGIT_EPS = 1e-5


@dataclass(frozen=True)
class ConfidenceInterval:
    """Lower and upper limits (arrays of the same shape, or scalars).

    Examples
    --------
    >>> ci = ConfidenceInterval(0.1, 0.3)
    >>> ci.low, ci.high
    (0.1, 0.3)
    """

    low: np.ndarray | float
    high: np.ndarray | float


@dataclass(frozen=True)
class CIResult:
    """An interval per row.

    Attributes
    ----------
    confidence_interval : ConfidenceInterval
    estimate : ndarray
        The point estimate (the sample mean, or ``theta_hat``).
    standard_error : ndarray
        ``sd(x)/sqrt(n)`` for ``normal``/``t``; the standard deviation (ddof=1) of the
        bootstrap distribution otherwise.
    method : str
    confidence_level : float
    """

    confidence_interval: ConfidenceInterval
    estimate: np.ndarray | float
    standard_error: np.ndarray | float
    method: str
    confidence_level: float


#: Methods on the logit scale: defined for values in [0, 1] only (a share, a score of AP,
#: P@k...); other values are refused, never clamped into [0, 1] silently.
LOGIT_METHODS = ("logit", "studentised_logit")


def outside_unit_interval(values: np.ndarray) -> tuple[int, ...] | None:
    """Index (into `values`) of the first value outside [0, 1] (NaN counts), or None.

    Examples
    --------
    >>> outside_unit_interval(np.array([[0.0, 1.0], [0.5, 0.2]])) is None
    True
    >>> outside_unit_interval(np.array([[0.0, 1.0], [0.5, 1.5]]))
    (1, 1)
    """
    v = np.asarray(values)
    bad = ~((v >= 0.0) & (v <= 1.0))
    if not bad.any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), v.shape))


def _check_logit_domain(method: str, values: np.ndarray, name: str) -> None:
    if method in LOGIT_METHODS:
        at = outside_unit_interval(values)
        if at is not None:
            raise InputError(f"method={method!r} needs values in [0, 1] (it works on their "
                             f"logits), but {name}{list(at)} = {float(values[at])!r}; use another "
                             "method for scores outside [0, 1]")


def _tail(confidence_level: float, alternative: str) -> float:
    """Probability in each tail that is cut off."""
    return (1.0 - confidence_level) / 2.0 if alternative == "two-sided" else 1.0 - confidence_level


def _one_sided(low: np.ndarray, high: np.ndarray, alternative: str):
    """Open the side of the interval that `alternative` leaves unbounded."""
    if alternative == "less":
        low = np.full_like(low, -np.inf)
    elif alternative == "greater":
        high = np.full_like(high, np.inf)
    return low, high


def location_interval(
    estimate: np.ndarray, se: np.ndarray, quantile: float, alternative: str
) -> ConfidenceInterval:
    """``estimate -+ quantile * se``, one-sided per `alternative` (the normal and t intervals).

    Examples
    --------
    >>> ci = location_interval(np.array(1.0), np.array(0.5), 2.0, "greater")
    >>> float(ci.low), float(ci.high)
    (0.0, inf)
    """
    low, high = _one_sided(estimate - quantile * se, estimate + quantile * se, alternative)
    return ConfidenceInterval(low, high)


def mean_acceleration(x: np.ndarray) -> np.ndarray:
    """Jackknife acceleration of the mean of each row, for BCa.

    For the mean the jackknife values are ``(n xbar - x_i)/(n - 1)``, so Efron's
    ``a = sum U^3 / (6 (sum U^2)^(3/2))`` with ``U_i = (n-1)(mean_jack - theta_(i))`` reduces
    to ``U_i = x_i - xbar``. A constant row has ``a = 0``.

    Examples
    --------
    ``U = (-1/4, -1/4, -1/4, 3/4)``: ``sum U^3 = 3/8``, ``sum U^2 = 3/4``, ``a = 1/(6 sqrt 3)``.

    >>> bool(np.isclose(mean_acceleration(np.array([0.0, 0.0, 0.0, 1.0])), 1 / (6 * np.sqrt(3))))
    True
    """
    x = np.asarray(x, np.float64)
    u = x - x.mean(axis=-1, keepdims=True)
    num = (u**3).sum(axis=-1)
    den = (u**2).sum(axis=-1) ** 1.5
    with np.errstate(divide="ignore", invalid="ignore"):
        a = num / (6.0 * den)
    return np.where(den > 0, a, 0.0)


def _quantile_sorted(s: np.ndarray, p: np.ndarray | float) -> np.ndarray:
    """Linear-interpolation quantiles of the rows of `s` (already sorted).

    `p` broadcasts to ``s.shape[:-1]`` (one quantile per row) or to
    ``s.shape[:-1] + (L,)`` (L quantiles per row).
    """
    b = s.shape[-1]
    p = np.asarray(p, np.float64)
    if p.ndim == s.ndim:
        p = np.broadcast_to(p, s.shape[:-1] + p.shape[-1:])
        squeeze = False
    else:
        p = np.broadcast_to(p, s.shape[:-1])[..., None]
        squeeze = True
    nan = ~np.isfinite(p)
    pos = np.where(nan, 0.0, np.clip(p, 0.0, 1.0)) * (b - 1)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, b - 1)
    frac = pos - lo
    a_lo = np.take_along_axis(s, lo, axis=-1)
    a_hi = np.take_along_axis(s, hi, axis=-1)
    # numpy's _lerp: symmetric formula, exact at both ends
    diff = a_hi - a_lo
    q = np.where(frac >= 0.5, a_hi - diff * (1.0 - frac), a_lo + diff * frac)
    q = np.where(nan, np.nan, q)
    return q[..., 0] if squeeze else q


def _logit(v: np.ndarray) -> np.ndarray:
    """``log(v) - log1p(-v)``: the logit (about 3x faster than ``scipy.special.logit``; equal
    within a few ulp)."""
    out = np.log(v)
    out -= np.log1p(-v)
    return out


def _logit_normal_fit(star: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximum-likelihood normal fit (mu, sigma) to the logits of the replicates of each row
    strictly inside (0, 1), and their number (Park's studentised logit). Rows without a 0 or
    1 take a fast path."""
    inside = (star > 0.0) & (star < 1.0)
    cnt = inside.sum(axis=-1)
    full = cnt == star.shape[-1]
    mu = np.empty(len(star))
    sigma = np.empty(len(star))
    if full.any():
        lg = _logit(star[full] if not full.all() else star)
        mu[full] = lg.sum(axis=-1) / star.shape[-1]
        lg -= mu[full][:, None]
        sigma[full] = np.sqrt((lg * lg).sum(axis=-1) / star.shape[-1])
        del lg
    part = ~full
    if part.any():
        v, ok, c = star[part], inside[part], cnt[part]
        with np.errstate(divide="ignore", invalid="ignore"):
            lg = np.where(ok, _logit(np.where(ok, v, 0.5)), 0.0)
            m = lg.sum(axis=-1) / c
            sigma[part] = np.sqrt((np.where(ok, lg - m[:, None], 0.0) ** 2).sum(axis=-1) / c)
        mu[part] = m
    return mu, sigma, cnt


def interval_grid_from_distribution(
    theta_hat: np.ndarray, theta_star: np.ndarray, methods: Sequence[str],
    levels: Sequence[float] | np.ndarray, *, alternative: str = "two-sided",
    acceleration: np.ndarray | None = None, n: int | None = None, eps: float = LOGIT_EPS,
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Limits of several bootstrap interval methods at several confidence levels, from one
    (rows, B) bootstrap distribution sorted once: the one implementation behind
    :func:`bootstrap_ci` (which asks for one method at one level).

    Parameters
    ----------
    theta_hat : ndarray, shape (rows,)
    theta_star : ndarray, shape (rows, B)
    methods : sequence of str
        Any of ``normal``, ``logit``, ``studentised_logit``, ``percentile``, ``basic``,
        ``bca`` (inputs are not validated here; :func:`bootstrap_ci` validates).
    levels : sequence of float
        Confidence levels.

    Returns
    -------
    limits : dict
        ``method -> (low, high)``, each of shape (rows, len(levels)).
    se : ndarray, shape (rows,)
        Standard deviation of the replicates (ddof=1).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> star = 0.4 + 0.05 * rng.standard_normal((2, 1000))
    >>> lim, se = interval_grid_from_distribution(np.array([0.4, 0.4]), star,
    ...                                           ["percentile", "normal"], [0.9, 0.95])
    >>> lim["percentile"][0].shape
    (2, 2)
    """
    hat = np.asarray(theta_hat, np.float64)
    rows, b = theta_star.shape
    alpha = np.array([_tail(float(lv), alternative) for lv in np.atleast_1d(levels)])
    se = theta_star.std(axis=-1, ddof=1) if b > 1 else np.zeros(len(hat))
    z = sps.norm.isf(alpha)[None, :]
    col = hat[:, None]
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for method in methods:
        if method == "normal":
            ci = location_interval(col, se[:, None], z, alternative)
            out[method] = (ci.low, ci.high)
        elif method == "logit":
            clamp = np.clip(theta_star, eps, 1.0 - eps)
            lse = special.logit(clamp).std(axis=-1, ddof=1) if b > 1 else 0.0 * se
            centre = special.logit(np.clip(hat, eps, 1.0 - eps))[:, None]
            low = special.expit(centre - z * lse[:, None])
            high = special.expit(centre + z * lse[:, None])
            out[method] = _one_sided(low, high, alternative)
        elif method == "studentised_logit":
            mu, sigma, m = _logit_normal_fit(theta_star)
            q = sps.t.isf(alpha, n - 1)[None, :]
            low = special.expit(mu[:, None] - q * sigma[:, None])
            high = special.expit(mu[:, None] + q * sigma[:, None])
            # no usable resample (all means 0 or 1): the degenerate interval at the estimate
            ok = (m > 0)[:, None]
            low, high = np.where(ok, low, col), np.where(ok, high, col)
            out[method] = _one_sided(low, high, alternative)
    quantile_methods = [m for m in methods if m in ("percentile", "basic", "bca")]
    if not quantile_methods:
        return out, se
    s = np.sort(theta_star, axis=-1)
    if "percentile" in quantile_methods or "basic" in quantile_methods:
        low = _quantile_sorted(s, np.broadcast_to(alpha, (rows, len(alpha))))
        high = _quantile_sorted(s, np.broadcast_to(1.0 - alpha, (rows, len(alpha))))
        if "percentile" in quantile_methods:
            out["percentile"] = _one_sided(low, high, alternative)
        if "basic" in quantile_methods:
            out["basic"] = _one_sided(2.0 * col - high, 2.0 * col - low, alternative)
    if "bca" in quantile_methods:
        tol = tie_tolerance(hat, se)[:, None]
        below = np.count_nonzero(theta_star < col - tol, axis=-1)
        at_most = np.count_nonzero(theta_star <= col + tol, axis=-1)
        z0 = special.ndtri((below + at_most) / (2.0 * b))[:, None]
        a = (np.zeros(len(hat)) if acceleration is None else acceleration)[:, None]
        za = special.ndtri(alpha)[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            p_low = special.ndtr(z0 + (z0 + za) / (1.0 - a * (z0 + za)))
            p_high = special.ndtr(z0 + (z0 - za) / (1.0 - a * (z0 - za)))
        out["bca"] = _one_sided(_quantile_sorted(s, p_low), _quantile_sorted(s, p_high),
                                alternative)
    return out, se


def mean_interval_grid(
    x: np.ndarray, star: np.ndarray | None, alphas: Sequence[float], methods: Sequence[str],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Two-sided intervals for the mean of each row of `x` at every level ``1 - alpha``,
    from bootstrap means computed once (Park 2011's six methods; one sort per row for all
    levels, where :func:`mean_ci` takes one method and level per call).

    Parameters
    ----------
    x : ndarray, shape (rows, n)
        The samples.
    star : ndarray, shape (rows, B), or None
        Bootstrap means of each row (any order); only read by the bootstrap methods (None
        when there are none).
    alphas : sequence of float
    methods : sequence of str
        Any of ``normal``, ``t``, ``percentile``, ``basic``, ``bca``, ``studentised_logit``.

    Returns
    -------
    dict
        ``method -> (low, high)``, each of shape (rows, len(alphas)). Equal to
        :func:`bootstrap_ci` (:func:`mean_ci` for ``normal``/``t``, BCa with the jackknife
        acceleration of the mean, :func:`mean_acceleration`) given the same `star`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.random((3, 8))
    >>> idx = rng.integers(0, 8, (500, 8))
    >>> star = x[:, idx].mean(axis=-1)
    >>> out = mean_interval_grid(x, star, [0.05, 0.5], ["t", "percentile"])
    >>> out["percentile"][0].shape
    (3, 2)
    >>> ref = bootstrap_ci(x.mean(-1), star, method="percentile", confidence_level=0.5)
    >>> bool(np.array_equal(ref.confidence_interval.low, out["percentile"][0][:, 1]))
    True
    """
    x = np.asarray(x, np.float64)
    n = x.shape[-1]
    levels = 1.0 - np.asarray(alphas, np.float64)
    mean = x.mean(axis=-1)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if "normal" in methods or "t" in methods:
        se = x.std(axis=-1, ddof=1) / np.sqrt(n)
        tail = (1.0 - levels) / 2.0
        for m in ("normal", "t"):
            if m in methods:
                q = sps.norm.isf(tail) if m == "normal" else sps.t.isf(tail, n - 1)
                ci = location_interval(mean[:, None], se[:, None], q[None, :], "two-sided")
                out[m] = (ci.low, ci.high)
    boot = [m for m in methods if m in ("percentile", "basic", "bca", "studentised_logit")]
    if boot:
        acc = mean_acceleration(x) if "bca" in boot else None
        limits, _ = interval_grid_from_distribution(mean, star, boot, levels, acceleration=acc,
                                                    n=n)
        out.update(limits)
    return out


def _from_distribution(
    theta_hat: np.ndarray, theta_star: np.ndarray, method: str, level: float,
    alternative: str, acceleration: np.ndarray | None, n: int | None, eps: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Limits and standard error of one method at one level."""
    limits, se = interval_grid_from_distribution(
        theta_hat, theta_star, [method], [level], alternative=alternative,
        acceleration=acceleration, n=n, eps=eps)
    low, high = limits[method]
    return low[:, 0], high[:, 0], se


def bootstrap_ci(
    theta_hat: np.ndarray | float,
    theta_star: np.ndarray,
    *,
    method: str = "percentile",
    confidence_level: float = 0.95,
    alternative: str = "two-sided",
    acceleration: np.ndarray | float | None = None,
    n: int | None = None,
    eps: float = LOGIT_EPS,
) -> CIResult:
    """Confidence interval of a statistic from its bootstrap distribution.

    Parameters
    ----------
    theta_hat : array_like, shape (...)
        The observed statistic per row.
    theta_star : array_like, shape (..., B)
        Its bootstrap replicates.
    method : {"normal", "percentile", "basic", "bca", "logit", "studentised_logit"}
        ``normal``: ``theta_hat -+ z sd(theta*)`` (Cormack-Lynam's linear interval).
        ``logit``: values clamped to ``[eps, 1 - eps]``, ``expit(logit(theta_hat) -+ z
        sd(logit(theta*)))`` (Cormack-Lynam). ``percentile``/``basic``: quantiles of
        ``theta*``. ``bca``: bias-corrected percentile with `acceleration` (0 if None: BC).
        Both logit methods refuse replicates outside [0, 1] (:class:`InputError`).
        ``studentised_logit`` (Park): drop replicates equal to 0 or 1, fit a normal
        (maximum likelihood) to ``logit(theta*)``, ``mu -+ t_{n-1} sigma``, back-transform;
        needs `n`, the sample size behind the statistic.
    confidence_level : float
    alternative : {"two-sided", "less", "greater"}
        ``less`` gives ``(-inf, high)``, ``greater`` ``(low, inf)``, as scipy.
    acceleration : array_like, optional
        BCa acceleration per row (e.g. :func:`mean_acceleration`).
    n : int, optional
        Sample size (``studentised_logit`` only).
    eps : float
        Clamp of the ``logit`` method.

    Returns
    -------
    CIResult

    Examples
    --------
    ``normal``: ``theta_hat -+ z_0.975 sd(theta*)``; ``logit``: the same on the logit scale,
    back-transformed (scipy's quantile, logit and expit):

    >>> rng = np.random.default_rng(0)
    >>> star = 0.3 + 0.05 * rng.standard_normal(2000)
    >>> z, sd, lsd = sps.norm.ppf(0.975), star.std(ddof=1), special.logit(star).std(ddof=1)
    >>> ci = bootstrap_ci(0.3, star, method="normal").confidence_interval
    >>> bool(np.allclose([ci.low, ci.high], [0.3 - z * sd, 0.3 + z * sd]))
    True
    >>> ci = bootstrap_ci(0.3, star, method="logit").confidence_interval
    >>> want = special.expit(special.logit(0.3) + np.array([-z, z]) * lsd)
    >>> bool(np.allclose([ci.low, ci.high], want))
    True
    """
    method = check_choice("bootstrap CI method", method, BOOTSTRAP_CI_METHODS)
    level = check_confidence_level(confidence_level)
    alternative = check_alternative(alternative)
    star = data_iv(theta_star, "theta_star")
    hat = np.asarray(theta_hat, np.float64)
    if hat.shape != star.lead:
        raise InputError(f"theta_hat has shape {hat.shape}, theta_star {star.lead + (star.n,)}"
                         f": expected theta_hat of shape {star.lead}")
    hat = hat.reshape(-1)
    if not np.isfinite(hat).all():
        raise InputError("theta_hat must be finite")
    if method == "studentised_logit":
        n = check_int("n", n, 2)
    _check_logit_domain(method, np.asarray(theta_star, np.float64), "theta_star")
    if not 0.0 < eps < 0.5:
        raise ConfigError(f"eps must be in (0, 0.5), got {eps}")
    acc = None
    if acceleration is not None:
        acc = np.broadcast_to(np.asarray(acceleration, np.float64), star.lead).reshape(-1)
    low, high, se = _from_distribution(hat, star.values, method, level, alternative, acc, n, eps)
    return CIResult(ConfidenceInterval(star.out(low), star.out(high)), star.out(hat),
                    star.out(se), method, level)


def mean_ci(
    x: np.ndarray,
    *,
    method: str = "t",
    confidence_level: float = 0.95,
    alternative: str = "two-sided",
    B: int = 1000,
    seed: int = 0,
    study: str = "stats/ci",
    key: tuple[int, ...] = (),
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> CIResult:
    """Confidence interval for the mean of each row of `x` (e.g. a system's MAP).

    Parameters
    ----------
    x : array_like, shape (..., n)
        Per-topic scores; each row is one sample (n >= 2).
    method : {"normal", "t", "percentile", "basic", "bca", "logit", "studentised_logit"}
        ``normal``/``t``: ``mean -+ q sd/sqrt(n)`` with the normal or t(n-1) quantile.
        The others bootstrap the mean (`B` resamples, one count matrix shared by all rows)
        and apply :func:`bootstrap_ci`; ``bca`` uses the jackknife acceleration
        (:func:`mean_acceleration`), ``studentised_logit`` is Park's interval.
    confidence_level : float
    alternative : {"two-sided", "less", "greater"}
    B, seed, study, key
        Bootstrap size and the random stream: resample ``b`` is the same for any row,
        chunking or memory budget (:func:`irsim.sampling.topics.bootstrap_counts` with
        `key`).
    memory_budget : int
        Approximate bytes for the bootstrap means of one chunk of rows.

    Returns
    -------
    CIResult

    Notes
    -----
    A constant row gives the degenerate interval ``[mean, mean]`` with every method
    (scipy returns NaN for BCa there).

    Examples
    --------
    >>> x = np.array([[0.12, 0.45, 0.30, 0.05, 0.61, 0.22, 0.38, 0.15]])
    >>> ci = mean_ci(x, method="t").confidence_interval
    >>> ref = sps.t.interval(0.95, 7, loc=x.mean(), scale=sps.sem(x[0]))
    >>> bool(np.allclose([ci.low[0], ci.high[0]], ref))
    True
    >>> ci = mean_ci(x, method="studentised_logit", B=2000, seed=1).confidence_interval
    >>> bool(ci.low[0] < x.mean() < ci.high[0])
    True
    >>> mean_ci(x * 2, method="logit")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: method='logit' needs values in [0, 1] ..., but x[0, 4] = 1.22; ...
    """
    method = check_choice("CI method", method, CI_METHODS)
    level = check_confidence_level(confidence_level)
    alternative = check_alternative(alternative)
    data = data_iv(x, "x", min_n=2)
    v, n = data.values, data.n
    _check_logit_domain(method, np.asarray(x, np.float64), "x")
    mean = v.mean(axis=-1)
    if method in ("normal", "t"):
        se = v.std(axis=-1, ddof=1) / np.sqrt(n)
        alpha = _tail(level, alternative)
        q = float(sps.norm.isf(alpha) if method == "normal" else sps.t.isf(alpha, n - 1))
        ci = location_interval(mean, se, q, alternative)
        return CIResult(ConfidenceInterval(data.out(ci.low), data.out(ci.high)),
                        data.out(mean), data.out(se), method, level)
    mc = monte_carlo_iv(B=B, seed=seed, study=study, pvalue_mode="count",
                        memory_budget=memory_budget, key=key)
    chunks = list(mc.replicate_chunks(8 * n))
    cached = (np.ascontiguousarray(bootstrap_counts(mc.seed, mc.study, n, 0, mc.B,
                                                    key=mc.key).T)
              if len(chunks) == 1 else None)
    acc = mean_acceleration(v) if method == "bca" else None
    low, high, se = (np.empty(data.rows) for _ in range(3))
    for rows in row_chunks(data.rows, 8 * 4 * mc.B, mc.memory_budget):
        star = np.empty((rows.stop - rows.start, mc.B))
        ex = Exact(v[rows], l1=n)  # resampled sums, the same on every machine
        for a, b in chunks:
            ct = cached if cached is not None else np.ascontiguousarray(
                bootstrap_counts(mc.seed, mc.study, n, a, b, key=mc.key).T)
            star[:, a:b] = ex.right(ct)
        star /= n
        low[rows], high[rows], se[rows] = _from_distribution(
            mean[rows], star, method, level, alternative,
            None if acc is None else acc[rows], n, LOGIT_EPS)
    return CIResult(ConfidenceInterval(data.out(low), data.out(high)), data.out(mean),
                    data.out(se), method, level)
