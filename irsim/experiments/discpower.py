"""Discriminative power and the other bootstrap methods of Sakai (SIGIR 2006).

One run computes, for every metric and system pair, the method set of METHODS.md section 3:

- the achieved significance level (ASL) of the paired studentised bootstrap, the unpaired
  bootstrap, the paired t and the randomised Tukey HSD tests; discriminative power (share of
  pairs with ASL < alpha) and the estimated difference required for ASL < alpha -> tables
  ``asl`` and ``discpower``;
- G-metrics (``gmean``): ``AG <metric>`` is the per-topic ``log(x + 1e-5)`` with the tests of
  arithmetic means, ``G <metric>`` the geometric mean ``exp(mean(log(x + 1e-5)))`` with the
  unpaired bootstrap test (Sakai 2006, Sections 3.1-3.2);
- on the paired test's bootstrap samples ``Q*b``: stability (minority rate, proportion of
  ties; :mod:`~irsim.experiments.stability`), the bootstrap swap method with a second set
  ``Q'*b`` (:mod:`~irsim.experiments.bootswap`) and Kendall's tau between the rankings of
  every metric pair with the Z0 test and the bootstrap SE (:mod:`~irsim.experiments.rankcorr`),
  for ``<metric>`` and ``G <metric>`` (``AG`` ranks systems as ``G`` does).

Columns: :mod:`irsim.tables`; report: :mod:`irsim.report.discpower`. The tests run on the
batched kernels of :mod:`irsim.stats.resample` (those of :func:`irsim.stats.paired_bootstrap`
and :func:`irsim.stats.unpaired_bootstrap`): the paired test's sums of differences and the
unpaired replicates come from per-system GEMMs; only ``w^2 @ counts`` is per pair.

Determinism: one set of bootstrap samples (``discpower/paired``) serves every pair, metric
and method, as in the paper; the unpaired test, the swap method and randomised Tukey HSD have
their own streams. Draws are keyed by replicate block. Kernels work in fixed units of 256
pairs (aligned to the global pair index) x 250 replicates, so every GEMM sees the same
operands whatever the shard sizes, and the fields are integer counters, per-replicate values
or top-k lists merged exactly (:mod:`irsim.engine.partials`): the tables are bit-identical
for any sharding and executor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Shard, shard_grid
from irsim.engine.partials import Count, Kind, Slab, TopK, topk_rows
from irsim.errors import ConfigError, InputError, param, unknown_name
from irsim.experiments import Shards
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
    as_tuple,
    check_alphas,
    check_positive_int,
    pair_index,
    round_sig,
    unit_ranges,
)
from irsim.experiments.rankcorr import rankcorr_table, tau_matrices
from irsim.experiments.stability import (
    DEFAULT_FUZZINESS,
    check_fuzziness,
    stability_counts,
    stability_table,
)
from irsim.sampling.permutations import topic_permutations
from irsim.sampling.rng import REPLICATE_BLOCK
from irsim.sampling.topics import bootstrap_counts, bootstrap_indices, indices_to_counts
from irsim.stats.bootstrap import count_t
from irsim.stats.kendall import concordance, pair_signs, ties
from irsim.stats.resample import (
    exact_split,
    gmean_scores,
    log_scores,
    paired_ratio,
    sample_differences,
    studentized_t,
    tukey_ranges,
    unpaired_replicates,
    unpaired_weights,
)
from irsim.stats.ties import count_extreme, tie_tolerance
from irsim.tables import schema, table

__all__ = ["DESCRIPTION", "DATA", "Config", "make", "DiscPower", "Variant", "TESTS",
           "PAIRED_STREAM", "UNPAIRED_STREAM", "SWAP_STREAM", "TUKEY_STREAM", "TOPK_BUDGET"]

DESCRIPTION = ("discriminative power and Sakai's (2006) bootstrap methods: ASL per pair "
               "(paired/unpaired bootstrap, t, randomised Tukey HSD), sensitivity, estimated "
               "difference, G-metrics, stability, bootstrap swap method, Kendall tau with "
               "bootstrap SE")
DATA = "matrix"

#: Tests this study runs, by config name.
TESTS = ("paired_bootstrap", "unpaired_bootstrap", "t", "randomised_tukey_hsd")
_RESAMPLED = ("paired_bootstrap", "unpaired_bootstrap", "randomised_tukey_hsd")
#: Bytes the top-k lists of the estimated difference may take.
TOPK_BUDGET = 2 * 2**30
PAIRED_STREAM = "discpower/paired"
UNPAIRED_STREAM = "discpower/unpaired"
TUKEY_STREAM = "discpower/tukey"
#: Replicate units whose top-k candidates are selected together (1000 replicates).
_CHUNK_UNITS = 4


@dataclass
class Config:
    """Parameters of ``experiment=discpower``.

    Parameters
    ----------
    name : str
        ``discpower``.
    tests : list of str
        Any of ``paired_bootstrap``, ``unpaired_bootstrap``, ``t``, ``randomised_tukey_hsd``.
    B : int
        Bootstrap samples (and randomised Tukey HSD trials, and swap-method samples per set).
    alpha : float or list of float
        Significance levels of discriminative power and the estimated difference.
    estimated_diff : bool
        Compute the estimated difference required for ASL < alpha. It keeps the
        ``ceil(max(alpha) B)`` largest replicates of every pair, 24 bytes each per test and
        metric; a study whose lists would exceed 2 GiB is refused (turn this off for very
        large B: ASLs and the other tables stay exact).
    pvalue : {"count", "plus_one"}
        ASL as ``count/B`` (Sakai) or ``(count+1)/(B+1)``.
    gmean : bool
        Add ``AG <metric>`` (paired bootstrap, t and Tukey on ``log(x + 1e-5)``) and
        ``G <metric>`` (unpaired bootstrap test of the geometric mean) for every metric.
    stability : bool
        The stability method (minority rate, proportion of ties) on the paired test's
        samples ``Q*b``: table ``stability``.
    fuzziness : float or list of float
        Fuzziness values of the stability method (Sakai: 0.01, 0.02, ..., 0.20).
    swap : bool
        The bootstrap swap method on ``Q*b`` and a second set ``Q'*b`` (21 absolute bins of
        0.01): tables ``swap_rates`` and ``swap_summary``.
    swap_confidence : float or list of float
        Confidence levels of the swap method's required difference (swap rate <= 1 -
        confidence; Sakai: 0.95).
    rankcorr : bool
        Kendall's tau between the system rankings of every metric pair, with the Z0 test
        and the bootstrap standard error: table ``rankcorr``.
    top_systems : int, optional
        Keep only the best systems by mean `top_by` (None: all; Sakai 2006 keeps 30).
    top_by : str, optional
        Metric that ranks the systems for `top_systems` (None: the first metric).
    """

    name: str = "discpower"
    tests: list[str] = field(default_factory=lambda: ["paired_bootstrap", "unpaired_bootstrap"])
    B: int = 1000
    alpha: Any = field(default_factory=lambda: [0.01, 0.05])
    estimated_diff: bool = True
    pvalue: str = "count"
    gmean: bool = False
    stability: bool = False
    fuzziness: Any = field(default_factory=lambda: list(DEFAULT_FUZZINESS))
    swap: bool = False
    swap_confidence: Any = field(default_factory=lambda: [0.95])
    rankcorr: bool = False
    top_systems: int | None = None
    top_by: str | None = None


_DEFAULT = Config()


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

    Parameters as :class:`Config` (checked and normalised by :func:`make`; ``alphas`` is
    ``alpha`` as a tuple), plus the global ``seed`` and the shard sizes ``shard_items``
    (pairs, rounded up to a multiple of 256) and ``shard_replicates`` (rounded up to a
    multiple of 250): neither changes any result, memory per kernel step is bounded by the
    fixed 256 x 250 units.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=6, topics=20, seed=1).matrix
    >>> tables, info = run_study(DiscPower(B=200, seed=3), m)
    >>> tables["asl"].num_rows            # 15 pairs x 2 tests
    30
    >>> study = DiscPower(B=250, seed=3, gmean=True, stability=True, fuzziness=(0.05,),
    ...                   swap=True, rankcorr=True)
    >>> tables, _ = run_study(study, m)
    >>> sorted(tables)
    ['asl', 'discpower', 'rankcorr', 'stability', 'swap_rates', 'swap_summary']
    >>> tables["rankcorr"].select(["metric_a", "metric_b"]).to_pylist()
    [{'metric_a': 'synthetic', 'metric_b': 'G synthetic'}]
    """

    tests: tuple[str, ...] = tuple(_DEFAULT.tests)
    B: int = _DEFAULT.B
    alphas: tuple[float, ...] = tuple(_DEFAULT.alpha)
    seed: int = 0
    pvalue: str = _DEFAULT.pvalue
    gmean: bool = _DEFAULT.gmean
    stability: bool = _DEFAULT.stability
    fuzziness: tuple[float, ...] = DEFAULT_FUZZINESS
    swap: bool = _DEFAULT.swap
    swap_confidence: tuple[float, ...] = tuple(_DEFAULT.swap_confidence)
    rankcorr: bool = _DEFAULT.rankcorr
    estimated_diff: bool = _DEFAULT.estimated_diff
    shard_items: int = 4096
    shard_replicates: int = 1000
    name: str = field(default="discpower", init=False)

    @property
    def k(self) -> int:
        """How many of the largest replicates per pair the estimated difference needs."""
        return max(1, math.ceil(max(self.alphas) * self.B - 1e-9))

    @property
    def sampled_methods(self) -> bool:
        """Whether any of stability, swap, rankcorr is on."""
        return self.stability or self.swap or self.rankcorr

    def variants(self, data: ScoreMatrix) -> tuple[Variant, ...]:
        """The metrics of the tables: every metric, then ``AG`` and ``G`` ones if gmean."""
        out = [Variant(m, m, "mean", self.tests) for m in data.metrics]
        if self.gmean:
            ag = tuple(t for t in self.tests if t != "unpaired_bootstrap")
            g = tuple(t for t in self.tests if t == "unpaired_bootstrap")
            out += [Variant(f"AG {m}", m, "ag", ag) for m in data.metrics]
            out += [Variant(f"G {m}", m, "g", g) for m in data.metrics]
        names = [v.name for v in out]
        if len(set(names)) != len(names):
            raise ConfigError(f"metric names collide with the G-metric names: {names}")
        return tuple(out)

    def sampled(self, data: ScoreMatrix) -> list[int]:
        """Indices of the variants of stability, swap and rank correlation (if any is on)."""
        return ([i for i, v in enumerate(self.variants(data)) if v.sampled]
                if self.sampled_methods else [])

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Pair blocks x replicate blocks (no replicates when no test resamples)."""
        tests = {t for v in self.variants(data) for t in v.tests}
        resampled = bool(tests & set(_RESAMPLED)) or self.sampled_methods
        return shard_grid(_pairs(data), aligned_block(self.shard_items, PAIR_UNIT),
                          self.B if resampled else 0,
                          aligned_block(self.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        return {k: getattr(self, k) for k in (
            "tests", "B", "alphas", "seed", "pvalue", "gmean", "stability", "fuzziness",
            "swap", "swap_confidence", "rankcorr", "estimated_diff")}

    def fields(self, data: ScoreMatrix) -> dict[str, Kind]:
        """Per pair: test counters and top-k replicates, stability counters; per replicate:
        Tukey null ranges, swap-set statistics, rank-correlation sums; swap bin counters."""
        P, B, out = _pairs(data), self.B, {}
        for vi, v in enumerate(self.variants(data)):
            for test, short in (("paired_bootstrap", "paired"), ("unpaired_bootstrap",
                                                                  "unpaired")):
                if test in v.tests:
                    out[f"{short}_count_{vi}"] = Count((P,), along="items")
                    if self.estimated_diff:  # paired: |mean| of the sample beside |t*|
                        out[f"{short}_top_{vi}"] = TopK(P, self.k, aux=int(short == "paired"))
            if "randomised_tukey_hsd" in v.tests:
                out[f"tukey_ranges_{vi}"] = Slab((B,), along="reps")
        sampled = self.sampled(data)
        for x, vi in enumerate(sampled):
            if self.stability:
                for side in ("xy", "yx"):
                    out[f"gt_{side}_{vi}"] = Count((P, len(self.fuzziness)), along="items")
            if self.swap:
                out[f"swap_comps_{vi}"] = Count((ABSOLUTE.count,))
                out[f"swap_swaps_{vi}"] = Count((ABSOLUTE.count,))
                out[f"max_perf_{vi}"] = Slab((B,), along="reps")
            if self.rankcorr:
                out[f"ties_{vi}"] = Count((B,), along="reps")
                for vj in sampled[x + 1:]:
                    out[f"conc_{vi}_{vj}"] = Count((B,), along="reps")
        if self.swap:
            for name in ("unique", "overlap"):
                out[name] = Slab((B,), along="reps", dtype="int64", fill=0)
        return out

    def kernel(self, shard: Shard, data: ScoreMatrix) -> dict[str, Any]:
        """The fields of one shard."""
        r0, r1 = shard.reps
        return {} if r1 <= r0 else _ShardKernel(self, data, shard).run()

    # -- tables -------------------------------------------------------------------------
    def finalize(self, merged: dict[str, Any], data: ScoreMatrix) -> dict[str, pa.Table]:
        """``asl`` and ``discpower``; ``stability``, ``swap_*`` and ``rankcorr`` if on."""
        n, B, P = len(data.topics), self.B, _pairs(data)
        ia, ib = pair_index(len(data.systems))
        systems = np.asarray(data.systems, dtype=object)
        asl_cols: dict[str, list] = {c: [] for c in schema("asl").names}
        dp_rows = []
        variants = self.variants(data)
        for vi, v in enumerate(variants):
            if not v.tests:
                continue
            diff, tobs, sd = _observed(v, data)
            for test in v.tests:
                raw_by_alpha: dict[float, float] = {}
                if test == "t":
                    asl = 2.0 * sps.t.sf(np.abs(tobs), df=n - 1)
                    for alpha in self.alphas:  # the smallest |mean| with p < alpha, max
                        crit = sps.t.isf(alpha / 2, df=n - 1)
                        raw_by_alpha[alpha] = float((crit * sd / math.sqrt(n)).max())
                elif test == "randomised_tukey_hsd":
                    ranges = np.sort(merged[f"tukey_ranges_{vi}"])
                    means = _values(v, data).mean(axis=1)
                    d = means[ia] - means[ib]
                    thr = np.abs(d) - tie_tolerance(d, np.abs(means).max())
                    count = (B - np.searchsorted(ranges, thr, side="left")).astype(np.int64)
                    asl = self._pvalue(count)
                    for alpha in self.alphas:
                        pos = max(1, math.ceil(alpha * B - 1e-9))
                        raw_by_alpha[alpha] = float(ranges[B - pos])
                else:
                    short = "paired" if test == "paired_bootstrap" else "unpaired"
                    asl = self._pvalue(merged[f"{short}_count_{vi}"])
                    # per pair, best first: (-p, replicate, |mean|) paired, (|d*|, replicate)
                    top = merged.get(f"{short}_top_{vi}")
                    est = None if top is None else top[2] if short == "paired" else top[0]
                    for alpha in self.alphas:
                        pos = max(1, math.ceil(alpha * B - 1e-9)) - 1
                        raw_by_alpha[alpha] = (float(est[:, pos].max()) if est is not None
                                               else float("nan"))
                for col, values in (("metric", [v.name] * P), ("test", [test] * P),
                                    ("system_a", systems[ia]), ("system_b", systems[ib]),
                                    ("diff", diff), ("asl", asl)):
                    asl_cols[col].append(values)
                for alpha in self.alphas:
                    sig = int(np.count_nonzero(asl < alpha))
                    raw = raw_by_alpha[alpha]
                    dp_rows.append({
                        "metric": v.name, "test": test, "alpha": alpha, "pairs": P,
                        "significant": sig, "sensitivity": sig / P,
                        "estimated_diff": round_sig(raw, 2), "estimated_diff_raw": raw,
                    })
        out = {"asl": table("asl", {c: np.concatenate(parts) for c, parts in
                                      asl_cols.items()}),
               "discpower": table("discpower", dp_rows)}
        sampled = [(vi, variants[vi]) for vi in self.sampled(data)]
        if self.stability:
            out["stability"] = stability_table(
                [(v.name, merged[f"gt_xy_{vi}"], merged[f"gt_yx_{vi}"]) for vi, v in sampled],
                self.fuzziness, B)
        if self.swap:
            out["swap_rates"], out["swap_summary"] = swap_tables(
                [(v.name, merged[f"swap_comps_{vi}"], merged[f"swap_swaps_{vi}"],
                  float(merged[f"max_perf_{vi}"].max())) for vi, v in sampled],
                subset_size=n, samples=B, confidences=self.swap_confidence,
                unique_total=int(merged["unique"].sum()),
                overlap_total=int(merged["overlap"].sum()), layout=ABSOLUTE)
        if self.rankcorr:
            out["rankcorr"] = self._rankcorr(merged, data, sampled)
        return out

    def _pvalue(self, count: np.ndarray) -> np.ndarray:
        return count / self.B if self.pvalue == "count" else (count + 1) / (self.B + 1)

    def _rankcorr(self, merged: dict[str, Any], data: ScoreMatrix,
                  sampled: list[tuple[int, Variant]]) -> pa.Table:
        scores = []  # on the whole topic set: the observed tau
        for _, v in sampled:
            x = np.asarray(data.metric(v.metric), np.float64)
            scores.append(gmean_scores(x) if v.kind == "g" else x.mean(axis=1))
        index = [vi for vi, _ in sampled]
        conc = {(x, y): merged[f"conc_{index[x]}_{index[y]}"]
                for x in range(len(index)) for y in range(x + 1, len(index))}
        obs, boot = tau_matrices(scores, conc, [merged[f"ties_{vi}"] for vi in index])
        return rankcorr_table([v.name for _, v in sampled], obs, boot, len(data.systems))


def _pairs(data: ScoreMatrix) -> int:
    k = len(data.systems)
    return k * (k - 1) // 2


def _values(v: Variant, data: ScoreMatrix) -> np.ndarray:
    """Per-topic values whose arithmetic mean is the variant's summary (AG: the logs)."""
    x = np.asarray(data.metric(v.metric), np.float64)
    return log_scores(x) if v.kind == "ag" else x


def _observed(v: Variant, data: ScoreMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair: observed difference of the summaries, t statistic, sd of differences (the
    last two for the mean-type variants only)."""
    P = _pairs(data)
    ia, ib = pair_index(len(data.systems))
    if v.kind == "g":
        g = gmean_scores(data.metric(v.metric))
        return g[ia] - g[ib], np.full(P, np.nan), np.full(P, np.nan)
    x = _values(v, data)
    diff, tobs, sd = (np.empty(P) for _ in range(3))
    for p0, p1 in unit_ranges(0, P, 8 * PAIR_UNIT):
        z = x[ia[p0:p1]] - x[ib[p0:p1]]
        diff[p0:p1] = z.mean(axis=1)
        tobs[p0:p1] = studentized_t(z)
        sd[p0:p1] = z.std(axis=1, ddof=1)
    return diff, tobs, sd


class _ShardKernel:
    """One shard: replicate units outer (draws and per-system GEMMs made once), pair units
    inner; top-k candidates are selected once per pair unit over :data:`_CHUNK_UNITS`
    replicate units."""

    def __init__(self, study: DiscPower, data: ScoreMatrix, shard: Shard):
        self.study, self.shard, self.n = study, shard, len(data.topics)
        self.systems = len(data.systems)
        self.variants = study.variants(data)
        ia, ib = pair_index(self.systems)
        self.pairs = [(ia[p0:p1], ib[p0:p1]) for p0, p1 in unit_ranges(*shard.items, PAIR_UNIT)]
        self.tested = {t: [i for i, v in enumerate(self.variants) if t in v.tests]
                       for t in _RESAMPLED}
        self.sampled = study.sampled(data)
        raw = {m: np.asarray(data.metric(m), np.float64) for m in data.metrics}
        self.scores = {(m, False): x for m, x in raw.items()}
        if study.gmean:
            self.scores |= {(m, True): log_scores(x) for m, x in raw.items()}
        self.split = {vi: exact_split(self.values(vi)) for vi in self.tested["paired_bootstrap"]}
        self.obs = {(j, vi, t): self.observed(j, vi, t) for j in range(len(self.pairs))
                    for t in ("paired_bootstrap", "unpaired_bootstrap") for vi in self.tested[t]}
        self.per_unit: list[dict[str, Any]] = [{} for _ in self.pairs]  # per pair unit
        self.out: dict[str, Any] = {}  # fields of the whole shard
        self.buffers: dict[str, np.ndarray] = {}

    def values(self, vi: int) -> np.ndarray:
        """Per-topic values whose arithmetic mean is the variant's summary (AG: logs)."""
        v = self.variants[vi]
        return self.scores[v.metric, v.kind == "ag"]

    def observed(self, j: int, vi: int, test: str) -> tuple[np.ndarray, np.ndarray]:
        """Of a pair unit: ``t(z)`` and ``mean(z)`` (paired); ``M(x) - M(y)`` and its scale
        ``|M(x)| + |M(y)|`` (unpaired)."""
        ia, ib = self.pairs[j]
        v, x = self.variants[vi], self.values(vi)
        if test == "paired_bootstrap":
            z = x[ia] - x[ib]
            return studentized_t(z), z.mean(axis=1)[:, None]
        if v.kind == "g":
            g = gmean_scores(self.scores[v.metric, False])
            ma, mb = g[ia], g[ib]
        else:
            ma, mb = x[ia].mean(axis=1), x[ib].mean(axis=1)
        return ma - mb, np.abs(ma) + np.abs(mb)

    def sample_scores(self, vi: int, ct: np.ndarray) -> np.ndarray:
        """``M(X, Q*b)`` of every system on every sample of a unit: (systems, samples)."""
        v = self.variants[vi]
        if v.kind == "g":
            return np.exp(self.scores[v.metric, True] @ ct / self.n)
        return self.scores[v.metric, False] @ ct / self.n

    def draws(self, a: int, b: int) -> dict:
        """Everything of replicate unit ``[a, b)`` that all pairs share: the samples and
        per-system sums (the paired test's ``s1`` parts, the unpaired replicates' parts,
        ``M(X, Q*b)`` of the sampled methods)."""
        study, n = self.study, self.n
        u: dict = {"a": a, "b": b, "ct": None, "counts": None, "counts2": None, "parts": {}}
        if self.tested["paired_bootstrap"] or self.sampled:
            u["counts"] = bootstrap_counts(study.seed, PAIRED_STREAM, n, a, b)
            u["ct"] = np.ascontiguousarray(u["counts"].T)
        if study.swap:
            u["counts2"] = bootstrap_counts(study.seed, SWAP_STREAM, n, a, b)
        if self.tested["unpaired_bootstrap"]:
            idx = bootstrap_indices(study.seed, UNPAIRED_STREAM, 2 * n, a, b)
            first = indices_to_counts(idx[:, :n], 2 * n)
            second = indices_to_counts(idx[:, n:], 2 * n)
            weights: dict[str, np.ndarray] = {}
            for vi in self.tested["unpaired_bootstrap"]:
                summ = "gmean" if self.variants[vi].kind == "g" else "mean"
                if summ not in weights:  # x's weights beside y's: one GEMM per system
                    w = unpaired_weights(first, second, n, summ)
                    weights[summ] = np.concatenate([w[:n], w[n:]], axis=1)
                vals = self.scores[self.variants[vi].metric, summ == "gmean"]
                u["parts"][vi] = vals @ weights[summ]
        u["split"] = {vi: tuple(part @ u["ct"] for part in self.split[vi])
                      for vi in self.tested["paired_bootstrap"]}
        u["s1"] = {vi: self.sample_scores(vi, u["ct"]) for vi in self.sampled}
        u["s2"] = {}
        if study.swap:
            ct2 = np.ascontiguousarray(u["counts2"].T)
            u["s2"] = {vi: self.sample_scores(vi, ct2) for vi in self.sampled}
        return u

    def cat(self, name: str, parts: list[np.ndarray]) -> np.ndarray:
        """A chunk's per-unit arrays side by side (top-k candidates), in a buffer reused by
        every pair unit of the shard (fewer large allocations: less heap churn)."""
        if len(parts) == 1:
            return parts[0]
        rows, width = parts[0].shape[0], sum(p.shape[1] for p in parts)
        buf = self.buffers.get(name)
        if buf is None or buf.shape[0] < rows or buf.shape[1] < width:
            buf = self.buffers[name] = np.empty((max(rows, PAIR_UNIT), width))
        return np.concatenate(parts, axis=1, out=buf[:rows, :width])

    # outputs -----------------------------------------------------------------------------
    def add(self, j: int, name: str, arr: np.ndarray) -> None:
        """Add a pair unit's counters."""
        po = self.per_unit[j]
        po[name] = po[name] + arr if name in po else arr

    def top(self, j: int, name: str, sel: tuple[np.ndarray, ...]) -> None:
        """Merge a chunk's selection (values, replicate numbers[, aux]) into the pair unit's
        k largest. Later chunks are appended, so replicate numbers increase along rows."""
        po = self.per_unit[j]
        if name in po:
            sel = tuple(np.concatenate([p, s], axis=1) for p, s in zip(po[name], sel,
                                                                        strict=True))
            if sel[0].shape[1] >= 8 * self.study.k:  # bound memory for long replicate ranges
                sel = topk_rows(sel[0], sel[1], self.study.k, *sel[2:], idx_sorted=True,
                                sort=False)
        po[name] = sel

    def put(self, name: str, a: int, arr: np.ndarray, add: bool = False) -> None:
        """Place (or add) a replicate unit's values in the shard's per-replicate field."""
        r0, r1 = self.shard.reps
        if name not in self.out:
            self.out[name] = np.zeros(r1 - r0, arr.dtype)
        span = slice(a - r0, a - r0 + len(arr))
        if add:
            self.out[name][span] += arr
        else:
            self.out[name][span] = arr

    def result(self) -> dict[str, Any]:
        out = dict(self.out)
        for name in self.per_unit[0] if self.per_unit else ():
            parts = [po[name] for po in self.per_unit]
            if isinstance(parts[0], tuple):  # top-k: select, TopK sorts once at the end
                parts = [topk_rows(p[0], p[1], self.study.k, *p[2:], idx_sorted=True,
                                   sort=False) for p in parts]
                out[name] = tuple(np.concatenate(a) for a in zip(*parts, strict=True))
            else:
                out[name] = np.concatenate(parts)
        return out

    # the work ----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        rep_units = unit_ranges(*self.shard.reps, REPLICATE_BLOCK)
        for c0 in range(0, len(rep_units), _CHUNK_UNITS):
            chunk = [self.draws(a, b) for a, b in rep_units[c0:c0 + _CHUNK_UNITS]]
            if self.shard.items[0] == 0:  # per-replicate values: the first pair block
                for u in chunk:
                    self.per_replicate(u)
            rep_idx = np.arange(chunk[0]["a"], chunk[-1]["b"], dtype=np.int64)
            k = min(self.study.k, len(rep_idx))
            for j in range(len(self.pairs)):
                for vi in self.tested["paired_bootstrap"]:
                    self.paired(j, vi, chunk, rep_idx, k)
                for vi in self.tested["unpaired_bootstrap"]:
                    self.unpaired(j, vi, chunk, rep_idx, k)
                if self.sampled:
                    for u in chunk:
                        self.sampled_methods(j, u)
        return self.result()

    def paired(self, j: int, vi: int, chunk: list[dict], rep_idx: np.ndarray, k: int) -> None:
        """Paired studentised bootstrap of a pair unit: counts of ``|t*| >= |t(z)|`` and the
        chunk's k largest ``|t*|`` with their ``|mean(w*b)|``."""
        n = self.n
        ia, ib = self.pairs[j]
        t_obs, mz = self.obs[j, vi, "paired_bootstrap"]
        x = self.values(vi)
        w = x[ia] - x[ib]
        w -= mz
        w_sq = w * w
        qs, sums_all = [], []
        for u in chunk:
            s_hi, s_lo = u["split"][vi]  # s1 from per-system sums, without cancellation
            sums = np.subtract(s_hi[ia], s_hi[ib])
            sums += s_lo[ia]
            sums -= s_lo[ib]
            sums -= n * mz
            q = paired_ratio(w, w_sq, u["ct"], sums)
            self.add(j, f"paired_count_{vi}", count_t(q, t_obs, n))
            qs.append(q)
            sums_all.append(sums)
        if self.study.estimated_diff:
            # the smallest p = the largest |t*|; kept as -p (larger is better)
            val, rid, tsum = topk_rows(self.cat("q", qs), rep_idx, k,
                                       self.cat("sums", sums_all), idx_sorted=True,
                                       sort=False, largest=False)
            self.top(j, f"paired_top_{vi}", (np.negative(val), rid, np.abs(tsum) / n))

    def unpaired(self, j: int, vi: int, chunk: list[dict], rep_idx: np.ndarray, k: int
                 ) -> None:
        """Unpaired bootstrap of a pair unit: counts of ``|d*| >= |d|`` and the chunk's k
        largest ``|d*|``."""
        ia, ib = self.pairs[j]
        d_obs, scale = self.obs[j, vi, "unpaired_bootstrap"]
        summ = "gmean" if self.variants[vi].kind == "g" else "mean"
        absds = []
        for u in chunk:
            parts = u["parts"][vi]
            h = parts.shape[1] // 2  # x's parts, then y's
            d = unpaired_replicates(parts[ia, :h], parts[ib, h:], summ)
            absd = np.abs(d, out=d)
            self.add(j, f"unpaired_count_{vi}", count_extreme(absd, d_obs, "two-sided", scale))
            absds.append(absd)
        if self.study.estimated_diff:
            self.top(j, f"unpaired_top_{vi}", topk_rows(self.cat("absd", absds), rep_idx, k,
                                                        idx_sorted=True, sort=False))

    def per_replicate(self, u: dict) -> None:
        """All-systems work of a replicate unit: Tukey ranges, swap-set statistics."""
        study, a = self.study, u["a"]
        if self.tested["randomised_tukey_hsd"]:
            perm = topic_permutations(study.seed, TUKEY_STREAM, self.systems, self.n, a,
                                      u["b"])
            for vi in self.tested["randomised_tukey_hsd"]:
                st = np.ascontiguousarray(self.values(vi).T)
                self.put(f"tukey_ranges_{vi}", a, tukey_ranges(st, perm))
        if study.swap:
            for vi in self.sampled:
                self.put(f"max_perf_{vi}", a, np.maximum(u["s1"][vi].max(axis=0),
                                                         u["s2"][vi].max(axis=0)))
            u1, u2, ov = topic_overlap(u["counts"], u["counts2"])
            self.put("unique", a, u1 + u2)
            self.put("overlap", a, ov)

    def sampled_methods(self, j: int, u: dict) -> None:
        """Stability, swap and rank-correlation counters of a pair unit x replicate unit."""
        study, a = self.study, u["a"]
        ia, ib = self.pairs[j]
        signs = {}
        for vi in self.sampled:
            d, top = sample_differences(u["s1"][vi], ia, ib)
            if study.stability:
                gt_xy, gt_yx = stability_counts(d, top, study.fuzziness)
                self.add(j, f"gt_xy_{vi}", gt_xy)
                self.add(j, f"gt_yx_{vi}", gt_yx)
            if study.swap:
                d2, _ = sample_differences(u["s2"][vi], ia, ib)
                for name, counts in zip(("swap_comps", "swap_swaps"),
                                        swap_counts(d, d2, ABSOLUTE), strict=True):
                    key = f"{name}_{vi}"
                    self.out[key] = self.out[key] + counts if key in self.out else counts
            if study.rankcorr:
                signs[vi] = pair_signs(d)
                self.put(f"ties_{vi}", a, ties(signs[vi]), add=True)
        if study.rankcorr:
            for x, vi in enumerate(self.sampled):
                for vj in self.sampled[x + 1:]:
                    self.put(f"conc_{vi}_{vj}", a, concordance(signs[vi], signs[vj]), add=True)


# --------------------------------------------------------------------------------- make
def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Shards
         ) -> tuple[DiscPower, ScoreMatrix]:
    """The study of `config` on `data` (the top systems if ``top_systems``), checked.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> m = synthetic_scores(systems=6, topics=20, seed=1).matrix
    >>> study, data = make(Config(B=200, alpha=0.05), m, seed=3, shards=Shards())
    >>> study.alphas, study.shard_items
    ((0.05,), 4096)
    >>> from irsim.errors import python_parameters
    >>> with python_parameters():  # messages name keywords (the CLI: experiment.B)
    ...     make(Config(B=0), m, seed=3, shards=Shards())
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: B must be an integer >= 1, got 0
    """
    c = config
    tests = tuple(c.tests)
    for t in tests:
        if t not in TESTS:
            raise unknown_name("test for experiment=discpower", t, TESTS)
    if not tests:
        raise ConfigError(f"{param('tests')} must list at least one test")
    if len(set(tests)) != len(tests):
        raise ConfigError(f"{param('tests')} lists a test twice: {list(tests)}")
    flags = {}
    for flag in ("gmean", "stability", "swap", "rankcorr", "estimated_diff"):
        value = getattr(c, flag)
        if not isinstance(value, (bool, np.bool_)):
            raise ConfigError(f"{param(flag)} must be true or false, got {value!r}")
        flags[flag] = bool(value)
    shard_items, shard_replicates = shards.get(4096, 1000)
    study = DiscPower(
        tests=tests,
        B=check_positive_int(c.B, param("B")),
        alphas=check_alphas(as_tuple(c.alpha) or (), param("alpha")),
        seed=int(seed),
        pvalue=c.pvalue,
        fuzziness=check_fuzziness(as_tuple(c.fuzziness) or (), param("fuzziness")),
        swap_confidence=check_confidences(as_tuple(c.swap_confidence) or (),
                                          param("swap_confidence")),
        shard_items=check_positive_int(shard_items, param("shard_items", "engine")),
        shard_replicates=check_positive_int(shard_replicates,
                                            param("shard_replicates", "engine")),
        **flags,
    )
    if study.pvalue not in ("count", "plus_one"):
        raise ConfigError(f"{param('pvalue')} must be 'count' or 'plus_one', got "
                          f"{study.pvalue!r}")
    if c.top_systems is not None:
        data = _top_systems(data, c.top_systems, c.top_by)
    _check_data(study, data)
    return study, data


def _top_systems(matrix: ScoreMatrix, count: int, by: str | None) -> ScoreMatrix:
    """The `count` systems with the highest mean `by` (default: the first metric), in
    their original order (Sakai 2006 keeps the top 30 runs by AP)."""
    count = check_positive_int(count, param("top_systems"))
    metric = by or matrix.metrics[0]
    if count >= len(matrix.systems):
        return matrix
    means = matrix.metric(metric).mean(axis=1)
    keep = np.sort(np.argsort(-means, kind="stable")[:count])
    return matrix.select(systems=[matrix.systems[i] for i in keep])


def _check_data(study: DiscPower, data: ScoreMatrix) -> None:
    """Systems, topics, scores >= 0 for G-metrics, metrics for rankcorr, the top-k budget."""
    n_sys = len(data.systems)
    if n_sys < 2:
        raise ConfigError(f"discriminative power needs >= 2 systems, got {n_sys}")
    if len(data.topics) < 2:
        raise ConfigError(f"discriminative power needs >= 2 topics, got {len(data.topics)}")
    variants = study.variants(data)
    if study.estimated_diff:
        lists = len(variants) * sum(t in ("paired_bootstrap", "unpaired_bootstrap")
                                    for t in study.tests)
        need = 24 * _pairs(data) * study.k * max(lists, 1)
        if need > TOPK_BUDGET:
            raise ConfigError(
                f"the estimated difference needs the {study.k} largest replicates of each "
                f"of {_pairs(data)} pairs ({need / 2**30:.1f} GiB, over the "
                f"{TOPK_BUDGET / 2**30:.0f} GiB budget); set "
                f"{param('estimated_diff')}=false (ASLs stay exact) or lower B or alpha")
    if study.gmean:
        for m in data.metrics:
            if float(data.metric(m).min()) < 0:
                raise InputError(f"G-metrics need scores >= 0, metric {m} has "
                                 f"{float(data.metric(m).min())}",
                                 file=data.source or "score matrix")
    if study.rankcorr and sum(v.sampled for v in variants) < 2:
        raise ConfigError(f"{param('rankcorr')} needs at least two metrics (or "
                          f"{param('gmean')}=true)")
