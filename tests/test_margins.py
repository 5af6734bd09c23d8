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
from scipy import optimize
from scipy import stats as sps

from irsim.errors import InputError
from irsim.simulate.margins import (
    BETA_CAP,
    EPS,
    TRUNCNORM_MIN_SD,
    Margins,
    beta_mle,
    bw_dpik,
    continuous_cdf,
    detect_support,
    discrete_pmf,
    empirical_margins,
    fit_continuous,
    fit_discrete,
    fit_run_margins,
    power_mean,
    power_uniform,
    select_continuous,
    select_discrete,
    transform_to_mean,
    truncexp_var,
)


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
def test_unbounded_beta_mle_is_scipy_beta_fit(run):
    x = np.clip(urbano("adhoc8_ap")[run], BETA_CAP, 1 - BETA_CAP)
    a, b, _, _ = sps.beta.fit(x, floc=0, fscale=1)
    assert beta_mle(x, bounded=False) == pytest.approx((a, b), rel=1e-6)


@pytest.mark.parametrize("name,run", [("web2010_ndcg20", 0), ("web2010_ndcg20", 14),
                                      ("web2011_err20", 5), ("adhoc8_ap", 40)])
def test_beta_is_simireffs_bounded_mle_on_capped_scores(name, run):
    # simIReff's effCont_beta: MASS::fitdistr(cap(x), "beta", lower = c(1, 1)), cap = 1e-6;
    # oracle: scipy's bounded optimiser on scipy's beta log-density
    raw = urbano(name)[run]
    x = np.clip(raw, 1e-6, 1 - 1e-6)
    fit = fit_continuous(raw, "beta")
    ref = optimize.minimize(lambda p: -sps.beta.logpdf(x, *p).sum(), np.array([1.5, 3.0]),
                            method="L-BFGS-B", bounds=[(1.0, 1e4)] * 2,
                            options={"ftol": 1e-15, "gtol": 1e-10})
    assert min(fit.params) >= 1.0
    assert fit.params == pytest.approx(tuple(ref.x), rel=1e-4)
    assert fit.loglik == pytest.approx(sps.beta.logpdf(x, *fit.params).sum(), rel=1e-12)
    assert fit.loglik >= -ref.fun - 1e-9 and fit.df == 2


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_truncnorm_mle_matches_the_first_two_moments():
    # the truncated normal is an exponential family in (x, x^2): at an interior MLE its mean
    # and second moment equal the sample's (fitted to the raw scores, as simIReff does)
    checked = 0
    for x in urbano("adhoc8_ap")[:24]:
        fit = fit_continuous(x, "truncnorm")
        if not np.isfinite(fit.loglik):
            continue
        mu, s = fit.params
        if s <= TRUNCNORM_MIN_SD * 1.001:
            continue
        checked += 1
        d = sps.truncnorm(-mu / s, (1 - mu) / s, loc=mu, scale=s)
        assert d.mean() == pytest.approx(x.mean(), abs=1e-7)
        assert d.moment(2) == pytest.approx((x * x).mean(), abs=1e-7)
        assert fit.loglik == pytest.approx(d.logpdf(x).sum(), rel=1e-10)
    assert checked >= 6


def test_truncnorm_sd_is_bounded_below_by_005():
    # effCont_norm: lower = list(sigma = .05); oracle: scipy's bounded optimiser
    x = 0.5 + 0.01 * np.sin(np.arange(40.0))
    fit = fit_continuous(x, "truncnorm")
    ref = optimize.minimize(
        lambda p: -sps.truncnorm.logpdf(x, -p[0] / p[1], (1 - p[0]) / p[1], loc=p[0],
                                        scale=p[1]).sum(),
        np.array([0.5, 0.1]), method="L-BFGS-B", bounds=[(-1, 2), (0.05, 5)])
    assert fit.params == pytest.approx((x.mean(), 0.05), abs=1e-6)
    assert fit.params == pytest.approx(tuple(ref.x), abs=1e-5)
    assert fit.loglik == pytest.approx(-ref.fun, rel=1e-8)


def test_truncnorm_without_a_finite_mle_is_not_a_candidate():
    # an exponential-like run (Web 2010 nDCG@20, 21% zeros): the truncated normal's profile
    # likelihood keeps rising as mu -> -inf (oracle: scipy's truncnorm, sigma optimised per
    # mu), so simIReff's fit fails there and the family must not be selected
    x = urbano("web2010_ndcg20")[0]

    def profile(mu: float) -> float:
        r = optimize.minimize_scalar(
            lambda ls: -sps.truncnorm.logpdf(x, -mu / np.exp(ls), (1 - mu) / np.exp(ls),
                                             loc=mu, scale=np.exp(ls)).sum(),
            bounds=(np.log(0.05), 4.0), method="bounded", options={"xatol": 1e-10})
        return -r.fun

    lls = [profile(m) for m in (0.0, -0.5, -1.0, -2.0, -4.0)]
    assert all(np.diff(lls) > 0)
    fit = fit_continuous(x, "truncnorm")
    assert fit.loglik == -np.inf and fit.aic == np.inf
    assert select_continuous(x).family in ("beta", "kernel")
    # an interior MLE (TREC-8 AP, a bell-shaped run) stays a candidate
    assert np.isfinite(fit_continuous(urbano("adhoc8_ap")[100], "truncnorm").loglik)


@pytest.mark.parametrize("lam", [0.3, 2.0, 8.0, 40.0])
def test_truncexp_var_is_scipys_truncated_exponential(lam):
    # the boundary of the truncated normal's moment space: scipy's truncexpon on [0, 1]
    d = sps.truncexpon(b=lam, scale=1 / lam)
    assert truncexp_var(d.mean()) == pytest.approx(d.var(), rel=1e-9)
    assert truncexp_var(1 - d.mean()) == pytest.approx(d.var(), rel=1e-9)   # mirrored
    assert truncexp_var(0.5) == pytest.approx(1 / 12, rel=1e-12)


def _dpik_loop(x: list[float]) -> float:
    """Wand & Jones' two-stage direct plug-in (KernSmooth's dpik, level 2), with a plain loop
    over the pairs and the Hermite forms of the normal density's derivatives."""
    n = len(x)
    mean = sum(x) / n
    sd = (sum((v - mean) ** 2 for v in x) / (n - 1)) ** 0.5
    q1, q3 = np.quantile(x, [0.25, 0.75])
    scale = min(sd, (q3 - q1) / 1.349)
    z = [(v - mean) / scale for v in x]

    def deriv(r: int, u: float) -> float:  # phi^(r)(u) = He_r(u) phi(u)
        he = np.polynomial.hermite_e.HermiteE.basis(r)(u)
        return float(he * np.exp(-u * u / 2) / np.sqrt(2 * np.pi))

    def psi(r: int, g: float) -> float:
        return sum(deriv(r, (zi - zj) / g) for zi in z for zj in z) / (n * n * g ** (r + 1))

    psi8 = 105 / (32 * np.sqrt(np.pi))                    # normal scale, sigma = 1
    g1 = (-2 * deriv(6, 0.0) / (psi8 * n)) ** (1 / 9)
    g2 = (-2 * deriv(4, 0.0) / (psi(6, g1) * n)) ** (1 / 7)
    rk = 1 / (2 * np.sqrt(np.pi))                         # R(K) of the normal kernel
    return scale * (rk / (psi(4, g2) * n)) ** (1 / 5)


@pytest.mark.parametrize("name,run", [("adhoc8_ap", 60), ("web2010_ndcg20", 3)])
def test_dpik_bandwidth_against_a_loop_reference(name, run):
    x = urbano(name)[run]
    assert bw_dpik(x) == pytest.approx(_dpik_loop(x.tolist()), rel=1e-10)


def test_kernel_without_a_dpik_scale_is_not_a_candidate():
    # 80% zeros: IQR 0, so dpik's scale min(sd, IQR / 1.349) is 0 and ks::kde cannot be fitted
    x = np.concatenate([np.zeros(40), [0.1, 0.2, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]])
    assert sps.iqr(x) == 0
    assert fit_continuous(x, "kernel").loglik == -np.inf
    with pytest.raises(InputError):
        bw_dpik(x)
    assert select_continuous(x).family in ("truncnorm", "beta")


@pytest.mark.parametrize("name,run", [("adhoc8_ap", 60), ("web2010_ndcg20", 3)])
def test_nks_kernel_is_a_truncated_gaussian_kde(name, run):
    # simIReff's effCont_nks: ks::kde (bandwidth hpi), truncated to [0, 1] as a whole;
    # df = mean(dnorm(0, sd = h) / dkde(x)); oracle: scipy's gaussian_kde with that bandwidth
    x = urbano(name)[run]
    fit = fit_continuous(x, "kernel")
    h = fit.params[0]
    assert h == pytest.approx(bw_dpik(x), rel=1e-12)
    kde = sps.gaussian_kde(x, bw_method=h / x.std(ddof=1))
    mass = kde.integrate_box_1d(0.0, 1.0)
    f = kde(x)
    assert fit.loglik == pytest.approx(np.log(f / mass).sum(), rel=1e-9)
    assert fit.df == pytest.approx((sps.norm.pdf(0, scale=h) / f).mean(), rel=1e-9)
    grid = np.array([0.0, 0.05, 0.3, 0.77, 1.0])
    want = [kde.integrate_box_1d(0.0, t) / mass for t in grid]
    assert continuous_cdf(fit, grid) == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("name,run", [("adhoc8_p10", 5), ("adhoc8_p10", 50),
                                      ("adhoc5_p10", 5)])
def test_betabinom_is_at_least_as_good_as_scipy_fit(name, run):
    s = detect_support(urbano(name))
    j = s.index(urbano(name)[run])
    fit = fit_discrete(j, s.K, "bbinom")
    assert min(fit.params) >= 1.0
    # simIReff's effDisc_bbinom: lower = c(1, 1)
    ref = sps.fit(sps.betabinom, j, bounds={"n": (10, 10), "a": (1.0, 1e3), "b": (1.0, 1e3)},
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
    assert select_continuous(rng.beta(1.5, 3.0, 3000)).family == "beta"  # shapes >= 1
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
    # targets inside the run's observed range (a kernel margin with a tiny bandwidth, e.g.
    # a run whose AP is .006 on average, cannot be moved past its largest score)
    keep = ((step > 0) | (mean[rows] > 0.05)) & (mean[rows] + step < x.max(axis=1)[rows])
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


@pytest.mark.slow  # ~10 s: 70 margins and 40 copula selections
def test_simulated_pair_differences_spread_like_the_real_ones_on_web2010_ndcg():
    # issue 29: the fitted Web margins were 10-15% too wide (sd of a pair's difference .206
    # simulated vs .177 real on Web 2010 nDCG@20, with beta margins of shape < 1 on the 18%
    # zero scores); with simIReff's families the simulated sd is within 6% of the real one
    import pyvinecopulib as pv

    from irsim.simulate import copulas as cop
    from irsim.simulate.pair_copula_model import prepare_runs

    x = urbano("web2010_ndcg20")
    kept = x[prepare_runs(x, True, 0.1, "quantile")]
    margins, _ = fit_run_margins(kept)
    rng = np.random.default_rng(3)
    ctl = cop.controls()
    sim, real = [], []
    for _ in range(40):
        i, j = rng.choice(len(kept), 2, replace=False)
        u = cop.pseudo_obs(np.column_stack([kept[i], kept[j]]), rng)
        copula = pv.Bicop.from_data(u, controls=ctl)
        u1, w = rng.random(5000), rng.random(5000)
        u2 = cop.sample_pair(copula, u1, w)
        a = margins.quantile(np.full(5000, i), u1)
        b = margins.quantile(np.full(5000, j), u2)
        sim.append((a - b).std())
        real.append((kept[i] - kept[j]).std())
    assert np.mean(sim) / np.mean(real) == pytest.approx(1.0, abs=0.06)
