"""Benchmark: cost of experiment=test_errors, as trials per second per core at n = 50.

For each test of the study (t, Wilcoxon, sign, randomisation, paired bootstrap) the p-values
of blocks of 250 simulated trials (TREC-8 ad hoc AP, n = 50 topics, delta = 0) are timed on
one core (BLAS and OpenMP pinned to 1 thread), as is the generator (latent draws + margins +
copula) and the whole kernel (generator + all five tests). From the rates it prints the
core-hours of 10^6 trials per configuration and of the default study (metrics x topic set
sizes x deltas configurations), so the cost of a study can be read off before it is
launched. Monte Carlo tests scale linearly in B and sublinearly in n (GEMMs of n x B).

Usage::

    python bench/bench_test_errors.py [--data ../shared/data] [--trials 2000] [--B 1000]
                                      [--repeats 3] [--n 50]

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

from irsim.experiments.test_errors import TESTS, TestErrors  # noqa: E402
from irsim.sampling.rng import REPLICATE_BLOCK  # noqa: E402
from irsim.sampling.simulate import fit_simulator, prepare  # noqa: E402

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
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    trials = max(REPLICATE_BLOCK, args.trials // REPLICATE_BLOCK * REPLICATE_BLOCK)

    scores = pd.read_csv(args.data / "urbano" / "adhoc8_ap.csv").to_numpy(np.float64).T
    t0 = time.perf_counter()
    sim = fit_simulator(scores, metric="AP", drop_bottom=0.1)
    fit_s = time.perf_counter() - t0
    data = prepare([sim], (0.0,))
    study = TestErrors(sizes=(args.n,), deltas=(0.0,), alphas=(0.05,), trials=trials,
                       B=args.B, shard_replicates=trials)
    units = [(a, a + REPLICATE_BLOCK) for a in range(0, trials, REPLICATE_BLOCK)]
    blocks = []
    for a, b in units:
        base, pair, z1, z2 = study._latent(data, 0, args.n, a, b)
        y, x = sim.scores(pair, z1, z2, margin_a=base, margin_b=base)
        blocks.append((x, y, (0, a // REPLICATE_BLOCK)))

    def generate() -> None:
        for a, b in units:
            base, pair, z1, z2 = study._latent(data, 0, args.n, a, b)
            sim.scores(pair, z1, z2, margin_a=base, margin_b=base)

    rows = []
    cpu, wall = timed(generate, args.repeats)
    rows.append(("generator", "", cpu, wall))
    for test in TESTS:
        def run(test=test) -> None:
            for x, y, key in blocks:
                study.pvalues(test, "two-sided", x, y, key)

        cpu, wall = timed(run, args.repeats)
        rows.append((test, args.B if test in ("randomisation", "paired_bootstrap") else "",
                     cpu, wall))
    shard = study.plan(data)[0]
    cpu, wall = timed(lambda: study.kernel(shard, data), args.repeats)
    rows.append(("kernel (all 5 tests)", args.B, cpu, wall))

    configs = 3 * 3 * 11  # default: AP, P@10, RR x n = 25, 50, 100 x 11 deltas
    print(f"irsim test_errors benchmark: {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, numpy {np.__version__}, 1 thread")
    print(f"simulator fit (adhoc8 AP, {len(sim.systems)} runs, {sim.pairs} pairs): "
          f"{fit_s:.2f} s wall")
    print(f"{trials} trials of n = {args.n} topics (TREC-8 AP model), best of "
          f"{args.repeats}\n")
    header = (f"{'step':<22}{'B':>6}{'trials/s/core':>15}{'(wall)':>10}"
              f"{'core-h per 1e6 trials':>23}{'default study core-h':>22}")
    print(header)
    print("-" * len(header))
    for name, b, cpu, wall in rows:
        rate = trials / max(cpu, 1e-9)
        rate_wall = trials / max(wall, 1e-9)
        per_million = 1e6 / rate / 3600
        print(f"{name:<22}{b!s:>6}{rate:>15,.0f}{rate_wall:>10,.0f}{per_million:>23.3f}"
              f"{per_million * configs:>22.2f}")
    print(f"\ndefault study = {configs} configurations (3 metrics x 3 sizes x 11 deltas) x "
          f"10^6 trials, one alternative, priced at n = {args.n} (use --n 25 / --n 100 for "
          f"the other sizes); Monte Carlo tests cost linearly in B.")


if __name__ == "__main__":
    main()
