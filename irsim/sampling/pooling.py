"""Pools of depth k (TREC pooling) and qrels restricted to a pool.

The pool of depth ``k`` of a topic is the union of the top ``k`` documents of every run for
that topic, each run ranked as trec_eval ranks it (score descending, ties by docno
descending). Assessors judge every pooled document: :func:`pooled_qrels` keeps the grades
of pooled documents, gives pooled documents absent from the qrels grade 0, and drops every
judgment outside the pool, so metrics recomputed on it are those a depth-k collection would
give (Sanderson & Zobel 2005, Section 4; METHODS.md section 4, assessor effort).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError

__all__ = ["Pool", "pool_runs", "pooled_qrels"]


@dataclass(frozen=True)
class Pool:
    """Pooled documents, one row per (topic, docno), sorted by topic then docno.

    Attributes
    ----------
    depth : int
    topic, docno : ndarray of str (object dtype)
    """

    depth: int
    topic: np.ndarray
    docno: np.ndarray

    def __len__(self) -> int:
        return len(self.docno)

    def sizes(self) -> dict[str, int]:
        """Pooled documents per topic (the judging effort of each topic).

        Examples
        --------
        >>> p = Pool(2, np.array(["1", "1", "2"], dtype=object),
        ...          np.array(["a", "b", "c"], dtype=object))
        >>> p.sizes()
        {'1': 2, '2': 1}
        """
        topics, counts = np.unique(self.topic.astype(str), return_counts=True)
        return {str(t): int(c) for t, c in zip(topics, counts, strict=True)}


def pool_runs(runs: Runs, depth: int) -> Pool:
    """The pool of depth `depth`: per topic, the union of every run's top `depth` documents.

    Parameters
    ----------
    runs : Runs
    depth : int
        Pool depth k (>= 1).

    Returns
    -------
    Pool

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> runs = Runs(("r1", "r2"), np.array([0, 0, 0, 1, 1, 1], dtype=np.int32),
    ...             topic=obj("1", "1", "1", "1", "1", "1"),
    ...             docno=obj("a", "b", "c", "c", "d", "a"),
    ...             score=np.array([3.0, 2.0, 1.0, 5.0, 5.0, 1.0]))
    >>> p = pool_runs(runs, 1)      # r2: c and d tie at 5.0; docno descending puts d first
    >>> p.docno.tolist()
    ['a', 'd']
    >>> pool_runs(runs, 2).docno.tolist()
    ['a', 'b', 'c', 'd']
    """
    if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or depth < 1:
        raise ConfigError(f"pool depth must be an integer >= 1, got {depth!r}")
    if len(runs) == 0:
        raise InputError("no runs to pool")
    run = np.asarray(runs.run, dtype=np.int64)
    tcode, topics = pd.factorize(np.asarray(runs.topic, dtype=object), sort=True)
    dcode, vocab = runs.docno_codes()
    score = np.asarray(runs.score, dtype=np.float64)
    # rows grouped by (run, topic), each list in trec_eval order: score desc, docno desc
    order = np.lexsort((-dcode, -score, tcode, run))
    group = (run * len(topics) + tcode)[order]
    start = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    rank = np.arange(len(order)) - np.repeat(start, np.diff(np.r_[start, len(order)]))
    top = order[rank < depth]
    key = np.unique(tcode[top].astype(np.int64) * max(len(vocab), 1) + dcode[top])
    t, d = np.divmod(key, max(len(vocab), 1))
    topic_ids = np.asarray(topics, dtype=object)
    return Pool(int(depth), topic_ids[t], np.asarray(vocab, dtype=object)[d])


def pooled_qrels(qrels: Qrels, pool: Pool, *, source: str | None = None) -> Qrels:
    """Judgments of the pooled documents: grades from `qrels`, 0 for pooled documents the
    qrels lack; judgments outside the pool and pooled topics absent from `qrels` dropped.

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> q = Qrels(obj("1", "1", "1"), obj("a", "b", "x"), np.array([1, 2, 1]))
    >>> p = Pool(1, obj("1", "1", "2"), obj("a", "d", "e"))
    >>> pq = pooled_qrels(q, p)
    >>> pq.topic.tolist(), pq.docno.tolist(), pq.grade.tolist()
    (['1', '1'], ['a', 'd'], [1, 0])
    """
    judged = pd.DataFrame({"topic": np.asarray(qrels.topic, dtype=object),
                           "docno": np.asarray(qrels.docno, dtype=object),
                           "grade": np.asarray(qrels.grade, dtype=np.int64)})
    pooled = pd.DataFrame({"topic": pool.topic, "docno": pool.docno})
    pooled = pooled[pooled.topic.isin(set(judged.topic.tolist()))]
    merged = pooled.merge(judged, on=["topic", "docno"], how="left", validate="one_to_many")
    grade = merged.grade.fillna(0).to_numpy().astype(np.int64)
    src = source or f"{qrels.source or 'qrels'} restricted to the depth-{pool.depth} pool"
    return Qrels(merged.topic.to_numpy(dtype=object), merged.docno.to_numpy(dtype=object),
                 grade, source=src)
