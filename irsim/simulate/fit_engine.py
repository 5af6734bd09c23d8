"""The copula selections of many collections as shards on the engine (issue 13, fitting cost).

Selecting a copula for every pair of kept runs of four TREC collections is ~15,000 AIC
selections (~10 ms each). :func:`fit_collections` prepares every (metric, collection) in
process (cache look-up, data preparation and margins: :func:`~irsim.simulate.fitting
.prepare_fit`), then runs the selections of every collection not found in the cache as one
study, :class:`CopulaFits`, on the run's engine (:class:`irsim.engine.session.Engine`;
``engine=ray``: Ray actors, one selection per core at a time): items are the pairs of all
collections laid end to end, a shard is a block of `shard_pairs` pairs, and its partial is
a :class:`~irsim.engine.partials.Slab` of fixed-width codes (family, rotation, fit
statistics, parameters: :func:`irsim.simulate.copulas.encode`). Each pair's selection is a
pure function of the kept scores, the seed and the pair (:func:`~irsim.simulate.fitting
.fit_pairs`), so the models are identical, bit for bit, whatever the engine, the number of
workers or the shard size, and equal to :func:`~irsim.simulate.fitting.fit_collection`'s.
The finished models are written to the cache.

On ``engine=local`` with ``threads > 1`` (the preset ``urbano2019``'s ``fit_threads: 2``) and
at least :data:`POOL_MIN_PAIRS` pairs, the fit forks `threads` worker processes for its
duration: they prepare the collections (margins: ~10% of the work) and split every shard's
pairs between them, each selection on one thread. pyvinecopulib holds the GIL during a
selection, so Python threads cannot share the pairs, and its own threads share the families
of one selection, which differ much in cost (Student and the BB families: ~80% of a ~9 ms
selection); whole selections on separate processes keep both cores busy. The codes do not
change: each is the same library call on the same pseudo-observations.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 30))
...             + 0.05 * rng.standard_normal((7, 30)), 0, 1)
>>> a, b = fit_collections([{"scores": x, "metric": "AP", "name": "a"},
...                         {"scores": x[:5], "metric": "AP", "name": "b"}], shard_pairs=4)
>>> len(a.copulas), len(b.copulas)   # 7 runs - 1 (below the 10% quantile), 5 - 1: 15, 6
(15, 6)
>>> from irsim.simulate.fitting import fit_collection
>>> a.copulas == fit_collection(x, metric="AP", name="a").copulas
True
"""

from __future__ import annotations

import logging
import multiprocessing
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.engine.base import Partial, Shard, shard_grid
from irsim.engine.partials import Slab
from irsim.engine.session import Engine
from irsim.errors import ConfigError
from irsim.simulate import copulas as cop
from irsim.simulate.fitting import (
    FORMAT,
    CollectionModel,
    FitTask,
    fit_pairs,
    prepare_fit,
)

__all__ = ["POOL_MIN_PAIRS", "SHARD_PAIRS", "CopulaFits", "PairData", "fit_collections"]

#: Pairs per shard by default (~1 s of selections; 15,000 pairs: ~230 shards).
SHARD_PAIRS = 64
#: Fewest pairs (before the drops) for which ``engine=local`` with ``threads > 1`` starts
#: worker processes (a few seconds of selections; below it each selection fits its families
#: on `threads` threads in this process instead).
POOL_MIN_PAIRS = 1000

#: Worker processes are forked (Linux); elsewhere the families of a selection share threads.
_FORK = sys.platform.startswith("linux")
#: The worker processes of the running :func:`fit_collections` (engine=local, threads > 1):
#: ``[executor, workers]``, or ``[None, 1]`` outside it.
_POOL: list[Any] = [None, 1]


def _select(kept: np.ndarray, seed: int, key: int, lo: int, hi: int,
            families: tuple[str, ...]) -> np.ndarray:
    """A worker's part of a shard: :func:`fit_pairs` on one thread."""
    return fit_pairs(kept, seed, key, lo, hi, families, 1)


class _Records(logging.Handler):
    """Keeps a worker's log records to hand back to the parent (which emits them)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _prepare(request: Mapping[str, Any]) -> tuple[Any, list[logging.LogRecord]]:
    """A worker's :func:`prepare_fit` of one collection, with the log records it wrote."""
    logger = logging.getLogger("irsim")
    handler = _Records()
    logger.addHandler(handler)
    old, logger.propagate = logger.propagate, False
    try:
        return prepare_fit(**dict(request)), handler.records
    finally:
        logger.removeHandler(handler)
        logger.propagate = old


def _runs(request: Mapping[str, Any]) -> int:
    """Rows of a request's scores (0 when they are not a matrix: prepare_fit says why)."""
    try:
        return int(np.shape(request["scores"])[0])
    except (KeyError, IndexError, TypeError, ValueError):
        return 0


@contextmanager
def _workers(n: int) -> Iterator[Executor]:
    """`n` worker processes forked from this one (they inherit the loaded modules: no
    import, and no ``if __name__ == "__main__"`` needed in the caller's script) for the
    duration; :class:`CopulaFits` shards run on them while it lasts. A worker only runs
    numpy and pyvinecopulib on its arguments."""
    ex = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("fork"))
    _POOL[:] = [ex, n]
    try:
        yield ex
    finally:
        _POOL[:] = [None, 1]
        ex.shutdown(wait=True, cancel_futures=True)


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
        Threads of each selection (changes no code); on ``engine=local`` inside
        :func:`fit_collections`' worker processes, the processes a shard is split over (each
        selection then runs on one thread).
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
        """The codes of the shard's pairs (:func:`irsim.simulate.fitting.fit_pairs` on the
        part of each collection the block covers)."""
        i0, i1 = shard.items
        off = data.offsets
        pool, workers = _POOL if self.threads > 1 else (None, 1)
        parts = []
        for t in range(len(data.kept)):  # the collections the block covers (usually one)
            lo, hi = max(i0, int(off[t])), min(i1, int(off[t + 1]))
            if lo >= hi:
                continue
            lo, hi = lo - int(off[t]), hi - int(off[t])
            args = (data.kept[t], data.seeds[t], data.keys[t])
            if pool is None:
                parts.append(fit_pairs(*args, lo, hi, self.families, self.threads))
                continue
            # 4 blocks a worker: whoever is done first takes the next (the families' costs
            # vary from pair to pair)
            cuts = np.linspace(lo, hi, min(4 * workers, hi - lo) + 1).round().astype(int)
            cuts = cuts.tolist()
            parts.extend(pool.submit(_select, *args, a, b, self.families)
                         for a, b in zip(cuts[:-1], cuts[1:], strict=True))
        parts = [p if isinstance(p, np.ndarray) else p.result() for p in parts]
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


def fit_collections(collections: Sequence[Mapping[str, Any]], *, engine: Engine | None = None,
                    shard_pairs: int = SHARD_PAIRS, threads: int = 1,
                    info: dict[str, Any] | None = None) -> list[CollectionModel]:
    """Fit (or read from the cache) the generator of every collection, the copula selections
    of all of them as one study on `engine` (see the module docstring).

    Parameters
    ----------
    collections : sequence of mapping
        The keywords of :func:`irsim.simulate.fitting.prepare_fit` for each collection
        (``scores``, ``metric``, ``name``, and optionally ``runs``, ``seed``,
        ``drop_duplicates``, ``drop_bottom``, ``families``, ``support``, ``cache_dir``).
    engine : Engine, optional
        Where the selections run; None: in this process (:class:`Engine` ``local``).
    shard_pairs, threads
        See :class:`CopulaFits` (neither changes a model). On ``engine=local`` (Linux) with
        ``threads > 1`` and at least :data:`POOL_MIN_PAIRS` pairs, `threads` worker processes
        prepare the collections (data preparation and margins) and share each shard's
        selections, one thread each (pyvinecopulib holds the GIL, and a pair's families
        differ much in cost: whole selections on separate cores use both better than one
        selection's families on two threads); on ``engine=ray`` each selection runs on one
        thread (every actor holds one CPU: parallelism comes from the actors).
    info : dict, optional
        Filled with what the fit did, for the manifest: ``collections`` (fitted, from the
        cache), ``copulas`` selected, ``processes`` (the worker processes, when there were
        some), and for the selections ``engine``, ``shard_pairs``, ``seconds`` and the
        engine's run info (``shards``, ``workers`` on Ray...).

    Returns
    -------
    list of CollectionModel
        In the order of `collections`. Each model's ``fit_seconds`` is its own preparation
        time plus its share (by pairs) of the selections' wall time; 0 for a cached one.
    """
    checked = CopulaFits(shard_pairs=shard_pairs, threads=threads)  # before any work
    on_ray = engine is not None and engine.name == "ray"
    rows = [_runs(c) for c in collections]
    if (on_ray or checked.threads < 2 or not _FORK
            or sum(r * (r - 1) // 2 for r in rows) < POOL_MIN_PAIRS):
        return _fit(collections, rows, engine, checked, on_ray, info)
    with _workers(checked.threads) as pool:
        return _fit(collections, rows, engine, checked, on_ray, info, pool)


def _fit(collections: Sequence[Mapping[str, Any]], rows: list[int], engine: Engine | None,
         checked: CopulaFits, on_ray: bool, info: dict[str, Any] | None,
         pool: Executor | None = None) -> list[CollectionModel]:
    """:func:`fit_collections`, the preparations on `pool` when there is one (the collection
    of most `rows` first; the log records of each are emitted here, in order)."""
    if pool is None:
        prepared = [prepare_fit(**dict(c)) for c in collections]
    else:
        order = sorted(range(len(collections)), key=lambda k: -rows[k])
        futures = {k: pool.submit(_prepare, dict(collections[k])) for k in order}
        prepared = []
        for k in range(len(collections)):
            done, records = futures[k].result()
            for record in records:
                logging.getLogger(record.name).handle(record)
            prepared.append(done)
    tasks = [t for t in prepared if isinstance(t, FitTask)]
    if info is not None:
        info.update(collections_fitted=len(tasks), collections_cached=len(prepared) - len(tasks),
                    copulas=0)
        if pool is not None:
            info["processes"] = int(_POOL[1])
    if not tasks:
        return [m for m in prepared if isinstance(m, CollectionModel)]
    families = {t.families for t in tasks}
    if len(families) > 1:
        raise ConfigError(f"families: one set of copula families per fit, got "
                          f"{sorted(families)}")
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
