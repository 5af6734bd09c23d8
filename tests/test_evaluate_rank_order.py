"""Runs read from files are ranked without sorting when their lists are in score order (as
run files are written): only runs of tied scores are put in docno-descending order. The
per-topic values are those of pytrec_eval (float32) and of the sorting path, bit for bit."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import irsim
from irsim.data import Runs
from irsim.data.trec import read_qrels, read_runs
from irsim.metrics import evaluate

MEASURES = {"map": "AP", "P_10": "P@10", "ndcg_cut_10": "nDCG@10", "recip_rank": "RR",
            "Rprec": "Rprec", "ndcg": "nDCG"}


ORDERED = ["ties", "ties", "distinct", "ties_f32"]


def _write(tmp_path: Path, kinds: list[str]) -> tuple[list[Path], Path]:
    """Runs with many tied scores: in score order with ties in random docno order, in score
    order without ties, lists in ascending score order, or rows shuffled; graded qrels."""
    rng = np.random.default_rng(11)
    topics, docs = 6, 120
    qrels = "".join(f"{50 + t} 0 d{t}-{i} {rng.integers(0, 4)}\n" for t in range(topics)
                    for i in rng.choice(docs, 40, replace=False))
    qpath = tmp_path / "qrels.txt"
    qpath.write_text(qrels)
    paths = []
    for k, kind in enumerate(kinds):
        rows = []
        for t in range(topics):
            ids = rng.permutation(docs)[:80 + 5 * k]
            if kind == "distinct":
                score = np.sort(rng.normal(size=len(ids)))[::-1]
            elif kind == "ties_f32":  # distinct doubles, equal as floats
                score = 1e9 + np.sort(rng.integers(0, 40, len(ids)))[::-1].astype(float)
            else:  # ties, shuffled, ascending
                score = np.sort(rng.integers(0, 12, len(ids)))[::-1] / 4
            if kind == "ascending":
                score = score[::-1]
            rows += [f"{50 + t} Q0 d{t}-{i} {r + 1} {float(s)!r} run{k}"
                     for r, (i, s) in enumerate(zip(ids, score, strict=True))]
        if kind == "shuffled":
            rows = [rows[i] for i in rng.permutation(len(rows))]
        path = tmp_path / f"run{k}.txt"
        path.write_text("\n".join(rows) + "\n")
        paths.append(path)
    return paths, qpath


def _in_memory(runs: Runs) -> Runs:
    """The same runs as object columns, rows reversed: evaluated by the sorting path."""
    back = slice(None, None, -1)
    return Runs(runs.names, runs.run[back], np.asarray(runs.topic[back], dtype=object),
                np.asarray(runs.docno[back], dtype=object), runs.score[back],
                runs.sources, precision=runs.precision)


@pytest.mark.parametrize("scores", ["float64", "float32"])
@pytest.mark.parametrize(("extra", "ranked"), [([], True), (["ascending"], False),
                                               (["shuffled"], None)])
def test_rank_order_of_files_is_the_sorted_order(tmp_path, monkeypatch, scores, extra, ranked):
    """Lists in score order are ranked in place (`ranked` True); a run whose lists are not
    (ascending scores: False; rows not grouped by topic: not asked, None) has the runs
    sorted; the values are the same, bit for bit."""
    ev = importlib.import_module("irsim.metrics.evaluate")  # the module, not the function
    paths, qpath = _write(tmp_path, ORDERED + extra)
    runs, qrels = read_runs(paths, scores=scores), read_qrels(qpath)
    asked = []
    real = ev.rank_order
    monkeypatch.setattr(ev, "rank_order", lambda *a: asked.append(real(*a)) or asked[-1])
    mine = evaluate(runs, qrels, list(MEASURES.values()))
    assert asked == ([] if ranked is None else [asked[0]])
    assert ranked is None or (asked[0] is not None) == ranked
    ref = evaluate(_in_memory(runs), qrels, list(MEASURES.values()))
    assert np.array_equal(mine.values, ref.values)  # bit for bit
    assert (mine.values > 0).mean() > 0.5


def test_rank_order_of_files_equals_pytrec_eval(tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    paths, qpath = _write(tmp_path, ORDERED + ["ascending", "shuffled"])
    with open(qpath) as f:
        ev = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(f), set(MEASURES))
    df = irsim.evaluate(paths, qpath, list(MEASURES.values()), scores="float32")
    names = {v: k for k, v in MEASURES.items()}
    worst, compared = 0.0, 0
    for p in paths:
        with open(p) as f:
            ref = ev.evaluate(pytrec_eval.parse_run(f))
        sub = df[df.system == p.stem]
        for t, m, v in zip(sub.topic, sub.metric, sub.value, strict=True):
            worst = max(worst, abs(v - ref[t][names[m]]))
            compared += 1
    assert compared == len(paths) * 6 * len(MEASURES)
    assert worst <= 1e-12


@pytest.mark.parametrize("scores", ["float64", "float32"])
def test_evaluate_many_ranks_files_as_evaluate(tmp_path, scores):
    """evaluate_many (several qrels in one pass) ranks the lists as evaluate: runs in score
    order, and runs whose lists are not (ties broken by docno in ranked_rows)."""
    from irsim.data import Qrels
    from irsim.metrics.multi import evaluate_many

    paths, qpath = _write(tmp_path, ORDERED + ["ascending"])
    runs, qrels = read_runs(paths, scores=scores), read_qrels(qpath)
    other = Qrels(qrels.topic, qrels.docno, (qrels.grade + 1) % 4, source="other")
    many = evaluate_many(runs, {"a": qrels, "b": other}, list(MEASURES.values()))
    for name, q in (("a", qrels), ("b", other)):
        ref = evaluate(_in_memory(runs), q, list(MEASURES.values()))
        assert np.array_equal(many[name].values, ref.values), name
