"""Replicates as data: every run evaluated on each of k document shards, or under several
qrels, as a ``(metrics, systems, topics, replicates)`` array.

Document shards (Voorhees, Samarov & Soboroff, TOIS 2017): the collection's documents are
split into ``k`` shards by the MD5 of the docno (:func:`md5_shards`; with ``k = 2`` shard 0
is the half A of Cormack & Lynam's split that :func:`irsim.stats.corpus_ap.md5_half` makes,
and a salt gives another split, as :func:`irsim.stats.corpus_ap.split_salt`). A run on shard
``j`` is the run's ranked list (cut at `depth` on the whole collection first) restricted to
shard ``j``'s documents; the qrels are restricted the same way. :func:`shard_scores`
evaluates every shard in one :func:`irsim.metrics.evaluate` call over the parsed runs: the
rows keep their docno codes and each (topic, shard) becomes one topic of the evaluation (no
re-parse, no per-shard pass).

Several qrels as replicates (assessors): :func:`qrels_replicates` stacks
:func:`irsim.metrics.evaluate_many` (one pass for all qrels).

Examples
--------
>>> md5_shards(["d1-1", "d1-2", "FBIS3-1"], 3).tolist()
[2, 1, 0]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError
from irsim.metrics.evaluate import evaluate
from irsim.metrics.measures import Measure
from irsim.metrics.multi import evaluate_many
from irsim.sampling.corpus import md5_shards

__all__ = ["ShardScores", "shard_scores", "qrels_replicates"]

#: Joins a topic id and a shard number in the topics of the one evaluation (below any
#: printable character, so the joined ids sort as their topics do).
_SEP = "\x1f"


@dataclass(frozen=True)
class ShardScores:
    """Per-topic scores of every run on every shard.

    Attributes
    ----------
    values : ndarray, shape (metrics, systems, topics, shards)
    metrics, runs, topics : tuple of str
    shards : int
    salt : str
    relevant : ndarray of int, shape (topics, shards)
        Relevant documents (grade >= 1) of each topic in each shard; a cell with none
        scores 0 for every run (as trec_eval scores a topic without relevant documents).
    """

    values: np.ndarray
    metrics: tuple[str, ...]
    runs: tuple[str, ...]
    topics: tuple[str, ...]
    shards: int
    salt: str
    relevant: np.ndarray

    def metric(self, name: str) -> np.ndarray:
        """The ``(systems, topics, shards)`` array of one metric."""
        if name not in self.metrics:
            raise ConfigError(f"unknown metric {name!r}; have {', '.join(self.metrics)}")
        return self.values[self.metrics.index(name)]


def _cut(runs: Runs, depth: int | None) -> np.ndarray:
    """Rows of `runs` within the first `depth` ranks of their list (trec_eval's ranking:
    score descending, docno descending)."""
    if depth is None:
        return np.arange(len(runs))
    tcode, _ = runs.topic_codes()
    dcode, _ = runs.docno_codes()
    score = np.asarray(runs.score, dtype=np.float32 if runs.precision == "float32"
                       else np.float64)
    order = np.lexsort((-dcode, -score, tcode, runs.run))
    g_run, g_top = runs.run[order], tcode[order]
    start = np.r_[True, (g_run[1:] != g_run[:-1]) | (g_top[1:] != g_top[:-1])]
    first = np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))
    rank = np.arange(len(order)) - first
    return np.sort(order[rank < int(depth)])


def _joined(topics: np.ndarray, shard: np.ndarray, k: int) -> np.ndarray:
    width = len(str(k - 1))
    return np.array([f"{t}{_SEP}{j:0{width}d}" for t, j in zip(topics, shard, strict=True)],
                    dtype=object)


def shard_scores(runs: Runs, qrels: Qrels, measures: Iterable[str | Measure] | str | Measure,
                 k: int, *, salt: str = "", depth: int | None = 1000,
                 max_cells: int = 1 << 21) -> ShardScores:
    """Every run evaluated on each of `k` document shards, in one evaluation.

    Parameters
    ----------
    runs : Runs
        Parsed once (e.g. :func:`irsim.data.trec.read_runs`); their docno codes are reused.
    qrels : Qrels
    measures : str, Measure or iterable of them
        As :func:`irsim.metrics.evaluate`.
    k : int
        Shards (>= 2).
    salt : str
        Prefixed to the docno before hashing (:func:`md5_shards`).
    depth : int or None
        Each list is cut at `depth` on the whole collection, then split (a shard's list is
        what the run retrieved of that shard).
    max_cells : int
        As :func:`irsim.metrics.evaluate`.

    Returns
    -------
    ShardScores
        Topics: the qrels topics with a relevant document (sorted as strings); a run that
        retrieved nothing of a (topic, shard) scores 0 there (trec_eval ``-c``).

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> qrels = Qrels(obj("t1", "t1", "t1", "t1"), obj("a", "b", "c", "d"), np.ones(4, int))
    >>> runs = Runs(("r",), np.zeros(4, np.int32), obj("t1", "t1", "t1", "t1"),
    ...             obj("a", "b", "c", "x"), np.array([4.0, 3.0, 2.0, 1.0]))
    >>> md5_shards(["a", "b", "c", "d", "x"], 2).tolist()
    [0, 1, 0, 1, 1]
    >>> s = shard_scores(runs, qrels, "P@2", 2)
    >>> s.values.shape, s.metric("P@2").tolist(), s.relevant.tolist()
    ((1, 1, 1, 2), [[[1.0, 0.5]]], [[2, 2]])
    """
    if isinstance(k, bool) or int(k) != k or int(k) < 2:
        raise ConfigError(f"shards must be an integer >= 2, got {k!r}")
    if depth is not None and (isinstance(depth, bool) or int(depth) < 1):
        raise ConfigError(f"depth must be a positive integer or None, got {depth!r}")
    k = int(k)
    rows = _cut(runs, depth)
    tcode, tvocab = runs.topic_codes()
    dcode, dvocab = runs.docno_codes()
    doc_shard = md5_shards(dvocab, k, salt)
    # (topic, shard) -> one topic of the evaluation, its vocabulary sorted as the readers'
    joint = tcode[rows] * k + doc_shard[dcode[rows]]
    used, inverse = np.unique(joint, return_inverse=True)
    names = _joined(tvocab[used // k], used % k, k)
    order = np.argsort(names.astype(str), kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    cut = Runs.from_codes(runs.names, runs.run[rows], (rank[inverse], names[order]),
                          (dcode[rows], dvocab), np.asarray(runs.score)[rows], runs.sources,
                          runs.precision, unique=runs.unique_lists)
    q_topic = np.asarray(qrels.topic, dtype=object)
    q_shard = md5_shards(np.asarray(qrels.docno, dtype=object), k, salt)
    q = Qrels(_joined(q_topic, q_shard, k), qrels.docno, qrels.grade, qrels.source)
    m = evaluate(cut, q, measures, depth=None, missing="zero", max_cells=max_cells)
    return _assemble(m, q_topic, q_shard, np.asarray(qrels.grade), k, salt)


def _assemble(m: object, q_topic: np.ndarray, q_shard: np.ndarray, grade: np.ndarray, k: int,
              salt: str) -> ShardScores:
    """The ``(metrics, systems, topics, shards)`` array from the joined topics' scores."""
    rel = grade >= 1
    topics = np.array(sorted(set(q_topic[rel].tolist())), dtype=object)
    if not len(topics):
        raise InputError("no qrels topic has a relevant document: nothing to evaluate")
    t_index = {t: i for i, t in enumerate(topics)}
    relevant = np.zeros((len(topics), k), dtype=np.int64)
    for t, j in zip(q_topic[rel], q_shard[rel], strict=True):
        relevant[t_index[t], j] += 1
    values = np.zeros((len(m.metrics), len(m.systems), len(topics), k))
    for col, name in enumerate(m.topics):
        topic, j = str(name).rsplit(_SEP, 1)
        if topic in t_index:
            values[:, :, t_index[topic], int(j)] = m.values[:, :, col]
    return ShardScores(values, tuple(m.metrics), tuple(m.systems), tuple(str(t) for t in topics),
                       k, str(salt), relevant)


def qrels_replicates(runs: Runs, qrels: Mapping[str, Qrels],
                     measures: Iterable[str | Measure] | str | Measure, *,
                     depth: int | None = 1000, missing: str = "error"
                     ) -> tuple[np.ndarray, tuple[str, ...]]:
    """Several qrels of the same topics as replicates: ``(metrics, systems, topics, qrels)``
    from :func:`irsim.metrics.evaluate_many` (one pass for all qrels), and the topics.

    Refused (one line) when the qrels keep different topics: the design would be
    unbalanced.

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> a = Qrels(obj("t1", "t2"), obj("a", "c"), np.array([1, 1]))
    >>> b = Qrels(obj("t1", "t2"), obj("b", "c"), np.array([1, 1]))
    >>> runs = Runs(("r", "s"), np.array([0, 0, 1, 1], np.int32), obj("t1", "t2", "t1", "t2"),
    ...             obj("a", "c", "b", "c"), np.ones(4))
    >>> v, topics = qrels_replicates(runs, {"a": a, "b": b}, "P@1")
    >>> v.shape, v[0, :, 0, :].tolist()
    ((1, 2, 2, 2), [[1.0, 0.0], [0.0, 1.0]])
    """
    out = evaluate_many(runs, qrels, measures, depth=depth, missing=missing)
    names = list(out)
    first = out[names[0]].topics
    for n in names[1:]:
        if tuple(out[n].topics) != tuple(first):
            diff = sorted(set(first) ^ set(out[n].topics))
            raise InputError(f"qrels {n!r} keeps other topics than {names[0]!r} "
                             f"({len(diff)} differ, e.g. {diff[0]!r}): unbalanced replicates")
    return np.stack([out[n].values for n in names], axis=-1), tuple(first)
