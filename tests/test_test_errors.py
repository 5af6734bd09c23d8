"""experiment=test_errors: known-truth Type I error and power.

- On bivariate normal topics the t test's Type I error is alpha within Monte Carlo error
  (3.5 standard errors of a binomial rate), and the simulated mean difference is delta.
- The tables are identical for any shard sizes (``engine.shard_items`` x
  ``engine.shard_replicates``), for engine=ray with 2 workers, after a resume from
  checkpoints, and the delta = 0 rows do not depend on which other deltas are studied
  (common random numbers).
- The command line, ``make`` and the Python function ``irsim.test_errors`` give the same
  tables; bad parameters are named as the caller wrote them.
- The study runs end to end from the preset ``experiment=urbano_test_errors``.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import SHARED_DATA, urbano_matrix
from scipy import stats as sps

import irsim
from irsim.data.synthetic import synthetic_scores
from irsim.engine import run_study
from irsim.errors import ConfigError, python_parameters
from irsim.experiments import Shards, build_study
from irsim.experiments.test_errors import Config, TestErrors, make
from irsim.experiments.test_errors.common import normalised_config
from irsim.kit.loading import score_matrix
from irsim.runner import compose_config, run
from irsim.simulate.pairs import TopicSimulator, fit_simulator, prepare
from irsim.stats.binomial import clopper_pearson

COLUMNS = ["metric", "test", "alternative", "n", "delta", "alpha", "trials", "rejections",
           "rate", "ci_lo", "ci_hi", "mean_diff", "mean_diff_se"]


def assert_same(a, b):
    assert set(a) == set(b)
    for name in a:
        assert a[name].to_pydict() == b[name].to_pydict(), name


@pytest.fixture(scope="module")
def real_data():
    """Two metrics of TREC-8 (15 runs each): a continuous and a discrete one."""
    sims, sources = [], []
    for name, metric in (("adhoc8_ap", "AP"), ("adhoc8_p10", "P@10")):
        m = urbano_matrix(name, metric, systems=15)
        sims.append(fit_simulator(m.metric(metric), metric=metric, systems=m.systems))
        sources.append(m.select(systems=sims[-1].systems).metric(metric))
    return prepare(sims, (0.0, 0.05), sources)


SMALL = dict(sizes=(10, 25), deltas=(0.0, 0.05), alpha=(0.01, 0.05),
             alternatives=("two-sided", "greater"), trials=700, B=100, seed=3,
             wilcoxon_method="r", sign_threshold=0.01)


@pytest.fixture(scope="module")
def small_tables(real_data):
    tables, info = run_study(TestErrors.of(**SMALL), real_data)
    assert info["shards"] == 1
    return tables


@pytest.mark.slow
def test_t_test_type1_error_on_normal_data_is_alpha():
    sim = TopicSimulator.normal(means=[0.4, 0.45, 0.5, 0.55], sds=[0.08] * 4,
                                rho=[0.2, 0.5, 0.8, 0.3, 0.6, 0.4])
    data = prepare([sim], (0.0, 0.03))
    study = TestErrors.of(sizes=(10, 30), deltas=(0.0, 0.03), alpha=(0.01, 0.05, 0.1),
                          tests=("t", "wilcoxon", "sign", "randomisation"), trials=20000, B=200,
                          seed=1, pvalue="plus_one")
    df = run_study(study, data)[0]["test_errors"].to_pandas()
    null = df[df.delta == 0.0]
    se = np.sqrt(null.alpha * (1 - null.alpha) / null.trials)
    t = null[null.test == "t"]
    assert len(t) == 6 and (t.trials == 20000).all()
    assert (np.abs(t.rate - t.alpha) <= 3.5 * se[t.index]).all(), t[["n", "alpha", "rate"]]
    assert ((t.ci_lo <= t.alpha) & (t.alpha <= t.ci_hi)).sum() >= 5
    # the other tests are exact or conservative (discrete null distributions; Monte Carlo
    # p-values (count + 1)/(B + 1) are valid, count/B would not be at alpha = 0.01)
    assert (null.rate <= null.alpha + 3.5 * se).all()
    # the true difference is delta: the simulated mean differences average to it
    for _, row in df[df.test == "t"].drop_duplicates(["n", "delta"]).iterrows():
        assert abs(row.mean_diff - row.delta) <= 4 * row.mean_diff_se
    power = df[(df.delta > 0) & (df.alpha == 0.05) & (df.test == "t")]
    assert (power.rate > 0.2).all()


def test_tables_and_counters(small_tables):
    te = small_tables["test_errors"]
    assert te.column_names == COLUMNS
    # 2 metrics x 2 sizes x 2 deltas x 5 tests x 2 alternatives x 2 alphas
    assert te.num_rows == 160
    df = te.to_pandas()
    assert (df.trials == 700).all()
    assert ((df.ci_lo <= df.rate) & (df.rate <= df.ci_hi)).all()
    assert np.allclose(df.rate, df.rejections / df.trials)
    # more rejections at a larger alpha, and under the alternative than under the null
    key = ["metric", "test", "alternative", "n", "delta"]
    by = df.sort_values("alpha").groupby(key)["rejections"]
    assert (by.diff().dropna() >= 0).all()
    h0 = df[df.delta == 0].set_index(["metric", "test", "alternative", "n", "alpha"]).rate
    h1 = df[df.delta > 0].set_index(["metric", "test", "alternative", "n", "alpha"]).rate
    assert (h1 >= h0).mean() > 0.9
    assert abs(h0.mean() - 0.03) < 0.015  # mean of alpha 0.01 and 0.05
    fit = small_tables["test_errors_fit"].to_pandas()
    assert fit.metric.tolist() == ["AP", "P@10"]
    assert fit.margin.tolist() == ["kernel", "empirical"]


def test_shard_sizes_change_nothing(real_data, small_tables):
    study = TestErrors.of(**SMALL, shard_items=3, shard_replicates=250)
    tables, info = run_study(study, real_data)
    assert info["shards"] == 3 * 3  # ceil(8 / 3) config blocks x ceil(700 / 250)
    assert_same(tables, small_tables)


def test_resume_from_checkpoints_changes_nothing(tmp_path, real_data, small_tables):
    study = TestErrors.of(**SMALL, shard_items=5, shard_replicates=250)
    calls = []

    def stop_after_3(done, total):
        calls.append(done)
        if len(calls) == 4:  # the first call reports 0 shards done
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_study(study, real_data, checkpoint_dir=tmp_path, progress=stop_after_3)
    tables, info = run_study(study, real_data, checkpoint_dir=tmp_path)
    assert info["shards"] == 2 * 3 and info["shards_resumed"] == 3
    assert_same(tables, small_tables)


SYNTHETIC = ["experiment=test_errors", "collection=synthetic_scores", "experiment.trials=300",
             "experiment.B=100", "experiment.sizes=[10,20]", "experiment.deltas=[0.0,0.04]",
             "experiment.alpha=[0.05]", "experiment.tests=[t,randomisation]"]


@pytest.mark.slow
def test_command_line_make_and_python_function_agree():
    cfg = compose_config(SYNTHETIC)
    study, data = build_study(cfg)
    assert (study.shard_items, study.shard_replicates) == (4096, 1000)
    ref, info = run_study(study, data)
    assert info["shards"] == 1
    # engine.shard_items x engine.shard_replicates split the work, never the numbers
    study, data = build_study(compose_config([*SYNTHETIC, "engine.shard_items=3",
                                              "engine.shard_replicates=100"]))
    assert (study.shard_items, study.shard_replicates) == (3, 100)
    tables, info = run_study(study, data)
    assert info["shards"] == 2 * 2  # ceil(6 configurations / 3) x ceil(300 / 250)
    assert_same(tables, ref)
    # make() on the same matrix with the Config of the same parameters
    matrix = score_matrix(cfg)
    config = Config(sizes=[10, 20], deltas=[0.0, 0.04], alpha=[0.05], trials=300, B=100,
                    tests=["t", "randomisation"])
    study, data = make(config, matrix, seed=0, shards=Shards(items=3))
    assert study.shard_items == 3 and data.metrics == matrix.metrics
    assert study.config.alpha == [0.05] and study.config.deltas == [0.0, 0.04]
    # the Python door: the same tables for the same parameters and seed
    res = irsim.test_errors(matrix, sizes=[10, 20], deltas=[0.0, 0.04], alpha=[0.05],
                            trials=300, B=100, tests=["t", "randomisation"], seed=0)
    assert_same(res.tables, ref)
    assert_same(run_study(study, data)[0], ref)


def test_parameters_are_named_as_the_caller_wrote_them():
    with pytest.raises(ConfigError, match="engine.shard_items must be an integer >= 1"):
        TestErrors.of(shard_items=0)
    with pytest.raises(ConfigError, match="engine.shard_replicates must be an integer >= 1"):
        TestErrors.of(shard_replicates=0)
    with pytest.raises(ConfigError, match="experiment.trials must be an integer >= 1"):
        TestErrors.of(trials=0)
    with python_parameters():
        with pytest.raises(ConfigError, match="^shard_items must be an integer >= 1"):
            TestErrors.of(shard_items=0)
        with pytest.raises(ConfigError, match="^alpha must be inside"):
            TestErrors.of(alpha=(0.05, 1.5))
    matrix = synthetic_scores(systems=5, topics=20, metrics=("AP",)).matrix
    with pytest.raises(ConfigError, match="^B must be an integer >= 1, got 0"):
        irsim.test_errors(matrix, B=0)


def test_delta_zero_rows_do_not_depend_on_other_deltas(real_data, small_tables):
    only_null = prepare(real_data.simulators, (0.0,))
    params = {**SMALL, "deltas": (0.0,)}
    df = run_study(TestErrors.of(**params), only_null)[0]["test_errors"].to_pandas()
    ref = small_tables["test_errors"].to_pandas()
    ref = ref[ref.delta == 0.0].reset_index(drop=True)
    assert df.rejections.tolist() == ref.rejections.tolist()



@pytest.mark.ray
def test_ray_equals_local(ray_local, real_data, small_tables):
    study = TestErrors.of(**SMALL, shard_items=4, shard_replicates=250)
    tables, info = run_study(study, real_data, engine="ray", engine_options={"workers": 2})
    assert info["engine"] == "ray" and info["shards"] == 6
    assert_same(tables, small_tables)


def test_clopper_pearson_matches_scipy():
    k, n = np.array([0, 3, 50, 100]), np.array([100, 100, 100, 100])
    lo, hi = clopper_pearson(k, n, 0.9)
    for i in range(len(k)):
        ci = sps.binomtest(int(k[i]), int(n[i])).proportion_ci(0.9, method="exact")
        assert lo[i] == pytest.approx(ci.low, abs=1e-10)
        assert hi[i] == pytest.approx(ci.high, abs=1e-10)


def test_bad_configuration(real_data):
    with pytest.raises(ConfigError, match="unknown test"):
        TestErrors.of(tests=("t", "tukey_hsd"))
    with pytest.raises(ConfigError, match="inside"):
        TestErrors.of(alpha=(0.05, 1.5))
    with pytest.raises(ConfigError, match="sizes"):
        TestErrors.of(sizes=(1,))
    with pytest.raises(ConfigError, match="prepared for deltas"):
        TestErrors.of(deltas=(0.0, 0.1)).plan(real_data)
    p10 = urbano_matrix("adhoc8_p10", "P@10", systems=5)
    sim = fit_simulator(p10.metric("P@10"), metric="P@10")
    with pytest.raises(ConfigError, match="no system's margin"):
        prepare([sim], (0.0, 0.95))


@pytest.mark.slow
def test_preset_runs_end_to_end(tmp_path):
    cfg = compose_config([
        "experiment=urbano_test_errors", f"data_dir={SHARED_DATA}", "offline=true",
        "experiment.sizes=[10,20]", "experiment.deltas=[0.0,0.05]",
        "experiment.alpha=[0.01,0.05]", "experiment.trials=250", "experiment.B=100",
        "quiet=true"])
    assert cfg.experiment.sign_threshold == 0.01 and cfg.collection.name == "adhoc8"
    tables = run(cfg, tmp_path)
    te = pq.read_table(tmp_path / "results" / "test_errors.parquet")
    assert te.column_names == COLUMNS
    df = te.to_pandas()
    assert sorted(set(df.metric)) == ["AP", "P@10", "RR"]
    assert sorted(set(df.alternative)) == ["greater", "two-sided"]
    assert len(df) == 3 * 2 * 2 * 5 * 2 * 2 and (df.trials == 250).all()
    fit = tables["test_errors_fit"].to_pandas()
    assert (fit.dropped > 0).all() and (fit.ks_max < 0.15).all()
    assert (fit.mean_error_max < 1e-10).all()
    report = (tmp_path / "report.md").read_text()
    for needle in ("## Type I error", "## Power", "type1_error_two-sided.png",
                   "power_greater.png"):
        assert needle in report
    for png in ("type1_error_two-sided.png", "type1_error_greater.png",
                "power_two-sided.png", "power_greater.png"):
        assert (tmp_path / png).stat().st_size > 20_000
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["experiment"] == "test_errors"
    assert manifest["config"]["experiment"]["wilcoxon_method"] == "r"


# -- Type I errors from two sides: exact null rates, alphas on the p-value lattice ----------
def exact_null_rates(n: int, alphas) -> dict[tuple[str, str], list[Fraction]]:
    """P(p <= alpha) under H0 for the exact sign and Wilcoxon signed-rank tests on `n`
    continuous differences, from their definitions: all 2^n equally likely sign patterns
    (of the ranks 1..n), p-values as exact fractions."""
    patterns = list(itertools.product((0, 1), repeat=n))
    total = Fraction(1, 2 ** n)
    k_of = [sum(s) for s in patterns]                      # positive signs
    w_of = [sum(r + 1 for r, s in enumerate(p) if s) for p in patterns]  # W+

    def tail_p(stats):
        upper = {v: sum(total for u in stats if u >= v) for v in set(stats)}
        lower = {v: sum(total for u in stats if u <= v) for v in set(stats)}
        return ({v: min(Fraction(1), 2 * min(upper[v], lower[v])) for v in set(stats)},
                upper)

    out = {}
    for test, stats in (("sign", k_of), ("wilcoxon", w_of)):
        two, greater = tail_p(stats)
        for alt, pmap in (("two-sided", two), ("greater", greater)):
            out[(test, alt)] = [sum(total for v in stats if pmap[v] <= Fraction(a))
                                for a in alphas]
    return out


LATTICE = (0.015625, 0.03125, 0.05, 0.0625, 0.1)  # 1/64, 2/64 (binary-exact), 1/20, 4/64, 2/20


@pytest.fixture(scope="module")
def lattice_tables():
    sim = TopicSimulator.normal(means=[0.4, 0.45, 0.5, 0.55], sds=[0.08] * 4,
                                rho=[0.2, 0.5, 0.8, 0.3, 0.6, 0.4])
    # built directly, without make's B * alpha >= 1: levels below 1/B show the lattice of
    # the randomisation test's p-values (1/20 with B = 19)
    config = normalised_config(Config(
        sizes=[6, 30], deltas=[0.0, 0.04], alpha=list(LATTICE),
        tests=["wilcoxon", "sign", "randomisation"],
        alternatives=["two-sided", "greater", "less"], trials=6000, B=19, pvalue="plus_one",
        wilcoxon_method="exact", sign_threshold=0.0))
    study = TestErrors(config, seed=11)
    return run_study(study, prepare([sim], (0.0, 0.04)))[0]["test_errors"].to_pandas()


@pytest.mark.slow
def test_type1_errors_of_exact_tests_are_their_exact_null_rates(lattice_tables):
    """Two-sided bands (4 binomial standard errors) around the exact rate P(p <= alpha):
    a test that rejects too rarely fails as well as one that rejects too often."""
    df = lattice_tables[lattice_tables.delta == 0.0]
    exact = exact_null_rates(6, LATTICE)
    checked = 0
    for (test, alt), rates in exact.items():
        for alpha, r in zip(LATTICE, rates, strict=True):
            row = df[(df.test == test) & (df.alternative == alt) & (df.n == 6)
                     & (df.alpha == alpha)].iloc[0]
            r = float(r)
            se = math.sqrt(r * (1 - r) / row.trials)
            assert abs(row.rate - r) <= 4 * se, (test, alt, alpha, row.rate, r)
            checked += 1
    assert checked == 20
    # randomisation with B = 19 and (count + 1)/(B + 1) p-values on n = 30 topics (2^30 sign
    # patterns: resamples equal to the observed one have negligible probability) rejects
    # with probability exactly floor(20 alpha)/20, from both alternatives
    for alt in ("two-sided", "greater"):
        for alpha in LATTICE:
            row = df[(df.test == "randomisation") & (df.alternative == alt) & (df.n == 30)
                     & (df.alpha == alpha)].iloc[0]
            r = math.floor(20 * alpha + 1e-12) / 20
            se = math.sqrt(r * (1 - r) / row.trials)
            assert abs(row.rate - r) <= 4 * se, (alt, alpha, row.rate, r)


def test_a_p_value_equal_to_alpha_is_a_rejection(lattice_tables):
    """The smallest attainable p-values are exactly representable lattice points (two-sided
    sign/Wilcoxon on 6 topics: 2/64; one-sided: 1/64; randomisation: 1/20), so at alpha equal
    to them every rejection is a p-value *equal* to alpha: ``p <= alpha`` rejects, ``p < alpha``
    would count none."""
    df = lattice_tables[lattice_tables.delta == 0.0]
    n6 = df[df.n == 6]
    for test in ("sign", "wilcoxon"):
        two = n6[(n6.test == test) & (n6.alternative == "two-sided")]
        assert (two[two.alpha == 0.015625].rejections == 0).all()  # below the smallest p
        assert (two[two.alpha == 0.03125].rejections > 0).all()
        one = n6[(n6.test == test) & (n6.alternative == "greater")]
        assert (one[one.alpha == 0.015625].rejections > 0).all()
    rnd = df[(df.test == "randomisation") & (df.n == 30)]
    assert (rnd[rnd.alpha == 0.03125].rejections == 0).all()  # below 1/20
    assert (rnd[rnd.alpha == 0.05].rejections > 0).all()


def test_direction_of_the_one_sided_alternatives(lattice_tables):
    """The simulated difference is x - y = +delta: "greater" gains power, "less" rejects no
    more often than under H0 (a swap of x and y would exchange them). Under H0 "less" has the
    same exact rates as "greater" (symmetric null)."""
    df = lattice_tables.set_index(["test", "alternative", "n", "delta", "alpha"]).rate
    trials = int(lattice_tables.trials.iloc[0])
    exact = exact_null_rates(6, LATTICE)
    for test, n in (("sign", 6), ("wilcoxon", 6), ("randomisation", 30)):
        for i, alpha in enumerate(LATTICE):
            r0 = (math.floor(20 * alpha + 1e-12) / 20 if test == "randomisation"
                  else float(exact[(test, "greater")][i]))
            se = math.sqrt(max(r0 * (1 - r0), 1 / trials) / trials)
            assert abs(df[(test, "less", n, 0.0, alpha)] - r0) <= 4 * se, (test, alpha)
            assert df[(test, "less", n, 0.04, alpha)] <= r0 + 4 * se, (test, alpha)
    for test in ("wilcoxon", "sign", "randomisation"):
        greater = df[(test, "greater", 30, 0.04, 0.05)]
        assert greater > 0.05 + 10 * math.sqrt(0.05 * 0.95 / trials), (test, greater)
        assert df[(test, "less", 30, 0.04, 0.05)] < 0.05


def test_exact_null_rates_agree_with_scipy():
    """The enumeration above against scipy's exact sign (binomtest) and Wilcoxon tests on
    all 64 sign patterns of the differences 1..6."""
    rates = exact_null_rates(6, LATTICE)
    patterns = [np.array([r if s else -r for r, s in zip(range(1, 7), p, strict=True)], float)
                for p in itertools.product((0, 1), repeat=6)]
    for alt in ("two-sided", "greater"):
        sign_p = [sps.binomtest(int((z > 0).sum()), 6, 0.5, alternative=alt).pvalue
                  for z in patterns]
        wil_p = [sps.wilcoxon(z, method="exact", alternative=alt).pvalue for z in patterns]
        for test, ps in (("sign", sign_p), ("wilcoxon", wil_p)):
            got = [float(r) for r in rates[(test, alt)]]
            want = [np.mean(np.asarray(ps) <= a * (1 + 1e-12)) for a in LATTICE]
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-15, err_msg=f"{test} {alt}")


@pytest.mark.slow
def test_rejection_counts_equal_scipy_per_trial():
    """Every rejection counter of the t, Wilcoxon (exact) and sign tests, for every
    alternative and alpha, equals a per-trial loop through scipy on the study's own simulated
    pairs (the generator is not under test here; the p-values and the counting are)."""
    sim = TopicSimulator.normal(means=[0.4, 0.45, 0.5, 0.55], sds=[0.08] * 4,
                                rho=[0.2, 0.5, 0.8, 0.3, 0.6, 0.4])
    deltas, alphas, alts = (0.0, 0.03), (0.01, 0.05, 0.1), ("two-sided", "greater", "less")
    data = prepare([sim], deltas)
    study = TestErrors.of(sizes=(10,), deltas=deltas, alpha=alphas, tests=("t", "wilcoxon",
                          "sign"), alternatives=alts, trials=300, seed=4,
                          wilcoxon_method="exact", sign_threshold=0.0)
    df = run_study(study, data)[0]["test_errors"].to_pandas()
    draws = study.draws(data.generators[0][0], sim.metric, 10, 0, 300)
    for di, delta in enumerate(deltas):
        trial = data.generators[0][di].scores(draws, 10)
        y, x = trial[:, 0], trial[:, 1]
        for alt in alts:
            p = {"t": [sps.ttest_rel(a, b, alternative=alt).pvalue for a, b in zip(x, y,
                                                                                  strict=True)],
                 "wilcoxon": [sps.wilcoxon(a - b, method="exact", alternative=alt).pvalue
                              for a, b in zip(x, y, strict=True)],
                 "sign": [sps.binomtest(int((a > b).sum()), int((a != b).sum()), 0.5,
                                        alternative=alt).pvalue
                          for a, b in zip(x, y, strict=True)]}
            for test, ps in p.items():
                for alpha in alphas:
                    row = df[(df.test == test) & (df.alternative == alt) & (df.delta == delta)
                             & (df.alpha == alpha)].iloc[0]
                    assert row.rejections == int((np.asarray(ps) <= alpha).sum()), (
                        test, alt, delta, alpha)


# ------------------------------------------------------ issue 46: the B * alpha >= 1 rule
@pytest.mark.parametrize("design", ["shift", "urbano2019"])
def test_an_alpha_below_one_over_b_with_a_monte_carlo_test_is_refused(design):
    """A Monte Carlo p-value moves in steps of 1/B (count/B, or at least 1/(B+1)): with
    B = 200 the default alphas 0.001..0.004 are refused in both designs, before any fit,
    the knobs named as the caller wrote them; alphas >= 1/B or tests without resamples
    pass."""
    matrix = synthetic_scores(systems=5, topics=20, metrics=("AP",)).matrix
    want = ("B=200 is too small for alpha=0.001: an achieved significance level from B "
            "resamples moves in steps of 1/B, so a level of 0.001 needs B >= 1000 "
            "(B * alpha >= 1)")
    with pytest.raises(ConfigError) as err:
        irsim.test_errors(matrix, B=200, design=design)
    assert str(err.value) == want
    with pytest.raises(ConfigError, match=r"^B=200 is too small for alpha=0\.004"):
        irsim.test_errors(matrix, B=200, tests=["paired_bootstrap"], alpha=[0.004, 0.05],
                          design=design)
    with pytest.raises(ConfigError, match=r"experiment\.B=19 is too small for "
                       r"experiment\.alpha=0\.05: .* B >= 20 "):  # 19 * 0.05 < 1
        TestErrors.of(B=19, alpha=[0.05], tests=["randomisation"])
    for ok in (dict(alpha=[0.005, 0.05]), dict(tests=["t", "wilcoxon", "sign"])):
        config = Config(B=200, trials=10, sizes=[10], deltas=[0.0, 0.05], design=design, **ok)
        assert TestErrors.from_config(config, seed=0, shard_items=1,
                                      shard_replicates=250).config.B == 200


def test_the_b_alpha_rule_names_the_keys_on_the_command_line(tmp_path, capsys):
    from irsim.cli import main

    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["experiment=test_errors", "experiment.B=200", "experiment.trials=10",
              "collection=synthetic_scores", "quiet=true", f"hydra.run.dir={run_dir}"])
    assert exc.value.code == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert lines == ["irsim: error: config: experiment.B=200 is too small for "
                     "experiment.alpha=0.001: an achieved significance level from B resamples "
                     "moves in steps of 1/B, so a level of 0.001 needs B >= 1000 "
                     "(B * alpha >= 1)"]
    assert not run_dir.exists()
