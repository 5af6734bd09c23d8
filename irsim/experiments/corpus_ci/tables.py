"""The tables of experiment=corpus_ci: their specs (``TABLE_SPECS``, named by the study's
registration; schemas: :mod:`irsim.tables`)."""

from __future__ import annotations

from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import STR as _S
from irsim.tables import column as _c
from irsim.tables import table_spec as _spec

__all__ = ["TABLE_SPECS"]

# ------------------------------------------------------------------- output tables
_SPLIT_ABOVE = "lies above the interval (null when there is none)"
_MEASURE = _c("measure", _S, "`MAP` or `L-MAP` (mean logit AP)")
_MAP_METHOD = _c("method", _S, "`bootstrap` (sd of MAP* / L-MAP* over the corpus resamples) or "
                 "`parametric` (delta method from the per-topic logit sds)")
_DIRECTION = _c("direction", _S, "`A->B`: interval from half A, value of half B; or `B->A`")
_CI_METHOD = _c("method", _S, "`normal`, `logit` or `bca`; `<method>_small_r` with the "
                "small-R correction")

#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
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
)
