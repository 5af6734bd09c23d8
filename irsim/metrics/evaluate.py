"""Runs + qrels -> ScoreMatrix (metric x run x topic), vectorised over runs and topics.

Pipeline (no Python loop over runs, topics or ranks):

1. Factorise topics (run-length compressed, then ``pandas.factorize``; runs read from
   files come with topic codes, and only their vocabulary is factorised with the qrels')
   and docnos (a pyarrow dictionary encoding, codes ordered as the strings, cached on the
   Runs by :meth:`~irsim.data.types.Runs.docno_codes` or given by the reader; qrels docnos
   are looked up in it). Runs read from files are never turned into Python strings.
2. Choose the topics (``missing`` policy); check that no judgment is repeated.
3. One ``argsort`` of a packed int64 key (run-topic list, docno descending) makes every
   list contiguous and puts a repeated docno next to itself (``np.lexsort`` when the key
   would overflow). Runs read from files skip it: their lists are contiguous and checked
   by the reader, and when each is in score order (as run files are written) only its
   runs of tied scores are put in docno-descending order.
4. Chunks of lists (grouped by length, about ``max_cells`` cells each) are padded and
   sorted row-wise by score descending with a stable sort, so ties keep the docno
   descending order: trec_eval's ranking (rows already in that order are not sorted).
   Lists are cut at ``depth`` and grades looked up in a dense (topic, docno) table
   (binary search on sorted keys when it would be big).
5. Every measure is array arithmetic on a block (see :mod:`irsim.metrics.block`).

Topics
------
A topic with no relevant document in the qrels is scored 0 by every measure, as trec_eval
does (it evaluates every topic present in both the run and the qrels, and ``-c`` averages
over all qrels topics). ``missing`` decides which topics are kept:

``"error"`` (default)
    A run topic absent from the qrels, or a qrels topic with a relevant document (grade
    >= 1) absent from a run, is an :class:`~irsim.errors.InputError` naming the run file
    and the topic. Topics kept: those with a relevant document plus every judged topic
    some run retrieved; a run that lacks a judged topic without relevant documents scores
    0 there (exactly what it would score).
``"zero"``
    trec_eval ``-c``: every qrels topic; a run missing one scores 0; run topics without
    qrels are dropped. A run with no topic at all in the qrels is an
    :class:`~irsim.errors.InputError` (it would score 0 everywhere: a run and qrels that do
    not belong together).
``"drop"``
    Only the topics retrieved by every run and present in the qrels.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from irsim.data.matrix import ScoreMatrix
from irsim.data.trec import trec_eval_scores
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError, unknown_name
from irsim.metrics.block import UNJUDGED, Block, Ideal
from irsim.metrics.measures import Measure, parse_measure
from irsim.metrics.ranking import rank_keys, rank_order, ranked_rows

__all__ = ["evaluate", "check_inputs", "Inputs"]

log = logging.getLogger(__name__)

_MISSING = ("error", "zero", "drop")


def _measures(measures: Iterable[str | Measure] | str | Measure) -> list[Measure]:
    if isinstance(measures, str | Measure):
        measures = [measures]
    ms = [parse_measure(m) for m in measures]
    if not ms:
        raise ConfigError("no metrics given")
    names = [str(m) for m in ms]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ConfigError(f"metric {dup!r} requested twice")
    return ms


def _run_file(runs: Runs, s: int) -> str:
    if len(runs.sources) == len(runs.names) and runs.sources[s]:
        return runs.sources[s]
    return f"run {runs.names[s]!r}"


def _factorize_strings(*arrays: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Joint codes of object string arrays, codes ordered like the sorted unique values.

    Runs of equal neighbours are compressed first (topic columns are grouped in practice),
    so only the run heads are hashed.
    """
    heads, lens = [], []
    for a in arrays:
        if len(a) == 0:
            heads.append(a[:0])
            lens.append(np.zeros(0, dtype=np.int64))
            continue
        starts = np.flatnonzero(np.concatenate([[True], a[1:] != a[:-1]]))
        heads.append(a[starts])
        lens.append(np.diff(np.append(starts, len(a))))
    try:
        codes, uniques = pd.factorize(np.concatenate(heads), sort=True)
    except TypeError:  # unorderable mix of types
        raise InputError("topic ids must be strings") from None
    out, at = [], 0
    for h, n in zip(heads, lens, strict=True):
        out.append(np.repeat(codes[at:at + len(h)], n))
        at += len(h)
    return out, np.asarray(uniques, dtype=object)


def _column_len(runs: Runs, name: str) -> int:
    """Rows of the column `name` of `runs` (from its codes when it has not been built)."""
    lazy = getattr(runs, "_lazy", None)
    if lazy is not None and lazy(name):
        return len(runs.__dict__[f"_{name}_codes"][0])
    return len(getattr(runs, name))


def topic_factors(runs: Runs, *qrels_topics: np.ndarray
                  ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Topic codes of the runs' rows and of each qrels' rows into the sorted union of their
    topic ids (one place for :func:`evaluate` and
    :func:`irsim.metrics.multi.evaluate_many`): ``(run codes, [qrels codes], topics)``.

    Runs given as codes (:meth:`~irsim.data.types.Runs.from_codes`, what the readers
    return) factorise their vocabulary only; other runs their topic column.
    """
    lazy = getattr(runs, "_lazy", None)
    if lazy is not None and lazy("topic"):
        rcode, rvocab = runs.topic_codes()
        factor, topics = _factorize_strings(rvocab, *qrels_topics)
        return factor[0][rcode], factor[1:], topics
    factor, topics = _factorize_strings(np.asarray(runs.topic, dtype=object), *qrels_topics)
    return factor[0], factor[1:], topics


@dataclass(frozen=True)
class Inputs:
    """Runs and qrels as :func:`check_inputs` checked them: what :func:`evaluate` and
    :func:`irsim.metrics.multi.evaluate_many` read.

    Attributes
    ----------
    measures : tuple of Measure
    depth : int or None
    missing : str
    max_cells : int
    qrels : tuple of Qrels
        Each qrels, named for messages (its source, else its name when it was given one).
    sources : tuple of str
        What messages call each qrels (its source, else its name, else ``"qrels"``).
    grades : tuple of ndarray
        Each qrels' grades as int64.
    run, score : ndarray
        Per run row: the run's index and its score (single-precision ties as trec_eval
        <= 9.0.8 reads them when ``Runs.precision == "float32"``).
    rt : ndarray
        Per run row: its topic code into `topics`.
    qts : tuple of ndarray
        Per qrels row: its topic code into `topics`.
    topics : ndarray
        The sorted union of the topic ids (strings).
    rd : ndarray
        Per run row: its docno code into `vocab`.
    vocab : ndarray
        The runs' docnos, sorted.
    """

    measures: tuple[Measure, ...]
    depth: int | None
    missing: str
    max_cells: int
    qrels: tuple[Qrels, ...]
    sources: tuple[str, ...]
    grades: tuple[np.ndarray, ...]
    run: np.ndarray
    score: np.ndarray
    rt: np.ndarray
    qts: tuple[np.ndarray, ...]
    topics: np.ndarray
    rd: np.ndarray
    vocab: np.ndarray

    @property
    def n_doc(self) -> int:
        """Docno codes (at least 1)."""
        return max(len(self.vocab), 1)


def check_inputs(runs: Runs, qrels: Sequence[Qrels], measures: Iterable[str | Measure] | str
                 | Measure, *, depth: int | None, missing: str, max_cells: int,
                 names: Sequence[str] | None = None) -> Inputs:
    """The one input check of :func:`evaluate` and
    :func:`irsim.metrics.multi.evaluate_many`: the measures, `depth`, `missing` and
    `max_cells`, the runs (columns, run indices, empty runs, non-finite scores), each qrels
    (columns, no judgment, integer grades), topic ids and docnos (strings); then the topics
    and docnos factorised once for all qrels.

    Parameters
    ----------
    runs : Runs
    qrels : sequence of Qrels
        At least one.
    measures, depth, missing, max_cells
        As :func:`evaluate`.
    names : sequence of str, optional
        The qrels' names (messages name a qrels without a source by it); None: one qrels
        called ``qrels``.

    Raises
    ------
    InputError, ConfigError
        As :func:`evaluate`.

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> qrels = Qrels(obj("t1", "t2"), obj("a", "c"), np.array([1, 1]))
    >>> runs = Runs(("bm25",), np.array([0, 0], dtype=np.int32), topic=obj("t1", "t2"),
    ...             docno=obj("a", "b"), score=np.array([2.0, 1.0]))
    >>> check_inputs(runs, [qrels], "AP", depth=1000, missing="error",
    ...              max_cells=1 << 21).topics.tolist()
    ['t1', 't2']
    >>> check_inputs(runs, [qrels], "AP", depth=0, missing="error", max_cells=1)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: depth must be a positive integer or None, got 0
    """
    ms = _measures(measures)
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int | np.integer)
                              or depth < 1):
        raise ConfigError(f"depth must be a positive integer or None, got {depth!r}")
    if missing not in _MISSING:
        raise unknown_name("missing policy", str(missing), _MISSING)
    if not isinstance(max_cells, int | np.integer) or max_cells < 1:
        raise ConfigError(f"max_cells must be a positive integer, got {max_cells!r}")
    run, score = _check_runs(runs)
    named, srcs, grades = [], [], []
    for i, q in enumerate(qrels):
        name = "qrels" if names is None else str(names[i])
        srcs.append(q.source or name)
        named.append(q if q.source or names is None else
                     Qrels(q.topic, q.docno, q.grade, source=name))
        grades.append(_check_qrels(q, srcs[-1]))
    rt, qts, topics = topic_factors(runs, *(np.asarray(q.topic, dtype=object) for q in qrels))
    if not all(isinstance(t, str) for t in topics.tolist()):
        raise InputError("topic ids must be strings", file=srcs[0])
    try:
        rd, vocab = runs.docno_codes()
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise InputError("docno values must be strings", file=_run_file(runs, 0)) from None
    return Inputs(tuple(ms), depth, missing, int(max_cells), tuple(named), tuple(srcs),
                  tuple(grades), run, score, rt, tuple(qts), topics, rd, vocab)


def _check_runs(runs: Runs) -> tuple[np.ndarray, np.ndarray]:
    """The runs' run indices and scores, checked."""
    S = len(runs.names)
    if S == 0:
        raise InputError("no runs to evaluate")
    n = len(runs.score)
    if not (len(runs.run) == _column_len(runs, "topic") == _column_len(runs, "docno") == n):
        raise InputError("run columns have different lengths", file=_run_file(runs, 0))
    run = np.asarray(runs.run, dtype=np.int64)
    if n and (run.min() < 0 or run.max() >= S):
        raise InputError(f"run index out of range 0..{S - 1}", file=_run_file(runs, 0))
    empty = np.flatnonzero(np.bincount(run, minlength=S) == 0)
    if empty.size:
        s = int(empty[0])
        raise InputError(f"run {runs.names[s]!r} is empty", file=_run_file(runs, s))
    score = np.asarray(runs.score, dtype=np.float64)
    bad = ~np.isfinite(score)
    if getattr(runs, "precision", "float64") == "float32" and not bad.any():
        score = trec_eval_scores(score)  # trec_eval's float sim: single-precision ties
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(
            f"non-finite score {score[i]} for topic {runs.topic[i]!r}, docno "
            f"{runs.docno[i]!r} in run {runs.names[run[i]]!r}",
            file=_run_file(runs, int(run[i])),
        )
    return run, score


def _check_qrels(qrels: Qrels, source: str) -> np.ndarray:
    """The qrels' grades as int64, its columns checked (`source` names it)."""
    if not (len(qrels.topic) == len(qrels.docno) == len(qrels.grade)):
        raise InputError("qrels columns have different lengths", file=source)
    if len(qrels) == 0:
        raise InputError("qrels hold no judgments", file=source)
    grade = np.asarray(qrels.grade)
    if not np.issubdtype(grade.dtype, np.integer):
        raise InputError("relevance grades must be integers", file=source)
    return grade.astype(np.int64)


def vocab_index(docnos: np.ndarray, vocab: np.ndarray) -> np.ndarray:
    """The position of each of `docnos` (distinct) in the runs' vocabulary `vocab`, -1 when
    absent (judged, never retrieved): one Arrow hash lookup (pandas' for values that are not
    all strings). One place for :func:`evaluate` and
    :func:`irsim.metrics.multi.evaluate_many`.

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> vocab_index(obj("b", "z", "a"), obj("a", "b", "c")).tolist()
    [1, -1, 0]
    """
    try:
        found = pc.index_in(pa.array(docnos, pa.large_string()),
                            value_set=pa.array(vocab, pa.large_string()))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pd.Index(vocab).get_indexer(docnos)
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def judged_keys(code: np.ndarray, qt: np.ndarray, grade: np.ndarray, keep: np.ndarray,
                tmap: np.ndarray, docnos: np.ndarray, vmap: np.ndarray, n_doc: int,
                out_topics: np.ndarray, source: str
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A qrels' judgments of the kept topics (one place for :func:`evaluate` and
    :func:`irsim.metrics.multi.evaluate_many`), a (topic, docno) judged twice refused.

    Parameters
    ----------
    code, qt, grade : ndarray
        Per qrels row: its docno code into `docnos`, topic code and grade.
    keep : ndarray of bool
        The topic codes kept; `tmap` maps them to output topics (`out_topics`).
    docnos : ndarray
        The qrels' docnos by code; `vmap` their code in the runs' vocabulary (-1: judged,
        never retrieved), of `n_doc` codes.
    source : str
        What messages call the qrels.

    Returns
    -------
    topic, grade : ndarray
        Output topic and grade of each judgment kept.
    key, key_grade : ndarray
        The join keys (``topic * n_doc + docno code``) of those some run retrieved, with
        their grades.
    """
    n_u = max(len(docnos), 1)
    qk = np.flatnonzero(keep[qt])
    code = code[qk]
    qt_out, qgrade = tmap[qt[qk]], grade[qk]
    dkey = np.sort(qt_out * n_u + code)
    if (dups := np.flatnonzero(dkey[1:] == dkey[:-1])).size:
        t, d = divmod(int(dkey[dups[0]]), n_u)
        raise InputError(f"duplicate judgment for topic {out_topics[t]!r}, docno "
                         f"{docnos[d]!r}", file=source)
    qd = vmap[code]
    hit = qd >= 0
    return qt_out, qgrade, qt_out[hit] * n_doc + qd[hit], qgrade[hit]


def _select_topics(
    runs: Runs, qrels: Qrels, run: np.ndarray, rt: np.ndarray, qt: np.ndarray,
    qgrade: np.ndarray, topics: np.ndarray, missing: str,
) -> np.ndarray:
    S, U = len(runs.names), len(topics)
    in_qrels = np.bincount(qt, minlength=U) > 0
    has_rel = np.bincount(qt, weights=qgrade >= 1, minlength=U) > 0
    present = np.zeros((S, U), dtype=bool)
    present[run, rt] = True
    qsrc = qrels.source or "the qrels"
    if missing == "error":
        bad = present & ~in_qrels[None, :]
        if bad.any():
            s, t = np.argwhere(bad)[0]
            raise InputError(
                f"topic {topics[t]!r} of run {runs.names[s]!r} is not in the qrels ({qsrc}); "
                "use missing='drop' or 'zero' to ignore it",
                file=_run_file(runs, int(s)),
            )
        bad = ~present & has_rel[None, :]
        if bad.any():
            s, t = np.argwhere(bad)[0]
            raise InputError(
                f"topic {topics[t]!r} has relevant documents in the qrels ({qsrc}) but is "
                f"missing from run {runs.names[s]!r}; use missing='zero' (trec_eval -c) "
                "or 'drop'",
                file=_run_file(runs, int(s)),
            )
        return has_rel | (in_qrels & present.any(axis=0))
    if missing == "zero":
        # a run without a single qrels topic would score 0 everywhere: the run and the
        # qrels are of different tracks (or topic ids), not a run that retrieved nothing
        alone = ~(present & in_qrels[None, :]).any(axis=1)
        if alone.any():
            s = int(np.argmax(alone))
            raise InputError(
                f"run {runs.names[s]!r} has no topic in common with the qrels ({qsrc}), so "
                "under missing='zero' it would score 0 on every topic; check that the run "
                "and the qrels belong together (same track, same topic ids)",
                file=_run_file(runs, s),
            )
        return in_qrels
    return in_qrels & present.all(axis=0)


def run_lists(runs: Runs, run: np.ndarray, score: np.ndarray, rt: np.ndarray,
              rd: np.ndarray, rows: np.ndarray | None, tmap: np.ndarray, n_doc: int, S: int,
              T: int) -> tuple[np.ndarray, ...]:
    """The ranked lists of the run rows kept (one place for :func:`evaluate` and
    :func:`irsim.metrics.multi.evaluate_many`): rows ordered by (list, docno descending), so
    that lists are contiguous and a docno repeated within a list lands next to itself (an
    :class:`~irsim.errors.InputError` naming the run file). Runs whose lists are already
    contiguous and known free of repeats (``Runs.unique_lists``, as the readers give them)
    are not sorted: lists in score order (as run files are written) only have their runs of
    tied scores put in docno-descending order; other lists keep their row order (the rank
    keys carry the docno tie-break when every score is a float32 value, else
    :func:`ranked_rows` breaks ties by the join keys).

    Parameters
    ----------
    runs : Runs
        For error messages.
    run, score, rt, rd : ndarray
        Per kept row: run index, score, topic code and docno code.
    rows : ndarray or None
        The kept rows' positions in `runs` (None: every row).
    tmap : ndarray
        Output topic index of each topic code.
    n_doc : int
        Docno codes.
    S, T : int
        Systems and output topics.

    Returns
    -------
    starts, lens, group_id, score1, key1 : ndarray
        First row and length of each list, its id (``run * T + topic``), the rows' scores
        in list order and their join keys (``topic * n_doc + docno``).
    rank1 : ndarray or None
        The rows' rank keys in list order (:func:`rank_keys`), None when the scores need
        float64 (then :func:`ranked_rows` sorts `score1` stably).
    """
    t_out = tmap[rt]
    g = np.multiply(run, T, dtype=np.int64)
    g += t_out
    if getattr(runs, "unique_lists", False) and len(g):
        lists = _file_lists(g, score, rd, t_out, n_doc, S * T)
        if lists is not None:
            return lists
    rank = rank_keys(score, rd, n_doc)
    doc_desc = (n_doc - 1) - rd
    o1 = _list_order(g, doc_desc, n_doc, packed=S * T * n_doc < 2**63)
    g1, d1 = g[o1], rd[o1]
    same = (g1[1:] == g1[:-1]) & (d1[1:] == d1[:-1])
    if same.any():
        j = int(o1[int(np.argmax(same)) + 1])
        i = j if rows is None else int(rows[j])
        s = int(run[j])
        raise InputError(f"duplicate docno {runs.docno[i]!r} for topic {runs.topic[i]!r} "
                         f"in run {runs.names[s]!r}", file=_run_file(runs, s))
    starts = np.flatnonzero(np.concatenate([[True], g1[1:] != g1[:-1]]))
    lens = np.diff(np.append(starts, len(g1)))
    return (starts, lens, g1[starts], score[o1], t_out[o1] * n_doc + d1,
            None if rank is None else rank[o1])


def _file_lists(g: np.ndarray, score: np.ndarray, rd: np.ndarray, t_out: np.ndarray,
                n_doc: int, n_lists: int) -> tuple[np.ndarray | None, ...] | None:
    """:func:`run_lists` of rows known free of repeated docnos when their lists are
    contiguous (as in run files), without sorting them: in rank order when each list is in
    score order (:func:`rank_order`), else in file order (with rank keys when the scores
    allow them); None when the lists are not contiguous."""
    head = np.empty(len(g), dtype=bool)
    head[0] = True
    np.not_equal(g[1:], g[:-1], out=head[1:])
    starts = np.flatnonzero(head)
    if len(starts) != np.count_nonzero(np.bincount(g, minlength=n_lists)):  # not contiguous
        return None
    lens = np.diff(np.append(starts, len(g)))
    moves = rank_order(head, score, rd)
    # lists not in score order keep their rows: by rank keys, else by the scores with ties
    # by the join keys (docno) descending, as ranked_rows sorts them (tie_key)
    rank = None if moves is not None else rank_keys(score, rd, n_doc)
    key = np.multiply(t_out, n_doc, out=t_out)  # t_out is not needed any more
    key += rd
    if moves is not None and len(moves[0]):  # now in rank order (a stable sort keeps it)
        rows, source = moves
        key[rows] = key[source]
        score = score.copy()
        score[rows] = score[source]
    return starts, lens, g[starts], score, key, rank


def _list_order(g: np.ndarray, doc_desc: np.ndarray, n_doc: int, *, packed: bool) -> np.ndarray:
    """Row order by (list id g, docno code descending): one argsort of a packed int64 key,
    or ``np.lexsort`` when g * n_doc could overflow."""
    if packed:
        return np.argsort(g * n_doc + doc_desc)
    return np.lexsort((doc_desc, g))


class _GradeLookup:
    """Grades of (topic, docno) keys: a dense table when it is small, else binary search."""

    def __init__(self, qkey: np.ndarray, qgrade: np.ndarray, n_keys: int, budget: int):
        self.qkey, self.qgrade = qkey, qgrade
        self.table = None
        if n_keys <= budget:
            # the smallest index type: the table is the largest array of a small workload
            index = (np.int16 if len(qkey) < 2**15 else np.int32 if len(qkey) < 2**31
                     else np.int64)
            self.table = np.full(n_keys, -1, dtype=index)
            self.table[qkey] = np.arange(len(qkey))
        self.grades = np.append(np.asarray(qgrade, dtype=np.int64), UNJUDGED)  # [-1]: none

    def fill(self, key: np.ndarray, valid: np.ndarray, out: np.ndarray) -> None:
        """``out[...]`` = the grades of `key` where `valid`, else UNJUDGED."""
        if self.table is None or len(self.qkey) == 0:
            out[...] = np.where(valid, self(key), UNJUDGED)
            return
        i = self.table[key]
        i[~valid] = -1
        np.take(self.grades, i, out=out, mode="wrap")  # -1: the last, UNJUDGED

    def __call__(self, key: np.ndarray) -> np.ndarray:
        if len(self.qkey) == 0:
            return np.full(key.shape, UNJUDGED, dtype=np.int64)
        if self.table is not None:
            i = self.table[key]
            return np.where(i >= 0, self.qgrade[i], UNJUDGED)
        pos = np.minimum(np.searchsorted(self.qkey, key), len(self.qkey) - 1)
        return np.where(self.qkey[pos] == key, self.qgrade[pos], UNJUDGED)


def _chunks(lens_sorted: np.ndarray, width: int, max_cells: int) -> list[tuple[int, int]]:
    """Split lists (sorted by length) into chunks of about ``max_cells`` padded cells."""
    n, out, a = len(lens_sorted), [], 0
    window = max(1, max_cells // max(width, 1)) + 1
    while a < n:
        stop = min(n, a + window)
        cost = np.arange(1, stop - a + 1) * np.maximum(lens_sorted[a:stop], width)
        b = a + max(1, int(np.searchsorted(cost, max_cells, side="right")))
        out.append((a, b))
        a = b
    return out


def evaluate(
    runs: Runs,
    qrels: Qrels,
    measures: Iterable[str | Measure] | str | Measure,
    *,
    depth: int | None = 1000,
    missing: str = "error",
    max_cells: int = 1 << 16,
    progress: Callable[[int, int], object] | None = None,
) -> ScoreMatrix:
    """Per-topic scores of every run under every measure, exactly as trec_eval ranks.

    Parameters
    ----------
    runs : Runs
        One or more runs (e.g. from :func:`irsim.data.trec.read_runs`).
    qrels : Qrels
        Graded judgments; documents not in the qrels are non-relevant.
    measures : str, Measure or iterable of them
        Names as ir_measures spells them (``AP``, ``P@10``, ``nDCG@10``, ``AP(rel=2)``,
        ``Q@100`` ...), see :func:`irsim.metrics.available_measures`.
    depth : int or None, default 1000
        Each list is cut after this many documents: 1000 is ``trec_eval -M1000``, None
        (no cut) is trec_eval without ``-M`` (the two agree on runs of at most 1000
        documents per topic).
    missing : {"error", "zero", "drop"}
        What to do with topics not shared by the runs and the qrels (module docstring).
    max_cells : int
        Memory budget: lists are processed in chunks of about ``max_cells`` (list, rank)
        cells (each derived array of a chunk takes 8 bytes per cell). The default keeps a
        chunk's arrays small enough to be reused from chunk to chunk (fresh memory costs
        a page fault per 4 KiB) and in the CPU's caches.
    progress : callable, optional
        Called as ``progress(done, total)`` after each chunk of lists (for a progress bar).

    Returns
    -------
    ScoreMatrix
        values (measures, runs, topics); measures named canonically, runs in order,
        topics sorted as strings.

    Raises
    ------
    InputError
        Empty run, non-finite score, duplicate docno in a list or duplicate judgment,
        topics missing (``missing="error"``), no topic left to evaluate.
    ConfigError
        Unknown or malformed measure, bad ``depth`` or ``missing``.

    Examples
    --------
    >>> import numpy as np
    >>> from irsim.data import Qrels, Runs
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> qrels = Qrels(obj("t1", "t1", "t2"), obj("a", "b", "c"), np.array([1, 2, 1]))
    >>> runs = Runs(("bm25", "dense"), np.array([0, 0, 0, 1, 1, 1], dtype=np.int32),
    ...             topic=obj("t1", "t1", "t2", "t1", "t1", "t2"),
    ...             docno=obj("a", "x", "c", "x", "b", "c"),
    ...             score=np.array([2.0, 1.0, 1.0, 3.0, 2.0, 1.0]))
    >>> m = evaluate(runs, qrels, ["AP", "P@2", "AP(rel=2)"])
    >>> m.metrics, m.topics
    (('AP', 'P@2', 'AP(rel=2)'), ('t1', 't2'))
    >>> m.metric("AP").round(4).tolist()
    [[0.5, 1.0], [0.25, 1.0]]
    >>> m.metric("AP(rel=2)").tolist()
    [[0.0, 0.0], [0.5, 0.0]]
    """
    inp = check_inputs(runs, [qrels], measures, depth=depth, missing=missing,
                       max_cells=max_cells)
    ms, run, score, rt, rd, n_doc = inp.measures, inp.run, inp.score, inp.rt, inp.rd, inp.n_doc
    qsrc, qt = inp.sources[0], inp.qts[0]
    sel = _select_topics(runs, inp.qrels[0], run, rt, qt, inp.grades[0], inp.topics, missing)
    if not sel.any():
        raise InputError("no topic left to evaluate (runs and qrels share no topic)",
                         file=qsrc)
    tmap = np.cumsum(sel) - 1
    T, S = int(sel.sum()), len(runs.names)
    out_topics = inp.topics[sel]
    code, docnos = pd.factorize(np.asarray(qrels.docno, dtype=object))
    qt_out, qgrade, qkey, qkey_grade = judged_keys(
        code, qt, inp.grades[0], sel, tmap, docnos, vocab_index(docnos, inp.vocab), n_doc,
        out_topics, qsrc)
    qorder = np.argsort(qkey)
    qkey, qkey_grade = qkey[qorder], qkey_grade[qorder]

    # run rows of the kept topics
    keep = sel[rt]
    rows = np.flatnonzero(keep) if not keep.all() else None
    if rows is not None:
        run, score, rt, rd = run[rows], score[rows], rt[rows], rd[rows]
    values = np.zeros((len(ms), S, T))
    if len(score):
        # 1. the ranked lists: contiguous, a docno repeated within a list refused
        lists = run_lists(runs, run, score, rt, rd, rows, tmap, n_doc, S, T)
        lookup = _GradeLookup(qkey, qkey_grade, T * n_doc, max(1 << 24, 2 * len(score)))
        _score_lists(values, inp, lists, Ideal(qt_out, qgrade, T, _width(inp, lists[1])),
                     lookup, T, progress)
    return ScoreMatrix(values, [str(m) for m in ms], runs.names, out_topics, source=qsrc)


def _list_depth(inp: Inputs, lens: np.ndarray) -> int:
    """Where lists are cut: at `depth`, or at the longest list when shorter (or no depth)."""
    max_len = int(lens.max())
    return max_len if inp.depth is None else min(max_len, int(inp.depth))


def _width(inp: Inputs, lens: np.ndarray) -> int:
    """The ranks of a block: the lists' cut or the deepest measure cutoff."""
    return max(_list_depth(inp, lens), max((m.cutoff or 0) for m in inp.measures), 1)


def _score_lists(values: np.ndarray, inp: Inputs, lists: tuple[np.ndarray, ...],
                 ideal: Ideal, lookup: _GradeLookup, T: int,
                 progress: Callable[[int, int], object] | None) -> None:
    """Every measure of every list into `values` (measures, runs, topics), per chunk of
    lists: padded, each row sorted by score descending (stable, so ties keep the
    docno-descending order of :func:`run_lists`), cut at depth, grades looked up."""
    starts, lens, group_id, score1, key1, rank1 = lists
    list_depth, width = _list_depth(inp, lens), _width(inp, lens)
    by_len = np.argsort(lens, kind="stable")
    chunks = _chunks(lens[by_len], width, inp.max_cells)
    log.debug("evaluate: %d lists, width %d, %d chunk(s)", len(lens), width, len(chunks))
    for done, (a, b) in enumerate(chunks, 1):
        idx = by_len[a:b]
        pos, valid = ranked_rows(idx, lens, starts, score1, list_depth, rank1, key1)
        if pos.shape[1] == width:
            block_grade = np.empty((len(idx), width), dtype=np.int64)
        else:
            block_grade = np.full((len(idx), width), UNJUDGED, dtype=np.int64)
        lookup.fill(key1[pos], valid, block_grade[:, :pos.shape[1]])
        gid = group_id[idx]
        block = Block(block_grade, gid % T, ideal)
        for mi, m in enumerate(inp.measures):
            values[mi, gid // T, gid % T] = m.definition.kernel(block, m)
        if progress is not None:
            progress(done, len(chunks))
