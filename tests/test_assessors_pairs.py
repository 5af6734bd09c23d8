"""experiment=assessors with many qrels (issue 46: time grew with the square of the number
of qrels): the all-pairs part is optional (``label_pairs``), a pair's rows do not depend on
which pairs are compared, the kernel is tagged sub-plans (issue 44), and the study holds its
Config with the fingerprint it had before."""

from __future__ import annotations

import importlib
import itertools

import numpy as np
import pytest
from conftest import dl19_files
from test_golden import assert_bit_identical

import irsim
from irsim.errors import InputError
from irsim.experiments.assessors import JOBS, Config, make
from irsim.kit.common import Shards
from irsim.kit.qrels_set import load_from_python
from irsim.stats import agreement as agr

RUNS = ("bm25base_p", "bm25tuned_rm3_p", "colbert_rankgpt4", "idst_bert_p1", "ICT-BERT2")
GROUPS = [["ferdinand-schlatt", "froebe"], ["andrew-parry", "eugene-yang"],
          ["guglielmo-faggioli", "harry-scells"], ["saber-zerhoudi", "sean-macavaney"]]
ASSESSORS = [q for g in GROUPS for q in g]
FAST = {"B": 30, "test_B": 200, "metrics": ["AP"], "tests": ["t"], "corrections": ["none"],
        "seed": 4}
LABEL_TABLES = ("label_agreement", "label_agreement_topic", "confusion")
#: the module (the package's name ``prepare`` is its function)
prep = importlib.import_module("irsim.experiments.assessors.prepare")


@pytest.fixture(scope="module")
def data():
    return dl19_files(RUNS, ("nist", *ASSESSORS))


def _rows_with(res, name, reference="nist"):
    table = res.tables[name]
    keep = np.asarray(table.column("qrels_a").to_pylist()) == reference
    return table.filter(keep)


@pytest.mark.parametrize("kappa_topics", ["all", "pair_only"])
def test_reference_pairs_equal_the_all_pairs_rows(data, kappa_topics):
    """label_pairs=reference gives exactly the all-pairs path's rows with the reference (the
    given assessors' and the composites', whose random streams follow the pairs left out),
    bit for bit, and every other table unchanged."""
    runs, qrels = data
    kw = {**FAST, "groups": GROUPS, "kappa_topics": kappa_topics}
    every = irsim.assessors(runs=runs, qrels=qrels, reference="nist", label_pairs="all", **kw)
    linear = irsim.assessors(runs=runs, qrels=qrels, reference="nist",
                             label_pairs="reference", **kw)
    lab = every.to_pandas("label_agreement")
    assert (lab.qrels_a != "nist").any()  # the all-pairs path compares assessors' pairs
    assert set(linear.to_pandas("label_agreement").qrels_a) == {"nist"}
    mixes = {q for q in lab.qrels_b if q.startswith("mix")}
    assert len(mixes) == 16 and mixes <= set(linear.to_pandas("label_agreement").qrels_b)
    for name in LABEL_TABLES:
        assert_bit_identical(linear.tables[name], _rows_with(every, name), name)
    for name in every.tables:
        if name not in LABEL_TABLES:
            assert_bit_identical(linear.tables[name], every.tables[name], name)


def test_auto_compares_every_pair_up_to_its_limit(data, monkeypatch):
    """label_pairs=auto (the default): every two given qrels up to AUTO_ALL_PAIRS of them,
    only the pairs with the reference beyond."""
    runs, qrels = data
    three = {q: qrels[q] for q in ("nist", "andrew-parry", "eugene-yang", "froebe")}

    def pairs():
        res = irsim.assessors(runs=runs, qrels=three, reference="nist", **FAST)
        lab = res.to_pandas("label_agreement")
        return sorted(set(zip(lab.qrels_a, lab.qrels_b, strict=True)))

    # DL19's andrew-parry and eugene-yang judged the same topics, froebe none of theirs
    assert pairs() == sorted([("nist", "andrew-parry"), ("nist", "eugene-yang"),
                              ("nist", "froebe"), ("andrew-parry", "eugene-yang")])
    monkeypatch.setattr(prep, "AUTO_ALL_PAIRS", 2)
    assert pairs() == [("nist", "andrew-parry"), ("nist", "eugene-yang"), ("nist", "froebe")]


def test_sharing_equals_joint_labels_of_every_pair(data):
    """The sparse incidence product says two qrels share a judged pair exactly when
    joint_labels finds one, on all topics and on the pair_only topics."""
    from irsim.data.trec import read_qrels

    _, files = data
    qrels = {n: read_qrels(f) for n, f in files.items()}
    names = list(qrels)
    for topics in (None, prep.pair_only_topics(qrels, "nist")):
        shared = prep.sharing([qrels[n] for n in names], topics)
        for i, j in itertools.product(range(len(names)), repeat=2):
            try:
                t, _, _ = agr.joint_labels(qrels[names[i]], qrels[names[j]]) if i != j \
                    else (np.asarray(qrels[names[i]].topic), None, None)
            except InputError as err:
                assert "share no" in err.problem
                t = np.array([], object)
            if topics is not None:
                t = t[np.isin(t, list(topics))]
            assert shared[i, j] == (len(t) > 0), (names[i], names[j], topics is None)
        assert not shared.all()  # some pairs of assessors share nothing


def _made(data, **kw):
    runs, qrels = data if data is not None else dl19_files(RUNS[:4], (
        "nist", "andrew-parry", "eugene-yang", "froebe", "ferdinand-schlatt"))
    source = load_from_python(None, {"runs": runs, "qrels": qrels}, Config())
    kw = {k: v for k, v in kw.items() if k != "seed"}
    return make(Config(**kw), source, seed=7, shards=Shards(items=3, replicates=2))


def test_every_job_is_a_tagged_sub_plan_covering_its_items_once(data):
    kw = {**FAST, "groups": GROUPS[:2], "simulate_trials": 3, "planning_sizes": [5],
          "swap_trials": 3, "bayes": ["jzs_bf"]}
    study, prepared = _made(data, **kw)
    shards = study.plan(prepared)
    assert [s.index for s in shards] == list(range(len(shards)))
    units = {"labels": len(prepared.pairs), "ranks": len(prepared.others),
             "simulation": 1, "swaps": 1 + len(prepared.others)}
    for part, job in enumerate(JOBS):
        mine = [s for s in shards if s.part == part]
        cells = {(i, r) for s in mine for i in range(*s.items) for r in range(*s.reps)}
        reps = {"simulation": 3, "swaps": 3}.get(job, 1)
        assert len(cells) == sum((s.items[1] - s.items[0]) * (s.reps[1] - s.reps[0])
                                 for s in mine) == units[job] * reps, job
    fields = study.fields(prepared)
    for shard in (next(s for s in shards if s.part == p) for p in range(len(JOBS))):
        out = study.kernel(shard, prepared)
        assert tuple(out) == study.fields_of(shard, prepared)
        assert set(out) <= set(fields)
    assert fields["decision"].shape == (len(prepared.others), 1, 1, 7)


@pytest.mark.parametrize(("kw", "expected"), [
    ({}, {"B": 1000, "agreement_target": 0.9, "alpha": 0.05, "corrections": ["none", "holm"],
          "max_assessors": 5, "max_topics": 200, "planning_probability": 0.95,
          "pvalue": "plus_one", "seed": 7, "simulate_trials": 0, "simulation": [],
          "swap_trials": 0, "tau_target": 0.9, "test_B": 10000,
          "tests": ["t", "randomisation"], "top_k": 10}),
    ({"groups": [["froebe", "ferdinand-schlatt"], ["andrew-parry", "eugene-yang"]],
      "simulate_trials": 3, "planning_sizes": [5, 10],
      "bayes": ["jzs_bf"], "swap_trials": 5, "top_k": 3, "pvalue": "count"},
     {"B": 1000, "agreement_target": 0.9, "alpha": 0.05, "bayes": ["jzs_bf"],
      "bayes_prob": 0.95, "bayes_r": 0.7071067811865476, "bayes_rope": 0.01,
      "bayes_threshold": 3.0, "corrections": ["none", "holm"], "max_assessors": 5,
      "max_topics": 200, "planning_probability": 0.95, "pvalue": "count", "seed": 7,
      "simulate_trials": 3, "simulation": ["mix11", True, 1.0, "all", 5, 10, 21],
      "swap_trials": 5, "tau_target": 0.9, "test_B": 10000, "tests": ["t", "randomisation"],
      "top_k": 3})])
def test_fingerprint_is_the_one_of_the_study_before_it_held_its_config(kw, expected):
    """The values the study's fingerprint had when make copied the Config field by field
    (renamed=...), recorded from that code on 4 runs and 5 qrels: a run directory keeps its
    identity."""
    import json

    study, _ = _made(None, **kw)
    assert study.config.B == 1000 and isinstance(study.config.tests, tuple)
    got = json.loads(json.dumps(study.fingerprint(), sort_keys=True, default=str))
    assert got == expected
