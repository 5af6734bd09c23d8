"""Measures linear in the labels given the ranking, and their per-rank weights.

A measure is *linear in the labels* when, for a fixed ranked list, it is a weighted sum of
a value of each retrieved document's label: ``M = sum_r w(r) h(grade(r))``. Such a measure
can be estimated from a sample of judgments (a (topic, document) pair at a time) without
bias; :func:`linear_form` gives ``w`` and ``h`` of the ones irsim has:

- ``P@k``: ``w(r) = 1/k`` for ``r <= k``, ``h = [grade >= rel]`` (trec_eval ``P_k``);
- ``DCG@k``: ``w(r) = 1/log2(r+1)`` for ``r <= k``, ``h`` = the gain of the grade (the
  grade itself, or ``gains``), the numerator of trec_eval's ``ndcg_cut_k``;
- ``RBP`` (Moffat and Zobel 2008): ``w(r) = (1-p) p^(r-1)`` (to rank ``k`` with ``@k``),
  ``h = [grade >= rel]``; ``p`` defaults to 0.8.

AP, nDCG, RR and the others are not linear (they divide by the number of relevant
documents or the ideal gain, or stop at the first relevant document): :func:`linear_form`
returns None for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from irsim.metrics.block import Block, GainKey, discount
from irsim.metrics.measures import Measure, register

__all__ = ["LinearForm", "linear_form", "dcg", "rbp"]


@register("DCG", cutoff="required", params={"gains": None},
          description="discounted cumulative gain at k, log2(r+1) discount (the numerator "
                      "of trec_eval ndcg_cut_k)")
def dcg(b: Block, m: Measure) -> np.ndarray:
    """DCG@k = sum_{r <= k} g(r) / log2(r + 1); gains default to the grade."""
    k = min(m.cutoff, b.width)
    return b.cg(GainKey.trec(m.param("gains")), "log2")[:, k - 1]


@register("RBP", cutoff="optional", params={"p": 0.8, "rel": 1},
          description="rank-biased precision (Moffat-Zobel 2008), binary: (1-p) sum "
                      "p^(r-1) [grade >= rel], to rank k with @k")
def rbp(b: Block, m: Measure) -> np.ndarray:
    """RBP = (1 - p) sum_r p^(r-1) isrel(r) over the list (its top k with ``@k``)."""
    k = b.width if m.cutoff is None else min(m.cutoff, b.width)
    p = float(m.param("p"))
    w = (1.0 - p) * p ** (b.ranks[:k] - 1.0)
    return b.isrel(m.rel)[:, :k] @ w


@dataclass(frozen=True)
class LinearForm:
    """``M = sum_r weights[r-1] * value(grade at r)`` of a linear measure.

    Attributes
    ----------
    weights : ndarray, shape (k,)
        Per-rank weights (ranks beyond ``k`` weigh 0).
    value : callable
        Maps an integer grade array to the value each label contributes (unjudged
        documents, negative grades, contribute 0).
    """

    weights: np.ndarray
    value: Callable[[np.ndarray], np.ndarray]


def linear_form(measure: Measure, depth: int) -> LinearForm | None:
    """The linear form of `measure` on lists cut at `depth`, or None when it is not
    linear in the labels.

    Examples
    --------
    >>> from irsim.metrics.measures import parse_measure
    >>> f = linear_form(parse_measure("P(rel=2)@4"), 100)
    >>> f.weights.tolist(), f.value(np.array([0, 1, 2, 3])).tolist()
    ([0.25, 0.25, 0.25, 0.25], [0.0, 0.0, 1.0, 1.0])
    >>> linear_form(parse_measure("AP"), 100) is None
    True
    """
    name = measure.name
    if name == "P":
        k = measure.cutoff
        rel = measure.rel
        return LinearForm(np.full(k, 1.0 / k), lambda g: (g >= rel).astype(np.float64))
    if name == "DCG":
        k = measure.cutoff
        key = GainKey.trec(measure.param("gains"))
        return LinearForm(discount(np.arange(1, k + 1), "log2"),
                          lambda g: key.gain(np.asarray(g)))
    if name == "RBP":
        k = depth if measure.cutoff is None else min(measure.cutoff, depth)
        p = float(measure.param("p"))
        rel = measure.rel
        return LinearForm((1.0 - p) * p ** np.arange(k, dtype=np.float64),
                          lambda g: (g >= rel).astype(np.float64))
    return None
