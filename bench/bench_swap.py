"""Benchmark W2: swap rates on all 8256 pairs of TREC-8 ad hoc AP (129 runs x 50 topics),
1000 trials, c = 25, three schemes (disjoint, replacement, independent).

1. The ``swap`` study (``irsim.experiments.swap.make``) through ``run_study`` (engine=local,
   default shard sizes; topic draws as selection-count matrices, system means of 250 trials
   per GEMM, pairs as gathers, cache-sized elementwise blocks): goal <= 5 s on 2 cores.
2. A per-trial loop over the same topic sets, vectorised over pairs (each trial: gather the
   topics, mean per system, pair differences, bins, counters): the natural numpy version.
   Measured in the same run, interleaved with (1); counters must agree.
3. Sakai's Figure 1 literally (a Python loop over trials and pairs) on a sample of trials,
   extrapolated to the full run.

Usage::

    python bench/bench_swap.py [--data ../shared/data] [--repeats 3] [--trials 1000]

Times of (1) and (2) are the best and the median of `--repeats` interleaved runs (the machine
may be shared: numbers are noisy).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from irsim.data.matrix import ScoreMatrix
from irsim.engine import run_study
from irsim.experiments import Shards
from irsim.experiments.swap import STREAM, Config, make
from irsim.kit.bins import ABSOLUTE, RELATIVE, is_swap
from irsim.sampling.subsets import subset_indices
from irsim.stats.ties import score_tolerance

DEFAULT_DATA = Path(os.environ.get("IRSIM_TEST_DATA",
                                   Path(__file__).resolve().parents[2] / "shared" / "data"))
SCHEMES = ("disjoint", "replacement", "independent")


def per_trial_loop(x: np.ndarray, scheme: str, size: int, trials: int, seed: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Absolute-bin (comparisons, swaps) of one scheme, one trial at a time."""
    s, n = x.shape
    ia, ib = np.triu_indices(s, 1)
    tol = score_tolerance(x)
    idx = subset_indices(scheme, seed, STREAM, n, size, 0, trials)
    comps = np.zeros(ABSOLUTE.count, np.int64)
    swaps = np.zeros(ABSOLUTE.count, np.int64)
    rcomps = np.zeros(RELATIVE.count, np.int64)
    for i in range(trials):
        m1 = x[:, idx[i, 0]].mean(axis=1)
        m2 = x[:, idx[i, 1]].mean(axis=1)
        d = m1[ia] - m1[ib]
        d2 = m2[ia] - m2[ib]
        d[np.abs(d) <= tol] = 0.0
        d2[np.abs(d2) <= tol] = 0.0
        swap = is_swap(d, d2, zero_swaps=True)
        absd = np.abs(d)
        b = ABSOLUTE.index(absd)
        comps += np.bincount(b, minlength=ABSOLUTE.count)
        swaps += np.bincount(b[swap], minlength=ABSOLUTE.count)
        small = np.minimum(m1[ia], m1[ib])
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(absd == 0, 0.0, np.where(small > 0, absd / small, np.inf))
        rcomps += np.bincount(RELATIVE.index(rel), minlength=RELATIVE.count)
    return comps, swaps


def naive_loop(x: np.ndarray, scheme: str, size: int, trials: int, seed: int) -> np.ndarray:
    """Absolute-bin comparisons of the first `trials` trials, one pair at a time."""
    s, n = x.shape
    tol = score_tolerance(x)
    idx = subset_indices(scheme, seed, STREAM, n, size, 0, trials)
    comps = np.zeros(ABSOLUTE.count, np.int64)
    for i in range(trials):
        q1, q2 = idx[i, 0], idx[i, 1]
        for a in range(s):
            for b in range(a + 1, s):
                d = x[a, q1].mean() - x[b, q1].mean()
                d2 = x[a, q2].mean() - x[b, q2].mean()
                d = 0.0 if abs(d) <= tol else d
                d2 = 0.0 if abs(d2) <= tol else d2
                comps[min(int(abs(d) / 0.01 + 1e-9), 20)] += 1
                _ = d * d2 < 0 or (d == 0) != (d2 == 0)
    return comps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--size", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--naive-trials", type=int, default=3)
    args = ap.parse_args()

    df = pd.read_csv(args.data / "urbano" / "adhoc8_ap.csv")
    x = df.to_numpy(np.float64).T
    m = ScoreMatrix(x[None], ["AP"], list(df.columns), [str(i + 1) for i in range(len(df))])
    pairs = len(m.systems) * (len(m.systems) - 1) // 2
    print(f"W2 adhoc8 AP: {len(m.systems)} systems x {len(m.topics)} topics, {pairs} pairs; "
          f"{args.trials} trials, c = {args.size}, schemes {', '.join(SCHEMES)}; "
          f"cpus={os.cpu_count()}, load average {os.getloadavg()[0]:.1f}, numpy "
          f"{np.__version__}, {platform.processor() or '?'}")
    study, _ = make(Config(sampling=list(SCHEMES), subset_sizes=[args.size],
                           trials=args.trials), m, seed=args.seed, shards=Shards())
    run_study(*make(Config(sampling=["disjoint"], subset_sizes=[5], trials=10), m, seed=0,
                    shards=Shards()))  # warm up
    times, loop_times, tables, agree = [], [], None, True
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        tables, info = run_study(study, m)
        times.append(time.perf_counter() - t0)
        rates = tables["swap_rates"].to_pandas()
        t0 = time.perf_counter()
        loops = [per_trial_loop(x, scheme, args.size, args.trials, args.seed)
                 for scheme in SCHEMES]
        loop_times.append(time.perf_counter() - t0)
        for scheme, (comps, swaps) in zip(SCHEMES, loops, strict=True):
            got = rates[(rates.sampling == scheme) & (rates.bin_kind == "absolute")]
            agree &= bool((got.comparisons.to_numpy() == comps).all()
                          and (got.swaps.to_numpy() == swaps).all())
    best, med = min(times), float(np.median(times))
    lbest, lmed = min(loop_times), float(np.median(loop_times))
    comparisons = pairs * args.trials * len(SCHEMES)
    print(f"study (run_study, engine=local, {info['shards']} shards): best {best:.2f} s, "
          f"median {med:.2f} s ({comparisons / best / 1e6:.0f} M comparisons/s); goal <= 5 s: "
          f"{'ok' if best <= 5 else 'MISSED'}")
    print(f"per-trial loop vectorised over pairs: best {lbest:.2f} s, median {lmed:.2f} s "
          f"({1e3 * lbest / (3 * args.trials):.2f} ms/trial); ratio loop/study {lbest / best:.2f} "
          f"(medians {lmed / med:.2f}); counters agree: {agree}")
    sample = max(1, args.naive_trials)
    t0 = time.perf_counter()
    naive = naive_loop(x, "disjoint", args.size, sample, args.seed)
    naive_s = (time.perf_counter() - t0) / sample * args.trials * len(SCHEMES)
    first = rates[(rates.sampling == "disjoint") & (rates.bin_kind == "absolute")]
    print(f"Sakai's Figure 1 as a Python loop over trials and pairs: {sample} trials measured, "
          f"~{naive_s:.0f} s for the full run (extrapolated); ratio loop/study "
          f"~{naive_s / best:.0f}x; its {sample}-trial counters sum to {int(naive.sum())} "
          f"(= {sample} x {pairs}); study total {int(first.comparisons.sum())}")
    summ = tables["swap_summary"].to_pandas()
    summ = summ[summ.confidence == 0.95][["sampling", "required_diff", "max_performance",
                                          "relative_diff", "sensitivity",
                                          "mean_unique_topics", "mean_overlap"]]
    print("95% confidence:")
    print(summ.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
