"""Benchmark: batched significance tests on all 8256 pairs of TREC-8 ad hoc AP (129 x 50).

1. Sakai's paired studentised bootstrap ASL, B = 1000: ``irsim.stats.paired_bootstrap``
   (goal <= 0.5 s on 2 cores) against a per-pair numpy loop over the same bootstrap
   samples (goal: batched >= 30x faster), both measured in this run; the counts agree.
2. Randomisation (sign-flip) test, B = 10000: ``irsim.stats.randomisation_test`` on all
   pairs (goal <= 5 s) against ``scipy.stats.permutation_test`` (vectorised statistic,
   ``permutation_type='samples'``, 10000 resamples) on a sample of pairs, extrapolated
   per pair.

Usage::

    python bench/bench_stats.py [--data ../shared/data] [--repeats 5] [--scipy-pairs 40]

Batched times are the best and the median of `--repeats` runs (the machine may be shared:
numbers are noisy). The per-pair loop runs over all pairs once.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy
from scipy import stats as sps

from irsim.sampling.topics import bootstrap_indices
from irsim.stats import paired_bootstrap, randomisation_test
from irsim.stats.resample import studentized_t

DEFAULT_DATA = Path(os.environ.get("IRSIM_TEST_DATA",
                                   Path(__file__).resolve().parents[2] / "shared" / "data"))


def timed(f, repeats: int):
    """(result, best seconds, median seconds) of `repeats` calls."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return out, min(times), float(np.median(times))


def loop_paired_bootstrap(x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The straightforward per-pair version: gather, mean, sd, t, count."""
    n = x.shape[1]
    counts = np.empty(len(x), np.int64)
    for p in range(len(x)):
        z = x[p] - y[p]
        t_obs = studentized_t(z)
        ws = (z - z.mean())[idx]
        mean = ws.mean(axis=1)
        sd = ws.std(axis=1, ddof=1)
        const = sd * sd <= 1e-12 * (ws * ws).mean(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(const, 0.0, mean / (sd / np.sqrt(n)))
        counts[p] = np.count_nonzero(np.abs(t) >= abs(t_obs) - 1e-9 * max(abs(t_obs), 1.0))
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--scipy-pairs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    m = pd.read_csv(args.data / "urbano" / "adhoc8_ap.csv").to_numpy(np.float64).T
    first, second = np.triu_indices(len(m), 1)
    x, y = m[first], m[second]
    pairs, n = x.shape
    print(f"adhoc8 AP: {len(m)} systems x {n} topics, {pairs} pairs; cpus={os.cpu_count()}, "
          f"numpy {np.__version__}, scipy {scipy.__version__}, {platform.processor() or '?'}")

    # 1. paired bootstrap, B = 1000
    B = 1000
    study = "bench/paired"
    paired_bootstrap(x[:10], y[:10], B=B, seed=args.seed, study=study)  # warm up
    res, best, med = timed(lambda: paired_bootstrap(x, y, B=B, seed=args.seed, study=study),
                           args.repeats)
    idx = bootstrap_indices(args.seed, study, n, 0, B)
    t0 = time.perf_counter()
    loop = loop_paired_bootstrap(x, y, idx)
    loop_s = time.perf_counter() - t0
    agree = int(np.count_nonzero(loop == res.count))
    print(f"paired bootstrap B={B}: batched best {best:.3f} s (median {med:.3f} s), "
          f"goal <= 0.5 s: {'ok' if best <= 0.5 else 'MISSED'}")
    print(f"  per-pair numpy loop: {loop_s:.2f} s ({1e3 * loop_s / pairs:.3f} ms/pair); "
          f"speed-up {loop_s / best:.1f}x (median {loop_s / med:.1f}x), goal >= 30x: "
          f"{'ok' if loop_s / best >= 30 else 'MISSED'}; counts agree on {agree}/{pairs} pairs")

    # 2. randomisation, B = 10000
    B = 10000
    randomisation_test(x[:10], y[:10], B=B, seed=args.seed)  # warm up
    rres, rbest, rmed = timed(lambda: randomisation_test(x, y, B=B, seed=args.seed),
                              max(1, args.repeats // 2))
    print(f"randomisation B={B}: batched best {rbest:.3f} s (median {rmed:.3f} s), "
          f"goal <= 5 s: {'ok' if rbest <= 5 else 'MISSED'}")
    sample = np.random.default_rng(args.seed).choice(pairs, args.scipy_pairs, replace=False)

    def stat(z, axis):
        return np.mean(z, axis=axis)

    t0 = time.perf_counter()
    sp = [sps.permutation_test((x[p] - y[p],), stat, vectorized=True,
                               permutation_type="samples", n_resamples=B,
                               rng=np.random.default_rng(p)).pvalue for p in sample]
    scipy_per_pair = (time.perf_counter() - t0) / len(sample)
    ours_per_pair = rbest / pairs
    diff = np.abs(np.array(sp) - rres.pvalue[sample])
    print(f"  scipy.stats.permutation_test: {1e3 * scipy_per_pair:.2f} ms/pair on "
          f"{len(sample)} pairs (all pairs ~{scipy_per_pair * pairs:.0f} s); irsim "
          f"{1e6 * ours_per_pair:.1f} us/pair: {scipy_per_pair / ours_per_pair:.0f}x; "
          f"max |p diff| {diff.max():.4f} (Monte Carlo, independent draws)")


if __name__ == "__main__":
    main()
