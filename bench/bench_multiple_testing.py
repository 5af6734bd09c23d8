"""Benchmark: cost of experiment=multiple_testing, as trials per second per core.

A trial is one simulated collection of m systems on n topics (TREC-8 ad hoc AP model,
Gaussian copula across all runs; default m = 10, n = 50, half of the systems null): its
m(m-1)/2 pairs are tested and every correction (none, Bonferroni, Holm, BH, BY) decides at
alpha = 0.05. Timed on one core (BLAS and OpenMP pinned to 1 thread), in blocks of 250
trials: the generator alone (latent draws + copula + margins), each test with all five
corrections (the simultaneous tests tukey_hsd and randomised_tukey_hsd too: their decisions
serve every correction), and the whole kernel of one configuration (generator + the five
default tests; and with the two Tukey tests added). From
the rates it prints the core-hours of 10^4 trials of the adhoc8 preset's grid priced at this
m and n. The paired Monte Carlo tests cost linearly in B and in the number of pairs (m^2 / 2);
the randomised Tukey HSD in B n m^2 (a GEMM, up to 24 systems) or B n m (a gather, beyond),
whatever the pairs; Tukey HSD is one ANOVA per trial against a cached critical value.

Usage::

    python bench/bench_multiple_testing.py [--data ../shared/data] [--trials 500] [--m 10]
                                           [--n 50] [--B 1000] [--repeats 2]
                                           [--dependence gaussian|vine]

Rates use CPU time of this process (the machine may be shared: wall time is printed too).
"""

from __future__ import annotations

import os

# one core: set before numpy loads its BLAS (a script, so no library-wide side effect)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from irsim.experiments.multiple_testing import (  # noqa: E402
    SIMULTANEOUS,
    TESTS,
    MultipleTesting,
    prepare,
)
from irsim.rng import REPLICATE_BLOCK  # noqa: E402
from irsim.simulate.joint_copula_model import fit_joint_copula_model, true_null_count  # noqa: E402

DEFAULT_DATA = Path(os.environ.get("IRSIM_TEST_DATA",
                                   Path(__file__).resolve().parents[2] / "shared" / "data"))


def timed(f, repeats: int) -> tuple[float, float]:
    """(best CPU seconds, best wall seconds) of `repeats` calls."""
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        f()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--m", type=int, default=10)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--share", type=float, default=0.5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--dependence", default="gaussian", choices=("gaussian", "vine"))
    args = ap.parse_args()
    trials = max(REPLICATE_BLOCK, args.trials // REPLICATE_BLOCK * REPLICATE_BLOCK)

    scores = pd.read_csv(args.data / "urbano" / "adhoc8_ap.csv").to_numpy(np.float64).T
    t0 = time.perf_counter()
    model = fit_joint_copula_model(scores, metric="AP", drop_bottom=0.1, dependence=args.dependence)
    fit_s = time.perf_counter() - t0
    data = prepare([model], systems=(args.m,), shares=(args.share,), spread=0.1)
    m0 = true_null_count(args.m, args.share)
    gen = data.generators[0][(args.m, m0, False)]  # the study's own generator
    study = MultipleTesting.of(sizes=(args.n,), systems=(args.m,), share_null=(args.share,),
                               alpha=(0.05,), trials=trials, B=args.B, pvalue="plus_one",
                               shard_replicates=trials)
    units = [(a, a + REPLICATE_BLOCK) for a in range(0, trials, REPLICATE_BLOCK)]

    def generate() -> list[np.ndarray]:
        out = []
        for a in units:
            rng = np.random.default_rng(a[0])
            draws = gen.draw(rng, REPLICATE_BLOCK, args.n)
            out.append(gen.collections(gen.latent(draws, args.n)))  # scores, true means
        return out

    blocks = generate()
    rows = []
    cpu, wall = timed(generate, args.repeats)
    rows.append(("generator", "", cpu, wall))
    monte_carlo = ("randomisation", "paired_bootstrap", "randomised_tukey_hsd")
    for test in TESTS + SIMULTANEOUS:
        one = MultipleTesting.of(sizes=(args.n,), systems=(args.m,), share_null=(args.share,),
                                 alpha=(0.05,), tests=(test,), trials=trials, B=args.B,
                                 pvalue="plus_one")

        def run(one=one) -> None:
            counters = one.counters(1)
            for k, (x, means) in enumerate(blocks):
                one._count(x, m0, (0, args.n, k), 0, counters, means)

        cpu, wall = timed(run, args.repeats)
        rows.append((f"{test} + corrections",
                     args.B if test in monte_carlo else "", cpu, wall))
    shard = study.plan(data)[0]
    cpu, wall = timed(lambda: study.kernel(shard, data), args.repeats)
    rows.append(("kernel (all 5 tests)", args.B, cpu, wall))
    both = MultipleTesting.of(sizes=(args.n,), systems=(args.m,), share_null=(args.share,),
                              alpha=(0.05,), tests=TESTS + SIMULTANEOUS, trials=trials,
                              B=args.B, pvalue="plus_one", shard_replicates=trials)
    cpu, wall = timed(lambda: both.kernel(shard, data), args.repeats)
    rows.append(("kernel (5 tests + 2 Tukey)", args.B, cpu, wall))

    configs = 4 * 2 * 3  # the adhoc8 preset: m = 5, 10, 20, 40 x n = 25, 50 x 3 shares
    pairs = args.m * (args.m - 1) // 2
    print(f"irsim multiple_testing benchmark: {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, numpy {np.__version__}, 1 thread")
    print(f"collection model fit (adhoc8 AP, {args.dependence}, pool of {model.pool} runs): "
          f"{fit_s:.2f} s wall")
    print(f"{trials} collections of m = {args.m} systems ({pairs} pairs, {m0} null) on "
          f"n = {args.n} topics, 5 corrections, best of {args.repeats}\n")
    header = (f"{'step':<36}{'B':>6}{'trials/s/core':>15}{'(wall)':>10}"
              f"{'core-h per 1e4 trials':>23}{'preset grid core-h':>20}")
    print(header)
    print("-" * len(header))
    for name, b, cpu, wall in rows:
        rate = trials / max(cpu, 1e-9)
        rate_wall = trials / max(wall, 1e-9)
        per_10k = 1e4 / rate / 3600
        print(f"{name:<36}{b!s:>6}{rate:>15,.1f}{rate_wall:>10,.1f}{per_10k:>23.4f}"
              f"{per_10k * configs:>20.3f}")
    print(f"\npreset grid = {configs} configurations (m = 5..40 x n = 25, 50 x 3 shares) x "
          f"10^4 trials, all priced at m = {args.m}, n = {args.n} (use --m 40 for the "
          f"largest); Monte Carlo tests cost linearly in B and in the pairs.")


if __name__ == "__main__":
    main()
