"""The tables of the assessors study: every :class:`~irsim.tables.TableSpec` it writes
(registered with the study, ``tables=TABLE_SPECS``)."""

from __future__ import annotations

import pyarrow as pa

from irsim.tables import Column, TableSpec

__all__ = ["TABLE_SPECS", "LABEL_AGREEMENT", "LABEL_AGREEMENT_TOPIC", "CONFUSION",
           "RANK_AGREEMENT", "SYSTEM_MEANS", "DECISION_AGREEMENT", "BAYES_DECISION_AGREEMENT",
           "ASSESSOR_GSTUDY", "ASSESSOR_DSTUDY", "ASSESSOR_MODEL", "SIMULATED_TRIALS",
           "SIMULATED_AGREEMENT", "ASSESSOR_PLANNING", "ASSESSOR_PLANNING_ANSWER",
           "ASSESSOR_SWAP"]


def _c(name: str, typ: pa.DataType, meaning: str) -> Column:
    return Column(name, typ, meaning)


_S, _F, _I, _B = pa.string(), pa.float64(), pa.int64(), pa.bool_()
_PAIR = (_c("qrels_a", _S, "the first qrels of the pair (the reference when it is one of "
                           "the two)"),
         _c("qrels_b", _S, "the second qrels (another assessor, an LLM's labels, or a "
                           "composite `mix<d...>` of topic groups)"))
_STAT = (_c("labels", _S, "`graded`: the grades as given; `binary`: grades binarised at "
                          "`experiment.rel` (relevant when grade >= rel)"),
         _c("statistic", _S, "`kappa`: Cohen's kappa; `kappa_linear` / `kappa_quadratic`: "
                             "weighted by the linear / squared distance of the grades' "
                             "positions on the scale; `alpha_ordinal`: Krippendorff's alpha, "
                             "ordinal distance; `fleiss_reference`: Fleiss' kappa of the two "
                             "qrels and the reference on the passages all three judged, the "
                             "reference counted once or once per assessor "
                             "(`experiment.fleiss_reference`; NaN for a pair with the "
                             "reference or a composite; no pooled interval)"))

LABEL_AGREEMENT = TableSpec(
    "label_agreement", ("assessors",),
    "Agreement of two qrels' labels on the (topic, passage) pairs both judged, per "
    "statistic: mean over topics and pooled over topics, each with a bootstrap-over-topics "
    "percentile interval.",
    (*_PAIR, *_STAT,
     _c("topics", _I, "topics with a defined per-topic value (a topic whose labels use one "
                      "category has no chance disagreement: left out)"),
     _c("items", _I, "(topic, passage) pairs judged by both"),
     _c("mean", _F, "mean over those topics of the per-topic statistic (the SIGIR 2025 "
                    "paper's per-pair figure for binary kappa)"),
     _c("low", _F, "lower bound of the bootstrap-over-topics percentile interval of `mean` "
                   "(`experiment.B` resamples, level 1 - `experiment.alpha`; NaN with fewer "
                   "than 2 topics)"),
     _c("high", _F, "upper bound of that interval"),
     _c("pooled", _F, "the statistic on all pairs both judged, pooled over topics"),
     _c("pooled_low", _F, "lower bound of the bootstrap-over-topics interval of `pooled` "
                          "(the statistic of each resample's pooled confusion matrix; the "
                          "same resampled topics for every statistic of the pair)"),
     _c("pooled_high", _F, "upper bound of that interval")))

LABEL_AGREEMENT_TOPIC = TableSpec(
    "label_agreement_topic", ("assessors",),
    "Agreement of two qrels' labels on one topic (the per-topic values behind "
    "`label_agreement`'s means).",
    (*_PAIR, *_STAT,
     _c("topic", _S, "topic id"),
     _c("items", _I, "passages of the topic judged by both"),
     _c("value", _F, "the statistic on the topic (NaN: no chance disagreement)")))

CONFUSION = TableSpec(
    "confusion", ("assessors",),
    "Confusion matrix of two qrels' grades on the pairs both judged, all topics pooled.",
    (*_PAIR,
     _c("grade_a", _I, "grade given by `qrels_a`"),
     _c("grade_b", _I, "grade given by `qrels_b`"),
     _c("count", _I, "(topic, passage) pairs with these two grades")))

_QM = (_c("qrels", _S, "the other qrels (compared with `experiment.reference`)"),
       _c("metric", _S, "evaluation metric"))

RANK_AGREEMENT = TableSpec(
    "rank_agreement", ("assessors",),
    "Agreement of the system rankings by mean score under the reference and under another "
    "qrels, on the other qrels' topics.",
    (*_QM,
     _c("topics", _I, "topics of the comparison (those the other qrels judged)"),
     _c("systems", _I, "runs ranked"),
     _c("tau_b", _F, "Kendall's tau-b between the two rankings"),
     _c("tau_b_low", _F, "lower bound of its bootstrap-over-topics percentile interval (the "
                         "same resampled topics for both qrels)"),
     _c("tau_b_high", _F, "upper bound"),
     _c("tau_ap", _F, "AP rank correlation tau_AP (Yilmaz et al. 2008), the reference "
                      "ranking as the truth: swaps near the top cost more (tied systems: "
                      "the mean over their orders)"),
     _c("tau_ap_low", _F, "lower bound of its interval"),
     _c("tau_ap_high", _F, "upper bound"),
     _c("spearman", _F, "Spearman's rho between the system means"),
     _c("spearman_low", _F, "lower bound of its interval"),
     _c("spearman_high", _F, "upper bound"),
     _c("top1", _B, "the best system is the same under both (ties: the first run)"),
     _c("top_k", _I, "k of `top_k_overlap` (`experiment.top_k`, at most the systems)"),
     _c("top_k_overlap", _F, "share of the reference's k best systems among the other's k "
                             "best"),
     _c("max_move", _I, "the largest rank move of a system, in absolute value"),
     _c("max_mover", _S, "the system that moves most (ties: the better reference rank)"),
     _c("mean_abs_move", _F, "mean absolute rank move over systems")))

SYSTEM_MEANS = TableSpec(
    "system_means", ("assessors",),
    "Each system's mean score and rank under the reference and under another qrels, on the "
    "other qrels' topics.",
    (*_QM,
     _c("system", _S, "run"),
     _c("reference_mean", _F, "mean over the topics under the reference (means equal in "
                              "exact arithmetic are one value: the tie rule)"),
     _c("mean", _F, "mean over the same topics under `qrels` (the same rule)"),
     _c("reference_rank", _I, "rank under the reference (1 = best; ties share the best "
                              "rank)"),
     _c("rank", _I, "rank under `qrels`"),
     _c("move", _I, "`reference_rank - rank`: positive = the system moves up under `qrels`")))

DECISION_AGREEMENT = TableSpec(
    "decision_agreement", ("assessors",),
    "Agreement of the significance decisions on every pair of systems under the reference "
    "and under another qrels (same topics, same test and correction).",
    (*_QM,
     _c("test", _S, "significance test (`experiment.tests`)"),
     _c("correction", _S, "multiple-comparison correction over all system pairs (`none` "
                          "only for Tukey HSD tests, which control the family-wise error "
                          "themselves)"),
     _c("pairs", _I, "system pairs"),
     _c("both", _I, "pairs significant (adjusted p <= `experiment.alpha`) under both, "
                    "with the same sign of the mean difference"),
     _c("neither", _I, "pairs significant under neither"),
     _c("lost", _I, "pairs significant only under the reference"),
     _c("gained", _I, "pairs significant only under `qrels` (the 'false positives' of "
                      "another assessor, taking the reference as the truth)"),
     _c("opposite", _I, "pairs significant under both with opposite signs"),
     _c("agreement", _F, "`(both + neither) / pairs`"),
     _c("power_reference", _F, "discriminative power under the reference: significant "
                               "pairs / pairs"),
     _c("power", _F, "discriminative power under `qrels`")))

BAYES_DECISION_AGREEMENT = TableSpec(
    "bayes_decision_agreement", ("assessors",),
    "Agreement of the Bayesian decisions (`experiment.bayes`) on every pair of systems under "
    "the reference and under another qrels (same topics, same rule): a pair is 'different' "
    "when the rule decides better or worse; empty without `experiment.bayes`.",
    (*_QM,
     _c("test", _S, "Bayesian test (`experiment.bayes`)"),
     _c("rule", _S, "its decision rule"),
     _c("pairs", _I, "system pairs"),
     _c("both", _I, "pairs decided different under both, in the same direction"),
     _c("neither", _I, "pairs decided different under neither"),
     _c("lost", _I, "pairs decided different only under the reference"),
     _c("gained", _I, "pairs decided different only under `qrels`"),
     _c("opposite", _I, "pairs decided different under both, in opposite directions"),
     _c("equivalent_reference", _I, "pairs decided equivalent under the reference"),
     _c("equivalent", _I, "pairs decided equivalent under `qrels`"),
     _c("same_decision", _I, "pairs with the same decision (better, worse, equivalent or "
                             "undecided) under both"),
     _c("agreement", _F, "`(both + neither) / pairs`"),
     _c("sensitivity_reference", _F, "share of pairs decided different under the "
                                     "reference"),
     _c("sensitivity", _F, "share of pairs decided different under `qrels`")))

ASSESSOR_GSTUDY = TableSpec(
    "assessor_gstudy", ("assessors",),
    "G-study of systems x topics x assessors (fully crossed, all facets random): the "
    "variance components of the scores by the ANOVA (expected mean squares) estimators "
    "(Brennan 2001), one row per component.",
    (_c("metric", _S, "evaluation metric"),
     _c("levels", _S, "the qrels that are the assessor facet's levels, comma-separated "
                      "(`experiment.g_assessors`; default: the reference and the parallel "
                      "composites, member j of every group)"),
     _c("systems", _I, "runs (every run of the study)"),
     _c("topics", _I, "topics judged under every level"),
     _c("assessors", _I, "levels of the assessor facet"),
     _c("component", _S, "`system`, `topic`, `assessor` (systematic difference between the "
                         "levels: a lenient or strict assessor), `system_topic`, "
                         "`system_assessor` (an assessor favours some systems over all "
                         "topics), `topic_assessor` (an assessor is lenient on some topics), "
                         "`residual` (system x topic x assessor interaction confounded with "
                         "error)"),
     _c("df", _I, "degrees of freedom of the component's term"),
     _c("mean_square", _F, "mean square of the term in the three-way ANOVA"),
     _c("variance", _F, "estimated variance component (a negative estimate is set to 0)"),
     _c("share", _F, "`variance` / the sum of the seven components"),
     _c("variance_low", _F, "lower bound of the bootstrap-over-topics percentile interval "
                            "of `variance` (`experiment.B` resamples of the topics with "
                            "replacement, the same for every system and assessor: Brennan's "
                            "boot-t; level 1 - `experiment.alpha`)"),
     _c("variance_high", _F, "upper bound of that interval"),
     _c("negative", _B, "the raw estimate was negative (set to 0; the other components are "
                        "estimated from the mean squares, not from the clipped value)")))

ASSESSOR_DSTUDY = TableSpec(
    "assessor_dstudy", ("assessors",),
    "D-study of the assessor G-study: reliability of a collection with `topics` topics and "
    "`assessors` assessors judging each topic (their scores averaged).",
    (_c("metric", _S, "evaluation metric"),
     _c("design", _S, "`nested`: every topic gets its own assessors (TREC's practice; the "
                      "assessor components average over topics and assessors); `crossed`: "
                      "the same assessors judge every topic (`system_assessor` and "
                      "`assessor` average over assessors only)"),
     _c("topics", _I, "topics of the planned collection (1 .. `experiment.max_topics`)"),
     _c("assessors", _I, "assessors per topic (1 .. `experiment.max_assessors`)"),
     _c("e_rho2", _F, "generalizability coefficient E(rho^2) (relative decisions: ranking "
                      "systems)"),
     _c("phi", _F, "dependability index Phi (absolute scores)"),
     _c("e_rho2_low", _F, "lower bound of the bootstrap-over-topics percentile interval of "
                          "`e_rho2` (the G-study's resampled components; as "
                          "`assessor_gstudy`'s intervals)"),
     _c("e_rho2_high", _F, "upper bound of that interval"),
     _c("phi_low", _F, "lower bound of the interval of `phi`"),
     _c("phi_high", _F, "upper bound of the interval of `phi`")))

_SIM_KEYS = (_c("qrels", _S, "the qrels the assessor model is fitted from "
                            "(`experiment.simulate_from`), against the reference"),
             _c("metric", _S, "evaluation metric"),
             _c("correction", _S, "multiple-comparison correction of the paired t test over "
                                  "all system pairs (`experiment.corrections`)"))

ASSESSOR_MODEL = TableSpec(
    "assessor_model", ("assessors",),
    "The simulated assessor: P(other grade | reference grade) fitted from the passages the "
    "reference and `simulate_from` both judged, with Dirichlet smoothing "
    "(`experiment.simulate_prior` pseudo-counts per cell).",
    (_SIM_KEYS[0],
     _c("topic", _S, "`all`: the pooled model; a topic id: its row of the per-topic model "
                     "(`experiment.simulate_per_topic`)"),
     _c("depth", _S, "`all`: every rank depth; else the depth bin of the passages' best "
                     "rank (`1-10`, `11-100`, `>100`: `experiment.simulate_depth`)"),
     _c("grade_reference", _I, "the reference's grade (the row)"),
     _c("grade", _I, "the other assessor's grade"),
     _c("count", _I, "passages judged with these two grades"),
     _c("probability", _F, "P(grade | grade_reference): pooled (count + prior) / (row count "
                           "+ L prior); a depth bin's row shrunk towards the pooled row with L "
                           "prior pseudo-observations; a topic's row (count + concentration x "
                           "pooled or bin row) / (row count + concentration)"),
     _c("concentration", _F, "the per-topic model's concentration of this reference grade "
                             "(`experiment.simulate_concentration` or its maximum-likelihood "
                             "estimate); NaN for pooled and bin rows")))

SIMULATED_TRIALS = TableSpec(
    "simulated_trials", ("assessors",),
    "One simulated assessor per trial (the reference's judgments relabelled by the assessor "
    "model) against the reference, on all topics of `simulate_from`.",
    (*_SIM_KEYS,
     _c("trial", _I, "trial index (0 .. `experiment.simulate_trials` - 1)"),
     _c("tau_b", _F, "Kendall's tau-b between the system rankings by mean score under the "
                     "reference and under the simulated qrels"),
     _c("kappa", _F, "Cohen's kappa (graded, unweighted) between the reference's and the "
                     "simulated grades on the passages the model was fitted on"),
     _c("kappa_binary", _F, "the same, grades binarised at `experiment.rel`"),
     _c("agreement", _F, "share of system pairs whose t-test decision (significant with a "
                         "sign, or not) is the same under both qrels"),
     _c("both", _F, "share of pairs significant under both with the same sign"),
     _c("neither", _F, "share significant under neither"),
     _c("lost", _F, "share significant only under the reference"),
     _c("gained", _F, "share significant only under the simulated qrels"),
     _c("opposite", _F, "share significant under both with opposite signs"),
     _c("power_reference", _F, "discriminative power under the reference (significant "
                               "pairs / pairs)"),
     _c("power", _F, "discriminative power under the simulated qrels")))

SIMULATED_AGREEMENT = TableSpec(
    "simulated_agreement", ("assessors",),
    "Distribution over the simulated assessors of each statistic of `simulated_trials`, and "
    "the value observed between the reference and `simulate_from` (the model's validation: "
    "with `experiment.simulate_relabel=judged` the observed value is one draw of the same "
    "process if the model is right).",
    (*_SIM_KEYS,
     _c("statistic", _S, "a column of `simulated_trials` (tau_b, kappa, kappa_binary, "
                         "agreement, lost, gained, power_reference, power)"),
     _c("trials", _I, "simulated assessors"),
     _c("observed", _F, "the statistic between the reference and `simulate_from` (the "
                        "`rank_agreement` tau_b, the pooled kappas of the fitted passages, "
                        "the t test's decision agreement)"),
     _c("mean", _F, "mean over trials"),
     _c("sd", _F, "standard deviation over trials"),
     _c("mc_se", _F, "Monte Carlo standard error of `mean` (sd / sqrt(trials))"),
     _c("q025", _F, "2.5% quantile over trials"),
     _c("q05", _F, "5% quantile over trials"),
     _c("q50", _F, "median"),
     _c("q95", _F, "95% quantile"),
     _c("q975", _F, "97.5% quantile"),
     _c("observed_quantile", _F, "share of trials at or below `observed` (near 0 or 1: the "
                                 "observed value is unusual under the model)")))

ASSESSOR_PLANNING = TableSpec(
    "assessor_planning", ("assessors",),
    "Known truth by simulation: for a collection of `topics` topics (per trial a random subset "
    "of `simulate_from`'s topics or, beyond their number, a topic bootstrap: topics drawn with "
    "replacement, each copy judged by its own simulated assessor), how a simulated assessor's "
    "system ranking and t-test decisions agree with the reference's on the same topics.",
    (*_SIM_KEYS,
     _c("topics", _I, "topics of the collection (`experiment.planning_sizes`, and all "
                      "topics)"),
     _c("trials", _I, "simulated assessors (each with its own random topic set)"),
     _c("tau_mean", _F, "mean tau-b over trials"),
     _c("tau_q05", _F, "5% quantile of tau-b"),
     _c("tau_q50", _F, "median tau-b"),
     _c("tau_q95", _F, "95% quantile of tau-b"),
     _c("p_tau", _F, "share of trials with tau-b >= `experiment.tau_target`"),
     _c("agreement_mean", _F, "mean decision agreement of the t test"),
     _c("agreement_q05", _F, "5% quantile of the decision agreement"),
     _c("p_agreement", _F, "share of trials with agreement >= `experiment.agreement_target`"),
     _c("power_reference", _F, "mean discriminative power under the reference"),
     _c("power", _F, "mean discriminative power under the simulated qrels")))

ASSESSOR_PLANNING_ANSWER = TableSpec(
    "assessor_planning_answer", ("assessors",),
    "The planning answer: the fewest topics (of `experiment.planning_sizes` and all topics) "
    "with which a simulated assessor's ranking reaches the tau target (decisions: the "
    "agreement target) with probability `experiment.planning_probability`.",
    (*_SIM_KEYS,
     _c("tau_target", _F, "`experiment.tau_target`"),
     _c("topics_tau", _I, "smallest size with P(tau-b >= tau_target) >= probability (-1: "
                          "none of the sizes; more topics than the largest size are "
                          "needed)"),
     _c("agreement_target", _F, "`experiment.agreement_target`"),
     _c("topics_agreement", _I, "smallest size with P(agreement >= agreement_target) >= "
                                "probability (-1: none)"),
     _c("probability", _F, "`experiment.planning_probability`")))

ASSESSOR_SWAP = TableSpec(
    "assessor_swap", ("assessors",),
    "Swap rates under topic sampling per qrels (Voorhees and Buckley 2002, the rule of "
    "`experiment=swap`): how often two disjoint halves of a qrels' own topics order a system "
    "pair differently, and the difference required for 95% confidence.",
    (_c("qrels", _S, "the qrels (the reference, every other qrels and composite), each on its "
                     "own topics"),
     _c("metric", _S, "evaluation metric"),
     _c("topics", _I, "topics of the qrels"),
     _c("subset_size", _I, "topics per set: `topics // 2` (two disjoint sets per trial)"),
     _c("trials", _I, "pairs of topic sets (`experiment.swap_trials`)"),
     _c("comparisons", _I, "system pairs x trials"),
     _c("swaps", _I, "comparisons where the two sets disagree: opposite signs of the mean "
                     "difference, or exactly one of the two differences is 0"),
     _c("swap_rate", _F, "`swaps / comparisons` over all differences"),
     _c("required_diff", _F, "the smallest absolute difference (bins of 0.01, the last >= "
                             "0.20) from which every bin's swap rate is <= 5% (NaN: none)"),
     _c("sensitivity", _F, "share of comparisons with a difference >= `required_diff`")))

TABLE_SPECS = (LABEL_AGREEMENT, LABEL_AGREEMENT_TOPIC, CONFUSION, RANK_AGREEMENT,
               SYSTEM_MEANS, DECISION_AGREEMENT, ASSESSOR_GSTUDY, ASSESSOR_DSTUDY,
               ASSESSOR_MODEL, SIMULATED_TRIALS, SIMULATED_AGREEMENT, ASSESSOR_PLANNING,
               ASSESSOR_PLANNING_ANSWER, ASSESSOR_SWAP, BAYES_DECISION_AGREEMENT)
