"""The row labels of experiment=discpower's tables: a metric as a summary of per-topic
scores (:class:`Variant`: ``<metric>``, ``AG <metric>``, ``G <metric>``), the per-topic
values of a variant and the observed difference of every system pair."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irsim.data.matrix import ScoreMatrix
from irsim.kit.common import PAIR_UNIT, pair_index, unit_ranges
from irsim.stats.resample import gmean_scores, log_scores

__all__ = ["Variant", "pair_count", "variant_values", "observed_diff"]


@dataclass(frozen=True)
class Variant:
    """One row label of the tables: a metric as a summary of per-topic scores.

    Attributes
    ----------
    name : str
        ``AP``, ``AG AP`` or ``G AP``.
    metric : str
        The metric of the score matrix.
    kind : {"mean", "ag", "g"}
        Arithmetic mean of the scores, arithmetic mean of ``log(x + 1e-5)``, geometric mean.
    tests : tuple of str
        The tests run on it.
    """

    name: str
    metric: str
    kind: str
    tests: tuple[str, ...]

    @property
    def sampled(self) -> bool:
        """Whether stability, swap and rank correlation use it (``AG`` ranks as ``G``)."""
        return self.kind != "ag"


def pair_count(data: ScoreMatrix) -> int:
    """System pairs of `data`: ``k (k - 1) / 2``."""
    k = len(data.systems)
    return k * (k - 1) // 2


def variant_values(v: Variant, data: ScoreMatrix) -> np.ndarray:
    """Per-topic values whose arithmetic mean is the variant's summary (AG: the logs)."""
    x = np.asarray(data.metric(v.metric), np.float64)
    return log_scores(x) if v.kind == "ag" else x


def observed_diff(v: Variant, data: ScoreMatrix) -> np.ndarray:
    """Per pair: observed difference of the variant's summaries (``a - b``)."""
    ia, ib = pair_index(len(data.systems))
    if v.kind == "g":
        g = gmean_scores(data.metric(v.metric))
        return g[ia] - g[ib]
    x = variant_values(v, data)
    diff = np.empty(len(ia))
    for p0, p1 in unit_ranges(0, len(ia), 8 * PAIR_UNIT):
        diff[p0:p1] = (x[ia[p0:p1]] - x[ib[p0:p1]]).mean(axis=1)
    return diff
