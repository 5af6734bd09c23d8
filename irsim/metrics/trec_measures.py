"""trec_eval measures: AP, P@k, Rprec, RR, Success@k, nDCG, nDCG@k.

Each kernel maps a :class:`~irsim.metrics.block.Block` (rows = ranked lists) to one value
per row, with array arithmetic over the whole block. Definitions follow trec_eval 9/10
(``m_map.c``, ``m_P.c``, ``m_Rprec.c``, ``m_recip_rank.c``, ``m_success.c``,
``m_ndcg.c``, ``m_ndcg_cut.c``); ``rel`` is trec_eval's ``-l`` relevance level.
"""

from __future__ import annotations

import numpy as np

from irsim.metrics.block import Block, GainKey, safe_div
from irsim.metrics.measures import Measure, register


def _k(b: Block, m: Measure) -> int:
    return b.width if m.cutoff is None else min(m.cutoff, b.width)


@register("AP", cutoff="optional", params={"rel": 1},
          description="average precision (trec_eval map; AP@k = map_cut_k)")
def average_precision(b: Block, m: Measure) -> np.ndarray:
    """AP = (1/R) sum_r isrel(r) count(r)/r over the top k (all ranks by default)."""
    k = _k(b, m)
    isrel, count = b.isrel(m.rel)[:, :k], b.count(m.rel)[:, :k]
    s = np.sum(np.where(isrel, count / b.ranks[:k], 0.0), axis=1)
    return safe_div(s, b.R(m.rel))


@register("P", cutoff="required", params={"rel": 1},
          description="precision at k (trec_eval P_k)")
def precision(b: Block, m: Measure) -> np.ndarray:
    """P@k = count(k)/k, also when the list is shorter than k."""
    return b.count(m.rel)[:, m.cutoff - 1] / m.cutoff


@register("Rprec", cutoff="none", params={"rel": 1},
          description="R-precision (trec_eval Rprec)")
def r_precision(b: Block, m: Measure) -> np.ndarray:
    """Rprec = count(R)/R, 0 when R = 0."""
    R = b.R(m.rel)
    return safe_div(b.at(b.count(m.rel), R), R)


@register("RR", cutoff="optional", params={"rel": 1},
          description="reciprocal rank of the first relevant document (trec_eval recip_rank)")
def reciprocal_rank(b: Block, m: Measure) -> np.ndarray:
    """RR = 1/r1 (0 if no relevant document, or r1 > k with a cut-off)."""
    r1 = b.first_rel(m.rel)
    if m.cutoff is not None:
        r1 = np.where(r1 <= m.cutoff, r1, 0)
    return safe_div(r1 > 0, r1)


@register("Success", cutoff="required", params={"rel": 1},
          description="1 if a relevant document is in the top k (trec_eval success_k)")
def success(b: Block, m: Measure) -> np.ndarray:
    """Success@k = [count(k) > 0]."""
    return (b.count(m.rel)[:, m.cutoff - 1] > 0).astype(np.float64)


@register("nDCG", cutoff="optional", params={"gains": None},
          description="nDCG with log2(r+1) discount (trec_eval ndcg / ndcg_cut_k)")
def ndcg(b: Block, m: Measure) -> np.ndarray:
    """nDCG = sum_r g(r)/log2(r+1) over the ideal's; gains default to the grade.

    Without a cut-off the run's list (to the evaluation depth) is compared with the whole
    ideal list, as trec_eval ``ndcg``; with ``@k`` both stop at k (``ndcg_cut_k``).
    """
    key = GainKey.trec(m.param("gains"))
    dcg = b.cg(key, "log2")
    if m.cutoff is None:
        return safe_div(dcg[:, -1], b.ideal_total(key, "log2"))
    return safe_div(dcg[:, m.cutoff - 1], b.ideal_at(key, m.cutoff, "log2"))
