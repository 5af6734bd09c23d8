"""The SIGIR 2025 re-annotation paper's published agreement figures (Parry, Fröbe, MacAvaney
et al., "Re-annotating TREC DL 2019"; ../shared/data/dl19-assessors/README.md), each out of
one call of the assessors study:

- the mean binary Cohen's kappa per group (.369, .381, .468, .338) with
  ``kappa_topics="pair_only"`` (topics judged by exactly the pair: DL19's 168216, judged by
  all four groups, left out; with every topic group 1's mean is .336);
- the mean Fleiss' kappa of each group's two assessors and NIST on the 4 grades (.221, .280,
  .168, .282) with ``fleiss_reference="per_assessor"`` (NIST counted once per assessor: four
  ratings a passage, as the paper's notebook merges the NIST rows; once: .071, .156, .029,
  .145), on every topic the pair judged (the paper's group 1 list includes 168216).

Per-topic values are checked against statsmodels' Fleiss' kappa and scikit-learn's Cohen's
kappa on the judgments read with pandas."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, dl19_files
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import irsim
from irsim.errors import ConfigError

DL19 = SHARED_DATA / "dl19-assessors"
GROUPS = (("ferdinand-schlatt", "froebe"), ("andrew-parry", "eugene-yang"),
          ("guglielmo-faggioli", "harry-scells"), ("saber-zerhoudi", "sean-macavaney"))
NAMES = ("nist", *itertools.chain.from_iterable(GROUPS))
#: The published figures (README of the data set; the paper's analysis/main/statistics.ipynb).
COHEN = {GROUPS[0]: 0.369, GROUPS[1]: 0.381, GROUPS[2]: 0.468, GROUPS[3]: 0.338}
FLEISS = {GROUPS[0]: 0.221, GROUPS[1]: 0.280, GROUPS[2]: 0.168, GROUPS[3]: 0.282}
#: NIST counted once (three ratings a passage), and group 1's Cohen mean on every topic.
FLEISS_ONCE = {GROUPS[0]: 0.071, GROUPS[1]: 0.156, GROUPS[2]: 0.029, GROUPS[3]: 0.145}
COHEN_ALL_GROUP1 = 0.336
SMALL = {"B": 10, "test_B": 20, "metrics": ["P@10"], "tests": ["t"], "corrections": ["none"],
         "reference": "nist"}


@pytest.fixture(scope="module")
def files():
    return dl19_files(("bm25base_p", "bm25tuned_rm3_p", "idst_bert_p1"), NAMES)


@pytest.fixture(scope="module")
def judgments(files):
    """Every qrels read with pandas (independent of irsim's reader)."""
    _, qrels = files
    return {n: pd.read_csv(p, sep=r"\s+", header=None, names=["topic", "it", "docno", "grade"],
                           dtype={"topic": str, "docno": str}) for n, p in qrels.items()}


def _run(files, **kw):
    runs, qrels = files
    return irsim.assessors(runs=runs, qrels=qrels, **SMALL, **kw)


def _row(lab, pair, labels, stat):
    a, b = pair
    return lab[(lab.qrels_a == a) & (lab.qrels_b == b) & (lab.labels == labels)
               & (lab.statistic == stat)].iloc[0]


def test_published_cohen_kappas_with_pair_only(files, judgments):
    res = _run(files, kappa_topics="pair_only")
    lab, per = res.to_pandas("label_agreement"), res.to_pandas("label_agreement_topic")
    judged = {}
    for n in NAMES[1:]:
        for t in set(judgments[n].topic):
            judged[t] = judged.get(t, 0) + 1
    for pair, want in COHEN.items():
        assert round(_row(lab, pair, "binary", "kappa")["mean"], 3) == want, pair
        # the topics kept are those judged by exactly the pair; each value is sklearn's
        a, b = (judgments[n] for n in pair)
        both = a.merge(b, on=["topic", "docno"], suffixes=("_a", "_b"))
        rows = per[(per.qrels_a == pair[0]) & (per.qrels_b == pair[1])
                   & (per.labels == "binary") & (per.statistic == "kappa")]
        assert set(rows.topic) == {t for t in set(both.topic) if judged[t] == 2}
        assert "168216" not in set(rows.topic)
        for t, v in zip(rows.topic, rows.value, strict=True):
            s = both[both.topic == t]
            want_t = cohen_kappa_score(s.grade_a >= 2, s.grade_b >= 2, labels=[False, True])
            np.testing.assert_allclose(v, want_t, rtol=1e-12, atol=1e-12)
    # pairs of assessors of different groups share only 168216: left out with pair_only
    pairs = set(zip(lab.qrels_a, lab.qrels_b, strict=True))
    assert ("ferdinand-schlatt", "andrew-parry") not in pairs
    assert ("nist", "froebe") in pairs


def test_published_fleiss_kappas_with_nist_per_assessor(files, judgments):
    per_assessor = _run(files, fleiss_reference="per_assessor")
    once = _run(files)  # the defaults: every topic, NIST once
    lab = per_assessor.to_pandas("label_agreement")
    lab1 = once.to_pandas("label_agreement")
    per = per_assessor.to_pandas("label_agreement_topic")
    nist = judgments["nist"]
    for pair in GROUPS:
        row = _row(lab, pair, "graded", "fleiss_reference")
        assert round(row["mean"], 3) == FLEISS[pair], pair
        assert round(_row(lab1, pair, "graded", "fleiss_reference")["mean"], 3) == \
            FLEISS_ONCE[pair], pair
        a, b = (judgments[n] for n in pair)
        m = a.merge(b, on=["topic", "docno"], suffixes=("_a", "_b")).merge(
            nist.rename(columns={"grade": "grade_n"}), on=["topic", "docno"])
        assert row["items"] == len(m)
        x = m[["grade_a", "grade_b", "grade_n", "grade_n"]].to_numpy()
        assert row.pooled == pytest.approx(sm_fleiss_kappa(aggregate_raters(x, n_cat=4)[0]),
                                           abs=1e-12)
        rows = per[(per.qrels_a == pair[0]) & (per.qrels_b == pair[1])
                   & (per.statistic == "fleiss_reference")]
        for t, v in zip(rows.topic, rows.value, strict=True):
            sel = (m.topic == t).to_numpy()
            want = sm_fleiss_kappa(aggregate_raters(x[sel], n_cat=4)[0]) if sel.any() \
                else np.nan
            np.testing.assert_allclose(v, want, rtol=1e-12, atol=1e-12)
    # the paper's group 1 per-topic values include 168216
    g1 = per[(per.qrels_a == GROUPS[0][0]) & (per.qrels_b == GROUPS[0][1])
             & (per.statistic == "fleiss_reference")].set_index("topic").value
    assert round(g1["168216"], 3) == 0.152
    # every topic: group 1's Cohen mean is not the published one; pairs with NIST: no Fleiss
    assert round(_row(lab, GROUPS[0], "binary", "kappa")["mean"], 3) == COHEN_ALL_GROUP1
    assert np.isnan(_row(lab, ("nist", "froebe"), "graded", "fleiss_reference")["mean"])


def test_bad_rules_are_named(files):
    with pytest.raises(ConfigError, match="kappa_topics"):
        _run(files, kappa_topics="exactly_two")
    with pytest.raises(ConfigError, match="fleiss_reference"):
        _run(files, fleiss_reference="twice")
