"""The bootstrap swap method (Sakai 2006, Section 3.5 and Figure 11).

A helper of the discpower experiment (not an experiment of its own). Besides the paired
test's bootstrap samples ``Q*b``, a second, independent set ``Q'*b`` (b = 1..B) is drawn from
the same topic set. For every system pair and ``b``: ``D = M(X, Q*b) - M(Y, Q*b)`` and ``D'``
likewise on ``Q'*b``; the comparison falls into the bin of ``|D|`` (the one absolute layout of
:mod:`irsim.kit.bins`: 21 bins of width 0.01, the last ``>= 0.20``) and is a swap if
``D * D' < 0`` (:func:`~irsim.kit.bins.is_swap` with ``zero_swaps=False``).

Per bin: comparisons and swaps (integer counters: partial counts over blocks of pairs and
samples add up in any order), swap rate = swaps / comparisons. Required difference at
confidence ``1 - r`` = the smallest bin edge from which every swap rate is ``<= r``
(:func:`~irsim.kit.bins.required_difference`); sensitivity = share of all
``|C| * B`` comparisons with ``|D|`` at least that difference; max performance = the largest
``M(X, Q*b)`` over systems and samples of both sets; relative difference = required / max.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from irsim.kit.bins import ABSOLUTE, BinLayout, is_swap, required_difference
from irsim.tables import schema, table

__all__ = ["SWAP_STREAM", "swap_counts", "topic_overlap", "swap_tables"]

#: Random stream of the second set of bootstrap samples ``Q'*b``.
SWAP_STREAM = "discpower/swap2"

def swap_counts(d: np.ndarray, d2: np.ndarray, layout: BinLayout = ABSOLUTE
                ) -> tuple[np.ndarray, np.ndarray]:
    """Comparisons and swaps per bin of ``|d|`` for a block of pairs x samples.

    Parameters
    ----------
    d, d2 : ndarray, same shape
        Differences on ``Q*b`` and on ``Q'*b`` (exact ties already 0).
    layout : BinLayout
        Bins of ``|d|`` (Sakai: absolute).

    Returns
    -------
    comparisons, swaps : ndarray of int64, shape (layout.count,)

    Examples
    --------
    >>> d = np.array([[0.005, -0.015, 0.3, 0.0]])
    >>> d2 = np.array([[-0.01, -0.02, -0.1, 0.2]])
    >>> comps, swaps = swap_counts(d, d2)
    >>> comps[[0, 1, 20]].tolist(), swaps[[0, 1, 20]].tolist(), int(comps.sum())
    ([2, 1, 1], [1, 0, 1], 4)
    """
    absd = np.abs(d)
    swap = is_swap(d, d2, zero_swaps=False)
    return layout.histogram(absd), layout.histogram(absd, weights=swap)


def topic_overlap(counts: np.ndarray, counts2: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique topics of each sample of both sets and the topics they share.

    Parameters
    ----------
    counts, counts2 : ndarray, shape (samples, topics)
        How often each topic is drawn into ``Q*b`` and ``Q'*b``.

    Returns
    -------
    unique, unique2, overlap : ndarray of int64, shape (samples,)

    Examples
    --------
    >>> c1 = np.array([[2., 1., 0., 0.]])
    >>> c2 = np.array([[0., 1., 1., 2.]])
    >>> [a.tolist() for a in topic_overlap(c1, c2)]
    [[2], [3], [1]]
    """
    a, b = counts > 0, counts2 > 0
    return (np.count_nonzero(a, axis=1).astype(np.int64),
            np.count_nonzero(b, axis=1).astype(np.int64),
            np.count_nonzero(a & b, axis=1).astype(np.int64))


def swap_tables(
    rows: Sequence[tuple[str, np.ndarray, np.ndarray, float]],
    *,
    subset_size: int,
    samples: int,
    confidences: Sequence[float],
    unique_total: int,
    overlap_total: int,
    layout: BinLayout = ABSOLUTE,
) -> tuple[pa.Table, pa.Table]:
    """The ``swap_rates`` and ``swap_summary`` tables of the bootstrap swap method.

    Parameters
    ----------
    rows : sequence of (metric, comparisons, swaps, max_performance)
        Per-metric bin counters over all pairs and samples, and the largest ``M(X, Q*b)``.
    subset_size : int
        Topics per bootstrap sample (``n``, the topic set size).
    samples : int
        ``B`` (samples per set).
    confidences : sequence of float
        ``1 - r`` for the swap-rate thresholds ``r`` (Sakai: 0.95).
    unique_total, overlap_total : int
        Unique topics summed over all ``2B`` samples, and topics shared by ``Q*b`` and
        ``Q'*b`` summed over ``b``.
    layout : BinLayout

    Returns
    -------
    swap_rates, swap_summary : pyarrow.Table
        ``swap_rates``: metric, sampling (``bootstrap``), subset_size, bin_kind, bin_lo,
        bin_hi, comparisons, swaps, swap_rate. ``swap_summary``: metric, sampling,
        subset_size, confidence, required_diff, max_performance, relative_diff,
        sensitivity, mean_unique_topics, mean_overlap, ``comparisons`` (``|C| B``),
        ``comparisons_above`` (those with ``|D| >=`` required_diff) and the relative-bin
        columns of ``experiment=swap`` (null here); see :mod:`irsim.tables`.

    Examples
    --------
    >>> comps = np.zeros(21, np.int64); comps[:3] = [100, 100, 100]
    >>> swaps = np.zeros(21, np.int64); swaps[:3] = [30, 4, 1]
    >>> rates, summary = swap_tables([("AP", comps, swaps, 0.5)], subset_size=50,
    ...                              samples=10, confidences=[0.95], unique_total=630,
    ...                              overlap_total=200)
    >>> rates.num_rows
    21
    >>> s = summary.to_pylist()[0]
    >>> s["required_diff"], s["relative_diff"], s["sensitivity"], s["mean_unique_topics"]
    (0.01, 0.02, 0.6666666666666666, 31.5)
    """
    lo, hi = layout.lo, layout.hi
    rate_cols: dict[str, list] = {name: [] for name in schema("swap_rates").names}
    sum_cols: dict[str, list] = {name: [] for name in schema("swap_summary").names}
    for metric, comps, swaps, max_perf in rows:
        comps = np.asarray(comps, np.int64)
        swaps = np.asarray(swaps, np.int64)
        rate = np.divide(swaps, comps, out=np.full(len(comps), np.nan), where=comps > 0)
        rate_cols["metric"] += [metric] * layout.count
        rate_cols["sampling"] += ["bootstrap"] * layout.count
        rate_cols["subset_size"] += [int(subset_size)] * layout.count
        rate_cols["bin_kind"] += [layout.kind] * layout.count
        rate_cols["bin_lo"] += lo.tolist()
        rate_cols["bin_hi"] += hi.tolist()
        rate_cols["comparisons"] += comps.tolist()
        rate_cols["swaps"] += swaps.tolist()
        rate_cols["swap_rate"] += rate.tolist()
        total = int(comps.sum())
        for conf in confidences:
            req = required_difference(comps, swaps, lo, 1.0 - conf)
            above = 0 if np.isnan(req) else int(comps[lo >= req - 1e-12].sum())
            sum_cols["metric"].append(metric)
            sum_cols["sampling"].append("bootstrap")
            sum_cols["subset_size"].append(int(subset_size))
            sum_cols["confidence"].append(float(conf))
            sum_cols["required_diff"].append(req)
            sum_cols["max_performance"].append(float(max_perf))
            sum_cols["relative_diff"].append(req / max_perf if max_perf > 0 else float("nan"))
            sum_cols["sensitivity"].append(above / total if total else float("nan"))
            sum_cols["mean_unique_topics"].append(unique_total / (2 * samples))
            sum_cols["mean_overlap"].append(overlap_total / samples)
            sum_cols["comparisons"].append(total)
            sum_cols["comparisons_above"].append(above)
            sum_cols["required_reldiff"].append(None)  # relative bins: experiment=swap only
            sum_cols["sensitivity_reldiff"].append(None)
    return table("swap_rates", rate_cols), table("swap_summary", sum_cols)
