"""Reliability by generalizability theory: variance components, E(rho^2), Phi, D-study and the
topics needed against a two-way ANOVA computed independently (statsmodels OLS + anova_lm) on
real TREC matrices; bootstrap and Feldt intervals; both doors, presets and bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA
from golden.record import tables_of
from scipy import stats as sps
from test_api import assert_same_tables

import irsim
from irsim.errors import ConfigError
from irsim.experiments.reliability import BOOT_STREAM
from irsim.sampling.topics import bootstrap_indices
from irsim.stats.gtheory import e_rho2, feldt_interval, g_study, phi, topics_for

URBANO = SHARED_DATA / "urbano"


def frame(name: str) -> pd.DataFrame:
    return pd.read_csv(URBANO / f"{name}.csv")


def anova_components(df: pd.DataFrame) -> dict[str, float]:
    """Variance components from statsmodels' two-way ANOVA table of score ~ C(system) +
    C(topic) (mean squares = sum_sq / df), by the expected mean squares of the crossed random
    design."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    x = df.to_numpy(dtype=float)  # (topics, systems)
    n_t, n_s = x.shape
    long = pd.DataFrame({"score": x.ravel(),
                         "topic": np.repeat(np.arange(n_t), n_s).astype(str),
                         "system": np.tile(np.arange(n_s), n_t).astype(str)})
    table = sm.stats.anova_lm(smf.ols("score ~ C(system) + C(topic)", data=long).fit())
    ms = table["sum_sq"] / table["df"]
    ms_s, ms_t, ms_e = ms["C(system)"], ms["C(topic)"], ms["Residual"]
    return {"s": max((ms_s - ms_e) / n_t, 0.0), "t": max((ms_t - ms_e) / n_s, 0.0),
            "e": ms_e, "n_t": n_t, "n_s": n_s, "F": ms_s / ms_e}


def drop_bottom_frame(df: pd.DataFrame, share: float, rule: str = "quantile") -> pd.DataFrame:
    """Runs of `df` left by the paper's rule (Urbano's code: a run goes when its mean is below
    R's type-7 quantile of the means: h = (k - 1) p, the sorted means interpolated at h) or,
    with rule "count", without the floor(share * runs) lowest means (ties: earlier run
    first)."""
    means = df.mean(axis=0).to_numpy()
    if rule == "count":
        k = int(math.floor(share * df.shape[1] + 1e-9))
        order = sorted(range(df.shape[1]), key=lambda i: (means[i], i))
        return df.iloc[:, sorted(order[k:])]
    v = sorted(means.tolist())
    h = (len(v) - 1) * share
    lo = int(math.floor(h))
    q = v[lo] if lo + 1 >= len(v) else v[lo] + (h - lo) * (v[lo + 1] - v[lo])
    return df.iloc[:, [i for i in range(len(means)) if means[i] >= q]]


@pytest.mark.parametrize("name, metric, drop, rule", [("adhoc8_ap", "AP", 0.0, "quantile"),
                                                      ("adhoc8_p10", "P@10", 0.25, "quantile"),
                                                      ("adhoc8_p10", "P@10", 0.25, "count"),
                                                      ("web2012_ndcg20", "nDCG@20", 0.1,
                                                       "quantile"),
                                                      ("web2012_ndcg20", "nDCG@20", 0.1,
                                                       "count")])
@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_g_and_d_study_equal_a_direct_two_way_anova(name, metric, drop, rule):
    df = frame(name)
    ref = anova_components(drop_bottom_frame(df, drop, rule))
    res = irsim.reliability(df, metric=metric, drop_bottom=drop, drop_rule=rule, B=50,
                            max_topics=300)
    rel = res.to_pandas("reliability").iloc[0]
    assert rel.systems == ref["n_s"] and rel.topics == ref["n_t"]
    assert rel.dropped == df.shape[1] - ref["n_s"]
    for col, key in [("var_system", "s"), ("var_topic", "t"), ("var_residual", "e")]:
        assert rel[col] == pytest.approx(ref[key], rel=1e-8)
    total = ref["s"] + ref["t"] + ref["e"]
    assert rel.pct_system == pytest.approx(100 * ref["s"] / total, rel=1e-8)
    assert rel.pct_topic + rel.pct_system + rel.pct_residual == pytest.approx(100)
    n_t = ref["n_t"]
    assert rel.e_rho2 == pytest.approx(ref["s"] / (ref["s"] + ref["e"] / n_t), rel=1e-8)
    assert rel.phi == pytest.approx(ref["s"] / (ref["s"] + (ref["t"] + ref["e"]) / n_t),
                                    rel=1e-8)
    # with topics = n_t, E(rho^2) is 1 - 1/F (ICC(C,k))
    assert rel.e_rho2 == pytest.approx(1 - 1 / ref["F"], rel=1e-8)
    d = res.to_pandas("d_study")
    assert d.topics.tolist() == list(range(1, 301))
    for n in (1, 10, 50, 300):
        row = d[d.topics == n].iloc[0]
        assert row.e_rho2 == pytest.approx(ref["s"] / (ref["s"] + ref["e"] / n), rel=1e-8)
        assert row.phi == pytest.approx(ref["s"] / (ref["s"] + (ref["t"] + ref["e"]) / n),
                                        rel=1e-8)
    need = res.to_pandas("reliability_topics")
    for row in need.itertuples():
        err = ref["e"] if row.indicator == "e_rho2" else ref["t"] + ref["e"]
        want = next(n for n in range(1, 100_000)
                    if ref["s"] / (ref["s"] + err / n) >= row.target)
        assert row.topics == want
        assert row.topics_lo <= row.topics_hi


def test_bootstrap_intervals_recomputed_directly():
    df = frame("adhoc8_rr").iloc[:, :25]
    B, seed = 60, 3
    rel = irsim.reliability(df, metric="RR", B=B, seed=seed, ci_level=0.9).to_pandas().iloc[0]
    x = df.to_numpy(dtype=float).T
    idx = bootstrap_indices(seed, BOOT_STREAM, x.shape[1], 0, B)
    r_star, p_star = [], []
    for b in range(B):  # one resample at a time, components written out
        y = x[:, idx[b]]
        k, n = y.shape
        gm = y.mean()
        ms_s = n * ((y.mean(1) - gm) ** 2).sum() / (k - 1)
        ms_t = k * ((y.mean(0) - gm) ** 2).sum() / (n - 1)
        e = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + gm
        ms_e = (e ** 2).sum() / ((k - 1) * (n - 1))
        vs, vt = max((ms_s - ms_e) / n, 0), max((ms_t - ms_e) / k, 0)
        r_star.append(vs / (vs + ms_e / n))
        p_star.append(vs / (vs + (vt + ms_e) / n))
    assert rel.e_rho2_lo == pytest.approx(np.quantile(r_star, 0.05), rel=1e-9)
    assert rel.e_rho2_hi == pytest.approx(np.quantile(r_star, 0.95), rel=1e-9)
    assert rel.phi_lo == pytest.approx(np.quantile(p_star, 0.05), rel=1e-9)
    assert rel.phi_hi == pytest.approx(np.quantile(p_star, 0.95), rel=1e-9)
    assert rel.B == B


def test_feldt_interval_covers_at_its_level_by_simulation():
    # normal random-effects model with known components: 10 systems x 20 topics
    rng = np.random.default_rng(11)
    sims, k, n = 4000, 10, 20
    vs, vt, ve = 0.004, 0.03, 0.02
    x = (rng.normal(0, math.sqrt(vs), (sims, k, 1)) + rng.normal(0, math.sqrt(vt), (sims, 1, n))
         + rng.normal(0, math.sqrt(ve), (sims, k, n)))
    truth = vs / (vs + ve / n)
    lo, hi = feldt_interval(g_study(x), level=0.9)
    cover = np.mean((lo <= truth) & (truth <= hi))
    assert abs(cover - 0.9) < 3 * math.sqrt(0.9 * 0.1 / sims)
    # the limits are those of the F distribution of (MS_s / MS_e) / (1 + n vs / ve)
    g = g_study(x[0])
    f = g.ms_system / g.ms_residual
    assert lo[0] == pytest.approx(1 - sps.f.ppf(0.95, k - 1, (k - 1) * (n - 1)) / f)


def test_negative_components_are_clipped_and_reported():
    rng = np.random.default_rng(0)
    x = rng.normal(0.5, 0.1, (30, 6))  # topics x systems, no system effect at all
    x[:, 1:] = x[:, [0]] + rng.normal(0, 0.05, (30, 5))
    x -= x.mean(axis=0) - x.mean()  # identical system means: MS_s = 0 < MS_e
    g = g_study(x.T)
    assert bool(g.negative_system) and float(g.var_system) == 0.0
    rel = irsim.reliability(pd.DataFrame(x), metric="m", B=20).to_pandas().iloc[0]
    assert rel.negative == "system" and rel.e_rho2 == 0.0
    need = irsim.reliability(pd.DataFrame(x), metric="m", B=20).to_pandas("reliability_topics")
    assert need.topics.isna().all()
    assert topics_for(0.8, 0.0, 0.01) == -1


def test_gtheory_functions_broadcast():
    x = frame("adhoc8_ap").to_numpy().T
    g = g_study(np.stack([x, x[:, ::-1]]))  # topic order does not matter
    assert g.var_system[0] == pytest.approx(g.var_system[1], rel=1e-12)
    assert e_rho2(g_study(x), [10, 20]).shape == (2,)
    assert phi(g_study(x), 50) == pytest.approx(float(phi(g_study(x))))


def test_shards_do_not_change_tables():
    data = {"AP": frame("adhoc8_ap"), "P@10": frame("adhoc8_p10"), "RR": frame("adhoc8_rr")}
    one = irsim.reliability(data, B=300, seed=2, shard_items=1, drop_bottom=0.1)
    three = irsim.reliability(data, B=300, seed=2, shard_items=3, drop_bottom=0.1)
    assert_same_tables(one.tables, three.tables)


def test_api_equals_cli():
    api = irsim.reliability({"AP": frame("adhoc8_ap"), "P@10": frame("adhoc8_p10")}, B=200,
                            seed=7, drop_bottom=0.25, max_topics=80, targets=[0.9])
    cli = tables_of(["experiment=reliability", "collection=matrix",
                     f"collection.paths={{AP: {URBANO}/adhoc8_ap.csv, "
                     f"P@10: {URBANO}/adhoc8_p10.csv}}", "experiment.B=200", "seed=7",
                     "experiment.drop_bottom=0.25", "experiment.max_topics=80",
                     "experiment.targets=[0.9]"])
    assert_same_tables(api.tables, cli)


@pytest.mark.parametrize("preset, collection, runs", [("urbano_reliability", "adhoc8", 129),
                                                      ("urbano_reliability_web2012", "web2012",
                                                       48)])
@pytest.mark.slow
def test_presets_run(preset, collection, runs):
    tables = tables_of([f"experiment={preset}", f"data_dir={SHARED_DATA}"])
    rel = tables["reliability"].to_pandas()
    ap = rel[rel.metric == "AP"].iloc[0]
    ref = anova_components(drop_bottom_frame(frame(f"{collection}_ap"), 0.25))  # the paper's
    assert ap.dropped == runs - ref["n_s"] and ap.systems == ref["n_s"]
    assert ap.var_system == pytest.approx(ref["s"], rel=1e-8)
    assert tables["d_study"].num_rows == 200 * len(rel)
    check = tables["reliability_check"].to_pandas()
    assert set(check.topics) == {10, 25, 50, 100} and (check.trials == 1000).all()


@pytest.mark.parametrize("kwargs, message", [
    ({"drop_bottom": 1.0}, "^drop_bottom must be in"),
    ({"drop_rule": "floor"}, "^unknown value of drop_rule 'floor'; valid: count, quantile$"),
    ({"targets": [1.2]}, r"^targets must be inside \(0, 1\), got 1.2$"),
    ({"B": 1}, "^B must be an integer >= 2, got 1$"),
    ({"ci_level": 95}, "^ci_level must be inside"),
    ({"max_topics": 0}, "^max_topics must be an integer >= 1"),
    ({"check_trials": -1}, "^check_trials must be an integer >= 0"),
    ({"check_trials": 10, "check_topics": [1]}, "^check_topics must be an integer >= 2, got 1$"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        irsim.reliability(frame("adhoc8_ap"), metric="AP", **kwargs)


# ----------------------------------------------------------------------- simulation check
@pytest.mark.slow
def test_check_recomputed_trial_by_trial():
    """The check's sums recomputed one simulated collection at a time (ANOVA written out,
    scipy's kendalltau and pearsonr) from the study's stream."""
    from irsim.experiments.reliability import CHECK_STREAM, true_means
    from irsim.rng import blocked_draws, study_key

    df = frame("adhoc8_ap").iloc[:, :12]
    trials, n, seed = 250, 15, 5
    res = irsim.reliability(df, metric="AP", B=20, seed=seed, check_trials=trials,
                            check_topics=[n])
    row = res.to_pandas("reliability_check").iloc[0]
    ref = anova_components(df)
    x = df.to_numpy(dtype=float).T
    mu = true_means(x, ref["s"])
    assert np.var(mu, ddof=1) == pytest.approx(ref["s"], rel=1e-10)
    k = x.shape[0]
    z = blocked_draws(seed, CHECK_STREAM, (study_key("AP"), n), 0, trials,
                      lambda rng, m: rng.standard_normal((m, (k + 1) * n)))
    est_r, corr2, taus = [], [], []
    for t in range(trials):
        sim = mu[:, None] + math.sqrt(ref["t"]) * z[t, :n][None, :] \
            + math.sqrt(ref["e"]) * z[t, n:].reshape(k, n)
        gm = sim.mean()
        ms_s = n * ((sim.mean(1) - gm) ** 2).sum() / (k - 1)
        e = sim - sim.mean(1, keepdims=True) - sim.mean(0, keepdims=True) + gm
        ms_e = (e ** 2).sum() / ((k - 1) * (n - 1))
        vs = max((ms_s - ms_e) / n, 0.0)
        est_r.append(vs / (vs + ms_e / n))
        corr2.append(sps.pearsonr(sim.mean(1), mu).statistic ** 2)
        taus.append(sps.kendalltau(sim.mean(1), mu).statistic)
    assert row.trials == trials
    assert row.e_rho2_mean == pytest.approx(np.mean(est_r), rel=1e-9)
    assert row.e_rho2_sd == pytest.approx(np.std(est_r, ddof=1), rel=1e-6)
    assert row.corr2_mean == pytest.approx(np.mean(corr2), rel=1e-9)
    assert row.tau_mean == pytest.approx(np.mean(taus), rel=1e-9)
    assert row.tau_se == pytest.approx(np.std(taus, ddof=1) / math.sqrt(trials), rel=1e-6)
    assert row.corr2_se == pytest.approx(np.std(corr2, ddof=1) / math.sqrt(trials), rel=1e-6)
    assert row.true_e_rho2 == pytest.approx(ref["s"] / (ref["s"] + ref["e"] / n), rel=1e-9)


@pytest.mark.slow
def test_check_e_rho2_predicts_the_realised_agreement_on_adhoc8():
    """Under the fitted model, E(rho^2) is the squared correlation between the simulated and
    the true system means, and its estimate is nearly unbiased from 25 topics on."""
    data = {"AP": frame("adhoc8_ap"), "P@10": frame("adhoc8_p10")}
    t = irsim.reliability(data, B=20, drop_bottom=0.25, check_trials=1000,
                          check_topics=[10, 25, 100]).to_pandas("reliability_check")
    assert len(t) == 6 and (t.trials == 1000).all()
    assert ((t.corr2_mean - t.true_e_rho2).abs() < 0.01).all()
    assert (t.corr2_se < 0.01).all() and (t.tau_se < 0.01).all()
    big = t[t.topics >= 25]
    assert (big.e_rho2_bias.abs() < 3 * big.e_rho2_sd / math.sqrt(1000) + 0.002).all()
    for _, rows in t.groupby("metric"):  # the ordering gets closer to the truth with topics
        assert rows.sort_values("topics").tau_mean.is_monotonic_increasing


def test_check_does_not_depend_on_shards():
    df = frame("adhoc8_p10").iloc[:, :30]
    kw = dict(metric="P@10", B=30, check_trials=600, check_topics=[10, 20], seed=2)
    a = irsim.reliability(df, **kw, shard_items=1, shard_replicates=250)
    b = irsim.reliability(df, **kw, shard_items=3, shard_replicates=1000)
    assert_same_tables(a.tables, b.tables)


def test_check_api_equals_cli():
    api = irsim.reliability(frame("adhoc8_ap"), metric="AP", B=50, check_trials=300,
                            check_topics=[20], seed=1)
    cli = tables_of(["experiment=reliability", "collection=matrix",
                     f"collection.path={URBANO}/adhoc8_ap.csv", "collection.metric=AP",
                     "experiment.B=50", "experiment.check_trials=300",
                     "experiment.check_topics=[20]", "seed=1"])
    assert "reliability_check" in cli
    assert_same_tables(api.tables, cli)


@pytest.mark.ray
def test_ray_engine_equals_local():
    data = {"AP": frame("adhoc8_ap").iloc[:, :30], "RR": frame("adhoc8_rr").iloc[:, :30]}
    kw = dict(B=200, drop_bottom=0.1, check_trials=500, check_topics=[10, 30], seed=4)
    local = irsim.reliability(data, **kw, shard_items=3, shard_replicates=1000)
    ray = irsim.reliability(data, **kw, engine="ray", workers=2, shard_replicates=250)
    assert ray.manifest["engine"] == "ray"
    assert_same_tables(ray.tables, local.tables)
