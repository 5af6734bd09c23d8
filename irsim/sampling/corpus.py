"""Corpus resampling (Cormack & Lynam 2006): Poisson(1) copies of every document.

The bootstrap corpus replaces each document by ``k ~ Poisson(1)`` copies. A retrieved list
``S`` becomes ``S*`` with every document repeated ``k`` times in place (consecutive copies),
and each relevant document that was not retrieved still counts ``k`` times in ``R*``.

Average precision needs only, for every relevant retrieved document, its own number of
copies and the number of non-relevant copies in the gap before it (since the previous
relevant one), plus the copies of the relevant documents not retrieved. A sum of ``g``
independent Poisson(1) counts is Poisson(g), so these are drawn directly:

- ``copies``  ~ Poisson(1), one per relevant retrieved document;
- ``gaps``    ~ Poisson(g), ``g`` = non-relevant retrieved documents just before it;
- ``missing`` ~ Poisson(R - r), one per list (``r`` relevant retrieved of ``R``).

This is exactly the distribution of the document-by-document resampling (the per-document
counts of a gap sum to the gap draw), with 2r + 1 draws per list instead of one per
retrieved document. :mod:`irsim.stats.corpus_ap` turns the draws into AP* in closed form.

Draws are exact inversions of double-precision uniforms, through per-mean inverse-cdf
tables with a guide table (Devroye's indexed search), about 5x faster than
``Generator.poisson`` with a vector of means. Replicates are drawn in fixed blocks keyed by
block index (:func:`irsim.rng.blocked_draws`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from irsim.errors import ConfigError
from irsim.rng import REPLICATE_BLOCK, blocked_draws

__all__ = [
    "md5_shards",
    "GUIDE_BUCKETS",
    "PoissonTable",
    "CorpusDraws",
    "CorpusSampler",
    "poisson_table",
    "poisson_inverse",
    "poisson_counts",
    "corpus_draws",
]

#: Buckets of the guide table (a power of two, so ``u * GUIDE_BUCKETS`` is exact).
GUIDE_BUCKETS = 4096


@dataclass(frozen=True)
class PoissonTable:
    """Inverse-cdf tables for a set of integer Poisson means.

    Attributes
    ----------
    means : ndarray of int64, shape (m,)
        Distinct means, sorted.
    cdf : ndarray, shape (m, width)
        ``cdf[i, k] = P(X <= k)`` for ``X ~ Poisson(means[i])``; the last column is 1 (the
        tail beyond it, below 1e-20, is folded into it).
    guide : ndarray of int64, shape (m * GUIDE_BUCKETS,)
        For bucket ``j`` of row ``i`` (``u`` in ``[j/G, (j+1)/G)``) the smallest possible
        answer ``k``; stored as ``-(k + 1)`` when the bucket holds a cdf step, i.e. when
        ``u`` must still be compared with the cdf.
    upper : ndarray of int64, shape (m * GUIDE_BUCKETS,)
        The largest possible answer in each bucket (the search range of a flagged one).

    Examples
    --------
    >>> t = poisson_table(np.array([2]))
    >>> t.cdf.shape[0], t.guide.shape == t.upper.shape == (GUIDE_BUCKETS,)
    (1, True)
    """

    means: np.ndarray
    cdf: np.ndarray
    guide: np.ndarray
    upper: np.ndarray


def poisson_table(means: np.ndarray) -> PoissonTable:
    """Tables for the distinct values of `means` (non-negative integers).

    Examples
    --------
    >>> t = poisson_table(np.array([3, 0, 1, 1]))
    >>> t.means.tolist(), t.cdf.shape[0], bool(t.cdf[0, 0] == 1.0)
    ([0, 1, 3], 3, True)
    """
    m = np.asarray(means)
    if m.size and (not np.issubdtype(m.dtype, np.integer) and
                   not np.array_equal(m, np.round(m))):
        raise ValueError("Poisson means must be integers")
    distinct = np.unique(m.astype(np.int64))
    if distinct.size == 0:
        distinct = np.zeros(1, np.int64)
    if distinct[0] < 0:
        raise ValueError(f"Poisson means must be >= 0, got {int(distinct[0])}")
    top = int(distinct[-1])
    width = int(top + 14 * math.sqrt(top) + 40)
    cdf = sps.poisson.cdf(np.arange(width)[None, :], distinct[:, None].astype(np.float64))
    cdf = np.maximum.accumulate(cdf, axis=1)
    cdf[:, -1] = 1.0
    edges = np.arange(GUIDE_BUCKETS + 1, dtype=np.float64) / GUIDE_BUCKETS
    g = GUIDE_BUCKETS
    guide = np.empty((len(distinct), g), np.int64)
    upper = np.empty((len(distinct), g), np.int64)
    for i in range(len(distinct)):  # table construction: one row per distinct mean
        first = np.searchsorted(cdf[i], edges, side="right")  # min k with cdf[k] > edge
        first = np.minimum(first, width - 1)
        pure = cdf[i, first[:-1]] >= edges[1:]
        guide[i] = np.where(pure, first[:-1], -(first[:-1] + 1))
        upper[i] = first[1:]
    return PoissonTable(distinct, cdf, guide.ravel(), upper.ravel())


def poisson_inverse(u: np.ndarray, which: np.ndarray, table: PoissonTable) -> np.ndarray:
    """Poisson counts by inversion: the smallest ``k`` with ``u < cdf(k)``.

    One guide-table lookup per draw; the few draws whose bucket holds a cdf step are
    finished by a binary search between the bucket's bounds.

    Parameters
    ----------
    u : ndarray of float64, shape (..., p)
        Uniforms in [0, 1).
    which : ndarray of int, shape (p,)
        Row of `table` (index into ``table.means``) of each column.
    table : PoissonTable

    Returns
    -------
    ndarray of int64, shape of `u`

    Examples
    --------
    >>> t = poisson_table(np.array([0, 1]))
    >>> poisson_inverse(np.array([[0.1, 0.3, 0.5, 0.99]]), np.array([0, 1, 1, 1]), t).tolist()
    [[0, 0, 1, 4]]
    """
    g = GUIDE_BUCKETS
    base = np.asarray(which, np.int64) * g
    j = np.multiply(u, g).astype(np.int64)
    j += base
    k = np.take(table.guide, j)
    flat = k.reshape(-1)
    fix = np.flatnonzero(flat < 0)
    if fix.size:
        jj = j.reshape(-1)[fix]
        lo = -flat[fix] - 1
        hi = np.take(table.upper, jj)
        uu = u.reshape(-1)[fix]
        row = np.asarray(which, np.int64)[fix % u.shape[-1]] * table.cdf.shape[1]
        cdf = table.cdf.reshape(-1)
        while True:  # binary search, at most log2(width) rounds over the flagged draws
            open_ = lo < hi
            if not open_.any():
                break
            mid = (lo + hi) >> 1
            right = uu >= cdf[row + mid]
            lo = np.where(open_ & right, mid + 1, lo)
            hi = np.where(open_ & ~right, mid, hi)
        flat[fix] = lo
    return k


def poisson_counts(
    seed: int, study: str, means: np.ndarray, start: int, stop: int, *,
    key: tuple[int, ...] = (), block: int = REPLICATE_BLOCK,
) -> np.ndarray:
    """Replicates ``start:stop`` of independent Poisson counts with integer `means`.

    Replicate block ``b`` is ``poisson_inverse(rng.random((block, p)))`` with
    ``rng = rng_for(seed, study, *key, b)``, so a replicate is the same however the
    range is split.

    Returns
    -------
    ndarray of int32, shape (stop - start, len(means))

    Examples
    --------
    >>> c = poisson_counts(0, "demo", np.array([1, 5, 0]), 0, 4000)
    >>> c.shape, np.round(c.mean(axis=0), 1).tolist()
    ((4000, 3), [1.0, 5.0, 0.0])
    >>> part = poisson_counts(0, "demo", np.array([1, 5, 0]), 250, 260)
    >>> bool((part == c[250:260]).all())
    True
    """
    means = np.asarray(means)
    table = poisson_table(means)
    which = np.searchsorted(table.means, means.astype(np.int64)).astype(np.int32)
    p = len(means)
    return blocked_draws(
        seed, study, key, start, stop,
        lambda rng, m: poisson_inverse(rng.random((m, p)), which, table), block=block,
    )


@dataclass(frozen=True)
class CorpusDraws:
    """Poisson corpus-resampling counts for a set of ranked lists (see module docstring).

    Attributes
    ----------
    copies : ndarray of int32, shape (reps, P)
        Copies of each relevant retrieved document.
    gaps : ndarray of int32, shape (reps, P)
        Non-relevant copies between it and the previous relevant document of its list.
    missing : ndarray of int32, shape (reps, N)
        Copies of the relevant documents each list did not retrieve.

    Examples
    --------
    >>> d = CorpusDraws(np.array([[1, 2]]), np.array([[0, 3]]), np.array([[1]]))
    >>> d.copies.shape, d.missing.shape
    ((1, 2), (1, 1))
    """

    copies: np.ndarray
    gaps: np.ndarray
    missing: np.ndarray


class CorpusSampler:
    """Corpus-bootstrap draws for fixed lists: the Poisson tables are built once.

    Parameters
    ----------
    gaps : ndarray of int, shape (P,)
        For each relevant retrieved document (lists concatenated), the number of
        non-relevant retrieved documents between it and the previous relevant one (or the
        top of the list).
    missing : ndarray of int, shape (N,)
        Relevant documents each list did not retrieve (``R - r``).

    Examples
    --------
    >>> s = CorpusSampler(np.array([0, 3, 2]), np.array([1, 0]))
    >>> d = s.draws(1, "demo", 0, 2000)
    >>> d.copies.shape, d.gaps.shape, d.missing.shape
    ((2000, 3), (2000, 3), (2000, 2))
    >>> np.round(d.gaps.mean(axis=0)).tolist(), np.round(d.copies.mean(axis=0)).tolist()
    ([0.0, 3.0, 2.0], [1.0, 1.0, 1.0])
    """

    def __init__(self, gaps: np.ndarray, missing: np.ndarray):
        gaps = np.asarray(gaps, np.int64)
        missing = np.asarray(missing, np.int64)
        if gaps.ndim != 1 or missing.ndim != 1:
            raise ValueError("gaps and missing must be 1-d")
        if (gaps < 0).any() or (missing < 0).any():
            raise ValueError("gaps and missing must be >= 0")
        self.p, self.n = len(gaps), len(missing)
        means = np.concatenate([gaps, np.ones(self.p, np.int64), missing])
        self.table = poisson_table(means)
        self.which = np.searchsorted(self.table.means, means).astype(np.int32)

    def draws(self, seed: int, study: str, start: int, stop: int, *,
              key: tuple[int, ...] = (), block: int = REPLICATE_BLOCK) -> CorpusDraws:
        """Replicates ``start:stop``, drawn in blocks of `block` keyed by
        ``(seed, study, P, N, *key, block index)``."""
        p, width = self.p, 2 * self.p + self.n
        counts = blocked_draws(
            seed, study, (self.p, self.n, *key), start, stop,
            lambda rng, m: poisson_inverse(rng.random((m, width)), self.which, self.table),
            block=block,
        )
        return CorpusDraws(counts[:, p:2 * p], counts[:, :p], counts[:, 2 * p:])


def corpus_draws(
    seed: int, study: str, gaps: np.ndarray, missing: np.ndarray, start: int, stop: int, *,
    key: tuple[int, ...] = (), block: int = REPLICATE_BLOCK,
) -> CorpusDraws:
    """Corpus-bootstrap replicates ``start:stop`` for lists described by their gaps
    (:class:`CorpusSampler` for one call).

    Examples
    --------
    >>> d = corpus_draws(1, "demo", np.array([0, 3, 2]), np.array([1, 0]), 0, 10)
    >>> bool((d.gaps[:, 0] == 0).all())
    True
    """
    return CorpusSampler(gaps, missing).draws(seed, study, start, stop, key=key, block=block)


def md5_shards(docnos: Sequence[str] | np.ndarray, k: int, salt: str = "") -> np.ndarray:
    """The shard (0 .. k-1) of each document: the first 64 bits of the MD5 digest of
    ``salt + docno`` (UTF-8) as an unsigned integer ``h``, shard ``floor(h k / 2^64)``.

    With ``k = 2`` the shard is the digest's first bit: shard 0 is
    :func:`irsim.stats.corpus_ap.md5_half`'s half A (the one hash of a document split:
    corpus_ci's halves and the document shards of :mod:`irsim.metrics.shards`).

    Examples
    --------
    >>> import hashlib
    >>> d = ["FBIS3-1", "LA010189-0001", "d1-1", "d1-2"]
    >>> (md5_shards(d, 2) == 0).tolist()  # md5_half(d): [True, True, False, True]
    [True, True, False, True]
    >>> h = int.from_bytes(hashlib.md5(b"s:d1-1").digest()[:8], "big")
    >>> int(md5_shards(["d1-1"], 5, "s:")[0]) == h * 5 >> 64
    True
    """
    if isinstance(k, bool) or int(k) != k or int(k) < 1:
        raise ConfigError(f"shards must be a positive integer, got {k!r}")
    k, prefix = int(k), str(salt)
    return np.fromiter(((int.from_bytes(hashlib.md5((prefix + str(d)).encode("utf-8"))
                                        .digest()[:8], "big") * k) >> 64 for d in docnos),
                       dtype=np.int64, count=len(docnos))
