"""The resampling kernel of the discpower study: one shard of pairs x replicates.

Replicate units outer (draws and per-system GEMMs made once per unit), pair units inner: the
paired studentised bootstrap (counts of ``|t*| >= |t(z)|`` and the top-k ``|t*|`` with their
``|mean(w*b)|``), the unpaired bootstrap (counts and top-k ``|d*|``), randomised Tukey HSD's
null ranges, and the stability, swap and rank-correlation counters on the paired test's
samples ``Q*b``. All from the batched kernels of :mod:`irsim.stats.resample`; draws keyed by
replicate block from the streams below (see :mod:`irsim.experiments.discpower`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from irsim.engine.base import Shard
from irsim.engine.partials import topk_rows
from irsim.exact import Exact
from irsim.experiments.discpower.bootswap import SWAP_STREAM, swap_counts, topic_overlap
from irsim.experiments.discpower.fields import BootstrapFields, PermutationFields, SampleFields
from irsim.experiments.discpower.stability import stability_counts
from irsim.kit.bins import ABSOLUTE
from irsim.kit.common import PAIR_UNIT, pair_index, unit_ranges
from irsim.rng import REPLICATE_BLOCK
from irsim.sampling.permutations import topic_permutations
from irsim.sampling.topics import bootstrap_counts, bootstrap_indices, indices_to_counts
from irsim.stats.bootstrap import count_t
from irsim.stats.kendall import concordance, pair_signs, ties
from irsim.stats.registry import get_test
from irsim.stats.resample import (
    gmean_scores,
    log_scores,
    paired_ratio,
    sample_differences,
    studentized_t,
    tukey_ranges,
    unpaired_parts,
    unpaired_replicates,
    unpaired_weights,
)
from irsim.stats.ties import count_extreme, snap_ties, tie_tolerance

if TYPE_CHECKING:
    from irsim.data.matrix import ScoreMatrix
    from irsim.experiments.discpower import DiscPower

__all__ = ["BATCHED", "PAIRED_STREAM", "UNPAIRED_STREAM", "TUKEY_STREAM", "ShardKernel",
           "resampled_asl", "working_bytes"]

PAIRED_STREAM = "discpower/paired"
UNPAIRED_STREAM = "discpower/unpaired"
TUKEY_STREAM = "discpower/tukey"
#: The batched resampling paths this kernel runs (a test's ``batched``,
#: :class:`irsim.stats.registry.TestSpec`): the resamples drawn once for many pairs.
BATCHED = ("paired_bootstrap", "unpaired_bootstrap", "tukey_ranges")
#: Replicate units whose top-k candidates are selected together (1000 replicates).
_CHUNK_UNITS = 4


def working_bytes(topics: int, B: int, *, paired: bool, unpaired: bool, swap: bool) -> int:
    """An upper bound of the kernel's working memory: the draws of one chunk of
    ``min(B, 1000)`` replicates shared by all pairs, per topic and replicate 24 bytes for
    the paired samples (counts and their transpose; also the samples of stability, swap and
    rank correlation), 32 for the unpaired ones (indices over 2n topics and the two sides'
    counts) and 24 for the swap's second samples.

    Measured with tracemalloc on 3 systems x 20,000 topics, B = 1000 (peak per topic and
    replicate): paired 22.4, unpaired 24.2, swap with t 30.1, all of them with stability
    48.3 bytes (the bound: 24, 32, 48 and 80).

    Examples
    --------
    >>> working_bytes(400_000, 100, paired=False, unpaired=True, swap=False) / 2**30
    1.1920928955078125
    """
    reps = min(B, _CHUNK_UNITS * REPLICATE_BLOCK)
    return topics * reps * (24 * paired + 32 * unpaired + 24 * swap)


class ShardKernel:
    """One shard: replicate units outer (draws and per-system GEMMs made once), pair units
    inner; top-k candidates are selected once per pair unit over :data:`_CHUNK_UNITS`
    replicate units."""

    def __init__(self, study: DiscPower, data: ScoreMatrix, shard: Shard):
        self.study, self.shard, self.n = study, shard, len(data.topics)
        self.systems = len(data.systems)
        self.variants = study.variants(data)
        ia, ib = pair_index(self.systems)
        self.pairs = [(ia[p0:p1], ib[p0:p1]) for p0, p1 in unit_ranges(*shard.items, PAIR_UNIT)]
        self.tested = {b: [i for i, v in enumerate(self.variants)
                           if any(get_test(t).batched == b for t in v.tests)]
                       for b in BATCHED}
        self.sampled = study.sampled(data)
        raw = {m: np.asarray(data.metric(m), np.float64) for m in data.metrics}
        self.scores = {(m, False): x for m, x in raw.items()}
        if study.config.gmean:
            self.scores |= {(m, True): log_scores(x) for m, x in raw.items()}
        # exact per-system sums (one bit of headroom: differences of parts stay exact)
        self.split = {vi: Exact(self.values(vi), l1=2 * self.n)
                      for vi in self.tested["paired_bootstrap"]}
        self.exact = {key: Exact(x, l1=self.n) for key, x in self.scores.items()}
        self.obs = {(j, vi, t): self.observed(j, vi, t) for j in range(len(self.pairs))
                    for t in ("paired_bootstrap", "unpaired_bootstrap") for vi in self.tested[t]}
        self.per_unit: list[dict[str, Any]] = [{} for _ in self.pairs]  # per pair unit
        self.kth_of: dict[str, str] = {}  # a top-k field's name -> its kth field's
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
        """``M(X, Q*b)`` of every system on every sample of a unit: (systems, samples),
        ranked by the tie rule (:func:`~irsim.stats.ties.snap_ties` over the systems, with
        the relative tolerance of :func:`~irsim.stats.resample.sample_differences`)."""
        v = self.variants[vi]
        if v.kind == "g":
            s = np.exp(self.exact[v.metric, True].right(ct) / self.n)
        else:
            s = self.exact[v.metric, False].right(ct) / self.n
        return snap_ties(s, axis=0, scale=0.0)

    def draws(self, a: int, b: int) -> dict:
        """Everything of replicate unit ``[a, b)`` that all pairs share: the samples and
        per-system sums (the paired test's ``s1`` parts, the unpaired replicates' parts,
        ``M(X, Q*b)`` of the sampled methods)."""
        study, n = self.study, self.n
        u: dict = {"a": a, "b": b, "ct": None, "counts": None, "counts2": None, "parts": {}}
        if self.tested["paired_bootstrap"] or self.sampled:
            u["counts"] = bootstrap_counts(study.seed, PAIRED_STREAM, n, a, b)
            u["ct"] = np.ascontiguousarray(u["counts"].T)
        if study.config.swap:
            u["counts2"] = bootstrap_counts(study.seed, SWAP_STREAM, n, a, b)
        if self.tested["unpaired_bootstrap"]:
            idx = bootstrap_indices(study.seed, UNPAIRED_STREAM, 2 * n, a, b)
            first = indices_to_counts(idx[:, :n], 2 * n)
            second = indices_to_counts(idx[:, n:], 2 * n)
            weights: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for vi in self.tested["unpaired_bootstrap"]:
                summ = "gmean" if self.variants[vi].kind == "g" else "mean"
                if summ not in weights:  # x's weights beside y's: one product per system
                    w, div = unpaired_weights(first, second, n, summ)
                    weights[summ] = (np.concatenate([w[:n], w[n:]], axis=1),
                                     np.concatenate([div, div]))
                vals = self.scores[self.variants[vi].metric, summ == "gmean"]
                u["parts"][vi] = unpaired_parts(vals, *weights[summ])
        u["split"] = {vi: self.split[vi].parts(u["ct"])
                      for vi in self.tested["paired_bootstrap"]}
        u["s1"] = {vi: self.sample_scores(vi, u["ct"]) for vi in self.sampled}
        u["s2"] = {}
        if study.config.swap:
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

    def top(self, j: int, fields: BootstrapFields, sel: tuple[np.ndarray, ...]) -> None:
        """Merge a chunk's selection (values, replicate numbers[, aux]) into the pair unit's
        k largest (field ``fields.top``). Later chunks are appended, so replicate numbers
        increase along rows."""
        po, name = self.per_unit[j], fields.top
        self.kth_of[name] = fields.kth
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
        whole = (tuple(self.shard.reps) == (0, self.study.config.B)
                 and self.study.whole_replicates(self.systems * (self.systems - 1) // 2))
        for name in self.per_unit[0] if self.per_unit else ():
            parts = [po[name] for po in self.per_unit]
            if isinstance(parts[0], tuple) and whole:
                # the pair's whole list is here: select and sort it as TopK.final would
                # (best first, ties by the smaller replicate) and keep the values at the
                # estimated difference's ranks (paired: the |mean| beside the t value)
                ranks = list(self.study.ranks)
                sel = [topk_rows(p[0], p[1], self.study.k, *p[2:], idx_sorted=True)
                       for p in parts]
                out[self.kth_of[name]] = np.concatenate(
                    [(q[2] if len(q) > 2 else q[0])[:, ranks] for q in sel])
            elif isinstance(parts[0], tuple):  # top-k: select, TopK sorts once at the end
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
        w_sq = Exact(w * w, l1=n)
        qs, sums_all = [], []
        for u in chunk:
            # s1 from per-system exact sums: each part's pair difference is exact
            parts = u["split"][vi]
            sums = np.subtract(parts[0][ia], parts[0][ib])
            for part in parts[1:]:
                sums += np.subtract(part[ia], part[ib])
            sums -= n * mz
            q = paired_ratio(w, w_sq, u["ct"], sums)
            self.add(j, BootstrapFields("paired", vi).count, count_t(q, t_obs, n))
            qs.append(q)
            sums_all.append(sums)
        if self.study.config.estimated_diff:
            # the smallest p = the largest |t*|; kept as -p (larger is better)
            val, rid, tsum = topk_rows(self.cat("q", qs), rep_idx, k,
                                       self.cat("sums", sums_all), idx_sorted=True,
                                       sort=False, largest=False)
            self.top(j, BootstrapFields("paired", vi), (np.negative(val), rid, np.abs(tsum) / n))

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
            self.add(j, BootstrapFields("unpaired", vi).count,
                     count_extreme(absd, d_obs, "two-sided", scale))
            absds.append(absd)
        if self.study.config.estimated_diff:
            self.top(j, BootstrapFields("unpaired", vi),
                     topk_rows(self.cat("absd", absds), rep_idx, k, idx_sorted=True, sort=False))

    def per_replicate(self, u: dict) -> None:
        """All-systems work of a replicate unit: Tukey ranges, swap-set statistics."""
        study, a = self.study, u["a"]
        if self.tested["tukey_ranges"]:
            perm = topic_permutations(study.seed, TUKEY_STREAM, self.systems, self.n, a,
                                      u["b"])
            for vi in self.tested["tukey_ranges"]:
                st = np.ascontiguousarray(self.values(vi).T)
                self.put(PermutationFields(vi).tukey_ranges, a, tukey_ranges(st, perm))
        if study.config.swap:
            for vi in self.sampled:
                self.put(SampleFields(vi).max_perf, a, np.maximum(u["s1"][vi].max(axis=0),
                                                             u["s2"][vi].max(axis=0)))
            u1, u2, ov = topic_overlap(u["counts"], u["counts2"])
            self.put(SampleFields.UNIQUE, a, u1 + u2)
            self.put(SampleFields.OVERLAP, a, ov)

    def sampled_methods(self, j: int, u: dict) -> None:
        """Stability, swap and rank-correlation counters of a pair unit x replicate unit."""
        study, a = self.study, u["a"]
        ia, ib = self.pairs[j]
        signs = {}
        for vi in self.sampled:
            f = SampleFields(vi)
            d, top = sample_differences(u["s1"][vi], ia, ib)
            if study.config.stability:
                gt_xy, gt_yx = stability_counts(d, top, study.config.fuzziness)
                self.add(j, f.gt_xy, gt_xy)
                self.add(j, f.gt_yx, gt_yx)
            if study.config.swap:
                d2, _ = sample_differences(u["s2"][vi], ia, ib)
                for key, counts in zip((f.swap_comps, f.swap_swaps),
                                       swap_counts(d, d2, ABSOLUTE), strict=True):
                    self.out[key] = self.out[key] + counts if key in self.out else counts
            if study.config.rankcorr:
                signs[vi] = pair_signs(d)
                self.put(f.ties, a, ties(signs[vi]), add=True)
        if study.config.rankcorr:
            for x, vi in enumerate(self.sampled):
                for vj in self.sampled[x + 1:]:
                    self.put(SampleFields(vi).conc(vj), a, concordance(signs[vi], signs[vj]),
                             add=True)


def resampled_asl(study: Any, test: str, vi: int, values: np.ndarray,
                  merged: dict[str, Any]) -> tuple[np.ndarray, dict[float, float | None]]:
    """ASLs of a Monte Carlo test of variant `vi` from the merged fields, and the estimated
    difference required for ASL < alpha (Sakai 2006; None for the randomisation test).

    `values` are the variant's per-topic values (systems, topics): randomised Tukey HSD
    compares each pair's ``|mean_a - mean_b|`` with the sorted null ranges.
    """
    B = study.config.B
    raw_by_alpha: dict[float, float | None] = {}
    spec = get_test(test)
    if spec.batched not in BATCHED:  # by its function on each shard's pairs
        return merged[PermutationFields(vi).pair_asl(test)], {a: None for a in study.config.alpha}
    if spec.batched == "tukey_ranges":
        ranges = np.sort(merged[PermutationFields(vi).tukey_ranges])
        means = values.mean(axis=1)
        ia, ib = pair_index(len(values))
        d = means[ia] - means[ib]
        thr = np.abs(d) - tie_tolerance(d, np.abs(means).max())
        count = (B - np.searchsorted(ranges, thr, side="left")).astype(np.int64)
        for alpha in study.config.alpha:
            pos = max(1, math.ceil(alpha * B - 1e-9))
            raw_by_alpha[alpha] = float(ranges[B - pos])
        return study.asl_of(count), raw_by_alpha
    fields = BootstrapFields.of(test, vi)
    # per pair, best first: (-p, replicate, |mean|) paired, (|d*|, replicate)
    top, kth = merged.get(fields.top), merged.get(fields.kth)
    est = None if top is None else top[2] if fields.test == "paired" else top[0]
    for j, (alpha, pos) in enumerate(zip(study.config.alpha, study.ranks, strict=True)):
        if kth is not None:  # the values at the ranks, selected on the workers
            raw_by_alpha[alpha] = float(kth[:, j].max())
        else:
            raw_by_alpha[alpha] = float(est[:, pos].max()) if est is not None else float("nan")
    return study.asl_of(merged[fields.count]), raw_by_alpha
