"""The study contract: plan -> shards -> kernel(shard) -> partial -> reduce -> tables.

A study is a small, picklable object holding only parameters. Its data (a score matrix,
document-level arrays) travels separately, so an executor can place it once (e.g. in the
Ray object store) and hand every shard a reference.

A kernel's partial result is a dict of named fields, each of a kind declared by the study
(:mod:`irsim.engine.partials`: integer counters, exact fixed-point sums, max/min, top-k,
per-item or per-replicate arrays). The engine merges them as they arrive (``zero -> combine
-> finalize``); every merge is exact and order independent, so the tables do not depend on
the executor, the number of workers, shard sizes, retries or resume.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

__all__ = ["Shard", "Study", "Reducer", "Partial", "block_ranges", "shard_grid"]

Partial = dict[str, np.ndarray]


@dataclass(frozen=True, order=True)
class Shard:
    """One unit of work: a block of items (system pairs, systems, trials...) times a block of
    replicates.

    Attributes
    ----------
    index : int
        Position in the plan (used for ordering and checkpoint names, never for randomness).
    items : tuple of int
        ``[start, stop)`` into the study's item list (e.g. system pairs).
    reps : tuple of int
        ``[start, stop)`` replicate range (bootstrap samples, trials).
    part : int
        Which part of a composite study the shard belongs to (the collection of a
        per-collection run, :class:`irsim.engine.composite.PerCollection`); 0 otherwise.
    """

    index: int
    items: tuple[int, int]
    reps: tuple[int, int]
    part: int = 0

    @property
    def name(self) -> str:
        """Stable file-name-safe id, e.g. ``i0-512_r0-1000`` (``p2_i0-512_r0-1000`` in part
        2 of a composite study)."""
        name = f"i{self.items[0]}-{self.items[1]}_r{self.reps[0]}-{self.reps[1]}"
        return f"p{self.part}_{name}" if self.part else name


@runtime_checkable
class Reducer(Protocol):
    """Mergeable aggregate of partial results."""

    def combine(self, shard: Shard, partial: Partial) -> None:
        """Fold one shard's partial result in (any order)."""

    def finalize(self) -> dict[str, pa.Table]:
        """The result tables."""


@runtime_checkable
class Study(Protocol):
    """An experiment: parameters plus the functions of the engine contract."""

    name: str

    def plan(self, data: Any) -> list[Shard]:
        """The shards covering the whole study."""

    def kernel(self, shard: Shard, data: Any) -> Partial:
        """Compute one shard (pure function of the study parameters, shard and data)."""

    def fields(self, data: Any) -> Mapping[str, Any]:
        """The kernel's fields and their kinds (:mod:`irsim.engine.partials`)."""

    def finalize(self, merged: Mapping[str, Any], data: Any) -> dict[str, pa.Table]:
        """The result tables from the merged fields."""

    def fingerprint(self) -> Mapping[str, Any]:
        """Parameters that determine the results (to validate checkpoints)."""


def block_ranges(total: int, size: int) -> list[tuple[int, int]]:
    """Split ``range(total)`` into consecutive ``[start, stop)`` blocks of `size`.

    Examples
    --------
    >>> block_ranges(10, 4)
    [(0, 4), (4, 8), (8, 10)]
    >>> block_ranges(0, 4)
    []
    """
    if size < 1:
        raise ValueError(f"block size must be >= 1, got {size}")
    return [(s, min(s + size, total)) for s in range(0, total, size)]


def shard_grid(n_items: int, item_block: int, n_reps: int, rep_block: int) -> list[Shard]:
    """The full grid of item blocks x replicate blocks (replicates outer, so the first
    replicate block of every item block comes first).

    Examples
    --------
    >>> [s.name for s in shard_grid(5, 3, 4, 2)]
    ['i0-3_r0-2', 'i3-5_r0-2', 'i0-3_r2-4', 'i3-5_r2-4']
    """
    reps = block_ranges(n_reps, rep_block) if n_reps > 0 else [(0, 0)]
    items = block_ranges(n_items, item_block)
    return [
        Shard(k, it, rp)
        for k, (rp, it) in enumerate((rp, it) for rp in reps for it in items)
    ]
