"""The tables of experiment=multiple_testing: their specs (``TABLE_SPECS``, named by the
study's registration; schemas: :mod:`irsim.tables`) and the table of the Bayesian rates
(:func:`bayes_rates_table`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from irsim.kit.tables import TYPE_M_S
from irsim.stats.binomial import wilson
from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import METRIC, claim, rate_columns
from irsim.tables import STR as _S
from irsim.tables import column as _c
from irsim.tables import table as build_table
from irsim.tables import table_spec as _spec

__all__ = ["TABLE_SPECS", "bayes_rates_table"]


def bayes_rates_table(rows: list[dict], ci_level: float) -> pa.Table:
    """Table ``bayes_multiple_testing`` from rows of counts: the rates and their Wilson
    bands (the per-trial shares summed as the count over the trials, as table
    ``multiple_testing``); a row without ``rope_comparisons`` (a significance test) has null
    equivalence columns.

    Examples
    --------
    >>> row = {"metric": "AP", "n": 25, "m": 4, "share_null": 0.5, "null_systems": 2,
    ...        "trials": 10, "null_comparisons": 10, "alt_comparisons": 50,
    ...        "method": "bayes", "test": "jzs_bf", "rule": "BF10 >= 3", "correction": None,
    ...        "alpha": None, "false_different": 1, "familywise": 1, "right": 20,
    ...        "wrong": 0, "rope_comparisons": 10, "equivalent_inside": 6, "outside": 50,
    ...        "equivalent_outside": 5, "undecided": 28}
    >>> t = bayes_rates_table([row], 0.95).to_pylist()[0]
    >>> t["false_different_rate"], t["power"], t["equivalent_outside_rate"], t["undecided_rate"]
    (0.1, 0.4, 0.1, 0.4666666666666667)
    """
    cols = ("metric", "n", "m", "share_null", "null_systems", "method", "test", "rule",
            "correction", "alpha", "trials", "null_comparisons", "false_different",
            "familywise", "alt_comparisons", "right", "wrong")
    out: dict[str, object] = {c: [r[c] for r in rows] for c in cols}
    trials = np.asarray(out["trials"], np.float64)

    def rate(count_key: str, total: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = np.asarray([r.get(count_key, np.nan) for r in rows], np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = k / total
            lo, hi = wilson(share * trials, trials, ci_level)
        return share, lo, hi

    null = np.asarray(out["null_comparisons"], np.float64)
    alt = np.asarray(out["alt_comparisons"], np.float64)
    for name, key, total in (("false_different", "false_different", null),
                             ("power", "right", alt), ("wrong_sign", "wrong", alt)):
        share, lo, hi = rate(key, total)
        stem = "power" if name == "power" else f"{name}_rate"
        out[stem], out[f"{name}_lo"], out[f"{name}_hi"] = share, lo, hi
    with np.errstate(invalid="ignore", divide="ignore"):
        out["fwer"] = np.asarray(out["familywise"], np.float64) / trials
    bayes = np.asarray([r["method"] == "bayes" for r in rows], bool)

    def opt(values: list) -> pa.Array:  # integer counts of the Bayesian rows
        arr = np.asarray(values, np.float64)
        return pa.array(np.nan_to_num(arr).astype(np.int64), pa.int64(),
                        mask=~bayes | np.isnan(arr))

    get = {k: [r.get(k, np.nan) for r in rows] for k in (
        "rope_comparisons", "equivalent_inside", "outside", "equivalent_outside", "undecided")}
    inside = np.asarray(get["rope_comparisons"], np.float64)
    share, lo, hi = rate("equivalent_inside", inside)
    outside = np.asarray(get["outside"], np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        eq_out = np.asarray(get["equivalent_outside"], np.float64) / outside
        undecided = np.asarray(get["undecided"], np.float64) / (null + alt)
    out["rope_comparisons"] = opt(get["rope_comparisons"])
    out["equivalent_inside"] = opt(get["equivalent_inside"])
    for c, v in (("equivalent_inside_rate", share), ("equivalent_inside_lo", lo),
                 ("equivalent_inside_hi", hi)):
        out[c] = pa.array(v, pa.float64(), mask=~bayes)
    out["equivalent_outside"] = opt(get["equivalent_outside"])
    out["equivalent_outside_rate"] = pa.array(eq_out, pa.float64(), mask=~bayes)
    out["undecided_rate"] = pa.array(undecided, pa.float64(), mask=~bayes)
    return build_table("bayes_multiple_testing", out)



#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
    claim(TYPE_M_S, fills=("m", "share_null", "correction"), notes={
        "": "pooled over the pairs with a true difference, per collection configuration "
            "(m, share_null, correction).",
        "trials": "pair x trial comparisons with a true difference"}),
    _spec("multiple_testing", ("multiple_testing",), "Known-truth family-wise error rate, false "
          "discovery rate and per-pair power of multiple-comparison corrections over all "
          "system pairs of simulated collections: per metric, correction, test, m, n, "
          "share_null and alpha.", [
              _c("metric", _S, "metric whose collection the generator was fit to"),
              _c("correction", _S, "`none`, `bonferroni`, `holm`, `bh` (Benjamini-Hochberg) or "
                 "`by` (Benjamini-Yekutieli), over the m(m-1)/2 pairs of a collection"),
              _c("test", _S, "`t`, `wilcoxon`, `sign`, `randomisation` or `paired_bootstrap` "
                 "(two-sided)"),
              _c("m", _I, "systems per simulated collection"),
              _c("n", _I, "topics per simulated collection"),
              _c("share_null", _F, "share of the systems with the same true mean (1: no true "
                 "difference)"),
              _c("null_systems", _I, "systems with the null mean: floor(share_null m + 1/2); "
                 "the true null pairs are the pairs among them"),
              _c("alpha", _F, "level of the procedure (FWER level for Bonferroni and Holm, FDR "
                 "level for BH and BY; per comparison for `none`)"),
              _c("trials", _I, "simulated collections"),
              _c("familywise_errors", _I, "collections with at least one true null rejected"),
              *rate_columns("fwer", "familywise_errors / trials: family-wise error rate"),
              *rate_columns("fdr", "false discovery rate: mean over collections of V / R "
                              "(rejected true nulls / rejections; 0 when nothing is rejected)",
                              count="summed V / R as the count: conservative"),
              *rate_columns("power", "per-pair power: mean over collections of the share "
                              "of truly different pairs rejected (NaN when there are none)",
                              count="summed shares as the count: conservative"),
              _c("mean_rejections", _F, "mean number of pairs rejected per collection"),
          ]),
    _spec("bayes_multiple_testing", ("multiple_testing",), "Bayesian decisions against the "
          "known truth (issue 28): per metric, n, m, share_null and method, every Bayesian "
          "test of `experiment.bayes` (uncorrected: a decision per pair) and, on the same "
          "trials, every significance test with each correction and alpha; pooled over the "
          "(trial, pair) comparisons. Bands are Wilson intervals with the per-trial shares "
          "summed as the count over the trials (conservative, as table multiple_testing).", [
              _c("metric", _S, "metric whose collection the generator was fit to"),
              _c("n", _I, "topics per simulated collection"),
              _c("m", _I, "systems per simulated collection"),
              _c("share_null", _F, "share of the systems with the same true mean"),
              _c("null_systems", _I, "systems with the null mean (true null pairs: the pairs "
                 "among them)"),
              _c("method", _S, "`bayes` (a Bayesian test's decision) or `test` (a "
                 "significance test: different = rejected, direction = sign of the mean "
                 "difference)"),
              _c("test", _S, "the Bayesian test (`jzs_bf`, `t_posterior`, "
                 "`bayesian_bootstrap`) or the significance test"),
              _c("rule", _S, "Bayesian: the decision rule (as table bayes_decisions); test: "
                 "`p <= alpha (correction)`"),
              _c("correction", _S, "test: the correction of the family of all pairs; null for "
                 "`bayes`"),
              _c("alpha", _F, "test: its level; null for `bayes`"),
              _c("trials", _I, "simulated collections"),
              _c("null_comparisons", _I, "trial x pair comparisons with equal true means"),
              _c("false_different", _I, "of them, decided better or worse (rejected)"),
              *rate_columns("false_different_rate", "false_different / null_comparisons: "
                              "the per-comparison false \"different\" rate (NaN without true "
                              "nulls)"),
              _c("familywise", _I, "trials with at least one null pair decided different"),
              _c("fwer", _F, "familywise / trials"),
              _c("alt_comparisons", _I, "trial x pair comparisons with a true difference"),
              _c("right", _I, "of them, decided different in the true direction"),
              *rate_columns("power", "right / alt_comparisons (NaN without true "
                              "differences)"),
              _c("wrong", _I, "comparisons with a true difference decided different in the "
                 "wrong direction (Type S among all comparisons)"),
              *rate_columns("wrong_sign_rate", "wrong / alt_comparisons"),
              _c("rope_comparisons", _I, "bayes: comparisons with |true difference| <= "
                 "`experiment.bayes_rope` (the true nulls included); null for `test`"),
              _c("equivalent_inside", _I, "bayes: of them, decided equivalent (correct); "
                 "null for `test`"),
              *rate_columns("equivalent_inside_rate", "equivalent_inside / rope_comparisons"),
              _c("equivalent_outside", _I, "bayes: comparisons with |true difference| > "
                 "`experiment.bayes_rope` decided equivalent (an error); null for `test`"),
              _c("equivalent_outside_rate", _F, "equivalent_outside / the comparisons with "
                 "|true difference| > rope (NaN if none)"),
              _c("undecided_rate", _F, "bayes: comparisons decided undecided / all "
                 "comparisons; null for `test`"),
          ], when="only with `experiment.bayes` set (not empty)"),
    _spec("multiple_testing_fit", ("multiple_testing",), "One row per metric: how the "
          "collection generator of `multiple_testing` was fit.", [
              METRIC,
              _c("margin", _S, "margin kind: `kernel` or `empirical`"),
              _c("support", _S, "discrete support detected (e.g. `grid 1/10`); empty if none"),
              _c("dependence", _S, "copula across all systems: `gaussian` or `vine`"),
              _c("systems", _I, "systems a collection draws from (the pool)"),
              _c("dropped", _I, "systems left out (duplicates, `experiment.drop_bottom`, or "
                 "a margin that cannot reach the true means)"),
              _c("null_mean", _F, "common true mean of the null systems"),
              _c("spread", _F, "the other systems' true means are null_mean + spread k / m1, "
                 "k = 1..m1"),
              _c("shrinkage", _F, "gaussian: weight lambda of the equicorrelation target in the "
                 "shrunk normal-score correlation (0: none needed; 0 for the vine)"),
              _c("corr_mean", _F, "mean normal-score correlation of the pool's system pairs"),
              _c("min_eigenvalue", _F, "smallest eigenvalue of the copula correlation (vine: of "
                 "the unshrunk normal-score correlation)"),
              _c("vine_truncation", _I, "vine: trees fitted (-1 for gaussian)"),
              _c("vine_loglik", _F, "vine: log-likelihood of the fit (NaN for gaussian)"),
          ]),
)
