"""assessors: whose judgments? How another assessor's qrels (a person, a crowd, an LLM) change
label agreement, system rankings and significance decisions (issue 27).

The study reads runs and several qrels of the same topics, one of them the ``reference``
(the official judgments). Every other qrels (and every composite built from topic
``groups``, one assessor per group) is compared with the reference three ways:

- **labels** (``label_agreement``): Cohen's kappa (unweighted, linear and quadratic
  weights) of the grades and of the grades binarised at ``rel``, and Krippendorff's alpha
  (ordinal), on the (topic, passage) pairs both judged; per topic
  (``label_agreement_topic``), the mean over topics with a bootstrap-over-topics
  interval, and pooled over topics with its own interval; the grade confusion matrices
  (``confusion``). Every given qrels and every composite is compared with the reference,
  and every pair of the given qrels that shares a judged pair (``label_pairs``: the one
  part quadratic in the number of qrels; by default up to 25 of them).
- **rankings** (``rank_agreement``, ``system_means``): per qrels and metric, the
  system means under the reference and under the other qrels on the other's topics;
  Kendall's tau-b, tau_AP and Spearman's rho with bootstrap-over-topics intervals
  (:func:`irsim.stats.kendall.rank_agreement`), top-1 and top-k agreement, rank moves.
- **conclusions** (``decision_agreement``): per qrels, metric, test and correction, how
  the significance decisions on every pair of systems agree (significant under both with
  the same sign, under neither, lost, gained, opposite signs) and each qrels' discriminative
  power.
- **reliability** (``assessor_gstudy``, ``assessor_dstudy``): a G-study of systems x
  topics x assessors (:func:`irsim.stats.gtheory.g_study3`) on the reference and the
  parallel composites (member j of every group; or ``g_assessors``) over the topics all of
  them judged, and its D-study (:func:`irsim.stats.gtheory.d_study3`): E(rho^2) and Phi for
  ``n_t`` topics and ``n_a`` assessors per topic, crossed and nested. Computed in
  ``finalize`` (no randomness; one vectorised call over all metrics).

The runs are parsed once and scored under every qrels in one vectorised pass
(:func:`irsim.metrics.multi.evaluate_many`); how a passage judged by the reference but not by
the other assessor counts is ``unjudged`` (:func:`irsim.metrics.multi.composite_qrels`).

Engine: the kernel's jobs (:data:`JOBS`) are named sub-plans, a shard's ``part`` its job:
``labels`` (one item per label pair), ``ranks`` (one per (qrels, metric)), ``simulation``
and ``swaps`` (blocks of trials); a shard is a block of a job's items
(``engine.shard_items``). Every random draw is keyed by the item (:mod:`irsim.rng` through
:func:`irsim.sampling.topics.bootstrap_counts` and the tests' own streams), resampled means
are exact (:class:`irsim.exact.Exact`), so tables do not depend on the shard size or the
executor.

The package holds one part per module: the ``Config``, the study object and the registration
here; the data kind and its loaders in :mod:`irsim.kit.qrels_set` (shared with
the budget study); the checks
and the prepared data (composites, label pairs, scores, the assessor model) in
:mod:`~irsim.experiments.assessors.prepare`; label, rank and decision agreement in
:mod:`~irsim.experiments.assessors.agreement`; the Bayesian decision agreement in
:mod:`~irsim.experiments.assessors.bayes`; the simulated assessors and the planning tables in
:mod:`~irsim.experiments.assessors.simulation`; the swap rates per qrels in
:mod:`~irsim.experiments.assessors.swaps`; the G- and D-study in
:mod:`~irsim.experiments.assessors.gstudy`; the table specs in
:mod:`~irsim.experiments.assessors.tables`; the report in
:mod:`~irsim.experiments.assessors.report`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from irsim.engine.base import Shard, block_ranges
from irsim.engine.partials import Count, Slab
from irsim.errors import ConfigError, param
from irsim.experiments.assessors.agreement import (
    CATEGORIES,
    DECISION_COUNTS,
    LABEL_COLUMNS,
    LABEL_STATS,
    RANK_COLUMNS,
    RANK_STREAM,
    confusion_table,
    decision_counts,
    decision_table,
    label_row,
    label_table,
    label_topic_table,
    means_table,
    pair_differences,
    pvalues,
    rank_table,
    system_means,
)
from irsim.experiments.assessors.bayes import (
    BAYES_COUNTS,
    bayes_codes,
    bayes_decision_counts,
    bayes_table,
)
from irsim.experiments.assessors.gstudy import gstudy_tables
from irsim.experiments.assessors.prepare import (
    AssessorData,
    FleissReference,
    KappaTopics,
    LabelPairs,
    Relabel,
    check_config,
    composites,
    parallel_composites,
    prepare,
)
from irsim.experiments.assessors.simulation import simulate_trials, simulation_tables
from irsim.experiments.assessors.swaps import swap_counts, swap_table
from irsim.experiments.assessors.tables import TABLE_SPECS
from irsim.kit.bins import ABSOLUTE
from irsim.kit.common import BayesOptions, BayesRules, Shards, check_study_memory
from irsim.kit.qrels_set import (
    KIND,
    AssessorInput,
    load_from_config,
    load_from_python,
    read_assessor_runs,
)
from irsim.metrics.multi import Unjudged
from irsim.params import fingerprint, option
from irsim.registry import Headline, study
from irsim.rng import REPLICATE_BLOCK
from irsim.stats._validation import PValueMode
from irsim.stats.kendall import rank_agreement, top_k_overlap
from irsim.stats.multiple import Correction
from irsim.stats.registry import SIMULTANEOUS, TESTS
from irsim.tables import table

log = logging.getLogger(__name__)

__all__ = ["Config", "AssessorInput", "AssessorData", "Assessors", "JOBS", "load_from_config",
           "load_from_python", "read_assessor_runs", "composites", "parallel_composites",
           "KIND", "LABEL_STATS", "CATEGORIES", "make", "default_test_B"]


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
    unjudged: Unjudged = option(
        Unjudged.reference, "What a passage judged by the reference but not by the other assessor "
        "counts as when evaluating under the other qrels: ``reference`` (the reference's grade: "
        "the qrels differ only where the assessors disagree), ``nonrelevant`` (grade 0) or "
        "``condensed`` (unjudged; the other qrels' runs are evaluated on condensed lists, Sakai "
        "2007).", tables="data")
    groups: list[list[str]] | None = option(
        None, "Topic groups of assessors (each a list of qrels names whose members judged the "
        "same topics): adds every composite qrels made of one member per group, over the union of "
        "the groups' topics, named ``mix`` followed by the 1-based position of the member chosen "
        "in each group (``mix1211``; with a group of more than 9 members, ``mix1-2-11-1``). A "
        "topic judged by several groups is taken from the first group (in this order) that judged "
        "it.", tables="data")
    kappa_topics: KappaTopics = option(
        KappaTopics.all, "The topics of the label agreement (``label_agreement``, "
        "``label_agreement_topic``, ``confusion``): ``all`` (every topic both qrels judged) or "
        "``pair_only`` (only the topics judged by at most two of the given qrels other than the "
        "reference: for two assessors, the topics judged by exactly the pair, as the SIGIR 2025 "
        "paper's per-pair kappas; DL19's topic 168216, judged by all eight assessors, is left "
        "out). A pair left with no topic is left out.", tables="data")
    label_pairs: LabelPairs = option(
        LabelPairs.auto, "Which label pairs ``label_agreement``, ``label_agreement_topic`` and "
        "``confusion`` compare besides every qrels (given or composite) with the reference: "
        "``all`` (also every two given qrels that share a judged pair: the part of the study "
        "whose time grows with the square of the number of qrels), ``reference`` (none: "
        "linear in the number of qrels) or ``auto`` (the default: ``all`` up to 25 given "
        "qrels besides the reference, ``reference`` beyond, so 200 LLM label sets run in "
        "minutes). A pair's row is the same whichever pairs are compared.", tables="data")
    fleiss_reference: FleissReference = option(
        FleissReference.once, "How the reference's label counts in the ``fleiss_reference`` "
        "statistic (Fleiss' kappa of two qrels and the reference): ``once`` (three raters) or "
        "``per_assessor`` (once per assessor of the pair, four raters: a, b, the reference "
        "twice, as the SIGIR 2025 paper's notebook merges the NIST rows, which gives its "
        "published Fleiss' kappas).", tables="data")
    tests: list[str] = option(
        ["t", "randomisation"], "Significance tests (:data:`irsim.stats.TESTS`: t, wilcoxon, "
        "sign, randomisation, paired_bootstrap, unpaired_bootstrap, tukey_hsd, "
        "randomised_tukey_hsd).")
    corrections: list[Correction] = option(
        ["none", "holm"], "Multiple-comparison corrections over all system pairs "
        "(:data:`irsim.stats.CORRECTIONS`: none, bonferroni, holm, bh, by); Tukey HSD tests get "
        "``none`` only.")
    alpha: float = option(
        0.05, "Significance level of the tests; the intervals' level is ``1 - alpha``.", gt=0,
        lt=1)
    B: int = option(
        1000, "Bootstrap resamples of topics for every interval (label and rank agreement).",
        ge=1)
    test_B: int | None = option(
        None, "Replicates of the Monte Carlo tests (randomisation, bootstrap, randomised Tukey "
        "HSD; the randomisation test is exact when ``2**topics <= test_B``). None: 10,000, or "
        "more where a Monte Carlo test is corrected by Bonferroni or Holm over more pairs than "
        "10,000 replicates can reject (the smallest p-value ``1/(test_B+1)`` must pass ``alpha "
        "/ pairs``): the smallest multiple of 1,000 that can (61 runs, 1,830 pairs, alpha .05: "
        "37,000).", ge=1)
    pvalue: PValueMode = option(
        PValueMode.plus_one, "P-value of the Monte Carlo tests: ``plus_one`` (``(count + 1) / (B + "
        "1)``, never 0, so corrections over many pairs stay valid) or ``count`` (``count / B``).")
    top_k: int = option(10, "k of the top-k agreement (capped at the number of systems).",
                        ge=1)
    g_assessors: list[str] | None = option(
        None, "The levels of the G-study's assessor facet (qrels names, given or composite; the "
        "reference may be one), over the topics all of them judged. Default: the reference and, "
        "with ``groups``, the parallel composites (member j of every group, j = 1 .. the smallest "
        "group's size: ``mix11..1``, ``mix22..2``, ...), which use each topic's judgments once "
        "each; without ``groups``, the reference and every other qrels. Fewer than 2 common "
        "topics: the G-study tables are left empty (a warning).", tables="data")
    max_topics: int = option(200, "The D-study covers 1 .. max_topics topics.", ge=1)
    max_assessors: int = option(5, "The D-study covers 1 .. max_assessors assessors per topic.",
                                ge=1)
    simulate_trials: int = option(
        0, "Simulated assessors (known truth by simulation, :mod:`irsim.simulate.assessor`); 0 "
        "(the default) turns the simulation off.", ge=0)
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
        tables="data", ge=0)
    simulate_relabel: Relabel = option(
        Relabel.all, "Which reference judgments a simulated assessor relabels: ``all`` (every "
        "judgment of ``simulate_from``'s topics: a new assessor judging the whole pool, the "
        "planning question) or ``judged`` (only the passages ``simulate_from`` re-judged, the "
        "others keep the reference's grade: the process that produced the observed qrels with "
        "``unjudged=reference``, to validate the model).", tables="data")
    planning_sizes: list[int] | None = option(
        None, "Topic-set sizes of the planning table (>= 2); all topics are always added. A size "
        "up to the topics of ``simulate_from`` is a random subset of them; a larger one resamples "
        "them with replacement (topic bootstrap: every copy of a topic gets its own simulated "
        "assessor). Default: 5, 10, 15, ... below the topics.", tables="data")
    tau_target: float = option(0.9, "Target tau-b of the planning answer.", ge=-1, le=1)
    agreement_target: float = option(
        0.9, "Target decision agreement (t test) of the planning answer.", ge=-1, le=1)
    planning_probability: float = option(
        0.95, "Probability with which the planning answer must reach the target.", gt=0, lt=1)
    swap_trials: int = option(
        0, "Trials of the swap rates per qrels (two disjoint halves of the qrels' topics per "
        "trial; 0, the default, leaves ``assessor_swap`` empty).", ge=0)
    simulate_concentration: float | None = option(
        None, "Concentration ``alpha`` of the per-topic assessor model (pseudo-observations of "
        "the pooled row in every topic's row; large: topics alike, small: each topic its own). "
        "Default (None): estimated per reference grade by maximum Dirichlet-multinomial marginal "
        "likelihood over the topics.", tables="data", gt=0)
    simulate_depth: list[int] | None = option(
        [10, 100], "Upper edges of rank-depth bins: the model's rows are conditioned as well on "
        "the bin of the best rank any run gave the passage (``[10, 100]``: 1-10, 11-100, beyond "
        "100 or retrieved by no run, the default). None or empty: no depth bins.", tables="data")


# ----------------------------------------------------------------------------- the study

#: The kernel's jobs, in plan order: each a named sub-plan with its own items, shards and
#: fields (a shard's :attr:`~irsim.engine.base.Shard.part` is its job's position here, as
#: :class:`irsim.engine.composite.PerCollection` tags a collection's shards). ``labels``:
#: one item per label pair; ``ranks``: one item per (other qrels, metric), its rank and
#: decision agreement; ``simulation``: one item, blocks of simulated trials; ``swaps``: one
#: item per (qrels, metric) with the reference first, blocks of swap trials.
JOBS = ("labels", "ranks", "simulation", "swaps")


@dataclass(frozen=True)
class Assessors:
    """The study object (plan, kernel, fields, finalize over the engine): its normalised
    :class:`Config` and what ``make`` derives from it and the data."""

    config: Config
    seed: int
    test_B: int
    per_shard: int
    per_rep: int = REPLICATE_BLOCK
    simulation: tuple = ()
    bayes: BayesRules = field(default_factory=BayesRules)
    name: str = "assessors"

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`; the qrels, composites, label pairs and simulation
        options through the prepared data and `simulation`)."""
        return fingerprint(self.config, Config, derived={
            "test_B": self.test_B, "simulation": list(self.simulation), "seed": self.seed})

    def _corrections(self, test: str) -> tuple[str, ...]:
        """The corrections of `test`: ``none`` only for the simultaneous (Tukey) tests."""
        return ("none",) if test in SIMULTANEOUS else tuple(self.config.corrections)

    # -- the jobs: plan (items, reps), fields and kernel of each

    def _units(self, data: AssessorData, job: str) -> int:
        """The items of `job`."""
        return {"labels": len(data.pairs), "ranks": len(data.others) * len(data.metrics),
                "simulation": int(data.sim is not None),
                "swaps": (1 + len(data.others)) * len(data.metrics)}[job]

    def _reps(self, job: str) -> list[tuple[int, int]]:
        """The replicate blocks of every item block of `job`."""
        trials = {"simulation": self.config.simulate_trials,
                  "swaps": self.config.swap_trials}.get(job)
        return [(0, 1)] if trials is None else block_ranges(int(trials), self.per_rep)

    def plan(self, data: AssessorData) -> list[Shard]:
        """Every job's item blocks x replicate blocks, job after job (:data:`JOBS`)."""
        shards: list[Shard] = []
        for part, job in enumerate(JOBS):
            for items in block_ranges(self._units(data, job), self.per_shard):
                for reps in self._reps(job):
                    shards.append(Shard(len(shards), items, reps, part))
        return shards

    def _job_fields(self, data: AssessorData, job: str) -> dict:
        """The fields `job`'s kernel fills (none when it has no item)."""
        n = self._units(data, job)
        if not n:
            return {}
        cfg = self.config
        if job == "labels":
            return {"label": Slab((n, len(LABEL_STATS), len(LABEL_COLUMNS)))}
        if job == "ranks":
            out = {"rank": Slab((n, len(RANK_COLUMNS))),
                   "decision": Count((n, len(cfg.tests), len(cfg.corrections),
                                      len(DECISION_COUNTS)), along="items")}
            if self.bayes.tests:
                out["bayes"] = Count((n, len(self.bayes.tests), len(BAYES_COUNTS)),
                                     along="items")
            return out
        if job == "simulation":
            trials = int(cfg.simulate_trials)
            shape = (trials, len(data.metrics), len(data.sim.sizes),
                     1 + len(cfg.corrections) * len(DECISION_COUNTS))
            return {"sim_plan": Slab(shape, along="reps"),
                    "sim_kappa": Slab((trials, 2), along="reps")}
        return {"swap": Count((n, ABSOLUTE.count, 2))} if cfg.swap_trials else {}

    def fields(self, data: AssessorData) -> dict:
        return {k: v for job in JOBS for k, v in self._job_fields(data, job).items()}

    def fields_of(self, shard: Shard, data: AssessorData) -> tuple[str, ...]:
        """The fields `shard`'s kernel returns (its job's), for the merge's hints."""
        return tuple(self._job_fields(data, JOBS[shard.part]))

    def kernel(self, shard: Shard, data: AssessorData) -> dict:
        job = JOBS[shard.part]
        lo, hi = shard.items
        cfg = self.config
        if job == "labels":
            return {"label": np.stack([
                label_row(p, data.scale, data.rel, B=int(cfg.B), level=1.0 - cfg.alpha,
                          seed=self.seed, key=p.key) for p in data.pairs[lo:hi]])}
        if job == "ranks":
            rows = [self._rank_unit(data, *divmod(u, len(data.metrics))) for u in range(lo, hi)]
            out = {name: np.stack([r[k] for r in rows])
                   for k, name in enumerate(("rank", "decision", "bayes"))}
            return out if self.bayes.tests else {k: out[k] for k in ("rank", "decision")}
        if job == "simulation":
            plan, kappa = simulate_trials(data, *shard.reps, seed=self.seed, alpha=cfg.alpha,
                                          corrections=tuple(cfg.corrections))
            return {"sim_plan": plan, "sim_kappa": kappa}
        return {"swap": swap_counts(data, lo, hi, *shard.reps, seed=self.seed)}

    def _rank_unit(self, data: AssessorData, j: int, m: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rank agreement, decision counts and Bayesian decision counts of other qrels `j`
        and metric `m` (one item of the ``ranks`` job)."""
        cfg = self.config
        x, y, _ = data.compared(j, m)
        ra = rank_agreement(x, y, B=int(cfg.B), seed=self.seed,
                            confidence_level=1.0 - cfg.alpha, study=RANK_STREAM, key=(j, m))
        mx, my = system_means(x), system_means(y)
        k = min(int(cfg.top_k), len(mx))
        rank = np.array((ra.tau_b, *ra.tau_b_ci, ra.tau_ap, *ra.tau_ap_ci, ra.spearman,
                         *ra.spearman_ci, float(np.argmax(mx) == np.argmax(my)),
                         float(top_k_overlap(mx, my, k))))
        dec = np.zeros((len(cfg.tests), len(cfg.corrections), len(DECISION_COUNTS)), np.int64)
        dx, dy = pair_differences(x), pair_differences(y)
        for ti, test in enumerate(cfg.tests):
            px, py = (pvalues(test, v, B=self.test_B, seed=self.seed, key=(j, m),
                              pvalue=cfg.pvalue) for v in (x, y))
            for ci, corr in enumerate(self._corrections(test)):
                dec[ti, ci] = decision_counts(px, py, dx, dy, cfg.alpha, corr)
        bay = np.zeros((len(self.bayes.tests), len(BAYES_COUNTS)), np.int64)
        for bi, test in enumerate(self.bayes.tests):
            # the same posterior draws under both qrels (one stream key per item)
            cx, cy = (bayes_codes(self.bayes, test, v, B=self.test_B, seed=self.seed,
                                  key=(j, m)) for v in (x, y))
            bay[bi] = bayes_decision_counts(cx, cy)
        return rank, dec, bay

    def finalize(self, merged: dict, data: AssessorData) -> dict:
        cfg = self.config
        gstudy = gstudy_tables(data, B=int(cfg.B), alpha=cfg.alpha, seed=self.seed,
                               max_topics=int(cfg.max_topics),
                               max_assessors=int(cfg.max_assessors))
        empty = np.zeros((0, len(LABEL_STATS), len(LABEL_COLUMNS)))
        return {"label_agreement": label_table(merged.get("label", empty), data),
                "label_agreement_topic": label_topic_table(data),
                "confusion": confusion_table(data),
                "rank_agreement": rank_table(merged["rank"], data, int(cfg.top_k)),
                "system_means": means_table(data),
                "decision_agreement": decision_table(merged["decision"], data, cfg.tests,
                                                     self._corrections),
                "bayes_decision_agreement": bayes_table(merged.get("bayes"), data,
                                                        self.bayes, self.test_B),
                **gstudy, **self._simulated(merged, data),
                "assessor_swap": swap_table(merged.get("swap"), data, int(cfg.swap_trials))}

    def _simulated(self, merged: dict, data: AssessorData) -> dict[str, pa.Table]:
        """The simulation's tables (empty without it)."""
        names = ("assessor_model", "simulated_trials", "simulated_agreement",
                 "assessor_planning", "assessor_planning_answer")
        sim = data.sim
        if sim is None:
            return {n: table(n, []) for n in names}
        cfg = self.config
        return simulation_tables(sim, data, merged["sim_plan"], merged["sim_kappa"],
                                 alpha=cfg.alpha, corrections=tuple(cfg.corrections),
                                 tau_target=cfg.tau_target,
                                 agreement_target=cfg.agreement_target,
                                 probability=cfg.planning_probability)


def normalised(config: Config, bayes: BayesRules) -> Config:
    """`config` with its values as the study holds them (and its fingerprint shows them):
    integers, floats, tuples of names, the Bayesian options checked (`bayes`)."""
    ints = {k: int(getattr(config, k)) for k in (
        "B", "top_k", "max_topics", "max_assessors", "simulate_trials", "swap_trials")}
    floats = {k: float(getattr(config, k)) for k in (
        "alpha", "tau_target", "agreement_target", "planning_probability")}
    return dataclasses.replace(
        config, **ints, **floats, tests=tuple(config.tests),
        corrections=tuple(str(c) for c in config.corrections), pvalue=str(config.pvalue),
        **bayes.options())


def default_test_B(config: Config, pairs: int) -> int:
    """``test_B`` when the config leaves it None: 10,000, or the smallest multiple of 1,000
    whose smallest Monte Carlo p-value ``1/(test_B+1)`` passes ``alpha / pairs`` when a
    Monte Carlo test is corrected by Bonferroni or Holm over `pairs` (so that every default
    can reject).

    Examples
    --------
    >>> default_test_B(Config(), 1830), default_test_B(Config(), 28)
    (37000, 10000)
    >>> default_test_B(Config(corrections=["none", "bh"]), 1830)
    10000
    """
    need = 0
    if set(config.corrections) & {"bonferroni", "holm"} and any(
            TESTS[t].monte_carlo and t not in SIMULTANEOUS for t in config.tests
            if t in TESTS):
        need = math.ceil(pairs / float(config.alpha))  # (B + 1) alpha >= pairs, B + 1 > it
    return max(10000, -(-need // 1000) * 1000)


@study("assessors", config=Config, data=KIND, order=110, tables=list(TABLE_SPECS),
       title="Assessor agreement",
       example=dict(
           overrides={"dl19_pair": [  # two of DL19's qrels, the 6 TUW19 runs
               "collection=trec", "data_dir={data}",
               "collection.runs=dl19-assessors/runs/TUW19-*.gz",
               "+collection.qrels={nist:dl19-assessors/qrels/nist.txt,"
               "froebe:dl19-assessors/qrels/froebe.txt}",
               "experiment.metrics=[nDCG@10,P@10]", "experiment.tests=[t]", "experiment.B=50",
               "experiment.max_topics=20"]},
           keywords=dict(reference="ref", rel=1, metrics=["AP", "P@10"], tests=["t"],
                         corrections=["none"], B=20, max_topics=30, simulate_trials=20,
                         simulate_from="other", planning_sizes=[5, 10, 20]),
           figures=["assessors_kappa.png", "assessors_means_*", "assessors_bump_*",
                    "assessors_decisions.png", "assessors_dstudy.png",
                    "assessors_simulated_tau.png"]),
       description="whose judgments? label, ranking and significance-decision agreement "
                   "between a reference qrels and other assessors' (people, LLMs, "
                   "composites)",
       # the console: mean kappa of every qrels against the reference (binary and graded
       # labels), and tau-b and decision agreement summarised over the qrels
       headlines={"label_agreement": Headline(
                      ("qrels_a", "qrels_b", "statistic", "labels"), "mean",
                      where={"statistic": "kappa", "qrels_a": "first"}, rows=30,
                      label="kappa against the reference, mean over topics"),
                  "rank_agreement": Headline(("qrels", "metric"), "tau_b", summary="qrels"),
                  "decision_agreement": Headline(
                      ("qrels", "metric", "test", "correction"), "agreement",
                      summary="qrels", rows=30)},
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
    check_config(config)
    prepared = prepare(config, data)
    S = len(prepared.systems)
    pairs = S * (S - 1) // 2
    test_B = default_test_B(config, pairs) if config.test_B is None else int(config.test_B)
    for test in config.tests:
        if TESTS[test].monte_carlo and test not in SIMULTANEOUS:
            for corr in set(config.corrections) & {"bonferroni", "holm"}:
                # the smallest Monte Carlo p-value, 1 / (test_B + 1), must pass alpha / pairs
                if (test_B + 1) * float(config.alpha) < pairs:
                    log.warning("%s with %s over %d pairs cannot reject anything with %s=%d "
                                "(the smallest p-value is 1/(test_B+1)); raise it above %d",
                                test, corr, pairs, param("test_B"), test_B,
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
    bayes = BayesRules.of(config)
    study = Assessors(config=normalised(config, bayes), seed=int(seed), test_B=test_B,
                      per_shard=per_shard, per_rep=per_rep, simulation=simulation,
                      bayes=bayes)
    # one row's bootstrap intervals: B replicates of every topic, and the test_B resamples
    topics = max(len(s.topics) for s in prepared.scores.values())
    check_study_memory(study, prepared, f"{param('B')}, {param('test_B')} or "
                       f"{param('simulate_trials')}",
                       extra=4 * 8 * topics * max(int(config.B), test_B))
    return study, prepared
