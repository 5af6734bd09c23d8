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
distribution is sorted once and every method and level reads its quantiles from it
(:func:`irsim.stats.ci.mean_interval_grid`: the limits of :func:`irsim.stats.bootstrap_ci`
and :func:`irsim.stats.mean_ci` for all levels at once).

Shards: items are the sample sizes (``engine.shard_items`` sizes per shard, default 1),
replicates the samples (``engine.shard_replicates`` per shard, default 250, rounded up to a
multiple of 250). Each sample is computed the same way whatever shard it is in and the
partial results are integer miss counters, so tables are identical for any shard size and
executor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Shard, shard_grid
from irsim.engine.partials import Count
from irsim.errors import ConfigError, param
from irsim.exact import Exact
from irsim.experiments import Shards
from irsim.kit.common import (
    aligned_block,
    check_choices,
    check_listed,
    check_positive_int,
    check_study_memory,
    resolve_metrics,
    select_metrics,
)
from irsim.params import Choice, Options, fingerprint, option
from irsim.registry import study
from irsim.rng import REPLICATE_BLOCK, rng_for
from irsim.sampling.subsets import subset_indices
from irsim.sampling.topics import bootstrap_counts
from irsim.stats.ci import LOGIT_METHODS, mean_interval_grid, outside_unit_interval
from irsim.stats.ties import score_tolerance
from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import METRIC, table
from irsim.tables import STR as _S
from irsim.tables import column as _c
from irsim.tables import table_spec as _spec

__all__ = ["Config", "make", "Coverage", "METHODS", "PARK_ALPHAS",
           "TOPIC_STREAM", "BOOT_STREAM", "RELABEL_STREAM", "relabelling"]


class CoverageMethod(Choice):
    """An interval method of this study (config names, ``method`` column)."""

    normal = "normal"
    t = "t"
    percentile = "percentile"
    basic = "basic"
    bca = "bca"
    studentised_logit = "studentised_logit"


METHODS = CoverageMethod.values()
#: Park's levels: alpha = 0.05, 0.10, ..., 0.50.
PARK_ALPHAS = tuple(round(0.05 * i, 2) for i in range(1, 11))
#: Random streams: the topic samples, their bootstrap resamples, the per-system relabelling.
TOPIC_STREAM = "coverage/topics"
BOOT_STREAM = "coverage/bootstrap"
RELABEL_STREAM = "coverage/relabel"
_BOOTSTRAPPED = ("percentile", "basic", "bca", "studentised_logit")


@dataclass
class Config(Options):
    """Parameters of ``experiment=coverage`` (Park 2011)."""

    name: str = option("coverage", "``coverage``.")
    metrics: list[str] | None = option(
        None, "Metrics of the collection to study (default: all of them; the top-level "
        "``metrics`` wins when both are set).")
    methods: list[CoverageMethod] = option(
        list(METHODS), "Interval methods: ``normal``, ``t``, ``percentile``, ``basic``, ``bca``, "
        "``studentised_logit`` (distinct; ``studentised_logit`` needs scores in [0, 1]: a "
        "collection with any other score is refused, naming metric, system and topic).")
    sizes: list[int] = option(
        [5, 10, 20], "Topics per sample ``n`` (distinct; drawn without replacement; 2 <= n <= the "
        "collection's topics).", ge=2)
    samples: int = option(1000, "Topic samples per size.", ge=1)
    B: int = option(1000, "Bootstrap resamples per interval (>= 2 for the bootstrap methods).",
                    ge=1)
    alpha: list[float] = option(
        list(PARK_ALPHAS), "Intervals at level ``1 - alpha`` (default: Park's 0.05, 0.10, ..., "
        "0.50).", gt=0, lt=1)



# ------------------------------------------------------------------- output tables

#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
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
              METRIC,
              _c("intervals", _I, "samples x systems"),
              _c("misses_above", _I, "intervals lying above the population mean"),
              _c("misses_below", _I, "intervals lying below the population mean"),
          ]),
)


@study("coverage", config=Config, data="matrix", order=50,
       title="CI coverage",
       example=dict(overrides={"synthetic": ["collection=synthetic_scores",
                                             "experiment.samples=100", "experiment.B=200"]},
                    keywords=dict(sizes=[5, 10], samples=40, B=40, alpha=[0.05, 0.1, 0.2]),
                    figures=["coverage_*"]),
       tables=TABLE_SPECS,
       description=("coverage of confidence intervals for MAP: Type I error of normal, t, "
                    "percentile, basic, BCa and studentised logit intervals on topic samples "
                    "(Park 2011)"),
       headlines={"coverage": (("metric", "method", "n", "alpha"), "type1_error")},
       question=("How often does a bootstrap or parametric CI for MAP on a few topics miss the"
                 " true mean? (Park 2011)"))
def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Shards
         ) -> tuple[Coverage, ScoreMatrix]:
    """The coverage study of `config` on the metrics it selects from `data`.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> m = synthetic_scores(systems=4, topics=40, seed=1).matrix
    >>> study, data = make(Config(sizes=[5, 10], samples=100), m, seed=0, shards=Shards())
    >>> study.config.sizes, study.config.alpha[:2], len(study.plan(data))
    ([5, 10], [0.05, 0.1], 2)
    >>> make(Config(sizes=[50]), m, seed=0, shards=Shards())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.sizes: 50 > 40 topics in the collection ...
    """
    matrix = select_metrics(data, config.metrics)
    methods = check_choices(config.methods, METHODS, "CI method for experiment=coverage",
                            param("methods"))
    checked = check_listed(config.sizes, param("sizes"), "size")
    if config.B < 2 and any(m in _BOOTSTRAPPED for m in methods):
        raise ConfigError(f"{param('B')} must be >= 2 for bootstrap intervals")
    check_listed(config.alpha, param("alpha"), "significance level")
    shard_items, shard_reps = shards.get(1, 250)
    shard_items = check_positive_int(shard_items, param("shard_items", "engine"))
    shard_reps = check_positive_int(shard_reps, param("shard_replicates", "engine"))
    logit = [m for m in methods if m in LOGIT_METHODS]
    if logit:  # a logit of a mean: scores outside [0, 1] have none (never clamped silently)
        scores = np.asarray(matrix.values)
        at = outside_unit_interval(scores)
        if at is not None:
            k, s, t = at
            raise ConfigError(
                f"{param('methods')}: {logit[0]} needs scores in [0, 1], but "
                f"{matrix.metrics[k]} of system {matrix.systems[s]!r} on topic "
                f"{matrix.topics[t]!r} is {float(scores[at])!r}; leave {logit[0]} out for "
                "scores outside [0, 1]")
    n_topics = len(matrix.topics)
    for n in checked:
        if n > n_topics:
            raise ConfigError(f"{param('sizes')}: {n} > {n_topics} topics in the collection "
                              f"(samples are drawn without replacement)")
    study = Coverage(config, metrics=tuple(matrix.metrics), seed=int(seed),
                     shard_items=shard_items, shard_replicates=shard_reps)
    # the partial results and one sample's bootstrap weights (B x n) and replicates (S x B)
    check_study_memory(study, matrix, f"{param('B')} or {param('sizes')}",
                       extra=3 * 8 * config.B * (max(checked) + len(matrix.systems)))
    return study, matrix


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
    config : Config
        The study's parameters (``methods``, ``sizes``, ``samples``, ``B``, ``alpha``),
        normalised and checked by :func:`make`.
    metrics : tuple of str
        The data's metrics :func:`make` selected.
    seed : int
    shard_items : int
        Sizes per shard; does not change any result.
    shard_replicates : int
        Samples per shard (rounded up to a multiple of 250); does not change any result.
    memory_budget : int
        Approximate bytes of the bootstrap means held at once.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=4, topics=40, seed=1).matrix
    >>> config = Config(sizes=[5], samples=50, B=200, alpha=[0.1], methods=["t", "bca"])
    >>> study, data = make(config, m, seed=0, shards=Shards())
    >>> tables, _ = run_study(study, data)
    >>> tables["coverage"].column_names[:7]
    ['method', 'n', 'alpha', 'samples', 'type1_error', 'above', 'below']
    >>> tables["coverage"].num_rows
    2
    """

    config: Config
    metrics: tuple[str, ...]
    seed: int
    shard_items: int
    shard_replicates: int
    memory_budget: int = 64 * 2**20
    name: str = field(default="coverage", init=False)

    def _metrics(self, data: ScoreMatrix) -> tuple[str, ...]:
        return resolve_metrics(self.metrics, data.metrics)

    # -- plan ---------------------------------------------------------------------------
    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Blocks of sizes (items) x blocks of samples (replicates)."""
        self._metrics(data)
        return shard_grid(len(self.config.sizes), self.shard_items, self.config.samples,
                          aligned_block(self.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`)."""
        return fingerprint(self, Config, derived={"metrics": self.metrics})

    def fields(self, data: ScoreMatrix) -> dict[str, Count]:
        """Per size: miss counters (metrics x methods x alphas x {above, below}) and the
        samples they count."""
        shape = (len(self.config.sizes), len(self._metrics(data)), len(self.config.methods),
                 len(self.config.alpha), 2)
        return {"misses": Count(shape, along="items"),
                "samples": Count((len(self.config.sizes),), along="items")}

    # -- kernel -------------------------------------------------------------------------
    def _chunk(self, systems: int) -> int:
        """Samples per step (a function of the data shape only, never of the shard)."""
        per_sample = 8 * systems * (3 * self.config.B + 4 * len(self.config.alpha))
        return max(1, int(self.memory_budget // max(per_sample, 1)))

    def kernel(self, shard: Shard, data: ScoreMatrix) -> dict[str, np.ndarray]:
        """Miss counters of a block of samples of each size in the shard."""
        k0, k1 = shard.items
        s0, s1 = shard.reps
        perm = relabelling(self.seed, len(data.systems), len(data.topics))
        misses = np.stack([self._misses(data, perm, self.config.sizes[k], s0, s1)
                           for k in range(k0, k1)])
        return {"misses": misses, "samples": np.full(k1 - k0, s1 - s0, np.int64)}

    def _misses(self, data: ScoreMatrix, perm: np.ndarray, n: int, s0: int, s1: int
                ) -> np.ndarray:
        """(metrics, methods, alphas, {above, below}) misses of samples ``s0..s1`` of size
        `n`."""
        metrics, c = self._metrics(data), self.config
        n_topics, n_sys = len(data.topics), len(data.systems)
        counts = np.zeros((len(metrics), len(c.methods), len(c.alpha), 2), np.int64)
        step = self._chunk(n_sys)
        for a in range(s0, s1, step):  # chunks of samples bound the memory
            b = min(s1, a + step)
            topics = subset_indices("independent", self.seed, TOPIC_STREAM, n_topics, n, a, b,
                                    sets=1)[:, 0, :]
            w = bootstrap_counts(self.seed, BOOT_STREAM, n, a * c.B, b * c.B)
            # (m, n, B) contiguous: numpy's stacked matmul calls BLAS per sample only
            # for contiguous operands (a transposed view falls back to a slow loop)
            w = np.ascontiguousarray(w.reshape(b - a, c.B, n).transpose(0, 2, 1))
            for mi, metric in enumerate(metrics):
                truth = data.metric(metric).mean(axis=1)
                x = np.take_along_axis(data.metric(metric), perm, axis=1)
                xs = np.ascontiguousarray(x[:, topics].transpose(1, 0, 2))  # (m, S, n)
                star = None
                if any(m in _BOOTSTRAPPED for m in c.methods):
                    star = Exact(xs, l1=n).right(w)  # (m, S, B), the same on every CPU
                    star /= n
                    star = star.reshape(-1, c.B)
                grid = mean_interval_grid(xs.reshape(-1, n), star, c.alpha, c.methods)
                mu = np.tile(truth, b - a)[:, None]
                # a bound equal to the true mean in exact arithmetic (a constant run) counts
                # as within: the tie rule of irsim.stats.ties, not the last bit
                tol = score_tolerance(data.metric(metric))
                for j, method in enumerate(c.methods):
                    low, high = grid[method]
                    counts[mi, j, :, 0] += np.count_nonzero(low > mu + tol, axis=0)
                    counts[mi, j, :, 1] += np.count_nonzero(high < mu - tol, axis=0)
        return counts

    # -- tables -------------------------------------------------------------------------
    def finalize(self, merged: dict[str, np.ndarray], data: ScoreMatrix
                 ) -> dict[str, pa.Table]:
        """The ``coverage`` table: one row per metric, method, size and alpha."""
        systems = len(data.systems)
        rows = []
        for mi, metric in enumerate(self._metrics(data)):
            for j, method in enumerate(self.config.methods):
                for k, n in enumerate(self.config.sizes):
                    done = int(merged["samples"][k])
                    intervals = done * systems
                    for ai, alpha in enumerate(self.config.alpha):
                        above, below = (int(v) for v in merged["misses"][k, mi, j, ai])
                        rows.append({
                            "method": method, "n": n, "alpha": alpha, "samples": done,
                            "type1_error": (above + below) / intervals,
                            "above": above / intervals, "below": below / intervals,
                            "metric": metric, "intervals": intervals,
                            "misses_above": above, "misses_below": below,
                        })
        return {"coverage": table("coverage", rows)}
