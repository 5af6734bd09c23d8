"""A collection's generator: data preparation, margins per run, copulas per pair, disk cache.

:func:`fit_pair_copula_model` prepares one metric's score matrix of one collection as Urbano, Lima &
Hanjalic (SIGIR 2019) do (drop duplicate runs - all per-topic scores equal within 1e-5 - and
then the bottom ``drop_bottom`` share of the remaining runs by mean), selects a margin per run
(:mod:`irsim.simulate.margins`) and a copula per pair of runs (:mod:`irsim.simulate.copulas`),
and returns a :class:`PairCopulaModel`.

Fitting cost is dominated by the copulas (one AIC selection over 11 families with rotations
per pair, ~10 ms each); pyvinecopulib fits the families of one selection on ``threads``
threads. The work is split in three steps so that the selections can run elsewhere:
:func:`prepare_fit` (data preparation and margins, in process; returns the cached model when
there is one), :func:`fit_pairs` (the selections of a range of pairs, each a pure function of
the kept scores, the seed and the pair, returned as fixed-width codes
:func:`irsim.simulate.copulas.encode`) and :meth:`FitTask.finish` (the model from the codes,
saved to the cache). :func:`fit_pair_copula_model` runs the three in process;
:func:`irsim.simulate.fit_engine.fit_pair_copula_models` runs the selections of many collections as
shards on the engine. Both give the same model, bit for bit.

A fitted model is cached on disk when a cache directory is given: one ``<digest>.npz`` per
(collection, metric), keyed by the sha256 of the scores, the run names and every fitting
option (seed, drop rules, families, the format version and the pyvinecopulib version), so a
rerun or a sweep over other study parameters skips fitting. Each entry carries its key and a
sha256 of its payload (margins and the model's JSON, copulas included); an entry that fails to
load or to verify (damaged, forged, another entry's file, an older irsim's entry without a
checksum) is refitted and overwritten, with a one-line warning.

The cache trusts its directory: the checksum catches damage and misplaced files, not a
forgery by someone who can write there (they can recompute it). An entry whose checksum
matches but whose content is malformed (its JSON, a copula, margins or run lists that are
not a model of the data) was not written by irsim: it is refused with one line
(:class:`~irsim.errors.InputError`) naming the entry, never refitted over silently. With
``verify=k`` a cached model is checked against the data before it is used: its kept runs
are recomputed and ``k`` pairs, drawn at random (seeded by the collection), are refitted
(margins and copula) and must equal the entry bit for bit; a difference is refused the same
way. Keep the cache in a directory only you can write.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> z = rng.standard_normal((1, 40))
>>> scores = np.clip(0.3 + 0.1 * z + 0.05 * rng.standard_normal((10, 40)), 0, 1)
>>> model = fit_pair_copula_model(scores, metric="AP", name="toy", seed=0)
>>> len(model.runs), len(model.dropped), len(model.copulas)   # bottom 10% of 10 runs: 1
(9, 1, 36)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyvinecopulib as pv
from numpy.typing import ArrayLike

from irsim.errors import InputError
from irsim.rng import study_key
from irsim.sampling.systems import check_drop, kept_runs
from irsim.simulate import copulas as cop
from irsim.simulate.margins import (
    CONTINUOUS,
    CONTINUOUS_ALL,
    DISCRETE,
    MARGINS_VERSION,
    Margins,
    Support,
    detect_support,
    fit_run_margins,
)

__all__ = ["FORMAT", "FitTask", "PairCopulaModel", "cache_key", "fit_pair_copula_model",
           "fit_pairs", "prepare_fit", "prepare_runs"]

log = logging.getLogger(__name__)

#: The names of the run-dropping parameters in error messages (this module's keywords).
_DROP_KEYS = ("drop_bottom", "drop_rule")

#: Version of the cached model format (part of the cache key).
FORMAT = "irsim-simulate-2"  # 2: copula JSON written from the codes


@dataclass(frozen=True)
class PairCopulaModel:
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

    def timed(self, seconds: float, cached: bool) -> PairCopulaModel:
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


def prepare_runs(scores: ArrayLike, drop_duplicates: bool = True, drop_bottom: float = 0.1,
                 drop_rule: str = "quantile") -> np.ndarray:
    """Mask of the runs kept: first duplicates are dropped (a run equal to an earlier one on
    every topic within 1e-5), then the bottom `drop_bottom` share of the rest by mean
    (:func:`irsim.sampling.systems.kept_runs`; ``drop_rule="quantile"``, the paper's
    ``removeBottom``: a run goes when its mean is below the `drop_bottom` quantile (type 7) of
    the remaining means; ``"count"``: the ``floor(drop_bottom * runs)`` lowest means).

    Examples
    --------
    >>> x = np.array([[.1, .2], [.5, .6], [.1, .2], [.3, .3], [.9, .8]])
    >>> prepare_runs(x, drop_bottom=0.25).tolist()   # run 2 duplicates run 0; then 1 of 4
    [False, True, False, True, True]
    """
    return kept_runs(scores, drop_duplicates=drop_duplicates, drop_bottom=drop_bottom,
                     rule=drop_rule, keys=_DROP_KEYS)


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


def _payload_digest(key: str, x: np.ndarray, F: np.ndarray, meta: str) -> str:
    """sha256 of a cache entry's key and payload (the margins' arrays and the model JSON)."""
    h = hashlib.sha256(f"{key}\x1e".encode())
    for arr in (x, F):
        arr = np.ascontiguousarray(arr)
        h.update(f"{arr.dtype.str}\x1f{arr.shape}\x1e".encode())
        h.update(arr.tobytes())
    h.update(meta.encode())
    return h.hexdigest()


def _save(path: Path, model: PairCopulaModel, key: str) -> None:
    meta = {k: getattr(model, k) for k in ("name", "metric", "runs", "dropped",
                                           "margin_families", "support", "copulas",
                                           "copula_families", "observed_error",
                                           "fit_seconds")}
    text = json.dumps(meta)
    x, F = np.asarray(model.margins.x), np.asarray(model.margins.F)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    try:
        with open(tmp, "wb") as f:
            np.savez(f, x=x, F=F, meta=np.array(text), key=np.array(key),
                     sha256=np.array(_payload_digest(key, x, F, text)))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class _BadEntry(Exception):
    """A cache entry that does not verify."""


def _forged(path: Path, why: str) -> InputError:
    """The error of an entry whose checksum matches but whose content is not irsim's."""
    return InputError(f"fit cache entry {why}, although its checksum matches: it was not "
                      f"written by irsim (the cache trusts its directory, {path.parent}); "
                      f"remove the entry (it is then refitted) and keep the cache where only "
                      f"you can write", file=path)


def _model_of(path: Path, text: str, x: np.ndarray, F: np.ndarray) -> PairCopulaModel:
    """The model of a verified entry's payload; a malformed one raises :func:`_forged`."""
    try:
        meta = json.loads(text)
        if not isinstance(meta, dict):
            raise ValueError("the model JSON is no object")
        runs, dropped = tuple(meta["runs"]), tuple(meta["dropped"])
        copulas, families = tuple(meta["copulas"]), tuple(meta["copula_families"])
        margin_families = tuple(meta["margin_families"])
        texts = (meta["name"], meta["metric"], meta["support"], *runs, *dropped, *copulas,
                 *families, *margin_families)
        if not all(isinstance(t, str) for t in texts):
            raise ValueError("a name, run, family or copula that is no string")
        n = len(runs)
        if n < 2 or len(copulas) != n * (n - 1) // 2 or len(families) != len(copulas) or \
                len(margin_families) != n:
            raise ValueError(f"{n} runs with {len(copulas)} copulas and "
                             f"{len(margin_families)} margins")
        support = None if meta["support"] == "continuous" else meta["support"]
        margins = Margins(x, F, kind="fitted", support=support)
        if margins.systems != n:
            raise ValueError(f"{margins.systems} margins for {n} runs")
        for k, spec in enumerate(copulas):
            try:
                cop.load(spec)
            except Exception as err:  # noqa: BLE001 - pyvinecopulib: RuntimeError
                first = (str(err).splitlines() or [type(err).__name__])[0]
                raise ValueError(f"copula {k} does not parse ({first})") from None
        observed = float(meta["observed_error"])
    except (KeyError, TypeError, ValueError, InputError) as err:
        why = f"missing {err}" if isinstance(err, KeyError) else str(err)
        raise _forged(path, f"is malformed ({why.splitlines()[0] if why else 'unreadable'})"
                      ) from None
    return PairCopulaModel(meta["name"], meta["metric"], runs, dropped, margins,
                           margin_families, meta["support"], copulas, families,
                           observed).timed(0.0, True)


def _load(path: Path, key: str) -> PairCopulaModel:
    """The model of cache entry `path`, verified against `key` and its checksum; raises
    :class:`_BadEntry` (or whatever reading it raises) otherwise."""
    with np.load(path, allow_pickle=False) as z:
        if "sha256" not in z.files or "key" not in z.files:
            raise _BadEntry("no checksum (an entry of an older irsim, or not a fit)")
        x, F, text = z["x"], z["F"], str(z["meta"])
        if str(z["key"]) != key:
            raise _BadEntry("the entry of another collection or options")
        if str(z["sha256"]) != _payload_digest(key, x, F, text):
            raise _BadEntry("checksum mismatch")
    return _model_of(path, text, x, F)


def _verify(path: Path, model: PairCopulaModel, x: np.ndarray, names: tuple[str, ...],
            keep: np.ndarray, support: Support | None, seed: int, families: tuple[str, ...],
            pairs: int, continuous_families: tuple[str, ...] = CONTINUOUS) -> None:
    """Check a cached `model` against the data: its kept and dropped runs are those of
    `keep`, and `pairs` pairs drawn at random (seeded by the seed and the collection) refit
    to the same margins and copulas, bit for bit; otherwise :func:`_forged`."""
    runs = tuple(n for n, k in zip(names, keep, strict=True) if k)
    dropped = tuple(n for n, k in zip(names, keep, strict=True) if not k)
    if model.runs != runs or model.dropped != dropped:
        raise _forged(path, "keeps other runs than the data's (verify)")
    kept = x[keep]
    n = len(runs)
    total = n * (n - 1) // 2
    key = study_key(f"{model.name}/{model.metric}")
    rng = np.random.default_rng([int(seed), key, 0x5E7F])
    chosen = np.sort(rng.choice(total, size=min(int(pairs), total), replace=False))
    a, b = np.triu_indices(n, 1)
    rows = np.unique(np.concatenate([a[chosen], b[chosen]]))
    margins, fits = fit_run_margins(kept[rows], support, continuous_families)
    for r, row in enumerate(rows.tolist()):
        if not (np.array_equal(margins.x[r], model.margins.x[row]) and
                np.array_equal(margins.F[r], model.margins.F[row]) and
                fits[r].family == model.margin_families[row]):
            raise _forged(path, f"differs from a refit of the margin of run {runs[row]} "
                                f"(verify)")
    for p in chosen.tolist():
        code = fit_pairs(kept, seed, key, p, p + 1, families)[0]
        if cop.decode(code) != model.copulas[p]:
            raise _forged(path, f"differs from a refit of the copula of runs {runs[a[p]]} "
                                f"and {runs[b[p]]} (verify)")


def fit_pairs(kept: np.ndarray, seed: int, key: int, lo: int, hi: int,
              families: tuple[str, ...] = cop.FAMILIES, threads: int = 1) -> np.ndarray:
    """Copula codes (:func:`irsim.simulate.copulas.encode`, shape ``(hi - lo, WIDTH)``) of
    the pairs ``lo .. hi - 1`` of the kept runs, in ``numpy.triu_indices(runs, 1)`` order.

    Pair ``(i, j)`` is fitted to the pseudo-observations of ``(kept[i], kept[j])`` with ties
    broken by a generator seeded ``(seed, key, i, j)``: a pure function of the pair, so any
    split of the pairs gives the same codes. One pyvinecopulib selection per pair (the loop
    is over library calls). With `threads` > 1 the pairs are split into contiguous blocks
    fitted on that many threads, each selection on one thread (pyvinecopulib releases the
    GIL while it selects): on 2 cores 1.9x one thread, where splitting each selection's
    families over the threads gave 1.2-1.4x (bench/bench_fit.py); the codes are the same.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = 0.3 + 0.1 * rng.standard_normal((1, 40)) + 0.05 * rng.standard_normal((4, 40))
    >>> whole = fit_pairs(x, 0, 7, 0, 6)
    >>> whole.shape, bool((fit_pairs(x, 0, 7, 2, 5) == whole[2:5])[:, :5].all())
    ((6, 8), True)
    >>> bool(np.array_equal(fit_pairs(x, 0, 7, 0, 6, threads=2), whole, equal_nan=True))
    True
    """
    if threads > 1 and hi - lo > 1:
        from concurrent.futures import ThreadPoolExecutor

        # a few blocks per thread: selections differ in cost, the blocks even it out
        bounds = np.linspace(lo, hi, min(hi - lo, 4 * threads) + 1).astype(int).tolist()
        with ThreadPoolExecutor(max_workers=threads) as pool:
            parts = list(pool.map(lambda k: fit_pairs(kept, seed, key, bounds[k],
                                                      bounds[k + 1], families, 1),
                                  range(len(bounds) - 1)))
        return np.concatenate(parts)
    a, b = np.triu_indices(len(kept), 1)
    ctl = cop.controls(tuple(families), 1)
    out = np.empty((hi - lo, cop.WIDTH))
    for r, (i, j) in enumerate(zip(a[lo:hi].tolist(), b[lo:hi].tolist(), strict=True)):
        rng = np.random.default_rng([int(seed), int(key), i, j])
        u = cop.pseudo_obs(np.column_stack([kept[i], kept[j]]), rng)
        out[r] = cop.encode(pv.Bicop.from_data(u, controls=ctl))
    return out


@dataclass(frozen=True)
class FitTask:
    """One (metric, collection) prepared for its copula selections (:func:`prepare_fit`):
    the kept runs and their margins; :meth:`finish` makes the model from the pairs' codes.

    Attributes
    ----------
    name, metric : str
    names : tuple of str
        Every run's name (kept or not).
    keep : numpy.ndarray of bool
        Which runs are kept.
    kept : numpy.ndarray, shape (kept runs, topics)
    seed, key : int
        The tie-breaking seed and the collection's key (``study_key(name/metric)``).
    families : tuple of str
    margins : Margins
    margin_families : tuple of str
    support : str
    path : Path or None
        Where the model is cached.
    seconds : float
        Time the preparation and margins took.
    """

    name: str
    metric: str
    names: tuple[str, ...]
    keep: np.ndarray
    kept: np.ndarray
    seed: int
    key: int
    families: tuple[str, ...]
    margins: Margins
    margin_families: tuple[str, ...]
    support: str
    path: Path | None
    seconds: float

    @property
    def pairs(self) -> int:
        """Number of copulas to select."""
        n = len(self.kept)
        return n * (n - 1) // 2

    def finish(self, codes: np.ndarray, seconds: float) -> PairCopulaModel:
        """The model from the codes of every pair (saved to the cache when there is one);
        `seconds` is the whole fitting time of this collection."""
        codes = np.asarray(codes, np.float64)
        if codes.shape != (self.pairs, cop.WIDTH) or np.isnan(codes[:, 0]).any():
            raise ValueError(f"collection {self.name} {self.metric}: expected the codes of "
                             f"{self.pairs} pairs, got shape {codes.shape}")
        model = PairCopulaModel(
            name=self.name, metric=self.metric,
            runs=tuple(n for n, k in zip(self.names, self.keep, strict=True) if k),
            dropped=tuple(n for n, k in zip(self.names, self.keep, strict=True) if not k),
            margins=self.margins, margin_families=self.margin_families,
            support=self.support,
            copulas=tuple(cop.decode(c) for c in codes),
            copula_families=tuple(cop.label(c) for c in codes),
            observed_error=float(np.abs(self.margins.mean() - self.kept.mean(axis=1)).max()),
        ).timed(seconds, False)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _save(self.path, model, self.path.stem)
        return model


def prepare_fit(scores: ArrayLike, *, metric: str, name: str,
                runs: tuple[str, ...] | None = None, seed: int = 0,
                drop_duplicates: bool = True, drop_bottom: float = 0.1,
                drop_rule: str = "quantile",
                families: tuple[str, ...] = cop.FAMILIES, support: Support | None = None,
                cache_dir: str | os.PathLike | None = None,
                continuous_families: tuple[str, ...] = CONTINUOUS, verify: int = 0
                ) -> PairCopulaModel | FitTask:
    """The cached model of `scores`, or the :class:`FitTask` of its copula selections (data
    preparation and margins done). Parameters as :func:`fit_pair_copula_model`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.clip(0.3 + 0.1 * rng.standard_normal((6, 30)), 0, 1)
    >>> task = prepare_fit(x, metric="AP", name="toy", drop_bottom=0.0)
    >>> model = task.finish(fit_pairs(task.kept, 0, task.key, 0, task.pairs), 0.0)
    >>> task.pairs, model.copulas == fit_pair_copula_model(x, metric="AP", name="toy",
    ...                                                    drop_bottom=0.0).copulas
    (15, True)
    """
    t0 = time.perf_counter()
    check_drop(drop_bottom, drop_rule, keys=_DROP_KEYS)
    if isinstance(verify, bool) or not isinstance(verify, int | np.integer) or verify < 0:
        raise InputError(f"verify={verify!r}: the number of pairs refitted to check a cached "
                         f"model is an integer >= 0")
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
               "drop_rule": str(drop_rule), "families": list(families),
               "support": None if support is None else support.name}
    if support is not None:  # the discrete families (issue 13: categorical added)
        options["discrete_families"] = list(DISCRETE)
    else:  # issue 29: simIReff's continuous families
        bad = [f for f in continuous_families if f not in CONTINUOUS_ALL]
        if bad or not continuous_families:
            raise InputError(f"continuous margin families must be some of {CONTINUOUS_ALL}, "
                             f"got {list(continuous_families)}")
        options["continuous_families"] = list(continuous_families)
    options["margins"] = MARGINS_VERSION  # issue 29: simIReff's fitting rules
    path = key = None
    if cache_dir is not None:
        key = cache_key(x, names, options)
        path = Path(cache_dir).expanduser() / f"{key}.npz"
        if path.is_file():
            try:
                model = _load(path, key)
                if verify:
                    keep = prepare_runs(x, drop_duplicates, drop_bottom, drop_rule)
                    _verify(path, model, x, names, keep, support, seed, tuple(families),
                            verify, tuple(continuous_families))
                return model
            except InputError:  # checksum right, content not irsim's: refused
                raise
            except Exception as err:  # noqa: BLE001 - damaged, forged, foreign: refitted
                first = (str(err).strip().splitlines() or [""])[0]
                why = first if isinstance(err, _BadEntry) else \
                    f"unreadable ({type(err).__name__}{': ' + first if first else ''})"
                log.warning("fit cache entry %s: %s; refitting it and overwriting the entry",
                            path, why)
    keep = prepare_runs(x, drop_duplicates, drop_bottom, drop_rule)
    if np.count_nonzero(keep) < 2:
        raise InputError(f"collection {name} {metric}: fewer than 2 runs left to simulate")
    kept = x[keep]
    margins, fits = fit_run_margins(kept, support, tuple(continuous_families))
    return FitTask(name=name, metric=metric, names=names, keep=keep, kept=kept,
                   seed=int(seed), key=study_key(f"{name}/{metric}"),
                   families=tuple(families), margins=margins,
                   margin_families=tuple(f.family for f in fits),
                   support="continuous" if support is None else support.name, path=path,
                   seconds=time.perf_counter() - t0)


def fit_pair_copula_model(scores: ArrayLike, *, metric: str, name: str,
                   runs: tuple[str, ...] | None = None, seed: int = 0,
                   drop_duplicates: bool = True, drop_bottom: float = 0.1,
                   drop_rule: str = "quantile",
                   families: tuple[str, ...] = cop.FAMILIES, support: Support | None = None,
                   cache_dir: str | os.PathLike | None = None, threads: int = 1,
                   continuous_families: tuple[str, ...] = CONTINUOUS,
                   verify: int = 0) -> PairCopulaModel:
    """Fit the generator to a (runs, topics) matrix of one metric in this process (see the
    module docstring).

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
    drop_duplicates, drop_bottom, drop_rule
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
    continuous_families : tuple of str
        The margin families of a continuous metric, selected per run by AIC
        (:data:`~irsim.simulate.margins.families.CONTINUOUS`;
        :data:`~irsim.simulate.margins.families.CONTINUOUS_SIMIREFF` adds simIReff's ``bks``).
    verify : int
        Pairs refitted to check a model read from the cache (0: none; see the module
        docstring): a model that is not the data's is refused with
        :class:`~irsim.errors.InputError`.
    """
    task = prepare_fit(scores, metric=metric, name=name, runs=runs, seed=seed,
                       drop_duplicates=drop_duplicates, drop_bottom=drop_bottom,
                       drop_rule=drop_rule, families=families, support=support,
                       cache_dir=cache_dir, continuous_families=continuous_families,
                       verify=verify)
    if isinstance(task, PairCopulaModel):
        return task
    t0 = time.perf_counter()
    codes = fit_pairs(task.kept, task.seed, task.key, 0, task.pairs, task.families, threads)
    return task.finish(codes, task.seconds + time.perf_counter() - t0)
