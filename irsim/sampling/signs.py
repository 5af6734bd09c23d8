"""Sign flips for randomisation (permutation) tests of paired differences.

Under the null hypothesis of a paired test the sign of each per-topic difference is
exchangeable, so the randomisation distribution is that of ``sum_i s_i z_i`` over sign
vectors ``s``. Random sign vectors are drawn block by block (:func:`sign_flips`); all
``2**n`` of them are enumerated as bit patterns (:func:`sign_patterns`) for exact tests.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike

from irsim.rng import blocked_draws

__all__ = ["sign_flips", "sign_patterns"]


def sign_flips(
    seed: int, study: str, n: int, start: int, stop: int, *, key: tuple[int, ...] = (),
    dtype: DTypeLike = np.float64,
) -> np.ndarray:
    """Random sign vectors ``start:stop``: each row holds `n` independent fair signs.

    Rows are drawn in blocks keyed by block index (:func:`irsim.rng.blocked_draws`),
    so any split of ``[start, stop)`` gives the same rows. One set serves every pair with
    `n` topics, so the pairs of a study share their randomisation samples.

    Returns
    -------
    ndarray of `dtype`, shape (stop - start, n)
        Entries are -1 or +1: float64 by default (ready for a GEMM with the differences),
        or any signed `dtype` (e.g. ``int8``: an eighth of the memory, the same signs).

    Examples
    --------
    >>> s = sign_flips(0, "demo", 4, 0, 3)
    >>> s.shape, sorted(set(s.ravel().tolist())) == [-1.0, 1.0]
    ((3, 4), True)
    >>> bool((sign_flips(0, "demo", 4, 1, 3) == s[1:]).all())
    True
    >>> bool((sign_flips(0, "demo", 4, 0, 3, dtype=np.int8) == s).all())
    True
    """
    dtype = np.dtype(dtype)

    def draw(rng: np.random.Generator, m: int) -> np.ndarray:
        bits = rng.integers(0, 2, size=(m, n), dtype=np.int8)
        return bits.astype(dtype) * dtype.type(2) - dtype.type(1)

    return blocked_draws(seed, study, (n, *key), start, stop, draw)


def sign_patterns(n: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Sign vectors ``start:stop`` of the ``2**n`` bit patterns, in binary order.

    Row ``r`` has sign ``-1`` at position ``i`` where bit ``i`` of ``r`` is set. Chunks
    (``start:stop``) let a caller enumerate large ``n`` in bounded memory.

    Returns
    -------
    ndarray of float64, shape (stop - start, n)

    Examples
    --------
    >>> sign_patterns(2).tolist()
    [[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]]
    >>> sign_patterns(3, 6, 8).tolist()
    [[1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]]
    """
    if n < 0 or n > 62:
        raise ValueError(f"n must be in [0, 62] to enumerate 2**n sign patterns, got {n}")
    stop = (1 << n) if stop is None else stop
    if not 0 <= start <= stop <= (1 << n):
        raise ValueError(f"bad pattern range [{start}, {stop}) for n = {n}")
    rows = np.arange(start, stop, dtype=np.int64)[:, None]
    bits = (rows >> np.arange(n, dtype=np.int64)) & 1
    return 1.0 - 2.0 * bits.astype(np.float64)
