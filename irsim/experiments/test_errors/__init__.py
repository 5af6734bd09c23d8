"""Known-truth simulation: Type I error and power of paired significance tests.

Design (after Urbano, Lima & Hanjalic, SIGIR 2019): for each metric of a collection, a
:class:`~irsim.simulate.pairs.TopicSimulator` is fit to the score matrix (a margin per
system, a Gaussian copula per system pair). A *trial* picks an ordered pair of systems
``(baseline, other)`` uniformly; the copula of that pair ties two new systems on ``n`` new
topics: the baseline keeps the baseline's margin and the experimental system gets the
**same margin shifted** (proportional odds, :meth:`~irsim.simulate.margins.Margins.mean`) so that
its true mean exceeds the baseline's by exactly ``delta``. With ``delta = 0`` the shift is 0,
the two systems are exchangeable and every test's null hypothesis holds exactly (Type I
error); with ``delta > 0`` the experimental system is stochastically larger (power).

Every test of :mod:`irsim.stats` (t, Wilcoxon, sign, randomisation, paired bootstrap) runs
on the same trials; the rejections at each alpha (``p <= alpha``) are integer counters.
Trials are drawn through the generators of the prepared data, one per (metric, delta)
(:class:`~irsim.simulate.pairs.ShiftPairs`, ``SimulationData.generators``; the
:class:`~irsim.simulate.base.Generator` protocol), in blocks of
:data:`~irsim.rng.REPLICATE_BLOCK` keyed by (metric, topic set size, block); the generators of
a metric score the same draws of a block (common random numbers across ``delta``), and each
block of trials has its own Monte Carlo resamples (keyed by block), so no number depends on
shard sizes, workers or the engine.

Items are the (metric, n, delta) configurations, replicates the trials. A kernel returns
per configuration (fields along the items): rejections per (test, alternative, alpha) and
trials (:class:`~irsim.engine.partials.Count`), and the exact fixed-point sums
(:class:`~irsim.engine.partials.Sum`, each addend rounded to 2^-32) of the simulated mean
differences and their squares; the generator's fit table is computed from
the data once, in :meth:`TestErrors.finalize`.

The design is a config group (``experiment/design=shift|urbano2019``; Python: ``design=``):
each design (:class:`Shift`, :class:`Urbano2019`) holds only its own parameters
(``experiment.design.<key>``) and makes its study and data. ``experiment/design=urbano2019``
(:class:`UrbanoStudy`, issue 13) runs the paper's own design instead:
generators of :mod:`irsim.simulate` (margins and copulas selected by AIC, fitted to every
collection of a metric and pooled), Type I trials through the first run's margin, Type II/III
trials with the experimental margin moved to baseline + delta (one generator per metric and
kind, :class:`~irsim.simulate.designs.UrbanoTrials`, ``UrbanoData.generators``); tables
``type_1``, ``type_2``, ``type_3``, ``test_errors_families`` and ``test_errors_models``. The
default ``experiment/design=shift`` is the design above, unchanged.

Both designs also write table ``type_m_s`` (issue 28): Gelman and Carlin's Type S rate and
exaggeration ratio of the significant trials (:mod:`irsim.stats.typems`). A kernel records, per
(trial, configuration with delta != 0), the trial's mean difference in fixed point and, per
(test, alternative), the number of alphas at which it is significant
(:class:`~irsim.stats.typems.TypeMFields`: integer counters along the trials, each cell
written by the one shard that owns it); :meth:`TestErrors.finalize` computes the table from
these records (exact sums, order statistics and closed-form bootstrap intervals), so it does
not depend on shard sizes, workers or the engine either.

With ``bayes`` set (issue 28), both designs also run the Bayesian tests of
:data:`irsim.stats.registry.BAYES_TESTS` on the same trials (one batched call per test and
block of trials) and count their decisions (better / worse / equivalent / undecided) per
configuration, an integer :class:`~irsim.engine.partials.Count`; table ``bayes_decisions``
turns them into known-truth error rates. The Bayesian bootstrap draws its Dirichlet weights
from the stream ``test_errors/bayesian_bootstrap`` keyed by the same trial-block coordinates
as the Monte Carlo tests, so these counts do not depend on sharding either.

The study is this package: its ``Config`` and registration here, one module per design
(:mod:`~irsim.experiments.test_errors.shift`: :class:`TestErrors`;
:mod:`~irsim.experiments.test_errors.urbano2019`: :class:`UrbanoStudy`), what both share
(:mod:`~irsim.experiments.test_errors.common`), its tables
(:mod:`~irsim.experiments.test_errors.tables`) and its report
(:mod:`~irsim.experiments.test_errors.report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from irsim.engine.session import Engine
from irsim.errors import ConfigError, param, unknown_name
from irsim.experiments import Shards
from irsim.experiments.test_errors.common import (
    ALPHAS,
    DELTAS,
    TESTS,
    Design,
    TrialTests,
    bayes_decisions_table,
)
from irsim.experiments.test_errors.shift import (
    DIFF_POINT,
    SHARD_ITEMS,
    SHARD_REPLICATES,
    TOPIC_STREAM,
    Shift,
    TestErrors,
    fit_table,
)
from irsim.experiments.test_errors.tables import TABLE_SPECS
from irsim.experiments.test_errors.urbano2019 import (
    MC_UNIT,
    TAILS,
    URBANO_SHARD_ITEMS,
    URBANO_SHARD_REPLICATES,
    URBANO_STREAM,
    Urbano2019,
    UrbanoData,
    UrbanoStudy,
    families_table,
    models_table,
)
from irsim.kit.common import BayesOptions
from irsim.params import option
from irsim.registry import Headline, study
from irsim.simulate.pairs import SimulationData
from irsim.stats._validation import Alternative, PValueMode
from irsim.stats.bootstrap import BootstrapStatistic
from irsim.stats.wilcoxon import WilcoxonMethod

__all__ = [
    "ALPHAS",
    "DELTAS",
    "DESIGNS",
    "TESTS",
    "TABLE_SPECS",
    "Config",
    "Design",
    "Shift",
    "TestErrors",
    "TrialTests",
    "Urbano2019",
    "UrbanoData",
    "UrbanoStudy",
    "bayes_decisions_table",
    "families_table",
    "fit_table",
    "make",
    "models_table",
    # constants of the designs' kernels (bench/bench_scale.py, tests)
    "DIFF_POINT",
    "MC_UNIT",
    "SHARD_ITEMS",
    "SHARD_REPLICATES",
    "TAILS",
    "TOPIC_STREAM",
    "URBANO_SHARD_ITEMS",
    "URBANO_SHARD_REPLICATES",
    "URBANO_STREAM",
]

#: Designs of the study: the options of the config group ``experiment/design``.
DESIGNS: dict[str, type[Design]] = {"shift": Shift, "urbano2019": Urbano2019}

@dataclass
class Config(BayesOptions):
    """Parameters of ``experiment=test_errors`` (``name`` names the experiment)."""

    NOTES = {  # on the Bayesian options it inherits (irsim.params.parameters)
        "bayes": (
            "They run on the same trials (table ``bayes_decisions``); the Bayesian bootstrap "
            "uses ``B`` posterior draws."),
    }

    name: str = option("test_errors", "``test_errors``.")
    tests: list[str] = option(
        list(TESTS), "Paired tests of :mod:`irsim.stats` to evaluate: any of ``t``, ``wilcoxon``, "
        "``sign``, ``randomisation``, ``paired_bootstrap``.")
    sizes: list[int] = option(
        [25, 50, 100], "Topic set sizes n of the simulated pairs.", ge=2)
    deltas: list[float] = option(
        list(DELTAS), "True differences in mean between the experimental and the baseline system "
        "(0: Type I error).")
    alpha: list[float] = option(
        list(ALPHAS), "Significance levels; a test rejects when ``p <= alpha``.", gt=0, lt=1)
    alternatives: list[Alternative] = option(
        ["two-sided"], "``two-sided``, ``greater`` (the experimental system is better) and/or "
        "``less``.")
    trials: int = option(10000, "Simulated system pairs per (metric, topic set size, delta).",
                         ge=1)
    B: int = option(
        1000, "Resamples of the Monte Carlo tests (randomisation, paired bootstrap). With one of "
        "them, ``B * alpha >= 1`` for every alpha (a Monte Carlo p-value moves in steps of "
        "1/B): the default alphas down to 0.001 need B >= 1000.", ge=1)
    pvalue: PValueMode = option(
        PValueMode.count, "Monte Carlo p-value ``count/B`` (as in the papers) or "
        "``(count+1)/(B+1)``.")
    drop_duplicates: bool = option(True, "Leave out runs identical to another run.", tables="data")
    drop_bottom: float = option(
        0.0, "Leave out this share of the worst runs (Urbano et al.: 0.1).", tables="data",
        ge=0, lt=1)
    wilcoxon_method: WilcoxonMethod = option(
        WilcoxonMethod.auto, ":func:`irsim.stats.wilcoxon` ``method``: ``auto``, ``exact``, "
        "``approx`` or ``r`` (R's defaults).")
    sign_threshold: float = option(
        0.0, "Tie threshold of the sign test: differences with ``|d| <=`` it are ties (Urbano et "
        "al.: 0.01).", ge=0)
    bootstrap_statistic: BootstrapStatistic = option(
        BootstrapStatistic.t, "Paired bootstrap statistic: studentised (``t``, Sakai) or shift "
        "(``mean``, Urbano).")
    ci_level: float = option(0.95, "Level of the binomial (Clopper-Pearson) bands of the rates.",
                             gt=0, lt=1)
    design: Design = option(
        factory=Shift, help="The design, a config group: ``experiment/design=shift`` (the "
        "default; Python: ``design=\"shift\"`` or a :class:`Shift`) or ``urbano2019`` "
        "(:class:`Urbano2019`). ``shift``: the pair's Gaussian copula and a shifted copy of the "
        "baseline's margin (tables ``test_errors``, ``test_errors_fit``). ``urbano2019``: "
        "Urbano, Lima & Hanjalic's design (:mod:`irsim.simulate`: margins and copulas selected "
        "by AIC, collections of a metric pooled; tables ``type_1``, ``type_2``, ``type_3``, "
        "``test_errors_families``, ``test_errors_models``); ``deltas`` > 0 are the Type II/III "
        "differences, Type I is always run; ``alternatives`` ``two-sided`` and ``greater`` "
        "(one-sided). Each design's own parameters are ``experiment.design.<key>`` (below); a "
        "key of the other design is refused.", kind='{"shift", "urbano2019"}')

    #: Config groups: the field ``design`` is chosen among these options
    #: (:func:`irsim.conf.store` stores them as ``experiment/design``).
    GROUPS: ClassVar[dict[str, dict[str, type]]] = {"design": DESIGNS}

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.design, str):  # Python: design="urbano2019" (its defaults)
            if self.design not in DESIGNS:
                raise unknown_name(param("design"), self.design, tuple(DESIGNS))
            self.design = DESIGNS[self.design]()
        elif not isinstance(self.design, Design):
            raise ConfigError(f"{param('design')} must be one of {', '.join(DESIGNS)} or a "
                              f"design object (Shift, Urbano2019), got "
                              f"{type(self.design).__name__}")


#: The key columns of table ``test_errors``'s rates.
_RATE_KEYS = ("metric", "test", "alternative", "n", "delta", "alpha")


def _pools_collections(config: Config) -> bool:
    """Whether the config's design pools several collections of a metric (one generator per
    metric over all of them; ``urbano2019``) or runs on each (``shift``)."""
    return bool(config.design.POOLS)


@study("test_errors", config=Config, data="matrix", order=70,
       title="Type I error and power",
       example=dict(
           overrides={"synthetic": ["collection=synthetic_scores", "experiment.trials=300",
                                    "experiment.B=200", "experiment.sizes=[25,50]",
                                    "experiment.deltas=[0.0,0.05]",
                                    "experiment.alpha=[0.005,0.006,0.007,0.008,0.009,0.01,"
                                    "0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1]"]},
           keywords=dict(tests=["t", "sign"], sizes=[10, 20], deltas=[0.0, 0.05, 0.1],
                         alpha=[0.01, 0.05, 0.1], trials=40, B=50,
                         bayes=["jzs_bf", "t_posterior", "bayesian_bootstrap"]),
           figures=["type1_error_*", "power_*", "bayes_decisions.png", "exaggeration_*",
                    "type_s_*"]),
       tables=TABLE_SPECS,
       pools=_pools_collections, report="irsim.experiments.test_errors.report",
       description=("known-truth simulation: Type I error and power of the t, Wilcoxon, sign, "
                    "randomisation and bootstrap tests on topics simulated from a real collection "
                    "(Urbano et al. 2019)"),
       # the console: Type I error at alpha .05 (delta 0) and power at the middle delta,
       # per test and topic set size; a sweep compares the whole table
       headlines={"test_errors": Headline(_RATE_KEYS, "rate", label="Type I error",
                                          where={"delta": 0.0, "alpha": 0.05}),
                  "test_errors_power": Headline(_RATE_KEYS, "rate", table="test_errors",
                                                label="power",
                                                where={"delta": "middle", "alpha": 0.05})},
       question=("True Type I error and power of every test, on topics simulated to look like "
                 "a real collection; Type I, II and III errors as Urbano et al. (2019) ran "
                 "them"))
def make(config: Config, data: Any, *, seed: int, shards: Shards, engine: Engine | None = None
         ) -> tuple[TestErrors | UrbanoStudy, SimulationData | UrbanoData]:
    """The study and its data, as the config's design makes them (:meth:`Design.make`):
    ``shift``, a simulator fit to every metric of `data`, the shifts of every delta and the
    eligible trial pairs; ``urbano2019``, the generators of every (metric, collection), their
    copulas selected on `engine` (None: in process).

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> matrix = synthetic_scores(systems=6, topics=30, metrics=("AP",), seed=1).matrix
    >>> study, data = make(Config(sizes=[10], deltas=[0.0, 0.02], trials=250), matrix,
    ...                    seed=0, shards=Shards())
    >>> data.metrics, len(study.plan(data)), study.shard_items
    (('AP',), 1, 4096)

    The design is a config group (``experiment/design=urbano2019`` on the command line): in
    Python its name, or the design object with its own parameters:

    >>> config = Config(sizes=[10], deltas=[0.02], trials=250,
    ...                 design=Urbano2019(power_trials=100))
    >>> _pools_collections(config)
    True
    >>> Config(design="urbano2019").design  # doctest: +NORMALIZE_WHITESPACE
    Urbano2019(name='urbano2019', power_trials=0, fit_cache=None, fit_threads=1,
               margin_families=['truncnorm', 'beta', 'kernel'], fit_cache_verify=0)
    >>> Config(design=Shift(margin="kernel")).design.margin
    'kernel'
    """
    return config.design.make(config, data, seed=seed, shards=shards, engine=engine)
