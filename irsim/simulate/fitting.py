"""A collection's generator: data preparation, margins per run, copulas per pair, disk cache.

:func:`fit_collection` prepares one metric's score matrix of one collection as Urbano, Lima &
Hanjalic (SIGIR 2019) do (drop duplicate runs - all per-topic scores equal within 1e-5 - and
then the bottom ``drop_bottom`` share of the remaining runs by mean), selects a margin per run
(:mod:`irsim.simulate.margins`) and a copula per pair of runs (:mod:`irsim.simulate.copulas`),
and returns a :class:`CollectionModel`.

Fitting cost is dominated by the copulas (one AIC selection over 11 families with rotations
per pair, a few ms each); pyvinecopulib fits the families of one selection on
``threads`` threads. A fitted model is cached on disk when a cache directory is given: one
``<digest>.npz`` per (collection, metric), keyed by the sha256 of the scores, the run names
and every fitting option (seed, drop rules, families, the format version and the
pyvinecopulib version), so a rerun or a sweep over other study parameters skips fitting.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> z = rng.standard_normal((1, 40))
>>> scores = np.clip(0.3 + 0.1 * z + 0.05 * rng.standard_normal((10, 40)), 0, 1)
>>> model = fit_collection(scores, metric="AP", name="toy", seed=0)
>>> len(model.runs), len(model.dropped), len(model.copulas)   # bottom 10% of 10 runs: 1
(9, 1, 36)
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyvinecopulib as pv
from numpy.typing import ArrayLike

from irsim.errors import ConfigError, InputError
from irsim.sampling.rng import study_key
from irsim.simulate import copulas as cop
from irsim.simulate.margins import DISCRETE, Support, detect_support, fit_run_margins
from irsim.simulate.topics import Margins

__all__ = ["FORMAT", "CollectionModel", "cache_key", "fit_collection", "prepare_runs"]

#: Version of the cached model format (part of the cache key).
FORMAT = "irsim-simulate-1"
#: Runs whose per-topic scores all agree within this are duplicates.
DUPLICATE_TOL = 1e-5


@dataclass(frozen=True)
class CollectionModel:
    """The generator fitted to one metric of one collection.

    Attributes
    ----------
    name, metric : str
    runs : tuple of str
        The runs kept (after dropping duplicates and the bottom share).
    dropped : tuple of str
    margins : Margins
        One tabulated margin per kept run.
    margin_families : tuple of str
        The family selected for each run.
    support : str
        ``continuous`` or the discrete support (``grid 1/10``, ``reciprocal 1/1000``).
    copulas : tuple of str
        The JSON of the copula of each pair ``(a, b)``, ``a < b`` in
        ``numpy.triu_indices(runs, 1)`` order, fitted to pseudo-observations ``(u_a, u_b)``.
    copula_families : tuple of str
        ``<family>`` or ``<family> <rotation>`` of each pair.
    observed_error : float
        Largest ``|margin mean - observed mean|`` over the kept runs.
    fit_seconds : float
        Time the fit took (0 when read from the cache).
    cached : bool
        Whether the model came from the disk cache.
    """

    name: str
    metric: str
    runs: tuple[str, ...]
    dropped: tuple[str, ...]
    margins: Margins
    margin_families: tuple[str, ...]
    support: str
    copulas: tuple[str, ...]
    copula_families: tuple[str, ...]
    observed_error: float = float("nan")
    # bookkeeping of this process, not part of the model: no dataclass fields, so the data
    # digest of a study (checkpoints, resume) is the same for a fitted and a cached model
    # (unannotated class attributes: dataclasses list even ClassVars in __dataclass_fields__)
    fit_seconds = 0.0
    cached = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "_loaded", {})

    def timed(self, seconds: float, cached: bool) -> CollectionModel:
        """This model with its fitting time and cache flag set (returns self)."""
        object.__setattr__(self, "fit_seconds", float(seconds))
        object.__setattr__(self, "cached", bool(cached))
        return self

    @property
    def means(self) -> np.ndarray:
        """The exact mean of each kept run's margin."""
        return self.margins.mean()

    def pair(self, a: int, b: int) -> int:
        """Index of the unordered pair ``{a, b}`` in :attr:`copulas` (``a != b``)."""
        lo, hi = min(a, b), max(a, b)
        n = len(self.runs)
        return lo * n - lo * (lo + 1) // 2 + (hi - lo - 1)

    def copula(self, index: int) -> pv.Bicop:
        """The pyvinecopulib copula of pair `index` (parsed once, kept)."""
        got = self._loaded.get(index)
        if got is None:
            got = self._loaded[index] = cop.load(self.copulas[index])
        return got

    def __getstate__(self) -> dict:  # pickles without the parsed copulas (Ray)
        state = dict(self.__dict__)
        state["_loaded"] = {}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


def prepare_runs(scores: ArrayLike, drop_duplicates: bool = True, drop_bottom: float = 0.1
                 ) -> np.ndarray:
    """Mask of the runs kept: first duplicates are dropped (a run equal to an earlier one on
    every topic within 1e-5), then the bottom `drop_bottom` share of the rest by mean
    (``floor(drop_bottom * runs)`` runs, the lowest means; ties by position).

    Examples
    --------
    >>> x = np.array([[.1, .2], [.5, .6], [.1, .2], [.3, .3], [.9, .8]])
    >>> prepare_runs(x, drop_bottom=0.25).tolist()   # run 2 duplicates run 0; then 1 of 4
    [False, True, False, True, True]
    """
    x = np.asarray(scores, np.float64)
    keep = np.ones(len(x), bool)
    if drop_duplicates:
        for i in range(len(x) - 1):  # fit time: O(runs^2 topics)
            if keep[i]:
                keep[i + 1:] &= ~(np.abs(x[i + 1:] - x[i]) <= DUPLICATE_TOL).all(axis=1)
    if not 0.0 <= float(drop_bottom) < 1.0:
        raise ConfigError(f"drop_bottom must be in [0, 1), got {drop_bottom}")
    idx = np.flatnonzero(keep)
    drop = int(np.floor(drop_bottom * len(idx) + 1e-9))
    if drop:
        order = idx[np.argsort(x[idx].mean(axis=1), kind="stable")]
        keep[order[:drop]] = False
    return keep


def cache_key(scores: np.ndarray, runs: tuple[str, ...], options: dict) -> str:
    """sha256 of the scores, run names and options (the cache file's name).

    Examples
    --------
    >>> k1 = cache_key(np.zeros((2, 3)), ("a", "b"), {"seed": 0})
    >>> k1 == cache_key(np.zeros((2, 3)), ("a", "b"), {"seed": 1}), len(k1)
    (False, 64)
    """
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(scores, np.float64).tobytes())
    h.update(json.dumps({"runs": list(runs), "shape": list(scores.shape), "format": FORMAT,
                         "pyvinecopulib": pv.__version__, **options},
                        sort_keys=True).encode())
    return h.hexdigest()


def _save(path: Path, model: CollectionModel) -> None:
    meta = {k: getattr(model, k) for k in ("name", "metric", "runs", "dropped",
                                           "margin_families", "support", "copulas",
                                           "copula_families", "observed_error",
                                           "fit_seconds")}
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, x=model.margins.x, F=model.margins.F, meta=np.array(json.dumps(meta)))
    os.replace(tmp, path)


def _load(path: Path) -> CollectionModel:
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        support = None if meta["support"] == "continuous" else meta["support"]
        margins = Margins(z["x"], z["F"], kind="fitted", support=support)
    return CollectionModel(meta["name"], meta["metric"], tuple(meta["runs"]),
                           tuple(meta["dropped"]), margins, tuple(meta["margin_families"]),
                           meta["support"], tuple(meta["copulas"]),
                           tuple(meta["copula_families"]),
                           float(meta["observed_error"])).timed(0.0, True)


def fit_collection(scores: ArrayLike, *, metric: str, name: str,
                   runs: tuple[str, ...] | None = None, seed: int = 0,
                   drop_duplicates: bool = True, drop_bottom: float = 0.1,
                   families: tuple[str, ...] = cop.FAMILIES, support: Support | None = None,
                   cache_dir: str | os.PathLike | None = None, threads: int = 1
                   ) -> CollectionModel:
    """Fit the generator to a (runs, topics) matrix of one metric (see the module docstring).

    Parameters
    ----------
    scores : array_like, shape (runs, topics)
    metric, name : str
        Metric and collection name.
    runs : tuple of str, optional
        Run names (default ``r0, r1, ...``).
    seed : int
        Seeds the random tie breaking of the pseudo-observations (per pair:
        ``(seed, crc32(name/metric), a, b)``).
    drop_duplicates, drop_bottom
        See :func:`prepare_runs`.
    families : tuple of str
        Copula families (:data:`irsim.simulate.copulas.FAMILIES`).
    support : Support, optional
        The metric's discrete support; default :func:`detect_support` of `scores`.
    cache_dir : path, optional
        Directory of cached models (created if missing; ``~`` expands to the home directory);
        None: no cache.
    threads : int
        Threads pyvinecopulib uses per selection (the result does not depend on it).
    """
    x = np.asarray(scores, np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise InputError(f"collection {name} {metric}: need a (runs >= 2, topics) matrix")
    names = tuple(runs) if runs is not None else tuple(f"r{i}" for i in range(len(x)))
    if len(names) != len(x):
        raise InputError(f"collection {name} {metric}: {len(names)} run names for "
                         f"{len(x)} rows")
    support = support if support is not None else detect_support(x)
    options = {"metric": metric, "name": name, "seed": int(seed),
               "drop_duplicates": bool(drop_duplicates), "drop_bottom": float(drop_bottom),
               "families": list(families),
               "support": None if support is None else support.name}
    if support is not None:  # the discrete families (issue 13: categorical added)
        options["discrete_families"] = list(DISCRETE)
    path = None
    if cache_dir is not None:
        path = Path(cache_dir).expanduser() / f"{cache_key(x, names, options)}.npz"
        if path.is_file():
            return _load(path)
    t0 = time.perf_counter()
    keep = prepare_runs(x, drop_duplicates, drop_bottom)
    if np.count_nonzero(keep) < 2:
        raise InputError(f"collection {name} {metric}: fewer than 2 runs left to simulate")
    kept = x[keep]
    margins, fits = fit_run_margins(kept, support)
    ctl = cop.controls(families)
    if threads > 1:
        ctl = pv.FitControlsBicop(family_set=ctl.family_set, parametric_method="mle",
                                  selection_criterion="aic", allow_rotations=True,
                                  num_threads=int(threads))
    a, b = np.triu_indices(len(kept), 1)
    specs, fams = [], []
    mkey = study_key(f"{name}/{metric}")
    for i, j in zip(a.tolist(), b.tolist(), strict=True):  # fit time: one selection per pair
        rng = np.random.default_rng([int(seed), mkey, i, j])
        u = cop.pseudo_obs(np.column_stack([kept[i], kept[j]]), rng)
        c = pv.Bicop.from_data(u, controls=ctl)
        specs.append(c.to_json())
        fam = cop.family_name(c)
        fams.append(fam if c.rotation == 0 else f"{fam} {c.rotation}")
    model = CollectionModel(
        name=name, metric=metric,
        runs=tuple(n for n, k in zip(names, keep, strict=True) if k),
        dropped=tuple(n for n, k in zip(names, keep, strict=True) if not k),
        margins=margins, margin_families=tuple(f.family for f in fits),
        support="continuous" if support is None else support.name,
        copulas=tuple(specs), copula_families=tuple(fams),
        observed_error=float(np.abs(margins.mean() - kept.mean(axis=1)).max()),
    ).timed(time.perf_counter() - t0, False)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        _save(path, model)
    return model
