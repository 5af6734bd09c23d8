"""Agreement with the reference: of labels (kappas and Krippendorff's alpha per label pair),
of system rankings (tau-b, tau_AP, Spearman, top-k) and of the significance decisions on
every pair of systems; the kernel pieces and the tables they fill."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.exact import Exact
from irsim.experiments.assessors.prepare import AssessorData, LabelPair
from irsim.stats import agreement as agr
from irsim.stats.kendall import ranks
from irsim.stats.multiple import reject
from irsim.stats.registry import TESTS
from irsim.stats.ties import snap_ties
from irsim.tables import table

__all__ = ["LABEL_STREAM", "RANK_STREAM", "TEST_STREAM", "LABEL_STATS", "CATEGORIES",
           "DECISION_COUNTS", "LABEL_COLUMNS", "RANK_COLUMNS", "label_values", "label_row",
           "pvalues", "decision_counts", "system_means", "pair_differences", "label_table",
           "label_topic_table", "confusion_table", "rank_table", "means_table",
           "decision_table"]

#: Random streams: label-agreement intervals, rank-agreement intervals, Monte Carlo tests.
LABEL_STREAM = "assessors/labels"
RANK_STREAM = "assessors/ranks"
TEST_STREAM = "assessors/tests"

#: (labels, statistic) rows of the label-agreement tables, in order.
LABEL_STATS = (("graded", "kappa"), ("graded", "kappa_linear"), ("graded", "kappa_quadratic"),
               ("graded", "alpha_ordinal"), ("binary", "kappa"), ("binary", "alpha_ordinal"),
               ("graded", "fleiss_reference"))
_WEIGHTS = {"kappa": None, "kappa_linear": "linear", "kappa_quadratic": "quadratic"}
#: Decision categories of a system pair (reference vs other qrels).
CATEGORIES = ("both", "neither", "lost", "gained", "opposite")
#: The decision counts of a (test, correction) (:func:`decision_counts`); per trial, metric
#: and size the simulation keeps tau-b, then these per correction.
DECISION_COUNTS = (*CATEGORIES, "sig_ref", "sig")
#: The values of a label pair's row per :data:`LABEL_STATS` row (:func:`label_row`).
LABEL_COLUMNS = ("mean", "low", "high", "topics", "pooled", "pooled_low", "pooled_high",
                 "items")
#: The values of a (qrels, metric)'s rank row (the kernel's ``rank`` field).
RANK_COLUMNS = ("tau_b", "tau_b_low", "tau_b_high", "tau_ap", "tau_ap_low", "tau_ap_high",
                "spearman", "spearman_low", "spearman_high", "top1", "top_k_overlap")


def label_values(pair: LabelPair, scale: np.ndarray, rel: int
                 ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """Per-topic values of every :data:`LABEL_STATS` row for one label pair.

    Returns
    -------
    topics : ndarray (T,)
    items : ndarray of int (T,)
        Jointly judged passages per topic.
    values : list of ndarray (T,)
        One per row of :data:`LABEL_STATS`.
    counts : ndarray (2, T, L, L)
        Per-topic confusion matrices, graded (scale) and binary (padded).
    """
    a, b = pair.grades[:, 0], pair.grades[:, 1]
    ids, graded = agr.confusion_per_topic(a, b, pair.topic, labels=scale)
    _, binary = agr.confusion_per_topic(a >= rel, b >= rel, pair.topic, labels=[False, True])
    items = graded.sum(axis=(1, 2))
    _, alpha_g = agr.krippendorff_alpha_per_topic(pair.grades, pair.topic, "ordinal")
    _, alpha_b = agr.krippendorff_alpha_per_topic((pair.grades >= rel).astype(np.float64),
                                                  pair.topic, "ordinal")
    values = []
    for labels, stat in LABEL_STATS:
        if stat == "fleiss_reference":
            values.append(_fleiss_reference(pair, ids, scale))
        elif stat == "alpha_ordinal":
            values.append(alpha_g if labels == "graded" else alpha_b)
        else:
            values.append(agr.kappa_from_confusion(graded if labels == "graded" else binary,
                                                   _WEIGHTS[stat]))
    return ids, items, values, (graded, binary)


def _fleiss_reference(pair: LabelPair, ids: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Per-topic Fleiss' kappa of the pair and the reference (``pair.fleiss_labels``: the
    reference once or once per assessor, ``experiment.fleiss_reference``) on the passages
    all three judged, aligned with the pair's topics `ids` (NaN: a topic without such
    passages, or a pair with the reference)."""
    out = np.full(len(ids), np.nan)
    if pair.fleiss_labels is None:
        return out
    fid, k = agr.fleiss_kappa_per_topic(pair.fleiss_labels, pair.fleiss_topic,
                                        categories=scale)
    pos = {t: i for i, t in enumerate(ids.tolist())}
    for t, v in zip(fid.tolist(), k.tolist(), strict=True):
        out[pos[t]] = v
    return out


def label_row(pair: LabelPair, scale: np.ndarray, rel: int, *, B: int, level: float,
               seed: int, key: int) -> np.ndarray:
    """The :data:`LABEL_COLUMNS` of every :data:`LABEL_STATS` row of one label pair."""
    ids, items, values, (graded, binary) = label_values(pair, scale, rel)
    out = np.full((len(LABEL_STATS), len(LABEL_COLUMNS)), np.nan)
    for r, (labels, stat) in enumerate(LABEL_STATS):
        v = values[r]
        ok = ~np.isnan(v)
        out[r, 3], out[r, 7] = ok.sum(), items.sum()
        if ok.any():
            out[r, 0] = v[ok].mean()
        if ok.sum() >= 2:
            ci = agr.mean_kappa_ci(v, confidence_level=level, B=B, seed=seed,
                                   study=LABEL_STREAM, key=(key, r))
            out[r, 1], out[r, 2] = ci.low, ci.high
        if stat == "fleiss_reference":
            if pair.fleiss_labels is not None:
                out[r, 7] = len(pair.fleiss_labels)
                out[r, 4] = agr.fleiss_kappa_labels(pair.fleiss_labels, categories=scale)
            else:
                out[r, 7] = 0
            continue
        counts = graded if labels == "graded" else binary
        if stat == "alpha_ordinal":
            g = pair.grades if labels == "graded" else (pair.grades >= rel).astype(float)
            out[r, 4] = agr.krippendorff_alpha(g, "ordinal") if len(np.unique(g)) > 1 \
                else np.nan
            if len(ids) >= 2:  # the pooled kappas' resampled topics
                levels = scale if labels == "graded" else np.array([0.0, 1.0])
                ci = agr.pooled_alpha_ci(counts, levels, "ordinal", confidence_level=level,
                                         B=B, seed=seed, study=LABEL_STREAM + "/pooled",
                                         key=(key,))
                out[r, 5], out[r, 6] = ci.low, ci.high
            continue
        out[r, 4] = agr.kappa_from_confusion(counts.sum(axis=0), _WEIGHTS[stat])
        if len(ids) >= 2:
            ci = agr.pooled_kappa_ci(counts, _WEIGHTS[stat], confidence_level=level, B=B,
                                     seed=seed, study=LABEL_STREAM + "/pooled", key=(key,))
            out[r, 5], out[r, 6] = ci.low, ci.high
    return out


def pvalues(test: str, x: np.ndarray, *, B: int, seed: int, key: tuple[int, ...],
            pvalue: str = "plus_one") -> np.ndarray:
    """Two-sided p-values of every system pair ``a < b`` (row-major) of `x` (systems x
    topics) by `test`: one batched call of :mod:`irsim.stats` over all pairs."""
    spec = TESTS[test]
    kw: dict[str, Any] = {}
    if spec.monte_carlo:
        kw = {"B": B, "seed": seed, "study": f"{TEST_STREAM}/{test}", "key": key,
              "pvalue_mode": pvalue}
    if spec.simultaneous:
        return np.asarray(spec.function(x, **kw).pvalue, np.float64)
    ia, ib = np.triu_indices(x.shape[0], 1)
    # identical runs: the test's identical_pvalue (t: scipy's NaN is no evidence)
    return spec.pvalues(x[ia], x[ib], **kw).reshape(len(ia))


def decision_counts(p_ref: np.ndarray, p_oth: np.ndarray, d_ref: np.ndarray,
                    d_oth: np.ndarray, alpha: float, correction: str) -> np.ndarray:
    """Counts of :data:`CATEGORIES` plus the significant pairs under each qrels.

    Parameters
    ----------
    p_ref, p_oth : ndarray (pairs,)
        P-values under the reference and the other qrels.
    d_ref, d_oth : ndarray (pairs,)
        Mean differences (their signs).
    alpha : float
    correction : str

    Examples
    --------
    >>> p1, p2 = np.array([.01, .01, .5, .01, .5]), np.array([.01, .01, .01, .5, .5])
    >>> d1, d2 = np.array([1., 1, 1, 1, 1]), np.array([1., -1, 1, 1, 1])
    >>> decision_counts(p1, p2, d1, d2, 0.05, "none").tolist()
    [1, 1, 1, 1, 1, 3, 3]
    """
    r1 = reject(p_ref, alpha, correction)
    r2 = reject(p_oth, alpha, correction)
    same = np.sign(d_ref) == np.sign(d_oth)
    both = r1 & r2
    return np.array([np.count_nonzero(both & same), np.count_nonzero(~r1 & ~r2),
                     np.count_nonzero(r1 & ~r2), np.count_nonzero(~r1 & r2),
                     np.count_nonzero(both & ~same), np.count_nonzero(r1),
                     np.count_nonzero(r2)], dtype=np.int64)


def system_means(x: np.ndarray) -> np.ndarray:
    """Mean per system (row) of `x` from its exact sum, means equal in exact arithmetic made
    equal (:func:`~irsim.stats.ties.snap_ties`), as
    :func:`~irsim.stats.kendall.rank_agreement` ranks them: tied systems tie on every CPU."""
    T = x.shape[1]
    return snap_ties(Exact(x, l1=T).total(axis=1) / T)


def pair_differences(x: np.ndarray) -> np.ndarray:
    """Exact mean differences of every pair a < b (ties exactly 0 on every CPU)."""
    means = system_means(x)
    ia, ib = np.triu_indices(x.shape[0], 1)
    return means[ia] - means[ib]


def label_table(arr: np.ndarray, data: AssessorData) -> pa.Table:
    """The ``label_agreement`` table from the merged label rows (:func:`label_row`)."""
    rows = []
    for i, p in enumerate(data.pairs):
        for r, (labels, stat) in enumerate(LABEL_STATS):
            v = dict(zip(LABEL_COLUMNS, arr[i, r].tolist(), strict=True))
            rows.append({"qrels_a": p.a, "qrels_b": p.b, "labels": labels,
                         "statistic": stat, "topics": int(v.pop("topics")),
                         "items": int(v.pop("items")), **v})
    return table("label_agreement", rows)


def label_topic_table(data: AssessorData) -> pa.Table:
    """The ``label_agreement_topic`` table: every label statistic per topic."""
    rows = []
    for p in data.pairs:
        ids, items, values, _ = label_values(p, data.scale, data.rel)
        for r, (labels, stat) in enumerate(LABEL_STATS):
            rows.extend({"qrels_a": p.a, "qrels_b": p.b, "labels": labels, "statistic": stat,
                         "topic": str(t), "items": int(n), "value": float(v)}
                        for t, n, v in zip(ids.tolist(), items.tolist(), values[r].tolist(),
                                           strict=True))
    return table("label_agreement_topic", rows)


def confusion_table(data: AssessorData) -> pa.Table:
    """The ``confusion`` table: the grade confusion matrix of every label pair."""
    rows = []
    for p in data.pairs:
        c = agr.confusion(p.grades[:, 0], p.grades[:, 1], labels=data.scale)
        rows.extend({"qrels_a": p.a, "qrels_b": p.b, "grade_a": int(ga), "grade_b": int(gb),
                     "count": int(c[i, k])}
                    for i, ga in enumerate(data.scale) for k, gb in enumerate(data.scale))
    return table("confusion", rows)


def rank_table(arr: np.ndarray, data: AssessorData, top_k: int) -> pa.Table:
    """The ``rank_agreement`` table from the merged rank rows."""
    rows = []
    for j, q in enumerate(data.others):
        for m, metric in enumerate(data.metrics):
            v = dict(zip(RANK_COLUMNS, arr[j * len(data.metrics) + m].tolist(),
                         strict=True))
            x, y, topics = data.compared(j, m)
            mx, my = system_means(x), system_means(y)
            move = ranks(mx) - ranks(my)
            big = int(np.lexsort((ranks(mx), -np.abs(move)))[0])
            rows.append({"qrels": q, "metric": metric, "topics": len(topics),
                         "systems": len(mx), **v, "top1": bool(v["top1"]),
                         "top_k": min(top_k, len(mx)),
                         "max_move": int(abs(move[big])), "max_mover": data.systems[big],
                         "mean_abs_move": float(np.abs(move).mean())})
    return table("rank_agreement", rows)


def means_table(data: AssessorData) -> pa.Table:
    """The ``system_means`` table: every system's mean and rank under both qrels."""
    rows = []
    for j, q in enumerate(data.others):
        for m, metric in enumerate(data.metrics):
            x, y, _ = data.compared(j, m)
            mx, my = system_means(x), system_means(y)
            rx, ry = ranks(mx), ranks(my)
            rows.extend({"qrels": q, "metric": metric, "system": s,
                         "reference_mean": float(mx[i]), "mean": float(my[i]),
                         "reference_rank": int(rx[i]), "rank": int(ry[i]),
                         "move": int(rx[i] - ry[i])} for i, s in enumerate(data.systems))
    return table("system_means", rows)


def decision_table(arr: np.ndarray, data: AssessorData, tests: Sequence[str],
                   corrections: Callable[[str], Sequence[str]]) -> pa.Table:
    """The ``decision_agreement`` table from the merged decision counts; `corrections`
    gives the corrections of a test."""
    rows = []
    S = len(data.systems)
    pairs = S * (S - 1) // 2
    for j, q in enumerate(data.others):
        for m, metric in enumerate(data.metrics):
            c = arr[j * len(data.metrics) + m]
            for ti, test in enumerate(tests):
                for ci, corr in enumerate(corrections(test)):
                    n = dict(zip((*CATEGORIES, "sig_ref", "sig"), c[ti, ci].tolist(),
                                 strict=True))
                    rows.append({"qrels": q, "metric": metric, "test": test,
                                 "correction": corr, "pairs": pairs,
                                 **{k: n[k] for k in CATEGORIES},
                                 "agreement": (n["both"] + n["neither"]) / pairs,
                                 "power_reference": n["sig_ref"] / pairs,
                                 "power": n["sig"] / pairs})
    return table("decision_agreement", rows)
