"""Discriminative power (Sakai 2006) against a slow reference with plain loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import urbano_matrix

from irsim.data.matrix import ScoreMatrix
from irsim.engine import run_study
from irsim.engine.partials import Slab
from irsim.errors import ConfigError
from irsim.experiments import Shards
from irsim.experiments.discpower import PAIRED_STREAM, UNPAIRED_STREAM, Config, DiscPower, make
from irsim.sampling.topics import bootstrap_indices


def reference(matrix: ScoreMatrix, metric: str, B: int, seed: int, alphas):
    """Sakai's Figures 1-6 written as loops over pairs and bootstrap samples."""
    x = matrix.metric(metric)
    s, n = x.shape
    paired_idx = bootstrap_indices(seed, PAIRED_STREAM, n, 0, B)
    unpaired_idx = bootstrap_indices(seed, UNPAIRED_STREAM, 2 * n, 0, B)
    out = {}
    for a in range(s):
        for b in range(a + 1, s):
            z = x[a] - x[b]
            t_obs = tstat(z)
            w = z - z.mean()
            count, stats = 0, []
            for rep in range(B):
                wb = w[paired_idx[rep]]
                tb = tstat(wb)
                if abs(tb) >= abs(t_obs) - 1e-9 * max(abs(t_obs), 1.0):
                    count += 1
                stats.append((-abs(tb), rep, abs(wb.mean())))
            stats.sort()
            v = np.concatenate([x[a], x[b]])
            d_obs = x[a].mean() - x[b].mean()
            scale = abs(x[a].mean()) + abs(x[b].mean())
            ucount, ustats = 0, []
            for rep in range(B):
                vb = v[unpaired_idx[rep]]
                d = vb[:n].mean() - vb[n:].mean()
                if abs(d) >= abs(d_obs) - 1e-9 * max(abs(d_obs), scale):
                    ucount += 1
                ustats.append((-abs(d), rep))
            ustats.sort()
            est_p = {al: stats[math.ceil(al * B) - 1][2] for al in alphas}
            est_u = {al: -ustats[math.ceil(al * B) - 1][0] for al in alphas}
            out[(a, b)] = (count, ucount, est_p, est_u, z.mean())
    return out


def tstat(z):
    sd = np.std(z, ddof=1)
    if sd * sd <= 1e-12 * np.mean(z * z):
        return 0.0
    return z.mean() / (sd / math.sqrt(len(z)))


def check_against_reference(matrix, B, seed, alphas, **kw):
    ref = reference(matrix, matrix.metrics[0], B, seed, alphas)
    tables, _ = run_study(DiscPower.of(B=B, seed=seed, alpha=alphas, **kw), matrix)
    asl = tables["asl"].to_pandas()
    sysidx = {k: i for i, k in enumerate(matrix.systems)}
    pairs = len(ref)
    for test, col in (("paired_bootstrap", 0), ("unpaired_bootstrap", 1)):
        rows = asl[asl.test == test]
        assert len(rows) == pairs
        got = {(sysidx[r.system_a], sysidx[r.system_b]): r.asl for r in rows.itertuples()}
        for key, val in ref.items():
            assert got[key] == val[col] / B, (test, key)
    diffs = asl[asl.test == "paired_bootstrap"]["diff"].to_numpy()
    np.testing.assert_allclose(diffs, [v[4] for v in ref.values()], rtol=0, atol=1e-15)
    dp = tables["discpower"].to_pandas()
    for alpha in alphas:
        for test, col in (("paired_bootstrap", 2), ("unpaired_bootstrap", 3)):
            row = dp[(dp.test == test) & (dp.alpha == alpha)].iloc[0]
            asls = np.array([v[col - 2] for v in ref.values()]) / B
            assert row.significant == int((asls < alpha).sum())
            assert row.pairs == pairs
            expected = max(v[col][alpha] for v in ref.values())
            assert row.estimated_diff_raw == pytest.approx(expected, rel=1e-12, abs=1e-15)
            # the contracted column: two significant figures (decimal formatting, not the
            # code's rounding helper)
            assert row.estimated_diff == float(f"{row.estimated_diff_raw:.2g}"), (test, alpha)
            assert row.estimated_diff == float(f"{expected:.2g}")
    return tables


def test_real_collection_matches_reference():
    m = urbano_matrix("adhoc8_ap", "AP", systems=7)
    check_against_reference(m, B=300, seed=11, alphas=(0.01, 0.05))


def test_discrete_metric_matches_reference():
    # P@10 takes few distinct values: ties in |t*| and in |d*| are common
    m = urbano_matrix("adhoc5_p10", "P@10", systems=6)
    check_against_reference(m, B=260, seed=5, alphas=(0.05, 0.1))


def test_equal_means_give_asl_one():
    # adhoc8 P@10 has pairs with exactly equal means: every replicate is as extreme
    m = urbano_matrix("adhoc8_p10", "P@10")
    x = m.metric("P@10")
    a, b = np.triu_indices(len(m.systems), 1)
    tied = np.flatnonzero(np.abs((x[a] - x[b]).sum(1)) < 1e-9)
    assert len(tied) > 10
    keep = sorted(set(a[tied][:6]) | set(b[tied][:6]))
    sub = m.select(systems=[m.systems[i] for i in keep])
    tables, _ = run_study(DiscPower.of(B=250, seed=0), sub)
    asl = tables["asl"].to_pandas()
    zero = asl[asl["diff"].abs() < 1e-12]
    assert len(zero) >= 12 and (zero.asl == 1.0).all()


def test_asl_equals_the_stats_library_tests():
    # the study and irsim.stats draw from the same sampler: same seed, same counts
    from irsim.stats import paired_bootstrap, unpaired_bootstrap

    m = urbano_matrix("adhoc8_ap", "AP", systems=12)
    tables, _ = run_study(DiscPower.of(B=500, seed=9), m)
    asl = tables["asl"].to_pandas()
    x = m.metric("AP")
    a, b = np.triu_indices(12, 1)
    p = paired_bootstrap(x[a], x[b], B=500, seed=9, study=PAIRED_STREAM).pvalue
    u = unpaired_bootstrap(x[a], x[b], B=500, seed=9, study=UNPAIRED_STREAM).pvalue
    np.testing.assert_array_equal(asl[asl.test == "paired_bootstrap"].asl.to_numpy(), p)
    np.testing.assert_array_equal(asl[asl.test == "unpaired_bootstrap"].asl.to_numpy(), u)


def test_synthetic_matches_reference():
    rng = np.random.default_rng(0)
    vals = np.clip(rng.normal(0.3, 0.2, (1, 5, 15)) + rng.normal(0, 0.05, (1, 5, 1)), 0, 1)
    m = ScoreMatrix(vals, ["X"], [f"s{i}" for i in range(5)], [str(i) for i in range(15)])
    check_against_reference(m, B=200, seed=2, alphas=(0.05,))


@pytest.mark.parametrize("shard_items,shard_reps", [(1, 1000), (256, 250), (600, 333), (3, 77)])
def test_shard_sizes_do_not_change_tables(shard_items, shard_reps):
    m = urbano_matrix("adhoc7_ap", "AP", systems=40)  # 780 pairs: several pair units
    base, _ = run_study(DiscPower.of(B=700, seed=1, shard_items=10_000, shard_replicates=10_000), m)
    other, info = run_study(
        DiscPower.of(B=700, seed=1, shard_items=shard_items, shard_replicates=shard_reps), m)
    assert info["shards"] > 1
    for name in base:
        assert base[name].equals(other[name]), name


def test_sensitivity_orders_metrics_as_expected():
    # On TREC-8 the paired test finds more significant pairs for AP than for P@10 (Sakai's
    # ranking of metric sensitivity: AP above precision at a cut-off)
    ap = urbano_matrix("adhoc8_ap", "AP", systems=40)
    p10 = urbano_matrix("adhoc8_p10", "P@10", systems=40)
    both = ScoreMatrix.stack([ap, p10])
    tables, _ = run_study(DiscPower.of(B=1000, seed=0, tests=("paired_bootstrap",)), both)
    dp = tables["discpower"].to_pandas().set_index(["metric", "alpha"])
    assert dp.loc[("AP", 0.05), "sensitivity"] > dp.loc[("P@10", 0.05), "sensitivity"]
    # the paired test is more powerful than the unpaired one (Sakai 2006, Figs. 7-8)
    t2, _ = run_study(DiscPower.of(B=1000, seed=0), ap)
    d2 = t2["discpower"].to_pandas().set_index(["test", "alpha"])
    assert (d2.loc[("paired_bootstrap", 0.05), "significant"]
            > d2.loc[("unpaired_bootstrap", 0.05), "significant"])
    # estimated difference shrinks as alpha grows
    assert (d2.loc[("paired_bootstrap", 0.01), "estimated_diff_raw"]
            > d2.loc[("paired_bootstrap", 0.05), "estimated_diff_raw"])


def test_t_test_asl_equals_scipy():
    from scipy import stats

    m = urbano_matrix("adhoc8_ap", "AP", systems=10)
    tables, _ = run_study(DiscPower.of(B=10, tests=("t",)), m)
    asl = tables["asl"].to_pandas()
    x = m.metric("AP")
    for r in asl.itertuples():
        a, b = m.systems.index(r.system_a), m.systems.index(r.system_b)
        assert r.asl == pytest.approx(stats.ttest_rel(x[a], x[b]).pvalue, rel=1e-10)


@pytest.mark.parametrize("kw,msg", [
    ({"B": 0}, "experiment.B must be an integer >= 1"),
    ({"alpha": [0.05, 1.0]}, "inside (0, 1)"),
    ({"alpha": 0.0}, "experiment.alpha must be inside (0, 1)"),
    ({"tests": ["paired_bootstrp"]}, "did you mean 'paired_bootstrap'"),
    ({"tests": []}, "experiment.tests must list at least one test"),
    ({"pvalue": "exact"}, "experiment.pvalue"),
    ({"top_systems": 0}, "experiment.top_systems must be an integer >= 1"),
])
def test_bad_parameters(kw, msg):
    m = urbano_matrix("adhoc8_ap", "AP", systems=5)
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        make(Config(**kw), m, seed=0, shards=Shards())


def test_bad_shard_size_names_the_engine_key():
    m = urbano_matrix("adhoc8_ap", "AP", systems=5)
    with pytest.raises(ConfigError, match="engine.shard_items must be an integer >= 1"):
        make(Config(), m, seed=0, shards=Shards(items=0))


def test_make_normalises_and_selects_top_systems():
    m = urbano_matrix("adhoc8_ap", "AP", systems=12)
    study, data = make(Config(alpha=0.05, fuzziness=0.1, swap_confidence=0.9, top_systems=5),
                       m, seed=3, shards=Shards(replicates=500))
    c = study.config
    assert (c.alpha, c.fuzziness, c.swap_confidence) == ([0.05], [0.1], [0.9])
    assert (study.seed, study.shard_items, study.shard_replicates) == (3, None, 500)
    assert study.shard_shape(10, topk=True) == (4096, 500)  # requested replicates kept
    means = m.metric("AP").mean(axis=1)
    best = sorted(np.argsort(-means)[:5])
    assert list(data.systems) == [m.systems[i] for i in best]


def test_default_synthetic_collection_behaves_like_trec():
    # the embedded default of the main job: Sakai's qualitative findings hold on it
    from irsim.kit.loading import load_collection
    from irsim.runner import compose_config

    cfg = compose_config([])
    m = load_collection(cfg.collection, metrics=["AP", "P@10", "RR"])
    assert m.shape == (3, 20, 50)
    tables, _ = run_study(DiscPower.of(B=1000, seed=0), m)
    dp = tables["discpower"].to_pandas().set_index(["metric", "test", "alpha"])
    s = dp["sensitivity"]
    for metric in ("AP", "P@10", "RR"):  # the paired test is the more powerful one
        assert s[(metric, "paired_bootstrap", 0.05)] > s[(metric, "unpaired_bootstrap", 0.05)]
    # AP discriminates more pairs than RR (a one-document metric)
    assert s[("AP", "paired_bootstrap", 0.05)] > s[("RR", "paired_bootstrap", 0.05)] + 0.1
    assert 0.4 < s[("AP", "paired_bootstrap", 0.05)] < 0.95


def test_estimated_diff_off_keeps_asl_and_bounds_memory():
    m = urbano_matrix("adhoc8_ap", "AP", systems=15)
    on, _ = run_study(DiscPower.of(B=500, seed=2), m)
    off, _ = run_study(DiscPower.of(B=500, seed=2, estimated_diff=False), m)
    assert on["asl"].to_pydict() == off["asl"].to_pydict()
    dp_on, dp_off = on["discpower"].to_pandas(), off["discpower"].to_pandas()
    assert (dp_on.significant == dp_off.significant).all()
    assert dp_off.estimated_diff_raw.isna().all() and dp_on.estimated_diff_raw.notna().all()
    # B = 10^6 on all 8256 adhoc8 pairs would need ~19 GiB of top-k: refused up front
    big = urbano_matrix("adhoc8_ap", "AP")
    with pytest.raises(ConfigError, match="estimated_diff=false"):
        make(Config(B=1_000_000), big, seed=0, shards=Shards())
    study, _ = make(Config(B=1_000_000, estimated_diff=False), big, seed=0, shards=Shards())
    assert study.plan(big)


def test_whole_replicate_shards_ship_only_the_ranks_and_equal_merged_lists():
    """Default shape at B = 700 (a shard spans all replicates): each pair's top-k list is
    selected on its worker, which ships one value per alpha (field ``*_kth_*``, a Slab);
    split replicates merge the lists on the driver (``*_top_*``, TopK). Same tables."""
    m = urbano_matrix("adhoc7_ap", "AP", systems=40)  # 780 pairs
    whole = DiscPower.of(B=700, seed=1, alpha=(0.01, 0.05))
    split = DiscPower.of(B=700, seed=1, alpha=(0.01, 0.05), shard_replicates=250)
    assert whole.whole_replicates(780) and not split.whole_replicates(780)
    fields = whole.fields(m)
    assert isinstance(fields["paired_kth_0"], Slab) and fields["paired_kth_0"].shape == (780, 2)
    assert "paired_top_0" not in fields and "paired_top_0" in split.fields(m)
    assert whole.ranks == (6, 34)  # ceil(alpha B) - 1
    a, _ = run_study(whole, m)
    b, info = run_study(split, m)
    assert info["shards"] >= 3
    for name in a:
        assert a[name].equals(b[name]), name
    raw = a["discpower"].to_pandas().query("test in ['paired_bootstrap', "
                                           "'unpaired_bootstrap']")["estimated_diff_raw"]
    assert len(raw) == 4 and (raw > 0).all()  # compared, not NaN on both sides
