"""Benchmark: the JZS Bayes factor of 10^5 pairs at once against a per-pair quad loop.

``irsim.stats.jzs_bayes_factor`` on `--pairs` rows of differences (system pairs of TREC-8
ad hoc AP, 50 topics, resampled with replacement up to `--pairs` rows, plus a small
per-row jitter so no two rows share t) is one vectorised quadrature; the reference is the
straightforward loop: per pair, the t statistic and ``scipy.integrate.quad`` of Rouder et
al.'s (2009) eq. 1 over [0, inf) (pingouin's formula), timed on `--loop-pairs` of the rows
and extrapolated per pair. Prints both times, the ratio and the largest relative
difference between the two on the sampled rows.

Usage::

    python bench/bench_bayes.py [--data ../shared/data] [--pairs 100000] [--loop-pairs 500]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy
from scipy import integrate

from irsim.stats import jzs_bayes_factor
from irsim.stats.bayes import DEFAULT_R

DEFAULT_DATA = Path(os.environ.get("IRSIM_TEST_DATA",
                                   Path(__file__).resolve().parents[2] / "shared" / "data"))


def quad_bf10(z: np.ndarray, r: float = DEFAULT_R) -> float:
    """BF10 of one row of differences by one ``scipy.integrate.quad`` (the per-pair way)."""
    n = len(z)
    nu = n - 1
    t = z.mean() / (z.std(ddof=1) / math.sqrt(n))

    def f(g: float) -> float:
        q = 1.0 + n * g * r * r
        return (q ** -0.5 * (1.0 + t * t / (q * nu)) ** (-(nu + 1) / 2)
                * (2 * math.pi) ** -0.5 * g ** -1.5 * math.exp(-0.5 / g))

    return integrate.quad(f, 0.0, math.inf)[0] / (1.0 + t * t / nu) ** (-(nu + 1) / 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--loop-pairs", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    m = pd.read_csv(args.data / "urbano" / "adhoc8_ap.csv").to_numpy(np.float64).T
    first, second = np.triu_indices(len(m), 1)
    z = m[first] - m[second]
    z = z[z.std(axis=1) > 0]  # identical systems have no Bayes factor (NaN)
    rng = np.random.default_rng(0)
    z = z[rng.integers(0, len(z), args.pairs)] + rng.normal(0.0, 1e-3, (args.pairs, z.shape[1]))
    print(f"adhoc8 AP differences: {args.pairs} rows x {z.shape[1]} topics; "
          f"cpus={os.cpu_count()}, numpy {np.__version__}, scipy {scipy.__version__}, "
          f"{platform.processor() or '?'}")

    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        res = jzs_bayes_factor(z)
        times.append(time.perf_counter() - t0)
    batched = min(times)
    print(f"batched jzs_bayes_factor, {args.pairs} pairs: best {batched:.3f} s, median "
          f"{float(np.median(times)):.3f} s ({batched / args.pairs * 1e6:.2f} us/pair)")

    sample = rng.choice(args.pairs, args.loop_pairs, replace=False)
    t0 = time.perf_counter()
    ref = np.array([quad_bf10(z[i]) for i in sample])
    loop = (time.perf_counter() - t0) / args.loop_pairs
    print(f"per-pair quad loop: {loop * 1e6:.1f} us/pair on {args.loop_pairs} pairs -> "
          f"{loop * args.pairs:.1f} s for {args.pairs} pairs")
    print(f"ratio (loop / batched, per pair): {loop * args.pairs / batched:.1f}x")
    rel = np.abs(res.bf10[sample] / ref - 1.0)
    print(f"largest relative difference to the quad loop on those pairs: {rel.max():.2e}")


if __name__ == "__main__":
    main()
