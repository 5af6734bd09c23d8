"""Difference bins and swap counting: the one bin layout every swap-rate study uses.

Absolute bins (Voorhees-Buckley, Sakai): width 0.01, 21 bins, the last one open
(``[0.20, inf)``). Relative bins (Sakai; Sanderson-Zobel): the difference relative to the
smaller of the two means, width 5%, up to 100% (the last bin open).

Differences of means computed by GEMMs carry rounding noise:
:func:`irsim.stats.ties.snap_zero` sets those within :func:`irsim.stats.ties.score_tolerance`
of the scores to exactly 0 before they are binned and compared (:func:`is_swap`);
:func:`bin_counts` counts comparisons and flagged ones per bin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BinLayout", "ABSOLUTE", "RELATIVE", "LAYOUTS", "layout", "relative_difference",
           "is_swap", "required_difference", "bin_counts"]


@dataclass(frozen=True)
class BinLayout:
    """Bins of a non-negative difference: ``[lo_i, hi_i)``, the last one open-ended.

    Examples
    --------
    >>> ABSOLUTE.index(np.array([0.0, 0.0099, 0.01, 0.199, 0.2, 3.0])).tolist()
    [0, 0, 1, 19, 20, 20]
    >>> float(ABSOLUTE.lo[-1]), float(ABSOLUTE.hi[-1])
    (0.2, inf)
    """

    kind: str
    width: float
    count: int

    @property
    def lo(self) -> np.ndarray:
        """Lower edges."""
        return np.round(np.arange(self.count) * self.width, 10)

    @property
    def hi(self) -> np.ndarray:
        """Upper edges (the last is inf)."""
        hi = np.round((np.arange(self.count) + 1) * self.width, 10)
        hi[-1] = np.inf
        return hi

    def index(self, diff: np.ndarray) -> np.ndarray:
        """Bin of each non-negative (absolute or relative) difference; inf (a relative
        difference to a zero mean) goes to the last, open bin.

        A small tolerance (1e-9 of a bin) puts values that are an edge in exact
        arithmetic (0.03 computed as 0.0299999...) into the upper bin.

        Examples
        --------
        >>> RELATIVE.index(np.array([0.0, 0.07, 0.1, np.inf])).tolist()
        [0, 1, 2, 19]
        """
        t = np.divide(diff, self.width, dtype=np.float64)
        t += 1e-9
        np.floor(t, out=t)
        np.clip(t, 0, self.count - 1, out=t)
        return t.astype(np.int64)

    def histogram(self, diff: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Counts (int64) per bin, or weighted sums when `weights` (e.g. swap flags) given."""
        idx = self.index(np.ravel(diff))
        w = None if weights is None else np.ravel(weights).astype(np.int64)
        return np.bincount(idx, weights=w, minlength=self.count).astype(np.int64)


#: Absolute difference bins: width 0.01, 21 bins (last >= 0.20).
ABSOLUTE = BinLayout("absolute", 0.01, 21)
#: Relative difference bins: width 5%, 20 bins up to 100% (last >= 95%... open-ended).
RELATIVE = BinLayout("relative", 0.05, 20)
#: Both layouts, in table order (absolute rows first).
LAYOUTS: tuple[BinLayout, ...] = (ABSOLUTE, RELATIVE)


def layout(kind: str) -> BinLayout:
    """The layout named ``absolute`` or ``relative``."""
    from irsim.errors import unknown_name

    table = {"absolute": ABSOLUTE, "relative": RELATIVE}
    if kind not in table:
        raise unknown_name("bin kind", kind, table)
    return table[kind]


def relative_difference(a: np.ndarray, b: np.ndarray, absd: np.ndarray | None = None
                        ) -> np.ndarray:
    """``|a - b| / min(a, b)`` (inf when the smaller mean is <= 0 and they differ, 0 if equal).

    `absd` gives ``|a - b|`` when the caller has it already (e.g. with exact ties snapped to
    0).

    Examples
    --------
    >>> relative_difference(np.array([0.25, 0.0, 0.3]), np.array([0.375, 0.1, 0.3])).tolist()
    [0.5, inf, 0.0]
    """
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    diff = np.abs(a - b) if absd is None else np.asarray(absd, np.float64)
    small = np.minimum(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(diff == 0, 0.0, diff / small)
    return np.where((small <= 0) & (diff > 0), np.inf, out)


def is_swap(d: np.ndarray, d2: np.ndarray, *, zero_swaps: bool) -> np.ndarray:
    """Whether two differences disagree on the order of a pair.

    ``zero_swaps=False`` (Sakai's bootstrap swap method): ``d * d2 < 0``.
    ``zero_swaps=True`` (Voorhees-Buckley / Sakai topic sampling): also when exactly one
    of them is 0.

    Examples
    --------
    >>> d, d2 = np.array([0.1, 0.1, 0.0, 0.0]), np.array([-0.1, 0.0, 0.0, 0.2])
    >>> is_swap(d, d2, zero_swaps=False).tolist(), is_swap(d, d2, zero_swaps=True).tolist()
    ([True, False, False, False], [True, True, False, True])
    """
    d = np.asarray(d)
    d2 = np.asarray(d2)
    swap = (d * d2) < 0
    if zero_swaps:
        swap |= (d == 0) ^ (d2 == 0)
    return swap


def required_difference(comparisons: np.ndarray, swaps: np.ndarray, lo: np.ndarray,
                        threshold: float) -> float:
    """Smallest bin edge from which every non-empty bin has swap rate <= `threshold`.

    Bins without comparisons do not count against the rule. NaN when even the last
    non-empty bin exceeds the threshold.

    Examples
    --------
    >>> comps = np.array([100, 100, 100, 0, 100])
    >>> swaps = np.array([40, 9, 2, 0, 0])
    >>> required_difference(comps, swaps, np.array([0.0, 0.01, 0.02, 0.03, 0.04]), 0.05)
    0.02
    """
    comps = np.asarray(comparisons)
    rate = np.divide(swaps, comps, out=np.zeros(len(comps)), where=comps > 0)
    bad = (comps > 0) & (rate > threshold)
    if not bad.any():
        return float(lo[0])
    last_bad = int(np.flatnonzero(bad)[-1])
    if last_bad + 1 >= len(lo) or not (comps[last_bad + 1:] > 0).any():
        return float("nan")
    return float(lo[last_bad + 1])


def bin_counts(layout: BinLayout, values: np.ndarray, flags: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(comparisons, flagged) per bin of `layout` (int64 each); `values` >= 0, may be inf.

    Examples
    --------
    >>> c, s = bin_counts(ABSOLUTE, np.array([0.0, 0.005, 0.3]), np.array([True, False, True]))
    >>> c[[0, 20]].tolist(), s[[0, 20]].tolist()
    ([2, 1], [1, 1])
    """
    key = layout.index(values)  # one bincount of (bin, flag) pairs: 2 * bin + flag
    key *= 2
    key += flags
    both = np.bincount(key.ravel(), minlength=2 * layout.count)
    both = both.reshape(layout.count, 2)
    return both.sum(axis=1).astype(np.int64), both[:, 1].astype(np.int64)
