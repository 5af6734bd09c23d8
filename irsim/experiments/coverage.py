"""Coverage of confidence intervals for MAP (Park, "Bootstrap confidence intervals for Mean
Average Precision", ASEARC 2011; METHODS.md section 5).

Each system's full topic set is the population and its mean the truth. For every size
``n`` in ``sizes`` and every sample ``s < samples``, every system gets ``n`` of its topics
drawn without replacement, and its interval for the mean is built by every method
(``normal``, ``t``, ``percentile``, ``basic``, ``bca``, ``studentised_logit``) at every
``alpha``; an interval misses when the population mean lies above or below it. Type I error
= misses / intervals, the share Park tabulates against ``alpha`` (his Tables 1-3).

Park samples every system independently. Here one subset per sample is drawn
(:func:`irsim.sampling.subsets.subset_indices`, scheme ``independent``) and each system
reads it through its own fixed random relabelling of the topics (a permutation per system,
drawn once): every system still sees independent uniform subsets, sample after sample, as
in the paper, while two systems share on average only ``n^2 / topics`` topics of a sample,
so shared topic difficulty does not make their misses move together. (Drawing a separate
subset per system and sample would cost a sort of all topics for each.)

The bootstrap of sample ``s`` is its own ``B`` resamples: replicates ``s*B .. (s+1)*B - 1``
of one stream (:func:`irsim.sampling.topics.bootstrap_counts`, keyed by ``n``), shared by
the systems (as Sakai shares bootstrap samples across pairs). The bootstrap means of all
systems on a sample are one GEMM ``X[:, sample] @ (counts / n).T`` of a fixed shape, each
distribution is sorted once and every method and level reads its quantiles from it. The
limits are those of :func:`irsim.stats.bootstrap_ci` / :func:`irsim.stats.mean_ci` (tests
check equality on identical resamples); they are computed here for all levels at once
because the library functions take one level per call and would sort again for each.

Shards are blocks of samples of one size (whole blocks of 250); each sample is computed
the same way whatever block it is in, and the counters are integers, so tables are
identical for any shard size and executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard, block_ranges
from irsim.errors import ConfigError
from irsim.experiments.common import (
    aligned_block,
    check_alphas,
    check_choices,
    check_positive_int,
    resolve_metrics,
)
from irsim.sampling.rng import REPLICATE_BLOCK, rng_for
from irsim.sampling.subsets import subset_indices
from irsim.sampling.topics import bootstrap_counts
from irsim.stats.ci import (
    interval_grid_from_distribution,
    location_interval,
    mean_acceleration,
)

__all__ = ["Coverage", "METHODS", "PARK_ALPHAS", "TOPIC_STREAM", "BOOT_STREAM",
           "RELABEL_STREAM", "relabelling", "interval_grid", "DESCRIPTION", "build",
           "report_sections"]

#: Interval methods of this study (config names, ``method`` column).
METHODS = ("normal", "t", "percentile", "basic", "bca", "studentised_logit")
#: Park's levels: alpha = 0.05, 0.10, ..., 0.50.
PARK_ALPHAS = tuple(round(0.05 * i, 2) for i in range(1, 11))
#: Random streams: the topic samples, their bootstrap resamples, the per-system relabelling.
TOPIC_STREAM = "coverage/topics"
BOOT_STREAM = "coverage/bootstrap"
RELABEL_STREAM = "coverage/relabel"
_BOOTSTRAPPED = ("percentile", "basic", "bca", "studentised_logit")


def interval_grid(
    x: np.ndarray, star: np.ndarray, alphas: Sequence[float], methods: Sequence[str],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Two-sided intervals for the mean of each row of `x` at every level ``1 - alpha``.

    Parameters
    ----------
    x : ndarray, shape (rows, n)
        The samples.
    star : ndarray, shape (rows, B)
        Bootstrap means of each row (any order); only read by the bootstrap methods.
    alphas : sequence of float
    methods : sequence of str
        Any of :data:`METHODS`.

    Returns
    -------
    dict
        ``method -> (low, high)``, each of shape (rows, len(alphas)). Equal to
        :func:`irsim.stats.bootstrap_ci` (``mean_ci`` for ``normal``/``t``, BCa with the
        jackknife acceleration of the mean) given the same `star`, one sort per row.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.random((3, 8))
    >>> idx = rng.integers(0, 8, (500, 8))
    >>> star = x[:, idx].mean(axis=-1)
    >>> out = interval_grid(x, star, [0.05, 0.5], ["t", "percentile"])
    >>> out["percentile"][0].shape
    (3, 2)
    >>> from irsim.stats import bootstrap_ci
    >>> ref = bootstrap_ci(x.mean(-1), star, method="percentile", confidence_level=0.5)
    >>> bool(np.array_equal(ref.confidence_interval.low, out["percentile"][0][:, 1]))
    True
    """
    x = np.asarray(x, np.float64)
    n = x.shape[-1]
    levels = 1.0 - np.asarray(alphas, np.float64)
    mean = x.mean(axis=-1)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if "normal" in methods or "t" in methods:
        se = x.std(axis=-1, ddof=1) / np.sqrt(n)
        tail = (1.0 - levels) / 2.0
        for m in ("normal", "t"):
            if m in methods:
                q = sps.norm.isf(tail) if m == "normal" else sps.t.isf(tail, n - 1)
                ci = location_interval(mean[:, None], se[:, None], q[None, :], "two-sided")
                out[m] = (ci.low, ci.high)
    boot = [m for m in methods if m in _BOOTSTRAPPED]
    if boot:
        acc = mean_acceleration(x) if "bca" in boot else None
        limits, _ = interval_grid_from_distribution(mean, star, boot, levels, acceleration=acc,
                                                    n=n)
        out.update(limits)
    return out


def relabelling(seed: int, systems: int, topics: int) -> np.ndarray:
    """(systems, topics) permutations: system ``i`` reads topic ``perm[i, t]`` where a sample
    names topic ``t`` (one uniform random permutation per system).

    Examples
    --------
    >>> p = relabelling(0, 3, 5)
    >>> p.shape, sorted(p[1].tolist())
    ((3, 5), [0, 1, 2, 3, 4])
    """
    u = rng_for(seed, RELABEL_STREAM, systems, topics).random((systems, topics))
    return np.argsort(u, axis=1, kind="stable")


@dataclass(frozen=True)
class Coverage:
    """The coverage study (Park 2011).

    Parameters
    ----------
    metrics : sequence of str, optional
        Metrics of the score matrix (default: all).
    methods : sequence of str
        Interval methods (:data:`METHODS`).
    sizes : sequence of int
        Sample sizes ``n`` (topics per sample, without replacement; 2 <= n <= topics).
    samples : int
        Samples per size.
    B : int
        Bootstrap resamples per interval.
    alphas : sequence of float
        ``1 - alpha`` are the confidence levels.
    seed : int
    shard_samples : int
        Samples per shard (rounded up to a multiple of 250); does not change any result.
    memory_budget : int
        Approximate bytes of the bootstrap means held at once.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=4, topics=40, seed=1).matrix
    >>> study = Coverage(sizes=(5,), samples=50, B=200, alphas=(0.1,), methods=("t", "bca"))
    >>> tables, _ = run_study(study, m)
    >>> tables["coverage"].column_names[:7]
    ['method', 'n', 'alpha', 'samples', 'type1_error', 'above', 'below']
    >>> tables["coverage"].num_rows
    2
    """

    metrics: tuple[str, ...] | None = None
    methods: tuple[str, ...] = METHODS
    sizes: tuple[int, ...] = (5, 10, 20)
    samples: int = 1000
    B: int = 1000
    alphas: tuple[float, ...] = PARK_ALPHAS
    seed: int = 0
    shard_samples: int = 250
    memory_budget: int = 64 * 2**20
    name: str = field(default="coverage", init=False)

    def __post_init__(self) -> None:
        methods = check_choices(self.methods, METHODS, "CI method for experiment=coverage",
                                "experiment.methods")
        object.__setattr__(self, "methods", methods)
        sizes = tuple(check_positive_int(s, "experiment.sizes") for s in self.sizes)
        if not sizes or any(s < 2 for s in sizes):
            raise ConfigError(f"experiment.sizes must list sizes >= 2, got {self.sizes!r}")
        object.__setattr__(self, "sizes", sizes)
        if self.metrics is not None:
            object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "samples", check_positive_int(self.samples,
                                                               "experiment.samples"))
        object.__setattr__(self, "B", check_positive_int(self.B, "experiment.B"))
        if self.B < 2 and any(m in _BOOTSTRAPPED for m in methods):
            raise ConfigError("experiment.B must be >= 2 for bootstrap intervals")
        object.__setattr__(self, "alphas", check_alphas(self.alphas))
        check_positive_int(self.shard_samples, "engine.shard_replicates")
        check_positive_int(self.memory_budget, "memory_budget")

    # -- plan ---------------------------------------------------------------------------
    def _metrics(self, data: ScoreMatrix) -> tuple[str, ...]:
        return resolve_metrics(self.metrics, data.metrics)

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """For each size, blocks of samples (items ``k * samples + s`` for size ``k``)."""
        self._metrics(data)
        n_topics = len(data.topics)
        for n in self.sizes:
            if n > n_topics:
                raise ConfigError(f"experiment.sizes: {n} > {n_topics} topics in the "
                                  f"collection (samples are drawn without replacement)")
        block = aligned_block(self.shard_samples, REPLICATE_BLOCK)
        shards = []
        for k in range(len(self.sizes)):
            for a, b in block_ranges(self.samples, block):
                off = k * self.samples
                shards.append(Shard(len(shards), (off + a, off + b), (0, 0)))
        return shards

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        return {k: getattr(self, k) for k in ("metrics", "methods", "sizes", "samples", "B",
                                             "alphas", "seed")}

    # -- kernel -------------------------------------------------------------------------
    def _chunk(self, systems: int) -> int:
        """Samples per step (a function of the data shape only, never of the shard)."""
        per_sample = 8 * systems * (3 * self.B + 4 * len(self.alphas))
        return max(1, int(self.memory_budget // max(per_sample, 1)))

    def kernel(self, shard: Shard, data: ScoreMatrix) -> Partial:
        """Miss counters (metrics x methods x alphas x {above, below}) of a block of samples."""
        k = shard.items[0] // self.samples
        n = self.sizes[k]
        s0, s1 = shard.items[0] - k * self.samples, shard.items[1] - k * self.samples
        metrics = self._metrics(data)
        n_topics, n_sys = len(data.topics), len(data.systems)
        counts = np.zeros((len(metrics), len(self.methods), len(self.alphas), 2), np.int64)
        perm = relabelling(self.seed, n_sys, n_topics)
        step = self._chunk(n_sys)
        for a in range(s0, s1, step):  # chunks of samples bound the memory
            b = min(s1, a + step)
            topics = subset_indices("independent", self.seed, TOPIC_STREAM, n_topics, n, a, b,
                                    sets=1)[:, 0, :]
            w = bootstrap_counts(self.seed, BOOT_STREAM, n, a * self.B, b * self.B)
            # (m, n, B) contiguous: numpy's stacked matmul calls BLAS per sample only
            # for contiguous operands (a transposed view falls back to a slow loop)
            w = np.ascontiguousarray((w / n).reshape(b - a, self.B, n).transpose(0, 2, 1))
            for mi, metric in enumerate(metrics):
                truth = data.metric(metric).mean(axis=1)
                x = np.take_along_axis(data.metric(metric), perm, axis=1)
                xs = np.ascontiguousarray(x[:, topics].transpose(1, 0, 2))  # (m, S, n)
                star = None
                if any(m in _BOOTSTRAPPED for m in self.methods):
                    star = np.matmul(xs, w)  # (m, S, B)
                    star = star.reshape(-1, self.B)
                grid = interval_grid(xs.reshape(-1, n), star, self.alphas, self.methods)
                mu = np.tile(truth, b - a)[:, None]
                for j, method in enumerate(self.methods):
                    low, high = grid[method]
                    counts[mi, j, :, 0] += np.count_nonzero(low > mu, axis=0)
                    counts[mi, j, :, 1] += np.count_nonzero(high < mu, axis=0)
        return {f"n{n}": counts}

    def reducer(self, data: ScoreMatrix) -> _CoverageReducer:
        """A fresh reducer."""
        return _CoverageReducer(self, data)


class _CoverageReducer:
    """Integer miss counters per size, summed over shards."""

    def __init__(self, study: Coverage, data: ScoreMatrix):
        self.study = study
        self.metrics = study._metrics(data)
        self.systems = len(data.systems)
        shape = (len(self.metrics), len(study.methods), len(study.alphas), 2)
        self.counts = {n: np.zeros(shape, np.int64) for n in study.sizes}
        self.done = {n: 0 for n in study.sizes}

    def combine(self, shard: Shard, partial: Partial) -> None:
        for key, arr in partial.items():
            n = int(key[1:])
            self.counts[n] += arr
            self.done[n] += shard.items[1] - shard.items[0]

    def finalize(self) -> dict[str, pa.Table]:
        s = self.study
        rows = []
        for mi, metric in enumerate(self.metrics):
            for j, method in enumerate(s.methods):
                for n in s.sizes:
                    intervals = self.done[n] * self.systems
                    for ai, alpha in enumerate(s.alphas):
                        above, below = (int(v) for v in self.counts[n][mi, j, ai])
                        rows.append({
                            "method": method, "n": n, "alpha": alpha,
                            "samples": self.done[n],
                            "type1_error": (above + below) / intervals,
                            "above": above / intervals, "below": below / intervals,
                            "metric": metric, "intervals": intervals,
                            "misses_above": above, "misses_below": below,
                        })
        schema = pa.schema([
            ("method", pa.string()), ("n", pa.int64()), ("alpha", pa.float64()),
            ("samples", pa.int64()), ("type1_error", pa.float64()), ("above", pa.float64()),
            ("below", pa.float64()), ("metric", pa.string()), ("intervals", pa.int64()),
            ("misses_above", pa.int64()), ("misses_below", pa.int64()),
        ])
        return {"coverage": pa.Table.from_pylist(rows, schema=schema)}


DESCRIPTION = ("coverage of confidence intervals for MAP: Type I error of normal, t, "
               "percentile, basic, BCa and studentised logit intervals on topic samples "
               "(Park 2011)")


def build(cfg: Any) -> tuple[Coverage, ScoreMatrix]:
    """The study of the ``experiment`` config node on the configured collection."""
    from irsim.experiments.loading import engine_shards, score_matrix
    from irsim.experiments.swap import as_tuple, preset_metrics

    matrix = preset_metrics(score_matrix(cfg), cfg)
    e = cfg.experiment
    _, shard_reps = engine_shards(cfg).get(4096, 250)
    shard_reps = int(e.get("shard_samples") or shard_reps)
    study = Coverage(
        metrics=tuple(matrix.metrics),
        methods=as_tuple(e.get("methods", METHODS)),
        sizes=as_tuple(e.get("sizes", (5, 10, 20))),
        samples=e.get("samples", 1000),
        B=e.get("B", 1000),
        alphas=as_tuple(e.get("alpha", PARK_ALPHAS)),
        seed=cfg.seed,
        shard_samples=shard_reps,
    )
    return study, matrix


def report_sections(tables: dict, run_dir) -> list[str]:
    """Type I error table (alpha = 0.05) and the Type I error vs alpha plot."""
    from pathlib import Path

    import pyarrow.compute as pc

    from irsim.report import markdown_table
    from irsim.report.coverage import coverage_plots

    lines: list[str] = []
    if "coverage" not in tables:
        return lines
    cov = tables["coverage"]
    alpha0 = min(cov.column("alpha").to_pylist())
    head = cov.filter(pc.equal(cov.column("alpha"), alpha0)).select(
        ["metric", "method", "n", "alpha", "type1_error", "above", "below", "intervals"])
    lines += ["## Coverage of confidence intervals", "",
              f"Share of intervals that miss the population mean (Type I error) at alpha = "
              f"{alpha0:g}; `above`/`below`: the interval lies above/below the population "
              f"mean. An accurate method has Type I error close to alpha (Park 2011 on TREC "
              f"2004 Robust, alpha = 0.05, n = 5/10/20: percentile 0.181/0.108/0.070, BCa "
              f"0.170/0.093/0.059, studentised logit 0.055/0.054/0.047).", "",
              markdown_table(head, max_rows=60), ""]
    lines += ["Type I error against alpha, one panel per sample size; the dashed diagonal "
              "is an exact method.", ""]
    for path in coverage_plots(cov, Path(run_dir)):
        lines += [f"![{path.stem}]({path.name})", ""]
    return lines
