"""Swap rates under topic sampling (Voorhees-Buckley 2002; Sakai, "The effect of topic
sampling in sensitivity comparisons of IR metrics"; METHODS.md section 4).

Each trial ``i`` draws two topic sets ``Q_i`` and ``Q'_i`` of size ``c`` (``disjoint``,
``independent``, ``replacement`` or ``bootstrap``, :mod:`irsim.sampling.subsets`). For every
system pair ``(x, y)`` and metric ``M``: ``d = M(x, Q_i) - M(y, Q_i)``, ``d'`` on ``Q'_i``;
the comparison goes into the bin of ``|d|`` (absolute bins of width 0.01, the last >= 0.20,
and relative bins of 5% of the smaller mean, :mod:`irsim.kit.bins`) and is a swap if
``d * d' < 0`` or exactly one of them is 0. From the swap rates per bin: the difference
required for 95/90/80% confidence (smallest bin from which every swap rate is <= 5/10/20%),
the maximum performance observed, the relative difference required (required / max) and the
sensitivity (share of comparisons with ``|d|`` >= the required difference), as Sakai's
Tables 1-4; plus the mean number of distinct topics per set and shared by the two sets
(Sakai's Table 5).

One set of topic draws per trial serves every pair and metric (trials are drawn in blocks of
250 keyed by block index), so splitting pairs or trials across shards cannot change any
number. The means of every system on every set of a block of trials are GEMMs,
``C @ X.T`` (trials x topics times topics x systems,
:func:`irsim.sampling.subsets.set_means`); pair differences are gathers of their columns.
Differences within ``1e-9 * max |score|`` of 0 count as exactly 0: a GEMM sum of a
discrete metric (P@10) turns an exact tie into rounding noise of about 1e-17.

A shard (pair block x trial block) returns integer counters per metric, configuration and
bin (:class:`~irsim.engine.partials.Count`), the largest set mean
(:class:`~irsim.engine.partials.Extreme`) and, from the first pair block, the distinct and
shared topics of its trials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard, shard_grid
from irsim.engine.partials import Count, Extreme, Kind
from irsim.errors import ConfigError, param
from irsim.experiments import Shards
from irsim.kit.bins import (
    ABSOLUTE,
    LAYOUTS,
    RELATIVE,
    BinLayout,
    bin_counts,
    is_swap,
    relative_difference,
    required_difference,
)
from irsim.kit.common import (
    PAIR_UNIT,
    aligned_block,
    check_listed,
    check_positive_int,
    pair_index,
    select_metrics,
    unit_ranges,
)
from irsim.kit.tables import SWAP_RATES, SWAP_SUMMARY
from irsim.kit.topicsets import (
    check_schemes,
    check_set_memory,
    check_sizes,
    rates,
    sampling_configs,
)
from irsim.params import Options, fingerprint, option
from irsim.registry import study
from irsim.rng import REPLICATE_BLOCK
from irsim.sampling.subsets import set_means, set_overlap, subset_counts, unique_topics
from irsim.stats.ties import score_tolerance, snap_ties, snap_zero
from irsim.tables import claim, table

__all__ = ["Config", "Swap", "SwapFields", "make", "STREAM", "CONFIDENCES"]

#: Random stream of the topic sets (the scheme is appended by the sampler).
STREAM = "swap/topics"
#: Default confidence levels of the required difference (Sakai: 95%, 90%, 80%).
CONFIDENCES = (0.95, 0.90, 0.80)
#: Comparisons (pairs x trials) per elementwise step of the kernel: small enough that the
#: step's temporaries stay in cache (measured: 4x faster than 64k-element blocks).
CHUNK = 8192
#: Default shard sizes: system pairs x trials.
SHARD_ITEMS, SHARD_REPLICATES = 4096, 1000


@dataclass(frozen=True)
class SwapFields:
    """The names of the study's counters of bin layout `layout`: the one place they are
    spelt (the study's fields, its kernel and its tables ask it).

    Examples
    --------
    >>> SwapFields(ABSOLUTE).names
    ('absolute_comparisons', 'absolute_swaps')
    """

    layout: BinLayout

    @property
    def comparisons(self) -> str:
        """Per metric, configuration and bin: the comparisons."""
        return f"{self.layout.kind}_comparisons"

    @property
    def swaps(self) -> str:
        """Per metric, configuration and bin: the swaps."""
        return f"{self.layout.kind}_swaps"

    @property
    def names(self) -> tuple[str, str]:
        """``(comparisons, swaps)``."""
        return self.comparisons, self.swaps


@dataclass
class Config(Options):
    """Parameters of ``experiment=swap``."""

    name: str = option("swap", "``swap``.")
    metrics: list[str] | None = option(
        None, "Metrics of the collection to study (default: all; the top-level ``metrics`` wins).")
    sampling: list[str] = option(
        ["disjoint", "replacement", "independent"], "Schemes: ``disjoint``, ``independent``, "
        "``replacement``, ``bootstrap`` (a name or a list; sweep with ``-m``).", tables="data")
    subset_sizes: list[int] | None = option(
        None, "Topic-set sizes ``c`` (default ``n // 2``); ``c <= n/2`` for ``disjoint``, ``c <= "
        "n`` for ``independent`` and ``replacement``; ``bootstrap`` always uses ``c = n``.",
        tables="data")
    trials: int = option(
        1000, "Trials (pairs of topic sets) per scheme and size; Sakai used 1000.", ge=1)
    confidence: list[float] = option(
        list(CONFIDENCES), "Confidence levels of the required difference (swap rate <= 1 - "
        "level).", gt=0, lt=1)


@dataclass(frozen=True)
class Swap:
    """The swap-rate study (made by :func:`make`).

    Parameters
    ----------
    config : Config
        The study's parameters, normalised (``trials``, ``confidence``...).
    metrics : tuple of str
        Metrics of the data studied.
    configs : tuple of (scheme, size)
        Sampling configurations, validated against the data's topic count.
    seed : int
        Global seed.
    shard_items : int
        Pairs per shard (rounded up to a multiple of 256).
    shard_replicates : int
        Trials per shard (rounded up to a multiple of 250). Neither size changes a result.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=6, topics=20, seed=1).matrix
    >>> config = Config(sampling=["disjoint"], subset_sizes=[10], trials=100)
    >>> tables, _ = run_study(*make(config, m, seed=0, shards=Shards()))
    >>> tables["swap_rates"].num_rows            # (21 absolute + 20 relative bins)
    41
    >>> int(tables["swap_rates"].column("comparisons").to_numpy()[:21].sum())  # 15 pairs x 100
    1500
    >>> tables["swap_summary"].column("mean_overlap").to_pylist()
    [0.0, 0.0, 0.0]
    """

    config: Config
    metrics: tuple[str, ...]
    configs: tuple[tuple[str, int], ...]
    seed: int = 0
    shard_items: int = SHARD_ITEMS
    shard_replicates: int = SHARD_REPLICATES
    name: str = field(default="swap", init=False)

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Pair blocks x trial blocks."""
        n_sys = len(data.systems)
        return shard_grid(n_sys * (n_sys - 1) // 2, aligned_block(self.shard_items, PAIR_UNIT),
                          self.config.trials,
                          aligned_block(self.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`; `sampling` and `subset_sizes` through the
        configurations they make, `metrics` as those of the data)."""
        return fingerprint(self, Config, derived={"configs": self.configs,
                                                  "metrics": self.metrics})

    def fields(self, data: ScoreMatrix) -> dict[str, Kind]:
        """Counters per metric, configuration and bin; the largest set mean; topic counts."""
        shape = (len(self.metrics), len(self.configs))
        out: dict[str, Kind] = {name: Count((*shape, lay.count)) for lay in LAYOUTS
                                for name in SwapFields(lay).names}
        out["max_performance"] = Extreme(shape, "max")
        out["unique_topics"] = Count((len(self.configs),))
        out["overlap"] = Count((len(self.configs),))
        return out

    # -- kernel ---------------------------------------------------------------------------
    def kernel(self, shard: Shard, data: ScoreMatrix) -> Partial:
        """Comparison and swap counters per metric, configuration and bin of one shard."""
        n = len(data.topics)
        xs = [data.metric(m) for m in self.metrics]
        tols = [score_tolerance(x) for x in xs]
        ia, ib = pair_index(len(data.systems))
        pieces = [(ia[p0:p1], ib[p0:p1]) for p0, p1 in unit_ranges(*shard.items, CHUNK)]
        shape = (len(self.metrics), len(self.configs))
        out: Partial = {name: np.zeros((*shape, lay.count), np.int64) for lay in LAYOUTS
                        for name in SwapFields(lay).names}
        out["max_performance"] = np.full(shape, -np.inf)
        out["unique_topics"] = np.zeros(len(self.configs), np.int64)
        out["overlap"] = np.zeros(len(self.configs), np.int64)
        for t0, t1 in unit_ranges(*shard.reps, REPLICATE_BLOCK):
            for k, (scheme, size) in enumerate(self.configs):
                counts = subset_counts(scheme, self.seed, STREAM, n, size, t0, t1)
                if shard.items[0] == 0:  # per-trial figures: counted once per trial
                    out["unique_topics"][k] += int(unique_topics(counts).sum())
                    out["overlap"][k] += int(set_overlap(counts).sum())
                for mi, x in enumerate(xs):
                    means = set_means(x, counts, size)  # (trials, 2, systems)
                    out["max_performance"][mi, k] = max(out["max_performance"][mi, k],
                                                        float(means.max()))
                    means = snap_ties(means)  # the tie rule over the systems of each set
                    # blocks of ~CHUNK comparisons (trials x pairs) stay in cache; the work
                    # is elementwise with integer counters, so blocking changes no number
                    for a, b in pieces:
                        rows = max(1, CHUNK // len(a))
                        for r0 in range(0, len(means), rows):
                            block = means[r0:r0 + rows]
                            self._count(out, mi, k, np.take(block, a, axis=2),
                                        np.take(block, b, axis=2), tols[mi])
        return out

    @staticmethod
    def _count(out: Partial, mi: int, k: int, ma: np.ndarray, mb: np.ndarray,
               tol: float) -> None:
        """Fold a block of comparisons into the counters; ma, mb: (trials, 2, pairs) means
        of the pairs' first and second systems on the two sets."""
        d = snap_zero(ma[:, 0] - mb[:, 0], tol)
        d2 = snap_zero(ma[:, 1] - mb[:, 1], tol)
        swap = is_swap(d, d2, zero_swaps=True)
        absd = np.abs(d)
        rel = relative_difference(ma[:, 0], mb[:, 0], absd)
        for lay, values in ((ABSOLUTE, absd), (RELATIVE, rel)):
            comps, hits = bin_counts(lay, values, swap)
            f = SwapFields(lay)
            out[f.comparisons][mi, k] += comps
            out[f.swaps][mi, k] += hits

    # -- tables ---------------------------------------------------------------------------
    def finalize(self, merged: dict[str, Any], data: ScoreMatrix) -> dict[str, pa.Table]:
        """``swap_rates`` (per bin) and ``swap_summary`` (per confidence level)."""
        s, trials = merged, self.config.trials
        rate_cols: dict[str, list] = {c: [] for c in (
            "metric", "sampling", "subset_size", "bin_kind", "bin_lo", "bin_hi", "comparisons",
            "swaps", "swap_rate")}
        summary: list[dict] = []
        for mi, metric in enumerate(self.metrics):
            for k, (scheme, size) in enumerate(self.configs):
                for lay in LAYOUTS:
                    comps, swaps = (s[name][mi, k] for name in SwapFields(lay).names)
                    rate_cols["metric"] += [metric] * lay.count
                    rate_cols["sampling"] += [scheme] * lay.count
                    rate_cols["subset_size"] += [size] * lay.count
                    rate_cols["bin_kind"] += [lay.kind] * lay.count
                    rate_cols["bin_lo"] += lay.lo.tolist()
                    rate_cols["bin_hi"] += lay.hi.tolist()
                    rate_cols["comparisons"] += comps.tolist()
                    rate_cols["swaps"] += swaps.tolist()
                    rate_cols["swap_rate"] += rates(swaps, comps).tolist()
                absolute = [s[name][mi, k] for name in SwapFields(ABSOLUTE).names]
                relative = [s[name][mi, k] for name in SwapFields(RELATIVE).names]
                total = int(absolute[0].sum())
                max_perf = float(s["max_performance"][mi, k])
                for conf in self.config.confidence:
                    req, sens = _required(*absolute, ABSOLUTE, 1.0 - conf)
                    rreq, rsens = _required(*relative, RELATIVE, 1.0 - conf)
                    summary.append({
                        "metric": metric, "sampling": scheme, "subset_size": size,
                        "confidence": conf, "required_diff": req,
                        "max_performance": max_perf,
                        "relative_diff": req / max_perf if max_perf > 0 else float("nan"),
                        "sensitivity": sens,
                        "mean_unique_topics": float(s["unique_topics"][k]) / (2 * trials),
                        "mean_overlap": float(s["overlap"][k]) / trials,
                        "comparisons": total,
                        "comparisons_above": None,  # discpower's column
                        "required_reldiff": rreq,
                        "sensitivity_reldiff": rsens,
                    })
        return {"swap_rates": table("swap_rates", rate_cols),
                "swap_summary": table("swap_summary", summary)}


def _required(comps: np.ndarray, swaps: np.ndarray, lay: BinLayout,
              threshold: float) -> tuple[float, float]:
    """(required difference, share of comparisons in the bins from it on)."""
    req = required_difference(comps, swaps, lay.lo, threshold)
    total = comps.sum()
    if not np.isfinite(req) or total == 0:
        return req, float("nan")
    return req, float(comps[lay.lo >= req - 1e-12].sum() / total)


@study("swap", config=Config, data="matrix", order=20,
       title="Swap rates",
       example=dict(overrides={"synthetic": ["experiment.trials=100"]},
                    keywords=dict(subset_sizes=[5, 10], trials=40), figures=["swap_rates_*"]),
       tables=(
           claim(SWAP_RATES, notes={
               "sampling": "`disjoint`, `independent`, `replacement` or `bootstrap`",
               "swaps": "also counts exactly one of d, d' being 0"}),
           claim(SWAP_SUMMARY, fills=("required_reldiff", "sensitivity_reldiff"), notes={
               "sampling": "`disjoint`, `independent`, `replacement` or `bootstrap`",
               "sensitivity": "NaN when required_diff is NaN"})),
       description=("swap rates under topic sampling (disjoint / independent / replacement / "
                    "bootstrap): swap-rate curves, difference required, sensitivity (Voorhees-"
                    "Buckley, Sakai)"),
       headlines={"swap_summary": (
           ("metric", "sampling", "subset_size", "confidence"), "required_diff")},
       question=("How often does another topic set reverse a result, and how does topic "
                 "sampling change the answer? (Voorhees-Buckley; Sakai)"))
def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Shards
         ) -> tuple[Swap, ScoreMatrix]:
    """The study of `config` on `data` (restricted to ``config.metrics``), validated.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> m = synthetic_scores(systems=4, topics=20, seed=1).matrix
    >>> study, _ = make(Config(sampling=["disjoint", "bootstrap"]), m, seed=0, shards=Shards())
    >>> study.configs, study.shard_items
    ((('disjoint', 10), ('bootstrap', 20)), 4096)
    """
    matrix = select_metrics(data, config.metrics)
    schemes = check_schemes(config.sampling)
    sizes = check_sizes(config.subset_sizes)
    check_listed(config.confidence, param("confidence"), "confidence level")
    items, replicates = shards.get(SHARD_ITEMS, SHARD_REPLICATES)
    check_positive_int(items, param("shard_items", "engine"))
    check_positive_int(replicates, param("shard_replicates", "engine"))
    if len(matrix.systems) < 2:
        raise ConfigError(f"swap rates need >= 2 systems, got {len(matrix.systems)}")
    if len(matrix.topics) < 2:
        raise ConfigError(f"swap rates need >= 2 topics, got {len(matrix.topics)}")
    check_set_memory(len(matrix.topics), "swap rates")
    study = Swap(config, metrics=tuple(matrix.metrics),
                 configs=sampling_configs(schemes, sizes, len(matrix.topics)),
                 seed=int(seed), shard_items=items,
                 shard_replicates=replicates)
    return study, matrix
