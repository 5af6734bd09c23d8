"""Runs under many qrels of the same topics in one pass, and composite qrels.

:func:`evaluate_many` scores parsed runs under several qrels (one per assessor, LLM, or
composite) with one factorisation, one sort and one padding of the ranked lists: the grade
row of every retrieved document is found once in a (judged keys x qrels) grade table, the
blocks of all qrels are gathered from it with the qrels axis folded into the rows (only the
(qrels, list) pairs whose topic the qrels keeps), and an
:class:`~irsim.metrics.block.Ideal` over ``qrels x topics`` virtual topics serves them all,
so every measure kernel runs once per chunk for all qrels (once per distinct block width:
each qrels keeps the width :func:`~irsim.metrics.evaluate` would give it, so sums along the
ranks add the same terms in the same order). Each qrels'
:class:`~irsim.data.matrix.ScoreMatrix` equals what :func:`~irsim.metrics.evaluate` gives
for it alone, bit for bit (same topics, same values).

:func:`composite_qrels` builds the qrels of another assessor over a reference's judgments,
with an explicit rule for the pairs the reference judged and the other did not
(``unjudged``):

``"reference"``
    They keep the reference's grade (the other assessor's labels replace the reference's
    where both exist): the composite differs from the reference only where the two
    disagree.
``"nonrelevant"``
    They are judged non-relevant (grade 0): the other assessor's relevant set alone
    counts, and the pairs stay judged (which matters for condensed lists).
``"condensed"``
    They are left unjudged and, with the qrels' name in ``condensed`` of
    :func:`evaluate_many`, every unjudged document is removed from each ranked list before
    the metric (condensed lists, Sakai SIGIR 2007): a run is judged only on what the other
    assessor judged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping

import numpy as np
import pandas as pd

from irsim.data.matrix import ScoreMatrix
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError, unknown_name
from irsim.metrics.block import UNJUDGED, Block, Ideal
from irsim.metrics.evaluate import (
    Inputs,
    _chunks,
    _list_depth,
    _select_topics,
    _width,
    check_inputs,
    judged_keys,
    ranked_rows,
    run_lists,
    vocab_index,
)
from irsim.metrics.measures import Measure
from irsim.params import Choice

__all__ = ["UNJUDGED_RULES", "evaluate_many", "composite_qrels", "condense"]

log = logging.getLogger(__name__)

#: Rules for reference-judged pairs the other assessor did not judge.


class Unjudged(Choice):
    """What a document one assessor judged and another did not counts as under the other's
    qrels."""

    reference = "reference"
    nonrelevant = "nonrelevant"
    condensed = "condensed"


UNJUDGED_RULES = Unjudged.values()


def composite_qrels(reference: Qrels, other: Qrels, *, unjudged: str = "reference",
                    source: str | None = None) -> Qrels:
    """Another assessor's qrels completed over the reference's judged pairs.

    Parameters
    ----------
    reference : Qrels
        The official judgments (e.g. NIST).
    other : Qrels
        Another assessor's grades (a person, a crowd, an LLM), usually of a subset of the
        reference's pairs.
    unjudged : {"reference", "nonrelevant", "condensed"}
        What a pair judged by the reference but not by `other` becomes (module docstring):
        the reference's grade, grade 0, or unjudged (evaluate it with ``condensed``).
    source : str, optional
        A name for the result (default ``"<other> (unjudged=<rule>)"``).

    Returns
    -------
    Qrels
        Every pair of `other` with its grade, plus the reference's other pairs as the rule
        says, sorted by (topic, docno).

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> ref = Qrels(obj("t1", "t1", "t1"), obj("a", "b", "c"), np.array([2, 1, 0]))
    >>> llm = Qrels(obj("t1", "t1"), obj("a", "d"), np.array([0, 3]))
    >>> [composite_qrels(ref, llm, unjudged=u).grade.tolist() for u in UNJUDGED_RULES]
    [[0, 1, 0, 3], [0, 0, 0, 3], [0, 3]]
    >>> composite_qrels(ref, llm).docno.tolist()
    ['a', 'b', 'c', 'd']
    """
    if unjudged not in UNJUDGED_RULES:
        raise unknown_name("unjudged rule", str(unjudged), UNJUDGED_RULES)

    def frame(q: Qrels) -> pd.DataFrame:
        df = pd.DataFrame({"topic": np.asarray(q.topic, dtype=object),
                           "docno": np.asarray(q.docno, dtype=object),
                           "grade": np.asarray(q.grade, dtype=np.int64)})
        dup = df.duplicated(["topic", "docno"])
        if dup.any():
            r = df[dup].iloc[0]
            raise InputError(f"duplicate judgment for topic {r.topic!r}, docno {r.docno!r}",
                             file=q.source or "qrels")
        return df

    ref, oth = frame(reference), frame(other)
    if unjudged != "condensed":
        only_ref = ref.merge(oth[["topic", "docno"]], on=["topic", "docno"], how="left",
                             indicator=True)
        only_ref = only_ref[only_ref["_merge"] == "left_only"].drop(columns="_merge")
        if unjudged == "nonrelevant":
            only_ref = only_ref.assign(grade=0)
        oth = pd.concat([oth, only_ref], ignore_index=True)
    oth = oth.sort_values(["topic", "docno"], kind="stable", ignore_index=True)
    name = source or f"{other.source or 'qrels'} (unjudged={unjudged})"
    return Qrels(oth["topic"].to_numpy(dtype=object), oth["docno"].to_numpy(dtype=object),
                 oth["grade"].to_numpy(dtype=np.int64), source=name)


def condense(grade: np.ndarray) -> np.ndarray:
    """Condensed lists: each row's judged grades moved to the front in rank order, the
    unjudged documents (``UNJUDGED``) removed to the end (Sakai 2007).

    Examples
    --------
    >>> u = UNJUDGED
    >>> condense(np.array([[u, 1, u, 0, 2], [3, u, u, u, u]])).tolist() == [
    ...     [1, 0, 2, u, u], [3, u, u, u, u]]
    True
    """
    order = np.argsort(grade == UNJUDGED, axis=-1, kind="stable")
    return np.take_along_axis(grade, order, axis=-1)


class _MultiLookup:
    """Grades of (topic, docno) keys under every qrels: the index of each key in the sorted
    union of the judged keys (binary search, once per run row), into a (keys, qrels) grade
    matrix with ``UNJUDGED`` where a qrels did not judge the key."""

    def __init__(self, keys: list[np.ndarray], grades: list[np.ndarray]):
        allk = np.concatenate(keys) if keys else np.zeros(0, np.int64)
        self.ukey, inv = np.unique(allk, return_inverse=True)
        # one extra row of UNJUDGED for keys no qrels judged
        self.table_grade = np.full((len(self.ukey) + 1, len(keys)), UNJUDGED, dtype=np.int64)
        at = 0
        for q, (k, g) in enumerate(zip(keys, grades, strict=True)):
            self.table_grade[inv[at:at + len(k)], q] = g
            at += len(k)

    def index(self, key: np.ndarray) -> np.ndarray:
        """Row of each key in the grade matrix (the last row: judged by none)."""
        n = len(self.ukey)
        if n == 0:
            return np.zeros(key.shape, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.ukey, key), n - 1)
        return np.where(self.ukey[pos] == key, pos, n)


def evaluate_many(
    runs: Runs,
    qrels: Mapping[str, Qrels],
    measures: Iterable[str | Measure] | str | Measure,
    *,
    depth: int | None = 1000,
    missing: str = "error",
    condensed: Collection[str] | bool = (),
    max_cells: int = 1 << 21,
    progress: Callable[[int, int], object] | None = None,
) -> dict[str, ScoreMatrix]:
    """Per-topic scores of every run under every measure and every qrels, in one pass.

    The runs are factorised, sorted and padded once; grades of all qrels are looked up
    together and every measure kernel evaluates all qrels at once (the qrels axis stacked
    on the rows of each block). Each result equals
    ``irsim.evaluate(runs, qrels[name], measures, depth=depth, missing=missing)``.

    Parameters
    ----------
    runs : Runs
    qrels : mapping of str to Qrels
        Named qrels of the same collection (assessors, LLM labels, composites); at least one.
    measures : str, Measure or iterable of them
        As :func:`~irsim.metrics.evaluate`.
    depth, missing, max_cells, progress
        As :func:`~irsim.metrics.evaluate` (``missing`` applies to each qrels: the topics of
        each result are the ones ``evaluate`` would keep for it; ``max_cells`` bounds the
        cells of all qrels together).
    condensed : collection of str, or bool
        Names of the qrels evaluated on condensed lists (every document the qrels did not
        judge removed from the list, after the cut at `depth`; Sakai 2007); True: all.

    Returns
    -------
    dict of str to ScoreMatrix
        In the order of `qrels`.

    Raises
    ------
    InputError, ConfigError
        As :func:`~irsim.metrics.evaluate`, naming the qrels; an unknown name in
        `condensed`.

    Examples
    --------
    >>> from irsim.metrics import evaluate
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> nist = Qrels(obj("t1", "t1", "t2"), obj("a", "b", "c"), np.array([1, 2, 1]))
    >>> llm = Qrels(obj("t1", "t1", "t2"), obj("a", "x", "c"), np.array([0, 2, 1]))
    >>> runs = Runs(("bm25", "dense"), np.array([0, 0, 0, 1, 1, 1], dtype=np.int32),
    ...             topic=obj("t1", "t1", "t2", "t1", "t1", "t2"),
    ...             docno=obj("a", "x", "c", "x", "b", "c"),
    ...             score=np.array([2.0, 1.0, 1.0, 3.0, 2.0, 1.0]))
    >>> out = evaluate_many(runs, {"nist": nist, "llm": llm}, ["AP", "P@2"])
    >>> out["llm"].metric("AP").tolist()
    [[0.5, 1.0], [1.0, 1.0]]
    >>> bool((out["nist"].values == evaluate(runs, nist, ["AP", "P@2"]).values).all())
    True
    """
    if not isinstance(qrels, Mapping) or not qrels:
        raise ConfigError("qrels must be a non-empty mapping of names to Qrels")
    names = list(qrels)
    cond = _condensed(condensed, names)
    inp = check_inputs(runs, [qrels[n] for n in names], measures, depth=depth,
                       missing=missing, max_cells=max_cells, names=names)
    sels, union = _topics_kept(runs, inp)
    tmap = np.cumsum(union) - 1
    T, S = int(union.sum()), len(runs.names)
    out_topics = inp.topics[union]
    keys, key_grades, ideal_t, ideal_g = _judgments(inp, union, tmap, out_topics)

    run, score, rt, rd = inp.run, inp.score, inp.rt, inp.rd
    keep = union[rt]
    rows = np.flatnonzero(keep) if not keep.all() else None
    if rows is not None:
        run, score, rt, rd = run[rows], score[rows], rt[rows], rd[rows]
    values = np.zeros((len(names), len(inp.measures), S, T))
    if len(score):
        lists = run_lists(runs, run, score, rt, rd, rows, tmap, inp.n_doc, S, T)
        ideal = (np.concatenate(ideal_t), np.concatenate(ideal_g))
        _score_lists_many(values, inp, lists, np.stack(sels)[:, union], ideal,
                          _MultiLookup(keys, key_grades),
                          np.array([n in cond for n in names]), progress)
    out = {}
    sel_union = np.flatnonzero(union)
    for qi, (n, sel, src) in enumerate(zip(names, sels, inp.sources, strict=True)):
        cols = np.flatnonzero(sel[sel_union])
        out[n] = ScoreMatrix(values[qi][:, :, cols], [str(m) for m in inp.measures],
                             runs.names, out_topics[cols], source=src)
    return out


def _condensed(condensed: Collection[str] | bool, names: list[str]) -> set[str]:
    """The names of the qrels evaluated on condensed lists (True: all; an unknown name is
    refused)."""
    if condensed is True:
        return set(names)
    if condensed is False:
        return set()
    cond = set(condensed)
    if bad := sorted(cond - set(names)):
        raise unknown_name("qrels in condensed", bad[0], names)
    return cond


def _topics_kept(runs: Runs, inp: Inputs) -> tuple[list[np.ndarray], np.ndarray]:
    """The topics each qrels keeps (its ``missing`` rule, on the (run, topic) pairs present,
    found once for all qrels) and their union."""
    U = len(inp.topics)
    pairs = np.unique(inp.run.astype(np.int64) * U + inp.rt)
    run_u, rt_u = pairs // U, pairs % U
    sels = []
    for q, qt, g, src in zip(inp.qrels, inp.qts, inp.grades, inp.sources, strict=True):
        sel = _select_topics(runs, q, run_u, rt_u, qt, g, inp.topics, inp.missing)
        if not sel.any():
            raise InputError("no topic left to evaluate (runs and qrels share no topic)",
                             file=src)
        sels.append(sel)
    return sels, np.logical_or.reduce(sels)


def _judgments(inp: Inputs, union: np.ndarray, tmap: np.ndarray, out_topics: np.ndarray
               ) -> tuple[list[np.ndarray], ...]:
    """Each qrels' judgments on the kept topics (:func:`~irsim.metrics.evaluate.judged_keys`;
    the docnos of every qrels factorised once and looked up once in the runs' vocabulary):
    its join keys and their grades, and its ideal rows (virtual topic ``qrels * T + topic``,
    grade)."""
    T = int(union.sum())
    qdocs = [np.asarray(q.docno, dtype=object) for q in inp.qrels]
    dcodes, duniq = pd.factorize(np.concatenate(qdocs))
    vmap = vocab_index(duniq, inp.vocab)  # -1: judged, never retrieved
    starts_q = np.cumsum([0] + [len(d) for d in qdocs])
    keys, key_grades, ideal_t, ideal_g = [], [], [], []
    for qi, (qt, g, src) in enumerate(zip(inp.qts, inp.grades, inp.sources, strict=True)):
        code = dcodes[starts_q[qi]:starts_q[qi + 1]]
        qt_out, qgrade, key, key_grade = judged_keys(code, qt, g, union, tmap, duniq, vmap,
                                                     inp.n_doc, out_topics, src)
        keys.append(key)
        key_grades.append(key_grade)
        ideal_t.append(qi * T + qt_out)
        ideal_g.append(qgrade)
    return keys, key_grades, ideal_t, ideal_g


def _score_lists_many(values: np.ndarray, inp: Inputs, lists: tuple[np.ndarray, ...],
                      sel_local: np.ndarray, ideal: tuple[np.ndarray, np.ndarray],
                      lookup: _MultiLookup, cond_mask: np.ndarray,
                      progress: Callable[[int, int], object] | None) -> None:
    """Every measure of every list under every qrels into `values` (qrels, measures, runs,
    topics), per chunk of lists; `sel_local` (qrels, kept topics) says which qrels keeps
    which topic. Each qrels' block width is the one evaluate would use for it (its lists'
    longest, cut at depth): sums along ranks then add the same terms in the same order."""
    starts, lens, group_id, score1, key1, rank1 = lists
    Q, T = sel_local.shape
    ms = inp.measures
    list_depth, width = _list_depth(inp, lens), _width(inp, lens)
    max_cut = max((m.cutoff or 0) for m in ms)
    list_sel = sel_local[:, group_id % T]
    q_len = np.where(list_sel, lens[None, :], 0).max(axis=1)
    q_width = np.maximum(np.minimum(q_len, list_depth), max(max_cut, 1))
    widths = np.unique(q_width)
    ideals = {int(w): Ideal(ideal[0], ideal[1], Q * T, int(w)) for w in widths}
    row_key = lookup.index(key1)  # grade row of every run row
    none = len(lookup.ukey)
    grade_by_qrels = np.ascontiguousarray(lookup.table_grade.T)  # (qrels, keys + 1)

    by_len = np.argsort(lens, kind="stable")
    chunks = _chunks(lens[by_len], width, max(1, inp.max_cells // Q))
    log.debug("evaluate_many: %d qrels, %d lists, width %d, %d chunk(s)", Q, len(lens),
              width, len(chunks))
    for done, (a, b) in enumerate(chunks, 1):
        idx = by_len[a:b]
        pos, valid = ranked_rows(idx, lens, starts, score1, list_depth, rank1, key1)
        # grade rows of the run rows (padding: the row judged by none)
        ki = np.where(valid, row_key[pos], none)
        gid = group_id[idx]
        tt = gid % T
        # only the (qrels, list) pairs whose topic that qrels keeps, one block per width
        qi, ri = np.nonzero(sel_local[:, tt])
        for w in widths:
            k = q_width[qi] == w
            q_k, r_k = qi[k], ri[k]
            if len(q_k) == 0:
                continue
            d = min(pos.shape[1], int(w))  # a qrels' lists fit in its width
            grade = np.empty((len(q_k), int(w)), dtype=np.int64)
            grade[:, :d] = grade_by_qrels[q_k[:, None], ki[r_k, :d]]
            grade[:, d:] = UNJUDGED
            if cond_mask.any():
                c = cond_mask[q_k]
                grade[c] = condense(grade[c])
            block = Block(grade, q_k * T + tt[r_k], ideals[int(w)])
            for mi, m in enumerate(ms):
                values[q_k, mi, gid[r_k] // T, tt[r_k]] = m.definition.kernel(block, m)
        if progress is not None:
            progress(done, len(chunks))
