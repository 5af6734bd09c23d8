"""Variance components of the balanced mixed models of :mod:`irsim.stats.factorial` by
REML, and the fixed system effects with their standard errors.

Model: systems fixed, every other term of the design random (topic, replicate, collection
and their interactions, residual), the random effects independent normal with one variance
each (the unrestricted model, as lme4 and statsmodels ``MixedLM`` fit it). For balanced
data the REML likelihood factorises over the random strata of the ANOVA: with ``A`` the
expected-mean-square matrix (:func:`irsim.stats.factorial.ems_matrix`) restricted to the
random terms, ``lambda = A sigma`` and

    l(sigma) = -1/2 sum_i df_i (log lambda_i + MS_i / lambda_i)

(Searle, Casella & McCulloch 1992, ch. 6). Its unconstrained maximum is ``lambda_i =
MS_i``: ``sigma = A^-1 MS``, the ANOVA (expected mean squares) estimators. When none is
negative that is the REML estimate (closed form). When one is negative REML's estimate is on
the boundary: we maximise ``l`` over ``sigma >= 0`` (L-BFGS-B with the analytic gradient,
from the clipped ANOVA estimates, then Fisher scoring on the free components). When the
boundary only ties two strata (a component at 0 that makes ``lambda_i = lambda_j``) this is
the classical pooling, ``(SS_i + SS_j) / (df_i + df_j)`` (Thompson 1962).

The system means are the GLS (= OLS, balanced) estimates; the variance of a system mean is
``sum_j sigma_j / L_j`` (``L_j``: levels of random term ``j`` within one system) and of a
difference of two means ``2 lambda_system / (N / systems)``.

Examples
--------
Topic, system:topic and residual variances 1, 0.25 and 0.04 (20 topics: the topic
variance is the roughest):

>>> rng = np.random.default_rng(0)
>>> x = (rng.normal(size=(1, 20, 1)) + rng.normal(size=(4, 20, 1)) * 0.5
...      + rng.normal(size=(4, 20, 3)) * 0.2)
>>> v = variance_components(x, "replicated")
>>> v.components
('topic', 'system:topic', 'residual')
>>> [round(float(c), 2) for c in v.var]
[0.8, 0.27, 0.05]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from irsim.stats.factorial import (
    anova_table,
    design_of,
    ems_matrix,
)

__all__ = ["VarianceComponents", "variance_components", "reml_loglik"]


@dataclass(frozen=True)
class VarianceComponents:
    """REML fit of a balanced mixed model (leading axes: independent problems).

    Attributes
    ----------
    design : str
    components : tuple of str
        The random terms (``residual`` last).
    var : ndarray, shape (..., components)
        REML variance components (>= 0).
    anova : ndarray, shape (..., components)
        The ANOVA estimators ``A^-1 MS`` (may be negative).
    boundary : ndarray of bool, shape (...)
        True where some ANOVA estimate was negative and REML was refitted on the boundary.
    loglik : ndarray, shape (...)
        The REML log-likelihood at ``var`` up to a constant: ``-1/2 sum df (log lambda + MS /
        lambda)`` over the random strata.
    means : ndarray, shape (..., systems)
        System means (the fixed effects as cell means).
    se_mean : ndarray, shape (...)
        Standard error of one system mean (the same for every system).
    se_diff : ndarray, shape (...)
        Standard error of the difference of two system means.
    """

    design: str
    components: tuple[str, ...]
    var: np.ndarray
    anova: np.ndarray
    boundary: np.ndarray
    loglik: np.ndarray
    means: np.ndarray
    se_mean: np.ndarray
    se_diff: np.ndarray


def reml_loglik(var: np.ndarray, ms: np.ndarray, df: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``-1/2 sum_i df_i (log lambda_i + MS_i / lambda_i)``, ``lambda = a @ var``: the
    balanced REML log-likelihood up to a constant (NaN where some ``lambda <= 0``).

    Examples
    --------
    Largest at ``lambda = MS``:

    >>> a, ms, df = np.array([[1.0, 3.0], [1.0, 0.0]]), np.array([2.0, 0.5]), np.array([4, 20])
    >>> best = np.linalg.solve(a, ms)[::-1]
    >>> bool(reml_loglik(best, ms, df, a[:, ::-1]) > reml_loglik(best * 1.1, ms, df, a[:, ::-1]))
    True
    """
    lam = np.asarray(var, float) @ np.asarray(a, float).T
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -0.5 * (df * (np.log(lam) + ms / lam)).sum(axis=-1)
    return np.where((lam > 0).all(axis=-1), out, np.nan)[()]


def _boundary_fit(ms: np.ndarray, df: np.ndarray, a: np.ndarray, start: np.ndarray
                  ) -> np.ndarray:
    """Maximise the REML likelihood of one problem over ``var >= 0`` (residual > 0)."""
    scale = float(ms.max()) if ms.max() > 0 else 1.0
    m = ms / scale

    def nll(v: np.ndarray) -> tuple[float, np.ndarray]:
        lam = a @ v
        g = 0.5 * (df * (1.0 / lam - m / lam ** 2)) @ a
        return 0.5 * float((df * (np.log(lam) + m / lam)).sum()), g

    k = a.shape[1]
    bounds = [(0.0, None)] * (k - 1) + [(1e-12 * max(m.min(), 1e-300), None)]
    x0 = np.maximum(start / scale, 0.0)
    x0[-1] = max(x0[-1], m[-1], 1e-12)
    best = optimize.minimize(nll, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                             options={"ftol": 1e-15, "gtol": 1e-13, "maxiter": 5000}).x
    # polish by Fisher scoring: with the zeros fixed, the free components solve the score
    # equations
    free = best > 1e-10 * best.max()
    free[-1] = True
    for _ in range(50):
        lam = a @ best
        w = df / lam ** 2
        g = 0.5 * (df * (m - lam) / lam ** 2) @ a          # ascent direction of l
        h = 0.5 * (a * w[:, None]).T @ a                   # Fisher information
        step = np.zeros_like(best)
        step[free] = np.linalg.lstsq(h[np.ix_(free, free)], g[free], rcond=None)[0]
        new = best + step
        if (new[free] < 0).any():
            break
        best = new
        if np.abs(step).max() < 1e-15 * max(1.0, np.abs(best).max()):
            break
    return best * scale


def variance_components(scores: object, design: str = "replicated") -> VarianceComponents:
    """REML variance components of `scores` under `design`'s mixed model (systems fixed),
    and the system means with standard errors.

    Parameters
    ----------
    scores : array_like, shape (..., *design axes)
        As :func:`irsim.stats.factorial.anova_table`.
    design : {"two_way", "replicated", "crossed", "nested"}

    Returns
    -------
    VarianceComponents

    Examples
    --------
    Two-way: topic variance ``(MS_t - MS_e) / systems`` and residual ``MS_e``, as
    :func:`irsim.stats.gtheory.g_study` (whose system component is the fixed effects'
    spread here):

    >>> from irsim.stats.gtheory import g_study
    >>> s = np.random.default_rng(2).normal(size=(5, 8)) + np.arange(8.0)
    >>> v, g = variance_components(s, "two_way"), g_study(s)
    >>> bool(np.allclose(v.var, [g.var_topic, g.var_residual]))
    True
    """
    d = design_of(design)
    t = anova_table(scores, design, model="mixed")
    shape = t.shape
    a_full = ems_matrix(d, shape)
    a = a_full[1:, 1:]  # random terms only
    ms, df = t.ms[..., 1:], t.df[1:].astype(float)
    raw = np.linalg.solve(a, np.moveaxis(ms, -1, 0).reshape(len(df), -1)).T.reshape(ms.shape)
    var = raw.copy()
    neg = (raw < 0).any(axis=-1)
    flat_var, flat_ms = var.reshape(-1, len(df)), ms.reshape(-1, len(df))
    for i in np.flatnonzero(neg.reshape(-1)):
        flat_var[i] = _boundary_fit(flat_ms[i], df, a, raw.reshape(-1, len(df))[i])
    var = flat_var.reshape(ms.shape)
    x = np.asarray(scores, dtype=np.float64)
    f = len(d.axes)
    means = x.mean(axis=tuple(range(x.ndim - f + 1, x.ndim)))
    size = dict(zip(d.axes, shape, strict=True))
    within = np.array([np.prod([size[n] for n in fs if n != "system"])
                       for fs in d.factors[1:]])
    se_mean = np.sqrt((var / within).sum(axis=-1))
    lam_sys = var @ a_full[0, 1:]
    se_diff = np.sqrt(2.0 * lam_sys / (t.n / shape[0]))
    return VarianceComponents(d.name, d.terms[1:], var[()], raw[()], neg[()],
                              reml_loglik(var, ms, df, a), means, se_mean[()], se_diff[()])
