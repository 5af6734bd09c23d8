"""Output tables that several studies write (their schemas; :mod:`irsim.tables` checks them).

- ``swap_rates`` and ``swap_summary``: swap rates per difference bin between two topic sets,
  and the difference a swap rate needs;
- ``type_m_s``: Type S and Type M errors of significant results under a known difference
  (:class:`irsim.stats.typems.TypeMRows`).

Each is declared here with no writers: a study that writes one claims it in its
registration's ``tables=`` (:func:`irsim.tables.claim`: the partial columns it fills and what
the table and its columns mean for it), so this module names no study.
"""

from __future__ import annotations

from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import METRIC, rate_columns
from irsim.tables import STR as _S
from irsim.tables import bin_columns as _bins
from irsim.tables import column as _c
from irsim.tables import table_spec as _spec

__all__ = ["SWAP_RATES", "SWAP_SUMMARY", "SWAP_TABLES", "TYPE_M_S"]

#: ``swap_rates``: swaps per difference bin between two topic sets.
SWAP_RATES = _spec("swap_rates", (), "Swap rates per difference bin: per metric, sampling, "
                   "topic-set size and bin, comparisons and swaps between two topic sets.", [
                       _c("metric", _S, "metric"),
                       _c("sampling", _S, "how the two topic sets are drawn"),
                       _c("subset_size", _I, "topics per set: c; n (all topics) for "
                          "`bootstrap`"),
                       _c("bin_kind", _S, "`absolute`: bins of |d| 0.01 wide, the last >= "
                          "0.20; `relative`: bins 5% wide of |d| / the smaller mean"),
                       *_bins()[1:],
                       _c("comparisons", _I, "pair x trial comparisons whose difference d on "
                          "the first set falls in the bin"),
                       _c("swaps", _I, "comparisons whose order flips on the second set: "
                          "d d' < 0"),
                       _c("swap_rate", _F, "swaps / comparisons (NaN for an empty bin)"),
                   ])

#: ``swap_summary``: the difference a swap rate needs, and the sensitivity it leaves.
SWAP_SUMMARY = _spec("swap_summary", (), "Difference required for a swap rate of at most 1 - "
                     "confidence, and the sensitivity it leaves: per metric, sampling, size "
                     "and confidence. A writer's rows hold null in the columns it does not "
                     "fill, or its table lacks them.", [
                         _c("metric", _S, "metric"),
                         _c("sampling", _S, "how the two topic sets are drawn"),
                         _c("subset_size", _I, "topics per set: c; n (all topics) for "
                            "`bootstrap`"),
                         _c("confidence", _F, "confidence level 1 - r: bins must have swap "
                            "rate <= r"),
                         _c("required_diff", _F, "smallest absolute-bin edge from which every "
                            "non-empty bin has swap rate <= 1 - confidence (NaN if none)"),
                         _c("max_performance", _F, "largest mean score of any system on any "
                            "topic set (sample) drawn"),
                         _c("relative_diff", _F, "required_diff / max_performance"),
                         _c("sensitivity", _F, "share of comparisons with |d| >= "
                            "required_diff"),
                         _c("mean_unique_topics", _F, "distinct topics per set, averaged over "
                            "both sets of every trial (sample)"),
                         _c("mean_overlap", _F, "topics the two sets of a trial (sample) share, "
                            "averaged over trials"),
                         _c("comparisons", _I, "comparisons over all absolute bins: pairs x "
                            "trials (B)"),
                         _c("comparisons_above", _I, "comparisons with |d| >= required_diff (0 "
                            "when required_diff is NaN)", partial=True),
                         _c("required_reldiff", _F, "smallest relative-bin edge (share of the "
                            "smaller mean) from which every non-empty bin has swap rate <= 1 - "
                            "confidence (NaN if none)", partial=True),
                         _c("sensitivity_reldiff", _F, "share of comparisons with relative "
                            "difference >= required_reldiff (NaN if required_reldiff is NaN)",
                            partial=True),
                     ])

#: Both swap tables.
SWAP_TABLES = (SWAP_RATES, SWAP_SUMMARY)

#: ``type_m_s``: Type S and Type M errors under a known true difference.
TYPE_M_S = _spec("type_m_s", (), "Type S (sign) and Type M (magnitude) errors of significant "
                 "results under a known true difference (Gelman and Carlin 2014): per metric, "
                 "n, the simulated configuration, test, alternative and alpha. Ratios are "
                 "|d| / |delta|, d the trial's mean difference (fixed point, 2^-32) and delta "
                 "its true value; rows without a true sign (delta = 0) hold null Type S and "
                 "Type M columns; NaN where no trial is significant.", [
                     METRIC,
                     _c("n", _I, "topics per trial"),
                     _c("delta", _F, "true difference experimental - baseline mean (0: Type I, "
                        "no Type S / M)", partial=True),
                     _c("m", _I, "systems per simulated collection", partial=True),
                     _c("share_null", _F, "share of the systems that tie (true nulls)",
                        partial=True),
                     _c("correction", _S, "multiple-comparison correction of the decisions",
                        partial=True),
                     _c("test", _S, "the significance test"),
                     _c("alternative", _S, "`two-sided`, `greater` (experimental better) or "
                        "`less`"),
                     _c("alpha", _F, "significance level: significant when p <= alpha"),
                     _c("trials", _I, "trials"),
                     _c("significant", _I, "trials significant at alpha, whatever the sign of d"),
                     _c("power", _F, "significant / trials (the Type I error rate when delta = 0)"),
                     _c("wrong_sign", _I, "significant trials whose d has the sign opposite to "
                        "delta (d = 0 not counted); null when delta = 0"),
                     *rate_columns("type_s", "Type S rate: wrong_sign / significant",
                                   kind="Clopper-Pearson"),
                     _c("exaggeration_mean", _F, "exaggeration ratio (Type M): mean of "
                        "|d| / |delta| over the significant trials"),
                     _c("exaggeration_mean_lo", _F, "its bootstrap interval over the "
                        "significant trials: mean -+ z sd / sqrt(significant), sd with divisor "
                        "significant (the exact bootstrap standard error)"),
                     _c("exaggeration_mean_hi", _F, "upper limit of that interval"),
                     _c("exaggeration_median", _F, "lower median of |d| / |delta| over the "
                        "significant trials (order statistic ceil(significant / 2))"),
                     _c("exaggeration_median_lo", _F, "exact percentile bootstrap interval of that "
                        "median (its bootstrap distribution in closed form: infinitely many "
                        "resamples of the significant trials)"),
                     _c("exaggeration_median_hi", _F, "upper limit of that interval"),
                     _c("abs_ratio_mean", _F, "mean of |d| / |delta| over all trials, "
                        "significant or not (unconditional)"),
                 ])
