"""Graded measures of Sakai / NTCIREVAL: Q, R-measure, O, nCG, nDCG_orig, AnCG, AnDCG.

Notation (``docs/METHODS.md`` section 1): ``count(r)`` relevant documents in the top r,
``cg(r)`` cumulative gain, ``cg_I(r)`` the same for the ideal list, blended ratio
``BR(r) = (count(r) + beta cg(r)) / (r + beta cg_I(r))``. A document is relevant when its
grade >= ``rel`` (1 = relaxed, 2 = rigid); its gain is ``gains.get(grade, grade)``, and
documents below the threshold have no gain. Defaults: ``beta = 1``, log base ``b = 2``.

References: Sakai, "On the reliability of information retrieval metrics based on graded
relevance" (IPM 2007) for Q, R-measure, AnCG/AnDCG; Sakai, "On the properties of
evaluation metrics for finding one highly relevant document" (IPSJ TOD 2007) for O;
Jarvelin & Kekalainen (TOIS 2002) for nCG and the original nDCG.
"""

from __future__ import annotations

import numpy as np

from irsim.metrics.block import Block, GainKey, safe_div
from irsim.metrics.measures import Measure, register

_GRADED = {"rel": 1, "gains": None}
_BR = {"rel": 1, "gains": None, "beta": 1.0}
_DCG = {"rel": 1, "gains": None, "b": 2.0}


def _key(m: Measure) -> GainKey:
    return GainKey("ntcir", m.rel, m.param("gains"))


def _blended_ratio(b: Block, m: Measure) -> np.ndarray:
    """(rows, width) BR(r)."""
    key, beta = _key(m), m.beta
    num = b.count(m.rel) + beta * b.cg(key)
    den = b.ranks + beta * b.ideal_cum(key)
    return num / den


@register("Q", cutoff="optional", params=_BR,
          description="Q-measure (NTCIREVAL Q; Q@l divides by min(R, l))")
def q_measure(b: Block, m: Measure) -> np.ndarray:
    """Q = (1/R) sum_r isrel(r) BR(r); Q@l sums r <= l and divides by min(R, l)."""
    k = b.width if m.cutoff is None else m.cutoff
    br = _blended_ratio(b, m)[:, :k]
    s = np.sum(np.where(b.isrel(m.rel)[:, :k], br, 0.0), axis=1)
    R = b.R(m.rel)
    return safe_div(s, R if m.cutoff is None else np.minimum(R, m.cutoff))


@register("R-measure", cutoff="none", params=_BR,
          description="R-measure: blended ratio at rank R")
def r_measure(b: Block, m: Measure) -> np.ndarray:
    """BR(R); beyond the list, count and cg stay at their last values, cg_I(R) = total."""
    key, beta = _key(m), m.beta
    R = b.R(m.rel)
    num = b.at(b.count(m.rel), R) + beta * b.at(b.cg(key), R)
    den = R + beta * b.ideal_total(key)
    return np.where(R > 0, safe_div(num, den), 0.0)


@register("O", cutoff="none", params=_BR,
          description="O-measure: blended ratio at the first relevant rank (NTCIREVAL O)")
def o_measure(b: Block, m: Measure) -> np.ndarray:
    """O = BR(r1), 0 if no relevant document is retrieved."""
    r1 = b.first_rel(m.rel)
    return np.where(r1 > 0, b.at(_blended_ratio(b, m), r1), 0.0)


@register("nCG", cutoff="required", params=_GRADED,
          description="normalised cumulative gain at l: cg(l)/cg_I(l)")
def ncg(b: Block, m: Measure) -> np.ndarray:
    """nCG@l = cg(l) / cg_I(l)."""
    key = _key(m)
    return safe_div(b.cg(key)[:, m.cutoff - 1], b.ideal_at(key, m.cutoff))


@register("nDCG_orig", cutoff="required", params=_DCG,
          description="original nDCG of Jarvelin-Kekalainen (NTCIREVAL nDCG), log base b")
def ndcg_orig(b: Block, m: Measure) -> np.ndarray:
    """nDCG_orig@l: discount 1 for r < b, 1/log_b(r) for r >= b."""
    key = _key(m)
    return safe_div(b.cg(key, "orig", m.b)[:, m.cutoff - 1],
                    b.ideal_at(key, m.cutoff, "orig", m.b))


@register("AnCG", cutoff="required", params=_GRADED,
          description="average nCG over ranks 1..l")
def ancg(b: Block, m: Measure) -> np.ndarray:
    """AnCG@l = (1/l) sum_{r<=l} nCG(r)."""
    key, k = _key(m), m.cutoff
    return safe_div(b.cg(key)[:, :k], b.ideal_cum(key)[:, :k]).mean(axis=1)


@register("AnDCG", cutoff="required", params=_DCG,
          description="average original nDCG over ranks 1..l")
def andcg(b: Block, m: Measure) -> np.ndarray:
    """AnDCG@l = (1/l) sum_{r<=l} nDCG_orig(r)."""
    key, k = _key(m), m.cutoff
    dcg = b.cg(key, "orig", m.b)[:, :k]
    idcg = b.ideal_cum(key, "orig", m.b)[:, :k]
    return safe_div(dcg, idcg).mean(axis=1)
