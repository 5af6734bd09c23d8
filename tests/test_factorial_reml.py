"""REML variance components of balanced mixed models (irsim.stats.varcomp) against
statsmodels MixedLM (reml=True, crossed random effects as variance components of one
group)."""

import warnings

import numpy as np
import pandas as pd
import pytest

from irsim.stats.factorial import anova_table
from irsim.stats.varcomp import variance_components

smf = pytest.importorskip("statsmodels.formula.api")

# design -> axis names and, per random component in our order, the column of its levels
RANDOM = {
    "two_way": (["s", "t"], [("t",)]),
    "replicated": (["s", "t", "r"], [("t",), ("s", "t")]),
    "crossed": (["s", "t", "r"], [("t",), ("r",), ("s", "t"), ("s", "r"), ("t", "r")]),
    "nested": (["s", "c", "t"], [("c",), ("s", "c"), ("c", "t")]),
}


def draw(design, shape, sd, seed):
    names, terms = RANDOM[design]
    rng = np.random.default_rng(seed)
    x = np.arange(shape[0], dtype=float).reshape((-1,) + (1,) * (len(shape) - 1)) * 0.3
    for term, s in zip(terms, sd[:-1], strict=True):
        sh = [shape[i] if names[i] in term else 1 for i in range(len(shape))]
        x = x + rng.normal(size=sh) * s
    return x + rng.normal(size=shape) * sd[-1]


def mixedlm(x, design, start=None):
    names, terms = RANDOM[design]
    idx = np.indices(x.shape).reshape(x.ndim, -1)
    d = pd.DataFrame({n: idx[i] for i, n in enumerate(names)})
    d["y"], d["g"] = x.ravel(), 1
    vc = {}
    for j, term in enumerate(terms):
        col = f"v{j}"
        d[col] = sum(d[n] * 100 ** k for k, n in enumerate(term))
        vc[col] = f"0 + C({col})"
    model = smf.mixedlm("y ~ C(s)", d, groups="g", re_formula="0", vc_formula=vc)
    kw = {}
    if start is not None:  # start from given components (ratios to the residual, > 0)
        from statsmodels.regression.mixed_linear_model import MixedLMParams

        order = [int(n[1:]) for n in model.exog_vc.names]
        ratio = np.maximum(np.asarray(start[:-1])[order], 1e-8) / start[-1]
        kw["start_params"] = MixedLMParams.from_components(
            fe_params=np.zeros(model.k_fe), cov_re=np.zeros((0, 0)), vcomp=ratio)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(reml=True, method=["bfgs"], gtol=1e-12, maxiter=5000, **kw)
    comp = dict(zip(fit.model.exog_vc.names, fit.vcomp, strict=True))
    return np.array([comp[f"v{j}"] for j in range(len(terms))] + [fit.scale]), fit


CASES = {"two_way": ((6, 8), (1.0, 0.3)),
         "replicated": ((4, 7, 3), (1.0, 0.5, 0.3)),
         "crossed": ((4, 6, 3), (1.0, 0.7, 0.5, 0.4, 0.6, 0.3)),
         "nested": ((4, 3, 5), (0.8, 0.5, 0.9, 0.3))}


@pytest.mark.parametrize("design", list(CASES))
def test_components_and_fixed_effects_equal_mixedlm(design):
    shape, sd = CASES[design]
    x = draw(design, shape, sd, seed=3)
    ours = variance_components(x, design)
    assert not ours.boundary  # interior: the ANOVA estimators
    ref, fit = mixedlm(x, design)
    np.testing.assert_allclose(ours.var, ref, rtol=1e-6, atol=1e-9)
    # fixed effects: intercept = mean of system 0, contrasts = differences of means
    fe = fit.fe_params.to_numpy()
    np.testing.assert_allclose(ours.means[0], fe[0], rtol=1e-8)
    np.testing.assert_allclose(ours.means[1:] - ours.means[0], fe[1:], rtol=1e-7, atol=1e-9)
    se = fit.bse_fe.to_numpy()
    np.testing.assert_allclose(ours.se_mean, se[0], rtol=1e-6)
    np.testing.assert_allclose(ours.se_diff, se[1:], rtol=1e-6)


@pytest.mark.parametrize("design", ["replicated", "nested", "crossed"])
def test_boundary_refit_equals_mixedlm(design):
    shape, sd = CASES[design]
    sd = (sd[0], 0.0) + sd[2:]  # second component absent: its ANOVA estimate goes negative
    for seed in range(40):
        x = draw(design, shape, sd, seed=seed)
        ours = variance_components(x, design)
        if ours.anova[1] < 0:
            break
    assert ours.boundary and ours.var[1] == 0.0
    # MixedLM from its own start stops short of the boundary (its sd parametrisation); from
    # ours it stays there, at a REML likelihood at least as high as its own optimum's
    ref, fit = mixedlm(x, design)
    at_ours, fit_ours = mixedlm(x, design, start=ours.var)
    assert fit_ours.llf >= fit.llf - 1e-9
    np.testing.assert_allclose(ours.var, at_ours, rtol=1e-6, atol=1e-7)
    if design == "replicated":  # system:topic at 0 pools it with the residual
        t = anova_table(x, design)
        pooled = (t.ss[2] + t.ss[3]) / (t.df[2] + t.df[3])
        np.testing.assert_allclose(ours.var[2], pooled, rtol=1e-10)


def test_batched_and_timing_129_by_50_by_5():
    import time

    rng = np.random.default_rng(0)
    x = (rng.normal(size=(1, 50, 1)) + 0.5 * rng.normal(size=(129, 50, 1))
         + 0.2 * rng.normal(size=(129, 50, 5)) + np.linspace(0, 1, 129)[:, None, None])
    t0 = time.perf_counter()
    v = variance_components(x, "replicated")
    elapsed = time.perf_counter() - t0
    assert elapsed < 5.0
    t = anova_table(x, "replicated")
    ms = t.ms
    np.testing.assert_allclose(v.var, [(ms[1] - ms[2]) / (129 * 5), (ms[2] - ms[3]) / 5,
                                       ms[3]], rtol=1e-10)
    both = variance_components(np.stack([x, x[::-1]]), "replicated")
    np.testing.assert_allclose(both.var[1], variance_components(x[::-1], "replicated").var,
                               rtol=1e-12)
