"""Ties in "at least as extreme as observed" comparisons of Monte Carlo tests.

Replicates computed by a GEMM and an observed statistic computed directly differ by
rounding, and discrete metrics make exact ties common; a tolerance decides them
(METHODS.md section 2). :func:`count_extreme` is the one place that decides them: a relative
tolerance, the one-sided alternatives, and an absolute floor for statistics that are 0 in
exact arithmetic.
"""

from __future__ import annotations

import numpy as np

from irsim.stats.resample import TIE_RTOL

__all__ = ["tie_tolerance", "count_extreme"]


def tie_tolerance(observed: np.ndarray, scale: np.ndarray | float = 0.0) -> np.ndarray:
    """Half-width of "equal to observed": ``TIE_RTOL * max(|observed|, scale)``.

    The relative part absorbs the rounding difference between a GEMM and a direct sum
    (:data:`~irsim.stats.resample.TIE_RTOL`). `scale` is the typical magnitude of the
    statistic (e.g. ``sum |z|`` for a sum of signed differences, 1 for a t statistic): a
    statistic that is 0 in exact arithmetic comes out as rounding noise, and without the
    floor its comparisons with replicates that are also 0 in exact arithmetic would be
    noise against noise (and could change with the chunking of a GEMM).

    Examples
    --------
    >>> tie_tolerance(np.array([2.0, 1e-17]), np.array([1.0, 1.0])).tolist()
    [2e-09, 1e-09]
    """
    return TIE_RTOL * np.maximum(np.abs(observed), scale)


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
