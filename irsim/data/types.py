"""Document-level data: graded qrels and TREC runs, held columnar (one row per line).

These are the contract between the readers, the synthetic generators and the metric
kernels. Strings are numpy object arrays; numbers are numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Qrels", "Runs"]


@dataclass(frozen=True)
class Qrels:
    """Graded relevance judgments, one row per (topic, docno).

    Parameters
    ----------
    topic, docno : ndarray of str (object dtype)
    grade : ndarray of int64
        Relevance grade; grades <= 0 are non-relevant (negative grades are judged
        non-relevant, as trec_eval treats them).
    source : str, optional
        The file they came from.
    """

    topic: np.ndarray
    docno: np.ndarray
    grade: np.ndarray
    source: str | None = field(default=None, compare=False)

    def __len__(self) -> int:
        return len(self.grade)

    @property
    def topics(self) -> list[str]:
        """Sorted unique topic ids."""
        return sorted(set(self.topic.tolist()))


@dataclass(frozen=True)
class Runs:
    """One or more ranked runs, one row per retrieved document.

    Parameters
    ----------
    names : tuple of str
        Run names (the TREC `tag`, or the file name), in order.
    run : ndarray of int32
        Index into `names` for each row.
    topic, docno : ndarray of str (object dtype)
    score : ndarray of float64
        Retrieval score; ranking is by score descending, ties by docno descending
        (trec_eval); any rank column in the file is ignored.
    sources : tuple of str
        The file each run came from (same order as `names`).
    """

    names: tuple[str, ...]
    run: np.ndarray
    topic: np.ndarray
    docno: np.ndarray
    score: np.ndarray
    sources: tuple[str, ...] = field(default=(), compare=False)

    def __len__(self) -> int:
        return len(self.score)
