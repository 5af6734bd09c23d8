"""The tables of ``experiment=factorial``: the ANOVA of every design with effect sizes, the
REML variance components, every system pair under every design, model and method, and the
count of pairs each calls significant (Voorhees, Samarov & Soboroff 2017's central
table)."""

from __future__ import annotations

import pyarrow as pa

from irsim.tables import Column, TableSpec, rate_columns

__all__ = ["ANOVA", "COMPONENTS", "PAIRS", "SIGNIFICANT", "MEANS", "TRUTH", "SPLIT_HALF",
           "TABLE_SPECS"]

_S, _F, _I, _B = pa.string(), pa.float64(), pa.int64(), pa.bool_()
_STUDY = ("factorial",)
_METRIC = Column("metric", _S, "metric")
_DESIGN = Column("design", _S, "`two_way` (the whole collection: one score per system and "
                 "topic), `replicated` (replicates not matched across cells) or `crossed` "
                 "(replicate r is the same document shard for every run and topic)")
_MODEL = Column("model", _S, "`fixed` (every term tested against the residual) or `mixed` "
                "(systems fixed, every other factor random); null for the permutation and "
                "paired-t methods, which need no model of the error")


def _interval(name: str, what: str) -> tuple[Column, Column, Column]:
    return (Column(name, _F, what),
            Column(f"{name}_lo", _F, f"lower limit of the noncentral-F interval of `{name}` at "
                                     "`1 - alpha`"),
            Column(f"{name}_hi", _F, "upper limit of that interval"))


ANOVA = TableSpec(
    "factorial_anova", _STUDY,
    "The ANOVA table of every design and model per metric: one row per term with its sums "
    "of squares, F test against the model's error term and effect sizes with intervals.",
    (_METRIC, _DESIGN, _MODEL,
     Column("term", _S, "`system`, `topic`, `replicate`, their interactions (`system:topic`, "
                        "...) or `residual`"),
     Column("df", _F, "degrees of freedom of the term"),
     Column("ss", _F, "sum of squares"),
     Column("ms", _F, "mean square `ss / df`"),
     Column("f", _F, "F statistic `ms / ms_error` (null for the residual, or where the "
                     "mixed model's error combination is not positive)"),
     Column("p_value", _F, "p-value of the F test (null where `f` is)"),
     Column("error", _S, "the term's error term: `residual`, or under `mixed` the "
                         "combination of mean squares with the term's expectation but its "
                         "own component"),
     Column("df_error", _F, "degrees of freedom of the error (Satterthwaite's for a "
                            "combination)"),
     Column("omega2", _F, "omega squared (may be negative: an effect smaller than chance)"),
     *_interval("partial_omega2", "partial omega squared (Ferro & Silvello's omega squared of "
                                  "a factor)"),
     *_interval("partial_eta2", "partial eta squared")))

COMPONENTS = TableSpec(
    "factorial_components", _STUDY,
    "REML variance components of each design's mixed model (systems fixed, every other term "
    "random) per metric.",
    (_METRIC, _DESIGN,
     Column("component", _S, "a random term (`topic`, `system:topic`, `replicate`, ..., "
                             "`residual`)"),
     Column("variance", _F, "its REML variance (>= 0)"),
     Column("anova_estimate", _F, "the ANOVA (expected mean squares) estimate, which may be "
                                  "negative; equal to `variance` unless `boundary`"),
     Column("share", _F, "`variance` over the sum of the design's components"),
     Column("boundary", _B, "REML was refitted with some component at 0 (an ANOVA estimate "
                            "was negative)")))

PAIRS = TableSpec(
    "factorial_pairs", _STUDY,
    "Every pair of systems per metric, design, model and method: the difference of the means, "
    "its simultaneous interval, Sakai's standardised effect and the decision.",
    (_METRIC, _DESIGN, _MODEL,
     Column("method", _S, "`tukey` (Tukey HSD with the design's error term), "
                          "`randomised_tukey` (one permutation null for all pairs) or "
                          "`t_holm` (paired t-tests over all pairs, Holm-corrected, as the "
                          "other studies test; two_way only) or `beta_holm` (beta "
                          "regression with system and topic effects, Wald tests of the "
                          "system differences, Holm-corrected; two_way and replicated; "
                          "topics where every run scores 0, or every run 1, are left out of "
                          "its fit)"),
     Column("system_a", _S, "first system of the pair (data order)"),
     Column("system_b", _S, "second system"),
     Column("diff", _F, "mean of `system_a` minus mean of `system_b` over the design's cells "
                        "(beta_holm: of the fitted means)"),
     Column("ci_lo", _F, "lower limit of the simultaneous `1 - alpha` interval (tukey: the "
                         "studentized range; randomised_tukey: the critical range of its "
                         "permutation null); null for t_holm and beta_holm"),
     Column("ci_hi", _F, "upper limit of that interval"),
     Column("effect", _F, "`diff / sqrt(ms_error)` (tukey: Sakai's ES_E with the design's "
                          "error mean square), `diff / sd` of the per-topic differences "
                          "(t_holm) or the log odds ratio of the two systems' means "
                          "(beta_holm); null for randomised_tukey"),
     Column("p_value", _F, "family-wise adjusted p-value (tukey: only with "
                           "`pair_pvalues=true`, a numerical integral per pair; else null)"),
     Column("significant", _B, "tukey: the interval excludes 0; the others: `p_value < "
                               "alpha`")))

SIGNIFICANT = TableSpec(
    "factorial_significant", _STUDY,
    "How many system pairs each design, model and method calls significant per metric, on the "
    "same runs (Voorhees et al. 2017's table: with and without replicates).",
    (_METRIC, _DESIGN, _MODEL, PAIRS.columns[3],
     Column("replicates", _I, "replicates per cell (1 for two_way)"),
     Column("pairs", _I, "system pairs"),
     Column("significant", _I, "pairs called significant"),
     Column("share", _F, "`significant / pairs`")))

MEANS = TableSpec(
    "factorial_means", _STUDY,
    "Mean score of every system on the two-way table and on each replicate per metric (the "
    "points of the interaction plot).",
    (_METRIC, Column("system", _S, "system (run)"),
     Column("replicate", _S, "the replicate: a document shard (`0` to `shards - 1`), a "
                             "qrels' name or a run's replicate name; null for the two-way "
                             "table"),
     Column("mean", _F, "mean over the topics"),
     Column("empty_topics", _I, "topics without a relevant document in the replicate (a "
                                "shard's, a qrels'; every run scores 0 there); 0 for the "
                                "two-way table")))

def _rate(name: str, what: str) -> tuple[Column, Column, Column]:
    return rate_columns(name, what, level="level `1 - alpha`", count="trials are the unit")


TRUTH = TableSpec(
    "factorial_truth", _STUDY,
    "Known truth calibrated on the collection: on simulated collections with its variance "
    "components, topics and shards, and known system effects (some equal), the family-wise "
    "error and power of each design and model.",
    (_METRIC,
     Column("method", _S, "`two_way` (Tukey HSD on one shard: a collection without "
                          "replicates), `replicated_fixed`, `replicated_mixed`, "
                          "`crossed_fixed`, `crossed_mixed` (Tukey HSD with that design's "
                          "error term) or `paired_t_holm` (paired t-tests with Holm on one "
                          "shard)"),
     Column("systems", _I, "simulated systems (`truth_systems` runs spread over the ranking)"),
     Column("null_pairs", _I, "pairs whose true effects are equal"),
     Column("trials", _I, "simulated collections"),
     Column("alpha", _F, "level of every test (`alpha`)"),
     *_rate("fwer", "family-wise error: share of trials with a null pair called significant "
                    "(null without null pairs)"),
     *_rate("power", "share of the truly different pairs called significant with the right "
                     "sign, averaged over trials"),
     *_rate("type_s", "share of the truly different pairs called significant with the wrong "
                      "sign"),
     Column("sd_topic", _F, "simulated topic standard deviation (REML, crossed design)"),
     Column("sd_interaction", _F, "simulated system x topic standard deviation"),
     Column("sd_replicate", _F, "simulated shard standard deviation"),
     Column("sd_system_replicate", _F, "simulated system x shard standard deviation"),
     Column("sd_topic_replicate", _F, "simulated topic x shard standard deviation"),
     Column("sd_residual", _F, "simulated residual standard deviation")))

SPLIT_HALF = TableSpec(
    "factorial_split_half", _STUDY,
    "Ferro & Sanderson's consistency: the collection's topics split at random into two "
    "halves, how often both reach the same ANOVA and Tukey conclusions.",
    (_METRIC, _DESIGN, _MODEL,
     Column("trials", _I, "random splits"),
     *_rate("system_agree", "share of splits whose halves agree on whether the system effect "
                            "is significant"),
     *_rate("pair_agree", "share of system pairs with the same Tukey decision in both halves "
                          "(significant in the same direction, or not significant), averaged "
                          "over splits")))

TABLE_SPECS = (SIGNIFICANT, ANOVA, COMPONENTS, PAIRS, MEANS, TRUTH, SPLIT_HALF)
