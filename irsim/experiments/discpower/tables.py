"""The tables of experiment=discpower: their specs (``TABLE_SPECS``, named by the study's
registration; schemas: :mod:`irsim.tables`)."""

from __future__ import annotations

from irsim.kit.tables import SWAP_RATES, SWAP_SUMMARY
from irsim.tables import BAYES_RULE, BAYES_TEST, claim
from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import STR as _S
from irsim.tables import column as _c
from irsim.tables import table_spec as _spec

__all__ = ["TABLE_SPECS"]


_DP = ("discpower",)
_SWAP = "only with `experiment.swap=true`"
_DP_METRIC = _c("metric", _S, "metric; with `experiment.gmean`, also `AG <metric>` (per-topic "
                "log(x + 1e-5), tests of means) and `G <metric>` (geometric mean, unpaired "
                "bootstrap)")
_DP_TEST = _c("test", _S, "`paired_bootstrap`, `unpaired_bootstrap`, `t`, "
              "`randomised_tukey_hsd`, `wilcoxon`, `sign`, `randomisation` or `tukey_hsd`")
_SAMPLED_METRIC = _c("metric", _S, "metric (`<metric>` or `G <metric>`)")

#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
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
    claim(SWAP_RATES, when=_SWAP, notes={
        "": "the bootstrap swap method on Q*b and Q'*b.",
        "metric": "`<metric>` or `G <metric>`", "sampling": "`bootstrap`",
        "bin_kind": "`absolute` only", "comparisons": "a trial is a bootstrap sample"}),
    claim(SWAP_SUMMARY, fills=("comparisons_above",), when=_SWAP, notes={
        "": "the bootstrap swap method, absolute bins only.",
        "metric": "`<metric>` or `G <metric>`", "sampling": "`bootstrap`",
        "sensitivity": "0 when required_diff is NaN"}),
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
    _spec("bayes_pairs", _DP, "Decision of every Bayesian test of `experiment.bayes` "
          "(irsim.stats.bayes) on every system pair, per metric (`<metric>` and `AG <metric>`; "
          "issue 28).", [
              _c("metric", _S, "metric; with `experiment.gmean`, also `AG <metric>` (the tests "
                 "on log(x + 1e-5))"),
              BAYES_TEST,
              BAYES_RULE,
              _c("system_a", _S, "first system of the pair (pairs a < b in collection order)"),
              _c("system_b", _S, "second system of the pair"),
              _c("diff", _F, "observed difference of the mean scores system_a - system_b "
                 "(AG: mean difference of the logs)"),
              _c("bf10", _F, "jzs_bf: the Bayes factor of a non-zero mean difference against "
                 "none (+inf for constant non-zero differences); null for the other tests"),
              _c("prob_positive", _F, "t_posterior, bayesian_bootstrap: posterior probability "
                 "that system_a's true mean exceeds system_b's; null for jzs_bf"),
              _c("prob_rope", _F, "t_posterior, bayesian_bootstrap: posterior probability that "
                 "the true difference lies in [-rope, rope] (`experiment.bayes_rope`); null "
                 "for jzs_bf"),
              _c("decision", _S, "`better` (system_a credibly better), `worse`, `equivalent` "
                 "or `undecided`"),
          ], when="only with `experiment.bayes` set (not empty)"),
    _spec("bayes_discpower", _DP, "Bayesian discriminative power (issue 28): per metric and "
          "Bayesian test, how many system pairs its rule decides better, worse, equivalent or "
          "undecided, beside the paired t test at `1 - experiment.bayes_prob`.", [
              _c("metric", _S, "metric (`<metric>` or `AG <metric>`)"),
              BAYES_TEST,
              BAYES_RULE,
              _c("pairs", _I, "system pairs decided"),
              _c("better", _I, "pairs decided `better` (system_a credibly better)"),
              _c("worse", _I, "pairs decided `worse`"),
              _c("equivalent", _I, "pairs decided `equivalent` (jzs_bf: BF10 <= "
                 "1/threshold; otherwise the posterior inside the ROPE)"),
              _c("undecided", _I, "pairs with none of the three decisions"),
              _c("different", _I, "better + worse: pairs decided different"),
              _c("sensitivity", _F, "different / pairs: the Bayesian rule's discriminative "
                 "power"),
              _c("equivalent_share", _F, "equivalent / pairs"),
              _c("t_alpha", _F, "level of the paired t test beside it: 1 - "
                 "`experiment.bayes_prob`"),
              _c("t_significant", _I, "pairs with the two-sided paired t test's p < t_alpha"),
              _c("t_sensitivity", _F, "t_significant / pairs (the t test's discriminative "
                 "power at t_alpha)"),
              _c("both", _I, "pairs decided different by the rule and significant by the t "
                 "test"),
          ], when="only with `experiment.bayes` set (not empty)"),
)
