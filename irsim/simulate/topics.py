"""Simulated topics for pairs of systems, fit to a real score matrix (known-truth studies).

The model follows Urbano & Nagler (SIGIR 2018) and Urbano, Lima & Hanjalic (SIGIR 2019):
each system's per-topic scores have a *margin* (a distribution on [0, 1]) and the scores of
two systems on the same topic are tied by a *copula*; new topics are drawn from the model,
so the true means of the systems, and hence the true difference between them, are known.

Margins (:class:`Margins`)
    Every margin is a piecewise-linear cdf through knots ``(x_k, F_k)`` (both
    non-decreasing; a vertical step is an atom, a horizontal step a gap), so that sampling
    (the quantile function), the exact mean and the KS distance are one vectorised code
    path for all kinds:

    - ``kernel`` (continuous metrics such as AP, nDCG@20, ERR@20): atoms at exactly 0 and 1
      with their observed shares, plus a Gaussian kernel density of the interior scores on
      the logit scale (Silverman's bandwidth, variance-corrected as in Jones 1991),
      tabulated at :data:`KERNEL_BINS` knots, then shifted (proportional odds, below) to
      the observed mean (:func:`kernel_margins`);
    - ``empirical``: the observed scores themselves (step cdf). ``auto`` uses it for
      discrete metrics (:func:`detect_support`: P@k stays on its grid ``j/k``, RR on
      ``{0, 1/r}``) and ``kernel`` otherwise.

Dependence
    A Gaussian copula per pair of systems, with latent correlation ``rho`` chosen so that
    the simulated scores reproduce the observed dependence of the pair:

    - ``pearson`` (default): NORTA (Cario & Nelson 1997) - ``rho`` such that the Pearson
      correlation of the scores simulated with the two systems' fitted margins equals the
      observed one; computed with Mehler's expansion
      ``cov(rho) = sum_k rho^k a_k b_k`` over the Hermite coefficients of the two margins.
      It reproduces the variance of the per-topic differences, which drives the power of
      the paired tests (``|rho|`` is capped at :data:`MAX_RHO`);
    - ``kendall``: ``rho = sin(pi tau_b / 2)`` (margin-free; the Pearson correlation of
      the simulated scores is then typically lower than observed for AP).

True difference
    One margin is shifted by a *proportional-odds* transform
    ``F_theta(x) = expit(logit(F(x)) - theta)``, i.e. a score is drawn as
    ``Q(expit(logit(U) + theta))``: monotone, the identity at ``theta = 0``, the mean
    increases strictly with ``theta``, and the support is kept (P@10 stays on its grid, the
    atoms at 0 and 1 stay atoms). The exact mean of a shifted margin has a closed form
    (:meth:`Margins.mean`); :meth:`Margins.shift_for_mean` inverts it (regula falsi).

Shifted pairs
    :func:`prepare` tabulates, for every metric, the shift of every system's margin to
    ``mean + delta`` for each delta, and the ordered pairs ``(baseline, pair)`` whose baseline
    reaches every delta (:class:`SimulationData`, what ``experiment=test_errors`` reads).

Examples
--------
>>> rng = np.random.default_rng(0)
>>> scores = np.clip(rng.beta(2, 5, (6, 50)) + rng.normal(0, .05, (1, 50)), 0, 1)
>>> sim = fit_simulator(scores, metric="AP")
>>> sim.margins.kind, len(sim.pair_a)
('kernel', 15)
>>> xa, xb = sim.sample(np.random.default_rng(1), np.zeros(4, np.int64), 50)
>>> xa.shape, bool(((xa >= 0) & (xa <= 1)).all())
((4, 50), True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, log_ndtr, ndtr, ndtri

from irsim.errors import ConfigError, InputError, unknown_name
from irsim.exact import corrcoef
from irsim.sampling.systems import bottom_mask, check_share, duplicate_mask
from irsim.stats.kendall import tau_b_matrix

__all__ = [
    "DEPENDENCE",
    "HERMITE_TERMS",
    "KERNEL_BINS",
    "MARGIN_KINDS",
    "MAX_RHO",
    "Margins",
    "SimulationData",
    "TopicSimulator",
    "detect_support",
    "empirical_margins",
    "fit_margins",
    "fit_simulator",
    "grid_margins",
    "kernel_margins",
    "latent_uniform",
    "normal_margins",
    "norta_rho",
    "prepare",
]

#: Margin kinds of :func:`fit_margins`.
MARGIN_KINDS = ("auto", "kernel", "empirical")
#: Dependence targets of :func:`fit_simulator`.
DEPENDENCE = ("pearson", "kendall")
#: Knots of a tabulated kernel margin (equally spaced on the logit scale).
KERNEL_BINS = 512
#: Hermite terms of the NORTA correlation series.
HERMITE_TERMS = 600
#: Largest latent correlation (the Hermite series converges slowly near 1).
MAX_RHO = 0.99
#: Largest |theta| of a proportional-odds shift.
THETA_MAX = 60.0


# ----------------------------------------------------------------------------- helpers


def _first_index(a: np.ndarray, rows: np.ndarray, v: np.ndarray, *, right: bool = False
                 ) -> np.ndarray:
    """Batched ``searchsorted``: per query, the first ``k`` with ``a[rows, k] >= v``
    (``> v`` if `right`), ``a.shape[1]`` if none; rows of `a` are non-decreasing.

    A binary search over all queries at once (``log2(K)`` vectorised steps).
    """
    width = a.shape[1]
    lo = np.zeros(np.shape(v), np.int64)
    hi = np.full(np.shape(v), width, np.int64)
    for _ in range(int(width).bit_length()):
        mid = (lo + hi) // 2
        val = a[rows, np.minimum(mid, width - 1)]
        go = ((val <= v) if right else (val < v)) & (lo < hi)
        lo = np.where(go, mid + 1, lo)
        hi = np.where(go, hi, mid)
    return lo


def _series(r: np.ndarray, offset: int) -> np.ndarray:
    """``sum_j (-r)^j / (j + offset)`` for small |r| (Horner, 12 terms)."""
    out = np.zeros_like(r)
    for j in range(11, -1, -1):
        out = out * (-r) + 1.0 / (j + offset)
    return out


def _mean_h(a: np.ndarray, b: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Mean of ``H(p) = expit(logit(p) - theta)`` over ``p`` in ``[a, b]`` (``H(a)`` if
    ``a == b``), in closed form.

    ``H(p) = p / (c + d p)`` with ``c = e^theta``, ``d = 1 - c``; with ``q = c + d a`` and
    ``r = d (b - a) / q``: ``integral = (b - a) / q * (a g(r) + (b - a) h(r))`` where
    ``g(r) = log1p(r)/r`` and ``h(r) = (r - log1p(r))/r^2`` (series for small |r|), which
    has no cancellation as ``theta -> 0``.
    """
    c = np.exp(theta)
    d = -np.expm1(theta)
    q = c * (1.0 - a) + a
    w = b - a
    r = d * w / q
    small = np.abs(r) < 1e-2
    rs = np.where(small, 1.0, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        # log(1 + r) = log(q_b / q); near r = -1 from the q's themselves (r rounds to -1
        # when theta is large)
        l1p = np.where(rs > -0.5, np.log1p(rs), np.log(c * (1.0 - b) + b) - np.log(q))
        g = np.where(small, _series(r, 1), l1p / rs)
        h = np.where(small, _series(r, 2), (rs - l1p) / (rs * rs))
    return (a * g + w * h) / q


def latent_uniform(z: np.ndarray, theta: ArrayLike = 0.0) -> np.ndarray:
    """``expit(logit(Phi(z)) + theta)``: the uniform of a standard normal `z`, shifted
    on the log-odds scale (computed without rounding ``Phi(z)`` to 0 or 1).

    Examples
    --------
    >>> latent_uniform(np.array([0.0, 1.0])).round(6).tolist()
    [0.5, 0.841345]
    >>> float(latent_uniform(np.array([0.0]), np.log(3.0))[0])  # odds 1 -> 3
    0.75
    """
    z = np.asarray(z, np.float64)
    return expit(log_ndtr(z) - log_ndtr(-z) + np.asarray(theta, np.float64))


# ----------------------------------------------------------------------------- margins


@dataclass(frozen=True)
class Margins:
    """Per-system distributions on [0, 1] as piecewise-linear cdfs.

    Parameters
    ----------
    x : ndarray, shape (systems, knots)
        Knot positions, non-decreasing along each row, inside [0, 1].
    F : ndarray, shape (systems, knots)
        The cdf at the knots, non-decreasing, from 0 to 1. Between two knots the cdf is
        linear; two knots at the same ``x`` make an atom, two at the same ``F`` a gap.
    kind : str
        How the margins were made (``kernel``, ``empirical``, ``grid``, ``normal``).
    support : str, optional
        The discrete support detected (e.g. ``grid 1/10``), if any.

    Examples
    --------
    >>> m = empirical_margins(np.array([[0.0, 0.5, 0.5, 1.0]]))
    >>> m.mean().tolist()
    [0.5]
    >>> m.quantile(np.zeros(3, np.int64), np.array([0.1, 0.5, 0.9])).tolist()
    [0.0, 0.5, 1.0]
    >>> theta = m.shift_for_mean(np.array([0.6]))
    >>> round(float(m.mean(theta)[0]), 12)
    0.6
    """

    x: np.ndarray
    F: np.ndarray
    kind: str
    support: str | None = None

    def __post_init__(self) -> None:
        x = np.ascontiguousarray(self.x, dtype=np.float64)
        F = np.ascontiguousarray(self.F, dtype=np.float64)
        if x.ndim != 2 or x.shape != F.shape or x.shape[1] < 2:
            raise InputError(f"margins need x and F of the same shape (systems, knots >= 2), "
                             f"got {x.shape} and {F.shape}")
        if not (np.isfinite(x).all() and np.isfinite(F).all()):
            raise InputError("margins have non-finite knots")
        if (np.diff(x, axis=1) < 0).any() or (np.diff(F, axis=1) < 0).any():
            raise InputError("margin knots must be non-decreasing in x and F")
        if x.min() < 0 or x.max() > 1 or (F[:, 0] != 0).any() or (F[:, -1] != 1).any():
            raise InputError("margins must lie on [0, 1] with F from 0 to 1")
        x.setflags(write=False)
        F.setflags(write=False)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "F", F)

    @property
    def systems(self) -> int:
        """Number of margins."""
        return self.x.shape[0]

    def _rows(self, systems: ArrayLike | None) -> np.ndarray:
        if systems is None:
            return np.arange(self.systems)
        return np.asarray(systems, np.int64)

    def quantile(self, systems: ArrayLike, v: ArrayLike) -> np.ndarray:
        """``Q_s(v)``: the smallest score whose cdf reaches `v`, for margins `systems`
        (broadcast against `v`); linear between knots."""
        v, rows = np.broadcast_arrays(np.asarray(v, np.float64),
                                      np.asarray(systems, np.int64))
        k = np.maximum(_first_index(self.F, rows, v), 1)
        k = np.minimum(k, self.F.shape[1] - 1)
        f0, f1 = self.F[rows, k - 1], self.F[rows, k]
        x0, x1 = self.x[rows, k - 1], self.x[rows, k]
        span = f1 - f0
        w = np.divide(v - f0, span, out=np.ones_like(v), where=span > 0)
        return x0 + np.clip(w, 0.0, 1.0) * (x1 - x0)

    def cdf(self, systems: ArrayLike, t: ArrayLike, *, left: bool = False) -> np.ndarray:
        """``F_s(t)`` (or the left limit ``F_s(t-)`` if `left`), broadcast like
        :meth:`quantile`.

        Examples
        --------
        >>> m = empirical_margins(np.array([[0.2, 0.4]]))
        >>> m.cdf(0, np.array([0.1, 0.2, 0.3])).tolist(), float(m.cdf(0, 0.2, left=True))
        ([0.0, 0.5, 0.5], 0.0)
        """
        t, rows = np.broadcast_arrays(np.asarray(t, np.float64),
                                      np.asarray(systems, np.int64))
        width = self.x.shape[1]
        k = _first_index(self.x, rows, t, right=not left) - 1  # last knot < t (<= t)
        kc = np.clip(k, 0, width - 1)
        kn = np.minimum(kc + 1, width - 1)
        x0, x1 = self.x[rows, kc], self.x[rows, kn]
        f0, f1 = self.F[rows, kc], self.F[rows, kn]
        span = x1 - x0
        w = np.divide(t - x0, span, out=np.zeros_like(t), where=span > 0)
        out = f0 + np.clip(w, 0.0, 1.0) * (f1 - f0)
        return np.where(k < 0, 0.0, out)

    def mean(self, theta: ArrayLike = 0.0, systems: ArrayLike | None = None) -> np.ndarray:
        """Exact mean of each margin after the proportional-odds shift `theta`.

        ``E = x_last - sum_k (x_k - x_{k-1}) mean(H_theta(F) on [F_{k-1}, F_k])`` with
        ``H_theta(p) = expit(logit(p) - theta)`` (the cdf is linear in x between knots),
        i.e. ``integral_0^1 (1 - F_theta(x)) dx``.
        """
        rows = self._rows(systems)
        x, F = self.x[rows], self.F[rows]
        theta = np.broadcast_to(np.asarray(theta, np.float64), rows.shape)[:, None]
        hbar = _mean_h(F[:, :-1], F[:, 1:], theta)
        dx = np.diff(x, axis=1)
        return x[:, -1] - np.where(dx > 0, dx * hbar, 0.0).sum(axis=1)

    def shift_for_mean(self, target: ArrayLike, systems: ArrayLike | None = None,
                       *, tol: float = 1e-10) -> np.ndarray:
        """The shift ``theta`` that gives each margin the mean `target` (NaN where it
        cannot: the target must lie strictly between the smallest and largest score).

        Regula falsi with the Illinois modification on ``[-THETA_MAX, THETA_MAX]`` (the
        mean increases strictly with theta); a target equal to the margin's own mean gives
        exactly 0.
        """
        rows = self._rows(systems)
        target = np.broadcast_to(np.asarray(target, np.float64), rows.shape)
        lo = np.full(rows.shape, -THETA_MAX)
        hi = np.full(rows.shape, THETA_MAX)
        f_lo = self.mean(lo, rows) - target
        f_hi = self.mean(hi, rows) - target
        inside = (f_lo < -1e-9) & (f_hi > 1e-9)
        theta = np.zeros(rows.shape)
        side = np.zeros(rows.shape, np.int8)  # which end moved last (-1 lo, +1 hi)
        active = np.flatnonzero(inside)
        lo, hi, f_lo, f_hi, side = lo[active], hi[active], f_lo[active], f_hi[active], side[active]
        for _ in range(200):
            if len(active) == 0:
                break
            x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
            x = np.where((x > lo) & (x < hi), x, 0.5 * (lo + hi))
            fx = self.mean(x, rows[active]) - target[active]
            below = fx < 0
            # Illinois: an end kept twice in a row has its value halved
            f_hi = np.where(below & (side == -1), 0.5 * f_hi, f_hi)
            f_lo = np.where(~below & (side == 1), 0.5 * f_lo, f_lo)
            lo, f_lo = np.where(below, x, lo), np.where(below, fx, f_lo)
            hi, f_hi = np.where(below, hi, x), np.where(below, f_hi, fx)
            side = np.where(below, -1, 1).astype(np.int8)
            done = (np.abs(fx) <= 1e-15) | (hi - lo <= 1e-13)
            theta[active[done]] = x[done]
            keep = ~done
            active, lo, hi = active[keep], lo[keep], hi[keep]
            f_lo, f_hi, side = f_lo[keep], f_hi[keep], side[keep]
        theta[active] = 0.5 * (lo + hi)
        theta = np.where(target == self.mean(0.0, rows), 0.0, theta)
        ok = inside & (np.abs(self.mean(theta, rows) - target) <= tol)
        return np.where(ok, theta, np.nan)

    def sample(self, rng: np.random.Generator, systems: ArrayLike, size: int,
               theta: ArrayLike = 0.0) -> np.ndarray:
        """`size` independent scores from each margin of `systems` (shape
        ``(len(systems), size)``), shifted by `theta`.

        Examples
        --------
        >>> m = normal_margins([0.5], [0.1])
        >>> round(float(m.sample(np.random.default_rng(0), [0], 100000).mean()), 2)
        0.5
        """
        rows = np.asarray(systems, np.int64)[:, None]
        z = rng.standard_normal((len(rows), size))
        th = np.broadcast_to(np.asarray(theta, np.float64), (len(rows),))[:, None]
        return self.quantile(rows, latent_uniform(z, th))

    def ks_distance(self, scores: np.ndarray) -> np.ndarray:
        """Kolmogorov-Smirnov distance ``sup |F_s - F_emp|`` between each margin and the
        empirical distribution of its row of `scores` (systems, topics).

        Examples
        --------
        >>> s = np.array([[0.1, 0.3, 0.3, 0.9]])
        >>> empirical_margins(s).ks_distance(s).tolist()
        [0.0]
        """
        scores = np.sort(np.asarray(scores, np.float64), axis=1)
        s, n = scores.shape
        rows = np.arange(s)[:, None]
        # at each observed value t: F_emp(t) = #(<= t)/n, F_emp(t-) = #(< t)/n
        le = np.stack([np.searchsorted(r, r, side="right") for r in scores]) / n
        lt = np.stack([np.searchsorted(r, r, side="left") for r in scores]) / n
        fr = self.cdf(rows, scores)
        fl = self.cdf(rows, scores, left=True)
        return np.maximum(np.abs(fr - le), np.abs(fl - lt)).max(axis=1)


def _pad(rows: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Stack polylines of different lengths by repeating each one's last knot."""
    width = max(len(x) for x, _ in rows)
    xs = np.array([np.concatenate([x, np.full(width - len(x), x[-1])]) for x, _ in rows])
    fs = np.array([np.concatenate([f, np.ones(width - len(f))]) for _, f in rows])
    return xs, fs


def _step_polyline(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.sort(values)
    n = len(s)
    probs = np.arange(n + 1) / n
    x = np.repeat(s, 2)
    F = np.empty(2 * n)
    F[0::2], F[1::2] = probs[:-1], probs[1:]
    return x, F


def empirical_margins(scores: ArrayLike, *, support: str | None = None) -> Margins:
    """Each row's empirical distribution (a step cdf through the observed scores).

    Examples
    --------
    >>> m = empirical_margins(np.array([[0.1, 0.2, 0.2, 0.5], [0.0, 0.0, 1.0, 1.0]]))
    >>> m.mean().round(12).tolist()
    [0.25, 0.5]
    """
    scores = _check_scores(scores)
    xs, fs = _pad([_step_polyline(r) for r in scores])
    return Margins(xs, fs, "empirical", support)


def grid_margins(grid: ArrayLike, cdf: ArrayLike, *, kind: str = "grid") -> Margins:
    """Margins from cdfs tabulated on a common grid of [0, 1] (linear in between).

    Parameters
    ----------
    grid : array_like, shape (knots,)
        Increasing points from 0 to 1.
    cdf : array_like, shape (systems, knots)
        Non-decreasing values; each row is rescaled to end at 1 and start at 0 (mass
        below the first knot becomes an atom there).

    Examples
    --------
    >>> m = grid_margins([0.0, 1.0], [[0.0, 1.0]])   # uniform on [0, 1]
    >>> m.mean().tolist()
    [0.5]
    """
    grid = np.asarray(grid, np.float64)
    cdf = np.atleast_2d(np.asarray(cdf, np.float64))
    if grid.ndim != 1 or cdf.shape[1] != len(grid) or grid[0] != 0 or grid[-1] != 1:
        raise InputError("grid must run from 0 to 1 and match the cdf's columns")
    cdf = np.maximum.accumulate(np.clip(cdf / cdf[:, -1:], 0.0, 1.0), axis=1)
    s = len(cdf)
    x = np.concatenate([np.zeros((s, 1)), np.broadcast_to(grid, cdf.shape)], axis=1)
    F = np.concatenate([np.zeros((s, 1)), cdf], axis=1)
    F[:, -1] = 1.0
    return Margins(x, F, kind)


def normal_margins(means: ArrayLike, sds: ArrayLike, *, bins: int = 4096) -> Margins:
    """Normal distributions ``N(mean, sd^2)`` truncated to [0, 1], tabulated on `bins`
    bins (for checks against normal theory: keep ``mean +- 6 sd`` inside [0, 1]).

    Examples
    --------
    >>> m = normal_margins([0.5, 0.4], [0.1, 0.05])
    >>> m.mean().round(6).tolist()
    [0.5, 0.4]
    """
    mu = np.atleast_1d(np.asarray(means, np.float64))[:, None]
    sd = np.atleast_1d(np.asarray(sds, np.float64))[:, None]
    if (sd <= 0).any():
        raise ConfigError("normal margins need sd > 0")
    grid = np.linspace(0.0, 1.0, bins + 1)
    cdf = ndtr((grid - mu) / sd) - ndtr(-mu / sd)
    return grid_margins(grid, cdf, kind="normal")


def kernel_margins(scores: ArrayLike, *, bins: int = KERNEL_BINS) -> Margins:
    """Kernel-smoothed margins on [0, 1] with atoms at exactly 0 and 1.

    Per row: the shares of scores equal to 0 and to 1 stay atoms; the ``m`` interior
    scores get a Gaussian kernel density on the logit scale (``y = logit(x)``: no mass
    outside (0, 1) and no boundary bias, and the long right tails of AP-like scores become
    tractable) with Silverman's bandwidth ``h = 0.9 min(s, IQR/1.34) m^(-1/5)`` of the
    ``y``, variance-corrected (Jones 1991: the ``y`` and ``h`` shrunk by
    ``1/sqrt(1 + h^2/s^2)``, so the estimate keeps the mean and variance of the ``y``).
    The cdf is tabulated at `bins` knots equally spaced in ``y``; finally the interior
    part is shifted by the proportional-odds transform (:meth:`Margins.shift_for_mean`) so
    that the margin's mean equals the row's mean (the atoms are kept). Rows with fewer
    than two distinct interior scores keep their empirical distribution.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> s = np.concatenate([np.zeros((1, 5)), rng.beta(2, 5, (1, 45))], axis=1)
    >>> m = kernel_margins(s)
    >>> float(m.cdf(0, 0.0))             # the atom at 0 is kept
    0.1
    >>> bool(abs(m.mean()[0] - s.mean()) < 1e-12)
    True
    """
    scores = _check_scores(scores)
    n = scores.shape[1]
    p0 = np.count_nonzero(scores == 0.0, axis=1) / n
    p1 = np.count_nonzero(scores == 1.0, axis=1) / n
    interior = [_interior_kernel(row, bins) for row in scores]  # fit time, per system
    smooth = np.array([k is not None for k in interior])
    polylines = [_step_polyline(row) for row in scores]
    if smooth.any():
        xi = np.array([k[0] for k in interior if k is not None])
        ci = np.array([k[1] for k in interior if k is not None])
        inner = (1.0 - p0 - p1)[smooth]
        # the interior part's mean such that the whole margin has the row's mean
        target = (scores.mean(axis=1)[smooth] - p1[smooth]) / inner
        ci = _match_mean(xi, ci, target)
        zeros, ones = np.zeros((len(xi), 2)), np.ones((len(xi), 2))
        xs = np.concatenate([zeros, xi, ones], axis=1)
        fs = np.concatenate([np.c_[np.zeros(len(xi)), p0[smooth]],
                             p0[smooth, None] + inner[:, None] * ci,
                             np.c_[1.0 - p1[smooth], np.ones(len(xi))]], axis=1)
        fs = np.minimum(np.maximum.accumulate(fs, axis=1), 1.0)
        for j, i in enumerate(np.flatnonzero(smooth)):
            polylines[i] = (xs[j], fs[j])
    xs, fs = _pad(polylines)
    return Margins(xs, fs, "kernel")


def _match_mean(x: np.ndarray, c: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Shift cdfs tabulated at knots `x` (proportional odds) to the means `target`.

    Retabulating ``H_theta(c)`` at the knots moves the exact mean of the piecewise-linear
    cdf by O(bin^2), so the shift is solved again on the result (a few rounds).
    """
    inside = (c > 0) & (c < 1)
    with np.errstate(divide="ignore"):
        odds = np.where(inside, np.log(c) - np.log1p(-c), 0.0)
    total = np.zeros((len(c), 1))
    cur = c
    for _ in range(5):
        theta = Margins(x, cur, "kernel").shift_for_mean(target)
        total += np.where(np.isfinite(theta), theta, 0.0)[:, None]
        cur = np.maximum.accumulate(np.where(inside, expit(odds - total), c), axis=1)
        if np.abs(Margins(x, cur, "kernel").mean() - target).max() <= 1e-14:
            break
    return cur


def _interior_kernel(row: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Knots and cdf (from exactly 0 to 1) of the logit-scale kernel density of the
    interior scores of one row; None if it has fewer than two distinct ones."""
    v = row[(row > 0.0) & (row < 1.0)]
    if len(np.unique(v)) < 2:
        return None
    y = np.log(v) - np.log1p(-v)
    m = len(y)
    s = y.std()
    iqr = np.subtract(*np.percentile(y, [75, 25]))
    spread = min(s, iqr / 1.34) if iqr > 0 else s
    h = 0.9 * spread * m ** -0.2
    shrink = 1.0 / math.sqrt(1.0 + (h / s) ** 2)
    c = y.mean() + (y - y.mean()) * shrink
    h *= shrink
    grid = np.linspace(c.min() - 6.0 * h, c.max() + 6.0 * h, bins)
    cdf = ndtr((grid[:, None] - c) / h).mean(axis=1)
    cdf = np.clip((cdf - cdf[0]) / (cdf[-1] - cdf[0]), 0.0, 1.0)
    cdf[0], cdf[-1] = 0.0, 1.0
    return expit(grid), np.maximum.accumulate(cdf)


def _resolution(v: np.ndarray) -> float:
    """Half the rounding unit of decimal scores (``0.5e-4`` for 4 decimals), else 1e-9."""
    for d in range(13):
        if np.all(np.abs(v * 10.0**d - np.round(v * 10.0**d)) < 1e-6):
            return 0.5 * 10.0**-d * (1 + 1e-6)
    return 1e-9


def detect_support(scores: ArrayLike, *, max_grid: int = 100) -> str | None:
    """The discrete support of a metric's scores, if any: ``"grid 1/m"`` when every score
    is a multiple of ``1/m`` for some ``m <= max_grid`` (P@10: ``grid 1/10``), else
    ``"reciprocal"`` when every score is 0 or ``1/r`` for an integer r (RR; scores rounded
    to d decimals count as ``1/r`` when within half a unit of the d-th decimal), else None.

    Examples
    --------
    >>> detect_support([0.0, 0.3, 0.7, 1.0]), detect_support([0.0, 0.25, 0.3333, 0.0204])
    ('grid 1/10', 'reciprocal')
    >>> detect_support([0.1234, 0.5, 0.0061]) is None
    True
    """
    v = np.unique(np.asarray(scores, np.float64))
    for m in range(1, max_grid + 1):
        if np.all(np.abs(v * m - np.round(v * m)) < 1e-6):
            return f"grid 1/{m}"
    nz = v[v > 0]
    if len(nz) and np.all(np.abs(nz - 1.0 / np.round(1.0 / nz)) <= _resolution(v)):
        return "reciprocal"
    return None


def fit_margins(scores: ArrayLike, kind: str = "auto") -> Margins:
    """Margins of every row of `scores` (systems, topics): ``kernel``, ``empirical`` or
    ``auto`` (empirical for a discrete metric, see :func:`detect_support`, else kernel).

    Examples
    --------
    >>> fit_margins(np.array([[0.1, 0.3, 0.2], [0.4, 0.0, 0.1]])).kind
    'empirical'
    >>> fit_margins(np.array([[0.1312, 0.3745, 0.2161], [0.4417, 0.0213, 0.1809]])).kind
    'kernel'
    """
    if kind not in MARGIN_KINDS:
        raise unknown_name("margin kind", str(kind), MARGIN_KINDS)
    scores = _check_scores(scores)
    support = detect_support(scores)
    if kind == "kernel" and support is not None:
        raise ConfigError(f"kernel margins would leave the metric's discrete support "
                          f"({support}); use margin=empirical or auto")
    if kind == "empirical" or (kind == "auto" and support is not None):
        return empirical_margins(scores, support=support)
    return kernel_margins(scores)


def _check_scores(scores: ArrayLike) -> np.ndarray:
    a = np.atleast_2d(np.asarray(scores, np.float64))
    if a.ndim != 2 or a.shape[1] < 2:
        raise InputError(f"scores must be (systems, topics >= 2), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError("scores have non-finite values")
    if a.min() < 0 or a.max() > 1:
        raise InputError(f"simulation needs scores in [0, 1], got [{a.min()}, {a.max()}]")
    return a


# ----------------------------------------------------------------------------- dependence


def _hermite_coefficients(margins: Margins, terms: int) -> tuple[np.ndarray, np.ndarray]:
    """``a_k = E[f(Z) h_k(Z)]``, k = 1..terms, of ``f = Q o Phi`` (orthonormal Hermite
    ``h_k``), and ``Var f``, with each cdf segment replaced by its mid value (exact for
    step margins; the kernel's 1/512 bins make the error negligible).

    ``f`` is a step function of z with jumps ``dm_i`` at ``c_i = Phi^-1(F_i)``; as
    ``integral_a^b h_k phi = (psi_{k-1}(a) - psi_{k-1}(b))/sqrt(k)`` with
    ``psi_j = h_j phi``, ``a_k = sum_i dm_i psi_{k-1}(c_i) / sqrt(k)``.
    """
    x, F = margins.x, margins.F
    mid = 0.5 * (x[:, :-1] + x[:, 1:])
    pm = np.diff(F, axis=1)
    mean = (pm * mid).sum(axis=1)
    var = np.maximum((pm * mid * mid).sum(axis=1) - mean * mean, 0.0)
    # jump of f at interior knot i (between segments i-1 and i)
    dm = np.diff(mid, axis=1)
    f_in = F[:, 1:-1]
    inside = (f_in > 0.0) & (f_in < 1.0) & (dm != 0.0)
    c = ndtri(np.where(inside, f_in, 0.5))
    dm = np.where(inside, dm, 0.0)
    psi_prev = np.zeros_like(c)
    psi = np.exp(-0.5 * c * c) / math.sqrt(2.0 * math.pi)
    coef = np.empty((margins.systems, terms))
    for j in range(terms):  # recurrence over Hermite orders
        coef[:, j] = (dm * psi).sum(axis=1) / math.sqrt(j + 1.0)
        psi, psi_prev = (c * psi - math.sqrt(j) * psi_prev) / math.sqrt(j + 1.0), psi
    return coef, var


def norta_rho(margins: Margins, a: ArrayLike, b: ArrayLike, target: ArrayLike, *,
              terms: int = HERMITE_TERMS, max_rho: float = MAX_RHO) -> np.ndarray:
    """Latent Gaussian correlation for each pair ``(a, b)`` of margins such that the
    Pearson correlation of ``(Q_a(Phi(Z1)), Q_b(Phi(Z2)))`` equals `target` (NORTA),
    clipped to ``[-max_rho, max_rho]``.

    Mehler's formula gives ``cov(rho) = sum_k rho^k a_k b_k`` over the orthonormal
    Hermite coefficients of the two margins (:func:`_hermite_coefficients`); it increases
    with rho, and safeguarded Newton steps solve ``cov(rho) = target sd_a sd_b``.

    Examples
    --------
    >>> m = normal_margins([0.5, 0.5], [0.1, 0.1])   # normal margins: rho = target
    >>> norta_rho(m, [0], [1], [0.6]).round(4).tolist()
    [0.6]
    """
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    coef, var = _hermite_coefficients(margins, terms)
    goal = np.asarray(target, np.float64) * np.sqrt(var[a] * var[b])
    prod = np.ascontiguousarray((coef[a] * coef[b]).T)  # (terms, pairs)

    def cov_and_slope(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        val = np.zeros_like(r)
        slope = np.zeros_like(r)
        for k in range(terms, 0, -1):  # Horner over the series and its derivative
            slope = slope * r + k * prod[k - 1]
            val = (val + prod[k - 1]) * r
        return val, slope

    edge = np.full(len(a), max_rho)
    top, _ = cov_and_slope(edge)
    bottom, _ = cov_and_slope(-edge)
    r = np.where(goal >= top, max_rho, -max_rho)
    active = np.flatnonzero((goal < top) & (goal > bottom))
    # safeguarded Newton on the others: keep a bracket, bisect when a step leaves it
    prod_all, goal_all = prod, goal
    lo, hi = -edge[active], edge[active]
    x = np.clip(np.asarray(target, np.float64) * np.ones(len(a)), -max_rho, max_rho)[active]
    for _ in range(100):
        if len(active) == 0:
            break
        prod, goal = prod_all[:, active], goal_all[active]
        val, slope = cov_and_slope(x)
        up = val < goal
        lo = np.where(up, x, lo)
        hi = np.where(up, hi, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = x - (val - goal) / slope
        new = np.where((step >= lo) & (step <= hi), step, 0.5 * (lo + hi))
        done = (np.abs(new - x) <= 1e-13) | (hi - lo <= 1e-13)
        r[active[done]] = new[done]
        keep = ~done
        active, x, lo, hi = active[keep], new[keep], lo[keep], hi[keep]
    r[active] = x
    return r


# ----------------------------------------------------------------------------- simulator


@dataclass(frozen=True)
class TopicSimulator:
    """A fitted model of one metric: system margins and a Gaussian copula per pair.

    Parameters
    ----------
    metric : str
    systems : tuple of str
        The systems modelled (after dropping duplicates / the bottom share).
    margins : Margins
        One per system, in the order of `systems`.
    pair_a, pair_b : ndarray of int64, shape (pairs,)
        Every pair ``a < b`` of systems.
    rho : ndarray, shape (pairs,)
        Latent correlation of each pair's Gaussian copula.
    observed : ndarray, shape (pairs,)
        The observed dependence `rho` reproduces (Pearson r or Kendall tau-b).
    dependence : {"pearson", "kendall"}
    dropped : tuple of str
        Systems of the source left out.

    Examples
    --------
    >>> sim = TopicSimulator.normal(means=[0.5, 0.5], sds=[0.1, 0.1], rho=[0.5])
    >>> xa, xb = sim.sample(np.random.default_rng(0), np.zeros(2000, np.int64), 50)
    >>> round(float(np.corrcoef(xa.ravel(), xb.ravel())[0, 1]), 1)
    0.5
    """

    metric: str
    systems: tuple[str, ...]
    margins: Margins
    pair_a: np.ndarray
    pair_b: np.ndarray
    rho: np.ndarray
    observed: np.ndarray
    dependence: str
    dropped: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("pair_a", "pair_b"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), np.int64))
        for name in ("rho", "observed"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), np.float64))
        object.__setattr__(self, "systems", tuple(self.systems))
        object.__setattr__(self, "dropped", tuple(self.dropped))
        if len(self.systems) != self.margins.systems:
            raise InputError(f"{len(self.systems)} systems but {self.margins.systems} "
                             f"margins")
        if not (len(self.pair_a) == len(self.pair_b) == len(self.rho)):
            raise InputError("pair_a, pair_b and rho must have the same length")
        if len(self.rho) and np.abs(self.rho).max() >= 1:
            raise InputError("copula correlations must lie inside (-1, 1)")

    @classmethod
    def normal(cls, means: ArrayLike, sds: ArrayLike, rho: ArrayLike,
               metric: str = "normal") -> TopicSimulator:
        """Normal margins (:func:`normal_margins`) and given latent correlations for the
        pairs ``a < b`` in row-major order: bivariate normal topics, for checks against
        normal theory."""
        margins = normal_margins(means, sds)
        a, b = np.triu_indices(margins.systems, 1)
        rho = np.broadcast_to(np.asarray(rho, np.float64), a.shape)
        names = tuple(f"s{i}" for i in range(margins.systems))
        return cls(metric, names, margins, a, b, rho, rho, "pearson")

    @property
    def pairs(self) -> int:
        """Number of (unordered) system pairs."""
        return len(self.rho)

    def correlate(self, pairs: np.ndarray, z1: np.ndarray, z2: np.ndarray) -> np.ndarray:
        """``rho z1 + sqrt(1 - rho^2) z2`` with each trial's pair correlation."""
        r = self.rho[np.asarray(pairs, np.int64)][:, None]
        return r * z1 + np.sqrt(1.0 - r * r) * z2

    def scores(self, pairs: ArrayLike, z1: np.ndarray, z2: np.ndarray, *,
               margin_a: ArrayLike | None = None, margin_b: ArrayLike | None = None,
               theta_a: ArrayLike = 0.0, theta_b: ArrayLike = 0.0
               ) -> tuple[np.ndarray, np.ndarray]:
        """Scores of trials ``(trials, topics)`` from independent standard normals.

        Parameters
        ----------
        pairs : array_like of int, shape (trials,)
            The pair whose copula ties the two systems of each trial.
        z1, z2 : ndarray, shape (trials, topics)
            Independent standard normals.
        margin_a, margin_b : array_like of int, shape (trials,), optional
            Margins of the two systems (default: the pair's own systems). Passing the same
            margin twice gives exchangeable scores (a true null hypothesis).
        theta_a, theta_b : array_like, shape (trials,) or scalar
            Proportional-odds shifts of the two margins.

        Returns
        -------
        xa, xb : ndarray, shape (trials, topics)
        """
        pairs = np.asarray(pairs, np.int64)
        ma = self.pair_a[pairs] if margin_a is None else np.asarray(margin_a, np.int64)
        mb = self.pair_b[pairs] if margin_b is None else np.asarray(margin_b, np.int64)
        ta = np.broadcast_to(np.asarray(theta_a, np.float64), pairs.shape)[:, None]
        tb = np.broadcast_to(np.asarray(theta_b, np.float64), pairs.shape)[:, None]
        xa = self.margins.quantile(ma[:, None], latent_uniform(z1, ta))
        xb = self.margins.quantile(mb[:, None], latent_uniform(self.correlate(pairs, z1, z2),
                                                               tb))
        return xa, xb

    def sample(self, rng: np.random.Generator, pairs: ArrayLike, n: int, **options
               ) -> tuple[np.ndarray, np.ndarray]:
        """Draw `n` topics for each trial's pair (see :meth:`scores` for `options`)."""
        pairs = np.asarray(pairs, np.int64)
        z = rng.standard_normal((2, len(pairs), n))
        return self.scores(pairs, z[0], z[1], **options)


def fit_simulator(
    scores: ArrayLike,
    *,
    metric: str = "score",
    systems: tuple[str, ...] | None = None,
    margin: str = "auto",
    dependence: str = "pearson",
    drop_duplicates: bool = True,
    drop_bottom: float = 0.0,
) -> TopicSimulator:
    """Fit margins and pairwise Gaussian copulas to a (systems, topics) score matrix.

    Parameters
    ----------
    scores : array_like, shape (systems, topics)
        Per-topic scores in [0, 1] of one metric.
    metric : str
    systems : tuple of str, optional
        System ids (default ``s0, s1, ...``).
    margin : {"auto", "kernel", "empirical"}
        See :func:`fit_margins`.
    dependence : {"pearson", "kendall"}
        What the copula of each pair reproduces (see the module docstring).
    drop_duplicates : bool
        Leave out systems whose scores equal an earlier system's on every topic (within
        1e-5), as Urbano et al. do.
    drop_bottom : float
        Leave out this share of the systems with the lowest mean (Urbano et al.: 0.1).

    Returns
    -------
    TopicSimulator

    Examples
    --------
    >>> x = np.array([[0.1, 0.4, 0.3, 0.8], [0.2, 0.5, 0.2, 0.9], [0.1, 0.4, 0.3, 0.8]])
    >>> sim = fit_simulator(x, drop_duplicates=True)
    >>> sim.systems, sim.dropped, sim.margins.kind
    (('s0', 's1'), ('s2',), 'empirical')
    """
    if dependence not in DEPENDENCE:
        raise unknown_name("dependence", str(dependence), DEPENDENCE)
    x = _check_scores(scores)
    names = tuple(systems) if systems is not None else tuple(f"s{i}" for i in range(len(x)))
    if len(names) != len(x):
        raise InputError(f"{len(names)} system ids for {len(x)} rows of scores")
    share = check_share(drop_bottom, "drop_bottom")
    keep = duplicate_mask(x) if drop_duplicates else np.ones(len(x), bool)
    keep = bottom_mask(x.mean(axis=1), share, rule="quantile", keep=keep)
    if np.count_nonzero(keep) < 2:
        raise InputError(f"metric {metric}: fewer than 2 systems left to simulate")
    kept = x[keep]
    margins = fit_margins(kept, margin)
    a, b = np.triu_indices(len(kept), 1)
    if dependence == "kendall":
        observed = tau_b_matrix(kept)[a, b]
        rho = np.clip(np.sin(0.5 * np.pi * np.nan_to_num(observed)), -MAX_RHO, MAX_RHO)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            observed = corrcoef(kept)[a, b]
        rho = norta_rho(margins, a, b, np.nan_to_num(observed))
    return TopicSimulator(
        metric=metric,
        systems=tuple(n for n, k in zip(names, keep, strict=True) if k),
        margins=margins,
        pair_a=a,
        pair_b=b,
        rho=rho,
        observed=observed,
        dependence=dependence,
        dropped=tuple(n for n, k in zip(names, keep, strict=True) if not k),
    )


# ----------------------------------------------------------------------------- shifted pairs


@dataclass(frozen=True)
class SimulationData:
    """Known-truth trials of shifted pairs (what ``experiment=test_errors`` reads): one
    fitted simulator per metric, and per delta the shift of each baseline's margin.

    Attributes
    ----------
    simulators : tuple of TopicSimulator
    deltas : tuple of float
    thetas : tuple of ndarray, each (deltas, systems)
        Proportional-odds shift giving system s's margin the mean ``mean_s + delta``
        (NaN where unattainable).
    trial_pairs : tuple of ndarray, each (ordered pairs, 2)
        ``(baseline system, pair index)`` of every ordered pair whose baseline reaches all
        deltas; a trial draws one uniformly.
    diagnostics : tuple of dict
        Fit statistics per metric (for the ``test_errors_fit`` table).
    """

    simulators: tuple[TopicSimulator, ...]
    deltas: tuple[float, ...]
    thetas: tuple[np.ndarray, ...]
    trial_pairs: tuple[np.ndarray, ...]
    diagnostics: tuple[dict, ...] = field(default=())

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metric names, in simulator order."""
        return tuple(s.metric for s in self.simulators)

    def describe(self) -> dict:
        """Summary for the manifest and the report header."""
        return {
            "metrics": list(self.metrics),
            "systems": int(self.simulators[0].margins.systems) if self.simulators else 0,
            "topics": "simulated",
            "source": "generator fitted to the collection (see test_errors_fit)",
            "deltas": list(self.deltas),
        }


def prepare(simulators: Sequence[TopicSimulator], deltas: Sequence[float],
            sources: Sequence[np.ndarray] | None = None) -> SimulationData:
    """Shifts for every (delta, system) and the eligible ordered pairs of each metric.

    A system is a baseline only if its margin can be shifted to every ``mean + delta``
    (a discrete margin cannot pass its largest score). `sources` (the fitted rows of the
    score matrix per metric, optional) add fit diagnostics.

    Examples
    --------
    >>> sim = TopicSimulator.normal(means=[0.3, 0.4, 0.5], sds=[0.1] * 3, rho=[0.5] * 3)
    >>> data = prepare([sim], [0.0, 0.05])
    >>> data.thetas[0][0].tolist(), len(data.trial_pairs[0])   # 3 pairs x 2 orientations
    ([0.0, 0.0, 0.0], 6)
    >>> shifted = sim.margins.mean(data.thetas[0][1]) - sim.margins.mean()
    >>> shifted.round(12).tolist()
    [0.05, 0.05, 0.05]
    """
    deltas = tuple(float(d) for d in deltas)
    thetas, pairs, diags = [], [], []
    for i, sim in enumerate(simulators):
        m = sim.margins
        base = m.mean()
        theta = np.stack([np.zeros(m.systems) if d == 0.0 else m.shift_for_mean(base + d)
                          for d in deltas])
        ok = np.isfinite(theta).all(axis=0)
        p = np.arange(sim.pairs)
        ordered = np.concatenate([np.stack([sim.pair_a, p], axis=1),
                                  np.stack([sim.pair_b, p], axis=1)])
        order = np.lexsort((ordered[:, 0], ordered[:, 1]))
        ordered = ordered[order]
        ordered = ordered[ok[ordered[:, 0]]]
        if len(ordered) == 0:
            raise ConfigError(f"metric {sim.metric}: no system's margin can be shifted to "
                              f"its mean + {max(deltas)}; use smaller deltas")
        thetas.append(theta)
        pairs.append(np.ascontiguousarray(ordered, dtype=np.int64))
        diag = {"baselines": int(np.count_nonzero(ok))}
        if sources is not None:
            src = np.asarray(sources[i], np.float64)
            ks = m.ks_distance(src)
            diag.update(ks_mean=float(ks.mean()), ks_max=float(ks.max()),
                        mean_error_max=float(np.abs(base - src.mean(axis=1)).max()))
        diags.append(diag)
    return SimulationData(tuple(simulators), deltas, tuple(thetas), tuple(pairs),
                          tuple(diags))
