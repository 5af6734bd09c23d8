"""Swap rates under topic sampling (Voorhees-Buckley 2002; Sakai, "The effect of topic
sampling in sensitivity comparisons of IR metrics"; METHODS.md section 4).

Each trial ``i`` draws two topic sets ``Q_i`` and ``Q'_i`` of size ``c`` (``disjoint``,
``independent``, ``replacement`` or ``bootstrap``, :mod:`irsim.sampling.subsets`). For every
system pair ``(x, y)`` and metric ``M``: ``d = M(x, Q_i) - M(y, Q_i)``, ``d'`` on ``Q'_i``;
the comparison goes into the bin of ``|d|`` (absolute bins of width 0.01, the last >= 0.20,
and relative bins of 5% of the smaller mean, :mod:`irsim.experiments.bins`) and is a swap if
``d * d' < 0`` or exactly one of them is 0. From the swap rates per bin: the difference
required for 95/90/80% confidence (smallest bin from which every swap rate is <= 5/10/20%),
the maximum performance observed, the relative difference required (required / max) and the
sensitivity (share of comparisons with ``|d|`` >= the required difference), as Sakai's
Tables 1-4; plus the mean number of distinct topics per set and shared by the two sets
(Sakai's Table 5).

One set of topic draws per trial serves every pair and metric (trials are drawn in blocks of
250 keyed by block index), so splitting pairs or trials across shards cannot change any
number. The means of every system on every set of a block of trials are GEMMs,
``C @ X.T`` (trials x topics times topics x systems); pair differences are gathers of their
columns. Differences within ``1e-9 * max |score|`` of 0 count as exactly 0: a GEMM sum of a
discrete metric (P@10) turns an exact tie into rounding noise of about 1e-17.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard, shard_grid
from irsim.errors import ConfigError
from irsim.experiments.bins import (
    ABSOLUTE,
    RELATIVE,
    BinLayout,
    is_swap,
    relative_difference,
    required_difference,
)
from irsim.experiments.common import (
    PAIR_UNIT,
    aligned_block,
    check_alphas,
    check_positive_int,
    pair_index,
    resolve_metrics,
    unit_ranges,
)
from irsim.sampling.rng import REPLICATE_BLOCK
from irsim.sampling.subsets import (
    check_scheme,
    check_subset_size,
    set_overlap,
    subset_counts,
    unique_topics,
)
from irsim.stats.resample import TIE_RTOL

__all__ = [
    "Swap",
    "STREAM",
    "CONFIDENCES",
    "tie_tolerance_of",
    "set_means",
    "gemm_trials",
    "snap_ties",
    "bin_counts",
    "sampling_configs",
    "as_tuple",
    "preset_metrics",
    "check_schemes",
    "check_sizes",
    "check_levels",
]

#: Random stream of the topic sets (the scheme is appended by the sampler).
STREAM = "swap/topics"
#: Default confidence levels of the required difference (Sakai: 95%, 90%, 80%).
CONFIDENCES = (0.95, 0.90, 0.80)
LAYOUTS: tuple[BinLayout, ...] = (ABSOLUTE, RELATIVE)
#: Comparisons (pairs x trials) per elementwise step of the kernel: small enough that the
#: step's temporaries stay in cache (measured: 4x faster than 64k-element blocks).
CHUNK = 8192


# -- pieces shared with error_rates and effort ----------------------------------------------
def as_tuple(value: Any) -> tuple:
    """A config value that may be a scalar or a list, as a tuple (None stays None).

    Examples
    --------
    >>> as_tuple("disjoint"), as_tuple([5, 10]), as_tuple(None)
    (('disjoint',), (5, 10), None)
    """
    if value is None:
        return None
    if isinstance(value, str | int | float):
        return (value,)
    return tuple(value)


def preset_metrics(matrix: ScoreMatrix, cfg: Any) -> ScoreMatrix:
    """`matrix` restricted to ``experiment.metrics`` when the top-level ``metrics`` is unset.

    A preset (``# @package _global_``) cannot set the top-level ``metrics`` (config.yaml's
    own value wins), so presets name their metrics under ``experiment.metrics``.

    Examples
    --------
    >>> from omegaconf import OmegaConf
    >>> m = ScoreMatrix(np.zeros((2, 2, 2)), ["AP", "RR"], ["a", "b"], ["1", "2"])
    >>> cfg = OmegaConf.create({"metrics": None, "experiment": {"metrics": ["RR"]}})
    >>> preset_metrics(m, cfg).metrics
    ('RR',)
    """
    from irsim.experiments.loading import metrics_arg

    wanted = cfg.experiment.get("metrics") if "experiment" in cfg else None
    if metrics_arg(cfg) is not None or not wanted:
        return matrix
    return matrix.select(metrics=[str(m) for m in as_tuple(wanted)])


def tie_tolerance_of(x: np.ndarray) -> float:
    """Half-width of "difference = 0" for means of the scores `x`: ``TIE_RTOL * max |x|``.

    Examples
    --------
    >>> tie_tolerance_of(np.array([[0.2, 1.0], [0.5, 0.0]]))
    1e-09
    """
    scale = float(np.abs(x).max()) if np.size(x) else 0.0
    return TIE_RTOL * scale


def gemm_trials(systems: int, topics: int) -> int:
    """Trials per GEMM of :func:`set_means`: the largest divisor of 250 keeping
    ``systems * topics * trials <= 2**18``, at least 1.

    Below that size OpenBLAS computes a product on the calling thread; bigger products of
    this study are still small, and threaded ones left the BLAS threads spinning next to the
    elementwise work (2.3x slower on a busy 2-core machine, bench/bench_swap.py). The block
    depends on the data's shape only, and blocks start at multiples of it, so the products
    are the same for every sharding.

    Examples
    --------
    >>> gemm_trials(129, 50), gemm_trials(20, 50), gemm_trials(2000, 1000)
    (25, 250, 1)
    """
    for t in (250, 125, 50, 25, 10, 5, 2, 1):
        if systems * topics * t <= 1 << 18:
            return t
    return 1


def set_means(x: np.ndarray, counts: np.ndarray, size: int) -> np.ndarray:
    """Mean score of every system on every set of a block of trials: ``C @ X.T / size``.

    Parameters
    ----------
    x : ndarray, shape (systems, n)
    counts : ndarray, shape (trials, sets, n)
        Selection counts (:func:`irsim.sampling.subsets.subset_counts`) of trials starting
        at a multiple of 250.
    size : int
        Topics per set (the row sums of `counts`).

    Returns
    -------
    ndarray, shape (trials, sets, systems)
        Trial-major: the means of a block of trials are contiguous.

    Examples
    --------
    >>> x = np.array([[0.1, 0.2, 0.6], [0.3, 0.3, 0.0]])
    >>> c = np.array([[[1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]])   # one trial, two sets
    >>> set_means(x, c, 2).round(3).tolist()
    [[[0.15, 0.3], [0.6, 0.0]]]
    """
    trials, sets, n = counts.shape
    flat = counts.reshape(trials * sets, n)
    xt = np.ascontiguousarray(x.T)
    out = np.empty((trials * sets, x.shape[0]))
    step = gemm_trials(x.shape[0], n) * sets
    for r0 in range(0, len(flat), step):
        np.matmul(flat[r0:r0 + step], xt, out=out[r0:r0 + step])
    out /= size
    return out.reshape(trials, sets, x.shape[0])


def snap_ties(d: np.ndarray, tol: float) -> np.ndarray:
    """`d` with entries ``|d| <= tol`` set to exactly 0 (in place; returned).

    Examples
    --------
    >>> snap_ties(np.array([1e-17, -0.1, -2e-12]), 1e-9).tolist()
    [0.0, -0.1, 0.0]
    """
    np.copyto(d, 0.0, where=np.abs(d) <= tol)
    return d


def bin_counts(layout: BinLayout, values: np.ndarray, flags: np.ndarray) -> tuple[np.ndarray,
                                                                                    np.ndarray]:
    """(comparisons, flagged) per bin of `layout` (int64 each); `values` >= 0, may be inf.

    Examples
    --------
    >>> c, s = bin_counts(ABSOLUTE, np.array([0.0, 0.005, 0.3]), np.array([True, False, True]))
    >>> c[[0, 20]].tolist(), s[[0, 20]].tolist()
    ([2, 1], [1, 1])
    """
    key = layout.index(values)  # one bincount of (bin, flag) pairs: 2 * bin + flag
    key *= 2
    key += flags
    both = np.bincount(key.ravel(), minlength=2 * layout.count)
    both = both.reshape(layout.count, 2)
    return both.sum(axis=1).astype(np.int64), both[:, 1].astype(np.int64)


def sampling_configs(schemes: Sequence[str], sizes: Sequence[int] | None, n: int, *,
                     sets: int = 2) -> list[tuple[str, int]]:
    """The (scheme, size) combinations of a study on `n` topics, validated.

    ``bootstrap`` always has size ``n`` (given sizes do not apply to it); ``sizes=None``
    means ``[n // 2]``.

    Examples
    --------
    >>> sampling_configs(["disjoint", "bootstrap"], [10, 20], 42)
    [('disjoint', 10), ('disjoint', 20), ('bootstrap', 42)]
    >>> sampling_configs(["disjoint"], [22], 42)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.subset_sizes: 22 > n/2 = 21.0 for disjoint \
sampling of 2 sets from 42 topics
    """
    sizes = (n // 2,) if sizes is None else tuple(sizes)
    out = []
    for scheme in schemes:
        if scheme == "bootstrap":
            out.append((scheme, n))
            continue
        if not sizes:
            raise ConfigError("experiment.subset_sizes must list at least one size")
        out += [(scheme, check_subset_size(scheme, n, s, sets=sets)) for s in sizes]
    return out


def check_schemes(sampling: Any) -> tuple[str, ...]:
    """Validated, de-duplicated sampling schemes from a config value (name or list).

    Examples
    --------
    >>> check_schemes("disjoint,replacement".split(","))
    ('disjoint', 'replacement')
    """
    schemes = as_tuple(sampling)
    if not schemes:
        raise ConfigError("experiment.sampling must name at least one scheme")
    schemes = tuple(dict.fromkeys(check_scheme(s) for s in schemes))
    return schemes


def check_sizes(sizes: Any) -> tuple[int, ...] | None:
    """Validated, de-duplicated topic-set sizes (None stays None).

    Examples
    --------
    >>> check_sizes([5, 10, 5]), check_sizes(20)
    ((5, 10), (20,))
    """
    sizes = as_tuple(sizes)
    if sizes is None:
        return None
    out = []
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 1:
            raise ConfigError(f"experiment.subset_sizes must hold integers >= 1, got {s!r}")
        out.append(int(s))
    return tuple(dict.fromkeys(out))


def check_levels(levels: Any, name: str) -> tuple[float, ...]:
    """Confidence levels, each inside (0, 1).

    Examples
    --------
    >>> check_levels([0.95, 0.8], "experiment.confidence")
    (0.95, 0.8)
    """
    return check_alphas(as_tuple(levels) or (), name)


# -- the study --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Swap:
    """The swap-rate study.

    Parameters
    ----------
    metrics : sequence of str, optional
        Metrics of the score matrix to study (default: all).
    sampling : sequence of str
        Schemes: ``disjoint``, ``independent``, ``replacement``, ``bootstrap``.
    subset_sizes : sequence of int, optional
        Topic-set sizes ``c`` (default ``n // 2``); ``c <= n/2`` for ``disjoint``, ``c <= n``
        otherwise; ``bootstrap`` always uses ``c = n``.
    trials : int
        Trials (pairs of topic sets) per scheme and size; Sakai used 1000.
    confidences : sequence of float
        Confidence levels of the required difference (swap rate <= 1 - level).
    seed : int
        Global seed.
    shard_pairs : int
        Pairs per shard (rounded up to a multiple of 256).
    shard_replicates : int
        Trials per shard (rounded up to a multiple of 250). Neither size changes a result.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=6, topics=20, seed=1).matrix
    >>> tables, _ = run_study(Swap(sampling=("disjoint",), subset_sizes=(10,), trials=100), m)
    >>> tables["swap_rates"].num_rows            # (21 absolute + 20 relative bins)
    41
    >>> int(tables["swap_rates"].column("comparisons").to_numpy()[:21].sum())  # 15 pairs x 100
    1500
    >>> tables["swap_summary"].column("mean_overlap").to_pylist()
    [0.0, 0.0, 0.0]
    """

    metrics: tuple[str, ...] | None = None
    sampling: tuple[str, ...] = ("disjoint", "replacement", "independent")
    subset_sizes: tuple[int, ...] | None = None
    trials: int = 1000
    confidences: tuple[float, ...] = CONFIDENCES
    seed: int = 0
    shard_pairs: int = 4096
    shard_replicates: int = 1000
    name: str = field(default="swap", init=False)

    def __post_init__(self) -> None:
        if self.metrics is not None:
            object.__setattr__(self, "metrics", tuple(as_tuple(self.metrics)))
        object.__setattr__(self, "sampling", check_schemes(self.sampling))
        object.__setattr__(self, "subset_sizes", check_sizes(self.subset_sizes))
        object.__setattr__(self, "trials", check_positive_int(self.trials, "experiment.trials"))
        object.__setattr__(self, "confidences",
                           check_levels(self.confidences, "experiment.confidence"))
        check_positive_int(self.shard_pairs, "engine.shard_pairs")
        check_positive_int(self.shard_replicates, "engine.shard_replicates")

    # -- plan -----------------------------------------------------------------------------
    def _metrics(self, data: ScoreMatrix) -> tuple[str, ...]:
        return resolve_metrics(self.metrics, data.metrics)

    def configs(self, data: ScoreMatrix) -> list[tuple[str, int]]:
        """The (scheme, size) combinations on `data`, validated against its topic count."""
        return sampling_configs(self.sampling, self.subset_sizes, len(data.topics))

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Pair blocks x trial blocks."""
        if len(data.systems) < 2:
            raise ConfigError(f"swap rates need >= 2 systems, got {len(data.systems)}")
        if len(data.topics) < 2:
            raise ConfigError(f"swap rates need >= 2 topics, got {len(data.topics)}")
        self._metrics(data)
        self.configs(data)
        n_sys = len(data.systems)
        return shard_grid(n_sys * (n_sys - 1) // 2, aligned_block(self.shard_pairs, PAIR_UNIT),
                          self.trials, aligned_block(self.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        return {k: getattr(self, k) for k in ("metrics", "sampling", "subset_sizes", "trials",
                                             "confidences", "seed")}

    # -- kernel ---------------------------------------------------------------------------
    def kernel(self, shard: Shard, data: ScoreMatrix) -> Partial:
        """Comparison and swap counters per metric, configuration and bin of one shard."""
        metrics = self._metrics(data)
        configs = self.configs(data)
        n = len(data.topics)
        xs = [data.metric(m) for m in metrics]
        tols = [tie_tolerance_of(x) for x in xs]
        ia, ib = pair_index(len(data.systems))
        pieces = [(ia[p0:p1], ib[p0:p1]) for p0, p1 in unit_ranges(*shard.items, CHUNK)]
        shape = (len(metrics), len(configs))
        out: Partial = {
            f"{lay.kind}_{what}": np.zeros((*shape, lay.count), np.int64)
            for lay in LAYOUTS for what in ("comparisons", "swaps")
        }
        out["max_performance"] = np.full(shape, -np.inf)
        out["unique_topics"] = np.zeros(len(configs), np.int64)
        out["overlap"] = np.zeros(len(configs), np.int64)
        for t0, t1 in unit_ranges(*shard.reps, REPLICATE_BLOCK):
            for k, (scheme, size) in enumerate(configs):
                counts = subset_counts(scheme, self.seed, STREAM, n, size, t0, t1)
                if shard.items[0] == 0:  # per-trial figures: counted once per trial
                    out["unique_topics"][k] += int(unique_topics(counts).sum())
                    out["overlap"][k] += int(set_overlap(counts).sum())
                for mi, x in enumerate(xs):
                    means = set_means(x, counts, size)  # (trials, 2, systems)
                    out["max_performance"][mi, k] = max(out["max_performance"][mi, k],
                                                        float(means.max()))
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
        d = snap_ties(ma[:, 0] - mb[:, 0], tol)
        d2 = snap_ties(ma[:, 1] - mb[:, 1], tol)
        swap = is_swap(d, d2, zero_swaps=True)
        absd = np.abs(d)
        rel = relative_difference(ma[:, 0], mb[:, 0], absd)
        for lay, values in ((ABSOLUTE, absd), (RELATIVE, rel)):
            comps, hits = bin_counts(lay, values, swap)
            out[f"{lay.kind}_comparisons"][mi, k] += comps
            out[f"{lay.kind}_swaps"][mi, k] += hits

    def reducer(self, data: ScoreMatrix) -> _SwapReducer:
        """A fresh reducer for this study on `data`."""
        return _SwapReducer(self, data)


class _SwapReducer:
    """Integer counters (summed), maximum performance (max)."""

    def __init__(self, study: Swap, data: ScoreMatrix):
        self.study = study
        self.metrics = study._metrics(data)
        self.configs = study.configs(data)
        self.state: dict[str, np.ndarray] = {}

    def combine(self, shard: Shard, partial: Partial) -> None:
        for key, arr in partial.items():
            if key not in self.state:
                self.state[key] = np.array(arr, copy=True)
            elif key == "max_performance":
                np.maximum(self.state[key], arr, out=self.state[key])
            else:
                self.state[key] += arr

    def finalize(self) -> dict[str, pa.Table]:
        study, s = self.study, self.state
        rate_cols: dict[str, list] = {c: [] for c in (
            "metric", "sampling", "subset_size", "bin_kind", "bin_lo", "bin_hi", "comparisons",
            "swaps", "swap_rate")}
        summary: list[dict] = []
        for mi, metric in enumerate(self.metrics):
            for k, (scheme, size) in enumerate(self.configs):
                for lay in LAYOUTS:
                    comps = s[f"{lay.kind}_comparisons"][mi, k]
                    swaps = s[f"{lay.kind}_swaps"][mi, k]
                    rate_cols["metric"] += [metric] * lay.count
                    rate_cols["sampling"] += [scheme] * lay.count
                    rate_cols["subset_size"] += [size] * lay.count
                    rate_cols["bin_kind"] += [lay.kind] * lay.count
                    rate_cols["bin_lo"] += lay.lo.tolist()
                    rate_cols["bin_hi"] += lay.hi.tolist()
                    rate_cols["comparisons"] += comps.tolist()
                    rate_cols["swaps"] += swaps.tolist()
                    rate_cols["swap_rate"] += _rates(swaps, comps).tolist()
                total = int(s["absolute_comparisons"][mi, k].sum())
                max_perf = float(s["max_performance"][mi, k])
                for conf in study.confidences:
                    req, sens = _required(s["absolute_comparisons"][mi, k],
                                          s["absolute_swaps"][mi, k], ABSOLUTE, 1.0 - conf)
                    rreq, rsens = _required(s["relative_comparisons"][mi, k],
                                            s["relative_swaps"][mi, k], RELATIVE, 1.0 - conf)
                    summary.append({
                        "metric": metric, "sampling": scheme, "subset_size": size,
                        "confidence": conf, "required_diff": req,
                        "max_performance": max_perf,
                        "relative_diff": req / max_perf if max_perf > 0 else float("nan"),
                        "sensitivity": sens,
                        "mean_unique_topics": float(s["unique_topics"][k]) / (2 * study.trials),
                        "mean_overlap": float(s["overlap"][k]) / study.trials,
                        "comparisons": total,
                        "required_reldiff": rreq,
                        "sensitivity_reldiff": rsens,
                    })
        rates = pa.table({
            "metric": pa.array(rate_cols["metric"], pa.string()),
            "sampling": pa.array(rate_cols["sampling"], pa.string()),
            "subset_size": pa.array(rate_cols["subset_size"], pa.int64()),
            "bin_kind": pa.array(rate_cols["bin_kind"], pa.string()),
            "bin_lo": pa.array(rate_cols["bin_lo"], pa.float64()),
            "bin_hi": pa.array(rate_cols["bin_hi"], pa.float64()),
            "comparisons": pa.array(rate_cols["comparisons"], pa.int64()),
            "swaps": pa.array(rate_cols["swaps"], pa.int64()),
            "swap_rate": pa.array(rate_cols["swap_rate"], pa.float64()),
        })
        summ = pa.Table.from_pylist(summary, schema=SUMMARY_SCHEMA)
        return {"swap_rates": rates, "swap_summary": summ}


SUMMARY_SCHEMA = pa.schema([
    ("metric", pa.string()), ("sampling", pa.string()), ("subset_size", pa.int64()),
    ("confidence", pa.float64()), ("required_diff", pa.float64()),
    ("max_performance", pa.float64()), ("relative_diff", pa.float64()),
    ("sensitivity", pa.float64()), ("mean_unique_topics", pa.float64()),
    ("mean_overlap", pa.float64()), ("comparisons", pa.int64()),
    ("required_reldiff", pa.float64()), ("sensitivity_reldiff", pa.float64()),
])


def _rates(hits: np.ndarray, comps: np.ndarray) -> np.ndarray:
    """hits / comps per bin, NaN where a bin is empty."""
    out = np.full(len(comps), np.nan)
    np.divide(hits, comps, out=out, where=comps > 0)
    return out


def _required(comps: np.ndarray, swaps: np.ndarray, lay: BinLayout,
              threshold: float) -> tuple[float, float]:
    """(required difference, share of comparisons in the bins from it on)."""
    req = required_difference(comps, swaps, lay.lo, threshold)
    total = comps.sum()
    if not np.isfinite(req) or total == 0:
        return req, float("nan")
    return req, float(comps[lay.lo >= req - 1e-12].sum() / total)


DESCRIPTION = ("swap rates under topic sampling (disjoint / independent / replacement / "
               "bootstrap): swap-rate curves, difference required, sensitivity (Voorhees-"
               "Buckley, Sakai)")


def build(cfg: Any) -> tuple[Swap, ScoreMatrix]:
    """The study of the ``experiment`` config node on the configured collection."""
    from irsim.experiments.loading import engine_shards, score_matrix

    e = cfg.experiment
    matrix = preset_metrics(score_matrix(cfg), cfg)
    shard_pairs, shard_reps = engine_shards(cfg).get(4096, 1000)
    study = Swap(
        metrics=tuple(matrix.metrics),
        sampling=as_tuple(e.get("sampling", Swap.sampling)),
        subset_sizes=as_tuple(e.get("subset_sizes")),
        trials=e.get("trials", 1000),
        confidences=as_tuple(e.get("confidence", CONFIDENCES)),
        seed=cfg.seed,
        shard_pairs=shard_pairs,
        shard_replicates=shard_reps,
    )
    study.plan(matrix)  # validate sizes against the collection before the run starts
    return study, matrix


def report_sections(tables: dict, run_dir: Any) -> list[str]:
    """Summary table and swap-rate curves for report.md."""
    from irsim.report import markdown_table
    from irsim.report.swap import swap_rate_curves

    lines: list[str] = []
    if "swap_summary" in tables:
        summ = tables["swap_summary"]
        cols = ["metric", "sampling", "subset_size", "confidence", "required_diff",
                "max_performance", "relative_diff", "sensitivity", "mean_unique_topics",
                "mean_overlap"]
        lines += ["## Swap-rate summary", "",
                  "Per metric, sampling scheme and topic-set size c: the absolute difference "
                  "required for the confidence level (smallest bin from which every swap "
                  "rate is <= 1 - confidence; empty if no bin qualifies), the maximum "
                  "performance observed on any set, relative difference = required / max, "
                  "sensitivity = share of comparisons with |d| >= required (Sakai's columns "
                  "(i)-(iv)), and the mean number of distinct topics per set and shared by "
                  "the two sets of a trial.", "",
                  markdown_table(summ.select(cols), max_rows=60), ""]
    if "swap_rates" in tables:
        lines += ["## Swap-rate curves", "",
                  "Swap rate per bin of |d| on the first set (left: absolute bins of 0.01, the "
                  "last >= 0.20; right: relative to the smaller mean, 5% bins). The dotted "
                  "lines are the 5%, 10% and 20% swap rates of 95/90/80% confidence.", ""]
        for path in swap_rate_curves(tables["swap_rates"], run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    return lines
