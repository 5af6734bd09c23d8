"""The tables experiment=test_errors writes (both designs; schemas registered in
:mod:`irsim.tables` by the study's registration)."""

from __future__ import annotations

from irsim.kit.tables import TYPE_M_S
from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import METRIC, claim, rate_columns
from irsim.tables import STR as _S
from irsim.tables import column as _c
from irsim.tables import table_spec as _spec

__all__ = ["TABLE_SPECS"]


def _cp(rate: str, meaning: str, stem: str | None = None) -> tuple:
    """A rate and its Clopper-Pearson limits at `experiment.ci_level`."""
    return rate_columns(rate, meaning, stem=stem, kind="Clopper-Pearson")

_URBANO = "only with `experiment/design=urbano2019`"  # issue 13

#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
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
              *_cp("rate", "rejections / trials: Type I error (delta = 0) or power", stem="ci"),
              _c("mean_diff", _F, "mean over trials of the simulated mean difference "
                 "(should be delta)"),
              _c("mean_diff_se", _F, "standard error of mean_diff"),
          ]),
    _spec("test_errors_fit", ("test_errors",), "One row per metric: how the generator was fit "
          "and how closely it reproduces the collection.", [
              METRIC,
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
    *[_spec(f"type_{k}", ("test_errors",), title, [
        METRIC,
        _c("n", _I, "topics per trial"),
        *([] if k == 1 else [_c("delta", _F, "true difference: experimental - baseline "
                                            "mean")]),
        _c("test", _S, "`t`, `wilcoxon`, `sign`, `randomisation` or `paired_bootstrap`"),
        _c("tail", _S, "`two-sided` or `one-sided` (H1: experimental better)"),
        _c("alpha", _F, "significance level: the test rejects when p <= alpha"),
        _c("trials", _I, "simulated pairs"),
        _c("rejections", _I, what),
        *_cp("rate", "rejections / trials: " + rate, stem="ci"),
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
              METRIC,
              _c("kind", _S, "`margin` or `copula`"),
              _c("family", _S, "margin: `truncnorm`, `beta`, `kernel`, `bbinom`, `dks`, "
                 "`categorical` (`normal`, censored, only when asked for); copula: "
                 "pyvinecopulib family and rotation (`Clayton 90`)"),
              _c("count", _I, "runs (margin) or pairs (copula) with this family"),
              _c("share", _F, "count / runs or pairs of the metric"),
          ], when=_URBANO),
    _spec("test_errors_models", ("test_errors",), "One row per (metric, collection) of "
          "design=urbano2019: the data the generator was fitted to.", [
              METRIC,
              _c("collection", _S, "collection (file stem in `collection.paths`, or the name given "
                 "it there)"),
              _c("runs", _I, "runs kept (after duplicates and `experiment.drop_bottom`)"),
              _c("dropped", _I, "runs left out"),
              _c("pairs", _I, "pairs of runs, one copula each"),
              _c("support", _S, "`continuous` or the discrete support (`grid 1/10`, "
                 "`reciprocal 1/1000`)"),
              _c("mean_error_max", _F, "largest |fitted margin mean - observed mean| of a run"),
          ], when=_URBANO),
    claim(TYPE_M_S, fills=("delta",), notes={
        "": "one row per delta of the simulated pairs.",
        "alternative": "design=urbano2019: `greater` is its one-sided tail"}),
    _spec("bayes_decisions", ("test_errors",), "Decisions of the Bayesian tests of "
          "`experiment.bayes` (irsim.stats.bayes) on the same simulated trials as the "
          "significance tests, one row per metric, n, delta and Bayesian test: how many trials "
          "each rule called better, worse, equivalent or undecided, and the error rates these "
          "counts give under the known truth, with Clopper-Pearson intervals "
          "(`experiment.ci_level`). `better` means the experimental system's mean is credibly "
          "higher than the baseline's.", [
              METRIC,
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
              *_cp("different_rate", "(better + worse) / trials: with delta = 0 the false "
                   "\"different\" rate, the counterpart of a test's Type I error rate"),
              *_cp("power", "trials decided in the true direction (better if delta > 0, "
                   "worse if delta < 0) / trials; null when delta = 0"),
              *_cp("wrong_sign_rate", "trials decided in the wrong direction (worse if "
                   "delta > 0, better if delta < 0) / trials; null when delta = 0"),
              *_cp("equivalent_rate", "equivalent / trials: a correct decision when |delta| "
                   "is inside the ROPE (`experiment.bayes_rope`; for jzs_bf when delta = 0), "
                   "an error when it is outside"),
          ], when="only with `experiment.bayes` set (not empty)"),
)
