"""Type S and Type M errors (issue 28): :mod:`irsim.stats.typems` and table ``type_m_s``.

- ``retrodesign`` reproduces Gelman and Carlin's (2014) published power and Type S rates
  (their two examples), its t-test power and Type S equal scipy's noncentral t, and its
  exaggeration ratios equal Monte Carlo references (10^6 draws; tolerance 4 standard errors).
- The exact bootstrap interval of the median equals the percentile interval of a brute-force
  bootstrap cdf (binomial tail by scipy.stats.binom).
- On normal differences (design=shift, normal margins) the t test's power, Type S rate and
  exaggeration ratio in ``type_m_s`` equal the closed form within Monte Carlo error.
- A per-trial Python loop over the simulated trials (public test functions, one trial at a
  time) gives table ``type_m_s`` exactly.
- The table does not depend on shard sizes (both designs) or on the engine (Ray), and under
  design=urbano2019 it agrees with the ``type_2`` / ``type_3`` counters.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from irsim.engine import run_study
from irsim.experiments.test_errors import TestErrors, UrbanoData, UrbanoStudy
from irsim.rng import REPLICATE_BLOCK
from irsim.simulate.pairs import TopicSimulator, prepare
from irsim.stats import paired_t, retrodesign, sign_test, wilcoxon
from irsim.stats.typems import TYPE_M_POINT, median_bootstrap_interval, summarise

#: Units per 1.0 of the recorded estimates (the oracle rounds ``d * DIFF_SCALE`` itself).
DIFF_SCALE = TYPE_M_POINT.scale

# ------------------------------------------------------------------------- closed form
@pytest.mark.parametrize(("delta", "se", "power", "type_s"), [
    (2.0, 8.1, 0.06, 0.24),     # Durante et al.: "power 0.06, Type S 0.24"
    (0.1, 3.28, 0.05, 0.46),    # Kanazawa, beauty and sex ratio: "0.05, 0.46"
])
def test_retrodesign_gives_gelman_and_carlins_numbers(delta, se, power, type_s):
    r = retrodesign(delta, se)
    assert round(float(r.power), 2) == power
    assert round(float(r.type_s), 2) == type_s
    # closed form of the normal case (METHODS.md section 13)
    z = sps.norm.ppf(0.975)
    lam = delta / se
    p = sps.norm.cdf(-z - lam) + sps.norm.sf(z - lam)
    assert math.isclose(float(r.power), p, rel_tol=1e-12)
    assert math.isclose(float(r.type_s), sps.norm.cdf(-z - lam) / p, rel_tol=1e-12)
    assert np.array_equal(retrodesign(-delta, se).exaggeration, r.exaggeration)


def test_retrodesign_exaggeration_equals_monte_carlo():
    """10^6 normal estimates (paper's example, se = 8.1, delta = 2): the mean of |d| / delta
    over the significant ones within 4 Monte Carlo standard errors of the closed form."""
    rng = np.random.default_rng(20140)
    for delta, se in ((2.0, 8.1), (1.0, 0.5)):
        d = delta + se * rng.standard_normal(10**6)
        sig = np.abs(d) / se > sps.norm.ppf(0.975)
        ratio = np.abs(d[sig]) / delta
        r = retrodesign(delta, se)
        sem = ratio.std() / math.sqrt(sig.sum())
        assert abs(ratio.mean() - float(r.exaggeration)) < 4 * sem
        assert abs(sig.mean() - float(r.power)) < 4 * math.sqrt(r.power * (1 - r.power) / 1e6)


def test_retrodesign_t_test_equals_noncentral_t_and_monte_carlo():
    n = np.array([5, 10, 25, 50])
    lam = np.array([0.5, 1.0, 2.0, 3.0])
    r = retrodesign(lam[None, :], 1.0, 0.05, df=(n - 1)[:, None])
    c = sps.t.ppf(0.975, n - 1)[:, None]
    low = sps.nct.cdf(-c, (n - 1)[:, None], lam[None, :])
    power = sps.nct.sf(c, (n - 1)[:, None], lam[None, :]) + low
    assert np.allclose(r.power, power, rtol=1e-9, atol=0)
    assert np.allclose(r.type_s, low / power, rtol=1e-6, atol=0)
    # exaggeration of the t test: d ~ N(delta, se^2), s^2 ~ se^2 chi2(df) / df, 10^6 draws
    rng = np.random.default_rng(7)
    for k, df in ((5, 9), (25, 24)):
        delta, se = 0.02, 0.1 / math.sqrt(k)
        d = delta + se * rng.standard_normal(10**6)
        s = se * np.sqrt(rng.chisquare(df, 10**6) / df)
        sig = np.abs(d) / s > sps.t.ppf(0.975, df)
        ratio = np.abs(d[sig]) / delta
        rr = retrodesign(delta, se, 0.05, df=df)
        assert abs(ratio.mean() - float(rr.exaggeration)) < 4 * ratio.std() / math.sqrt(sig.sum())
        assert abs(np.mean(d[sig] < 0) - float(rr.type_s)) < 4 * math.sqrt(
            rr.type_s * (1 - rr.type_s) / sig.sum())


def test_median_bootstrap_interval_is_the_bootstrap_percentile_interval():
    rng = np.random.default_rng(3)
    for m in (1, 2, 7, 40, 301):
        values = np.sort(np.round(rng.exponential(size=m), 1))  # with ties
        k = (m + 1) // 2
        # P*(lower median <= x) = P(at least k of m resampled values <= x)
        cdf = sps.binom.sf(k - 1, m, np.searchsorted(values, values, side="right") / m)
        for q, got in zip((0.025, 0.975), median_bootstrap_interval(values), strict=True):
            assert got == values[np.argmax(cdf >= q - 1e-12)]


def test_summarise_by_hand():
    q = np.array([-2, 3, 5, 1, 4]) * 2**30  # d = -0.5, 0.75, 1.25, 0.25, 1.0
    s = summarise(q, np.array([0, 1, 0, 2, 1]), alphas=2, delta=-0.5)
    assert s.significant.tolist() == [2, 4]
    assert s.wrong_sign.tolist() == [1, 3]  # delta < 0: positive estimates are wrong
    assert s.mean.tolist() == [1.75, 1.75]
    assert s.median.tolist() == [1.0, 1.5]
    z = sps.norm.ppf(0.975)
    sd = statistics.pstdev([1.0, 1.5, 2.5, 2.0])
    assert math.isclose(s.mean_hi[1], 1.75 + z * sd / 2, rel_tol=1e-14)


# ---------------------------------------------------------------------- the simulation
def _frame(table) -> pd.DataFrame:
    return table.to_pandas()


@pytest.mark.slow
def test_t_test_type_s_and_m_equal_the_closed_form_on_normal_differences():
    """Normal margins (sd 0.1, latent correlation 0.5): per-topic differences are normal
    with sd 0.1 (the proportional-odds shift of the experimental margin changes it by at
    most 0.4%, measured on 4 x 10^5 draws: the closed form is taken over sd in [0.0995,
    0.1005]). Tolerance: 4 Monte Carlo standard errors (binomial for power and Type S, the
    bootstrap standard error for the exaggeration ratio) beyond that band."""
    sim = TopicSimulator.normal(means=[0.5, 0.5], sds=[0.1, 0.1], rho=[0.5])
    deltas = (0.0, 0.01, 0.02, 0.04)
    study = TestErrors.of(sizes=(10, 40), deltas=deltas, alpha=(0.05,), tests=("t",),
                          trials=20000, seed=11)
    tab = _frame(run_study(study, prepare([sim], deltas))[0]["type_m_s"])
    rows = tab[tab.delta > 0]
    assert len(rows) == 6
    for _, row in rows.iterrows():
        band = [retrodesign(row.delta, sd / math.sqrt(row.n), 0.05, df=row.n - 1)
                for sd in (0.0995, 0.1005)]
        lo = {k: min(float(getattr(b, k)) for b in band) for k in ("power", "type_s",
                                                                   "exaggeration")}
        hi = {k: max(float(getattr(b, k)) for b in band) for k in lo}
        m = row.significant
        se_power = math.sqrt(hi["power"] * (1 - lo["power"]) / row.trials)
        assert lo["power"] - 4 * se_power <= row.power <= hi["power"] + 4 * se_power
        se_s = math.sqrt(max(hi["type_s"], 1 / m) / m)
        assert lo["type_s"] - 4 * se_s <= row.type_s <= hi["type_s"] + 4 * se_s
        se_m = (row.exaggeration_mean_hi - row.exaggeration_mean_lo) / (2 * 1.959964)
        assert (lo["exaggeration"] - 4 * se_m <= row.exaggeration_mean
                <= hi["exaggeration"] + 4 * se_m), row
    null = tab[tab.delta == 0]
    assert null.type_s.isna().all() and null.exaggeration_mean.isna().all()


SMALL = dict(sizes=(8, 15), deltas=(0.0, 0.02, -0.05), alpha=(0.05, 0.01, 0.2),
             tests=("t", "wilcoxon", "sign"), alternatives=("two-sided", "greater"),
             trials=300, seed=5, sign_threshold=0.01)


@pytest.fixture(scope="module")
def normal_data():
    sim = TopicSimulator.normal(means=[0.45, 0.5, 0.55], sds=[0.1, 0.12, 0.08],
                                rho=[0.3, 0.6, 0.5])
    return prepare([sim], SMALL["deltas"])


@pytest.fixture(scope="module")
def small_table(normal_data):
    tables, info = run_study(TestErrors.of(**SMALL), normal_data)
    assert info["shards"] == 1
    return tables


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_loop_reference_equals_the_table(normal_data, small_table):
    study = TestErrors.of(**SMALL)
    sim = normal_data.simulators[0]
    tab = _frame(small_table["type_m_s"])
    z = sps.norm.ppf(0.975)
    checked = 0
    for n in study.config.sizes:
        # the study's trials, regenerated block by block, then tested one at a time
        trials = []
        for a in range(0, study.config.trials, REPLICATE_BLOCK):
            b = min(a + REPLICATE_BLOCK, study.config.trials)
            trials.append(study.draws(normal_data.generators[0][0], sim.metric, n, a, b))
        for di, delta in enumerate(study.config.deltas):
            per_trial = []  # (d, {(test, alternative): p})
            for draws in trials:
                trial = normal_data.generators[0][di].scores(draws, n)
                y, x = trial[:, 0], trial[:, 1]
                for i in range(len(x)):
                    p = {}
                    for alt in study.config.alternatives:
                        p["t", alt] = float(paired_t(x[i], y[i], alternative=alt).pvalue)
                        p["wilcoxon", alt] = float(wilcoxon(x[i], y[i], alternative=alt)
                                                   .pvalue)
                        p["sign", alt] = float(sign_test(x[i], y[i], alternative=alt,
                                                         threshold=0.01).pvalue)
                    per_trial.append((float(np.mean(x[i] - y[i])), p))
            assert len(per_trial) == study.config.trials
            for test in study.config.tests:
                for alt in study.config.alternatives:
                    for alpha in study.config.alpha:
                        row = tab[(tab.n == n) & (tab.delta == delta) & (tab.test == test)
                                  & (tab.alternative == alt) & (tab.alpha == alpha)]
                        assert len(row) == 1
                        row = row.iloc[0]
                        sig = [d for d, p in per_trial if p[test, alt] <= alpha]
                        assert row.trials == study.config.trials
                        assert row.significant == len(sig)
                        if delta == 0:
                            assert pd.isna(row.wrong_sign)
                            continue
                        q = [round(d * DIFF_SCALE) for d in sig]  # the recorded fixed point
                        wrong = sum(1 for v in q if v * math.copysign(1, delta) < 0)
                        assert row.wrong_sign == wrong
                        ratios = sorted(abs(v) / DIFF_SCALE / abs(delta) for v in q)
                        m = len(ratios)
                        allq = [round(d * DIFF_SCALE) for d, _ in per_trial]
                        assert math.isclose(row.abs_ratio_mean, sum(abs(v) for v in allq)
                                            / len(allq) / DIFF_SCALE / abs(delta),
                                            rel_tol=1e-15)
                        if m == 0:
                            assert math.isnan(row.exaggeration_mean)
                            continue
                        mean = sum(abs(v) for v in q) / m / DIFF_SCALE / abs(delta)
                        assert math.isclose(row.exaggeration_mean, mean, rel_tol=1e-15)
                        assert row.exaggeration_median == ratios[(m + 1) // 2 - 1]
                        half = z * statistics.pstdev(ratios) / math.sqrt(m)
                        assert math.isclose(row.exaggeration_mean_lo, mean - half,
                                            rel_tol=1e-12)
                        assert math.isclose(row.exaggeration_mean_hi, mean + half,
                                            rel_tol=1e-12)
                        lo, hi = median_bootstrap_interval(np.asarray(ratios))
                        assert (row.exaggeration_median_lo, row.exaggeration_median_hi) == (
                            lo, hi)
                        k = row.significant
                        assert math.isclose(row.type_s, wrong / k, rel_tol=1e-15)
                        checked += 1
    assert checked >= 40


def test_shard_sizes_change_nothing(normal_data, small_table):
    want = _frame(small_table["type_m_s"])
    study = TestErrors.of(**SMALL, shard_items=2, shard_replicates=250)
    tables, info = run_study(study, normal_data)
    assert info["shards"] == 3 * 2  # ceil(6 configurations / 2) x ceil(300 / 250)
    pd.testing.assert_frame_equal(_frame(tables["type_m_s"]), want, check_exact=True)


@pytest.mark.ray
def test_ray_equals_local(ray_local, normal_data, small_table):
    study = TestErrors.of(**SMALL, shard_items=4, shard_replicates=250)
    tables, info = run_study(study, normal_data, engine="ray", engine_options={"workers": 2})
    assert info["engine"] == "ray"
    pd.testing.assert_frame_equal(_frame(tables["type_m_s"]),
                                  _frame(small_table["type_m_s"]), check_exact=True)


def _urbano(shard_items: int, shard_replicates: int):
    from irsim.simulate.designs import PooledMetric
    from irsim.simulate.pair_copula_model import fit_pair_copula_model

    rng = np.random.default_rng(0)
    x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 30))
                + 0.08 * rng.standard_normal((8, 30)), 0, 1)
    pool = PooledMetric.build("AP", [fit_pair_copula_model(x, metric="AP", name="toy")],
                              (0.02, 0.05))
    base = TestErrors.of(sizes=(20,), alpha=(0.05, 0.01), trials=500, tests=("t", "sign"),
                         alternatives=("two-sided", "greater"), shard_items=shard_items,
                         shard_replicates=shard_replicates)
    study = UrbanoStudy(base, 400, deltas=(0.02, 0.05))
    return run_study(study, UrbanoData((pool,), (0.02, 0.05)))


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_urbano_design_agrees_with_type_2_and_type_3_and_any_sharding():
    tables, _ = _urbano(11, 4000)
    tab = _frame(tables["type_m_s"])
    assert len(tab) == 3 * 2 * 2 * 2  # (Type I, 2 deltas) x tests x alternatives x alphas
    t2, t3 = _frame(tables["type_2"]), _frame(tables["type_3"])
    two = tab[(tab.alternative == "two-sided") & (tab.delta > 0)].merge(
        t2[t2["tail"] == "two-sided"], on=["metric", "n", "delta", "test", "alpha"]).merge(
        t3, on=["metric", "n", "delta", "test", "alpha"], suffixes=("", "_3"))
    assert len(two) == 8
    assert (two.significant - two.wrong_sign == two.rejections).all()
    assert (two.wrong_sign == two.rejections_3).all()
    one = tab[(tab.alternative == "greater") & (tab.delta > 0)].merge(
        t2[t2["tail"] == "one-sided"], on=["metric", "n", "delta", "test", "alpha"])
    assert (one.significant == one.rejections).all()
    assert (tab[tab.delta > 0].trials == 400).all() and (tab[tab.delta == 0].trials == 500).all()
    t1 = _frame(tables["type_1"])
    t1["alternative"] = t1["tail"].map({"two-sided": "two-sided", "one-sided": "greater"})
    null = tab[tab.delta == 0].merge(t1, on=["metric", "n", "test", "alternative", "alpha"])
    assert len(null) == 8
    assert (null.significant == null.rejections).all()
    assert null.wrong_sign.isna().all() and null.exaggeration_median.isna().all()
    split, _ = _urbano(1, 250)
    pd.testing.assert_frame_equal(_frame(split["type_m_s"]), tab, check_exact=True)


# ---------------------------------------------------------------------- multiple_testing
MT = dict(sizes=(12,), systems=(5,), share_null=(0.4, 1.0), alpha=(0.05, 0.2),
          tests=("t", "sign"), corrections=("none", "holm"), trials=250, seed=2,
          sign_threshold=0.01)


@pytest.fixture(scope="module")
def mt_data():
    from irsim.experiments.multiple_testing import prepare as mt_prepare
    from irsim.simulate.joint_copula_model import JointCopulaModel

    model = JointCopulaModel.normal([0.35, 0.4, 0.45, 0.5, 0.55, 0.6], [0.1] * 6, 0.5)
    return mt_prepare([model], systems=(5,), shares=(0.4, 1.0), spread=0.1)


@pytest.fixture(scope="module")
def mt_tables(mt_data):
    from irsim.experiments.multiple_testing import MultipleTesting

    return run_study(MultipleTesting.of(**MT), mt_data)[0]


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_multiple_testing_loop_reference(mt_data, mt_tables):
    """Collections regenerated as the study draws them; per trial and pair the public t and
    sign tests, Holm's step-down written out (checked once against statsmodels), and the
    ratios on the 1/100 grid."""
    from statsmodels.stats.multitest import multipletests

    from irsim.experiments.multiple_testing import RATIO_SCALE, TOPIC_STREAM, MultipleTesting
    from irsim.rng import blocked_draws, study_key
    from irsim.simulate.joint_copula_model import true_null_count
    from irsim.stats.typems import median_bootstrap_ranks

    def holm(p: list[float], alpha: float) -> list[bool]:
        rej = [False] * len(p)
        for rank, i in enumerate(sorted(range(len(p)), key=lambda i: p[i])):
            if p[i] > alpha / (len(p) - rank):
                break
            rej[i] = True
        return rej

    family = [0.001, 0.04, 0.012, 0.3, 0.0049, 0.02]
    assert holm(family, 0.05) == multipletests(family, 0.05, "holm")[0].tolist()
    study = MultipleTesting.of(**MT)
    model, n, m = mt_data.models[0], 12, 5
    m0 = true_null_count(m, 0.4)
    shifts = mt_data.shifts[0][(m, m0)]
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m)]
    found = {}  # (test, correction, alpha) -> list of (ratio grid value, wrong sign)
    all_ratios = []
    for a0 in range(0, study.config.trials, REPLICATE_BLOCK):
        b0 = min(a0 + REPLICATE_BLOCK, study.config.trials)
        draws = blocked_draws(study.seed, TOPIC_STREAM, (study_key(model.metric), n), a0, b0,
                              lambda rng, k: model.draw(rng, k, n))
        order, logit = model.latent(draws, n)
        x, margins = model.scores(order, logit, m, shifts, m0=m0)
        means = model.true_means(margins, shifts)
        for i in range(len(x)):
            p = {"t": [float(paired_t(x[i, a], x[i, b]).pvalue) for a, b in pairs],
                 "sign": [float(sign_test(x[i, a], x[i, b], threshold=0.01).pvalue)
                          for a, b in pairs]}
            info = []
            for a, b in pairs:
                delta = means[i, a] - means[i, b]
                live = b >= m0 and delta != 0
                d = float(x[i, a].mean() - x[i, b].mean())
                r = round(abs(d) / abs(delta) * RATIO_SCALE) if live else None
                info.append((live, r, live and d * delta < 0))
                if live:
                    all_ratios.append(r)
            for test in study.config.tests:
                for corr in study.config.corrections:
                    for alpha in study.config.alpha:
                        rej = ([v <= alpha for v in p[test]] if corr == "none" else
                               holm(p[test], alpha))
                        found.setdefault((test, corr, alpha), []).extend(
                            (r, w) for (live, r, w), hit in zip(info, rej, strict=True)
                            if live and hit)
    tab = _frame(mt_tables["type_m_s"])
    assert set(tab.share_null) == {0.4}  # share_null = 1: no true difference, no rows
    assert len(tab) == 2 * 2 * 2
    z = sps.norm.ppf(0.975)
    for (test, corr, alpha), hits in found.items():
        row = tab[(tab.test == test) & (tab.correction == corr) & (tab.alpha == alpha)]
        assert len(row) == 1
        row = row.iloc[0]
        assert row.trials == len(all_ratios) == study.config.trials * (len(pairs) - 1)
        assert row.significant == len(hits)
        assert row.wrong_sign == sum(w for _, w in hits)
        ratios = sorted(r for r, _ in hits)
        k = len(ratios)
        assert math.isclose(row.exaggeration_mean, sum(ratios) / k / RATIO_SCALE,
                            rel_tol=1e-15)
        half = z * statistics.pstdev(ratios) / math.sqrt(k) / RATIO_SCALE
        assert math.isclose(row.exaggeration_mean_hi - row.exaggeration_mean, half,
                            rel_tol=1e-9)
        assert row.exaggeration_median == ratios[(k + 1) // 2 - 1] / RATIO_SCALE
        j_lo, j_hi = median_bootstrap_ranks(k)
        assert row.exaggeration_median_lo == ratios[j_lo - 1] / RATIO_SCALE
        assert row.exaggeration_median_hi == ratios[j_hi - 1] / RATIO_SCALE
        assert math.isclose(row.abs_ratio_mean, sum(all_ratios) / len(all_ratios)
                            / RATIO_SCALE, rel_tol=1e-15)
    # the power of the pooled pairs is the study's per-pair power
    mt = _frame(mt_tables["multiple_testing"])
    both = tab.merge(mt, on=["metric", "n", "m", "share_null", "correction", "test", "alpha"],
                     suffixes=("", "_mt"))
    assert np.allclose(both.power, both.power_mt, rtol=1e-12, atol=0)


@pytest.mark.slow
def test_multiple_testing_shard_sizes_change_nothing(mt_data, mt_tables):
    from irsim.experiments.multiple_testing import MultipleTesting

    tables, info = run_study(MultipleTesting.of(**MT, shard_items=1, shard_replicates=250),
                             mt_data)
    assert info["shards"] == 2 * 1
    pd.testing.assert_frame_equal(_frame(tables["type_m_s"]),
                                  _frame(mt_tables["type_m_s"]), check_exact=True)
