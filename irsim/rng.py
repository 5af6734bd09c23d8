"""Deterministic random generators keyed by (seed, study, coordinates of the work).

Every random draw in irsim comes from :func:`rng_for`. The key never contains a worker or
shard id, only coordinates of the *work* (which replicate block, which subset size...), so
results do not depend on how the work is split or where it runs.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np

__all__ = ["REPLICATE_BLOCK", "rng_for", "study_key", "blocked_draws", "check_seed"]


def check_seed(seed: object) -> int:
    """A run's seed: an integer >= 0 (not a bool, a float such as 1.7, a string or None),
    numpy integers included; anything else is a ConfigError (both doors, one rule).

    Examples
    --------
    >>> check_seed(3), check_seed(np.int64(7))
    (3, 7)
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: seed must be an integer >= 0, got -1
    """
    from irsim.errors import ConfigError

    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)

#: Replicates (bootstrap samples, trials) are drawn in blocks of this many, each block from
#: its own generator keyed by its index. Shards of replicates are unions of whole blocks.
REPLICATE_BLOCK = 250


def study_key(study: str) -> int:
    """A stable 32-bit integer for a study name (crc32, not Python's salted hash).

    Examples
    --------
    >>> study_key("discpower/boot")
    1058299807
    """
    return zlib.crc32(study.encode("utf-8"))


def rng_for(seed: int, study: str, *coords: int) -> np.random.Generator:
    """A PCG64 generator for (seed, study, coords) via a SeedSequence spawn key.

    Parameters
    ----------
    seed : int
        The global seed (non-negative).
    study : str
        Name of the random stream, e.g. ``"discpower/boot"``.
    *coords : int
        Non-negative integer coordinates of the work (block index, subset size, ...).

    Examples
    --------
    >>> a = rng_for(1, "x", 3).integers(0, 100, 3)
    >>> b = rng_for(1, "x", 3).integers(0, 100, 3)
    >>> bool((a == b).all())
    True
    """
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    key = (study_key(study), *(int(c) for c in coords))
    if any(c < 0 for c in key):
        raise ValueError(f"coordinates must be >= 0, got {coords}")
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


def blocked_draws(
    seed: int,
    study: str,
    key: tuple[int, ...],
    start: int,
    stop: int,
    draw: Callable[[np.random.Generator, int], np.ndarray],
    *,
    block: int = REPLICATE_BLOCK,
) -> np.ndarray:
    """Rows ``start:stop`` of an infinite sequence of replicates drawn block by block.

    Block ``k`` holds replicates ``k*block .. (k+1)*block - 1`` and is drawn as
    ``draw(rng_for(seed, study, *key, k), block)``, which must return an array whose first
    axis has length ``block``. The rows returned are the same however ``[start, stop)`` is
    split.

    Examples
    --------
    >>> f = lambda rng, m: rng.integers(0, 10, size=(m, 4))
    >>> whole = blocked_draws(0, "demo", (), 0, 600, f)
    >>> parts = [blocked_draws(0, "demo", (), a, b, f) for a, b in [(0, 123), (123, 600)]]
    >>> bool((np.concatenate(parts) == whole).all())
    True
    """
    if not 0 <= start <= stop:
        raise ValueError(f"bad replicate range [{start}, {stop})")
    if start == stop:
        return draw(rng_for(seed, study, *key, 0), block)[:0]
    first, last = start // block, (stop - 1) // block
    blocks = [draw(rng_for(seed, study, *key, k), block) for k in range(first, last + 1)]
    out = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=0)
    offset = first * block
    return out[start - offset : stop - offset]
