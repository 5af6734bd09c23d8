"""One study on each of several collections, run as one study on the engine.

``collection.paths={METRIC: [file, ...]}`` (or ``irsim.<study>({METRIC: [df, ...]})``) gives
a study that does not pool collections several of them. :class:`PerCollection` holds one
study object per collection (each made by the study's own ``make`` from that collection and
the run's seed) and runs them as one study: its plan is the shards of every collection
(:attr:`~irsim.engine.base.Shard.part` says whose), its fields are theirs under a prefix, so
one executor (one Ray pool) works through all collections, checkpoints and resume work as
for any study, and the reduction of each collection is the study's own. Each table is the
collection's tables stacked in collection order, with a first column ``collection``
(:data:`COLLECTION`): the rows of a collection equal, bit for bit, those of the same study
run on that collection alone with the same seed.

Examples
--------
>>> import numpy as np
>>> import pyarrow as pa
>>> from irsim.engine.base import Shard
>>> from irsim.engine.partials import Count
>>> class Ones:
...     name = "ones"
...     def __init__(self, n): self.n = n
...     def plan(self, data): return [Shard(0, (0, self.n), (0, 0))]
...     def kernel(self, shard, data): return {"n": np.full(self.n, data, np.int64)}
...     def fields(self, data): return {"n": Count((self.n,), along="items")}
...     def finalize(self, merged, data): return {"t": pa.table({"n": merged["n"]})}
...     def fingerprint(self): return {"n": self.n}
>>> from irsim.engine import run_study
>>> study = PerCollection(("a", "b"), (Ones(2), Ones(1)))
>>> tables, info = run_study(study, (5, 7))
>>> tables["t"].to_pylist()
[{'collection': 'a', 'n': 5}, {'collection': 'a', 'n': 5}, {'collection': 'b', 'n': 7}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from irsim.engine.base import Partial, Shard
from irsim.tables import PER_COLLECTION

__all__ = ["PerCollection", "PartData", "COLLECTION", "with_collection"]

#: The first column of every table of a per-collection run (:data:`irsim.tables.PER_COLLECTION`).
COLLECTION = PER_COLLECTION.name


def with_collection(table: pa.Table, name: str) -> pa.Table:
    """`table` with a first column :data:`COLLECTION` holding `name` on every row.

    Examples
    --------
    >>> with_collection(pa.table({"x": [1, 2]}), "adhoc5").to_pylist()[0]
    {'collection': 'adhoc5', 'x': 1}
    """
    column = pa.array([name] * table.num_rows, pa.string())
    return table.add_column(0, COLLECTION, column)


class PerCollection:
    """The studies of several collections as one study (see the module docstring).

    Parameters
    ----------
    names : sequence of str
        The collections, in the order their rows appear.
    studies : sequence of Study
        One study object per collection (same experiment), made from that collection.
    """

    def __init__(self, names: Sequence[str], studies: Sequence[Any]):
        if len(names) != len(studies) or not studies:
            raise ValueError("PerCollection needs one study per collection (at least one)")
        if len(set(names)) != len(names):
            raise ValueError(f"collection names repeat: {list(names)}")
        self.names = tuple(str(n) for n in names)
        self.studies = tuple(studies)
        self.name = self.studies[0].name
        self._field_names: dict[int, tuple[str, ...]] = {}

    @staticmethod
    def _prefix(part: int) -> str:
        return f"c{part}."

    def plan(self, data: Sequence[Any]) -> list[Shard]:
        shards: list[Shard] = []
        for part, (study, d) in enumerate(zip(self.studies, data, strict=True)):
            for s in study.plan(d):
                shards.append(Shard(len(shards), s.items, s.reps, part))
        return shards

    def kernel(self, shard: Shard, data: Sequence[Any]) -> Partial:
        part = shard.part
        own = Shard(shard.index, shard.items, shard.reps)
        out = self.studies[part].kernel(own, data[part])
        prefix = self._prefix(part)
        return {prefix + name: value for name, value in out.items()}

    def fields(self, data: Sequence[Any]) -> Mapping[str, Any]:
        out: dict[str, Any] = {}
        for part, (study, d) in enumerate(zip(self.studies, data, strict=True)):
            prefix = self._prefix(part)
            out.update({prefix + name: kind for name, kind in study.fields(d).items()})
        return out

    def fields_of(self, shard: Shard, data: Sequence[Any]) -> tuple[str, ...]:
        """The fields `shard`'s kernel returns (its collection's), for the merge's hints
        (:meth:`irsim.engine.partials.Accumulator.hints`): computed once per collection."""
        names = self._field_names.get(shard.part)
        if names is None:
            prefix = self._prefix(shard.part)
            names = tuple(prefix + name for name in
                          self.studies[shard.part].fields(data[shard.part]))
            self._field_names[shard.part] = names
        return names

    def finalize(self, merged: Mapping[str, Any], data: Sequence[Any]) -> dict[str, pa.Table]:
        stacked: dict[str, list[pa.Table]] = {}
        for part, (name, study, d) in enumerate(zip(self.names, self.studies, data,
                                                    strict=True)):
            prefix = self._prefix(part)
            own = {key[len(prefix):]: value for key, value in merged.items()
                   if key.startswith(prefix)}
            for table_name, table in study.finalize(own, d).items():
                stacked.setdefault(table_name, []).append(with_collection(table, name))
        return {k: pa.concat_tables(parts) for k, parts in stacked.items()}

    def fingerprint(self) -> Mapping[str, Any]:
        return {"collections": list(self.names),
                "parts": [dict(s.fingerprint()) for s in self.studies]}


class PartData(tuple):
    """The data of a :class:`PerCollection` study: one item per collection (what each
    collection's study reads), with the collections' ``names``.

    Examples
    --------
    >>> d = PartData(("a", "b"), (1, 2))
    >>> d.names, tuple(d), d[1]
    (('a', 'b'), (1, 2), 2)
    """

    names: tuple[str, ...]

    def __new__(cls, names: Sequence[str], items: Sequence[Any]) -> PartData:
        obj = super().__new__(cls, tuple(items))
        obj.names = tuple(str(n) for n in names)
        if len(obj.names) != len(obj):
            raise ValueError("PartData needs one name per item")
        return obj

    def __reduce__(self) -> tuple:
        return (PartData, (self.names, tuple(self)))
