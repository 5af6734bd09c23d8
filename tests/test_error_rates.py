"""Sanderson-Zobel error rates against a brute-force loop (scipy tests per trial), the
exponential extrapolation, the other tables, sharding and the preset end to end."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import SHARED_DATA, urbano_matrix
from scipy import stats as sps
from test_swap import assert_identical

from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments import Shards
from irsim.experiments.error_rates import SD_STREAM, STREAM, Config, fit_growth, make
from irsim.kit.topicsets import kept_systems
from irsim.sampling.subsets import subset_indices

WINDOWS = ((0.01, 0.05), (0.0, 0.05))


# the bin layouts written out (not imported from the code): (width, bins), the last bin open
ABS_BINS = (0.01, 21)
REL_BINS = (0.05, 20)


def bin_of(lay, v):
    width, count = lay
    return min(int(math.floor(v / width + 1e-9)), count - 1)


def p_value(test, z):
    if test == "t":
        return float(sps.ttest_rel(z, np.zeros_like(z)).pvalue)
    k, m = int((z > 0).sum()), int((z != 0).sum())
    return 1.0 if m == 0 else float(sps.binomtest(k, m, 0.5).pvalue)


def in_win(p, lo, hi):
    return (not math.isnan(p)) and p <= hi and (p >= lo if lo == 0 else p > lo)


def error_study(matrix, *, seed=0, shards=None, **params):
    """The study of `params` (Config fields) on `matrix`, as the CLI makes it."""
    return make(Config(**params), matrix, seed=seed, shards=shards or Shards())


def reference(matrix, study, drop_bottom, tests):
    """Loops over pairs and trials; scipy tests on each first set. The topic sets replay the
    study's draws (subset_indices) so that counts compare exactly; the sampler and the study's
    expected counts are checked independently of it (exhaustive enumeration of the schemes'
    definitions) in tests/test_reference_sampler.py."""
    x = matrix.metric(matrix.metrics[0])
    keep = kept_systems(matrix, drop_bottom, matrix.metrics[0])
    x = x[keep]
    s, n = x.shape
    tol = 1e-9 * float(np.abs(x).max())  # ties: |d| <= 1e-9 max|x|
    conds = [("none", 0.0, 1.0)] + [(t, lo, hi) for t in tests for lo, hi in WINDOWS]
    trials = study.errors.trials
    out = {}
    for scheme, size in study.configs:
        idx = subset_indices(scheme, study.seed, STREAM, n, size, 0, trials)
        comps = np.zeros((len(conds), 2, 21), np.int64)
        errs = np.zeros_like(comps)
        dep = np.zeros(trials, np.int64)
        for a in range(s):
            for b in range(a + 1, s):
                trial_d, trial_err = [], []
                for i in range(trials):
                    q1, q2 = idx[i, 0], idx[i, 1]
                    ma, mb = float(np.mean(x[a, q1])), float(np.mean(x[b, q1]))
                    d = ma - mb
                    d2 = float(np.mean(x[a, q2])) - float(np.mean(x[b, q2]))
                    d = 0.0 if abs(d) <= tol else d
                    d2 = 0.0 if abs(d2) <= tol else d2
                    err = d * d2 < 0 or (d == 0) != (d2 == 0)
                    small = min(ma, mb)
                    rel = 0.0 if d == 0 else (abs(d) / small if small > 0 else 1e9)
                    bins = (bin_of(ABS_BINS, abs(d)), bin_of(REL_BINS, rel))
                    z = x[a, q1] - x[b, q1]
                    for w, (test, lo, hi) in enumerate(conds):
                        if test != "none" and not in_win(p_value(test, z), lo, hi):
                            continue
                        for kind in range(2):
                            comps[w, kind, bins[kind]] += 1
                            errs[w, kind, bins[kind]] += err
                    trial_d.append((abs(d), i))
                    trial_err.append(err)
                for rank, (_, i) in enumerate(sorted(trial_d)):
                    dep[rank] += trial_err[i]
        out[(scheme, size)] = (comps, errs, dep)
    return out, conds


@pytest.mark.slow
def test_counters_equal_a_loop_with_scipy_tests():
    m = urbano_matrix("adhoc8_ap", "AP", systems=9)
    study, data = error_study(m, sampling=["disjoint", "replacement"], subset_sizes=[6, 20],
                              trials=16, tests=["t", "sign"], windows=WINDOWS,
                              drop_bottom=0.25, seed=5, sd_sizes=[5], sd_samples=5)
    assert len(study.systems) == 7
    tables, _ = run_study(study, data)
    ref, conds = reference(m, study, 0.25, ("t", "sign"))
    er = tables["error_rates"].to_pandas()
    dep = tables["error_dependency"].to_pandas()
    for (scheme, size), (comps, errs, dep_ref) in ref.items():
        for w, (test, lo, hi) in enumerate(conds):
            for kind, name in enumerate(("absolute", "relative")):
                rows = er[(er.sampling == scheme) & (er.subset_size == size) & (er.test == test)
                          & (er.p_lo == lo) & (er.p_hi == hi) & (er.bin_kind == name)]
                n_bins = ABS_BINS[1] if kind == 0 else REL_BINS[1]
                np.testing.assert_array_equal(rows.comparisons, comps[w, kind, :n_bins],
                                              err_msg=f"{scheme} {size} {test} {lo} {name}")
                np.testing.assert_array_equal(rows.errors, errs[w, kind, :n_bins])
        assert comps[0, 0].sum() == 21 * 16
        got = dep[(dep.sampling == scheme) & (dep.subset_size == size)]
        np.testing.assert_array_equal(got.errors, dep_ref)
        assert (got.pairs == 21).all()
    assert (er[er.test != "none"].comparisons > 0).any()  # some trials are significant


def test_full_set_and_sd_tables_equal_direct_computation():
    m = urbano_matrix("adhoc8_ap", "AP", systems=12)
    tables, _ = run_study(*error_study(m, subset_sizes=[5], trials=4, tests=["t", "wilcoxon"],
                                       seed=2, sd_sizes=[5, 20], sd_samples=40,
                                       full_alpha=0.05))
    x = m.metric("AP")
    full = tables["full_significance"].to_pandas()
    for test in ("t", "wilcoxon"):
        pairs = np.zeros(REL_BINS[1], np.int64)
        sig = np.zeros(REL_BINS[1], np.int64)
        for a in range(12):
            for b in range(a + 1, 12):
                z = x[a] - x[b]
                if test == "t":
                    p = sps.ttest_rel(x[a], x[b]).pvalue
                else:
                    p = sps.wilcoxon(x[a], x[b]).pvalue
                ma, mb = x[a].mean(), x[b].mean()
                j = bin_of(REL_BINS, abs(ma - mb) / min(ma, mb)) if z.any() else 0
                pairs[j] += 1
                sig[j] += p <= 0.05
        rows = full[(full.test == test) & (full.bin_kind == "relative")]
        np.testing.assert_array_equal(rows.pairs, pairs)
        np.testing.assert_array_equal(rows.significant, sig)
    sd = tables["sd_by_size"].to_pandas()
    for size in (5, 20):
        idx = subset_indices("independent", 2, SD_STREAM, 50, size, 0, 40, sets=1)[:, 0]
        per_system = [np.std([x[s, q].mean() for q in idx], ddof=1) for s in range(12)]
        row = sd[sd.sample_size == size].iloc[0]
        assert row.mean_sd == pytest.approx(np.mean(per_system), rel=1e-10)
        assert row.max_sd == pytest.approx(max(per_system), rel=1e-10)
    assert sd.mean_sd.iloc[0] > sd.mean_sd.iloc[1]  # larger samples, smaller sd


def test_extrapolation_recovers_exponential_parameters():
    sizes = np.array([5, 10, 15, 20, 25])
    for a, b in [(-1.2, -0.05), (0.3, -0.11), (-2.0, 0.02)]:
        fit = fit_growth(sizes, np.exp(a + b * sizes))
        assert fit.a == pytest.approx(a, abs=1e-12) and fit.b == pytest.approx(b, abs=1e-12)
        assert fit.r2 == pytest.approx(1.0) and fit.points == 5
        assert float(fit.predict(50)) == pytest.approx(math.exp(a + 50 * b), rel=1e-10)
    rng = np.random.default_rng(0)
    noisy = np.exp(-0.7 - 0.06 * sizes + rng.normal(0, 0.02, (2000, 5)))
    fits = [fit_growth(sizes, r) for r in noisy]
    assert np.mean([f.a for f in fits]) == pytest.approx(-0.7, abs=0.003)
    assert np.mean([f.b for f in fits]) == pytest.approx(-0.06, abs=0.0002)
    # zero rates cannot be logged: left out; fewer than two points: no fit
    f = fit_growth(sizes, [0.2, 0.1, 0.0, 0.025, float("nan")])
    assert f.points == 3 and fit_growth([5, 10], [0.0, 0.1]) is None


def test_extrapolation_table_fits_the_error_rates_table():
    m = urbano_matrix("adhoc8_ap", "AP", systems=30)
    tables, _ = run_study(*error_study(m, subset_sizes=[5, 10, 15, 20], trials=10, tests=["t"],
                                       windows=[[0.0, 0.05]], target_sizes=[50, 100],
                                       min_comparisons=20, seed=1, sd_sizes=[5]))
    er = tables["error_rates"].to_pandas()
    ex = tables["error_extrapolation"].to_pandas()
    assert {"metric", "bin_lo", "bin_hi", "test", "a", "b", "target_size",
            "predicted_rate"} <= set(ex.columns)
    assert len(ex) > 20 and set(ex.target_size) == {50, 100}
    for _, row in ex.sample(10, random_state=0).iterrows():
        pts = er[(er.test == row.test) & (er.p_lo == row.p_lo) & (er.bin_kind == row.bin_kind)
                 & np.isclose(er.bin_lo, row.bin_lo)]
        pts = pts[(pts.comparisons >= 20) & (pts.errors > 0)]
        fit = fit_growth(pts.subset_size, pts.error_rate)
        assert (fit.a, fit.b, fit.points) == pytest.approx((row.a, row.b, row.points))
        assert row.predicted_rate == pytest.approx(math.exp(row.a + row.b * row.target_size))
    # error rates fall with the set size (bin 0 stays near 50%): negative fitted slopes
    populated = ex[(ex.test == "none") & (ex.bin_kind == "absolute") & (ex.bin_lo >= 0.02)
                   & (ex.bin_lo <= 0.1)]
    assert (populated.b < 0).all()


def test_drop_bottom_leaves_out_the_lowest_means():
    m = urbano_matrix("adhoc8_ap", "AP")
    keep = kept_systems(m, 0.25, "AP")
    means = m.metric("AP").mean(axis=1)
    assert len(keep) == 129 - 32
    dropped = np.setdiff1d(np.arange(129), keep)
    assert means[dropped].max() <= means[keep].min()


def test_shard_sizes_do_not_change_tables():
    m = urbano_matrix("adhoc7_ap", "AP", systems=35)  # 595 pairs: 3 pair units
    kw = dict(sampling=["disjoint", "replacement"], subset_sizes=[5, 15], trials=12,
              tests=["t", "sign"], seed=4, sd_sizes=[5, 10], sd_samples=6)
    base, info = run_study(*error_study(m, shards=Shards(10_000), **kw))
    assert info["shards"] == 1
    other, info = run_study(*error_study(m, shards=Shards(1), **kw))
    assert info["shards"] == 3
    assert_identical(base, other)


def test_checkpoints_resume_to_the_same_tables(tmp_path):
    # the counters and the sd table (one shard provides it) through checkpoint files and back
    m = urbano_matrix("adhoc7_ap", "AP", systems=30)
    study, data = error_study(m, subset_sizes=[5, 10], trials=6, tests=["t"], seed=1,
                              sd_sizes=[5], sd_samples=4, shards=Shards(1))
    base, info = run_study(study, data, checkpoint_dir=tmp_path)
    assert info["shards_computed"] == 2
    again, info = run_study(study, data, checkpoint_dir=tmp_path)
    assert info["shards_resumed"] == 2 and info["shards_computed"] == 0
    assert_identical(base, again)
    assert again["sd_by_size"].column("mean_sd").to_pylist()[0] > 0


@pytest.mark.parametrize("kwargs,needle", [
    (dict(sampling=["disjoint"], subset_sizes=[30]), "n/2"),
    (dict(sampling=["replacement"], subset_sizes=[60]), "> n = 50"),
    (dict(subset_sizes=[]), "experiment.subset_sizes must list at least one size"),
    (dict(tests=["tukey_hsd"]), "not a paired test"),
    (dict(tests=["tt"]), "unknown test 'tt'"),
    (dict(windows=[[0.05, 0.01]]), "0 <= lo < hi <= 1"),
    (dict(windows=[0.05]), "experiment.windows must hold [lo, hi] pairs"),
    (dict(windows=None), "experiment.windows must list at least one p-value window"),
    (dict(drop_bottom=1.0), "experiment.drop_bottom must be in [0, 1)"),
    (dict(drop_metric="P@10"), "unknown experiment.drop_metric 'P@10'"),
    (dict(subset_sizes=[1, 5]), ">= 2 for significance tests"),
    (dict(sd_sizes=[60]), "experiment.sd_sizes: 60 > n = 50"),
    (dict(sd_samples=1), "experiment.sd_samples must be an integer >= 2, got 1"),
    (dict(trials=0), "experiment.trials must be an integer >= 1"),
    (dict(test_B=0), "experiment.test_B"),
    (dict(full_alpha=1.5), "full_alpha"),
    (dict(shards=Shards(0)), "engine.shard_items must be an integer >= 1"),
])
def test_bad_parameters_raise_config_errors(kwargs, needle):
    m = urbano_matrix("adhoc8_ap", "AP", systems=5)
    with pytest.raises(ConfigError) as err:
        error_study(m, **kwargs)
    assert needle in str(err.value)


def test_defaults_live_in_config():
    # the CLI's experiment=error_rates is the Config dataclass: same defaults as Python
    from irsim.runner import compose_config

    cfg = compose_config(["experiment=error_rates"])
    assert list(cfg.experiment.subset_sizes) == Config().subset_sizes == [5, 10, 15, 20, 25]
    assert [list(w) for w in cfg.experiment.windows] == Config().windows


@pytest.mark.slow
def test_sanderson_zobel_preset_end_to_end(tmp_path):
    import pyarrow.parquet as pq

    from irsim.runner import compose_config, run

    cfg = compose_config(["experiment=sanderson_zobel2005", f"data_dir={SHARED_DATA}",
                          "offline=true", "quiet=true", "experiment.trials=3",
                          "experiment.subset_sizes=[5,25]", "experiment.tests=[t]"])
    assert cfg.collection.name == "adhoc8" and cfg.experiment.drop_bottom == 0.25
    tables = run(cfg, tmp_path)
    er = pq.read_table(tmp_path / "results" / "error_rates.parquet")
    assert er.column_names == ["metric", "sampling", "subset_size", "bin_kind", "bin_lo",
                               "bin_hi", "test", "p_lo", "p_hi", "comparisons", "errors",
                               "error_rate"]
    df = er.to_pandas()
    assert set(df.metric) == {"AP", "P@10"} and set(df.sampling) == {"disjoint", "replacement"}
    pairs = 97 * 96 // 2  # the bottom 25% of 129 runs by MAP left out
    none = df[(df.test == "none") & (df.bin_kind == "absolute")]
    assert (none.groupby(["metric", "sampling", "subset_size"]).comparisons.sum()
            == 3 * pairs).all()
    for name in ("error_extrapolation", "full_significance", "sd_by_size", "error_dependency"):
        assert tables[name].num_rows > 0, name
    report = (tmp_path / "report.md").read_text()
    for png in ("error_rates_AP_disjoint.png", "error_rates_P_10_replacement.png",
                "sd_by_size.png", "error_dependency_AP.png"):
        assert png in report and (tmp_path / png).stat().st_size > 20_000
