"""irsim.metrics.evaluate_many (runs under many qrels in one pass) equals irsim.evaluate per
qrels and pytrec_eval; composite qrels and condensed lists (Sakai 2007)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA
from test_metrics_pytrec_eval import generate

from irsim.data.trec import read_qrels, read_run
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError
from irsim.metrics import composite_qrels, evaluate, evaluate_many
from irsim.metrics.block import UNJUDGED
from irsim.metrics.multi import UNJUDGED_RULES, condense

MEASURES = ["AP", "nDCG@10", "P@10", "RR"]
TREC = {"map": "AP", "ndcg_cut_10": "nDCG@10", "P_10": "P@10", "recip_rank": "RR"}
DL19 = SHARED_DATA / "dl19-assessors"
GROUPS = (("ferdinand-schlatt", "froebe"), ("andrew-parry", "eugene-yang"),
          ("guglielmo-faggioli", "harry-scells"), ("saber-zerhoudi", "sean-macavaney"))


def concat_runs(parts: list[Runs]) -> Runs:
    """Several single-run Runs as one (names from the files, which the tags do not make
    unique in these data)."""
    offs = np.cumsum([0] + [len(p.names) for p in parts])[:-1]
    return Runs(tuple(n for p in parts for n in p.names),
                np.concatenate([p.run + o for p, o in zip(parts, offs, strict=True)]
                               ).astype(np.int32),
                np.concatenate([p.topic for p in parts]),
                np.concatenate([p.docno for p in parts]),
                np.concatenate([p.score for p in parts]),
                precision=parts[0].precision)


def subset_qrels(q: Qrels, keep: np.ndarray, source: str) -> Qrels:
    return Qrels(q.topic[keep], q.docno[keep], q.grade[keep], source=source)


def judged_only(runs: Runs, qrels: Qrels) -> Runs:
    """The runs without the documents `qrels` did not judge (the condensed lists)."""
    judged = pd.MultiIndex.from_arrays([qrels.topic, qrels.docno])
    keep = judged.get_indexer(pd.MultiIndex.from_arrays([runs.topic, runs.docno])) >= 0
    return Runs(runs.names, runs.run[keep], runs.topic[keep], runs.docno[keep],
                runs.score[keep], precision=runs.precision)


def assert_same(a, b):
    assert a.metrics == b.metrics and a.systems == b.systems and a.topics == b.topics
    np.testing.assert_array_equal(a.values, b.values)


# --- synthetic data: every missing policy, topic sets that differ between qrels ---------

@pytest.mark.parametrize("missing", ["zero", "drop", "error"])
def test_equals_evaluate_per_qrels_on_generated_data(missing):
    runs, qrels = generate(11, n_runs=6, n_topics=21)
    rng = np.random.default_rng(3)
    # other assessors: re-graded subsets (topics without a relevant document stay so, as
    # runs may lack them), and one with a third of the topics
    has_rel = pd.Series(qrels.grade >= 1).groupby(qrels.topic).transform("any").to_numpy()
    variants = {"full": qrels}
    for name, share in (("half", 0.5), ("most", 0.8)):
        keep = rng.random(len(qrels)) < share
        regrade = (rng.random(len(qrels)) < 0.3) & has_rel
        g = np.where(regrade, rng.integers(0, 4, len(qrels)), qrels.grade)
        variants[name] = Qrels(qrels.topic[keep], qrels.docno[keep], g[keep], source=name)
    few = np.isin(qrels.topic, [f"T{t:03d}" for t in range(0, 21, 3)])
    variants["few topics"] = subset_qrels(qrels, few, "few")
    measures = ["AP", "nDCG", "nDCG@10", "P@5", "RR", "Rprec", "Q@20", "AP(rel=2)"]
    if missing == "error":
        # run topics absent from a qrels: the same error as evaluate, naming that qrels
        with pytest.raises(InputError, match="few"):
            evaluate(runs, variants["few topics"], measures, missing="error")
        with pytest.raises(InputError, match="few"):
            evaluate_many(runs, variants, measures, missing="error")
        variants.pop("few topics")
    out = evaluate_many(runs, variants, measures, missing=missing, max_cells=5000)
    assert list(out) == list(variants)
    for name, q in variants.items():
        assert_same(out[name], evaluate(runs, q, measures, missing=missing))


def test_condensed_lists_equal_runs_without_unjudged_documents():
    runs, qrels = generate(5, n_runs=5, n_topics=14)
    rng = np.random.default_rng(8)
    keep = rng.random(len(qrels)) < 0.6
    other = subset_qrels(qrels, keep, "other")
    out = evaluate_many(runs, {"ref": qrels, "other": other}, MEASURES + ["nDCG"],
                        missing="zero", condensed={"other"})
    assert_same(out["ref"], evaluate(runs, qrels, MEASURES + ["nDCG"], missing="zero"))
    ref = evaluate(judged_only(runs, other), other, MEASURES + ["nDCG"], missing="zero")
    assert_same(out["other"], ref)
    # condensing changes scores here (unjudged documents sat above judged ones)
    plain = evaluate(runs, other, MEASURES + ["nDCG"], missing="zero")
    assert not np.array_equal(plain.values, out["other"].values)


@pytest.mark.parametrize("depth", [None, 7])
def test_depth_and_ties_equal_evaluate(depth):
    runs, qrels = generate(21, n_runs=4, n_topics=10, ties=True)
    other = Qrels(qrels.topic, qrels.docno, np.clip(qrels.grade - 1, -1, 3), source="other")
    measures = ["AP", "nDCG", "P@10", "RR", "nDCG@20"]
    out = evaluate_many(runs, {"ref": qrels, "other": other}, measures, depth=depth,
                        missing="zero")
    for name, q in (("ref", qrels), ("other", other)):
        assert_same(out[name], evaluate(runs, q, measures, depth=depth, missing="zero"))


def test_condense():
    u = UNJUDGED
    g = np.array([[u, 2, u, 0], [u, u, u, u], [1, 2, 3, 0]])
    np.testing.assert_array_equal(condense(g), [[2, 0, u, u], [u, u, u, u], [1, 2, 3, 0]])


def test_bad_input():
    runs, qrels = generate(2, n_runs=2, n_topics=5)
    with pytest.raises(ConfigError, match="non-empty mapping"):
        evaluate_many(runs, {}, ["AP"])
    with pytest.raises(ConfigError, match="nist"):
        evaluate_many(runs, {"a": qrels}, ["AP"], condensed=["nist"], missing="zero")
    bad = Qrels(np.array(["X1"], dtype=object), np.array(["d"], dtype=object), np.array([1]),
                source="other.txt")
    with pytest.raises(InputError, match="other.txt"):
        evaluate_many(runs, {"a": qrels, "b": bad}, ["AP"], missing="zero")
    with pytest.raises(ConfigError, match="unjudged rule"):
        composite_qrels(qrels, qrels, unjudged="ignore")


def test_composite_qrels_rules():
    obj = lambda *s: np.array(s, dtype=object)  # noqa: E731
    ref = Qrels(obj("1", "1", "1", "2"), obj("a", "b", "c", "e"), np.array([2, 1, 0, 3]))
    other = Qrels(obj("1", "1", "2"), obj("b", "d", "e"), np.array([3, 1, 0]), source="llm")
    got = {u: composite_qrels(ref, other, unjudged=u) for u in UNJUDGED_RULES}
    as_dict = {u: dict(zip(zip(q.topic, q.docno, strict=True), q.grade.tolist(), strict=True))
               for u, q in got.items()}
    assert as_dict["reference"] == {("1", "a"): 2, ("1", "b"): 3, ("1", "c"): 0,
                                    ("1", "d"): 1, ("2", "e"): 0}
    assert as_dict["nonrelevant"] == {("1", "a"): 0, ("1", "b"): 3, ("1", "c"): 0,
                                      ("1", "d"): 1, ("2", "e"): 0}
    assert as_dict["condensed"] == {("1", "b"): 3, ("1", "d"): 1, ("2", "e"): 0}
    assert got["reference"].source == "llm (unjudged=reference)"


# --- TREC DL 2019 with eight secondary assessors --------------------------------------

@pytest.fixture(scope="module")
def dl19():
    if not (DL19 / "qrels" / "nist.txt").is_file():
        pytest.skip(f"DL 2019 assessor data not found at {DL19} (set IRSIM_TEST_DATA)")
    files = sorted((DL19 / "runs").glob("*.gz"))
    # float32: pytrec_eval's reading (trec_eval 9.0.8), which test_dl19_agrees_with_pytrec_eval
    # compares with (float64, trec_eval 10.0's, differs on one run: TUA1-1, topic 148538)
    runs = concat_runs([read_run(p, name=Path(p.stem).stem, scores="float32") for p in files])
    names = ["nist", *(a for g in GROUPS for a in g)]
    return runs, {n: read_qrels(DL19 / "qrels" / f"{n}.txt") for n in names}


def secondary(qrels: dict[str, Qrels], pick: list[str]) -> Qrels:
    """One assessor per group as one qrels; topic 168216, judged by every group, takes the
    first assessor's grades."""
    frames = [pd.DataFrame({"t": qrels[a].topic, "d": qrels[a].docno, "g": qrels[a].grade})
              for a in pick]
    df = pd.concat(frames).drop_duplicates(["t", "d"], keep="first")
    return Qrels(df.t.to_numpy(object), df.d.to_numpy(object), df.g.to_numpy(np.int64),
                 source="+".join(pick))


def combinations(qrels: dict[str, Qrels], limit: int | None = None) -> dict[str, Qrels]:
    """The paper's 16 composite secondary qrels (one assessor of each group) over NIST:
    pairs the assessors did not judge keep the NIST grade."""
    out = {}
    for i in range(16 if limit is None else limit):
        pick = [GROUPS[g][(i >> g) & 1] for g in range(4)]
        out["+".join(pick)] = composite_qrels(qrels["nist"], secondary(qrels, pick),
                                              unjudged="reference")
    return out


def test_dl19_many_qrels_equal_separate_evaluation(dl19):
    runs, qrels = dl19
    assert len(runs.names) == 61
    variants = {**qrels, **combinations(qrels, limit=4)}
    out = evaluate_many(runs, variants, MEASURES, missing="drop")
    for name, q in variants.items():
        assert_same(out[name], evaluate(runs, q, MEASURES, missing="drop"))
    # a composite over NIST covers the 43 topics; an assessor alone only its group's
    assert len(out["nist"].topics) == 43 and len(out["froebe"].topics) == 9
    assert len(next(iter(combinations(qrels, 1).values())).topics) == 43


def test_dl19_unjudged_rules_and_condensed(dl19):
    runs, qrels = dl19
    sec = secondary(qrels, [g[1] for g in GROUPS])
    variants = {u: composite_qrels(qrels["nist"], sec, unjudged=u) for u in UNJUDGED_RULES}
    out = evaluate_many(runs, variants, MEASURES, condensed={"condensed"})
    for u in ("reference", "nonrelevant"):
        assert_same(out[u], evaluate(runs, variants[u], MEASURES))
    cond = variants["condensed"]
    assert_same(out["condensed"], evaluate(judged_only(runs, cond), cond, MEASURES,
                                           missing="zero"))
    # the assessors re-judged every NIST-relevant passage (and some non-relevant ones):
    # the pairs left to the rule are NIST grade 0, so "reference" and "nonrelevant" score
    # alike here; only condensing the lists changes the scores
    left = composite_qrels(qrels["nist"], sec, unjudged="reference")
    judged = pd.MultiIndex.from_arrays([sec.topic, sec.docno])
    rest = judged.get_indexer(pd.MultiIndex.from_arrays([left.topic, left.docno])) < 0
    assert rest.sum() > 4000 and np.all(left.grade[rest] == 0)
    np.testing.assert_array_equal(out["reference"].values, out["nonrelevant"].values)
    assert not np.array_equal(out["reference"].metric("AP"), out["condensed"].metric("AP"))


def test_dl19_agrees_with_pytrec_eval(dl19):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    runs, qrels = dl19
    variants = {"nist": qrels["nist"], **combinations(qrels, limit=2)}
    out = evaluate_many(runs, variants, MEASURES)
    # trec_eval reads scores as float: give it the float32 values irsim ranks by
    score = np.asarray(runs.score, np.float32).astype(np.float64)
    run_dicts: list[dict] = [{} for _ in runs.names]
    for r, t, d, s in zip(runs.run.tolist(), runs.topic, runs.docno, score.tolist(),
                          strict=True):
        run_dicts[r].setdefault(t, {})[d] = s
    for name, q in variants.items():
        qd: dict = {}
        for t, d, g in zip(q.topic, q.docno, q.grade.tolist(), strict=True):
            qd.setdefault(t, {})[d] = g
        ev = pytrec_eval.RelevanceEvaluator(qd, set(TREC))
        m = out[name]
        for s, rd in enumerate(run_dicts):
            res = ev.evaluate(rd)
            for trec, ours in TREC.items():
                ref = np.array([res[t][trec] for t in m.topics])
                np.testing.assert_allclose(m.metric(ours)[s], ref, atol=1e-9,
                                           err_msg=f"{name} {runs.names[s]} {ours}")
