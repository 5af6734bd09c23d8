"""Runs read from files are held as integer codes (issue 30): the codes round-trip to the
file's strings, and the evaluation of the coded runs (rank keys, no re-sort of lists the
reader checked) gives bit for bit the per-topic values of the string path (object columns,
stable sort of the scores), and pytrec_eval's."""

from __future__ import annotations

import gzip
import importlib
import pickle
from pathlib import Path

import numpy as np
import pytest

from irsim.data import Runs
from irsim.data.trec import read_qrels, read_runs, trec_eval_scores
from irsim.engine import data_digest
from irsim.metrics import evaluate
from irsim.metrics.multi import evaluate_many

ev = importlib.import_module("irsim.metrics.evaluate")  # (irsim.metrics.evaluate: the function)

MEASURES = ["AP", "P@10", "nDCG@10", "RR", "Rprec", "AP(rel=2)"]
TREC = {"AP": "map", "P@10": "P_10", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank",
        "Rprec": "Rprec"}


def plain(runs: Runs) -> Runs:
    """The same runs as object columns (the in-memory representation, no codes)."""
    return Runs(runs.names, runs.run, np.array(runs.topic), np.array(runs.docno), runs.score,
                sources=runs.sources, precision=runs.precision)


def string_path(monkeypatch, runs, qrels, **kw):
    """evaluate as before the codes: lists sorted by docno, then a stable sort of the
    scores (no rank keys)."""
    with monkeypatch.context() as m:
        m.setattr(ev, "rank_keys", lambda *a: None)
        return evaluate(plain(runs), qrels, MEASURES, **kw)


def lines_of(path: Path) -> list[list[str]]:
    """A loop reference reader: the whitespace-split tokens of every non-blank line."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.split() for line in f if line.strip()]


@pytest.fixture(scope="module")
def dl19(shared_data):
    d = shared_data / "dl19-assessors"
    paths = sorted((d / "runs").iterdir())[:12]
    return paths, read_qrels(d / "qrels" / "nist.txt")


def test_codes_round_trip_to_the_file_strings(dl19):
    paths, _ = dl19
    runs = read_runs(paths)
    assert runs.unique_lists and "docno" not in runs.__dict__  # nothing built yet
    tc, tvocab = runs.topic_codes()
    dc, dvocab = runs.docno_codes()
    ref = [tok for p in paths for tok in lines_of(p)]
    assert len(runs) == len(ref) == len(tc) == len(dc)
    assert tvocab[tc].tolist() == [t[0] for t in ref]
    assert dvocab[dc].tolist() == [t[2] for t in ref]
    # vocabularies: unique and in str order (trec_eval's strcmp on UTF-8)
    assert dvocab.tolist() == sorted(set(t[2] for t in ref))
    assert tvocab.tolist() == sorted(set(t[0] for t in ref))
    # the object columns, built on first access, are the same strings
    assert runs.docno.tolist() == [t[2] for t in ref]
    assert runs.topic.tolist() == [t[0] for t in ref]
    assert runs.score.tolist() == [float(t[4]) for t in ref]


def test_coded_runs_pickle_and_digest_like_the_strings(dl19):
    paths, _ = dl19
    runs = read_runs(paths[:3])
    back = pickle.loads(pickle.dumps(runs))
    assert back.docno_codes()[0].tolist() == runs.docno_codes()[0].tolist()
    assert back.topic.tolist() == runs.topic.tolist()
    assert data_digest(read_runs(paths[:3])) == data_digest(plain(runs))
    with pytest.raises(AttributeError):
        runs.nonexistent  # noqa: B018


@pytest.mark.slow
def test_dl19_bit_identical_to_the_string_path_and_pytrec_eval(dl19, monkeypatch):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    paths, qrels = dl19
    runs = read_runs(paths, scores="float32")  # pytrec_eval's reading (trec_eval 9.0.8)
    new = evaluate(runs, qrels, MEASURES, missing="zero")
    old = string_path(monkeypatch, runs, qrels, missing="zero")
    assert new.metrics == old.metrics and new.topics == old.topics
    assert np.array_equal(new.values, old.values)  # bit for bit
    # pytrec_eval from the same files
    qrel = {}
    for t, d, g in zip(qrels.topic, qrels.docno, qrels.grade, strict=True):
        qrel.setdefault(t, {})[d] = int(g)
    evaluator = pytrec_eval.RelevanceEvaluator(qrel, set(TREC.values()))
    for s, p in enumerate(paths):
        run: dict[str, dict[str, float]] = {}
        for tok in lines_of(p):
            run.setdefault(tok[0], {})[tok[2]] = float(tok[4])
        res = evaluator.evaluate(run)
        for name, trec in TREC.items():
            got = new.metric(name)[s]
            ref = np.array([res[t][trec] if t in res else 0.0 for t in new.topics])
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


def write(path: Path, rows) -> Path:
    path.write_text("".join(f"{t} Q0 {d} {i} {s} {path.stem}\n"
                            for i, (t, d, s) in enumerate(rows)))
    return path


def test_ties_signs_and_interleaved_topics_match_the_string_path(tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    docs = [f"D{i}" for i in range(40)] + ["d10", "D1a", "é", "Z"]
    qlines = [f"{t} 0 {d} {rng.integers(-1, 3)}\n" for t in ("1", "2", "10")
              for d in docs if rng.random() < 0.6]
    (tmp_path / "q").write_text("".join(qlines))
    qrels = read_qrels(tmp_path / "q")
    paths = []
    for r in range(4):
        rows = []
        for t in ("1", "2", "10"):
            picked = rng.choice(docs, size=30, replace=False)
            # few distinct scores: many ties; signed zeros; scores equal in float32 only
            score = rng.choice(["0.0", "-0.0", "1", "-2.5", "3", "1.00000001", "-1e3"], 30)
            rows += list(zip([t] * 30, picked, score, strict=True))
        if r % 2:  # topics interleaved: the lists are not contiguous in the file
            rows = [rows[i] for i in rng.permutation(len(rows))]
        paths.append(write(tmp_path / f"r{r}.run", rows))
    runs = read_runs(paths, scores="float32")  # the rank keys of trec_eval 9.0.8's floats
    new = evaluate(runs, qrels, MEASURES, depth=20)
    old = string_path(monkeypatch, runs, qrels, depth=20)
    assert np.array_equal(new.values, old.values)
    # a loop reference of the ranking: score (float32) descending, docno descending
    for s, p in enumerate(paths):
        for ti, t in enumerate(new.topics):
            rows = [x for x in lines_of(p) if x[0] == t]
            f32 = trec_eval_scores(np.array([float(x[4]) for x in rows]))
            ranked = sorted(zip(f32.tolist(), (x[2] for x in rows), strict=True),
                            key=lambda x: (x[0], x[1].encode()), reverse=True)
            judged = {d: g for tt, d, g in zip(qrels.topic, qrels.docno, qrels.grade,
                                               strict=True) if tt == t}
            rel = [judged.get(d, 0) >= 1 for _, d in ranked[:10]]
            assert new.metric("P@10")[s, ti] == sum(rel) / 10


def test_evaluate_many_identical_for_coded_and_string_runs(dl19, monkeypatch):
    paths, _ = dl19
    d = paths[0].parent.parent / "qrels"
    qs = {n: read_qrels(d / f"{n}.txt") for n in ("nist", "froebe")}
    runs = read_runs(paths[:6])
    new = evaluate_many(runs, qs, MEASURES, missing="drop")
    with monkeypatch.context() as m:
        m.setattr(ev, "rank_keys", lambda *a: None)
        old = evaluate_many(plain(runs), qs, MEASURES, missing="drop")
    for n in qs:
        assert new[n].topics == old[n].topics
        assert np.array_equal(new[n].values, old[n].values)
