"""Discriminative power by bootstrap hypothesis tests (Sakai, SIGIR 2006).

For every system pair and metric: the achieved significance level (ASL) of the paired
studentised bootstrap test and of the unpaired bootstrap test (and the paired t test);
discriminative power (share of pairs with ASL < alpha) and the estimated difference
required for ASL < alpha (METHODS.md section 3).

One set of bootstrap topic samples serves every pair and metric (as in the paper), keyed by
replicate block, so splitting pairs or replicates across shards cannot change any number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard, shard_grid
from irsim.errors import ConfigError, unknown_name
from irsim.experiments.common import (
    PAIR_UNIT,
    aligned_block,
    check_alphas,
    check_positive_int,
    pair_index,
    round_sig,
    topk_rows,
    unit_ranges,
)
from irsim.sampling.rng import REPLICATE_BLOCK
from irsim.sampling.topics import bootstrap_counts, bootstrap_indices, indices_to_counts
from irsim.stats.resample import (
    paired_bootstrap_replicates,
    studentized_t,
    unpaired_bootstrap_replicates,
)
from irsim.stats.ties import count_extreme

__all__ = ["DiscPower", "TESTS"]

#: Tests this study runs, by config name.
TESTS = ("paired_bootstrap", "unpaired_bootstrap", "t")
_RESAMPLED = ("paired_bootstrap", "unpaired_bootstrap")
PAIRED_STREAM = "discpower/paired"
UNPAIRED_STREAM = "discpower/unpaired"


@dataclass(frozen=True)
class DiscPower:
    """The discriminative-power study.

    Parameters
    ----------
    metrics : sequence of str
        Metrics of the score matrix to study (default: all).
    tests : sequence of str
        Any of ``paired_bootstrap``, ``unpaired_bootstrap``, ``t``.
    B : int
        Bootstrap samples per test.
    alphas : sequence of float
        Significance levels for discriminative power and the estimated difference.
    seed : int
        Global seed.
    pvalue : {"count", "plus_one"}
        ASL as ``count/B`` (Sakai) or ``(count+1)/(B+1)``.
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
    """

    metrics: tuple[str, ...] | None = None
    tests: tuple[str, ...] = ("paired_bootstrap", "unpaired_bootstrap")
    B: int = 1000
    alphas: tuple[float, ...] = (0.01, 0.05)
    seed: int = 0
    pvalue: str = "count"
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
        if self.metrics is not None:
            object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "B", check_positive_int(self.B, "experiment.B"))
        object.__setattr__(self, "alphas", check_alphas(self.alphas))
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

    def _metrics(self, data: ScoreMatrix) -> tuple[str, ...]:
        names = self.metrics if self.metrics is not None else data.metrics
        for m in names:
            if m not in data.metrics:
                raise unknown_name("metric", m, data.metrics)
        return tuple(names)

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Pair blocks x replicate blocks."""
        n_sys = len(data.systems)
        if n_sys < 2:
            raise ConfigError(f"discriminative power needs >= 2 systems, got {n_sys}")
        if len(data.topics) < 2:
            raise ConfigError(f"discriminative power needs >= 2 topics, got {len(data.topics)}")
        self._metrics(data)
        n_pairs = n_sys * (n_sys - 1) // 2
        resampled = any(t in _RESAMPLED for t in self.tests)
        return shard_grid(n_pairs, aligned_block(self.shard_pairs, PAIR_UNIT),
                          self.B if resampled else 0,
                          aligned_block(self.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        return {k: getattr(self, k) for k in ("metrics", "tests", "B", "alphas", "seed",
                                             "pvalue")}

    # -- kernel -------------------------------------------------------------------------
    def kernel(self, shard: Shard, data: ScoreMatrix) -> Partial:
        """Counters and top-k replicates of one pair block x replicate block."""
        units = [self._unit(data, p, shard.reps) for p in unit_ranges(*shard.items, PAIR_UNIT)]
        return {key: np.concatenate([u[key] for u in units]) for key in units[0]}

    def _unit(self, data: ScoreMatrix, items: tuple[int, int], reps: tuple[int, int]) -> Partial:
        """One unit of at most 256 pairs; replicates in 250-wide units (canonical GEMMs)."""
        ia, ib = pair_index(len(data.systems))
        ia, ib = ia[slice(*items)], ib[slice(*items)]
        n = len(data.topics)
        r0, r1 = reps
        rep_units = unit_ranges(r0, r1, REPLICATE_BLOCK)
        rep_idx = np.arange(r0, r1, dtype=np.int64)
        k = min(self.k, r1 - r0)
        paired = "paired_bootstrap" in self.tests and r1 > r0
        unpaired = "unpaired_bootstrap" in self.tests and r1 > r0
        counts, halves = [], []
        for a, b in rep_units:
            if paired:
                counts.append(bootstrap_counts(self.seed, PAIRED_STREAM, n, a, b))
            if unpaired:
                idx = bootstrap_indices(self.seed, UNPAIRED_STREAM, 2 * n, a, b)
                halves.append((indices_to_counts(idx[:, :n], 2 * n),
                               indices_to_counts(idx[:, n:], 2 * n)))
        out: Partial = {}
        for mi, metric in enumerate(self._metrics(data)):
            x = data.metric(metric)
            xa, xb = x[ia], x[ib]
            z = xa - xb
            if r0 == 0:
                out[f"m{mi}_diff"] = z.mean(axis=1)
                out[f"m{mi}_tobs"] = studentized_t(z)
            if paired:
                t_obs = studentized_t(z)
                w = z - z.mean(axis=1, keepdims=True)
                reps_tm = [paired_bootstrap_replicates(w, c) for c in counts]
                t_star = np.concatenate([r[0] for r in reps_tm], axis=1)
                m_star = np.concatenate([r[1] for r in reps_tm], axis=1)
                out[f"m{mi}_paired_bootstrap_ge"] = count_extreme(t_star, t_obs, "two-sided",
                                                                   1.0)
                val, rid, aux = topk_rows(np.abs(t_star), rep_idx, k, np.abs(m_star),
                                          idx_sorted=True)
                out[f"m{mi}_paired_bootstrap_topv"] = val
                out[f"m{mi}_paired_bootstrap_topi"] = rid
                out[f"m{mi}_paired_bootstrap_topa"] = aux
            if unpaired:
                ma, mb = xa.mean(axis=1), xb.mean(axis=1)
                d_obs = ma - mb
                d_star = np.concatenate(
                    [unpaired_bootstrap_replicates(xa, xb, f, s) for f, s in halves], axis=1)
                out[f"m{mi}_unpaired_bootstrap_ge"] = count_extreme(
                    d_star, d_obs, "two-sided", np.abs(ma) + np.abs(mb))
                val, rid = topk_rows(np.abs(d_star), rep_idx, k, idx_sorted=True)
                out[f"m{mi}_unpaired_bootstrap_topv"] = val
                out[f"m{mi}_unpaired_bootstrap_topi"] = rid
        return out

    def reducer(self, data: ScoreMatrix) -> _DiscPowerReducer:
        """A fresh reducer for this study on `data`."""
        return _DiscPowerReducer(self, data)


class _DiscPowerReducer:
    """Integer counters per pair, observed statistics, and a mergeable top-k per pair."""

    _NO_INDEX = np.iinfo(np.int64).max

    def __init__(self, study: DiscPower, data: ScoreMatrix):
        self.study = study
        self.data = data
        self.metrics = study._metrics(data)
        n_sys = len(data.systems)
        self.n_pairs = n_pairs = n_sys * (n_sys - 1) // 2
        self.k = k = study.k
        self.state: dict[str, np.ndarray] = {}
        for mi in range(len(self.metrics)):
            self.state[f"m{mi}_diff"] = np.full(n_pairs, np.nan)
            self.state[f"m{mi}_tobs"] = np.full(n_pairs, np.nan)
            for t in _RESAMPLED:
                if t in study.tests:
                    self.state[f"m{mi}_{t}_ge"] = np.zeros(n_pairs, np.int64)
                    # values are absolute (>= 0), so -inf slots always lose the merge
                    self.state[f"m{mi}_{t}_topv"] = np.full((n_pairs, k), -np.inf)
                    self.state[f"m{mi}_{t}_topi"] = np.full((n_pairs, k), self._NO_INDEX)
                    self.state[f"m{mi}_{t}_topa"] = np.zeros((n_pairs, k))

    def combine(self, shard: Shard, partial: Partial) -> None:
        sl = slice(*shard.items)
        for key, arr in partial.items():
            if key.endswith("_ge"):
                self.state[key][sl] += arr
            elif key.endswith(("_diff", "_tobs")):
                self.state[key][sl] = arr
            elif key.endswith("_topv"):
                base = key[:-1]
                v, i = partial[base + "v"], partial[base + "i"]
                a = partial.get(base + "a", v)  # unpaired: the value is its own aux
                merged = topk_rows(
                    np.concatenate([self.state[base + "v"][sl], v], axis=1),
                    np.concatenate([self.state[base + "i"][sl], i], axis=1),
                    self.k,
                    np.concatenate([self.state[base + "a"][sl], a], axis=1),
                )
                for suffix, arr_m in zip("via", merged, strict=True):
                    self.state[base + suffix][sl] = arr_m

    def finalize(self) -> dict[str, pa.Table]:
        study, data = self.study, self.data
        n = len(data.topics)
        ia, ib = pair_index(len(data.systems))
        sys_a = np.asarray(data.systems, dtype=object)[ia]
        sys_b = np.asarray(data.systems, dtype=object)[ib]
        asl_parts, dp_rows = [], []
        for mi, metric in enumerate(self.metrics):
            diff = self.state[f"m{mi}_diff"]
            for test in study.tests:
                if test == "t":
                    asl = 2.0 * sps.t.sf(np.abs(self.state[f"m{mi}_tobs"]), df=n - 1)
                    top = None
                else:
                    ge = self.state[f"m{mi}_{test}_ge"]
                    asl = ge / study.B if study.pvalue == "count" else (ge + 1) / (study.B + 1)
                    top = self.state[f"m{mi}_{test}_topa"]
                asl_parts.append(pa.table({
                    "metric": pa.array([metric] * self.n_pairs, pa.string()),
                    "test": pa.array([test] * self.n_pairs, pa.string()),
                    "system_a": pa.array(sys_a, pa.string()),
                    "system_b": pa.array(sys_b, pa.string()),
                    "diff": pa.array(diff, pa.float64()),
                    "asl": pa.array(asl, pa.float64()),
                }))
                for alpha in study.alphas:
                    sig = int(np.count_nonzero(asl < alpha))
                    raw = float("nan")
                    if top is not None:
                        pos = max(1, math.ceil(alpha * study.B - 1e-9)) - 1
                        raw = float(top[:, pos].max())
                    dp_rows.append({
                        "metric": metric, "test": test, "alpha": alpha,
                        "pairs": self.n_pairs, "significant": sig,
                        "sensitivity": sig / self.n_pairs,
                        "estimated_diff": round_sig(raw, 2),
                        "estimated_diff_raw": raw,
                    })
        dp = pa.Table.from_pylist(dp_rows, schema=pa.schema([
            ("metric", pa.string()), ("test", pa.string()), ("alpha", pa.float64()),
            ("pairs", pa.int64()), ("significant", pa.int64()), ("sensitivity", pa.float64()),
            ("estimated_diff", pa.float64()), ("estimated_diff_raw", pa.float64()),
        ]))
        return {"asl": pa.concat_tables(asl_parts), "discpower": dp}


DESCRIPTION = ("discriminative power by paired/unpaired bootstrap tests and the t test: ASL "
               "per pair, sensitivity, estimated difference required (Sakai 2006)")


def build(cfg) -> tuple[DiscPower, ScoreMatrix]:
    """The study of the ``experiment`` config node on the configured collection."""
    from irsim.experiments.loading import engine_shards, score_matrix

    matrix = score_matrix(cfg)
    e = cfg.experiment
    shard_pairs, shard_reps = engine_shards(cfg)
    study = DiscPower(
        metrics=tuple(matrix.metrics),
        tests=tuple(e.tests),
        B=e.B,
        alphas=tuple(e.alpha),
        seed=cfg.seed,
        pvalue=e.get("pvalue", "count"),
        shard_pairs=shard_pairs,
        shard_replicates=shard_reps,
    )
    return study, matrix


def report_sections(tables: dict, run_dir) -> list[str]:
    """Discriminative-power table and ASL curves for report.md."""
    from irsim.report import markdown_table
    from irsim.report.plots import asl_curves

    lines: list[str] = []
    if "discpower" in tables:
        lines += ["## Discriminative power", "",
                  "Share of system pairs with ASL < alpha (sensitivity) and the estimated "
                  "difference required for ASL < alpha (max over pairs; rounded to two "
                  "significant figures, raw value beside it).", "",
                  markdown_table(tables["discpower"]), ""]
    if "asl" in tables:
        lines += ["## ASL curves", "",
                  "Each line is one metric: its system pairs sorted by ASL. A metric whose "
                  "curve stays low for more pairs discriminates more pairs.", ""]
        for path in asl_curves(tables["asl"], run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    return lines
