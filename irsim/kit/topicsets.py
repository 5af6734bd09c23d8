"""Shared machinery of the topic-set studies (swap, error_rates, effort, reliability):
validation of the sampling parameters and the error-rate kernel of Sanderson & Zobel (2005).

:class:`PairErrors` is the kernel of :mod:`~irsim.experiments.error_rates` and, on scores
recomputed on pooled qrels, of :mod:`~irsim.experiments.effort`: each trial draws two topic
sets ``Q_i``, ``Q'_i`` (:func:`irsim.sampling.subsets.subset_indices`, one set of draws for
every pair); a comparison of a pair of systems is an *error* if its order on ``Q'_i``
differs from its order on ``Q_i`` (:func:`irsim.kit.bins.is_swap` with
``zero_swaps=True``). Comparisons are counted per bin of the difference on ``Q_i`` and per
condition: every comparison (``test="none"``) or those where a significance test on ``Q_i``
gives a p-value in a window ``lo < p <= hi``. Means of every system on every set are GEMMs
(:func:`irsim.sampling.subsets.set_means`); all counters are integers, so any split of the
pairs into shards gives the same tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Shard, shard_grid
from irsim.engine.partials import Count, Kind
from irsim.errors import ConfigError, param
from irsim.kit.bins import (
    ABSOLUTE,
    LAYOUTS,
    RELATIVE,
    BinLayout,
    is_swap,
    relative_difference,
)
from irsim.kit.common import (
    PAIR_UNIT,
    aligned_block,
    as_tuple,
    check_memory,
    check_unique,
    pair_index,
    unit_ranges,
)
from irsim.params import fingerprint
from irsim.rng import REPLICATE_BLOCK
from irsim.sampling.subsets import (
    check_scheme,
    check_subset_size,
    indices_to_set_counts,
    set_means,
    subset_indices,
)
from irsim.sampling.systems import DEFAULT_RULE, check_drop, kept_runs
from irsim.stats import get_test
from irsim.stats.ties import score_tolerance, snap_zero, tied_order

__all__ = ["ERROR_STREAM", "FULL_STREAM", "NO_TEST", "ErrorFields", "PairErrors",
           "PairErrorsStudy", "check_schemes",
           "check_sizes", "sampling_configs", "check_drop",
           "kept_systems", "compared_systems", "in_window", "rates", "set_block_bytes",
           "check_set_memory"]

#: Random stream of the two topic sets of the error-rate trials.
ERROR_STREAM = "error_rates/topics"
#: Random stream of the Monte Carlo tests on the full topic set.
FULL_STREAM = "error_rates/full"
#: Pseudo test of the unconditioned error rates.
NO_TEST = "none"


# -- parameters -------------------------------------------------------------------------------
def check_schemes(sampling: Any) -> tuple[str, ...]:
    """Validated sampling schemes from a parameter value (name or list; no repeats).

    Examples
    --------
    >>> check_schemes("disjoint,replacement".split(","))
    ('disjoint', 'replacement')
    """
    schemes = as_tuple(sampling)
    if not schemes:
        raise ConfigError(f"{param('sampling')} must name at least one scheme")
    return check_unique([check_scheme(s, param("sampling")) for s in schemes], param("sampling"))


def check_sizes(sizes: Any, key: str = "subset_sizes", *, required: bool = False
                ) -> tuple[int, ...] | None:
    """Validated topic-set sizes of parameter `key` (None stays None unless `required`:
    then at least one size must be given); a repeated size is refused.

    Examples
    --------
    >>> check_sizes([5, 10]), check_sizes(20)
    ((5, 10), (20,))
    >>> check_sizes([5, 10, 5])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.subset_sizes lists 5 twice (each value ...
    """
    sizes = as_tuple(sizes)
    if required and not sizes:
        raise ConfigError(f"{param(key)} must list at least one size")
    if sizes is None:
        return None
    out = []
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 1:
            raise ConfigError(f"{param(key)} must hold integers >= 1, got {s!r}")
        out.append(int(s))
    return check_unique(out, param(key))


def sampling_configs(schemes: Sequence[str], sizes: Sequence[int] | None, n: int, *,
                     sets: int = 2) -> tuple[tuple[str, int], ...]:
    """The (scheme, size) combinations of a study on `n` topics, validated.

    ``bootstrap`` always has size ``n`` (given sizes do not apply to it); ``sizes=None``
    means ``[n // 2]``.

    Examples
    --------
    >>> sampling_configs(["disjoint", "bootstrap"], [10, 20], 42)
    (('disjoint', 10), ('disjoint', 20), ('bootstrap', 42))
    >>> sampling_configs(["disjoint"], [22], 42)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.subset_sizes: 22 > n/2 = 21.0 for disjoint \
sampling of 2 sets from 42 topics
    """
    sizes = (n // 2,) if sizes is None else tuple(sizes)
    out: list[tuple[str, int]] = []
    for scheme in schemes:
        if scheme == "bootstrap":
            out.append((scheme, n))
            continue
        if not sizes:
            raise ConfigError(f"{param('subset_sizes')} must list at least one size")
        out += [(scheme, check_subset_size(scheme, n, s, sets=sets)) for s in sizes]
    return tuple(out)


def kept_systems(data: ScoreMatrix, drop_bottom: float, metric: str,
                 rule: str = DEFAULT_RULE) -> np.ndarray:
    """Indices (in order) of the systems left after dropping the bottom share by mean
    `metric` score (:func:`irsim.sampling.systems.kept_runs`, duplicates kept; `drop_bottom`
    and `rule` checked by :func:`irsim.sampling.systems.check_drop`): with `rule` ``"quantile"``
    (the default, Urbano's code) the systems whose mean is below the ``drop_bottom`` quantile
    of the means (R's type 7) go; with ``"count"``, ``floor(drop_bottom * systems)`` systems
    (ties: the earlier one first).

    Examples
    --------
    >>> m = ScoreMatrix(np.array([[[0.3], [0.1], [0.2], [0.4]]]), ["AP"], list("abcd"), ["1"])
    >>> kept_systems(m, 0.25, "AP").tolist(), kept_systems(m, 0.5, "AP").tolist()
    ([0, 2, 3], [0, 3])
    >>> kept_systems(m, 0.2, "AP").tolist(), kept_systems(m, 0.2, "AP", "count").tolist()
    ([0, 2, 3], [0, 1, 2, 3])
    """
    return np.flatnonzero(kept_runs(data.metric(metric), drop_bottom=drop_bottom, rule=rule))


def compared_systems(data: ScoreMatrix, drop_bottom: float, metric: str,
                     rule: str = DEFAULT_RULE) -> tuple[int, ...]:
    """:func:`kept_systems`, at least two of them, as a tuple of indices."""
    keep = kept_systems(data, drop_bottom, metric, rule)
    if len(keep) < 2:
        raise ConfigError(f"error rates need >= 2 systems, {len(keep)} left after "
                          f"{param('drop_bottom')}={drop_bottom} ({param('drop_rule')}={rule})")
    return tuple(keep.tolist())


def set_block_bytes(topics: int, sets: int = 2) -> int:
    """Working memory of one block of topic-set trials (drawn 250 at a time, however few
    the trials): the selection counts of every set over all `topics` (float64) and the
    temporaries of their means, about 5 copies (measured: 18 kB per topic in swap, 12 kB in
    error_rates, against 20 kB here).

    Examples
    --------
    >>> set_block_bytes(50), round(set_block_bytes(400_000) / 2**30, 2)
    (1000000, 7.45)
    """
    return 8 * 5 * REPLICATE_BLOCK * int(sets) * int(topics)


def check_set_memory(topics: int, what: str, *, sets: int = 2) -> None:
    """Refuse (:func:`irsim.kit.common.check_memory`) a study whose block of topic-set
    trials would not fit the memory budget.

    Examples
    --------
    >>> check_set_memory(50, "swap rates")
    >>> check_set_memory(400_000, "swap rates")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: swap rates (250 trials x 2 topic sets x 400000 topics ...
    """
    check_memory(set_block_bytes(topics, sets),
                 f"{what} ({REPLICATE_BLOCK} trials x {sets} topic sets x {topics} topics at "
                 f"once)", "the number of topics (trials are drawn 250 at a time)")


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


def rates(hits: np.ndarray, comps: np.ndarray) -> np.ndarray:
    """``hits / comps``, NaN where ``comps`` is 0.

    Examples
    --------
    >>> rates(np.array([1, 0]), np.array([4, 0])).tolist()
    [0.25, nan]
    """
    out = np.full(np.shape(comps), np.nan)
    np.divide(hits, comps, out=out, where=np.asarray(comps) > 0)
    return out


# -- the kernel -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ErrorFields:
    """The names of the counters :class:`PairErrors` keeps per bin layout `layout` (and,
    as :attr:`DEPENDENCY_ERRORS` and :attr:`DEPENDENCY_PAIRS`, of the dependency artefact's):
    the one place they are spelt. The kernel's :meth:`~PairErrors.fields` and
    :meth:`~PairErrors.count` and the studies' tables (``error_rates``, ``effort``) ask it.

    Examples
    --------
    >>> f = ErrorFields(RELATIVE)
    >>> f.comparisons, f.errors, f.full_pairs, f.full_significant
    ('relative_comparisons', 'relative_errors', 'full_relative_pairs', 'full_relative_significant')
    >>> ErrorFields.DEPENDENCY_ERRORS, ErrorFields.DEPENDENCY_PAIRS
    ('dependency_errors', 'dependency_pairs')
    """

    #: Per metric, configuration and trial rank, the errors of each pair's trials ranked
    #: by the difference on the first set.
    DEPENDENCY_ERRORS: ClassVar[str] = "dependency_errors"
    #: Per metric and configuration, the pairs ranked.
    DEPENDENCY_PAIRS: ClassVar[str] = "dependency_pairs"

    layout: BinLayout

    @property
    def comparisons(self) -> str:
        """Per metric, configuration, condition and bin: the comparisons."""
        return f"{self.layout.kind}_comparisons"

    @property
    def errors(self) -> str:
        """Per metric, configuration, condition and bin: the errors (swapped orders)."""
        return f"{self.layout.kind}_errors"

    @property
    def full_pairs(self) -> str:
        """Per metric and bin of the full-set difference: the pairs."""
        return f"full_{self.layout.kind}_pairs"

    @property
    def full_significant(self) -> str:
        """Per metric, test and bin of the full-set difference: the significant pairs."""
        return f"full_{self.layout.kind}_significant"


@dataclass(frozen=True)
class PairErrors:
    """Error-rate counters of system pairs over trials of two topic sets.

    Parameters
    ----------
    configs : tuple of (scheme, size)
        Sampling configurations (:func:`sampling_configs`).
    trials : int
        Trials per pair and configuration.
    tests : tuple of str
        Paired significance tests on the first set to condition on.
    windows : tuple of (lo, hi)
        p-value windows of the tests.
    full_alpha : float
        Level of the full-topic-set significance counters.
    test_B : int
        Resamples of the Monte Carlo tests.
    seed : int
        Global seed.
    extras : bool
        Also count the full-topic-set significance and the dependency artefact (fields
        ``full_*`` and ``dependency_*``).

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> x = synthetic_scores(systems=5, topics=20, seed=1).matrix.values[0]
    >>> k = PairErrors(configs=(("disjoint", 5),), trials=8, extras=False)
    >>> out = k.count((0, 10), [x], 20)
    >>> int(out["absolute_comparisons"].sum())       # 10 pairs x 8 trials
    80
    >>> sorted(k.fields(1)) == sorted(out)
    True
    """

    configs: tuple[tuple[str, int], ...]
    trials: int
    tests: tuple[str, ...] = ()
    windows: tuple[tuple[float, float], ...] = ()
    full_alpha: float = 0.05
    test_B: int = 1000
    seed: int = 0
    extras: bool = True

    def conditions(self) -> list[tuple[str, float, float]]:
        """(test, p_lo, p_hi) of every row family: ``("none", 0, 1)`` first."""
        return [(NO_TEST, 0.0, 1.0)] + [(t, lo, hi) for t in self.tests
                                        for lo, hi in self.windows]

    def plan(self, n_systems: int, shard_items: int) -> list[Shard]:
        """Pair blocks; every shard holds all trials of its pairs (the dependency table
        ranks a pair's trials)."""
        return shard_grid(n_systems * (n_systems - 1) // 2,
                          aligned_block(shard_items, PAIR_UNIT), self.trials, self.trials)

    def working_bytes(self, systems: int) -> float:
        """Working memory of :meth:`count`: the topic-set draws of every trial and
        configuration at once (two sets of int64 indices), and per configuration the set
        means of every system and trial with their gathered copies.

        Examples
        --------
        >>> e = PairErrors(configs=(("disjoint", 5),), trials=1000, tests=(), windows=(),
        ...                full_alpha=0.05, test_B=1000, seed=0)
        >>> e.working_bytes(10)
        720000.0
        """
        draws = sum(2 * 8.0 * size for _, size in self.configs)
        return float(self.trials) * (draws + 4 * 2 * 8.0 * systems)

    def fields(self, n_metrics: int) -> dict[str, Kind]:
        """The integer counters :meth:`count` returns, summed over shards."""
        nm, nk, nw, nt = n_metrics, len(self.configs), len(self.conditions()), len(self.tests)
        out: dict[str, Kind] = {}
        for lay in LAYOUTS:
            f = ErrorFields(lay)
            out[f.comparisons] = Count((nm, nk, nw, lay.count))
            out[f.errors] = Count((nm, nk, nw, lay.count))
            if self.extras:
                out[f.full_pairs] = Count((nm, lay.count))
                out[f.full_significant] = Count((nm, nt, lay.count))
        if self.extras:
            out[ErrorFields.DEPENDENCY_ERRORS] = Count((nm, nk, self.trials))
            out[ErrorFields.DEPENDENCY_PAIRS] = Count((nm, nk))
        return out

    def _pvalues(self, test: str, z: np.ndarray, stream: str) -> np.ndarray:
        """Two-sided p-values of `test` for every row of differences `z` (rows, n)."""
        spec = get_test(test)
        opts: dict[str, Any] = {}
        if spec.monte_carlo:
            opts = {"B": self.test_B, "seed": self.seed, "study": f"{stream}/{test}"}
        return np.asarray(spec.function(z, **opts).pvalue, dtype=np.float64)

    def count(self, items: tuple[int, int], xs: Sequence[np.ndarray], n: int
              ) -> dict[str, np.ndarray]:
        """Counters of the pairs ``items`` (a range of :func:`pair_index`) over all trials.

        `xs`: per metric, the (systems, n) scores of the compared systems (C-contiguous).
        """
        configs, conds = self.configs, self.conditions()
        tols = [score_tolerance(x) for x in xs]
        ia, ib = pair_index(len(xs[0]))
        units = unit_ranges(*items, PAIR_UNIT)
        trial_units = unit_ranges(0, self.trials, REPLICATE_BLOCK)
        out = {name: kind.zero() for name, kind in self.fields(len(xs)).items()}

        draws = [[subset_indices(scheme, self.seed, ERROR_STREAM, n, size, t0, t1)
                  for t0, t1 in trial_units] for scheme, size in configs]
        for mi, x in enumerate(xs):
            tol = tols[mi]
            if self.extras:
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
        return out

    def _full_set(self, out: dict, mi: int, z: np.ndarray, ma: np.ndarray, mb: np.ndarray,
                  tol: float) -> None:
        """Full-topic-set significance per bin of the full-set difference."""
        d = snap_zero(ma - mb, tol)
        absd = np.abs(d)
        bins = {ABSOLUTE.kind: ABSOLUTE.index(absd),
                RELATIVE.kind: RELATIVE.index(relative_difference(ma, mb, absd))}
        for lay in LAYOUTS:
            out[ErrorFields(lay).full_pairs][mi] += np.bincount(bins[lay.kind],
                                                                minlength=lay.count)
        for ti, test in enumerate(self.tests):
            sig = self._pvalues(test, z, FULL_STREAM) <= self.full_alpha
            for lay in LAYOUTS:
                out[ErrorFields(lay).full_significant][mi, ti] += np.bincount(
                    bins[lay.kind][sig], minlength=lay.count)

    def _trials(self, out: dict, mi: int, k: int, ma: np.ndarray, mb: np.ndarray,
                z: np.ndarray, draws: list[np.ndarray], size: int, tol: float,
                conds: list[tuple[str, float, float]]) -> None:
        """Counters of one pair unit over all trials (ma, mb: (2, pairs, trials))."""
        d = snap_zero(ma[0] - mb[0], tol)
        d2 = snap_zero(ma[1] - mb[1], tol)
        err = is_swap(d, d2, zero_swaps=True)
        absd = np.abs(d)
        bins = {ABSOLUTE.kind: ABSOLUTE.index(absd),
                RELATIVE.kind: RELATIVE.index(relative_difference(ma[0], mb[0], absd))}
        pvals: dict[str, np.ndarray] = {}
        for test in self.tests:  # on the first set of every trial: gathered (pairs, trials, c)
            parts = []
            for idx in draws:
                g = np.take(z, idx[:, 0], axis=1)
                parts.append(self._pvalues(test, g.reshape(-1, size), ERROR_STREAM)
                             .reshape(g.shape[:2]))
            pvals[test] = np.concatenate(parts, axis=1)
        for w, (test, lo, hi) in enumerate(conds):
            mask = np.ones(d.shape, bool) if test == NO_TEST else in_window(pvals[test], lo, hi)
            for lay in LAYOUTS:
                f = ErrorFields(lay)
                out[f.comparisons][mi, k, w] += np.bincount(bins[lay.kind][mask],
                                                            minlength=lay.count)
                out[f.errors][mi, k, w] += np.bincount(bins[lay.kind][mask & err],
                                                       minlength=lay.count)
        if self.extras:  # dependency artefact: each pair's trials ranked by |d| on the first set
            order = tied_order(absd, tol)
            out[ErrorFields.DEPENDENCY_ERRORS][mi, k] += np.take_along_axis(
                err, order, axis=1).sum(axis=0)
            out[ErrorFields.DEPENDENCY_PAIRS][mi, k] += len(d)

    def rate_columns(self, merged: dict[str, np.ndarray], metrics: Sequence[str]
                     ) -> dict[str, list]:
        """The columns of the ``error_rates`` table from the merged counters."""
        names = ("metric", "sampling", "subset_size", "bin_kind", "bin_lo", "bin_hi", "test",
                 "p_lo", "p_hi", "comparisons", "errors", "error_rate")
        cols: dict[str, list] = {c: [] for c in names}
        for mi, metric in enumerate(metrics):
            for k, (scheme, size) in enumerate(self.configs):
                for w, (test, lo, hi) in enumerate(self.conditions()):
                    for lay in LAYOUTS:
                        f = ErrorFields(lay)
                        comps, errs = merged[f.comparisons][mi, k, w], merged[f.errors][mi, k, w]
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
                        cols["error_rate"] += rates(errs, comps).tolist()
        return cols


class PairErrorsStudy:
    """What the studies counted by a :class:`PairErrors` kernel over the pairs of their
    ``systems`` share (``experiment=error_rates`` and ``experiment=effort``): the plan (pair
    blocks, all trials in each) and the fingerprint (the study's ``CONFIG`` fields, with the
    systems compared and the kernel's options, which build the error tables, as derived
    values).

    A subclass is a frozen dataclass with the fields ``systems``, ``errors`` and
    ``shard_items`` and sets ``CONFIG`` to its ``Config``.
    """

    CONFIG: ClassVar[type]
    systems: tuple[int, ...]
    errors: PairErrors
    shard_items: int

    def plan_pairs(self) -> list[Shard]:
        """Pair blocks of ``shard_items`` pairs; every shard holds all trials of its pairs."""
        return self.errors.plan(len(self.systems), self.shard_items)

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from ``CONFIG``,
        :func:`irsim.params.fingerprint`; the options that build the error tables through
        the systems compared and the kernel)."""
        return fingerprint(self, self.CONFIG, derived={"systems": self.systems,
                                                       "errors": self.errors})
