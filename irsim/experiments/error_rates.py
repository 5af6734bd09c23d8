"""Error rates of run comparisons across topic sets (Sanderson & Zobel, SIGIR 2005;
METHODS.md section 4).

Each trial draws two topic sets ``Q_i``, ``Q'_i`` of size ``c`` (``disjoint`` as Voorhees &
Buckley and the first part of the paper, ``replacement`` as its Section 7, or
``independent``); a comparison of a pair of runs is an *error* if the order of the pair on
``Q'_i`` differs from its order on ``Q_i`` (the swap rule of
:func:`irsim.experiments.bins.is_swap`: opposite signs, or exactly one difference 0).
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

The bottom share of systems by mean score (the paper drops 25% by MAP) can be left out.
Means of every system on every set are GEMMs of the score matrix with the selection-count
matrices of a block of trials; significance tests run on gathered ``(pairs * trials, c)``
blocks of per-topic differences. Shards split the pairs only: a pair's trials (50 in the
paper) stay in one shard, because the dependency table ranks them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard, shard_grid
from irsim.errors import ConfigError, unknown_name
from irsim.experiments.bins import ABSOLUTE, RELATIVE, BinLayout, is_swap, relative_difference
from irsim.experiments.common import (
    PAIR_UNIT,
    aligned_block,
    check_positive_int,
    pair_index,
    resolve_metrics,
    unit_ranges,
)
from irsim.experiments.swap import (
    as_tuple,
    check_schemes,
    check_sizes,
    preset_metrics,
    sampling_configs,
    set_means,
    snap_ties,
    tie_tolerance_of,
)
from irsim.sampling.rng import REPLICATE_BLOCK
from irsim.sampling.subsets import (
    check_subset_size,
    indices_to_set_counts,
    subset_counts,
    subset_indices,
)
from irsim.stats import get_test

__all__ = ["ErrorRates", "GrowthFit", "fit_growth", "in_window", "kept_systems",
           "STREAM", "SD_STREAM", "WINDOWS"]

#: Random stream of the topic sets.
STREAM = "error_rates/topics"
#: Random stream of the samples of the standard-deviation table.
SD_STREAM = "error_rates/sd"
#: p-value windows of the paper: (0.01, 0.05], (0.04, 0.05] and p <= 0.05.
WINDOWS = ((0.01, 0.05), (0.04, 0.05), (0.0, 0.05))
LAYOUTS: tuple[BinLayout, ...] = (ABSOLUTE, RELATIVE)
#: Pseudo test of the unconditioned error rates.
NO_TEST = "none"


def in_window(p: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``lo < p <= hi``; a window with ``lo == 0`` also includes ``p == 0`` (NaN: never).

    Examples
    --------
    >>> p = np.array([0.0, 0.01, 0.03, 0.05, 0.2, np.nan])
    >>> in_window(p, 0.01, 0.05).tolist(), in_window(p, 0.0, 0.05).tolist()
    ([False, False, True, True, False, False], [True, True, True, True, False, False])
    """
    p = np.asarray(p)
    inside = p <= hi
    return inside & ((p >= lo) if lo <= 0 else (p > lo))


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


def kept_systems(data: ScoreMatrix, drop_bottom: float, metric: str) -> np.ndarray:
    """Indices (in order) of the systems left after dropping the bottom share by mean
    `metric` score: ``floor(drop_bottom * systems)`` systems go (ties: the earlier one first).

    Examples
    --------
    >>> m = ScoreMatrix(np.array([[[0.3], [0.1], [0.2], [0.4]]]), ["AP"], list("abcd"), ["1"])
    >>> kept_systems(m, 0.25, "AP").tolist(), kept_systems(m, 0.5, "AP").tolist()
    ([0, 2, 3], [0, 3])
    """
    n_sys = len(data.systems)
    k = int(math.floor(drop_bottom * n_sys + 1e-9))
    if k == 0:
        return np.arange(n_sys)
    means = data.metric(metric).mean(axis=1)
    order = np.lexsort((np.arange(n_sys), means))
    return np.sort(order[k:])


def _check_windows(windows: Any) -> tuple[tuple[float, float], ...]:
    if windows is None:
        return ()
    out = []
    for w in windows:
        try:
            lo, hi = (float(v) for v in w)
        except (TypeError, ValueError):
            raise ConfigError(f"experiment.windows must hold [lo, hi] pairs, got {w!r}") from None
        if not 0.0 <= lo < hi <= 1.0:
            raise ConfigError(f"experiment.windows: need 0 <= lo < hi <= 1, got [{lo}, {hi}]")
        out.append((lo, hi))
    return tuple(dict.fromkeys(out))


def _check_tests(tests: Any) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(as_tuple(tests) or ()))
    for t in names:
        spec = get_test(t)
        if spec.kind != "paired":
            raise ConfigError(f"experiment.tests: {t!r} is not a paired test; use one of "
                              "t, sign, wilcoxon, paired_bootstrap, randomisation")
    return names


@dataclass(frozen=True)
class ErrorRates:
    """The Sanderson-Zobel error-rate study.

    Parameters
    ----------
    metrics : sequence of str, optional
        Metrics of the score matrix (default: all).
    sampling : sequence of str
        Topic-set schemes (``disjoint``, ``replacement``, ``independent``).
    subset_sizes : sequence of int
        Topic-set sizes (the paper: 5, 10, 15, 20, 25).
    trials : int
        Repetitions per pair (the paper: 50).
    tests : sequence of str
        Significance tests on the first set to condition on (``t``, ``sign``,
        ``wilcoxon``, ``paired_bootstrap``, ``randomisation``); unconditioned rates are
        always reported (``test="none"``).
    windows : sequence of (lo, hi)
        p-value windows ``lo < p <= hi``.
    drop_bottom : float
        Share of systems with the lowest mean (of `drop_metric`) left out; the paper: 0.25.
    drop_metric : str, optional
        Metric ranking the systems for `drop_bottom` (default: the first metric).
    target_sizes : sequence of int
        Sizes the fitted error rates are extrapolated to.
    min_comparisons : int
        A size enters a bin's fit only with at least this many comparisons.
    full_alpha : float
        Significance level of the full-topic-set table (``p <= alpha``).
    sd_sizes : sequence of int, optional
        Sample sizes of the standard-deviation table (default 5, 10, ... up to n/2: samples
        are drawn without replacement, so the sd shrinks to 0 as the size nears n).
    sd_samples : int
        Samples per size for the standard deviations (>= 2).
    test_B : int
        Resamples of the Monte Carlo tests.
    seed : int
        Global seed.
    shard_pairs : int
        Pairs per shard (rounded up to a multiple of 256); changes no result.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=8, topics=30, seed=2).matrix
    >>> study = ErrorRates(subset_sizes=(5, 10, 15), trials=20, tests=("t",),
    ...                    windows=((0.0, 0.05),), sd_sizes=(5, 10))
    >>> tables, _ = run_study(study, m)
    >>> sorted(tables)
    ['error_dependency', 'error_extrapolation', 'error_rates', 'full_significance', \
'sd_by_size']
    >>> er = tables["error_rates"].to_pandas()
    >>> int(er[(er.test == "none") & (er.bin_kind == "absolute")
    ...        & (er.subset_size == 5)].comparisons.sum())      # 28 pairs x 20 trials
    560
    """

    metrics: tuple[str, ...] | None = None
    sampling: tuple[str, ...] = ("disjoint",)
    subset_sizes: tuple[int, ...] = (5, 10, 15, 20, 25)
    trials: int = 50
    tests: tuple[str, ...] = ("t", "sign", "wilcoxon")
    windows: tuple[tuple[float, float], ...] = WINDOWS
    drop_bottom: float = 0.0
    drop_metric: str | None = None
    target_sizes: tuple[int, ...] = (50,)
    min_comparisons: int = 10
    full_alpha: float = 0.05
    sd_sizes: tuple[int, ...] | None = None
    sd_samples: int = 100
    test_B: int = 1000
    seed: int = 0
    shard_pairs: int = 4096
    name: str = field(default="error_rates", init=False)

    def __post_init__(self) -> None:
        if self.metrics is not None:
            object.__setattr__(self, "metrics", tuple(as_tuple(self.metrics)))
        object.__setattr__(self, "sampling", check_schemes(self.sampling))
        sizes = check_sizes(self.subset_sizes)
        if not sizes:
            raise ConfigError("experiment.subset_sizes must list at least one size")
        object.__setattr__(self, "subset_sizes", sizes)
        object.__setattr__(self, "trials", check_positive_int(self.trials, "experiment.trials"))
        object.__setattr__(self, "tests", _check_tests(self.tests))
        object.__setattr__(self, "windows", _check_windows(self.windows))
        if self.tests and not self.windows:
            raise ConfigError("experiment.windows must list at least one p-value window when "
                              "experiment.tests is not empty")
        if self.tests and min(sizes) < 2:
            raise ConfigError("experiment.subset_sizes must be >= 2 for significance tests")
        if not 0.0 <= float(self.drop_bottom) < 1.0:
            raise ConfigError(f"experiment.drop_bottom must be in [0, 1), got "
                              f"{self.drop_bottom}")
        object.__setattr__(self, "drop_bottom", float(self.drop_bottom))
        targets = check_sizes(self.target_sizes) or ()
        object.__setattr__(self, "target_sizes", targets)
        object.__setattr__(self, "min_comparisons", check_positive_int(
            self.min_comparisons, "experiment.min_comparisons"))
        if not 0.0 < float(self.full_alpha) < 1.0:
            raise ConfigError(f"experiment.full_alpha must be inside (0, 1), got "
                              f"{self.full_alpha}")
        object.__setattr__(self, "full_alpha", float(self.full_alpha))
        if self.sd_sizes is not None:
            object.__setattr__(self, "sd_sizes", check_sizes(self.sd_sizes))
        if check_positive_int(self.sd_samples, "experiment.sd_samples") < 2:
            raise ConfigError(f"experiment.sd_samples must be >= 2, got {self.sd_samples}")
        object.__setattr__(self, "test_B", check_positive_int(self.test_B, "experiment.test_B"))
        check_positive_int(self.shard_pairs, "engine.shard_pairs")

    # -- plan -----------------------------------------------------------------------------
    def _metrics(self, data: ScoreMatrix) -> tuple[str, ...]:
        names = resolve_metrics(self.metrics, data.metrics)
        if self.drop_metric is not None and self.drop_metric not in data.metrics:
            raise unknown_name("experiment.drop_metric", self.drop_metric, data.metrics)
        return tuple(names)

    def systems(self, data: ScoreMatrix) -> np.ndarray:
        """Indices of the systems compared (after ``drop_bottom``)."""
        metrics = self._metrics(data)
        keep = kept_systems(data, self.drop_bottom, self.drop_metric or metrics[0])
        if len(keep) < 2:
            raise ConfigError(f"error rates need >= 2 systems, {len(keep)} left after "
                              f"drop_bottom={self.drop_bottom}")
        return keep

    def configs(self, data: ScoreMatrix) -> list[tuple[str, int]]:
        """The (scheme, size) combinations on `data`, validated."""
        return sampling_configs(self.sampling, self.subset_sizes, len(data.topics))

    def sd_sizes_for(self, n: int) -> tuple[int, ...]:
        """Sample sizes of the standard-deviation table on `n` topics."""
        if self.sd_sizes is None:
            return tuple(range(5, n // 2 + 1, 5)) or (max(1, n // 2),)
        return tuple(check_subset_size("independent", n, s, sets=1, name="experiment.sd_sizes")
                     for s in self.sd_sizes)

    def conditions(self) -> list[tuple[str, float, float]]:
        """(test, p_lo, p_hi) of every row family: ``("none", 0, 1)`` first."""
        return [(NO_TEST, 0.0, 1.0)] + [(t, lo, hi) for t in self.tests
                                        for lo, hi in self.windows]

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Pair blocks; every shard holds all trials of its pairs."""
        if len(data.topics) < 2:
            raise ConfigError(f"error rates need >= 2 topics, got {len(data.topics)}")
        self.configs(data)
        self.sd_sizes_for(len(data.topics))
        n_sys = len(self.systems(data))
        return shard_grid(n_sys * (n_sys - 1) // 2, aligned_block(self.shard_pairs, PAIR_UNIT),
                          self.trials, self.trials)

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        return {k: getattr(self, k) for k in (
            "metrics", "sampling", "subset_sizes", "trials", "tests", "windows", "drop_bottom",
            "drop_metric", "target_sizes", "min_comparisons", "full_alpha", "sd_sizes",
            "sd_samples", "test_B", "seed")}

    # -- kernel ---------------------------------------------------------------------------
    def _pvalues(self, test: str, z: np.ndarray, stream: str) -> np.ndarray:
        """Two-sided p-values of `test` for every row of differences `z` (rows, n)."""
        spec = get_test(test)
        opts: dict[str, Any] = {}
        if spec.monte_carlo:
            opts = {"B": self.test_B, "seed": self.seed, "study": f"{stream}/{test}"}
        return np.asarray(spec.function(z, **opts).pvalue, dtype=np.float64)

    def kernel(self, shard: Shard, data: ScoreMatrix) -> Partial:
        """Counters of one block of pairs over all trials."""
        metrics = self._metrics(data)
        keep = self.systems(data)
        configs = self.configs(data)
        conds = self.conditions()
        n = len(data.topics)
        xs = [np.ascontiguousarray(data.metric(m)[keep]) for m in metrics]
        tols = [tie_tolerance_of(x) for x in xs]
        ia, ib = pair_index(len(keep))
        units = unit_ranges(*shard.items, PAIR_UNIT)
        trial_units = unit_ranges(0, self.trials, REPLICATE_BLOCK)
        nm, nk, nw, nt = len(metrics), len(configs), len(conds), len(self.tests)
        out: Partial = {}
        for lay in LAYOUTS:
            out[f"{lay.kind}_comparisons"] = np.zeros((nm, nk, nw, lay.count), np.int64)
            out[f"{lay.kind}_errors"] = np.zeros((nm, nk, nw, lay.count), np.int64)
            out[f"full_{lay.kind}_pairs"] = np.zeros((nm, lay.count), np.int64)
            out[f"full_{lay.kind}_significant"] = np.zeros((nm, nt, lay.count), np.int64)
        out["dependency_errors"] = np.zeros((nm, nk, self.trials), np.int64)
        out["dependency_pairs"] = np.zeros((nm, nk), np.int64)

        draws = [[subset_indices(scheme, self.seed, STREAM, n, size, t0, t1)
                  for t0, t1 in trial_units] for scheme, size in configs]
        for mi, x in enumerate(xs):
            tol = tols[mi]
            full_means = x.mean(axis=1)
            for p0, p1 in units:
                a, b = ia[p0:p1], ib[p0:p1]
                z = x[a] - x[b]
                self._full_set(out, mi, z, full_means[a], full_means[b], tol)
            for k, (_scheme, size) in enumerate(configs):
                means = np.concatenate(  # (2, systems, trials)
                    [set_means(x, indices_to_set_counts(idx, n), size) for idx in draws[k]],
                    axis=0).transpose(1, 2, 0)
                for p0, p1 in units:
                    a, b = ia[p0:p1], ib[p0:p1]
                    self._trials(out, mi, k, np.take(means, a, axis=1),
                                 np.take(means, b, axis=1), x[a] - x[b], draws[k], size, tol,
                                 conds)
        if shard.items[0] == 0:
            self._sd_table(out, xs, n)
        return out

    def _full_set(self, out: Partial, mi: int, z: np.ndarray, ma: np.ndarray,
                  mb: np.ndarray, tol: float) -> None:
        """Full-topic-set significance per bin of the full-set difference."""
        d = snap_ties(ma - mb, tol)
        absd = np.abs(d)
        bins = {ABSOLUTE.kind: ABSOLUTE.index(absd),
                RELATIVE.kind: RELATIVE.index(relative_difference(ma, mb, absd))}
        for lay in LAYOUTS:
            out[f"full_{lay.kind}_pairs"][mi] += np.bincount(bins[lay.kind],
                                                             minlength=lay.count)
        for ti, test in enumerate(self.tests):
            sig = self._pvalues(test, z, "error_rates/full") <= self.full_alpha
            for lay in LAYOUTS:
                out[f"full_{lay.kind}_significant"][mi, ti] += np.bincount(
                    bins[lay.kind][sig], minlength=lay.count)

    def _trials(self, out: Partial, mi: int, k: int, ma: np.ndarray, mb: np.ndarray,
                z: np.ndarray, draws: list[np.ndarray], size: int, tol: float,
                conds: list[tuple[str, float, float]]) -> None:
        """Counters of one pair unit over all trials (ma, mb: (2, pairs, trials))."""
        d = snap_ties(ma[0] - mb[0], tol)
        d2 = snap_ties(ma[1] - mb[1], tol)
        err = is_swap(d, d2, zero_swaps=True)
        absd = np.abs(d)
        bins = {ABSOLUTE.kind: ABSOLUTE.index(absd),
                RELATIVE.kind: RELATIVE.index(relative_difference(ma[0], mb[0], absd))}
        pvals: dict[str, np.ndarray] = {}
        for test in self.tests:  # on the first set of every trial: gathered (pairs, trials, c)
            parts = []
            for idx in draws:
                g = np.take(z, idx[:, 0], axis=1)
                parts.append(self._pvalues(test, g.reshape(-1, size), STREAM)
                             .reshape(g.shape[:2]))
            pvals[test] = np.concatenate(parts, axis=1)
        for w, (test, lo, hi) in enumerate(conds):
            mask = np.ones(d.shape, bool) if test == NO_TEST else in_window(pvals[test], lo, hi)
            for lay in LAYOUTS:
                sel = bins[lay.kind][mask]
                out[f"{lay.kind}_comparisons"][mi, k, w] += np.bincount(sel,
                                                                        minlength=lay.count)
                out[f"{lay.kind}_errors"][mi, k, w] += np.bincount(
                    bins[lay.kind][mask & err], minlength=lay.count)
        # dependency artefact: each pair's trials ranked by |d| on the first set
        order = np.argsort(absd, axis=1, kind="stable")
        out["dependency_errors"][mi, k] += np.take_along_axis(err, order, axis=1).sum(axis=0)
        out["dependency_pairs"][mi, k] += len(d)

    def _sd_table(self, out: Partial, xs: list[np.ndarray], n: int) -> None:
        """Mean/min/max over systems of the sd of a system's mean over random samples."""
        sizes = self.sd_sizes_for(n)
        sd = np.zeros((len(xs), len(sizes), 3))
        for j, s in enumerate(sizes):
            counts = subset_counts("independent", self.seed, SD_STREAM, n, s, 0,
                                   self.sd_samples, sets=1)
            for mi, x in enumerate(xs):
                per_system = set_means(x, counts, s)[:, 0].std(axis=0, ddof=1)
                sd[mi, j] = per_system.mean(), per_system.min(), per_system.max()
        out["sd"] = sd

    def reducer(self, data: ScoreMatrix) -> _ErrorRatesReducer:
        """A fresh reducer for this study on `data`."""
        return _ErrorRatesReducer(self, data)


def _rates(hits: np.ndarray, comps: np.ndarray) -> np.ndarray:
    out = np.full(np.shape(comps), np.nan)
    np.divide(hits, comps, out=out, where=np.asarray(comps) > 0)
    return out


class _ErrorRatesReducer:
    """Integer counters (summed); the sd table comes from the first pair block."""

    def __init__(self, study: ErrorRates, data: ScoreMatrix):
        self.study = study
        self.metrics = study._metrics(data)
        self.configs = study.configs(data)
        self.n_systems = len(study.systems(data))
        self.sd_sizes = study.sd_sizes_for(len(data.topics))
        self.state: dict[str, np.ndarray] = {}

    def combine(self, shard: Shard, partial: Partial) -> None:
        for key, arr in partial.items():
            if key == "sd":
                self.state[key] = np.array(arr, copy=True)
            elif key not in self.state:
                self.state[key] = np.array(arr, copy=True)
            else:
                self.state[key] += arr

    def finalize(self) -> dict[str, pa.Table]:
        study, s = self.study, self.state
        conds = study.conditions()
        cols: dict[str, list] = {c: [] for c in ERROR_SCHEMA.names}
        for mi, metric in enumerate(self.metrics):
            for k, (scheme, size) in enumerate(self.configs):
                for w, (test, lo, hi) in enumerate(conds):
                    for lay in LAYOUTS:
                        comps = s[f"{lay.kind}_comparisons"][mi, k, w]
                        errs = s[f"{lay.kind}_errors"][mi, k, w]
                        c = lay.count
                        cols["metric"] += [metric] * c
                        cols["sampling"] += [scheme] * c
                        cols["subset_size"] += [size] * c
                        cols["bin_kind"] += [lay.kind] * c
                        cols["bin_lo"] += lay.lo.tolist()
                        cols["bin_hi"] += lay.hi.tolist()
                        cols["test"] += [test] * c
                        cols["p_lo"] += [lo] * c
                        cols["p_hi"] += [hi] * c
                        cols["comparisons"] += comps.tolist()
                        cols["errors"] += errs.tolist()
                        cols["error_rate"] += _rates(errs, comps).tolist()
        errors = pa.table(cols, schema=ERROR_SCHEMA)
        return {
            "error_rates": errors,
            "error_extrapolation": self._extrapolation(conds),
            "full_significance": self._full(),
            "sd_by_size": self._sd(),
            "error_dependency": self._dependency(),
        }

    def _extrapolation(self, conds: list[tuple[str, float, float]]) -> pa.Table:
        study, s = self.study, self.state
        rows = []
        schemes = list(dict.fromkeys(scheme for scheme, _ in self.configs))
        for mi, metric in enumerate(self.metrics):
            for scheme in schemes:
                ks = [k for k, (sc, _) in enumerate(self.configs) if sc == scheme]
                sizes = np.array([self.configs[k][1] for k in ks], dtype=np.float64)
                for w, (test, lo, hi) in enumerate(conds):
                    for lay in LAYOUTS:
                        comps = s[f"{lay.kind}_comparisons"][mi, ks, w]  # (sizes, bins)
                        errs = s[f"{lay.kind}_errors"][mi, ks, w]
                        rates = _rates(errs, comps)
                        rates[comps < study.min_comparisons] = np.nan
                        for j in range(lay.count):
                            fit = fit_growth(sizes, rates[:, j])
                            if fit is None:
                                continue
                            for target in study.target_sizes:
                                rows.append({
                                    "metric": metric, "sampling": scheme,
                                    "bin_kind": lay.kind, "bin_lo": float(lay.lo[j]),
                                    "bin_hi": float(lay.hi[j]), "test": test, "p_lo": lo,
                                    "p_hi": hi, "a": fit.a, "b": fit.b,
                                    "target_size": int(target),
                                    "predicted_rate": float(fit.predict(target)),
                                    "points": fit.points, "r2": fit.r2,
                                })
        return pa.Table.from_pylist(rows, schema=EXTRAPOLATION_SCHEMA)

    def _full(self) -> pa.Table:
        study, s = self.study, self.state
        rows = []
        for mi, metric in enumerate(self.metrics):
            for ti, test in enumerate(study.tests):
                for lay in LAYOUTS:
                    pairs = s[f"full_{lay.kind}_pairs"][mi]
                    sig = s[f"full_{lay.kind}_significant"][mi, ti]
                    share = _rates(sig, pairs)
                    for j in range(lay.count):
                        rows.append({"metric": metric, "test": test, "alpha": study.full_alpha,
                                     "bin_kind": lay.kind, "bin_lo": float(lay.lo[j]),
                                     "bin_hi": float(lay.hi[j]), "pairs": int(pairs[j]),
                                     "significant": int(sig[j]), "share": float(share[j])})
        return pa.Table.from_pylist(rows, schema=FULL_SCHEMA)

    def _sd(self) -> pa.Table:
        sd = self.state["sd"]
        rows = []
        for mi, metric in enumerate(self.metrics):
            for j, size in enumerate(self.sd_sizes):
                rows.append({"metric": metric, "sample_size": int(size),
                             "samples": self.study.sd_samples, "systems": self.n_systems,
                             "mean_sd": float(sd[mi, j, 0]), "min_sd": float(sd[mi, j, 1]),
                             "max_sd": float(sd[mi, j, 2])})
        return pa.Table.from_pylist(rows, schema=SD_SCHEMA)

    def _dependency(self) -> pa.Table:
        s = self.state
        rows = []
        for mi, metric in enumerate(self.metrics):
            for k, (scheme, size) in enumerate(self.configs):
                pairs = int(s["dependency_pairs"][mi, k])
                errs = s["dependency_errors"][mi, k]
                for r in range(self.study.trials):
                    rows.append({"metric": metric, "sampling": scheme, "subset_size": size,
                                 "rank": r + 1, "pairs": pairs, "errors": int(errs[r]),
                                 "error_rate": errs[r] / pairs if pairs else float("nan")})
        return pa.Table.from_pylist(rows, schema=DEPENDENCY_SCHEMA)


ERROR_SCHEMA = pa.schema([
    ("metric", pa.string()), ("sampling", pa.string()), ("subset_size", pa.int64()),
    ("bin_kind", pa.string()), ("bin_lo", pa.float64()), ("bin_hi", pa.float64()),
    ("test", pa.string()), ("p_lo", pa.float64()), ("p_hi", pa.float64()),
    ("comparisons", pa.int64()), ("errors", pa.int64()), ("error_rate", pa.float64()),
])
EXTRAPOLATION_SCHEMA = pa.schema([
    ("metric", pa.string()), ("sampling", pa.string()), ("bin_kind", pa.string()),
    ("bin_lo", pa.float64()), ("bin_hi", pa.float64()), ("test", pa.string()),
    ("p_lo", pa.float64()), ("p_hi", pa.float64()), ("a", pa.float64()), ("b", pa.float64()),
    ("target_size", pa.int64()), ("predicted_rate", pa.float64()), ("points", pa.int64()),
    ("r2", pa.float64()),
])
FULL_SCHEMA = pa.schema([
    ("metric", pa.string()), ("test", pa.string()), ("alpha", pa.float64()),
    ("bin_kind", pa.string()), ("bin_lo", pa.float64()), ("bin_hi", pa.float64()),
    ("pairs", pa.int64()), ("significant", pa.int64()), ("share", pa.float64()),
])
SD_SCHEMA = pa.schema([
    ("metric", pa.string()), ("sample_size", pa.int64()), ("samples", pa.int64()),
    ("systems", pa.int64()), ("mean_sd", pa.float64()), ("min_sd", pa.float64()),
    ("max_sd", pa.float64()),
])
DEPENDENCY_SCHEMA = pa.schema([
    ("metric", pa.string()), ("sampling", pa.string()), ("subset_size", pa.int64()),
    ("rank", pa.int64()), ("pairs", pa.int64()), ("errors", pa.int64()),
    ("error_rate", pa.float64()),
])


DESCRIPTION = ("Sanderson-Zobel error rates: order flips between topic sets by difference bin "
               "and set size, conditioned on significance tests, exponential extrapolation")


def build(cfg: Any) -> tuple[ErrorRates, ScoreMatrix]:
    """The study of the ``experiment`` config node on the configured collection."""
    from irsim.experiments.loading import engine_shards, score_matrix

    e = cfg.experiment
    matrix = preset_metrics(score_matrix(cfg), cfg)
    shard_pairs, _ = engine_shards(cfg).get(4096, 1000)
    windows = e.get("windows", WINDOWS)
    study = ErrorRates(
        metrics=tuple(matrix.metrics),
        sampling=as_tuple(e.get("sampling", ("disjoint",))),
        subset_sizes=as_tuple(e.get("subset_sizes", (5, 10, 15, 20, 25))),
        trials=e.get("trials", 50),
        tests=as_tuple(e.get("tests", ("t", "sign", "wilcoxon"))) or (),
        windows=tuple(tuple(w) for w in windows) if windows is not None else (),
        drop_bottom=e.get("drop_bottom", 0.0),
        drop_metric=e.get("drop_metric"),
        target_sizes=as_tuple(e.get("target_sizes", (50,))) or (),
        min_comparisons=e.get("min_comparisons", 10),
        full_alpha=e.get("full_alpha", 0.05),
        sd_sizes=as_tuple(e.get("sd_sizes")),
        sd_samples=e.get("sd_samples", 100),
        test_B=e.get("test_B", 1000),
        seed=cfg.seed,
        shard_pairs=shard_pairs,
    )
    study.plan(matrix)  # validate sizes against the collection before the run starts
    return study, matrix


def report_sections(tables: dict, run_dir: Any) -> list[str]:
    """Error-rate tables and plots for report.md."""
    from irsim.report.error_rates import error_rate_sections

    return error_rate_sections(tables, run_dir)
