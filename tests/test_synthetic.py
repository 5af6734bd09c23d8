"""Synthetic generators: determinism, shapes, ranges, known truth, controllable quality."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit

from irsim.data.synthetic import link_mean, synthetic_scores, synthetic_trec
from irsim.errors import ConfigError

# ----------------------------------------------------------------------------- scores


def test_scores_deterministic_and_seeded():
    a = synthetic_scores(systems=7, topics=12, metrics=("AP", "RR"), seed=3)
    b = synthetic_scores(systems=7, topics=12, metrics=("AP", "RR"), seed=3)
    c = synthetic_scores(systems=7, topics=12, metrics=("AP", "RR"), seed=4)
    np.testing.assert_array_equal(a.matrix.values, b.matrix.values)
    np.testing.assert_array_equal(a.true_means, b.true_means)
    assert not np.array_equal(a.matrix.values, c.matrix.values)
    assert not np.array_equal(a.true_means, c.true_means)


def test_scores_shapes_ids_and_unpacking():
    res = synthetic_scores(systems=5, topics=9, metrics=("AP", "P@10", "RR"))
    m, true_means = res
    assert m is res.matrix and true_means is res.true_means
    assert m.shape == (3, 5, 9)
    assert m.metrics == ("AP", "P@10", "RR")
    assert m.systems == tuple(f"sys{i}" for i in range(1, 6))
    assert m.topics == tuple(str(i) for i in range(1, 10))
    assert true_means.shape == res.system_effects.shape == (3, 5)
    assert m.values.dtype == np.float64


@pytest.mark.parametrize("link", ["clip", "logit"])
def test_scores_in_unit_interval(link):
    sds = {"clip": (0.05, 0.15, 0.08), "logit": (0.3, 1.0, 0.5)}[link]
    m = synthetic_scores(systems=40, topics=200, link=link, seed=1, system_sd=sds[0],
                         topic_sd=sds[1], noise_sd=sds[2]).matrix
    v = m.values
    assert (v >= 0).all() and (v <= 1).all()
    if link == "logit":
        assert ((v > 0) & (v < 1)).all()
    else:
        assert (v == 0).any()  # clipping leaves AP-like point masses at 0


def test_nested_designs_keep_existing_values():
    big = synthetic_scores(systems=8, topics=20, metrics=("a", "b"), seed=5)
    fewer_systems = synthetic_scores(systems=5, topics=20, metrics=("a", "b"), seed=5)
    fewer_topics = synthetic_scores(systems=8, topics=12, metrics=("a", "b"), seed=5)
    one_metric = synthetic_scores(systems=8, topics=20, metrics=("a",), seed=5)
    np.testing.assert_array_equal(fewer_systems.matrix.values, big.matrix.values[:, :5])
    np.testing.assert_array_equal(fewer_topics.matrix.values, big.matrix.values[:, :, :12])
    np.testing.assert_array_equal(one_metric.matrix.values, big.matrix.values[:1])
    np.testing.assert_array_equal(fewer_systems.true_means, big.true_means[:, :5])


@pytest.mark.parametrize("link,sds", [("clip", (0.05, 0.15, 0.08)),
                                      ("clip", (0.1, 0.3, 0.2)),
                                      ("logit", (0.4, 1.0, 0.6))])
def test_sample_means_converge_to_true_means(link, sds):
    system_sd, topic_sd, noise_sd = sds
    n = 20_000
    res = synthetic_scores(systems=6, topics=n, metrics=("x", "y"), seed=11, link=link,
                           system_sd=system_sd, topic_sd=topic_sd, noise_sd=noise_sd)
    sample = res.matrix.values.mean(axis=2)
    # per system the n topic scores are iid; link slopes are <= 1, so the score sd is at
    # most the latent sd: 5 standard errors of the mean
    tol = 5 * math.hypot(topic_sd, noise_sd) / math.sqrt(n)
    np.testing.assert_allclose(sample, res.true_means, rtol=0, atol=tol)
    # and the truth is not just the sample: different seeds, same true means given effects
    other = synthetic_scores(systems=6, topics=200, metrics=("x", "y"), seed=12, link=link,
                             system_sd=system_sd, topic_sd=topic_sd, noise_sd=noise_sd,
                             system_effects=res.system_effects)
    np.testing.assert_array_equal(other.true_means, res.true_means)


@pytest.mark.parametrize("m,sd", [(0.3, 0.17), (-0.2, 0.5), (0.95, 0.1), (1.4, 0.3),
                                  (0.5, 0.0)])
def test_link_mean_clip_against_quadrature(m, sd):
    if sd == 0:
        assert link_mean(m, sd, "clip") == min(max(m, 0), 1)
        return
    f = lambda z: min(max(m + sd * z, 0.0), 1.0) * stats.norm.pdf(z)  # noqa: E731
    expected, _ = integrate.quad(f, -12, 12, points=[-m / sd, (1 - m) / sd], limit=200)
    assert float(link_mean(m, sd, "clip")) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("m,sd", [(-0.8, 1.0), (0.0, 0.3), (2.0, 2.5), (-3.0, 0.7)])
def test_link_mean_logit_against_quadrature(m, sd):
    expected, _ = integrate.quad(lambda z: expit(m + sd * z) * stats.norm.pdf(z), -np.inf,
                                 np.inf, epsabs=1e-13)
    assert float(link_mean(m, sd, "logit")) == pytest.approx(expected, abs=1e-11)


def test_system_effects_override():
    res = synthetic_scores(systems=4, topics=30, system_effects=[0.0, 0.0, 0.05, -0.05])
    tm = res.true_means[0]
    assert tm[0] == tm[1] and tm[3] < tm[0] < tm[2]
    per_metric = synthetic_scores(systems=2, topics=3, metrics=("a", "b"),
                                  system_effects=[[0.0, 0.1], [0.1, 0.0]])
    assert per_metric.true_means[0, 1] == per_metric.true_means[1, 0]


def test_metric_correlation_controls_agreement():
    def corr(rho: float) -> float:
        v = synthetic_scores(systems=30, topics=300, metrics=("a", "b"), seed=2,
                             metric_corr=rho, link="logit", mu=0.5, system_sd=0.5,
                             topic_sd=1.0, noise_sd=0.8).matrix.values
        return float(np.corrcoef(v[0].ravel(), v[1].ravel())[0, 1])

    hi, lo = corr(0.9), corr(0.0)
    assert hi > 0.8 and abs(lo) < 0.1


def test_mu_per_metric():
    res = synthetic_scores(systems=3, topics=4, metrics=("a", "b"), mu=[0.2, 0.6],
                           system_effects=[0, 0, 0])
    assert res.true_means[0, 0] < res.true_means[1, 0]


@pytest.mark.parametrize("kwargs,needle", [
    ({"systems": 0}, "systems must be an integer >= 1"),
    ({"topics": 2.5}, "topics must be an integer"),
    ({"seed": -1}, "seed must be an integer >= 0"),
    ({"noise_sd": -0.1}, "noise_sd must be finite and >= 0"),
    ({"metric_corr": 1.5}, "metric_corr must be in [0, 1]"),
    ({"link": "probit"}, "link must be one of clip, logit"),
    ({"metrics": ("a", "a")}, "unique names"),
    ({"mu": [0.1, 0.2]}, "one number per metric"),
    ({"link": "logit", "mu": 1.2}, "mu must be in (0, 1)"),
    ({"system_effects": [0.0, 1.0]}, "system_effects must be finite with shape (30,)"),
])
def test_scores_validation(kwargs, needle):
    with pytest.raises(ConfigError) as info:
        synthetic_scores(**kwargs)
    assert needle in str(info.value)


# ----------------------------------------------------------------------------- TREC


def ranked_grades(runs, qrels, depth):
    """Grades of the ranked documents, shape (runs, topics, depth), by plain numpy."""
    qkey = qrels.topic.astype(str) + "\t" + qrels.docno.astype(str)
    order = np.argsort(qkey)
    rkey = runs.topic.astype(str) + "\t" + runs.docno.astype(str)
    pos = np.searchsorted(qkey[order], rkey)
    assert (qkey[order][np.minimum(pos, len(qkey) - 1)] == rkey).all()  # every doc judged
    grade = qrels.grade[order][pos]
    # order rows by run, topic, score descending (independently of how they were written)
    topic_num = runs.topic.astype(int)
    rows = np.lexsort((-runs.score, topic_num, runs.run))
    return grade[rows].reshape(len(runs.names), -1, depth)


def test_trec_deterministic_and_seeded():
    kw = dict(runs=4, topics=5, docs_per_topic=200, depth=50)
    r1, q1 = synthetic_trec(seed=1, **kw)
    r2, q2 = synthetic_trec(seed=1, **kw)
    r3, q3 = synthetic_trec(seed=2, **kw)
    assert (r1.docno == r2.docno).all() and (q1.grade == q2.grade).all()
    assert not (r1.docno == r3.docno).all()
    assert not (q1.grade == q3.grade).all()


def test_trec_shapes_ids_and_scores():
    runs, qrels = synthetic_trec(runs=3, topics=4, docs_per_topic=100, depth=30, seed=0)
    assert runs.names == ("run1", "run2", "run3")
    assert len(runs) == 3 * 4 * 30 and len(qrels) == 4 * 100
    assert runs.run.dtype == np.int32 and runs.score.dtype == np.float64
    assert qrels.grade.dtype == np.int64
    assert qrels.topics == ["1", "2", "3", "4"]
    assert set(np.unique(runs.run).tolist()) == {0, 1, 2}
    for t in qrels.topics:
        docs = qrels.docno[qrels.topic == t]
        assert len(set(docs.tolist())) == 100  # no duplicate docnos in the qrels
        assert set(docs.tolist()) == {f"d{t}-{k}" for k in range(1, 101)}
    key = runs.run.astype(str) + "\t" + runs.topic.astype(str)
    for k in np.unique(key):
        sel = key == k
        assert len(set(runs.docno[sel].tolist())) == 30  # no duplicate docno in a ranking
        s = runs.score[sel]
        assert len(np.unique(s)) == 30  # distinct scores: no ties to break
        assert (s == s.astype(np.float32)).all()  # exact in single precision too


def test_trec_grades_and_relevant_rate():
    _, qrels = synthetic_trec(runs=1, topics=200, docs_per_topic=500, depth=10, seed=3,
                              grades=(-1, 0, 1, 2), relevant_rate=0.1)
    assert set(qrels.grade.tolist()) == {0, 1, 2}  # -1 is never produced
    rel = (qrels.grade > 0).reshape(200, 500)
    assert rel.any(axis=1).all()  # every topic has a relevant document
    n = rel.size
    assert abs(rel.mean() - 0.1) < 5 * math.sqrt(0.1 * 0.9 / n)
    # higher grades are rarer (each level half as likely as the one below)
    g = qrels.grade[qrels.grade > 0]
    assert abs((g == 2).mean() - 1 / 3) < 5 * math.sqrt(2 / 9 / g.size)


def test_topics_without_relevant_get_one():
    _, qrels = synthetic_trec(runs=1, topics=50, docs_per_topic=20, depth=5,
                              relevant_rate=0.001, seed=0)
    rel = (qrels.grade > 0).reshape(50, 20)
    assert (rel.sum(axis=1) >= 1).all()


def test_better_quality_ranks_relevant_earlier():
    quality = [0.0, 0.5, 1.0, 2.0, 4.0]
    runs, qrels = synthetic_trec(runs=5, topics=50, docs_per_topic=1000, depth=100,
                                 quality=quality, relevant_rate=0.05, seed=7)
    g = ranked_grades(runs, qrels, 100)
    p10 = (g[:, :, :10] > 0).mean(axis=(1, 2))  # mean precision at 10 per run
    assert (np.diff(p10) > 0).all(), p10
    # quality 0 ranks at random: P@10 is about the relevant rate (5 standard errors)
    assert abs(p10[0] - 0.05) < 5 * math.sqrt(0.05 * 0.95 / 500)
    # high quality also prefers higher grades: mean grade of relevant docs in the top 10
    top = g[:, :, :10]
    mean_grade = [top[r][top[r] > 0].mean() for r in (1, 4)]
    assert mean_grade[1] > mean_grade[0]


def test_trec_adding_runs_keeps_existing_runs():
    a, qa = synthetic_trec(runs=3, topics=4, docs_per_topic=50, depth=20, seed=9,
                           quality=[0.5, 1.0, 1.5])
    b, qb = synthetic_trec(runs=5, topics=4, docs_per_topic=50, depth=20, seed=9,
                           quality=[0.5, 1.0, 1.5, 2.0, 2.5])
    n = len(a)
    assert (a.docno == b.docno[:n]).all() and (qa.grade == qb.grade).all()


def test_trec_full_size():
    """A full-size collection (its generation time is a benchmark's business, not a test's:
    bench/bench_metrics.py times evaluation on it)."""
    runs, qrels = synthetic_trec(runs=100, topics=50, docs_per_topic=1000, depth=1000)
    assert len(runs) == 100 * 50 * 1000 and len(qrels) == 50 * 1000
    assert len(runs.names) == 100 and len(np.unique(runs.run)) == 100 and qrels.grade.max() >= 1


@pytest.mark.parametrize("kwargs,needle", [
    ({"depth": 2000}, "depth (2000) must be <= docs_per_topic (1000)"),
    ({"runs": 0}, "runs must be an integer >= 1"),
    ({"grades": (1, 2)}, "at least one level <= 0 and one > 0"),
    ({"grades": (0,)}, "at least one level <= 0 and one > 0"),
    ({"relevant_rate": 0.0}, "relevant_rate must be in (0, 1]"),
    ({"quality": [1.0, 2.0]}, "one per run (20)"),
    ({"quality": -1.0}, "quality must be a number >= 0"),
    ({"noise_sd": 0}, "noise_sd must be > 0"),
])
def test_trec_validation(kwargs, needle):
    with pytest.raises(ConfigError) as info:
        synthetic_trec(**kwargs)
    assert needle in str(info.value)
