"""``experiment=factorial``: systems compared under designs with more factors than system and
topic: document shards as replicates (Voorhees, Samarov & Soboroff, TOIS 2017), the full
ANOVA with interactions, effect sizes with intervals, REML variance components and every
system pair under every design's model.

Every run is evaluated on the whole collection (the system x topic table, design
``two_way``) and on each of ``shards`` document shards (:func:`irsim.metrics.shards.shard_scores`:
the documents split by the MD5 of the salted docno, every run's ranked list and the qrels
restricted to each shard; one evaluation over the parsed runs). The shard scores are a
``systems x topics x shards`` array, analysed two ways: ``replicated`` (the shards of a cell
as unmatched replicates: Voorhees et al.'s model, error = within-cell variation) and
``crossed`` (shard r is the same set of documents for every run and topic: the full
factorial of Ferro & Silvello 2016). Models: ``fixed`` (every term tested against the
residual, as Voorhees et al. and ``anova_lm`` do) and ``mixed`` (systems fixed, every other
factor random: the system effect tested against the interaction it generalises over;
:mod:`irsim.stats.factorial`).

Per metric the study writes the ANOVA of every (design, model) with omega squared, partial
omega and eta squared and their noncentral-F intervals (Sakai 2014's recommendation); the
REML variance components of each design's mixed model (:mod:`irsim.stats.varcomp`); every
system pair under each (design, model) by Tukey HSD with simultaneous intervals, by the
randomised Tukey HSD (per design, one permutation null; trials keyed by seed, design and
metric) and by paired t-tests with Holm's correction on the whole collection (what the other
studies test); and the count of pairs each calls significant, on the same runs.

The closed-form parts run in the study's finalize; the randomised Tukey tests (and, with
``pair_pvalues``, the Tukey p-values, a numerical integral per pair) are the kernel's jobs,
one shard each, so ``engine=ray`` spreads them and the tables are the same on any engine.

Examples
--------
>>> from irsim.data.synthetic import synthetic_trec
>>> from irsim.kit.common import Shards
>>> runs, qrels = synthetic_trec(runs=4, topics=6, docs_per_topic=80, depth=50, seed=1)
>>> study, data = make(Config(metrics=["AP"], shards=3, B=50), DocCollection(runs, qrels, 50),
...                    seed=1, shards=Shards())
>>> data.full.shape, data.replicated.shape
((1, 4, 6), (1, 4, 6, 3))
>>> [(j.design, j.model, j.method) for j in study.jobs][:3]
[('two_way', None, 'randomised_tukey'), ('replicated', None, 'randomised_tukey'), \
('crossed', None, 'randomised_tukey')]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.collection import DocCollection
from irsim.engine.base import Shard
from irsim.engine.partials import Count, Slab
from irsim.errors import ConfigError, InputError, param
from irsim.experiments.factorial.simulation import (
    TRUTH_METHODS,
    split_counts,
    truth_counts,
    truth_setting,
)
from irsim.experiments.factorial.tables import TABLE_SPECS
from irsim.kit.common import check_choices
from irsim.params import Choice, Options, fingerprint, option
from irsim.registry import Headline, study
from irsim.rng import REPLICATE_BLOCK
from irsim.stats.factorial import design_tukey, randomised_design_tukey
from irsim.stats.ties import score_tolerance

__all__ = ["Config", "Factorial", "FactorialData", "Job", "make", "DESIGNS", "MODELS",
           "METHODS", "REPLICATE_SOURCES", "STREAM", "TABLE_SPECS"]

#: Random stream of the randomised Tukey HSD: ``factorial/<design>``, keyed by the metric.
STREAM = "factorial"


class FactorialDesign(Choice):
    """A design of the shard scores (``two_way``: the whole collection)."""

    two_way = "two_way"
    replicated = "replicated"
    crossed = "crossed"
    nested = "nested"


class ReplicateSource(Choice):
    """Where the replicates of a (run, topic) come from."""

    shards = "shards"
    qrels = "qrels"
    runs = "runs"
    collections = "collections"


class FactorialModel(Choice):
    """The model of the error terms."""

    fixed = "fixed"
    mixed = "mixed"


class PairMethod(Choice):
    """How all pairs are compared."""

    tukey = "tukey"
    randomised_tukey = "randomised_tukey"
    t_holm = "t_holm"
    beta_holm = "beta_holm"


DESIGNS, MODELS, METHODS = FactorialDesign.values(), FactorialModel.values(), PairMethod.values()
REPLICATE_SOURCES = ReplicateSource.values()
#: The blocks a randomised Tukey HSD of each design permutes systems within.
_BLOCKS = {"two_way": "topic", "replicated": "topic", "crossed": "topic_replicate",
           "nested": "topic"}


@dataclass
class Config(Options):
    """Parameters of ``experiment=factorial``."""

    name: str = option("factorial", "``factorial``.")
    metrics: list[str] = option(
        ["AP", "nDCG@10"], "Measures computed on the whole collection and on every shard "
        "(any of ``irsim list metrics``).")
    replicates: ReplicateSource = option(
        ReplicateSource.shards, "Where the replicates of every (run, topic) come from: "
        "``shards`` (the collection's documents split into `shards` by a salted hash), "
        "``qrels`` (every qrels of `replicate_qrels` is a replicate: several assessors), "
        "``runs`` (repeated runs or folds of each system: runs named "
        "``<system><replicate_separator><replicate>``) or ``collections`` (every qrels of "
        "`replicate_qrels` is a collection of its own topics: design ``nested``).")
    shards: int = option(
        5, "``replicates=shards``: document shards. Each document goes to shard "
        "``md5(salt + docno) mod shards``; a run's list on a shard is what it retrieved of that "
        "shard's documents (cut at the collection's depth first).", ge=2)
    salt: str = option("", "Prefixed to every docno before hashing: another split into as many "
                           "shards.")
    # Any: Hydra merges a dict into a typed dict field key by key, which struct mode refuses
    replicate_qrels: Any = option(
        None, "``replicates=qrels`` or ``collections``: the qrels files by name (e.g. ``{nist: "
        "nist.txt, a: a.txt}``; paths relative to the working directory). With ``qrels`` the "
        "analysis keeps the topics every one of them (and the collection's qrels) judges.",
        kind="dict of str to str, optional")
    collection_topics: int | None = option(
        None, "``replicates=collections``: topics per collection (the first that many of each, "
        "in topic order); None: all, which must be as many in every collection.", ge=2)
    replicate_separator: str = option(
        "@", "``replicates=runs``: a run named ``bm25@2`` is replicate ``2`` of system "
        "``bm25`` (split at the last separator); every system needs the same replicates.")
    designs: list[FactorialDesign] = option(
        ["two_way", "replicated", "crossed"], "Any of ``two_way`` (the whole collection), "
        "``replicated`` (replicates unmatched across cells), ``crossed`` (replicates crossed "
        "with systems and topics: shards, qrels), ``nested`` (topics nested in collections: "
        "``replicates=collections``).")
    models: list[FactorialModel] = option(
        list(MODELS), "Any of ``fixed`` (every term against the residual) and ``mixed`` "
        "(systems fixed, topics and shards random).")
    methods: list[PairMethod] = option(
        list(METHODS), "How all pairs are compared: ``tukey`` (per design and model), "
        "``randomised_tukey`` (per design), ``t_holm`` (paired t-tests with Holm's correction "
        "on the whole collection), ``beta_holm`` (beta regression with system and topic "
        "effects, Wald tests with Holm's correction; two_way and replicated, "
        ":mod:`irsim.stats.betareg`).")
    B: int = option(1000, "Trials of the randomised Tukey HSD.", ge=1)
    alpha: float = option(
        0.05, "Significance level; the Tukey intervals and the effect-size intervals are at "
        "``1 - alpha``.", gt=0, lt=1)
    truth_trials: int = option(
        1000, "Simulated collections of the known-truth table (its variance components, topics "
        "and shards; known system effects): the family-wise error and power of each design "
        "and model. 0: none.", ge=0)
    truth_systems: int = option(
        10, "Systems of each simulated collection: the whole-collection means of this many runs "
        "spread over the ranking.", ge=3)
    truth_null: float = option(
        0.5, "Share of the simulated systems given one common effect (their mean): the true "
        "null pairs.", ge=0, le=1)
    split_trials: int = option(
        200, "Random splits of the topics into two halves (Ferro & Sanderson's consistency of "
        "the ANOVA conclusions), per design and model. 0: none.", ge=0)
    pair_pvalues: bool = option(
        False, "Also compute every pair's Tukey p-value (a numerical integral of the "
        "studentized range per pair, about 5 ms each: minutes for 60 systems). The decisions "
        "need only the intervals.")


@dataclass(frozen=True)
class FactorialData:
    """Per-topic scores of every run on the whole collection and on every shard.

    Attributes
    ----------
    metrics, systems, topics : tuple of str
    full : ndarray, shape (metrics, systems, topics)
        The design ``two_way``: the whole collection (with ``replicates=runs``: each
        system's first replicate, one run per system as a user submits it).
    replicated : ndarray, shape (metrics, systems, topics, replicates)
    relevant : ndarray of int, shape (topics, replicates)
        Relevant documents of each topic in each replicate's qrels (a shard's; a cell with
        none scores 0 for every run).
    replicates : tuple of str
        The replicates' names: shard numbers, qrels names or run suffixes.
    crossed : bool
        Whether replicate r is the same thing for every run and topic (a shard, a qrels),
        not a run's own repetition.
    nested : bool
        The replicates are collections with topics of their own (design ``nested``).
    """

    metrics: tuple[str, ...]
    systems: tuple[str, ...]
    topics: tuple[str, ...]
    full: np.ndarray
    replicated: np.ndarray
    relevant: np.ndarray
    replicates: tuple[str, ...] = ()
    crossed: bool = True
    nested: bool = False

    def scores(self, design: str, k: int) -> np.ndarray:
        """The array of `design` for metric index `k` (``nested``: systems, collections,
        topics)."""
        if design == "two_way":
            return self.full[k]
        x = self.replicated[k]
        return np.swapaxes(x, 1, 2) if design == "nested" else x


@dataclass(frozen=True)
class Job:
    """One job of the kernel: a comparison of all pairs (a metric, a design, a model: None
    for the methods that need none, and a method), or a simulation (method ``truth``, or
    ``split_half`` of a design and model) whose trials are split into shards."""

    metric: int
    design: str
    model: str | None
    method: str


@dataclass(frozen=True)
class Factorial:
    """The factorial study (see the module docstring): its normalised `config`, the kernel's
    `jobs`, the known truth of each metric (:mod:`~irsim.experiments.factorial.simulation`),
    the trials per shard and the seed."""

    config: Config
    jobs: tuple[Job, ...]
    truths: tuple[Any, ...]
    shard_trials: int
    seed: int
    name: str = "factorial"

    def fingerprint(self) -> dict[str, Any]:
        """Parameters that determine the tables (from :class:`Config`)."""
        return fingerprint(self, Config)

    def _trials(self, job: Job) -> int:
        return {"truth": self.config.truth_trials,
                "split_half": self.config.split_trials}.get(job.method, 1)

    def _truth_pairs(self) -> int:
        """Pairs of the largest simulated collection (the truth fields' last axis)."""
        t = max([len(s.systems) for s in self.truths] or [2])
        return t * (t - 1) // 2

    def plan(self, data: FactorialData) -> list[Shard]:
        """One shard per comparison job; the trials of a simulation in blocks of
        ``shard_trials``."""
        out: list[Shard] = []
        for i, job in enumerate(self.jobs):
            n = self._trials(job)
            step = n if job.method not in SIMULATIONS else self.shard_trials
            out += [Shard(len(out) + j, (i, i + 1), (lo, min(lo + step, n)))
                    for j, lo in enumerate(range(0, n, step))]
        return out

    def fields(self, data: FactorialData) -> dict[str, Any]:
        n, k = len(self.jobs), len(data.systems)
        m = len(TRUTH_METHODS)
        tp = self._truth_pairs()
        pairs = k * (k - 1) // 2
        return {"p": Slab((n, pairs), along="items"), "low": Slab((n, pairs), along="items"),
                "high": Slab((n, pairs), along="items"),
                "fw": Count((n, m), along="items"), "detected": Count((n, m, tp), along="items"),
                "wrong": Count((n, m, tp), along="items"),
                "false": Count((n, m, tp), along="items"),
                "trials": Count((n,), along="items"),
                "system": Count((n,), along="items"), "pairs": Count((n,), along="items")}

    def kernel(self, shard: Shard, data: FactorialData) -> dict[str, np.ndarray]:
        """One job: a randomised Tukey HSD, the Tukey p-values, or a block of simulated
        trials."""
        i = shard.items[0]
        job, cfg = self.jobs[i], self.config
        if job.method == "truth":
            out = truth_counts(self.truths[job.metric], shard.reps, alpha=cfg.alpha,
                               seed=self.seed, key=job.metric)
            return {k: _pad(v, self._truth_pairs())[None] for k, v in out.items()}
        x = data.scores(job.design, job.metric)
        if job.method == "split_half":
            return split_counts(x, job.design, job.model, shard.reps, alpha=cfg.alpha,
                                seed=self.seed, key=job.metric)
        if job.method == "randomised_tukey":
            r = randomised_design_tukey(x, job.design, blocks=_BLOCKS[job.design],
                                        B=cfg.B, seed=self.seed,
                                        study=f"{STREAM}/{job.design}", key=(job.metric,),
                                        level=1.0 - cfg.alpha)
            return {"p": r.pvalue[None, :], "low": r.low[None, :], "high": r.high[None, :]}
        r = design_tukey(x, job.design, model=job.model, level=1.0 - cfg.alpha)
        return {"p": r.pvalue[None, :]}

    def finalize(self, merged: dict[str, Any], data: FactorialData) -> dict[str, pa.Table]:
        from irsim.experiments.factorial.reduce import tables

        return tables(self, merged, data)


def _pad(v: np.ndarray, pairs: int) -> np.ndarray:
    """Per-pair counts padded to the field's pairs (a metric's truth may have fewer
    systems than another's)."""
    if v.ndim < 2 or v.shape[-1] == pairs:
        return v
    return np.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, pairs - v.shape[-1])])


#: The jobs whose trials are split into shards.
SIMULATIONS = ("truth", "split_half")


def _jobs(config: Config, metrics: int, truth: bool = True) -> tuple[Job, ...]:
    """The kernel's jobs: per metric the randomised Tukey HSD of every design, (with
    ``pair_pvalues``) the Tukey p-values of every design and model, the known truth and the
    split halves of every design and model."""
    jobs = []
    for k in range(metrics):
        if "randomised_tukey" in config.methods:
            jobs += [Job(k, d, None, "randomised_tukey") for d in config.designs]
        if "tukey" in config.methods and config.pair_pvalues:
            jobs += [Job(k, d, m, "tukey") for d in config.designs for m in config.models]
        if config.truth_trials and truth:
            jobs.append(Job(k, "crossed", None, "truth"))
        if config.split_trials:
            jobs += [Job(k, d, m, "split_half") for d in config.designs
                     for m in config.models]
    return tuple(jobs)


def factorial_data(docs: DocCollection, metrics: list[str], shards: int, salt: str
                   ) -> FactorialData:
    """Every run of `docs` evaluated on the whole collection and on each shard (one pass
    each over the parsed runs).

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> runs, qrels = synthetic_trec(runs=3, topics=4, docs_per_topic=60, depth=40, seed=2)
    >>> d = factorial_data(DocCollection(runs, qrels, 40), ["P@10"], 2, "")
    >>> d.replicated.shape, d.systems == runs.names, d.replicates
    ((1, 3, 4, 2), True, ('0', '1'))
    """
    from irsim.metrics import evaluate
    from irsim.metrics.shards import shard_scores

    whole = evaluate(docs.runs, docs.qrels, metrics, depth=docs.depth, missing=docs.missing)
    parts = shard_scores(docs.runs, docs.qrels, metrics, shards, salt=salt, depth=docs.depth)
    if tuple(parts.topics) != tuple(whole.topics) or tuple(parts.runs) != tuple(whole.systems):
        raise InputError("the shard evaluation keeps other runs or topics than the whole "
                         f"collection ({len(parts.topics)} vs {len(whole.topics)} topics)")
    return FactorialData(tuple(whole.metrics), tuple(whole.systems), tuple(whole.topics),
                         np.ascontiguousarray(whole.values, np.float64),
                         np.ascontiguousarray(parts.values, np.float64),
                         np.asarray(parts.relevant), tuple(str(i) for i in range(shards)))


def _scores(config: Config, docs: DocCollection, metrics: list[str]) -> FactorialData:
    """The scores of the replicate source of `config`."""
    from irsim.experiments.factorial.replicates import (
        collections_data,
        qrels_data,
        runs_data,
    )

    if config.replicates == "qrels":
        if not config.replicate_qrels or len(config.replicate_qrels) < 2:
            raise ConfigError(f"{param('replicates')}=qrels needs >= 2 qrels in "
                              f"{param('replicate_qrels')} (name: file)")
        return qrels_data(docs, metrics, config.replicate_qrels)
    if config.replicates == "collections":
        if not config.replicate_qrels or len(config.replicate_qrels) < 2:
            raise ConfigError(f"{param('replicates')}=collections needs >= 2 qrels in "
                              f"{param('replicate_qrels')} (name: file)")
        return collections_data(docs, metrics, config.replicate_qrels,
                                config.collection_topics)
    if config.replicates == "runs":
        return runs_data(docs, metrics, config.replicate_separator)
    return factorial_data(docs, metrics, int(config.shards), config.salt)


def check_data(data: FactorialData, designs: tuple[str, ...]) -> None:
    """Refuse (one line) what no design can analyse: fewer than 3 systems or 2 topics, and
    replicates that are identical (every shard gives every run the same score: nothing to
    separate the residual from the interaction)."""
    s, t = len(data.systems), len(data.topics)
    if s < 3:
        raise InputError(f"experiment=factorial needs >= 3 runs, got {s}")
    if t < 2:
        raise InputError(f"experiment=factorial needs >= 2 topics, got {t}")
    if data.nested and set(designs) - {"two_way", "nested"}:
        raise ConfigError(f"collections (replicates=collections) are analysed by the designs "
                          f"two_way and nested: set {param('designs')}=[two_way,nested]")
    if "nested" in designs and not data.nested:
        raise ConfigError("design nested needs replicates=collections (topics nested in "
                          "collections)")
    if "crossed" in designs and not data.crossed:
        raise ConfigError("design crossed needs replicates that are the same for every run "
                          "and topic (shards, qrels); repeated runs are replicates within a "
                          "cell: use designs two_way and replicated")
    if set(designs) - {"two_way"}:
        x = data.replicated
        spread = np.abs(x - x[..., :1]).max()
        if spread <= score_tolerance(x):
            raise InputError("every shard gives every run the same scores: the replicates "
                             "are identical and the designs with replicates cannot be "
                             "estimated (choose another salt or more shards, or "
                             "designs=[two_way])")


@study("factorial", config=Config, data="docs", order=120,
       title="Designs with many factors",
       example=dict(overrides={
           "synthetic": ["experiment.B=100", "metrics=[AP]", "experiment.truth_trials=250",
                         "experiment.split_trials=40"],
           # the 6 TUW19 runs of DL 2019 under NIST's and two assessors' qrels (the 9
           # topics all three judge) as crossed replicates
           "dl19_qrels": [
               "collection=trec", "collection.runs={data}/dl19-assessors/runs/TUW19-*.gz",
               "collection.qrels={data}/dl19-assessors/qrels/nist.txt", "metrics=[AP,P@10]",
               "experiment.replicates=qrels",
               "experiment.replicate_qrels={nist: {data}/dl19-assessors/qrels/nist.txt, "
               "froebe: {data}/dl19-assessors/qrels/froebe.txt, ferdinand-schlatt: "
               "{data}/dl19-assessors/qrels/ferdinand-schlatt.txt}",
               "experiment.B=100", "experiment.truth_trials=250",
               "experiment.split_trials=20"]},
                    keywords=dict(metrics=["AP", "P@10"], shards=3, B=100, truth_trials=250,
                                  split_trials=20),
                    figures=["factorial_pairs_*", "factorial_effects_*",
                             "factorial_interaction_*", "factorial_truth_*"]),
       description=("replicated and crossed designs with document shards (Voorhees et al. "
                    "2017): full ANOVA with effect sizes, REML variance components, Tukey and "
                    "randomised Tukey HSD of all pairs per design"),
       tables=list(TABLE_SPECS),
       headlines={"factorial_significant": Headline(
           ("metric", "design", "model", "method"), "significant", also=("pairs",))},
       question=("How many system pairs are significantly different once shards, topics and "
                 "their interactions are modelled? ANOVA, effect sizes, variance components "
                 "and Tukey HSD per design"))
def make(config: Config, data: DocCollection, *, seed: int, shards: Any
         ) -> tuple[Factorial, FactorialData]:
    """The factorial study of `config` and the scores of `data` on the whole collection and
    on every shard (the bounds of its fields are checked by :class:`Config` itself)."""
    metrics = [str(m) for m in ([config.metrics] if isinstance(config.metrics, str)
                                else config.metrics)]
    if not metrics:
        raise ConfigError(f"{param('metrics')} lists no metric")
    designs = check_choices(config.designs, DESIGNS, "design", param("designs"))
    check_choices([config.replicates], REPLICATE_SOURCES, "replicate source",
                  param("replicates"))
    models = check_choices(config.models, MODELS, "model", param("models"))
    methods = check_choices(config.methods, METHODS, "method", param("methods"))
    config = replace(config, metrics=metrics, designs=list(designs), models=list(models),
                     methods=list(methods), salt=str(config.salt),
                     replicates=str(config.replicates),
                     replicate_qrels={str(k): str(v) for k, v in
                                      dict(config.replicate_qrels or {}).items()},
                     pair_pvalues=bool(config.pair_pvalues))
    scores = _scores(config, data, metrics)
    check_data(scores, designs)
    if config.split_trials and len(scores.topics) < 4:
        raise InputError(f"split_trials needs >= 4 topics (two halves of >= 2), got "
                         f"{len(scores.topics)}; set split_trials=0")
    # the known truth simulates replicates within (system, topic) cells, not collections
    truths = tuple(truth_setting(scores.full[k], scores.replicated[k], scores.systems,
                                 count=config.truth_systems, null_share=config.truth_null,
                                 crossed=scores.crossed)
                   for k in range(len(metrics))) if config.truth_trials and not scores.nested \
        else ()
    _, per = shards.get(1, REPLICATE_BLOCK)
    per = -(-int(per) // REPLICATE_BLOCK) * REPLICATE_BLOCK  # whole blocks of trials
    return Factorial(config, _jobs(config, len(metrics), bool(truths)), truths, per,
                     int(seed)), scores

