"""Random permutations of systems within each topic (randomised Tukey HSD).

Under the null hypothesis that all systems are equivalent, the scores of one topic are
exchangeable across systems; a trial permutes them independently per topic.
"""

from __future__ import annotations

import numpy as np

from irsim.rng import blocked_draws

__all__ = ["topic_permutations"]


def topic_permutations(
    seed: int, study: str, systems: int, topics: int, start: int, stop: int,
    *, key: tuple[int, ...] = (),
) -> np.ndarray:
    """Trials ``start:stop`` of independent per-topic permutations of ``range(systems)``.

    Trial ``b``, topic ``j``: row ``perm[b, j]`` is a uniformly random permutation; system
    ``s`` of the permuted matrix takes the score of system ``perm[b, j, s]`` on topic ``j``.
    Drawn in blocks keyed by block index, so any split of ``[start, stop)`` gives the same
    trials.

    Returns
    -------
    ndarray of int32, shape (stop - start, topics, systems)

    Examples
    --------
    >>> p = topic_permutations(0, "demo", 4, 3, 0, 2)
    >>> p.shape, bool((np.sort(p, axis=-1) == np.arange(4)).all())
    ((2, 3, 4), True)
    >>> bool((topic_permutations(0, "demo", 4, 3, 1, 2) == p[1:]).all())
    True
    """

    def draw(rng: np.random.Generator, m: int) -> np.ndarray:
        base = np.broadcast_to(np.arange(systems, dtype=np.int32), (m, topics, systems))
        return rng.permuted(base, axis=-1)

    return blocked_draws(seed, study, (systems, topics, *key), start, stop, draw)
