"""The assessor G-study: systems x topics x assessors (:func:`irsim.stats.gtheory.g_study3`)
on the reference and the parallel composites over their common topics, with
bootstrap-over-topics intervals, and its D-study over topics and assessors per topic
(tables ``assessor_gstudy`` and ``assessor_dstudy``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa

from irsim.experiments.assessors.prepare import AssessorData
from irsim.stats.gtheory import COMPONENTS3, DESIGNS3, d_study3, g_study3, g_study3_bootstrap
from irsim.tables import table

__all__ = ["GSTUDY_STREAM", "gstudy_tables"]

#: Bootstrap over topics of the assessor G-study.
GSTUDY_STREAM = "assessors/gstudy"


def gstudy_tables(data: AssessorData, *, B: int, alpha: float, seed: int, max_topics: int,
                  max_assessors: int) -> dict[str, pa.Table]:
    """The ``assessor_gstudy`` and ``assessor_dstudy`` tables: one vectorised G-study
    over all metrics (no randomness), its D-study over the grid."""
    x = data.g_scores()  # (metrics, systems, topics, assessors)
    if not data.g_levels:
        return {"assessor_gstudy": table("assessor_gstudy", []),
                "assessor_dstudy": table("assessor_dstudy", [])}
    g = g_study3(x)
    M, C = len(data.metrics), len(COMPONENTS3)
    var = np.stack([np.broadcast_to(g.var[c], (M,)) for c in COMPONENTS3], axis=1)
    total = var.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = var / total
    # bootstrap over topics: every component of every replicate, (B, metrics)
    boot = g_study3_bootstrap(x, B, seed=seed, study=GSTUDY_STREAM)
    bvar = {c: np.broadcast_to(boot.var[c], (B, M)) for c in COMPONENTS3}
    q = (alpha / 2, 1 - alpha / 2)
    vq = np.stack([np.quantile(bvar[c], q, axis=0) for c in COMPONENTS3], axis=-1)
    gs = {"metric": np.repeat(data.metrics, C).tolist(),
          "levels": [",".join(data.g_levels)] * (M * C),
          "systems": [g.systems] * (M * C), "topics": [g.topics] * (M * C),
          "assessors": [g.assessors] * (M * C),
          "component": list(COMPONENTS3) * M,
          "df": [g.df[c] for c in COMPONENTS3] * M,
          "mean_square": np.stack([np.broadcast_to(g.ms[c], (M,)) for c in COMPONENTS3],
                                  axis=1).ravel(),
          "variance": var.ravel(), "share": share.ravel(),
          "variance_low": vq[0].ravel(), "variance_high": vq[1].ravel(),
          "negative": np.stack([np.broadcast_to(g.negative[c], (M,))
                                for c in COMPONENTS3], axis=1).ravel()}
    nt = np.arange(1, max_topics + 1, dtype=np.float64)
    na = np.arange(1, max_assessors + 1, dtype=np.float64)
    cols: dict[str, list] = {k: [] for k in ("metric", "design", "topics", "assessors",
                                             "e_rho2", "phi", "e_rho2_low",
                                             "e_rho2_high", "phi_low", "phi_high")}
    shape = (M, len(nt), len(na))
    g_grid = replace(g, var={c: np.reshape(v, (M, 1, 1)) for c, v in g.var.items()})
    b_grid = replace(boot, var={c: np.reshape(v, (B, M, 1, 1))
                                for c, v in bvar.items()})
    for design in DESIGNS3:  # two designs, each one broadcast over metrics x grid
        r, p = d_study3(g_grid, nt[None, :, None], na[None, None, :], design=design)
        r, p = np.broadcast_to(r, shape), np.broadcast_to(p, shape)
        br, bp = d_study3(b_grid, nt[None, None, :, None], na[None, None, None, :],
                          design=design)
        rq, pq_ = np.nanquantile(br, q, axis=0), np.nanquantile(bp, q, axis=0)
        cols["metric"] += np.repeat(data.metrics, len(nt) * len(na)).tolist()
        cols["design"] += [design] * r.size
        cols["topics"] += np.broadcast_to(nt[None, :, None], shape).ravel().astype(
            np.int64).tolist()
        cols["assessors"] += np.broadcast_to(na[None, None, :], shape).ravel().astype(
            np.int64).tolist()
        cols["e_rho2"] += r.ravel().tolist()
        cols["phi"] += p.ravel().tolist()
        cols["e_rho2_low"] += rq[0].ravel().tolist()
        cols["e_rho2_high"] += rq[1].ravel().tolist()
        cols["phi_low"] += pq_[0].ravel().tolist()
        cols["phi_high"] += pq_[1].ravel().tolist()
    return {"assessor_gstudy": table("assessor_gstudy", gs),
            "assessor_dstudy": table("assessor_dstudy", cols)}
