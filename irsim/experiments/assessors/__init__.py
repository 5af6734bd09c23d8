"""assessors: whose judgments? How another assessor's qrels (a person, a crowd, an LLM) change
label agreement, system rankings and significance decisions (issue 27).

The study reads runs and several qrels of the same topics, one of them the ``reference``
(the official judgments). Every other qrels (and every composite built from topic
``groups``, one assessor per group) is compared with the reference three ways:

- **labels** (:data:`LABEL_AGREEMENT`): Cohen's kappa (unweighted, linear and quadratic
  weights) of the grades and of the grades binarised at ``rel``, and Krippendorff's alpha
  (ordinal), on the (topic, passage) pairs both judged; per topic
  (:data:`LABEL_AGREEMENT_TOPIC`), the mean over topics with a bootstrap-over-topics
  interval, and pooled over topics with its own interval; the grade confusion matrices
  (:data:`CONFUSION`). Every pair of the given qrels that shares a judged pair is compared,
  and every composite with the reference.
- **rankings** (:data:`RANK_AGREEMENT`, :data:`SYSTEM_MEANS`): per qrels and metric, the
  system means under the reference and under the other qrels on the other's topics;
  Kendall's tau-b, tau_AP and Spearman's rho with bootstrap-over-topics intervals
  (:func:`irsim.stats.kendall.rank_agreement`), top-1 and top-k agreement, rank moves.
- **conclusions** (:data:`DECISION_AGREEMENT`): per qrels, metric, test and correction, how
  the significance decisions on every pair of systems agree (significant under both with
  the same sign, under neither, lost, gained, opposite signs) and each qrels' discriminative
  power.
- **reliability** (:data:`ASSESSOR_GSTUDY`, :data:`ASSESSOR_DSTUDY`): a G-study of systems x
  topics x assessors (:func:`irsim.stats.gtheory.g_study3`) on the reference and the
  parallel composites (member j of every group; or ``g_assessors``) over the topics all of
  them judged, and its D-study (:func:`irsim.stats.gtheory.d_study3`): E(rho^2) and Phi for
  ``n_t`` topics and ``n_a`` assessors per topic, crossed and nested. Computed in
  ``finalize`` (no randomness; one vectorised call over all metrics).

The runs are parsed once and scored under every qrels in one vectorised pass
(:func:`irsim.metrics.multi.evaluate_many`); how a passage judged by the reference but not by
the other assessor counts is ``unjudged`` (:func:`irsim.metrics.multi.composite_qrels`).

Engine: one work item per label pair and per (qrels, metric); a shard is a block of items
(``engine.shard_items``). Every random draw is keyed by the item (:mod:`irsim.rng` through
:func:`irsim.sampling.topics.bootstrap_counts` and the tests' own streams), resampled means
are exact (:class:`irsim.exact.Exact`), so tables do not depend on the shard size or the
executor.
"""

from __future__ import annotations

import glob
import itertools
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.data.types import Qrels, Runs
from irsim.engine.base import Shard, block_ranges
from irsim.engine.partials import Count, Slab
from irsim.errors import ConfigError, InputError, param, unknown_name
from irsim.exact import Exact, exact_mean
from irsim.kit.bins import ABSOLUTE, bin_counts, is_swap, required_difference
from irsim.kit.common import BayesOptions, BayesRules, Shards
from irsim.metrics.multi import UNJUDGED_RULES, composite_qrels, evaluate_many
from irsim.params import fingerprint, option
from irsim.registry import data_kind, study
from irsim.rng import REPLICATE_BLOCK, blocked_draws
from irsim.sampling.subsets import set_means, subset_counts
from irsim.simulate.assessor import (
    AssessorModel,
    depth_bins,
    fit_assessor_model,
    simulate_grades,
)
from irsim.stats import agreement as agr
from irsim.stats.gtheory import COMPONENTS3, DESIGNS3, d_study3, g_study3, g_study3_bootstrap
from irsim.stats.kendall import (
    concordance,
    pair_signs,
    rank_agreement,
    ranks,
    tau_b,
    ties,
    top_k_overlap,
)
from irsim.stats.multiple import CORRECTIONS, reject
from irsim.stats.registry import SIMULTANEOUS, TESTS
from irsim.stats.ties import score_tolerance, snap_zero
from irsim.stats.ttest import paired_t
from irsim.tables import Column, TableSpec, table

log = logging.getLogger(__name__)

__all__ = ["Config", "AssessorInput", "AssessorData", "Assessors", "load_from_config",
           "load_from_python", "read_assessor_runs", "composites", "parallel_composites",
           "KIND", "LABEL_STATS", "CATEGORIES", "make"]

#: Random streams: label-agreement intervals, rank-agreement intervals, Monte Carlo tests.
LABEL_STREAM = "assessors/labels"
RANK_STREAM = "assessors/ranks"
TEST_STREAM = "assessors/tests"
#: Simulated assessors: the grades of every trial, and its random topic subsets.
SIM_STREAM = "assessors/simulate"
#: Bootstrap over topics of the assessor G-study.
GSTUDY_STREAM = "assessors/gstudy"
#: Topic sets of the swap rates per qrels.
SWAP_STREAM = "assessors/swap"
SUBSET_STREAM = "assessors/simulate/topics"
#: Simulated assessors: the topic bootstraps of the planning sizes beyond the topics.
BOOTSTRAP_STREAM = "assessors/simulate/bootstrap"
#: How a simulated assessor relabels the reference (``experiment.simulate_relabel``).
RELABEL_RULES = ("all", "judged")

#: (labels, statistic) rows of the label-agreement tables, in order.
LABEL_STATS = (("graded", "kappa"), ("graded", "kappa_linear"), ("graded", "kappa_quadratic"),
               ("graded", "alpha_ordinal"), ("binary", "kappa"), ("binary", "alpha_ordinal"))
_WEIGHTS = {"kappa": None, "kappa_linear": "linear", "kappa_quadratic": "quadratic"}
#: Decision categories of a system pair (reference vs other qrels).
CATEGORIES = ("both", "neither", "lost", "gained", "opposite")
#: Per trial, metric and size: tau-b, then per correction the decision counts.
_DEC = (*CATEGORIES, "sig_ref", "sig")
_LABEL_COLS = ("mean", "low", "high", "topics", "pooled", "pooled_low", "pooled_high",
               "items")
_RANK_COLS = ("tau_b", "tau_b_low", "tau_b_high", "tau_ap", "tau_ap_low", "tau_ap_high",
              "spearman", "spearman_low", "spearman_high", "top1", "top_k_overlap")
_RUN_SUFFIXES = (".txt", ".run", ".runs", ".res", ".trec", ".tsv", ".tab")


# ----------------------------------------------------------------------------- tables

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
                             "ordinal distance"))

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
                          "(kappas: resampled pooled confusion matrices; alpha: NaN, not "
                          "computed)"),
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
                      "ranking as the truth: swaps near the top cost more"),
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
     _c("reference_mean", _F, "mean over the topics under the reference"),
     _c("mean", _F, "mean over the same topics under `qrels`"),
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


# ----------------------------------------------------------------------------- config

@dataclass
class Config(BayesOptions):
    """Parameters of ``experiment=assessors``."""

    NOTES = {  # on the Bayesian options it inherits (irsim.params.parameters)
        "bayes": (
            "Their decisions on every pair are compared under the reference and each other "
            "qrels (table ``bayes_decision_agreement``); the Bayesian bootstrap's posterior "
            "draws: ``test_B``."),
    }

    name: str = option("assessors", "``assessors``.")
    reference: str = option(
        "nist", "Name of the reference qrels (a key of ``collection.qrels``; the official "
        "judgments).", tables="data")
    metrics: list[str] = option(
        ["AP", "nDCG@10", "P@10", "RR"], "Metrics of the rankings and decisions (trec_eval-exact "
        "names of :func:`irsim.evaluate`).", tables="data")
    rel: int = option(
        2, "Binarisation threshold: a grade ``>= rel`` is relevant (DL19's 0-3 scale: 2, as the "
        "SIGIR 2025 paper and the track's binary metrics).", tables="data")
    scale: list[int] | None = option(
        None, "The grade scale (categories of the kappas, in order). Default: the integers from "
        "the reference's lowest to its highest grade. A grade of another qrels outside it is an "
        "error.", tables="data")
    unjudged: str = option(
        "reference", "What a passage judged by the reference but not by the other assessor counts "
        "as when evaluating under the other qrels: ``reference`` (the reference's grade: the "
        "qrels differ only where the assessors disagree), ``nonrelevant`` (grade 0) or "
        "``condensed`` (unjudged; the other qrels' runs are evaluated on condensed lists, Sakai "
        "2007).", tables="data")
    groups: list[list[str]] | None = option(
        None, "Topic groups of assessors (each a list of qrels names whose members judged the "
        "same topics): adds every composite qrels made of one member per group, over the union of "
        "the groups' topics, named ``mix`` followed by the 1-based position of the member chosen "
        "in each group (``mix1211``; with a group of more than 9 members, ``mix1-2-11-1``). A "
        "topic judged by several groups is taken from the first group (in this order) that judged "
        "it.", tables="data")
    tests: list[str] = option(
        ["t", "randomisation"], "Significance tests (:data:`irsim.stats.TESTS`: t, wilcoxon, "
        "sign, randomisation, paired_bootstrap, unpaired_bootstrap, tukey_hsd, "
        "randomised_tukey_hsd).")
    corrections: list[str] = option(
        ["none", "holm"], "Multiple-comparison corrections over all system pairs "
        "(:data:`irsim.stats.CORRECTIONS`: none, bonferroni, holm, bh, by); Tukey HSD tests get "
        "``none`` only.")
    alpha: float = option(
        0.05, "Significance level of the tests; the intervals' level is ``1 - alpha``.")
    B: int = option(
        1000, "Bootstrap resamples of topics for every interval (label and rank agreement).")
    test_B: int = option(
        10000, "Replicates of the Monte Carlo tests (randomisation, bootstrap, randomised Tukey "
        "HSD; the randomisation test is exact when ``2**topics <= test_B``).")
    pvalue: str = option(
        "plus_one", "P-value of the Monte Carlo tests: ``plus_one`` (``(count + 1) / (B + 1)``, "
        "never 0, so corrections over many pairs stay valid) or ``count`` (``count / B``).")
    top_k: int = option(10, "k of the top-k agreement (capped at the number of systems).")
    g_assessors: list[str] | None = option(
        None, "The levels of the G-study's assessor facet (qrels names, given or composite; the "
        "reference may be one), over the topics all of them judged. Default: the reference and, "
        "with ``groups``, the parallel composites (member j of every group, j = 1 .. the smallest "
        "group's size: ``mix11..1``, ``mix22..2``, ...), which use each topic's judgments once "
        "each; without ``groups``, the reference and every other qrels. Fewer than 2 common "
        "topics: the G-study tables are left empty (a warning).", tables="data")
    max_topics: int = option(200, "The D-study covers 1 .. max_topics topics.")
    max_assessors: int = option(5, "The D-study covers 1 .. max_assessors assessors per topic.")
    simulate_trials: int = option(
        0, "Simulated assessors (known truth by simulation, :mod:`irsim.simulate.assessor`); 0 "
        "(the default) turns the simulation off.")
    simulate_from: str | None = option(
        None, "The qrels whose disagreement with the reference the assessor model is fitted from "
        "(a given or composite name). Default: the first composite with ``groups``, else the "
        "first other qrels.", tables="data")
    simulate_per_topic: bool = option(
        True, "Fit one confusion matrix per topic (the default: a Dirichlet-multinomial per topic "
        "centred on the pooled matrix, concentration ``simulate_concentration``) instead of one "
        "pooled matrix (which ignores that disagreement is correlated within topics and "
        "understates the observed rank agreement, docs/studies/assessors.md).", tables="data")
    simulate_prior: float = option(
        1.0, "Dirichlet pseudo-count per cell of the confusion matrix (1: add-one smoothing).",
        tables="data")
    simulate_relabel: str = option(
        "all", "Which reference judgments a simulated assessor relabels: ``all`` (every judgment "
        "of ``simulate_from``'s topics: a new assessor judging the whole pool, the planning "
        "question) or ``judged`` (only the passages ``simulate_from`` re-judged, the others keep "
        "the reference's grade: the process that produced the observed qrels with "
        "``unjudged=reference``, to validate the model).", tables="data")
    planning_sizes: list[int] | None = option(
        None, "Topic-set sizes of the planning table (>= 2); all topics are always added. A size "
        "up to the topics of ``simulate_from`` is a random subset of them; a larger one resamples "
        "them with replacement (topic bootstrap: every copy of a topic gets its own simulated "
        "assessor). Default: 5, 10, 15, ... below the topics.", tables="data")
    tau_target: float = option(0.9, "Target tau-b of the planning answer.")
    agreement_target: float = option(
        0.9, "Target decision agreement (t test) of the planning answer.")
    planning_probability: float = option(
        0.95, "Probability with which the planning answer must reach the target.")
    swap_trials: int = option(
        0, "Trials of the swap rates per qrels (two disjoint halves of the qrels' topics per "
        "trial; 0, the default, leaves ``assessor_swap`` empty).")
    simulate_concentration: float | None = option(
        None, "Concentration ``alpha`` of the per-topic assessor model (pseudo-observations of "
        "the pooled row in every topic's row; large: topics alike, small: each topic its own). "
        "Default (None): estimated per reference grade by maximum Dirichlet-multinomial marginal "
        "likelihood over the topics.", tables="data")
    simulate_depth: list[int] | None = option(
        [10, 100], "Upper edges of rank-depth bins: the model's rows are conditioned as well on "
        "the bin of the best rank any run gave the passage (``[10, 100]``: 1-10, 11-100, beyond "
        "100 or retrieved by no run, the default). None or empty: no depth bins.", tables="data")


# ----------------------------------------------------------------------------- loading

@dataclass(frozen=True)
class AssessorInput:
    """What the loaders read: runs and named qrels of the same topics.

    Attributes
    ----------
    runs : Runs
        One run per file, named by the file name (not the run tag: two runs of DL19 share
        the tag ``mono-electra``).
    qrels : dict of str to Qrels
        The qrels by name, in the order given.
    depth : int
        Ranked lists are cut at this many documents.
    """

    runs: Runs
    qrels: dict[str, Qrels]
    depth: int = 1000

    def describe(self) -> dict:
        """What the manifest records about the data."""
        return {"kind": "runs_qrels_set", "run_names": list(self.runs.names),
                "run_files": list(self.runs.sources),
                "qrels_files": {n: q.source for n, q in self.qrels.items()},
                "depth": self.depth}


def _run_name(p: Path) -> str:
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    stem, suffix = Path(name).stem, Path(name).suffix
    return stem if stem and suffix.lower() in _RUN_SUFFIXES else name


def _expand(spec: Any, what: str, data_dir: str | None = None) -> list[Path]:
    """Files of a path, a directory (its files), a glob pattern or a list of them; a
    relative path not found here is looked up in `data_dir`."""
    items = [spec] if isinstance(spec, str | os.PathLike) else list(spec)
    out: list[Path] = []
    for item in items:
        text = os.path.expanduser(str(item))
        roots = [text] + ([str(Path(data_dir) / text)]
                          if data_dir and not os.path.isabs(text) else [])
        hits: list[str] = []
        for root in roots:
            if any(ch in root for ch in "*?["):
                hits = sorted(h for h in glob.glob(root) if os.path.isfile(h))
            elif os.path.isdir(root):
                hits = sorted(str(p) for p in Path(root).iterdir()
                              if p.is_file() and not p.name.startswith("."))
            elif os.path.isfile(root):
                hits = [root]
            if hits:
                break
        if not hits:
            raise InputError(f"no {what} file found", file=text)
        out.extend(Path(h) for h in hits)
    return out


def read_assessor_runs(spec: Any, *, scores: str = "float32",
                       data_dir: str | None = None) -> Runs:
    """Read run files (a directory, glob, file or list), one run per file named by its file
    name without ``.gz`` and a results extension.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for f in ("a.txt", "b.txt"):  # the same tag in both files
    ...     _ = (d / f).write_text("1 Q0 x 1 1.0 same\\n")
    >>> read_assessor_runs(d).names
    ('a', 'b')
    """
    from irsim.data.trec import read_run

    if isinstance(spec, Runs):
        return spec
    files = _expand(spec, "run", data_dir)
    parts = [read_run(p, name=_run_name(p), scores=scores) for p in files]
    seen: dict[str, Path] = {}
    for p, r in zip(files, parts, strict=True):
        if r.names[0] in seen:
            raise InputError(f"run name {r.names[0]!r} is also used by {seen[r.names[0]]}",
                             file=p)
        seen[r.names[0]] = p
    counts = [len(r) for r in parts]
    return Runs(names=tuple(r.names[0] for r in parts),
                run=np.repeat(np.arange(len(parts), dtype=np.int32), counts),
                topic=np.concatenate([r.topic for r in parts]),
                docno=np.concatenate([r.docno for r in parts]),
                score=np.concatenate([r.score for r in parts]),
                sources=tuple(str(p) for p in files), precision=scores)


def _read_qrels_set(spec: Any, data_dir: str | None = None) -> dict[str, Qrels]:
    """Named qrels from a mapping (name -> path or Qrels) or from paths / globs / a
    directory (each file named by its stem)."""
    from irsim.data.trec import read_qrels

    if spec is None:
        raise ConfigError("qrels are required: a mapping of names to qrels files")
    if isinstance(spec, Mapping) or hasattr(spec, "items"):
        out = {}
        for name, value in dict(spec.items()).items():
            if isinstance(value, Qrels):
                out[str(name)] = Qrels(value.topic, value.docno, value.grade,
                                       source=value.source or str(name))
                continue
            files = _expand(value, "qrels", data_dir)
            if len(files) != 1:
                raise ConfigError(f"qrels {name!r} must name one file, got {len(files)}")
            out[str(name)] = read_qrels(files[0])
        if not out:
            raise ConfigError("qrels must name at least two qrels")
        return out
    out = {}
    for p in _expand(spec, "qrels", data_dir):
        name = _run_name(p)
        if name in out:
            raise InputError(f"two qrels files are named {name!r}", file=p)
        out[name] = read_qrels(p)
    return out


def load_from_config(cfg: Any, config: Config) -> AssessorInput:
    """The command line's data: ``collection.runs`` (a directory, glob, file or list) and
    ``collection.qrels`` (a mapping of names to files, or files / a glob named by their
    stems), relative paths also looked up in ``data_dir``."""
    col = cfg.collection
    if col.get("kind") != "trec":
        raise ConfigError("experiment=assessors reads TREC runs and qrels: use collection=trec "
                          "collection.runs=<dir or glob> +collection.qrels={name: file, ...}")
    data_dir = cfg.get("data_dir")
    data_dir = None if data_dir is None else str(data_dir)
    if col.get("runs") is None:
        raise ConfigError("collection.runs is required (a directory, glob or list of run "
                          "files)")
    runs = read_assessor_runs(col.runs, scores=str(col.get("scores") or "float32"),
                              data_dir=data_dir)
    return AssessorInput(runs, _read_qrels_set(col.get("qrels"), data_dir),
                         int(col.get("depth") or 1000))


def load_from_python(data: Any, keywords: Mapping[str, Any], config: Config) -> AssessorInput:
    """The Python door's data: ``irsim.assessors(runs=..., qrels={...}, reference=...)``;
    `data` may be an :class:`AssessorInput` (then no keywords)."""
    if isinstance(data, AssessorInput):
        return data
    if data is not None:
        raise ConfigError("irsim.assessors takes its data as keywords: runs=<files or Runs>, "
                          "qrels={name: file or Qrels, ...}")
    if keywords.get("runs") is None:
        raise ConfigError("runs is required (a directory, glob, list of run files or Runs)")
    runs = read_assessor_runs(keywords["runs"], scores=str(keywords.get("scores")
                                                            or "float32"))
    return AssessorInput(runs, _read_qrels_set(keywords.get("qrels")),
                         int(keywords.get("depth") or 1000))


KIND = data_kind("runs_qrels_set", description="runs and several qrels of the same topics",
                 from_config=load_from_config, from_python=load_from_python,
                 keywords={"runs": None, "qrels": None, "depth": 1000, "scores": "float32"})


# ----------------------------------------------------------------------------- prepared data

@dataclass(frozen=True)
class LabelPair:
    """Two qrels' jointly judged labels."""

    a: str
    b: str
    topic: np.ndarray  # (n,) topic ids
    grades: np.ndarray  # (n, 2)


@dataclass(frozen=True)
class SimSetup:
    """What the simulated assessors need (known truth by simulation).

    Attributes
    ----------
    name : str
        The qrels the model is fitted from.
    model : AssessorModel
    base : Qrels
        The reference's judgments of `name`'s topics (relabelled in every trial).
    relabel : ndarray of bool
        Which judgments of `base` a trial relabels.
    joint : ndarray of int
        Positions in `base` of the passages the model was fitted on (the trials' kappa).
    topics : tuple of str
        The topics compared (the reference's scored topics among `name`'s).
    reference : ndarray (metrics, systems, topics)
        The reference's scores on `topics`.
    sizes : tuple of int
        Topic-set sizes of the planning table (ascending; all topics among them; larger
        sizes are topic bootstraps).
    bins : ndarray of int
        Depth bin of every judgment of `base` (all 0 without depth bins).
    """

    name: str
    model: AssessorModel
    base: Qrels
    relabel: np.ndarray
    joint: np.ndarray
    topics: tuple[str, ...]
    reference: np.ndarray
    sizes: tuple[int, ...]
    bins: np.ndarray


@dataclass(frozen=True)
class AssessorData:
    """What the kernel reads.

    Attributes
    ----------
    reference : str
    others : tuple of str
        The qrels compared with the reference (given ones, then composites).
    metrics, systems : tuple of str
    scores : dict of str to ScoreMatrix
        Per-topic scores under every qrels (the reference over all its topics).
    pairs : tuple of LabelPair
        The label pairs.
    scale : ndarray
        Grade scale.
    rel : int
    """

    reference: str
    others: tuple[str, ...]
    metrics: tuple[str, ...]
    systems: tuple[str, ...]
    scores: dict[str, ScoreMatrix]
    pairs: tuple[LabelPair, ...]
    scale: np.ndarray
    rel: int
    source: AssessorInput
    g_levels: tuple[str, ...] = ()
    g_topics: tuple[str, ...] = ()
    sim: SimSetup | None = None

    @property
    def items(self) -> int:
        return len(self.pairs) + len(self.others) * len(self.metrics)

    def compared(self, j: int, m: int) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
        """Reference and other scores (systems x topics) of other qrels `j`, metric `m`, on
        the other's topics."""
        other = self.scores[self.others[j]]
        ref = self.scores[self.reference]
        col = [ref.topics.index(t) for t in other.topics]
        return ref.values[m][:, col], other.values[m], other.topics

    def describe(self) -> dict:
        return {**self.source.describe(), "reference": self.reference,
                "compared": list(self.others)}

    def g_scores(self) -> np.ndarray:
        """Scores of the G-study, shape (metrics, systems, topics, assessors): every level
        of the assessor facet on the common topics (empty without a G-study)."""
        if not self.g_levels:
            return np.empty((len(self.metrics), len(self.systems), 0, 0))
        cols = []
        for q in self.g_levels:
            sm = self.scores[q]
            pos = {t: i for i, t in enumerate(sm.topics)}
            cols.append(np.asarray(sm.values)[:, :, [pos[t] for t in self.g_topics]])
        return np.stack(cols, axis=-1)


def composites(qrels: Mapping[str, Qrels], groups: Sequence[Sequence[str]]
               ) -> dict[str, Qrels]:
    """Every qrels made of one member per topic group, over the groups' topics.

    A topic judged by several groups is taken from the first group that judged it.

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> q = lambda t, g: Qrels(obj(*t), obj(*("d",) * len(t)), np.array(g))
    >>> qs = {"a": q(["1", "3"], [1, 1]), "b": q(["1", "3"], [0, 0]),
    ...       "c": q(["2", "3"], [2, 2]), "d": q(["2", "3"], [3, 3])}
    >>> mix = composites(qs, [["a", "b"], ["c", "d"]])
    >>> list(mix), mix["mix12"].topic.tolist(), mix["mix12"].grade.tolist()
    (['mix11', 'mix12', 'mix21', 'mix22'], ['1', '2', '3'], [1, 3, 1])
    """
    topics_of = [set().union(*(set(np.asarray(qrels[m].topic).tolist()) for m in g))
                 for g in groups]
    owner: dict[str, int] = {}
    for gi, ts in enumerate(topics_of):
        for t in sorted(ts):
            owner.setdefault(t, gi)
    sep = "-" if any(len(g) > 9 for g in groups) else ""
    out = {}
    for picks in itertools.product(*(range(len(g)) for g in groups)):
        topic, docno, grade = [], [], []
        for gi, (g, k) in enumerate(zip(groups, picks, strict=True)):
            q = qrels[g[k]]
            t = np.asarray(q.topic, dtype=object)
            keep = np.array([owner[x] == gi for x in t.tolist()], dtype=bool)
            topic.append(t[keep])
            docno.append(np.asarray(q.docno, dtype=object)[keep])
            grade.append(np.asarray(q.grade, dtype=np.int64)[keep])
        name = "mix" + sep.join(str(k + 1) for k in picks)
        t, d, g = np.concatenate(topic), np.concatenate(docno), np.concatenate(grade)
        order = np.lexsort((d, t))
        out[name] = Qrels(t[order], d[order], g[order], source=name)
    return out


def _restrict(q: Qrels, topics: set[str]) -> Qrels:
    keep = np.isin(np.asarray(q.topic, dtype=object), list(topics))
    return Qrels(np.asarray(q.topic, dtype=object)[keep], np.asarray(q.docno, dtype=object)[keep],
                 np.asarray(q.grade)[keep], source=q.source)


def _check_names(config: Config, qrels: Mapping[str, Qrels]) -> None:
    if config.reference not in qrels:
        raise unknown_name(f"{param('reference')} (a name of the qrels)",
                           str(config.reference), list(qrels))
    if len(qrels) < 2:
        raise ConfigError("the study needs the reference and at least one other qrels")
    for g in config.groups or ():
        for m in g:
            if m not in qrels:
                raise unknown_name(f"qrels in {param('groups')}", str(m), list(qrels))
            if m == config.reference:
                raise ConfigError(f"{param('groups')} must not hold the reference "
                                  f"{config.reference!r}")
        if len(g) == 0:
            raise ConfigError(f"{param('groups')} holds an empty group")


def _check_config(config: Config) -> None:
    BayesRules.of(config)  # the Bayesian options, before anything is read
    if config.unjudged not in UNJUDGED_RULES:
        raise unknown_name(param("unjudged") + " rule", str(config.unjudged), UNJUDGED_RULES)
    for t in config.tests:
        if t not in TESTS:
            raise unknown_name(f"test in {param('tests')}", str(t), TESTS)
    for c in config.corrections:
        if c not in CORRECTIONS:
            raise unknown_name(f"correction in {param('corrections')}", str(c), CORRECTIONS)
    if not config.tests or not config.corrections or not config.metrics:
        raise ConfigError(f"{param('tests')}, {param('corrections')} and {param('metrics')} "
                          "must not be empty")
    if config.pvalue not in ("plus_one", "count"):
        raise unknown_name(param("pvalue") + " mode", str(config.pvalue), ("plus_one", "count"))
    if not 0.0 < float(config.alpha) < 1.0:
        raise ConfigError(f"{param('alpha')} must be in (0, 1), got {config.alpha}")
    for k in ("B", "test_B", "top_k", "max_topics", "max_assessors"):
        v = getattr(config, k)
        if isinstance(v, bool) or int(v) < 1:
            raise ConfigError(f"{param(k)} must be a positive integer, got {v!r}")
    for k in ("simulate_trials", "swap_trials"):
        v = getattr(config, k)
        if isinstance(v, bool) or int(v) < 0:
            raise ConfigError(f"{param(k)} must be an integer >= 0, got {v!r}")
    if config.simulate_relabel not in RELABEL_RULES:
        raise unknown_name(param("simulate_relabel") + " rule", str(config.simulate_relabel),
                           RELABEL_RULES)
    conc = config.simulate_concentration
    if conc is not None and (isinstance(conc, bool) or not isinstance(conc, int | float)
                             or not np.isfinite(conc) or conc <= 0):
        raise ConfigError(f"{param('simulate_concentration')} must be a number > 0 (or null: "
                          f"estimated), got {conc!r}")
    if config.simulate_depth:
        edges = list(config.simulate_depth)
        if (any(isinstance(e, bool) or not isinstance(e, int) for e in edges)
                or edges[0] < 1 or bool(np.any(np.diff(edges) <= 0))):
            raise ConfigError(f"{param('simulate_depth')} must be increasing ranks >= 1 "
                              f"(bin edges, e.g. [10, 100]), got {config.simulate_depth!r}")
    prior = config.simulate_prior
    if isinstance(prior, bool) or not float(prior) >= 0 or not np.isfinite(float(prior)):
        raise ConfigError(f"{param('simulate_prior')} must be a number >= 0, got {prior!r}")
    for k in ("tau_target", "agreement_target"):
        if not -1.0 <= float(getattr(config, k)) <= 1.0:
            raise ConfigError(f"{param(k)} must be in [-1, 1], got {getattr(config, k)}")
    if not 0.0 < float(config.planning_probability) < 1.0:
        raise ConfigError(f"{param('planning_probability')} must be in (0, 1), got "
                          f"{config.planning_probability}")


def _check_qrels(ref_name: str, ref: Qrels, name: str, q: Qrels, scale: np.ndarray) -> None:
    src = q.source or name
    g = np.asarray(q.grade)
    bad = ~np.isin(g, scale)
    if bad.any():
        raise InputError(f"grade {int(g[bad][0])} is outside the scale {scale.tolist()} "
                         f"(experiment scale)", file=src)
    ref_topics = set(np.asarray(ref.topic).tolist())
    other = set(np.asarray(q.topic).tolist()) - ref_topics
    if other:
        raise InputError(f"topic {sorted(other)[0]!r} is not judged in the reference "
                         f"{ref_name!r}", file=src)


def _prepare(config: Config, data: AssessorInput) -> AssessorData:
    qrels = dict(data.qrels)
    _check_names(config, qrels)
    ref_name = config.reference
    ref = qrels[ref_name]
    if config.scale is not None:
        scale = np.unique(np.asarray(list(config.scale), dtype=np.int64))
        if len(scale) < 2:
            raise ConfigError(f"{param('scale')} needs at least two grades")
    else:
        g = np.asarray(ref.grade, dtype=np.int64)
        scale = np.arange(int(g.min()), int(g.max()) + 1)
    _check_qrels(ref_name, ref, ref_name, ref, scale)
    given = [n for n in qrels if n != ref_name]
    for n in given:
        _check_qrels(ref_name, ref, n, qrels[n], scale)
    if not scale.min() < config.rel <= scale.max():
        raise ConfigError(f"{param('rel')}={config.rel} does not split the scale "
                          f"{scale.tolist()} into relevant and non-relevant grades")
    mixes = composites(qrels, config.groups) if config.groups else {}
    labelled = {**qrels, **mixes}

    # label pairs: every two given qrels sharing a judged pair; each composite with the ref
    pairs = []
    names = list(qrels)
    for a, b in itertools.combinations(names, 2):
        try:
            t, _, g = agr.joint_labels(qrels[a], qrels[b])
        except InputError as err:
            if "share no" not in err.problem:
                raise
            if ref_name in (a, b):
                raise InputError(f"qrels {b if a == ref_name else a!r} shares no judged "
                                 f"(topic, passage) pair with the reference {ref_name!r}",
                                 file=qrels[b if a == ref_name else a].source) from None
            continue
        pairs.append(LabelPair(a, b, t, g))
    for n, q in mixes.items():
        t, _, g = agr.joint_labels(ref, q)
        pairs.append(LabelPair(ref_name, n, t, g))

    # scores: the reference over all its topics, each other qrels over its own topics
    others = given + list(mixes)
    evalq = {ref_name: ref}
    for n in others:
        q = labelled[n]
        topics = set(np.asarray(q.topic).tolist())
        evalq[n] = composite_qrels(_restrict(ref, topics), q, unjudged=config.unjudged,
                                   source=q.source or n)
    cond = others if config.unjudged == "condensed" else ()
    try:
        scores = evaluate_many(data.runs, evalq, list(config.metrics), depth=data.depth,
                               missing="drop", condensed=cond)
    except ConfigError as err:
        raise ConfigError(f"{param('metrics')}: {err.problem}") from None
    levels, common = _g_levels(config, qrels, others, scores)
    sim = _sim_setup(config, ref, labelled, others, list(mixes), scores[ref_name], scale,
                     data) if int(config.simulate_trials) > 0 else None
    return AssessorData(ref_name, tuple(others), tuple(scores[ref_name].metrics),
                        tuple(data.runs.names), scores, tuple(pairs), scale, int(config.rel),
                        data, levels, common, sim)


def best_ranks(runs: Runs, topic: np.ndarray, docno: np.ndarray, depth: int) -> np.ndarray:
    """The best (smallest) rank any run gave each (topic, docno), ``inf`` when no run
    retrieved it within `depth`. Ranks follow trec_eval: score descending (at the runs'
    precision), ties by docno descending.

    Examples
    --------
    >>> r = Runs(("a", "b"), np.array([0, 0, 1, 1], np.int32), np.array(["1"] * 4, object),
    ...          np.array(["d1", "d2", "d1", "d2"], object), np.array([2.0, 1.0, 1.0, 1.0]))
    >>> best_ranks(r, np.array(["1", "1", "1"], object), np.array(["d1", "d2", "d3"], object),
    ...            100).tolist()  # run b ties d1, d2: d2 first (docno descending)
    [1.0, 1.0, inf]
    """
    score = np.asarray(runs.score, np.float64)
    if runs.precision == "float32":
        score = score.astype(np.float32).astype(np.float64)
    _, tcode = np.unique(np.asarray(runs.topic, dtype=object).astype(str), return_inverse=True)
    _, dcode = np.unique(np.asarray(runs.docno, dtype=object).astype(str), return_inverse=True)
    run = np.asarray(runs.run, np.int64)
    order = np.lexsort((-dcode, -score, tcode, run))
    grp = run[order] * (tcode.max() + 1) + tcode[order]
    pos = np.arange(len(order))
    first = np.maximum.accumulate(np.where(np.r_[True, grp[1:] != grp[:-1]], pos, 0))
    rank = np.empty(len(order), np.float64)
    rank[order] = pos - first + 1
    keep = rank <= depth
    key = _pd_index(np.asarray(runs.topic, dtype=object)[keep],
                    np.asarray(runs.docno, dtype=object)[keep])
    uniq = key.unique()
    code = uniq.get_indexer(key)
    mins = np.full(len(uniq), np.inf)
    np.minimum.at(mins, code, rank[keep])
    hit = uniq.get_indexer(_pd_index(np.asarray(topic, dtype=object),
                                     np.asarray(docno, dtype=object)))
    return np.where(hit >= 0, mins[np.maximum(hit, 0)], np.inf)


def _sim_setup(config: Config, ref: Qrels, labelled: Mapping[str, Qrels],
               others: Sequence[str], mixes: Sequence[str], ref_scores: ScoreMatrix,
               scale: np.ndarray, data: AssessorInput) -> SimSetup:
    """Fit the assessor model from the reference and ``simulate_from``; the judgments a
    trial relabels (and their depth bins); the planning sizes."""
    name = config.simulate_from
    if name is None:
        name = mixes[0] if mixes else others[0]
    name = str(name)
    if name not in others:
        raise unknown_name(f"{param('simulate_from')} (a qrels other than the reference)",
                           name, list(others))
    other = labelled[name]
    t, d, g = agr.joint_labels(ref, other)
    edges = tuple(int(e) for e in config.simulate_depth or ())
    own = set(np.asarray(other.topic).tolist())
    topics = tuple(x for x in ref_scores.topics if x in own)
    base = _restrict(ref, set(topics))
    bt = np.asarray(base.topic, dtype=object)
    bd = np.asarray(base.docno, dtype=object)
    if edges:
        bins = depth_bins(best_ranks(data.runs, bt, bd, data.depth), edges)
        jb = depth_bins(best_ranks(data.runs, np.asarray(t, dtype=object),
                                   np.asarray(d, dtype=object), data.depth), edges)
    else:
        bins, jb = np.zeros(len(bt), np.int64), None
    conc = config.simulate_concentration
    model = fit_assessor_model(g[:, 0], g[:, 1], scale, topics=t,
                               per_topic=bool(config.simulate_per_topic),
                               prior=float(config.simulate_prior),
                               concentration=None if conc is None else float(conc),
                               bins=jb, depth_edges=edges)
    key = _pd_index(bt, bd)
    joint = key.get_indexer(_pd_index(np.asarray(t, dtype=object), np.asarray(d, dtype=object)))
    joint = joint[joint >= 0]
    relabel = np.ones(len(bt), bool)
    if config.simulate_relabel == "judged":
        relabel[:] = False
        relabel[joint] = True
    T = len(topics)
    if T < 2:
        raise ConfigError(f"{param('simulate_from')}={name!r} shares {T} scored topic(s) "
                          "with the reference: the simulation needs >= 2")
    if config.planning_sizes is None:
        sizes = list(range(5, T, 5))
    else:
        sizes = [int(n) for n in config.planning_sizes]
        bad = [n for n in sizes if n < 2]
        if bad:
            raise ConfigError(f"{param('planning_sizes')} must be >= 2 (topics per "
                              f"collection), got {bad[0]}")
    col = [ref_scores.topics.index(x) for x in topics]
    return SimSetup(name, model, base, relabel, np.sort(joint), topics,
                    np.asarray(ref_scores.values)[:, :, col], tuple(sorted({*sizes, T})),
                    bins)


def _pd_index(topic: np.ndarray, docno: np.ndarray) -> Any:
    """A pandas MultiIndex of (topic, docno) pairs (for position lookups)."""
    import pandas as pd

    return pd.MultiIndex.from_arrays([topic.astype(str), docno.astype(str)])


def parallel_composites(groups: Sequence[Sequence[str]]) -> list[str]:
    """Names of the composites made of member j of every group, j = 1 .. the smallest
    group's size: each topic's judgments once each.

    Examples
    --------
    >>> parallel_composites([["a", "b"], ["c", "d", "e"]])
    ['mix11', 'mix22']
    """
    sep = "-" if any(len(g) > 9 for g in groups) else ""
    return ["mix" + sep.join(str(j + 1) for _ in groups)
            for j in range(min(len(g) for g in groups))]


def _g_levels(config: Config, qrels: Mapping[str, Qrels], others: Sequence[str],
              scores: Mapping[str, ScoreMatrix]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The G-study's assessor levels and the topics all of them judged (in the reference's
    order); () when fewer than 2 topics are common (a warning) or fewer than 1 level."""
    ref = config.reference
    if config.g_assessors is not None:
        levels = [str(q) for q in config.g_assessors]
        for q in levels:
            if q not in scores:
                raise unknown_name(f"qrels in {param('g_assessors')}", q, [ref, *others])
        if len(set(levels)) != len(levels) or not levels:
            raise ConfigError(f"{param('g_assessors')} must name distinct qrels, got "
                              f"{levels}")
    elif config.groups:
        levels = [ref, *parallel_composites(config.groups)]
    else:
        levels = [ref, *[q for q in qrels if q != ref]]
    common = set(scores[levels[0]].topics)
    for q in levels[1:]:
        common &= set(scores[q].topics)
    topics = tuple(t for t in scores[ref].topics if t in common)
    if len(topics) < 2:
        if config.g_assessors is not None:
            raise ConfigError(f"the qrels of {param('g_assessors')} share {len(topics)} "
                              "scored topic(s): the G-study needs >= 2")
        log.warning("the G-study's assessors (%s) share %d scored topic(s): no G-study "
                    "(set %s)", ", ".join(levels), len(topics), param("g_assessors"))
        return (), ()
    return tuple(levels), topics


# ----------------------------------------------------------------------------- kernels

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
        if stat == "alpha_ordinal":
            values.append(alpha_g if labels == "graded" else alpha_b)
        else:
            values.append(agr.kappa_from_confusion(graded if labels == "graded" else binary,
                                                   _WEIGHTS[stat]))
    return ids, items, values, (graded, binary)


def _label_row(pair: LabelPair, scale: np.ndarray, rel: int, *, B: int, level: float,
               seed: int, key: int) -> np.ndarray:
    """The :data:`_LABEL_COLS` of every :data:`LABEL_STATS` row of one label pair."""
    ids, items, values, (graded, binary) = label_values(pair, scale, rel)
    out = np.full((len(LABEL_STATS), len(_LABEL_COLS)), np.nan)
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
        if stat == "alpha_ordinal":
            g = pair.grades if labels == "graded" else (pair.grades >= rel).astype(float)
            out[r, 4] = agr.krippendorff_alpha(g, "ordinal") if len(np.unique(g)) > 1 \
                else np.nan
            continue
        counts = graded if labels == "graded" else binary
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
    if spec.kind == "all_pairs":
        return np.asarray(spec.function(x, **kw).pvalue, np.float64)
    ia, ib = np.triu_indices(x.shape[0], 1)
    p = np.asarray(spec.function(x[ia], x[ib], **kw).pvalue, np.float64).reshape(len(ia))
    if test == "t":  # identical runs: scipy's NaN is no evidence of a difference
        p = np.nan_to_num(p, nan=1.0)
    return p


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


#: The counts of :func:`bayes_decision_counts`.
_BAYES_COUNTS = (*CATEGORIES, "equivalent_reference", "equivalent", "same_decision",
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


# ----------------------------------------------------------------------------- simulation

#: Bytes of one block of pair differences in :func:`trial_stats`.
_SIM_BYTES = 32 * 2**20


def trial_stats(xs: np.ndarray, ys: np.ndarray, *, alpha: float,
                corrections: Sequence[str]) -> np.ndarray:
    """Per trial: tau-b of the system rankings of `xs` and `ys` and, per correction, the
    paired t test's decision counts (:data:`CATEGORIES`, then the significant pairs under
    each).

    Parameters
    ----------
    xs, ys : ndarray (trials, systems, topics)
        Reference and simulated scores on each trial's topics.

    Returns
    -------
    ndarray (trials, 1 + len(corrections) * 7)

    Examples
    --------
    >>> x = np.array([[[0.1, 0.2, 0.3], [0.5, 0.6, 0.7], [0.4, 0.4, 0.5]]])
    >>> out = trial_stats(x, 1 - x, alpha=0.05, corrections=["none"])
    >>> float(out[0, 0]), out[0, 1:].tolist()  # reversed ranking: every decision flips
    (-1.0, [0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0])
    """
    m, S, n = xs.shape
    ia, ib = np.triu_indices(S, 1)
    P = len(ia)
    mx, my = exact_mean(xs, axis=-1), exact_mean(ys, axis=-1)
    dx, dy = mx[:, ia] - mx[:, ib], my[:, ia] - my[:, ib]
    sx, sy = pair_signs(dx).T, pair_signs(dy).T  # (pairs, trials)
    out = np.empty((m, 1 + len(corrections) * len(_DEC)))
    out[:, 0] = tau_b(concordance(sx, sy), ties(sx), ties(sy), S)
    same = np.sign(dx) == np.sign(dy)
    step = max(1, _SIM_BYTES // (8 * P * n))
    px, py = np.empty((m, P)), np.empty((m, P))
    for lo in range(0, m, step):  # memory blocks of trials (rows are independent)
        hi = min(m, lo + step)
        for p, v in ((px, xs), (py, ys)):
            z = v[lo:hi, ia, :] - v[lo:hi, ib, :]
            with np.errstate(invalid="ignore", divide="ignore"):
                p[lo:hi] = np.nan_to_num(paired_t(z).pvalue, nan=1.0)
    for ci, corr in enumerate(corrections):
        r1, r2 = reject(px, alpha, corr, axis=-1), reject(py, alpha, corr, axis=-1)
        both = r1 & r2
        counts = (both & same, ~r1 & ~r2, r1 & ~r2, ~r1 & r2, both & ~same, r1, r2)
        out[:, 1 + ci * len(_DEC):1 + (ci + 1) * len(_DEC)] = np.stack(
            [np.count_nonzero(c, axis=-1) for c in counts], axis=-1)
    return out


def _subsets(seed: int, n: int, T: int, start: int, stop: int) -> np.ndarray:
    """Each trial's random subset of `n` of `T` topics (sorted positions), keyed by the
    trial and the size only; all topics when ``n == T``."""
    if n >= T:
        return np.broadcast_to(np.arange(T), (stop - start, T))
    idx = blocked_draws(seed, SUBSET_STREAM, (n,), start, stop,
                        lambda rng, m: np.argsort(rng.random((m, T)), axis=1)[:, :n])
    return np.sort(idx, axis=1)


def _bootstrap(seed: int, n: int, T: int, start: int, stop: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Each trial's topic bootstrap of `n` of `T` topics (with replacement, sorted
    positions, keyed by the trial and the size only) and every slot's copy number (0 for a
    topic's first draw, 1 for its second, ...).

    Examples
    --------
    >>> idx, copy = _bootstrap(3, 6, 4, 0, 2)
    >>> idx.shape, bool((np.diff(idx, axis=1) >= 0).all())
    ((2, 6), True)
    >>> all(copy[i, j] == np.sum(idx[i, :j] == idx[i, j]) for i in range(2) for j in range(6))
    True
    """
    idx = blocked_draws(seed, BOOTSTRAP_STREAM, (n,), start, stop,
                        lambda rng, m: rng.integers(0, T, size=(m, n)))
    idx = np.sort(idx, axis=1)
    pos = np.broadcast_to(np.arange(n), idx.shape)
    new = np.ones(idx.shape, bool)
    new[:, 1:] = idx[:, 1:] != idx[:, :-1]
    first = np.maximum.accumulate(np.where(new, pos, 0), axis=1)
    return idx, pos - first


def simulated_qrels(data: AssessorData, start: int, stop: int, seed: int, copy: int = 0
                    ) -> np.ndarray:
    """Grades of the simulated assessors ``start:stop``: the reference's judgments of
    ``simulate_from``'s topics with the relabelled ones drawn from the model, shape
    (trials, judgments) in the order of ``data.sim.base``. ``copy > 0``: an independent
    assessor of the same trial (the one judging the copy-th resampled copy of a topic in a
    topic bootstrap)."""
    sim = data.sim
    grade = np.asarray(sim.base.grade, np.int64)
    G = np.repeat(grade[None, :], stop - start, axis=0)
    bt = np.asarray(sim.base.topic, dtype=object)
    G[:, sim.relabel] = simulate_grades(sim.model, grade[sim.relabel], seed, SIM_STREAM,
                                        start, stop, topics=bt[sim.relabel],
                                        bins=sim.bins[sim.relabel],
                                        key=(copy,) if copy else ())
    return G


def _score_layer(data: AssessorData, G: np.ndarray, start: int, need: np.ndarray | None
                 ) -> np.ndarray:
    """Scores (trials, metrics, systems, topics) of the simulated grades `G` on
    ``data.sim.topics`` in one :func:`~irsim.metrics.multi.evaluate_many` pass; with `need`
    (trials, topics) of bool only those topics of each trial are scored (NaN elsewhere)."""
    sim = data.sim
    bt, bd = np.asarray(sim.base.topic, dtype=object), np.asarray(sim.base.docno, dtype=object)
    tpos = {t: i for i, t in enumerate(sim.topics)}
    code = np.array([tpos.get(t, -1) for t in bt.tolist()], np.int64)
    m = len(G)
    qs, rows = {}, []
    for i in range(m):  # one qrels per trial (the metrics' own pass is vectorised)
        keep = slice(None) if need is None else need[i, np.maximum(code, 0)] & (code >= 0)
        if need is not None and not need[i].any():
            continue
        qs[f"trial{start + i}"] = Qrels(bt[keep], bd[keep], G[i][keep],
                                        source=f"trial{start + i}")
        rows.append(i)
    M, S, T = len(data.metrics), len(data.systems), len(sim.topics)
    Y = np.full((m, M, S, T), np.nan)
    if not qs:
        return Y
    scored = evaluate_many(data.source.runs, qs, list(data.metrics), depth=data.source.depth,
                           missing="drop")
    for i, sm in zip(rows, scored.values(), strict=True):
        cols = [tpos[t] for t in sm.topics if t in tpos]
        src = [k for k, t in enumerate(sm.topics) if t in tpos]
        Y[i][:, :, cols] = np.asarray(sm.values)[:, :, src]
    return Y


def simulate_trials(data: AssessorData, start: int, stop: int, *, seed: int, alpha: float,
                    corrections: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Simulated assessors ``start:stop``: per trial, metric and planning size the
    :func:`trial_stats` row, and per trial the graded and binary kappa on the fitted
    passages.

    Every trial's qrels are scored in one :func:`~irsim.metrics.multi.evaluate_many` pass;
    draws are keyed by the trial (:func:`irsim.rng.blocked_draws`), so any split of the
    trials gives the same rows.
    """
    sim = data.sim
    m = stop - start
    G = simulated_qrels(data, start, stop, seed)
    scale = np.asarray(data.scale)
    L = len(scale)
    ref_j = np.searchsorted(scale, np.asarray(sim.base.grade, np.int64)[sim.joint])
    sim_j = np.searchsorted(scale, G[:, sim.joint])
    trial = np.arange(m)[:, None]
    conf = np.bincount((trial * L * L + ref_j * L + sim_j).ravel(),
                       minlength=m * L * L).reshape(m, L, L)
    binary = (scale >= data.rel).astype(np.int64)
    conf_b = np.bincount((trial * 4 + binary[ref_j] * 2 + binary[sim_j]).ravel(),
                         minlength=m * 4).reshape(m, 2, 2)
    kappa = np.stack([agr.kappa_from_confusion(conf), agr.kappa_from_confusion(conf_b)],
                     axis=-1)
    X = sim.reference
    T = len(sim.topics)
    # topic bootstraps of the sizes beyond T: copy c of a topic is scored under the trial's
    # c-th independent assessor, which is drawn and scored only on the topics needing it
    boot = {n: _bootstrap(seed, n, T, start, stop) for n in sim.sizes if n > T}
    copies = np.ones((m, T), np.int64)
    trial = np.arange(m)[:, None]
    for idx, _ in boot.values():
        per = np.bincount((trial * T + idx).ravel(), minlength=m * T).reshape(m, T)
        copies = np.maximum(copies, per)
    layers = [_score_layer(data, G, start, None)]
    for c in range(1, int(copies.max())):
        layers.append(_score_layer(data, simulated_qrels(data, start, stop, seed, copy=c),
                                   start, copies > c))
    Y = np.stack(layers)  # (copies, trials, metrics, systems, topics)
    S = len(data.systems)
    out = np.empty((m, len(data.metrics), len(sim.sizes), 1 + len(corrections) * len(_DEC)))
    for k, n in enumerate(sim.sizes):
        if n > T:
            idx, copy = boot[n]
        else:
            idx = _subsets(seed, n, T, start, stop)
            copy = np.zeros_like(idx)
        for mi in range(len(data.metrics)):
            xs = np.ascontiguousarray(X[mi][:, idx].transpose(1, 0, 2))
            ys = np.ascontiguousarray(Y[copy[:, None, :], trial[:, :, None], mi,
                                        np.arange(S)[None, :, None], idx[:, None, :]])
            out[:, mi, k] = trial_stats(xs, ys, alpha=alpha, corrections=corrections)
    return out, kappa


def swap_counts(data: AssessorData, u0: int, u1: int, start: int, stop: int, *,
                seed: int) -> np.ndarray:
    """Comparisons and swaps per absolute-difference bin of the swap units ``u0:u1`` ((qrels,
    metric): the reference first, then the others) over trials ``start:stop``, as
    ``experiment=swap`` counts them (disjoint halves, exact set means, ties within the score
    tolerance are 0, a single zero difference is a swap). Returns the whole
    (units, bins, 2) counter with the units' rows filled (tested against a loop over
    trials and pairs in ``tests/test_assessors.py``).
    """
    names = (data.reference, *data.others)
    M = len(data.metrics)
    out = np.zeros((len(names) * M, ABSOLUTE.count, 2), np.int64)
    S = len(data.systems)
    ia, ib = np.triu_indices(S, 1)
    for u in range(u0, u1):
        qi, mi = divmod(u, M)
        x = np.asarray(data.scores[names[qi]].values[mi])
        T = x.shape[1]
        c = T // 2
        if c < 1:
            continue
        tol = score_tolerance(x)
        for t0, t1 in block_ranges_aligned(start, stop):
            counts = subset_counts("disjoint", seed, SWAP_STREAM, T, c, t0, t1)
            means = set_means(x, counts, c)  # (trials, 2, systems)
            d = snap_zero(means[:, 0, ia] - means[:, 0, ib], tol)
            d2 = snap_zero(means[:, 1, ia] - means[:, 1, ib], tol)
            comps, hits = bin_counts(ABSOLUTE, np.abs(d), is_swap(d, d2, zero_swaps=True))
            out[u, :, 0] += comps
            out[u, :, 1] += hits
    return out


def block_ranges_aligned(start: int, stop: int) -> list[tuple[int, int]]:
    """``[start, stop)`` cut at multiples of :data:`irsim.rng.REPLICATE_BLOCK`.

    Examples
    --------
    >>> block_ranges_aligned(200, 600)
    [(200, 250), (250, 500), (500, 600)]
    """
    edges = [start, *range((start // REPLICATE_BLOCK + 1) * REPLICATE_BLOCK, stop,
                           REPLICATE_BLOCK), stop]
    return [(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def depth_labels(edges: Sequence[int]) -> list[str]:
    """Names of the depth bins of `edges` (a single ``all`` without edges).

    Examples
    --------
    >>> depth_labels([10, 100])
    ['1-10', '11-100', '>100']
    >>> depth_labels([])
    ['all']
    """
    if not edges:
        return ["all"]
    lo = [1, *[e + 1 for e in edges[:-1]]]
    return [f"{a}-{b}" if a < b else f"{a}" for a, b in zip(lo, edges, strict=True)] + \
        [f">{edges[-1]}"]


def _smallest(sizes: Sequence[int], ok: np.ndarray) -> int:
    """The smallest size whose flag is set, -1 when none."""
    hit = np.flatnonzero(ok)
    return int(sizes[hit[0]]) if hit.size else -1


def simulation_tables(sim: SimSetup, data: AssessorData, plan: np.ndarray, kappa: np.ndarray,
                      *, alpha: float, corrections: Sequence[str], tau_target: float,
                      agreement_target: float, probability: float) -> dict[str, pa.Table]:
    """The tables of the simulation from the merged per-trial arrays."""
    mod = sim.model
    scale = mod.scale.tolist()
    nan = float("nan")
    rows = [{"qrels": sim.name, "topic": "all", "depth": "all", "grade_reference": a,
             "grade": b, "count": int(mod.counts[i, k]), "probability": float(mod.probs[i, k]),
             "concentration": nan}
            for i, a in enumerate(scale) for k, b in enumerate(scale)]
    labels = depth_labels(mod.depth_edges)
    if mod.bins > 1:
        rows += [{"qrels": sim.name, "topic": "all", "depth": lab, "grade_reference": a,
                  "grade": b, "count": int(mod.bin_counts[s, i, k]),
                  "probability": float(mod.bin_probs[s, i, k]), "concentration": nan}
                 for s, lab in enumerate(labels) for i, a in enumerate(scale)
                 for k, b in enumerate(scale)]
    if mod.per_topic:
        rows += [{"qrels": sim.name, "topic": t, "depth": lab, "grade_reference": a,
                  "grade": b, "count": int(mod.topic_counts[ti, s, i, k]),
                  "probability": float(mod.topic_probs[ti, s, i, k]),
                  "concentration": float(mod.concentration[i])}
                 for ti, t in enumerate(mod.topics) for s, lab in enumerate(labels)
                 for i, a in enumerate(scale) for k, b in enumerate(scale)]
    trials = plan.shape[0]
    S = len(data.systems)
    pairs = S * (S - 1) // 2
    full = plan[:, :, sim.sizes.index(len(sim.topics))]  # all topics
    j = data.others.index(sim.name)
    binary = mod.counts.reshape(len(scale), len(scale))
    rel = (mod.scale >= data.rel).astype(np.int64)
    conf_b = np.zeros((2, 2), np.int64)
    np.add.at(conf_b, (rel[:, None], rel[None, :]), binary)
    obs_kappa = (float(agr.kappa_from_confusion(mod.counts)),
                 float(agr.kappa_from_confusion(conf_b)))
    trial_rows, summary = [], []
    plan_rows, answer = [], []
    for mi, metric in enumerate(data.metrics):
        x, y, _ = data.compared(j, mi)
        obs = trial_stats(x[None], y[None], alpha=alpha, corrections=corrections)[0]
        for ci, corr in enumerate(corrections):
            c0 = 1 + ci * len(_DEC)
            counts = full[:, mi, c0:c0 + len(_DEC)] / pairs

            def cols(v: np.ndarray, tau: np.ndarray) -> dict[str, np.ndarray]:
                d = dict(zip(_DEC, v.T, strict=True))
                return {"tau_b": tau, "agreement": d["both"] + d["neither"],
                        **{k: d[k] for k in CATEGORIES},
                        "power_reference": d["sig_ref"], "power": d["sig"]}

            per = {**cols(counts, full[:, mi, 0]), "kappa": kappa[:, 0],
                   "kappa_binary": kappa[:, 1]}
            observed = {**cols(obs[None, c0:c0 + len(_DEC)] / pairs, obs[None, 0]),
                        "kappa": np.array([obs_kappa[0]]),
                        "kappa_binary": np.array([obs_kappa[1]])}
            trial_rows.extend(
                {"qrels": sim.name, "metric": metric, "correction": corr, "trial": t,
                 **{k: float(per[k][t]) for k in SIMULATED_TRIAL_STATS}}
                for t in range(trials))
            for stat in ("tau_b", "kappa", "kappa_binary", "agreement", "lost", "gained",
                         "power_reference", "power"):
                v = per[stat]
                o = float(observed[stat][0])
                sd = float(v.std(ddof=1)) if trials > 1 else float("nan")
                q = np.quantile(v, [0.025, 0.05, 0.5, 0.95, 0.975])
                summary.append({"qrels": sim.name, "metric": metric, "correction": corr,
                                "statistic": stat, "trials": trials, "observed": o,
                                "mean": float(v.mean()), "sd": sd,
                                "mc_se": sd / np.sqrt(trials), "q025": float(q[0]),
                                "q05": float(q[1]), "q50": float(q[2]), "q95": float(q[3]),
                                "q975": float(q[4]),
                                "observed_quantile": float(np.mean(v <= o))})
            tau = plan[:, mi, :, 0]  # (trials, sizes)
            dec = plan[:, mi, :, c0:c0 + len(_DEC)] / pairs
            agree = dec[..., 0] + dec[..., 1]
            p_tau = (tau >= tau_target).mean(axis=0)
            p_agree = (agree >= agreement_target).mean(axis=0)
            for k, n in enumerate(sim.sizes):
                qt = np.quantile(tau[:, k], [0.05, 0.5, 0.95])
                plan_rows.append({"qrels": sim.name, "metric": metric, "correction": corr,
                                  "topics": n, "trials": trials,
                                  "tau_mean": float(tau[:, k].mean()), "tau_q05": float(qt[0]),
                                  "tau_q50": float(qt[1]), "tau_q95": float(qt[2]),
                                  "p_tau": float(p_tau[k]),
                                  "agreement_mean": float(agree[:, k].mean()),
                                  "agreement_q05": float(np.quantile(agree[:, k], 0.05)),
                                  "p_agreement": float(p_agree[k]),
                                  "power_reference": float(dec[:, k, 5].mean()),
                                  "power": float(dec[:, k, 6].mean())})
            answer.append({"qrels": sim.name, "metric": metric, "correction": corr,
                           "tau_target": tau_target,
                           "topics_tau": _smallest(sim.sizes, p_tau >= probability),
                           "agreement_target": agreement_target,
                           "topics_agreement": _smallest(sim.sizes, p_agree >= probability),
                           "probability": probability})
    return {"assessor_model": table("assessor_model", rows),
            "simulated_trials": table("simulated_trials", trial_rows),
            "simulated_agreement": table("simulated_agreement", summary),
            "assessor_planning": table("assessor_planning", plan_rows),
            "assessor_planning_answer": table("assessor_planning_answer", answer)}


#: The per-trial statistics of ``simulated_trials``.
SIMULATED_TRIAL_STATS = ("tau_b", "kappa", "kappa_binary", "agreement", *CATEGORIES,
                         "power_reference", "power")


def system_means(x: np.ndarray) -> np.ndarray:
    """Mean per system (row) of `x` from its exact sum (as
    :func:`~irsim.stats.kendall.rank_agreement`), so tied systems tie on every CPU."""
    T = x.shape[1]
    return Exact(x, l1=T).total(axis=1) / T


def _pair_differences(x: np.ndarray) -> np.ndarray:
    """Exact mean differences of every pair a < b (ties exactly 0 on every CPU)."""
    means = system_means(x)
    ia, ib = np.triu_indices(x.shape[0], 1)
    return means[ia] - means[ib]


@dataclass(frozen=True)
class Assessors:
    """The study object (plan, kernel, fields, finalize over the engine)."""

    seed: int
    B: int
    test_B: int
    alpha: float
    tests: tuple[str, ...]
    corrections: tuple[str, ...]
    top_k: int
    per_shard: int
    pvalue: str = "plus_one"
    max_topics: int = 200
    max_assessors: int = 5
    trials: int = 0
    per_rep: int = REPLICATE_BLOCK
    simulation: tuple = ()
    tau_target: float = 0.9
    agreement_target: float = 0.9
    probability: float = 0.95
    swap_trials: int = 0
    bayes: BayesRules = field(default_factory=BayesRules)
    name: str = "assessors"

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`; the qrels, composites and simulation options
        through the prepared data and `simulation`)."""
        return fingerprint(self, Config, renamed={
            "simulate_trials": "trials", "planning_probability": "probability",
            "bayes": "bayes.tests", "bayes_threshold": "bayes.threshold", "bayes_r": "bayes.r",
            "bayes_prob": "bayes.prob", "bayes_rope": "bayes.rope"},
            derived={"simulation": list(self.simulation)})

    def _corrections(self, test: str) -> tuple[str, ...]:
        """The corrections of `test`: ``none`` only for the simultaneous (Tukey) tests."""
        return ("none",) if test in SIMULTANEOUS else self.corrections

    def plan(self, data: AssessorData) -> list[Shard]:
        """Blocks of items (label pairs, then (qrels, metric)); then, with the simulation,
        blocks of trials (one extra item)."""
        n = data.items
        shards = [Shard(i, (lo, min(lo + self.per_shard, n)), (0, 1))
                  for i, lo in enumerate(range(0, n, self.per_shard))]
        if data.sim is not None:
            shards += [Shard(len(shards) + k, (n, n + 1), reps)
                       for k, reps in enumerate(block_ranges(self.trials, self.per_rep))]
        if self.swap_trials:  # items n+1 ..: (qrels, metric) of the swap rates
            units = (1 + len(data.others)) * len(data.metrics)
            for a, b in block_ranges(units, self.per_shard):
                for reps in block_ranges(self.swap_trials, self.per_rep):
                    shards.append(Shard(len(shards), (n + 1 + a, n + 1 + b), reps))
        return shards

    def fields(self, data: AssessorData) -> dict:
        n = data.items
        out = {"label": Slab((n, len(LABEL_STATS), len(_LABEL_COLS))),
               "rank": Slab((n, len(_RANK_COLS))),
               "decision": Count((n, len(self.tests), len(self.corrections), 7),
                                 along="items")}
        if self.bayes.tests:
            out["bayes"] = Count((n, len(self.bayes.tests), len(_BAYES_COUNTS)),
                                 along="items")
        if data.sim is not None:
            shape = (self.trials, len(data.metrics), len(data.sim.sizes),
                     1 + len(self.corrections) * len(_DEC))
            out["sim_plan"] = Slab(shape, along="reps")
            out["sim_kappa"] = Slab((self.trials, 2), along="reps")
        if self.swap_trials:
            units = (1 + len(data.others)) * len(data.metrics)
            out["swap"] = Count((units, ABSOLUTE.count, 2))
        return out

    def kernel(self, shard: Shard, data: AssessorData) -> dict:
        lo, hi = shard.items
        if lo > data.items:
            return {"swap": swap_counts(data, lo - data.items - 1, hi - data.items - 1,
                                        *shard.reps, seed=self.seed)}
        if lo == data.items:
            plan, kappa = simulate_trials(data, *shard.reps, seed=self.seed,
                                          alpha=self.alpha, corrections=self.corrections)
            return {"sim_plan": plan, "sim_kappa": kappa}
        label = np.full((hi - lo, len(LABEL_STATS), len(_LABEL_COLS)), np.nan)
        rank = np.full((hi - lo, len(_RANK_COLS)), np.nan)
        dec = np.zeros((hi - lo, len(self.tests), len(self.corrections), 7), np.int64)
        bay = np.zeros((hi - lo, len(self.bayes.tests), len(_BAYES_COUNTS)), np.int64)
        level = 1.0 - self.alpha
        P = len(data.pairs)
        for r, item in enumerate(range(lo, hi)):  # one item: a label pair or (qrels, metric)
            if item < P:
                label[r] = _label_row(data.pairs[item], data.scale, data.rel, B=self.B,
                                      level=level, seed=self.seed, key=item)
                continue
            j, m = divmod(item - P, len(data.metrics))
            x, y, _ = data.compared(j, m)
            ra = rank_agreement(x, y, B=self.B, seed=self.seed, confidence_level=level,
                                study=RANK_STREAM, key=(j, m))
            mx, my = system_means(x), system_means(y)
            k = min(self.top_k, len(mx))
            rank[r] = (ra.tau_b, *ra.tau_b_ci, ra.tau_ap, *ra.tau_ap_ci, ra.spearman,
                       *ra.spearman_ci, float(np.argmax(mx) == np.argmax(my)),
                       float(top_k_overlap(mx, my, k)))
            dx, dy = _pair_differences(x), _pair_differences(y)
            for ti, test in enumerate(self.tests):
                px, py = (pvalues(test, v, B=self.test_B, seed=self.seed, key=(j, m),
                                  pvalue=self.pvalue) for v in (x, y))
                for ci, corr in enumerate(self._corrections(test)):
                    dec[r, ti, ci] = decision_counts(px, py, dx, dy, self.alpha, corr)
            for bi, test in enumerate(self.bayes.tests):
                # the same posterior draws under both qrels (one stream key per item)
                cx, cy = (bayes_codes(self.bayes, test, v, B=self.test_B, seed=self.seed,
                                      key=(j, m)) for v in (x, y))
                bay[r, bi] = bayes_decision_counts(cx, cy)
        out = {"label": label, "rank": rank, "decision": dec}
        if self.bayes.tests:
            out["bayes"] = bay
        return out

    def finalize(self, merged: dict, data: AssessorData) -> dict:
        return {"label_agreement": self._labels(merged["label"], data),
                "label_agreement_topic": _label_topics(data),
                "confusion": _confusions(data),
                "rank_agreement": self._ranks(merged["rank"], data),
                "system_means": _means_table(data),
                "decision_agreement": self._decisions(merged["decision"], data),
                "bayes_decision_agreement": self._bayes(merged.get("bayes"), data),
                **self._gstudy(data), **self._simulated(merged, data),
                "assessor_swap": self._swaps(merged.get("swap"), data)}

    def _swaps(self, counts: np.ndarray | None, data: AssessorData) -> pa.Table:
        """The ``assessor_swap`` table (empty without ``swap_trials``)."""
        if counts is None:
            return table("assessor_swap", [])
        rows = []
        names = (data.reference, *data.others)
        for u in range(len(names) * len(data.metrics)):
            qi, mi = divmod(u, len(data.metrics))
            T = len(data.scores[names[qi]].topics)
            comps, swaps = counts[u, :, 0], counts[u, :, 1]
            req = required_difference(comps, swaps, ABSOLUTE.lo, 0.05)
            total = int(comps.sum())
            sens = float(comps[ABSOLUTE.lo >= req - 1e-12].sum() / total) \
                if np.isfinite(req) and total else float("nan")
            rows.append({"qrels": names[qi], "metric": data.metrics[mi], "topics": T,
                         "subset_size": T // 2, "trials": self.swap_trials,
                         "comparisons": total, "swaps": int(swaps.sum()),
                         "swap_rate": float(swaps.sum() / total) if total else float("nan"),
                         "required_diff": req, "sensitivity": sens})
        return table("assessor_swap", rows)

    def _simulated(self, merged: dict, data: AssessorData) -> dict[str, pa.Table]:
        """The simulation's tables (empty without it)."""
        names = ("assessor_model", "simulated_trials", "simulated_agreement",
                 "assessor_planning", "assessor_planning_answer")
        sim = data.sim
        if sim is None:
            return {n: table(n, []) for n in names}
        return simulation_tables(sim, data, merged["sim_plan"], merged["sim_kappa"],
                                 alpha=self.alpha, corrections=self.corrections,
                                 tau_target=self.tau_target,
                                 agreement_target=self.agreement_target,
                                 probability=self.probability)

    def _gstudy(self, data: AssessorData) -> dict[str, pa.Table]:
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
        boot = g_study3_bootstrap(x, self.B, seed=self.seed, study=GSTUDY_STREAM)
        bvar = {c: np.broadcast_to(boot.var[c], (self.B, M)) for c in COMPONENTS3}
        q = (self.alpha / 2, 1 - self.alpha / 2)
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
        nt = np.arange(1, self.max_topics + 1, dtype=np.float64)
        na = np.arange(1, self.max_assessors + 1, dtype=np.float64)
        cols: dict[str, list] = {k: [] for k in ("metric", "design", "topics", "assessors",
                                                 "e_rho2", "phi", "e_rho2_low",
                                                 "e_rho2_high", "phi_low", "phi_high")}
        shape = (M, len(nt), len(na))
        g_grid = replace(g, var={c: np.reshape(v, (M, 1, 1)) for c, v in g.var.items()})
        b_grid = replace(boot, var={c: np.reshape(v, (self.B, M, 1, 1))
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

    def _labels(self, arr: np.ndarray, data: AssessorData) -> pa.Table:
        rows = []
        for i, p in enumerate(data.pairs):
            for r, (labels, stat) in enumerate(LABEL_STATS):
                v = dict(zip(_LABEL_COLS, arr[i, r].tolist(), strict=True))
                rows.append({"qrels_a": p.a, "qrels_b": p.b, "labels": labels,
                             "statistic": stat, "topics": int(v.pop("topics")),
                             "items": int(v.pop("items")), **v})
        return table("label_agreement", rows)

    def _ranks(self, arr: np.ndarray, data: AssessorData) -> pa.Table:
        P, rows = len(data.pairs), []
        for j, q in enumerate(data.others):
            for m, metric in enumerate(data.metrics):
                v = dict(zip(_RANK_COLS, arr[P + j * len(data.metrics) + m].tolist(),
                             strict=True))
                x, y, topics = data.compared(j, m)
                mx, my = system_means(x), system_means(y)
                move = ranks(mx) - ranks(my)
                big = int(np.lexsort((ranks(mx), -np.abs(move)))[0])
                rows.append({"qrels": q, "metric": metric, "topics": len(topics),
                             "systems": len(mx), **v, "top1": bool(v["top1"]),
                             "top_k": min(self.top_k, len(mx)),
                             "max_move": int(abs(move[big])), "max_mover": data.systems[big],
                             "mean_abs_move": float(np.abs(move).mean())})
        return table("rank_agreement", rows)

    def _decisions(self, arr: np.ndarray, data: AssessorData) -> pa.Table:
        P, rows = len(data.pairs), []
        S = len(data.systems)
        pairs = S * (S - 1) // 2
        for j, q in enumerate(data.others):
            for m, metric in enumerate(data.metrics):
                c = arr[P + j * len(data.metrics) + m]
                for ti, test in enumerate(self.tests):
                    for ci, corr in enumerate(self._corrections(test)):
                        n = dict(zip((*CATEGORIES, "sig_ref", "sig"), c[ti, ci].tolist(),
                                     strict=True))
                        rows.append({"qrels": q, "metric": metric, "test": test,
                                     "correction": corr, "pairs": pairs,
                                     **{k: n[k] for k in CATEGORIES},
                                     "agreement": (n["both"] + n["neither"]) / pairs,
                                     "power_reference": n["sig_ref"] / pairs,
                                     "power": n["sig"] / pairs})
        return table("decision_agreement", rows)


    def _bayes(self, arr: np.ndarray | None, data: AssessorData) -> pa.Table:
        """The ``bayes_decision_agreement`` table (empty without ``bayes``)."""
        if arr is None:
            return table("bayes_decision_agreement", [])
        P, rows = len(data.pairs), []
        S = len(data.systems)
        pairs = S * (S - 1) // 2
        for j, q in enumerate(data.others):
            for m, metric in enumerate(data.metrics):
                for bi, test in enumerate(self.bayes.tests):
                    n = dict(zip(_BAYES_COUNTS, arr[P + j * len(data.metrics) + m, bi].tolist(),
                                 strict=True))
                    rows.append({"qrels": q, "metric": metric, "test": test,
                                 "rule": self.bayes.rule(test, self.test_B), "pairs": pairs,
                                 **{k: n[k] for k in (*CATEGORIES, "equivalent_reference",
                                                      "equivalent", "same_decision")},
                                 "agreement": (n["both"] + n["neither"]) / pairs,
                                 "sensitivity_reference": n["different_reference"] / pairs,
                                 "sensitivity": n["different"] / pairs})
        return table("bayes_decision_agreement", rows)


def _label_topics(data: AssessorData) -> pa.Table:
    rows = []
    for p in data.pairs:
        ids, items, values, _ = label_values(p, data.scale, data.rel)
        for r, (labels, stat) in enumerate(LABEL_STATS):
            rows.extend({"qrels_a": p.a, "qrels_b": p.b, "labels": labels, "statistic": stat,
                         "topic": str(t), "items": int(n), "value": float(v)}
                        for t, n, v in zip(ids.tolist(), items.tolist(), values[r].tolist(),
                                           strict=True))
    return table("label_agreement_topic", rows)


def _confusions(data: AssessorData) -> pa.Table:
    rows = []
    for p in data.pairs:
        c = agr.confusion(p.grades[:, 0], p.grades[:, 1], labels=data.scale)
        rows.extend({"qrels_a": p.a, "qrels_b": p.b, "grade_a": int(ga), "grade_b": int(gb),
                     "count": int(c[i, k])}
                    for i, ga in enumerate(data.scale) for k, gb in enumerate(data.scale))
    return table("confusion", rows)


def _means_table(data: AssessorData) -> pa.Table:
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


@study("assessors", config=Config, data=KIND, order=110, tables=list(TABLE_SPECS),
       description="whose judgments? label, ranking and significance-decision agreement "
                   "between a reference qrels and other assessors' (people, LLMs, "
                   "composites)",
       headlines={"rank_agreement": (("qrels", "metric"), "tau_b"),
                  "decision_agreement": (("qrels", "metric", "test", "correction"),
                                         "agreement")},
       question=("Whose judgments? Can another assessor's, a crowd's or an LLM's qrels replace "
                 "the official ones: agreement of labels (kappa, alpha), of system rankings "
                 "(tau-b, tau_AP) and of significance decisions (pairs lost, gained, flipped) "
                 "with the reference (Voorhees 2000); more topics or more assessors per "
                 "topic: a G-study with an assessor facet; and, with known truth by "
                 "simulation, how many topics keep a simulated assessor's ranking close to "
                 "the reference's"))
def make(config: Config, data: AssessorInput, *, seed: int, shards: Shards
         ) -> tuple[Assessors, AssessorData]:
    """Check the parameters against the data, build composites, evaluate every qrels once
    and return the study object with its prepared data."""
    _check_config(config)
    prepared = _prepare(config, data)
    S = len(prepared.systems)
    pairs = S * (S - 1) // 2
    for test in config.tests:
        if TESTS[test].monte_carlo and test not in SIMULTANEOUS:
            for corr in set(config.corrections) & {"bonferroni", "holm"}:
                # the smallest Monte Carlo p-value, 1 / (test_B + 1), must pass alpha / pairs
                if (int(config.test_B) + 1) * float(config.alpha) < pairs:
                    log.warning("%s with %s over %d pairs cannot reject anything with %s=%d "
                                "(the smallest p-value is 1/(test_B+1)); raise it above %d",
                                test, corr, pairs, param("test_B"), config.test_B,
                                int(pairs / float(config.alpha)))
    per_shard, per_rep = shards.get(4, REPLICATE_BLOCK)
    if per_shard < 1:
        raise ConfigError(f"{param('shard_items', 'engine')} must be >= 1, got {per_shard}")
    if per_rep < 1:
        raise ConfigError(f"{param('shard_replicates', 'engine')} must be >= 1, got "
                          f"{per_rep}")
    sim = prepared.sim
    simulation = () if sim is None else (
        sim.name, bool(config.simulate_per_topic), float(config.simulate_prior),
        str(config.simulate_relabel), *sim.sizes)
    return Assessors(seed=int(seed), B=int(config.B), test_B=int(config.test_B),
                     alpha=float(config.alpha), tests=tuple(config.tests),
                     corrections=tuple(config.corrections), top_k=int(config.top_k),
                     per_shard=per_shard, pvalue=str(config.pvalue),
                     max_topics=int(config.max_topics),
                     max_assessors=int(config.max_assessors),
                     trials=int(config.simulate_trials), per_rep=per_rep,
                     simulation=simulation, tau_target=float(config.tau_target),
                     agreement_target=float(config.agreement_target),
                     probability=float(config.planning_probability),
                     swap_trials=int(config.swap_trials), bayes=BayesRules.of(config)
                     ), prepared
