"""Pools of depth k, qrels restricted to them, and the assessor-effort study."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest
from conftest import SHARED_DATA
from test_swap import assert_identical

from irsim.data.collection import DocCollection
from irsim.data.synthetic import synthetic_trec
from irsim.data.trec import read_qrels, read_runs
from irsim.data.types import Qrels, Runs
from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments import Shards, error_rates
from irsim.experiments.effort import DEFAULT_POOLS, Config, effort_data, make, pool_label
from irsim.metrics import evaluate
from irsim.sampling.pooling import pool_runs, pooled_qrels


def effort_study(docs, *, seed=0, shards=None, **params):
    """The study of `params` (Config fields) on `docs`, as the CLI makes it."""
    return make(Config(**params), docs, seed=seed, shards=shards or Shards())


def brute_force_pool(runs: Runs, depth: int) -> set[tuple[str, str]]:
    """Per run and topic: sort by (score desc, docno desc) in Python, keep the top k."""
    lists = defaultdict(list)
    for r, t, d, s in zip(runs.run.tolist(), runs.topic.tolist(), runs.docno.tolist(),
                          runs.score.tolist(), strict=True):
        lists[(r, t)].append((s, d.encode()))
    out = set()
    for (_, t), docs in lists.items():
        docs.sort(reverse=True)  # score desc, then docno desc (bytewise, as strcmp)
        out |= {(t, d.decode()) for _, d in docs[:depth]}
    return out


def tied_runs(seed: int = 0) -> Runs:
    """Synthetic runs with many score ties (scores rounded), so the docno rule matters."""
    runs, _ = synthetic_trec(runs=6, topics=5, docs_per_topic=120, depth=80, seed=seed)
    rng = np.random.default_rng(seed)
    score = np.round(rng.normal(0, 1, len(runs.score)), 1)
    return Runs(runs.names, runs.run, runs.topic, runs.docno, score)


@pytest.mark.parametrize("depth", [1, 5, 10, 33, 100])
def test_pool_is_the_union_of_the_runs_top_k(depth):
    runs = tied_runs(depth)
    pool = pool_runs(runs, depth)
    got = list(zip(pool.topic.tolist(), pool.docno.tolist(), strict=True))
    assert len(got) == len(set(got))
    assert set(got) == brute_force_pool(runs, depth)
    assert got == sorted(got)
    sizes = pool.sizes()
    assert sum(sizes.values()) == len(pool)
    assert max(sizes.values()) <= 6 * depth


def test_pool_of_the_trec_eval_test_run():
    runs = read_runs([SHARED_DATA / "trec_eval" / "results.test"])
    for depth in (1, 10, 1000):
        pool = pool_runs(runs, depth)
        assert set(zip(pool.topic.tolist(), pool.docno.tolist(), strict=True)) == \
            brute_force_pool(runs, depth)
    assert set(pool_runs(runs, 10).sizes().values()) == {10}


def test_pooled_qrels_judge_exactly_the_pool():
    runs, qrels = synthetic_trec(runs=5, topics=4, docs_per_topic=200, depth=150, seed=2)
    pool = pool_runs(runs, 20)
    pq = pooled_qrels(qrels, pool)
    pooled = set(zip(pool.topic.tolist(), pool.docno.tolist(), strict=True))
    assert set(zip(pq.topic.tolist(), pq.docno.tolist(), strict=True)) == pooled
    grade = dict(zip(zip(qrels.topic.tolist(), qrels.docno.tolist(), strict=True),
                     qrels.grade.tolist(), strict=True))
    for t, d, g in zip(pq.topic.tolist(), pq.docno.tolist(), pq.grade.tolist(), strict=True):
        assert g == grade.get((t, d), 0)
    # documents the qrels lack are judged non-relevant; topics without qrels are dropped
    partial = Qrels(qrels.topic[qrels.topic != "1"], qrels.docno[qrels.topic != "1"],
                    qrels.grade[qrels.topic != "1"])
    assert "1" not in set(pooled_qrels(partial, pool).topic.tolist())


def test_effort_data_recomputes_metrics_on_the_pools():
    runs, qrels = synthetic_trec(runs=6, topics=8, docs_per_topic=150, depth=100, seed=5,
                                 quality_sd=0.3)
    docs = DocCollection(runs, qrels, 100)
    data = effort_data(docs, [("AP", 30), ("P@10", 10), ("AP", None)])
    assert data.matrix.metrics == ("AP|depth=30", "P@10|depth=10", "AP|depth=all")
    # brute-force pool -> qrels -> evaluate gives the same scores
    pooled = brute_force_pool(runs, 30)
    keep = np.array([(t, d) in pooled for t, d in zip(qrels.topic.tolist(),
                                                      qrels.docno.tolist(), strict=True)])
    sub = Qrels(qrels.topic[keep], qrels.docno[keep], qrels.grade[keep])
    expected = evaluate(runs, sub, ["AP"], depth=100)
    np.testing.assert_array_equal(data.matrix.metric("AP|depth=30"), expected.metric("AP"))
    full = evaluate(runs, qrels, ["AP"], depth=100)
    np.testing.assert_array_equal(data.matrix.metric("AP|depth=all"), full.metric("AP"))
    sizes = pool_runs(runs, 30).sizes()
    np.testing.assert_array_equal(data.judged[0], [sizes[t] for t in data.matrix.topics])
    assert (data.judged[1] < data.judged[0]).all() and (data.judged[2] == 150).all()
    assert (data.relevant[0] <= data.relevant[2]).all()
    # P@10 on a depth-10 pool equals P@10 on the full qrels: its top 10 are all judged
    p10 = evaluate(runs, qrels, ["P@10"], depth=100).metric("P@10")
    np.testing.assert_array_equal(data.matrix.metric("P@10|depth=10"), p10)


def test_effort_study_is_the_error_rate_study_on_pooled_scores():
    runs, qrels = synthetic_trec(runs=8, topics=16, docs_per_topic=120, depth=100, seed=1,
                                 quality_sd=0.4, topic_sd=0.5)
    docs = DocCollection(runs, qrels, 100)
    kw = dict(sampling=["disjoint", "replacement"], subset_sizes=[4, 8], trials=30)
    study, data = effort_study(docs, seed=3, **kw)
    np.testing.assert_array_equal(data.matrix.values,
                                  effort_data(docs, DEFAULT_POOLS).matrix.values)
    tables, _ = run_study(study, data)
    er_config = error_rates.Config(metrics=[pool_label(m, d) for m, d in DEFAULT_POOLS],
                                   tests=[], windows=[], sd_sizes=[], **kw)
    inner, _ = run_study(*error_rates.make(er_config, data.matrix, seed=3, shards=Shards()))
    er = inner["error_rates"].to_pandas()
    effort = tables["effort"].to_pandas()
    assert len(effort) == len(er)
    np.testing.assert_array_equal(effort.errors, er.errors)
    np.testing.assert_array_equal(effort.comparisons, er.comparisons)
    summ = tables["effort_summary"].to_pandas()
    assert list(summ.columns) == ["metric", "pool_depth", "sampling", "subset_size",
                                  "judged_per_topic", "effort", "comparisons", "errors",
                                  "error_rate"]
    assert (summ.comparisons == 28 * 30).all()
    for i, (metric, depth) in enumerate(DEFAULT_POOLS):
        rows = summ[(summ.metric == metric) & (summ.pool_depth == depth)]
        assert np.allclose(rows.effort, rows.subset_size * data.judged[i].mean())
    sharded, info = run_study(*effort_study(docs, seed=3, shards=Shards(1), **kw))
    assert_identical(tables, sharded)
    with pytest.raises(ConfigError, match="expects"):  # a study run on another study's data
        replace(study, config=replace(study.config, pools=[["AP", 50]])).plan(data)


def test_effort_end_to_end_on_a_trec_collection(tmp_path):
    # the default synthetic collection through the CLI path, and a TREC run directory
    from irsim.runner import compose_config, run

    cfg = compose_config(["experiment=effort", "quiet=true", "experiment.trials=8",
                          "experiment.subset_sizes=[5,10]", "collection.runs=8",
                          "collection.docs_per_topic=300", "collection.depth=200"])
    tables = run(cfg, tmp_path)
    summ = tables["effort_summary"].to_pandas()
    assert set(zip(summ.metric, summ.pool_depth, strict=True)) == {("AP", 100), ("P@10", 10)}
    pools = tables["pools"].to_pandas()
    assert (pools[pools.pool_depth == 10].judged <= 80).all()
    report = (tmp_path / "report.md").read_text()
    assert "assessor effort" in report.lower() and "effort.png" in report
    assert (tmp_path / "effort.png").stat().st_size > 20_000
    runs = read_runs([SHARED_DATA / "trec_eval" / "results.test"])
    qrels = read_qrels(SHARED_DATA / "trec_eval" / "qrels.test")
    docs = DocCollection(runs, qrels, 1000)
    data = effort_data(docs, [("AP", 10), ("P@10", 10)])
    assert data.matrix.shape == (2, 1, 3) and (data.judged == 10).all()
    with pytest.raises(ConfigError, match="error rates need >= 2 systems, 1 left"):
        effort_study(docs, pools=[("AP", 10), ("P@10", 10)], subset_sizes=[1])


@pytest.mark.slow
def test_readme_finding_shallow_pools_on_more_topics(tmp_path):
    """The finding of docs/studies/effort.md on the default synthetic collection (Sanderson-Zobel):
    P@10 on depth-10 pools over 25 topics errs less than AP on depth-100 pools over 5 topics, for
    less judging effort, and at every size P@10 costs less than a seventh of AP's effort. Margin: 4
    binomial standard errors of the difference of the two rates (9,500 comparisons each; comparisons
    share trials, so this is a nominal, lower-bound SE)."""
    from irsim.runner import compose_config, run

    tables = run(compose_config(["experiment=effort", "quiet=true"]), tmp_path)
    summ = tables["effort_summary"].to_pandas().set_index(["metric", "subset_size"])
    p10, ap = summ.loc[("P@10", 25)], summ.loc[("AP", 5)]
    assert p10.effort < ap.effort
    se = np.sqrt(p10.error_rate * (1 - p10.error_rate) / p10.comparisons
                 + ap.error_rate * (1 - ap.error_rate) / ap.comparisons)
    assert ap.error_rate - p10.error_rate > 4 * se, (ap.error_rate, p10.error_rate)
    for size in (5, 10, 15, 20, 25):
        assert summ.loc[("P@10", size)].effort < summ.loc[("AP", size)].effort / 7
        # more topics, fewer errors, for both
        if size > 5:
            for metric in ("AP", "P@10"):
                assert (summ.loc[(metric, size)].error_rate
                        < summ.loc[(metric, size - 5)].error_rate)


@pytest.mark.parametrize("kwargs,needle", [
    (dict(pools=[]), "experiment.pools must list at least one {metric, depth}"),
    (dict(pools=[("AP", 0)]), "experiment.pools depth must be an integer >= 1"),
    (dict(pools=[{"metric": None, "depth": 10}]), "metric must be a name"),
    (dict(pools=["AP"]), "experiment.pools entries need a metric and a depth"),
    (dict(pools=[{"metric": "AP", "depth": "deep"}]), "depth must be an integer >= 1"),
    (dict(subset_sizes=[]), "experiment.subset_sizes must list at least one size"),
    (dict(drop_bottom=-0.1), "experiment.drop_bottom must be in [0, 1)"),
    (dict(trials=0), "experiment.trials must be an integer >= 1"),
    (dict(shards=Shards(0)), "engine.shard_items must be an integer >= 1"),
])
def test_bad_effort_parameters(kwargs, needle):
    runs, qrels = synthetic_trec(runs=3, topics=4, docs_per_topic=30, depth=20, seed=0)
    with pytest.raises(ConfigError) as err:
        effort_study(DocCollection(runs, qrels, 20), **kwargs)
    assert needle in str(err.value)
    with pytest.raises(ConfigError, match="pool depth"):
        pool_runs(tied_runs(), 0)


@pytest.mark.slow
def test_pools_from_the_command_line():
    # a list of {metric, depth} dicts (null depth: the full qrels); null pools: the default
    from irsim.experiments import load
    from irsim.runner import compose_config

    cfg = compose_config(["experiment=effort",
                          "experiment.pools=[{metric:AP,depth:20},{metric:RR,depth:null}]"])
    _, config, docs, _ = load(cfg)
    study, data = make(config, docs, seed=0, shards=Shards())
    assert study.pools == (("AP", 20), ("RR", None))
    assert data.matrix.metrics == ("AP|depth=20", "RR|depth=all")
    assert Config().pools == [{"metric": "AP", "depth": 100}, {"metric": "P@10", "depth": 10}]
    cfg = compose_config(["experiment=effort", "experiment.pools=null"])
    study, _ = make(load(cfg)[1], docs, seed=0, shards=Shards())
    assert study.pools == DEFAULT_POOLS
