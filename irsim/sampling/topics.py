"""Topic samplers: bootstrap (with replacement) as index and count matrices.

A sampler is a pure function of (seed, study, key, replicate range). Count matrices
(replicates x topics) turn resampled means into GEMMs: ``means = scores @ counts.T / n``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike

from irsim.rng import blocked_draws

__all__ = ["bootstrap_indices", "indices_to_counts", "bootstrap_counts"]


def bootstrap_indices(
    seed: int, study: str, n: int, start: int, stop: int, *, size: int | None = None,
    key: tuple[int, ...] = (),
) -> np.ndarray:
    """Indices of bootstrap samples ``start:stop``: each row draws `size` (default `n`)
    items uniformly with replacement from ``range(n)``.

    Returns
    -------
    ndarray of int64, shape (stop - start, size)

    Examples
    --------
    >>> idx = bootstrap_indices(0, "demo", 5, 0, 3)
    >>> idx.shape, bool(((idx >= 0) & (idx < 5)).all())
    ((3, 5), True)
    """
    size = n if size is None else size
    return blocked_draws(
        seed, study, (n, size, *key), start, stop,
        lambda rng, m: rng.integers(0, n, size=(m, size), dtype=np.int64),
    )


def indices_to_counts(idx: np.ndarray, n: int, dtype: DTypeLike = np.float64) -> np.ndarray:
    """Turn a (replicates, draws) index matrix into a (replicates, n) count matrix.

    Examples
    --------
    >>> indices_to_counts(np.array([[0, 0, 2], [1, 2, 2]]), 3).tolist()
    [[2.0, 0.0, 1.0], [0.0, 1.0, 2.0]]
    """
    idx = np.asarray(idx)
    r = idx.shape[0]
    flat = (idx + (np.arange(r, dtype=np.int64) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=r * n).reshape(r, n).astype(dtype, copy=False)


def bootstrap_counts(
    seed: int, study: str, n: int, start: int, stop: int, *, key: tuple[int, ...] = (),
    dtype: DTypeLike = np.float64,
) -> np.ndarray:
    """Count matrix of bootstrap samples ``start:stop`` over `n` topics (see
    :func:`bootstrap_indices`); row sums are `n`. `dtype`: float64 (ready for a GEMM) or
    an integer type that holds `n` (e.g. ``uint8``: an eighth of the memory, no float
    pass).

    Examples
    --------
    >>> c = bootstrap_counts(0, "demo", 4, 0, 2)
    >>> c.sum(axis=1).tolist()
    [4.0, 4.0]
    >>> bool((bootstrap_counts(0, "demo", 4, 0, 2, dtype=np.uint8) == c).all())
    True
    """
    return indices_to_counts(bootstrap_indices(seed, study, n, start, stop, key=key), n,
                             dtype)
