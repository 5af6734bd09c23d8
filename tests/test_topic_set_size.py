"""Topic set size design (Sakai 2016): power and n against statsmodels.stats.power, the
variance V_E against an OLS two-way ANOVA (statsmodels), the study's table on real TREC
matrices, both doors, presets and bad input."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA
from golden.record import tables_of
from statsmodels.stats.power import FTestAnovaPower, TTestPower
from test_api import assert_same_tables

import irsim
from irsim.errors import ConfigError
from irsim.experiments.topic_set_size import pair_variances
from irsim.stats.power import (
    anova_n,
    anova_power,
    ci_half_width,
    ci_n,
    paired_t_n,
    paired_t_power,
    smallest_n,
)

URBANO = SHARED_DATA / "urbano"
GRID = [(a, b, d, v) for a in (0.01, 0.05) for b in (0.1, 0.2) for d in (0.02, 0.05, 0.1, 0.2)
        for v in (0.01, 0.04, 0.09)]


def frame(name: str) -> pd.DataFrame:
    return pd.read_csv(URBANO / f"{name}.csv")


def ols_residual_variance(df: pd.DataFrame) -> float:
    """V_E = MS_error of an OLS fit of score ~ C(system) + C(topic) (statsmodels)."""
    import statsmodels.formula.api as smf

    x = df.to_numpy(dtype=float)  # (topics, systems)
    long = pd.DataFrame({"score": x.ravel(),
                         "topic": np.repeat(np.arange(x.shape[0]), x.shape[1]).astype(str),
                         "system": np.tile(np.arange(x.shape[1]), x.shape[0]).astype(str)})
    fit = smf.ols("score ~ C(system) + C(topic)", data=long).fit()
    return float(fit.mse_resid)


# ------------------------------------------------------------------------ power functions
@pytest.mark.parametrize("alpha, beta, d, v", GRID)
def test_paired_t_n_is_the_smallest_n_with_statsmodels_power(alpha, beta, d, v):
    n = int(paired_t_n(d, v, alpha=alpha, beta=beta))
    es = d / math.sqrt(v)
    power = TTestPower().power
    assert power(effect_size=es, nobs=n, alpha=alpha, alternative="two-sided") >= 1 - beta
    if n > 2:
        assert power(effect_size=es, nobs=n - 1, alpha=alpha, alternative="two-sided") < 1 - beta
    solved = TTestPower().solve_power(effect_size=es, alpha=alpha, power=1 - beta,
                                      alternative="two-sided")
    if solved > 2 and abs(solved - round(solved)) > 1e-6:
        assert n == math.ceil(solved)
    assert paired_t_power(n, d, v, alpha=alpha) == pytest.approx(
        power(effect_size=es, nobs=n, alpha=alpha, alternative="two-sided"), abs=1e-10)


@pytest.mark.parametrize("m", [2, 5, 10, 50])
@pytest.mark.parametrize("alpha, beta, d, v", GRID[::5])
def test_anova_n_is_the_smallest_n_with_statsmodels_power(m, alpha, beta, d, v):
    n = int(anova_n(m, d, v, alpha=alpha, beta=beta))
    # FTestAnovaPower: nc = f^2 * nobs; with nobs = m n and f^2 = d^2 / (2 m v), nc = n d^2/(2v)
    f = math.sqrt(d * d / (2 * m * v))
    power = FTestAnovaPower().power
    assert power(effect_size=f, nobs=m * n, alpha=alpha, k_groups=m) >= 1 - beta
    if n > 2:
        assert power(effect_size=f, nobs=m * (n - 1), alpha=alpha, k_groups=m) < 1 - beta
    assert anova_power(n, m, d, v, alpha=alpha) == pytest.approx(
        power(effect_size=f, nobs=m * n, alpha=alpha, k_groups=m), abs=1e-10)


def test_ci_half_width_is_the_expected_half_width_by_simulation():
    rng = np.random.default_rng(0)
    n, var, alpha = 12, 0.04, 0.05
    x = rng.normal(0.3, math.sqrt(var), (200_000, n))
    from scipy import stats as sps

    hw = sps.t.isf(alpha / 2, n - 1) * x.std(axis=1, ddof=1) / math.sqrt(n)
    se = hw.std() / math.sqrt(len(hw))
    assert abs(float(ci_half_width(n, var, alpha=alpha)) - hw.mean()) < 4 * se


@pytest.mark.parametrize("delta, var, alpha", [(0.02, 0.03, 0.05), (0.05, 0.04, 0.01),
                                               (0.1, 0.02, 0.05), (0.3, 0.02, 0.05)])
def test_ci_n_is_the_smallest_n_by_direct_search(delta, var, alpha):
    from scipy import special
    from scipy import stats as sps

    def expected(n: int) -> float:  # written out: t quantile x E[s] / sqrt(n)
        c4 = math.sqrt(2 / (n - 1)) * math.exp(special.gammaln(n / 2)
                                               - special.gammaln((n - 1) / 2))
        return sps.t.isf(alpha / 2, n - 1) * c4 * math.sqrt(var / n)

    want = next(n for n in range(2, 100_000) if expected(n) <= delta)
    assert int(ci_n(delta, var, alpha=alpha)) == want


def test_smallest_n_limits_and_vectorisation():
    assert smallest_n(lambda n: n >= 5, (1,), n_max=4).tolist() == [-1]
    got = paired_t_n(np.array([0.05, 0.1, 0.2]), 0.04, alpha=[0.01, 0.05, 0.05], beta=0.2)
    one = [int(paired_t_n(d, 0.04, alpha=a, beta=0.2))
           for d, a in [(0.05, 0.01), (0.1, 0.05), (0.2, 0.05)]]
    assert got.tolist() == one
    with pytest.raises(ConfigError, match="beta must be in"):
        paired_t_n(0.05, 0.04, beta=1.0)
    with pytest.raises(ConfigError, match="min_diff must be positive"):
        paired_t_n(-0.05, 0.04)


# ------------------------------------------------------------------------------ the study
def test_pair_variances_identity_and_direct():
    x = frame("adhoc8_p10").to_numpy().T[:20]
    pv = pair_variances(x)
    a, b = np.triu_indices(20, 1)
    direct = np.var(x[a] - x[b], axis=1, ddof=1)
    np.testing.assert_allclose(pv, direct, rtol=1e-10, atol=1e-14)
    # the mean over pairs of the variance of differences is exactly 2 V_E
    assert pv.mean() == pytest.approx(2 * ols_residual_variance(frame("adhoc8_p10").iloc[:, :20]),
                                      rel=1e-10)


@pytest.mark.parametrize("name, metric", [("adhoc8_ap", "AP"), ("adhoc8_p10", "P@10"),
                                          ("web2012_ndcg20", "nDCG@20")])
@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_table_on_real_collections(name, metric):
    df = frame(name)
    res = irsim.topic_set_size(df, metric=metric, alpha=[0.05], beta=[0.2],
                               min_diff=[0.05, 0.1], m=[2, 10])
    t = res.to_pandas("topic_set_size")
    v_e = ols_residual_variance(df)
    assert t.v_e.to_numpy() == pytest.approx(v_e, rel=1e-9)
    assert (t.systems == df.shape[1]).all() and (t.topics == df.shape[0]).all()
    tt = t[t.design == "paired_t"]
    for row in tt.itertuples():
        assert row.variance == pytest.approx(2 * v_e, rel=1e-9)
        solved = TTestPower().solve_power(effect_size=row.min_diff / math.sqrt(2 * v_e),
                                          alpha=0.05, power=0.8, alternative="two-sided")
        assert row.n == math.ceil(solved)
    an = t[t.design == "anova"]
    assert sorted(an.m.unique().tolist()) == [2, 10] and (an.variance == an.v_e).all()
    for row in an.itertuples():
        f = math.sqrt(row.min_diff ** 2 / (2 * row.m * v_e))
        solved = FTestAnovaPower().solve_power(effect_size=f, alpha=0.05, power=0.8,
                                               k_groups=row.m)
        assert row.n == math.ceil(solved / row.m - 1e-9)
    ci = t[t.design == "ci"]
    assert ci.beta.isna().all() and ci.power.isna().all()
    assert (ci.half_width <= ci.min_diff).all()
    # more topics are needed for smaller differences, and for ANOVA over more systems
    assert (tt.sort_values("min_diff").n.diff().dropna() < 0).all()
    assert (an[an.m == 10].n.to_numpy() > an[an.m == 2].n.to_numpy()).all()


def test_diff_variance_options():
    df = frame("adhoc8_ap").iloc[:, :30]
    x = df.to_numpy().T
    pv = pair_variances(x)
    for option, want in [("pairs_max", pv.max()), ("pairs_median", np.median(pv))]:
        t = irsim.topic_set_size(df, metric="AP", designs=["paired_t"], diff_variance=option,
                                 min_diff=[0.1], alpha=[0.05], beta=[0.2]).to_pandas()
        assert t.variance.iloc[0] == pytest.approx(want, rel=1e-12)
        assert t.n.iloc[0] == int(paired_t_n(0.1, want, alpha=0.05, beta=0.2))


def test_shards_do_not_change_tables():
    data = {"AP": frame("adhoc8_ap"), "P@10": frame("adhoc8_p10"), "RR": frame("adhoc8_rr")}
    one = irsim.topic_set_size(data, shard_items=1)
    three = irsim.topic_set_size(data, shard_items=3)
    assert_same_tables(one.tables, three.tables)


def test_api_equals_cli():
    api = irsim.topic_set_size({"AP": frame("adhoc8_ap"), "P@10": frame("adhoc8_p10")},
                               min_diff=[0.05, 0.1], m=[2, 20], diff_variance="pairs_max")
    cli = tables_of(["experiment=topic_set_size", "collection=matrix",
                     f"collection.paths={{AP: {URBANO}/adhoc8_ap.csv, "
                     f"P@10: {URBANO}/adhoc8_p10.csv}}", "experiment.min_diff=[0.05,0.1]",
                     "experiment.m=[2,20]", "experiment.diff_variance=pairs_max"])
    assert_same_tables(api.tables, cli)


@pytest.mark.parametrize("preset, collection", [("sakai_topic_set_size", "adhoc8"),
                                                ("sakai_topic_set_size_web2012", "web2012")])
@pytest.mark.slow
def test_presets_run(preset, collection):
    tables = tables_of([f"experiment={preset}", f"data_dir={SHARED_DATA}"])
    t = tables["topic_set_size"].to_pandas()
    assert set(t.design) == {"paired_t", "anova", "ci"}
    metric = "AP"
    v_e = ols_residual_variance(frame(f"{collection}_ap"))
    assert t[t.metric == metric].v_e.iloc[0] == pytest.approx(v_e, rel=1e-9)


@pytest.mark.parametrize("kwargs, message", [
    ({"designs": ["pairedt"]}, "did you mean 'paired_t'"),
    ({"m": [1]}, "^m must be an integer >= 2, got 1$"),
    ({"min_diff": [0.0]}, "^min_diff must be > 0, got 0.0$"),
    ({"beta": [0.0]}, "^beta must be inside"),
    ({"diff_variance": "pair_max"}, "did you mean 'pairs_max'"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        irsim.topic_set_size(frame("adhoc8_ap"), metric="AP", **kwargs)


@pytest.mark.slow
def test_cli_bad_parameter_one_line_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "irsim", "experiment=topic_set_size",
                        "collection=matrix", f"collection.path={URBANO}/adhoc8_ap.csv",
                        "collection.metric=AP", "experiment.m=[1]", "quiet=true",
                        f"hydra.run.dir={tmp_path / 'out'}"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "experiment.m must be an integer >= 2, got 1" in lines[0]


# ----------------------------------------------------------------------- simulation check
def check_table(data, **kwargs) -> pd.DataFrame:
    return irsim.topic_set_size(data, alpha=[0.05], beta=[0.2], **kwargs).to_pandas(
        "topic_set_size_check")


def test_check_counts_equal_scipy_on_the_same_trials():
    """Regenerate the trials of the check (the generator's public API, the study's stream)
    and count rejections with scipy.stats.ttest_rel."""
    from scipy import stats as sps

    from irsim.experiments.topic_set_size import CHECK_STREAM
    from irsim.rng import blocked_draws, study_key
    from irsim.simulate.pairs import fit_simulator, prepare

    df = frame("adhoc8_p10").iloc[:, :15]
    trials, seed = 600, 4
    t = check_table(df, metric="P@10", min_diff=[0.1], check_trials=trials, seed=seed)
    row = t.iloc[0]
    x = df.to_numpy(dtype=float).T
    sim = fit_simulator(x, metric="P@10", systems=tuple(df.columns))
    data = prepare([sim], [0.1])
    n = int(row.n)
    assert n == int(paired_t_n(0.1, 2 * ols_residual_variance(df), alpha=0.05, beta=0.2))

    def draw(rng, m):
        return np.concatenate([rng.random((m, 1)), rng.standard_normal((m, 2 * n))], axis=1)

    block = blocked_draws(seed, CHECK_STREAM, (study_key("P@10"), n), 0, trials, draw)
    ordered = data.trial_pairs[0]
    pick = np.minimum((block[:, 0] * len(ordered)).astype(np.int64), len(ordered) - 1)
    base, pair = ordered[pick, 0], ordered[pick, 1]
    y, xs = sim.scores(pair, block[:, 1:n + 1], block[:, n + 1:], margin_a=base,
                       margin_b=base, theta_b=data.thetas[0][0, base])
    p = sps.ttest_rel(xs, y, axis=1).pvalue
    assert row.trials == trials and row.rejections == int(np.count_nonzero(p <= 0.05))
    assert row.realised_var_diff == pytest.approx(np.var(xs - y, axis=1, ddof=1).mean(),
                                                  rel=1e-9)
    lo, hi = sps.binomtest(int(row.rejections), trials).proportion_ci(0.95, "exact")
    assert (row.ci_lo, row.ci_hi) == pytest.approx((lo, hi))
    es = 0.1 / math.sqrt(row.planned_var_diff)
    assert row.planned_power == pytest.approx(
        TTestPower().power(effect_size=es, nobs=n, alpha=0.05, alternative="two-sided"))


@pytest.mark.slow
def test_check_planned_power_is_realised_on_adhoc8():
    """The plan from V_E delivers about the planned power on collections simulated from the
    fitted generator (adhoc8 AP and P@10): within 0.05 of 1 - beta, the band covering it."""
    data = {"AP": frame("adhoc8_ap"), "P@10": frame("adhoc8_p10")}
    t = check_table(data, min_diff=[0.05, 0.1], check_trials=2000)
    assert len(t) == 4 and (t.trials == 2000).all()
    assert (t.planned_power >= 0.8).all()
    assert ((t.realised_power - 0.8).abs() < 0.05).all()
    assert (t.realised_var_diff / t.planned_var_diff).between(0.8, 1.2).all()


def test_check_does_not_depend_on_shards():
    df = frame("adhoc8_ap").iloc[:, :20]
    kw = dict(metric="AP", min_diff=[0.08, 0.1], check_trials=700, seed=1)
    a = irsim.topic_set_size(df, **kw, shard_items=1, shard_replicates=250)
    b = irsim.topic_set_size(df, **kw, shard_items=4, shard_replicates=1000)
    assert_same_tables(a.tables, b.tables)


@pytest.mark.slow
def test_check_api_equals_cli():
    api = irsim.topic_set_size(frame("adhoc8_ap"), metric="AP", min_diff=[0.1],
                               check_trials=300, seed=3)
    cli = tables_of(["experiment=topic_set_size", "collection=matrix",
                     f"collection.path={URBANO}/adhoc8_ap.csv", "collection.metric=AP",
                     "experiment.min_diff=[0.1]", "experiment.check_trials=300", "seed=3"])
    assert sorted(cli) == ["topic_set_size", "topic_set_size_check"]
    assert_same_tables(api.tables, cli)


@pytest.mark.ray
def test_ray_engine_equals_local():
    df = frame("adhoc8_p10").iloc[:, :25]
    kw = dict(metric="P@10", min_diff=[0.1, 0.2], check_trials=500, seed=6)
    local = irsim.topic_set_size(df, **kw, shard_items=4, shard_replicates=1000)
    ray = irsim.topic_set_size(df, **kw, engine="ray", workers=2, shard_replicates=250)
    assert ray.manifest["engine"] == "ray"
    assert_same_tables(ray.tables, local.tables)


@pytest.mark.slow
def test_check_preset_runs():
    tables = tables_of(["experiment=sakai_topic_set_size_check", f"data_dir={SHARED_DATA}",
                        "experiment.check_trials=250", "experiment.min_diff=[0.1,0.2]"])
    check = tables["topic_set_size_check"].to_pandas()
    assert set(check.metric) == {"AP", "P@10"} and (check.trials == 250).all()
    assert set(check.beta) == {0.1, 0.2} and (check.alpha == 0.05).all()
    t = tables["topic_set_size"].to_pandas()
    assert set(t.design) == {"paired_t"}
    merged = check.merge(t, on=["metric", "alpha", "beta", "min_diff"])
    assert (merged.n_x == merged.n_y).all()
