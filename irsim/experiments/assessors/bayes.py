"""Bayesian decision agreement: the decisions of the Bayesian tests (better, worse,
equivalent, undecided) on every pair of systems under the reference and each other qrels
(table ``bayes_decision_agreement``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from irsim.experiments.assessors.agreement import CATEGORIES
from irsim.experiments.assessors.prepare import AssessorData
from irsim.kit.common import BayesRules
from irsim.tables import table

__all__ = ["BAYES_STREAM", "BAYES_COUNTS", "bayes_codes", "bayes_decision_counts",
           "bayes_table"]


#: The counts of :func:`bayes_decision_counts`.
BAYES_COUNTS = (*CATEGORIES, "equivalent_reference", "equivalent", "same_decision",
                 "different_reference", "different")
#: The stream of the Bayesian bootstrap's posterior draws.
BAYES_STREAM = "assessors/bayesian_bootstrap"


def bayes_codes(rules: BayesRules, test: str, x: np.ndarray, *, B: int, seed: int,
                key: tuple[int, ...]) -> np.ndarray:
    """Decision codes (:data:`irsim.stats.bayes.DECISIONS`: better, worse, equivalent,
    undecided) of Bayesian test `test` on every pair ``i < j`` of the systems of `x`
    (systems x topics), in ``np.triu_indices`` order: one batched call."""
    ia, ib = np.triu_indices(x.shape[0], 1)
    return rules.codes(test, x[ia], x[ib], B=B, seed=seed, study=BAYES_STREAM, key=key)


def bayes_decision_counts(c_ref: np.ndarray, c_oth: np.ndarray) -> np.ndarray:
    """Counts of :data:`CATEGORIES` for the Bayesian decision codes of every pair under the
    reference and the other qrels ("different": better or worse), then the pairs decided
    equivalent under each, the pairs with the same decision, and the pairs decided different
    under each.

    Examples
    --------
    >>> c1 = np.array([0, 0, 1, 2, 3, 0])   # 0 better, 1 worse, 2 equivalent, 3 undecided
    >>> c2 = np.array([0, 1, 3, 2, 0, 3])
    >>> bayes_decision_counts(c1, c2).tolist()
    [1, 1, 2, 1, 1, 1, 1, 2, 4, 3]
    """
    d1, d2 = c_ref <= 1, c_oth <= 1  # better (0) or worse (1)
    both = d1 & d2
    same = c_ref == c_oth
    return np.array([np.count_nonzero(both & same), np.count_nonzero(~d1 & ~d2),
                     np.count_nonzero(d1 & ~d2), np.count_nonzero(~d1 & d2),
                     np.count_nonzero(both & ~same), np.count_nonzero(c_ref == 2),
                     np.count_nonzero(c_oth == 2), np.count_nonzero(same),
                     np.count_nonzero(d1), np.count_nonzero(d2)], dtype=np.int64)


def bayes_table(arr: np.ndarray | None, data: AssessorData, rules: BayesRules,
                test_B: int) -> pa.Table:
    """The ``bayes_decision_agreement`` table (empty without ``bayes``)."""
    if arr is None:
        return table("bayes_decision_agreement", [])
    rows = []
    S = len(data.systems)
    pairs = S * (S - 1) // 2
    for j, q in enumerate(data.others):
        for m, metric in enumerate(data.metrics):
            for bi, test in enumerate(rules.tests):
                n = dict(zip(BAYES_COUNTS, arr[j * len(data.metrics) + m, bi].tolist(),
                             strict=True))
                rows.append({"qrels": q, "metric": metric, "test": test,
                             "rule": rules.rule(test, test_B), "pairs": pairs,
                             **{k: n[k] for k in (*CATEGORIES, "equivalent_reference",
                                                  "equivalent", "same_decision")},
                             "agreement": (n["both"] + n["neither"]) / pairs,
                             "sensitivity_reference": n["different_reference"] / pairs,
                             "sensitivity": n["different"] / pairs})
    return table("bayes_decision_agreement", rows)
