"""The discrete support of a metric's scores: one detection for every generator.

P@k lives on the grid ``j / k`` and RR on ``{0} U {1/r}``; a margin fitted to such scores
must stay on that support. :func:`detect_support` looks at all the scores of a metric (every
run and topic) and returns a :class:`Support` or None (a continuous metric). The shift design
(:func:`~irsim.simulate.margins.tabulated.fit_margins`) keeps the support's
:attr:`Support.label` on its empirical margins (``grid 1/10``, ``reciprocal``); the simIReff
families (:mod:`irsim.simulate.margins.families`) model the index on :attr:`Support.values`
and name the support by :attr:`Support.name` (``reciprocal 1/1000``: part of the fit cache
key).

Examples
--------
>>> s = detect_support([0.0, 0.5, 0.25, 0.0204])
>>> s.name, s.label, s.K
('reciprocal 1/49', 'reciprocal', 49)
>>> detect_support([0.1234, 0.5]) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["MAX_GRID", "Support", "detect_support", "rounding_tolerance"]

#: Largest ``m`` of a grid support ``j / m`` that :func:`detect_support` tries.
MAX_GRID = 100


@dataclass(frozen=True)
class Support:
    """A discrete metric's support ``values`` (increasing) and its name.

    Attributes
    ----------
    name : str
        ``grid 1/m`` or ``reciprocal 1/R`` (R: the largest rank seen).
    values : ndarray
        ``j / m`` for ``j = 0 .. m``, or ``0`` and ``1 / r`` for ``r = R, ..., 1``.

    Examples
    --------
    >>> s = detect_support(np.array([0.0, 0.3, 1.0]))
    >>> s.name, len(s.values)
    ('grid 1/10', 11)
    >>> s.index(np.array([0.3, 1.0])).tolist()
    [3, 10]
    """

    name: str
    values: np.ndarray

    @property
    def K(self) -> int:
        """The largest index."""
        return len(self.values) - 1

    @property
    def label(self) -> str:
        """The support's kind without its largest rank: the name of a grid (``grid 1/10``),
        ``reciprocal`` for RR (what the shift design's margins and fit tables show)."""
        return "reciprocal" if self.name.startswith("reciprocal") else self.name

    def index(self, scores: ArrayLike) -> np.ndarray:
        """The index of each score on the support (nearest value)."""
        s = np.asarray(scores, np.float64)
        i = np.clip(np.searchsorted(self.values, s), 1, self.K)
        left = np.abs(s - self.values[i - 1]) <= np.abs(self.values[i] - s)
        return np.where(left, i - 1, i).astype(np.int64)


def rounding_tolerance(values: ArrayLike) -> float:
    """How far a score may lie from the value it rounds: half a unit of the last decimal of
    `values` (the fewest decimals ``d <= 12`` that write every value to within ``1e-6`` of a
    unit, e.g. ``0.5e-4`` for scores printed with 4 decimals, times ``1 + 1e-6``); ``1e-9``
    when no such ``d`` exists (full double precision).

    Examples
    --------
    >>> rounding_tolerance([0.3333, 0.5, 0.0204]) == 0.5e-4 * (1 + 1e-6)
    True
    >>> rounding_tolerance([1 / 3, 0.5])
    1e-09
    """
    v = np.asarray(values, np.float64)
    for d in range(13):
        if np.all(np.abs(v * 10.0**d - np.round(v * 10.0**d)) < 1e-6):
            return 0.5 * 10.0**-d * (1 + 1e-6)
    return 1e-9


def detect_support(scores: ArrayLike, *, max_grid: int = MAX_GRID) -> Support | None:
    """The discrete support of a metric's scores (all runs and topics), or None.

    ``grid 1/m`` when every score is within ``1e-6 / m`` of a multiple of ``1/m`` for some
    ``m <= max_grid`` (the smallest such ``m``: P@10 gives ``grid 1/10``); else
    ``reciprocal 1/R`` when every non-zero score is ``1/r`` for an integer ``r``, to within
    the scores' :func:`rounding_tolerance` (RR printed with 4 decimals: ``1/3`` as
    ``0.3333``), ``R`` the largest ``r``; else None (a continuous metric).

    Parameters
    ----------
    scores : array_like
        Every score of one metric (any shape).
    max_grid : int
        Largest grid denominator tried.

    Returns
    -------
    Support or None

    Examples
    --------
    >>> detect_support([0.0, 0.3, 0.7, 1.0]).name
    'grid 1/10'
    >>> detect_support([0.0, 0.25, 0.3333, 0.0204]).name
    'reciprocal 1/49'
    >>> detect_support([0.1234, 0.5, 0.0061]) is None
    True
    """
    v = np.unique(np.asarray(scores, np.float64))
    for m in range(1, int(max_grid) + 1):
        if np.all(np.abs(v * m - np.round(v * m)) < 1e-6):
            return Support(f"grid 1/{m}", np.arange(m + 1) / m)
    nz = v[v > 0]
    if not len(nz):
        return None
    r = np.round(1.0 / nz)
    if np.all((r >= 1) & (np.abs(nz - 1.0 / np.maximum(r, 1.0)) <= rounding_tolerance(v))):
        R = int(r.max())
        return Support(f"reciprocal 1/{R}", np.concatenate([[0.0], 1.0 / np.arange(R, 0, -1)]))
    return None
