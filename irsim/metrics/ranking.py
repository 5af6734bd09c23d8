"""The rank order of ranked lists, as trec_eval ranks: score descending, ties by docno
descending (one place for :func:`irsim.metrics.evaluate.evaluate` and
:func:`irsim.metrics.multi.evaluate_many`): lists already in score order (as run files are
written; :func:`rank_order`), rank keys of float32 scores (:func:`rank_keys`) and the padded
row sort of each chunk of lists (:func:`ranked_rows`)."""

from __future__ import annotations

import numpy as np

__all__ = ["rank_order", "rank_keys", "ranked_rows", "ties_by_key"]


def rank_order(head: np.ndarray, score: np.ndarray, rd: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """How to put the rows of contiguous lists (a list starts where `head` is True) in rank
    order (score descending, ties by docno code descending) when the lists are already in
    score order, as run files are written: only the runs of tied scores move (by docno
    descending). Returns ``(rows, source)``: row ``rows[i]`` of the ranked order is row
    ``source[i]``, every other row stays. None when some list is not in score order.

    Examples
    --------
    >>> head = np.array([True, False, False, False, True, False])
    >>> score = np.array([3.0, 2.0, 2.0, 1.0, 5.0, 5.0])
    >>> [a.tolist() for a in rank_order(head, score, np.array([0, 1, 4, 2, 3, 7]))]
    [[1, 2, 4, 5], [2, 1, 5, 4]]
    >>> rank_order(head, np.array([3.0, 2.0, 2.5, 1.0, 5.0, 5.0]), np.arange(6)) is None
    True
    """
    same = ~head[1:]
    if (same & (score[1:] > score[:-1])).any():
        return None
    tie = same & (score[1:] == score[:-1])  # row i ties with row i + 1
    tied = np.zeros(len(score), dtype=bool)
    tied[:-1] = tie
    tied[1:] |= tie
    rows = np.flatnonzero(tied)  # the rows of every run of ties, in order
    new_run = np.ones(len(rows), dtype=bool)
    new_run[1:] = ~tie[rows[1:] - 1]
    return rows, rows[np.lexsort((-rd[rows], np.cumsum(new_run)))]


_RANK_PAD = np.iinfo(np.int64).max


def rank_keys(score: np.ndarray, docno: np.ndarray, n_doc: int) -> np.ndarray | None:
    """One int64 per row whose ascending order is trec_eval's rank order within a list:
    score descending, ties by docno code descending. None unless every score is a float32
    value (``Runs.precision == "float32"`` makes them so) and ``n_doc < 2**31``.

    The float32 bits are mapped to an unsigned order (``-0.0`` counted as ``0.0``, the two
    compare equal) and packed above the docno: ``(2**32 - 1 - order) * n_doc + (n_doc - 1 -
    docno)``, below ``2**63 - 1`` (the padding of :func:`ranked_rows`).

    Examples
    --------
    >>> k = rank_keys(np.array([1.0, 2.0, 1.0, -0.0, 0.0]), np.array([0, 1, 2, 3, 4]), 5)
    >>> np.argsort(k).tolist()  # 2.0, then 1.0 (docno 2 before 0), then the zeros (4, 3)
    [1, 2, 0, 4, 3]
    """
    if n_doc >= 2**31:
        return None
    s32 = score.astype(np.float32)
    if not np.array_equal(s32, score):
        return None
    s32 += np.float32(0.0)  # -0.0 -> +0.0
    u = s32.view(np.uint32)
    # increasing with the score: negatives' bits all flipped, positives' sign bit set;
    # then complemented (decreasing): negatives keep their bits, positives flip the others
    flip = (u >> np.uint32(31)) - np.uint32(1)  # 0 for negatives, all ones for positives
    flip >>= np.uint32(1)
    u ^= flip
    key = u.astype(np.int64)
    key *= n_doc
    key += (n_doc - 1) - docno
    return key


def ranked_rows(idx: np.ndarray, lens: np.ndarray, starts: np.ndarray, score1: np.ndarray,
                depth: int, rank1: np.ndarray | None = None,
                tie_key: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The rows of lists `idx` (of :func:`run_lists`) in rank order, cut at `depth`: each list
    padded to the longest, sorted by score descending, ties by docno descending, as
    trec_eval breaks them (by the rank keys `rank1` when given; else by the scores, ties by
    `tie_key` descending, the join keys of :func:`run_lists`, or without `tie_key` by a
    stable sort, the rows being in docno-descending order). Returns the row positions and
    which of them are real (not padding), both (lists, min(longest, depth)). One place for
    :func:`evaluate` and :func:`irsim.metrics.multi.evaluate_many`."""
    ln, L = lens[idx], int(lens[idx].max())
    cols = np.arange(L)
    valid = cols[None, :] < ln[:, None]
    pad = ~valid
    pos = starts[idx][:, None] + cols[None, :]
    pos[pad] = 0
    cut = min(L, depth)
    if rank1 is not None:  # keys unique within a list: any sort gives the one order
        key = rank1[pos]
        key[pad] = _RANK_PAD
    else:
        key = score1[pos]
        np.negative(key, out=key)
        key[pad] = np.inf
    bad = key[:, 1:] < key[:, :-1]  # (padding: the largest key, at the end)
    if rank1 is None and tie_key is not None:
        tk = tie_key[pos]
        bad |= (key[:, 1:] == key[:, :-1]) & (tk[:, 1:] >= tk[:, :-1])  # ties out of order
        bad &= valid[:, 1:]
    if not bad.any():  # in rank order already (a stable sort keeps ties as they are)
        return pos[:, :cut], valid[:, :cut]
    if rank1 is not None or tie_key is None:
        top = np.argsort(key, axis=1, kind=None if rank1 is not None else "stable")
    else:
        top = ties_by_key(key, np.argsort(key, axis=1), tk)
    top = top[:, :cut]
    return np.take_along_axis(pos, top, axis=1), np.take_along_axis(valid, top, axis=1)


def ties_by_key(key: np.ndarray, top: np.ndarray, tk: np.ndarray) -> np.ndarray:
    """`top`, an order of each row of `key` (ascending, ties in any order), with each run of
    tied finite keys put in descending order of `tk` (the docno tie-break)."""
    srt = np.take_along_axis(key, top, axis=1)
    tie = (srt[:, 1:] == srt[:, :-1]) & np.isfinite(srt[:, 1:])  # cell c ties with c + 1
    if not tie.any():
        return top
    tied = np.zeros(key.shape, dtype=bool)
    tied[:, :-1] = tie
    tied[:, 1:] |= tie
    cells = np.flatnonzero(tied)  # row-major: each run of ties is consecutive
    r, c = np.divmod(cells, key.shape[1])
    new_run = (c == 0) | ~tie[r, np.maximum(c - 1, 0)]
    flat = top.reshape(-1)
    rows = flat[cells]
    order = np.lexsort((-np.take_along_axis(tk, top, axis=1).reshape(-1)[cells],
                        np.cumsum(new_run)))
    flat[cells] = rows[order]
    return top
