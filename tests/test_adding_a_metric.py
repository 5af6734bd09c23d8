"""The guide "Adding a metric" (docs/guides/development.md), followed end to end: a kernel
registered with :func:`irsim.metrics.measures.register` is a metric of every door that takes
``metrics``: ``irsim.evaluate`` computes it per topic (checked here against the share counted
directly from the run files and the qrels) and a study runs on it (discpower's sensitivity
against scipy's paired t test on those per-topic values)."""

from __future__ import annotations

import gzip
import itertools
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import dl19_files  # noqa: E402

import irsim  # noqa: E402
from irsim.metrics import measures  # noqa: E402
from irsim.metrics.block import UNJUDGED, Block  # noqa: E402

RUNS = ("bm25base_p", "ICT-BERT2", "TUA1-1", "UNH_bm25", "TUW19-p1-f")


@pytest.fixture
def judged():
    """The guide's example, registered as the guide says; removed afterwards (the registry
    is the process's: other tests must not see it)."""

    @measures.register("Judged", cutoff="required", params={},
                       description="share of the top k documents that are judged")
    def judged_at_k(b: Block, m: measures.Measure) -> np.ndarray:
        """Judged@k = (judged documents in the top k) / k; a short list's missing ranks
        count as unjudged."""
        k = min(m.cutoff, b.width)
        return (b.grade[:, :k] != UNJUDGED).sum(axis=1) / m.cutoff

    yield judged_at_k
    measures._REGISTRY.pop("Judged", None)


def _oracle(run_file: str, qrels_file: str, k: int) -> dict[str, float]:
    """Judged@k per topic of the qrels, counted from the files: trec_eval's order (score
    descending, docno descending), the top k, the share found in the qrels."""
    judged = defaultdict(set)
    for line in Path(qrels_file).read_text().splitlines():
        topic, _, docno, _ = line.split()
        judged[topic].add(docno)
    lists = defaultdict(list)
    with gzip.open(run_file, "rt") as f:
        for line in f:
            topic, _, docno, _, score, _ = line.split()
            lists[topic].append((float(score), docno))
    out = {}
    for topic in judged:
        ranked = sorted(lists.get(topic, []), reverse=True)[:k]
        out[topic] = sum(d in judged[topic] for _, d in ranked) / k
    return out


def test_a_registered_metric_is_evaluated_per_topic_and_studied(judged):
    runs, qrels = dl19_files(RUNS, ("nist",))
    assert "Judged" in irsim.metrics.available_measures()
    df = irsim.evaluate(runs, qrels["nist"], metrics=["Judged@100", "P@10"])
    assert sorted(df.metric.unique()) == ["Judged@100", "P@10"]
    wide = df[df.metric == "Judged@100"].pivot(index="system", columns="topic", values="value")
    names = [Path(r).name.removesuffix(".gz") for r in runs]
    x = wide.loc[names].to_numpy()
    for s, run in enumerate(runs):
        expected = _oracle(run, qrels["nist"], 100)
        got = dict(zip(wide.columns, x[s], strict=True))
        assert got.keys() == expected.keys()
        np.testing.assert_allclose([got[t] for t in expected], list(expected.values()),
                                   rtol=0, atol=1e-15)
    assert 0.3 < float(x.mean()) < 1.0 and len(np.unique(x)) > 3  # not all 1 or 0

    # a study on it: discpower's t-test sensitivity = scipy's paired t over every pair
    result = irsim.discpower(df, metrics=["Judged@100"], tests=["t"], alpha=[0.05], B=200,
                             seed=1)
    table = result.to_pandas("discpower")
    row = table[(table.metric == "Judged@100") & (table.test == "t")].iloc[0]
    p = [stats.ttest_rel(x[a], x[b]).pvalue
         for a, b in itertools.combinations(range(len(runs)), 2)]
    assert row.sensitivity == pytest.approx(np.mean(np.array(p) <= 0.05), abs=1e-12)


def test_the_metric_is_gone_after_the_fixture():
    assert "Judged" not in irsim.metrics.available_measures()
