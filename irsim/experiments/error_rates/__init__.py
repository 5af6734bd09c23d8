"""Error rates of run comparisons across topic sets (Sanderson & Zobel, SIGIR 2005;
METHODS.md section 4).

Each trial draws two topic sets ``Q_i``, ``Q'_i`` of size ``c`` (``disjoint`` as Voorhees &
Buckley and the first part of the paper, ``replacement`` as its Section 7, or
``independent``); a comparison of a pair of runs is an *error* if the order of the pair on
``Q'_i`` differs from its order on ``Q_i`` (the swap rule of
:func:`irsim.kit.bins.is_swap`: opposite signs, or exactly one difference 0).
Comparisons are binned by the difference on ``Q_i`` (absolute bins of 0.01 and bins of 5%
relative to the smaller mean) and, optionally, kept only when a significance test on
``Q_i`` (t, sign, Wilcoxon, paired bootstrap, randomisation) gives a p-value inside a window
``lo < p <= hi`` (a window starting at 0 includes p = 0). From these counters:

- ``error_rates``: error rate per metric, scheme, size, bin, test and window (``test="none"``
  with the window [0, 1]: every comparison);
- ``error_extrapolation``: per bin, the least-squares fit ``log(rate) = a + b * size`` over
  the sizes (Excel GROWTH, as the paper) and the rate it predicts at each target size;
- ``full_significance``: on the full topic set, the share of pairs a test finds significant
  (``p <= alpha``) per bin of the full-set difference (the paper's Section 3.2);
- ``sd_by_size``: mean (over systems) standard deviation of a system's mean score over
  random topic samples of each size (Section 5; without replacement, sizes up to n);
- ``error_dependency``: per pair, its trials sorted by ``|d|`` on ``Q_i``; error rate by
  that rank over all pairs (the dependency artefact, Fig. 8).

The bottom share of systems by mean score (the paper drops 25% by MAP) can be left out:
by default the systems below that quantile of the means (``drop_rule=quantile``, Urbano's
rule), or ``floor(share * systems)`` of them (``drop_rule=count``, as the paper counts; its
preset sets it).
The kernel (:class:`~irsim.kit.topicsets.PairErrors`, shared with the effort study)
counts integer fields per block of pairs: shards split the pairs only, a pair's trials (50
in the paper) stay in one shard because the dependency table ranks them. The standard
deviations are computed once, by the shard of the first pair block (a
:class:`~irsim.engine.partials.Slab` placed once).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard
from irsim.engine.partials import Kind, Slab
from irsim.errors import ConfigError, param, unknown_name
from irsim.experiments import Shards
from irsim.kit.bins import LAYOUTS
from irsim.kit.common import (
    as_tuple,
    check_memory,
    check_positive_int,
    check_resamples,
    check_study_memory,
    check_unique,
    select_metrics,
)
from irsim.kit.topicsets import (
    ERROR_STREAM,
    ErrorFields,
    PairErrors,
    PairErrorsStudy,
    check_drop,
    check_schemes,
    check_set_memory,
    check_sizes,
    compared_systems,
    rates,
    sampling_configs,
)
from irsim.params import Options, option
from irsim.registry import study
from irsim.sampling.subsets import check_subset_size, set_means, subset_counts
from irsim.sampling.systems import DEFAULT_RULE, DropRule
from irsim.stats import get_test
from irsim.stats.registry import tests_of
from irsim.tables import ERRORS, METRIC, SAMPLING, SUBSET, table
from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import STR as _S
from irsim.tables import bin_columns as _bins
from irsim.tables import column as _c
from irsim.tables import table_spec as _spec

__all__ = ["Config", "ErrorRates", "GrowthFit", "fit_growth", "make",
           "STREAM", "SD_STREAM", "WINDOWS"]

#: Random stream of the topic sets.
STREAM = ERROR_STREAM
#: Random stream of the samples of the standard-deviation table.
SD_STREAM = "error_rates/sd"
#: The field of the standard-deviation table (per metric, sample size: mean, min, max).
SD_FIELD = "sd"
#: p-value windows of the paper: (0.01, 0.05], (0.04, 0.05] and p <= 0.05.
WINDOWS = ((0.01, 0.05), (0.04, 0.05), (0.0, 0.05))
#: Default shard size: system pairs per shard (every shard holds all trials of its pairs).
SHARD_ITEMS = 4096


@dataclass
class Config(Options):
    """Parameters of ``experiment=error_rates``."""

    name: str = option("error_rates", "``error_rates``.")
    metrics: list[str] | None = option(
        None, "Metrics of the collection to study (default: all; the top-level ``metrics`` wins).")
    sampling: list[str] = option(
        ["disjoint"], "Topic-set schemes: ``disjoint``, ``replacement``, ``independent``.",
        tables="data")
    subset_sizes: list[int] = option(
        [5, 10, 15, 20, 25], "Topic-set sizes (the paper: 5, 10, 15, 20, 25); ``disjoint`` needs "
        "``c <= n/2``.", tables="data")
    trials: int = option(
        50, "Repetitions per pair, each a new pair of topic sets (the paper: 50).", tables="data",
        ge=1)
    tests: list[str] | None = option(
        ["t", "sign", "wilcoxon"], "Significance tests on the first set to condition on: ``t``, "
        "``sign``, ``wilcoxon``, ``paired_bootstrap``, ``randomisation``; the unconditioned rates "
        'are always reported (``test="none"``).',
        tables="data")
    windows: list[list[float]] | None = option(
        [list(w) for w in WINDOWS], "p-value windows ``lo < p <= hi`` (``lo = 0`` includes p = "
        "0).", tables="data")
    drop_bottom: float = option(
        0.0, "Share of systems with the lowest mean left out (the paper: 0.25 by MAP).",
        tables="data", ge=0, lt=1)
    drop_rule: DropRule = option(
        DEFAULT_RULE, "How ``drop_bottom`` leaves systems out: ``quantile`` (those whose mean is "
        "below the ``drop_bottom`` quantile of the means, R's type 7, as Urbano's code) or "
        "``count`` (the ``floor(drop_bottom * systems)`` lowest means; Sanderson & Zobel 2005).",
        tables="data")
    drop_metric: str | None = option(
        None, "Metric ranking the systems for `drop_bottom` (default: the first metric).",
        tables="data")
    target_sizes: list[int] | None = option(
        [50], "Sizes the fitted exponential error rates are extrapolated to.")
    min_comparisons: int = option(
        10, "A size enters a bin's fit only with at least this many comparisons.", ge=1)
    full_alpha: float = option(
        0.05, "Level of the full-topic-set significance table (``p <= full_alpha``).",
        tables="data", gt=0, lt=1)
    sd_sizes: list[int] | None = option(
        None, "Sample sizes of the standard-deviation table (default 5, 10, ... up to n/2: "
        "samples are drawn without replacement, so the sd shrinks to 0 as the size nears n).")
    sd_samples: int = option(100, "Samples per size of the standard-deviation table.", ge=2)
    test_B: int = option(
        1000, "Resamples of the Monte Carlo tests (``paired_bootstrap``, ``randomisation``).",
        tables="data", ge=1)


@dataclass(frozen=True)
class GrowthFit:
    """Least-squares fit of ``log(rate) = a + b * size`` (Excel GROWTH).

    Attributes
    ----------
    a, b : float
    r2 : float
        Coefficient of determination on the log scale (1.0 for two points).
    points : int
        Sizes used.
    """

    a: float
    b: float
    r2: float
    points: int

    def predict(self, size: np.ndarray | float) -> np.ndarray | float:
        """``exp(a + b * size)``."""
        return np.exp(self.a + self.b * np.asarray(size, dtype=np.float64))


def fit_growth(sizes: Sequence[float], rates: Sequence[float]) -> GrowthFit | None:
    """Fit ``log(rate) = a + b * size`` by least squares over the points with rate > 0.

    Returns None when fewer than two usable points (distinct sizes) remain.

    Examples
    --------
    >>> f = fit_growth([5, 10, 15, 20, 25], np.exp(-1.0 - 0.08 * np.arange(5, 30, 5)))
    >>> round(f.a, 12), round(f.b, 12), f.points
    (-1.0, -0.08, 5)
    >>> round(float(f.predict(50)), 6)
    0.006738
    >>> fit_growth([5, 10], [0.3, 0.0]) is None
    True
    """
    s = np.asarray(sizes, dtype=np.float64)
    r = np.asarray(rates, dtype=np.float64)
    ok = np.isfinite(r) & (r > 0)
    s, y = s[ok], np.log(r[ok])
    if len(np.unique(s)) < 2:
        return None
    sm, ym = s.mean(), y.mean()
    sxx = float(((s - sm) ** 2).sum())
    b = float(((s - sm) * (y - ym)).sum() / sxx)
    a = float(ym - b * sm)
    resid = y - (a + b * s)
    syy = float(((y - ym) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / syy if syy > 0 else 1.0
    return GrowthFit(a, b, r2, int(len(s)))


def _check_windows(windows: Any) -> tuple[tuple[float, float], ...]:
    if windows is None:
        return ()
    out = []
    for w in windows:
        try:
            lo, hi = (float(v) for v in w)
        except (TypeError, ValueError):
            raise ConfigError(f"{param('windows')} must hold [lo, hi] pairs, got {w!r}") from None
        if not 0.0 <= lo < hi <= 1.0:
            raise ConfigError(f"{param('windows')}: need 0 <= lo < hi <= 1, got [{lo}, {hi}]")
        out.append((lo, hi))
    return check_unique(out, param("windows"))


def _check_tests(tests: Any) -> tuple[str, ...]:
    names = check_unique(as_tuple(tests) or (), param("tests"))
    for t in names:
        if get_test(t).kind != "paired":
            raise ConfigError(f"{param('tests')}: {t!r} is not a paired test; use one of "
                              f"{', '.join(tests_of('paired'))}")
    return names


@dataclass(frozen=True)
class ErrorRates(PairErrorsStudy):
    """The Sanderson-Zobel error-rate study (made by :func:`make`).

    Parameters
    ----------
    config : Config
        The study's parameters, normalised by :func:`make`: ``metrics`` those of the data
        studied, ``target_sizes`` and ``sd_sizes`` the sizes used (``sd_sizes`` filled in
        from the topic count); ``min_comparisons``, ``sd_samples``.
    systems : tuple of int
        Indices of the systems compared (after ``drop_bottom``).
    errors : PairErrors
        The counting kernel: configurations, trials, tests, windows, full_alpha, test_B, seed.
    seed : int
    shard_items : int
        Pairs per shard (rounded up to a multiple of 256); changes no result.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=8, topics=30, seed=2).matrix
    >>> config = Config(subset_sizes=[5, 10, 15], trials=20, tests=["t"],
    ...                 windows=[[0.0, 0.05]], sd_sizes=[5, 10])
    >>> tables, _ = run_study(*make(config, m, seed=0, shards=Shards()))
    >>> sorted(tables)
    ['error_dependency', 'error_extrapolation', 'error_rates', 'full_significance', \
'sd_by_size']
    >>> er = tables["error_rates"].to_pandas()
    >>> int(er[(er.test == "none") & (er.bin_kind == "absolute")
    ...        & (er.subset_size == 5)].comparisons.sum())      # 28 pairs x 20 trials
    560
    """

    config: Config
    systems: tuple[int, ...]
    errors: PairErrors
    seed: int = 0
    shard_items: int = SHARD_ITEMS
    name: str = field(default="error_rates", init=False)
    CONFIG: ClassVar[type] = Config

    @property
    def metrics(self) -> list[str]:
        """The metrics studied (those of the data, :func:`make`)."""
        return self.config.metrics

    @property
    def configs(self) -> tuple[tuple[str, int], ...]:
        """The (scheme, size) combinations."""
        return self.errors.configs

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Pair blocks; every shard holds all trials of its pairs."""
        return self.plan_pairs()

    def fields(self, data: ScoreMatrix) -> dict[str, Kind]:
        """Integer counters of the kernel; the sd table (one shard provides it)."""
        return {**self.errors.fields(len(self.metrics)),
                SD_FIELD: Slab((len(self.metrics), len(self.config.sd_sizes), 3), along=None)}

    def kernel(self, shard: Shard, data: ScoreMatrix) -> Partial:
        """Counters of one block of pairs over all trials (and the sd table, by the shard
        of the first pair block)."""
        keep = np.asarray(self.systems)
        xs = [np.ascontiguousarray(data.metric(m)[keep]) for m in self.metrics]
        n = len(data.topics)
        out = self.errors.count(shard.items, xs, n)
        if shard.items[0] == 0:
            out[SD_FIELD] = self._sd_table(xs, n)
        return out

    def _sd_table(self, xs: list[np.ndarray], n: int) -> np.ndarray:
        """Mean/min/max over systems of the sd of a system's mean over random samples."""
        sd = np.zeros((len(xs), len(self.config.sd_sizes), 3))
        for j, s in enumerate(self.config.sd_sizes):
            counts = subset_counts("independent", self.seed, SD_STREAM, n, s, 0,
                                   self.config.sd_samples, sets=1)
            for mi, x in enumerate(xs):
                per_system = set_means(x, counts, s)[:, 0].std(axis=0, ddof=1)
                sd[mi, j] = per_system.mean(), per_system.min(), per_system.max()
        return sd

    # -- tables ---------------------------------------------------------------------------
    def finalize(self, merged: dict[str, Any], data: ScoreMatrix) -> dict[str, pa.Table]:
        """The five tables from the merged counters."""
        return {
            "error_rates": table("error_rates", self.errors.rate_columns(merged, self.metrics)),
            "error_extrapolation": self._extrapolation(merged),
            "full_significance": self._full(merged),
            "sd_by_size": self._sd(merged[SD_FIELD]),
            "error_dependency": self._dependency(merged),
        }

    def _extrapolation(self, s: dict[str, Any]) -> pa.Table:
        rows = []
        configs = self.configs
        schemes = list(dict.fromkeys(scheme for scheme, _ in configs))
        for mi, metric in enumerate(self.metrics):
            for scheme in schemes:
                ks = [k for k, (sc, _) in enumerate(configs) if sc == scheme]
                sizes = np.array([configs[k][1] for k in ks], dtype=np.float64)
                for w, (test, lo, hi) in enumerate(self.errors.conditions()):
                    for lay in LAYOUTS:
                        f = ErrorFields(lay)
                        comps = s[f.comparisons][mi, ks, w]  # (sizes, bins)
                        errs = s[f.errors][mi, ks, w]
                        r = rates(errs, comps)
                        r[comps < self.config.min_comparisons] = np.nan
                        for j in range(lay.count):
                            fit = fit_growth(sizes, r[:, j])
                            if fit is None:
                                continue
                            for target in self.config.target_sizes:
                                rows.append({
                                    "metric": metric, "sampling": scheme,
                                    "bin_kind": lay.kind, "bin_lo": float(lay.lo[j]),
                                    "bin_hi": float(lay.hi[j]), "test": test, "p_lo": lo,
                                    "p_hi": hi, "a": fit.a, "b": fit.b,
                                    "target_size": int(target),
                                    "predicted_rate": float(fit.predict(target)),
                                    "points": fit.points, "r2": fit.r2,
                                })
        return table("error_extrapolation", rows)

    def _full(self, s: dict[str, Any]) -> pa.Table:
        rows = []
        alpha = self.errors.full_alpha
        for mi, metric in enumerate(self.metrics):
            for ti, test in enumerate(self.errors.tests):
                for lay in LAYOUTS:
                    pairs = s[ErrorFields(lay).full_pairs][mi]
                    sig = s[ErrorFields(lay).full_significant][mi, ti]
                    share = rates(sig, pairs)
                    for j in range(lay.count):
                        rows.append({"metric": metric, "test": test, "alpha": alpha,
                                     "bin_kind": lay.kind, "bin_lo": float(lay.lo[j]),
                                     "bin_hi": float(lay.hi[j]), "pairs": int(pairs[j]),
                                     "significant": int(sig[j]), "share": float(share[j])})
        return table("full_significance", rows)

    def _sd(self, sd: np.ndarray) -> pa.Table:
        rows = []
        for mi, metric in enumerate(self.metrics):
            for j, size in enumerate(self.config.sd_sizes):
                rows.append({"metric": metric, "sample_size": int(size),
                             "samples": self.config.sd_samples, "systems": len(self.systems),
                             "mean_sd": float(sd[mi, j, 0]), "min_sd": float(sd[mi, j, 1]),
                             "max_sd": float(sd[mi, j, 2])})
        return table("sd_by_size", rows)

    def _dependency(self, s: dict[str, Any]) -> pa.Table:
        rows = []
        for mi, metric in enumerate(self.metrics):
            for k, (scheme, size) in enumerate(self.configs):
                pairs = int(s[ErrorFields.DEPENDENCY_PAIRS][mi, k])
                errs = s[ErrorFields.DEPENDENCY_ERRORS][mi, k]
                for r in range(self.errors.trials):
                    rows.append({"metric": metric, "sampling": scheme, "subset_size": size,
                                 "rank": r + 1, "pairs": pairs, "errors": int(errs[r]),
                                 "error_rate": errs[r] / pairs if pairs else float("nan")})
        return table("error_dependency", rows)


def _sd_sizes(sd_sizes: tuple[int, ...] | None, n: int) -> tuple[int, ...]:
    """Sample sizes of the standard-deviation table on `n` topics."""
    if sd_sizes is None:
        return tuple(range(5, n // 2 + 1, 5)) or (max(1, n // 2),)
    return tuple(check_subset_size("independent", n, s, sets=1, name=param("sd_sizes"))
                 for s in sd_sizes)



# ------------------------------------------------------------------- output tables
_P_WINDOW = (
    _c("p_lo", _F, "p-value window `p_lo < p <= p_hi` of the test on the first set "
       "(`p_lo` = 0 includes p = 0); 0 for `none`"),
    _c("p_hi", _F, "upper end of the p-value window; 1 for `none`"),
)
_COND_TEST = _c("test", _S, "test on the first set the comparison is conditioned on (`t`, "
                "`sign`, `wilcoxon`, `paired_bootstrap`, `randomisation`), or `none`: every "
                "comparison")

#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
    _spec("error_rates", ("error_rates",), "Error rates of run comparisons between two topic "
          "sets: per metric, sampling, size, difference bin and significance condition.", [
              METRIC, SAMPLING, SUBSET, *_bins(), _COND_TEST, *_P_WINDOW, *ERRORS,
          ]),
    _spec("error_extrapolation", ("error_rates",), "Per bin and condition, the least-squares "
          "fit log(rate) = a + b size over the sizes (Excel GROWTH) and the rate it predicts at "
          "each target size; no row where fewer than two sizes are usable.", [
              METRIC, SAMPLING, *_bins(), _COND_TEST, *_P_WINDOW,
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
              METRIC,
              _c("test", _S, "`t`, `sign`, `wilcoxon`, `paired_bootstrap` or `randomisation`"),
              _c("alpha", _F, "significance level: p <= alpha (`experiment.full_alpha`)"),
              *_bins("the full-set difference"),
              _c("pairs", _I, "pairs whose full-set difference falls in the bin"),
              _c("significant", _I, "of those, pairs with p <= alpha"),
              _c("share", _F, "significant / pairs (NaN for an empty bin)"),
          ]),
    _spec("sd_by_size", ("error_rates",), "Standard deviation of a system's mean score over "
          "random topic samples, by sample size, summarised over systems.", [
              METRIC,
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
              METRIC, SAMPLING, SUBSET,
              _c("rank", _I, "rank of the trial among its pair's trials by |d| on the first set "
                 "(1: smallest)"),
              _c("pairs", _I, "pairs (one trial of each rank)"),
              _c("errors", _I, "pairs whose trial of this rank is an error"),
              _c("error_rate", _F, "errors / pairs"),
          ]),
)


@study("error_rates", config=Config, data="matrix", order=30,
       title="Error rates",
       example=dict(
           overrides={"synthetic": ["experiment.trials=20", "experiment.test_B=200",
                                    "experiment.sd_samples=10"]},
           keywords=dict(subset_sizes=[3, 6, 9], trials=5, tests=["t"], sd_sizes=[4, 7, 10, 13, 16],
                         sd_samples=5),
           figures=["error_rates_*", "sd_by_size.png", "error_dependency_*"]),
       tables=TABLE_SPECS,
       description=("Sanderson-Zobel error rates: order flips between topic sets by difference bin "
                    "and set size, conditioned on significance tests, exponential extrapolation"),
       headlines={"error_extrapolation": (
           ("metric", "sampling", "bin_kind", "bin_lo", "test", "p_lo", "p_hi", "target_size"),
           "predicted_rate")},
       question=("How often does the order of two runs flip for a given difference, set size "
                 "and significance test? (Sanderson-Zobel 2005)"))
def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Shards
         ) -> tuple[ErrorRates, ScoreMatrix]:
    """The study of `config` on `data` (restricted to ``config.metrics``), validated.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> m = synthetic_scores(systems=8, topics=50, seed=2).matrix
    >>> study, data = make(Config(drop_bottom=0.25), m, seed=0, shards=Shards())
    >>> len(study.systems), study.configs[-1], study.config.sd_sizes
    (6, ('disjoint', 25), [5, 10, 15, 20, 25])
    >>> make(Config(subset_sizes=[26]), m, seed=0, shards=Shards())
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.subset_sizes: 26 > n/2 = 25.0 for disjoint \
sampling of 2 sets from 50 topics
    """
    matrix = select_metrics(data, config.metrics)
    schemes = check_schemes(config.sampling)
    sizes = check_sizes(config.subset_sizes, required=True)
    trials = config.trials
    tests = _check_tests(config.tests)
    windows = _check_windows(config.windows)
    if tests and not windows:
        raise ConfigError(f"{param('windows')} must list at least one p-value window when "
                          f"{param('tests')} is not empty")
    if tests and min(sizes) < 2:
        raise ConfigError(f"{param('subset_sizes')} must be >= 2 for significance tests")
    drop_bottom, drop_rule = check_drop(config.drop_bottom, config.drop_rule)
    targets = check_sizes(config.target_sizes, "target_sizes") or ()
    sd_sizes = check_sizes(config.sd_sizes, "sd_sizes")
    test_B = config.test_B
    # a Monte Carlo p-value moves in steps of 1/test_B: resolve full_alpha and the windows
    check_resamples(test_B, [float(config.full_alpha)], param("test_B"), param("full_alpha"),
                    tests=tests)
    if windows:
        check_resamples(test_B, [v for lo, hi in windows for v in (lo, hi, hi - lo) if v > 0],
                        param("test_B"), f"{param('windows')} (smallest edge or width)",
                        tests=tests)
    items, _ = shards.get(SHARD_ITEMS, 1000)
    check_positive_int(items, param("shard_items", "engine"))

    n = len(matrix.topics)
    if n < 2:
        raise ConfigError(f"error rates need >= 2 topics, got {n}")
    configs = sampling_configs(schemes, sizes, n)
    sd_sizes = _sd_sizes(sd_sizes, n)
    check_set_memory(n, "error rates")
    if sd_sizes:  # all samples of a size at once, one set each
        check_memory(8 * 5 * int(config.sd_samples) * n,
                     f"the sd table ({config.sd_samples} samples x {n} topics at once)",
                     f"{param('sd_samples')} or the number of topics")
    drop_metric = config.drop_metric
    if drop_metric is not None and drop_metric not in matrix.metrics:
        raise unknown_name(param("drop_metric"), drop_metric, matrix.metrics)
    systems = compared_systems(matrix, drop_bottom, drop_metric or matrix.metrics[0], drop_rule)
    errors = PairErrors(configs=configs, trials=trials, tests=tests, windows=windows,
                        full_alpha=float(config.full_alpha), test_B=test_B, seed=int(seed))
    config = dataclasses.replace(config, metrics=list(matrix.metrics),
                                 target_sizes=list(targets), sd_sizes=list(sd_sizes))
    study = ErrorRates(config, systems=systems, errors=errors, seed=int(seed),
                       shard_items=items)
    check_study_memory(study, matrix, param("trials"),
                       extra=errors.working_bytes(len(systems)))
    return study, matrix
