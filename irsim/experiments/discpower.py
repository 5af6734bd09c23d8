"""Discriminative power and the other bootstrap methods of Sakai (SIGIR 2006).

One run of ``experiment=discpower`` computes, for every metric and every system pair, the
whole method set of METHODS.md section 3:

- the achieved significance level (ASL) of the paired studentised bootstrap test, the
  unpaired bootstrap test, the paired t test and the randomised Tukey HSD test (selectable);
  discriminative power (share of pairs with ASL < alpha) and the estimated difference
  required for ASL < alpha (rounded to two significant figures, and raw) -> tables ``asl``
  and ``discpower``;
- G-metrics (``gmean``): ``AG <metric>`` is the metric's per-topic ``log(x + 1e-5)`` with the
  tests of arithmetic means (paired bootstrap, t, randomised Tukey HSD), and ``G <metric>``
  the geometric mean ``exp(mean(log(x + 1e-5)))`` with the unpaired bootstrap test, which
  needs no per-topic decomposition (Sakai 2006, Sections 3.1-3.2);
- stability (minority rate, proportion of ties) for a list of fuzziness values, on the
  paired test's bootstrap samples ``Q*b`` (:mod:`irsim.experiments.stability`) -> ``stability``;
- the bootstrap swap method on ``Q*b`` and a second independent set ``Q'*b``
  (:mod:`irsim.experiments.bootswap`) -> ``swap_rates`` and ``swap_summary``;
- Kendall's tau between the system rankings of every pair of metrics with the Z0 test and
  the bootstrap standard error over ``Q*b`` (:mod:`irsim.experiments.rankcorr`) -> ``rankcorr``.

Stability, swap and rank correlation use the metrics that have a value on a topic sample:
``<metric>`` (arithmetic mean) and ``G <metric>``; ``AG <metric>`` ranks systems exactly as
``G <metric>`` does.

Tables (ARCHITECTURE.md contract; extra columns after the contracted ones):

- ``asl``: metric, test, system_a, system_b, diff (mean difference; for ``G`` metrics the
  difference of geometric means; for ``AG`` the mean difference of the logs), asl.
- ``discpower``: metric, test, alpha, pairs, significant, sensitivity, estimated_diff
  (two significant figures) + ``estimated_diff_raw``. The estimated difference is Sakai's
  for the bootstrap tests; for ``t`` the smallest mean difference significant at alpha
  given a pair's sd, max over pairs; for randomised Tukey HSD the ``ceil(alpha B)``-th
  largest null range (the same for every pair).
- ``stability``: metric, fuzziness, minority_rate, prop_ties + ``minority``, ``ties``
  (integer numerators) and ``comparisons`` (``|C| B``).
- ``swap_rates``: metric, sampling (``bootstrap``), subset_size (n), bin_kind
  (``absolute``), bin_lo, bin_hi, comparisons, swaps, swap_rate (NaN for an empty bin).
- ``swap_summary``: metric, sampling, subset_size, confidence, required_diff,
  max_performance, relative_diff, sensitivity, mean_unique_topics, mean_overlap +
  ``comparisons``, ``comparisons_above``.
- ``rankcorr``: metric_a, metric_b, tau (tau-b: tau-a without tied systems), se_boot, z0,
  p_value + ``systems``, ``tau_boot_mean``, ``replicates``.

Determinism: one set of bootstrap samples (``discpower/paired``) serves every pair, metric
and method, as in the paper; the unpaired test, the swap method and randomised Tukey HSD have
their own streams (``discpower/unpaired``, ``discpower/swap2``, ``discpower/tukey``). Draws
are keyed by replicate block. Kernels work in fixed units of 256 pairs (aligned to the global
pair index) x 250 replicates, so every GEMM sees the same operands whatever the shard sizes,
and partial results are integer counters, per-replicate values or mergeable top-k lists:
the tables are bit-identical for any sharding and executor. Differences of resampled means
that are 0 in exact arithmetic (equal per-topic scores on the sampled topics) are set to 0
within :data:`~irsim.stats.resample.TIE_RTOL` (:func:`sample_differences`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard, shard_grid
from irsim.errors import ConfigError, InputError, unknown_name
from irsim.experiments.bins import ABSOLUTE
from irsim.experiments.bootswap import (
    SWAP_STREAM,
    check_confidences,
    swap_counts,
    swap_tables,
    topic_overlap,
)
from irsim.experiments.common import (
    PAIR_UNIT,
    aligned_block,
    check_alphas,
    check_positive_int,
    pair_index,
    resolve_metrics,
    round_sig,
    topk_rows,
    unit_ranges,
)
from irsim.experiments.rankcorr import (
    concordance,
    kendall_tau,
    pair_signs,
    rankcorr_table,
    ties,
)
from irsim.experiments.stability import (
    DEFAULT_FUZZINESS,
    check_fuzziness,
    stability_counts,
    stability_table,
)
from irsim.sampling.permutations import topic_permutations
from irsim.sampling.rng import REPLICATE_BLOCK
from irsim.sampling.topics import bootstrap_counts, bootstrap_indices, indices_to_counts
from irsim.stats.resample import TIE_RTOL, ZERO_VAR_RTOL, studentized_t
from irsim.stats.ties import count_extreme, tie_tolerance

__all__ = ["DiscPower", "Variant", "TESTS", "PAIRED_STREAM", "UNPAIRED_STREAM",
           "SWAP_STREAM", "TUKEY_STREAM", "GMEAN_EPS", "sample_differences", "log_scores",
           "gmean_scores", "exact_split", "paired_unit", "count_t", "unpaired_weights",
           "unpaired_unit", "tukey_ranges"]

#: Tests this study runs, by config name.
TESTS = ("paired_bootstrap", "unpaired_bootstrap", "t", "randomised_tukey_hsd")
_RESAMPLED = ("paired_bootstrap", "unpaired_bootstrap", "randomised_tukey_hsd")
#: Bytes the reducer may spend on the per-pair top-k of the estimated difference.
TOPK_BUDGET = 2 * 2**30
PAIRED_STREAM = "discpower/paired"
UNPAIRED_STREAM = "discpower/unpaired"
TUKEY_STREAM = "discpower/tukey"
#: The constant of Sakai's geometric mean ``exp(mean(log(x + 1e-5)))``.
GMEAN_EPS = 1e-5
#: Bytes of one gather of randomised Tukey HSD trials (trials x topics x systems).
_TUKEY_BYTES = 32 * 2**20
_NO_INDEX = np.iinfo(np.int64).max
#: Resamples whose variance is below this share of their mean square get their sum of
#: differences recomputed directly before the constant-resample rule (see paired_unit).
_NEAR_CONSTANT = 1e-4
#: Replicate units whose top-k candidates are selected together (1000 replicates).
_CHUNK_UNITS = 4
#: Bytes of per-pair centred differences a shard may keep across its replicate units.
_KEEP_BYTES = 64 * 2**20


# ---------------------------------------------------------------------------------- kernels
def log_scores(x: np.ndarray) -> np.ndarray:
    """Per-topic ``log(x + 1e-5)`` (Sakai's AG scores).

    Examples
    --------
    >>> np.round(log_scores(np.array([0.0, 1.0])), 4).tolist()
    [-11.5129, 0.0]
    """
    return np.log(np.asarray(x, np.float64) + GMEAN_EPS)


def gmean_scores(x: np.ndarray) -> np.ndarray:
    """Sakai's geometric mean ``exp(mean(log(x + 1e-5)))`` along the last axis.

    Examples
    --------
    >>> round(float(gmean_scores(np.array([0.1, 0.4]))), 6)
    0.200012
    """
    return np.exp(log_scores(x).mean(axis=-1))


def sample_differences(s: np.ndarray, ia: np.ndarray, ib: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Pair differences of per-sample system scores, exact ties set to 0.

    Parameters
    ----------
    s : ndarray, shape (systems, samples)
        ``M(X, Q*b)`` of every system on every sample.
    ia, ib : ndarray of int, shape (pairs,)
        The two systems of each pair.

    Returns
    -------
    d : ndarray, shape (pairs, samples)
        ``M(A, Q*b) - M(B, Q*b)``, 0 where ``|d| <= TIE_RTOL * max(|M(A)|, |M(B)|)`` (a
        difference that is 0 in exact arithmetic comes out of a GEMM as rounding noise).
    top : ndarray, shape (pairs, samples)
        ``max(M(A, Q*b), M(B, Q*b))``.

    Examples
    --------
    >>> s = np.array([[0.3, 0.1 + 0.2], [0.1 + 0.2, 0.25]])
    >>> d, top = sample_differences(s, np.array([0]), np.array([1]))
    >>> np.round(d, 12).tolist(), np.round(top, 12).tolist()
    ([[0.0, 0.05]], [[0.3, 0.3]])
    """
    sa, sb = s[ia], s[ib]
    d = sa - sb
    d[np.abs(d) <= TIE_RTOL * np.maximum(np.abs(sa), np.abs(sb))] = 0.0
    return d, np.maximum(sa, sb)


def exact_split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split scores into ``hi + lo`` with ``hi`` on a grid of 2^20 steps of the largest
    magnitude, so that ``hi @ counts`` is exact in float64 (every partial sum of a count
    matrix times ``hi`` is a representable multiple of the step) and ``lo`` is tiny.

    Per-system resampled sums then give pair differences of sums without cancellation
    error: ``S_hi[a] - S_hi[b]`` is exact and ``S_lo[a] - S_lo[b]`` is ~2^-20 smaller.

    Examples
    --------
    >>> hi, lo = exact_split(np.array([0.1, 0.7, 1.0 / 3]))
    >>> bool((hi + lo == np.array([0.1, 0.7, 1.0 / 3])).all()), float(np.abs(lo).max()) < 1e-6
    (True, True)
    """
    x = np.asarray(x, np.float64)
    top = float(np.abs(x).max()) if x.size else 0.0
    if top == 0.0:
        return x.copy(), np.zeros_like(x)
    step = 2.0 ** (math.frexp(top)[1] - 20)
    hi = np.round(x / step) * step
    return hi, x - hi


def paired_unit(w: np.ndarray, w_sq: np.ndarray, ct: np.ndarray, s1: np.ndarray
                ) -> np.ndarray:
    """``p = s2 / s1^2`` of the paired studentised bootstrap for a block of pairs x
    samples: the smaller `p`, the larger ``|t(w*b)|``.

    With ``s1``, ``s2`` the resampled sums of ``w`` and ``w^2``,
    ``t*^2 = (n-1) s1^2 / (n s2 - s1^2) = (n-1) / (n p - 1)``: one division per replicate
    orders and counts replicates as ``|t*|`` does. ``t* = 0`` (``s1 = 0``, or a constant
    resample: variance at most :data:`~irsim.stats.resample.ZERO_VAR_RTOL` of the mean
    square, i.e. ``n s2 - s1^2 <= rtol (n-1) s2``) gives ``p = inf``.

    ``s2`` is a GEMM; ``s1`` comes in precomputed (from per-system sums, see
    :func:`exact_split`), accurate to ~1e-16 of the scores. Where the variance is within
    1e-4 of the mean square (rare: nearly constant resamples, where that error could
    decide "constant"), ``s1`` is recomputed directly from ``w`` so that the rule sees the
    same sums as the per-pair GEMM of :mod:`irsim.stats.resample`.

    Parameters
    ----------
    w, w_sq : ndarray, shape (pairs, n)
        Centred differences and their squares.
    ct : ndarray, shape (n, samples)
        Transposed count matrix of the bootstrap samples.
    s1 : ndarray, shape (pairs, samples)
        ``w @ ct`` (modified in place where recomputed).

    Returns
    -------
    ndarray, shape (pairs, samples)

    Examples
    --------
    >>> w = np.array([[0.1, -0.1, 0.3, -0.3]])
    >>> ct = np.array([[1., 1., 1., 1.], [2., 0., 2., 0.], [4., 0., 0., 0.]]).T
    >>> p = paired_unit(w, w * w, ct, w @ ct)
    >>> with np.errstate(divide="ignore"):
    ...     np.round(np.sqrt(3 / (4 * p - 1)), 4).tolist()   # |t*|
    [[0.0, 3.4641, 0.0]]
    """
    n = ct.shape[0]
    p = w_sq @ ct  # s2, then s2 / s1^2 in place
    with np.errstate(divide="ignore", invalid="ignore"):
        p /= s1 * s1
    # nearly constant: n s2 - s1^2 <= c s2 with c = 1e-4 (n-1), i.e. p <= 1 / (n - c);
    # 0/0 (a resample of zeros) is NaN: min() propagates it, and NaN > x is False
    c = _NEAR_CONSTANT * (n - 1)
    limit = 1.0 / (n - c) * (1 + 1e-6)
    if not p.min() > limit:
        pos, b = np.nonzero(~(p > limit))
        s2 = np.einsum("ij,ji->i", w_sq[pos], ct[:, b])
        s1[pos, b] = np.einsum("ij,ji->i", w[pos], ct[:, b])
        sq = s1[pos, b] * s1[pos, b]
        const = (s2 * n - sq <= s2 * (ZERO_VAR_RTOL * (n - 1))) | (sq == 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            p[pos, b] = np.where(const, np.inf, s2 / sq)
    return p


def count_t(p: np.ndarray, t_obs: np.ndarray, n: int) -> np.ndarray:
    """Per row, replicates with ``|t*| >= |t_obs|`` (ties within
    :func:`~irsim.stats.ties.tie_tolerance` of a t statistic, scale 1), from
    ``p = s2 / s1^2`` of :func:`paired_unit`; `n` is the number of topics.

    Equal to :func:`~irsim.stats.ties.count_extreme` on ``|t*|`` (two-sided, scale 1):
    ``|t*| >= a`` iff ``p <= (1 + (n-1) / a^2) / n``.

    Examples
    --------
    >>> t = np.array([[2.0, 1.0, 0.0], [1.0, 0.0, 0.0]])     # |t*|, n = 5
    >>> with np.errstate(divide="ignore"):
    ...     p = (1 + 4 / t ** 2) / 5
    >>> count_t(p, np.array([2.0, 0.0]), 5).tolist()
    [1, 3]
    """
    a = np.abs(t_obs) - tie_tolerance(t_obs, 1.0)
    with np.errstate(divide="ignore"):
        limit = (1.0 + (n - 1) / (a * a)) / n
    hit = np.count_nonzero(p <= limit[:, None], axis=1)
    return np.where(a > 0, hit, p.shape[1]).astype(np.int64)


def unpaired_weights(first: np.ndarray, second: np.ndarray, summary: str) -> np.ndarray:
    """Weights that turn per-system GEMMs into unpaired bootstrap replicates.

    Sample ``b`` of the unpaired test draws ``n + n`` positions of ``v = concat(x, y)``;
    ``first`` / ``second`` count the positions of its first and last n draws. The first n
    positions of ``v`` are system X's topics, the last n system Y's, so
    ``M(x*b)`` needs ``x @ first[:, :n] + y @ first[:, n:]`` (over n): a sum of one row of
    ``X @ W`` for each system, computed once for all systems instead of once per pair.

    Parameters
    ----------
    first, second : ndarray, shape (samples, 2n)
    summary : {"mean", "gmean"}

    Returns
    -------
    ndarray, shape (n, 2 * samples) for ``mean`` (blocks: X part and Y part of
    ``first - second``), (n, 4 * samples) for ``gmean`` (blocks: X and Y parts of first,
    then of second); all divided by n.

    Examples
    --------
    >>> first = np.array([[1., 0., 0., 1.]])   # x* = (x1, y2)
    >>> second = np.array([[1., 1., 0., 0.]])  # y* = (x1, x2)
    >>> unpaired_weights(first, second, "mean").tolist()
    [[0.0, 0.0], [-0.5, 0.5]]
    """
    n = first.shape[1] // 2
    if summary == "mean":
        diff = first - second
        blocks = [diff[:, :n], diff[:, n:]]
    else:
        blocks = [first[:, :n], first[:, n:], second[:, :n], second[:, n:]]
    return np.ascontiguousarray(np.concatenate(blocks).T) / n


def unpaired_unit(parts: np.ndarray, ia: np.ndarray, ib: np.ndarray, summary: str
                  ) -> np.ndarray:
    """Unpaired bootstrap replicates ``M(x*b) - M(y*b)`` of a block of pairs.

    Parameters
    ----------
    parts : ndarray, shape (systems, 2 * samples) or (systems, 4 * samples)
        ``values @ unpaired_weights(...)`` for every system, where `values` are the scores
        (``mean``) or ``log(x + 1e-5)`` (``gmean``).
    ia, ib : ndarray of int, shape (pairs,)
        Systems X and Y of each pair.
    summary : {"mean", "gmean"}

    Returns
    -------
    ndarray, shape (pairs, samples)

    Examples
    --------
    >>> x = np.array([[0.1, 0.3], [0.2, 0.0]])       # two systems, two topics
    >>> first = np.array([[1., 0., 0., 1.]])          # x* = (0.1, 0.0)
    >>> second = np.array([[1., 1., 0., 0.]])         # y* = (0.1, 0.3)
    >>> parts = x @ unpaired_weights(first, second, "mean")
    >>> np.round(unpaired_unit(parts, np.array([0]), np.array([1]), "mean"), 6).tolist()
    [[-0.15]]
    """
    if summary == "mean":
        r = parts.shape[1] // 2
        return parts[ia, :r] + parts[ib, r:]
    r = parts.shape[1] // 4
    gx = np.exp(parts[ia, :r] + parts[ib, r:2 * r])
    gy = np.exp(parts[ia, 2 * r:3 * r] + parts[ib, 3 * r:])
    return np.subtract(gx, gy, out=gx)


def tukey_ranges(st: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """``max - min`` of the system means of permuted score matrices (randomised Tukey HSD).

    Parameters
    ----------
    st : ndarray, shape (topics, systems)
        Scores, transposed.
    perm : ndarray of int, shape (trials, topics, systems)
        Per-topic permutations of the systems
        (:func:`~irsim.sampling.permutations.topic_permutations`).

    Returns
    -------
    ndarray, shape (trials,)
        Equal, trial by trial, to :func:`irsim.stats.randomised_tukey_hsd`'s null ranges.

    Examples
    --------
    >>> st = np.array([[0.1, 0.5], [0.2, 0.4]])
    >>> perm = np.array([[[0, 1], [0, 1]], [[1, 0], [0, 1]]])
    >>> np.round(tukey_ranges(st, perm), 6).tolist()
    [0.3, 0.1]
    """
    topic = np.arange(st.shape[0])[None, :, None]
    per = max(1, _TUKEY_BYTES // max(1, 8 * st.size))
    out = np.empty(len(perm))
    for a in range(0, len(perm), per):  # memory chunks of trials (the sums are per trial)
        pm = st[topic, perm[a:a + per]].mean(axis=1)
        out[a:a + per] = pm.max(axis=-1) - pm.min(axis=-1)
    return out


# ---------------------------------------------------------------------------------- study
@dataclass(frozen=True)
class Variant:
    """One row label of the tables: a metric as a summary of per-topic scores.

    Attributes
    ----------
    name : str
        ``AP``, ``AG AP`` or ``G AP``.
    metric : str
        The metric of the score matrix.
    kind : {"mean", "ag", "g"}
        Arithmetic mean of the scores, arithmetic mean of ``log(x + 1e-5)``, geometric mean.
    tests : tuple of str
        The tests run on it.
    """

    name: str
    metric: str
    kind: str
    tests: tuple[str, ...]

    @property
    def sampled(self) -> bool:
        """Whether stability, swap and rank correlation use it (``AG`` ranks as ``G``)."""
        return self.kind != "ag"


@dataclass(frozen=True)
class DiscPower:
    """The discriminative-power study with Sakai's (2006) companion methods.

    Parameters
    ----------
    metrics : sequence of str
        Metrics of the score matrix to study (default: all).
    tests : sequence of str
        Any of ``paired_bootstrap``, ``unpaired_bootstrap``, ``t``, ``randomised_tukey_hsd``.
    B : int
        Bootstrap samples (and randomised Tukey HSD trials, and swap-method samples per set).
    alphas : sequence of float
        Significance levels for discriminative power and the estimated difference.
    seed : int
        Global seed.
    pvalue : {"count", "plus_one"}
        ASL as ``count/B`` (Sakai) or ``(count+1)/(B+1)``.
    gmean : bool
        Add ``AG <metric>`` (paired-type tests on ``log(x + 1e-5)``) and ``G <metric>``
        (unpaired test of the geometric mean) for every metric.
    stability : bool
        Compute the ``stability`` table (minority rate, proportion of ties).
    fuzziness : sequence of float
        Fuzziness values of the stability method (default 0.01 .. 0.20).
    swap : bool
        Compute the bootstrap swap method (``swap_rates``, ``swap_summary``).
    swap_confidence : sequence of float
        Confidence levels of the swap method's required difference (Sakai: 0.95).
    estimated_diff : bool
        Compute the estimated difference required (default). It keeps the
        ``ceil(max(alpha) * B)`` largest replicates of every pair, 24 bytes each per test and
        metric; a study whose top-k state would exceed :data:`TOPK_BUDGET` bytes is refused
        (turn this off for very large B: ASLs and all other tables stay exact).
    rankcorr : bool
        Compute Kendall's tau between the system rankings of every pair of metrics.
    shard_pairs : int
        Pairs per shard (rounded up to a multiple of 256).
    shard_replicates : int
        Bootstrap samples per shard (rounded up to a multiple of 250). Neither size changes
        any result; memory per kernel step is bounded by the fixed 256 x 250 units.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=6, topics=20, seed=1).matrix
    >>> tables, info = run_study(DiscPower(B=200, seed=3), m)
    >>> tables["asl"].num_rows            # 15 pairs x 2 tests
    30
    >>> sorted(tables["discpower"].column_names)[:3]
    ['alpha', 'estimated_diff', 'estimated_diff_raw']
    >>> study = DiscPower(B=250, seed=3, gmean=True, stability=True, fuzziness=[0.05],
    ...                   swap=True, rankcorr=True)
    >>> tables, _ = run_study(study, m)
    >>> sorted(tables)
    ['asl', 'discpower', 'rankcorr', 'stability', 'swap_rates', 'swap_summary']
    >>> tables["stability"].column("metric").to_pylist()
    ['synthetic', 'G synthetic']
    >>> tables["rankcorr"].select(["metric_a", "metric_b"]).to_pylist()
    [{'metric_a': 'synthetic', 'metric_b': 'G synthetic'}]
    """

    metrics: tuple[str, ...] | None = None
    tests: tuple[str, ...] = ("paired_bootstrap", "unpaired_bootstrap")
    B: int = 1000
    alphas: tuple[float, ...] = (0.01, 0.05)
    seed: int = 0
    pvalue: str = "count"
    gmean: bool = False
    stability: bool = False
    fuzziness: tuple[float, ...] = DEFAULT_FUZZINESS
    swap: bool = False
    swap_confidence: tuple[float, ...] = (0.95,)
    rankcorr: bool = False
    estimated_diff: bool = True
    shard_pairs: int = 4096
    shard_replicates: int = 1000
    name: str = field(default="discpower", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tests", tuple(self.tests))
        for t in self.tests:
            if t not in TESTS:
                raise unknown_name("test for experiment=discpower", t, TESTS)
        if not self.tests:
            raise ConfigError("experiment.tests must list at least one test")
        if len(set(self.tests)) != len(self.tests):
            raise ConfigError(f"experiment.tests lists a test twice: {list(self.tests)}")
        if self.metrics is not None:
            object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "B", check_positive_int(self.B, "experiment.B"))
        object.__setattr__(self, "alphas", check_alphas(self.alphas))
        object.__setattr__(self, "fuzziness", check_fuzziness(self.fuzziness))
        object.__setattr__(self, "swap_confidence", check_confidences(self.swap_confidence))
        for flag in ("gmean", "stability", "swap", "rankcorr", "estimated_diff"):
            value = getattr(self, flag)
            if not isinstance(value, (bool, np.bool_)):
                raise ConfigError(f"experiment.{flag} must be true or false, got {value!r}")
            object.__setattr__(self, flag, bool(value))
        check_positive_int(self.shard_replicates, "engine.shard_replicates")
        check_positive_int(self.shard_pairs, "engine.shard_pairs")
        if self.pvalue not in ("count", "plus_one"):
            raise ConfigError(f"experiment.pvalue must be 'count' or 'plus_one', got "
                              f"{self.pvalue!r}")

    # -- plan ---------------------------------------------------------------------------
    @property
    def k(self) -> int:
        """How many of the largest replicates per pair the estimated difference needs."""
        return max(1, math.ceil(max(self.alphas) * self.B - 1e-9))

    @property
    def sampled_methods(self) -> bool:
        """Whether any of stability, swap, rankcorr is on."""
        return self.stability or self.swap or self.rankcorr

    def _metrics(self, data: ScoreMatrix) -> tuple[str, ...]:
        return resolve_metrics(self.metrics, data.metrics)

    def variants(self, data: ScoreMatrix) -> tuple[Variant, ...]:
        """The metrics of the tables: every metric, then ``AG`` and ``G`` ones if gmean."""
        metrics = self._metrics(data)
        out = [Variant(m, m, "mean", self.tests) for m in metrics]
        if self.gmean:
            ag = tuple(t for t in self.tests if t != "unpaired_bootstrap")
            g = tuple(t for t in self.tests if t == "unpaired_bootstrap")
            out += [Variant(f"AG {m}", m, "ag", ag) for m in metrics]
            out += [Variant(f"G {m}", m, "g", g) for m in metrics]
        names = [v.name for v in out]
        if len(set(names)) != len(names):
            raise ConfigError(f"metric names collide with the G-metric names: {names}")
        return tuple(out)

    def _resampled(self, data: ScoreMatrix) -> bool:
        tests = {t for v in self.variants(data) for t in v.tests}
        return bool(tests & set(_RESAMPLED)) or self.sampled_methods

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Pair blocks x replicate blocks."""
        n_sys = len(data.systems)
        if n_sys < 2:
            raise ConfigError(f"discriminative power needs >= 2 systems, got {n_sys}")
        if len(data.topics) < 2:
            raise ConfigError(f"discriminative power needs >= 2 topics, got {len(data.topics)}")
        variants = self.variants(data)
        if self.estimated_diff:
            n_pairs = n_sys * (n_sys - 1) // 2
            lists = len(variants) * sum(t in ("paired_bootstrap", "unpaired_bootstrap")
                                        for t in self.tests)
            need = 24 * n_pairs * self.k * max(lists, 1)
            if need > TOPK_BUDGET:
                raise ConfigError(
                    f"the estimated difference needs the {self.k} largest replicates of each "
                    f"of {n_pairs} pairs ({need / 2**30:.1f} GiB, over the "
                    f"{TOPK_BUDGET / 2**30:.0f} GiB budget); set "
                    f"experiment.estimated_diff=false (ASLs stay exact) or lower B or alpha")
        if self.gmean:
            for m in self._metrics(data):
                if float(data.metric(m).min()) < 0:
                    raise InputError(f"G-metrics need scores >= 0, metric {m} has "
                                     f"{float(data.metric(m).min())}",
                                     file=data.source or "score matrix")
        if self.rankcorr and sum(v.sampled for v in variants) < 2:
            raise ConfigError("experiment.rankcorr needs at least two metrics (or "
                              "experiment.gmean=true)")
        n_pairs = n_sys * (n_sys - 1) // 2
        return shard_grid(n_pairs, aligned_block(self.shard_pairs, PAIR_UNIT),
                          self.B if self._resampled(data) else 0,
                          aligned_block(self.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        return {k: getattr(self, k) for k in (
            "metrics", "tests", "B", "alphas", "seed", "pvalue", "gmean", "stability",
            "fuzziness", "swap", "swap_confidence", "rankcorr", "estimated_diff")}

    # -- kernel -------------------------------------------------------------------------
    def kernel(self, shard: Shard, data: ScoreMatrix) -> Partial:
        """Counters, per-replicate values and top-k replicates of one shard."""
        r0, r1 = shard.reps
        if r1 <= r0:
            return {}
        return _ShardKernel(self, data, shard).run()

    def reducer(self, data: ScoreMatrix) -> _DiscPowerReducer:
        """A fresh reducer for this study on `data`."""
        return _DiscPowerReducer(self, data)


def _cat(arrays: list[np.ndarray]) -> np.ndarray:
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=1)


class _ShardKernel:
    """One shard: replicate units outer (draws made once), pair units inner.

    Partial keys, by prefix (see :meth:`_DiscPowerReducer.combine`): ``pa_`` per-pair
    integer counters (added), ``tv_``/``ti_``/``ta_`` per-pair top-k (merged), ``ra_``
    per-replicate sums over pairs (added), ``rs_`` per-replicate values of all systems (set,
    computed by the shards of the first pair block only), ``sa_`` totals (added).
    """

    def __init__(self, study: DiscPower, data: ScoreMatrix, shard: Shard):
        self.study, self.data, self.shard = study, data, shard
        self.variants = study.variants(data)
        self.n = len(data.topics)
        ia, ib = pair_index(len(data.systems))
        self.units = unit_ranges(*shard.items, PAIR_UNIT)
        self.pairs = [(ia[p0:p1], ib[p0:p1]) for p0, p1 in self.units]
        self.first_block = shard.items[0] == 0
        self.k = study.k
        self._scores: dict[tuple[str, str], np.ndarray] = {}
        self._prep: dict[tuple[int, str, str], tuple] = {}
        self.pair_out: list[dict[str, np.ndarray]] = [{} for _ in self.units]
        self.out: Partial = {}
        tests = {t for v in self.variants for t in v.tests}
        self.paired = [i for i, v in enumerate(self.variants) if "paired_bootstrap" in v.tests]
        self.unpaired = [i for i, v in enumerate(self.variants)
                         if "unpaired_bootstrap" in v.tests]
        self.tukey = [i for i, v in enumerate(self.variants)
                      if "randomised_tukey_hsd" in v.tests]
        self.sampled = ([i for i, v in enumerate(self.variants) if v.sampled]
                        if study.sampled_methods else [])
        self.need_q = bool(self.paired or self.sampled)
        n_pairs = shard.items[1] - shard.items[0]
        self.keep_centred = (shard.reps[1] - shard.reps[0] > _CHUNK_UNITS * REPLICATE_BLOCK and
                             16 * n_pairs * self.n * len(self.paired) <= _KEEP_BYTES)
        self.any_unpaired = "unpaired_bootstrap" in tests

    # scores ------------------------------------------------------------------------------
    def scores(self, metric: str, log: bool) -> np.ndarray:
        key = (metric, "log" if log else "raw")
        if key not in self._scores:
            x = self.data.metric(metric)
            self._scores[key] = log_scores(x) if log else np.asarray(x, np.float64)
        return self._scores[key]

    def values(self, v: Variant) -> np.ndarray:
        """Per-topic values whose arithmetic mean is the variant's summary (AG: logs)."""
        return self.scores(v.metric, v.kind == "ag")

    def split(self, vi: int) -> tuple[np.ndarray, np.ndarray]:
        """:func:`exact_split` of a variant's values (once per shard)."""
        key = (-1, self.variants[vi].name, "split")
        if key not in self._prep:
            self._prep[key] = exact_split(self.values(self.variants[vi]))
        return self._prep[key]

    def sample_scores(self, v: Variant, ct: np.ndarray) -> np.ndarray:
        """``M(X, Q*b)`` of every system on every sample of a unit: (systems, samples)."""
        if v.kind == "g":
            return np.exp(self.scores(v.metric, True) @ ct / self.n)
        return self.scores(v.metric, False) @ ct / self.n

    def centred(self, j: int, vi: int, mz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``w = z - mean(z)`` and ``w^2`` of a pair unit: kept across replicate chunks when
        they fit :data:`_KEEP_BYTES`, else recomputed (cheap next to the GEMMs)."""
        key = (j, self.variants[vi].name, "centred")
        if key in self._prep:
            return self._prep[key]
        x = self.values(self.variants[vi])
        ia, ib = self.pairs[j]
        w = x[ia] - x[ib]
        w -= mz
        out = (w, w * w)
        if self.keep_centred:
            self._prep[key] = out
        return out

    def prep(self, j: int, vi: int, what: str) -> tuple:
        """Per-pair-unit arrays of a variant (built once per shard)."""
        key = (j, self.variants[vi].name, what)
        if key not in self._prep:
            v = self.variants[vi]
            ia, ib = self.pairs[j]
            if what == "paired":
                x = self.values(v)
                z = x[ia] - x[ib]
                self._prep[key] = (studentized_t(z), z.mean(axis=1)[:, None])
            else:
                if v.kind == "g":
                    g = gmean_scores(self.scores(v.metric, False))
                    ma, mb = g[ia], g[ib]
                else:
                    x = self.values(v)
                    ma, mb = x[ia].mean(axis=1), x[ib].mean(axis=1)
                self._prep[key] = (ma - mb, np.abs(ma) + np.abs(mb))
        return self._prep[key]

    # output ------------------------------------------------------------------------------
    def add_pair(self, j: int, key: str, arr: np.ndarray) -> None:
        po = self.pair_out[j]
        po[key] = po[key] + arr if key in po else arr

    def top(self, j: int, name: str, sel: tuple[np.ndarray, ...]) -> None:
        """Merge a unit's selection (values, replicate numbers[, aux]) into the pair unit's
        k largest. Later units are appended, so replicate numbers stay increasing along
        each row; the reducer sorts."""
        po = self.pair_out[j]
        if f"tv_{name}" in po:
            sel = tuple(np.concatenate([po[f"{p}_{name}"], s], axis=1)
                        for p, s in zip(("tv", "ti", "ta"), sel, strict=False))
            if sel[0].shape[1] >= 8 * self.k:  # bound memory for long replicate ranges
                sel = topk_rows(sel[0], sel[1], self.k, *sel[2:], idx_sorted=True, sort=False)
        for p, s in zip(("tv", "ti", "ta"), sel, strict=False):
            po[f"{p}_{name}"] = s

    def add_rep(self, key: str, a: int, arr: np.ndarray, prefix: str = "ra") -> None:
        r0, r1 = self.shard.reps
        full = f"{prefix}_{key}"
        if full not in self.out:
            self.out[full] = np.zeros(r1 - r0, arr.dtype)
        if prefix == "ra":
            self.out[full][a - r0:a - r0 + len(arr)] += arr
        else:
            self.out[full][a - r0:a - r0 + len(arr)] = arr

    def add_total(self, key: str, arr: np.ndarray) -> None:
        full = f"sa_{key}"
        self.out[full] = self.out[full] + arr if full in self.out else arr

    # the work ----------------------------------------------------------------------------
    def draws(self, a: int, b: int) -> dict:
        """Everything of replicate unit ``[a, b)`` that all pairs share: the samples, and
        per-system sums (the ``s1`` parts of the paired test, the unpaired replicates'
        parts, ``M(X, Q*b)`` for the sampled methods)."""
        study, n = self.study, self.n
        u: dict = {"a": a, "b": b, "ct": None, "counts": None, "counts2": None}
        if self.need_q:
            u["counts"] = bootstrap_counts(study.seed, PAIRED_STREAM, n, a, b)
            u["ct"] = np.ascontiguousarray(u["counts"].T)
        if study.swap:
            u["counts2"] = bootstrap_counts(study.seed, SWAP_STREAM, n, a, b)
        u["parts"] = {}
        if self.any_unpaired:
            idx = bootstrap_indices(study.seed, UNPAIRED_STREAM, 2 * n, a, b)
            first = indices_to_counts(idx[:, :n], 2 * n)
            second = indices_to_counts(idx[:, n:], 2 * n)
            weights: dict[str, np.ndarray] = {}
            for vi in self.unpaired:
                summ = "gmean" if self.variants[vi].kind == "g" else "mean"
                if summ not in weights:
                    weights[summ] = unpaired_weights(first, second, summ)
                vals = self.scores(self.variants[vi].metric, summ == "gmean")
                u["parts"][vi] = vals @ weights[summ]
        u["split"] = {vi: tuple(part @ u["ct"] for part in self.split(vi))
                      for vi in self.paired}
        u["s1"] = {vi: self.sample_scores(self.variants[vi], u["ct"]) for vi in self.sampled}
        u["s2"] = {}
        if study.swap:
            ct2 = np.ascontiguousarray(u["counts2"].T)
            u["s2"] = {vi: self.sample_scores(self.variants[vi], ct2) for vi in self.sampled}
        return u

    def run(self) -> Partial:
        n = self.n
        rep_units = unit_ranges(*self.shard.reps, REPLICATE_BLOCK)
        for c0 in range(0, len(rep_units), _CHUNK_UNITS):
            # a chunk of replicate units: GEMMs per unit (canonical shapes), the top-k
            # selection once per pair unit over the whole chunk
            chunk = [self.draws(a, b) for a, b in rep_units[c0:c0 + _CHUNK_UNITS]]
            if self.first_block:
                for u in chunk:
                    self.per_replicate(u["a"], u["b"], u["counts"], u["counts2"], u["s1"],
                                       u["s2"])
            rep_idx = np.arange(chunk[0]["a"], chunk[-1]["b"], dtype=np.int64)
            k = min(self.k, len(rep_idx))
            for j in range(len(self.units)):
                ia, ib = self.pairs[j]
                for vi in self.paired:
                    t_obs, mz = self.prep(j, vi, "paired")
                    w, w_sq = self.centred(j, vi, mz)
                    qs, sums_all = [], []
                    for u in chunk:
                        s_hi, s_lo = u["split"][vi]
                        sums = np.subtract(s_hi[ia], s_hi[ib])
                        sums += s_lo[ia]
                        sums -= s_lo[ib]
                        sums -= n * mz
                        q = paired_unit(w, w_sq, u["ct"], sums)
                        self.add_pair(j, f"pa_{vi}_paired_ge", count_t(q, t_obs, n))
                        qs.append(q)
                        sums_all.append(sums)
                    if self.study.estimated_diff:
                        # the smallest p = the largest |t*|; kept as -p (larger is better)
                        val, rid, tsum = topk_rows(_cat(qs), rep_idx, k, _cat(sums_all),
                                                   idx_sorted=True, sort=False, largest=False)
                        self.top(j, f"{vi}_paired", (np.negative(val), rid,
                                                     np.abs(tsum) / n))
                for vi in self.unpaired:
                    d_obs, scale = self.prep(j, vi, "unpaired")
                    summ = "gmean" if self.variants[vi].kind == "g" else "mean"
                    absds = []
                    for u in chunk:
                        d = unpaired_unit(u["parts"][vi], ia, ib, summ)
                        absd = np.abs(d, out=d)
                        self.add_pair(j, f"pa_{vi}_unpaired_ge",
                                      count_extreme(absd, d_obs, "two-sided", scale))
                        absds.append(absd)
                    if self.study.estimated_diff:
                        self.top(j, f"{vi}_unpaired", topk_rows(_cat(absds), rep_idx, k,
                                                                idx_sorted=True, sort=False))
                if self.sampled:
                    for u in chunk:
                        self.sampled_methods(j, u["a"], u["s1"], u["s2"])
        return self.result()

    def per_replicate(self, a: int, b: int, counts, counts2, s1, s2) -> None:
        """All-systems work of a replicate unit: Tukey ranges, swap-set statistics."""
        study = self.study
        if self.tukey:
            k, n = len(self.data.systems), self.n
            perm = topic_permutations(study.seed, TUKEY_STREAM, k, n, a, b)
            for vi in self.tukey:
                st = np.ascontiguousarray(self.values(self.variants[vi]).T)
                self.add_rep(f"{vi}_tukey", a, tukey_ranges(st, perm), "rs")
        if study.swap:
            for vi in self.sampled:
                self.add_rep(f"{vi}_maxperf", a,
                             np.maximum(s1[vi].max(axis=0), s2[vi].max(axis=0)), "rs")
            u1, u2, ov = topic_overlap(counts, counts2)
            self.add_rep("unique", a, u1 + u2, "rs")
            self.add_rep("overlap", a, ov, "rs")

    def sampled_methods(self, j: int, a: int, s1: dict, s2: dict) -> None:
        """Stability, swap and rank-correlation counters of one pair unit x replicate unit."""
        study = self.study
        ia, ib = self.pairs[j]
        signs = {}
        for vi in self.sampled:
            d, top = sample_differences(s1[vi], ia, ib)
            if study.stability:
                gt_xy, gt_yx = stability_counts(d, top, study.fuzziness)
                self.add_pair(j, f"pa_{vi}_gtxy", gt_xy)
                self.add_pair(j, f"pa_{vi}_gtyx", gt_yx)
            if study.swap:
                d2, _ = sample_differences(s2[vi], ia, ib)
                comps, swaps = swap_counts(d, d2, ABSOLUTE)
                self.add_total(f"{vi}_comps", comps)
                self.add_total(f"{vi}_swaps", swaps)
            if study.rankcorr:
                signs[vi] = pair_signs(d)
                self.add_rep(f"{vi}_ties", a, ties(signs[vi]))
        if study.rankcorr:
            for x, vi in enumerate(self.sampled):
                for vj in self.sampled[x + 1:]:
                    self.add_rep(f"{vi}_{vj}_conc", a, concordance(signs[vi], signs[vj]))

    def result(self) -> Partial:
        out = dict(self.out)
        if self.pair_out and self.pair_out[0]:
            for po in self.pair_out:
                for name in [key[3:] for key in po if key.startswith("tv_")]:
                    keys = [f"{p}_{name}" for p in ("tv", "ti", "ta") if f"{p}_{name}" in po]
                    arrs = [po[k] for k in keys]
                    sel = topk_rows(arrs[0], arrs[1], self.k, *arrs[2:], idx_sorted=True,
                                    sort=False)
                    # descending values, ties by replicate number (columns are in that
                    # order, and the sort is stable): the order the reducer keeps
                    order = np.argsort(-sel[0], axis=1, kind="stable")
                    for key, arr in zip(keys, sel, strict=True):
                        po[key] = np.take_along_axis(arr, order, axis=1)
            for key in self.pair_out[0]:
                out[key] = np.concatenate([po[key] for po in self.pair_out])
        return out


class _DiscPowerReducer:
    """Merges partials: counters add, top-k lists merge, per-replicate values are placed."""

    def __init__(self, study: DiscPower, data: ScoreMatrix):
        self.study = study
        self.data = data
        self.variants = study.variants(data)
        n_sys = len(data.systems)
        self.n_pairs = n_sys * (n_sys - 1) // 2
        self.k = study.k
        self.state: dict[str, np.ndarray] = {}
        self.filled: set[tuple[str, tuple[int, int]]] = set()

    def _slot(self, key: str, shape: tuple[int, ...], arr: np.ndarray, fill=0) -> np.ndarray:
        if key not in self.state:
            self.state[key] = np.full(shape + arr.shape[1:], fill, dtype=arr.dtype)
        return self.state[key]

    def combine(self, shard: Shard, partial: Partial) -> None:
        items, reps = slice(*shard.items), slice(*shard.reps)
        for key, arr in partial.items():
            kind = key[:3]
            if kind == "pa_":
                self._slot(key, (self.n_pairs,), arr)[items] += arr
            elif kind == "ra_":
                self._slot(key, (self.study.B,), arr)[reps] += arr
            elif kind == "rs_":
                self._slot(key, (self.study.B,), arr)[reps] = arr
            elif kind == "sa_":
                self.state[key] = self.state[key] + arr if key in self.state else arr.copy()
            elif kind == "tv_":
                name = key[3:]
                v, i = arr, partial[f"ti_{name}"]
                a = partial.get(f"ta_{name}", v)  # unpaired: the value is its own aux
                if f"tv_{name}" not in self.state:
                    self.state[f"tv_{name}"] = np.full((self.n_pairs, self.k), -np.inf)
                    self.state[f"ti_{name}"] = np.full((self.n_pairs, self.k), _NO_INDEX)
                    self.state[f"ta_{name}"] = np.zeros((self.n_pairs, self.k))
                if (name, shard.items) not in self.filled:
                    # first replicate block of these pairs: already in the kept order
                    self.filled.add((name, shard.items))
                    w = v.shape[1]
                    for p, m in (("tv", v), ("ti", i), ("ta", a)):
                        self.state[f"{p}_{name}"][items, :w] = m
                    continue
                merged = topk_rows(  # unsorted merge; finalize sorts once
                    np.concatenate([self.state[f"tv_{name}"][items], v], axis=1),
                    np.concatenate([self.state[f"ti_{name}"][items], i], axis=1),
                    self.k,
                    np.concatenate([self.state[f"ta_{name}"][items], a], axis=1),
                    sort=False,
                )
                for p, m in zip(("tv", "ti", "ta"), merged, strict=True):
                    self.state[f"{p}_{name}"][items] = m

    # -- tables -------------------------------------------------------------------------
    def _sorted_aux(self, name: str) -> np.ndarray | None:
        """The top-k companions of `name` per pair, by descending value (ties: smaller
        replicate number first), or None when the estimated difference is off."""
        if f"ta_{name}" not in self.state:
            return None
        order = np.lexsort((self.state[f"ti_{name}"], -self.state[f"tv_{name}"]), axis=-1)
        return np.take_along_axis(self.state[f"ta_{name}"], order, axis=1)

    def _pvalue(self, count: np.ndarray) -> np.ndarray:
        B = self.study.B
        return count / B if self.study.pvalue == "count" else (count + 1) / (B + 1)

    def _values(self, v: Variant) -> np.ndarray:
        x = np.asarray(self.data.metric(v.metric), np.float64)
        return log_scores(x) if v.kind == "ag" else x

    def _observed(self, v: Variant) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per pair: observed difference of the summaries, t statistic, sd of differences
        (the last two for the mean-type variants only)."""
        ia, ib = pair_index(len(self.data.systems))
        if v.kind == "g":
            g = gmean_scores(self.data.metric(v.metric))
            nan = np.full(self.n_pairs, np.nan)
            return g[ia] - g[ib], nan, nan
        x = self._values(v)
        diff, tobs, sd = (np.empty(self.n_pairs) for _ in range(3))
        for p0, p1 in unit_ranges(0, self.n_pairs, 8 * PAIR_UNIT):
            z = x[ia[p0:p1]] - x[ib[p0:p1]]
            diff[p0:p1] = z.mean(axis=1)
            tobs[p0:p1] = studentized_t(z)
            sd[p0:p1] = z.std(axis=1, ddof=1)
        return diff, tobs, sd

    def finalize(self) -> dict[str, pa.Table]:
        study, data = self.study, self.data
        n, B = len(data.topics), study.B
        ia, ib = pair_index(len(data.systems))
        sys_a = pa.array(np.asarray(data.systems, dtype=object)[ia], pa.string())
        sys_b = pa.array(np.asarray(data.systems, dtype=object)[ib], pa.string())
        asl_parts, dp_rows = [], []
        for vi, v in enumerate(self.variants):
            if not v.tests:
                continue
            diff, tobs, sd = self._observed(v)
            for test in v.tests:
                raw_by_alpha: dict[float, float] = {}
                if test == "t":
                    asl = 2.0 * sps.t.sf(np.abs(tobs), df=n - 1)
                    for alpha in study.alphas:  # the smallest |mean| with p < alpha, max
                        crit = sps.t.isf(alpha / 2, df=n - 1)
                        raw_by_alpha[alpha] = float((crit * sd / math.sqrt(n)).max())
                elif test == "randomised_tukey_hsd":
                    ranges = np.sort(self.state[f"rs_{vi}_tukey"])
                    means = self._values(v).mean(axis=1)
                    d = means[ia] - means[ib]
                    thr = np.abs(d) - tie_tolerance(d, np.abs(means).max())
                    count = (B - np.searchsorted(ranges, thr, side="left")).astype(np.int64)
                    asl = self._pvalue(count)
                    for alpha in study.alphas:
                        pos = max(1, math.ceil(alpha * B - 1e-9))
                        raw_by_alpha[alpha] = float(ranges[B - pos])
                else:
                    short = "paired" if test == "paired_bootstrap" else "unpaired"
                    asl = self._pvalue(self.state[f"pa_{vi}_{short}_ge"])
                    top = self._sorted_aux(f"{vi}_{short}")
                    for alpha in study.alphas:
                        pos = max(1, math.ceil(alpha * B - 1e-9)) - 1
                        raw_by_alpha[alpha] = (float(top[:, pos].max()) if top is not None
                                               else float("nan"))
                asl_parts.append(pa.table({
                    "metric": pa.array([v.name] * self.n_pairs, pa.string()),
                    "test": pa.array([test] * self.n_pairs, pa.string()),
                    "system_a": sys_a,
                    "system_b": sys_b,
                    "diff": pa.array(diff, pa.float64()),
                    "asl": pa.array(asl, pa.float64()),
                }))
                for alpha in study.alphas:
                    sig = int(np.count_nonzero(asl < alpha))
                    raw = raw_by_alpha[alpha]
                    dp_rows.append({
                        "metric": v.name, "test": test, "alpha": alpha,
                        "pairs": self.n_pairs, "significant": sig,
                        "sensitivity": sig / self.n_pairs,
                        "estimated_diff": round_sig(raw, 2),
                        "estimated_diff_raw": raw,
                    })
        tables = {
            "asl": pa.concat_tables(asl_parts),
            "discpower": pa.Table.from_pylist(dp_rows, schema=pa.schema([
                ("metric", pa.string()), ("test", pa.string()), ("alpha", pa.float64()),
                ("pairs", pa.int64()), ("significant", pa.int64()),
                ("sensitivity", pa.float64()), ("estimated_diff", pa.float64()),
                ("estimated_diff_raw", pa.float64()),
            ])),
        }
        sampled = [(vi, v) for vi, v in enumerate(self.variants) if v.sampled]
        if study.stability:
            tables["stability"] = stability_table(
                [(v.name, self.state[f"pa_{vi}_gtxy"], self.state[f"pa_{vi}_gtyx"])
                 for vi, v in sampled], study.fuzziness, B)
        if study.swap:
            tables["swap_rates"], tables["swap_summary"] = swap_tables(
                [(v.name, self.state[f"sa_{vi}_comps"], self.state[f"sa_{vi}_swaps"],
                  float(self.state[f"rs_{vi}_maxperf"].max())) for vi, v in sampled],
                subset_size=n, samples=B, confidences=study.swap_confidence,
                unique_total=int(self.state["rs_unique"].sum()),
                overlap_total=int(self.state["rs_overlap"].sum()), layout=ABSOLUTE)
        if study.rankcorr:
            tables["rankcorr"] = self._rankcorr(sampled)
        return tables

    def _rankcorr(self, sampled: Sequence[tuple[int, Variant]]) -> pa.Table:
        k = len(self.data.systems)
        ia, ib = pair_index(k)
        m = len(sampled)
        signs = []
        for _, v in sampled:
            x = np.asarray(self.data.metric(v.metric), np.float64)
            s = gmean_scores(x) if v.kind == "g" else x.mean(axis=1)
            d, _ = sample_differences(s[:, None], ia, ib)
            signs.append(pair_signs(d))
        obs = np.full((m, m), np.nan)
        boot = np.full((m, m, self.study.B), np.nan)
        for x, (vi, _) in enumerate(sampled):
            for y in range(x + 1, m):
                vj = sampled[y][0]
                obs[x, y] = kendall_tau(concordance(signs[x], signs[y]), ties(signs[x]),
                                        ties(signs[y]), k)[0]
                boot[x, y] = kendall_tau(self.state[f"ra_{vi}_{vj}_conc"],
                                         self.state[f"ra_{vi}_ties"],
                                         self.state[f"ra_{vj}_ties"], k)
        return rankcorr_table([v.name for _, v in sampled], obs, boot, k)


DESCRIPTION = ("discriminative power and Sakai's (2006) bootstrap methods: ASL per pair "
               "(paired/unpaired bootstrap, t, randomised Tukey HSD), sensitivity, estimated "
               "difference, G-metrics, stability, bootstrap swap method, Kendall tau with "
               "bootstrap SE")


def _top_systems(matrix: ScoreMatrix, count: int, by: str | None) -> ScoreMatrix:
    """The `count` systems with the highest mean `by` (default: the first metric), in
    their original order (Sakai 2006 keeps the top 30 runs by AP)."""
    count = check_positive_int(count, "experiment.top_systems")
    metric = by or matrix.metrics[0]
    if count >= len(matrix.systems):
        return matrix
    means = matrix.metric(metric).mean(axis=1)
    keep = np.sort(np.argsort(-means, kind="stable")[:count])
    return matrix.select(systems=[matrix.systems[i] for i in keep])


def build(cfg) -> tuple[DiscPower, ScoreMatrix]:
    """The study of the ``experiment`` config node on the configured collection."""
    from omegaconf import OmegaConf

    from irsim.experiments.loading import engine_shards, score_matrix

    matrix = score_matrix(cfg)
    e = cfg.experiment

    def seq(key: str, default: Sequence[float]) -> tuple:
        value = e.get(key, None)
        if value is None:
            return tuple(default)
        value = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        return tuple(value) if isinstance(value, (list, tuple)) else (value,)

    if e.get("top_systems", None) is not None:
        matrix = _top_systems(matrix, e.top_systems, e.get("top_by", None))
    shard_pairs, shard_reps = engine_shards(cfg).get(4096, 1000)
    study = DiscPower(
        metrics=tuple(matrix.metrics),
        tests=tuple(e.tests),
        B=e.B,
        alphas=seq("alpha", (0.01, 0.05)),
        seed=cfg.seed,
        pvalue=e.get("pvalue", "count"),
        gmean=e.get("gmean", False),
        stability=e.get("stability", False),
        fuzziness=seq("fuzziness", DEFAULT_FUZZINESS),
        swap=e.get("swap", False),
        swap_confidence=seq("swap_confidence", (0.95,)),
        rankcorr=e.get("rankcorr", False),
        estimated_diff=e.get("estimated_diff", True),
        shard_pairs=shard_pairs,
        shard_replicates=shard_reps,
    )
    return study, matrix


def report_sections(tables: dict, run_dir) -> list[str]:
    """Discriminative power, ASL curves, MR-PT curves, swap rates and the tau matrix."""
    from irsim.report import markdown_table
    from irsim.report.plots import asl_curves

    lines: list[str] = []
    if "discpower" in tables:
        lines += ["## Discriminative power", "",
                  "Share of system pairs with ASL < alpha (sensitivity) and the estimated "
                  "difference required for ASL < alpha (rounded to two significant figures, "
                  "raw value beside it). `AG x` is the paired test on log(x + 1e-5), `G x` "
                  "the unpaired test of the geometric mean.", "",
                  "Estimated difference: paired bootstrap, |mean(w*b)| of the sample with "
                  "the ceil(alpha B)-th largest |t*|, max over pairs (Sakai 2006; it need "
                  "not shrink with alpha when |t*| and |mean| part ways, e.g. AG scores "
                  "with many zeros); unpaired bootstrap, the ceil(alpha B)-th largest |d*|, "
                  "max over pairs; t, t(1 - alpha/2, n-1) sd/sqrt(n), max over pairs; "
                  "randomised Tukey HSD, the ceil(alpha B)-th largest null range.", "",
                  markdown_table(tables["discpower"], max_rows=80), ""]
    if "asl" in tables:
        lines += ["## ASL curves", "",
                  "Each line is one metric: its system pairs sorted by ASL. A metric whose "
                  "curve stays low for more pairs discriminates more pairs.", ""]
        for path in asl_curves(tables["asl"], run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    lines += _sakai_sections(tables, run_dir)
    return lines


def _sakai_sections(tables: dict, run_dir) -> list[str]:
    from irsim.report import markdown_table
    from irsim.report.sakai import mr_pt_curves, swap_rate_curves, tau_matrix

    lines: list[str] = []
    if "stability" in tables:
        lines += ["## Stability (MR-PT curves)", "",
                  "Minority rate (how often the bootstrap samples disagree with the majority "
                  "verdict on a pair) against the proportion of ties, one point per "
                  "fuzziness value: curves nearer the origin are more stable and "
                  "discriminate more.", ""]
        for path in mr_pt_curves(tables["stability"], run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    if "swap_summary" in tables:
        lines += ["## Bootstrap swap method", "",
                  "Swap rate (share of comparisons where a second bootstrap sample reverses "
                  "the order of the pair) per bin of the difference |D|; the required "
                  "difference is the smallest bin edge from which every swap rate stays at "
                  "or below 1 - confidence; sensitivity is the share of comparisons with a "
                  "difference at least that large.", "",
                  markdown_table(tables["swap_summary"]), ""]
        for path in swap_rate_curves(tables["swap_rates"], run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    if "rankcorr" in tables and tables["rankcorr"].num_rows:
        lines += ["## Rank correlation", "",
                  "Kendall's tau between the system rankings of two metrics, its bootstrap "
                  "standard error over the topic samples, and the Z0 test.", "",
                  markdown_table(tables["rankcorr"]), ""]
        for path in tau_matrix(tables["rankcorr"], run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    return lines
