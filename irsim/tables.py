"""Every output table irsim writes: its name, the studies that write it, its columns.

One registry, :data:`TABLES`, holds the Arrow schema (column names, order and types) and the
meaning of every column of every table a study or command writes to
``<run dir>/results/<name>.parquet``. :func:`irsim.engine.write_tables` checks each table
against it before writing; :func:`table` builds a table with the declared schema;
:func:`markdown` renders the registry for the documentation site (page "Output tables" and each
study's page; written into ``docs/`` by ``python -m irsim.docs docs``).

A column may be filled by only some of the studies that write its table
(:attr:`Column.filled_by`): rows of the other studies hold null there. ``swap_summary`` is the
one such table: the bootstrap swap method of ``discpower`` and the topic-sampling study
``swap`` share it.

A schema mismatch is a programming error, not bad input: :func:`check` and :func:`table`
raise :class:`ValueError` (names: missing, unexpected or out-of-order columns) or
:class:`TypeError` (a column's Arrow type), naming the table and the column.

Examples
--------
>>> schema("per_topic").names
['metric', 'system', 'topic', 'value']
>>> TABLES["swap_summary"].studies
('discpower', 'swap')
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = ["Column", "TableSpec", "TABLES", "PER_COLLECTION", "spec", "schema", "table",
           "check", "table_markdown", "markdown", "add_tables"]

_S, _I, _F = pa.string(), pa.int64(), pa.float64()


@dataclass(frozen=True)
class Column:
    """One column of an output table.

    Parameters
    ----------
    name : str
        Column name.
    type : pyarrow.DataType
        Its Arrow type.
    meaning : str
        What a value means, in a sentence or two.
    filled_by : tuple of str
        The studies that fill the column, when not every study of its table does; the rows
        of the other studies hold null. Empty (default): every study fills it.

    Examples
    --------
    >>> Column("asl", pa.float64(), "achieved significance level").optional
    False
    """

    name: str
    type: pa.DataType
    meaning: str
    filled_by: tuple[str, ...] = ()

    @property
    def optional(self) -> bool:
        """Whether some study of the table leaves this column null."""
        return bool(self.filled_by)


@dataclass(frozen=True)
class TableSpec:
    """An output table: name, writers, contents and columns.

    Parameters
    ----------
    name : str
        Table name (``results/<name>.parquet``).
    studies : tuple of str
        Experiments that write it (``experiment=<name>``; ``evaluate`` is ``irsim evaluate``).
    description : str
        What one row holds.
    columns : tuple of Column
        In table order.
    when : str
        A clause saying under which options it is written, e.g. ``only with
        `experiment.stability=true` `` (empty: by every run of its studies).

    Examples
    --------
    >>> TABLES["asl"].names[:2]
    ('metric', 'test')
    """

    name: str
    studies: tuple[str, ...]
    description: str
    columns: tuple[Column, ...]
    when: str = ""

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"table {self.name!r}: duplicate column names in {names}")
        for c in self.columns:
            if not set(c.filled_by) <= set(self.studies):
                raise ValueError(f"table {self.name!r}, column {c.name!r}: filled_by "
                                 f"{c.filled_by} names a study not in {self.studies}")

    @property
    def names(self) -> tuple[str, ...]:
        """Column names in order."""
        return tuple(c.name for c in self.columns)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema (no metadata)."""
        return pa.schema([(c.name, c.type) for c in self.columns])


#: The first column of every table of a study run on each of several collections
#: (``collection.paths={METRIC: [file, ...]}``, :mod:`irsim.engine.composite`); not part of
#: the tables' declared columns.
PER_COLLECTION = Column("collection", _S, "the collection the row belongs to")


# ------------------------------------------------------------------------- shared columns
def _c(name: str, type_: pa.DataType, meaning: str, *filled_by: str) -> Column:
    return Column(name, type_, meaning, tuple(filled_by))


def _bins(what: str = "the difference on the first topic set") -> tuple[Column, ...]:
    return (
        _c("bin_kind", _S, "`absolute`: bins 0.01 wide of |d|, the last >= 0.20; `relative`: "
           f"bins 5% wide of |d| / the smaller mean, the last open (d: {what})"),
        _c("bin_lo", _F, "lower edge of the bin (inclusive)"),
        _c("bin_hi", _F, "upper edge of the bin (exclusive; inf for the last, open bin)"),
    )


_METRIC = _c("metric", _S, "metric, as ir_measures spells it (`AP`, `P@10`, `nDCG@10`)")
_SAMPLING = _c("sampling", _S, "how the two topic sets of a trial are drawn: `disjoint`, "
               "`independent`, `replacement` or `bootstrap`")
_SUBSET = _c("subset_size", _I, "topics per set: c; n (all topics) for `bootstrap`")
_P_WINDOW = (
    _c("p_lo", _F, "p-value window `p_lo < p <= p_hi` of the test on the first set "
       "(`p_lo` = 0 includes p = 0); 0 for `none`"),
    _c("p_hi", _F, "upper end of the p-value window; 1 for `none`"),
)
_COND_TEST = _c("test", _S, "test on the first set the comparison is conditioned on (`t`, "
                "`sign`, `wilcoxon`, `paired_bootstrap`, `randomisation`), or `none`: every "
                "comparison")
_ERRORS = (
    _c("comparisons", _I, "pair x trial comparisons in the bin"),
    _c("errors", _I, "comparisons whose order differs on the second set (opposite signs, or "
       "exactly one difference 0)"),
    _c("error_rate", _F, "errors / comparisons (NaN for an empty bin)"),
)
_DP_METRIC = _c("metric", _S, "metric; with `experiment.gmean`, also `AG <metric>` (per-topic "
                "log(x + 1e-5), tests of means) and `G <metric>` (geometric mean, unpaired "
                "bootstrap)")
_DP_TEST = _c("test", _S, "`paired_bootstrap`, `unpaired_bootstrap`, `t`, "
              "`randomised_tukey_hsd`, `wilcoxon`, `sign`, `randomisation` or `tukey_hsd`")
_SAMPLED_METRIC = _c("metric", _S, "metric (`<metric>` or `G <metric>`)")
_SPLIT_ABOVE = "lies above the interval (null when there is none)"
_MEASURE = _c("measure", _S, "`MAP` or `L-MAP` (mean logit AP)")
_MAP_METHOD = _c("method", _S, "`bootstrap` (sd of MAP* / L-MAP* over the corpus resamples) or "
                 "`parametric` (delta method from the per-topic logit sds)")
_DIRECTION = _c("direction", _S, "`A->B`: interval from half A, value of half B; or `B->A`")
_CI_METHOD = _c("method", _S, "`normal`, `logit` or `bca`; `<method>_small_r` with the "
                "small-R correction")


def _spec(name: str, studies: tuple[str, ...], description: str, columns: Sequence[Column],
          when: str = "") -> TableSpec:
    return TableSpec(name, studies, description, tuple(columns), when)


_DP, _SW = ("discpower",), ("swap",)
_URBANO = "only with `experiment.design=urbano2019`"  # issue 13

# ------------------------------------------------------------------------------ registry
_SPECS = [
    # -- discpower --------------------------------------------------------------------------
    _spec("asl", _DP, "Achieved significance level of every system pair, per metric and test.", [
        _DP_METRIC,
        _DP_TEST,
        _c("system_a", _S, "first system of the pair (pairs a < b in collection order)"),
        _c("system_b", _S, "second system of the pair"),
        _c("diff", _F, "observed difference system_a - system_b: of mean scores; of geometric "
           "means for `G`; mean difference of the logs for `AG`"),
        _c("asl", _F, "achieved significance level of the test for this pair (Monte Carlo "
           "count/B, or (count+1)/(B+1) with `experiment.pvalue=plus_one`; t, Wilcoxon, sign, "
           "Tukey HSD: two-sided p; randomisation: exact count/2^n when 2^n <= B)"),
        _c("asl_adjusted", _F, "asl adjusted by `experiment.correction` over the family of all "
           "pairs of this metric and test (Bonferroni, Holm, Benjamini-Hochberg or "
           "-Yekutieli adjusted p-value, as statsmodels' multipletests; `none`: asl); Tukey HSD "
           "and randomised Tukey HSD are simultaneous tests already: their asl"),
    ]),
    _spec("discpower", _DP, "Discriminative power: per metric, test and alpha, the share of "
          "pairs significant and the difference significance needs.", [
              _DP_METRIC,
              _DP_TEST,
              _c("alpha", _F, "significance level: a pair is significant when asl < alpha"),
              _c("pairs", _I, "system pairs tested"),
              _c("significant", _I, "pairs with asl < alpha"),
              _c("sensitivity", _F, "significant / pairs (discriminative power)"),
              _c("estimated_diff", _F, "estimated difference required for asl < alpha, two "
                 "significant figures (NaN for the bootstrap tests with "
                 "`experiment.estimated_diff=false`; null for Wilcoxon, sign and "
                 "randomisation)"),
              _c("estimated_diff_raw", _F, "estimated_diff unrounded. Paired bootstrap: "
                 "|mean| of the resample with the ceil(alpha B)-th largest |t*|, max over "
                 "pairs; unpaired: the ceil(alpha B)-th largest |d*|, max over pairs; t: "
                 "t(1 - alpha/2, n-1) sd / sqrt(n), max over pairs; randomised Tukey HSD: the "
                 "ceil(alpha B)-th largest null range; Tukey HSD: the honestly significant "
                 "difference q(1 - alpha; systems, (systems-1)(topics-1)) sqrt(MS_error / "
                 "topics); null for Wilcoxon and sign (none defined) and randomisation "
                 "(not computed)"),
              _c("correction", _S, "`experiment.correction`: `none`, `bonferroni`, `holm`, "
                 "`bh` or `by`"),
              _c("significant_adjusted", _I, "pairs with asl_adjusted < alpha"),
              _c("sensitivity_adjusted", _F, "significant_adjusted / pairs (discriminative "
                 "power after the correction)"),
          ]),
    _spec("test_agreement", _DP, "Agreement of two tests over all system pairs (Smucker, Allan "
          "& Carterette 2007): per metric, pair of tests and alpha.", [
              _DP_METRIC,
              _c("test_a", _S, "first test (in `experiment.tests` order)"),
              _c("test_b", _S, "second test"),
              _c("alpha", _F, "significance level: a pair is significant when asl < alpha "
                 "(uncorrected)"),
              _c("pairs", _I, "system pairs with a p-value from both tests"),
              _c("pearson_r", _F, "Pearson correlation of the two tests' p-values over the "
                 "pairs (NaN if either is constant)"),
              _c("rmse", _F, "root mean square of the differences of the p-values"),
              _c("both", _F, "share of pairs significant by both tests"),
              _c("only_a", _F, "share of pairs significant by test_a only"),
              _c("only_b", _F, "share of pairs significant by test_b only"),
              _c("neither", _F, "share of pairs significant by neither test"),
          ], when="only with `experiment.agreement=true`"),
    _spec("stability", _DP, "Stability (Buckley-Voorhees; Sakai's MR-PT curves): per metric and "
          "fuzziness, minority rate and proportion of ties over the paired test's bootstrap "
          "samples.", [
              _SAMPLED_METRIC,
              _c("fuzziness", _F, "f: a pair is tied on a sample when |D| < f x the larger of "
                 "the two scores"),
              _c("minority_rate", _F, "minority / comparisons (MR)"),
              _c("prop_ties", _F, "ties / comparisons (PT)"),
              _c("minority", _I, "sum over pairs of min(GT(X,Y), GT(Y,X))"),
              _c("ties", _I, "sum over pairs of the samples on which the pair is tied"),
              _c("comparisons", _I, "pairs x B"),
          ], when="only with `experiment.stability=true`"),
    _spec("swap_rates", ("discpower", "swap"), "Swap rates per difference bin: per metric, "
          "sampling, topic-set size and bin, comparisons and swaps between two topic sets "
          "(discpower: the bootstrap swap method on Q*b and Q'*b).", [
              _c("metric", _S, "metric (discpower: `<metric>` or `G <metric>`)"),
              _c("sampling", _S, "how the two topic sets are drawn: `bootstrap` (discpower); "
                 "swap: `disjoint`, `independent`, `replacement` or `bootstrap`"),
              _c("subset_size", _I, "topics per set: c; n (all topics) for `bootstrap`"),
              _c("bin_kind", _S, "`absolute`: bins of |d| 0.01 wide, the last >= 0.20; "
                 "`relative` (swap only): bins 5% wide of |d| / the smaller mean"),
              *_bins()[1:],
              _c("comparisons", _I, "pair x trial (discpower: pair x sample) comparisons whose "
                 "difference d on the first set falls in the bin"),
              _c("swaps", _I, "comparisons whose order flips on the second set: d d' < 0; "
                 "swap also counts exactly one of d, d' being 0"),
              _c("swap_rate", _F, "swaps / comparisons (NaN for an empty bin)"),
          ], when="by discpower only with `experiment.swap=true`"),
    _spec("swap_summary", ("discpower", "swap"), "Difference required for a swap rate of at "
          "most 1 - confidence, and the sensitivity it leaves: per metric, sampling, size and "
          "confidence. discpower (bootstrap swap method, absolute bins only) fills "
          "`comparisons_above` but not the `*_reldiff` columns, swap the reverse: a table "
          "holds null in the other study's columns, or lacks them.", [
              _c("metric", _S, "metric (discpower: `<metric>` or `G <metric>`)"),
              _c("sampling", _S, "`bootstrap` (discpower); swap: `disjoint`, `independent`, "
                 "`replacement` or `bootstrap`"),
              _c("subset_size", _I, "topics per set: c; n (all topics) for `bootstrap`"),
              _c("confidence", _F, "confidence level 1 - r: bins must have swap rate <= r"),
              _c("required_diff", _F, "smallest absolute-bin edge from which every non-empty "
                 "bin has swap rate <= 1 - confidence (NaN if none)"),
              _c("max_performance", _F, "largest mean score of any system on any topic set "
                 "(sample) drawn"),
              _c("relative_diff", _F, "required_diff / max_performance"),
              _c("sensitivity", _F, "share of comparisons with |d| >= required_diff; when "
                 "required_diff is NaN: 0 (discpower), NaN (swap)"),
              _c("mean_unique_topics", _F, "distinct topics per set, averaged over both sets "
                 "of every trial (sample)"),
              _c("mean_overlap", _F, "topics the two sets of a trial (sample) share, averaged "
                 "over trials"),
              _c("comparisons", _I, "comparisons over all absolute bins: pairs x trials (B)"),
              _c("comparisons_above", _I, "comparisons with |d| >= required_diff (0 when "
                 "required_diff is NaN)", "discpower"),
              _c("required_reldiff", _F, "smallest relative-bin edge (share of the smaller "
                 "mean) from which every non-empty bin has swap rate <= 1 - confidence (NaN if "
                 "none)", "swap"),
              _c("sensitivity_reldiff", _F, "share of comparisons with relative difference >= "
                 "required_reldiff (NaN if required_reldiff is NaN)", "swap"),
          ], when="by discpower only with `experiment.swap=true`"),
    _spec("rankcorr", _DP, "Kendall's tau between the system rankings of every pair of metrics, "
          "with the Z0 test and the bootstrap standard error.", [
              _c("metric_a", _S, "first metric (`<metric>` or `G <metric>`, in metric order)"),
              _c("metric_b", _S, "second metric"),
              _c("tau", _F, "Kendall's tau-b between the rankings by mean score (tau-a when "
                 "there are no ties)"),
              _c("se_boot", _F, "sd (ddof=1) of tau over the paired test's bootstrap samples "
                 "where it is defined"),
              _c("z0", _F, "|tau| / sqrt(2(2k+5) / (9k(k-1))) for k systems"),
              _c("p_value", _F, "two-sided p-value of z0: 2 (1 - Phi(z0))"),
              _c("systems", _I, "k: systems ranked"),
              _c("tau_boot_mean", _F, "mean of tau over those bootstrap samples"),
              _c("replicates", _I, "bootstrap samples with a defined tau"),
          ], when="only with `experiment.rankcorr=true`"),
    # -- error_rates ------------------------------------------------------------------------
    _spec("error_rates", ("error_rates",), "Error rates of run comparisons between two topic "
          "sets: per metric, sampling, size, difference bin and significance condition.", [
              _METRIC, _SAMPLING, _SUBSET, *_bins(), _COND_TEST, *_P_WINDOW, *_ERRORS,
          ]),
    _spec("error_extrapolation", ("error_rates",), "Per bin and condition, the least-squares "
          "fit log(rate) = a + b size over the sizes (Excel GROWTH) and the rate it predicts at "
          "each target size; no row where fewer than two sizes are usable.", [
              _METRIC, _SAMPLING, *_bins(), _COND_TEST, *_P_WINDOW,
              _c("a", _F, "intercept of the fit of log(error rate)"),
              _c("b", _F, "slope of log(error rate) per topic"),
              _c("target_size", _I, "topic set size extrapolated to (`experiment.target_sizes`)"),
              _c("predicted_rate", _F, "exp(a + b target_size)"),
              _c("points", _I, "sizes in the fit: rate > 0 and at least "
                 "`experiment.min_comparisons` comparisons"),
              _c("r2", _F, "coefficient of determination on the log scale (1 for two points)"),
          ]),
    _spec("full_significance", ("error_rates",), "On the full topic set, the share of pairs a "
          "test finds significant, per bin of the full-set difference.", [
              _METRIC,
              _c("test", _S, "`t`, `sign`, `wilcoxon`, `paired_bootstrap` or `randomisation`"),
              _c("alpha", _F, "significance level: p <= alpha (`experiment.full_alpha`)"),
              *_bins("the full-set difference"),
              _c("pairs", _I, "pairs whose full-set difference falls in the bin"),
              _c("significant", _I, "of those, pairs with p <= alpha"),
              _c("share", _F, "significant / pairs (NaN for an empty bin)"),
          ]),
    _spec("sd_by_size", ("error_rates",), "Standard deviation of a system's mean score over "
          "random topic samples, by sample size, summarised over systems.", [
              _METRIC,
              _c("sample_size", _I, "topics per sample (drawn without replacement)"),
              _c("samples", _I, "samples per size"),
              _c("systems", _I, "systems summarised (after `experiment.drop_bottom`)"),
              _c("mean_sd", _F, "mean over systems of the sd (ddof=1) of the system's mean "
                 "score across samples"),
              _c("min_sd", _F, "smallest such sd"),
              _c("max_sd", _F, "largest such sd"),
          ]),
    _spec("error_dependency", ("error_rates",), "Each pair's trials ranked by |d| on the first "
          "set; the error rate by rank over all pairs (the dependency artefact).", [
              _METRIC, _SAMPLING, _SUBSET,
              _c("rank", _I, "rank of the trial among its pair's trials by |d| on the first set "
                 "(1: smallest)"),
              _c("pairs", _I, "pairs (one trial of each rank)"),
              _c("errors", _I, "pairs whose trial of this rank is an error"),
              _c("error_rate", _F, "errors / pairs"),
          ]),
    # -- effort -----------------------------------------------------------------------------
    _spec("effort", ("effort",), "Unconditioned error rates of metrics recomputed on depth-k "
          "pools, per difference bin, with the judging effort.", [
              _c("metric", _S, "metric recomputed on the pooled qrels"),
              _c("pool_depth", _I, "pool depth k (null: the full qrels)"),
              _SAMPLING, _SUBSET,
              _c("judged_per_topic", _F, "mean judged documents per topic (pool size)"),
              _c("effort", _F, "subset_size x judged_per_topic"),
              *_bins(), *_ERRORS[:2],
              _c("error_rate", _F, "errors / comparisons (null for an empty bin)"),
          ]),
    _spec("effort_summary", ("effort",), "Error rate over all difference bins against effort, "
          "per metric, pool depth, sampling and size.", [
              _c("metric", _S, "metric recomputed on the pooled qrels"),
              _c("pool_depth", _I, "pool depth k (null: the full qrels)"),
              _SAMPLING, _SUBSET,
              _c("judged_per_topic", _F, "mean judged documents per topic (pool size)"),
              _c("effort", _F, "subset_size x judged_per_topic"),
              _c("comparisons", _I, "pair x trial comparisons"),
              _c("errors", _I, "comparisons whose order differs on the second set"),
              _c("error_rate", _F, "errors / comparisons (null without comparisons)"),
          ]),
    _spec("pools", ("effort",), "Judged and relevant documents per metric, pool depth and "
          "topic.", [
              _c("pool_depth", _I, "pool depth k (null: the full qrels)"),
              _c("metric", _S, "metric evaluated on these pools"),
              _c("topic", _S, "topic"),
              _c("judged", _I, "judged documents of the topic (pool size; all judgments when "
                 "pool_depth is null)"),
              _c("relevant", _I, "judged documents with grade >= 1"),
          ]),
    # -- coverage ---------------------------------------------------------------------------
    _spec("coverage", ("coverage",), "Type I error of confidence intervals for a system's mean "
          "on topic samples: per method, sample size, alpha and metric.", [
              _c("method", _S, "`normal`, `t`, `percentile`, `basic`, `bca` or "
                 "`studentised_logit`"),
              _c("n", _I, "topics per sample (drawn without replacement)"),
              _c("alpha", _F, "intervals at level 1 - alpha"),
              _c("samples", _I, "samples of size n"),
              _c("type1_error", _F, "share of intervals missing the population mean (the mean "
                 "over all topics): (misses_above + misses_below) / intervals"),
              _c("above", _F, "misses_above / intervals"),
              _c("below", _F, "misses_below / intervals"),
              _METRIC,
              _c("intervals", _I, "samples x systems"),
              _c("misses_above", _I, "intervals lying above the population mean"),
              _c("misses_below", _I, "intervals lying below the population mean"),
          ]),
    # -- corpus_ci --------------------------------------------------------------------------
    _spec("corpus_ci", ("corpus_ci",), "Confidence interval for the AP of every run x topic "
          "under corpus resampling, per method.", [
              _c("system", _S, "run"),
              _c("topic", _S, "topic (topics without a relevant document are left out)"),
              _c("ap", _F, "AP on the full corpus"),
              _c("lo", _F, "lower limit at level 1 - alpha"),
              _c("hi", _F, "upper limit at level 1 - alpha"),
              _CI_METHOD,
              _c("relevant", _I, "R: relevant documents of the topic"),
              _c("se", _F, "sd of AP* over the B corpus resamples"),
              _c("sd_logit", _F, "logit-scale sd the logit interval implies (small-R corrected "
                 "with `experiment.small_r`)"),
          ]),
    _spec("corpus_validation", ("corpus_ci",), "Split-corpus validation of the AP intervals: "
          "per MD5 split, share of the other half's AP above, within and below the interval "
          "from one half.", [
              _c("split", _I, "MD5 split: 0 is the paper's unsalted rule (first bit of "
                 "MD5(docno)), k > 0 hashes a salted docno (salts in the manifest); "
                 "`experiment.splits` of them"),
              _CI_METHOD,
              _c("subset", _S, "`A->B all`, `A->B R>5` (R of the interval's half > "
                 "`experiment.r_threshold`), likewise `B->A`; lists where a half has no "
                 "relevant document are left out"),
              _c("above", _F, f"share of lists whose other-half AP {_SPLIT_ABOVE}"),
              _c("within", _F, "share within the interval, a value equal to a bound counting "
                 "as within for every method (`logit` intervals compare the other half's AP "
                 "clamped to [1e-5, 1 - 1e-5], their scale); null when there is no list"),
              _c("below", _F, "share below the interval (null when there is no list)"),
              _c("predicted_within", _F, "share within predicted by the parametric model, "
                 "2 Phi(z / sqrt 2) - 1 (0.834 at 95%); null for `bca` and `bca_small_r`"),
              _c("lists", _I, "run x topic lists counted"),
          ], when="only with `experiment.validate=true` (the default)"),
    _spec("corpus_validation_summary", ("corpus_ci",), "Split-corpus validation of the AP "
          "intervals over the MD5 splits: per method and subset, the mean over splits of each "
          "split's shares (both directions pooled), their sd over splits and a t interval.", [
              _CI_METHOD,
              _c("subset", _S, "`all` or `R>5` (R of the interval's half > "
                 "`experiment.r_threshold`), both directions"),
              _c("splits", _I, "splits with at least one list (the t interval has splits - 1 "
                 "degrees of freedom)"),
              _c("within", _F, "mean over splits of the share within the interval (a value "
                 "equal to a bound is within; `logit` intervals compare the other half's AP "
                 "clamped to [1e-5, 1 - 1e-5])"),
              _c("within_sd", _F, "sd over splits of the share within (null with one split)"),
              _c("within_lo", _F, "lower limit of the t interval at level 1 - alpha for the "
                 "mean within share over random splits of this collection (null with one "
                 "split)"),
              _c("within_hi", _F, "upper limit of that t interval"),
              _c("above", _F, "mean over splits of the share above the interval"),
              _c("above_sd", _F, "sd over splits of the share above"),
              _c("above_lo", _F, "lower limit of the t interval of the mean share above"),
              _c("above_hi", _F, "upper limit of the t interval of the mean share above"),
              _c("below", _F, "mean over splits of the share below the interval"),
              _c("below_sd", _F, "sd over splits of the share below"),
              _c("below_lo", _F, "lower limit of the t interval of the mean share below"),
              _c("below_hi", _F, "upper limit of the t interval of the mean share below"),
              _c("predicted_within", _F, "share within predicted by the parametric model, "
                 "2 Phi(z / sqrt 2) - 1 (0.834 at 95%); null for `bca` and `bca_small_r`"),
              _c("lists", _I, "lists counted, over splits and both directions"),
              _c("rel", _I, "relevance threshold: grade >= rel is relevant "
                 "(`experiment.rel`)"),
          ], when="only with `experiment.validate=true` (the default)"),
    _spec("corpus_split", ("corpus_ci",), "Per list, method and direction: the AP interval from "
          "one half of the corpus and the other half's AP.", [
              _DIRECTION,
              _c("system", _S, "run"),
              _c("topic", _S, "topic"),
              _c("relevant", _I, "R in the interval's half"),
              _c("ap_ci", _F, "AP on the interval's half"),
              _c("ap_other", _F, "AP on the other half"),
              _CI_METHOD,
              _c("lo", _F, "lower limit of the interval (from ap_ci's half)"),
              _c("hi", _F, "upper limit of the interval"),
              _c("normalised", _F, "ap_other - ap_ci scaled so that the interval maps to "
                 "[-1, 1]: |x| <= 1 exactly when within (for `logit`, ap_other clamped to "
                 "[1e-5, 1 - 1e-5] first, as in corpus_validation)"),
          ], when="only with `experiment.validate=true` (the default)"),
    _spec("corpus_map", ("corpus_ci",), "MAP and L-MAP of every run with intervals from the "
          "corpus bootstrap and from the delta method.", [
              _c("system", _S, "run"),
              _MEASURE,
              _c("estimate", _F, "MAP, or L-MAP (mean over topics of logit AP)"),
              _c("lo", _F, "estimate - z se"),
              _c("hi", _F, "estimate + z se"),
              _MAP_METHOD,
              _c("se", _F, "standard error of the estimate"),
          ]),
    _spec("corpus_map_validation", ("corpus_ci",), "Split-corpus validation of the MAP and "
          "L-MAP intervals: share of systems whose estimate on the other half lies above, within "
          "or below the interval from one half.", [
              _MEASURE, _MAP_METHOD,
              _c("subset", _S, "`A->B` (interval from half A) or `B->A`"),
              _c("above", _F, f"share of systems whose other-half estimate {_SPLIT_ABOVE}"),
              _c("within", _F, "share within the interval (null when there is no system)"),
              _c("below", _F, "share below the interval (null when there is no system)"),
              _c("predicted_within", _F, "share within predicted by the parametric model, "
                 "2 Phi(z / sqrt 2) - 1 (0.834 at 95%)"),
              _c("systems", _I, "systems with a finite estimate on both halves"),
          ], when="only with `experiment.validate=true` (the default)"),
    _spec("corpus_map_split", ("corpus_ci",), "Per run, measure, method and direction: the "
          "interval from one half and the other half's estimate.", [
              _DIRECTION,
              _c("system", _S, "run"),
              _MEASURE, _MAP_METHOD,
              _c("estimate", _F, "estimate on the interval's half"),
              _c("lo", _F, "estimate - z se"),
              _c("hi", _F, "estimate + z se"),
              _c("other", _F, "estimate on the other half"),
          ], when="only with `experiment.validate=true` (the default)"),
    _spec("corpus_meta", ("corpus_ci",), "Meta-analysis over topics of d = logit(AP_x) - "
          "logit(AP_y) per system pair, fixed effect and DerSimonian-Laird random effects.", [
              _c("system_a", _S, "system x"),
              _c("system_b", _S, "system y"),
              _c("model", _S, "`fixed` or `random`"),
              _c("effect", _F, "combined difference of logit AP"),
              _c("se", _F, "standard error of the effect"),
              _c("lo", _F, "lower limit at level 1 - alpha"),
              _c("hi", _F, "upper limit at level 1 - alpha"),
              _c("z", _F, "effect / se"),
              _c("p_value", _F, "two-sided normal p-value of z"),
              _c("tau2", _F, "between-topic variance (0 for `fixed`)"),
              _c("q", _F, "Cochran's Q around the fixed-effect estimate"),
              _c("i2", _F, "I^2 = max(0, (Q - (k-1)) / Q)"),
              _c("topics", _I, "k: topics combined"),
          ], when="only with at least two runs and a non-empty `experiment.pairs` (default: "
                  "all pairs)"),
    # -- test_errors ------------------------------------------------------------------------
    _spec("test_errors", ("test_errors",), "Type I error and power of paired tests on "
          "simulated topics: per metric, test, alternative, n, delta and alpha.", [
              _c("metric", _S, "metric whose collection the generator was fit to"),
              _c("test", _S, "`t`, `wilcoxon`, `sign`, `randomisation` or `paired_bootstrap`"),
              _c("alternative", _S, "`two-sided`, `greater` (experimental system better) or "
                 "`less`"),
              _c("n", _I, "topics per trial"),
              _c("delta", _F, "true difference experimental - baseline mean (0: Type I error)"),
              _c("alpha", _F, "significance level: the test rejects when p <= alpha"),
              _c("trials", _I, "simulated pairs"),
              _c("rejections", _I, "trials with p <= alpha"),
              _c("rate", _F, "rejections / trials: Type I error (delta = 0) or power"),
              _c("ci_lo", _F, "Clopper-Pearson lower limit of rate (`experiment.ci_level`)"),
              _c("ci_hi", _F, "Clopper-Pearson upper limit of rate"),
              _c("mean_diff", _F, "mean over trials of the simulated mean difference "
                 "(should be delta)"),
              _c("mean_diff_se", _F, "standard error of mean_diff"),
          ]),
    _spec("test_errors_fit", ("test_errors",), "One row per metric: how the generator was fit "
          "and how closely it reproduces the collection.", [
              _METRIC,
              _c("margin", _S, "margin kind: `kernel` or `empirical`"),
              _c("support", _S, "discrete support detected (e.g. `grid 1/10`); empty if none"),
              _c("systems", _I, "systems modelled"),
              _c("dropped", _I, "systems left out (duplicates, `experiment.drop_bottom`)"),
              _c("baselines", _I, "systems whose margin can be shifted to every delta"),
              _c("pairs", _I, "system pairs, one Gaussian copula each"),
              _c("dependence", _S, "dependence the copulas reproduce: `pearson` or `kendall`"),
              _c("rho_min", _F, "smallest latent copula correlation"),
              _c("rho_median", _F, "median latent copula correlation"),
              _c("rho_max", _F, "largest latent copula correlation"),
              _c("ks_mean", _F, "mean over systems of the KS distance between fitted and "
                 "observed margin"),
              _c("ks_max", _F, "largest such KS distance"),
              _c("mean_error_max", _F, "largest |fitted - observed| mean score of a system"),
          ]),
    # -- test_errors, design=urbano2019 (issue 13) ----------------------------------------
    *[_spec(f"type_{k}", ("test_errors",), title, [
        _METRIC,
        _c("n", _I, "topics per trial"),
        *([] if k == 1 else [_c("delta", _F, "true difference: experimental - baseline "
                                            "mean")]),
        _c("test", _S, "`t`, `wilcoxon`, `sign`, `randomisation` or `paired_bootstrap`"),
        _c("tail", _S, "`two-sided` or `one-sided` (H1: experimental better)"),
        _c("alpha", _F, "significance level: the test rejects when p <= alpha"),
        _c("trials", _I, "simulated pairs"),
        _c("rejections", _I, what),
        _c("rate", _F, "rejections / trials: " + rate),
        _c("ci_lo", _F, "Clopper-Pearson lower limit of rate (`experiment.ci_level`)"),
        _c("ci_hi", _F, "Clopper-Pearson upper limit of rate"),
    ], when=_URBANO) for k, title, what, rate in (
        (1, "Type I error rates (design=urbano2019): both runs of a trial through the first "
            "run's margin, per metric, n, test, tail and alpha.",
         "trials with p <= alpha", "Type I error rate (should be alpha)"),
        (2, "Power (design=urbano2019): experimental margin moved to baseline mean + delta, per "
            "metric, n, delta, test, tail and alpha.",
         "trials significant with the true sign (p <= alpha, mean difference > 0)",
         "power = 1 - Type II error rate"),
        (3, "Type III error rates (design=urbano2019): two-sided tests significant with the "
            "wrong sign, per metric, n, delta, test and alpha.",
         "trials with p <= alpha and mean difference < 0", "Type III error rate"))],
    _spec("test_errors_families", ("test_errors",), "Families selected by AIC "
          "(design=urbano2019): counts per metric of the margins (one per run) and copulas "
          "(one per pair of runs) over its pooled collections.", [
              _METRIC,
              _c("kind", _S, "`margin` or `copula`"),
              _c("family", _S, "margin: `normal`, `truncnorm`, `beta`, `kernel`, `bbinom`, "
                 "`dks`, `categorical`; copula: pyvinecopulib family and rotation "
                 "(`Clayton 90`)"),
              _c("count", _I, "runs (margin) or pairs (copula) with this family"),
              _c("share", _F, "count / runs or pairs of the metric"),
          ], when=_URBANO),
    _spec("test_errors_models", ("test_errors",), "One row per (metric, collection) of "
          "design=urbano2019: the data the generator was fitted to.", [
              _METRIC,
              _c("collection", _S, "collection (file stem in `collection.paths`, or the name given "
                 "it there)"),
              _c("runs", _I, "runs kept (after duplicates and `experiment.drop_bottom`)"),
              _c("dropped", _I, "runs left out"),
              _c("pairs", _I, "pairs of runs, one copula each"),
              _c("support", _S, "`continuous` or the discrete support (`grid 1/10`, "
                 "`reciprocal 1/1000`)"),
              _c("mean_error_max", _F, "largest |fitted margin mean - observed mean| of a run"),
          ], when=_URBANO),
    # -- Type M / Type S (issue 28) ---------------------------------------------------------
    _spec("type_m_s", ("test_errors", "multiple_testing"), "Type S (sign) and Type M "
          "(magnitude) errors of significant results under a known true difference (Gelman "
          "and Carlin 2014): per metric, n, delta (test_errors) or collection configuration "
          "(multiple_testing: pooled over the pairs with a true difference), test, "
          "alternative and alpha. Ratios are |d| / |delta|, d the trial's mean difference "
          "(fixed point, 2^-32) and delta its true value; rows without a true sign "
          "(delta = 0) hold null Type S and Type M columns; NaN where no trial is "
          "significant.", [
              _METRIC,
              _c("n", _I, "topics per trial"),
              _c("delta", _F, "true difference experimental - baseline mean (0: Type I, no "
                 "Type S / M)", "test_errors"),
              _c("m", _I, "systems per simulated collection", "multiple_testing"),
              _c("share_null", _F, "share of the systems that tie (true nulls)",
                 "multiple_testing"),
              _c("correction", _S, "multiple-comparison correction of the decisions",
                 "multiple_testing"),
              _c("test", _S, "the significance test"),
              _c("alternative", _S, "`two-sided`, `greater` (experimental better; "
                 "design=urbano2019: its one-sided tail) or `less`"),
              _c("alpha", _F, "significance level: significant when p <= alpha"),
              _c("trials", _I, "trials (test_errors) or pair x trial comparisons with a true "
                 "difference (multiple_testing)"),
              _c("significant", _I, "trials significant at alpha, whatever the sign of d"),
              _c("power", _F, "significant / trials (the Type I error rate when delta = 0)"),
              _c("wrong_sign", _I, "significant trials whose d has the sign opposite to "
                 "delta (d = 0 not counted); null when delta = 0"),
              _c("type_s", _F, "Type S rate: wrong_sign / significant"),
              _c("type_s_lo", _F, "Clopper-Pearson lower limit of type_s "
                 "(`experiment.ci_level`)"),
              _c("type_s_hi", _F, "Clopper-Pearson upper limit of type_s"),
              _c("exaggeration_mean", _F, "exaggeration ratio (Type M): mean of |d| / |delta| "
                 "over the significant trials"),
              _c("exaggeration_mean_lo", _F, "its bootstrap interval over the significant "
                 "trials: mean -+ z sd / sqrt(significant), sd with divisor significant (the "
                 "exact bootstrap standard error)"),
              _c("exaggeration_mean_hi", _F, "upper limit of that interval"),
              _c("exaggeration_median", _F, "lower median of |d| / |delta| over the "
                 "significant trials (order statistic ceil(significant / 2))"),
              _c("exaggeration_median_lo", _F, "exact percentile bootstrap interval of that "
                 "median (its bootstrap distribution in closed form: infinitely many "
                 "resamples of the significant trials)"),
              _c("exaggeration_median_hi", _F, "upper limit of that interval"),
              _c("abs_ratio_mean", _F, "mean of |d| / |delta| over all trials, significant or "
                 "not (unconditional)"),
          ]),
    # -- Bayesian decisions under known truth (issue 28) ------------------------------------
    _spec("bayes_decisions", ("test_errors",), "Decisions of the Bayesian tests of "
          "`experiment.bayes` (irsim.stats.bayes) on the same simulated trials as the "
          "significance tests, one row per metric, n, delta and Bayesian test: how many trials "
          "each rule called better, worse, equivalent or undecided, and the error rates these "
          "counts give under the known truth, with Clopper-Pearson intervals "
          "(`experiment.ci_level`). `better` means the experimental system's mean is credibly "
          "higher than the baseline's.", [
              _METRIC,
              _c("n", _I, "topics per trial"),
              _c("delta", _F, "true difference experimental - baseline mean (0: both systems "
                 "have the same true mean; design=urbano2019: its Type I trials)"),
              _c("test", _S, "`jzs_bf` (JZS Bayes factor), `t_posterior` (t posterior, "
                 "HDI+ROPE) or `bayesian_bootstrap` (posterior probability)"),
              _c("rule", _S, "the decision rule and its parameters, e.g. `BF10 >= 3 "
                 "(r=0.707)`, `95% HDI vs ROPE +-0.01`, `P >= 0.95 (ROPE +-0.01, B=1000)`"),
              _c("trials", _I, "simulated trials of the configuration"),
              _c("better", _I, "trials decided `better` (experimental credibly higher)"),
              _c("worse", _I, "trials decided `worse` (experimental credibly lower)"),
              _c("equivalent", _I, "trials decided `equivalent` (jzs_bf: BF10 <= "
                 "1/threshold; otherwise the posterior inside the ROPE)"),
              _c("undecided", _I, "trials with none of the three decisions"),
              _c("different_rate", _F, "(better + worse) / trials: with delta = 0 the false "
                 "\"different\" rate, the counterpart of a test's Type I error rate"),
              _c("different_lo", _F, "Clopper-Pearson lower limit of different_rate"),
              _c("different_hi", _F, "Clopper-Pearson upper limit of different_rate"),
              _c("power", _F, "trials decided in the true direction (better if delta > 0, "
                 "worse if delta < 0) / trials; null when delta = 0"),
              _c("power_lo", _F, "Clopper-Pearson lower limit of power"),
              _c("power_hi", _F, "Clopper-Pearson upper limit of power"),
              _c("wrong_sign_rate", _F, "trials decided in the wrong direction (worse if "
                 "delta > 0, better if delta < 0) / trials; null when delta = 0"),
              _c("wrong_sign_lo", _F, "Clopper-Pearson lower limit of wrong_sign_rate"),
              _c("wrong_sign_hi", _F, "Clopper-Pearson upper limit of wrong_sign_rate"),
              _c("equivalent_rate", _F, "equivalent / trials: a correct decision when |delta| "
                 "is inside the ROPE (`experiment.bayes_rope`; for jzs_bf when delta = 0), an "
                 "error when it is outside"),
              _c("equivalent_lo", _F, "Clopper-Pearson lower limit of equivalent_rate"),
              _c("equivalent_hi", _F, "Clopper-Pearson upper limit of equivalent_rate"),
          ], when="only with `experiment.bayes` set (not empty)"),
    # -- irsim evaluate ---------------------------------------------------------------------
    _spec("per_topic", ("evaluate",), "Per-topic score of every run, like `trec_eval -q`.", [
              _METRIC,
              _c("system", _S, "run"),
              _c("topic", _S, "topic"),
              _c("value", _F, "score of the run on the topic"),
          ]),
    # -- topic_set_size ---------------------------------------------------------------------
    _spec("topic_set_size", ("topic_set_size",), "Topics a collection needs (Sakai 2016): per "
          "metric, design, alpha, beta, m and minimum difference.", [
              _METRIC,
              _c("design", _S, "`paired_t` (power of the paired t test), `anova` (power of a "
                 "one-way ANOVA over m systems) or `ci` (expected half-width of the CI of a "
                 "difference)"),
              _c("alpha", _F, "significance level (`ci`: the interval's level is 1 - alpha)"),
              _c("beta", _F, "Type II error rate, power 1 - beta (null for `ci`)"),
              _c("min_diff", _F, "minimum difference to detect (`ci`: largest acceptable "
                 "expected half-width)"),
              _c("m", _I, "systems compared (2 for `paired_t` and `ci`)"),
              _c("n", _I, "topics needed: the smallest n reaching the target (null: the "
                 "variance is 0, or more than 10^8 topics)"),
              _c("power", _F, "power at n (null for `ci`)"),
              _c("half_width", _F, "expected CI half-width at n (`ci` only)"),
              _c("variance", _F, "variance the design uses: of a per-topic difference "
                 "(`paired_t`, `ci`: `experiment.diff_variance`) or V_E (`anova`)"),
              _c("v_e", _F, "residual variance V_E (MS_error of the two-way ANOVA, systems x "
                 "topics)"),
              _c("systems", _I, "systems of the collection"),
              _c("topics", _I, "topics of the collection"),
          ]),
    # -- reliability ------------------------------------------------------------------------
    _spec("reliability", ("reliability",), "G-study of a collection (generalizability theory): "
          "variance components and reliability per metric.", [
              _METRIC,
              _c("systems", _I, "systems in the G-study (after `experiment.drop_bottom`)"),
              _c("dropped", _I, "systems left out by `experiment.drop_bottom`"),
              _c("topics", _I, "topics in the G-study"),
              _c("var_system", _F, "system variance component (MS_s - MS_e) / topics (negative "
                 "estimates set to 0)"),
              _c("var_topic", _F, "topic variance component (MS_t - MS_e) / systems (negative "
                 "estimates set to 0)"),
              _c("var_residual", _F, "system x topic (residual) variance component MS_e"),
              _c("pct_system", _F, "var_system as a percentage of the total variance"),
              _c("pct_topic", _F, "var_topic as a percentage of the total variance"),
              _c("pct_residual", _F, "var_residual as a percentage of the total variance"),
              _c("negative", _S, "components whose raw estimate was negative (`system`, "
                 "`topic`, both comma-separated, or empty)"),
              _c("e_rho2", _F, "generalizability coefficient E(rho^2) with the G-study's "
                 "topics"),
              _c("e_rho2_lo", _F, "percentile bootstrap (over topics) lower limit of e_rho2 "
                 "(`experiment.ci_level`)"),
              _c("e_rho2_hi", _F, "percentile bootstrap upper limit of e_rho2"),
              _c("e_rho2_feldt_lo", _F, "Feldt (exact F, normal model) lower limit of e_rho2"),
              _c("e_rho2_feldt_hi", _F, "Feldt upper limit of e_rho2"),
              _c("phi", _F, "dependability index Phi with the G-study's topics"),
              _c("phi_lo", _F, "percentile bootstrap lower limit of phi"),
              _c("phi_hi", _F, "percentile bootstrap upper limit of phi"),
              _c("B", _I, "bootstrap resamples of the topics"),
          ]),
    _spec("d_study", ("reliability",), "D-study curve: E(rho^2) and Phi per metric against the "
          "number of topics.", [
              _METRIC,
              _c("topics", _I, "topics of the hypothetical collection"),
              _c("e_rho2", _F, "E(rho^2) with that many topics"),
              _c("phi", _F, "Phi with that many topics"),
          ]),
    _spec("reliability_topics", ("reliability",), "Topics needed for a target reliability: "
          "per metric, indicator and target.", [
              _METRIC,
              _c("indicator", _S, "`e_rho2` or `phi`"),
              _c("target", _F, "target value of the indicator (`experiment.targets`)"),
              _c("topics", _I, "smallest number of topics reaching it (null: var_system = 0)"),
              _c("topics_lo", _I, "lower `experiment.ci_level` bootstrap quantile of the "
                 "topics needed (resamples over topics; null: not reachable)"),
              _c("topics_hi", _I, "the same, upper quantile"),
          ]),
    _spec("topic_set_size_check", ("topic_set_size",), "Planned against realised power of the "
          "paired t test at the planned n, on collections simulated from a generator fitted "
          "to the collection: per metric, alpha, beta and minimum difference.", [
              _METRIC,
              _c("alpha", _F, "significance level"),
              _c("beta", _F, "planned Type II error rate"),
              _c("min_diff", _F, "true difference of the simulated pairs"),
              _c("n", _I, "planned topics (the `paired_t` row of `topic_set_size`)"),
              _c("planned_power", _F, "power at n by the noncentral t with the planned "
                 "variance"),
              _c("planned_var_diff", _F, "variance of a per-topic difference the plan used"),
              _c("trials", _I, "simulated system pairs (0: n above 10,000, not simulated)"),
              _c("rejections", _I, "trials whose two-sided paired t test has p <= alpha"),
              _c("realised_power", _F, "rejections / trials"),
              _c("ci_lo", _F, "Clopper-Pearson 95% lower limit of realised_power"),
              _c("ci_hi", _F, "Clopper-Pearson 95% upper limit of realised_power"),
              _c("realised_var_diff", _F, "mean over trials of the sample variance of the "
                 "simulated per-topic differences"),
              _c("systems", _I, "systems the generator models (duplicates dropped)"),
              _c("pairs", _I, "ordered (baseline, pair) combinations a trial draws from"),
          ], "only with `experiment.check_trials` > 0"),
    _spec("reliability_check", ("reliability",), "Simulation check of the reliability "
          "indicators: per metric and topic set size, the true E(rho^2) and Phi of a normal "
          "random-effects model fitted to the G-study against their estimates and the realised "
          "agreement of simulated and true system orderings.", [
              _METRIC,
              _c("topics", _I, "topics of each simulated collection (`experiment.check_topics`)"),
              _c("trials", _I, "simulated collections"),
              _c("true_e_rho2", _F, "E(rho^2) of the model with that many topics"),
              _c("e_rho2_mean", _F, "mean over trials of the estimated E(rho^2)"),
              _c("e_rho2_bias", _F, "e_rho2_mean - true_e_rho2"),
              _c("e_rho2_sd", _F, "standard deviation over trials of the estimate (its Monte "
                 "Carlo standard error is e_rho2_sd / sqrt(trials))"),
              _c("true_phi", _F, "Phi of the model with that many topics"),
              _c("phi_mean", _F, "mean over trials of the estimated Phi"),
              _c("phi_bias", _F, "phi_mean - true_phi"),
              _c("phi_sd", _F, "standard deviation over trials of the estimate"),
              _c("corr2_mean", _F, "mean squared Pearson correlation between simulated and "
                 "true system means (the realised counterpart of E(rho^2))"),
              _c("corr2_se", _F, "Monte Carlo standard error of corr2_mean"),
              _c("tau_mean", _F, "mean Kendall tau-b between the simulated and the true "
                 "system ordering"),
              _c("tau_se", _F, "Monte Carlo standard error of tau_mean"),
          ], "only with `experiment.check_trials` > 0"),
    # -- multiple_testing -------------------------------------------------------------------
    _spec("multiple_testing", ("multiple_testing",), "Known-truth family-wise error rate, false "
          "discovery rate and per-pair power of multiple-comparison corrections over all "
          "system pairs of simulated collections: per metric, correction, test, m, n, "
          "share_null and alpha.", [
              _c("metric", _S, "metric whose collection the generator was fit to"),
              _c("correction", _S, "`none`, `bonferroni`, `holm`, `bh` (Benjamini-Hochberg) or "
                 "`by` (Benjamini-Yekutieli), over the m(m-1)/2 pairs of a collection"),
              _c("test", _S, "`t`, `wilcoxon`, `sign`, `randomisation` or `paired_bootstrap` "
                 "(two-sided)"),
              _c("m", _I, "systems per simulated collection"),
              _c("n", _I, "topics per simulated collection"),
              _c("share_null", _F, "share of the systems with the same true mean (1: no true "
                 "difference)"),
              _c("null_systems", _I, "systems with the null mean: floor(share_null m + 1/2); "
                 "the true null pairs are the pairs among them"),
              _c("alpha", _F, "level of the procedure (FWER level for Bonferroni and Holm, FDR "
                 "level for BH and BY; per comparison for `none`)"),
              _c("trials", _I, "simulated collections"),
              _c("familywise_errors", _I, "collections with at least one true null rejected"),
              _c("fwer", _F, "familywise_errors / trials: family-wise error rate"),
              _c("fwer_lo", _F, "Wilson lower limit of fwer (`experiment.ci_level`)"),
              _c("fwer_hi", _F, "Wilson upper limit of fwer"),
              _c("fdr", _F, "false discovery rate: mean over collections of V / R (rejected "
                 "true nulls / rejections; 0 when nothing is rejected)"),
              _c("fdr_lo", _F, "Wilson lower limit of fdr (summed V / R as the count: "
                 "conservative)"),
              _c("fdr_hi", _F, "Wilson upper limit of fdr"),
              _c("power", _F, "per-pair power: mean over collections of the share of truly "
                 "different pairs rejected (NaN when there are none)"),
              _c("power_lo", _F, "Wilson lower limit of power (summed shares as the count: "
                 "conservative)"),
              _c("power_hi", _F, "Wilson upper limit of power"),
              _c("mean_rejections", _F, "mean number of pairs rejected per collection"),
          ]),
    _spec("multiple_testing_fit", ("multiple_testing",), "One row per metric: how the "
          "collection generator of `multiple_testing` was fit.", [
              _METRIC,
              _c("margin", _S, "margin kind: `kernel` or `empirical`"),
              _c("support", _S, "discrete support detected (e.g. `grid 1/10`); empty if none"),
              _c("dependence", _S, "copula across all systems: `gaussian` or `vine`"),
              _c("systems", _I, "systems a collection draws from (the pool)"),
              _c("dropped", _I, "systems left out (duplicates, `experiment.drop_bottom`, or "
                 "a margin that cannot reach the true means)"),
              _c("null_mean", _F, "common true mean of the null systems"),
              _c("spread", _F, "the other systems' true means are null_mean + spread k / m1, "
                 "k = 1..m1"),
              _c("shrinkage", _F, "gaussian: weight lambda of the equicorrelation target in the "
                 "shrunk normal-score correlation (0: none needed; 0 for the vine)"),
              _c("corr_mean", _F, "mean normal-score correlation of the pool's system pairs"),
              _c("min_eigenvalue", _F, "smallest eigenvalue of the copula correlation (vine: of "
                 "the unshrunk normal-score correlation)"),
              _c("vine_truncation", _I, "vine: trees fitted (-1 for gaussian)"),
              _c("vine_loglik", _F, "vine: log-likelihood of the fit (NaN for gaussian)"),
          ]),
]

#: Every output table by name, in the order the documentation lists them.
TABLES: dict[str, TableSpec] = {s.name: s for s in _SPECS}
del _SPECS


def add_tables(specs: Sequence[TableSpec], *, study: str) -> None:
    """Register the tables a study declares in its own package (its registration's
    ``tables=``, :func:`irsim.registry.study`), so that they are checked before
    they are written and documented like the tables above.

    Parameters
    ----------
    specs : sequence of TableSpec
        Each names `study` among its writers.
    study : str
        The registering study.

    Raises
    ------
    ValueError
        A spec that does not name `study`, or a name another table already holds with other
        contents (programming errors).
    """
    for s in specs:
        if study not in s.studies:
            raise ValueError(f"table {s.name!r} registered by study {study!r} does not name "
                             f"it among its studies {s.studies}")
        old = TABLES.get(s.name)
        if old is not None and old != s:
            raise ValueError(f"table {s.name!r} is registered already with other contents")
        TABLES[s.name] = s


# ------------------------------------------------------------------------------- access
def spec(name: str) -> TableSpec:
    """The registered table `name`.

    Raises
    ------
    KeyError
        For a name that is not registered.

    Examples
    --------
    >>> spec("coverage").studies
    ('coverage',)
    """
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"table {name!r} is not registered in irsim.tables; registered: "
                       f"{', '.join(TABLES)}") from None


def schema(name: str) -> pa.Schema:
    """The Arrow schema of table `name`: column names, order and types.

    Examples
    --------
    >>> print(schema("per_topic"))
    metric: string
    system: string
    topic: string
    value: double
    """
    return spec(name).schema


def _is_dataframe(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "pandas" and hasattr(obj, "columns")


def _check_names(name: str, got: Sequence[str], want: Sequence[str], what: str) -> None:
    missing = [c for c in want if c not in got]
    extra = [c for c in got if c not in want]
    if missing:
        raise ValueError(f"table {name!r}: {what} lacks column(s) {missing}")
    if extra:
        raise ValueError(f"table {name!r}: {what} has undeclared column(s) {extra}")


def table(name: str, data: Mapping[str, Any] | Sequence[Mapping[str, Any]] | Any
          ) -> pa.Table:
    """Build table `name` with its declared schema.

    Parameters
    ----------
    name : str
        A registered table.
    data : mapping, sequence of mappings or pandas.DataFrame
        Columns by name (lists, numpy arrays or Arrow arrays of the declared type), or one
        dict per row, or a DataFrame. Every declared column must be given, optional ones too
        (null values for a study that does not fill them); undeclared ones raise.

    Returns
    -------
    pyarrow.Table
        With exactly ``schema(name)`` (no metadata).

    Raises
    ------
    ValueError
        A missing or undeclared column.
    TypeError
        An Arrow array of another type, or values that do not convert to the declared type.

    Examples
    --------
    >>> t = table("per_topic", {"metric": ["AP"], "system": ["run1"], "topic": ["401"],
    ...                         "value": [0.25]})
    >>> t.to_pylist()
    [{'metric': 'AP', 'system': 'run1', 'topic': '401', 'value': 0.25}]
    >>> table("per_topic", [{"metric": "AP", "system": "run1", "topic": "401"}])
    Traceback (most recent call last):
    ...
    ValueError: table 'per_topic': row 0 lacks column(s) ['value']
    """
    s = spec(name)
    target = s.schema
    if _is_dataframe(data):
        _check_names(name, [str(c) for c in data.columns], s.names, "the DataFrame")
        out = pa.Table.from_pandas(data[list(s.names)], schema=target, preserve_index=False)
        return out.replace_schema_metadata(None)
    if isinstance(data, Mapping):
        _check_names(name, list(data), s.names, "the data")
        arrays = []
        for c in s.columns:
            values = data[c.name]
            if isinstance(values, (pa.Array, pa.ChunkedArray)):
                if values.type != c.type:
                    raise TypeError(f"table {name!r}, column {c.name!r}: Arrow type "
                                    f"{values.type}, declared {c.type}")
                arrays.append(values)
                continue
            try:
                arrays.append(pa.array(values, c.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as err:
                raise TypeError(f"table {name!r}, column {c.name!r}: values do not convert to "
                                f"{c.type}: {err}") from err
        return pa.Table.from_arrays(arrays, schema=target)
    rows = list(data)
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"table {name!r}: row {i} is a {type(row).__name__}, not a dict")
        if row.keys() != set(s.names):
            _check_names(name, list(row), s.names, f"row {i}")
    try:
        return pa.Table.from_pylist(rows, schema=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise TypeError(f"table {name!r}: rows do not convert to the declared types: "
                        f"{err}") from err


def check(name: str, table: pa.Table, *, allow_missing_optional: bool = False) -> None:
    """Raise unless `table` has the declared columns of table `name`, in order, with their
    Arrow types (schema metadata and nullability are not compared).

    Parameters
    ----------
    name : str
        A registered table.
    table : pyarrow.Table
    allow_missing_optional : bool
        Accept a table without some optional columns (:attr:`Column.optional`), the others
        in declared order: a table written before those columns were declared (e.g. a
        ``swap_summary`` of irsim 0.1). Writing is always strict.

    A table of a study run on each of several collections has the declared columns after a
    first column ``collection`` (:data:`PER_COLLECTION`).

    Raises
    ------
    KeyError
        `name` is not registered.
    ValueError
        A missing, undeclared, duplicate or out-of-order column.
    TypeError
        A column of another Arrow type.

    Examples
    --------
    >>> t = pa.table({"metric": ["AP"], "system": ["r"], "topic": ["1"], "value": [1]})
    >>> check("per_topic", t)
    Traceback (most recent call last):
    ...
    TypeError: table 'per_topic', column 'value': type int64, declared double
    >>> check("per_topic", t.drop_columns(["value"]))
    Traceback (most recent call last):
    ...
    ValueError: table 'per_topic': the table lacks column(s) ['value']
    """
    s = spec(name)
    got = table.schema.names
    if got[:1] == [PER_COLLECTION.name] and PER_COLLECTION.name not in s.names:
        actual = table.schema.field(0).type  # a study run on each of several collections
        if actual != PER_COLLECTION.type:
            raise TypeError(f"table {name!r}, column {PER_COLLECTION.name!r}: type {actual}, "
                            f"declared {PER_COLLECTION.type}")
        got = got[1:]
    if len(set(got)) != len(got):
        dup = sorted({c for c in got if got.count(c) > 1})
        raise ValueError(f"table {name!r}: duplicate column(s) {dup}")
    want = [c.name for c in s.columns
            if not (allow_missing_optional and c.optional and c.name not in got)]
    _check_names(name, got, want, "the table")
    if got != want:
        raise ValueError(f"table {name!r}: columns in the order {got}, declared {want}")
    for c in s.columns:
        if c.name in got:
            actual = table.schema.field(c.name).type
            if actual != c.type:
                raise TypeError(f"table {name!r}, column {c.name!r}: type {actual}, "
                                f"declared {c.type}")


# ------------------------------------------------------------------------ documentation
_TYPE_NAMES = {pa.float64(): "float64"}


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table_markdown(s: TableSpec, level: int = 3) -> str:
    """One table as the documentation shows it: a heading (`level` ``#``), who writes it and
    what a row holds, then its columns with Arrow type and meaning.

    Examples
    --------
    >>> print(table_markdown(spec("per_topic")).splitlines()[0])
    ### `per_topic`
    """
    studies = ", ".join("`irsim evaluate`" if x == "evaluate" else f"`{x}`" for x in s.studies)
    when = f"; {s.when}" if s.when else ""
    lines = [f"{'#' * level} `{s.name}`", "", _wrap(f"{s.description} Written by {studies}{when}."),
             "", "| column | type | meaning |", "|---|---|---|"]
    for c in s.columns:
        meaning = c.meaning
        if c.filled_by:
            others = [x for x in s.studies if x not in c.filled_by]
            meaning += f"; {', '.join(c.filled_by)} only (null from {', '.join(others)})"
        lines.append(f"| `{c.name}` | {_TYPE_NAMES.get(c.type, str(c.type))} | {_cell(meaning)} |")
    return "\n".join(lines) + "\n"


def markdown(study: str | None = None) -> str:
    """Every table irsim writes, as the documentation site's page "Output tables" shows it
    (an introduction, then :func:`table_markdown` of each table); with `study`, only the
    tables that study writes (its own page), without the introduction.

    Examples
    --------
    >>> md = markdown()
    >>> "### `swap_summary`" in md and "| `asl` | float64 |" in md
    True
    >>> [ln for ln in markdown("coverage").splitlines() if ln.startswith("#")]
    ['### `coverage`']
    """
    if study is None:
        lines = [
            _wrap("Every run directory holds `results/<table>.parquet` (long format, one row "
                  "per item), `manifest.json` (config, seed, versions, timings, engine, shards, "
                  "data digest), `cli.log` and `report.md` with its PNG plots. Below: every "
                  "table irsim writes, with its columns in order. The schemas live in "
                  "`irsim/tables.py` (this text is generated from it by `python -m irsim.docs "
                  "docs`); every table is checked against its schema before it is written. "
                  "Other tools read these tables: change a name, column or type only with a "
                  "migration note. `irsim collect` keeps these columns and appends the sweep "
                  "parameters (strings) and `job`. A study that does not pool collections, "
                  "given several (`collection.paths={METRIC: [file, ...]}`), runs on each: its "
                  "tables then start with a column `collection` (string), the rest as below."),
            "",
        ]
        specs = list(TABLES.values())
    else:
        lines, specs = [], [s for s in TABLES.values() if study in s.studies]
    for s in specs:
        lines += [table_markdown(s)]
    return "\n".join(lines)


def _main(argv: list[str]) -> None:
    """``python -m irsim.tables [study]``: print :func:`markdown` (of one study's tables)."""
    sys.stdout.write(markdown(*argv[:1]))


if __name__ == "__main__":
    _main(sys.argv[1:])
