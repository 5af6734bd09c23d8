"""irsim against pytrec_eval (trec_eval 9.0.8) on generated runs and graded qrels, to 1e-9.

Scores are distinct within a list and spaced >= 1e-3 apart (trec_eval's float handling
cannot then reorder them), except in the tie test, which uses exact integer ties.
"""

from __future__ import annotations

import numpy as np
import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")

from irsim.data.types import Qrels, Runs  # noqa: E402
from irsim.metrics import evaluate  # noqa: E402

CUTS = (1, 5, 10, 20)
TREC = {"map", "Rprec", "recip_rank", "ndcg", "P", "ndcg_cut", "success", "map_cut"}


def trec_to_irsim(name: str, rel: int = 1) -> str:
    r = "" if rel == 1 else f"(rel={rel})"
    base, _, k = name.rpartition("_") if name[-1].isdigit() else (name, "", "")
    table = {"map": f"AP{r}", "Rprec": f"Rprec{r}", "recip_rank": f"RR{r}", "ndcg": "nDCG",
             "P": f"P{r}", "ndcg_cut": "nDCG", "success": f"Success{r}", "map_cut": f"AP{r}"}
    return table[base] + (f"@{k}" if k else "")


def measure_spec() -> set[str]:
    cuts = ",".join(map(str, CUTS))
    return {"map", "Rprec", "recip_rank", "ndcg", f"P.{cuts}", f"ndcg_cut.{cuts}",
            f"success.{cuts}", f"map_cut.{cuts}"}


def generate(seed: int, n_runs: int = 7, n_topics: int = 25, ties: bool = False):
    """Graded qrels (grades -1..3, some topics without relevant documents) and runs that
    retrieve judged and unjudged documents, lists of 1..120 documents."""
    rng = np.random.default_rng(seed)
    q_topic, q_doc, q_grade = [], [], []
    topics = [f"T{t:03d}" for t in range(n_topics)]
    for ti, t in enumerate(topics):
        n = int(rng.integers(5, 80))
        grades = rng.choice([-1, 0, 0, 0, 1, 1, 2, 3], size=n)
        if ti % 7 == 3:
            grades = np.minimum(grades, 0)  # judged, nothing relevant
        q_topic += [t] * n
        q_doc += [f"d{ti}-{i:03d}" for i in range(n)]
        q_grade += grades.tolist()
    qrels = Qrels(np.array(q_topic, dtype=object), np.array(q_doc, dtype=object),
                  np.array(q_grade, dtype=np.int64))
    r_run, r_topic, r_doc, r_score = [], [], [], []
    for r in range(n_runs):
        for ti, t in enumerate(topics):
            if ti % 7 == 3 and rng.random() < 0.5:
                continue  # a topic without relevant documents may be absent from a run
            judged = [d for d, tt in zip(q_doc, q_topic, strict=True) if tt == t]
            pool = judged + [f"u{ti}-{i:03d}" for i in range(60)]
            k = int(rng.integers(1, min(120, len(pool)) + 1))
            docs = rng.choice(pool, size=k, replace=False)
            if ties:
                scores = rng.integers(0, 5, size=k).astype(float)
            else:
                scores = rng.permutation(k) * 1e-3 + rng.integers(0, 3) + 0.5
            r_run += [r] * k
            r_topic += [t] * k
            r_doc += docs.tolist()
            r_score += scores.tolist()
    runs = Runs(tuple(f"run{r}" for r in range(n_runs)), np.array(r_run, dtype=np.int32),
                np.array(r_topic, dtype=object), np.array(r_doc, dtype=object),
                np.array(r_score))
    return runs, qrels


def as_dicts(runs: Runs, qrels: Qrels):
    qd: dict[str, dict[str, int]] = {}
    for t, d, g in zip(qrels.topic, qrels.docno, qrels.grade.tolist(), strict=True):
        qd.setdefault(t, {})[d] = g
    rds: list[dict[str, dict[str, float]]] = [{} for _ in runs.names]
    for r, t, d, s in zip(runs.run.tolist(), runs.topic, runs.docno, runs.score.tolist(),
                          strict=True):
        rds[r].setdefault(t, {})[d] = s
    return qd, rds


def compare(runs, qrels, qd, rds, *, rel=1, depth=1000, gains=None, tol=1e-9):
    evaluator = pytrec_eval.RelevanceEvaluator(qd, measure_spec(), relevance_level=rel)
    results = [evaluator.evaluate(rd) for rd in rds]
    names = sorted(next(iter(results[0].values())))
    ours = [trec_to_irsim(n, rel) for n in names]
    if gains is not None:
        ours = [o.replace("nDCG", f"nDCG(gains={gains})") for o in ours]
    m = evaluate(runs, qrels, ours, depth=depth)
    checked = 0
    for s, res in enumerate(results):
        for ti, t in enumerate(m.topics):
            if t not in res:  # pytrec_eval skips a topic the run lacks: irsim scores 0
                assert np.all(m.values[:, s, ti] == 0)
                continue
            for mi, n in enumerate(names):
                assert abs(m.values[mi, s, ti] - res[t][n]) <= tol, (ours[mi], s, t)
                checked += 1
    assert checked > 1000
    return m


@pytest.fixture(scope="module")
def data():
    runs, qrels = generate(1)
    return runs, qrels, *as_dicts(runs, qrels)


@pytest.mark.parametrize("rel", [1, 2, 3])
def test_against_pytrec_eval(data, rel):
    m = compare(*data, rel=rel)
    assert m.values.max() > 0.5  # non-trivial values


def test_exact_ties_break_by_docno_descending():
    runs, qrels = generate(2, ties=True)
    compare(runs, qrels, *as_dicts(runs, qrels))


def test_depth_cut_equals_truncated_lists(data):
    """depth=k equals pytrec_eval on lists cut to their top k (trec_eval -M k)."""
    runs, qrels, qd, rds = data

    def top(docs: dict[str, float], k: int) -> dict[str, float]:
        by_docno_desc = sorted(docs.items(), reverse=True)
        return dict(sorted(by_docno_desc, key=lambda kv: -kv[1])[:k])  # stable

    cut = [{t: top(docs, 15) for t, docs in rd.items()} for rd in rds]
    compare(runs, qrels, qd, cut, depth=15)


def test_custom_gains_as_remapped_grades(data):
    """nDCG(gains={1:6,2:18,3:9}) equals trec_eval's ndcg on qrels whose grades are the
    gains (trec_eval's default gain is the grade; pytrec_eval crashes on ndcg.1=... ).
    Rprec etc. are unaffected because every gain is >= 1."""
    runs, qrels, qd, rds = data
    gmap = {1: 6, 2: 18, 3: 9}
    remapped = {t: {d: gmap.get(g, g) for d, g in docs.items()} for t, docs in qd.items()}
    compare(runs, qrels, remapped, rds, gains="{1:6,2:18,3:9}")
