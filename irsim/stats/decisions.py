"""How two sets of significance decisions on the same pairs agree (Voorhees 2000's question,
asked of another assessor's qrels or of an estimate from a judging budget).

Every pair falls in one of :data:`CATEGORIES`: significant under both with the same sign
(``both``), under neither (``neither``), under the reference only (``lost``), under the
other only (``gained``), under both with opposite signs (``opposite``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["CATEGORIES", "decision_categories"]

#: The categories of a pair, in the order of :func:`decision_categories`' last axis.
CATEGORIES = ("both", "neither", "lost", "gained", "opposite")


def decision_categories(ref_reject: np.ndarray, ref_diff: np.ndarray, reject: np.ndarray,
                        diff: np.ndarray) -> np.ndarray:
    """Counts of each category over the pairs (last axis), many decision sets at once.

    Parameters
    ----------
    ref_reject, ref_diff : ndarray (..., pairs)
        The reference's decisions and differences (their signs), broadcast against the
        others.
    reject, diff : ndarray (..., pairs)
        The other decisions and differences.

    Returns
    -------
    ndarray of int64, shape (..., 5)
        Counts of ``both, neither, lost, gained, opposite``.

    Examples
    --------
    >>> r1, d1 = np.array([1, 1, 0, 1, 0], bool), np.ones(5)
    >>> r2, d2 = np.array([1, 1, 1, 0, 0], bool), np.array([1., -1, 1, 1, 1])
    >>> decision_categories(r1, d1, r2, d2).tolist()
    [1, 1, 1, 1, 1]
    """
    r1, r2 = np.broadcast_arrays(np.asarray(ref_reject, bool), np.asarray(reject, bool))
    same = np.sign(ref_diff) == np.sign(diff)
    both = r1 & r2
    return np.stack([(both & same).sum(-1), (~r1 & ~r2).sum(-1), (r1 & ~r2).sum(-1),
                     (~r1 & r2).sum(-1), (both & ~same).sum(-1)], axis=-1).astype(np.int64)
