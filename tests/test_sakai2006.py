"""Sakai (SIGIR 2006), every method of ``experiment=discpower``, against a slow reference.

The reference below is Sakai's algorithms (Figs. 1-11 and Section 4) written as plain loops
over system pairs, bootstrap samples, trials and topics, on the same random streams as the
study. It shares no code with the study apart from the samplers. Ties follow exact
arithmetic: a difference of two resampled scores is 0 when it is within 1e-9 of their
magnitude, and "at least as extreme" / "on the fuzziness boundary" comparisons use the same
relative tolerance.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from conftest import SHARED_DATA, urbano_matrix
from scipy import stats as sps

from irsim.data.matrix import ScoreMatrix
from irsim.engine import run_study
from irsim.errors import ConfigError, InputError
from irsim.experiments import Shards
from irsim.experiments.discpower import (
    PAIRED_STREAM,
    SWAP_STREAM,
    TUKEY_STREAM,
    UNPAIRED_STREAM,
    Config,
    DiscPower,
    make,
)
from irsim.sampling.permutations import topic_permutations
from irsim.sampling.topics import bootstrap_indices

ALL_TESTS = ("paired_bootstrap", "unpaired_bootstrap", "t", "randomised_tukey_hsd")
TOL = 1e-9


# ---------------------------------------------------------------------- the slow reference
def tstat(z):
    sd = np.std(z, ddof=1)
    if sd * sd <= 1e-12 * np.mean(z * z):
        return 0.0
    return z.mean() / (sd / math.sqrt(len(z)))


def summary(kind, values):
    """M over a list of per-topic scores: arithmetic mean, or Sakai's geometric mean."""
    if kind == "g":
        return math.exp(sum(math.log(v + 1e-5) for v in values) / len(values))
    return sum(values) / len(values)


def tie0(d, a, b):
    """A difference that is 0 in exact arithmetic is 0."""
    return 0.0 if abs(d) <= TOL * max(abs(a), abs(b)) else d


def sign(d):
    return int(d > 0) - int(d < 0)


def variants(metrics, gmean):
    out = [(m, m, "mean") for m in metrics]
    if gmean:
        out += [(f"AG {m}", m, "ag") for m in metrics]
        out += [(f"G {m}", m, "g") for m in metrics]
    return out


def reference(matrix, B, seed, alphas, fuzziness, confidences=(0.95,), gmean=True):
    systems, n = len(matrix.systems), len(matrix.topics)
    pairs = [(a, b) for a in range(systems) for b in range(a + 1, systems)]
    Q = bootstrap_indices(seed, PAIRED_STREAM, n, 0, B)
    Q2 = bootstrap_indices(seed, SWAP_STREAM, n, 0, B)
    U = bootstrap_indices(seed, UNPAIRED_STREAM, 2 * n, 0, B)
    perms = topic_permutations(seed, TUKEY_STREAM, systems, n, 0, B)
    res = {"asl": {}, "est": {}, "stab": {}, "swap": {}, "tau": {}}
    sampled = {}
    for name, metric, kind in variants(matrix.metrics, gmean):
        x = matrix.metric(metric)
        if kind == "ag":
            x = np.log(x + 1e-5)
        # Figs. 1-2: paired test (mean, AG); Figs. 3-4: unpaired test (mean, G)
        if kind in ("mean", "ag"):
            counts, top = {}, {}
            for a, b in pairs:
                z = x[a] - x[b]
                t_obs = tstat(z)
                w = z - z.mean()
                count, reps = 0, []
                for rep in range(B):
                    wb = w[Q[rep]]
                    tb = tstat(wb)
                    if abs(tb) >= abs(t_obs) - TOL * max(abs(t_obs), 1.0):
                        count += 1
                    reps.append((-abs(tb), rep, abs(wb.mean())))
                reps.sort()
                counts[(a, b)] = count
                top[(a, b)] = reps
            res["asl"][(name, "paired_bootstrap")] = counts
            res["est"][(name, "paired_bootstrap")] = {
                al: max(top[p][math.ceil(al * B) - 1][2] for p in pairs) for al in alphas}
            # t test
            res["asl"][(name, "t")] = {(a, b): sps.ttest_rel(x[a], x[b]).pvalue
                                       for a, b in pairs}
            res["est"][(name, "t")] = {
                al: max(sps.t.isf(al / 2, n - 1) * np.std(x[a] - x[b], ddof=1) / math.sqrt(n)
                        for a, b in pairs) for al in alphas}
            # randomised Tukey HSD: per trial, permute each topic's scores across systems
            means = [sum(x[s_]) / n for s_ in range(systems)]
            ranges = []
            for rep in range(B):
                perm_means = []
                for s_ in range(systems):
                    perm_means.append(
                        sum(x[perms[rep, j, s_], j] for j in range(n)) / n)
                ranges.append(max(perm_means) - min(perm_means))
            scale = max(abs(m_) for m_ in means)
            res["asl"][(name, "randomised_tukey_hsd")] = {
                (a, b): sum(r >= abs(means[a] - means[b])
                            - TOL * max(abs(means[a] - means[b]), scale) for r in ranges)
                for a, b in pairs}
            desc = sorted(ranges, reverse=True)
            res["est"][(name, "randomised_tukey_hsd")] = {
                al: desc[math.ceil(al * B) - 1] for al in alphas}
        if kind in ("mean", "g"):
            counts, top = {}, {}
            for a, b in pairs:
                v = np.concatenate([x[a], x[b]])
                ma, mb = summary(kind, x[a]), summary(kind, x[b])
                d_obs = ma - mb
                count, reps = 0, []
                for rep in range(B):
                    vb = v[U[rep]]
                    d = summary(kind, vb[:n]) - summary(kind, vb[n:])
                    if abs(d) >= abs(d_obs) - TOL * max(abs(d_obs), abs(ma) + abs(mb)):
                        count += 1
                    reps.append((-abs(d), rep))
                reps.sort()
                counts[(a, b)] = count
                top[(a, b)] = reps
            res["asl"][(name, "unpaired_bootstrap")] = counts
            res["est"][(name, "unpaired_bootstrap")] = {
                al: max(-top[p][math.ceil(al * B) - 1][0] for p in pairs) for al in alphas}
            sampled[name] = (kind, x)
    # stability (Fig. 9) and the swap method (Fig. 11) on Q*b and Q'*b
    for name, (kind, x) in sampled.items():
        M = [[summary(kind, x[s_][Q[rep]]) for rep in range(B)] for s_ in range(systems)]
        M2 = [[summary(kind, x[s_][Q2[rep]]) for rep in range(B)] for s_ in range(systems)]
        gt = {f: [0, 0] for f in fuzziness}  # sum of min(GT), sum of EQ
        comps, swaps = [0] * 21, [0] * 21
        for a, b in pairs:
            eq = dict.fromkeys(fuzziness, 0)
            gxy = dict.fromkeys(fuzziness, 0)
            gyx = dict.fromkeys(fuzziness, 0)
            for rep in range(B):
                mx, my = M[a][rep], M[b][rep]
                d = tie0(mx - my, mx, my)
                top_ = max(mx, my)
                for f in fuzziness:
                    if d == 0 or abs(d) < f * top_ - TOL * abs(top_):
                        eq[f] += 1
                    elif d > 0:
                        gxy[f] += 1
                    else:
                        gyx[f] += 1
                d2 = tie0(M2[a][rep] - M2[b][rep], M2[a][rep], M2[b][rep])
                bin_ = min(int(math.floor(abs(d) / 0.01 + 1e-9)), 20)
                comps[bin_] += 1
                if d * d2 < 0:
                    swaps[bin_] += 1
            for f in fuzziness:
                gt[f][0] += min(gxy[f], gyx[f])
                gt[f][1] += eq[f]
        total = len(pairs) * B
        res["stab"][name] = {f: (gt[f][0] / total, gt[f][1] / total) for f in fuzziness}
        summ = {}
        for conf in confidences:
            req_bin = 0  # the smallest bin from which every non-empty bin's rate is small
            for i in range(21):
                if comps[i] and swaps[i] / comps[i] > 1 - conf:
                    req_bin = i + 1
            req = req_bin * 0.01 if req_bin < 21 and any(comps[req_bin:]) else float("nan")
            above = sum(comps[req_bin:]) if req == req else 0
            maxp = max(max(max(row) for row in M), max(max(row) for row in M2))
            summ[conf] = (req, above / total, maxp)
        uniq = sum(len(set(Q[r])) + len(set(Q2[r])) for r in range(B)) / (2 * B)
        overlap = sum(len(set(Q[r]) & set(Q2[r])) for r in range(B)) / B
        res["swap"][name] = (comps, swaps, summ, uniq, overlap)
        sampled[name] = (kind, x, M)
    # Section 4: Kendall's tau of every metric pair, Z0, bootstrap standard error
    names = list(sampled)

    def tau(s1, s2):
        conc = t1 = t2 = 0
        for a, b in pairs:
            g1 = sign(tie0(s1[a] - s1[b], s1[a], s1[b]))
            g2 = sign(tie0(s2[a] - s2[b], s2[a], s2[b]))
            conc += g1 * g2
            t1 += g1 == 0
            t2 += g2 == 0
        n0 = len(pairs)
        return conc / math.sqrt((n0 - t1) * (n0 - t2))

    for i, na in enumerate(names):
        for nb in names[i + 1:]:
            (ka, xa, Ma), (kb, xb, Mb) = sampled[na], sampled[nb]
            obs = tau([summary(ka, xa[s_]) for s_ in range(systems)],
                      [summary(kb, xb[s_]) for s_ in range(systems)])
            boot = [tau([Ma[s_][r] for s_ in range(systems)],
                        [Mb[s_][r] for s_ in range(systems)]) for r in range(B)]
            z0 = abs(obs) / math.sqrt(2 * (2 * systems + 5) / (9 * systems * (systems - 1)))
            res["tau"][(na, nb)] = (obs, statistics.stdev(boot), z0,
                                    2 * (1 - sps.norm.cdf(z0)))
    return res


# ---------------------------------------------------------------------- the comparison
def check_against_reference(matrix, B, seed, alphas, fuzziness, **kw):
    ref = reference(matrix, B, seed, alphas, fuzziness)
    study = DiscPower.of(B=B, seed=seed, alpha=alphas, tests=ALL_TESTS, gmean=True,
                         stability=True, fuzziness=fuzziness, swap=True, rankcorr=True, **kw)
    tables, _ = run_study(study, matrix)
    sysidx = {k: i for i, k in enumerate(matrix.systems)}
    asl = tables["asl"].to_pandas()
    assert set(zip(asl.metric, asl.test, strict=True)) == set(ref["asl"])
    for (metric, test), expected in ref["asl"].items():
        rows = asl[(asl.metric == metric) & (asl.test == test)]
        got = {(sysidx[r.system_a], sysidx[r.system_b]): r.asl for r in rows.itertuples()}
        assert set(got) == set(expected)
        for key, val in expected.items():
            if test == "t":
                assert got[key] == pytest.approx(val, rel=1e-9), (metric, test, key)
            else:  # identical counters
                assert got[key] == val / B, (metric, test, key)
    dp = tables["discpower"].to_pandas()
    for (metric, test), by_alpha in ref["est"].items():
        for alpha, expected in by_alpha.items():
            row = dp[(dp.metric == metric) & (dp.test == test) & (dp.alpha == alpha)].iloc[0]
            counts = np.array(list(ref["asl"][(metric, test)].values()))
            asls = counts if test == "t" else counts / B
            assert row.significant == int((asls < alpha).sum()), (metric, test, alpha)
            assert row.estimated_diff_raw == pytest.approx(expected, rel=1e-9, abs=1e-14)
    stab = tables["stability"].to_pandas()
    for metric, by_f in ref["stab"].items():
        for f, (mr, pt) in by_f.items():
            row = stab[(stab.metric == metric) & (stab.fuzziness == f)].iloc[0]
            assert (row.minority_rate, row.prop_ties) == (mr, pt), (metric, f)
    rates = tables["swap_rates"].to_pandas()
    summ = tables["swap_summary"].to_pandas()
    for metric, (comps, swaps, by_conf, uniq, overlap) in ref["swap"].items():
        rows = rates[rates.metric == metric].sort_values("bin_lo")
        assert rows.comparisons.tolist() == comps, metric
        assert rows.swaps.tolist() == swaps, metric
        assert set(rows.sampling) == {"bootstrap"} and set(rows.subset_size) == {
            len(matrix.topics)}
        for conf, (req, sens, maxp) in by_conf.items():
            row = summ[(summ.metric == metric) & (summ.confidence == conf)].iloc[0]
            assert row.required_diff == pytest.approx(req, abs=1e-12, nan_ok=True), metric
            assert row.sensitivity == sens
            assert row.max_performance == pytest.approx(maxp, rel=1e-12)
            assert row.mean_unique_topics == uniq and row.mean_overlap == overlap
    rc = tables["rankcorr"].to_pandas()
    assert len(rc) == len(ref["tau"])
    for (a, b), (tau, se, z0, p) in ref["tau"].items():
        row = rc[(rc.metric_a == a) & (rc.metric_b == b)].iloc[0]
        assert row.tau == tau, (a, b)
        assert row.se_boot == pytest.approx(se, rel=1e-9)
        assert row.z0 == pytest.approx(z0, rel=1e-12)
        assert row.p_value == pytest.approx(p, rel=1e-6, abs=1e-15)
    return tables


def real_matrix(systems=7):
    return ScoreMatrix.stack([urbano_matrix(f"adhoc8_{f}", m, systems=systems)
                              for f, m in (("ap", "AP"), ("p10", "P@10"), ("rr", "RR"))])


@pytest.mark.slow
def test_real_collection_matches_reference():
    # TREC-8 AP, P@10 (discrete: ties at bin edges and fuzziness boundaries) and RR;
    # B = 260 crosses a replicate block; shard sizes of one unit
    m = real_matrix(systems=6)
    check_against_reference(m, B=260, seed=7, alphas=(0.01, 0.05),
                            fuzziness=(0.01, 0.05, 0.2), shard_replicates=1)


def test_synthetic_collection_matches_reference():
    rng = np.random.default_rng(3)
    grid = rng.integers(0, 11, size=(1, 6, 12)) / 10  # P@10-like: many exact ties
    cont = np.clip(rng.normal(0.3, 0.2, (1, 6, 12)), 0, 1)
    m = ScoreMatrix(np.concatenate([grid, cont]), ["grid", "cont"],
                    [f"s{i}" for i in range(6)], [str(i) for i in range(12)])
    check_against_reference(m, B=200, seed=2, alphas=(0.05, 0.1), fuzziness=(0.02, 0.1))


def test_tiny_topic_sets_match_reference():
    # 5 topics on a 0.25 grid: constant resamples are common (t* = 0), and many exact ties
    rng = np.random.default_rng(4)
    m = ScoreMatrix(rng.integers(0, 5, size=(1, 5, 5)) / 4, ["grid"],
                    [f"s{i}" for i in range(5)], [str(i) for i in range(5)])
    check_against_reference(m, B=250, seed=1, alphas=(0.05,), fuzziness=(0.05,))


# ---------------------------------------------------------------------- properties
@pytest.fixture(scope="module")
def trec8():
    return real_matrix(systems=20)


@pytest.fixture(scope="module")
def trec8_tables(trec8):
    study = DiscPower.of(B=500, seed=1, tests=ALL_TESTS, alpha=(0.01, 0.05, 0.1), gmean=True,
                         stability=True, swap=True, rankcorr=True, shard_items=10**6,
                         shard_replicates=10**6)
    return run_study(study, trec8)[0]


def test_ties_grow_with_fuzziness(trec8_tables):
    stab = trec8_tables["stability"].to_pandas()
    assert len(stab) == 6 * 20  # AP, P@10, RR, G AP, G P@10, G RR x 0.01..0.20
    for _, rows in stab.groupby("metric"):
        pt = rows.sort_values("fuzziness").prop_ties.to_numpy()
        mr = rows.sort_values("fuzziness").minority_rate.to_numpy()
        assert (np.diff(pt) >= 0).all() and pt[-1] > pt[0]
        assert (np.diff(mr) <= 0).all()  # fewer decided comparisons, fewer minority ones


def test_estimated_difference_shrinks_as_alpha_grows(trec8_tables):
    dp = trec8_tables["discpower"].to_pandas()
    assert set(dp.test) == set(ALL_TESTS)
    for _, rows in dp.groupby(["metric", "test"]):
        est = rows.sort_values("alpha").estimated_diff_raw.to_numpy()
        assert (np.diff(est) < 0).all(), rows
        sig = rows.sort_values("alpha").significant.to_numpy()
        assert (np.diff(sig) >= 0).all()


def test_paper_findings_hold(trec8_tables):
    dp = trec8_tables["discpower"].to_pandas().set_index(["metric", "test", "alpha"])
    s = dp["sensitivity"]
    # the paired test is more powerful than the unpaired one
    assert s[("AP", "paired_bootstrap", 0.05)] > s[("AP", "unpaired_bootstrap", 0.05)]
    # Tukey HSD controls the familywise error: the most conservative test
    assert s[("AP", "randomised_tukey_hsd", 0.05)] < s[("AP", "paired_bootstrap", 0.05)]
    rc = trec8_tables["rankcorr"].to_pandas()
    assert len(rc) == 15 and (rc.se_boot > 0).all() and (rc.se_boot < rc.tau.abs()).all()
    summary = trec8_tables["swap_summary"].to_pandas().set_index("metric")
    assert summary.loc["AP", "required_diff"] <= summary.loc["RR", "required_diff"]
    assert (summary.mean_unique_topics.between(31, 33)).all()  # 50 (1 - (49/50)^50) = 31.8


def test_tau_equals_scipy(trec8_tables, trec8):
    rc = trec8_tables["rankcorr"].to_pandas()
    for r in rc[~rc.metric_a.str.startswith("G") & ~rc.metric_b.str.startswith("G")
                ].itertuples():
        # rounded: equal means (P@10, RR) must be exact ties for scipy too
        a = np.round(trec8.metric(r.metric_a).mean(axis=1), 10)
        b = np.round(trec8.metric(r.metric_b).mean(axis=1), 10)
        assert r.tau == pytest.approx(sps.kendalltau(a, b).statistic, rel=1e-12)


def test_tests_equal_the_stats_library(trec8, trec8_tables):
    from irsim.stats import paired_bootstrap, randomised_tukey_hsd, unpaired_bootstrap

    asl = trec8_tables["asl"].to_pandas()
    x = trec8.metric("AP")
    a, b = np.triu_indices(len(trec8.systems), 1)
    lx = np.log(x + 1e-5)

    def got(metric, test):
        return asl[(asl.metric == metric) & (asl.test == test)].asl.to_numpy()

    np.testing.assert_array_equal(
        got("G AP", "unpaired_bootstrap"),
        unpaired_bootstrap(x[a], x[b], summary="gmean", B=500, seed=1,
                           study=UNPAIRED_STREAM).pvalue)
    np.testing.assert_array_equal(
        got("AG AP", "paired_bootstrap"),
        paired_bootstrap(lx[a], lx[b], B=500, seed=1, study=PAIRED_STREAM).pvalue)
    for metric, scores in (("AP", x), ("AG AP", lx)):
        np.testing.assert_array_equal(
            got(metric, "randomised_tukey_hsd"),
            randomised_tukey_hsd(scores, B=500, seed=1, study=TUKEY_STREAM).pvalue)


STUDY_ALL = DiscPower.of(B=520, seed=5, tests=ALL_TESTS, gmean=True, stability=True,
                         fuzziness=(0.01, 0.1), swap=True, rankcorr=True, shard_items=10**6,
                         shard_replicates=10**6)


@pytest.fixture(scope="module")
def sharded_matrix():
    return ScoreMatrix.stack([urbano_matrix("adhoc7_ap", "AP", systems=25),
                              urbano_matrix("adhoc7_p10", "P@10", systems=25)])


@pytest.fixture(scope="module")
def unsharded(sharded_matrix):
    return run_study(STUDY_ALL, sharded_matrix)[0]


def assert_same(a, b):
    assert set(a) == set(b)
    for name in a:
        assert a[name].equals(b[name]), name


@pytest.mark.parametrize("shard_items,shard_reps", [(1, 1), (256, 300)])
def test_shard_sizes_do_not_change_any_table(sharded_matrix, unsharded, shard_items,
                                             shard_reps):
    from dataclasses import replace

    # 300 pairs: two pair units; 520 replicates: three replicate units
    study = replace(STUDY_ALL, shard_items=shard_items, shard_replicates=shard_reps)
    tables, info = run_study(study, sharded_matrix)
    assert info["shards"] > 1
    assert_same(tables, unsharded)



@pytest.mark.ray
def test_ray_two_workers_equal_local(ray_local, sharded_matrix, unsharded):
    from dataclasses import replace

    study = replace(STUDY_ALL, shard_items=256, shard_replicates=250)
    tables, info = run_study(study, sharded_matrix, engine="ray",
                             engine_options={"workers": 2})
    assert info["engine"] == "ray" and info["shards"] == 6
    assert_same(tables, unsharded)


# ---------------------------------------------------------------------- config and CLI
@pytest.mark.parametrize("kw,err,msg", [
    ({"fuzziness": [0.0, 0.1]}, ConfigError, "experiment.fuzziness must be inside (0, 1), got 0.0"),
    ({"fuzziness": []}, ConfigError, "at least one"),
    ({"fuzziness": [0.1, 0.1]}, ConfigError, "distinct"),
    ({"swap_confidence": [1.0]}, ConfigError, "experiment.swap_confidence"),
    ({"stability": "yes"}, ConfigError, "experiment.stability must be true or false"),
    ({"tests": ["randomised_tukey"]}, ConfigError, "did you mean"),
    ({"tests": ["t", "t"]}, ConfigError, "lists a test twice"),
])
def test_bad_parameters(kw, err, msg):
    m = real_matrix(systems=4)
    with pytest.raises(err, match=msg.replace("(", r"\(").replace(")", r"\)")):
        make(Config(**kw), m, seed=0, shards=Shards())


def test_bad_data():
    neg = ScoreMatrix(np.array([[[0.1, -0.2], [0.3, 0.4]]]), ["X"], ["a", "b"], ["1", "2"])
    with pytest.raises(InputError, match="G-metrics need scores >= 0"):
        make(Config(gmean=True), neg, seed=0, shards=Shards())
    with pytest.raises(ConfigError, match="rankcorr needs at least two metrics"):
        make(Config(rankcorr=True), neg, seed=0, shards=Shards())
    one = neg.select(systems=["a"])
    with pytest.raises(ConfigError, match="needs >= 2 systems"):
        make(Config(), one, seed=0, shards=Shards())


@pytest.mark.slow
def test_sakai2006_preset_runs_on_real_data(tmp_path):
    from irsim.runner import compose_config, run

    cfg = compose_config(["experiment=sakai2006", f"data_dir={SHARED_DATA}", "offline=true",
                          "experiment.B=100", "quiet=true", "experiment.top_systems=12"])
    assert cfg.experiment.name == "discpower" and cfg.collection.name == "adhoc8"
    tables = run(cfg, tmp_path)
    assert set(tables) == {"asl", "discpower", "stability", "swap_rates", "swap_summary",
                           "rankcorr"}
    assert set(tables["discpower"].column("metric").to_pylist()) == {
        "AP", "P@10", "RR", "AG AP", "AG P@10", "AG RR", "G AP", "G P@10", "G RR"}
    assert tables["asl"].column_names == ["metric", "test", "system_a", "system_b", "diff",
                                          "asl", "asl_adjusted"]
    assert tables["stability"].column_names[:4] == ["metric", "fuzziness", "minority_rate",
                                                    "prop_ties"]
    assert tables["swap_rates"].column_names == [
        "metric", "sampling", "subset_size", "bin_kind", "bin_lo", "bin_hi", "comparisons",
        "swaps", "swap_rate"]
    assert tables["swap_summary"].column_names[:10] == [
        "metric", "sampling", "subset_size", "confidence", "required_diff",
        "max_performance", "relative_diff", "sensitivity", "mean_unique_topics",
        "mean_overlap"]
    assert tables["rankcorr"].column_names[:6] == ["metric_a", "metric_b", "tau", "se_boot",
                                                   "z0", "p_value"]
    assert tables["asl"].num_rows == 66 * (3 * 4 + 3 * 3 + 3)
    report = (tmp_path / "report.md").read_text()
    for png in ("asl_curve_paired_bootstrap.png", "asl_curve_randomised_tukey_hsd.png",
                "mr_pt_curves.png", "swap_rates_absolute.png", "tau_matrix.png"):
        assert png in report and (tmp_path / png).stat().st_size > 10_000, png
    for name in tables:
        assert (tmp_path / "results" / f"{name}.parquet").exists()


@pytest.mark.slow
def test_doc_level_collection(tmp_path):
    # metrics computed from runs + qrels first (the embedded synthetic TREC collection)
    from irsim.runner import compose_config, run

    cfg = compose_config(["collection.runs=6", "collection.topics=12", "metrics=[AP,P@10]",
                          "experiment.B=100", "experiment.stability=true",
                          "experiment.swap=true", "experiment.rankcorr=true",
                          "experiment.fuzziness=[0.05,0.1]", "quiet=true"])
    tables = run(cfg, tmp_path)
    assert tables["rankcorr"].to_pylist()[0]["metric_a"] == "AP"
    assert tables["stability"].num_rows == 4
    assert tables["swap_summary"].column("subset_size").to_pylist() == [12, 12]
