"""The padded (rows x ranks) block the metric kernels compute on, and per-topic ideals.

A row is one (run, topic) ranked list, cut at the evaluation depth; column ``j`` is
rank ``j + 1``. ``grade`` holds the judged grade of the document at each rank, or
``UNJUDGED`` for a document absent from the qrels and for padding past the list's end;
kernels only see derived arrays (relevance, gains and their cumulative sums), cached per
parameter set so that several measures share them.

Gain schemes
------------
``"trec"`` (trec_eval ``ndcg``): gain = ``gains.get(grade, grade)`` for judged grades
>= 0, else 0; the ideal list holds every judged document with a positive gain.
``"ntcir"`` (NTCIREVAL): gain = ``gains.get(grade, grade)`` for grades >= ``rel``, else
0 (documents below the threshold are non-relevant with no gain); the ideal list holds the
relevant documents by decreasing gain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["UNJUDGED", "GainKey", "Ideal", "Block", "discount"]

UNJUDGED = np.iinfo(np.int64).min
Scheme = Literal["trec", "ntcir"]


@dataclass(frozen=True)
class GainKey:
    """What decides a gain vector: the scheme, the threshold and the custom gains."""

    scheme: Scheme
    rel: int
    gains: tuple[tuple[int, float], ...] | None

    @staticmethod
    def trec(gains: tuple[tuple[int, float], ...] | None) -> GainKey:
        return GainKey("trec", 0, gains)

    def eligible(self, grade: np.ndarray) -> np.ndarray:
        """Mask of grades that receive a gain (UNJUDGED never does)."""
        return grade >= self.rel

    def gain(self, grade: np.ndarray) -> np.ndarray:
        """float64 gains for an integer grade array (0 where not eligible)."""
        ok = self.eligible(grade)
        out = np.where(ok, grade, 0).astype(np.float64)
        if self.gains is not None:
            for g, value in self.gains:  # a few entries, not a data loop
                out[ok & (grade == g)] = value
        return out


def discount(ranks: np.ndarray, kind: str, b: float = 2.0) -> np.ndarray:
    """Discount factors for 1-based ranks.

    ``"log2"``: 1/log2(r+1) (trec_eval, Burges). ``"orig"``: 1 for r < b, else
    1/log_b(r) (Jarvelin-Kekalainen, NTCIREVAL ``nDCG``; rank 1 is never discounted).

    Examples
    --------
    >>> discount(np.array([1, 2, 3, 4]), "orig").round(4).tolist()
    [1.0, 1.0, 0.6309, 0.5]
    """
    r = np.asarray(ranks, dtype=np.float64)
    if kind == "log2":
        return 1.0 / np.log2(r + 1.0)
    if kind == "orig":
        with np.errstate(divide="ignore"):
            d = np.log(b) / np.log(r)
        return np.where((r < b) | (r == 1), 1.0, d)
    raise ValueError(kind)


class Ideal:
    """Per-topic quantities from the qrels: R, ideal gain vectors and their sums.

    Parameters
    ----------
    topic : ndarray of int
        Index (0..n_topics-1) of each judged document's topic.
    grade : ndarray of int
        Its grade.
    n_topics, width : int
        Number of topics; number of ranks kept in the ideal gain matrices.
    """

    def __init__(self, topic: np.ndarray, grade: np.ndarray, n_topics: int, width: int):
        self.topic = topic
        self.grade = grade
        self.n_topics = n_topics
        self.width = width
        self._cache: dict[tuple, Any] = {}

    def _memo(self, key: tuple, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def R(self, rel: int) -> np.ndarray:
        """Number of judged documents with grade >= rel, per topic (float64)."""
        return self._memo(("R", rel), lambda: np.bincount(
            self.topic, weights=(self.grade >= rel), minlength=self.n_topics))

    def _sorted(self, key: GainKey) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positive ideal gains sorted by (topic, gain descending), and their 1-based ranks."""

        def make():
            g = key.gain(self.grade)
            keep = g > 0
            t, g = self.topic[keep], g[keep]
            order = np.lexsort((-g, t))
            t, g = t[order], g[order]
            starts = np.searchsorted(t, np.arange(self.n_topics))
            rank = np.arange(1, len(t) + 1) - starts[t]
            return t, g, rank

        return self._memo(("sorted", key), make)

    def gains(self, key: GainKey) -> np.ndarray:
        """(topics, width) ideal gain vectors (zero-padded)."""

        def make():
            t, g, r = self._sorted(key)
            m = np.zeros((self.n_topics, self.width))
            k = r <= self.width
            m[t[k], r[k] - 1] = g[k]
            return m

        return self._memo(("gains", key), make)

    def cum(self, key: GainKey, disc: str = "none", b: float = 2.0) -> np.ndarray:
        """(topics, width) cumulative ideal gain, discounted by ``disc`` ("none", "log2",
        "orig")."""

        def make():
            m = self.gains(key)
            if disc != "none":
                m = m * discount(np.arange(1, self.width + 1), disc, b)
            return np.cumsum(m, axis=1)

        return self._memo(("cum", key, disc, b), make)

    def total(self, key: GainKey, disc: str = "none", b: float = 2.0) -> np.ndarray:
        """Per-topic sum of the whole ideal list (not cut at ``width``), discounted."""

        def make():
            t, g, r = self._sorted(key)
            w = g if disc == "none" else g * discount(r, disc, b)
            return np.bincount(t, weights=w, minlength=self.n_topics)

        return self._memo(("total", key, disc, b), make)


class Block:
    """A chunk of ranked lists as a padded matrix, with cached derived arrays.

    Parameters
    ----------
    grade : ndarray, shape (rows, width), int64
        Grade at each rank, ``UNJUDGED`` for unjudged documents and padding.
    topic : ndarray, shape (rows,)
        Topic index of each row (into the :class:`Ideal` tables).
    ideal : Ideal
    """

    def __init__(self, grade: np.ndarray, topic: np.ndarray, ideal: Ideal):
        self.grade = grade
        self.topic = topic
        self.ideal = ideal
        self.rows, self.width = grade.shape
        self.ranks = np.arange(1, self.width + 1, dtype=np.float64)
        self._cache: dict[tuple, Any] = {}

    def _memo(self, key: tuple, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    # --- binary relevance -------------------------------------------------------------
    def isrel(self, rel: int) -> np.ndarray:
        """(rows, width) bool: grade >= rel."""
        return self._memo(("isrel", rel), lambda: self.grade >= rel)

    def count(self, rel: int) -> np.ndarray:
        """(rows, width) float64: relevant documents in the top r."""
        return self._memo(("count", rel),
                          lambda: np.cumsum(self.isrel(rel), axis=1, dtype=np.float64))

    def R(self, rel: int) -> np.ndarray:
        """(rows,) number of relevant judged documents of each row's topic."""
        return self._memo(("R", rel), lambda: self.ideal.R(rel)[self.topic])

    def first_rel(self, rel: int) -> np.ndarray:
        """(rows,) 1-based rank of the first relevant document, 0 if none."""

        def make():
            isrel = self.isrel(rel)
            return np.where(isrel.any(axis=1), np.argmax(isrel, axis=1) + 1, 0)

        return self._memo(("first", rel), make)

    # --- gains ------------------------------------------------------------------------
    def gain(self, key: GainKey) -> np.ndarray:
        """(rows, width) gains of the retrieved documents."""
        return self._memo(("gain", key), lambda: key.gain(self.grade))

    def cg(self, key: GainKey, disc: str = "none", b: float = 2.0) -> np.ndarray:
        """(rows, width) cumulative (discounted) gain."""

        def make():
            g = self.gain(key)
            if disc != "none":
                g = g * discount(self.ranks, disc, b)
            return np.cumsum(g, axis=1)

        return self._memo(("cg", key, disc, b), make)

    def ideal_cum(self, key: GainKey, disc: str = "none", b: float = 2.0) -> np.ndarray:
        """(rows, width) cumulative ideal (discounted) gain of each row's topic."""
        return self._memo(("icg", key, disc, b),
                          lambda: self.ideal.cum(key, disc, b)[self.topic])

    def ideal_at(self, key: GainKey, k: int, disc: str = "none", b: float = 2.0) -> np.ndarray:
        """(rows,) cumulative ideal (discounted) gain at rank k <= width."""
        return self.ideal.cum(key, disc, b)[self.topic, k - 1]

    def ideal_total(self, key: GainKey, disc: str = "none", b: float = 2.0) -> np.ndarray:
        """(rows,) (discounted) gain of the whole ideal list."""
        return self.ideal.total(key, disc, b)[self.topic]

    # --- helpers ----------------------------------------------------------------------
    def at(self, arr: np.ndarray, r: np.ndarray) -> np.ndarray:
        """arr[i, r_i - 1] with r clipped to [1, width] (cumulative arrays saturate)."""
        idx = np.clip(np.asarray(r, dtype=np.int64), 1, self.width) - 1
        return np.take_along_axis(arr, idx[:, None], axis=1)[:, 0]


def safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den == 0."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out
