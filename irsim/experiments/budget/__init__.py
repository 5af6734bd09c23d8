"""budget: judging on a budget. A proxy (an LLM, a crowd, an automatic judge) labels
everything, people label a sample: which estimator keeps its promises at which budget?

The estimand, stated once: **the mean metric of each system (and each pairwise difference)
over the collection's topics as it would be under full gold judgments**. It is a
finite-population quantity: the topics are the collection's and the pool of judgments is
the runs' pool. People's labels are a simple random sample without replacement of the
units (whole topics, or (topic, document) pairs of the pool), so the variance of every
sample-based estimator carries the finite-population correction ``1 - n/N`` (0 when every
unit is judged), and the proxy's own mean over the whole pool, known exactly, adds none
(:mod:`irsim.stats.ppi`).

Estimators, side by side (:data:`~irsim.experiments.budget.kernel.ESTIMATORS`):

- ``proxy``: the proxy's qrels alone, with the usual t interval over topics (honest only
  if the proxy is perfect);
- ``gold``: the gold labels of the sample alone (unbiased, wide);
- ``ppi``: the proxy's mean corrected by the mean gold - proxy difference on the sample
  (Angelopoulos et al. 2023);
- ``ppi_pp``: PPI++ with the tuned weight ``lam`` (Angelopoulos, Duchi and Zrnic 2023);
- ``stratified``: PPI per stratum (the proxy's grade or the topic for judgments, quantile
  groups of the proxy's topic score for topics) with a tuned ``lam`` per stratum and a
  Neyman allocation of the budget from a pilot.

Two sampling units: ``topics`` (people judge whole topics: any metric) and ``judgments``
(people judge pairs of the pool: exact for metrics linear in the labels given the ranking,
P@k, DCG@k and RBP; the others are studied with the topics unit only, see
:mod:`irsim.metrics.linear`).

Known truth by resampling real data: each trial draws which units people label, computes
every estimator, and compares it with the full-gold value (coverage, width, bias, RMSE;
tau-b and tau_AP of the ranking; significance decisions on every pair against the
full-gold decisions). The trials run on the engine (blocks of trials are shards; resumable,
local == Ray); the planning table gives the smallest budget at which an estimator's
intervals are honest and its decisions agree with full gold judging.

The package: the ``Config``, the study object and the registration here; the prepared data
in :mod:`~irsim.experiments.budget.prepare`; the trials in
:mod:`~irsim.experiments.budget.kernel`; the tables in
:mod:`~irsim.experiments.budget.tables`; the report in
:mod:`~irsim.experiments.budget.report`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irsim.engine.base import Shard, block_ranges
from irsim.engine.partials import Slab, Sum
from irsim.errors import ConfigError, param
from irsim.experiments.budget.kernel import ESTIMATORS, Layout, trials
from irsim.experiments.budget.prepare import BudgetData, prepare
from irsim.experiments.budget.tables import TABLE_SPECS, finalize_tables
from irsim.kit.common import Shards
from irsim.kit.qrels_set import KIND, AssessorInput
from irsim.params import Choice, Options, fingerprint, option
from irsim.registry import study
from irsim.stats.multiple import Correction

__all__ = ["Config", "Budget", "BudgetData", "Unit", "Strata", "make"]


class Unit(Choice):
    """What people label."""

    topics = "topics"
    judgments = "judgments"


class Strata(Choice):
    """Strata of the judgments unit's stratified estimator."""

    grade = "grade"
    topic = "topic"


@dataclass
class Config(Options):
    """Parameters of ``experiment=budget``."""

    name: str = option("budget", "``budget``.")
    gold: str | None = option(
        None, "The gold qrels (people's judgments; a key of ``collection.qrels``). Default: "
        "the first qrels given.", tables="data")
    proxy: list[str] | None = option(
        None, "The proxy qrels (an LLM's, a crowd's, a cheaper assessor's), each studied in "
        "turn. Default: every qrels but the gold. A proxy must judge every gold topic, on "
        "the gold's scale; a document it did not label counts as non-relevant.",
        tables="data")
    votes: bool = option(
        False, "Add the automatic judge ``votes`` as a proxy: a document's grade grows with "
        "the share of runs ranking it within ``votes_depth`` (after Soboroff, Nicholas and "
        "Cahan 2001; :func:`irsim.experiments.budget.prepare.votes_qrels`). A proxy over "
        "the whole pool that needs no labels.", tables="data")
    votes_depth: int = option(10, "Rank depth of the ``votes`` judge.", tables="data", ge=1)
    metrics: list[str] = option(
        ["P(rel=2)@10", "DCG@10", "nDCG@10", "AP"], "Metrics (trec_eval-exact names of "
        ":func:`irsim.evaluate`); the judgments unit studies those linear in the labels "
        "(P@k, DCG@k, RBP).", tables="data")
    units: list[Unit] = option(
        ["topics", "judgments"], "Sampling units: ``topics`` (people judge whole topics) "
        "and ``judgments`` ((topic, document) pairs of the pool at the linear metrics' "
        "depth).", tables="data")
    budgets: list[float] = option(
        [0.1, 0.2, 0.3, 0.5, 0.75], "Budgets of people's labels: a value in (0, 1] is a "
        "share of the unit's pool (of the topics, or of the pooled judgments); a value > 1 "
        "a number of gold judgments (topics unit: divided by the mean number of gold "
        "judgments of a topic). At least 2 units each.", tables="data")
    strata: Strata = option(
        Strata.grade, "Strata of the judgments unit's ``stratified`` estimator: the "
        "proxy's ``grade`` of the pair, or its ``topic``.", tables="data")
    topic_strata: int = option(
        3, "Strata of the topics unit's ``stratified`` estimator: quantile groups of the "
        "topics' mean proxy score.", tables="data", ge=1)
    pilot: float = option(
        0.5, "Share of the stratified estimator's budget drawn first, in proportion to the "
        "strata (at least 2 each), to estimate each stratum's residual standard deviation "
        "for the Neyman allocation of the whole budget.", gt=0, le=1)
    alpha: float = option(
        0.05, "Significance level of the tests; the intervals' level is ``1 - alpha``.",
        gt=0, lt=1)
    corrections: list[Correction] = option(
        ["holm", "none"], "Multiple-comparison corrections over all pairs of systems (the "
        "first one decides the planning answer).")
    trials: int = option(500, "Trials (draws of the units people label) per budget.", ge=2)
    agreement_target: float = option(
        0.9, "Decision agreement with full gold judging the planning answer requires.",
        ge=0, le=1)
    coverage_tolerance: float = option(
        0.01, "How far below the nominal level an interval's coverage may be and still "
        "count as honest: honest when the upper end of its Monte Carlo band reaches "
        "``1 - alpha - coverage_tolerance`` (0: the nominal level itself, which many trials "
        "turn into a test of the last permille).", ge=0, lt=1)

    def check(self) -> None:
        """The lists name at least one value (each field's bounds are its own, checked by
        the Config itself)."""
        if not self.units:
            raise ConfigError(f"{param('units')} must name at least one unit")
        if not self.budgets:
            raise ConfigError(f"{param('budgets')} must give at least one budget")
        if not self.corrections:
            raise ConfigError(f"{param('corrections')} must name at least one correction")


@dataclass(frozen=True)
class Budget:
    """The study object: blocks of trials over the engine, with its normalised `config`
    (``alpha``, ``corrections``, ``trials``, ``pilot``, ``agreement_target``,
    ``coverage_tolerance``; the data-side fields through the prepared data)."""

    config: Config
    seed: int
    per_rep: int
    name: str = "budget"

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (the data-side ones through the prepared
        data)."""
        return fingerprint(self, Config)

    def _shape(self, data: BudgetData) -> tuple[int, ...]:
        U, B = data.budgets.shape
        return (U * B, len(data.proxies), len(data.metrics), len(ESTIMATORS))

    def plan(self, data: BudgetData) -> list[Shard]:
        """Blocks of trials, each over every unit, budget, proxy and metric."""
        configs = self._shape(data)[0]
        return [Shard(i, (0, configs), reps)
                for i, reps in enumerate(block_ranges(self.config.trials, self.per_rep))]

    def fields(self, data: BudgetData) -> dict:
        lay = Layout(len(self.config.corrections))
        shape = self._shape(data)
        return {"record": Slab((self.config.trials, *shape, lay.size), along="reps"),
                "errors": Sum((*shape, len(data.systems)), bits=32)}

    def kernel(self, shard: Shard, data: BudgetData) -> dict:
        c = self.config
        rec, errs = trials(data, *shard.reps, seed=self.seed, alpha=c.alpha,
                           corrections=_names(c.corrections), pilot=c.pilot)
        return {"record": rec, "errors": self.fields(data)["errors"].addends(errs, axis=0)}

    def finalize(self, merged: dict, data: BudgetData) -> dict:
        c = self.config
        return finalize_tables(merged["record"], np.asarray(merged["errors"], np.float64),
                               data, alpha=c.alpha, corrections=_names(c.corrections),
                               agreement_target=c.agreement_target,
                               coverage_tolerance=c.coverage_tolerance)


def _names(corrections: list[Correction]) -> tuple[str, ...]:
    """The corrections as the kernel and the tables spell them."""
    return tuple(str(c) for c in corrections)


@study("budget", config=Config, data=KIND, order=115, tables=list(TABLE_SPECS.values()),
       title="Judging on a budget",
       example=dict(  # its golden case is the preset's (budget_dl19)
           keywords=dict(metrics=["P@10", "DCG@10"], budgets=[0.3, 0.6], trials=20,
                         progress=False),
           figures=["budget_coverage_other.png", "budget_width_other.png",
                    "budget_agreement_other.png"]),
       description="judging on a budget: a proxy labels everything, people a sample; "
                   "coverage, width, decisions and the budget each estimator (proxy only, "
                   "gold only, PPI, PPI++, stratified PPI) needs",
       headlines={"budget_planning": (("proxy", "metric", "unit", "estimator"),
                                      "judgments")},
       question=("Judging on a budget: a model labels everything and people a sample. "
                 "Which estimator (proxy only, gold only, PPI, PPI++, stratified PPI) keeps "
                 "its confidence intervals honest and its significance decisions in line "
                 "with full gold judging, at which budget, and how many gold judgments does "
                 "it save?"))
def make(config: Config, data: AssessorInput, *, seed: int, shards: Shards
         ) -> tuple[Budget, BudgetData]:
    """Check the parameters, evaluate every qrels once and build the pool."""
    config.check()
    prepared = prepare(config, data)
    _, per_rep = shards.get(1, 50)
    if per_rep < 1:
        raise ConfigError(f"{param('shard_replicates', 'engine')} must be >= 1, got {per_rep}")
    return Budget(config, seed=int(seed), per_rep=per_rep), prepared
