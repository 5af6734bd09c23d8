"""Average precision under corpus resampling (Cormack & Lynam, SIGIR 2006), in closed form.

A ranked list is held by the ranks of its relevant retrieved documents
(:class:`ListSet`); :func:`corpus_lists` ranks the runs of a collection as trec_eval does
and reduces them to the lists of the full corpus and of its two halves (documents split by
the MD5 of the docno, :func:`md5_half`) for split-corpus validation, for one or more splits:
split 0 is Cormack & Lynam's unsalted rule, split ``k > 0`` hashes the docno prefixed by the
salt :func:`split_salt` ``(k)``. The corpus bootstrap
(:mod:`irsim.sampling.corpus`) gives every document ``k ~ Poisson(1)`` consecutive copies.
A relevant document with ``k`` copies placed after ``p`` copies of which ``c`` are relevant
adds, over its copies at ranks ``p+1..p+k``,

    sum_{i=1..k} (c + i)/(p + i) = k + (c - p) (H(p + k) - H(p)),

(``H`` = harmonic numbers), so ``AP* = (1/R*) sum [k - n (H(p + k) - H(p))]`` with
``n = p - c`` the non-relevant copies before it and ``R*`` = relevant copies retrieved +
copies of the relevant documents not retrieved. :func:`resampled_ap` evaluates this for
many lists and replicates with integer prefix sums and two table lookups per relevant
document: no list is materialised.

Also here: the jackknife acceleration for BCa under corpus resampling
(:func:`corpus_acceleration`). What corpus_ci does with the intervals (the small-R
correction, the replication share, the parametric MAP standard errors, the normalised
difference) is in :mod:`irsim.stats.corpus_intervals`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from irsim.errors import ConfigError, InputError
from irsim.sampling.corpus import CorpusDraws, md5_shards

if TYPE_CHECKING:
    from irsim.data.collection import DocCollection

__all__ = [
    "ListSet",
    "CorpusLists",
    "md5_half",
    "split_salt",
    "corpus_lists",
    "harmonic_numbers",
    "average_precision",
    "resampled_ap",
    "corpus_acceleration",
]


# ----------------------------------------------------------------------------- lists


@dataclass(frozen=True)
class ListSet:
    """Ranked lists reduced to what AP needs.

    Parameters
    ----------
    positions : ndarray of int64, shape (P,)
        1-based ranks of the relevant retrieved documents, lists concatenated, increasing
        within a list.
    starts : ndarray of int64, shape (N + 1,)
        List ``i`` owns ``positions[starts[i]:starts[i+1]]``.
    relevant : ndarray of int64, shape (N,)
        ``R``: relevant judged documents of the list's topic (in this corpus), ``>= r``.
    length : ndarray of int64, shape (N,)
        ``L``: documents retrieved (after the depth cut).

    Examples
    --------
    >>> ls = ListSet(np.array([1, 3, 2]), np.array([0, 2, 2, 3]), np.array([3, 1, 2]),
    ...              np.array([5, 0, 4]))
    >>> len(ls), ls.retrieved.tolist(), ls.gaps().tolist(), ls.missing().tolist()
    (3, [2, 0, 1], [0, 1, 1], [1, 1, 1])
    >>> bool(np.allclose(average_precision(ls), [(1 + 2 / 3) / 3, 0.0, (1 / 2) / 2]))
    True
    """

    positions: np.ndarray
    starts: np.ndarray
    relevant: np.ndarray
    length: np.ndarray

    def __post_init__(self) -> None:
        pos = np.ascontiguousarray(self.positions, np.int64)
        starts = np.ascontiguousarray(self.starts, np.int64)
        rel = np.ascontiguousarray(self.relevant, np.int64)
        length = np.ascontiguousarray(self.length, np.int64)
        for name, arr in (("positions", pos), ("starts", starts), ("relevant", rel),
                          ("length", length)):
            object.__setattr__(self, name, arr)
            arr.setflags(write=False)
        n = len(rel)
        if starts.shape != (n + 1,) or length.shape != (n,) or pos.ndim != 1:
            raise InputError(f"ListSet: starts must have N+1 = {n + 1} entries and length N")
        if starts[0] != 0 or starts[-1] != len(pos) or (np.diff(starts) < 0).any():
            raise InputError("ListSet: starts must run from 0 to len(positions), increasing")
        r = np.diff(starts)
        if (r > rel).any():
            i = int(np.argmax(r > rel))
            raise InputError(f"ListSet: list {i} retrieves {r[i]} relevant documents but "
                             f"R = {rel[i]}")
        if len(pos):
            first = np.zeros(len(pos), bool)
            first[starts[:-1][r > 0]] = True
            step = np.diff(pos, prepend=0)
            if (pos < 1).any() or ((step <= 0) & ~first).any():
                raise InputError("ListSet: positions must be >= 1 and increase within a list")
            last = pos[starts[1:][r > 0] - 1]
            if (last > length[r > 0]).any():
                raise InputError("ListSet: a relevant position exceeds its list's length")

    def __len__(self) -> int:
        return len(self.relevant)

    @property
    def retrieved(self) -> np.ndarray:
        """``r``: relevant documents retrieved, per list."""
        return np.diff(self.starts)

    def list_of(self) -> np.ndarray:
        """(P,) the list each relevant retrieved document belongs to."""
        return np.repeat(np.arange(len(self)), self.retrieved)

    def rank_in_list(self) -> np.ndarray:
        """(P,) ``m``: 1-based index of each relevant document among its list's."""
        return np.arange(len(self.positions)) - np.repeat(self.starts[:-1], self.retrieved) + 1

    def gaps(self) -> np.ndarray:
        """(P,) non-relevant retrieved documents just before each relevant one."""
        prev = np.concatenate([[0], self.positions[:-1]])
        prev[self.starts[:-1][self.retrieved > 0]] = 0
        return self.positions - prev - 1

    def missing(self) -> np.ndarray:
        """(N,) relevant documents not retrieved, ``R - r``."""
        return self.relevant - self.retrieved

    def take(self, start: int, stop: int) -> ListSet:
        """Lists ``start:stop`` as a ListSet of their own.

        Examples
        --------
        >>> ls = ListSet(np.array([1, 3, 2]), np.array([0, 2, 3]), np.array([3, 2]),
        ...              np.array([5, 4]))
        >>> part = ls.take(1, 2)
        >>> part.positions.tolist(), part.starts.tolist(), part.relevant.tolist()
        ([2], [0, 1], [2])
        """
        a, b = int(self.starts[start]), int(self.starts[stop])
        return ListSet(self.positions[a:b], self.starts[start:stop + 1] - a,
                       self.relevant[start:stop], self.length[start:stop])


# ----------------------------------------------------------------------------- corpus lists


@dataclass(frozen=True)
class CorpusLists:
    """The ranked lists of a document-level collection, for the full corpus and its halves.

    Lists are ordered run-major: list ``s * T + t`` is run ``systems[s]`` on topic
    ``topics[t]`` (empty if the run lacks the topic).

    Attributes
    ----------
    systems, topics : tuple of str
    full : ListSet
    halves : tuple of (ListSet, ListSet)
        Per split ``k``: the lists and qrels restricted to the documents of half A and of
        half B of that split (empty: no split).
    salts : tuple of str
        Per split, the salt prefixed to the docno before hashing (:func:`split_salt`).
    rel : int
        Relevance threshold the lists were built with (grade >= `rel`).

    Examples
    --------
    >>> ls = ListSet(np.array([1]), np.array([0, 1, 1]), np.array([1, 2]), np.array([3, 3]))
    >>> cl = CorpusLists(("run1",), ("401", "402"), ls)
    >>> cl.split, cl.splits, cl.half_a is None
    (False, 0, True)
    """

    systems: tuple[str, ...]
    topics: tuple[str, ...]
    full: ListSet
    halves: tuple[tuple[ListSet, ListSet], ...] = ()
    salts: tuple[str, ...] = ()
    rel: int = 1

    @property
    def split(self) -> bool:
        """Whether the halves are present."""
        return bool(self.halves)

    @property
    def splits(self) -> int:
        """Number of splits held."""
        return len(self.halves)

    @property
    def half_a(self) -> ListSet | None:
        """Half A of split 0 (the unsalted rule), or None."""
        return self.halves[0][0] if self.halves else None

    @property
    def half_b(self) -> ListSet | None:
        """Half B of split 0, or None."""
        return self.halves[0][1] if self.halves else None

    def describe(self) -> dict:
        """Summary for the manifest and the report header (the relevance threshold is part
        of the metric's name: ``AP (relevant: grade >= 2)``; the salts of the splits are
        recorded)."""
        return {"metrics": [f"AP (relevant: grade >= {self.rel})"],
                "systems": len(self.systems), "topics": len(self.topics),
                "source": "ranked lists of the document-level collection (corpus resampling)",
                "split_corpus": self.split, "relevance_threshold": self.rel,
                "splits": self.splits, "split_salts": list(self.salts),
                "split_rule": "half A: first bit of MD5(salt + docno) is 0"}


def split_salt(k: int) -> str:
    """The salt of split `k`: ``""`` for split 0 (Cormack & Lynam's unsalted rule),
    ``"irsim-split-<k>:"`` otherwise; it is prefixed to the docno before hashing.

    Examples
    --------
    >>> split_salt(0), split_salt(3)
    ('', 'irsim-split-3:')
    """
    k = int(k)
    if k < 0:
        raise ConfigError(f"split number must be >= 0, got {k}")
    return "" if k == 0 else f"irsim-split-{k}:"


def md5_half(docnos: Sequence[str] | np.ndarray, salt: str = "") -> np.ndarray:
    """True for documents of half A: the first bit of the MD5 digest of ``salt + docno``
    (UTF-8) is 0 (Cormack & Lynam split TREC-6 "using an MD5 hash on the document
    identifier"; with the empty salt this is their rule).

    Examples
    --------
    >>> md5_half(["FBIS3-1", "LA010189-0001", "d1-1", "d1-2"]).tolist()
    [True, True, False, True]
    >>> import hashlib
    >>> bool(md5_half(["d1-1"], "irsim-split-1:")[0]) == (
    ...     hashlib.md5(b"irsim-split-1:d1-1").digest()[0] < 128)
    True
    """
    return md5_shards(docnos, 2, salt) == 0


def _lists(group: np.ndarray, rank: np.ndarray, relevant: np.ndarray, n_lists: int,
           R: np.ndarray) -> ListSet:
    """A ListSet from rows (sorted by list, then rank) with 0-based ranks."""
    length = np.bincount(group, minlength=n_lists)
    hit = relevant
    starts = np.concatenate([[0], np.cumsum(np.bincount(group[hit], minlength=n_lists))])
    return ListSet(rank[hit] + 1, starts, R, length)


def corpus_lists(docs: DocCollection, *, rel: int = 1, split: bool = True, splits: int = 1
                 ) -> CorpusLists:
    """Rank every run's lists as trec_eval does and reduce them to :class:`ListSet`.

    Input is validated by :func:`irsim.metrics.evaluate` (duplicates, missing topics per
    ``docs.missing``, ...); its topic set is kept, minus topics without a relevant document
    (AP is undefined there). Ranking: score descending, ties by docno descending; lists
    cut at ``docs.depth``. Relevant: grade >= `rel`. With `split`, the halves of `splits`
    MD5 splits (split ``k`` hashes ``split_salt(k) + docno``; split 0 is the unsalted rule).

    Examples
    --------
    >>> from irsim.data.collection import DocCollection
    >>> from irsim.data.synthetic import synthetic_trec
    >>> runs, qrels = synthetic_trec(runs=2, topics=3, docs_per_topic=40, depth=30, seed=1)
    >>> cl = corpus_lists(DocCollection(runs, qrels, 30))
    >>> cl.systems, cl.topics, len(cl.full), int(cl.full.length.max())
    (('run1', 'run2'), ('1', '2', '3'), 6, 30)
    >>> bool((cl.half_a.length + cl.half_b.length == cl.full.length).all())
    True
    >>> three = corpus_lists(DocCollection(runs, qrels, 30), splits=3)
    >>> three.splits, three.salts, bool((three.halves[0][0].positions == cl.half_a.positions
    ...                                   ).all())
    (3, ('', 'irsim-split-1:', 'irsim-split-2:'), True)
    """
    import pandas as pd

    from irsim.metrics import evaluate

    runs, qrels, depth = docs.runs, docs.qrels, docs.depth
    measure = "AP" if rel == 1 else f"AP(rel={rel})"
    matrix = evaluate(runs, qrels, [measure], depth=depth, missing=docs.missing)
    topics = np.asarray(matrix.topics, dtype=object)
    qtopic = pd.Categorical(np.asarray(qrels.topic, dtype=object), categories=topics).codes
    qgrade = np.asarray(qrels.grade, np.int64)
    is_rel = (qgrade >= rel) & (qtopic >= 0)
    R_topic = np.bincount(qtopic[is_rel], minlength=len(topics))
    keep_topic = R_topic > 0
    if not keep_topic.any():
        raise InputError("no topic has a relevant document: AP is undefined everywhere",
                         file=qrels.source or "qrels")
    remap = np.cumsum(keep_topic) - 1
    topics, R_topic = topics[keep_topic], R_topic[keep_topic]
    T, S = len(topics), len(runs.names)

    tcode = pd.Categorical(np.asarray(runs.topic, dtype=object), categories=topics).codes
    dcode, vocab = runs.docno_codes()
    run = np.asarray(runs.run, np.int64)
    score = np.asarray(runs.score, np.float64)
    rows = np.flatnonzero(tcode >= 0)
    run, tc, dc, score = run[rows], tcode[rows].astype(np.int64), dcode[rows], score[rows]
    order = np.lexsort((-dc, -score, tc, run))
    run, tc, dc = run[order], tc[order], dc[order]
    group = run * T + tc
    head = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))
    rank = np.arange(len(group)) - np.repeat(head, np.diff(np.append(head, len(group))))
    if depth is not None:
        cut = rank < depth
        group, rank, tc, dc = group[cut], rank[cut], tc[cut], dc[cut]

    # grades of the retrieved documents; relevant counts per topic (and per half)
    qdoc = np.asarray(qrels.docno, dtype=object)
    qd = pd.Index(vocab).get_indexer(qdoc)
    qt = np.where(qtopic >= 0, remap[np.maximum(qtopic, 0)], -1)
    qt[(qtopic >= 0) & ~keep_topic[np.maximum(qtopic, 0)]] = -1
    V = max(len(vocab), 1)
    ok = (qd >= 0) & (qt >= 0)
    qkey = qt[ok] * V + qd[ok]
    qorder = np.argsort(qkey)
    qkey, qrel = qkey[qorder], is_rel[ok][qorder]
    key = tc * V + dc
    pos = np.minimum(np.searchsorted(qkey, key), max(len(qkey) - 1, 0))
    relevant = (qkey[pos] == key) & qrel[pos] if len(qkey) else np.zeros(len(key), bool)

    n_lists = S * T
    full = _lists(group, rank, relevant, n_lists, np.tile(R_topic, S))
    if not split:
        return CorpusLists(tuple(runs.names), tuple(topics), full, rel=int(rel))
    if isinstance(splits, bool) or int(splits) != splits or splits < 1:
        raise ConfigError(f"splits must be an integer >= 1, got {splits!r}")

    # judged documents the runs do not retrieve are hashed apart (each distinct docno once)
    outside = np.flatnonzero(qd < 0)
    extra, extra_code = np.unique(qdoc[outside].astype(str), return_inverse=True)
    halves, salts = [], []
    for k in range(int(splits)):  # a few splits; each is vectorised over documents
        salt = split_salt(k)
        in_a_vocab = md5_half(vocab, salt)
        in_a_q = np.zeros(len(qd), bool)
        inside = qd >= 0
        in_a_q[inside] = in_a_vocab[qd[inside]]
        in_a_q[outside] = md5_half(extra, salt)[extra_code]
        pair = []
        for want in (True, False):
            mine = in_a_vocab[dc] == want
            g = group[mine]
            hd = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]])) if len(g) else \
                np.zeros(0, np.int64)
            r = np.arange(len(g)) - np.repeat(hd, np.diff(np.append(hd, len(g))))
            rel_half = is_rel & (in_a_q == want) & (qt >= 0)
            R_half = np.bincount(qt[rel_half], minlength=T)
            pair.append(_lists(g, r, relevant[mine], n_lists, np.tile(R_half, S)))
        halves.append((pair[0], pair[1]))
        salts.append(salt)
    return CorpusLists(tuple(runs.names), tuple(topics), full, tuple(halves), tuple(salts),
                       int(rel))


# ----------------------------------------------------------------------------- AP


_H_CACHE: list[np.ndarray] = [np.zeros(1)]


def harmonic_numbers(n: int) -> np.ndarray:
    """``H[0..n]`` with ``H[0] = 0``, ``H[i] = sum_{j <= i} 1/j`` (a shared, growing table;
    entries never change as it grows, so results do not depend on its size).

    Examples
    --------
    >>> harmonic_numbers(3).tolist()
    [0.0, 1.0, 1.5, 1.8333333333333333]
    """
    table = _H_CACHE[0]
    if len(table) <= n:
        size = max(n + 1, 2 * len(table), 4096)
        table = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, size, dtype=np.float64))])
        table.setflags(write=False)
        _H_CACHE[0] = table
    return table[: n + 1]


def _segments(lists: ListSet) -> tuple[np.ndarray, np.ndarray]:
    """(mask of non-empty lists, start offsets of the non-empty lists)."""
    nonempty = lists.retrieved > 0
    return nonempty, lists.starts[:-1][nonempty]


def _segment_sum(x: np.ndarray, nonempty: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """Per-list sums of the columns of `x` (rows independent), 0 for empty lists."""
    out = np.zeros(x.shape[:-1] + (len(nonempty),), dtype=x.dtype)
    if len(heads):
        out[..., nonempty] = np.add.reduceat(x, heads, axis=-1)
    return out


def _segment_cumsum(x: np.ndarray, heads: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """Inclusive prefix sums restarting at every list (integers: exact)."""
    y = x.copy()
    if len(heads) > 1:
        y[..., heads[1:]] -= sums[..., :-1]
    return np.cumsum(y, axis=-1, out=y)


def average_precision(lists: ListSet) -> np.ndarray:
    """AP of every list, ``(1/R) sum_m m / q_m`` (0 when ``R = 0``), as trec_eval's ``map``.

    Examples
    --------
    >>> ls = ListSet(np.array([2, 4]), np.array([0, 2]), np.array([3]), np.array([10]))
    >>> round(float(average_precision(ls)[0]), 6)    # (1/2 + 2/4) / 3
    0.333333
    """
    nonempty, heads = _segments(lists)
    prec = lists.rank_in_list() / lists.positions
    s = _segment_sum(prec, nonempty, heads)
    return np.divide(s, lists.relevant, out=np.zeros(len(lists)), where=lists.relevant > 0)


def resampled_ap(lists: ListSet, draws: CorpusDraws) -> np.ndarray:
    """AP* of every list for every replicate of the corpus bootstrap, in closed form.

    Parameters
    ----------
    lists : ListSet
        N lists with P relevant retrieved documents in all.
    draws : CorpusDraws
        ``copies`` and ``gaps`` of shape (reps, P), ``missing`` of shape (reps, N)
        (:func:`irsim.sampling.corpus.corpus_draws` with ``lists.gaps()`` and
        ``lists.missing()``).

    Returns
    -------
    ndarray, shape (reps, N)
        ``AP*``; 0 where ``R* = 0`` (no relevant copy at all), as trec_eval scores a topic
        without relevant documents.

    Notes
    -----
    With ``ck`` the relevant copies up to and including a relevant document's own ``k``
    and ``n`` the non-relevant copies before it, its copies sit at ranks
    ``p+1..p+k``, ``p = ck - k + n``, and add ``k - n (H(ck + n) - H(ck + n - k))``.
    Prefix sums are integers (exact); each replicate row is computed independently.

    Examples
    --------
    One list, relevant at ranks 1 and 3 of 4, R = 3. With every document copied once
    (and the missing relevant document too), AP* is the AP of the list:

    >>> from irsim.sampling.corpus import CorpusDraws
    >>> ls = ListSet(np.array([1, 3]), np.array([0, 2]), np.array([3]), np.array([4]))
    >>> once = CorpusDraws(np.array([[1, 1]]), ls.gaps()[None], np.array([[1]]))
    >>> round(float(resampled_ap(ls, once)[0, 0]), 6), round(float(average_precision(ls)[0]), 6)
    (0.555556, 0.555556)

    Doubling the first document (list r r n r, R* = 4): (1 + 1 + 3/4) / 4.

    >>> twice = CorpusDraws(np.array([[2, 1]]), ls.gaps()[None], np.array([[1]]))
    >>> float(resampled_ap(ls, twice)[0, 0])
    0.6875
    """
    k, g, miss = draws.copies, draws.gaps, draws.missing
    reps = k.shape[0]
    if k.shape != (reps, len(lists.positions)) or g.shape != k.shape or \
            miss.shape != (reps, len(lists)):
        raise InputError(f"draws of shape {k.shape}/{g.shape}/{miss.shape} do not fit "
                         f"{len(lists)} lists with {len(lists.positions)} relevant documents")
    nonempty, heads = _segments(lists)
    ksum = _segment_sum(k, nonempty, heads)
    rstar = ksum + miss
    out = np.zeros((reps, len(lists)))
    if len(heads) == 0:
        return out
    ck = _segment_cumsum(k, heads, ksum[:, nonempty])
    n = _segment_cumsum(g, heads, _segment_sum(g, nonempty, heads)[:, nonempty])
    q1 = ck.astype(np.int64)
    q1 += n
    top = int(q1.max()) if q1.size else 0
    h = harmonic_numbers(top)
    d = np.take(h, q1)
    q1 -= k
    d -= np.take(h, q1)
    d *= n
    term = k - d
    s = _segment_sum(term, nonempty, heads)
    np.divide(s, rstar, out=out, where=rstar > 0)
    return out


def _padded(lists: ListSet) -> tuple[np.ndarray, np.ndarray]:
    """(N, r_max) relevant positions as float (NaN padding) and their 1-based index m."""
    r = lists.retrieved
    width = max(1, int(r.max()) if len(r) else 1)
    q = np.full((len(lists), width), np.nan)
    m = lists.rank_in_list()
    q[lists.list_of(), m - 1] = lists.positions
    return q, np.arange(1, width + 1, dtype=np.float64)[None, :]


def corpus_acceleration(lists: ListSet) -> np.ndarray:
    """BCa acceleration of AP under corpus resampling, by the jackknife over documents.

    Deleting one document of the corpus changes AP only if it is retrieved before the
    last relevant retrieved document or is relevant. With ``theta`` the AP and
    ``theta_(i)`` the AP without document ``i``, and the unaffected documents of an
    infinite corpus contributing nothing, Efron's ``a = sum U^3 / (6 (sum U^2)^{3/2})``
    becomes ``a = sum w d^3 / (6 (sum w d^2)^{3/2})`` over the affected documents with
    ``d = theta - theta_(i)`` and multiplicities ``w``: every non-relevant document in
    the gap before relevant document ``m`` (same value), each relevant retrieved document,
    and the ``R - r`` relevant documents not retrieved. 0 when no deletion changes AP.

    Examples
    --------
    Against the jackknife written out: delete each non-relevant document before rank 9,
    each relevant one, and the one relevant document not retrieved:

    >>> ls = ListSet(np.array([1, 5, 9]), np.array([0, 3]), np.array([4]), np.array([20]))
    >>> def ap(pos, R): return sum((i + 1) / q for i, q in enumerate(pos)) / R
    >>> pos, t = [1, 5, 9], ap([1, 5, 9], 4)
    >>> d = [t - ap([q - (q > g) for q in pos], 4) for g in (2, 3, 4, 6, 7, 8)]
    >>> d += [t - ap([q - (q > p) for q in pos if q != p], 3) for p in pos] + [t - ap(pos, 3)]
    >>> d = np.array(d)
    >>> bool(np.isclose(corpus_acceleration(ls)[0], (d**3).sum() / (6 * (d**2).sum() ** 1.5)))
    True
    """
    q, m = _padded(lists)
    valid = ~np.isnan(q)
    big_r = lists.relevant.astype(np.float64)[:, None]
    a = np.where(valid, m / q, 0.0)
    qm1 = np.where(valid & (q > 1), q - 1.0, np.inf)
    b = np.where(valid, m / qm1, 0.0)
    c = np.where(valid, (m - 1.0) / qm1, 0.0)
    a_excl = np.cumsum(a, axis=1) - a                       # sum_{j<m} a_j
    b_from = np.cumsum(b[:, ::-1], axis=1)[:, ::-1]         # sum_{j>=m} b_j
    c_after = np.cumsum(c[:, ::-1], axis=1)[:, ::-1] - c    # sum_{j>m} c_j
    total = a.sum(axis=1, keepdims=True)
    theta = np.divide(total, big_r, out=np.zeros_like(total), where=big_r > 0)
    r1 = big_r - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        gap_val = (a_excl + b_from) / big_r
        rel_val = np.where(r1 > 0, (a_excl + c_after) / r1, 0.0)
        miss_val = np.where(r1 > 0, total / r1, 0.0)
    gaps = np.zeros_like(q)
    gaps[lists.list_of(), lists.rank_in_list() - 1] = lists.gaps()
    d_gap = np.where(valid, theta - gap_val, 0.0)
    d_rel = np.where(valid, theta - rel_val, 0.0)
    d_miss = (theta - miss_val)[:, 0]
    w_miss = lists.missing().astype(np.float64)
    s2 = (gaps * d_gap**2 + d_rel**2).sum(axis=1) + w_miss * d_miss**2
    s3 = (gaps * d_gap**3 + d_rel**3).sum(axis=1) + w_miss * d_miss**3
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = s3 / (6.0 * s2**1.5)
    return np.where(s2 > 0, acc, 0.0)
