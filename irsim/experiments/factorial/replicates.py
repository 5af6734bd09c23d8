"""Replicates supplied by the user: several qrels of the same topics (assessors), or
repeated runs (seeds, folds) of every system.

- ``replicates=qrels``: each qrels is a replicate crossed with systems and topics (assessor
  ``r`` judged every run's documents). Assessors often judge a subset of the topics; the
  analysis keeps the topics that every qrels, the collection's included, judges (the design
  must be balanced), evaluates every run once per qrels (:func:`irsim.metrics.evaluate_many`,
  one pass) and uses the collection's qrels for the two-way design on the same topics. Each
  qrels is used as it is: a document it does not judge is not relevant, as trec_eval counts
  it (assessors who judged fewer documents than NIST give systematically lower scores, which
  is the replicate main effect).
- ``replicates=collections``: each qrels of ``replicate_qrels`` is a collection of its own
  topics, judged for the same runs (TREC DL 2019 and 2020 with one set of runs): topics are
  nested in collections (design ``nested``; the collection's qrels is not used). The design
  needs as many topics in every collection: the first ``collection_topics`` topics of each
  (in topic order), or refused with the counts when they differ and none is given. The
  two-way design pools every collection's topics into one table.
- ``replicates=runs``: the run ``<system><sep><replicate>`` is a repetition of ``system``
  (another seed, another fold's model). Replicate ``r`` of one system has nothing to do with
  replicate ``r`` of another, so the replicates are nested in the cells (design
  ``replicated``; ``crossed`` is refused). Every system must have the same replicate names
  (refused, naming the first that differs: an unbalanced design); the two-way design takes
  each system's first replicate (in name order), the single run a user would submit.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from irsim.data.collection import DocCollection
from irsim.data.types import Qrels
from irsim.errors import ConfigError, InputError

__all__ = ["qrels_data", "runs_data", "collections_data", "split_run_names",
           "restrict_topics"]


def restrict_topics(q: Qrels, topics: set[str]) -> Qrels:
    """`q` without the judgments of topics outside `topics`.

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> q = Qrels(obj("1", "1", "2"), obj("a", "b", "c"), np.array([1, 0, 2]))
    >>> restrict_topics(q, {"2"}).docno.tolist()
    ['c']
    """
    keep = np.isin(q.topic, np.array(sorted(topics), dtype=object))
    return Qrels(q.topic[keep], q.docno[keep], q.grade[keep], source=q.source)


def _relevant(q: Qrels, topics: tuple[str, ...]) -> np.ndarray:
    rel = q.grade >= 1
    index = {t: i for i, t in enumerate(topics)}
    out = np.zeros(len(topics), np.int64)
    np.add.at(out, [index[t] for t in q.topic[rel]], 1)
    return out


def qrels_data(docs: DocCollection, metrics: list[str], files: Mapping[str, str]):
    """The scores of every run under the collection's qrels (two-way) and under each qrels
    of `files` (the replicates), on the topics all of them judge."""
    from irsim.data.trec import read_qrels
    from irsim.experiments.factorial import FactorialData
    from irsim.metrics import evaluate
    from irsim.metrics.shards import qrels_replicates

    sets = {str(name): read_qrels(path) for name, path in files.items()}
    common = set(docs.qrels.topic.tolist())
    for q in sets.values():
        common &= set(q.topic.tolist())
    if len(common) < 2:
        raise InputError(f"the qrels of replicate_qrels ({', '.join(sets)}) and the "
                         f"collection's judge {len(common)} topic(s) in common; the design "
                         "needs >= 2")
    sets = {n: restrict_topics(q, common) for n, q in sets.items()}
    # the runs' topics outside the common ones are left out (missing="drop"): by design
    whole = evaluate(docs.runs, restrict_topics(docs.qrels, common), metrics,
                     depth=docs.depth, missing="drop")
    reps, topics = qrels_replicates(docs.runs, sets, metrics, depth=docs.depth,
                                    missing="drop")
    if tuple(topics) != tuple(whole.topics):
        raise InputError("the replicate qrels keep other topics than the collection's qrels")
    relevant = np.stack([_relevant(q, tuple(topics)) for q in sets.values()], axis=1)
    return FactorialData(tuple(whole.metrics), tuple(whole.systems), tuple(whole.topics),
                         np.ascontiguousarray(whole.values, np.float64),
                         np.ascontiguousarray(reps, np.float64), relevant, tuple(sets))


def split_run_names(names: tuple[str, ...], sep: str
                    ) -> tuple[tuple[str, ...], tuple[str, ...], np.ndarray]:
    """Systems, replicate names and the ``(systems, replicates)`` index of every run,
    from names ``<system><sep><replicate>`` (split at the last `sep`).

    Examples
    --------
    >>> split_run_names(("a@1", "b@2", "a@2", "b@1"), "@")
    (('a', 'b'), ('1', '2'), array([[0, 2],
           [3, 1]]))
    """
    if not sep:
        raise ConfigError("replicate_separator must not be empty")
    parts = []
    for n in names:
        system, found, rep = n.rpartition(sep)
        if not found or not system or not rep:
            raise InputError(f"run {n!r} is not named <system>{sep}<replicate> "
                             f"(replicates=runs, replicate_separator={sep!r})")
        parts.append((system, rep))
    systems = tuple(dict.fromkeys(p[0] for p in parts))
    reps = {s: sorted(r for t, r in parts if t == s) for s in systems}
    first = reps[systems[0]]
    for s in systems:
        if reps[s] != first:
            raise InputError(f"system {s!r} has replicates {reps[s]}, {systems[0]!r} has "
                             f"{first}: every system needs the same replicates (an unbalanced "
                             "design is not analysed)")
    if len(first) < 2:
        raise InputError(f"replicates=runs needs >= 2 runs per system, got {len(first)}")
    where = {p: i for i, p in enumerate(parts)}
    index = np.array([[where[(s, r)] for r in first] for s in systems])
    return systems, tuple(first), index


def runs_data(docs: DocCollection, metrics: list[str], sep: str):
    """The scores of repeated runs: ``(metrics, systems, topics, replicates)``, and each
    system's first replicate as the two-way table."""
    from irsim.experiments.factorial import FactorialData
    from irsim.metrics import evaluate

    systems, reps, index = split_run_names(tuple(docs.runs.names), sep)
    whole = evaluate(docs.runs, docs.qrels, metrics, depth=docs.depth, missing=docs.missing)
    order = [whole.systems.index(docs.runs.names[i]) for i in index.ravel()]
    v = np.asarray(whole.values, np.float64)[:, order]  # (metrics, systems*reps, topics)
    v = v.reshape(len(whole.metrics), len(systems), len(reps), -1).transpose(0, 1, 3, 2)
    rel = _relevant(docs.qrels, tuple(whole.topics))
    return FactorialData(tuple(whole.metrics), systems, tuple(whole.topics),
                         np.ascontiguousarray(v[..., 0]), np.ascontiguousarray(v),
                         np.repeat(rel[:, None], len(reps), axis=1), reps, crossed=False)


def collections_data(docs: DocCollection, metrics: list[str], files: Mapping[str, str],
                     topics: int | None):
    """Every run evaluated on each collection (a qrels of its own topics): the replicated
    array holds ``(metrics, systems, topics, collections)`` (topic ``j`` of each collection,
    nested), the two-way table all topics pooled."""
    from irsim.data.trec import read_qrels
    from irsim.experiments.factorial import FactorialData
    from irsim.metrics import evaluate_many

    sets = {str(name): read_qrels(path) for name, path in files.items()}
    seen: dict[str, str] = {}
    for name, q in sets.items():
        for t in sorted(set(q.topic.tolist())):
            if t in seen:
                raise InputError(f"collections {seen[t]!r} and {name!r} share topic {t!r}: "
                                 "topics nested in collections must be their own")
            seen[t] = name
    counts = {n: len(set(q.topic.tolist())) for n, q in sets.items()}
    n = min(counts.values()) if topics is None else int(topics)
    if topics is None and len(set(counts.values())) > 1:
        raise InputError(f"the collections have {counts} topics; the nested design needs as "
                         f"many in each: set collection_topics (e.g. {n}) to use the first "
                         "that many of each")
    if n > min(counts.values()) or n < 2:
        raise InputError(f"collection_topics={n}: the collections have {counts} topics "
                         "(need 2 <= collection_topics <= the fewest)")
    sets = {name: restrict_topics(q, set(sorted(set(q.topic.tolist()))[:n]))
            for name, q in sets.items()}
    out = evaluate_many(docs.runs, sets, metrics, depth=docs.depth, missing="drop")
    v = np.stack([np.asarray(out[name].values, np.float64) for name in sets], axis=-1)
    first = out[next(iter(sets))]
    pooled = np.concatenate([np.asarray(out[name].values, np.float64) for name in sets],
                            axis=-1)
    names = tuple(f"{c}/{t}" for c in sets for t in out[c].topics)
    relevant = np.stack([_relevant(q, tuple(out[c].topics)) for c, q in sets.items()],
                        axis=1)
    return FactorialData(tuple(first.metrics), tuple(first.systems), names,
                         np.ascontiguousarray(pooled), np.ascontiguousarray(v), relevant,
                         tuple(sets), crossed=False, nested=True)
