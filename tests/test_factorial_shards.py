"""Document shards and qrels as replicates (irsim.metrics.shards) on the shared DL 2019
runs: each shard's scores equal irsim.evaluate on runs and qrels filtered by hand."""

import hashlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import dl19_files  # noqa: E402

from irsim.data import Qrels, Runs  # noqa: E402
from irsim.data.trec import read_qrels, read_runs  # noqa: E402
from irsim.errors import InputError  # noqa: E402
from irsim.metrics import evaluate  # noqa: E402
from irsim.metrics.shards import qrels_replicates, shard_scores  # noqa: E402
from irsim.sampling.corpus import md5_shards  # noqa: E402
from irsim.stats.corpus_ap import md5_half, split_salt  # noqa: E402

RUNS = ("ICT-BERT2", "ICT-CKNRM_B", "ICT-CKNRM_B50")
MEASURES = ["AP", "nDCG@10", "P@10", "RR"]


def shard_of(docno: str, k: int, salt: str) -> int:
    return int.from_bytes(hashlib.md5((salt + docno).encode()).digest()[:8], "big") * k >> 64


def by_hand(runs: Runs, qrels: Qrels, k: int, salt: str, depth: int | None) -> np.ndarray:
    """(metrics, runs, topics, shards) by filtering rows in pandas and evaluating each."""
    df = pd.DataFrame({"run": runs.run, "topic": runs.topic, "docno": runs.docno,
                       "score": runs.score})
    if depth is not None:  # trec_eval's ranking on the whole collection, then the cut
        df = df.sort_values(["run", "topic", "score", "docno"],
                            ascending=[True, True, False, False])
        df = df[df.groupby(["run", "topic"]).cumcount() < depth]
    df["shard"] = [shard_of(d, k, salt) for d in df["docno"]]
    qd = pd.DataFrame({"topic": qrels.topic, "docno": qrels.docno, "grade": qrels.grade})
    qd["shard"] = [shard_of(d, k, salt) for d in qd["docno"]]
    topics = sorted(qd.loc[qd.grade >= 1, "topic"].unique())
    out = np.zeros((len(MEASURES), len(runs.names), len(topics), k))
    for j in range(k):
        r, q = df[df.shard == j], qd[qd.shard == j]
        sub = Runs(runs.names, r["run"].to_numpy(np.int32), r["topic"].to_numpy(object),
                   r["docno"].to_numpy(object), r["score"].to_numpy(float))
        m = evaluate(sub, Qrels(q["topic"].to_numpy(object), q["docno"].to_numpy(object),
                                q["grade"].to_numpy(np.int64)), MEASURES, depth=None,
                     missing="zero")
        for c, t in enumerate(m.topics):
            if t in topics:
                out[:, :, topics.index(t), j] = m.values[:, :, c]
    return out


@pytest.mark.parametrize(("k", "salt", "depth"), [(3, "", None), (4, split_salt(2), 30)])
def test_shards_equal_evaluate_on_filtered_runs(k, salt, depth):
    run_files, qrels_files = dl19_files(RUNS, ("nist",))
    runs, qrels = read_runs(run_files), read_qrels(qrels_files["nist"])
    got = shard_scores(runs, qrels, MEASURES, k, salt=salt, depth=depth)
    assert got.values.shape == (4, 3, 43, k)
    np.testing.assert_allclose(got.values, by_hand(runs, qrels, k, salt, depth),
                               rtol=1e-12, atol=1e-15)
    rel = qrels.grade >= 1
    n_rel = pd.crosstab(pd.Series(qrels.topic[rel]),
                        pd.Series([shard_of(d, k, salt) for d in qrels.docno[rel]]))
    np.testing.assert_array_equal(got.relevant, n_rel.reindex(
        columns=range(k), fill_value=0).to_numpy())


def test_md5_shards_two_is_md5_half():
    docnos = [f"doc-{i}" for i in range(500)]
    for salt in ("", split_salt(1), split_salt(7)):
        np.testing.assert_array_equal(md5_shards(docnos, 2, salt) == 0, md5_half(docnos, salt))
    counts = np.bincount(md5_shards(docnos, 5), minlength=5)
    assert counts.sum() == 500 and counts.min() > 70  # about 100 each


def test_qrels_replicates_equal_evaluate_many():
    pair = ("ferdinand-schlatt", "froebe")  # one group: the same passages of 9 topics
    run_files, qrels_files = dl19_files(RUNS, ("nist", *pair, "andrew-parry"))
    runs = read_runs(run_files)
    qrels = {n: read_qrels(qrels_files[n]) for n in pair}
    nist = read_qrels(qrels_files["nist"])
    keep = np.isin(nist.topic, qrels[pair[0]].topics)
    qrels["nist"] = Qrels(nist.topic[keep], nist.docno[keep], nist.grade[keep])
    v, topics = qrels_replicates(runs, qrels, ["nDCG@10", "AP"], missing="zero")
    assert v.shape == (2, 3, 9, 3)
    for i, n in enumerate(qrels):
        ref = evaluate(runs, qrels[n], ["nDCG@10", "AP"], missing="zero")
        np.testing.assert_array_equal(v[..., i], ref.values)
        assert ref.topics == topics
    other = {"froebe": qrels["froebe"], "andrew-parry": read_qrels(qrels_files["andrew-parry"])}
    with pytest.raises(InputError, match="qrels 'andrew-parry' keeps other topics than "
                                         "'froebe'.*unbalanced replicates"):
        qrels_replicates(runs, other, "AP", missing="zero")
