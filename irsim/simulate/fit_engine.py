"""The copula selections of many collections as shards on the engine (issue 13, fitting cost).

Selecting a copula for every pair of kept runs of four TREC collections is ~15,000 AIC
selections (~10 ms each). :func:`fit_pair_copula_models` prepares every (metric, collection) in
process (cache look-up, data preparation and margins: :func:`~irsim.simulate.pair_copula_model
.prepare_fit`), then runs the selections of every collection not found in the cache as one
study, :class:`CopulaFits`, on the run's engine (:class:`irsim.engine.session.Engine`;
``engine=ray``: Ray actors, one selection per core at a time): items are the pairs of all
collections laid end to end, a shard is a block of `shard_pairs` pairs, and its partial is
a :class:`~irsim.engine.partials.Slab` of fixed-width codes (family, rotation, fit
statistics, parameters: :func:`irsim.simulate.copulas.encode`). Each pair's selection is a
pure function of the kept scores, the seed and the pair (:func:`~irsim.simulate.pair_copula_model
.fit_pairs`), so the models are identical, bit for bit, whatever the engine, the number of
workers or the shard size, and equal to
:func:`~irsim.simulate.pair_copula_model.fit_pair_copula_model`'s.
The finished models are written to the cache.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 30))
...             + 0.05 * rng.standard_normal((7, 30)), 0, 1)
>>> a, b = fit_pair_copula_models([{"scores": x, "metric": "AP", "name": "a"},
...                         {"scores": x[:5], "metric": "AP", "name": "b"}], shard_pairs=4)
>>> len(a.copulas), len(b.copulas)   # 7 runs - 1 (below the 10% quantile), 5 - 1: 15, 6
(15, 6)
>>> from irsim.simulate.pair_copula_model import fit_pair_copula_model
>>> a.copulas == fit_pair_copula_model(x, metric="AP", name="a").copulas
True
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.engine.base import Partial, Shard, shard_grid
from irsim.engine.partials import Slab
from irsim.engine.session import Engine
from irsim.errors import ConfigError
from irsim.simulate import copulas as cop
from irsim.simulate.pair_copula_model import (
    FORMAT,
    FitTask,
    PairCopulaModel,
    fit_pairs,
    prepare_fit,
)

__all__ = ["SHARD_PAIRS", "CopulaFits", "PairData", "fit_pair_copula_models"]

#: Pairs per shard by default (~1 s of selections; 15,000 pairs: ~230 shards).
SHARD_PAIRS = 64


@dataclass(frozen=True)
class PairData:
    """What the shards of :class:`CopulaFits` read: the kept runs of each collection to fit
    and their tie-breaking seeds and keys.

    Attributes
    ----------
    kept : tuple of numpy.ndarray
        One (kept runs, topics) matrix per collection.
    seeds, keys : tuple of int
        :attr:`FitTask.seed` and :attr:`FitTask.key` of each collection.
    """

    kept: tuple[np.ndarray, ...]
    seeds: tuple[int, ...]
    keys: tuple[int, ...]

    @classmethod
    def of(cls, tasks: Sequence[FitTask]) -> PairData:
        """The data of the selections of `tasks`."""
        return cls(tuple(t.kept for t in tasks), tuple(t.seed for t in tasks),
                   tuple(t.key for t in tasks))

    @property
    def offsets(self) -> np.ndarray:
        """First global pair index of each collection, and the total at the end."""
        n = np.array([len(k) for k in self.kept], np.int64)
        return np.concatenate([[0], np.cumsum(n * (n - 1) // 2)])


@dataclass(frozen=True)
class CopulaFits:
    """The copula selections as a study of the engine contract: items are the pairs of every
    collection end to end (collection by collection, ``numpy.triu_indices`` order within),
    shards blocks of `shard_pairs` pairs, the partial a :class:`Slab` of codes.

    Parameters
    ----------
    families : tuple of str
        Copula families of every selection.
    shard_pairs : int
        Pairs per shard (changes no code).
    threads : int
        Threads fitting a shard's pairs, one selection per thread (changes no code).
    """

    families: tuple[str, ...] = cop.FAMILIES
    shard_pairs: int = SHARD_PAIRS
    threads: int = 1
    name: str = field(default="copula_fits", init=False)

    def __post_init__(self) -> None:
        for key, value in (("shard_pairs", self.shard_pairs), ("threads", self.threads)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ConfigError(f"{key} must be an integer >= 1, got {value!r}")

    def plan(self, data: PairData) -> list[Shard]:
        """Blocks of `shard_pairs` pairs."""
        return shard_grid(int(data.offsets[-1]), int(self.shard_pairs), 0, 1)

    def fields(self, data: PairData) -> dict[str, Slab]:
        """One code per pair."""
        return {"codes": Slab((int(data.offsets[-1]), cop.WIDTH))}

    def kernel(self, shard: Shard, data: PairData) -> Partial:
        """The codes of the shard's pairs (:func:`irsim.simulate.pair_copula_model.fit_pairs` on the
        part of each collection the block covers)."""
        i0, i1 = shard.items
        off = data.offsets
        parts = []
        for t in range(len(data.kept)):  # the collections the block covers (usually one)
            lo, hi = max(i0, int(off[t])), min(i1, int(off[t + 1]))
            if lo < hi:
                parts.append(fit_pairs(data.kept[t], data.seeds[t], data.keys[t],
                                       lo - int(off[t]), hi - int(off[t]), self.families,
                                       self.threads))
        return {"codes": np.concatenate(parts) if parts else np.empty((0, cop.WIDTH))}

    def finalize(self, merged: Mapping[str, np.ndarray], data: PairData
                 ) -> dict[str, pa.Table]:
        """``copula_codes``: one row per pair (``collection``, ``pair`` within it, and the
        fields of :data:`irsim.simulate.copulas.CODE_FIELDS`)."""
        codes = merged["codes"]
        off = data.offsets
        sizes = np.diff(off)
        collection = np.repeat(np.arange(len(sizes)), sizes)
        cols: dict[str, Any] = {"collection": collection,
                                "pair": np.arange(len(codes)) - off[collection]}
        cols.update({f: codes[:, k] for k, f in enumerate(cop.CODE_FIELDS)})
        return {"copula_codes": pa.table(cols)}

    def fingerprint(self) -> dict:
        """What determines the codes besides the data."""
        return {"families": list(self.families), "format": FORMAT}


def fit_pair_copula_models(collections: Sequence[Mapping[str, Any]], *,
                           engine: Engine | None = None, shard_pairs: int = SHARD_PAIRS,
                           threads: int = 1, info: dict[str, Any] | None = None
                           ) -> list[PairCopulaModel]:
    """Fit (or read from the cache) the generator of every collection, the copula selections
    of all of them as one study on `engine` (see the module docstring).

    Parameters
    ----------
    collections : sequence of mapping
        The keywords of :func:`irsim.simulate.pair_copula_model.prepare_fit` for each collection
        (``scores``, ``metric``, ``name``, and optionally ``runs``, ``seed``,
        ``drop_duplicates``, ``drop_bottom``, ``families``, ``support``, ``cache_dir``).
    engine : Engine, optional
        Where the selections run; None: in this process (:class:`Engine` ``local``).
    shard_pairs, threads
        See :class:`CopulaFits` (neither changes a model); on ``engine=ray`` each selection
        runs on one thread (every actor holds one CPU: parallelism comes from the actors).
    info : dict, optional
        Filled with what the fit did, for the manifest: ``collections`` (fitted, from the
        cache), ``copulas`` selected, and for the selections ``engine``, ``shard_pairs``,
        ``seconds`` and the engine's run info (``shards``, ``workers`` on Ray...).

    Returns
    -------
    list of PairCopulaModel
        In the order of `collections`. Each model's ``fit_seconds`` is its own preparation
        time plus its share (by pairs) of the selections' wall time; 0 for a cached one.
    """
    checked = CopulaFits(shard_pairs=shard_pairs, threads=threads)  # before any work
    prepared = [prepare_fit(**dict(c)) for c in collections]
    tasks = [t for t in prepared if isinstance(t, FitTask)]
    if info is not None:
        info.update(collections_fitted=len(tasks), collections_cached=len(prepared) - len(tasks),
                    copulas=0)
    if not tasks:
        return [m for m in prepared if isinstance(m, PairCopulaModel)]
    families = {t.families for t in tasks}
    if len(families) > 1:
        raise ConfigError(f"families: one set of copula families per fit, got "
                          f"{sorted(families)}")
    on_ray = engine is not None and engine.name == "ray"
    study = CopulaFits(families=tasks[0].families, shard_pairs=checked.shard_pairs,
                       threads=1 if on_ray else checked.threads)
    data = PairData.of(tasks)
    t0 = time.perf_counter()
    tables, run = (engine or Engine("local")).run(study, data)
    seconds = time.perf_counter() - t0
    if info is not None:
        info.update(copulas=int(data.offsets[-1]), shard_pairs=study.shard_pairs,
                    seconds=round(seconds, 3),
                    **{k: v for k, v in run.items() if k != "fingerprint"})
    table = tables["copula_codes"]
    codes = np.column_stack([table.column(f).to_numpy() for f in cop.CODE_FIELDS])
    off = data.offsets
    total = max(int(off[-1]), 1)
    models = iter([t.finish(codes[off[k]:off[k + 1]],
                            t.seconds + seconds * int(off[k + 1] - off[k]) / total)
                   for k, t in enumerate(tasks)])
    return [next(models) if isinstance(m, FitTask) else m for m in prepared]
