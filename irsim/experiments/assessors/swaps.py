"""Swap rates per qrels (``swap_trials``): two disjoint halves of each qrels' topics per
trial, as ``experiment=swap`` counts them, for the reference and every other qrels
(table ``assessor_swap``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from irsim.experiments.assessors.prepare import AssessorData
from irsim.kit.bins import ABSOLUTE, bin_counts, is_swap, required_difference
from irsim.rng import REPLICATE_BLOCK
from irsim.sampling.subsets import set_means, subset_counts
from irsim.stats.ties import score_tolerance, snap_ties, snap_zero
from irsim.tables import table

__all__ = ["SWAP_STREAM", "swap_counts", "block_ranges_aligned", "swap_table"]

#: Topic sets of the swap rates per qrels.
SWAP_STREAM = "assessors/swap"


def swap_counts(data: AssessorData, u0: int, u1: int, start: int, stop: int, *,
                seed: int) -> np.ndarray:
    """Comparisons and swaps per absolute-difference bin of the swap units ``u0:u1`` ((qrels,
    metric): the reference first, then the others) over trials ``start:stop``, as
    ``experiment=swap`` counts them (disjoint halves, exact set means with their ties
    snapped, differences within the score tolerance are 0, a single zero difference is a
    swap). Returns the whole
    (units, bins, 2) counter with the units' rows filled (tested against a loop over
    trials and pairs in ``tests/test_assessors.py``).
    """
    names = (data.reference, *data.others)
    M = len(data.metrics)
    out = np.zeros((len(names) * M, ABSOLUTE.count, 2), np.int64)
    S = len(data.systems)
    ia, ib = np.triu_indices(S, 1)
    for u in range(u0, u1):
        qi, mi = divmod(u, M)
        x = np.asarray(data.scores[names[qi]].values[mi])
        T = x.shape[1]
        c = T // 2
        if c < 1:
            continue
        tol = score_tolerance(x)
        for t0, t1 in block_ranges_aligned(start, stop):
            counts = subset_counts("disjoint", seed, SWAP_STREAM, T, c, t0, t1)
            means = snap_ties(set_means(x, counts, c))  # (trials, 2, systems), tie rule
            d = snap_zero(means[:, 0, ia] - means[:, 0, ib], tol)
            d2 = snap_zero(means[:, 1, ia] - means[:, 1, ib], tol)
            comps, hits = bin_counts(ABSOLUTE, np.abs(d), is_swap(d, d2, zero_swaps=True))
            out[u, :, 0] += comps
            out[u, :, 1] += hits
    return out


def block_ranges_aligned(start: int, stop: int) -> list[tuple[int, int]]:
    """``[start, stop)`` cut at multiples of :data:`irsim.rng.REPLICATE_BLOCK`.

    Examples
    --------
    >>> block_ranges_aligned(200, 600)
    [(200, 250), (250, 500), (500, 600)]
    """
    edges = [start, *range((start // REPLICATE_BLOCK + 1) * REPLICATE_BLOCK, stop,
                           REPLICATE_BLOCK), stop]
    return [(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def swap_table(counts: np.ndarray | None, data: AssessorData, trials: int) -> pa.Table:
    """The ``assessor_swap`` table (empty without ``swap_trials``)."""
    if counts is None:
        return table("assessor_swap", [])
    rows = []
    names = (data.reference, *data.others)
    for u in range(len(names) * len(data.metrics)):
        qi, mi = divmod(u, len(data.metrics))
        T = len(data.scores[names[qi]].topics)
        comps, swaps = counts[u, :, 0], counts[u, :, 1]
        req = required_difference(comps, swaps, ABSOLUTE.lo, 0.05)
        total = int(comps.sum())
        sens = float(comps[ABSOLUTE.lo >= req - 1e-12].sum() / total) \
            if np.isfinite(req) and total else float("nan")
        rows.append({"qrels": names[qi], "metric": data.metrics[mi], "topics": T,
                     "subset_size": T // 2, "trials": trials,
                     "comparisons": total, "swaps": int(swaps.sum()),
                     "swap_rate": float(swaps.sum() / total) if total else float("nan"),
                     "required_diff": req, "sensitivity": sens})
    return table("assessor_swap", rows)
