"""Discriminative power and the other bootstrap methods of Sakai (SIGIR 2006).

One run computes, for every metric and system pair, the method set of METHODS.md section 3:

- the achieved significance level (ASL) of any test of :mod:`irsim.stats` (paired and
  unpaired bootstrap, t, Wilcoxon, sign, randomisation, Tukey HSD, randomised Tukey HSD;
  :mod:`~irsim.experiments.discpower.pairtests`), the ASL adjusted for all pairs by a
  multiple-comparison correction (``correction``: none, Bonferroni, Holm, BH, BY over the
  family of all pairs of a metric and test, :func:`irsim.stats.adjust`; Tukey HSD and
  randomised Tukey HSD are simultaneous already and keep their ASL), discriminative power
  (share of pairs with ASL < alpha, raw and adjusted) and the estimated difference required
  for ASL < alpha -> tables ``asl`` and ``discpower``;
- test agreement (``agreement``; Smucker, Allan & Carterette, CIKM 2007): for every pair of
  tests, the correlation and RMSE of their p-values over all system pairs and the share of
  pairs significant by one only (:mod:`~irsim.experiments.discpower.agreement`) -> table
  ``test_agreement``;
- G-metrics (``gmean``): ``AG <metric>`` is the per-topic ``log(x + 1e-5)`` with the tests of
  arithmetic means, ``G <metric>`` the geometric mean ``exp(mean(log(x + 1e-5)))`` with the
  unpaired bootstrap test (Sakai 2006, Sections 3.1-3.2);
- on the paired test's bootstrap samples ``Q*b``: stability (minority rate, proportion of
  ties; :mod:`~irsim.experiments.discpower.stability`), the bootstrap swap method with a
  second set ``Q'*b`` (:mod:`~irsim.experiments.discpower.bootswap`) and Kendall's tau
  between the rankings of every metric pair with the Z0 test and the bootstrap SE
  (:mod:`~irsim.experiments.discpower.rankcorr`), for ``<metric>`` and ``G <metric>``
  (``AG`` ranks systems as ``G`` does).

- Bayesian decisions (``bayes``, issue 28): every Bayesian test of
  :data:`irsim.stats.registry.BAYES_TESTS` on every pair of the arithmetic-mean variants
  (``<metric>``, ``AG <metric>``) decides better / worse / equivalent / undecided
  (:class:`~irsim.kit.common.BayesRules`, the rules of experiment=test_errors) -> tables
  ``bayes_pairs`` and ``bayes_discpower`` (Bayesian discriminative power: the share of pairs
  decided different, beside the paired t test at ``1 - bayes_prob``). The Bayesian
  bootstrap's Dirichlet weights come from the stream ``discpower/bayesian_bootstrap`` in
  fixed blocks (one set of B draws shared by every pair and metric, as the paired bootstrap's
  samples), and each pair is decided in its unit of 256 pairs by the shard that holds its
  first replicate block, so its decision does not depend on sharding.

The study is this package: the study itself here (its ``Config``, :class:`DiscPower`,
:func:`make`), its table specs (:mod:`~irsim.experiments.discpower.tables`), its row
labels (:mod:`~irsim.experiments.discpower.variants`), its Bayesian decisions
(:mod:`~irsim.experiments.discpower.bayes`), its resampling kernel and the modules above
beside it. The
names of its fields are spelt once, by the typed layouts of
:mod:`~irsim.experiments.discpower.fields` that the fields' declaration, the kernel and
``finalize`` all ask.

Columns: :mod:`irsim.tables`; report: :mod:`irsim.experiments.discpower.report`. The bootstrap tests
run (:mod:`~irsim.experiments.discpower.kernel`) on the batched kernels of
:mod:`irsim.stats.resample` (those of :func:`irsim.stats.paired_bootstrap` and
:func:`irsim.stats.unpaired_bootstrap`): the paired test's sums of differences and the
unpaired replicates come from per-system GEMMs; only ``w^2 @ counts`` is per pair.

Determinism: one set of bootstrap samples (``discpower/paired``) serves every pair, metric
and method, as in the paper; the unpaired test, the swap method, randomised Tukey HSD and the
randomisation test (:func:`irsim.stats.randomisation_test` on each shard's pairs, the same
sign vectors for all pairs) have their own streams. Draws are keyed by replicate block.
Kernels work in fixed units of 256 pairs (aligned to the global pair index) x 250
replicates, so every GEMM sees the same operands whatever the shard sizes, and the fields
are integer counters, per-replicate values or top-k lists merged exactly
(:mod:`irsim.engine.partials`): the tables are bit-identical for any sharding and executor.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Shard, shard_grid
from irsim.engine.partials import Count, Kind, Slab, TopK
from irsim.errors import ConfigError, InputError, param, unknown_name
from irsim.experiments import Shards
from irsim.experiments.discpower.agreement import agreement_table
from irsim.experiments.discpower.bayes import bayes_tables, decide_pairs
from irsim.experiments.discpower.bootswap import SWAP_STREAM, swap_tables
from irsim.experiments.discpower.fields import (
    BayesDecisionFields,
    BootstrapFields,
    PermutationFields,
    SampleFields,
)
from irsim.experiments.discpower.kernel import (
    BATCHED,
    PAIRED_STREAM,
    TUKEY_STREAM,
    UNPAIRED_STREAM,
    ShardKernel,
    resampled_asl,
    working_bytes,
)
from irsim.experiments.discpower.pairtests import (
    WILCOXON_METHODS,
    ZERO_METHODS,
    TestOptions,
    closed_form_asl,
    resampled_pair_asl,
)
from irsim.experiments.discpower.rankcorr import rankcorr_table, tau_matrices
from irsim.experiments.discpower.stability import (
    DEFAULT_FUZZINESS,
    check_fuzziness,
    stability_table,
)
from irsim.experiments.discpower.tables import TABLE_SPECS
from irsim.experiments.discpower.variants import (
    Variant,
    observed_diff,
    pair_count,
    variant_values,
)
from irsim.kit.bins import ABSOLUTE
from irsim.kit.common import (
    PAIR_UNIT,
    BayesOptions,
    BayesRules,
    aligned_block,
    check_listed,
    check_memory,
    check_paired_bootstrap_topics,
    check_positive_int,
    check_resamples,
    pair_index,
    round_sig,
)
from irsim.params import fingerprint, option
from irsim.registry import Headline, study
from irsim.rng import REPLICATE_BLOCK
from irsim.stats._validation import PVALUE_MODES, PValueMode
from irsim.stats.multiple import CORRECTIONS, Correction, adjust
from irsim.stats.registry import TESTS, get_test
from irsim.stats.resample import gmean_scores
from irsim.stats.ties import snap_ties
from irsim.stats.wilcoxon import WilcoxonMethod, ZeroMethod
from irsim.tables import schema, table

__all__ = ["Config", "make", "DiscPower", "Variant", "TESTS",
           "PAIRED_STREAM", "UNPAIRED_STREAM", "SWAP_STREAM", "TUKEY_STREAM", "TOPK_BUDGET",
           "BAYES_STREAM"]


#: Random stream of the Bayesian bootstrap's Dirichlet weights (``discpower/<test>``).
BAYES_STREAM = "discpower/bayesian_bootstrap"
#: Tests whose top-k replicates give the estimated difference (merged across shards).
TOPK_TESTS = ("paired_bootstrap", "unpaired_bootstrap")
#: Pair-replicates per shard by default (4,096 pairs x 1,000 replicates).
SHARD_WORK = 4096 * 1000
#: Largest top-k buffer of a pair unit for which a shard takes a pair's whole replicate
#: range by default (256 MiB: k up to 5,461, B up to about 10^5 at alpha = 0.05).
TOPK_UNIT_BYTES = 256 * 2**20
#: Fewest shards the default shape aims at when it splits replicates (:meth:`DiscPower
#: .shard_shape`).
MIN_SHARDS = 16
#: Bytes the top-k lists of the estimated difference may take.
TOPK_BUDGET = 2 * 2**30
_LOG = logging.getLogger(__name__)


@dataclass
class Config(BayesOptions):
    """Parameters of ``experiment=discpower``."""

    NOTES = {  # on the Bayesian options it inherits (irsim.params.parameters)
        "bayes": (
            "They decide every pair of ``<metric>`` and ``AG <metric>`` (tables "
            "``bayes_pairs`` and ``bayes_discpower``); the Bayesian bootstrap uses ``B`` "
            "posterior draws."),
        "bayes_prob": "The paired t test beside them runs at ``1 - bayes_prob``.",
        "bayes_rope": "``AG``: log units.",
    }

    name: str = option("discpower", "``discpower``.")
    tests: list[str] = option(
        ["paired_bootstrap", "unpaired_bootstrap"], "Any of ``paired_bootstrap``, "
        "``unpaired_bootstrap``, ``t``, ``randomised_tukey_hsd``, ``wilcoxon``, ``sign``, "
        "``randomisation``, ``tukey_hsd`` (:data:`irsim.stats.TESTS`).")
    B: int = option(
        1000, "Bootstrap samples (and randomised Tukey HSD trials, randomisation-test sign "
        "vectors, and swap-method samples per set).", ge=1)
    alpha: list[float] = option(
        [0.01, 0.05], "Significance levels of discriminative power and the estimated difference.",
        gt=0, lt=1)
    estimated_diff: bool = option(
        True, "Compute the estimated difference required for ASL < alpha. It keeps the "
        "``ceil(max(alpha) B)`` largest replicates of every pair, 24 bytes each per test and "
        "metric; a study whose lists would exceed 2 GiB is refused (turn this off for very large "
        "B: ASLs and the other tables stay exact).")
    pvalue: PValueMode = option(
        PValueMode.count, "ASL as ``count/B`` (Sakai) or ``(count+1)/(B+1)``.")
    gmean: bool = option(
        False, "Add ``AG <metric>`` (paired bootstrap, t and Tukey on ``log(x + 1e-5)``) and ``G "
        "<metric>`` (unpaired bootstrap test of the geometric mean) for every metric.")
    stability: bool = option(
        False, "The stability method (minority rate, proportion of ties) on the paired test's "
        "samples ``Q*b``: table ``stability``.")
    fuzziness: list[float] = option(
        list(DEFAULT_FUZZINESS), "Fuzziness values of the stability method (Sakai: 0.01, 0.02, "
        "..., 0.20).", gt=0, lt=1)
    swap: bool = option(
        False, "The bootstrap swap method on ``Q*b`` and a second set ``Q'*b`` (21 absolute bins "
        "of 0.01): tables ``swap_rates`` and ``swap_summary``.")
    swap_confidence: list[float] = option(
        [0.95], "Confidence levels of the swap method's required difference (swap rate <= 1 - "
        "confidence; Sakai: 0.95).", gt=0, lt=1)
    rankcorr: bool = option(
        False, "Kendall's tau between the system rankings of every metric pair, with the Z0 test "
        "and the bootstrap standard error: table ``rankcorr``.")
    top_systems: int | None = option(
        None, "Keep only the best systems by mean `top_by` (None: all; Sakai 2006 keeps 30).",
        tables="data", ge=1)
    top_by: str | None = option(
        None, "Metric that ranks the systems for `top_systems` (None: the first metric).",
        tables="data")
    correction: Correction = option(
        Correction.none, "Multiple-comparison correction of each family of all system pairs of a "
        "metric and test (:func:`irsim.stats.adjust`): column ``asl_adjusted`` and the adjusted "
        "sensitivity. Tukey HSD and randomised Tukey HSD are simultaneous tests already: their "
        "``asl_adjusted`` is their ASL.")
    agreement: bool = option(
        False, "Test agreement (Smucker et al. 2007) of every pair of tests: table "
        "``test_agreement`` and a scatter-plot matrix of p-values in the report.")
    wilcoxon_method: WilcoxonMethod = option(
        WilcoxonMethod.auto, "Mode of the Wilcoxon signed-rank test "
        "(:func:`irsim.stats.wilcoxon`).")
    wilcoxon_correction: bool = option(False, "Continuity correction of its normal approximation.")
    wilcoxon_zero_method: ZeroMethod = option(
        ZeroMethod.wilcox, "Zero differences: dropped (``wilcox``) or ranked (``pratt``).")
    sign_threshold: float = option(
        0.0, "Tie threshold of the sign test: topics with ``|x - y| <= threshold`` are dropped "
        "(Urbano et al. use 0.01).", ge=0)



_DEFAULT = Config()


@dataclass(frozen=True)
class DiscPower:
    """The discriminative-power study with Sakai's (2006) companion methods.

    Parameters
    ----------
    config : Config
        The study's parameters, normalised and checked by :func:`make` (or
        :meth:`from_config`; :meth:`of` builds one from keywords).
    seed : int
    shard_items, shard_replicates : int, optional
        Shard sizes: pairs (rounded up to a multiple of 256) and replicates (rounded up to a
        multiple of 250); None: :meth:`shard_shape` chooses. Neither changes any result;
        memory per kernel step is bounded by the fixed 256 x 250 units.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=6, topics=20, seed=1).matrix
    >>> tables, info = run_study(DiscPower.of(B=200, seed=3), m)
    >>> tables["asl"].num_rows            # 15 pairs x 2 tests
    30
    >>> study = DiscPower.of(B=250, seed=3, gmean=True, stability=True, fuzziness=[0.05],
    ...                      swap=True, rankcorr=True)
    >>> tables, _ = run_study(study, m)
    >>> sorted(tables)
    ['asl', 'discpower', 'rankcorr', 'stability', 'swap_rates', 'swap_summary']
    >>> tables["rankcorr"].select(["metric_a", "metric_b"]).to_pylist()
    [{'metric_a': 'synthetic', 'metric_b': 'G synthetic'}]
    >>> study = DiscPower.of(tests=["t", "wilcoxon", "sign"], correction="holm", agreement=True)
    >>> tables, _ = run_study(study, m)
    >>> sorted(tables), tables["test_agreement"].num_rows   # 3 test pairs x 2 alphas
    (['asl', 'discpower', 'test_agreement'], 6)
    """

    config: Config = field(default_factory=Config)
    seed: int = 0
    shard_items: int | None = None
    shard_replicates: int | None = None
    name: str = field(default="discpower", init=False)

    @classmethod
    def from_config(cls, config: Config, *, seed: int, shards: Shards | None = None
                    ) -> DiscPower:
        """The study of `config`, its parameters checked and normalised (what :func:`make`
        does before it looks at the data)."""
        shards = shards or Shards()
        return cls(_normalised(config), seed=int(seed),
                   shard_items=_shard_size(shards.items, "shard_items"),
                   shard_replicates=_shard_size(shards.replicates, "shard_replicates"))

    @classmethod
    def of(cls, *, seed: int = 0, shard_items: int | None = None,
           shard_replicates: int | None = None, **params: Any) -> DiscPower:
        """The study of ``Config(**params)`` (:meth:`from_config`): the short way to build one
        in Python.

        Examples
        --------
        >>> s = DiscPower.of(B=200, alpha=0.05, tests=["t"], seed=3)
        >>> s.config.alpha, s.config.tests, s.seed
        ([0.05], ['t'], 3)
        """
        return cls.from_config(Config(**params), seed=seed,
                               shards=Shards(shard_items, shard_replicates))

    @property
    def options(self) -> TestOptions:
        """The options of the Wilcoxon and sign tests (:class:`~.pairtests.TestOptions`)."""
        c = self.config
        return TestOptions(wilcoxon_method=c.wilcoxon_method,
                           wilcoxon_correction=c.wilcoxon_correction,
                           wilcoxon_zero_method=c.wilcoxon_zero_method,
                           sign_threshold=c.sign_threshold)

    @property
    def bayes_rules(self) -> BayesRules:
        """The Bayesian tests and their rules (:class:`~irsim.kit.common.BayesRules`)."""
        return BayesRules.of(self.config)

    @property
    def t_alpha(self) -> float:
        """Level of the paired t test beside the Bayesian decisions: ``1 - bayes_prob``
        (rounded to 12 decimals: 0.05 for 0.95)."""
        return round(1.0 - self.config.bayes_prob, 12)

    def bayes_variants(self, data: ScoreMatrix) -> list[int]:
        """Indices of the variants the Bayesian tests decide (arithmetic means: ``<metric>``
        and ``AG <metric>``); none without ``bayes``."""
        return ([i for i, v in enumerate(self.variants(data)) if v.kind != "g"]
                if self.config.bayes else [])

    @property
    def k(self) -> int:
        """How many of the largest replicates per pair the estimated difference needs."""
        return max(1, math.ceil(max(self.config.alpha) * self.config.B - 1e-9))

    @property
    def ranks(self) -> tuple[int, ...]:
        """Per alpha, the position (0-based, best first) of the replicate whose value is the
        estimated difference: ``ceil(alpha B) - 1``."""
        return tuple(max(1, math.ceil(a * self.config.B - 1e-9)) - 1 for a in self.config.alpha)

    @property
    def keeps_topk(self) -> bool:
        """Whether shards keep top-k replicate lists (the estimated difference of a
        bootstrap test)."""
        return self.config.estimated_diff and bool(set(self.config.tests) & set(TOPK_TESTS))

    def whole_replicates(self, pairs: int) -> bool:
        """Whether shards keep top-k lists and each spans all B replicates of its pairs
        (:meth:`shard_shape`): then each pair's list is complete on one worker, which ships
        only the values at :attr:`ranks` (field :attr:`~.fields.BootstrapFields.kth`)
        instead of the list (field :attr:`~.fields.BootstrapFields.top`, merged on the
        driver). Either way the same values."""
        _, reps = self.shard_shape(pairs, topk=True)
        return self.keeps_topk and aligned_block(reps, REPLICATE_BLOCK) >= self.config.B

    @property
    def sampled_methods(self) -> bool:
        """Whether any of stability, swap, rankcorr is on."""
        return self.config.stability or self.config.swap or self.config.rankcorr

    def variants(self, data: ScoreMatrix) -> tuple[Variant, ...]:
        """The metrics of the tables: every metric, then ``AG`` and ``G`` ones if gmean."""
        out = [Variant(m, m, "mean", tuple(self.config.tests)) for m in data.metrics]
        if self.config.gmean:
            # the unpaired tests compare geometric means (G), the others the logs (AG)
            ag = tuple(t for t in self.config.tests if get_test(t).kind != "unpaired")
            g = tuple(t for t in self.config.tests if get_test(t).kind == "unpaired")
            out += [Variant(f"AG {m}", m, "ag", ag) for m in data.metrics]
            out += [Variant(f"G {m}", m, "g", g) for m in data.metrics]
        names = [v.name for v in out]
        if len(set(names)) != len(names):
            raise ConfigError(f"metric names collide with the G-metric names: {names}")
        return tuple(out)

    def sampled(self, data: ScoreMatrix) -> list[int]:
        """Indices of the variants of stability, swap and rank correlation (if any is on)."""
        return ([i for i, v in enumerate(self.variants(data)) if v.sampled]
                if self.sampled_methods else [])

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Pair blocks x replicate blocks (no replicates when no test resamples)."""
        tests = {t for v in self.variants(data) for t in v.tests}
        resampled = any(get_test(t).monte_carlo for t in tests) or self.sampled_methods
        items, reps = self.shard_shape(pair_count(data), topk=self.keeps_topk)
        return shard_grid(pair_count(data), aligned_block(items, PAIR_UNIT),
                          self.config.B if resampled else 0, aligned_block(reps, REPLICATE_BLOCK))

    def shard_shape(self, pairs: int, *, topk: bool) -> tuple[int, int]:
        """Pairs x replicates per shard: the requested sizes, or else about
        :data:`SHARD_WORK` pair-replicates per shard, shaped by what the driver merges.

        Counters merge for free, so without top-k lists shards are 4,096 pairs x 1,000
        replicates. The top-k replicates of the estimated difference are merged on the
        driver across the replicate blocks of a pair, at a cost like the kernel's own
        (half of each block's replicates travel at B = 10,000): a shard then spans a
        pair's whole replicate range (fewer pairs instead, at most 4,096; while a pair
        unit's top-k buffer fits :data:`TOPK_UNIT_BYTES`, else 16,000 replicates), so each
        pair's list is complete on one worker, which ships only the values the estimated
        difference needs (:meth:`whole_replicates`); replicates are split again
        only where the grid would otherwise have fewer than :data:`MIN_SHARDS` shards (a few
        pairs: work for every worker). Results never depend on the shape.

        Examples
        --------
        >>> DiscPower.of(B=10_000).shard_shape(8256, topk=True)     # TREC-8: 17 shards
        (512, 10000)
        >>> DiscPower.of(B=10_000).shard_shape(190, topk=True)      # 20 systems: 10 shards
        (512, 1000)
        >>> DiscPower.of(B=10_000).shard_shape(8256, topk=False)
        (4096, 1000)
        """
        if not topk:
            items, reps = 4096, 1000
        else:
            # a pair unit's top-k buffer (up to 8 k entries of 24 bytes) bounds the range
            whole = PAIR_UNIT * 8 * self.k * 24 <= TOPK_UNIT_BYTES
            reps = self.config.B if whole else min(self.config.B, 16_000)
            items = min(4096, aligned_block(-(-SHARD_WORK // reps), PAIR_UNIT))
            blocks = -(-pairs // items)
            while blocks * -(-self.config.B // reps) < MIN_SHARDS and reps > 1000:
                reps = max(1000, aligned_block(reps // 2, REPLICATE_BLOCK))
        return (items if self.shard_items is None else self.shard_items,
                reps if self.shard_replicates is None else self.shard_replicates)

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`; `top_systems` and `top_by` through the data)."""
        return fingerprint(self, Config)

    def fields(self, data: ScoreMatrix) -> dict[str, Kind]:
        """Per pair: test counters and top-k replicates, stability counters; per replicate:
        Tukey null ranges, swap-set statistics, rank-correlation sums; swap bin counters."""
        P, B, out = pair_count(data), self.config.B, {}
        whole = self.whole_replicates(P)
        for vi, v in enumerate(self.variants(data)):
            for test in ("paired_bootstrap", "unpaired_bootstrap"):
                if test in v.tests:
                    f = BootstrapFields.of(test, vi)
                    out[f.count] = Count((P,), along="items")
                    if whole:  # the estimated difference's values at self.ranks
                        out[f.kth] = Slab((P, len(self.config.alpha)), along="items")
                    elif self.config.estimated_diff:  # paired: |mean| of the sample beside |t*|
                        out[f.top] = TopK(P, self.k, aux=int(f.test == "paired"))
            perm = PermutationFields(vi)
            if any(get_test(t).batched == "tukey_ranges" for t in v.tests):
                out[perm.tukey_ranges] = Slab((B,), along="reps")
            for test in _by_function(v.tests):  # p-values, by the first replicate block's shards
                out[perm.pair_asl(test)] = Slab((P,), along="items")
        sampled = self.sampled(data)
        for x, vi in enumerate(sampled):
            s = SampleFields(vi)
            if self.config.stability:
                for name in (s.gt_xy, s.gt_yx):
                    out[name] = Count((P, len(self.config.fuzziness)), along="items")
            if self.config.swap:
                out[s.swap_comps] = Count((ABSOLUTE.count,))
                out[s.swap_swaps] = Count((ABSOLUTE.count,))
                out[s.max_perf] = Slab((B,), along="reps")
            if self.config.rankcorr:
                out[s.ties] = Count((B,), along="reps")
                for vj in sampled[x + 1:]:
                    out[s.conc(vj)] = Count((B,), along="reps")
        if self.config.swap:
            for name in (SampleFields.UNIQUE, SampleFields.OVERLAP):
                out[name] = Slab((B,), along="reps", dtype="int64", fill=0)
        for vi in self.bayes_variants(data):  # per pair: decision code, evidence (issue 28)
            for test in self.config.bayes:
                f = BayesDecisionFields(vi, test)
                out[f.code] = Slab((P,), along="items", dtype="int64", fill=-1)
                out[f.value] = Slab((P, 3), along="items")
        return out

    def kernel(self, shard: Shard, data: ScoreMatrix) -> dict[str, Any]:
        """The fields of one shard."""
        r0, r1 = shard.reps
        out = ShardKernel(self, data, shard).run() if r1 > r0 else {}
        if r0 == 0:  # the randomisation test draws its own B sign vectors
            ia, ib = (i[slice(*shard.items)] for i in pair_index(len(data.systems)))
            for vi, v in enumerate(self.variants(data)):
                for test in _by_function(v.tests) if r1 > r0 else ():
                    out[PermutationFields(vi).pair_asl(test)] = resampled_pair_asl(
                        test, variant_values(v, data), ia, ib, B=self.config.B, seed=self.seed,
                        pvalue=self.config.pvalue, options=self.options)
            out.update(self.bayes_kernel(shard, data))
        return out

    def bayes_kernel(self, shard: Shard, data: ScoreMatrix) -> dict[str, np.ndarray]:
        """The Bayesian decisions of the shard's pairs (:func:`~.bayes.decide_pairs`)."""
        return decide_pairs(self, shard, data)

    # -- tables -------------------------------------------------------------------------
    def finalize(self, merged: dict[str, Any], data: ScoreMatrix) -> dict[str, pa.Table]:
        """``asl`` and ``discpower``; ``test_agreement``, ``stability``, ``swap_*`` and
        ``rankcorr`` if on."""
        n, B, P = len(data.topics), self.config.B, pair_count(data)
        ia, ib = pair_index(len(data.systems))
        systems = np.asarray(data.systems, dtype=object)
        asl_cols: dict[str, list] = {c: [] for c in schema("asl").names}
        dp_rows, by_metric = [], []
        variants = self.variants(data)
        for vi, v in enumerate(variants):
            if not v.tests:
                continue
            diff = observed_diff(v, data)
            by_metric.append((v.name, {}))
            x = variant_values(v, data)
            for test in v.tests:
                if get_test(test).closed_form:
                    asl, raw_by_alpha = closed_form_asl(test, x, self.config.alpha,
                                                        self.options)
                else:
                    asl, raw_by_alpha = resampled_asl(self, test, vi, x, merged)
                # the Tukey tests are simultaneous over all pairs already
                adjusted = (asl if get_test(test).simultaneous
                            else adjust(asl, self.config.correction))
                by_metric[-1][1][test] = asl
                for col, values in (("metric", [v.name] * P), ("test", [test] * P),
                                    ("system_a", systems[ia]), ("system_b", systems[ib]),
                                    ("diff", diff), ("asl", asl), ("asl_adjusted", adjusted)):
                    asl_cols[col].append(values)
                for alpha in self.config.alpha:
                    sig = int(np.count_nonzero(asl < alpha))
                    sig_adj = int(np.count_nonzero(adjusted < alpha))
                    raw = raw_by_alpha[alpha]
                    dp_rows.append({
                        "metric": v.name, "test": test, "alpha": alpha, "pairs": P,
                        "significant": sig, "sensitivity": sig / P,
                        "estimated_diff": None if raw is None else round_sig(raw, 2),
                        "estimated_diff_raw": raw, "correction": self.config.correction,
                        "significant_adjusted": sig_adj, "sensitivity_adjusted": sig_adj / P,
                    })
        out = {"asl": table("asl", {c: np.concatenate(parts) for c, parts in
                                      asl_cols.items()}),
               "discpower": table("discpower", dp_rows)}
        if self.config.agreement:
            out["test_agreement"] = agreement_table(by_metric, self.config.alpha)
        sampled = [(vi, variants[vi]) for vi in self.sampled(data)]
        fields = [(v.name, SampleFields(vi)) for vi, v in sampled]
        if self.config.stability:
            out["stability"] = stability_table(
                [(name, merged[f.gt_xy], merged[f.gt_yx]) for name, f in fields],
                self.config.fuzziness, B)
        if self.config.swap:
            out["swap_rates"], out["swap_summary"] = swap_tables(
                [(name, merged[f.swap_comps], merged[f.swap_swaps],
                  float(merged[f.max_perf].max())) for name, f in fields],
                subset_size=n, samples=B, confidences=self.config.swap_confidence,
                unique_total=int(merged[SampleFields.UNIQUE].sum()),
                overlap_total=int(merged[SampleFields.OVERLAP].sum()), layout=ABSOLUTE)
        if self.config.rankcorr:
            out["rankcorr"] = self._rankcorr(merged, data, sampled)
        if self.config.bayes:
            out["bayes_pairs"], out["bayes_discpower"] = bayes_tables(self, merged, data)
        return out

    def asl_of(self, count: np.ndarray) -> np.ndarray:
        """Monte Carlo ASL of replicate counts: ``count/B`` or ``(count+1)/(B+1)``."""
        B = self.config.B
        return count / B if self.config.pvalue == "count" else (count + 1) / (B + 1)

    def _rankcorr(self, merged: dict[str, Any], data: ScoreMatrix,
                  sampled: list[tuple[int, Variant]]) -> pa.Table:
        scores = []  # on the whole topic set: the observed tau
        for _, v in sampled:
            x = np.asarray(data.metric(v.metric), np.float64)
            scores.append(gmean_scores(x) if v.kind == "g" else x.mean(axis=1))
        index = [vi for vi, _ in sampled]
        conc = {(x, y): merged[SampleFields(index[x]).conc(index[y])]
                for x in range(len(index)) for y in range(x + 1, len(index))}
        obs, boot = tau_matrices(scores, conc, [merged[SampleFields(vi).ties] for vi in index])
        return rankcorr_table([v.name for _, v in sampled], obs, boot, len(data.systems))


def _by_function(tests: tuple[str, ...]) -> list[str]:
    """The Monte Carlo tests of `tests` without a batched path of the kernel
    (:data:`~.kernel.BATCHED`): run by their function on each shard's pairs (the
    randomisation test)."""
    return [t for t in tests if get_test(t).monte_carlo and get_test(t).batched not in BATCHED]


@study("discpower", config=Config, data="matrix", order=10,
       title="Discriminative power",
       example=dict(
           overrides={"synthetic": ["experiment.B=200", "experiment.stability=true"]},
           keywords=dict(B=100, tests=["paired_bootstrap", "t", "sign"], swap=True, stability=True,
                         fuzziness=[0.01, 0.05, 0.1], rankcorr=True, agreement=True,
                         bayes=["jzs_bf", "t_posterior", "bayesian_bootstrap"]),
           figures=["asl_curve_*", "pvalues_*", "mr_pt_curves.png", "swap_rates_*",
                    "tau_matrix.png", "bayes_discpower.png"]),
       tables=TABLE_SPECS,
       description=("discriminative power and Sakai's (2006) bootstrap methods: ASL per pair "
                    "(every test of irsim.stats), multiple-comparison corrections, sensitivity, "
                    "estimated difference, test agreement, G-metrics, stability, bootstrap swap "
                    "method, Kendall tau with bootstrap SE"),
       headlines={"discpower": Headline(("metric", "test", "alpha"), "sensitivity",
                                          also=("sensitivity_adjusted", "correction")),
                  "stability": (("metric", "fuzziness"), "minority_rate"),
                  "rankcorr": (("metric_a", "metric_b"), "tau")},
       question=("Which metric discriminates more system pairs, and what difference does "
                 "significance need? With every test, multiple-comparison corrections, and how"
                 " far the tests agree (Sakai 2006; Smucker et al. 2007)"))
def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Shards
         ) -> tuple[DiscPower, ScoreMatrix]:
    """The study of `config` on `data` (the top systems if ``top_systems``), checked.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> m = synthetic_scores(systems=6, topics=20, seed=1).matrix
    >>> study, data = make(Config(B=200, alpha=0.05), m, seed=3, shards=Shards())
    >>> study.config.alpha, study.shard_shape(15, topk=True)
    ([0.05], (4096, 200))
    >>> from irsim.errors import python_parameters
    >>> with python_parameters():  # messages name keywords (the CLI: experiment.B)
    ...     make(Config(B=0), m, seed=3, shards=Shards())
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: B must be an integer >= 1, got 0
    """
    study = DiscPower.from_config(config, seed=seed, shards=shards)
    if config.top_systems is not None:
        data = _top_systems(data, config.top_systems, config.top_by)
    _check_data(study, data)
    c = study.config
    specs = [get_test(t) for t in c.tests]
    if any(s.batched == "paired_bootstrap" for s in specs):  # 2 topics: t* = 0 always
        check_paired_bootstrap_topics(len(data.topics), param("tests"))
    monte_carlo = [s.name for s in specs if s.monte_carlo and not s.simultaneous]
    if c.correction in ("bonferroni", "holm") and monte_carlo:
        need = math.ceil(pair_count(data) / max(c.alpha))
        if c.B < need:  # the smallest Monte Carlo ASL, 1/(B+1), cannot pass alpha/pairs
            _LOG.warning("%s with B=%d: a Monte Carlo ASL of %s %s after the correction; "
                         "B >= %d is needed", c.correction, c.B, ", ".join(monte_carlo),
                         "passes alpha only when its count is 0 (pvalue=count)"
                         if c.pvalue == "count" else "can never pass alpha", need)
    return study, data


def _normalised(c: Config) -> Config:
    """`c` checked beyond its fields' bounds (tests known, listed once; flags true or false;
    the choices; lists not empty nor repeated; ``B * alpha >= 1`` with a Monte Carlo test)
    and normalised (the fuzziness sorted, the Bayesian options as :class:`BayesRules` holds
    them)."""
    tests = list(c.tests)
    for t in tests:
        if t not in TESTS:
            raise unknown_name("test for experiment=discpower", t, TESTS)
    if not tests:
        raise ConfigError(f"{param('tests')} must list at least one test")
    if len(set(tests)) != len(tests):
        raise ConfigError(f"{param('tests')} lists a test twice: {tests}")
    flags = {}
    for flag in ("gmean", "stability", "swap", "rankcorr", "estimated_diff", "agreement",
                 "wilcoxon_correction"):
        value = getattr(c, flag)
        if not isinstance(value, (bool, np.bool_)):
            raise ConfigError(f"{param(flag)} must be true or false, got {value!r}")
        flags[flag] = bool(value)
    for key, valid in (("correction", CORRECTIONS), ("wilcoxon_method", WILCOXON_METHODS),
                       ("wilcoxon_zero_method", ZERO_METHODS), ("pvalue", PVALUE_MODES)):
        if getattr(c, key) not in valid:
            raise unknown_name(f"{param(key)} value", str(getattr(c, key)), valid)
    rules = BayesRules.of(c).options()
    c = dataclasses.replace(
        c, tests=tests, alpha=list(check_listed(c.alpha, param("alpha"), "significance level")),
        fuzziness=list(check_fuzziness(c.fuzziness, param("fuzziness"))),
        swap_confidence=list(check_listed(c.swap_confidence, param("swap_confidence"),
                                          "confidence level")),
        sign_threshold=float(c.sign_threshold), **flags,
        **{k: list(v) if k == "bayes" else v for k, v in rules.items()})
    if any(get_test(t).monte_carlo for t in tests):  # an ASL moves in steps of 1/B
        check_resamples(c.B, c.alpha, param("B"), param("alpha"))
    return c


def _shard_size(value: int | None, key: str) -> int | None:
    """A requested shard size (None: :meth:`DiscPower.shard_shape` chooses)."""
    return None if value is None else check_positive_int(value, param(key, "engine"))


def _top_systems(matrix: ScoreMatrix, count: int, by: str | None) -> ScoreMatrix:
    """The `count` systems with the highest mean `by` (default: the first metric), in
    their original order (Sakai 2006 keeps the top 30 runs by AP)."""
    metric = by or matrix.metrics[0]
    if count >= len(matrix.systems):
        return matrix
    means = snap_ties(matrix.metric(metric).mean(axis=1))  # tie rule; ties: system order
    keep = np.sort(np.argsort(-means, kind="stable")[:count])
    return matrix.select(systems=[matrix.systems[i] for i in keep])


def _check_data(study: DiscPower, data: ScoreMatrix) -> None:
    """Systems, topics, scores >= 0 for G-metrics, metrics for rankcorr, the top-k budget."""
    n_sys = len(data.systems)
    if n_sys < 2:
        raise ConfigError(f"discriminative power needs >= 2 systems, got {n_sys}")
    if len(data.topics) < 2:
        raise ConfigError(f"discriminative power needs >= 2 topics, got {len(data.topics)}")
    variants = study.variants(data)
    tests = {t for v in variants for t in v.tests}
    batched = {get_test(t).batched for t in tests}
    need = working_bytes(len(data.topics), study.config.B, paired="paired_bootstrap" in batched
                         or study.sampled_methods, unpaired="unpaired_bootstrap" in batched,
                         swap=study.config.swap)
    check_memory(need, f"discpower's bootstrap samples ({min(study.config.B, 1000)} replicates of "
                 f"{len(data.topics)} topics at once)", f"{param('B')} or the number of "
                 f"topics (or leave out unpaired_bootstrap, swap)")
    if study.config.estimated_diff:
        lists = len(variants) * sum(t in ("paired_bootstrap", "unpaired_bootstrap")
                                    for t in study.config.tests)
        need = 24 * pair_count(data) * study.k * max(lists, 1)
        if need > TOPK_BUDGET:
            raise ConfigError(
                f"the estimated difference needs the {study.k} largest replicates of each "
                f"of {pair_count(data)} pairs ({need / 2**30:.1f} GiB, over the "
                f"{TOPK_BUDGET / 2**30:.0f} GiB budget); set "
                f"{param('estimated_diff')}=false (ASLs stay exact) or lower B or alpha")
    if study.config.gmean:
        for m in data.metrics:
            if float(data.metric(m).min()) < 0:
                raise InputError(f"G-metrics need scores >= 0, metric {m} has "
                                 f"{float(data.metric(m).min())}",
                                 file=data.source or "score matrix")
    if study.config.rankcorr and sum(v.sampled for v in variants) < 2:
        raise ConfigError(f"{param('rankcorr')} needs at least two metrics (or "
                          f"{param('gmean')}=true)")
