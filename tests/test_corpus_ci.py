"""experiment=corpus_ci (Cormack & Lynam 2006): the closed form against materialised resampled
lists, the Poisson sampler, list preparation against trec_eval-exact AP, the jackknife
acceleration, the small-R correction, the meta-analysis against metafor, a slow loop
reference of the study, sharding / Ray invariance, presets end to end."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_DATA
from scipy import special
from scipy import stats as sps

from irsim.data.collection import DocCollection
from irsim.data.synthetic import synthetic_trec
from irsim.data.types import Qrels, Runs
from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments import Shards
from irsim.experiments.corpus_ci import CORPUS_BLOCK, RUN_UNIT, STREAM, Config, make
from irsim.metrics import evaluate
from irsim.sampling.corpus import (
    CorpusDraws,
    CorpusSampler,
    poisson_counts,
    poisson_inverse,
    poisson_table,
)
from irsim.stats import bootstrap_ci
from irsim.stats.corpus_ap import (
    CorpusLists,
    ListSet,
    average_precision,
    corpus_acceleration,
    corpus_lists,
    md5_half,
    resampled_ap,
    split_salt,
)
from irsim.stats.corpus_intervals import (
    _silver_upper,
    expected_ap_random_ranks,
    logit_sd_from_interval,
    map_parametric,
    normalised_difference,
    replication_within,
    silver_bullet_share,
    small_r_bounds,
    small_r_correct,
)
from irsim.stats.meta import fixed_effect, random_effects

obj = (lambda *a: np.array(a, dtype=object))  # noqa: E731


# ----------------------------------------------------------------------------- helpers


def random_lists(rng, count, max_len=25):
    """Random relevance vectors (lists of bools) and R >= relevant retrieved."""
    out = []
    for _ in range(count):
        L = int(rng.integers(0, max_len))
        rel = rng.random(L) < rng.random()
        out.append((rel, int(rel.sum() + rng.integers(0, 4)) or 1))
    return out


def as_listset(lists):
    pos, starts, R, L = [], [0], [], []
    for rel, r in lists:
        p = np.flatnonzero(rel) + 1
        pos += p.tolist()
        starts.append(starts[-1] + len(p))
        R.append(r)
        L.append(len(rel))
    return ListSet(np.array(pos, np.int64), np.array(starts), np.array(R), np.array(L))


def aggregate(rel, k):
    """Per-document copies -> (copies of each relevant doc, non-relevant copies in the gap
    before it)."""
    nonrel = np.cumsum(np.where(rel, 0, k))
    at = nonrel[rel]
    return k[rel], np.diff(np.concatenate([[0], at])).astype(np.int64)


def materialise(lists, ks, missing):
    """Runs + qrels of the resampled lists: every copy is a document of its own."""
    topic, docno, score, qt, qd, qg = [], [], [], [], [], []
    for i, ((rel, _), k, m) in enumerate(zip(lists, ks, missing, strict=True)):
        t = f"t{i}"
        rank = 0
        for j, (r, c) in enumerate(zip(rel, k, strict=True)):
            for copy in range(c):
                rank += 1
                name = f"d{j}c{copy}"
                topic.append(t)
                docno.append(name)
                score.append(-float(rank))
                if r:
                    qt.append(t)
                    qd.append(name)
                    qg.append(1)
        for u in range(m):  # relevant copies not retrieved
            qt.append(t)
            qd.append(f"missing{u}")
            qg.append(1)
        qt.append(t)  # every topic judged (AP = 0 where nothing is relevant)
        qd.append("judged-nonrel")
        qg.append(0)
    runs = Runs(("r",), np.zeros(len(topic), np.int32), np.array(topic, dtype=object),
                np.array(docno, dtype=object), np.array(score))
    qrels = Qrels(np.array(qt, dtype=object), np.array(qd, dtype=object), np.array(qg))
    return runs, qrels


def fraction_ap(rel, k, missing):
    """AP of a materialised resampled list in exact rational arithmetic."""
    mat = np.repeat(rel, k)
    rstar = int(k[rel].sum()) + int(missing)
    if rstar == 0:
        return Fraction(0)
    hits = np.flatnonzero(mat) + 1
    return sum((Fraction(i + 1, int(h)) for i, h in enumerate(hits)), Fraction(0)) / rstar


def fraction_closed_form(copies, gaps, missing):
    """The paper's closed form, k + (c - p)(H(p + k) - H(p)), in exact arithmetic."""
    def H(n):
        return sum((Fraction(1, i) for i in range(1, n + 1)), Fraction(0))
    c = p = 0
    total = Fraction(0)
    for k, g in zip(copies.tolist(), gaps.tolist(), strict=True):
        p += g
        total += k + (c - p) * (H(p + k) - H(p))
        c += k
        p += k
    rstar = int(copies.sum()) + int(missing)
    return total / rstar if rstar else Fraction(0)


# ----------------------------------------------------------------------------- closed form


def test_closed_form_is_exact_in_rational_arithmetic():
    rng = np.random.default_rng(0)
    for rel, R in random_lists(rng, 60, max_len=14):
        k = rng.poisson(1.0, len(rel))
        miss = int(rng.poisson(R - rel.sum()))
        copies, gaps = aggregate(rel, k)
        assert fraction_closed_form(copies, gaps, miss) == fraction_ap(rel, k, miss)


def test_closed_form_equals_ap_of_materialised_lists():
    """Per-document Poisson draws, lists materialised and scored by irsim's trec_eval-exact
    AP: the closed form (from the aggregated draws) gives the same AP* on every list. The
    identity is exact (test above, rational arithmetic); in floating point the harmonic
    differences H(p+k) - H(p) round differently from trec_eval's running sum, by at most a
    few units in the 14th digit."""
    rng = np.random.default_rng(1)
    for _ in range(4):
        lists = random_lists(rng, 40)
        ls = as_listset(lists)
        ks = [rng.poisson(1.0, len(rel)) for rel, _ in lists]
        miss = rng.poisson(ls.missing())
        agg = [aggregate(rel, k) for (rel, _), k in zip(lists, ks, strict=True)]
        draws = CorpusDraws(np.concatenate([a[0] for a in agg])[None].astype(np.int32),
                            np.concatenate([a[1] for a in agg])[None].astype(np.int32),
                            miss[None].astype(np.int32))
        got = resampled_ap(ls, draws)[0]
        runs, qrels = materialise(lists, ks, miss)
        ap = evaluate(runs, qrels, ["AP"], depth=None, missing="zero")
        expected = ap.metric("AP")[0, np.argsort([int(t[1:]) for t in ap.topics])]
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_closed_form_on_the_samplers_own_draws():
    """The production draws (aggregated gaps): a list with those counts, materialised."""
    rng = np.random.default_rng(2)
    lists = random_lists(rng, 30)
    ls = as_listset(lists)
    d = CorpusSampler(ls.gaps(), ls.missing()).draws(3, "test", 0, 20)
    star = resampled_ap(ls, d)
    starts = ls.starts
    for b in (0, 7, 19):
        ks, rels = [], []
        for i, (_, R) in enumerate(lists):
            cp = d.copies[b, starts[i]:starts[i + 1]]
            gp = d.gaps[b, starts[i]:starts[i + 1]]
            # one non-relevant document per gap copy, then the relevant one
            r = np.concatenate([np.r_[np.zeros(g, bool), True] for g in gp] or [np.zeros(0,
                                                                                     bool)])
            k = np.concatenate([np.r_[np.ones(g, np.int64), c] for g, c in zip(gp, cp,
                                                                             strict=True)]
                               or [np.zeros(0, np.int64)])
            rels.append((r, R))
            ks.append(k)
        for i in range(len(lists)):
            assert float(fraction_ap(rels[i][0], ks[i], d.missing[b, i])) == pytest.approx(
                star[b, i], rel=1e-13, abs=1e-15)


def test_unit_copies_reproduce_the_observed_ap():
    rng = np.random.default_rng(4)
    ls = as_listset(random_lists(rng, 50))
    once = CorpusDraws(np.ones((1, len(ls.positions)), np.int32), ls.gaps()[None],
                       ls.missing()[None])
    np.testing.assert_allclose(resampled_ap(ls, once)[0], average_precision(ls), atol=1e-15)


# ----------------------------------------------------------------------------- sampler


def test_poisson_inversion_is_exact_and_blocked():
    means = np.array([0, 1, 2, 3, 7, 19, 50, 200, 900])
    table = poisson_table(means)
    u = np.random.default_rng(5).random((5000, len(means)))
    u[0], u[1] = 0.0, np.nextafter(1.0, 0.0)
    k = poisson_inverse(u, np.arange(len(means)), table)
    ref = np.stack([np.searchsorted(table.cdf[i], u[:, i], side="right")
                    for i in range(len(means))], axis=1)
    np.testing.assert_array_equal(k, ref)
    whole = poisson_counts(1, "t", means, 0, 700)
    parts = np.concatenate([poisson_counts(1, "t", means, a, b)
                            for a, b in [(0, 13), (13, 250), (250, 700)]])
    np.testing.assert_array_equal(whole, parts)


def test_poisson_counts_have_poisson_distributions():
    means = np.array([1, 20])
    c = poisson_counts(7, "dist", np.repeat(means, 10), 0, 20000)
    for j, lam in enumerate(means):
        x = c[:, j * 10:(j + 1) * 10].ravel()
        top = int(lam + 4 * np.sqrt(lam) + 3)
        obs = np.bincount(np.minimum(x, top), minlength=top + 1)
        p = sps.poisson.pmf(np.arange(top + 1), lam)
        p[-1] = sps.poisson.sf(top - 1, lam)
        assert sps.chisquare(obs, p * len(x)).pvalue > 1e-4
        assert abs(x.mean() - lam) < 5 * np.sqrt(lam / len(x))


def test_corpus_sampler_layout():
    s = CorpusSampler(np.array([0, 5, 2]), np.array([3, 0]))
    d = s.draws(0, "lay", 0, 6000)
    assert (d.gaps[:, 0] == 0).all() and (d.missing[:, 1] == 0).all()
    np.testing.assert_allclose(d.copies.mean(0), 1.0, atol=0.06)
    np.testing.assert_allclose(d.gaps.mean(0), [0, 5, 2], atol=0.15)
    np.testing.assert_allclose(d.missing.mean(0), [3, 0], atol=0.1)


# ----------------------------------------------------------------------------- lists


def test_lists_reproduce_trec_eval_ap_and_split_the_corpus():
    runs, qrels = synthetic_trec(runs=5, topics=8, docs_per_topic=400, depth=150,
                                 relevant_rate=0.04, quality_sd=0.4, topic_sd=0.8, seed=3)
    cl = corpus_lists(DocCollection(runs, qrels, 150))
    ap = evaluate(runs, qrels, ["AP"], depth=150).metric("AP")
    np.testing.assert_allclose(average_precision(cl.full).reshape(5, 8), ap, atol=1e-15)
    a, b = cl.half_a, cl.half_b
    np.testing.assert_array_equal(a.length + b.length, cl.full.length)
    np.testing.assert_array_equal(a.relevant + b.relevant, cl.full.relevant)
    np.testing.assert_array_equal(a.retrieved + b.retrieved, cl.full.retrieved)
    # half A of run 2, topic 5, by hand: the ranked list filtered by MD5, renumbered
    i = 2 * 8 + 4
    rows = np.flatnonzero((runs.run == 2) & (runs.topic == cl.topics[4]))
    ranked = rows[np.argsort(-runs.score[rows], kind="stable")][:150]
    docs = runs.docno[ranked]
    keep = md5_half(docs)
    rel = set(qrels.docno[(qrels.topic == cl.topics[4]) & (qrels.grade >= 1)].tolist())
    half = [d for d, k in zip(docs, keep, strict=True) if k]
    expected = [j + 1 for j, d in enumerate(half) if d in rel]
    assert a.take(i, i + 1).positions.tolist() == expected
    assert a.relevant[i] == sum(md5_half(sorted(rel)))


def test_lists_of_the_trec_eval_test_collection(shared_data):
    from irsim.data.trec import read_qrels, read_runs

    d = shared_data / "trec_eval"
    docs = DocCollection(read_runs([d / "results.test"]), read_qrels(d / "qrels.test"), 1000)
    cl = corpus_lists(docs)
    assert cl.topics == ("301", "302", "303")
    # trec_eval 10.0 out.test.aq: map 0.0324 / 0.4175 / 0.0858, num_rel 474 / 77 / 10
    np.testing.assert_allclose(average_precision(cl.full), [0.0324, 0.4175, 0.0858],
                               atol=5e-5)
    np.testing.assert_array_equal(cl.full.relevant, [474, 77, 10])


# ----------------------------------------------------------------------------- BCa


def test_acceleration_is_the_jackknife_of_a_large_corpus():
    """Delete every document of a corpus of N documents (the list's, the missing relevant
    ones, and N - affected others that change nothing): Efron's jackknife acceleration
    tends to corpus_acceleration as N grows."""
    rng = np.random.default_rng(8)
    for rel, R in random_lists(rng, 12, max_len=30):
        if rel.sum() == 0:
            continue
        ls = as_listset([(rel, R)])
        got = corpus_acceleration(ls)[0]

        def ap(r, big_r):
            hits = np.flatnonzero(r) + 1
            return (np.arange(1, len(hits) + 1) / hits).sum() / big_r if big_r else 0.0

        theta = [ap(np.delete(rel, i), R - int(rel[i])) for i in range(len(rel))]
        theta += [ap(rel, R - 1)] * int(R - rel.sum())
        n_big = 10**7
        full = np.array(theta + [ap(rel, R)])
        w = np.ones(len(full))
        w[-1] = n_big - len(theta)
        mean = (w * full).sum() / w.sum()
        u = (n_big - 1) * (mean - full)
        ref = (w * u**3).sum() / (6 * ((w * u**2).sum()) ** 1.5)
        assert got == pytest.approx(ref, rel=1e-4, abs=1e-9)


# ----------------------------------------------------------------------------- small R


def test_silver_bullet_and_prediction_constants():
    assert round(float(silver_bullet_share(4, 0.05)), 3) == 0.527
    assert round(replication_within(0.95), 3) == 0.834
    assert replication_within(0.95) == pytest.approx(
        2 * sps.norm.cdf(sps.norm.isf(0.025) / np.sqrt(2)) - 1, rel=1e-14)


def brute_expected_ap(R, n, j, t):
    tot, cnt = Fraction(0), 0
    for S in itertools.combinations(range(1, n + 1), j):
        free = [r for r in range(1, n + 1) if r not in S][:t]
        pos = sorted(list(S) + free)
        tot += sum((Fraction(i + 1, p) for i, p in enumerate(pos)), Fraction(0)) / R
        cnt += 1
    return tot / cnt


@pytest.mark.parametrize("R,n,j,t", [(3, 7, 2, 1), (4, 8, 3, 1), (5, 9, 0, 5), (4, 10, 4, 0),
                                     (6, 12, 2, 4), (2, 6, 1, 1), (3, 3, 1, 2), (1, 9, 1, 0)])
def test_dynamic_programme_equals_enumeration(R, n, j, t):
    got = expected_ap_random_ranks(R, n, np.array([j]), np.array([t]))[0]
    assert got == pytest.approx(float(brute_expected_ap(R, n, j, t)), rel=1e-13)


def test_silver_bullet_limit_closed_form_and_lead_balloon_by_simulation():
    for R, n in [(4, 1000), (1, 10), (7, 50), (3, 3)]:
        u = float(silver_bullet_share(R))
        j = np.arange(R + 1)
        dp = (sps.binom.pmf(j, R, u) * expected_ap_random_ranks(R, n, j, 0 * j)).sum()
        assert _silver_upper(np.array([R]), np.array([n]), 0.05)[0] == pytest.approx(dp,
                                                                                  rel=1e-12)
    rng = np.random.default_rng(9)
    R, n = 4, 20
    u = float(silver_bullet_share(R))
    vals = []
    for jj in rng.binomial(R, u, 20000):
        S = rng.choice(n, jj, replace=False) + 1
        free = np.setdiff1d(np.arange(1, n + 1), S)[:R - jj]
        pos = np.sort(np.concatenate([S, free]))
        vals.append((np.arange(1, len(pos) + 1) / pos).sum() / R)
    up, low = small_r_bounds(np.array([R]), np.array([n]))
    assert low[0] == pytest.approx(np.mean(vals), abs=4 * np.std(vals) / np.sqrt(len(vals)))


def test_small_r_correction_widens_only_near_zero_and_one():
    ap = np.array([0.0, 0.002, 0.3, 0.97, 1.0])
    lo, hi = np.maximum(ap - 0.01, 0.0), np.minimum(ap + 0.01, 1.0)
    R, L = np.array([4, 4, 4, 4, 4]), np.array([1000] * 5)
    up, low = small_r_bounds(R, L)
    clo, chi = small_r_correct(ap, lo, hi, R, L)
    assert chi[0] == pytest.approx(max(hi[0], up[0])) and clo[0] == lo[0]
    assert chi[1] == max(hi[1], up[1])                 # 0.002 <= upper limit 0.0048
    assert (clo[2], chi[2]) == (lo[2], hi[2])          # mid AP untouched
    assert (clo[3], chi[3]) == (low[3], 1.0) and (clo[4], chi[4]) == (low[4], 1.0)


# ----------------------------------------------------------------------------- meta


def test_meta_analysis_equals_metafor_on_the_bcg_trials():
    """Colditz et al. BCG trials, log risk ratios (metafor dat.bcg): rma(method="DL") gives
    -0.7141 (se 0.1787), tau^2 0.3088, Q 152.2330, CI [-1.0644, -0.3638]; FE -0.4303
    (se 0.0405)."""
    t = np.array([[4, 119, 11, 128], [6, 300, 29, 274], [3, 228, 11, 209],
                  [62, 13536, 248, 12619], [33, 5036, 47, 5761], [180, 1361, 372, 1079],
                  [8, 2537, 10, 619], [505, 87886, 499, 87892], [29, 7470, 45, 7232],
                  [17, 1699, 65, 1600], [186, 50448, 141, 27197], [5, 2493, 3, 2338],
                  [27, 16886, 29, 17825]], float)
    a, b, c, d = t.T
    yi = np.log(a / (a + b)) - np.log(c / (c + d))
    sei = np.sqrt(1 / a - 1 / (a + b) + 1 / c - 1 / (c + d))
    r = random_effects(yi, sei)
    assert round(float(r.effect), 4) == -0.7141 and round(float(r.standard_error), 4) == 0.1787
    assert round(float(r.tau2), 4) == 0.3088 and round(float(r.q), 4) == 152.2330
    assert round(float(r.confidence_interval.low), 4) == -1.0644
    assert round(float(r.confidence_interval.high), 4) == -0.3638
    f = fixed_effect(yi, sei)
    assert round(float(f.effect), 4) == -0.4303 and round(float(f.standard_error), 4) == 0.0405
    # batched rows, and an entry without a usable standard error is left out
    both = random_effects(np.stack([yi, np.append(yi[:-1], np.nan)]),
                          np.stack([sei, sei]))
    assert both.k.tolist() == [13, 12] and both.effect[0] == r.effect


def test_map_parametric_is_the_delta_method():
    rng = np.random.default_rng(3)
    ap, sd = rng.random((4, 9)), rng.random((4, 9))
    m, se, lm, sel = map_parametric(ap, sd)
    for i in range(4):
        c = np.clip(ap[i], 1e-5, 1 - 1e-5)
        assert se[i] == pytest.approx(np.sqrt(sum((s * (x - x * x)) ** 2
                                                  for s, x in zip(sd[i], c, strict=True))) / 9)
        assert sel[i] == pytest.approx(np.sqrt((sd[i] ** 2).sum()) / 9)
        assert lm[i] == pytest.approx(special.logit(c).mean())


# ----------------------------------------------------------------------------- the study


@pytest.fixture(scope="module")
def small_docs():
    runs, qrels = synthetic_trec(runs=6, topics=7, docs_per_topic=300, depth=120,
                                 relevant_rate=0.05, quality_sd=0.5, topic_sd=0.8, seed=4)
    return DocCollection(runs, qrels, 120)


SPLITS = 3


@pytest.fixture(scope="module")
def small(small_docs):
    study, data = make(Config(B=150, splits=SPLITS), small_docs, seed=2,
                       shards=Shards(items=4))
    return data, study, run_study(study, data)


def test_study_equals_a_slow_loop_reference(small):
    """Every split: the draws keyed by (subset 0 | 1 + 2k | 2 + 2k, unit, block), intervals
    by the public bootstrap_ci list by list, counts by a loop (equality at a bound within;
    `logit` compares the other half's AP clamped to [1e-5, 1 - 1e-5])."""
    data, study, (tables, _) = small
    T = len(data.topics)
    ci = tables["corpus_ci"].to_pandas()
    val = tables["corpus_validation"].to_pandas().set_index(["split", "method", "subset"])
    assert sorted(set(val.index.get_level_values(0))) == list(range(SPLITS))
    level = 1 - study.config.alpha
    per_list = {}
    subsets = [(0, data.full)] + [(1 + 2 * k + j, data.halves[k][j]) for k in range(SPLITS)
                                  for j in (0, 1)]
    for sid, ls_all in subsets:
        for u0 in range(0, len(data.systems), RUN_UNIT):
            u1 = min(u0 + RUN_UNIT, len(data.systems))
            ls = ls_all.take(u0 * T, u1 * T)
            sampler = CorpusSampler(ls.gaps(), ls.missing())
            star = np.concatenate([
                resampled_ap(ls, sampler.draws(study.seed, STREAM, b, min(b + CORPUS_BLOCK,
                                                                            study.config.B),
                                               key=(sid, u0 // RUN_UNIT),
                                               block=CORPUS_BLOCK))
                for b in range(0, study.config.B, CORPUS_BLOCK)])
            ap = average_precision(ls)
            acc = corpus_acceleration(ls)
            for i in range(len(ls)):
                for method in study.config.methods:
                    r = bootstrap_ci(ap[i], star[:, i], method=method, confidence_level=level,
                                     acceleration=acc[i] if method == "bca" else None)
                    lo, hi = float(r.confidence_interval.low), float(r.confidence_interval.high)
                    per_list[(sid, u0 * T + i, method)] = (ap[i], lo, hi)
                    clo, chi = small_r_correct(np.array([ap[i]]), np.array([lo]),
                                               np.array([hi]), ls.relevant[i:i + 1],
                                               ls.length[i:i + 1], study.config.alpha)
                    per_list[(sid, u0 * T + i, method + "_small_r")] = (ap[i], clo[0], chi[0])
    # the corpus_ci table (full corpus)
    for row in ci.itertuples():
        s = data.systems.index(row.system)
        t = data.topics.index(row.topic)
        ap, lo, hi = per_list[(0, s * T + t, row.method)]
        assert (row.ap, row.lo, row.hi) == (ap, lo, hi)
    # validation counts, every split, both directions, all lists and R > 5
    edge = 0
    for k in range(SPLITS):
        for (src, dst) in ((0, 1), (1, 0)):
            r_src, r_dst = data.halves[k][src].relevant, data.halves[k][dst].relevant
            name = f"{'AB'[src]}->{'AB'[dst]}"
            for method in study.interval_names:
                for label, thr in (("all", 0), ("R>5", 5)):
                    n = above = below = 0
                    for i in range(len(data.full)):
                        if r_src[i] <= thr or r_src[i] == 0 or r_dst[i] == 0:
                            continue
                        _, lo, hi = per_list[(1 + 2 * k + src, i, method)]
                        other = per_list[(1 + 2 * k + dst, i, method)][0]
                        if method == "logit":
                            edge += other in (0.0, 1.0) and lo == hi
                            other = min(max(other, 1e-5), 1 - 1e-5)
                        n += 1
                        above += other > hi
                        below += other < lo
                    row = val.loc[(k, method, f"{name} {label}")]
                    assert row.lists == n > 0
                    assert row.above == above / n and row.below == below / n
                    assert row.within == (n - above - below) / n
                    expected = 0.834 if method.startswith(("normal", "logit")) else None
                    if expected is None:
                        assert np.isnan(row.predicted_within)
                    else:
                        assert round(row.predicted_within, 3) == expected
    assert edge > 0  # the logit edge case (AP 0 or 1 on both halves) occurs here


def test_map_and_meta_tables(small):
    data, study, (tables, _) = small
    ci = tables["corpus_ci"].to_pandas()
    logit = ci[ci.method == "logit_small_r"]
    S, T = len(data.systems), len(data.topics)
    ap = logit.ap.to_numpy().reshape(S, T)
    sd = logit_sd_from_interval(logit.lo.to_numpy(), logit.hi.to_numpy()).reshape(S, T)
    np.testing.assert_allclose(sd, logit.sd_logit.to_numpy().reshape(S, T), rtol=1e-12)
    maps = tables["corpus_map"].to_pandas()
    par = maps[(maps.measure == "MAP") & (maps.method == "parametric")]
    m, se, _, _ = map_parametric(ap, sd)
    np.testing.assert_allclose(par.estimate, m, rtol=1e-13)
    np.testing.assert_allclose(par.se, se, rtol=1e-12)
    meta = tables["corpus_meta"].to_pandas()
    assert len(meta) == S * (S - 1) // 2 * 2
    row = meta[(meta.system_a == "run2") & (meta.system_b == "run5") & (meta.model == "random")]
    lg = special.logit(np.clip(ap, 1e-5, 1 - 1e-5))
    ref = random_effects(lg[1] - lg[4], np.sqrt(sd[1] ** 2 + sd[4] ** 2))
    assert row.effect.iloc[0] == pytest.approx(float(ref.effect), rel=1e-12)
    assert row.tau2.iloc[0] == pytest.approx(float(ref.tau2), rel=1e-12, abs=1e-15)
    split = tables["corpus_split"].to_pandas()
    inside = split.normalised.abs() <= 1
    other = split.ap_other.where(split.method != "logit", split.ap_other.clip(1e-5, 1 - 1e-5))
    within = (other >= split.lo) & (other <= split.hi)
    assert (inside == within).all()


def test_shard_size_changes_nothing(small, small_docs):
    data, study, (tables, info) = small
    assert info["shards"] == 2 * SPLITS  # 6 runs in blocks of 4, per split
    other, data2 = make(Config(B=150, splits=SPLITS), small_docs, seed=2,
                        shards=Shards(items=12))
    t2, info2 = run_study(other, data2)
    assert info2["shards"] == SPLITS
    for name in tables:
        assert t2[name].equals(tables[name]), name


def test_split_zero_is_the_single_split(small, small_docs):
    """splits=1 gives exactly the tables of split 0 of a run with more splits (draws of the
    full corpus and of split 0 keyed as before; the other splits only add rows)."""
    data, study, (tables, _) = small
    one, data1 = make(Config(B=150, splits=1), small_docs, seed=2, shards=Shards(items=4))
    t1, info = run_study(one, data1)
    assert info["shards"] == 2 and data1.salts == ("",)
    for name in t1:
        if name in ("corpus_validation", "corpus_validation_summary"):
            continue
        assert t1[name].equals(tables[name]), name
    val = tables["corpus_validation"].to_pandas()
    first = val[val.split == 0].reset_index(drop=True)
    pd_testing = pytest.importorskip("pandas").testing
    pd_testing.assert_frame_equal(first, t1["corpus_validation"].to_pandas())
    summ1 = t1["corpus_validation_summary"].to_pandas()
    assert (summ1.splits == 1).all() and summ1.within_sd.isna().all()
    assert summ1.within_lo.isna().all()


def test_halves_of_every_split_by_hand(small_docs):
    """Split k puts a document in half A when the first bit of MD5(salt_k + docno) is 0;
    the halves of a list are its documents of that half, renumbered."""
    import hashlib

    cl = corpus_lists(small_docs, splits=3)
    assert cl.salts == ("", split_salt(1), split_salt(2)) and cl.splits == 3
    runs, qrels = small_docs.runs, small_docs.qrels
    T = len(cl.topics)
    rel = set(qrels.docno[(qrels.topic == cl.topics[2]) & (qrels.grade >= 1)].tolist())
    rows = np.flatnonzero((runs.run == 3) & (runs.topic == cl.topics[2]))
    ranked = runs.docno[rows[np.argsort(-runs.score[rows], kind="stable")][:120]]
    for k, salt in enumerate(cl.salts):
        def in_a(d, salt=salt):
            return hashlib.md5((salt + d).encode()).digest()[0] >> 7 == 0
        for j, want in enumerate((True, False)):
            half = [d for d in ranked if in_a(d) == want]
            expected = [i + 1 for i, d in enumerate(half) if d in rel]
            ls = cl.halves[k][j]
            assert ls.take(3 * T + 2, 3 * T + 3).positions.tolist() == expected
            assert ls.relevant[3 * T + 2] == sum(in_a(d) == want for d in rel)
    # different salts give different halves, split 0 the unsalted rule
    assert not np.array_equal(cl.halves[1][0].relevant, cl.halves[0][0].relevant)
    assert np.array_equal(cl.halves[0][0].positions, corpus_lists(small_docs).half_a.positions)


def test_summary_is_the_t_interval_over_splits(small):
    """corpus_validation_summary from corpus_validation: per split the two directions pooled
    (counts / lists), then mean, sd and scipy's t interval over splits."""
    data, study, (tables, _) = small
    val = tables["corpus_validation"].to_pandas()
    summ = tables["corpus_validation_summary"].to_pandas().set_index(["method", "subset"])
    val["label"] = val.subset.str.split(" ").str[1]
    assert len(summ) == len(study.interval_names) * 2
    for (method, label), part in val.groupby(["method", "label"]):
        row = summ.loc[(method, label)]
        shares = {}
        for what in ("above", "within", "below"):
            c = (part[what] * part.lists).round().groupby(part.split).sum()
            n = part.lists.groupby(part.split).sum()
            x = (c / n)[n > 0].to_numpy()
            shares[what] = x
            assert row[what] == pytest.approx(x.mean(), abs=1e-15)
            assert row[f"{what}_sd"] == pytest.approx(x.std(ddof=1), abs=1e-15)
            lo, hi = sps.t.interval(1 - study.config.alpha, len(x) - 1, loc=x.mean(),
                                    scale=sps.sem(x))
            if x.std() > 0:
                assert row[f"{what}_lo"] == pytest.approx(lo, abs=1e-14)
                assert row[f"{what}_hi"] == pytest.approx(hi, abs=1e-14)
        assert row.splits == SPLITS and row.lists == part.lists.sum() and row.rel == 1
        assert shares["above"] + shares["within"] + shares["below"] == pytest.approx(1.0)


@pytest.mark.slow
def test_mean_within_share_over_splits_meets_the_prediction():
    """Cormack & Lynam's parametric model predicts that a fraction 2 Phi(z / sqrt 2) - 1 =
    0.834 of the other half's APs falls within the normal interval from one half. On a
    synthetic collection where the model holds (R about 120 per topic, 60 per half, every
    relevant document retrieved so AP* is close to normal), the mean within share over 20
    MD5 splits is within its own t interval (level 95%, 19 degrees of freedom, from the
    spread over splits: half-width about 0.013 here) of 0.834. A wrong interval width
    misses it by far (sd / sqrt 2 would give 2 Phi(z / 2) - 1 = 0.67)."""
    runs, qrels = synthetic_trec(runs=4, topics=40, docs_per_topic=600, depth=600,
                                 relevant_rate=0.2, quality_sd=0.4, topic_sd=0.5, seed=6)
    study, data = make(Config(B=200, splits=20, methods=["normal"], small_r=False),
                       DocCollection(runs, qrels, 600), seed=1, shards=Shards())
    tables, _ = run_study(study, data)
    row = tables["corpus_validation_summary"].to_pandas().set_index("subset").loc["all"]
    predicted = 2 * sps.norm.cdf(sps.norm.isf(0.025) / np.sqrt(2)) - 1
    assert row.splits == 20 and row.predicted_within == pytest.approx(predicted, rel=1e-14)
    half = sps.t.isf(0.025, 19) * row.within_sd / np.sqrt(20)
    assert row.within_hi - row.within == pytest.approx(half, rel=1e-12)
    assert half < 0.02  # the check is tight enough to mean something
    assert abs(row.within - predicted) <= half
    assert row.within_lo <= predicted <= row.within_hi


def test_logit_edge_case_counts_within():
    """AP 0 on both halves: the normal interval is [0, 0] and the logit interval [eps, eps];
    both count the other half's 0 as within (a value equal to a bound is within; logit
    compares on its clamped scale), and the normalised difference agrees (|x| <= 1)."""
    # one run, one topic: relevant documents only where half A and B both miss them
    docs = [f"d-{i}" for i in range(400)]
    half_a = md5_half(docs)
    rel_a = [d for d, a in zip(docs, half_a, strict=True) if a][:3]
    rel_b = [d for d, a in zip(docs, half_a, strict=True) if not a][:3]
    retrieved = [d for d in docs if d not in rel_a + rel_b][:100]
    runs = Runs(("r",), np.zeros(100, np.int32), obj(*["1"] * 100), obj(*retrieved),
                np.arange(100, 0, -1).astype(float))
    qrels = Qrels(obj(*["1"] * 6), obj(*(rel_a + rel_b)), np.ones(6, np.int64))
    study, data = make(Config(B=50, splits=1, methods=["normal", "logit"], small_r=False),
                       DocCollection(runs, qrels, 100), seed=0, shards=Shards())
    tables, _ = run_study(study, data)
    val = tables["corpus_validation"].to_pandas()
    every = val[val.subset.str.endswith("all")]
    assert len(every) == 4 and (every.within == 1.0).all() and (every.lists == 1).all()
    assert (val[val.subset.str.endswith("R>5")].lists == 0).all()  # R = 3 per half
    split = tables["corpus_split"].to_pandas()
    assert (split.ap_ci == 0).all() and (split.ap_other == 0).all()
    logit = split[split.method == "logit"]
    # [eps, eps] up to the rounding of the sd of identical logits (a few ulps)
    np.testing.assert_allclose(logit[["lo", "hi"]].to_numpy(), 1e-5, rtol=1e-12)
    assert (logit.lo < 1e-5).all()  # so the unclamped 0 would be "below"
    assert (split.normalised.abs() <= 1).all()



@pytest.mark.ray
def test_ray_two_workers_equal_local(ray_local, small):
    data, study, (tables, _) = small
    t2, info = run_study(study, data, engine="ray", engine_options={"workers": 2})
    assert info["engine"] == "ray"
    for name in tables:
        assert t2[name].equals(tables[name]), name


def test_normalised_difference_matches_the_interval():
    ap = np.array([0.3, 0.3, 0.0, 1.0])
    lo, hi = np.array([0.2, 0.2, 1e-5, 0.9]), np.array([0.4, 0.4, 1e-4, 1.0])
    x = normalised_difference(np.array([0.35, 0.1, 0.0, 1.0]), ap, lo, hi)
    assert x.tolist() == pytest.approx([0.5, -2.0, -np.inf, 0.0])


def test_bad_configuration_is_refused(small, small_docs):
    data, study, _ = small
    shards = Shards()
    with pytest.raises(ConfigError, match="unknown value of experiment.methods 'percentiles'"):
        make(Config(methods=["normal", "percentiles"]), small_docs, seed=0, shards=shards)
    with pytest.raises(ConfigError, match="alpha"):
        make(Config(alpha=1.5), small_docs, seed=0, shards=shards)
    with pytest.raises(ConfigError, match="experiment.B must be an integer >= 2, got 1"):
        make(Config(B=1), small_docs, seed=0, shards=shards)
    with pytest.raises(ConfigError, match="engine.shard_items"):
        make(Config(), small_docs, seed=0, shards=Shards(items=0))
    with pytest.raises(ConfigError, match="experiment.splits"):
        make(Config(splits=0), small_docs, seed=0, shards=shards)
    with pytest.raises(ConfigError, match="experiment.rel"):
        make(Config(rel="two"), small_docs, seed=0, shards=shards)
    with pytest.raises(ConfigError, match="splits"):
        replace(study, config=replace(study.config, splits=SPLITS + 1)).plan(data)
    with pytest.raises(ConfigError, match="unknown system"):
        make(Config(pairs=[["run1", "run99"]]), small_docs, seed=0, shards=shards)
    with pytest.raises(ConfigError, match="unknown system"):
        replace(study, config=replace(study.config, pairs=[["run1", "run99"]])).plan(data)
    no_halves = CorpusLists(data.systems, data.topics, data.full)
    with pytest.raises(ConfigError, match="split"):
        study.plan(no_halves)


@pytest.mark.slow
def test_cormack_lynam2006_preset_end_to_end(tmp_path):
    from irsim.runner import compose_config, run

    cfg = compose_config(["experiment=cormack_lynam2006", "experiment.B=100",
                          "collection.runs=6", "collection.topics=8",
                          "collection.docs_per_topic=600", "collection.depth=200",
                          "quiet=true"])
    assert cfg.experiment.name == "corpus_ci" and cfg.experiment.B == 100
    tables = run(cfg, tmp_path)
    assert {"corpus_ci", "corpus_validation", "corpus_map", "corpus_map_validation",
            "corpus_meta", "corpus_split"} <= set(tables)
    assert tables["corpus_ci"].column_names[:6] == ["system", "topic", "ap", "lo", "hi",
                                                    "method"]
    assert tables["corpus_validation"].column_names[:7] == [
        "split", "method", "subset", "above", "within", "below", "predicted_within"]
    assert cfg.experiment.splits == 10 and cfg.experiment.rel == 1
    assert set(tables["corpus_validation"].column("split").to_pylist()) == set(range(10))
    summ = tables["corpus_validation_summary"].to_pandas()
    assert (summ.splits == 10).all() and (summ.rel == 1).all()
    report = (tmp_path / "report.md").read_text()
    assert "Split-corpus validation" in report and "Meta-analysis" in report
    assert "Relevant documents: grade >= 1" in report and "One split is one draw" in report
    assert "metrics: AP (relevant: grade >= 1)" in report
    for png in ("corpus_normalised_diff.png", "corpus_map_intervals.png",
                "corpus_within_splits.png"):
        assert (tmp_path / png).stat().st_size > 20_000
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    salts = manifest["collection"]["split_salts"]
    assert salts == [split_salt(k) for k in range(10)] and salts[0] == ""


@pytest.mark.slow
def test_trec_files_through_the_cli_runner(tmp_path):
    from irsim.runner import compose_config, run

    d = SHARED_DATA / "trec_eval"
    cfg = compose_config(["experiment=corpus_ci", "collection=trec",
                          f"collection.runs={d}/results.test",
                          f"collection.qrels={d}/qrels.test", "experiment.B=200",
                          "quiet=true"])
    tables = run(cfg, tmp_path)
    ci = tables["corpus_ci"].to_pandas()
    assert len(ci) == 3 * 6 and set(ci.topic) == {"301", "302", "303"}
    assert ((ci.lo <= ci.ap + 1e-12) | ci.method.str.startswith("logit")).all()
    assert "corpus_meta" not in tables  # one run: no pairs


@pytest.mark.slow
def test_one_split_reproduces_the_recorded_tables_but_the_logit_edge_case():
    """experiment.splits=1 against the tables recorded before repeated splits
    (tests/golden/corpus_ci_synthetic): bit-identical but for the new `split` column, the
    new summary table and the `logit` rows the edge rule changes. Those are explained
    exactly: counting the other half's AP unclamped (the former rule) on corpus_split gives
    the recorded shares, and only lists with AP 0 or 1 on the other half move."""
    import pyarrow.parquet as pq
    from golden.cases import CASES
    from golden.record import tables_of

    here = Path(__file__).resolve().parent / "golden"
    want = {p.stem: pq.read_table(p) for p in (here / "corpus_ci_synthetic").glob("*.parquet")}
    got = tables_of(CASES["corpus_ci_synthetic"] + ["experiment.splits=1"])
    assert set(got) == set(want) | {"corpus_validation_summary"}
    for name in set(want) - {"corpus_validation", "corpus_split"}:
        assert got[name].equals(want[name]), name
    val = got["corpus_validation"].drop(["split"])
    assert val.schema.equals(want["corpus_validation"].schema)
    g, w = val.to_pandas(), want["corpus_validation"].to_pandas()
    keep = g.method != "logit"
    assert g[keep].equals(w[keep])
    split_new, split_old = got["corpus_split"].to_pandas(), want["corpus_split"].to_pandas()
    assert split_new.drop(columns="normalised").equals(split_old.drop(columns="normalised"))
    moved = split_new.normalised.to_numpy() != split_old.normalised.to_numpy()
    assert moved.any() and (split_new.method[moved] == "logit").all()
    assert split_new.ap_other[moved].isin([0.0, 1.0]).all()
    logit = split_new[split_new.method == "logit"]
    for row in w[~keep].itertuples():
        direction, label = row.subset.split(" ")
        part = logit[logit.direction == direction]
        if label != "all":
            part = part[part.relevant > 5]
        assert row.lists == len(part)
        assert row.above == (part.ap_other > part.hi).sum() / len(part)
        assert row.below == (part.ap_other < part.lo).sum() / len(part)
        clamped = part.ap_other.clip(1e-5, 1 - 1e-5)
        new = g[(g.method == "logit") & (g.subset == row.subset)].iloc[0]
        assert new.above == (clamped > part.hi).sum() / len(part)
        assert new.within == ((clamped >= part.lo) & (clamped <= part.hi)).sum() / len(part)


@pytest.mark.slow
def test_relevance_threshold_of_graded_qrels(tmp_path):
    """experiment.rel=2 on the graded trec_eval test qrels: lists, R and AP are those of
    AP(rel=2) (irsim's trec_eval-exact metric), and the threshold is printed in the report
    header, the summary table and the manifest; the DL-style preset sets rel = 2."""
    from irsim.data.trec import read_qrels, read_runs
    from irsim.runner import compose_config, run

    d = SHARED_DATA / "trec_eval"
    runs, qrels = read_runs([d / "results.test"]), read_qrels(d / "qrels.rel_level")
    docs = DocCollection(runs, qrels, 1000)
    cl = corpus_lists(docs, rel=2, splits=2)
    ref = evaluate(runs, qrels, ["AP(rel=2)"], depth=1000)
    np.testing.assert_allclose(average_precision(cl.full),
                               ref.metric("AP(rel=2)")[0][[ref.topics.index(t)
                                                           for t in cl.topics]], atol=1e-15)
    big_r = {t: int(((qrels.topic == t) & (qrels.grade >= 2)).sum()) for t in cl.topics}
    assert cl.full.relevant.tolist() == [big_r[t] for t in cl.topics] and cl.rel == 2
    assert cl.full.relevant.sum() < corpus_lists(docs, rel=1).full.relevant.sum()
    cfg = compose_config(["experiment=corpus_ci_dl", f"collection.runs={d}/results.test",
                          f"collection.qrels={d}/qrels.rel_level", "experiment.B=100",
                          "experiment.splits=3", "quiet=true"])
    assert cfg.experiment.rel == 2 and cfg.experiment.name == "corpus_ci"
    tables = run(cfg, tmp_path)
    assert (tables["corpus_validation_summary"].column("rel").to_pylist() ==
            [2] * tables["corpus_validation_summary"].num_rows)
    ci = tables["corpus_ci"].to_pandas()
    first = ci[ci.method == "normal"]
    assert first.ap.tolist() == average_precision(cl.full).tolist()
    report = (tmp_path / "report.md").read_text()
    assert "metrics: AP (relevant: grade >= 2)" in report
    assert "Relevant documents: grade >= 2 (`experiment.rel`)" in report
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["collection"]["relevance_threshold"] == 2
    assert manifest["collection"]["split_salts"] == ["", split_salt(1), split_salt(2)]
