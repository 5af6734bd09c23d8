"""The names of the discpower study's fields: the one place they are spelt.

The study declares its fields (:meth:`~irsim.experiments.discpower.DiscPower.fields`), its
kernel (:mod:`~irsim.experiments.discpower.kernel`) writes them and its ``finalize`` reads
them, all three asking the typed layouts below; nothing formats a field's name elsewhere or
parses a name back. One layout per group of fields:

- :class:`BootstrapFields`: a bootstrap test of one variant (counts, top-k replicates,
  the estimated difference's values);
- :class:`PermutationFields`: the permutation tests of one variant (randomised Tukey HSD's
  null ranges, the randomisation test's ASLs);
- :class:`SampleFields`: the methods on the paired test's bootstrap samples of one variant
  (stability, swap, rank correlation), and the swap method's topic-set statistics shared by
  all variants;
- :class:`BayesDecisionFields`: a Bayesian test's decisions of one variant.

The names are those of the checkpoints written before these layouts existed (a run resumes
from them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = ["BootstrapFields", "PermutationFields", "SampleFields", "BayesDecisionFields"]


@dataclass(frozen=True)
class BootstrapFields:
    """The names of the fields of one bootstrap test (``paired`` or ``unpaired``) of variant
    `variant`.

    Examples
    --------
    >>> f = BootstrapFields("paired", 2)
    >>> f.count, f.top, f.kth
    ('paired_count_2', 'paired_top_2', 'paired_kth_2')
    >>> BootstrapFields.of("unpaired_bootstrap", 0).count
    'unpaired_count_0'
    """

    test: str
    variant: int

    @classmethod
    def of(cls, test: str, variant: int) -> BootstrapFields:
        """The fields of test ``paired_bootstrap`` or ``unpaired_bootstrap``."""
        return cls(test.removesuffix("_bootstrap"), variant)

    @property
    def count(self) -> str:
        """Per pair, the replicates at least as extreme as the observed statistic (Count)."""
        return f"{self.test}_count_{self.variant}"

    @property
    def top(self) -> str:
        """Per pair, the k most extreme replicates (TopK; replicates split over shards)."""
        return f"{self.test}_top_{self.variant}"

    @property
    def kth(self) -> str:
        """Per pair, the estimated difference's values at the alpha ranks (Slab; a shard
        holds the pair's whole replicate range)."""
        return f"{self.test}_kth_{self.variant}"


@dataclass(frozen=True)
class PermutationFields:
    """The names of the fields of the permutation tests of variant `variant`.

    Examples
    --------
    >>> f = PermutationFields(1)
    >>> f.tukey_ranges, f.randomisation_asl
    ('tukey_ranges_1', 'randomisation_asl_1')
    """

    variant: int

    @property
    def tukey_ranges(self) -> str:
        """Per replicate, randomised Tukey HSD's null range (Slab along the replicates)."""
        return f"tukey_ranges_{self.variant}"

    @property
    def randomisation_asl(self) -> str:
        """Per pair, the randomisation test's ASL (Slab along the pairs)."""
        return self.pair_asl("randomisation")

    def pair_asl(self, test: str) -> str:
        """Per pair, the ASL of Monte Carlo `test` run by its function on each shard's
        pairs (no batched path; Slab along the pairs)."""
        return f"{test}_asl_{self.variant}"


@dataclass(frozen=True)
class SampleFields:
    """The names of the fields of the methods on the paired test's bootstrap samples
    ``Q*b`` of variant `variant` (stability, swap, rank correlation); :attr:`UNIQUE` and
    :attr:`OVERLAP` are the swap method's topic-set statistics, one per replicate for all
    variants.

    Examples
    --------
    >>> f = SampleFields(0)
    >>> f.gt_xy, f.gt_yx
    ('gt_xy_0', 'gt_yx_0')
    >>> f.swap_comps, f.swap_swaps, f.max_perf
    ('swap_comps_0', 'swap_swaps_0', 'max_perf_0')
    >>> f.ties, f.conc(2), SampleFields.UNIQUE, SampleFields.OVERLAP
    ('ties_0', 'conc_0_2', 'unique', 'overlap')
    """

    #: Per replicate, the distinct topics of ``Q*b`` plus those of ``Q'*b`` (swap).
    UNIQUE: ClassVar[str] = "unique"
    #: Per replicate, the topics drawn into both ``Q*b`` and ``Q'*b`` (swap).
    OVERLAP: ClassVar[str] = "overlap"

    variant: int

    @property
    def gt_xy(self) -> str:
        """Per pair and fuzziness, the samples where ``x`` beats ``y`` (stability)."""
        return f"gt_xy_{self.variant}"

    @property
    def gt_yx(self) -> str:
        """Per pair and fuzziness, the samples where ``y`` beats ``x`` (stability)."""
        return f"gt_yx_{self.variant}"

    @property
    def swap_comps(self) -> str:
        """Per difference bin, the comparisons of the swap method."""
        return f"swap_comps_{self.variant}"

    @property
    def swap_swaps(self) -> str:
        """Per difference bin, the swaps of the swap method."""
        return f"swap_swaps_{self.variant}"

    @property
    def max_perf(self) -> str:
        """Per replicate, the largest mean score on either sample (swap)."""
        return f"max_perf_{self.variant}"

    @property
    def ties(self) -> str:
        """Per replicate, the system pairs tied on the sample (rank correlation)."""
        return f"ties_{self.variant}"

    def conc(self, other: int) -> str:
        """Per replicate, concordant minus discordant system pairs of this variant's
        ranking on the sample and variant `other`'s (rank correlation; `other` follows
        this variant)."""
        return f"conc_{self.variant}_{other}"


@dataclass(frozen=True)
class BayesDecisionFields:
    """The names of the fields of Bayesian test `test`'s decisions of variant `variant`.

    Examples
    --------
    >>> f = BayesDecisionFields(0, "jzs_bf")
    >>> f.code, f.value
    ('bayes_code_0_jzs_bf', 'bayes_value_0_jzs_bf')
    """

    variant: int
    test: str

    @property
    def code(self) -> str:
        """Per pair, the decision code (index of :data:`irsim.stats.bayes.DECISIONS`)."""
        return f"bayes_code_{self.variant}_{self.test}"

    @property
    def value(self) -> str:
        """Per pair, the evidence ``(BF10, P(delta > 0), P(delta in ROPE))``."""
        return f"bayes_value_{self.variant}_{self.test}"
