"""Tabulated margins: per-system distributions on [0, 1] as piecewise-linear cdfs.

Every margin is a piecewise-linear cdf through knots ``(x_k, F_k)`` (both non-decreasing; a
vertical step is an atom, a horizontal step a gap), so that sampling (the quantile function),
the exact mean and the KS distance are one vectorised code path for all kinds
(:class:`Margins`):

- ``kernel`` (continuous metrics such as AP, nDCG@20, ERR@20; the shift design of
  ``experiment=test_errors``): atoms at exactly 0 and 1 with their observed shares, plus a
  Gaussian kernel density of the interior scores on the logit scale (Silverman's bandwidth,
  variance-corrected as in Jones 1991), tabulated at :data:`KERNEL_BINS` knots, then shifted
  (proportional odds, below) to the observed mean (:func:`kernel_margins`);
- ``empirical``: the observed scores themselves (step cdf). ``auto`` uses it for discrete
  metrics (:func:`~irsim.simulate.margins.support.detect_support`: P@k stays on its grid
  ``j/k``, RR on ``{0, 1/r}``) and ``kernel`` otherwise (:func:`fit_margins`);
- ``grid`` and ``normal``: cdfs tabulated on a grid (:func:`grid_margins`,
  :func:`normal_margins`: checks against normal theory);
- ``fitted``: the parametric families selected by AIC (simIReff,
  :mod:`irsim.simulate.margins.families`), tabulated.

A margin is shifted by a *proportional-odds* transform ``F_theta(x) = expit(logit(F(x)) -
theta)``, i.e. a score is drawn as ``Q(expit(logit(U) + theta))``: monotone, the identity at
``theta = 0``, the mean increases strictly with ``theta``, and the support is kept (P@10 stays
on its grid, the atoms at 0 and 1 stay atoms). The exact mean of a shifted margin has a
closed form (:meth:`Margins.mean`); :meth:`Margins.shift_for_mean` inverts it (regula falsi).

Examples
--------
>>> m = kernel_margins(np.clip(np.random.default_rng(0).beta(2, 5, (2, 50)), 0, 1))
>>> m.kind, m.systems
('kernel', 2)
>>> bool(np.abs(m.mean(m.shift_for_mean(m.mean() + 0.05)) - m.mean() - 0.05).max() < 1e-9)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, log_ndtr, ndtr

from irsim.errors import ConfigError, InputError, unknown_name
from irsim.params import Choice
from irsim.simulate.margins.support import detect_support

__all__ = [
    "KERNEL_BINS",
    "MARGIN_KINDS",
    "THETA_MAX",
    "Margins",
    "check_scores",
    "empirical_margins",
    "fit_margins",
    "grid_margins",
    "kernel_margins",
    "latent_uniform",
    "normal_margins",
]

#: Margin kinds of :func:`fit_margins`.


class MarginKind(Choice):
    """How a simulated margin is built from observed scores (:func:`margin_for`)."""

    auto = "auto"
    kernel = "kernel"
    empirical = "empirical"


MARGIN_KINDS = MarginKind.values()
#: Knots of a tabulated kernel margin (equally spaced on the logit scale).
KERNEL_BINS = 512
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
    scores = check_scores(scores)
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
    scores = check_scores(scores)
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


def fit_margins(scores: ArrayLike, kind: str = "auto") -> Margins:
    """Margins of every row of `scores` (systems, topics): ``kernel``, ``empirical`` or
    ``auto`` (empirical for a discrete metric, see
    :func:`~irsim.simulate.margins.support.detect_support`, else kernel); a discrete margin
    carries the support's :attr:`~irsim.simulate.margins.support.Support.label`.

    Examples
    --------
    >>> fit_margins(np.array([[0.1, 0.3, 0.2], [0.4, 0.0, 0.1]])).kind
    'empirical'
    >>> fit_margins(np.array([[0.1312, 0.3745, 0.2161], [0.4417, 0.0213, 0.1809]])).kind
    'kernel'
    """
    if kind not in MARGIN_KINDS:
        raise unknown_name("margin kind", str(kind), MARGIN_KINDS)
    scores = check_scores(scores)
    found = detect_support(scores)
    support = None if found is None else found.label
    if kind == "kernel" and support is not None:
        raise ConfigError(f"kernel margins would leave the metric's discrete support "
                          f"({support}); use margin=empirical or auto")
    if kind == "empirical" or (kind == "auto" and support is not None):
        return empirical_margins(scores, support=support)
    return kernel_margins(scores)


def check_scores(scores: ArrayLike) -> np.ndarray:
    a = np.atleast_2d(np.asarray(scores, np.float64))
    if a.ndim != 2 or a.shape[1] < 2:
        raise InputError(f"scores must be (systems, topics >= 2), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError("scores have non-finite values")
    if a.min() < 0 or a.max() > 1:
        raise InputError(f"simulation needs scores in [0, 1], got [{a.min()}, {a.max()}]")
    return a
