"""Beta regression with system and topic fixed effects (irsim.stats.betareg) against
statsmodels' BetaModel on the same data (``y ~ C(system) + C(topic)``, logit mean, log
precision): coefficients, standard errors (observed and expected information), phi,
log-likelihood, Wald contrasts and Holm; bad input refused with one line."""

import time
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import urbano_matrix
from scipy import special

from irsim.errors import ConfigError, InputError
from irsim.stats.betareg import beta_regression

betareg = pytest.importorskip("statsmodels.othermod.betareg")
multitest = pytest.importorskip("statsmodels.stats.multitest")


def sv(y):
    """Smithson & Verkuilen's squeeze as their paper writes it, n = every observation."""
    return (y * (y.size - 1) + 0.5) / y.size


def statsmodels_fit(y, cov_type=None):
    """BetaModel on ``y`` (systems, topics[, replicates]), one row per observation: BFGS
    from statsmodels' own start, then Newton to its optimum (BFGS alone stops ~1e-7 short)."""
    y = y if y.ndim == 3 else y[..., None]
    s, t, r = np.indices(y.shape).reshape(3, -1)
    d = pd.DataFrame({"system": s, "topic": t, "y": y.ravel()})
    model = betareg.BetaModel.from_formula("y ~ C(system) + C(topic)", d)
    kw = {} if cov_type is None else {"cov_type": cov_type}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = model.fit(method="bfgs", maxiter=5000, disp=False, gtol=1e-10).params
        fit = model.fit(start_params=start.to_numpy(), method="newton", maxiter=100,
                        disp=False, tol=1e-14, **kw)
    assert fit.mle_retvals["converged"]
    return fit


@pytest.fixture(scope="module")
def ap():
    """TREC-8 ad hoc AP, the first 15 runs x 50 topics (zeros and ones among the scores)."""
    x = urbano_matrix("adhoc8_ap", "ap", 15).values[0]
    assert (x == 0).any()
    return x


@pytest.fixture(scope="module")
def fits(ap):
    return beta_regression(ap), statsmodels_fit(sv(ap))


def test_fit_equals_statsmodels(fits):
    ours, ref = fits
    params = ref.params.to_numpy()
    np.testing.assert_allclose(ours.coef, params[:-1], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ours.log_phi, params[-1], rtol=1e-6)
    np.testing.assert_allclose(ours.phi, np.exp(params[-1]), rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(ours.cov)), ref.bse.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.cov, ref.cov_params().to_numpy(), rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(ours.loglik, ref.llf, rtol=1e-10)
    assert ours.information == "observed" and ours.squeezed and ours.n == 750


def test_expected_information_equals_statsmodels_eim(ap, fits):
    ours = beta_regression(ap, information="expected")
    ref = statsmodels_fit(sv(ap), cov_type="eim")
    np.testing.assert_allclose(np.sqrt(np.diag(ours.cov)), ref.bse.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.coef, fits[0].coef, rtol=1e-12, atol=1e-12)
    # the observed and expected information differ here (not a canonical link)
    assert not np.allclose(np.diag(ours.cov), np.diag(fits[0].cov), rtol=1e-3)


def test_pairs_equal_statsmodels_contrasts_and_holm(fits):
    ours, ref = fits
    s, k = len(ours.effect), len(ref.params)
    pairs = ours.pairs()
    contrast = np.zeros((len(pairs.first), k))
    contrast[np.arange(len(pairs.first)), pairs.first] += 1.0
    contrast[np.arange(len(pairs.first)), pairs.second] -= 1.0
    contrast[:, 0] = 0.0  # system 0 is the reference level: its column is the intercept
    wald = ref.t_test(contrast)
    assert len(pairs.first) == s * (s - 1) // 2
    np.testing.assert_allclose(pairs.diff, wald.effect, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(pairs.se, wald.sd.ravel(), rtol=1e-8)
    np.testing.assert_allclose(pairs.pvalue, wald.pvalue, rtol=1e-8, atol=1e-300)
    holm = multitest.multipletests(wald.pvalue, method="holm")[1]
    np.testing.assert_allclose(pairs.adjusted, holm, rtol=1e-8, atol=1e-300)
    assert pairs.significant(0.05) == int((holm <= 0.05).sum())
    assert 0 < pairs.significant(0.05) < len(pairs.first)


def test_effects_and_means_equal_statsmodels(fits, ap):
    ours, ref = fits
    s, t = ap.shape
    k = len(ref.params)
    centre = np.zeros((s, k))
    centre[:, 1:s] = (np.eye(s) - 1.0 / s)[:, 1:]
    wald = ref.t_test(centre)
    np.testing.assert_allclose(ours.effect, wald.effect, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ours.se, wald.sd.ravel(), rtol=1e-8)
    mu = np.asarray(ref.predict(which="mean")).reshape(s, t)
    np.testing.assert_allclose(ours.fitted, mu, rtol=1e-8)
    n = ap.size
    np.testing.assert_allclose(ours.means, (mu.mean(axis=1) * n - 0.5) / (n - 1), rtol=1e-8)


def test_replicates_are_observations_of_their_cell():
    """Replicates drawn from the beta law around the real AP means (10 runs x 20 topics x 3):
    the fit equals BetaModel with one row per replicate; without squeeze (no 0 or 1)."""
    x = urbano_matrix("adhoc8_ap", "ap", 10).values[0][:, :20]
    mu = np.clip(x, 0.05, 0.95)[..., None]
    y = np.random.default_rng(7).beta(mu * 15, (1 - mu) * 15, size=x.shape + (3,))
    ours = beta_regression(y, squeeze=False)
    ref = statsmodels_fit(y)
    params = ref.params.to_numpy()
    np.testing.assert_allclose(ours.coef, params[:-1], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ours.log_phi, params[-1], rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(ours.cov)), ref.bse.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.loglik, ref.llf, rtol=1e-10)
    assert not ours.squeezed and ours.n == 600
    np.testing.assert_allclose(ours.means, special.expit(
        np.asarray(ref.predict(which="linear"))).reshape(10, 20, 3).mean(axis=(1, 2)),
        rtol=1e-8)


def test_speed_129_systems_50_topics_5_replicates():
    """TREC-8's 129 runs x 50 topics with 5 beta replicates per cell: well under 10 s."""
    x = urbano_matrix("adhoc8_ap", "ap").values[0]
    assert x.shape == (129, 50)
    mu = np.clip(x, 0.02, 0.98)[..., None]
    y = np.random.default_rng(1).beta(mu * 20, (1 - mu) * 20, size=x.shape + (5,))
    start = time.perf_counter()
    fit = beta_regression(y)
    pairs = fit.pairs()
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0, elapsed
    assert len(pairs.first) == 129 * 128 // 2
    # the score at the fit is zero: the likelihood is at its maximum
    from irsim.stats.betareg import _Cells
    score, _ = _Cells(sv(y)).derivatives(np.r_[fit.coef, fit.log_phi], True)
    assert np.max(np.abs(score)) < 1e-6


@pytest.mark.parametrize("case, message", [
    (lambda x: np.where(np.arange(x.size).reshape(x.shape) == 7, np.nan, x),
     "1 missing or non-finite score(s), first at index (1, 1, 0)"),
    (lambda x: np.where(np.arange(x.size).reshape(x.shape) == 3, 1.2, x),
     "score 1.2 at index (0, 3, 0) is outside [0, 1]"),
    (lambda x: np.where(np.arange(x.size).reshape(x.shape) == 3, -0.1, x),
     "outside [0, 1]"),
    (lambda x: np.concatenate([x[:2], np.zeros((1, x.shape[1]))]),
     "system 2 'run2' scores 0 everywhere: its effect's estimate is at -infinity"),
    (lambda x: np.where(np.arange(x.shape[1]) == 4, 0.0, x),
     "topic 4 scores 0 everywhere"),
    (lambda x: np.where(np.arange(x.shape[1]) == 1, 1.0, x),
     "topic 1 scores 1 everywhere: its effect's estimate is at +infinity"),
    (lambda x: x[:1], "beta regression needs >= 2 systems, got 1"),
    (lambda x: np.full_like(x, 0.5), "every score is the same"),
    (lambda x: x[..., None, None], "scores must be (systems, topics) or (systems, topics, "
     "replicates)"),
])
def test_bad_input_one_line(ap, case, message):
    x = case(ap[:3, :6].copy() + 0.01)
    names = [f"run{i}" for i in range(len(x))] if len(x) == 3 else None
    with pytest.raises(InputError) as err:
        beta_regression(x, systems=names)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bounds_without_squeeze_and_options_refused(ap):
    with pytest.raises(InputError, match=r"at the bound and squeeze=False"):
        beta_regression(ap, squeeze=False)
    with pytest.raises(ConfigError, match="information must be one of observed, expected"):
        beta_regression(ap, information="sandwich")
    with pytest.raises(ConfigError, match="unknown correction"):
        beta_regression(ap[:3, :6] + 0.01).pairs("hollm")
