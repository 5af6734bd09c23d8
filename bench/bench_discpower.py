"""Benchmark W1: the discpower study at TREC 2004 Robust size (110 systems x 249 topics).

Synthetic scores (``irsim.data.synthetic.synthetic_scores``), one metric, B = 1000, the paired
and the unpaired bootstrap tests (ASL, discriminative power and estimated difference) of all
5995 system pairs, measured in one run against

1. the bare GEMMs of the same shapes: ``[w; w^2] (2P x n) @ counts (n x B)`` for the paired
   test and ``concat(x, y) (P x 2n) @ weights (2n x B)`` for the unpaired one, each as one big
   call (the straightforward count-matrix formulation), and also cut into the canonical
   256-pair x 250-replicate units. The study itself needs only ``w^2 @ counts`` per pair
   (P x n x B): the sums of ``w`` and the unpaired replicates come from per-system GEMMs
   (systems x n x B) and a gather; the time of those GEMMs alone is printed too, as the
   floor of this implementation;
2. a per-pair numpy loop doing the same work pair by pair (gather the bootstrap samples,
   t* / d*, count, k-th largest for the estimated difference), timed on a slice of the pairs
   in every round and scaled to all pairs; its counts must equal the study's.

Goals (issue 4): study <= 1.0 s on 2 cores, <= 3x the bare GEMMs, >= 30x the per-pair loop.

Usage::

    python bench/bench_discpower.py [--repeats 7] [--loop-pairs 600] [--B 1000]

Times are the best (and median) of `--repeats` interleaved rounds (study, GEMMs, a slice of
`--loop-pairs / --repeats` pairs of the loop): the machine may be shared, and interleaving
exposes every contender to the same load.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

import numpy as np

from irsim.data.synthetic import synthetic_scores
from irsim.engine import run_study
from irsim.experiments.discpower import PAIRED_STREAM, UNPAIRED_STREAM, DiscPower
from irsim.kit.common import PAIR_UNIT, pair_index, unit_ranges
from irsim.rng import REPLICATE_BLOCK
from irsim.sampling.topics import bootstrap_counts, bootstrap_indices
from irsim.stats.resample import studentized_t


def loop_pairs(x: np.ndarray, pairs: np.ndarray, B: int, seed: int, k: int
               ) -> tuple[np.ndarray, np.ndarray, float]:
    """The straightforward per-pair version of both tests (gathers, no GEMM)."""
    n = x.shape[1]
    ia, ib = pair_index(len(x))
    pidx = bootstrap_indices(seed, PAIRED_STREAM, n, 0, B)
    uidx = bootstrap_indices(seed, UNPAIRED_STREAM, 2 * n, 0, B)
    paired = np.empty(len(pairs), np.int64)
    unpaired = np.empty(len(pairs), np.int64)
    t0 = time.perf_counter()
    for j, p in enumerate(pairs):
        xa, xb = x[ia[p]], x[ib[p]]
        z = xa - xb
        t_obs = studentized_t(z)
        ws = (z - z.mean())[pidx]
        mean = ws.mean(axis=1)
        sd = ws.std(axis=1, ddof=1)
        const = sd * sd <= 1e-12 * (ws * ws).mean(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(const, 0.0, np.abs(mean) / (sd / math.sqrt(n)))
        paired[j] = np.count_nonzero(t >= abs(t_obs) - 1e-9 * max(abs(t_obs), 1.0))
        np.abs(mean)[np.argpartition(-t, k - 1)[:k]].max()  # estimated-difference work
        v = np.concatenate([xa, xb])[uidx]
        d = v[:, :n].mean(axis=1) - v[:, n:].mean(axis=1)
        d_obs = xa.mean() - xb.mean()
        scale = abs(xa.mean()) + abs(xb.mean())
        unpaired[j] = np.count_nonzero(np.abs(d) >= abs(d_obs) - 1e-9 * max(abs(d_obs), scale))
        np.partition(-np.abs(d), k - 1)[:k].max()
    return paired, unpaired, time.perf_counter() - t0


def bare_gemms(x: np.ndarray, B: int, seed: int, mode: str) -> float:
    """Seconds of GEMMs alone (operands prepared beforehand).

    ``one``: the straightforward count-matrix formulation, one call each: ``[w; w^2] @ C``
    (2P x n x B) and ``concat(x, y) @ W`` (P x 2n x B). ``units``: the same cut into
    256-pair x 250-replicate units. ``study``: the GEMMs the study runs: ``w^2 @ C`` per
    unit (P x n x B) plus per-system sums (systems x n x 250, three per replicate unit).
    """
    n = x.shape[1]
    ia, ib = pair_index(len(x))
    z = x[ia] - x[ib]
    w = z - z.mean(axis=1, keepdims=True)
    ct = np.ascontiguousarray(bootstrap_counts(seed, PAIRED_STREAM, n, 0, B).T)
    dt = np.ascontiguousarray(np.random.default_rng(0).random((2 * n, B)))
    ru = unit_ranges(0, B, REPLICATE_BLOCK)
    pu = unit_ranges(0, len(z), PAIR_UNIT)
    cts = [np.ascontiguousarray(ct[:, a:b]) for a, b in ru]
    if mode == "one":
        w2 = np.concatenate([w, w * w])
        v = np.concatenate([x[ia], x[ib]], axis=1)
        t0 = time.perf_counter()
        w2 @ ct
        v @ dt
        return time.perf_counter() - t0
    if mode == "units":
        v = np.concatenate([x[ia], x[ib]], axis=1)
        blocks = [(np.concatenate([w[a:b], w[a:b] ** 2]), v[a:b]) for a, b in pu]
        dts = [np.ascontiguousarray(dt[:, a:b]) for a, b in ru]
        t0 = time.perf_counter()
        for c, d in zip(cts, dts, strict=True):
            for wb, vb in blocks:
                wb @ c
                vb @ d
        return time.perf_counter() - t0
    sq = [np.ascontiguousarray(w[a:b] ** 2) for a, b in pu]
    wu = [np.ascontiguousarray(np.random.default_rng(1).random((n, 2 * (b - a))))
          for a, b in ru]
    t0 = time.perf_counter()
    for c, u in zip(cts, wu, strict=True):
        x @ c
        x @ c
        x @ u
        for blk in sq:
            blk @ c
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--loop-pairs", type=int, default=600,
                    help="pairs timed in the per-pair loop (0 = all)")
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    m = synthetic_scores(systems=110, topics=249, seed=args.seed).matrix
    x = m.metric(m.metrics[0])
    n_sys, n = x.shape
    P = n_sys * (n_sys - 1) // 2
    study = DiscPower.of(B=args.B, seed=args.seed, tests=("paired_bootstrap", "unpaired_bootstrap"))
    print(f"W1: {n_sys} systems x {n} topics, {P} pairs, B={args.B}, paired + unpaired; "
          f"cpus={os.cpu_count()}, numpy {np.__version__}, {platform.machine()}")

    tables, info = run_study(study, m)  # warm-up (and the counts for the loop check)
    rng = np.random.default_rng(1)
    n_loop = P if args.loop_pairs <= 0 else min(args.loop_pairs, P)
    sample = np.sort(rng.choice(P, n_loop, replace=False))
    slices = np.array_split(sample, args.repeats)
    times: dict[str, list[float]] = {"study": [], "gemm": [], "gemm_units": [], "gemm_study": [],
                                     "loop": []}
    paired, unpaired = [], []
    for r in range(args.repeats):
        t0 = time.perf_counter()
        run_study(study, m)
        times["study"].append(time.perf_counter() - t0)
        times["gemm"].append(bare_gemms(x, args.B, args.seed, "one"))
        times["gemm_units"].append(bare_gemms(x, args.B, args.seed, "units"))
        times["gemm_study"].append(bare_gemms(x, args.B, args.seed, "study"))
        p_cnt, u_cnt, t_slice = loop_pairs(x, slices[r], args.B, args.seed, study.k)
        paired.append(p_cnt)
        unpaired.append(u_cnt)
        times["loop"].append(t_slice * P / max(1, len(slices[r])))
    best = {k: min(v) for k, v in times.items()}
    med = {k: float(np.median(v)) for k, v in times.items()}
    paired, unpaired = np.concatenate(paired), np.concatenate(unpaired)
    loop_all = best["loop"]
    asl = tables["asl"].to_pandas()
    got_p = asl[asl.test == "paired_bootstrap"].asl.to_numpy()[sample] * args.B
    got_u = asl[asl.test == "unpaired_bootstrap"].asl.to_numpy()[sample] * args.B
    agree = bool((np.rint(got_p) == paired).all() and (np.rint(got_u) == unpaired).all())

    print(f"study (run_study, {info['shards']} shards):  best {best['study']:.3f} s, "
          f"median {med['study']:.3f} s   [goal <= 1.0 s]")
    print(f"bare GEMMs, one call each:         best {best['gemm']:.3f} s, "
          f"median {med['gemm']:.3f} s")
    print(f"bare GEMMs in 256 x 250 units:     best {best['gemm_units']:.3f} s, "
          f"median {med['gemm_units']:.3f} s")
    print(f"the study's own GEMMs:             best {best['gemm_study']:.3f} s, "
          f"median {med['gemm_study']:.3f} s (w^2 per pair unit + per-system sums)")
    print(f"per-pair numpy loop, all {P} pairs: best {loop_all:.2f} s, median "
          f"{med['loop']:.2f} s (scaled from {n_loop} pairs timed in {args.repeats} slices); "
          f"counts agree with the study: {agree}")
    print(f"study / bare GEMMs (one call):     {best['study'] / best['gemm']:.2f}x "
          f"(median {med['study'] / med['gemm']:.2f}x)   [goal <= 3x]")
    print(f"study / bare GEMMs (units):        {best['study'] / best['gemm_units']:.2f}x")
    print(f"study / its own GEMMs:             {best['study'] / best['gemm_study']:.2f}x "
          f"(median {med['study'] / med['gemm_study']:.2f}x)")
    print(f"per-pair loop / study:             {loop_all / best['study']:.0f}x "
          f"(median {med['loop'] / med['study']:.0f}x)   [goal >= 30x]")
    ok = (best["study"] <= 1.0 and best["study"] <= 3 * best["gemm"]
          and loop_all >= 30 * best["study"] and agree)
    print("W1 goals met" if ok else "W1 goals NOT met")


if __name__ == "__main__":
    main()
