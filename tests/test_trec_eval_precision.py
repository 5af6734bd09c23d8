"""``scores="float32"`` ranks run files as trec_eval <= 9.0.8 and pytrec_eval (which embeds
9.0.8's code) do (issue 29): scores are read in single precision (their ``float sim``), so
scores that differ only beyond float32 tie and the tie goes by docno descending;
``scores="float64"``, the default, ranks by every digit as trec_eval 10.0 does (its ``double
sim``; tested against the binary in tests/test_trec_eval_binary.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")

import irsim  # noqa: E402
from irsim.data.trec import read_runs  # noqa: E402
from irsim.errors import ConfigError  # noqa: E402

MEASURES = {"map": "AP", "P_10": "P@10", "recip_rank": "RR", "ndcg_cut_10": "nDCG@10"}


def _write(tmp_path, rows: list[tuple[str, str, float]], qrels: dict) -> tuple:
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q} Q0 {d} {i + 1} {s!r} tag\n" for i, (q, d, s) in
                           enumerate(rows)))
    qf = tmp_path / "qrels.txt"
    qf.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                          for d, g in docs.items()))
    return run, qf


def _pytrec(rows, qrels) -> dict:
    run: dict = {}
    for q, d, s in rows:
        run.setdefault(q, {})[d] = s
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P", "recip_rank", "ndcg_cut"})
    return ev.evaluate(run)


def _compare(tmp_path, rows, qrels, scores="float32"):
    run, qf = _write(tmp_path, rows, qrels)
    runs = read_runs([run], scores=scores)
    got = irsim.evaluate(runs, str(qf), list(MEASURES.values()), depth=None)
    want = _pytrec(rows, qrels)
    return got, want


def test_scores_equal_in_float32_tie_as_in_trec_eval(tmp_path):
    qrels = {"1": {"a": 1, "b": 0}}
    rows = [("1", "a", 1000000001.0), ("1", "b", 1000000000.0)]
    got, want = _compare(tmp_path, rows, qrels)
    assert want["1"]["recip_rank"] == 0.5  # trec_eval: a tie, b (docno descending) first
    assert float(got.loc[got.metric == "RR", "value"].iloc[0]) == 0.5
    got64, _ = _compare(tmp_path, rows, qrels, scores="float64")
    assert float(got64.loc[got64.metric == "RR", "value"].iloc[0]) == 1.0


def test_saturated_scores_many_digits_equal_pytrec_eval(tmp_path):
    """Sigmoid scores saturated near 1 (many differ only beyond float32) on 20 topics."""
    rng = np.random.default_rng(5)
    qrels, rows = {}, []
    for t in range(20):
        q = str(300 + t)
        docs = [f"d{t}-{i:03d}" for i in range(60)]
        qrels[q] = {d: int(g) for d, g in zip(docs, rng.choice([0, 0, 1, 2], 60), strict=True)}
        logits = rng.normal(22.0, 1.5, 60)  # 1 / (1 + e^-22): ties in float32, not float64
        for d, z in zip(docs, logits, strict=True):
            rows.append((q, d, float(1.0 / (1.0 + np.exp(-z)))))
    got, want = _compare(tmp_path, rows, qrels)
    ties = len(rows) - len({(q, np.float32(s)) for q, _, s in rows})
    assert ties > 100  # the case exercises float32 ties
    for trec, name in MEASURES.items():
        mine = got[got.metric == name].set_index("topic")["value"]
        for q in qrels:
            assert mine[q] == pytest.approx(want[q][trec], abs=1e-12), (name, q)


def test_unknown_precision_is_a_config_error(tmp_path):
    run, _ = _write(tmp_path, [("1", "a", 1.0)], {"1": {"a": 1}})
    with pytest.raises(ConfigError, match="float32"):
        read_runs([run], scores="double")
