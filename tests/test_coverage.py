"""experiment=coverage (Park 2011): intervals equal the library's and scipy's on identical
resamples, a slow loop reference, the t interval's coverage on normal data, Park's pattern on
Urbano's TREC matrices, sharding / Ray invariance, the preset end to end."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import urbano_matrix
from scipy import stats as sps

from irsim.data.matrix import ScoreMatrix
from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments import Shards
from irsim.experiments.coverage import (
    BOOT_STREAM,
    METHODS,
    TOPIC_STREAM,
    Config,
    make,
    relabelling,
)
from irsim.sampling.subsets import subset_indices
from irsim.sampling.topics import bootstrap_counts
from irsim.stats import bootstrap_ci, mean_acceleration, mean_ci
from irsim.stats.ci import mean_interval_grid as interval_grid

ALPHAS = (0.05, 0.1, 0.3, 0.5)


def study_of(matrix, seed, shards=None, **params):
    """The study of ``Config(**params)`` on `matrix` (as the command line makes it)."""
    return make(Config(**params), matrix, seed=seed, shards=shards or Shards())[0]


@pytest.fixture(scope="module")
def ap10(shared_data):
    """Real AP samples: 200 rows of 10 topics (ties, zeros) from TREC-8."""
    x = urbano_matrix("adhoc8_ap", "AP").metric("AP")
    rng = np.random.default_rng(3)
    rows = rng.integers(0, x.shape[0], 200)
    cols = np.stack([rng.choice(x.shape[1], 10, replace=False) for _ in rows])
    return x[rows[:, None], cols]


def test_intervals_equal_the_library_on_identical_resamples(ap10):
    """interval_grid (one sort per row, all levels) = bootstrap_ci / mean_ci per level."""
    B = 999
    star = np.matmul(ap10, bootstrap_counts(2, "t", 10, 0, B).T / 10)
    grid = interval_grid(ap10, star, ALPHAS, METHODS)
    mean = ap10.mean(axis=1)
    for i, alpha in enumerate(ALPHAS):
        for method in METHODS:
            if method in ("normal", "t"):
                ref = mean_ci(ap10, method=method, confidence_level=1 - alpha)
            else:
                ref = bootstrap_ci(mean, star, method=method, confidence_level=1 - alpha,
                                   acceleration=mean_acceleration(ap10), n=10)
            low, high = grid[method]
            if method == "studentised_logit":  # a faster logit: equal within a few ulp
                np.testing.assert_allclose(low[:, i], ref.confidence_interval.low,
                                           rtol=1e-13, atol=0)
                np.testing.assert_allclose(high[:, i], ref.confidence_interval.high,
                                           rtol=1e-13, atol=0)
            else:
                np.testing.assert_array_equal(low[:, i], ref.confidence_interval.low)
                np.testing.assert_array_equal(high[:, i], ref.confidence_interval.high)


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_intervals_equal_scipy_bootstrap_on_its_resamples(ap10, method):
    """Given scipy's own resamples, the grid's limits equal scipy.stats.bootstrap's (as
    tests/test_stats_scipy.py::test_bootstrap_intervals_equal_scipy does for bootstrap_ci;
    BCa on the data in 1e-4 units, where sums are exact and ties are ties)."""
    B, seed, alpha = 999, 7, 0.1
    x = ap10[:60]
    idx = np.random.default_rng(seed).integers(0, x.shape[-1], (B, x.shape[-1]))
    scale = 1e4 if method == "bca" else 1.0
    units = np.round(x * scale) if method == "bca" else x
    star = units[..., idx].mean(axis=-1)
    low, high = interval_grid(units, star, (alpha,), (method,))[method]
    ref = sps.bootstrap((units,), lambda v, axis: np.mean(v, axis=axis), axis=-1,
                        vectorized=True, n_resamples=B, confidence_level=1 - alpha,
                        method=method.replace("bca", "BCa"), rng=np.random.default_rng(seed))
    np.testing.assert_allclose(star, ref.bootstrap_distribution, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(low[:, 0], ref.confidence_interval.low, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(high[:, 0], ref.confidence_interval.high, rtol=1e-9, atol=1e-9)


def reference_counts(matrix: ScoreMatrix, study):
    """The study written as loops over sizes, samples, systems, methods and levels."""
    x = matrix.metric(matrix.metrics[0])
    S, T = x.shape
    perm = relabelling(study.seed, S, T)
    truth = x.mean(axis=1)
    out = {}
    for n in study.config.sizes:
        topics = subset_indices("independent", study.seed, TOPIC_STREAM, T, n, 0,
                                study.config.samples, sets=1)[:, 0]
        counts = bootstrap_counts(study.seed, BOOT_STREAM, n, 0,
                                  study.config.samples * study.config.B)
        for s in range(study.config.samples):
            w = counts[s * study.config.B:(s + 1) * study.config.B] / n
            for i in range(S):
                sample = x[i, perm[i, topics[s]]]
                star = sample @ w.T
                for method in study.config.methods:
                    for alpha in study.config.alpha:
                        if method in ("normal", "t"):
                            ci = mean_ci(sample, method=method, confidence_level=1 - alpha)
                        else:
                            ci = bootstrap_ci(sample.mean(), star, method=method,
                                              confidence_level=1 - alpha, n=n,
                                              acceleration=mean_acceleration(sample))
                        key = (method, n, alpha)
                        above, below = out.get(key, (0, 0))
                        out[key] = (above + int(ci.confidence_interval.low > truth[i]),
                                    below + int(ci.confidence_interval.high < truth[i]))
    return out


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_study_equals_a_slow_loop_reference():
    m = urbano_matrix("adhoc7_ap", "AP", systems=4)
    study = study_of(m, 5, sizes=[5, 8], samples=40, B=200, alpha=[0.05, 0.2])
    ref = reference_counts(m, study)
    table = run_study(study, m)[0]["coverage"].to_pandas()
    assert len(table) == len(METHODS) * 2 * 2
    for row in table.itertuples():
        above, below = ref[(row.method, row.n, row.alpha)]
        assert (row.misses_above, row.misses_below) == (above, below), row
        assert row.intervals == 4 * 40 and row.samples == 40
        assert row.type1_error == pytest.approx((above + below) / 160)


def test_t_interval_coverage_on_normal_data_is_alpha():
    """Independent normal systems, populations of 4000 topics: the t interval's Type I error
    is alpha within Monte Carlo error (12000 intervals per cell; FPC n/T <= 0.25%)."""
    rng = np.random.default_rng(11)
    vals = rng.normal(0.4, 0.2, size=(40, 4000))[None]
    m = ScoreMatrix(vals, ["x"], [f"s{i}" for i in range(40)], [str(t) for t in range(4000)])
    study = study_of(m, 2, sizes=[5, 10], samples=300, B=2, alpha=[0.05, 0.1, 0.2],
                     methods=["t", "normal"])
    table = run_study(study, m)[0]["coverage"].to_pandas()
    t = table[table.method == "t"]
    for row in t.itertuples():
        se = np.sqrt(row.alpha * (1 - row.alpha) / row.intervals)
        assert abs(row.type1_error - row.alpha) < 4 * se, row
        assert abs(row.above - row.below) < 6 * np.sqrt(row.alpha / 2 / row.intervals)
    # the normal interval ignores the t quantile: too narrow; its Type I error is exactly
    # P(|T_{n-1}| > z_{1-alpha/2}), within 4 binomial standard errors
    for row in table[table.method == "normal"].itertuples():
        exact = 2 * sps.t.sf(sps.norm.ppf(1 - row.alpha / 2), row.n - 1)
        se = np.sqrt(exact * (1 - exact) / row.intervals)
        assert abs(row.type1_error - exact) < 4 * se, (row.n, row.alpha, exact)


@pytest.mark.parametrize("name", ["adhoc8_ap", "adhoc7_ap"])
def test_parks_pattern_on_trec_ad_hoc(name):
    """Park's Table 1-3 pattern at n = 5 (his TREC 2004 Robust figures at alpha = 0.05:
    percentile 0.181, BCa 0.170, studentised logit 0.055)."""
    m = urbano_matrix(name, "AP")
    study = study_of(m, 1, sizes=[5], samples=250, B=500, alpha=[0.05],
                     methods=["percentile", "bca", "studentised_logit"])
    table = run_study(study, m)[0]["coverage"].to_pandas().set_index("method")
    err = table.type1_error
    k = table.intervals.iloc[0]
    assert (table.intervals == k).all()

    def se(p):
        return np.sqrt(p * (1 - p) / k)

    # percentile and BCa miss far more often than alpha (beyond 10 binomial SEs)
    assert err["percentile"] > 0.05 + 10 * se(0.05) and err["bca"] > 0.05 + 10 * se(0.05)
    assert err["studentised_logit"] < err["bca"] / 2
    if name == "adhoc8_ap":
        # the numbers docs/studies/coverage.md reports (TREC-8 AP, 129 systems x 250 samples =
        # 32,250 intervals), each within 3 binomial standard errors
        assert k == 32_250
        for method, claim in (("percentile", 0.192), ("bca", 0.184),
                              ("studentised_logit", 0.062)):
            assert abs(err[method] - claim) <= 3 * se(claim), (method, err[method], claim)


SMALL = {"sizes": [5, 10], "samples": 520, "B": 120, "alpha": [0.05, 0.25]}


@pytest.fixture(scope="module")
def small():
    m = urbano_matrix("adhoc6_ap", "AP", systems=12)
    study = study_of(m, 3, Shards(replicates=250), **SMALL)
    return m, study, run_study(study, m)


def test_shard_size_changes_nothing(small):
    m, study, (tables, info) = small
    assert info["shards"] == 6
    other = replace(study_of(m, 3, Shards(replicates=1000), **SMALL), memory_budget=2**20)
    t2, info2 = run_study(other, m)
    assert info2["shards"] == 2
    assert t2["coverage"].to_pydict() == tables["coverage"].to_pydict()
    both_sizes = study_of(m, 3, Shards(items=2, replicates=300), **SMALL)  # 300 -> 500
    t3, info3 = run_study(both_sizes, m)
    assert info3["shards"] == 2
    assert t3["coverage"].to_pydict() == tables["coverage"].to_pydict()



@pytest.mark.ray
def test_ray_two_workers_equal_local(ray_local, small):
    m, study, (tables, _) = small
    t2, info = run_study(study, m, engine="ray", engine_options={"workers": 2})
    assert info["engine"] == "ray"
    assert t2["coverage"].to_pydict() == tables["coverage"].to_pydict()


def test_bad_configuration_is_refused():
    m = urbano_matrix("adhoc5_ap", "AP", systems=3)
    with pytest.raises(ConfigError, match="unknown value of experiment.methods 'jackknife'"):
        study_of(m, 0, methods=["percentile", "jackknife"])
    with pytest.raises(ConfigError, match="sizes"):
        study_of(m, 0, sizes=[1])
    with pytest.raises(ConfigError, match="alpha"):
        study_of(m, 0, alpha=[0.05, 1.0])
    with pytest.raises(ConfigError, match="60 > 50 topics"):
        study_of(m, 0, sizes=[60])
    with pytest.raises(ConfigError, match="engine.shard_replicates"):
        study_of(m, 0, Shards(replicates=0))
    with pytest.raises(ConfigError, match="bootstrap intervals"):
        study_of(m, 0, B=1)


def test_park2011_preset_end_to_end(tmp_path):
    from irsim.runner import compose_config, run

    cfg = compose_config(["experiment=park2011", "experiment.samples=20",
                          "experiment.B=100", "collection.systems=15", "quiet=true"])
    assert cfg.experiment.sizes == [5, 10, 20] and len(cfg.experiment.alpha) == 10
    tables = run(cfg, tmp_path)
    cov = tables["coverage"].to_pandas()
    assert len(cov) == 6 * 3 * 10 and set(cov.metric) == {"AP"}
    assert set(cov.intervals) == {15 * 20}
    report = (tmp_path / "report.md").read_text()
    assert "Coverage of confidence intervals" in report and "coverage_AP.png" in report
    assert (tmp_path / "coverage_AP.png").stat().st_size > 20_000
    assert (tmp_path / "results" / "coverage.parquet").exists()


def test_logit_methods_refuse_scores_outside_the_unit_interval():
    """studentised_logit (and logit in the library) works on logits of means: a score
    outside [0, 1] is refused, naming where it is, never clamped; the other methods take
    any real scores and give scipy's t interval on them (issue 16)."""
    from irsim.errors import InputError

    rng = np.random.default_rng(3)
    values = rng.uniform(0, 1, size=(1, 4, 12))
    values[0, 2, 7] = 1.25  # a score of a measure that is not a share
    m = ScoreMatrix(values, ["X"], ["a", "b", "c", "d"], [str(t) for t in range(12)])
    with pytest.raises(ConfigError, match="studentised_logit needs scores in \\[0, 1\\], "
                                          "but X of system 'c' on topic '7' is 1.25"):
        study_of(m, 0, methods=["t", "studentised_logit"], sizes=[5])
    with pytest.raises(InputError, match=r"x\[2, 7\] = 1.25"):
        mean_ci(values[0], method="logit")
    with pytest.raises(InputError, match="theta_star"):
        bootstrap_ci(0.5, np.array([0.2, 0.4, -0.1, 0.6]), method="studentised_logit", n=4)
    ci = mean_ci(values[0], method="t").confidence_interval  # other methods: any scores
    ref = sps.t.interval(0.95, 11, loc=values[0].mean(axis=1),
                         scale=sps.sem(values[0], axis=1))
    np.testing.assert_allclose([ci.low, ci.high], ref, rtol=1e-12)
    assert study_of(m, 0, methods=["t", "bca"], sizes=[5]).config.methods == ["t", "bca"]
