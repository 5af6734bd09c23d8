"""The pooled Krippendorff's alpha of ``label_agreement`` has its bootstrap-over-topics
interval (it was left empty): ``irsim.stats.agreement.pooled_alpha_ci`` against a direct
bootstrap that resamples the topics' items and computes each resample's alpha with the
``krippendorff`` package, and the study's rows against the same computation on DL 2019."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import dl19_files

import irsim
from irsim.sampling.topics import bootstrap_indices
from irsim.stats.agreement import confusion_per_topic, krippendorff_alpha, pooled_alpha_ci

krippendorff = pytest.importorskip("krippendorff")


def _direct(a, b, topics, ids, values, *, B, seed, study, key, level=0.95):
    """Alpha of all items and the percentile interval of the resampled topics' items, each
    resample's alpha by the krippendorff package (two coders, the items as units)."""
    idx = bootstrap_indices(seed, study, len(ids), 0, B, key=key)
    rows = [np.flatnonzero(topics == t) for t in ids]
    star = []
    for draw in idx:
        take = np.concatenate([rows[t] for t in draw])
        if len(np.unique(np.r_[a[take], b[take]])) < 2:
            continue  # one value: no expected disagreement, alpha undefined
        star.append(krippendorff.alpha(reliability_data=np.vstack([a[take], b[take]]),
                                       level_of_measurement="ordinal",
                                       value_domain=list(values)))
    tail = (1 - level) / 2
    whole = krippendorff.alpha(reliability_data=np.vstack([a, b]),
                               level_of_measurement="ordinal", value_domain=list(values))
    return whole, *np.quantile(star, [tail, 1 - tail])


def test_pooled_alpha_ci_equals_resampling_the_items_with_krippendorff():
    rng = np.random.default_rng(4)
    topics = np.repeat(np.arange(15), 25)
    a = rng.integers(0, 4, len(topics))
    b = np.clip(a + rng.integers(-1, 2, len(topics)), 0, 3)
    ids, counts = confusion_per_topic(a, b, topics, labels=[0, 1, 2, 3])
    ci = pooled_alpha_ci(counts, [0, 1, 2, 3], B=300, seed=8, study="s", key=(2,))
    whole, lo, hi = _direct(a, b, topics, ids, [0, 1, 2, 3], B=300, seed=8, study="s",
                            key=(2,))
    assert ci.mean == pytest.approx(whole, abs=1e-12)
    assert ci.mean == pytest.approx(krippendorff_alpha(np.c_[a, b], "ordinal"), abs=1e-12)
    assert (ci.low, ci.high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert ci.low < ci.mean < ci.high


def test_label_agreement_fills_the_pooled_alpha_interval():
    runs, qrels = dl19_files(("bm25base_p", "idst_bert_p1", "TUW19-p3-f"),
                             ("nist", "andrew-parry"))
    res = irsim.assessors(runs=runs, qrels=qrels, reference="nist", B=200, test_B=20,
                          metrics=["P@10"], tests=["t"], corrections=["none"], seed=5)
    lab = res.to_pandas("label_agreement")
    alpha = lab[lab.statistic == "alpha_ordinal"]
    assert len(alpha) == 2 and alpha[["pooled_low", "pooled_high"]].notna().all().all()
    # the study's resampled topics: its pooled stream, keyed by the label pair (0)
    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors.agreement import LABEL_STREAM
    from irsim.stats.agreement import joint_labels

    topic, _, grades = joint_labels(read_qrels(qrels["nist"]), read_qrels(qrels["andrew-parry"]))
    ids = np.unique(topic)
    for row in alpha.itertuples():
        g = grades if row.labels == "graded" else (grades >= 2).astype(int)
        values = [0, 1, 2, 3] if row.labels == "graded" else [0, 1]
        whole, lo, hi = _direct(g[:, 0], g[:, 1], topic, ids, values, B=200, seed=5,
                                study=LABEL_STREAM + "/pooled", key=(0,), level=0.95)
        assert row.pooled == pytest.approx(whole, abs=1e-12)
        assert row.pooled_low == pytest.approx(lo, abs=1e-12), row.labels
        assert row.pooled_high == pytest.approx(hi, abs=1e-12), row.labels
