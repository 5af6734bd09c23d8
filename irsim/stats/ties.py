"""The tie rules: when two computed numbers count as equal.

Means computed by a GEMM and statistics computed directly differ by rounding, and discrete
metrics make exact ties common; one relative tolerance, :data:`TIE_RTOL`, decides them
(METHODS.md section 2), in two rules written once here:

- a difference that is 0 in exact arithmetic is set to exactly 0 (:func:`snap_zero` with
  :func:`score_tolerance` for differences of means of a score matrix, or an elementwise
  ``TIE_RTOL * scale``), so swaps, signs and ties of discrete metrics are exact; values that
  are ranked (system means before Kendall's tau, tau_AP, ranks) are snapped together first
  (:func:`snap_ties`: values within the tolerance of each other become one value, a
  transitive rule that does not depend on the order of the values);
- "at least as extreme as observed" in Monte Carlo tests (:func:`count_extreme`, with
  :func:`tie_tolerance`): a relative tolerance, the one-sided alternatives, and an absolute
  floor for statistics that are 0 in exact arithmetic.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TIE_RTOL", "score_tolerance", "snap_zero", "snap_ties", "tie_tolerance",
           "count_extreme", "count_extremes", "row_counts", "tied_order"]

#: Relative tolerance of "equal" (see the module docstring). It absorbs the rounding
#: difference between a GEMM and a direct sum so that exact ties of discrete metrics count as
#: ties (scipy uses 100*eps; GEMMs need a little more).
TIE_RTOL = 1e-9


def score_tolerance(x: np.ndarray) -> float:
    """Half-width of "difference = 0" for means of the scores `x`: ``TIE_RTOL * max |x|``.

    Examples
    --------
    >>> score_tolerance(np.array([[0.2, 1.0], [0.5, 0.0]]))
    1e-09
    """
    scale = float(np.abs(x).max()) if np.size(x) else 0.0
    return TIE_RTOL * scale


def tied_order(values: np.ndarray, tol: float) -> np.ndarray:
    """Per row, the stable ascending order of `values` in which values within `tol` of the
    previous one in sorted order count as equal (so they keep their column order).

    A rank built on computed means must not depend on rounding: two means that are equal in
    exact arithmetic (the same difference of a discrete metric on two topic sets) can come
    out an ulp apart, and a plain sort would order them by that ulp.

    Examples
    --------
    >>> v = np.array([[0.3, 0.1 + 0.2, 0.1, 0.2]])   # 0.3 and 0.30000000000000004 tie
    >>> np.argsort(v, axis=1, kind="stable").tolist(), tied_order(v, 1e-9).tolist()
    ([[2, 3, 0, 1]], [[2, 3, 0, 1]])
    >>> tied_order(np.array([[0.1 + 0.2, 0.3]]), 1e-9).tolist()   # plain sort: [[1, 0]]
    [[0, 1]]
    """
    v = np.asarray(values, np.float64)
    order = np.argsort(v, axis=-1, kind="stable")
    ranked = np.take_along_axis(v, order, axis=-1)
    new = np.ones(ranked.shape, bool)
    new[..., 1:] = np.diff(ranked, axis=-1) > tol
    group = np.cumsum(new, axis=-1)  # tie groups, in ascending order of value
    key = np.empty_like(group)
    np.put_along_axis(key, order, group, axis=-1)
    cols = np.broadcast_to(np.arange(v.shape[-1]), v.shape)
    return np.lexsort((cols, key), axis=-1)


def snap_ties(values: np.ndarray, axis: int = -1, *, scale: float = 1.0) -> np.ndarray:
    """`values` with every cluster of tied values along `axis` replaced by its smallest
    member, so that values equal in exact arithmetic are exactly equal (a new array).

    Two values that are neighbours in sorted order are tied when they differ by at most
    ``TIE_RTOL * max(scale, |a|, |b|)`` (:data:`TIE_RTOL`; infinite magnitudes count as 0);
    a cluster is a run of tied neighbours. So the rule is transitive (a tie is membership of
    one cluster) and does not depend on the order of the values: permuting them along
    `axis` permutes the result. A cluster may span more than the tolerance (a chain of
    ties); on a grid metric its members are one value up to rounding. NaN is never tied.

    Every ranking of means goes through it before Kendall's tau-b, tau_AP or ranks are
    taken: means equal in exact arithmetic (8.2/13 summed from two different multisets of
    tenths) come out an ulp apart, and a plain comparison would rank them by that ulp.

    Parameters
    ----------
    values : array_like
        E.g. system means, systems along `axis`.
    axis : int
        The axis of the values ranked together; every other position is snapped on its own.
    scale : float
        Floor of the magnitude of the tolerance (1: an absolute ``TIE_RTOL`` near 0, as for
        metrics in [0, 1]; the largest score of the matrix makes it the tolerance of
        :func:`score_tolerance`, so differences of snapped means need no :func:`snap_zero`).

    Returns
    -------
    ndarray of float64, the shape of `values`

    Examples
    --------
    >>> v = np.array([0.1 + 0.2, 0.5, 0.3])   # 0.30000000000000004 and 0.3
    >>> snap_ties(v).tolist()
    [0.3, 0.5, 0.3]
    >>> snap_ties(np.array([[1.0, 1.0 + 1e-6], [2.0, 2.0 + 1e-12]]), axis=1).tolist()
    [[1.0, 1.000001], [2.0, 2.0]]
    """
    v = np.moveaxis(np.array(values, np.float64, ndmin=1), axis, -1)
    n = v.shape[-1]
    order = np.argsort(v, axis=-1, kind="stable")
    s = np.take_along_axis(v, order, axis=-1)
    mag = np.abs(s)
    mag[np.isinf(mag)] = 0.0
    tol = TIE_RTOL * np.maximum(np.maximum(mag[..., 1:], mag[..., :-1]), scale)
    tied = np.diff(s, axis=-1) <= tol  # False for NaN and for +-inf next to a finite value
    start = np.broadcast_to(np.arange(n), s.shape).copy()
    start[..., 1:][tied] = 0
    np.maximum.accumulate(start, axis=-1, out=start)  # first position of each one's cluster
    out = np.empty_like(v)
    np.put_along_axis(out, order, np.take_along_axis(s, start, axis=-1), axis=-1)
    return np.moveaxis(out, -1, axis).reshape(np.shape(values))


def snap_zero(d: np.ndarray, tol: np.ndarray | float) -> np.ndarray:
    """`d` with entries ``|d| <= tol`` set to exactly 0 (in place; returned). `tol` is a
    number or an array broadcasting against `d`.

    Examples
    --------
    >>> snap_zero(np.array([1e-17, -0.1, -2e-12]), 1e-9).tolist()
    [0.0, -0.1, 0.0]
    """
    np.copyto(d, 0.0, where=np.abs(d) <= tol)
    return d


def tie_tolerance(observed: np.ndarray, scale: np.ndarray | float = 0.0) -> np.ndarray:
    """Half-width of "equal to observed": ``TIE_RTOL * max(|observed|, scale)``.

    The relative part absorbs the rounding difference between a GEMM and a direct sum
    (:data:`TIE_RTOL`). `scale` is the typical magnitude of the
    statistic (e.g. ``sum |z|`` for a sum of signed differences, 1 for a t statistic): a
    statistic that is 0 in exact arithmetic comes out as rounding noise, and without the
    floor its comparisons with replicates that are also 0 in exact arithmetic would be
    noise against noise (and could change with the chunking of a GEMM).

    Examples
    --------
    An infinite observed statistic (a t statistic of constant non-zero differences) gets
    the floor alone, so that a finite replicate is never "equal" to it.

    >>> tie_tolerance(np.array([2.0, 1e-17]), np.array([1.0, 1.0])).tolist()
    [2e-09, 1e-09]
    >>> tie_tolerance(np.array([np.inf]), 1.0).tolist()
    [1e-09]
    """
    size = np.abs(np.asarray(observed, np.float64))
    return TIE_RTOL * np.maximum(np.where(np.isinf(size), 0.0, size), scale)


def count_extreme(
    replicates: np.ndarray, observed: np.ndarray, alternative: str,
    scale: np.ndarray | float = 0.0,
) -> np.ndarray:
    """Per row, replicates at least as extreme as `observed` in the direction of
    `alternative`, ties within :func:`tie_tolerance` included.

    ``two-sided``: ``|r| >= |obs|``; ``greater``: ``r >= obs``; ``less``: ``r <= obs``.

    Examples
    --------
    >>> r = np.array([[-2.0, -1.0, 0.5, 1.0 - 1e-12]])
    >>> [int(count_extreme(r, np.array([1.0]), a)[0]) for a in ("two-sided", "less", "greater")]
    [3, 4, 1]
    >>> noise = np.array([[1e-17, -1e-17, 0.3]])  # all but 0.3 are 0 in exact arithmetic
    >>> int(count_extreme(noise, np.array([2e-17]), "greater", scale=0.3)[0])
    3
    """
    obs = np.asarray(observed, np.float64)
    tol = tie_tolerance(obs, np.asarray(scale, np.float64))[..., None]
    obs = obs[..., None]
    if alternative == "two-sided":
        hit = np.abs(replicates) >= np.abs(obs) - tol
    elif alternative == "greater":
        hit = replicates >= obs - tol
    else:
        hit = replicates <= obs + tol
    return np.count_nonzero(hit, axis=-1).astype(np.int64)


def row_counts(mask: np.ndarray) -> np.ndarray:
    """Per row of a 2-D boolean array, its True entries (``np.count_nonzero(mask, axis=1)``).

    A C-contiguous mask whose rows are a multiple of 1024 entries long is counted eight
    entries per machine word (the bytes of 128 words summed as uint64 lanes, which cannot
    carry: each lane is at most 128), several times faster than a count along an axis.

    Examples
    --------
    >>> m = np.random.default_rng(0).random((3, 2048)) < 0.3
    >>> bool((row_counts(m) == np.count_nonzero(m, axis=1)).all())
    True
    """
    rows, cols = mask.shape
    if cols % 1024 or not mask.flags.c_contiguous or mask.dtype != np.bool_:
        return np.count_nonzero(mask, axis=1).astype(np.int64)
    lanes = mask.view(np.uint64).reshape(rows, -1, 128).sum(axis=2, dtype=np.uint64)
    return lanes.view(np.uint8).reshape(rows, -1).sum(axis=1, dtype=np.int64)


def count_extremes(
    replicates: np.ndarray, observed: np.ndarray, alternatives: tuple[str, ...],
    scale: np.ndarray | float = 0.0,
) -> np.ndarray:
    """:func:`count_extreme` for several alternatives at once on 2-D `replicates`.

    Returns
    -------
    ndarray of int64, shape (rows, len(alternatives))
        Column ``j`` equals ``count_extreme(replicates, observed, alternatives[j], scale)``
        (two-sided ``|r| >= a`` is counted as ``r >= a`` plus ``r <= -a`` for ``a > 0``,
        and is every replicate for ``a <= 0``).

    Examples
    --------
    >>> r = np.array([[-2.0, -1.0, 0.5, 1.0 - 1e-12]])
    >>> count_extremes(r, np.array([1.0]), ("two-sided", "less", "greater")).tolist()
    [[3, 4, 1]]
    """
    rows, cols = replicates.shape
    obs = np.asarray(observed, np.float64).reshape(rows)
    tol = np.broadcast_to(tie_tolerance(obs, np.asarray(scale, np.float64)), (rows,))
    out = np.empty((rows, len(alternatives)), np.int64)
    buf = np.empty((rows, cols), np.bool_)
    for j, alternative in enumerate(alternatives):
        if alternative == "greater":
            out[:, j] = row_counts(np.greater_equal(replicates, (obs - tol)[:, None], out=buf))
        elif alternative == "less":
            out[:, j] = row_counts(np.less_equal(replicates, (obs + tol)[:, None], out=buf))
        else:
            a = np.abs(obs) - tol
            both = (row_counts(np.greater_equal(replicates, a[:, None], out=buf))
                    + row_counts(np.less_equal(replicates, -a[:, None], out=buf)))
            out[:, j] = np.where(a > 0, both, cols)
    return out
