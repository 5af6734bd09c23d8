"""Typed, mergeable partial results: what a kernel returns and how shards merge.

A study declares its partial result as named *fields*, each of one kind:

=============  ======================================  ===================================
kind           value a shard returns                   merge
=============  ======================================  ===================================
:class:`Count` integer array (whole, or the shard's     integer sum (placed along items or
               slice along items / replicates)          replicates)
:class:`Sum`   float array                             exact fixed-point sum (2**-bits)
:class:`Extreme` array                                 elementwise max or min
:class:`TopK`  ``(values, index, *aux)`` per row of    the k largest (smallest) per row,
               the shard's items                        ties by the smaller index
:class:`Slab`  the shard's slice of a per-item or      placed once (a second write to a
               per-replicate array                      filled position is an error)
=============  ======================================  ===================================

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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from irsim.engine.base import Shard

__all__ = ["Kind", "Count", "Sum", "Extreme", "TopK", "Slab", "Accumulator", "encode",
           "decode", "NO_INDEX", "topk_rows"]

#: Index of an empty top-k slot (loses every tie).
NO_INDEX = np.iinfo(np.int64).max

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
        chosen = _chosen(val, idx, k, idx_sorted=idx_sorted, largest=largest)
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
            largest: bool = True) -> np.ndarray:
    """The selection of :func:`topk_rows` as a mask of `val`'s shape (``k < width``):
    exactly `k` entries per row. `idx` may be a function returning the indices (they are
    needed only when a row has more ties at its k-th value than slots)."""
    rows, width = val.shape
    pos = width - k if largest else k - 1
    kth = np.partition(val, pos, axis=1)[:, pos, None]
    chosen = val >= kth if largest else val <= kth
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
                full_idx = np.broadcast_to(idx() if callable(idx) else idx, val.shape)
                order = np.lexsort((full_idx[excess], ~tie[excess]), axis=-1)
                rank = np.empty_like(order)
                np.put_along_axis(rank, order, np.arange(width)[None, :], axis=1)
                chosen[excess] = beyond[excess] | (tie[excess] & (rank < need[excess]))
    return chosen


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
    """Exact sum of floats in fixed point: each shard's value is rounded to a multiple of
    ``2**-bits`` (a Python integer) and the integers add exactly, so the total does not
    depend on the order of shards. The result is the correctly rounded float of the exact
    fixed-point total.

    Examples
    --------
    >>> from irsim.engine.base import Shard
    >>> s = Sum((1,))
    >>> st = s.zero()
    >>> for v in (1e16, 1.0, -1e16):
    ...     st = s.combine(st, np.array([v]), Shard(0, (0, 1), (0, 1)))
    >>> s.final(st).tolist()
    [1.0]
    """

    shape: tuple[int, ...]
    along: Along = None
    per: int = 1
    bits: int = 128

    def zero(self) -> np.ndarray:
        out = np.empty(self.shape, object)
        out.fill(0)
        return out

    def _fixed(self, value: np.ndarray) -> np.ndarray:
        v = np.asarray(value, np.float64)
        if not np.isfinite(v).all():
            raise ValueError("Sum takes finite values")
        mant, exp = np.frexp(v)
        m = (mant * 2.0**53).astype(np.int64)  # exact: |mant| < 1
        shift = exp.astype(np.int64) - 53 + self.bits
        out = np.empty(v.shape, object)
        flat = out.reshape(-1)
        for j, (mj, sj) in enumerate(zip(m.ravel().tolist(), shift.ravel().tolist(),
                                         strict=True)):
            # round half to even below 2**-bits (exact above it)
            flat[j] = mj << sj if sj >= 0 else _round_shift(mj, -sj)
        return out

    def combine(self, state: np.ndarray, value: Any, shard: Shard) -> np.ndarray:
        state[_span(shard, self.along, self.per)] += self._fixed(value)
        return state

    def final(self, state: np.ndarray) -> np.ndarray:
        scale = 1 << self.bits
        return np.array([x / scale for x in state.ravel().tolist()],
                        np.float64).reshape(state.shape)


def _round_shift(m: int, s: int) -> int:
    """``m / 2**s`` rounded half to even (Python integers)."""
    q, r = divmod(m, 1 << s)
    half = 1 << (s - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return q


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
    """

    rows: int
    k: int
    aux: int = 0
    largest: bool = True

    def zero(self) -> dict[str, np.ndarray]:
        fill = -np.inf if self.largest else np.inf
        return {"val": np.full((self.rows, self.k), fill),
                "idx": np.full((self.rows, self.k), NO_INDEX, np.int64),
                "aux": [np.zeros((self.rows, self.k)) for _ in range(self.aux)],
                "filled": np.zeros(self.rows, bool)}

    def combine(self, state: dict, value: Any, shard: Shard) -> dict:
        val, idx, *aux = value
        rows = slice(*shard.items)
        if not state["filled"][rows].any():  # first values for these rows: keep as given
            if val.shape[1] > self.k:
                val, idx, *aux = topk_rows(val, idx, self.k, *aux, sort=False,
                                           largest=self.largest)
            w = val.shape[1]
            state["val"][rows, :w], state["idx"][rows, :w] = val, idx
            for dst, a in zip(state["aux"], aux, strict=True):
                dst[rows, :w] = a
        elif val.shape[1]:
            # the k best of (held, shard) per row; the shard's chosen entries replace the
            # held entries not chosen, in place (a row holds its k in no particular order)
            held_val, held_idx = state["val"][rows], state["idx"][rows]  # views
            chosen = _chosen(np.concatenate([held_val, val], axis=1),
                             lambda: np.concatenate([held_idx, idx], axis=1), self.k,
                             largest=self.largest)
            dst = np.flatnonzero(~chosen[:, :self.k])  # row by row, as many as `src`
            src = np.flatnonzero(chosen[:, self.k:])
            if len(src):
                for held, new in ((held_val, val), (held_idx, idx),
                                  *zip((a[rows] for a in state["aux"]), aux, strict=True)):
                    held.put(dst, np.broadcast_to(new, chosen[:, self.k:].shape).take(src))
        state["filled"][rows] = True
        return state

    def final(self, state: dict) -> tuple[np.ndarray, ...]:
        """``(values, index, *aux)`` per row, best first, ties by the smaller index."""
        v = state["val"]
        order = np.lexsort((state["idx"], -v if self.largest else v), axis=-1)
        return tuple(np.take_along_axis(a, order, axis=1)
                     for a in (v, state["idx"], *state["aux"]))

    def _fill(self) -> float:
        return -np.inf if self.largest else np.inf

    def needed(self, state: dict, value: Any, shard: Shard) -> tuple[np.ndarray, ...]:
        """The entries of a shard's value that are in the merged top k right after it was
        merged; the rest can never be selected.

        An entry outside the current top k of its row has k better entries merged already;
        each of those was itself in the top k when its shard was merged (the top k of a
        subset holds every better entry of the whole), so it was kept. Merging the kept
        entries of any set of shards therefore gives the same top k as merging their whole
        values: checkpoints stay exact. Rows become ragged: they are padded with empty
        slots (worst value, :data:`NO_INDEX`, aux 0), which lose every comparison.

        No set operation: the selection is the top k of a strict total order (value, then
        the smaller index; an empty slot is worse than every entry), so an entry of the
        shard is in its row's top k exactly when it is at least as good as the row's worst
        held entry. One pass over the shard's rows of the state (k per row) and one over
        the shard's value: O(the shard's rows x (k + its width)), like the merge itself.
        """
        val, idx, *aux = (np.asarray(a) for a in value)
        rows, width = val.shape
        if rows == 0 or (val.dtype.kind == "f" and np.isnan(val).any()):
            return (val, idx, *aux)  # NaN has no place in the order: keep everything
        held_val = state["val"][slice(*shard.items)]
        held_idx = state["idx"][slice(*shard.items)]
        # the worst held entry of each row: the worst value, and of its ties the largest
        # index (an empty slot: the fill value and NO_INDEX, worse than any entry)
        worst = (held_val.min(axis=1) if self.largest else held_val.max(axis=1))[:, None]
        if worst.dtype.kind == "f" and np.isnan(worst).any():
            return (val, idx, *aux)
        worst_idx = np.where(held_val == worst, held_idx, -1).max(axis=1)[:, None]
        better = val > worst if self.largest else val < worst
        keep = (idx != NO_INDEX) & (better | ((val == worst) & (idx <= worst_idx)))
        return self._pack(keep, val, idx, aux)

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

    def result(self) -> dict[str, Any]:
        """Every field's merged value."""
        return {name: kind.final(self.state[name]) for name, kind in self.fields.items()}
