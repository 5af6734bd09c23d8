"""The topic generator fit to real score matrices (irsim.simulate.pairs).

Stated tolerances, checked on ../shared/data collections:
- margins: the fitted mean equals the observed mean of every system (1e-10); kernel margins
  are within KS distance 0.08 of the observed margins on average and 0.15 at worst (an
  ECDF of 50 topics is itself that rough); empirical margins are exact (KS 0); topics drawn
  from a margin follow it (KS <= 0.015 for 20000 draws) and reproduce the observed deciles
  (mean absolute error <= 0.02; discrete metrics: the observed pmf within 0.015);
- correlation: the Pearson correlation of 20000 simulated topics of a pair is within 0.025
  of the observed one for every pair checked (0.008 on average; Monte Carlo error ~0.005);
  Kendall's tau is not matched by construction, but stays within 0.1 on average;
- true difference: the exact mean of a shifted margin differs from the target by <= 1e-10,
  and 100000 draws agree with it within 4 standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import urbano_matrix
from scipy import integrate
from scipy import stats as sps

from irsim.errors import ConfigError, InputError
from irsim.simulate.margins import (
    Margins,
    detect_support,
    empirical_margins,
    fit_margins,
    kernel_margins,
    latent_uniform,
    normal_margins,
)
from irsim.simulate.margins.tabulated import _mean_h
from irsim.simulate.pairs import TopicSimulator, fit_simulator, norta_rho, prepare
from irsim.stats.kendall import tau_b_matrix

COLLECTIONS = [("adhoc8_ap", "AP", "kernel"), ("adhoc8_p10", "P@10", "empirical"),
               ("adhoc8_rr", "RR", "empirical"), ("web2011_ndcg20", "nDCG@20", "kernel"),
               ("web2012_err20", "ERR@20", "kernel"), ("adhoc5_ap", "AP", "kernel")]


@pytest.fixture(scope="module", params=COLLECTIONS, ids=[c[0] for c in COLLECTIONS])
def fitted(request):
    name, metric, kind = request.param
    m = urbano_matrix(name, metric)
    sim = fit_simulator(m.metric(metric), metric=metric, systems=m.systems, drop_bottom=0.1)
    source = m.select(systems=sim.systems).metric(metric)
    assert sim.margins.kind == kind
    return sim, source


# ----------------------------------------------------------------------------- margins


def test_closed_form_mean_of_the_shift_matches_quadrature():
    for theta in (-40.0, -3.0, -1e-9, 0.0, 1e-7, 0.7, 6.0, 45.0):
        c = np.exp(theta)
        for a, b in ((0.0, 0.3), (0.2, 0.2 + 1e-7), (0.5, 1.0), (0.0, 1.0), (0.9, 0.95),
                     (0.31, 0.31)):
            if b > a:
                ref = integrate.quad(lambda p, c=c: p / (c + (1 - c) * p), a, b,
                                     epsabs=1e-15, epsrel=1e-13)[0] / (b - a)
            else:
                ref = a / (c + (1 - c) * a)
            got = _mean_h(np.array(a), np.array(b), np.array(theta))
            assert got == pytest.approx(ref, rel=1e-9, abs=1e-15), (theta, a, b)


def test_shift_is_monotone_keeps_support_and_hits_the_target():
    m = empirical_margins(np.array([[0.0, 0.1, 0.1, 0.4, 0.7, 1.0]]))
    means = m.mean(np.linspace(-5, 5, 41), np.zeros(41, np.int64))
    assert (np.diff(means) > 0).all()
    theta = m.shift_for_mean(np.array([0.55]))
    assert abs(m.mean(theta)[0] - 0.55) <= 1e-12
    draws = m.sample(np.random.default_rng(0), [0], 50000, theta)
    assert set(np.unique(draws)) <= {0.0, 0.1, 0.4, 0.7, 1.0}
    assert abs(draws.mean() - 0.55) < 4 * draws.std() / np.sqrt(draws.size)
    # targets outside (min, max) cannot be reached
    assert np.isnan(m.shift_for_mean(np.array([1.0]))).all()
    assert m.shift_for_mean(m.mean())[0] == 0.0


def test_quantile_inverts_cdf():
    m = kernel_margins(urbano_matrix("adhoc7_ap", "AP", systems=8).metric("AP"))
    v = np.linspace(0.001, 0.999, 999)
    rows = np.repeat(np.arange(8), len(v))
    x = m.quantile(rows, np.tile(v, 8))
    f = m.cdf(rows, x)
    assert (f >= np.tile(v, 8) - 1e-9).all()
    assert (m.cdf(rows, x, left=True) <= np.tile(v, 8) + 1e-9).all()


def test_detect_support_and_margin_kinds():
    assert detect_support(urbano_matrix("web2010_p20", "P@20").metric("P@20")).label == "grid 1/20"
    assert detect_support(urbano_matrix("adhoc6_rr", "RR").metric("RR")).label == "reciprocal"
    assert detect_support(urbano_matrix("web2010_err20", "ERR").metric("ERR")) is None
    p10 = urbano_matrix("adhoc6_p10", "P@10").metric("P@10")
    with pytest.raises(ConfigError, match="discrete support"):
        fit_margins(p10, "kernel")
    assert fit_margins(p10).support == "grid 1/10"


def test_bad_input():
    with pytest.raises(InputError, match=r"scores in \[0, 1\]"):
        fit_simulator(np.array([[0.1, 1.5], [0.2, 0.3]]))
    with pytest.raises(ConfigError, match="unknown dependence"):
        fit_simulator(np.array([[0.1, 0.5], [0.2, 0.3]]), dependence="spearman")
    with pytest.raises(ConfigError, match="unknown margin kind"):
        fit_margins(np.array([[0.1, 0.5]]), "beta")
    with pytest.raises(InputError, match="fewer than 2 systems"):
        fit_simulator(np.array([[0.1, 0.5], [0.1, 0.5]]))
    with pytest.raises(InputError, match="non-decreasing"):
        Margins(np.array([[0.0, 0.5, 0.2]]), np.array([[0.0, 0.5, 1.0]]), "x")


def test_fitted_margins_reproduce_the_source(fitted):
    sim, source = fitted
    m = sim.margins
    np.testing.assert_allclose(m.mean(), source.mean(axis=1), rtol=0, atol=1e-10)
    ks = m.ks_distance(source)
    if m.kind == "kernel":
        assert ks.mean() <= 0.08 and ks.max() <= 0.15, (ks.mean(), ks.max())
        # atoms at exactly 0 stay atoms
        np.testing.assert_allclose(m.cdf(np.arange(m.systems), 0.0),
                                   (source == 0).mean(axis=1), atol=1e-12)
    else:
        assert ks.max() == 0.0


def test_simulated_topics_follow_the_margins(fitted):
    sim, source = fitted
    m = sim.margins
    rows = np.arange(0, m.systems, max(1, m.systems // 12))
    draws = m.sample(np.random.default_rng(5), rows, 20000)
    if m.kind == "kernel":  # KS with the atoms at 0 and 1 handled (left limits)
        ks = Margins(m.x[rows], m.F[rows], m.kind).ks_distance(draws)
        assert ks.max() <= 0.015, ks.max()
    for r, d in zip(rows, draws, strict=True):
        if m.kind != "kernel":
            values, counts = np.unique(source[r], return_counts=True)
            got = np.array([(d == v).mean() for v in values])
            np.testing.assert_allclose(got, counts / source.shape[1], atol=0.015)
            assert np.isin(d, values).all()  # discrete metrics stay on their support
    qs = np.linspace(0.1, 0.9, 9)
    err = np.abs(np.quantile(draws, qs, axis=1) - np.quantile(source[rows], qs, axis=1))
    assert err.mean() <= 0.02, err.mean()


def test_simulated_pairs_reproduce_the_correlation(fitted):
    sim, source = fitted
    rng = np.random.default_rng(11)
    pairs = rng.choice(sim.pairs, 40, replace=False)
    xa, xb = sim.sample(rng, pairs, 20000)
    got = np.array([np.corrcoef(a, b)[0, 1] for a, b in zip(xa, xb, strict=True)])
    obs = np.array([np.corrcoef(source[sim.pair_a[p]], source[sim.pair_b[p]])[0, 1]
                    for p in pairs])
    np.testing.assert_allclose(got, sim.observed[pairs], atol=1e-12 + 0.025)
    np.testing.assert_allclose(sim.observed[pairs], obs, atol=1e-12)
    assert np.abs(got - obs).mean() <= 0.008
    tau = np.array([sps.kendalltau(a[:3000], b[:3000]).statistic
                    for a, b in zip(xa, xb, strict=True)])
    tau_obs = tau_b_matrix(source)[sim.pair_a[pairs], sim.pair_b[pairs]]
    assert np.abs(tau - tau_obs).mean() <= 0.1


def test_true_difference_is_exact(fitted):
    sim, _ = fitted
    m = sim.margins
    rng = np.random.default_rng(3)
    base = rng.choice(m.systems, 4, replace=False)
    for delta in (0.01, 0.05, 0.1):
        theta = m.shift_for_mean(m.mean()[base] + delta, base)
        ok = np.isfinite(theta)
        assert ok.sum() >= 2
        exact = m.mean(theta[ok], base[ok]) - m.mean()[base[ok]]
        np.testing.assert_allclose(exact, delta, rtol=0, atol=1e-10)
        draws = m.sample(rng, base[ok], 100000, theta[ok])
        se = draws.std(axis=1) / np.sqrt(draws.shape[1])
        assert (np.abs(draws.mean(axis=1) - m.mean(theta[ok], base[ok])) <= 4 * se).all()


def test_same_margin_at_zero_shift_is_exchangeable():
    sim = fit_simulator(urbano_matrix("adhoc8_ap", "AP", systems=30).metric("AP"))
    rng = np.random.default_rng(2)
    pairs = rng.integers(0, sim.pairs, 400)
    z = rng.standard_normal((2, 400, 500))
    base = sim.pair_a[pairs]
    xa, xb = sim.scores(pairs, z[0], z[1], margin_a=base, margin_b=base)
    # swapping z1 and the correlated z gives the other system: the same marginal law
    d = (xb - xa).mean()
    assert abs(d) < 4 * (xb - xa).std() / np.sqrt(xa.size)
    assert sps.ks_2samp(xa.ravel()[::7], xb.ravel()[::7]).pvalue > 0.001


# ----------------------------------------------------------------------------- dependence


def test_norta_on_normal_margins_is_the_identity():
    m = normal_margins([0.5, 0.45, 0.55], [0.08, 0.1, 0.06])
    r = norta_rho(m, [0, 0, 1], [1, 2, 2], [0.3, 0.8, -0.5])
    # normal margins: the NORTA map is the identity; the code's root finding is exact to
    # ~1e-6 (measured 8.6e-7), so the tolerance is that, not a Monte Carlo width
    np.testing.assert_allclose(r, [0.3, 0.8, -0.5], rtol=0, atol=2e-6)
    extreme = norta_rho(m, [0, 0, 1], [1, 2, 2], [0.0, 0.99, -0.95])
    np.testing.assert_allclose(extreme, [0.0, 0.99, -0.95], rtol=0, atol=2e-6)


def test_kendall_dependence_and_tau_b():
    x = urbano_matrix("adhoc8_ap", "AP", systems=10).metric("AP")
    tau = tau_b_matrix(x)
    assert tau[2, 7] == pytest.approx(sps.kendalltau(x[2], x[7]).statistic, abs=1e-12)
    sim = fit_simulator(x, dependence="kendall")
    np.testing.assert_allclose(sim.rho, np.sin(np.pi * tau[sim.pair_a, sim.pair_b] / 2),
                               atol=1e-12)


def test_latent_uniform_and_normal_simulator():
    z = np.linspace(-8, 8, 101)
    np.testing.assert_allclose(latent_uniform(z), sps.norm.cdf(z), rtol=1e-12, atol=1e-300)
    sim = TopicSimulator.normal([0.5, 0.5], [0.1, 0.1], [0.7])
    xa, xb = sim.sample(np.random.default_rng(0), np.zeros(100, np.int64), 1000)
    assert np.corrcoef(xa.ravel(), xb.ravel())[0, 1] == pytest.approx(0.7, abs=0.01)
    assert xa.std() == pytest.approx(0.1, rel=0.01)


# ----------------------------------------------------------------------------- shifted pairs


def test_prepare_shifts_every_baseline_and_keeps_only_eligible_pairs():
    m = urbano_matrix("adhoc8_p10", "P@10", systems=20)
    sim = fit_simulator(m.metric("P@10"), metric="P@10", systems=m.systems)
    deltas = (0.0, 0.05, 0.4)
    data = prepare([sim], deltas, [m.select(systems=sim.systems).metric("P@10")])
    theta = data.thetas[0]
    assert theta.shape == (3, sim.margins.systems) and (theta[0] == 0).all()
    base = sim.margins.mean()
    ok = np.isfinite(theta).all(axis=0)
    for d, th in zip(deltas, theta, strict=True):
        assert np.abs(sim.margins.mean(th[ok], np.flatnonzero(ok)) - base[ok] - d).max() < 1e-10
    # a discrete margin cannot pass its largest score: those systems are no baselines
    top = sim.margins.x[:, -1]
    assert (~ok == (top <= base + 0.4 + 1e-9)).all() and ok.sum() == 16
    pairs = data.trial_pairs[0]
    assert ok[pairs[:, 0]].all()
    # every pair in both orientations where both baselines qualify, ordered by pair index
    expected = sorted((int(s), p) for p in range(sim.pairs)
                      for s in (sim.pair_a[p], sim.pair_b[p]) if ok[s])
    assert sorted(map(tuple, pairs.tolist())) == expected
    assert (np.diff(pairs[:, 1]) >= 0).all()
    assert data.diagnostics[0]["baselines"] == int(ok.sum())
    assert data.diagnostics[0]["ks_max"] == 0.0  # empirical margins are exact
