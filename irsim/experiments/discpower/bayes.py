"""The Bayesian decisions of experiment=discpower (issue 28): every Bayesian test of
``experiment.bayes`` on every pair of the arithmetic-mean variants (``<metric>``, ``AG
<metric>``), decided in units of 256 pairs by the shard that holds a pair's first replicate
block (:func:`decide_pairs`), and the tables ``bayes_pairs`` and ``bayes_discpower``
(:func:`bayes_tables`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Shard
from irsim.experiments.discpower.fields import BayesDecisionFields
from irsim.experiments.discpower.pairtests import closed_form_asl
from irsim.experiments.discpower.variants import observed_diff, pair_count, variant_values
from irsim.kit.common import PAIR_UNIT, decision_codes, pair_index, unit_ranges
from irsim.stats.bayes import DECISIONS
from irsim.tables import schema, table

if TYPE_CHECKING:
    from irsim.experiments.discpower import DiscPower

__all__ = ["decide_pairs", "bayes_tables"]


def decide_pairs(study: DiscPower, shard: Shard, data: ScoreMatrix
                 ) -> dict[str, np.ndarray]:
    """The Bayesian decisions of the shard's pairs (issue 28): per variant and Bayesian
    test, the decision code (index of :data:`irsim.stats.bayes.DECISIONS`) and the
    evidence ``(BF10, P(delta > 0), P(delta in ROPE))`` (NaN where the test has none),
    one batched call per unit of 256 pairs (a unit's rows, hence every GEMM of the
    Bayesian bootstrap, are the same for any sharding)."""
    out: dict[str, np.ndarray] = {}
    variants = study.variants(data)
    ia, ib = pair_index(len(data.systems))
    p0, p1 = shard.items
    rules = study.bayes_rules
    for vi in study.bayes_variants(data):
        x = variant_values(variants[vi], data)
        for test in study.config.bayes:
            code = np.empty(p1 - p0, np.int64)
            value = np.full((p1 - p0, 3), np.nan)
            for a, b in unit_ranges(p0, p1, PAIR_UNIT):  # loop over 256-pair units
                res = rules.decide(test, x[ia[a:b]], x[ib[a:b]], B=study.config.B,
                                   seed=study.seed, study=f"discpower/{test}")
                code[a - p0:b - p0] = decision_codes(np.atleast_1d(res.decision))
                if test == "jzs_bf":
                    value[a - p0:b - p0, 0] = res.bf10
                else:
                    value[a - p0:b - p0, 1] = res.prob_positive
                    value[a - p0:b - p0, 2] = res.prob_rope
            f = BayesDecisionFields(vi, test)
            out[f.code], out[f.value] = code, value
    return out


def bayes_tables(study: DiscPower, merged: dict[str, Any], data: ScoreMatrix
                 ) -> tuple[pa.Table, pa.Table]:
    """``bayes_pairs`` (a row per variant, Bayesian test and pair) and
    ``bayes_discpower`` (a row per variant and Bayesian test: decision counts, the share
    decided different, the paired t test at :attr:`t_alpha` beside it)."""
    P = pair_count(data)
    ia, ib = pair_index(len(data.systems))
    systems = np.asarray(data.systems, dtype=object)
    variants = study.variants(data)
    labels = np.asarray(DECISIONS, dtype=object)
    rules = study.bayes_rules
    pair_cols: dict[str, list] = {c: [] for c in schema("bayes_pairs").names}
    rows = []
    for vi in study.bayes_variants(data):
        v = variants[vi]
        diff = observed_diff(v, data)
        t_asl, _ = closed_form_asl("t", variant_values(v, data), (study.t_alpha,),
                                   study.options)
        t_sig = t_asl < study.t_alpha
        for test in study.config.bayes:
            f = BayesDecisionFields(vi, test)
            code, value = merged[f.code], merged[f.value]
            rule = rules.rule(test, study.config.B)
            for col, vals in (("metric", [v.name] * P), ("test", [test] * P),
                              ("rule", [rule] * P), ("system_a", systems[ia]),
                              ("system_b", systems[ib]), ("diff", diff),
                              ("bf10", value[:, 0]), ("prob_positive", value[:, 1]),
                              ("prob_rope", value[:, 2]), ("decision", labels[code])):
                pair_cols[col].append(vals)
            counts = np.bincount(code, minlength=len(DECISIONS))
            different = code <= 1  # better or worse
            rows.append({
                "metric": v.name, "test": test, "rule": rule, "pairs": P,
                **{d: int(counts[i]) for i, d in enumerate(DECISIONS)},
                "different": int(different.sum()),
                "sensitivity": float(different.sum()) / P,
                "equivalent_share": float(counts[2]) / P,
                "t_alpha": study.t_alpha, "t_significant": int(t_sig.sum()),
                "t_sensitivity": float(t_sig.sum()) / P,
                "both": int((different & t_sig).sum()),
            })
    pairs = {}
    for c, parts in pair_cols.items():
        arr = np.concatenate(parts)
        if c in ("bf10", "prob_positive", "prob_rope"):
            arr = pa.array(arr, pa.float64(), mask=np.isnan(arr))
        pairs[c] = arr
    return table("bayes_pairs", pairs), table("bayes_discpower", rows)
