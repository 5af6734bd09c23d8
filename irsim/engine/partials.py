"""Typed, mergeable partial results: what a kernel returns and how shards merge.

A study declares its partial result as named *fields*, each of one kind:

=============  ======================================  ===================================
kind           value a shard returns                   merge
=============  ======================================  ===================================
:class:`Count` integer array (whole, or the shard's     integer sum (placed along items or
               slice along items / replicates)          replicates)
:class:`Sum`   exact sums of addends (:class:`Fixed`,   exact fixed-point sum (2**-bits)
               :meth:`Sum.addends`) or float array
:class:`Extreme` array                                 elementwise max or min
:class:`TopK`  ``(values, index, *aux)`` per row of    the k largest (smallest) per row,
               the shard's items                        ties by the smaller index
:class:`Slab`  the shard's slice of a per-item or      placed once (a second write to a
               per-replicate array                      filled position is an error)
=============  ======================================  ===================================

Floats in fixed point (integer units of ``2**-bits``, each addend rounded half to even,
sums exact, the correctly rounded float at the end) have one definition,
:class:`FixedPoint` (:mod:`irsim.engine.fixed`): :class:`Sum` fields and any study that
quantises values use it.

Every merge is exact and independent of the order shards arrive in, so tables do not depend
on the executor, the number of workers, shard sizes, retries or resume. Each kind also
encodes a shard's value into plain arrays for the checkpoint files and decodes it back; the
local and the Ray engine and resume all go through :class:`Accumulator`.

Examples
--------
>>> from irsim.engine.base import Shard
>>> fields = {"hits": Count((4,), along="items"), "best": Extreme((), "max")}
>>> acc = Accumulator(fields)
>>> acc.combine(Shard(1, (2, 4), (0, 10)), {"hits": np.array([3, 1]), "best": np.float64(.5)})
>>> acc.combine(Shard(0, (0, 2), (0, 10)), {"hits": np.array([2, 0]), "best": np.float64(.9)})
>>> out = acc.result()
>>> out["hits"].tolist(), float(out["best"])
([2, 0, 3, 1], 0.9)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from irsim.engine.base import Shard
from irsim.engine.fixed import MAX_BITS, Fixed, FixedPoint

__all__ = ["Kind", "Count", "Sum", "FixedPoint", "Fixed", "MAX_BITS", "Extreme", "TopK", "Slab",
           "Accumulator", "encode", "prefilter", "decode", "NO_INDEX", "topk_rows"]

#: Index of an empty top-k slot (loses every tie).
NO_INDEX = np.iinfo(np.int64).max

#: A top-k field selects once its buffered candidates are this many times k wide per row
#: (real discpower shards, adhoc8 AP, B = 10000: 0.25, 0.5, 1 merge alike, 2.38 vs 2.31 s;
#: a lower value raises the bar sooner, so checkpoints shrink a little: 482 vs 456 MB)
SELECT_AT = 1.0

Along = Literal["items", "reps"] | None


def topk_rows(
    val: np.ndarray, idx: np.ndarray, k: int, *aux: np.ndarray, idx_sorted: bool = False,
    sort: bool = True, largest: bool = True,
) -> tuple[np.ndarray, ...]:
    """Per row, the `k` largest (or smallest) values, ties broken by the smaller index.

    The selection is a pure function of the (value, index) multiset of each row, so merging
    partial top-k lists in any order gives the same result. It takes a linear-time partition
    per row; only rows with more ties at the k-th value than slots rank their tied entries.

    Parameters
    ----------
    val : ndarray, shape (rows, width)
    idx : ndarray, shape (rows, width) or (width,)
        Global index (e.g. replicate number) of each column; unique within a row.
    k : int
    *aux : ndarray, shape (rows, width)
        Companion arrays carried along (e.g. the mean belonging to a t value).
    idx_sorted : bool
        Promise that `idx` increases along each row (ties then need no ranking).
    sort : bool
        Return the selection in value order (best first), ties by index (default); False
        keeps the column order (selections of consecutive index ranges can then be
        concatenated and selected again; or sort once after repeated merges).
    largest : bool
        Select the largest values (default) or the smallest.

    Returns
    -------
    tuple of ndarray, each shape (rows, min(k, width))
        ``(val, idx, *aux)`` of the selected entries: new arrays, never views of the
        inputs (also when ``k >= width`` selects everything).

    Examples
    --------
    >>> v = np.array([[0.5, 0.9, 0.5, 0.1]])
    >>> i = np.array([[7, 3, 2, 9]])
    >>> [a.tolist() for a in topk_rows(v, i, 2)]
    [[[0.9, 0.5]], [[3, 2]]]
    >>> [a.tolist() for a in topk_rows(v, np.array([2, 3, 7, 9]), 2, idx_sorted=True,
    ...                                sort=False, largest=False)]
    [[[0.5, 0.1]], [[2, 9]]]
    """
    val = np.asarray(val)
    rows, width = val.shape
    if k < width:
        chosen, _, _ = _chosen(val, idx, k, idx_sorted=idx_sorted, largest=largest)
        flat = np.flatnonzero(chosen)
        idx = np.asarray(idx)
        picked = idx[flat % width] if idx.ndim == 1 else np.ravel(idx).take(flat)
        val, idx = np.ravel(val).take(flat).reshape(rows, k), picked.reshape(rows, k)
        aux = tuple(np.ravel(a).take(flat).reshape(rows, k) for a in aux)
    else:  # everything is selected: copies, so that a caller may reuse its input buffers
        val, idx = val.copy(), np.broadcast_to(idx, val.shape).copy()
        aux = tuple(np.array(a) for a in aux)
    if not sort:
        return (val, idx, *aux)
    order = np.lexsort((idx, -val if largest else val), axis=-1)
    return tuple(np.take_along_axis(a, order, axis=1) for a in (val, idx, *aux))


def _chosen(val: np.ndarray, idx: Any, k: int, *, idx_sorted: bool = False,
            largest: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The selection of :func:`topk_rows` as a mask of `val`'s shape (``k < width``):
    exactly `k` entries per row; each row's k-th value (the worst selected), shape
    (rows, 1); and where `val` equals it, if some row has more such entries than slots
    (else None). `idx` may be a function of row numbers returning those rows' indices
    (needed only for rows with more ties at their k-th value than slots)."""
    rows, width = val.shape
    pos = width - k if largest else k - 1
    kth = np.partition(val, pos, axis=1)[:, pos, None]
    chosen = val >= kth if largest else val <= kth
    tie = None
    if not (np.count_nonzero(chosen, axis=1) == k).all():  # ties at the k-th value
        beyond = val > kth if largest else val < kth
        tie = val == kth
        need = k - np.count_nonzero(beyond, axis=1)[:, None]
        if idx_sorted:
            chosen = beyond | (tie & (np.cumsum(tie, axis=1) <= need))
        else:
            chosen = beyond | tie
            excess = np.flatnonzero(tie.sum(axis=1) > need[:, 0])
            if len(excess):  # more ties than slots: the smallest indices win
                # rank the tied entries only (ties first, by index, then by position:
                # empty slots all carry NO_INDEX, so an index cannot separate them from
                # the untied entries)
                tied_idx = (idx(excess) if callable(idx)
                            else np.broadcast_to(idx, val.shape)[excess])
                order = np.lexsort((tied_idx, ~tie[excess]), axis=-1)
                rank = np.empty_like(order)
                np.put_along_axis(rank, order, np.arange(width)[None, :], axis=1)
                chosen[excess] = beyond[excess] | (tie[excess] & (rank < need[excess]))
    return chosen, kth, tie


def _has_nan(a: np.ndarray) -> bool:
    return a.dtype.kind in "fc" and bool(np.isnan(a).any())


def _placed(a: np.ndarray, src: np.ndarray, dst: np.ndarray, shape: tuple[int, int],
            fill: Any, dtype: Any) -> np.ndarray:
    """A new `shape` array of `fill` with the flat positions `dst` set to ``a.flat[src]``."""
    out = np.full(shape, fill, dtype)
    out.put(dst, a.take(src))
    return out


def _span(shard: Shard, along: Along, per: int) -> slice:
    """The positions a shard's value covers along axis 0 (all of them when `along` is None)."""
    if along is None:
        return slice(None)
    lo, hi = shard.items if along == "items" else shard.reps
    return slice(lo * per, hi * per)


@dataclass(frozen=True)
class Kind:
    """Base of the partial kinds: ``zero``, ``combine``, ``final`` and (de)serialisation."""

    def zero(self) -> Any:
        raise NotImplementedError

    def combine(self, state: Any, value: Any, shard: Shard) -> Any:
        raise NotImplementedError

    def final(self, state: Any) -> Any:
        return state

    def encode(self, value: Any) -> dict[str, np.ndarray]:
        """Arrays that store a shard's value (keys are suffixes of the field name)."""
        return {"": np.asarray(value)}

    def decode(self, arrays: Mapping[str, np.ndarray]) -> Any:
        return arrays[""]

    def needed(self, state: Any, value: Any, shard: Shard) -> Any:
        """What of a shard's `value` a checkpoint must keep, given the merged `state` that
        already includes it (default: all of it)."""
        return value

    def needed_later(self, state: Any, value: Any, shard: Shard) -> Callable[[], Any]:
        """:meth:`needed` as a function to call later, e.g. on another thread, while
        `state` goes on changing (default: computed now)."""
        kept = self.needed(state, value, shard)
        return lambda: kept

    def hint(self, state: Any, shard: Shard) -> Any:
        """What a worker may use to drop, before shipping, parts of `shard`'s value that the
        merge could never use (None: nothing; see :meth:`prefilter`)."""
        return None

    def prefilter(self, value: Any, hint: Any) -> Any:
        """A shard's `value` without what :meth:`hint` says can never be used; merging it
        gives the same result as merging the whole value (default: the value)."""
        return value


@dataclass(frozen=True)
class Count(Kind):
    """Integer counter of `shape`; a shard adds its counts, whole or along a slice.

    Parameters
    ----------
    shape : tuple of int
    along : {None, "items", "reps"}
        None: every shard returns the whole `shape`; "items" / "reps": a shard returns the
        rows of its item (replicate) range, times `per` rows per item.
    per : int
        Rows per item / replicate (e.g. topics per run).
    """

    shape: tuple[int, ...]
    along: Along = None
    per: int = 1
    dtype: str = "int64"

    def zero(self) -> np.ndarray:
        return np.zeros(self.shape, self.dtype)

    def combine(self, state: np.ndarray, value: Any, shard: Shard) -> np.ndarray:
        value = np.asarray(value)
        if value.dtype.kind not in "iub":
            raise TypeError(f"Count takes integers, got {value.dtype}")
        state[_span(shard, self.along, self.per)] += value
        return state


@dataclass(frozen=True)
class Sum(Kind):
    """Exact sum in fixed point (:class:`FixedPoint` of ``2**-bits``): integers add
    exactly, so the total does not depend on the order of shards or of addends; the
    result is the correctly rounded float of the exact fixed-point total.

    A shard returns either

    - a :class:`Fixed` of the field's `bits` (:meth:`addends`: per-addend quantised sums,
      e.g. over a shard's trials), or
    - a float array: each element is one addend (rounded to ``2**-bits`` as a whole).

    Parameters
    ----------
    shape : tuple of int
    along : {None, "items", "reps"}
        As for :class:`Count`.
    per : int
        Rows per item / replicate.
    bits : int
        Units of ``2**-bits``.

    Examples
    --------
    >>> from irsim.engine.base import Shard
    >>> s = Sum((1,))
    >>> st = s.zero()
    >>> for v in (1e16, 1.0, -1e16):
    ...     st = s.combine(st, np.array([v]), Shard(0, (0, 1), (0, 1)))
    >>> s.final(st).tolist()
    [1.0]

    A kernel hands over addends (each rounded to 2**-bits, then summed exactly), here of
    three trials per item for the shard's two items, in quarters: each 0.125 rounds to 0
    (a tie, to even) where their sum 0.375 would round to 0.5:

    >>> s = Sum((4,), along="items", bits=2)
    >>> part = s.addends([[0.125, 0.125, 0.125], [1.0, 2.0, 0.25]], axis=1)
    >>> s.final(s.combine(s.zero(), part, Shard(0, (2, 4), (0, 3)))).tolist()
    [0.0, 0.0, 0.0, 3.25]
    """

    shape: tuple[int, ...]
    along: Along = None
    per: int = 1
    bits: int = 128

    @property
    def point(self) -> FixedPoint:
        """The field's fixed point."""
        return FixedPoint(self.bits)

    def addends(self, values: Any, axis: int | None = -1) -> Fixed:
        """The exact sum of `values` along `axis`, each rounded to ``2**-bits`` first (ties
        to even): a shard's value for this field (:meth:`FixedPoint.sum`)."""
        return self.point.sum(values, axis)

    def zero(self) -> Fixed:
        return self.point.zeros(self.shape)

    def _fixed(self, value: Any) -> Fixed:
        if isinstance(value, Fixed):
            if value.bits != self.bits:
                raise ValueError(f"Sum of 2**-{self.bits} got a fixed point of "
                                 f"2**-{value.bits}")
            return value
        try:
            return Fixed._of(self.point.units(value), self.bits)
        except ValueError:
            raise ValueError("Sum takes finite values") from None

    def combine(self, state: Fixed, value: Any, shard: Shard) -> Fixed:
        span = _span(shard, self.along, self.per)
        state[span] = state[span] + self._fixed(value)
        return state

    def final(self, state: Fixed) -> np.ndarray:
        return state.value()

    def encode(self, value: Any) -> dict[str, np.ndarray]:
        """Floats as they are; a :class:`Fixed` as int64 units, or (units beyond int64)
        as signs and little-endian 32-bit limbs of the magnitudes."""
        if not isinstance(value, Fixed):
            return {"": np.asarray(value)}
        u = value.units
        if u.dtype != object:
            return {"units": u}
        mags = [abs(int(x)) for x in u.ravel().tolist()]
        width = max(1, max((m.bit_length() + 31) // 32 for m in mags))
        limbs = np.array([[(m >> (32 * j)) & 0xFFFFFFFF for j in range(width)]
                          for m in mags], np.uint32).reshape(*u.shape, width)
        return {"negative": u < 0, "limbs": limbs}

    def decode(self, arrays: Mapping[str, np.ndarray]) -> Any:
        """Inverse of :meth:`encode`."""
        if "units" in arrays:
            return Fixed(np.asarray(arrays["units"], np.int64), self.bits)
        if "limbs" in arrays:
            limbs = np.asarray(arrays["limbs"])
            neg = np.asarray(arrays["negative"], bool).ravel().tolist()
            rows = limbs.reshape(-1, limbs.shape[-1]).tolist()
            units = [sum(int(x) << (32 * j) for j, x in enumerate(r)) for r in rows]
            out = np.empty(len(units), object)
            out[:] = [-m if n else m for m, n in zip(units, neg, strict=True)]
            return Fixed(out.reshape(limbs.shape[:-1]), self.bits)
        return arrays[""]


@dataclass(frozen=True)
class Extreme(Kind):
    """Elementwise maximum (``how="max"``) or minimum of every shard's value."""

    shape: tuple[int, ...]
    how: Literal["max", "min"] = "max"

    def zero(self) -> np.ndarray:
        return np.full(self.shape, -np.inf if self.how == "max" else np.inf)

    def combine(self, state: np.ndarray, value: Any, shard: Shard) -> np.ndarray:
        op = np.maximum if self.how == "max" else np.minimum
        return op(state, value)


@dataclass(frozen=True)
class TopK(Kind):
    """Per row (item), the `k` largest (or smallest) values with their global indices (e.g.
    replicate numbers) and `aux` companion arrays; ties go to the smaller index.

    A shard returns ``(values, index, *aux)``, each of shape ``(items in shard, width)``
    (a kernel may pre-select its own top k to ship less).
    The state keeps unsorted selections; :meth:`final` sorts once (best first, ties by
    index). The selection is a pure function of each row's (value, index) multiset, so any
    merge order gives the same result (:func:`topk_rows`).

    Merging costs O(the shard), amortised: each row keeps a *bar*, the worst value it held
    at its last selection (the empty slots' value until it holds k entries). Only a shard's
    entries at least as good as the bar (the candidates) can ever be selected; they are
    packed into a buffer, and the k best of (held, buffer) are selected once the buffer
    holds about k per row (or at :meth:`final`), which also raises the bar. For the j-th
    replicate block of a row about k / j entries pass, so the selections get rarer as the
    run goes on, instead of one selection over k + width entries per shard.
    """

    rows: int
    k: int
    aux: int = 0
    largest: bool = True

    def zero(self) -> dict[str, Any]:
        fill = self._fill()
        return {"val": np.full((self.rows, self.k), fill),
                "idx": np.full((self.rows, self.k), NO_INDEX, np.int64),
                "aux": [np.zeros((self.rows, self.k)) for _ in range(self.aux)],
                "filled": np.zeros(self.rows, bool),
                # per row: the worst held value at the last selection and, of the held
                # entries of that value, the largest index (NO_INDEX: not known, any)
                "bar": np.full(self.rows, fill), "bar_idx": np.full(self.rows, NO_INDEX),
                "open": np.ones(self.rows, bool),  # rows holding fewer than k entries
                # candidates not selected yet: (first row, stop) -> packed (val, idx, *aux)
                "buffer": {}}

    def _fill(self) -> float:
        return -np.inf if self.largest else np.inf

    def combine(self, state: dict, value: Any, shard: Shard) -> dict:
        val, idx, *aux = (np.asarray(a) for a in value)
        rows = slice(*shard.items)
        kept: Callable[[], tuple] = lambda: (val, idx, *aux)  # noqa: E731
        if val.shape[1] == 0:
            pass
        elif not state["filled"][rows].any():  # first values for these rows: keep as given
            if val.shape[1] > self.k:
                val, idx, *aux = topk_rows(val, idx, self.k, *aux, sort=False,
                                           largest=self.largest)
            w = val.shape[1]
            state["val"][rows, :w], state["idx"][rows, :w] = val, idx
            for dst, a in zip(state["aux"], aux, strict=True):
                dst[rows, :w] = a
            held = state["val"][rows]
            bar = held.min(axis=1) if self.largest else held.max(axis=1)
            state["bar"][rows] = bar
            state["bar_idx"][rows] = np.where(held == bar[:, None], state["idx"][rows],
                                              -1).max(axis=1)
            state["open"][rows] = (state["idx"][rows] == NO_INDEX).any(axis=1)
        else:
            kept = self._buffer(state, rows, val, np.broadcast_to(idx, val.shape), aux)
        state["filled"][rows] = True
        # what this shard's checkpoint keeps (:meth:`needed_later`): its candidates
        state["last"] = (shard, value, kept)
        return state

    def _buffer(self, state: dict, rows: slice, val: np.ndarray, idx: np.ndarray,
                aux: list[np.ndarray]) -> Callable[[], tuple]:
        """Add a shard's candidates to the buffer of its rows; select when it is full.
        Returns a function giving the candidates packed (for the checkpoint)."""
        key = (rows.start, rows.stop)
        for other in [o for o in state["buffer"] if o != key and o[0] < key[1]
                      and key[0] < o[1]]:
            self._select(state, other)  # another split of the rows: settle it first
        bar = state["bar"][rows]
        if _has_nan(val) or _has_nan(bar):  # NaN has no place in the order: no filter
            cand = idx != NO_INDEX
        else:
            cand = self._at_least(val, idx, bar, state["bar_idx"][rows])
        n = np.count_nonzero(cand, axis=1)
        width = int(n.max(initial=0))
        if width == 0:
            return lambda: tuple(a[:, :0] for a in (val, idx, *aux))
        if width < val.shape[1]:  # pack the candidates (row by row, in their order)
            src = np.flatnonzero(cand)
            dst = np.flatnonzero(np.arange(width)[None, :] < n[:, None])
            parts = tuple(_placed(a, src, dst, (val.shape[0], width), fill, a.dtype)
                          for a, fill in ((val, self._fill()), (idx, NO_INDEX),
                                          *((a, 0) for a in aux)))
            kept: Callable[[], tuple] = lambda: parts  # noqa: E731
        else:  # all of it (the others lose to every held entry anyway)
            parts = (val, idx, *aux)
            kept = lambda: self._pack(cand, val, idx, aux)  # noqa: E731
        chunks = state["buffer"].setdefault(key, [])
        chunks.append(parts)
        # select once about k per row wait, or at once while a row holds fewer than k
        if (sum(c[0].shape[1] for c in chunks) >= self.k * SELECT_AT
                or state["open"][rows].any()):
            self._select(state, key)
        return kept

    def _select(self, state: dict, key: tuple[int, int]) -> None:
        """The k best of (held, buffer) per row of `key`: the chosen buffered entries
        replace the held entries not chosen, in place (a row holds its k in no particular
        order); the bar becomes the k-th value."""
        chunks = state["buffer"].pop(key)
        rows = slice(*key)
        k = self.k
        held_val, held_idx = state["val"][rows], state["idx"][rows]  # views
        cat = [np.concatenate(p, axis=1) if len(p) > 1 else p[0]
               for p in zip(*chunks, strict=True)]

        def indices(r: np.ndarray) -> np.ndarray:  # of rows r of (held, buffer)
            return np.concatenate([held_idx[r], cat[1][r]], axis=1)

        chosen, kth, tie = _chosen(np.concatenate([held_val, cat[0]], axis=1), indices, k,
                                   largest=self.largest)
        # rows choosing several entries of their k-th value (e.g. a degenerate pair): the
        # largest index among them, so that later ties with larger indices stay out (other
        # rows: NO_INDEX, any index of that value may enter the buffer)
        bar_idx = state["bar_idx"][rows]
        bar_idx[:] = NO_INDEX
        if tie is not None:
            tied = chosen & tie
            many = np.flatnonzero(np.count_nonzero(tied, axis=1) > 1)
            if len(many):
                bar_idx[many] = np.where(tied[many], indices(many), -1).max(axis=1)
        dst = np.flatnonzero(~chosen[:, :k])  # row by row, as many as `src`
        src = np.flatnonzero(chosen[:, k:])
        if len(src):
            for held, new in ((held_val, cat[0]), (held_idx, cat[1]),
                              *zip((a[rows] for a in state["aux"]), cat[2:], strict=True)):
                held.put(dst, new.take(src))
        state["bar"][rows] = kth[:, 0]
        opened = np.flatnonzero(state["open"][rows])  # still holding empty slots?
        if len(opened):
            state["open"][rows][opened] = (held_idx[opened] == NO_INDEX).any(axis=1)

    def _at_least(self, val: np.ndarray, idx: np.ndarray, bar: np.ndarray,
                  bar_idx: np.ndarray) -> np.ndarray:
        """Which entries (not empty slots) are at least as good as their row's bar: a
        better value, or the bar's value and an index not above the bar's."""
        b = bar[:, None]
        out = val > b if self.largest else val < b
        eq = val == b  # (empty slots have the fill value: a row not full has it as bar)
        tied = np.flatnonzero(eq.any(axis=1))
        if len(tied):
            idx = np.broadcast_to(idx, val.shape)[tied]
            out[tied] |= eq[tied] & (idx <= bar_idx[tied, None]) & (idx != NO_INDEX)
        return out

    def final(self, state: dict) -> tuple[np.ndarray, ...]:
        """``(values, index, *aux)`` per row, best first, ties by the smaller index."""
        for key in list(state["buffer"]):
            self._select(state, key)
        v = state["val"]
        order = np.lexsort((state["idx"], -v if self.largest else v), axis=-1)
        return tuple(np.take_along_axis(a, order, axis=1)
                     for a in (v, state["idx"], *state["aux"]))

    def needed(self, state: dict, value: Any, shard: Shard) -> tuple[np.ndarray, ...]:
        """The entries of a shard's value that can still be selected after it was merged:
        those at least as good as their row's bar (the worst held value at the row's last
        selection) when it was merged, i.e. the candidates the merge found (for the shard
        merged last, those; else computed again with the bars now); the rest can never be
        selected.

        An entry below the bar has k better entries merged already (those held at the
        last selection); each of those was at least as good as its row's bar when its own
        shard was merged (the bar only rises, and an entry below it never enters the
        buffer), so it was kept. Merging the kept entries of any set of shards therefore
        gives the same top k as merging their whole values: checkpoints stay exact. Rows
        become ragged: they are padded with empty slots (worst value, :data:`NO_INDEX`,
        aux 0), which lose every comparison. No set operation: one pass over the shard's
        value.
        """
        return self.needed_later(state, value, shard)()

    def hint(self, state: dict, shard: Shard) -> tuple[np.ndarray, np.ndarray] | None:
        """The bars of the shard's rows (copies), or None while a row holds fewer than k:
        an entry below its row's bar now can never be selected (the bar only rises)."""
        rows = slice(*shard.items)
        if state["open"][rows].any():
            return None
        return state["bar"][rows].copy(), state["bar_idx"][rows].copy()

    def prefilter(self, value: Any, hint: Any) -> Any:
        """The entries of `value` at least as good as the bars of :meth:`hint` (packed,
        rows padded); exact, as :meth:`needed` is."""
        if hint is None:
            return value
        bar, bar_idx = hint
        val, idx, *aux = (np.asarray(a) for a in value)
        if val.shape[0] == 0 or _has_nan(val) or _has_nan(bar):
            return (val, idx, *aux)
        return self._pack(self._at_least(val, idx, bar, bar_idx), val, idx, aux)

    def needed_later(self, state: dict, value: Any, shard: Shard
                     ) -> Callable[[], tuple[np.ndarray, ...]]:
        """:meth:`needed`, computed when called (e.g. on a checkpoint-writing thread) with
        the rows' bars as they are now (copied: O(the shard's rows))."""
        last = state.get("last")
        if last is not None and last[0] == shard and last[1] is value:
            return last[2]  # the candidates the merge just found (none ever changes)
        rows = slice(*shard.items)
        bar, bar_idx = state["bar"][rows].copy(), state["bar_idx"][rows].copy()

        def kept() -> tuple[np.ndarray, ...]:
            val, idx, *aux = (np.asarray(a) for a in value)
            if val.shape[0] == 0 or _has_nan(val) or _has_nan(bar):
                return (val, idx, *aux)  # NaN has no place in the order: keep everything
            return self._pack(self._at_least(val, idx, bar, bar_idx), val, idx, aux)

        return kept

    def _pack(self, keep: np.ndarray, val: np.ndarray, idx: np.ndarray,
              aux: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        """The `keep` entries of each row moved to its front (in their order); the rest
        padded to the widest row. All of a value kept: the value itself."""
        rows = keep.shape[0]
        n = np.count_nonzero(keep, axis=1)
        width = int(n.max(initial=0))
        if width == keep.shape[1] and keep.all():
            return (val, idx, *aux)
        # flat positions, row by row in both: the kept entries and the front slots
        src = np.flatnonzero(keep)
        dst = np.flatnonzero(np.arange(width)[None, :] < n[:, None])
        out = []
        for a, fill, dtype in ((val, self._fill(), val.dtype), (idx, NO_INDEX, np.int64),
                               *((a, 0, a.dtype) for a in aux)):
            o = np.full((rows, width), fill, dtype)
            o.put(dst, np.broadcast_to(a, keep.shape).take(src))
            out.append(o)
        return tuple(out)

    def encode(self, value: Any) -> dict[str, np.ndarray]:
        """Compact and exact: per row the number of its entries, then the entries (empty
        slots left out) flat: values and aux as they are, indices as offsets from the
        smallest in the narrowest unsigned integer type, and the row width."""
        val, idx, *aux = (np.asarray(a) for a in value)
        real = idx != NO_INDEX
        flat_idx = idx[real]
        base = int(flat_idx.min()) if flat_idx.size else 0
        offsets = flat_idx - base
        n = real.sum(axis=1)
        return {"n": n.astype(np.min_scalar_type(int(n.max(initial=0)))),
                "width": np.array(val.shape[1], np.int64),
                "val": val[real], "base": np.array(base, np.int64),
                "idx": offsets.astype(np.min_scalar_type(int(offsets.max(initial=0)))),
                **{f"aux{j}": np.asarray(a)[real] for j, a in enumerate(aux)}}

    def decode(self, arrays: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        """Inverse of :meth:`encode`: rows padded with empty slots to the stored width."""
        n = np.asarray(arrays["n"], np.int64)
        rows, width = len(n), int(arrays["width"])
        keep = np.arange(width)[None, :] < n[:, None]
        vals = np.asarray(arrays["val"])
        val = np.full((rows, width), self._fill(), vals.dtype)
        idx = np.full((rows, width), NO_INDEX, np.int64)
        val[keep] = vals
        idx[keep] = np.asarray(arrays["idx"], np.int64) + int(arrays["base"])
        aux = []
        for j in range(self.aux):
            flat = np.asarray(arrays[f"aux{j}"])
            a = np.zeros((rows, width), flat.dtype)
            a[keep] = flat
            aux.append(a)
        return (val, idx, *aux)


@dataclass(frozen=True)
class Slab(Kind):
    """A per-item or per-replicate array (axis 0) that each shard fills for its range.

    Positions start as `fill` (NaN for floats); a shard's value is placed at its rows
    (``per`` rows per item or replicate). Writing a position twice is an error, so a shard
    merged twice cannot go unnoticed. With ``along=None`` exactly one shard provides the
    whole array (e.g. a table computed once).
    """

    shape: tuple[int, ...]
    along: Along = "items"
    per: int = 1
    dtype: str = "float64"
    fill: Any = np.nan

    def zero(self) -> dict[str, np.ndarray]:
        return {"value": np.full(self.shape, self.fill, self.dtype),
                "set": np.zeros(self.shape[:1] if self.shape else (), bool)}

    def combine(self, state: dict, value: Any, shard: Shard) -> dict:
        span = _span(shard, self.along, self.per)
        if state["set"][span].any():
            raise ValueError(f"shard {shard.name} writes positions already filled")
        state["value"][span] = value
        state["set"][span] = True
        return state

    def final(self, state: dict) -> np.ndarray:
        return state["value"]


def encode(fields: Mapping[str, Kind], partial: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """A kernel's partial result as flat arrays (``<field>`` or ``<field>/<part>``) for a
    checkpoint file."""
    out: dict[str, np.ndarray] = {}
    for name, value in partial.items():
        for part, arr in fields[name].encode(value).items():
            out[f"{name}/{part}" if part else name] = arr
    return out


def prefilter(fields: Mapping[str, Kind], partial: Mapping[str, Any],
              hints: Mapping[str, Any] | None) -> dict[str, Any]:
    """A kernel's partial without what the merge can never use, by the `hints` of
    :meth:`Accumulator.hints` (taken when the shard was submitted: still valid when it is
    merged). Merging it gives the same result as merging the whole partial; it ships less.

    Examples
    --------
    >>> from irsim.engine.base import Shard
    >>> fields = {"top": TopK(1, 2)}
    >>> acc = Accumulator(fields)
    >>> acc.combine(Shard(0, (0, 1), (0, 3)),
    ...             {"top": (np.array([[0.9, 0.5, 0.7]]), np.array([[0, 1, 2]]))})
    >>> part = {"top": (np.array([[0.6, 0.8, 0.1]]), np.array([[3, 4, 5]]))}
    >>> small = prefilter(fields, part, acc.hints(Shard(1, (0, 1), (3, 6))))
    >>> small["top"][1].tolist()  # 0.1 and 0.6 are below the bar (0.7): never selected
    [[4]]
    """
    if not hints:
        return dict(partial)
    return {name: fields[name].prefilter(value, hints[name]) if name in hints else value
            for name, value in partial.items()}


def decode(fields: Mapping[str, Kind], arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Inverse of :func:`encode`."""
    grouped: dict[str, dict[str, np.ndarray]] = {}
    for key, arr in arrays.items():
        name, _, part = key.partition("/")
        grouped.setdefault(name, {})[part] = arr
    return {name: fields[name].decode(parts) for name, parts in grouped.items()}


@dataclass
class Accumulator:
    """Merges shards' partial results field by field (any order, each shard once).

    A kernel may leave a field out (e.g. a table only the first item block computes).
    Unknown field names are an error.
    """

    fields: Mapping[str, Kind]
    state: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.state = {name: kind.zero() for name, kind in self.fields.items()}

    def combine(self, shard: Shard, partial: Mapping[str, Any]) -> None:
        for name, value in partial.items():
            kind = self.fields.get(name)
            if kind is None:
                raise KeyError(f"kernel returned undeclared field {name!r}")
            self.state[name] = kind.combine(self.state[name], value, shard)

    def needed(self, shard: Shard, partial: Mapping[str, Any]) -> dict[str, Any]:
        """What a checkpoint of `shard` must keep of its `partial`, which has just been
        merged (:meth:`Kind.needed`: everything, except top-k entries that can never be
        selected). Merging the kept parts gives the same result as merging the whole."""
        return {name: self.fields[name].needed(self.state[name], value, shard)
                for name, value in partial.items()}

    def needed_later(self, shard: Shard, partial: Mapping[str, Any]
                     ) -> Callable[[], dict[str, Any]]:
        """:meth:`needed` as a function to call later (on a checkpoint-writing thread):
        what it needs of the merged state is taken now, the work is done when called."""
        later = {name: self.fields[name].needed_later(self.state[name], value, shard)
                 for name, value in partial.items()}
        return lambda: {name: kept() for name, kept in later.items()}

    def hints(self, shard: Shard, names: Iterable[str] | None = None) -> dict[str, Any]:
        """What a worker computing `shard` may drop before shipping its partial
        (:meth:`Kind.hint`, for :func:`prefilter`): the fields that have a hint now, of
        `names` (the fields the shard's kernel returns; default every field)."""
        out = {}
        for name in self.fields if names is None else names:
            kind = self.fields[name]
            h = kind.hint(self.state[name], shard)
            if h is not None:
                out[name] = h
        return out

    def result(self) -> dict[str, Any]:
        """Every field's merged value."""
        return {name: kind.final(self.state[name]) for name, kind in self.fields.items()}
