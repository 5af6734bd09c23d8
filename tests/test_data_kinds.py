"""One way in for data (issue 44): every data kind, ``matrix`` and ``docs`` included, is a
:class:`irsim.registry.DataKind` with its two loaders, and both doors read the same data
through them; one input check serves :func:`irsim.metrics.evaluate` and
:func:`irsim.metrics.evaluate_many`.

Oracles: pytrec_eval's per-topic values (trec_eval 9.0.8's code) for the shipped DL 2019
runs, the file names and line counts of the run files, and each function's own message for
the other."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from conftest import dl19_files
from omegaconf import OmegaConf

from irsim import registry
from irsim.data import Qrels, Runs
from irsim.errors import ConfigError, InputError
from irsim.metrics import evaluate, evaluate_many

PAIR = ("colbert_monoelectra-large", "bm25base_p")
METRICS = {"AP": "map", "P@10": "P_10"}


def _cfg(files: list[str], qrels: str) -> object:
    return OmegaConf.create({"collection": {"kind": "trec", "runs": files, "qrels": qrels},
                             "metrics": list(METRICS), "quiet": True, "data_dir": None,
                             "offline": True})


def test_every_kind_is_a_loader_object_the_doors_call():
    kinds = registry.kinds()
    assert set(registry.DATA_KINDS) <= set(kinds)
    registry.get("assessors")  # declares runs_qrels_set
    for kind in registry.kinds().values():
        assert callable(kind.from_config) and callable(kind.from_python), kind.name
    assert {s.data for s in registry.studies()} <= set(registry.kinds())


def test_the_matrix_kind_reads_the_same_scores_in_both_doors():
    """Command line (``collection=trec``) and Python (``runs=``/``qrels=``) through the kind's
    two loaders: the same per-topic values, pytrec_eval's."""
    from test_run_names import pytrec_eval_per_topic

    files, qrels = dl19_files(PAIR, ("nist",))
    kind = registry.get("swap").kind
    config = registry.get("swap").config()
    cli = kind.from_config(_cfg(files, qrels["nist"]), config)
    py = kind.from_python(None, {**kind.keywords, "runs": files, "qrels": qrels["nist"],
                                 "metrics": list(METRICS)}, config)
    assert cli.systems == py.systems == PAIR and cli.metrics == py.metrics == tuple(METRICS)
    np.testing.assert_array_equal(cli.values, py.values)
    oracle = pytrec_eval_per_topic(PAIR)
    for mi, (metric, measure) in enumerate(METRICS.items()):
        for si, name in enumerate(PAIR):
            want = [oracle[name][t][measure] for t in py.topics]
            np.testing.assert_allclose(py.values[mi, si], want, rtol=0, atol=1e-12,
                                       err_msg=metric)


def test_the_docs_kind_reads_the_same_runs_in_both_doors():
    files, qrels = dl19_files(PAIR, ("nist",))
    kind = registry.get("corpus_ci").kind
    config = registry.get("corpus_ci").config()
    cli = kind.from_config(_cfg(files, qrels["nist"]), config)
    py = kind.from_python(None, {**kind.keywords, "runs": files, "qrels": qrels["nist"]},
                          config)
    lines = [sum(1 for ln in gzip.open(f, "rt") if ln.strip()) for f in files]
    for docs in (cli, py):
        assert docs.runs.names == tuple(Path(f).name[:-3] for f in files)
        assert len(docs.runs) == sum(lines)
        assert len(docs.qrels) == sum(1 for ln in open(qrels["nist"]) if ln.strip())
    with pytest.raises(ConfigError, match="reads runs and qrels: pass runs= and qrels="):
        kind.from_python(np.zeros(3), dict(kind.keywords), config)


def _runs() -> Runs:
    obj = lambda *s: np.array(s, dtype=object)  # noqa: E731
    return Runs(("bm25",), np.array([0, 0, 0], dtype=np.int32), topic=obj("t1", "t1", "t2"),
                docno=obj("a", "b", "c"), score=np.array([2.0, 1.0, 1.0]))


@pytest.mark.parametrize("qrels, keywords, message", [
    (("t1", "t1", "t2"), {"depth": 0}, "depth must be a positive integer or None, got 0"),
    (("t1", "t1", "t2"), {"missing": "skip"}, "unknown missing policy 'skip'"),
    (("t1", "t1", "t2"), {"max_cells": 0}, "max_cells must be a positive integer"),
    ((), {}, "qrels hold no judgments"),
    (("t1", "t1", "t2"), {"docno": ("a", "a", "c")},
     "duplicate judgment for topic 't1', docno 'a'"),
    (("t1", "t1", "t2"), {"grade": [1.0, 0.5, 1.0]}, "relevance grades must be integers"),
])
def test_evaluate_and_evaluate_many_share_one_input_check(qrels, keywords, message):
    """The same input gives the same error, naming the same qrels, in both functions."""
    keywords = dict(keywords)
    grade = np.asarray(keywords.pop("grade", [1] * len(qrels)))
    docnos = keywords.pop("docno", ("a", "b", "c")[:len(qrels)])
    q = Qrels(np.array(qrels, dtype=object), np.array(docnos, dtype=object), grade,
              source="nist.txt")
    errors = []
    for call in (lambda: evaluate(_runs(), q, ["AP"], **keywords),
                 lambda: evaluate_many(_runs(), {"nist": q}, ["AP"], **keywords)):
        with pytest.raises((ConfigError, InputError)) as info:
            call()
        errors.append(info.value)
    assert message in str(errors[0])
    assert str(errors[0]) == str(errors[1])
    assert type(errors[0]) is type(errors[1])
    if isinstance(errors[0], InputError):
        assert errors[0].file == errors[1].file == "nist.txt"


def test_a_qrels_without_a_source_is_named_by_its_key():
    q = Qrels(np.array(["t1"], dtype=object), np.array(["a"], dtype=object),
              np.array([0.5]))
    with pytest.raises(InputError) as info:
        evaluate_many(_runs(), {"llm": q}, ["AP"])
    assert info.value.file == "llm"
    with pytest.raises(InputError) as info:
        evaluate(_runs(), q, ["AP"])
    assert info.value.file == "qrels"
