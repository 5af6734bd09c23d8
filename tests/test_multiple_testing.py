"""experiment=multiple_testing: known-truth FWER, FDR and power of multiple-comparison
corrections on whole collections simulated from TREC-8 ad hoc AP.

Oracles: a per-trial loop through scipy's tests and statsmodels' ``multipletests`` on the
study's own simulated collections (the counting and the corrections); the exact means of the
shifted margins and large-sample means with their standard errors (the generator's known
truth); the sample correlation of the latent normals against the fitted copula (its SE
``(1 - rho^2) / sqrt(N)``); the binomial standard error around alpha (the promises of
Bonferroni, Holm and BH); statsmodels' Wilson interval. The simultaneous tests (Tukey HSD,
randomised Tukey HSD): irsim.stats.tukey_hsd / randomised_tukey_hsd trial by trial (the
latter with the same permutations: the same counts), scipy's studentized range and its
published table, and the FWER of alpha under a complete null of exchangeable systems."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA
from scipy import stats as sps
from scipy.special import expit, ndtri
from test_api import assert_same_tables

import irsim
from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments import multiple_testing as mt
from irsim.experiments.multiple_testing import (
    BATCH_BYTES,
    TOPIC_STREAM,
    Config,
    MultipleTesting,
    critical_range,
    prepare,
    wilson,
)
from irsim.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.simulate.joint_copula_model import (
    JointCopulaModel,
    collection_shifts,
    fit_joint_copula_model,
    normal_scores,
    null_pair_mask,
    position_means,
    shrink_correlation,
    true_null_count,
)
from irsim.stats import randomised_tukey_hsd, tukey_hsd

URBANO = SHARED_DATA / "urbano"
ALPHA = 0.05


def frame(name: str) -> pd.DataFrame:
    return pd.read_csv(URBANO / f"{name}.csv")


@pytest.fixture(scope="module")
def ap_model() -> JointCopulaModel:
    """The Gaussian collection model of TREC-8 ad hoc AP (129 runs, 50 topics)."""
    x = frame("adhoc8_ap")
    return fit_joint_copula_model(x.to_numpy(float).T, metric="AP", systems=list(x.columns),
                                  drop_bottom=0.1)


# ------------------------------------------------------------------------------- generator
@pytest.mark.slow
def test_null_systems_have_exactly_the_common_mean(ap_model):
    """Analytically: the exact mean of every shifted margin is its position's target."""
    for m, share in ((10, 1.0), (20, 0.5), (40, 0.2)):
        m0 = true_null_count(m, share)
        th = collection_shifts(ap_model, m, m0, ap_model.null_mean, 0.1)
        means = np.stack([ap_model.margins.mean(th[:, j]) for j in range(m)], axis=1)
        want = position_means(m, m0, ap_model.null_mean, 0.1)
        np.testing.assert_allclose(means, np.broadcast_to(want, means.shape), rtol=0,
                                   atol=1e-10)
        # the known differences: nulls equal, the others null_mean + 0.1 k / m1
        assert (want[:m0] == ap_model.null_mean).all()
        if m > m0:
            np.testing.assert_allclose(np.diff(want[m0 - 1 :]), 0.1 / (m - m0), atol=1e-15)


@pytest.mark.slow
def test_simulated_means_equal_the_targets_in_large_samples(ap_model):
    """Per position, the mean score over 4000 collections of 50 topics is within 4 standard
    errors (sd of the per-collection means / sqrt(trials)) of the position's true mean."""
    m, m0, n, trials = 6, 3, 50, 4000
    th = collection_shifts(ap_model, m, m0, ap_model.null_mean, 0.1)
    x, systems = ap_model.sample(np.random.default_rng(7), trials, n, m, th)
    per_trial = x.mean(axis=2)  # (trials, m): independent across trials
    se = per_trial.std(axis=0, ddof=1) / math.sqrt(trials)
    want = position_means(m, m0, ap_model.null_mean, 0.1)
    assert (np.abs(per_trial.mean(axis=0) - want) < 4 * se).all(), (per_trial.mean(0), want)
    # every system is drawn: a collection holds m distinct systems of the pool
    assert (np.sort(systems, axis=1)[:, 1:] != np.sort(systems, axis=1)[:, :-1]).all()
    np.testing.assert_allclose(ap_model.true_means(systems, th)[0], want, atol=1e-10)


@pytest.mark.slow
def test_copula_correlation_is_recovered(ap_model):
    """The latent normals of 2000 collections x 50 topics have the fitted correlation,
    within 4 SE = 4 (1 - rho^2) / sqrt(N) for each of the pool's first 12 x 12 pairs."""
    n, trials = 50, 2000
    draws = ap_model.draw(np.random.default_rng(3), trials, n)
    _, logit = ap_model.latent(draws, n)
    z = ndtri(expit(logit[:, :12, :]))  # (trials, 12, n)
    z = z.transpose(1, 0, 2).reshape(12, -1)
    got = np.corrcoef(z)
    want = ap_model.corr[:12, :12]
    big_n = z.shape[1]
    se = (1 - want**2) / math.sqrt(big_n)
    a, b = np.triu_indices(12, 1)
    assert (np.abs(got - want)[a, b] <= 4 * se[a, b] + 1e-12).all()
    # and the fitted correlation is the (shrunk) normal-score correlation of the data
    x = frame("adhoc8_ap").to_numpy(float).T
    rows = [list(frame("adhoc8_ap").columns).index(s) for s in ap_model.systems]
    raw = np.corrcoef(sps.norm.ppf(sps.rankdata(x[rows], axis=1) / (x.shape[1] + 1)))
    lam = ap_model.shrinkage
    rbar = raw[np.triu_indices(len(rows), 1)].mean()
    target = np.full_like(raw, rbar)
    np.fill_diagonal(target, 1.0)
    np.testing.assert_allclose(ap_model.corr, (1 - lam) * raw + lam * target, atol=1e-12)


@pytest.mark.slow
def test_shrinkage_is_the_smallest_that_makes_the_correlation_positive_definite():
    x = frame("adhoc8_ap").to_numpy(float).T  # 129 runs > 50 topics: singular
    raw = np.corrcoef(normal_scores(x))
    assert np.linalg.eigvalsh(raw)[0] < 1e-8
    shrunk, lam = shrink_correlation(raw, 0.02)
    assert np.linalg.eigvalsh(shrunk)[0] >= 0.02
    assert 0 < lam < 1
    rbar = raw[np.triu_indices(len(raw), 1)].mean()
    less = (1 - (lam - 1e-6)) * raw + (lam - 1e-6) * np.where(np.eye(len(raw)) > 0, 1.0, rbar)
    assert np.linalg.eigvalsh(less)[0] < 0.02
    assert shrunk[np.triu_indices(len(raw), 1)].mean() == pytest.approx(rbar, abs=1e-12)
    # a positive definite matrix is left alone
    ok = np.array([[1.0, 0.3], [0.3, 1.0]])
    assert shrink_correlation(ok)[1] == 0.0


def test_vine_generator_is_deterministic_and_keeps_the_null_means():
    x = frame("adhoc8_ap").iloc[:, :20].to_numpy(float).T
    model = fit_joint_copula_model(x, metric="AP", dependence="vine", vine_truncation=1,
                                   vine_families=["gaussian", "clayton"])
    assert model.dependence == "vine" and model.describe()["vine_truncation"] == 1
    th = collection_shifts(model, 5, 5, model.null_mean, 0.1)
    a, s1 = model.sample(np.random.default_rng(1), 800, 20, 5, th)
    b, s2 = model.sample(np.random.default_rng(1), 800, 20, 5, th)
    assert np.array_equal(a, b) and np.array_equal(s1, s2)
    per_trial = a.mean(axis=(1, 2))
    se = per_trial.std(ddof=1) / math.sqrt(len(per_trial))
    assert abs(per_trial.mean() - model.null_mean) < 4 * se
    # dependence is positive, as in the data (mean normal-score correlation of AP runs)
    z = normal_scores(a.transpose(1, 0, 2).reshape(5, -1))
    assert np.corrcoef(z)[np.triu_indices(5, 1)].mean() > 0.2


# --------------------------------------------------------------------- counts: loop oracle
def _scipy_pvalues(d: np.ndarray) -> dict[str, float]:
    """Two-sided p-values of one pair's differences by scipy."""
    pos, nz = int((d > 0).sum()), int((d != 0).sum())
    return {"t": float(sps.ttest_1samp(d, 0.0).pvalue),
            "wilcoxon": float(sps.wilcoxon(d, method="approx").pvalue) if nz else 1.0,
            "sign": float(sps.binomtest(pos, nz, 0.5).pvalue) if nz else 1.0}


@pytest.mark.slow
def test_counts_equal_a_per_trial_loop_with_scipy_and_statsmodels(ap_model, monkeypatch):
    """Every counter equals a loop over trials and pairs: scipy's t, Wilcoxon (normal
    approximation with tie correction) and sign tests, statsmodels' multipletests for each
    correction; the collections come from the study's own stream (2 blocks of trials)."""
    import gc

    from statsmodels.stats.multitest import multipletests

    monkeypatch.setattr(gc, "collect", lambda *args: 0)  # multipletests' holm calls it

    methods = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh", "by": "fdr_by"}
    systems, shares, n, trials, alphas = (4, 6), (1.0, 0.5), 12, 260, (0.05, 0.1)
    data = prepare([ap_model], systems=systems, shares=shares, spread=0.1)
    study = MultipleTesting.of(sizes=(n,), systems=systems, share_null=shares, alpha=alphas,
                               tests=("t", "wilcoxon", "sign"),
                               corrections=("none", "bonferroni", "holm", "bh", "by"),
                               trials=trials, seed=11, wilcoxon_method="approx")
    got = run_study(study, data)[0]["multiple_testing"].to_pandas()
    assert len(got) == 2 * 2 * 5 * 3 * 2
    draws = blocked_draws(11, TOPIC_STREAM, (study_key("AP"), n), 0, trials,
                          lambda rng, k: ap_model.draw(rng, k, n))
    keys, eps = draws[:, : ap_model.pool], draws[:, ap_model.pool :]
    chol = np.linalg.cholesky(ap_model.corr)
    for m in systems:
        for share in shares:
            m0 = true_null_count(m, share)
            th = data.shifts[0][(m, m0)]
            counts: dict = {}
            for t in range(trials):  # the reference: one collection at a time
                chosen = np.argsort(keys[t], kind="stable")[:m]
                z = (eps[t].reshape(n, ap_model.pool) @ chol.T)[:, chosen].T  # (m, n)
                u = sps.norm.cdf(z)
                u = expit(np.log(u) - np.log1p(-u) + th[chosen, np.arange(m)][:, None])
                x = np.stack([ap_model.margins.quantile(np.full(n, s), u[j])
                              for j, s in enumerate(chosen)])
                pairs = [(a, b) for a in range(m) for b in range(a + 1, m)]
                null = np.array([b < m0 for a, b in pairs])
                ps = [_scipy_pvalues(x[a] - x[b]) for a, b in pairs]
                for test in ("t", "wilcoxon", "sign"):
                    p = np.array([q[test] for q in ps])
                    for corr in ("none", *methods):
                        for alpha in alphas:
                            rej = (p <= alpha if corr == "none"
                                   else multipletests(p, alpha, methods[corr])[0])
                            v, r = int((rej & null).sum()), int(rej.sum())
                            c = counts.setdefault((test, corr, alpha), [0, 0.0, 0, 0])
                            c[0] += v > 0
                            c[1] += v / r if r else 0.0
                            c[2] += r - v
                            c[3] += r
            alt = m * (m - 1) // 2 - m0 * (m0 - 1) // 2
            for (test, corr, alpha), (fw, fdp, tp, r) in counts.items():
                row = got[(got.m == m) & (got.share_null == share) & (got.test == test)
                          & (got.correction == corr) & (got.alpha == alpha)].iloc[0]
                key = (m, share, test, corr, alpha)
                assert row.null_systems == m0
                assert row.fwer == fw / trials
                _assert_counts(row, key, trials, (fw, fdp, tp, r), alt)


def _assert_counts(row, key, trials: int, counts: tuple, alt: int) -> None:
    """A table row against the counts of a loop over trials: (trials with a false
    rejection, summed V / R, true rejections, rejections); `alt` truly different pairs."""
    fw, fdp, tp, r = counts
    assert row.trials == trials and row.familywise_errors == fw, key
    assert row.fdr == pytest.approx(fdp / trials, abs=1e-9), key
    assert row.mean_rejections == r / trials, key
    if alt:
        assert row.power == pytest.approx(tp / alt / trials, rel=1e-12), key
    else:
        assert math.isnan(row.power)


# ------------------------------------------------------------------ the promises, measured
TRIALS = 2000
SE = math.sqrt(ALPHA * (1 - ALPHA) / TRIALS)  # binomial standard error of a rate of alpha


@pytest.fixture(scope="module")
def own_tables():
    """adhoc8 AP, 2000 collections of 5, 10 and 20 systems on 25 topics, with no true
    difference and with half of the systems null (each null system keeps its own margin,
    shifted to the common mean)."""
    res = irsim.multiple_testing(frame("adhoc8_ap"), metric="AP", systems=[5, 10, 20],
                                 sizes=[25], share_null=[1.0, 0.5], trials=TRIALS,
                                 tests=["t", "sign"], alpha=[ALPHA], seed=1, drop_bottom=0.1)
    return res.to_pandas("multiple_testing")


@pytest.fixture(scope="module")
def shared_tables():
    """As `own_tables` with exchangeable null systems (null_margins=shared), so that the
    nulls of the sign and Wilcoxon tests hold too."""
    res = irsim.multiple_testing(frame("adhoc8_ap"), metric="AP", systems=[5, 20],
                                 sizes=[25], share_null=[1.0, 0.5], trials=TRIALS,
                                 tests=["t", "wilcoxon", "sign"], alpha=[ALPHA], seed=2,
                                 drop_bottom=0.1, null_margins="shared")
    return res.to_pandas("multiple_testing")


@pytest.mark.slow
def test_holm_and_bonferroni_keep_the_fwer_and_uncorrected_tests_do_not(own_tables,
                                                                       shared_tables):
    for t, tests in ((own_tables, ["t"]), (shared_tables, ["t", "wilcoxon", "sign"])):
        controlled = t[t.correction.isin(["bonferroni", "holm"]) & t.test.isin(tests)]
        assert len(controlled) == 2 * len(tests) * len(set(t.m)) * 2
        # strong control: with or without true differences
        assert (controlled.fwer <= ALPHA + 3 * SE).all(), controlled[["test", "m", "fwer"]]
        none = t[(t.correction == "none") & (t.share_null == 1.0)]
        assert (none.fwer > ALPHA + 10 * SE).all()
        # uncorrected testing gets worse with the number of systems
        for _, rows in none.groupby("test"):
            assert rows.sort_values("m").fwer.is_monotonic_increasing
            assert rows[rows.m == 20].fwer.iloc[0] > 0.5


@pytest.mark.slow
def test_equal_means_are_not_the_sign_tests_null(own_tables, shared_tables):
    """Null systems with different margins and the same mean: the sign test (a test of the
    median) rejects more than its level promises; with exchangeable nulls it does not."""
    def fwer(t, test):
        return t[(t.correction == "bonferroni") & (t.test == test) & (t.m == 5)
                 & (t.share_null == 1.0)].fwer.iloc[0]

    assert fwer(own_tables, "sign") > ALPHA + 3 * SE
    assert fwer(own_tables, "t") <= ALPHA + 3 * SE
    assert fwer(shared_tables, "sign") <= ALPHA + 3 * SE


@pytest.mark.slow
def test_bh_keeps_the_fdr(own_tables, shared_tables):
    for t, tests in ((own_tables, ["t"]), (shared_tables, ["t", "wilcoxon", "sign"])):
        for corr in ("bh", "by"):
            rows = t[(t.correction == corr) & t.test.isin(tests)]
            assert (rows.fdr <= ALPHA + 3 * SE).all(), rows[["test", "m", "share_null", "fdr"]]
        # with no true difference every false discovery is a family-wise error: FDR = FWER
        full = t[t.share_null == 1.0]
        assert (full.fdr == full.fwer).all() and full.power.isna().all()
        # BH rejects at least what Holm rejects; Holm at least what Bonferroni does
        key = ["test", "m", "share_null"]
        by = {c: t[t.correction == c].set_index(key).mean_rejections for c in
              ("bonferroni", "holm", "bh", "none")}
        assert (by["holm"] >= by["bonferroni"]).all() and (by["bh"] >= by["holm"]).all()
        assert (by["none"] >= by["bh"]).all()
        half = t[t.share_null == 0.5].set_index(key)
        bh, holm = half[half.correction == "bh"], half[half.correction == "holm"]
        assert (bh.power > holm.power).all() and (holm.power > 0).all()


def test_wilson_band_equals_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    k = np.array([0, 3, 50, 97.5, 200])
    n = np.array([200, 200, 200, 200, 200])
    lo, hi = wilson(k, n, 0.9)
    for i in range(len(k)):
        want = proportion_confint(k[i], n[i], alpha=0.1, method="wilson")
        assert (lo[i], hi[i]) == pytest.approx(want, abs=1e-12)


# --------------------------------------------------------------- determinism and engines
SMALL = dict(metric="AP", systems=[4, 7], sizes=[10], share_null=[1.0, 0.5], trials=600,
             B=100, tests=["t", "randomisation", "paired_bootstrap", "tukey_hsd",
                           "randomised_tukey_hsd"],
             corrections=["none", "holm", "bh"], seed=3, pvalue="plus_one")


@pytest.mark.slow
def test_shard_sizes_change_nothing():
    df = frame("adhoc8_ap").iloc[:, :30]
    a = irsim.multiple_testing(df, **SMALL)
    b = irsim.multiple_testing(df, **SMALL, shard_items=1, shard_replicates=250)
    assert_same_tables(a.tables, b.tables)
    t = a.to_pandas("multiple_testing")
    assert (t.trials == 600).all() and len(t) == 2 * 2 * 3 * 5


@pytest.mark.ray
def test_ray_engine_equals_local(ray_local):
    df = frame("adhoc8_ap").iloc[:, :30]
    local = irsim.multiple_testing(df, **SMALL, shard_items=2)
    ray = irsim.multiple_testing(df, **SMALL, engine="ray", workers=2, shard_items=1,
                                 shard_replicates=250)
    assert ray.manifest["engine"] == "ray"
    assert_same_tables(ray.tables, local.tables)


def test_vine_study_is_shard_independent_and_reports_its_fit():
    df = frame("adhoc8_ap").iloc[:, :20]
    kw = dict(metric="AP", systems=[4], sizes=[10], share_null=[1.0], trials=500,
              tests=["t"], corrections=["none", "holm"], dependence="vine",
              vine_truncation=1, vine_families=["gaussian", "clayton"], seed=5)
    a = irsim.multiple_testing(df, **kw)
    b = irsim.multiple_testing(df, **kw, shard_replicates=250)
    assert_same_tables(a.tables, b.tables)
    fit = a.to_pandas("multiple_testing_fit").iloc[0]
    assert fit.dependence == "vine" and fit.vine_truncation == 1 and fit.shrinkage == 0.0
    t = a.to_pandas("multiple_testing").set_index("correction")
    assert t.loc["holm", "fwer"] <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / 500)
    assert t.loc["none", "fwer"] > t.loc["holm", "fwer"]


@pytest.mark.slow
def test_common_random_numbers_across_configurations():
    """A collection's trials do not depend on the other configurations of the run."""
    df = frame("adhoc8_ap").iloc[:, :30]
    both = irsim.multiple_testing(df, **SMALL).to_pandas("multiple_testing")
    kw = {**SMALL, "systems": [7], "share_null": [0.5]}
    alone = irsim.multiple_testing(df, **kw).to_pandas("multiple_testing")
    sub = both[(both.m == 7) & (both.share_null == 0.5)].reset_index(drop=True)
    pd.testing.assert_frame_equal(sub, alone)


@pytest.mark.slow
def test_api_equals_cli():
    from golden.record import tables_of

    api = irsim.multiple_testing(frame("adhoc8_ap"), metric="AP", systems=[4], sizes=[8],
                                 share_null=[0.5], trials=250, tests=["t", "sign"], seed=2)
    cli = tables_of(["experiment=multiple_testing", "collection=matrix",
                     f"collection.path={URBANO}/adhoc8_ap.csv", "collection.metric=AP",
                     "experiment.systems=[4]", "experiment.sizes=[8]",
                     "experiment.share_null=[0.5]", "experiment.trials=250",
                     "experiment.tests=[t,sign]", "seed=2"])
    assert_same_tables(api.tables, cli)


@pytest.mark.slow
def test_preset_runs_on_adhoc8(tmp_path):
    from golden.record import tables_of

    tables = tables_of(["experiment=multiple_testing_adhoc8", f"data_dir={SHARED_DATA}",
                        "offline=true", "experiment.trials=250", "experiment.B=100",
                        "experiment.systems=[5,10]", "experiment.tests=[t,randomisation]"])
    t = tables["multiple_testing"].to_pandas()
    assert set(t.metric) == {"AP"} and set(t.n) == {25, 50}
    assert set(t.share_null) == {1.0, 0.5, 0.2} and set(t.correction) == {
        "none", "bonferroni", "holm", "bh", "by"}
    assert len(t) == 2 * 2 * 3 * 5 * 2 and (t.trials == 250).all()
    fit = tables["multiple_testing_fit"].to_pandas().iloc[0]
    assert fit.dropped >= 12 and fit.systems + fit.dropped == 129  # bottom 10%, duplicates


@pytest.mark.slow
def test_report_has_the_figures(tmp_path):
    res = irsim.multiple_testing(frame("adhoc8_ap").iloc[:, :20], metric="AP",
                                 systems=[3, 5], sizes=[10], share_null=[1.0, 0.4],
                                 trials=250, tests=["t"])
    res.report(tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "## Multiple comparisons against known truth" in text
    assert (tmp_path / "multiple_testing_AP_t.png").stat().st_size > 10_000
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["multiple_testing_AP_t.png"]
    assert "nan" not in [w.lower() for w in re.findall(r"[A-Za-z0-9.+-]+", text)]


@pytest.mark.parametrize("kwargs, message", [
    ({"systems": [1]}, "^systems must be an integer >= 2, got 1$"),
    ({"systems": [500]}, "^systems: collections of 500 systems, but metric AP has"),
    ({"share_null": [1.5]}, r"^share_null must be in \[0, 1\], got 1.5$"),
    ({"corrections": ["holms"]}, r"unknown value of corrections\[0\] 'holms' \(did you mean "
                                 "'holm'"),
    ({"tests": ["tukey"]}, "unknown test for experiment=multiple_testing 'tukey'"),
    ({"spread": 0}, "^spread must be > 0"),
    ({"dependence": "clayton"}, "unknown value of dependence 'clayton'; valid: gaussian, vine"),
    ({"vine_truncation": 0}, "^vine_truncation must be an integer >= 1"),
    ({"trials": 0}, "^trials must be an integer >= 1"),
    ({"null_mean": 1.2}, r"^null_mean must be inside \(0, 1\)"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        irsim.multiple_testing(frame("adhoc8_ap"), metric="AP", **{"trials": 10, **kwargs})


def test_null_pair_mask_and_counts():
    assert null_pair_mask(5, 3).sum() == 3 and null_pair_mask(5, 1).sum() == 0
    assert true_null_count(20, 0.2) == 4 and true_null_count(3, 0.5) == 2
    model = JointCopulaModel.normal([0.4] * 4, [0.05] * 4, 0.3)
    assert model.pool == 4 and np.linalg.eigvalsh(model.corr)[0] > 0


# ------------------------------------------------------- Tukey HSD, randomised Tukey HSD
TUKEY_STREAM = "multiple_testing/randomised_tukey_hsd"


def _study_collections(model, data, study, m, share, null_margins="own"):
    """The study's own collections of (m, share), per block of trials: (block, x)."""
    n = study.config.sizes[0]
    m0 = true_null_count(m, share)
    for a in range(0, study.config.trials, REPLICATE_BLOCK):
        b = min(study.config.trials, a + REPLICATE_BLOCK)
        draws = blocked_draws(study.seed, TOPIC_STREAM, (study_key(model.metric), n), a, b,
                              lambda rng, k: model.draw(rng, k, n))
        order, logit = model.latent(draws, n)
        x, _ = model.scores(order, logit, m, data.shifts[0][(m, m0)], m0=m0,
                            shared=null_margins == "shared")
        yield a // REPLICATE_BLOCK, x


@pytest.mark.slow
def test_tukey_critical_value_is_scipys_studentized_range():
    """The critical value is scipy's quantile of the studentized range with (m-1)(n-1)
    degrees of freedom, p = alpha at it, and the published table's values
    (q(0.95; 3, 18) = 3.61, q(0.99; 5, 20) = 5.29, q(0.95; 4, 60) = 3.74)."""
    for m, n, alpha in ((3, 10, 0.05), (5, 25, 0.05), (10, 50, 0.01), (20, 25, 0.1)):
        q = critical_range(m, n, alpha)
        assert q == sps.studentized_range.ppf(1 - alpha, m, (m - 1) * (n - 1))
        assert sps.studentized_range.sf(q, m, (m - 1) * (n - 1)) == pytest.approx(alpha,
                                                                                  rel=1e-8)
    assert round(critical_range(3, 10, 0.05), 2) == 3.61  # df (3-1)(10-1) = 18
    assert round(critical_range(5, 6, 0.01), 2) == 5.29  # df (5-1)(6-1) = 20
    assert round(critical_range(4, 21, 0.05), 2) == 3.74  # df (4-1)(21-1) = 60


@pytest.mark.slow
def test_tukey_counts_equal_the_single_matrix_functions_trial_by_trial(ap_model):
    """Every counter of both Tukey tests equals a loop over the study's collections (two
    blocks of trials) through irsim.stats.tukey_hsd (p <= alpha) and randomised_tukey_hsd
    with the study's stream and key (metric, n, block, batch); every correction's row holds
    those same decisions. (pvalue=count: the real-matrix test below.)"""
    systems, shares, n, trials, alphas, B = (3, 4), (1.0, 0.5), 10, 260, (0.05, 0.1), 200
    pvalue, null_margins = "plus_one", "own"
    data = prepare([ap_model], systems=systems, shares=shares, spread=0.1)
    corrections = ("none", "bonferroni", "holm", "bh", "by")
    study = MultipleTesting.of(sizes=(n,), systems=systems, share_null=shares, alpha=alphas,
                               tests=("tukey_hsd", "randomised_tukey_hsd"),
                               corrections=corrections, trials=trials, seed=13, B=B,
                               pvalue=pvalue, null_margins=null_margins)
    got = run_study(study, data)[0]["multiple_testing"].to_pandas()
    mkey = study_key("AP")
    for m in systems:
        assert BATCH_BYTES // (8 * m * (m - 1) // 2 * n) >= REPLICATE_BLOCK  # batch 0 only
        for share in shares:
            m0 = true_null_count(m, share)
            null = null_pair_mask(m, m0)
            counts: dict = {}
            for block, x in _study_collections(ap_model, data, study, m, share, null_margins):
                for t in range(len(x)):  # the reference: one collection at a time
                    ps = {"tukey_hsd": tukey_hsd(x[t]).pvalue,
                          "randomised_tukey_hsd": randomised_tukey_hsd(
                              x[t], B=B, seed=13, study=TUKEY_STREAM, key=(mkey, n, block, 0),
                              pvalue_mode=pvalue).pvalue}
                    for test, p in ps.items():
                        for alpha in alphas:
                            rej = p <= alpha
                            v, r = int((rej & null).sum()), int(rej.sum())
                            c = counts.setdefault((test, alpha), [0, 0.0, 0, 0])
                            c[0] += v > 0
                            c[1] += v / r if r else 0.0
                            c[2] += r - v
                            c[3] += r
            alt = m * (m - 1) // 2 - m0 * (m0 - 1) // 2
            for (test, alpha), (fw, fdp, tp, r) in counts.items():
                rows = got[(got.m == m) & (got.share_null == share) & (got.test == test)
                           & (got.alpha == alpha)]
                assert sorted(rows.correction) == sorted(corrections)
                for row in rows.itertuples():
                    key = (m, share, test, row.correction, alpha)
                    _assert_counts(row, key, trials, (fw, fdp, tp, r), alt)
            # not vacuous: both tests reject something at the larger alpha
            some = got[(got.m == m) & (got.share_null == share) & (got.alpha == 0.1)]
            if share < 1:
                assert (some.mean_rejections > 0).all()


def _real_collections(trials: int, m: int, n: int, seed: int, name: str = "adhoc8_ap"
                      ) -> np.ndarray:
    """`trials` collections of m runs x n topics drawn (without replacement) from a real
    TREC-8 ad hoc matrix (129 runs x 50 topics)."""
    x = frame(name).to_numpy(float).T
    rng = np.random.default_rng(seed)
    out = np.empty((trials, m, n))
    for t in range(trials):
        rows = rng.choice(x.shape[0], m, replace=False)
        cols = rng.choice(x.shape[1], n, replace=False)
        out[t] = x[np.ix_(rows, cols)]
    return out


@pytest.mark.parametrize("pvalue, name", [("count", "adhoc8_ap"), ("plus_one", "adhoc8_ap"),
                                          ("count", "adhoc8_p10")])
def test_randomised_tukey_counts_equal_randomised_tukey_hsd_on_real_matrices(pvalue, name,
                                                                            monkeypatch):
    """On real TREC collections (AP; P@10, whose permuted ranges often tie the observed
    differences exactly), the study's randomised Tukey HSD has, per pair, the same
    count (so the same p-value) as irsim.stats.randomised_tukey_hsd with the same
    permutations: decisions at alpha = (k + 1/2) / B (count) or (k + 3/2) / (B + 1)
    (plus_one), k = 0 .. B - 1, reveal the count exactly. The gather (many systems) gives
    the same counts as the GEMM (few systems), and so do memory chunks of one permutation
    and one trial."""
    B, trials, m, n, key = 120, 30, 6, 20, (7, 20, 3, 0)
    x = _real_collections(trials, m, n, seed=5, name=name)
    k = np.arange(B)
    alphas = (k + 0.5) / B if pvalue == "count" else (k + 1.5) / (B + 1)
    # built directly, without make's B * alpha >= 1: levels below 1/B reveal each count
    study = MultipleTesting(Config(alpha=list(alphas), B=B, pvalue=pvalue), seed=9)
    dec = study.simultaneous("randomised_tukey_hsd", x, key)  # (alphas, trials, pairs)
    counts = B - dec.sum(axis=0)
    want = np.stack([randomised_tukey_hsd(x[t], B=B, seed=9, study=TUKEY_STREAM, key=key,
                                          pvalue_mode=pvalue).count for t in range(trials)])
    np.testing.assert_array_equal(counts, want)
    assert want.max() <= B and len(np.unique(want)) > 20  # not a degenerate matrix
    import irsim.stats.resample as rs

    assert m <= rs.TUKEY_GEMM_MAX_SYSTEMS
    for gemm_max, budget in ((0, mt.GATHER_BYTES), (0, 1), (m, 1)):
        monkeypatch.setattr(rs, "TUKEY_GEMM_MAX_SYSTEMS", gemm_max)
        monkeypatch.setattr(rs, "_TUKEY_BYTES", budget)
        monkeypatch.setattr(mt, "GATHER_BYTES", budget)
        again = study.simultaneous("randomised_tukey_hsd", x, key)
        np.testing.assert_array_equal(again, dec, err_msg=f"{gemm_max}, {budget}")


@pytest.mark.slow
def test_tukey_hsd_decisions_equal_tukey_hsd_on_real_matrices():
    """On real TREC collections, the critical-value decisions at several alpha equal
    irsim.stats.tukey_hsd's p <= alpha, pair by pair, and some pairs are rejected and some
    not at every alpha."""
    trials, m, n = 40, 6, 25
    x = _real_collections(trials, m, n, seed=3)
    alphas = (0.01, 0.05, 0.1, 0.3)
    study = MultipleTesting.of(alpha=alphas)
    dec = study.simultaneous("tukey_hsd", x, (0,))
    p = np.stack([tukey_hsd(x[t]).pvalue for t in range(trials)])
    for li, alpha in enumerate(alphas):
        np.testing.assert_array_equal(dec[li], p <= alpha)
        assert 0 < dec[li].sum() < dec[li].size
    # degenerate collections: identical systems (MSE = 0, no difference) reject nothing;
    # one system shifted by a constant (MSE = 0 up to rounding) is told apart from the rest
    same = np.tile(x[0, :1], (m, 1))
    shifted = same.copy()
    shifted[0] += 0.25
    dec = study.simultaneous("tukey_hsd", np.stack([same, shifted]), (0,))
    assert not dec[:, 0].any()
    a, b = np.triu_indices(m, 1)
    np.testing.assert_array_equal(dec[:, 1], np.broadcast_to(a == 0, dec[:, 1].shape))
    np.testing.assert_array_equal(dec[1, 1], tukey_hsd(shifted).pvalue <= alphas[1])


def _exchangeable(model: JointCopulaModel) -> JointCopulaModel:
    """`model`'s margins with a Gaussian copula of equal correlations (its mean one)."""
    off = model.corr[np.triu_indices(model.pool, 1)]
    corr = np.full_like(model.corr, off.mean())
    np.fill_diagonal(corr, 1.0)
    return JointCopulaModel(model.metric, model.systems, model.margins, "gaussian", corr)


@pytest.mark.slow
def test_tukey_tests_keep_the_fwer_under_a_complete_null_of_exchangeable_systems(ap_model):
    """Complete null (share_null = 1) with one margin for all systems (null_margins=shared,
    TREC-8 AP's fitted margin) and an equicorrelated copula (AP's mean correlation): the
    systems of a topic are exchangeable, the randomised Tukey HSD is exact and Tukey HSD
    nearly so. Over 2000 collections their FWER is within 3 binomial SE
    (sqrt(0.05 0.95 / 2000) = 0.0049) of alpha, while the uncorrected t test's is far above
    and grows with m."""
    systems, trials = (5, 10, 20), TRIALS
    model = _exchangeable(ap_model)
    data = prepare([model], systems=systems, shares=(1.0,), spread=0.1)
    study = MultipleTesting.of(sizes=(25,), systems=systems, share_null=(1.0,), alpha=(ALPHA,),
                               tests=("t", "tukey_hsd", "randomised_tukey_hsd"),
                               corrections=("none", "holm"), trials=trials, B=1000,
                               pvalue="plus_one", null_margins="shared", seed=4)
    t = run_study(study, data)[0]["multiple_testing"].to_pandas()
    tukey = t[t.test.isin(["tukey_hsd", "randomised_tukey_hsd"])]
    assert len(tukey) == 2 * 2 * 3
    assert (np.abs(tukey.fwer - ALPHA) <= 3 * SE).all(), tukey[["test", "m", "fwer"]]
    # the same decisions under every correction
    for _, rows in tukey.groupby(["test", "m"]):
        assert rows.familywise_errors.nunique() == 1 and rows.mean_rejections.nunique() == 1
    none = t[(t.test == "t") & (t.correction == "none")].sort_values("m")
    assert (none.fwer > ALPHA + 10 * SE).all() and none.fwer.is_monotonic_increasing


@pytest.mark.slow
def test_tukey_tests_exceed_alpha_when_systems_are_not_exchangeable(ap_model):
    """With the fitted copula (TREC-8 AP: pairwise correlations from 0.05 to 0.99), equal
    means and one margin do not make the systems of a topic exchangeable: both Tukey tests
    assume it, and over 20 systems their FWER is above alpha beyond 3 binomial SE, while
    Holm's with the t test stays below it."""
    data = prepare([ap_model], systems=(20,), shares=(1.0,), spread=0.1)
    study = MultipleTesting.of(sizes=(25,), systems=(20,), share_null=(1.0,), alpha=(ALPHA,),
                               tests=("t", "tukey_hsd", "randomised_tukey_hsd"),
                               corrections=("holm",), trials=TRIALS, B=500, pvalue="plus_one",
                               null_margins="shared", seed=2)
    t = run_study(study, data)[0]["multiple_testing"].to_pandas().set_index("test")
    assert t.loc["tukey_hsd", "fwer"] > ALPHA + 3 * SE
    assert t.loc["randomised_tukey_hsd", "fwer"] > ALPHA + 3 * SE
    assert t.loc["t", "fwer"] <= ALPHA + 3 * SE


@pytest.mark.slow
def test_report_draws_one_line_for_the_simultaneous_tests(tmp_path, monkeypatch):
    """A figure per test; a Tukey test's figure has one line per share_null (its rows of
    all corrections are equal), a paired test's one per correction and share_null."""
    import matplotlib.figure

    drawn: list[list[str]] = []  # the legend of each figure, in drawing order
    orig = matplotlib.figure.Figure.legend

    def legend(self, handles, labels, **kw):
        drawn.append(list(labels))
        return orig(self, handles, labels, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "legend", legend)
    res = irsim.multiple_testing(frame("adhoc8_ap").iloc[:, :20], metric="AP",
                                 systems=[3, 5], sizes=[10], share_null=[1.0, 0.4],
                                 trials=250, B=100, corrections=["none", "holm"],
                                 tests=["t", "tukey_hsd", "randomised_tukey_hsd"])
    res.report(tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "simultaneous tests of all pairs" in text
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "multiple_testing_AP_randomised_tukey_hsd.png", "multiple_testing_AP_t.png",
        "multiple_testing_AP_tukey_hsd.png"]
    one = ["simultaneous"]  # one legend per figure: a column per share_null
    assert drawn == [["none", "holm"], one, one]  # t, tukey_hsd, randomised
    from irsim.experiments.multiple_testing.report import SIMULTANEOUS

    assert SIMULTANEOUS == mt.SIMULTANEOUS  # the report reads tables only: its own copy


def test_the_default_shards_are_one_configuration_by_500_trials():
    """The preset's bar moves and a kill loses one shard, not the run (issue 31): each
    configuration (m, n, share of nulls) is its own shard, 500 trials each."""
    res = irsim.multiple_testing(frame("adhoc8_ap").iloc[:, :15], metric="AP",
                                 systems=[4, 6], sizes=[10], share_null=[1.0, 0.5],
                                 trials=1000, tests=["t"], corrections=["none"])
    assert res.manifest["shards"] == 2 * 2 * 2  # configurations x trial blocks
    assert res.to_pandas("multiple_testing")["trials"].tolist() == [1000] * 4
