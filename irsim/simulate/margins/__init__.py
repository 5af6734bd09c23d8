"""Margins of simulated systems: one module for every generator (:mod:`irsim.simulate`).

A *margin* is the distribution on [0, 1] of one system's per-topic scores. Every margin,
however it was made, is a :class:`Margins` row: a piecewise-linear cdf, so that sampling, the
exact (shifted) mean and the KS distance are one vectorised code path.

:mod:`~irsim.simulate.margins.tabulated`
    The :class:`Margins` class and the margins of the shift design (``kernel``, ``empirical``:
    :func:`fit_margins`), grid and normal margins for checks against theory.
:mod:`~irsim.simulate.margins.support`
    The discrete support of a metric (:func:`detect_support`: P@k's grid, RR's reciprocals),
    one detection for every generator.
:mod:`~irsim.simulate.margins.families`
    simIReff's parametric families selected by AIC per run (:func:`fit_run_margins`, Urbano &
    Nagler SIGIR 2018), tabulated as :class:`Margins`, and simIReff's ``effTransform``
    (:func:`transform_to_mean`).

Examples
--------
>>> import numpy as np
>>> x = np.array([[0.1, 0.3, 0.2, 0.5], [0.4, 0.0, 0.1, 0.3]])
>>> fit_margins(x).kind, detect_support(x).name
('empirical', 'grid 1/10')
>>> m, fits = fit_run_margins(x, detect_support(x))
>>> m.kind, m.support, [f.family for f in fits]
('fitted', 'grid 1/10', ['categorical', 'categorical'])
"""

from irsim.simulate.margins.families import (
    BETA_CAP,
    CONTINUOUS,
    CONTINUOUS_ALL,
    CONTINUOUS_SIMIREFF,
    DISCRETE,
    EPS,
    EXPONENT_MAX,
    GRID,
    MARGINS_VERSION,
    TRUNCNORM_MIN_SD,
    MarginFit,
    beta_mle,
    bw_dpik,
    bw_nrd0,
    continuous_cdf,
    discrete_pmf,
    fit_continuous,
    fit_discrete,
    fit_run_margins,
    power_mean,
    power_uniform,
    select_continuous,
    select_discrete,
    tabulate,
    transform_to_mean,
    truncexp_var,
)
from irsim.simulate.margins.support import (
    MAX_GRID,
    Support,
    detect_support,
    rounding_tolerance,
)
from irsim.simulate.margins.tabulated import (
    KERNEL_BINS,
    MARGIN_KINDS,
    THETA_MAX,
    Margins,
    check_scores,
    empirical_margins,
    fit_margins,
    grid_margins,
    kernel_margins,
    latent_uniform,
    normal_margins,
)

__all__ = [
    "BETA_CAP",
    "CONTINUOUS",
    "CONTINUOUS_ALL",
    "CONTINUOUS_SIMIREFF",
    "DISCRETE",
    "EPS",
    "EXPONENT_MAX",
    "GRID",
    "KERNEL_BINS",
    "MARGINS_VERSION",
    "MARGIN_KINDS",
    "MAX_GRID",
    "THETA_MAX",
    "TRUNCNORM_MIN_SD",
    "MarginFit",
    "Margins",
    "Support",
    "beta_mle",
    "bw_dpik",
    "bw_nrd0",
    "continuous_cdf",
    "discrete_pmf",
    "check_scores",
    "detect_support",
    "empirical_margins",
    "fit_continuous",
    "fit_discrete",
    "fit_margins",
    "fit_run_margins",
    "grid_margins",
    "kernel_margins",
    "latent_uniform",
    "normal_margins",
    "power_mean",
    "power_uniform",
    "rounding_tolerance",
    "select_continuous",
    "select_discrete",
    "tabulate",
    "transform_to_mean",
    "truncexp_var",
]
