"""discpower with every test of irsim.stats, corrections and test agreement, against scipy and
statsmodels on every system pair of real TREC matrices."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from conftest import SHARED_DATA, urbano_matrix
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from irsim.data.matrix import ScoreMatrix
from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments import Shards
from irsim.experiments.discpower import Config, DiscPower, make
from irsim.experiments.discpower.pairtests import RANDOMISATION_STREAM, TestOptions
from irsim.stats import randomisation_test

SM = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh", "by": "fdr_by"}


def asl_of(tables, test: str, metric: str | None = None) -> np.ndarray:
    asl = tables["asl"].to_pandas()
    rows = asl[(asl.test == test) & ((asl.metric == metric) if metric else True)]
    return rows.asl.to_numpy()


def pairs_of(m: ScoreMatrix, metric: str):
    x = m.metric(metric)
    a, b = np.triu_indices(len(m.systems), 1)
    return x[a], x[b]


@pytest.fixture(scope="module")
def adhoc8():
    """All 129 TREC-8 runs: 8,256 pairs; AP has zero differences and ties of |z|."""
    return urbano_matrix("adhoc8_ap", "AP")


def closed(m: ScoreMatrix, tests, **options):
    study = DiscPower.of(tests=list(tests), B=10, alpha=[0.01, 0.05], **options)
    return run_study(study, m)[0]


# ---------------------------------------------------------------------- p-values = scipy
def test_t_equals_ttest_rel_on_every_pair(adhoc8):
    x, y = pairs_of(adhoc8, "AP")
    got = asl_of(closed(adhoc8, ["t"]), "t")
    want = sps.ttest_rel(x, y, axis=-1).pvalue
    same = (x == y).all(axis=1)  # identical runs: scipy NaN, discpower p = 1 (t = 0)
    assert same.sum() == 2 and (got[same] == 1.0).all()
    np.testing.assert_allclose(got[~same], want[~same], rtol=1e-12, atol=0)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # scipy: pairs with z = 0
@pytest.mark.slow
def test_wilcoxon_modes_equal_scipy_on_every_pair(adhoc8):
    x, y = pairs_of(adhoc8, "AP")
    z = x - y
    nonzero = z != 0
    srt = np.sort(np.abs(z), axis=1)
    tied = ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] > 0)).any(axis=1)
    zeros = ~nonzero.all(axis=1)
    empty = ~nonzero.any(axis=1)
    assert zeros.sum() > 300 and tied.sum() > 300  # both cases are exercised
    tables = {mode: asl_of(closed(adhoc8, ["wilcoxon"], wilcoxon_method=mode), "wilcoxon")
              for mode in ("auto", "exact", "approx", "r")}
    corrected = asl_of(closed(adhoc8, ["wilcoxon"], wilcoxon_method="approx",
                              wilcoxon_correction=True), "wilcoxon")
    pratt = asl_of(closed(adhoc8, ["wilcoxon"], wilcoxon_method="approx",
                          wilcoxon_zero_method="pratt"), "wilcoxon")
    ok = ~empty
    for got, kw in ((tables["approx"], {}), (corrected, {"correction": True}),
                    (tables["r"], {"correction": True}),  # R: n = 50, the approximation
                    (pratt, {"zero_method": "pratt"})):
        want = sps.wilcoxon(x, y, method="asymptotic", axis=-1, **kw).pvalue
        np.testing.assert_allclose(got[ok], want[ok], rtol=1e-10, err_msg=str(kw))
    assert (tables["approx"][empty] == 1).all()
    # exact and auto: scipy's exact distribution of the nonzero differences, pair by pair
    # where they are untied; auto takes the approximation for tied pairs (n > 13)
    clean = ok & ~tied
    want_exact = np.array([sps.wilcoxon(r[r != 0], method="exact").pvalue for r in z[clean]])
    np.testing.assert_allclose(tables["exact"][clean], want_exact, rtol=1e-12)
    np.testing.assert_allclose(tables["auto"][clean], want_exact, rtol=1e-12)
    want_tied = sps.wilcoxon(x[tied], y[tied], method="asymptotic", axis=-1).pvalue
    np.testing.assert_allclose(tables["auto"][tied], want_tied, rtol=1e-10)


@pytest.mark.parametrize("threshold", [0.0, 0.01])
@pytest.mark.slow
def test_sign_equals_binomtest_on_every_pair(adhoc8, threshold):
    x, y = pairs_of(adhoc8, "AP")
    got = asl_of(closed(adhoc8, ["sign"], sign_threshold=threshold), "sign")
    z = x - y
    wins, losses = (z > threshold).sum(axis=1), (z < -threshold).sum(axis=1)
    want = np.array([sps.binomtest(int(k), int(k + l)).pvalue if k + l else 1.0
                     for k, l in zip(wins, losses, strict=True)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def tukey_oracle(x: np.ndarray) -> tuple[np.ndarray, float, int]:
    """statsmodels' OLS of score ~ system + topic (dummies) for MS_error, scipy's studentized
    range for p."""
    k, n = x.shape
    sys_d = np.repeat(np.eye(k), n, axis=0)[:, 1:]
    top_d = np.tile(np.eye(n), (k, 1))[:, 1:]
    design = np.column_stack([np.ones(k * n), sys_d, top_d])
    fit = sm.OLS(x.reshape(-1), design).fit()
    a, b = np.triu_indices(k, 1)
    means = x.mean(axis=1)
    q = np.abs(means[a] - means[b]) / np.sqrt(fit.mse_resid / n)
    return sps.studentized_range.sf(q, k, fit.df_resid), float(fit.mse_resid), int(fit.df_resid)


@pytest.mark.slow
def test_tukey_hsd_equals_statsmodels_anova_and_scipy_range():
    m = urbano_matrix("adhoc8_ap", "AP", systems=14)
    tables = closed(m, ["tukey_hsd"])
    want, mse, df = tukey_oracle(m.metric("AP"))
    assert df == 13 * 49
    np.testing.assert_allclose(asl_of(tables, "tukey_hsd"), want, rtol=1e-9, atol=1e-12)
    # the estimated difference is the HSD: a difference of exactly HSD has p = alpha
    dp = tables["discpower"].to_pandas()
    for r in dp.itertuples():
        q = r.estimated_diff_raw / np.sqrt(mse / 50)
        assert sps.studentized_range.sf(q, 14, df) == pytest.approx(r.alpha, rel=1e-6)
        p = asl_of(tables, "tukey_hsd")
        assert r.significant == (p < r.alpha).sum()


def test_tukey_hsd_of_two_systems_is_the_t_test():
    m = urbano_matrix("adhoc8_ap", "AP", systems=2)
    x = m.metric("AP")
    got = asl_of(closed(m, ["tukey_hsd"]), "tukey_hsd")
    assert got[0] == pytest.approx(sps.ttest_rel(x[0], x[1]).pvalue, rel=1e-8)


def test_randomisation_is_the_stats_function_for_any_sharding():
    m = urbano_matrix("adhoc7_ap", "AP", systems=30)  # 435 pairs: two pair units
    x, y = pairs_of(m, "AP")
    want = randomisation_test(x, y, B=600, seed=4, study=RANDOMISATION_STREAM).pvalue
    for items, reps in ((10_000, 10_000), (256, 250), (1, 1)):
        tables, info = run_study(DiscPower.of(tests=("randomisation",), B=600, seed=4,
                                              shard_items=items, shard_replicates=reps), m)
        np.testing.assert_array_equal(asl_of(tables, "randomisation"), want)
    assert info["shards"] == 6  # 2 pair blocks x 3 replicate blocks


def test_randomisation_exact_equals_scipy_permutation_test():
    # 9 topics, B = 1000 >= 2^9: every sign vector (scipy: exhaustive permutation test)
    m = urbano_matrix("adhoc8_ap", "AP", systems=8)
    m = m.select(topics=m.topics[:9])
    x, y = pairs_of(m, "AP")
    got = asl_of(run_study(DiscPower.of(tests=("randomisation",), B=1000), m)[0],
                 "randomisation")
    want = sps.permutation_test((x - y,), lambda d, axis: d.mean(axis=axis),
                                permutation_type="samples", n_resamples=np.inf,
                                axis=-1).pvalue
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.slow
def test_every_test_runs_in_one_study_with_g_metrics():
    m = urbano_matrix("adhoc8_p10", "P@10", systems=10)
    tests = ("t", "wilcoxon", "sign", "randomisation", "paired_bootstrap",
             "unpaired_bootstrap", "tukey_hsd", "randomised_tukey_hsd")
    tables, _ = run_study(DiscPower.of(tests=tests, B=250, gmean=True, correction="holm"), m)
    asl = tables["asl"].to_pandas()
    got = set(zip(asl.metric, asl.test, strict=True))
    assert got == ({("P@10", t) for t in tests}
                   | {("AG P@10", t) for t in tests if t != "unpaired_bootstrap"}
                   | {("G P@10", "unpaired_bootstrap")})
    assert asl.groupby(["metric", "test"]).size().eq(45).all()
    # AG: the tests of the logs, as the stats functions compute them
    logs = np.log(m.metric("P@10") + 1e-5)
    a, b = np.triu_indices(10, 1)
    ag = asl[(asl.metric == "AG P@10") & (asl.test == "sign")].asl.to_numpy()
    want = [sps.binomtest(int(k), int(k + j)).pvalue if k + j else 1.0 for k, j in
            zip((logs[a] > logs[b]).sum(1), (logs[a] < logs[b]).sum(1), strict=True)]
    np.testing.assert_allclose(ag, want, rtol=1e-12)
    dp = tables["discpower"].to_pandas()
    none = dp[dp.test.isin(["wilcoxon", "sign", "randomisation"])]
    assert none.estimated_diff.isna().all() and none.estimated_diff_raw.isna().all()
    assert dp[~dp.test.isin(["wilcoxon", "sign", "randomisation"])].estimated_diff.notna().all()


# ------------------------------------------------------------------------- corrections
@pytest.mark.parametrize("correction", ["none", "bonferroni",
                                        pytest.param("holm", marks=pytest.mark.slow),
                                        "bh", "by"])
def test_asl_adjusted_equals_statsmodels(correction):
    m = ScoreMatrix.stack([urbano_matrix("adhoc8_ap", "AP", systems=30),
                           urbano_matrix("adhoc8_p10", "P@10", systems=30)])
    # Tukey HSD integrates a p-value per pair (slow): in one family of the parameters only
    tests = ("t", "sign", "paired_bootstrap", "randomised_tukey_hsd") + (
        ("tukey_hsd",) if correction == "holm" else ())
    study = DiscPower.of(tests=tests, B=300, seed=2, alpha=(0.01, 0.05), correction=correction,
                         pvalue="plus_one")
    tables, _ = run_study(study, m)
    asl = tables["asl"].to_pandas()
    dp = tables["discpower"].to_pandas()
    assert (dp.correction == correction).all()
    for (metric, test), rows in asl.groupby(["metric", "test"]):
        assert len(rows) == 435  # the family: all pairs of the metric and test
        p, adj = rows.asl.to_numpy(), rows.asl_adjusted.to_numpy()
        if test in ("tukey_hsd", "randomised_tukey_hsd") or correction == "none":
            np.testing.assert_array_equal(adj, p)  # simultaneous already
        else:
            np.testing.assert_array_equal(adj, multipletests(p, method=SM[correction])[1])
        for alpha in (0.01, 0.05):
            row = dp[(dp.metric == metric) & (dp.test == test) & (dp.alpha == alpha)].iloc[0]
            assert row.significant_adjusted == (adj < alpha).sum()
            assert row.sensitivity_adjusted == row.significant_adjusted / 435
            assert row.significant_adjusted <= row.significant
    if correction == "holm":  # Holm finds fewer pairs than the raw t test on 435 pairs
        t = dp[(dp.metric == "AP") & (dp.test == "t") & (dp.alpha == 0.05)].iloc[0]
        assert t.significant_adjusted < t.significant


def test_corrections_on_every_pair_of_adhoc8(adhoc8):
    tables = run_study(DiscPower.of(tests=("t",), correction="bh"), adhoc8)[0]
    asl = tables["asl"].to_pandas()
    assert len(asl) == 8256
    np.testing.assert_array_equal(asl.asl_adjusted,
                                  multipletests(asl.asl.to_numpy(), method="fdr_bh")[1])


# ---------------------------------------------------------------------- test agreement
def test_agreement_by_hand():
    # 3 systems x 4 topics: pairs (0,1), (0,2), (1,2)
    x = np.array([[0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.5], [0.8, 0.9, 0.6, 0.7]])
    m = ScoreMatrix(x[None], ["M"], ["a", "b", "c"], ["1", "2", "3", "4"])
    tables, _ = run_study(DiscPower.of(tests=("t", "sign"), alpha=(0.1, 0.2), agreement=True,
                                       B=10), m)
    ag = tables["test_agreement"].to_pandas()
    assert list(ag.columns) == ["metric", "test_a", "test_b", "alpha", "pairs", "pearson_r",
                                "rmse", "both", "only_a", "only_b", "neither"]
    # t p-values by scipy; sign by hand: 4 wins of 4 -> 2/16, 2 of 4 -> 1, 0 of 4 -> 2/16
    pt = [sps.ttest_rel(x[i], x[j]).pvalue for i, j in ((0, 1), (0, 2), (1, 2))]
    ps = [0.125, 1.0, 0.125]
    np.testing.assert_allclose(asl_of(tables, "sign"), ps, rtol=1e-15)
    for alpha, row in zip((0.1, 0.2), ag.itertuples(), strict=True):
        sig_t = [p < alpha for p in pt]
        sig_s = [p < alpha for p in ps]
        assert row.alpha == alpha and row.pairs == 3
        assert row.both == sum(a and b for a, b in zip(sig_t, sig_s, strict=True)) / 3
        assert row.only_a == sum(a and not b for a, b in zip(sig_t, sig_s, strict=True)) / 3
        assert row.only_b == sum(b and not a for a, b in zip(sig_t, sig_s, strict=True)) / 3
        assert row.both + row.only_a + row.only_b + row.neither == pytest.approx(1)
        d = np.array(pt) - np.array(ps)
        assert row.rmse == pytest.approx(np.sqrt((d ** 2).mean()), rel=1e-12)
        assert row.pearson_r == pytest.approx(sps.pearsonr(pt, ps).statistic, rel=1e-12)
    # t: p = 0.0500 (a, b), 1 (a, c: mean 0), 0.0364 (b, c). alpha 0.1: t finds (a, b) and
    # (b, c), sign nothing; alpha 0.2: both find (a, b) and (b, c)
    np.testing.assert_allclose(asl_of(tables, "t"), pt, rtol=1e-12)
    assert 0.05 < pt[0] < 0.0501 and pt[1] == 1.0 and 0.036 < pt[2] < 0.037
    assert ag[["both", "only_a", "only_b", "neither"]].values.tolist() == [
        [0.0, 2 / 3, 0.0, 1 / 3], [2 / 3, 0.0, 0.0, 1 / 3]]


def test_agreement_on_real_data_equals_direct_computation():
    m = urbano_matrix("adhoc8_ap", "AP", systems=50)
    tests = ("t", "wilcoxon", "sign", "paired_bootstrap")
    tables, _ = run_study(DiscPower.of(tests=tests, B=500, agreement=True), m)
    ag = tables["test_agreement"].to_pandas()
    assert len(ag) == 6 * 2  # test pairs x alphas
    for r in ag.itertuples():
        pa_, pb = asl_of(tables, r.test_a), asl_of(tables, r.test_b)
        assert r.pairs == 1225
        assert r.pearson_r == pytest.approx(sps.pearsonr(pa_, pb).statistic, rel=1e-12)
        assert r.rmse == pytest.approx(np.sqrt(np.mean((pa_ - pb) ** 2)), rel=1e-12)
        sa, sb = pa_ < r.alpha, pb < r.alpha
        assert (r.both, r.only_a, r.only_b, r.neither) == (
            (sa & sb).mean(), (sa & ~sb).mean(), (~sa & sb).mean(), (~sa & ~sb).mean())
    # Smucker et al.: t and the resampling tests agree closely, the sign test less so
    pair = ag.set_index(["test_a", "test_b", "alpha"])
    assert pair.loc[("t", "paired_bootstrap", 0.05), "pearson_r"] > 0.99
    assert (pair.loc[("t", "sign", 0.05), "rmse"]
            > 3 * pair.loc[("t", "paired_bootstrap", 0.05), "rmse"])


# -------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("kw,msg", [
    ({"tests": ["sgn"]}, "did you mean 'sign'"),
    ({"correction": "holms"}, "unknown value of experiment.correction 'holms' (did you mean "
                              "'holm'?)"),
    ({"wilcoxon_method": "exakt"}, "experiment.wilcoxon_method 'exakt'"),
    ({"wilcoxon_zero_method": "zsplit"}, "experiment.wilcoxon_zero_method"),
    ({"sign_threshold": -0.1}, "experiment.sign_threshold must be >= 0, got -0.1"),
    ({"sign_threshold": "x"}, "experiment.sign_threshold must be a number >= 0"),
    ({"agreement": "yes"}, "experiment.agreement must be true or false"),
    ({"wilcoxon_correction": 1}, "experiment.wilcoxon_correction must be true or false"),
])
def test_bad_parameters(kw, msg):
    m = urbano_matrix("adhoc8_ap", "AP", systems=5)
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(").replace(")", r"\)")
                       .replace("?", r"\?")):
        make(Config(**kw), m, seed=0, shards=Shards())


def test_holm_with_too_few_replicates_warns(caplog):
    m = urbano_matrix("adhoc8_ap", "AP", systems=40)  # 780 pairs: B >= 780 / 0.05 needed
    with caplog.at_level("WARNING", logger="irsim.experiments.discpower"):
        make(Config(tests=["t", "randomisation"], correction="holm", pvalue="plus_one",
                    alpha=0.05, B=15_599), m, seed=0, shards=Shards())
    assert "B >= 15600 is needed" in caplog.text and "randomisation" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="irsim.experiments.discpower"):
        make(Config(tests=["t", "randomisation"], correction="holm", alpha=0.05, B=15_600),
             m, seed=0, shards=Shards())
        make(Config(tests=["t", "tukey_hsd"], correction="holm", B=10), m, seed=0,
             shards=Shards())
        make(Config(tests=["randomisation"], correction="bh", B=100), m, seed=0,
             shards=Shards())
    assert not caplog.text


def test_options_reach_the_study():
    m = urbano_matrix("adhoc8_ap", "AP", systems=5)
    study, _ = make(Config(tests=["wilcoxon", "sign"], correction="by", agreement=True,
                           wilcoxon_method="r", sign_threshold=0.01), m, seed=0,
                    shards=Shards())
    assert study.config.correction == "by" and study.config.agreement
    assert study.options == TestOptions(wilcoxon_method="r", sign_threshold=0.01)
    assert study.fingerprint()["sign_threshold"] == 0.01


# ------------------------------------------------------------------- CLI and the preset
@pytest.mark.slow
def test_issue_repro_runs_from_the_command_line(tmp_path):
    from irsim.runner import compose_config, run

    cfg = compose_config(["experiment=discpower", "experiment.tests=[t,wilcoxon,sign]",
                          "quiet=true"])
    tables = run(cfg, tmp_path)
    assert set(tables["asl"].column("test").to_pylist()) == {"t", "wilcoxon", "sign"}


@pytest.mark.slow
def test_preset_reproduces_the_whole_table(tmp_path):
    from irsim.runner import compose_config, run

    cfg = compose_config(["experiment=discpower_all_tests", f"data_dir={SHARED_DATA}",
                          "offline=true", "quiet=true", "experiment.B=250",
                          "experiment.top_systems=16"])
    assert cfg.experiment.correction == "holm" and cfg.experiment.agreement
    tables = run(cfg, tmp_path)
    m = urbano_matrix("adhoc8_ap", "AP")
    keep = np.sort(np.argsort(-m.metric("AP").mean(axis=1), kind="stable")[:16])
    x = m.metric("AP")[keep]
    a, b = np.triu_indices(16, 1)
    asl = tables["asl"].to_pandas()
    assert set(asl.test) == set(cfg.experiment.tests) and len(asl) == 8 * 120
    assert list(asl[asl.test == "t"].system_a) == [m.systems[keep[i]] for i in a]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle = {
            "t": sps.ttest_rel(x[a], x[b], axis=-1).pvalue,
            "sign": [sps.binomtest(int(k), int(k + j)).pvalue for k, j in
                     zip((x[a] > x[b]).sum(1), (x[a] < x[b]).sum(1), strict=True)],
            "tukey_hsd": tukey_oracle(x)[0],
        }
    for test, want in oracle.items():
        got = asl[asl.test == test]
        np.testing.assert_allclose(got.asl, want, rtol=1e-9, atol=1e-12, err_msg=test)
    for test, rows in asl.groupby("test"):
        if test in ("tukey_hsd", "randomised_tukey_hsd"):
            np.testing.assert_array_equal(rows.asl_adjusted, rows.asl)
        else:
            np.testing.assert_array_equal(rows.asl_adjusted,
                                          multipletests(rows.asl.to_numpy(), method="holm")[1])
    # plus_one p-values: no Monte Carlo ASL is 0
    assert (asl[asl.test == "paired_bootstrap"].asl >= 1 / 251).all()
    assert len(tables["test_agreement"]) == 28 * 2
    report = (tmp_path / "report.md").read_text()
    assert "## Test agreement" in report and "pvalues_AP.png" in report
    assert (tmp_path / "pvalues_AP.png").stat().st_size > 10_000
    assert pd.read_parquet(tmp_path / "results" / "test_agreement.parquet").shape[0] == 56


@pytest.mark.ray
def test_ray_engine_equals_local_with_every_test():
    import irsim

    df = pd.read_csv(SHARED_DATA / "urbano" / "adhoc8_ap.csv").iloc[:, :24]  # 276 pairs
    kw = dict(metric="AP", B=500, seed=3, correction="holm", agreement=True, gmean=True,
              tests=["t", "wilcoxon", "sign", "randomisation", "paired_bootstrap",
                     "unpaired_bootstrap", "tukey_hsd", "randomised_tukey_hsd"])
    local = irsim.discpower(df, shard_items=256, shard_replicates=250, **kw)
    ray = irsim.discpower(df, engine="ray", workers=2, shard_items=1, shard_replicates=1, **kw)
    assert ray.manifest["engine"] == "ray" and ray.manifest["run"]["shards"] == 4
    assert sorted(ray.tables) == ["asl", "discpower", "test_agreement"]
    for name, t in local.tables.items():
        assert ray.tables[name].equals(t), name
