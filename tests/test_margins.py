"""irsim.simulate.margins: margins per run selected by AIC, and effTransform.

Oracles: scipy.stats (``norm.fit``, ``beta.fit``, ``truncnorm`` moments and densities,
``betabinom``, ``iqr``), closed forms (R's ``bw.nrd0``, the likelihood of a truncated-kernel
density written out with scipy), and an independent integration of the tabulated cdf for
the exact means.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA
from scipy import stats as sps

from irsim.errors import InputError
from irsim.simulate.margins import (
    EPS,
    continuous_cdf,
    detect_support,
    discrete_pmf,
    fit_continuous,
    fit_discrete,
    fit_run_margins,
    power_mean,
    power_uniform,
    select_continuous,
    select_discrete,
    transform_to_mean,
)
from irsim.simulate.topics import Margins, empirical_margins


def urbano(name: str, runs: int | None = None) -> np.ndarray:
    x = pd.read_csv(SHARED_DATA / "urbano" / f"{name}.csv").to_numpy(np.float64).T
    return x if runs is None else x[:runs]


def test_normal_is_scipy_norm_fit():
    x = urbano("adhoc8_ap")[40]
    fit = fit_continuous(x, "normal")
    mu, sd = sps.norm.fit(np.clip(x, EPS, 1 - EPS))
    assert fit.params == pytest.approx((mu, sd), rel=1e-12)
    assert fit.loglik == pytest.approx(sps.norm.logpdf(np.clip(x, EPS, 1 - EPS), mu,
                                                        sd).sum(), rel=1e-12)
    assert fit.df == 2


@pytest.mark.parametrize("run", [3, 40, 90])
def test_beta_is_scipy_beta_fit(run):
    x = np.clip(urbano("adhoc8_ap")[run], EPS, 1 - EPS)
    fit = fit_continuous(x, "beta")
    a, b, _, _ = sps.beta.fit(x, floc=0, fscale=1)
    assert fit.params == pytest.approx((a, b), rel=1e-6)
    assert fit.loglik >= sps.beta.logpdf(x, a, b).sum() - 1e-9


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_truncnorm_mle_matches_the_first_two_moments():
    # the truncated normal is an exponential family in (x, x^2): at an interior MLE its mean
    # and second moment equal the sample's (runs whose likelihood keeps rising as mu -> -inf,
    # an exponential-like shape, have no interior MLE and are skipped)
    checked = 0
    for x in np.clip(urbano("adhoc8_ap")[:24], EPS, 1 - EPS):
        fit = fit_continuous(x, "truncnorm")
        mu, s = fit.params
        if not (0 < mu < 1 and s < 0.5):
            continue
        checked += 1
        d = sps.truncnorm(-mu / s, (1 - mu) / s, loc=mu, scale=s)
        assert d.mean() == pytest.approx(x.mean(), abs=1e-7)
        assert d.moment(2) == pytest.approx((x * x).mean(), abs=1e-7)
        assert fit.loglik == pytest.approx(d.logpdf(x).sum(), rel=1e-10)
    assert checked >= 6


def test_kernel_bandwidth_and_likelihood_from_scipy():
    x = np.clip(urbano("adhoc8_ap")[60], EPS, 1 - EPS)
    fit = fit_continuous(x, "kernel")
    h = 0.9 * min(x.std(ddof=1), sps.iqr(x) / 1.34) * len(x) ** -0.2  # R's bw.nrd0
    assert fit.params[0] == pytest.approx(h, rel=1e-12)
    dens = np.array([[sps.truncnorm.pdf(xi, -c / h, (1 - c) / h, loc=c, scale=h) for c in x]
                     for xi in x]).mean(axis=1)
    assert fit.loglik == pytest.approx(np.log(dens).sum(), rel=1e-10)
    # effective degrees of freedom: trace of the smoother
    own = np.array([sps.truncnorm.pdf(c, -c / h, (1 - c) / h, loc=c, scale=h) for c in x])
    assert fit.df == pytest.approx((own / (len(x) * dens)).sum(), rel=1e-10)
    grid = np.linspace(0, 1, 4001)
    cdf = continuous_cdf(fit, grid)
    assert cdf[0] == 0 and cdf[-1] == pytest.approx(1.0, abs=1e-12)
    assert (np.diff(cdf) >= -1e-15).all()


@pytest.mark.parametrize("run", [5, 50])
def test_betabinom_is_at_least_as_good_as_scipy_fit(run):
    s = detect_support(urbano("adhoc8_p10"))
    j = s.index(urbano("adhoc8_p10")[run])
    fit = fit_discrete(j, s.K, "bbinom")
    ref = sps.fit(sps.betabinom, j, bounds={"n": (10, 10), "a": (1e-3, 1e3), "b": (1e-3, 1e3)},
                  guess={"n": 10, "a": fit.params[0], "b": fit.params[1]})
    ll_ref = sps.betabinom.logpmf(j, 10, ref.params.a, ref.params.b).sum()
    assert fit.loglik == pytest.approx(sps.betabinom.logpmf(j, 10, *fit.params).sum(),
                                       rel=1e-12)
    assert fit.loglik >= ll_ref - 1e-7
    assert fit.params == pytest.approx((ref.params.a, ref.params.b), rel=2e-3)
    assert discrete_pmf(fit) == pytest.approx(sps.betabinom.pmf(np.arange(11), 10,
                                                                *fit.params), rel=1e-10)


def test_discrete_kernel_likelihood():
    s = detect_support(urbano("adhoc8_rr"))
    j = s.index(urbano("adhoc8_rr")[30])
    fit = fit_discrete(j, s.K, "dks")
    h = fit.params[0]
    k = np.arange(s.K + 1)
    w = sps.norm.pdf((k[None, :] - j[:, None]) / h)
    w /= w.sum(axis=1, keepdims=True)
    pmf = w.mean(axis=0)
    assert discrete_pmf(fit) == pytest.approx(pmf, rel=1e-10, abs=1e-300)
    assert fit.loglik == pytest.approx(np.log(pmf[j]).sum(), rel=1e-12)


def test_supports_of_the_real_discrete_metrics():
    p10 = detect_support(urbano("adhoc5_p10"))
    rr = detect_support(urbano("adhoc8_rr"))
    assert p10.name == "grid 1/10" and p10.values.tolist() == pytest.approx(
        [i / 10 for i in range(11)])
    assert rr.name == "reciprocal 1/1000" and rr.values[1] == pytest.approx(1 / 1000)
    assert rr.values[-1] == 1.0 and rr.values[0] == 0.0
    assert detect_support(urbano("adhoc8_ap")) is None
    x = urbano("adhoc8_rr")
    assert np.abs(rr.values[rr.index(x)] - x).max() <= 5e-5 + 1e-12  # RR to 4 decimals


@pytest.mark.slow
def test_aic_recovers_the_generating_family():
    rng = np.random.default_rng(7)
    assert select_continuous(rng.beta(0.7, 3.0, 3000)).family == "beta"
    t = sps.truncnorm(-0.4 / 0.2, 0.6 / 0.2, loc=0.4, scale=0.2).rvs(3000, random_state=rng)
    assert select_continuous(t).family == "truncnorm"
    j = sps.betabinom(10, 2.0, 3.0).rvs(3000, random_state=rng)
    assert select_discrete(j, 10).family == "bbinom"
    best = select_continuous(rng.beta(2.0, 5.0, 200))
    fits = [fit_continuous(rng.beta(2.0, 5.0, 200), f) for f in ("normal",)]
    assert best.aic == 2 * best.df - 2 * best.loglik and fits[0].df == 2


@pytest.mark.parametrize("name", ["adhoc8_ap", "adhoc8_p10", "adhoc8_rr", "web2012_err20"])
@pytest.mark.slow
def test_eff_transform_gives_the_exact_mean(name):
    x = urbano(name, 12)
    margins, _ = fit_run_margins(x, detect_support(urbano(name)))
    mean = margins.mean()
    rows = np.repeat(np.arange(12), 4)
    step = np.tile([0.01, 0.05, 0.1, -0.01], 12)
    keep = (step > 0) | (mean[rows] > 0.05)
    rows, target = rows[keep], mean[rows[keep]] + step[keep]
    gamma = transform_to_mean(margins, rows, target)
    assert np.isfinite(gamma).all() and ((gamma > 0) == (target > mean[rows])).all()
    # independent mean of the transformed tabulated cdf: integral of 1 - F_T over [0, 1],
    # F_T = pbeta(F, a, b) (simIReff's effTransform; here a = e^gamma, b = 1 above the mean,
    # a = 1, b = e^-gamma below it), F linear between knots: Gauss-Legendre per segment
    t, w = np.polynomial.legendre.leggauss(30)
    t, w = 0.5 * (t + 1), 0.5 * w
    for r, g, tg in zip(rows, gamma, target, strict=True):
        xs, Fs = margins.x[r], margins.F[r]
        a, b = (np.exp(g), 1.0) if g > 0 else (1.0, np.exp(-g))
        F = Fs[:-1, None] + t[None, :] * np.diff(Fs)[:, None]
        integrand = 1.0 - sps.beta.cdf(F, a, b)
        # (F^a has an unbounded derivative at F = 0: the rule is good to ~1e-9 there)
        assert (np.diff(xs) * (integrand @ w)).sum() == pytest.approx(tg, abs=1e-8)
    assert np.abs(power_mean(margins, rows, gamma) - target).max() <= 1e-12


def test_eff_transform_of_a_discrete_margin_is_pbeta_of_its_cdf():
    # simIReff's discrete branch: the transformed cdf at the support is pbeta(F(support), a, b)
    support = np.arange(11) / 10
    p = sps.binom.pmf(np.arange(11), 10, 0.3)
    F = np.cumsum(p)
    F[-1] = 1.0
    margins = empirical_margins(np.repeat(support, np.round(p * 1e4).astype(int))[None, :])
    F = margins.cdf(0, support)
    for target in (0.45, 0.2):
        gamma = transform_to_mean(margins, [0], [target])[0]
        a, b = (np.exp(gamma), 1.0) if gamma > 0 else (1.0, np.exp(-gamma))
        want = sps.beta.cdf(F, a, b)
        # the transformed margin's mean from its pmf, and its draws Q(qbeta(u, a, b))
        assert float(np.diff(np.concatenate([[0.0], want])) @ support) == \
            pytest.approx(target, abs=1e-12)
        u = (np.arange(200000) + 0.5) / 200000
        draws = margins.quantile(np.zeros(len(u), np.int64), power_uniform(u, gamma))
        got = (draws[None, :] <= support[:, None] + 1e-12).mean(axis=1)
        assert got == pytest.approx(want, abs=1e-5)
        assert power_uniform(u[:5], gamma) == pytest.approx(sps.beta.ppf(u[:5], a, b))


def test_eff_transform_fails_outside_the_support():
    margins = Margins(np.array([[0.0, 0.4]]), np.array([[0.0, 1.0]]), kind="grid")
    got = transform_to_mean(margins, [0, 0, 0, 0], [0.2, 0.39, 0.41, 0.0])
    assert got[0] == 0.0 and np.isfinite(got[1]) and np.isnan(got[2:]).all()
    # uniform on [0, .4] to mean .39: E = .4 a / (a + 1) = .39, a = 39
    assert np.exp(got[1]) == pytest.approx(39.0, rel=1e-10)


def test_bad_scores_are_an_input_error():
    with pytest.raises(InputError):
        fit_run_margins(np.array([[0.1, 1.2]]))
    with pytest.raises(InputError):
        fit_continuous(np.array([0.1, 0.2]), "gamma")


@pytest.mark.slow
def test_categorical_is_the_observed_frequencies_and_wins_on_rr():
    x = urbano("adhoc8_rr")
    s = detect_support(x)
    j = s.index(x[7])
    fit = fit_discrete(j, s.K, "categorical")
    values, counts = np.unique(x[7], return_counts=True)
    pmf = discrete_pmf(fit)
    assert pmf[s.index(values)] == pytest.approx(counts / 50, rel=1e-12)
    assert pmf.sum() == pytest.approx(1.0) and np.count_nonzero(pmf) == len(values)
    assert fit.loglik == pytest.approx((counts * np.log(counts / 50)).sum(), rel=1e-12)
    assert fit.df == len(values) - 1
    # RR: kernels on the index smear rank 1 into ranks 2, 3...; by AIC the observed
    # frequencies win for most runs, and the fitted means are then the observed ones
    margins, fits = fit_run_margins(x[:40], s)
    assert sum(f.family == "categorical" for f in fits) >= 35
    assert np.abs(margins.mean() - x[:40].mean(axis=1)).max() < 0.01
