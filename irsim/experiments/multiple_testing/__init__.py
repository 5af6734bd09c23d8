"""Known-truth simulation: family-wise error, false discovery rate and power of corrections.

Design: for each metric of a collection, a
:class:`~irsim.simulate.joint_copula_model.JointCopulaModel` is fit to the score matrix (a
margin per system as in ``experiment=test_errors``, one Gaussian or vine copula across all
systems). A *trial* draws a whole collection: ``m``
distinct systems of the pool on ``n`` new topics, of which ``m0 = floor(share_null m + 1/2)``
share exactly the same true mean (true nulls) and the others are spread above it by known
differences (:mod:`irsim.simulate.joint_copula_model`). Every test runs on all ``m (m - 1) / 2``
system pairs of the trial; each correction of :mod:`irsim.stats.multiple` (``none``,
``bonferroni``, ``holm``, ``bh``, ``by``) adjusts the family of all pairs of the trial and
decides at each alpha. With ``V`` the rejected true nulls, ``S`` the rejected false nulls
and ``R = V + S``:

- family-wise error rate: the share of trials with ``V >= 1``;
- false discovery rate: the mean of ``V / R`` (0 when ``R = 0``);
- per-pair power: the mean over trials of ``S / m1p``, ``m1p`` the truly different pairs
  (NaN when there are none, e.g. ``share_null = 1``).

Tukey's HSD with topics as blocks (``tukey_hsd``: two-way ANOVA without replication, the
studentized range) and the randomised Tukey HSD (``randomised_tukey_hsd``: per topic, the
scores permuted across systems; statistic ``max mean - min mean``) are simultaneous tests of
all pairs: they control the FWER themselves, so no correction is applied again and every
correction's row of a Tukey test holds the same unadjusted simultaneous decisions (as in
``experiment=discpower``). Tukey HSD rejects a pair when
``|mean_i - mean_j| / sqrt(MSE / n) >= q(1 - alpha; m, (m - 1)(n - 1))``, the critical value
of the studentized range computed once per (m, n, alpha) (:func:`critical_range`), MSE the
residual mean square of the trial's two-way ANOVA; the randomised test's p-value of a pair
is the share of B permutations whose range reaches ``|mean_i - mean_j|`` (the tie rule of
:mod:`irsim.stats.ties`; ``pvalue`` count or plus_one) and it rejects when ``p <= alpha``.

A null pair has equal true means: the null of the t, randomisation and bootstrap tests. The
sign test (zero median) and the Wilcoxon test (symmetric differences) have other nulls, which
two different margins shifted to the same mean need not meet, so with the default
``null_margins=own`` their "false" rejections include real departures from their own nulls
(on TREC-8 AP, Bonferroni's FWER for the sign test over 5 systems is 0.07 at alpha 0.05,
the t test's 0.03). ``null_margins=shared`` gives all null systems of a collection one margin
(each keeps its own copula dimension): null pairs are exchangeable and every test's null
holds exactly.

Bands (``ci_level``, Wilson score intervals): the FWER is a binomial proportion over trials;
the FDR and the power are means over trials of per-trial shares in [0, 1], whose variance is
at most ``mean (1 - mean)``, so the Wilson interval with the summed shares as the count is a
conservative band for them.

Trials are drawn through the generators of the prepared data, one per (metric, m, m0, null
margins) (:class:`~irsim.simulate.joint_copula_model.JointCollections`,
:attr:`CollectionData.generators`; the :class:`~irsim.simulate.base.Generator` protocol), in
blocks of :data:`~irsim.rng.REPLICATE_BLOCK` keyed by (metric, n, block) (stream
:data:`TOPIC_STREAM`); the generators of a metric read the same draws and latent sample of a
block, so they serve every ``m`` and ``share_null`` (common random numbers: a collection of
10 holds the systems of the collection of 5), and the Monte Carlo tests draw their resamples
per block and batch of trials (shared by the pairs of a batch, as one run of all pairs
shares them; the randomised Tukey HSD's B permutations are shared by the trials of a batch,
so each trial's p-values are those of :func:`irsim.stats.randomised_tukey_hsd` with the key
``(metric, n, block, batch)``). Items are the (metric, n, m, share_null) configurations,
replicates the trials; a kernel returns integer counters
(:class:`~irsim.engine.partials.Count`): trials, and per (test, correction, alpha) the
trials with a false rejection, the exact fixed-point sum
(:class:`~irsim.engine.partials.Sum`, each ``V / R`` rounded to 2^-32) of ``V / R``, the sum
of ``S`` and the sum of ``R``; no number depends on shard sizes, workers or the engine. For
table ``type_m_s`` (issue 28: Type S and Type M errors of the pairs with a true difference,
pooled) it adds, per (test, correction, alpha), a histogram of the significant comparisons'
ratios ``|d| / |delta|`` rounded to ``1 / RATIO_SCALE`` (``delta`` from the systems' exact
true means), the exact integer sums of those rounded ratios and of their squares, and the
significant comparisons with the wrong sign.

With ``bayes`` set (issue 28), the Bayesian tests of
:data:`irsim.stats.registry.BAYES_TESTS` (the rules of :class:`~irsim.kit.common.BayesRules`,
as in experiment=test_errors) decide every pair of every trial, uncorrected: better /
worse / equivalent / undecided. Per (configuration, Bayesian test) integer counters hold, for
the true null pairs, the pairs with ``0 < |delta| <= bayes_rope`` and those with ``|delta| >
bayes_rope``, the comparisons decided in the true direction (for null pairs: better), in the
other, equivalent and undecided, and the trials with a null pair decided different; table
``bayes_multiple_testing`` sets them beside every significance test's rates on the same
trials (per comparison: false "different" among true nulls, power and wrong direction among
true differences). The Bayesian bootstrap draws its weights from the stream
``multiple_testing/bayesian_bootstrap`` keyed by the batch of trials (as the Monte Carlo
tests), so these counts do not depend on sharding either.

The Tukey tests assume systems exchangeable within a topic (Tukey HSD: sphericity), more
than equal means: with the fitted copula of TREC runs (unequal correlations) their FWER
under a complete null exceeds alpha even with ``null_margins=shared``; with an
equicorrelated copula it is alpha (tests/test_multiple_testing.py).

The study is this package: its ``Config``, :class:`MultipleTesting` and :func:`make` here,
the data its kernel reads (:mod:`~irsim.experiments.multiple_testing.data`), the Tukey
tests' arithmetic (:mod:`~irsim.experiments.multiple_testing.tukey`), its tables
(:mod:`~irsim.experiments.multiple_testing.tables`) and its report.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard, shard_grid
from irsim.engine.partials import Count, FixedPoint, Sum
from irsim.errors import ConfigError, param, unknown_name
from irsim.experiments import Shards
from irsim.experiments.multiple_testing.data import CollectionData, fit_table, prepare
from irsim.experiments.multiple_testing.tables import TABLE_SPECS, bayes_rates_table
from irsim.experiments.multiple_testing.tukey import count_below, critical_range
from irsim.kit.common import (
    BayesOptions,
    SimulatedTests,
    aligned_block,
    check_choices,
    check_positive_int,
    normalised_tests,
    unit_ranges,
)
from irsim.params import Choice, fingerprint, option
from irsim.registry import study
from irsim.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.sampling.permutations import topic_permutations
from irsim.simulate.joint_copula_model import (
    DEPENDENCE,
    MIN_EIGENVALUE,
    VINE_FAMILIES,
    CopulaDependence,
    JointCollections,
    fit_joint_copula_model,
    null_pair_mask,
    true_null_count,
)
from irsim.simulate.margins.tabulated import MarginKind
from irsim.stats import get_test
from irsim.stats._validation import PValueMode
from irsim.stats.anova import studentized_ranges
from irsim.stats.bayes import DECISIONS
from irsim.stats.binomial import wilson
from irsim.stats.bootstrap import BootstrapStatistic
from irsim.stats.multiple import CORRECTIONS, Correction, reject
from irsim.stats.registry import SIMULTANEOUS, tests_of
from irsim.stats.resample import TUKEY_GEMM_MAX_SYSTEMS, tukey_ranges_batched
from irsim.stats.ties import tie_tolerance
from irsim.stats.typems import TypeMRows
from irsim.stats.wilcoxon import WilcoxonMethod
from irsim.tables import table as build_table

__all__ = [
    "FDP_POINT",
    "NULL_MARGINS",
    "SIMULTANEOUS",
    "TESTS",
    "TOPIC_STREAM",
    "CollectionData",
    "Config",
    "MultipleTesting",
    "critical_range",
    "fit_table",
    "make",
]

#: Tests this study runs by default: the paired tests of :data:`irsim.stats.TESTS` (it takes
#: any paired or all-pairs test registered, asked when it checks its options).
TESTS = tests_of("paired")
#: Random stream of the simulated collections.
TOPIC_STREAM = "multiple_testing/collections"
#: The false discovery proportions are summed in fixed point (each rounded to 2^-32): exact,
#: order-free sums.
FDP_POINT = FixedPoint(32)
#: Type S / M (table ``type_m_s``): each comparison's ratio |d| / |delta| is rounded to the
#: grid 1 / RATIO_SCALE; its histogram (last bin: ratios >= RATIO_CAP / RATIO_SCALE = 40)
#: gives the median, the exact integer sums of the grid values the mean and its interval.
RATIO_SCALE = 100
RATIO_CAP = 4000
#: Default shard sizes: configurations x trials. One configuration (m, n, share of true
#: nulls) per shard and 500 trials: the preset's 24 configurations x 1,000 trials are 48
#: shards, so its progress bar moves and an interrupted run resumes (one shard of everything
#: sat at 0/1 for ten minutes). Shard sizes never change the tables.
SHARD_ITEMS, SHARD_REPLICATES = 1, 500


class NullMargins(Choice):
    """How null systems get their margins (see :class:`Config`)."""

    own = "own"
    shared = "shared"


NULL_MARGINS = NullMargins.values()
#: Bytes of one batch of pair differences handed to a test (trials x pairs x topics).
BATCH_BYTES = 32 * 2**20
#: Bytes of one gather of permuted scores of the randomised Tukey HSD (trials x permutations x
#: topics x systems); a memory bound only: no result depends on it.
GATHER_BYTES = 32 * 2**20


@dataclass
class Config(BayesOptions):
    """Parameters of ``experiment=multiple_testing`` (``name`` names the experiment)."""

    NOTES = {  # on the Bayesian options it inherits (irsim.params.parameters)
        "bayes": (
            "They decide every pair of every trial, uncorrected (table "
            "``bayes_multiple_testing``); the Bayesian bootstrap uses ``B`` posterior draws."),
        "bayes_rope": 'The pairs with a true difference inside it are where "equivalent" is right.',
    }

    name: str = option("multiple_testing", "``multiple_testing``.")
    tests: list[str] = option(
        list(TESTS), "Paired tests of :mod:`irsim.stats` run on every pair: any of ``t``, "
        "``wilcoxon``, ``sign``, ``randomisation``, ``paired_bootstrap`` (the default list); and "
        "the simultaneous tests of all pairs ``tukey_hsd`` (Tukey HSD with topics as blocks: "
        "studentized range, two-way ANOVA residual mean square) and ``randomised_tukey_hsd`` (B "
        "permutations of the scores across systems within each topic; ``B`` and ``pvalue`` as for "
        "the other Monte Carlo tests).")
    corrections: list[Correction] = option(
        list(CORRECTIONS), "Corrections over the family of all pairs of a collection: ``none``, "
        "``bonferroni``, ``holm``, ``bh`` (Benjamini-Hochberg), ``by`` (Benjamini-Yekutieli). The "
        "Tukey tests control the family-wise error themselves: for them every correction's "
        "decision is the unadjusted simultaneous decision (the rows of all corrections are "
        "equal), as ``significant_adjusted`` in ``experiment=discpower``.")
    systems: list[int] = option(
        [5, 10, 20], "Systems m per simulated collection (each >= 2, at most the systems "
        "modelled).", ge=2)
    sizes: list[int] = option([25, 50], "Topics n per simulated collection.", ge=2)
    share_null: list[float] = option(
        [1.0, 0.5], "Share of the m systems with the same true mean (true nulls), in [0, 1]; 1.0: "
        "no true difference at all.", ge=0, le=1)
    spread: float = option(
        0.1, "The other systems' true means are ``null_mean + spread k / m1``, k = 1 .. m1.",
        tables="data", gt=0)
    null_margins: NullMargins = option(
        NullMargins.own, "``own``: each null system keeps its own margin, shifted to the null mean "
        "(equal means: the null of the t, randomisation and bootstrap tests; the sign and Wilcoxon "
        "nulls need not hold). ``shared``: all null systems of a collection take the margin of the "
        "first one (exchangeable null pairs: every test's null holds exactly).")
    null_mean: float | None = option(
        None, "Common true mean of the null systems (default: the median of the systems' means "
        "minus spread / 2).", tables="data", gt=0, lt=1)
    alpha: list[float] = option(
        [0.05], "Levels: FWER level for Bonferroni and Holm, FDR level for BH and BY; a pair is "
        "significant when the procedure rejects it.", gt=0, lt=1)
    trials: int = option(1000, "Simulated collections per (metric, n, m, share_null).", ge=1)
    B: int = option(
        1000, "Resamples of the Monte Carlo tests (randomisation, paired bootstrap, randomised "
        "Tukey HSD).", ge=1)
    pvalue: PValueMode = option(
        PValueMode.count, "Monte Carlo p-value ``count/B`` or ``(count+1)/(B+1)``.")
    dependence: CopulaDependence = option(
        CopulaDependence.gaussian, "Copula across all systems: Gaussian (normal-score correlation, "
        "shrunk to positive definite) or a vine fitted with pyvinecopulib.",
        tables="data")
    min_eigenvalue: float = option(
        MIN_EIGENVALUE, "Gaussian: floor of the smallest eigenvalue of the shrunk correlation "
        "matrix.", tables="data", gt=0, lt=1)
    vine_truncation: int = option(
        2, "Vine: trees fitted (the rest independence); small for many systems and few topics.",
        tables="data", ge=1)
    vine_families: list[str] = option(
        list(VINE_FAMILIES), "Vine: pair-copula families (pyvinecopulib names; independence is "
        "always allowed).", tables="data")
    margin: MarginKind = option(
        MarginKind.auto, "Margins of the generator: ``auto`` is empirical for discrete metrics, "
        "else kernel.", tables="data")
    drop_duplicates: bool = option(True, "Leave out runs identical to another run.", tables="data")
    drop_bottom: float = option(0.0, "Leave out this share of the worst runs.", tables="data",
                                ge=0, lt=1)
    wilcoxon_method: WilcoxonMethod = option(
        WilcoxonMethod.auto, ":func:`irsim.stats.wilcoxon` ``method``: ``auto``, ``exact``, "
        "``approx`` or ``r``.")
    sign_threshold: float = option(
        0.0, "Tie threshold of the sign test (``|d| <=`` it is a tie).", ge=0)
    bootstrap_statistic: BootstrapStatistic = option(
        BootstrapStatistic.t, "Paired bootstrap statistic: studentised (Sakai) or shift (Urbano).")
    ci_level: float = option(0.95, "Level of the Wilson bands.", gt=0, lt=1)



@dataclass(frozen=True)
class MultipleTesting(SimulatedTests):
    """The known-truth study of multiple comparisons.

    Parameters
    ----------
    config : Config
        The study's parameters, normalised and checked by :func:`make` (or
        :meth:`from_config`; :meth:`of` builds one from keywords).
    seed : int
    shard_items : int
        (metric, n, m, share_null) configurations per shard.
    shard_replicates : int
        Trials per shard (rounded up to a multiple of 250). No shard size changes a result.

    Examples
    --------
    >>> from irsim.engine import run_study
    >>> from irsim.simulate.joint_copula_model import JointCopulaModel
    >>> model = JointCopulaModel.normal([0.4] * 6, [0.1] * 6, 0.5)
    >>> data = prepare([model], systems=(6,), shares=(1.0,), spread=0.1)
    >>> study = MultipleTesting.of(sizes=[20], systems=[6], share_null=[1.0], alpha=[0.05],
    ...                            tests=["t"], corrections=["none", "holm"], trials=500)
    >>> t = run_study(study, data)[0]["multiple_testing"].to_pandas()
    >>> t[["correction", "m", "trials"]].values.tolist()
    [['none', 6, 500], ['holm', 6, 500]]
    >>> bool(t.fwer[0] > 0.3), bool(t.fwer[1] < 0.1)    # 15 true nulls per collection
    (True, True)
    """

    config: Config = field(default_factory=Config)
    seed: int = 0
    shard_items: int = SHARD_ITEMS
    shard_replicates: int = SHARD_REPLICATES
    name: str = field(default="multiple_testing", init=False)

    @classmethod
    def from_config(cls, config: Config, *, seed: int, shards: Shards | None = None
                    ) -> MultipleTesting:
        """The study of `config`, its parameters checked (``B * alpha >= 1`` with a Monte
        Carlo test) and normalised: what :func:`make` does before it fits the data."""
        items, replicates = (shards or Shards()).get(SHARD_ITEMS, SHARD_REPLICATES)
        return cls(_normalised(config), seed=int(seed),
                   shard_items=check_positive_int(items, param("shard_items", "engine")),
                   shard_replicates=check_positive_int(replicates, param("shard_replicates",
                                                                         "engine"))
                   ).check_resamples()  # a Monte Carlo p-value moves in steps of 1/B

    @classmethod
    def of(cls, *, seed: int = 0, shard_items: int | None = None,
           shard_replicates: int | None = None, **params: Any) -> MultipleTesting:
        """The study of ``Config(**params)`` (:meth:`from_config`): the short way to build
        one in Python.

        Examples
        --------
        >>> s = MultipleTesting.of(sizes=10, systems=4, tests=["t"], trials=250)
        >>> s.config.sizes, s.config.tests, s.shard_replicates
        ([10], ['t'], 500)
        """
        return cls.from_config(Config(**params), seed=seed,
                               shards=Shards(shard_items, shard_replicates))

    # -- plan ---------------------------------------------------------------------------
    def _configs(self, data: CollectionData) -> int:
        c = self.config
        return len(data.models) * len(c.sizes) * len(c.systems) * len(c.share_null)

    def layout(self, item: int) -> tuple[int, int, int, int]:
        """``(metric, size, systems, share)`` indices of configuration `item`."""
        nh, nm, nn = len(self.config.share_null), len(self.config.systems), len(self.config.sizes)
        return item // (nn * nm * nh), (item // (nm * nh)) % nn, (item // nh) % nm, item % nh

    def plan(self, data: CollectionData) -> list[Shard]:
        """Configuration blocks x trial blocks."""
        return shard_grid(self._configs(data), self.shard_items, self.config.trials,
                          aligned_block(self.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`; the simulation's options through the fitted
        models of the data)."""
        return fingerprint(self, Config)

    def fields(self, data: CollectionData) -> dict[str, Count | Sum]:
        """Per configuration: trials; per (test, correction, alpha): trials with a false
        rejection, the fixed-point sum of V / R, and the sums of S and R."""
        n = self._configs(data)
        shape = (n, len(self.config.tests), len(self.config.corrections), len(self.config.alpha))
        return {"trials": Count((n,), along="items"),
                "familywise": Count(shape, along="items"),
                "fdp": Sum(shape, along="items", bits=FDP_POINT.bits),
                "true_rejections": Count(shape, along="items"),
                "rejections": Count(shape, along="items"),
                # Type S / M over the pairs with a true difference (issue 28)
                "tm_hist": Count((*shape, RATIO_CAP + 1), along="items"),
                "tm_wrong": Count(shape, along="items"),
                "tm_sum": Count((*shape, 2), along="items"),
                "tm_all": Count((n, 2), along="items"),
                **self.bayes_fields(n)}

    def bayes_fields(self, configs: int) -> dict[str, Count]:
        """With ``bayes``: per (configuration, Bayesian test, truth, slot) the comparisons
        decided, truth 0 = equal true means, 1 = ``0 < |delta| <= bayes_rope``, 2 = larger;
        slot 0 = different in the true direction (for equal means: better), 1 = different
        in the other, 2 = equivalent, 3 = undecided; per (configuration, Bayesian test) the
        trials with a null pair decided different."""
        if not self.config.bayes:
            return {}
        return {"bayes": Count((configs, len(self.config.bayes), 3, len(DECISIONS)), along="items"),
                "bayes_familywise": Count((configs, len(self.config.bayes)), along="items")}

    # -- kernel -------------------------------------------------------------------------
    def kernel(self, shard: Shard, data: CollectionData) -> Partial:
        """Counters of the shard's configurations over its trials (drawn through the
        generator of each configuration, :meth:`generator`: the draws and latent sample of a
        block once for a metric, then each layout's collections and true means)."""
        i0, i1 = shard.items
        out = self.counters(i1 - i0)
        groups: dict[tuple[int, int], list[int]] = {}
        for item in range(i0, i1):
            mi, ni, _, _ = self.layout(item)
            groups.setdefault((mi, ni), []).append(item)
        for (mi, ni), items in groups.items():  # loops over metrics and sizes
            n = self.config.sizes[ni]
            gens = [self.generator(data, item) for item in items]
            mkey = study_key(data.models[mi].metric)
            for a, b in unit_ranges(*shard.reps, REPLICATE_BLOCK):
                # the layouts of a metric share the draws and their latent sample
                draws = blocked_draws(self.seed, TOPIC_STREAM, (mkey, n), a, b,
                                      lambda rng, k, g=gens[0], n=n: g.draw(rng, k, n))
                latent = gens[0].latent(draws, n)
                key = (mkey, n, a // REPLICATE_BLOCK)
                for item, gen in zip(items, gens, strict=True):  # (m, share_null) layouts
                    x, means = gen.collections(latent)
                    row = item - i0
                    out["trials"][row] += b - a
                    self._count(x, gen.m0, key, row, out, means)
        return out

    def counters(self, rows: int) -> Partial:
        """Zero counters of `rows` configurations (what :meth:`kernel` fills with
        :meth:`_count`)."""
        shape = (rows, len(self.config.tests), len(self.config.corrections), len(self.config.alpha))
        out = {"trials": np.zeros(rows, np.int64),
               **{k: np.zeros(shape, np.int64)
                  for k in ("familywise", "true_rejections", "rejections", "tm_wrong")},
               "fdp": FDP_POINT.zeros(shape),
               "tm_hist": np.zeros((*shape, RATIO_CAP + 1), np.int64),
               "tm_sum": np.zeros((*shape, 2), np.int64),
               "tm_all": np.zeros((rows, 2), np.int64)}
        if self.config.bayes:
            out["bayes"] = np.zeros((rows, len(self.config.bayes), 3, len(DECISIONS)), np.int64)
            out["bayes_familywise"] = np.zeros((rows, len(self.config.bayes)), np.int64)
        return out

    def generator(self, data: CollectionData, item: int) -> JointCollections:
        """The generator of configuration `item`: its metric's collections of ``m`` systems
        with ``m0`` true nulls (:attr:`CollectionData.generators`), null margins shared or
        not (``null_margins``)."""
        mi, _, si, hi = self.layout(item)
        m = self.config.systems[si]
        return data.generators[mi][(m, true_null_count(m, self.config.share_null[hi]),
                                    self.config.null_margins == "shared")]

    def _count(self, x: np.ndarray, m0: int, key: tuple[int, ...], row: int,
               out: Partial, means: np.ndarray) -> None:
        """Add the counters of the collections `x` (trials, m, n), whose systems have the
        true means `means` (trials, m), to `out` row `row`."""
        t, m, n = x.shape
        pa_, pb_ = np.triu_indices(m, 1)
        null = null_pair_mask(m, m0)
        # Type S / M of the pairs with a true difference: the ratio |d| / |delta| of each
        # (trial, pair) on the grid 1/RATIO_SCALE (an integer), the sign of d against delta
        true = means[:, pa_] - means[:, pb_]  # (trials, pairs)
        dm = x.mean(axis=2)
        dm = dm[:, pa_] - dm[:, pb_]
        live = ~null[None, :] & (true != 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(live, np.rint(np.abs(dm) / np.abs(np.where(live, true, 1.0))
                                           * RATIO_SCALE), 0).astype(np.int64)
        wrong_sign = live & (dm * np.sign(true) < 0)
        out["tm_all"][row, 0] += int(np.count_nonzero(live))
        out["tm_all"][row, 1] += int(ratio.sum())
        # fixed batches of trials (a function of m and n only: the same operands for any
        # sharding), so memory stays bounded for large m
        step = max(1, min(t, BATCH_BYTES // (8 * len(pa_) * n)))
        alphas = np.asarray(self.config.alpha)
        if self.config.bayes:
            truth, toward = self._bayes_truth(true, null)
        for c0 in range(0, t, step):
            d = None
            if self.config.bayes:
                d = x[c0 : c0 + step, pa_] - x[c0 : c0 + step, pb_]
                self._bayes_count(d, truth[c0 : c0 + step], toward[c0 : c0 + step], null,
                                  (*key, c0), row, out)
            for ti, test in enumerate(self.config.tests):
                if get_test(test).simultaneous:  # decided over all pairs: no correction again
                    decided = self.simultaneous(test, x[c0 : c0 + step], (*key, c0))
                else:
                    if d is None:
                        d = x[c0 : c0 + step, pa_] - x[c0 : c0 + step, pb_]  # (b, pairs, n)
                    p = self.pvalues(test, d, (*key, c0))
                for ci, corr in enumerate(self.config.corrections):
                    for li, alpha in enumerate(alphas):
                        rej = (decided[li] if get_test(test).simultaneous
                               else reject(p, float(alpha), corr, axis=-1))
                        v = np.count_nonzero(rej & null, axis=-1)
                        r = np.count_nonzero(rej, axis=-1)
                        fdp = np.divide(v, r, out=np.zeros(len(r)), where=r > 0)
                        out["familywise"][row, ti, ci, li] += np.count_nonzero(v)
                        out["fdp"][row, ti, ci, li] += FDP_POINT.sum(fdp)
                        out["true_rejections"][row, ti, ci, li] += int((r - v).sum())
                        out["rejections"][row, ti, ci, li] += int(r.sum())
                        sig = rej & live[c0 : c0 + step]
                        got = ratio[c0 : c0 + step][sig]
                        out["tm_hist"][row, ti, ci, li] += np.bincount(
                            np.minimum(got, RATIO_CAP), minlength=RATIO_CAP + 1)
                        out["tm_sum"][row, ti, ci, li, 0] += int(got.sum())
                        out["tm_sum"][row, ti, ci, li, 1] += int((got * got).sum())
                        out["tm_wrong"][row, ti, ci, li] += int(np.count_nonzero(
                            sig & wrong_sign[c0 : c0 + step]))

    def _bayes_truth(self, true: np.ndarray, null: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Per (trial, pair): the truth class (0: equal true means, 1: ``0 < |delta| <=
        bayes_rope``, 2: larger; the ROPE edge under the tie rule of
        :mod:`irsim.stats.ties`) and the label code that is the true direction (better for
        ``delta >= 0``, worse below)."""
        size = np.abs(true) - tie_tolerance(true, 1.0)
        truth = np.where(null[None, :], 0, np.where(size <= self.config.bayes_rope, 1, 2))
        toward = np.where(null[None, :] | (true > 0), 0, 1)
        return truth.astype(np.int64), toward.astype(np.int64)

    def _bayes_count(self, d: np.ndarray, truth: np.ndarray, toward: np.ndarray,
                     null: np.ndarray, key: tuple[int, ...], row: int,
                     out: dict[str, np.ndarray]) -> None:
        """Add the Bayesian decisions of the pair differences `d` (trials, pairs, n) to
        `out` row `row`: one batched call per Bayesian test (the Bayesian bootstrap's
        weights from the stream ``multiple_testing/bayesian_bootstrap`` keyed by `key`)."""
        rules = self.bayes_rules
        for bi, name in enumerate(self.config.bayes):  # loop over the Bayesian tests
            code = rules.codes(name, d, B=self.config.B, seed=self.seed,
                               study=f"multiple_testing/{name}", key=key)
            code = code.reshape(truth.shape)
            different = code <= 1
            slot = np.where(different, np.where(code == toward, 0, 1), code)
            out["bayes"][row, bi] += np.bincount(
                (truth * len(DECISIONS) + slot).ravel(),
                minlength=3 * len(DECISIONS)).reshape(3, len(DECISIONS))
            out["bayes_familywise"][row, bi] += int(np.count_nonzero(
                (different & null[None, :]).any(axis=1)))

    def pvalues(self, test: str, d: np.ndarray, key: tuple[int, ...]) -> np.ndarray:
        """Two-sided p-values of `test` for the pair differences `d` (..., n); Monte Carlo
        tests draw their resamples from the stream ``multiple_testing/<test>`` keyed by
        `key`."""
        options = self.test_options(test, "multiple_testing", key)
        return np.asarray(get_test(test).function(d, alternative="two-sided", **options).pvalue,
                          np.float64)

    def simultaneous(self, test: str, x: np.ndarray, key: tuple[int, ...]) -> np.ndarray:
        """Decisions of the simultaneous test `test` on the collections `x` (trials, m, n)
        at every alpha: bool, shape (alphas, trials, pairs), pairs in
        :func:`numpy.triu_indices` order.

        ``tukey_hsd``: ``q >= critical_range(m, n, alpha)`` with ``q`` the studentized range
        statistic of the pair (:func:`irsim.stats.anova.studentized_ranges`: all trials at
        once). ``randomised_tukey_hsd``: ``p <= alpha``, ``p`` from B permutations drawn
        from the stream ``multiple_testing/randomised_tukey_hsd`` keyed by `key` and shared
        by the trials of `x` (each trial's p-values are those of
        :func:`irsim.stats.randomised_tukey_hsd` with that stream and key).

        Examples
        --------
        >>> x = np.array([[[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3],
        ...                [0.6, 0.2, 0.1, 0.3, 0.5, 0.2]]])
        >>> study = MultipleTesting.of(alpha=[0.05, 0.1], B=500)
        >>> study.simultaneous("tukey_hsd", x, (0,)).tolist()
        [[[True, False, False]], [[True, True, False]]]
        >>> from irsim.stats import randomised_tukey_hsd, tukey_hsd
        >>> np.round(tukey_hsd(x[0]).pvalue, 3).tolist()
        [0.009, 0.085, 0.387]
        >>> study.simultaneous("randomised_tukey_hsd", x, (0,)).tolist()
        [[[True, False, False]], [[True, False, False]]]
        >>> randomised_tukey_hsd(x[0], B=500, study="multiple_testing/randomised_tukey_hsd",
        ...                      key=(0,)).pvalue.tolist()
        [0.014, 0.26, 0.702]
        """
        t, m, n = x.shape
        alphas = self.config.alpha
        spec = get_test(test)
        if spec.batched == "studentized_range":
            _, q, _ = studentized_ranges(x)
            return np.stack([q >= critical_range(m, n, float(a)) for a in alphas])
        if spec.batched != "tukey_ranges":  # no batched path here: the test, trial by trial
            kw = spec.keywords(self, stream="multiple_testing", key=key)
            p = np.stack([np.asarray(spec.function(xi, **kw).pvalue) for xi in x])
            return np.stack([p <= a for a in alphas])
        means = x.mean(axis=-1)  # as randomised_tukey_hsd: the same floats
        pa_, pb_ = np.triu_indices(m, 1)
        diff = means[:, pa_] - means[:, pb_]
        scale = np.abs(means).max(axis=-1, keepdims=True)
        thr = np.abs(diff) - tie_tolerance(diff, scale)  # (trials, pairs)
        count = np.zeros(thr.shape, np.int64)
        # memory chunks of permutations (the 0/1 matrix of the GEMM path, or the gather):
        # counts add up, and permutation b is the same for any chunking (topic_permutations
        # draws by block)
        row = 8 * m * max(n * m, t) if m <= TUKEY_GEMM_MAX_SYSTEMS else 8 * n * m
        per_b = max(1, min(self.config.B, GATHER_BYTES // row))
        for b0 in range(0, self.config.B, per_b):
            b1 = min(self.config.B, b0 + per_b)
            perm = topic_permutations(self.seed, f"multiple_testing/{test}", m, n, b0, b1,
                                      key=key)
            ranges = tukey_ranges_batched(x, perm)  # (trials, permutations)
            count += (b1 - b0) - count_below(ranges, thr)
        if self.config.pvalue == "count":
            p = count / self.config.B
        else:
            p = (count + 1.0) / (self.config.B + 1.0)
        return np.stack([p <= a for a in alphas])

    # -- reduce -------------------------------------------------------------------------
    def finalize(self, merged: dict[str, np.ndarray], data: CollectionData
                 ) -> dict[str, pa.Table]:
        """FWER, FDR and power with their Wilson bands, one row per (metric, correction,
        test, m, n, share_null, alpha), and the generator's fit table."""
        cols: dict[str, list] = {k: [] for k in (
            "metric", "correction", "test", "m", "n", "share_null", "null_systems", "alpha",
            "trials")}
        fw, fdp, tp, rj, alt = [], [], [], [], []
        for item in range(self._configs(data)):
            mi, ni, si, hi = self.layout(item)
            m = self.config.systems[si]
            m0 = true_null_count(m, self.config.share_null[hi])
            alt_pairs = m * (m - 1) // 2 - m0 * (m0 - 1) // 2
            for ci, corr in enumerate(self.config.corrections):
                for ti, test in enumerate(self.config.tests):
                    for li, alpha in enumerate(self.config.alpha):
                        cols["metric"].append(data.models[mi].metric)
                        cols["correction"].append(corr)
                        cols["test"].append(test)
                        cols["m"].append(m)
                        cols["n"].append(self.config.sizes[ni])
                        cols["share_null"].append(self.config.share_null[hi])
                        cols["null_systems"].append(m0)
                        cols["alpha"].append(alpha)
                        cols["trials"].append(int(merged["trials"][item]))
                        fw.append(int(merged["familywise"][item, ti, ci, li]))
                        fdp.append(float(merged["fdp"][item, ti, ci, li]))
                        tp.append(int(merged["true_rejections"][item, ti, ci, li]))
                        rj.append(int(merged["rejections"][item, ti, ci, li]))
                        alt.append(alt_pairs)
        trials = np.asarray(cols["trials"], np.float64)
        alt_pairs = np.asarray(alt, np.float64)
        k_fw = np.asarray(fw, np.float64)
        k_fdr = np.asarray(fdp, np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            k_pw = np.where(alt_pairs > 0, np.asarray(tp, np.float64) / alt_pairs, np.nan)
            rates = {"fwer": k_fw / trials, "fdr": k_fdr / trials, "power": k_pw / trials}
        for name, k in (("fwer", k_fw), ("fdr", k_fdr), ("power", k_pw)):
            lo, hi = wilson(k, trials, self.config.ci_level)
            rates[f"{name}_lo"], rates[f"{name}_hi"] = lo, hi
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_rej = np.asarray(rj, np.float64) / trials
        table = build_table("multiple_testing", {
            **cols, "trials": np.asarray(cols["trials"], np.int64),
            "familywise_errors": np.asarray(fw, np.int64),
            **{k: rates[k] for k in ("fwer", "fwer_lo", "fwer_hi", "fdr", "fdr_lo", "fdr_hi",
                                     "power", "power_lo", "power_hi")},
            "mean_rejections": mean_rej})
        out = {"multiple_testing": table, "multiple_testing_fit": fit_table(data),
               "type_m_s": self._type_m_s(merged, data)}
        if self.config.bayes:
            out["bayes_multiple_testing"] = self._bayes_table(merged, data)
        return out

    def _bayes_table(self, merged: dict[str, np.ndarray], data: CollectionData) -> pa.Table:
        """Table ``bayes_multiple_testing``: per configuration, a row per Bayesian test and a
        row per (significance test, correction, alpha), from the integer counters."""
        rules = self.bayes_rules
        rows: list[dict] = []
        for item in range(self._configs(data)):
            mi, ni, si, hi = self.layout(item)
            m = self.config.systems[si]
            m0 = true_null_count(m, self.config.share_null[hi])
            trials = int(merged["trials"][item])
            null_pairs = m0 * (m0 - 1) // 2
            alt_pairs = m * (m - 1) // 2 - null_pairs
            base = {"metric": data.models[mi].metric, "n": self.config.sizes[ni], "m": m,
                    "share_null": self.config.share_null[hi], "null_systems": m0, "trials": trials,
                    "null_comparisons": trials * null_pairs,
                    "alt_comparisons": trials * alt_pairs}
            for bi, name in enumerate(self.config.bayes):
                c = merged["bayes"][item, bi]  # (truth, slot)
                rows.append({**base, "method": "bayes", "test": name,
                             "rule": rules.rule(name, self.config.B), "correction": None,
                             "alpha": None,
                             "false_different": int(c[0, 0] + c[0, 1]),
                             "familywise": int(merged["bayes_familywise"][item, bi]),
                             "right": int(c[1:, 0].sum()), "wrong": int(c[1:, 1].sum()),
                             "rope_comparisons": int(c[:2].sum()),
                             "equivalent_inside": int(c[:2, 2].sum()),
                             "outside": int(c[2].sum()),
                             "equivalent_outside": int(c[2, 2]),
                             "undecided": int(c[:, 3].sum())})
            for ti, test in enumerate(self.config.tests):
                for ci, corr in enumerate(self.config.corrections):
                    for li, alpha in enumerate(self.config.alpha):
                        s = merged["true_rejections"][item, ti, ci, li]
                        wrong = merged["tm_wrong"][item, ti, ci, li]
                        rows.append({
                            **base, "method": "test", "test": test,
                            "rule": f"p <= {alpha:g} ({corr})", "correction": corr,
                            "alpha": float(alpha),
                            "false_different": int(merged["rejections"][item, ti, ci, li] - s),
                            "familywise": int(merged["familywise"][item, ti, ci, li]),
                            "right": int(s - wrong), "wrong": int(wrong)})
        return bayes_rates_table(rows, self.config.ci_level)

    def _type_m_s(self, merged: dict[str, np.ndarray], data: CollectionData) -> pa.Table:
        """Table ``type_m_s``: per (configuration, test, correction, alpha), pooled over the
        (trial, pair) comparisons with a true difference; configurations without one
        (``share_null = 1``) have no rows."""
        rows = TypeMRows(self.config.tests, self.config.alpha, self.config.ci_level)
        for item in range(self._configs(data)):
            mi, ni, si, hi = self.layout(item)
            total, ratio_sum = (int(v) for v in merged["tm_all"][item])
            if total == 0:
                continue
            for ci, corr in enumerate(self.config.corrections):
                for ti, test in enumerate(self.config.tests):
                    keys = {"metric": data.models[mi].metric, "n": self.config.sizes[ni],
                            "m": self.config.systems[si], "share_null": self.config.share_null[hi],
                            "correction": corr, "test": test, "alternative": "two-sided"}
                    rows.add_histogram(keys, total, ratio_sum, merged["tm_hist"][item, ti, ci],
                                       merged["tm_sum"][item, ti, ci],
                                       merged["tm_wrong"][item, ti, ci], RATIO_SCALE)
        return rows.table()


def _normalised(c: Config) -> Config:
    """`c` checked beyond its fields' bounds (tests and corrections known, listed once;
    sizes, systems and shares not empty; the simulated tests' options,
    :func:`~irsim.kit.common.normalised_tests`) and normalised."""
    valid = tests_of("paired", "all_pairs")
    tests = check_choices(c.tests, valid, "test for experiment=multiple_testing",
                          param("tests"))
    corrections = check_choices(c.corrections, CORRECTIONS, "correction",
                                param("corrections"))
    for key, what in (("sizes", "topic set size"), ("systems", "collection size"),
                      ("share_null", "share of true nulls")):
        if not getattr(c, key):
            raise ConfigError(f"{param(key)} must list at least one {what}")
    shared = normalised_tests(c, valid, "test for experiment=multiple_testing")
    return dataclasses.replace(c, **{**shared, "tests": list(tests),
                                     "corrections": list(corrections)})


@study("multiple_testing", config=Config, data="matrix", order=100,
       title="Multiple comparisons",
       example=dict(
           overrides={"synthetic": ["experiment.trials=20", "experiment.B=200",
                                    "experiment.systems=[5]", "experiment.bayes=[jzs_bf]"]},
           keywords=dict(metric="AP", tests=["t", "randomisation"], systems=[4, 6], sizes=[10],
                         share_null=[1.0, 0.5], trials=20, B=40,
                         bayes=["jzs_bf", "t_posterior", "bayesian_bootstrap"]),
           figures=["multiple_testing_AP_t.png", "multiple_testing_AP_randomisation.png",
                    "bayes_multiple_testing_AP.png"]),
       tables=TABLE_SPECS,
       description=("known-truth simulation: family-wise error rate, false discovery rate and "
                    "power of multiple-comparison corrections (Bonferroni, Holm, BH, BY) over all "
                    "system pairs of collections simulated from a real one"),
       headlines={"multiple_testing": (
           ("metric", "correction", "test", "m", "n", "share_null", "alpha"), "fwer")},
       question=("Testing all pairs of m systems: what family-wise error rate, false discovery"
                 " rate and power do no correction, Bonferroni, Holm, Benjamini-Hochberg and "
                 "Benjamini-Yekutieli really have, with each test, on collections simulated "
                 "from a real one?"))
def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Shards
         ) -> tuple[MultipleTesting, CollectionData]:
    """The study and its data: a collection model fit to every metric of `data` and the
    shifts of every layout.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> matrix = synthetic_scores(systems=8, topics=30, metrics=("AP",), seed=1).matrix
    >>> study, data = make(Config(systems=[4], sizes=[10], trials=250), matrix, seed=0,
    ...                    shards=Shards())
    >>> data.metrics, data.models[0].pool, len(study.plan(data))  # a shard per configuration
    (('AP',), 8, 2)
    """
    study = MultipleTesting.from_config(config, seed=seed, shards=shards)
    if config.dependence not in DEPENDENCE:
        raise unknown_name(param("dependence"), str(config.dependence), DEPENDENCE)
    spread, eig, trunc = config.spread, config.min_eigenvalue, config.vine_truncation
    null_mean = config.null_mean
    models = [fit_joint_copula_model(data.metric(metric), metric=metric, systems=data.systems,
                                     margin=config.margin, dependence=config.dependence,
                                     drop_duplicates=bool(config.drop_duplicates),
                                     drop_bottom=float(config.drop_bottom), null_mean=null_mean,
                                     spread=spread, min_eigenvalue=eig, vine_truncation=int(trunc),
                                     vine_families=tuple(config.vine_families))
              for metric in data.metrics]
    c = study.config
    return study, prepare(models, systems=tuple(c.systems), shares=tuple(c.share_null),
                          spread=spread)
