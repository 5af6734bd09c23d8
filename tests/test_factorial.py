"""ANOVA tables of balanced designs and effect sizes (irsim.stats.factorial) against
statsmodels' anova_lm and scipy's noncentral F."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy import stats as sps

from irsim.errors import ConfigError, InputError
from irsim.stats.anova import anova_two_way
from irsim.stats.factorial import anova_table, effect_sizes, noncentrality_interval

smf = pytest.importorskip("statsmodels.formula.api")
sm_anova = pytest.importorskip("statsmodels.stats.anova")


def frame(x: np.ndarray, names: list[str]) -> pd.DataFrame:
    idx = np.indices(x.shape).reshape(x.ndim, -1)
    d = pd.DataFrame({n: idx[i] for i, n in enumerate(names)})
    d["y"] = x.ravel()
    return d


def simulated(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape) * 0.3
    for ax in range(len(shape)):  # main effects on every axis, some interactions
        sh = [1] * len(shape)
        sh[ax] = shape[ax]
        x = x + rng.normal(size=sh)
    return x + rng.normal(size=shape[:2] + (1,) * (len(shape) - 2)) * 0.4


# design -> (axis names, formula of the OLS, the anova_lm rows in the design's term order)
ORACLES = {
    "two_way": (["s", "t"], "y ~ C(s) + C(t)", ["C(s)", "C(t)", "Residual"]),
    "replicated": (["s", "t", "r"], "y ~ C(s) * C(t)",
                   ["C(s)", "C(t)", "C(s):C(t)", "Residual"]),
    "crossed": (["s", "t", "r"], "y ~ C(s) + C(t) + C(r) + C(s):C(t) + C(s):C(r) + C(t):C(r)",
                ["C(s)", "C(t)", "C(r)", "C(s):C(t)", "C(s):C(r)", "C(t):C(r)", "Residual"]),
    # topic(collection): patsy codes C(c):C(t) without C(t) as topics within collections
    "nested": (["s", "c", "t"], "y ~ C(s) * C(c) + C(c):C(t)",
               ["C(s)", "C(c)", "C(s):C(c)", "C(c):C(t)", "Residual"]),
}


def anova_lm(x: np.ndarray, design: str) -> pd.DataFrame:
    names, formula, rows = ORACLES[design]
    d = frame(x, names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = sm_anova.anova_lm(smf.ols(formula, d).fit(), typ=1)
    return out.loc[rows]


SHAPES = {"two_way": (5, 7), "replicated": (4, 6, 3), "crossed": (5, 6, 3),
          "nested": (4, 3, 5)}


@pytest.mark.parametrize("design", list(ORACLES))
def test_fixed_table_equals_anova_lm(design):
    x = simulated(SHAPES[design], seed=len(design))
    ours, ref = anova_table(x, design), anova_lm(x, design)
    assert ours.df.tolist() == ref["df"].astype(int).tolist()
    np.testing.assert_allclose(ours.ss, ref["sum_sq"], rtol=1e-10)
    np.testing.assert_allclose(ours.ms, ref["mean_sq"], rtol=1e-10)
    np.testing.assert_allclose(ours.f[:-1], ref["F"][:-1], rtol=1e-10)
    np.testing.assert_allclose(ours.pvalue[:-1], ref["PR(>F)"][:-1], rtol=1e-8, atol=1e-10)
    assert set(ours.error[:-1]) == {"residual"}


def test_batched_equals_one_by_one_and_two_way_is_anova_two_way():
    x = np.stack([simulated((4, 6, 3), seed=s) for s in range(3)])
    batch = anova_table(x, "crossed")
    for i in range(3):
        one = anova_table(x[i], "crossed")
        np.testing.assert_allclose(batch.f[i], one.f, rtol=1e-12)
    s = x[..., 0]
    t, r = anova_table(s, "two_way"), anova_two_way(s)
    np.testing.assert_allclose(t.f[..., 0], r.statistic, rtol=1e-12)
    np.testing.assert_allclose(t.pvalue[..., 1], r.pvalue_topics, rtol=1e-10)
    np.testing.assert_allclose(t.ms[..., 2], r.ms_error, rtol=1e-12)


def test_mixed_replicated_system_is_two_way_of_cell_means():
    x = simulated((5, 6, 3), seed=11)
    m = anova_table(x, "replicated", model="mixed")
    ref = anova_lm(x.mean(-1), "two_way")
    assert m.error[:3] == ("system:topic", "system:topic", "residual")
    np.testing.assert_allclose(m.f[0], ref.loc["C(s)", "F"], rtol=1e-10)
    np.testing.assert_allclose(m.pvalue[0], ref.loc["C(s)", "PR(>F)"], rtol=1e-8)
    # topic against system:topic as well (unrestricted model): F of the cell-mean table
    np.testing.assert_allclose(m.f[1], ref.loc["C(t)", "F"], rtol=1e-10)


def test_mixed_crossed_quasi_f_with_satterthwaite_df():
    x = simulated((5, 6, 4), seed=5)
    m = anova_table(x, "crossed", model="mixed")
    ms = anova_lm(x, "crossed")["mean_sq"].to_numpy()
    df = anova_lm(x, "crossed")["df"].to_numpy()
    den = ms[3] + ms[4] - ms[6]  # system:topic + system:replicate - residual
    dfd = den ** 2 / (ms[3] ** 2 / df[3] + ms[4] ** 2 / df[4] + ms[6] ** 2 / df[6])
    assert m.error[0] == "system:topic + system:replicate - residual"
    assert den > 0
    np.testing.assert_allclose(m.f[0], ms[0] / den, rtol=1e-10)
    np.testing.assert_allclose(m.df_error[0], dfd, rtol=1e-10)
    np.testing.assert_allclose(m.pvalue[0], sps.f.sf(ms[0] / den, df[0], dfd), rtol=1e-8)
    # nested: system against system:collection
    xn = simulated((4, 3, 5), seed=2)
    n, ref = anova_table(xn, "nested", model="mixed"), anova_lm(xn, "nested")
    np.testing.assert_allclose(n.f[0], ref["mean_sq"].iloc[0] / ref["mean_sq"].iloc[2],
                               rtol=1e-10)
    assert n.df_error[0] == 6


def test_effect_sizes_against_sums_of_squares_and_noncentral_f():
    x = simulated((5, 6, 3), seed=3)
    t, ref = anova_table(x, "replicated"), anova_lm(x, "replicated")
    e = effect_sizes(t, level=0.9)
    ss, df = ref["sum_sq"].to_numpy(), ref["df"].to_numpy()
    mse, n = ss[-1] / df[-1], x.size
    np.testing.assert_allclose(e.partial_eta2[:-1], ss[:-1] / (ss[:-1] + ss[-1]), rtol=1e-10)
    np.testing.assert_allclose(e.omega2[:-1], (ss[:-1] - df[:-1] * mse) / (ss.sum() + mse),
                               rtol=1e-10)
    np.testing.assert_allclose(e.partial_omega2[:-1],
                               (ss[:-1] - df[:-1] * mse) / (ss[:-1] + (n - df[:-1]) * mse),
                               rtol=1e-10)
    # interval of lambda by scipy's root finder on the noncentral F
    f, d1, d2 = ref["F"].iloc[0], df[0], df[-1]
    lo = optimize.brentq(lambda L: sps.ncf.cdf(f, d1, d2, L) - 0.95, 0, 1e4, xtol=1e-12)
    hi = optimize.brentq(lambda L: sps.ncf.cdf(f, d1, d2, L) - 0.05, 0, 1e4, xtol=1e-12)
    np.testing.assert_allclose(e.partial_eta2_ci[0][0], lo / (lo + d1 + d2 + 1), rtol=1e-8)
    np.testing.assert_allclose(e.partial_eta2_ci[1][0], hi / (hi + d1 + d2 + 1), rtol=1e-8)
    np.testing.assert_allclose(e.partial_omega2_ci[1][0], hi / (hi + n), rtol=1e-8)


def test_noncentrality_interval_at_zero_and_batched():
    lo, hi = noncentrality_interval([0.2, 30.0], [3, 3], [40, 40])
    assert lo[0] == 0.0 and hi[0] > 0  # F below its 97.5% central quantile: lower bound 0
    assert sps.f.cdf(0.2, 3, 40) < 0.975
    for i, f in enumerate([0.2, 30.0]):
        if lo[i] > 0:
            np.testing.assert_allclose(sps.ncf.cdf(f, 3, 40, lo[i]), 0.975, rtol=1e-9)
        np.testing.assert_allclose(sps.ncf.cdf(f, 3, 40, hi[i]), 0.025, rtol=1e-8)


def test_bad_input_one_line():
    x = simulated((3, 4, 2), seed=0)
    y = x.copy()
    y[1, 2, 0] = np.nan
    with pytest.raises(InputError, match=r"unbalanced design: 1 missing.*\(1, 2, 0\)"):
        anova_table(y, "replicated")
    with pytest.raises(InputError, match="factor 'replicate' has 1 level"):
        anova_table(x[..., :1], "crossed")
    with pytest.raises(InputError, match="factor 'system' has 1 level"):
        anova_table(x[:1, :, 0], "two_way")
    same = np.repeat(x[..., :1], 3, axis=-1)
    with pytest.raises(InputError, match="3 replicates are identical.*zero residual"):
        anova_table(same, "replicated")
    with pytest.raises(InputError, match=r"identical \(problem \[1\]\)"):
        anova_table(np.stack([x, np.repeat(x[..., :1], 2, -1)]), "crossed")


def test_design_tukey_fixed_against_studentized_range():
    from irsim.stats.factorial import design_tukey

    x = simulated((4, 5, 3), seed=7)
    r = design_tukey(x, "replicated", level=0.9)
    ref = anova_lm(x, "replicated")
    mse, dfe = ref["mean_sq"].iloc[-1], ref["df"].iloc[-1]
    means = x.mean(axis=(1, 2))
    i, j = np.triu_indices(4, 1)
    se = np.sqrt(mse / 15)
    q = np.abs(means[i] - means[j]) / se
    np.testing.assert_allclose(r.statistic, means[i] - means[j], rtol=1e-12)
    np.testing.assert_allclose(r.pvalue, sps.studentized_range.sf(q, 4, dfe), rtol=1e-9)
    crit = sps.studentized_range.ppf(0.9, 4, dfe)
    np.testing.assert_allclose(r.high - r.low, 2 * crit * se, rtol=1e-10)
    assert r.significant() == int(((r.low > 0) | (r.high < 0)).sum())
    assert r.significant() == int((q >= crit).sum())


def test_design_tukey_mixed_is_tukey_of_cell_means():
    from irsim.stats.anova import tukey_hsd
    from irsim.stats.factorial import design_tukey

    x = simulated((4, 6, 3), seed=8)
    r = design_tukey(x, "replicated", model="mixed")
    np.testing.assert_allclose(r.pvalue, tukey_hsd(x.mean(-1)).pvalue, rtol=1e-9)
    assert r.df_error == 15


def test_randomised_design_tukey_exact_and_chunking():
    import itertools

    from irsim.stats.factorial import randomised_design_tukey

    x = simulated((2, 4, 2), seed=9)
    d = (x[0] - x[1]).ravel()  # 8 (topic, replicate) blocks: flip each sign
    flips = np.array(list(itertools.product([-1, 1], repeat=8))) @ d
    exact = float(np.mean(np.abs(flips) >= abs(d.sum()) - 1e-12))
    r = randomised_design_tukey(x, "crossed", blocks="topic_replicate", B=4000, seed=2)
    assert abs(r.pvalue[0] - exact) < 3 * np.sqrt(exact * (1 - exact) / 4000)
    small = randomised_design_tukey(x, "crossed", blocks="topic_replicate", B=4000, seed=2,
                                    memory_budget=512)
    assert (small.count == r.count).all()
    with pytest.raises(ConfigError, match="design=.crossed."):
        randomised_design_tukey(x, "replicated", blocks="topic_replicate")


def test_design_tukey_without_pvalues_counts_the_same_pairs():
    from irsim.stats.factorial import design_tukey

    x = simulated((6, 5, 3), seed=12)
    full = design_tukey(x, "crossed")
    fast = design_tukey(x, "crossed", pvalues=False)
    assert np.isnan(fast.pvalue).all()
    np.testing.assert_array_equal(fast.low, full.low)
    assert fast.significant() == full.significant() == int((full.pvalue <= 0.05).sum())


def test_partial_omega2_interval_covers_the_true_value():
    """Fixed effects: the population partial omega squared of the system term is
    f2 / (1 + f2), f2 = mean(alpha^2) / sigma^2; 95% intervals cover it about 95% of the
    time (binomial tolerance over 600 simulated tables)."""
    rng = np.random.default_rng(4)
    alpha = np.array([-0.3, 0.0, 0.1, 0.2])
    topic = rng.normal(size=(1, 8, 1))
    x = alpha[:, None, None] + topic + rng.normal(size=(600, 4, 8, 3))
    e = effect_sizes(anova_table(x, "replicated"))
    f2 = (alpha ** 2).mean()
    true = f2 / (1 + f2)
    lo, hi = e.partial_omega2_ci[0][:, 0], e.partial_omega2_ci[1][:, 0]
    cover = float(np.mean((lo <= true) & (true <= hi)))
    assert abs(cover - 0.95) < 3 * np.sqrt(0.95 * 0.05 / 600), cover


def test_tukey_effect_is_sakai_es_e():
    from irsim.stats.factorial import design_tukey

    s = simulated((4, 9), seed=13)
    r = design_tukey(s, "two_way", pvalues=False)
    ref = anova_lm(s, "two_way")
    means = s.mean(1)
    i, j = np.triu_indices(4, 1)
    np.testing.assert_allclose(r.effect, (means[i] - means[j]) / np.sqrt(ref["mean_sq"].iloc[-1]),
                               rtol=1e-10)
