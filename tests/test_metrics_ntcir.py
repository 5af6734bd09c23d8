"""Graded measures against pyNTCIREVAL (Q, Q@l, O, nDCG_orig@l, and nCG/AnCG/AnDCG built
from its nDCG) and against a direct implementation of the definitions (R-measure), 1e-9.

Gains S/A/B = 3/2/1 are grades 3/2/1 (irsim's default gain is the grade).
"""

from __future__ import annotations

import numpy as np
import pytest

pyNTCIREVAL = pytest.importorskip("pyNTCIREVAL")

from pyNTCIREVAL import Labeler  # noqa: E402
from pyNTCIREVAL.metrics import OMeasure, QMeasure, nDCG  # noqa: E402

from irsim.data.types import Qrels, Runs  # noqa: E402
from irsim.metrics import evaluate  # noqa: E402

TOL = 1e-9


def generate(seed: int, n_runs: int = 5, n_topics: int = 12):
    """Grades 0..3, every topic with relevant documents, lists of 1..80 documents with
    distinct scores; some retrieved documents are unjudged."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    for t in range(n_topics):
        n = int(rng.integers(3, 50))
        grades = rng.choice([0, 0, 1, 1, 2, 3], size=n)
        grades[0] = max(grades[0], 1)
        qrels[f"q{t}"] = {f"d{t}-{i}": int(g) for i, g in enumerate(grades)}
    lists: list[dict[str, list[str]]] = []
    rows = []
    for r in range(n_runs):
        lists.append({})
        for t, judged in qrels.items():
            pool = list(judged) + [f"u-{t}-{i}" for i in range(30)]
            k = int(rng.integers(1, min(80, len(pool)) + 1))
            docs = list(rng.choice(pool, size=k, replace=False))
            lists[r][t] = docs  # ranked: scores decrease along the list
            rows += [(r, t, d, 10.0 - i * 1e-2) for i, d in enumerate(docs)]
    run, topic, doc, score = zip(*rows, strict=True)
    runs = Runs(tuple(f"r{i}" for i in range(n_runs)), np.array(run, dtype=np.int32),
                np.array(topic, dtype=object), np.array(doc, dtype=object), np.array(score))
    qt, qd, qg = zip(*[(t, d, g) for t, docs in qrels.items() for d, g in docs.items()],
                     strict=True)
    q = Qrels(np.array(qt, dtype=object), np.array(qd, dtype=object), np.array(qg))
    return runs, q, qrels, lists


@pytest.fixture(scope="module")
def data():
    return generate(3)


def oracle(qrels, lists, fn, *, relabel=None, levels=3):
    """fn(xrelnum, labelled list) per (run, topic), with pyNTCIREVAL's labeller."""
    out = np.zeros((len(lists), len(qrels)))
    for ti, t in enumerate(sorted(qrels)):
        judged = qrels[t] if relabel is None else {d: relabel.get(g, g)
                                                   for d, g in qrels[t].items()}
        labeler = Labeler(judged)
        xrelnum = labeler.compute_per_level_doc_num(levels + 1)
        for r, run_lists in enumerate(lists):
            out[r, ti] = fn(xrelnum, labeler.label(run_lists[t]))
    return out


GRADES = [1, 2, 3]


@pytest.mark.parametrize(("ours", "make"), [
    ("Q", lambda x, ll: QMeasure(x, GRADES, 1.0).compute(ll)),
    ("Q@10", lambda x, ll: QMeasure(x, GRADES, 1.0, cutoff=10).compute(ll)),
    ("Q@3", lambda x, ll: QMeasure(x, GRADES, 1.0, cutoff=3).compute(ll)),
    ("Q(beta=0.5)@20", lambda x, ll: QMeasure(x, GRADES, 0.5, cutoff=20).compute(ll)),
    ("O", lambda x, ll: OMeasure(x, GRADES, 1.0).compute(ll)),
    ("O(beta=2)", lambda x, ll: OMeasure(x, GRADES, 2.0).compute(ll)),
    ("nDCG_orig@10", lambda x, ll: nDCG(x, GRADES, 2.0, 10).compute(ll)),
    ("nDCG_orig@1", lambda x, ll: nDCG(x, GRADES, 2.0, 1).compute(ll)),
    ("nDCG_orig@100", lambda x, ll: nDCG(x, GRADES, 2.0, 100).compute(ll)),
    ("nDCG_orig(b=3)@20", lambda x, ll: nDCG(x, GRADES, 3.0, 20).compute(ll)),
    # nCG@l: the original nDCG with a log base above l, i.e. no discount at all
    ("nCG@10", lambda x, ll: nDCG(x, GRADES, 1e9, 10).compute(ll)),
    ("AnCG@10", lambda x, ll: np.mean([nDCG(x, GRADES, 1e9, r).compute(ll)
                                       for r in range(1, 11)])),
    ("AnDCG@10", lambda x, ll: np.mean([nDCG(x, GRADES, 2.0, r).compute(ll)
                                        for r in range(1, 11)])),
])
def test_against_pyntcireval(data, ours, make):
    runs, qrels, qd, lists = data
    m = evaluate(runs, qrels, [ours])
    np.testing.assert_allclose(m.metric(ours), oracle(qd, lists, make), rtol=0, atol=TOL)


def test_rigid_threshold_is_relabelled_grades(data):
    """rel=2: grade-1 documents become non-relevant with no gain, as if judged 0."""
    runs, qrels, qd, lists = data
    m = evaluate(runs, qrels, ["Q(rel=2)", "nDCG_orig(rel=2)@10", "O(rel=2)"])
    for ours, make in [
        ("Q(rel=2)", lambda x, ll: QMeasure(x, GRADES, 1.0).compute(ll)),
        ("nDCG_orig(rel=2)@10", lambda x, ll: nDCG(x, GRADES, 2.0, 10).compute(ll)),
        ("O(rel=2)", lambda x, ll: OMeasure(x, GRADES, 1.0).compute(ll)),
    ]:
        expected = oracle(qd, lists, make, relabel={1: 0})
        np.testing.assert_allclose(m.metric(ours), expected, rtol=0, atol=TOL, err_msg=ours)


def test_custom_gains(data):
    runs, qrels, qd, lists = data
    g = [1.0, 5.0, 10.0]
    ours = ["Q(gains={1:1,2:5,3:10})", "nDCG_orig(gains={1:1,2:5,3:10})@10"]
    m = evaluate(runs, qrels, ours)
    np.testing.assert_allclose(
        m.metric(ours[0]), oracle(qd, lists, lambda x, ll: QMeasure(x, g, 1.0).compute(ll)),
        rtol=0, atol=TOL)
    np.testing.assert_allclose(
        m.metric(ours[1]), oracle(qd, lists, lambda x, ll: nDCG(x, g, 2.0, 10).compute(ll)),
        rtol=0, atol=TOL)


def r_measure_reference(judged: dict[str, int], ranked: list[str], beta: float = 1.0) -> float:
    """R-measure = BR(R) from the definition, one document at a time."""
    R = sum(1 for g in judged.values() if g >= 1)
    ideal = sorted((g for g in judged.values() if g >= 1), reverse=True)
    count = cg = 0.0
    for r in range(1, R + 1):
        g = judged.get(ranked[r - 1], 0) if r <= len(ranked) else 0
        count += g >= 1
        cg += g
    return (count + beta * cg) / (R + beta * sum(ideal[:R]))


@pytest.mark.parametrize("beta", [1.0, 0.25])
def test_r_measure_against_definition(data, beta):
    runs, qrels, qd, lists = data
    name = "R-measure" if beta == 1.0 else f"R-measure(beta={beta})"
    m = evaluate(runs, qrels, [name])
    expected = np.array([[r_measure_reference(qd[t], lst[t], beta) for t in sorted(qd)]
                         for lst in lists])
    np.testing.assert_allclose(m.metric(name), expected, rtol=0, atol=TOL)


def test_worked_example():
    """By hand: ranked grades [0, 2, 1], judged grades {3, 2, 1} (R = 3).
    cg = 0, 2, 3; cg_I = 3, 5, 6; count = 0, 1, 2.
    BR(2) = (1 + 2)/(2 + 5) = 3/7; BR(3) = (2 + 3)/(3 + 6) = 5/9.
    Q = (3/7 + 5/9)/3; R-measure = BR(3) = 5/9; O = BR(2) = 3/7;
    nCG@2 = 2/5; nDCG_orig@3 = (0 + 2 + 1/log2(3)) / (3 + 2 + 1/log2(3))."""
    obj = lambda *s: np.array(s, dtype=object)  # noqa: E731
    qrels = Qrels(obj("t", "t", "t", "t"), obj("a", "b", "c", "z"), np.array([3, 2, 1, 0]))
    runs = Runs(("r",), np.zeros(3, np.int32), obj("t", "t", "t"), obj("z", "b", "c"),
                np.array([3.0, 2.0, 1.0]))
    m = evaluate(runs, qrels, ["Q", "R-measure", "O", "nCG@2", "nDCG_orig@3", "AnCG@2"])
    l3 = 1 / np.log2(3)
    expected = [(3 / 7 + 5 / 9) / 3, 5 / 9, 3 / 7, 2 / 5, (2 + l3) / (5 + l3),
                (0 / 3 + 2 / 5) / 2]
    np.testing.assert_allclose(m.values[:, 0, 0], expected, rtol=0, atol=1e-15)
