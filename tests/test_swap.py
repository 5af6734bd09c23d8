"""Swap rates under topic sampling (Sakai; Voorhees-Buckley) against a brute-force loop; the
subset samplers; sharding and engine=ray (one Ray instance for the three topic-sampling
studies); the Sakai preset end to end."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import SHARED_DATA, urbano_matrix

from irsim.data.matrix import ScoreMatrix
from irsim.engine import run_study
from irsim.errors import ConfigError, python_parameters
from irsim.experiments import Shards
from irsim.experiments.swap import STREAM, Config, make
from irsim.sampling.subsets import (
    SCHEMES,
    check_subset_size,
    subset_counts,
    subset_indices,
)


def assert_identical(a: dict, b: dict) -> None:
    """Tables bit-identical (floats compared by their bits, so NaN equals NaN)."""
    assert set(a) == set(b)
    for name in a:
        ta, tb = a[name], b[name]
        assert ta.schema == tb.schema, name
        for col in ta.column_names:
            xa = ta.column(col).to_numpy(zero_copy_only=False)
            xb = tb.column(col).to_numpy(zero_copy_only=False)
            if xa.dtype.kind == "f":
                xa, xb = xa.view(np.int64), xb.view(np.int64)
            assert xa.tolist() == xb.tolist(), (name, col)


# -- samplers ------------------------------------------------------------------------------
@pytest.mark.parametrize("n,size", [(50, 25), (42, 20), (11, 5), (7, 1)])
def test_disjoint_sets_never_overlap(n, size):
    idx = subset_indices("disjoint", 3, "t", n, size, 0, 700)
    assert idx.shape == (700, 2, size)
    for row in idx:
        first, second = set(row[0].tolist()), set(row[1].tolist())
        assert len(first) == len(second) == size
        assert not first & second
    assert idx.min() >= 0 and idx.max() < n


def test_independent_sets_have_no_duplicates_but_overlap():
    idx = subset_indices("independent", 1, "t", 50, 30, 0, 500)
    overlaps = []
    for row in idx:
        assert len(set(row[0].tolist())) == 30 and len(set(row[1].tolist())) == 30
        overlaps.append(len(set(row[0].tolist()) & set(row[1].tolist())))
    assert min(overlaps) >= 10  # 30 + 30 > 50
    # hypergeometric overlap: mean c^2/n, variance c (c/n)(1 - c/n)(n - c)/(n - 1); within
    # 4 standard errors over the 500 trials
    c, n = 30, 50
    var = c * (c / n) * (1 - c / n) * (n - c) / (n - 1)
    assert abs(np.mean(overlaps) - c * c / n) < 4 * math.sqrt(var / len(overlaps))
    assert np.var(overlaps, ddof=1) == pytest.approx(var, rel=4 * math.sqrt(2 / 499))


def test_replacement_sets_may_exceed_half_and_repeat_topics():
    assert check_subset_size("replacement", 50, 40) == 40
    assert check_subset_size("replacement", 50, 50) == 50
    c = subset_counts("replacement", 0, "t", 50, 40, 0, 300)
    assert (c.sum(axis=2) == 40).all()
    assert (c.max(axis=2) >= 2).mean() > 0.99  # duplicates (birthday: 40 draws of 50)
    for scheme in ("disjoint",):
        with pytest.raises(ConfigError, match="n/2"):
            check_subset_size(scheme, 50, 26)
    for scheme in ("independent", "replacement"):
        with pytest.raises(ConfigError, match="> n = 50"):
            check_subset_size(scheme, 50, 51)
    with pytest.raises(ConfigError, match="size n = 50"):
        check_subset_size("bootstrap", 50, 25)
    with pytest.raises(ConfigError, match=">= 1"):
        check_subset_size("replacement", 50, 0)


def test_samplers_do_not_depend_on_the_trial_split():
    for scheme in SCHEMES:
        size = 10 if scheme != "bootstrap" else 20
        whole = subset_indices(scheme, 5, "t", 20, size, 0, 777)
        parts = np.concatenate([subset_indices(scheme, 5, "t", 20, size, a, b)
                                for a, b in [(0, 1), (1, 250), (250, 251), (251, 777)]])
        np.testing.assert_array_equal(whole, parts)
    a = subset_indices("disjoint", 5, "t", 20, 10, 0, 10)
    b = subset_indices("disjoint", 6, "t", 20, 10, 0, 10)
    assert not (a == b).all()


# -- the study against a loop --------------------------------------------------------------
def reference(matrix: ScoreMatrix, metric: str, scheme: str, size: int, trials: int,
              seed: int):
    """Sakai's Figure 1 as loops over trials and pairs. Shares nothing with the study but
    the topic sets: it replays the study's draws (subset_indices) so that counts can be
    compared exactly; the sampler's distribution and the study's counts under every scheme
    are checked without it against an exhaustive enumeration of the definitions in
    tests/test_reference_sampler.py. Its own bin edges (absolute: width 0.01, 21 bins, last
    open; relative: width 5%, 20 bins, last open) and its own tie tolerance (1e-9 * max |x|)."""
    x = matrix.metric(metric)
    s, n = x.shape
    idx = subset_indices(scheme, seed, STREAM, n, size, 0, trials)
    tol = 1e-9 * float(np.abs(x).max())
    comps = {"a": np.zeros(21, np.int64), "r": np.zeros(20, np.int64)}
    swaps = {"a": np.zeros(21, np.int64), "r": np.zeros(20, np.int64)}
    max_perf, unique, overlap = -math.inf, 0, 0
    for i in range(trials):
        q1, q2 = idx[i, 0].tolist(), idx[i, 1].tolist()
        unique += len(set(q1)) + len(set(q2))
        overlap += len(set(q1) & set(q2))
        m1 = [float(np.mean(x[sy, q1])) for sy in range(s)]
        m2 = [float(np.mean(x[sy, q2])) for sy in range(s)]
        max_perf = max(max_perf, *m1, *m2)
        for a in range(s):
            for b in range(a + 1, s):
                d, d2 = m1[a] - m1[b], m2[a] - m2[b]
                d = 0.0 if abs(d) <= tol else d
                d2 = 0.0 if abs(d2) <= tol else d2
                swap = d * d2 < 0 or (d == 0) != (d2 == 0)
                small = min(m1[a], m1[b])
                rel = 0.0 if d == 0 else (abs(d) / small if small > 0 else 1e9)
                for key, width, count, v in (("a", 0.01, 21, abs(d)), ("r", 0.05, 20, rel)):
                    j = min(int(math.floor(v / width + 1e-9)), count - 1)
                    comps[key][j] += 1
                    swaps[key][j] += swap
    return comps, swaps, max_perf, unique, overlap


def swap_study(matrix, *, seed=0, shards=None, **params):
    """The study of `params` (Config fields) on `matrix`, as the CLI makes it."""
    return make(Config(**params), matrix, seed=seed, shards=shards or Shards())


def check_against_reference(matrix, metric, configs, trials, seed):
    study, data = swap_study(
        matrix, sampling=list(dict.fromkeys(c[0] for c in configs)),
        subset_sizes=list(dict.fromkeys(c[1] for c in configs if c[0] != "bootstrap")),
        trials=trials, seed=seed, metrics=[metric])
    tables, _ = run_study(study, data)
    rates = tables["swap_rates"].to_pandas()
    summ = tables["swap_summary"].to_pandas()
    for scheme, size in study.configs:
        comps, swaps, max_perf, unique, overlap = reference(matrix, metric, scheme, size,
                                                            trials, seed)
        for key, kind in (("a", "absolute"), ("r", "relative")):
            rows = rates[(rates.sampling == scheme) & (rates.subset_size == size)
                         & (rates.bin_kind == kind)]
            np.testing.assert_array_equal(rows.comparisons.to_numpy(), comps[key])
            np.testing.assert_array_equal(rows.swaps.to_numpy(), swaps[key])
        row = summ[(summ.sampling == scheme) & (summ.subset_size == size)].iloc[0]
        assert row.max_performance == pytest.approx(max_perf, rel=1e-12)
        assert row.mean_unique_topics == unique / (2 * trials)
        assert row.mean_overlap == overlap / trials
    return tables


def test_counters_equal_a_loop_on_real_ap():
    m = urbano_matrix("adhoc8_ap", "AP", systems=7)
    check_against_reference(m, "AP", [("disjoint", 20), ("independent", 20),
                                      ("replacement", 20), ("bootstrap", 50)],
                            trials=260, seed=7)


def test_counters_equal_a_loop_with_ties_of_a_discrete_metric():
    # P@10 means are multiples of 0.1/c: exact ties (d = 0) and differences on bin edges
    m = urbano_matrix("adhoc5_p10", "P@10", systems=7)
    tables = check_against_reference(m, "P@10", [("disjoint", 12), ("replacement", 25)],
                                     trials=120, seed=2)
    summ = tables["swap_summary"].to_pandas()
    assert (summ.mean_overlap[summ.sampling == "disjoint"] == 0).all()


def test_summary_follows_the_rates():
    m = urbano_matrix("adhoc8_ap", "AP", systems=25)
    tables, _ = run_study(*swap_study(m, sampling=["disjoint", "independent"],
                                      subset_sizes=[20], trials=250, seed=1))
    rates = tables["swap_rates"].to_pandas()
    summ = tables["swap_summary"].to_pandas()
    assert list(tables["swap_summary"].column_names[:10]) == [
        "metric", "sampling", "subset_size", "confidence", "required_diff", "max_performance",
        "relative_diff", "sensitivity", "mean_unique_topics", "mean_overlap"]
    for _, row in summ.iterrows():
        r = rates[(rates.sampling == row.sampling) & (rates.bin_kind == "absolute")]
        assert r.comparisons.sum() == 300 * 250 == row.comparisons
        ok = r[r.bin_lo >= row.required_diff - 1e-12]
        bad = r[r.bin_lo < row.required_diff - 1e-12]
        assert (ok.swap_rate.fillna(0) <= 1 - row.confidence).all()
        assert (bad.swap_rate.iloc[-1] > 1 - row.confidence) if len(bad) else True
        assert row.sensitivity == pytest.approx(ok.comparisons.sum() / row.comparisons)
        assert row.relative_diff == pytest.approx(row.required_diff / row.max_performance)
    # the paper's Hypothesis 1: overlapping (independent) sets swap less than disjoint ones
    dis = rates[(rates.sampling == "disjoint") & (rates.bin_kind == "absolute")]
    ind = rates[(rates.sampling == "independent") & (rates.bin_kind == "absolute")]
    assert (ind.swap_rate.to_numpy()[:8] < dis.swap_rate.to_numpy()[:8]).all()


def test_shard_sizes_do_not_change_tables():
    m = urbano_matrix("adhoc7_ap", "AP", systems=40)  # 780 pairs: several pair units
    kw = dict(sampling=["disjoint", "replacement"], subset_sizes=[10, 25], trials=600, seed=3)
    base, info = run_study(*swap_study(m, shards=Shards(10_000, 10_000), **kw))
    assert info["shards"] == 1
    for sp, sr in [(256, 250), (600, 333), (1, 1)]:
        other, info = run_study(*swap_study(m, shards=Shards(sp, sr), **kw))
        assert info["shards"] > 1
        assert_identical(base, other)


def test_checkpoints_resume_to_the_same_tables(tmp_path):
    # every field (counters, the max, topic counts) goes through a checkpoint file and back
    m = urbano_matrix("adhoc7_ap", "AP", systems=30)
    study, data = swap_study(m, sampling=["replacement"], subset_sizes=[10], trials=500,
                             seed=4, shards=Shards(256, 250))
    base, info = run_study(study, data, checkpoint_dir=tmp_path)
    assert info["shards_computed"] == 4
    again, info = run_study(study, data, checkpoint_dir=tmp_path)
    assert info["shards_resumed"] == 4 and info["shards_computed"] == 0
    assert_identical(base, again)


@pytest.mark.parametrize("kwargs,needle", [
    (dict(sampling=["disjoint"], subset_sizes=[26]), "n/2"),
    (dict(sampling=["replacement"], subset_sizes=[51]), "> n = 50"),
    (dict(sampling=["disjiont"]), "did you mean 'disjoint'"),
    (dict(sampling=[]), "experiment.sampling must name at least one scheme"),
    (dict(trials=0), "experiment.trials must be an integer >= 1"),
    (dict(confidence=[0.95, 1.0]), "experiment.confidence must be inside (0, 1)"),
    (dict(subset_sizes=[0]), "experiment.subset_sizes must hold integers >= 1"),
    (dict(metrics=["nDGC@10"]), "unknown metric 'nDGC@10'"),
    (dict(shards=Shards(0, None)), "engine.shard_items must be an integer >= 1"),
    (dict(shards=Shards(None, -1)), "engine.shard_replicates must be an integer >= 1"),
])
def test_bad_parameters_raise_config_errors(kwargs, needle):
    m = urbano_matrix("adhoc8_ap", "AP", systems=5)
    with pytest.raises(ConfigError) as err:
        swap_study(m, **kwargs)
    assert needle in str(err.value)


def test_messages_name_python_keywords_from_python():
    m = urbano_matrix("adhoc8_ap", "AP", systems=5)
    with python_parameters(), pytest.raises(ConfigError) as err:
        swap_study(m, sampling=["disjoint"], subset_sizes=[26])
    assert str(err.value) == ("subset_sizes: 26 > n/2 = 25.0 for disjoint sampling of 2 sets "
                              "from 50 topics")
    with python_parameters(), pytest.raises(ConfigError, match=r"^trials must be"):
        swap_study(m, trials=0)
    with python_parameters(), pytest.raises(ConfigError, match=r"^shard_items must be"):
        swap_study(m, shards=Shards(0, None))


# -- engine=ray: one instance for the three topic-sampling studies --------------------------
@pytest.mark.ray
def test_ray_equals_local_for_swap_error_rates_and_effort():
    import ray

    from irsim.data.collection import DocCollection
    from irsim.data.synthetic import synthetic_trec
    from irsim.experiments import effort, error_rates

    m = urbano_matrix("adhoc6_ap", "AP", systems=30)  # 435 pairs: 2 pair units
    runs, qrels = synthetic_trec(runs=12, topics=20, docs_per_topic=150, depth=120, seed=4,
                                 quality_sd=0.4)
    studies = [
        swap_study(m, sampling=["disjoint", "replacement"], subset_sizes=[20], trials=500,
                   seed=2, shards=Shards(256, 250)),
        error_rates.make(error_rates.Config(subset_sizes=[5, 15], trials=20,
                                            tests=["t", "paired_bootstrap"], test_B=100,
                                            drop_bottom=0.25, sd_sizes=[5], sd_samples=10),
                         m, seed=2, shards=Shards(256)),
        effort.make(effort.Config(subset_sizes=[4, 8], trials=15),
                    DocCollection(runs, qrels, 120), seed=2, shards=Shards()),
    ]
    local = [run_study(s, d)[0] for s, d in studies]
    # address="local": a fresh instance even if another session's cluster is running here
    ray.init(address="local", num_cpus=2, include_dashboard=False,
             _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        for (study, data), expected in zip(studies, local, strict=True):
            tables, info = run_study(study, data, engine="ray", engine_options={"workers": 2})
            assert info["engine"] == "ray"
            assert_identical(tables, expected)
    finally:
        ray.shutdown()


# -- the preset ------------------------------------------------------------------------------
@pytest.mark.slow
def test_sakai_preset_end_to_end(tmp_path):
    import pyarrow.parquet as pq

    from irsim.runner import compose_config, run

    cfg = compose_config(["experiment=sakai_topic_sampling", f"data_dir={SHARED_DATA}",
                          "offline=true", "quiet=true", "experiment.trials=250"])
    assert cfg.collection.name == "adhoc8" and list(cfg.experiment.subset_sizes) == [20]
    tables = run(cfg, tmp_path)
    rates = pq.read_table(tmp_path / "results" / "swap_rates.parquet")
    assert rates.column_names == ["metric", "sampling", "subset_size", "bin_kind", "bin_lo",
                                  "bin_hi", "comparisons", "swaps", "swap_rate"]
    summ = tables["swap_summary"].to_pandas()
    assert set(summ.metric) == {"AP", "P@10", "RR"}
    assert set(summ.sampling) == {"disjoint", "replacement", "independent"}
    assert (summ.comparisons == 129 * 128 // 2 * 250).all()
    # Sakai's Table 5: distinct topics per set and shared topics (expected values for n=50)
    rep = summ[summ.sampling == "replacement"].iloc[0]
    assert rep.mean_unique_topics == pytest.approx(50 * (1 - (49 / 50) ** 20), abs=0.1)
    ind = summ[summ.sampling == "independent"].iloc[0]
    assert ind.mean_unique_topics == 20 and ind.mean_overlap == pytest.approx(8.0, abs=0.35)
    report = (tmp_path / "report.md").read_text()
    assert "Swap-rate summary" in report and "swap_rates_P_10.png" in report
    for metric in ("AP", "P_10", "RR"):
        assert (tmp_path / f"swap_rates_{metric}.png").stat().st_size > 20_000


def test_config_rejects_oversized_disjoint_sets_before_running():
    # the CLI turns this ConfigError into one line and exit code 2 (tests/test_cli.py)
    from irsim.experiments import build_study
    from irsim.runner import compose_config

    cfg = compose_config(["experiment=swap", "experiment.sampling=disjoint",
                          "experiment.subset_sizes=[30]", "collection=synthetic_scores"])
    with pytest.raises(ConfigError, match=r"30 > n/2 = 25.0 for disjoint"):
        build_study(cfg)
    cfg = compose_config(["experiment=swap", "experiment.sampling=[replacement,bootstrap]",
                          "experiment.subset_sizes=[40]", "collection=synthetic_scores",
                          "experiment.trials=5", "engine.shard_items=300"])
    study, _ = build_study(cfg)
    assert study.configs == (("replacement", 40), ("bootstrap", 50))
    assert (study.shard_items, study.shard_replicates) == (300, 1000)
