"""The typed top level and collections of the Hydra config.

:class:`IrsimConfig` is the top level (``conf/config.yaml`` extends it); each kind of
collection is one dataclass (:data:`COLLECTIONS`, by ``kind``), the base that every
``conf/collection/<name>.yaml`` of that kind extends (``defaults: [base_<kind>, _self_]``).
With the engines (:mod:`irsim.engine.config`) and the experiments' ``Config`` they make
every node of the config typed, so Hydra and OmegaConf refuse a misspelt key or a value of
the wrong type themselves (:func:`irsim.conf.check_keys` turns their refusal into one line).

One dataclass per kind (not one with every key optional): a key of another kind
(``collection.systems`` on a ``trec`` collection) is refused instead of being ignored.
Values the loaders check themselves with a more useful message (files, globs, lists of
files, qrels by assessor) are typed ``Any``.

Examples
--------
>>> sorted(COLLECTIONS)
['matrix', 'synthetic_scores', 'synthetic_trec', 'trec']
>>> TrecCollection().depth, MatrixCollection().paths is None
(1000, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["IrsimConfig", "MatrixCollection", "TrecCollection", "SyntheticTrecCollection",
           "SyntheticScoresCollection", "COLLECTIONS"]


def _help(text: str, default: Any = None) -> Any:
    return field(default=default, metadata={"help": text})


@dataclass
class IrsimConfig:
    """The top-level keys of the irsim config (``conf/config.yaml``: their defaults; the
    groups ``collection``, ``experiment`` and ``engine`` are typed by their options)."""

    seed: Any = _help("seed of every random draw (an integer >= 0; checked by "
                      "irsim.rng.check_seed)", 0)
    metrics: list[str] | None = _help("metrics to study; null = the collection's default list "
                                      "(for a score matrix: all its metrics)")
    data_dir: str | None = _help("where named collections are found / downloaded; null = "
                                 "$IRSIM_DATA_DIR or ~/.cache/irsim")
    offline: bool = _help("never download anything (collections must already be in "
                          "data_dir)", False)
    quiet: bool = _help("no progress bars (logs still go to the run dir)", False)
    command: str = _help("internal: run (a study) or evaluate (irsim evaluate)", "run")
    collection: Any = None
    experiment: Any = None
    engine: Any = None


@dataclass
class _Collection:
    kind: str = ""
    name: str = ""
    description: str = ""
    default_metrics: list[str] | None = _help("metrics studied when the top-level metrics is null")


@dataclass
class MatrixCollection(_Collection):
    """Per-topic score matrices from files (``conf/collection/matrix.yaml``), one
    collection or several (``paths: {METRIC: [file, ...]}``, ``collections: [...]``)."""

    kind: str = "matrix"
    name: str = "matrix"
    path: Any = _help("one score matrix file (Urbano CSV with metric, or long CSV/Parquet)")
    metric: str | None = _help("the metric of an Urbano CSV given by path")
    paths: Any = _help("{METRIC: file | {file, url, sha256} | [file, ...] | {name: file}}")
    collections: Any = _help("registered score-matrix collections, each studied")


@dataclass
class TrecCollection(_Collection):
    """TREC run files and qrels (``conf/collection/trec.yaml``)."""

    kind: str = "trec"
    name: str = "trec"
    runs: Any = _help("a directory, a glob, a file or a list of them")
    qrels: Any = _help("a qrels file, or {assessor: file} for several assessors")
    run_names: str = _help("runs named by file name (without .gz and a results extension) "
                           "or by tag: file | tag", "file")
    depth: int = _help("documents per ranked list irsim evaluates: 1000 is trec_eval "
                       "-M1000; a depth >= the longest list is trec_eval without -M", 1000)
    scores: str = _help("run scores ranked as float64 (trec_eval 10.0) or float32 "
                        "(trec_eval <= 9.0.8, pytrec_eval)", "float64")
    missing: str = _help("a topic in runs but not qrels (or the reverse): error | zero | "
                         "drop", "error")


@dataclass
class SyntheticTrecCollection(_Collection):
    """A seeded document-level collection (``conf/collection/synthetic.yaml``)."""

    kind: str = "synthetic_trec"
    name: str = "synthetic"
    runs: int = 20
    topics: int = 50
    docs_per_topic: int = 1000
    depth: int = 1000
    quality_low: float | None = 0.5
    quality_high: float | None = 1.5
    quality_sd: float = 0.4
    topic_sd: float = 0.8
    relevant_rate: float = 0.05
    seed: int = 0


@dataclass
class SyntheticScoresCollection(_Collection):
    """A seeded score-level collection (``conf/collection/synthetic_scores.yaml``)."""

    kind: str = "synthetic_scores"
    name: str = "synthetic_scores"
    systems: int = 30
    topics: int = 50
    seed: int = 0


#: The collection schemas by ``kind`` (stored as ``collection/base_<kind>``).
COLLECTIONS: dict[str, type] = {
    "matrix": MatrixCollection, "trec": TrecCollection,
    "synthetic_trec": SyntheticTrecCollection, "synthetic_scores": SyntheticScoresCollection}
