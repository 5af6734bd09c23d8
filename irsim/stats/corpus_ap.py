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
(:func:`corpus_acceleration`), the small-R correction (silver bullets for AP = 0, lead
balloons for AP = 1, with E(AP) by dynamic programming: :func:`small_r_bounds`,
:func:`small_r_correct`), the replication share ``2 Phi(z/sqrt 2) - 1``
(:func:`replication_within`), the parametric (delta-method) MAP / L-MAP standard errors
(:func:`map_parametric`) and the normalised difference of the other half's AP to an
interval (:func:`normalised_difference`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from scipy import special
from scipy import stats as sps

from irsim.errors import ConfigError, InputError
from irsim.sampling.corpus import CorpusDraws

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
    "silver_bullet_share",
    "expected_ap_random_ranks",
    "small_r_bounds",
    "small_r_correct",
    "replication_within",
    "logit_sd_from_interval",
    "map_parametric",
    "normalised_difference",
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
    prefix = str(salt)
    return np.fromiter((hashlib.md5((prefix + str(d)).encode("utf-8")).digest()[0] < 128
                        for d in docnos), dtype=bool, count=len(docnos))


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


# ----------------------------------------------------------------------------- small R


def silver_bullet_share(R: np.ndarray | int, alpha: float = 0.05) -> np.ndarray:
    """Upper confidence limit of the share of relevant documents a system could find but
    none of whose ``R`` sampled ones it found: the smallest ``u`` with ``(1-u)^R <=
    alpha``, i.e. ``u = 1 - alpha^(1/R)`` (also the lead-balloon share for AP = 1).

    Examples
    --------
    >>> u = float(silver_bullet_share(4, 0.05))
    >>> bool(np.isclose((1 - u) ** 4, 0.05))
    True
    """
    r = np.asarray(R, np.float64)
    with np.errstate(divide="ignore"):
        return np.where(r > 0, 1.0 - alpha ** (1.0 / np.maximum(r, 1.0)), 1.0)


def expected_ap_random_ranks(R: int, n: int, random: np.ndarray, top: np.ndarray
                             ) -> np.ndarray:
    """E(AP) when `random` relevant documents sit at uniformly random distinct ranks of
    ``1..n`` and `top` more fill the best remaining ranks (AP over ``R``), by dynamic
    programming over ranks.

    The state after rank ``r`` is the number ``b`` of random documents among ranks
    ``1..r``; rank ``r+1`` holds one of the remaining ``random - b`` with probability
    ``(random - b)/(n - r)``; precision at a relevant rank is (random so far + top placed so
    far) / rank. Once ``r0 = top + random`` ranks are done every top document is placed,
    and the remaining ``m = random - b`` documents are uniform on the ``N = n - r0`` ranks
    left, which closes the sum: ``E = (m/N) [(top + b + 1) D + (m-1)/(N-1) (N - (r0+1) D)]``
    with ``D = H(n) - H(r0)``. So the loop runs over at most ``top + random`` ranks.
    Vectorised over the entries of `random` / `top`.

    Parameters
    ----------
    R : int
        Normaliser of AP (relevant documents of the topic).
    n : int
        Ranks available (``random + top <= n``).
    random, top : ndarray of int, same shape

    Returns
    -------
    ndarray
        E(AP) per entry.

    Examples
    --------
    One relevant document at a uniformly random rank of 4: E(1/rank) = H(4)/4.

    >>> float(expected_ap_random_ranks(1, 4, np.array([1]), np.array([0]))[0])
    0.5208333333333333
    >>> float(expected_ap_random_ranks(2, 5, np.array([0]), np.array([2]))[0])
    1.0
    """
    j = np.asarray(random, np.int64).ravel()
    t = np.asarray(top, np.int64).ravel()
    if (j + t > n).any() or (j < 0).any() or (t < 0).any():
        raise ConfigError(f"need 0 <= random + top <= n = {n}")
    width = int(j.max()) + 2 if len(j) else 2
    prob = np.zeros((len(j), width))
    prob[:, 0] = 1.0
    b = np.arange(width, dtype=np.float64)[None, :]
    jj, tt = j[:, None].astype(np.float64), t[:, None].astype(np.float64)
    total = np.zeros(len(j))
    r0 = int((j + t).max()) if len(j) else 0
    for r in range(1, r0 + 1):  # dynamic programming over the first ranks (not samples)
        before = r - 1 - b                         # non-random ranks above r
        p_rand = np.clip((jj - b) / (n - r + 1), 0.0, 1.0)
        placed_top = np.minimum(tt, np.maximum(before, 0.0))
        prec_rand = (b + 1.0 + placed_top) / r
        is_top = (before < tt) & (before >= 0)
        total += (prob * (p_rand * prec_rand + (1.0 - p_rand) * is_top)).sum(axis=1)
        moved = prob * p_rand
        prob = prob - moved
        prob[:, 1:] += moved[:, :-1]
    left = n - r0                                   # the tail, in closed form
    if left > 0:
        h = harmonic_numbers(n)
        d = h[n] - h[r0]
        m = np.maximum(jj - b, 0.0)
        pair = (m - 1.0) / (left - 1) * (left - (r0 + 1) * d) if left > 1 else 0.0 * m
        tail = m / left * ((tt + b + 1.0) * d + pair)
        total += (prob * tail).sum(axis=1)
    return total / R


def _silver_upper(R: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    """E(AP) with Binomial(R, u) silver bullets at random ranks of 1..n (closed form of
    :func:`expected_ap_random_ranks` with ``top = 0``, mixed over the binomial):
    ``E[AP | j] = j/(n R) (H_n + (j-1)(n - H_n)/(n-1))``, so
    ``E[AP] = (u/n) (H_n + (R-1) u (n - H_n)/(n-1))``."""
    u = silver_bullet_share(R, alpha)
    nf = n.astype(np.float64)
    hn = harmonic_numbers(int(n.max()) if n.size else 1)[n]
    with np.errstate(divide="ignore", invalid="ignore"):
        second = np.where(n > 1, (R - 1) * u * (nf - hn) / (nf - 1.0), 0.0)
    return u / nf * (hn + second)


@lru_cache(maxsize=4096)
def _lead_lower(R: int, n: int, alpha: float) -> float:
    """E(AP) with Binomial(R, u) lead balloons at random ranks and the other relevant
    documents at the top (dynamic programming, mixed over the binomial)."""
    u = float(silver_bullet_share(R, alpha))
    j = np.arange(R + 1)
    pmf = sps.binom.pmf(j, R, u)
    keep = pmf > 1e-17 * pmf.max()
    e = expected_ap_random_ranks(R, n, j[keep], R - j[keep])
    return float((pmf[keep] * e).sum() / pmf[keep].sum())


def small_r_bounds(R: np.ndarray, length: np.ndarray, alpha: float = 0.05
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The silver-bullet upper limit (for AP = 0) and lead-balloon lower limit (AP = 1).

    ``u = 1 - alpha^(1/R)`` (:func:`silver_bullet_share`); a new corpus holds
    ``j ~ Binomial(R, u)`` such documents. Silver bullets (AP = 0): the system would rank
    them at uniformly random ranks of ``1..n``, the other relevant documents not at all.
    Lead balloons (AP = 1): the system ranks them at uniformly random ranks, the others at
    the top. The limits are the E(AP) of these worst cases
    (:func:`expected_ap_random_ranks`); ``n = max(L, R)``.

    Returns
    -------
    upper_if_zero, lower_if_one : ndarray

    Examples
    --------
    With ``R = 1`` (``u = 0.95``) the sampled relevant document is a silver bullet (or a
    lead balloon) with probability 0.95, at a uniform rank of 1..1000 (``E(AP) = H(1000) /
    1000``); otherwise AP is 0 (or 1):

    >>> up, low = small_r_bounds(np.array([1]), np.array([1000]))
    >>> h = sum(1 / k for k in range(1, 1001)) / 1000
    >>> bool(np.isclose(up[0], 0.95 * h)), bool(np.isclose(low[0], 0.05 + 0.95 * h))
    (True, True)
    """
    R = np.asarray(R, np.int64)
    n = np.maximum(np.asarray(length, np.int64), np.maximum(R, 1))
    upper = np.where(R > 0, _silver_upper(R, n, alpha), 0.0)
    lower = np.ones(R.shape)
    pairs = np.unique(np.stack([R.ravel(), n.ravel()], axis=1), axis=0)
    lookup = {(int(r), int(m)): (_lead_lower(int(r), int(m), float(alpha)) if r > 0 else 1.0)
              for r, m in pairs}
    lower.ravel()[:] = [lookup[(int(r), int(m))] for r, m in zip(R.ravel(), n.ravel(),
                                                                 strict=True)]
    return upper, lower


def small_r_correct(
    ap: np.ndarray, low: np.ndarray, high: np.ndarray, R: np.ndarray, length: np.ndarray,
    alpha: float = 0.05,
) -> tuple[np.ndarray, np.ndarray]:
    """Widen intervals for AP near 0 or 1 (Cormack & Lynam's small-R correction).

    When AP is within the interval the AP = 0 model gives (``AP <= upper_if_zero``), the
    interval becomes the union with ``[0, upper_if_zero]``; likewise with
    ``[lower_if_one, 1]`` when ``AP >= lower_if_one``. Lead-balloon limits (dynamic
    programming) are computed only for lists that can qualify (``AP >= 1 - u``).

    Examples
    --------
    AP = 0 and AP = 1 get the union with the limits of :func:`small_r_bounds`; AP = 0.2 is
    left as it is:

    >>> lo, hi = small_r_correct(np.array([0.0, 0.2, 1.0]), np.array([0.0, 0.1, 1.0]),
    ...                          np.array([0.0, 0.3, 1.0]), np.array([4, 4, 4]),
    ...                          np.array([1000, 1000, 1000]))
    >>> up, low = small_r_bounds(np.array([4]), np.array([1000]))
    >>> lo.tolist() == [0.0, 0.1, low[0]], hi.tolist() == [up[0], 0.3, 1.0]
    (True, True)
    """
    ap = np.asarray(ap, np.float64)
    R = np.asarray(R, np.int64)
    length = np.asarray(length, np.int64)
    low = np.array(low, np.float64, copy=True)
    high = np.array(high, np.float64, copy=True)
    n = np.maximum(length, np.maximum(R, 1))
    upper = np.where(R > 0, _silver_upper(R, n, alpha), 0.0)
    near0 = ap <= upper
    low[near0] = np.minimum(low[near0], 0.0)
    high[near0] = np.maximum(high[near0], upper[near0])
    u = silver_bullet_share(R, alpha)
    maybe1 = np.flatnonzero((ap >= 1.0 - u) & (R > 0))
    if maybe1.size:
        _, lower = small_r_bounds(R[maybe1], length[maybe1], alpha)
        hit = maybe1[ap[maybe1] >= lower]
        low[hit] = np.minimum(low[hit], lower[ap[maybe1] >= lower])
        high[hit] = np.maximum(high[hit], 1.0)
    return low, high


# ----------------------------------------------------------------------------- summaries


def replication_within(confidence_level: float = 0.95) -> float:
    """Share of replications expected inside a normal interval ``est +- z sigma`` built
    from another, independent replication with the same sigma: ``2 Phi(z/sqrt 2) - 1``.

    Examples
    --------
    ``est' - est`` is normal with sd ``sigma sqrt 2``: ``P(chi2_1 <= z^2 / 2)``.

    >>> z = sps.norm.ppf(0.975)
    >>> bool(np.isclose(replication_within(0.95), sps.chi2.cdf(z**2 / 2, 1)))
    True
    """
    if not 0.0 < confidence_level < 1.0:
        raise ConfigError(f"confidence_level must be in (0, 1), got {confidence_level}")
    z = special.ndtri(0.5 + confidence_level / 2.0)
    return float(2.0 * special.ndtr(z / math.sqrt(2.0)) - 1.0)


def logit_sd_from_interval(low: np.ndarray, high: np.ndarray, confidence_level: float = 0.95,
                           eps: float = 1e-5) -> np.ndarray:
    """The logit-scale sd an interval implies: ``(logit(high) - logit(low)) / (2 z)``, limits
    clamped to ``[eps, 1 - eps]`` (for the logit interval itself this is its sd).

    Examples
    --------
    >>> lo, hi = special.expit(-1 - 1.96 * 0.5), special.expit(-1 + 1.96 * 0.5)
    >>> round(float(logit_sd_from_interval(lo, hi)), 3)
    0.5
    """
    z = special.ndtri(0.5 + confidence_level / 2.0)
    lo = special.logit(np.clip(low, eps, 1.0 - eps))
    hi = special.logit(np.clip(high, eps, 1.0 - eps))
    return (hi - lo) / (2.0 * z)


def map_parametric(ap: np.ndarray, sd_logit: np.ndarray, *, eps: float = 1e-5,
                   axis: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MAP and L-MAP with standard errors from per-topic logit-model sds (delta method).

    ``var(MAP) = sum_t sd_t^2 (AP_t - AP_t^2)^2 / n^2`` (``d AP / d logit(AP) = AP(1 -
    AP)``), ``var(L-MAP) = sum_t sd_t^2 / n^2``; AP clamped to ``[eps, 1 - eps]`` for the
    logit and the weight.

    Returns
    -------
    map, se_map, lmap, se_lmap : ndarray

    Examples
    --------
    ``AP(1 - AP)`` is 0.16 and 0.25; ``(logit 0.2 + logit 0.5) / 2 = -log 2``:

    >>> m, se, lm, sel = map_parametric(np.array([0.2, 0.5]), np.array([0.4, 0.2]))
    >>> want = [0.35, np.sqrt((0.4 * 0.16) ** 2 + (0.2 * 0.25) ** 2) / 2, -np.log(2),
    ...         np.sqrt(0.4**2 + 0.2**2) / 2]
    >>> bool(np.allclose([m, se, lm, sel], want))
    True
    """
    ap = np.asarray(ap, np.float64)
    sd = np.asarray(sd_logit, np.float64)
    n = ap.shape[axis]
    c = np.clip(ap, eps, 1.0 - eps)
    w = (c - c * c) ** 2
    se_map = np.sqrt((sd**2 * w).sum(axis=axis)) / n
    se_lmap = np.sqrt((sd**2).sum(axis=axis)) / n
    return ap.mean(axis=axis), se_map, special.logit(c).mean(axis=axis), se_lmap


def normalised_difference(ap_other: np.ndarray, ap: np.ndarray, low: np.ndarray,
                          high: np.ndarray) -> np.ndarray:
    """``AP_other - AP`` scaled so that the interval ``[low, high]`` maps to ``[-1, 1]`` with
    ``AP`` at 0 (Cormack & Lynam's Figures 1-2): ``d / (high - AP)`` above, ``d / (AP -
    low)`` below. ``AP`` is first clipped into the interval (a logit interval of AP = 0 does
    not contain 0), so ``|x| <= 1`` exactly when ``AP_other`` is within; ``+-inf`` beyond a
    zero-width side, 0 when equal.

    Examples
    --------
    >>> normalised_difference(np.array([0.5, 0.1, 0.3]), np.array([0.3] * 3),
    ...                       np.array([0.2] * 3), np.array([0.4] * 3)).round(3).tolist()
    [2.0, -2.0, 0.0]
    >>> normalised_difference(np.array([0.0]), np.array([0.0]), np.array([1e-5]),
    ...                       np.array([2e-5])).tolist()
    [-inf]
    """
    centre = np.clip(ap, low, high)
    d = ap_other - centre
    with np.errstate(divide="ignore", invalid="ignore"):
        up = d / (high - centre)
        down = d / (centre - low)
    return np.where(d > 0, up, np.where(d < 0, down, 0.0))
