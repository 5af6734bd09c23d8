"""Measure parsing, evaluate's topic policies and bad input, ranking rules, aggregation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from irsim.data.trec import read_qrels, read_run, read_runs
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError
from irsim.metrics import Measure, aggregate, available_measures, evaluate, parse_measure
from irsim.metrics.evaluate import _list_order


def obj(*s: str) -> np.ndarray:
    return np.array(s, dtype=object)


def runs_of(rows: list[tuple[int, str, str, float]], names=("r0", "r1")) -> Runs:
    run, topic, doc, score = zip(*rows, strict=True)
    return Runs(tuple(names), np.array(run, dtype=np.int32), obj(*topic), obj(*doc),
                np.array(score, dtype=float))


def qrels_of(rows: list[tuple[str, str, int]], source: str | None = None) -> Qrels:
    topic, doc, grade = zip(*rows, strict=True)
    return Qrels(obj(*topic), obj(*doc), np.array(grade), source=source)


# --- measures ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "canonical"), [
    ("AP", "AP"), ("AP(rel=1)", "AP"), ("AP(rel=2)", "AP(rel=2)"), ("P@10", "P@10"),
    ("P(rel=2)@10", "P(rel=2)@10"), ("P@10(rel=2)", "P(rel=2)@10"), ("Rprec", "Rprec"),
    ("RR", "RR"), ("Success@5", "Success@5"), ("nDCG", "nDCG"), ("nDCG@10", "nDCG@10"),
    ("nDCG(gains={0:0,1:3,2:9,4:4.5})@10", "nDCG(gains={0:0,1:3,2:9,4:4.5})@10"),
    ("nDCG( gains = {2: 9.0, 1: 3} )", "nDCG(gains={1:3,2:9})"), ("Q", "Q"), ("Q@100", "Q@100"),
    ("Q(beta=1.0)", "Q"), ("Q(beta=0.5,rel=2)", "Q(beta=0.5,rel=2)"), ("R-measure", "R-measure"),
    ("O", "O"), ("nCG@10", "nCG@10"), ("nDCG_orig@10", "nDCG_orig@10"),
    ("nDCG_orig(b=2)@10", "nDCG_orig@10"), ("AnCG@10", "AnCG@10"), ("AnDCG@10", "AnDCG@10"),
])
def test_canonical_names(text, canonical):
    m = parse_measure(text)
    assert str(m) == canonical
    assert parse_measure(str(m)) == m and hash(parse_measure(str(m))) == hash(m)


def test_measure_value_semantics():
    m = parse_measure("AP(rel=2)@10")
    assert (m.name, m.cutoff, m.rel) == ("AP", 10, 2)
    assert m == Measure("AP", 10, {"rel": 2}) and m != parse_measure("AP@10")
    assert parse_measure(m) is m
    with pytest.raises(AttributeError):
        m.cutoff = 5  # type: ignore[misc]
    g = parse_measure("nDCG(gains={1:3})")
    assert g.gains == {1: 3.0} and parse_measure("nDCG").gains is None
    assert parse_measure("Q").beta == 1.0 and parse_measure("nDCG_orig@5").b == 2.0
    assert repr(m) == "Measure('AP(rel=2)@10')"


@pytest.mark.parametrize(("text", "message"), [
    ("nDGC@10", "unknown metric 'nDGC' (did you mean 'nDCG'"),
    ("map", "did you mean 'AP'"), ("P_10", "did you mean 'P@10'"),
    ("ndcg_cut_10", "did you mean 'nDCG@10'"), ("ndcg@10", "did you mean 'nDCG@10'"),
    ("P", "needs a cut-off"), ("Rprec@10", "takes no cut-off"),
    ("nDCG@23.4", "cut-off must be a positive integer"), ("AP@0", "positive integer"),
    ("AP(rel=1.5)", "rel must be an integer"), ("AP(gains={1:2})", "unknown parameter 'gains'"),
    ("nDCG(gains={1:-2})", "gains values must be"), ("nDCG(gains={1.5:2})", "gains keys"),
    ("nDCG_orig(b=1)@5", "b (log base)"), ("Q(beta=-1)", "beta"),
    ("AP(rel=__import__('os').getcwd())", "must be a literal"),
    ("AP(2)", "name=value"), ("AP(rel=1, rel=2)", "given twice"), ("AP(rel=", "cannot parse"),
    ("@10", "cannot parse"),
])
def test_bad_measures(text, message):
    with pytest.raises(ConfigError) as info:
        parse_measure(text)
    assert message in str(info.value)


def test_available_measures():
    ms = available_measures()
    assert {"AP", "P", "Rprec", "RR", "Success", "nDCG", "Q", "R-measure", "O", "nCG",
            "nDCG_orig", "AnCG", "AnDCG"} <= set(ms)
    assert all(isinstance(v, str) and v for v in ms.values())
    assert "Q@k" in ms["Q"] and "beta=1" in ms["Q"]


# --- evaluate: ranking rules --------------------------------------------------------------------


def test_ties_break_by_docno_descending_and_rank_column_ignored(tmp_path):
    qrels = qrels_of([("1", "a", 1), ("1", "b", 0)])
    # the rank column claims 'a' first; scores tie; trec_eval puts 'b' (greater) first
    p = tmp_path / "r.run"
    p.write_text("1 Q0 a 1 5.0 x\n1 Q0 b 2 5.0 x\n")
    m = evaluate(read_run(p), qrels, ["P@1", "RR"])
    assert m.values[:, 0, 0].tolist() == [0.0, 0.5]


def test_docno_order_is_bytewise():
    # bytewise: 'B' (0x42) < 'a' (0x61) < 'z' < 'é' (0xc3 0xa9); ties go to the greatest
    qrels = qrels_of([("1", "é", 1), ("1", "a", 1), ("1", "B", 1), ("1", "z", 1)])
    runs = runs_of([(0, "1", d, 1.0) for d in ("a", "B", "é", "z")], names=("r",))
    m = evaluate(runs, qrels, ["P@1"])
    assert m.values[0, 0, 0] == 1.0
    qrels = qrels_of([("1", "é", 0), ("1", "a", 1), ("1", "B", 1), ("1", "z", 1)])
    assert evaluate(runs, qrels, ["P@1"]).values[0, 0, 0] == 0.0


def test_unjudged_documents_are_non_relevant_and_negative_grades_too():
    qrels = qrels_of([("1", "a", -1), ("1", "b", 1)])
    runs = runs_of([(0, "1", "x", 3.0), (0, "1", "a", 2.0), (0, "1", "b", 1.0)], names=("r",))
    m = evaluate(runs, qrels, ["RR", "AP", "nDCG"])
    assert m.values[:, 0, 0].tolist() == [1 / 3, 1 / 3, 0.5]


def test_depth():
    qrels = qrels_of([("1", "a", 1), ("1", "b", 1)])
    runs = runs_of([(0, "1", "x", 3.0), (0, "1", "a", 2.0), (0, "1", "b", 1.0)], names=("r",))
    full = evaluate(runs, qrels, ["AP", "P@3"], depth=None).values[:, 0, 0]
    cut = evaluate(runs, qrels, ["AP", "P@3"], depth=2).values[:, 0, 0]
    np.testing.assert_allclose(full, [(1 / 2 + 2 / 3) / 2, 2 / 3])
    np.testing.assert_allclose(cut, [(1 / 2) / 2, 1 / 3])  # P@3 still divides by 3


def test_topics_sorted_as_strings_and_ids_kept():
    qrels = qrels_of([("9", "a", 1), ("10", "a", 1), ("100", "a", 1)])
    runs = runs_of([(0, t, "a", 1.0) for t in ("9", "10", "100")], names=("r",))
    m = evaluate(runs, qrels, "AP")
    assert m.topics == ("10", "100", "9") and m.systems == ("r",) and m.metrics == ("AP",)


def test_chunking_and_lexsort_paths_do_not_change_results():
    rng = np.random.default_rng(0)
    rows, qrows = [], []
    for t in range(6):
        qrows += [(f"t{t}", f"d{i}", int(rng.integers(0, 3))) for i in range(0, 40, 2)]
        qrows.append((f"t{t}", "d0x", 1))
        for r in range(3):
            k = int(rng.integers(1, 40))
            docs = rng.choice(40, size=k, replace=False)
            rows += [(r, f"t{t}", f"d{d}", float(rng.integers(0, 4))) for d in docs]
    runs, qrels = runs_of(rows, names=("a", "b", "c")), qrels_of(qrows)
    ms = ["AP", "nDCG@10", "Q", "AnDCG@5", "R-measure", "Rprec"]
    ref = evaluate(runs, qrels, ms)
    for cells in (1, 7, 100):
        np.testing.assert_array_equal(evaluate(runs, qrels, ms, max_cells=cells).values,
                                      ref.values)
    g = rng.integers(0, 50, 1000)
    d = rng.integers(0, 30, 1000)
    a, b = _list_order(g, d, 30, packed=True), _list_order(g, d, 30, packed=False)
    np.testing.assert_array_equal(g[a] * 30 + d[a], g[b] * 30 + d[b])


# --- evaluate: topics present in one side only --------------------------------------------------


@pytest.fixture
def files(tmp_path: Path):
    (tmp_path / "qrels.txt").write_text(
        "1 0 a 1\n1 0 b 0\n2 0 a 2\n3 0 c 0\n4 0 d 1\n")
    (tmp_path / "r1.run").write_text(
        "1 Q0 a 1 2.0 r1\n2 Q0 a 1 2.0 r1\n4 Q0 x 1 1.0 r1\n")
    (tmp_path / "r2.run").write_text(
        "1 Q0 b 1 2.0 r2\n1 Q0 a 2 1.0 r2\n2 Q0 a 1 2.0 r2\n3 Q0 c 1 1 r2\n4 Q0 d 1 1 r2\n")
    (tmp_path / "extra.run").write_text(
        "1 Q0 a 1 2.0 ex\n2 Q0 a 1 2.0 ex\n4 Q0 d 1 1.0 ex\n99 Q0 a 1 1.0 ex\n")
    (tmp_path / "short.run").write_text("1 Q0 a 1 2.0 sh\n4 Q0 d 1 1.0 sh\n")
    return tmp_path


def test_missing_error_keeps_judged_topics_a_run_retrieved(files):
    runs = read_runs([files / "r1.run", files / "r2.run"])
    m = evaluate(runs, read_qrels(files / "qrels.txt"), ["AP", "P@1"])
    # topic 3 has no relevant document: kept (r2 retrieved it), scored 0, as trec_eval does;
    # r1 lacks it and scores 0 there too
    assert m.topics == ("1", "2", "3", "4")
    assert m.metric("AP").tolist() == [[1.0, 1.0, 0.0, 0.0], [0.5, 1.0, 0.0, 1.0]]


def test_run_topic_not_in_qrels_is_an_error(files):
    runs = read_runs([files / "r1.run", files / "extra.run"])
    with pytest.raises(InputError) as info:
        evaluate(runs, read_qrels(files / "qrels.txt"), ["AP"])
    e = info.value
    assert e.file == str(files / "extra.run")
    assert "topic '99'" in str(e) and "not in the qrels" in str(e) and "qrels.txt" in str(e)


def test_qrels_topic_missing_from_run_is_an_error(files):
    runs = read_runs([files / "r1.run", files / "short.run"])
    with pytest.raises(InputError) as info:
        evaluate(runs, read_qrels(files / "qrels.txt"), ["AP"])
    e = info.value
    assert e.file == str(files / "short.run")
    assert "topic '2'" in str(e) and "missing from run 'short'" in str(e)


def test_missing_zero_is_trec_eval_c(files):
    runs = read_runs([files / "extra.run", files / "short.run"])
    m = evaluate(runs, read_qrels(files / "qrels.txt"), ["AP"], missing="zero")
    assert m.topics == ("1", "2", "3", "4")  # every qrels topic, '99' dropped
    assert m.metric("AP").tolist() == [[1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]]


def test_missing_drop_keeps_the_intersection(files):
    runs = read_runs([files / "extra.run", files / "short.run"])
    m = evaluate(runs, read_qrels(files / "qrels.txt"), ["AP"], missing="drop")
    assert m.topics == ("1", "4")
    assert m.metric("AP").tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_no_common_topic(files):
    runs = read_runs([files / "extra.run"])
    qrels = qrels_of([("77", "a", 1)], source="q77")
    with pytest.raises(InputError):
        evaluate(runs, qrels, ["AP"])
    with pytest.raises(InputError, match="no topic left"):
        evaluate(runs, qrels, ["AP"], missing="drop")


# --- evaluate: bad in-memory input and options --------------------------------------------------


def test_duplicate_docno_in_memory():
    runs = runs_of([(0, "1", "a", 1.0), (0, "1", "b", 2.0), (0, "1", "a", 3.0)], names=("r",))
    with pytest.raises(InputError, match="duplicate docno 'a' for topic '1' in run 'r'"):
        evaluate(runs, qrels_of([("1", "a", 1)]), ["AP"])


def test_duplicate_judgment_in_memory():
    qrels = qrels_of([("1", "a", 1), ("1", "a", 0)], source="q.txt")
    runs = runs_of([(0, "1", "a", 1.0)], names=("r",))
    with pytest.raises(InputError, match="q.txt: duplicate judgment for topic '1', docno 'a'"):
        evaluate(runs, qrels, ["AP"])


def test_nan_score_in_memory():
    runs = runs_of([(0, "1", "a", 1.0), (0, "1", "b", float("nan"))], names=("r",))
    with pytest.raises(InputError, match="non-finite score nan for topic '1', docno 'b'"):
        evaluate(runs, qrels_of([("1", "a", 1)]), ["AP"])


def test_empty_run_in_memory():
    runs = runs_of([(0, "1", "a", 1.0)], names=("r", "empty"))
    with pytest.raises(InputError, match="run 'empty' is empty"):
        evaluate(runs, qrels_of([("1", "a", 1)]), ["AP"])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"depth": 0}, "depth"), ({"depth": 2.5}, "depth"), ({"missing": "ignore"}, "missing"),
    ({"max_cells": 0}, "max_cells"),
])
def test_bad_options(kwargs, message):
    runs = runs_of([(0, "1", "a", 1.0)], names=("r",))
    with pytest.raises(ConfigError, match=message):
        evaluate(runs, qrels_of([("1", "a", 1)]), ["AP"], **kwargs)


def test_bad_measure_lists():
    runs = runs_of([(0, "1", "a", 1.0)], names=("r",))
    qrels = qrels_of([("1", "a", 1)])
    with pytest.raises(ConfigError, match="requested twice"):
        evaluate(runs, qrels, ["AP", "AP(rel=1)"])
    with pytest.raises(ConfigError, match="no metrics"):
        evaluate(runs, qrels, [])
    with pytest.raises(ConfigError, match="did you mean 'nDCG'"):
        evaluate(runs, qrels, ["nDGC"])


# --- aggregation ------------------------------------------------------------------------------


def test_aggregate():
    x = np.array([[0.0, 0.5, 1.0], [0.2, 0.4, 0.8]])
    np.testing.assert_allclose(aggregate(x, "mean"), x.mean(axis=1))
    np.testing.assert_allclose(aggregate(x, "gmean"), np.exp(np.log(x + 1e-5).mean(axis=1)))
    np.testing.assert_allclose(aggregate(x, "gmean_trec")[0], (1e-5 * 0.5 * 1.0) ** (1 / 3))
    eps = 1e-3
    c = np.clip(x, eps, 1 - eps)
    np.testing.assert_allclose(aggregate(x, "logit_mean", eps=eps),
                               np.log(c / (1 - c)).mean(axis=1))
    np.testing.assert_allclose(aggregate(x, "mean", axis=0), x.mean(axis=0))
    with pytest.raises(ConfigError, match="unknown aggregate"):
        aggregate(x, "median")
    with pytest.raises(ConfigError, match="eps"):
        aggregate(x, "logit_mean", eps=0.7)


def test_grade_lookup_dense_and_binary_search_agree():
    from irsim.metrics.block import UNJUDGED
    from irsim.metrics.evaluate import _GradeLookup

    qkey, qgrade = np.array([3, 7, 10]), np.array([1, 2, -1])
    keys = np.array([0, 3, 7, 8, 10, 11])
    dense = _GradeLookup(qkey, qgrade, 12, budget=100)
    sparse = _GradeLookup(qkey, qgrade, 12, budget=0)
    assert dense.table is not None and sparse.table is None
    expected = [UNJUDGED, 1, 2, UNJUDGED, -1, UNJUDGED]
    assert dense(keys).tolist() == sparse(keys).tolist() == expected


def test_discount_factors_from_their_definitions():
    """irsim/metrics/block.py:67 ([1.0, 1.0, 0.6309, 0.5]) from the definitions: "log2"
    1/log2(r + 1) (trec_eval); "orig" 1 for r < b, else 1/log_b(r) (Jarvelin-Kekalainen)."""
    import math

    from irsim.metrics.block import discount

    ranks = np.arange(1, 12)
    assert [round(1 / math.log(r, 2), 4) if r >= 2 else 1.0 for r in (1, 2, 3, 4)] == [
        1.0, 1.0, 0.6309, 0.5]
    for b in (1.5, 2.0, 3.0, 10.0):
        want = [1.0 if r < b else 1 / math.log(r, b) for r in ranks]
        np.testing.assert_allclose(discount(ranks, "orig", b), want, rtol=1e-14)
    np.testing.assert_allclose(discount(ranks, "log2"), [1 / math.log2(r + 1) for r in ranks],
                               rtol=1e-14)


def test_measure_parameter_limits():
    """Cut-offs are integers >= 1; rel grades integers >= 0; gains finite numbers >= 0 (no
    bool, no inf), given as a dict or as (grade, gain) pairs."""
    assert Measure("P", 1).cutoff == 1
    for bad in (0, -1):
        with pytest.raises(ConfigError, match="cut-off must be a positive integer"):
            Measure("P", bad)
    assert str(Measure("P", 5, {"rel": 0})) == "P(rel=0)@5"
    with pytest.raises(ConfigError, match="rel must be an integer grade >= 0"):
        Measure("P", 5, {"rel": -1})
    for bad in (float("inf"), float("nan"), True, -1.0):
        with pytest.raises(ConfigError, match="gains values must be finite numbers >= 0"):
            Measure("nDCG", 10, {"gains": {1: bad}})
    pairs = Measure("nDCG", 10, {"gains": ((2, 9), (1, 3.0))})
    assert pairs == Measure("nDCG", 10, {"gains": {1: 3, 2: 9}})
    assert pairs.gains == {1: 3.0, 2: 9.0}


def test_rel_zero_counts_every_judged_document():
    """P(rel=0)@k: the share of the top k judged with any grade >= 0 (unjudged documents and
    grade -1 are not relevant), from the definition."""
    qrels = Qrels(np.array(["1"] * 4, dtype=object), np.array(["a", "b", "c", "d"], dtype=object),
                  np.array([0, 2, -1, 1], dtype=np.int64))
    runs = Runs(("r",), np.zeros(5, dtype=np.int32), np.array(["1"] * 5, dtype=object),
                np.array(["a", "x", "c", "b", "d"], dtype=object),
                np.array([5.0, 4.0, 3.0, 2.0, 1.0]))
    m = evaluate(runs, qrels, ["P(rel=0)@4", "P@4", "P(rel=2)@4"])
    # top 4: a (0), x (unjudged), c (-1), b (2)
    assert m.values[:, 0, 0].tolist() == [2 / 4, 1 / 4, 1 / 4]


def test_canonical_names_of_integral_gains():
    """Integral gains print as integers below 1e15 and in Python's float repr from 1e15 on;
    both forms parse back to the same measure."""
    small = Measure("nDCG", None, {"gains": {1: 999_999_999_999_999.0}})
    big = Measure("nDCG", None, {"gains": {1: 1e15}})
    assert str(small) == "nDCG(gains={1:999999999999999})"
    assert str(big) == "nDCG(gains={1:1000000000000000.0})"
    assert parse_measure(str(small)) == small and parse_measure(str(big)) == big


def test_available_measures_are_listed_case_insensitively():
    names = list(available_measures())
    assert names == sorted(names, key=str.lower) and names != sorted(names)
