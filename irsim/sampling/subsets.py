"""Topic-set samplers for swap and error-rate studies, as index and selection-count matrices.

Each trial draws ``sets`` topic sets (usually two, ``Q_i`` and ``Q'_i``) of ``size`` topics
from ``range(n)`` under one of four schemes (Sakai, "The effect of topic sampling ...";
Sanderson & Zobel 2005; METHODS.md section 4):

``disjoint``
    The sets are disjoint and drawn without replacement (Voorhees-Buckley): the first
    ``sets * size`` topics of a random permutation, so ``sets * size <= n``.
``independent``
    Each set is drawn without replacement, independently of the others (sets may overlap,
    a set never holds a topic twice); ``size <= n``.
``replacement``
    Each set draws ``size`` topics with replacement, independently (duplicates and overlap
    allowed; Soboroff); ``size <= n`` (it may exceed ``n / 2``).
``bootstrap``
    ``replacement`` with ``size == n``: two independent bootstrap samples.

A sampler is a pure function of ``(seed, study, scheme, n, size, key)`` and the trial range:
trials are drawn in blocks of :data:`~irsim.rng.REPLICATE_BLOCK` keyed by block
index (:func:`~irsim.rng.blocked_draws`), so any split of the trials gives the same
sets. Count matrices (trials x sets x n, how often each topic is in each set) turn the means
of every system on every set into one GEMM: ``means = scores @ counts[:, k].T / size``
(:func:`set_means`).
"""

from __future__ import annotations

import numpy as np

from irsim.errors import ConfigError, param, unknown_name
from irsim.exact import Exact
from irsim.rng import blocked_draws
from irsim.sampling.topics import indices_to_counts

__all__ = [
    "SCHEMES",
    "check_scheme",
    "check_subset_size",
    "subset_indices",
    "subset_counts",
    "indices_to_set_counts",
    "unique_topics",
    "set_overlap",
    "gemm_trials",
    "set_means",
]

#: Sampling schemes, as configs and the ``sampling`` column of result tables spell them.
SCHEMES = ("disjoint", "independent", "replacement", "bootstrap")


def check_scheme(scheme: object, name: str | None = None) -> str:
    """`scheme` if it is one of :data:`SCHEMES`, else a ConfigError suggesting close ones
    (`name`: the parameter, default ``sampling``).

    Examples
    --------
    >>> check_scheme("disjoint")
    'disjoint'
    >>> check_scheme("disjiont")
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown experiment.sampling scheme 'disjiont' \
(did you mean 'disjoint'?); valid: bootstrap, disjoint, independent, replacement
    """
    if not isinstance(scheme, str) or scheme not in SCHEMES:
        raise unknown_name(f"{name or param('sampling')} scheme", str(scheme), SCHEMES)
    return scheme


def check_subset_size(scheme: str, n: int, size: object, *, sets: int = 2,
                      name: str | None = None) -> int:
    """Validate a topic-set size for `scheme` on `n` topics; returns it as an int (`name`:
    the parameter, default ``subset_sizes``).

    ``disjoint`` needs ``sets * size <= n`` (``size <= n/2`` for two sets), ``independent``
    and ``replacement`` need ``size <= n``, ``bootstrap`` needs ``size == n``; every size is
    >= 1.

    Examples
    --------
    >>> check_subset_size("replacement", 50, 40)
    40
    >>> check_subset_size("disjoint", 50, 26)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.subset_sizes: 26 > n/2 = 25.0 for disjoint \
sampling of 2 sets from 50 topics
    """
    scheme = check_scheme(scheme)
    name = name or param("subset_sizes")
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or int(size) < 1:
        raise ConfigError(f"{name} must hold integers >= 1, got {size!r}")
    size = int(size)
    if scheme == "disjoint" and sets * size > n:
        raise ConfigError(f"{name}: {size} > n/{sets} = {n / sets} for disjoint sampling of "
                          f"{sets} sets from {n} topics")
    if scheme in ("independent", "replacement") and size > n:
        raise ConfigError(f"{name}: {size} > n = {n} topics ({scheme} sampling)")
    if scheme == "bootstrap" and size != n:
        raise ConfigError(f"{name}: bootstrap sets have size n = {n}, got {size}")
    return size


def _draw(scheme: str, n: int, size: int, sets: int):
    if scheme == "disjoint":
        def draw(rng: np.random.Generator, m: int) -> np.ndarray:
            perm = rng.random((m, n)).argsort(axis=1, kind="stable")
            return perm[:, : sets * size].reshape(m, sets, size)
    elif scheme == "independent":
        def draw(rng: np.random.Generator, m: int) -> np.ndarray:
            return rng.random((m, sets, n)).argsort(axis=2, kind="stable")[:, :, :size]
    else:  # replacement, bootstrap
        def draw(rng: np.random.Generator, m: int) -> np.ndarray:
            return rng.integers(0, n, size=(m, sets, size), dtype=np.int64)
    return draw


def subset_indices(
    scheme: str, seed: int, study: str, n: int, size: int, start: int, stop: int, *,
    sets: int = 2, key: tuple[int, ...] = (),
) -> np.ndarray:
    """Topic indices of trials ``start:stop``: shape ``(stop - start, sets, size)``.

    Parameters
    ----------
    scheme : {"disjoint", "independent", "replacement", "bootstrap"}
    seed : int
        Global seed.
    study : str
        Name of the random stream (the scheme is appended to it).
    n : int
        Topics to draw from.
    size : int
        Topics per set (with duplicates for ``replacement``/``bootstrap``); validated by
        :func:`check_subset_size`.
    start, stop : int
        Trial range.
    sets : int
        Sets per trial.
    key : tuple of int
        Extra coordinates of the stream (e.g. a metric or collection index).

    Returns
    -------
    ndarray of int64

    Examples
    --------
    >>> idx = subset_indices("disjoint", 0, "demo", 10, 5, 0, 3)
    >>> idx.shape
    (3, 2, 5)
    >>> [len(set(row.ravel().tolist())) for row in idx]   # 10 distinct topics per trial
    [10, 10, 10]
    >>> a = subset_indices("replacement", 1, "demo", 10, 8, 0, 600)
    >>> b = np.concatenate([subset_indices("replacement", 1, "demo", 10, 8, s, e)
    ...                     for s, e in [(0, 7), (7, 260), (260, 600)]])
    >>> bool((a == b).all())
    True
    """
    scheme = check_scheme(scheme)
    if isinstance(sets, bool) or not isinstance(sets, int) or sets < 1:
        raise ConfigError(f"sets must be an integer >= 1, got {sets!r}")
    size = check_subset_size(scheme, n, size, sets=sets)
    return blocked_draws(seed, f"{study}/{scheme}", (n, size, sets, *key), start, stop,
                         _draw(scheme, n, size, sets))


def indices_to_set_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """(trials, sets, size) indices -> (trials, sets, n) float64 selection counts.

    Examples
    --------
    >>> indices_to_set_counts(np.array([[[0, 0], [2, 1]]]), 3).tolist()
    [[[2.0, 0.0, 0.0], [0.0, 1.0, 1.0]]]
    """
    idx = np.asarray(idx)
    m, sets, size = idx.shape
    return indices_to_counts(idx.reshape(m * sets, size), n).reshape(m, sets, n)


def subset_counts(
    scheme: str, seed: int, study: str, n: int, size: int, start: int, stop: int, *,
    sets: int = 2, key: tuple[int, ...] = (),
) -> np.ndarray:
    """Selection counts of trials ``start:stop``: shape ``(stop - start, sets, n)``, each
    row summing to `size` (see :func:`subset_indices` for the parameters).

    Examples
    --------
    >>> c = subset_counts("replacement", 0, "demo", 6, 6, 0, 4)
    >>> c.shape, c.sum(axis=2).tolist()[0]
    ((4, 2, 6), [6.0, 6.0])
    """
    idx = subset_indices(scheme, seed, study, n, size, start, stop, sets=sets, key=key)
    return indices_to_set_counts(idx, n)


def unique_topics(counts: np.ndarray) -> np.ndarray:
    """Distinct topics in each set: ``count_nonzero(counts > 0)`` over the last axis (int64).

    Examples
    --------
    >>> unique_topics(np.array([[[2.0, 0.0, 1.0], [1.0, 1.0, 1.0]]])).tolist()
    [[2, 3]]
    """
    return np.count_nonzero(np.asarray(counts) > 0, axis=-1).astype(np.int64)


def set_overlap(counts: np.ndarray) -> np.ndarray:
    """Distinct topics shared by the first two sets of each trial (int64, per trial).

    Examples
    --------
    >>> set_overlap(np.array([[[2.0, 0.0, 1.0], [1.0, 1.0, 0.0]]])).tolist()
    [1]
    """
    c = np.asarray(counts) > 0
    return np.count_nonzero(c[:, 0] & c[:, 1], axis=-1).astype(np.int64)


def gemm_trials(systems: int, topics: int) -> int:
    """Trials per GEMM of :func:`set_means`: the largest divisor of 250 keeping
    ``systems * topics * trials <= 2**18``, at least 1.

    Below that size OpenBLAS computes a product on the calling thread; bigger products of
    the topic-set studies are still small, and threaded ones left the BLAS threads spinning
    next to the elementwise work (2.3x slower on a busy 2-core machine, bench/bench_swap.py).
    The block depends on the data's shape only, and blocks start at multiples of it, so the
    products are the same for every sharding.

    Examples
    --------
    >>> gemm_trials(129, 50), gemm_trials(20, 50), gemm_trials(2000, 1000)
    (25, 250, 1)
    """
    for t in (250, 125, 50, 25, 10, 5, 2, 1):
        if systems * topics * t <= 1 << 18:
            return t
    return 1


def set_means(x: np.ndarray, counts: np.ndarray, size: int) -> np.ndarray:
    """Mean score of every system on every set of a block of trials: ``C @ X.T / size``.

    The sums are exact (:class:`irsim.exact.Exact`): the same set gives the same mean on
    every machine, and two sets holding the same scores give bit-equal means.

    Parameters
    ----------
    x : ndarray, shape (systems, n)
    counts : ndarray, shape (trials, sets, n)
        Selection counts (:func:`subset_counts`) of trials starting at a multiple of 250.
    size : int
        Topics per set (the row sums of `counts`).

    Returns
    -------
    ndarray, shape (trials, sets, systems)
        Trial-major: the means of a block of trials are contiguous.

    Examples
    --------
    >>> x = np.array([[0.1, 0.2, 0.6], [0.3, 0.3, 0.0]])
    >>> c = np.array([[[1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]])   # one trial, two sets
    >>> set_means(x, c, 2).round(3).tolist()
    [[[0.15, 0.3], [0.6, 0.0]]]
    """
    trials, sets, n = counts.shape
    flat = counts.reshape(trials * sets, n)
    xt = Exact(np.ascontiguousarray(x.T), l1=size)  # sums independent of BLAS and CPU
    out = np.empty((trials * sets, x.shape[0]))
    step = gemm_trials(x.shape[0], n) * sets
    for r0 in range(0, len(flat), step):
        xt.left(flat[r0:r0 + step], out=out[r0:r0 + step])
    out /= size
    return out.reshape(trials, sets, x.shape[0])
