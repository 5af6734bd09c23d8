"""Benchmark: cost of experiment=test_errors design=urbano2019 (Urbano et al. 2019) per core.

For each test (t, Wilcoxon, sign, randomisation, shift bootstrap) at n = 50 topics and the
paper's B = 10^6 resamples, on Type I trials of a generator fitted to TREC-8 ad hoc AP, it
prints (one core: BLAS and OpenMP pinned to 1 thread; CPU time of this process):

- trials per second per core (both tails, as the study runs them: two-sided and one-sided);
- for the Monte Carlo tests, the ratio of that time to the **GEMM roofline** of the same
  resampling: the (trials x n) @ (n x B) float64 matrix product for both tails (the study
  counts both tails on one product), alone, operands ready, written block by block into one
  reused buffer in the fastest of four block shapes (the kernel's cache-resident blocks,
  the 128 x 1,024 blocks of issue 30's first pass, the previous kernel's blocks and
  512 x 65,536), chosen by a short probe (the arithmetic
  the test cannot avoid; goal: within 1.5x). The Monte Carlo tests run on one unit of
  trials sharing their resamples, as the study does (``MC_UNIT`` = 4,000 trials: drawing
  the resamples is amortised over them). The kernel, the previous kernel and the roofline
  product of the same size are timed in ``--repeats`` interleaved rounds (a shared machine's
  load hits all three alike); each ratio is of the fastest round of each, and the spread of
  the per-round ratios is printed beside it;
- the same ratio, in the same run, of the **previous kernel** (kept here only:
  :func:`previous_counts`, the counting path before issue 30: one GEMM per 64 x 8192 block,
  every alternative compared on the whole block, and the shift bootstrap drawing its count
  matrix twice in 256 MiB chunks), and the speed-up; its counts are checked equal to the
  current ones;
- the ratio to a **per-trial** implementation that resamples like the paper's C++ loop: one
  trial at a time, one random number per topic per resample (B x n uniforms), the resampled
  means summed topic by topic (goal: >= 50x);
- the projected core-hours of the paper's full design: 5 metrics x 3 topic set sizes x
  (1,667,000 Type I trials + 10 deltas x 167,000 Type II/III trials), all five tests, both
  tails, B = 10^6; rates measured at n = 50 and scaled linearly in n for the Monte Carlo tests
  (their GEMMs are linear in n) to the sizes 25, 50, 100. Also the generator's cost per trial
  and the fitting cost of the real collections (copulas per second).

Usage::

    python bench/bench_test_errors.py [--data ../shared/data] [--runs 40] [--trials 1000]
                                      [--mc-trials 250] [--B 1000000] [--n 50]
                                      [--loop-trials 2] [--repeats 3] [--fit-cache DIR]
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

from irsim.experiments.test_errors import (  # noqa: E402
    MC_UNIT,
    TESTS,
    URBANO_STREAM,
    TestErrors,
)
from irsim.rng import REPLICATE_BLOCK, blocked_draws, study_key  # noqa: E402
from irsim.sampling.signs import sign_flips  # noqa: E402
from irsim.sampling.topics import bootstrap_counts  # noqa: E402
from irsim.simulate.designs import PooledMetric  # noqa: E402
from irsim.simulate.pair_copula_model import fit_pair_copula_model  # noqa: E402
from irsim.stats._validation import DEFAULT_MEMORY_BUDGET, monte_carlo_iv  # noqa: E402
from irsim.stats.resample import BLOCK_COLS, BLOCK_ROWS  # noqa: E402
from irsim.stats.ties import count_extremes  # noqa: E402

DEFAULT_DATA = Path(os.environ.get("IRSIM_TEST_DATA",
                                   Path(__file__).resolve().parents[2] / "shared" / "data"))
#: The paper's design: metrics, topic set sizes, deltas and trials.
METRICS, SIZES, DELTAS = 5, (25, 50, 100), 10
TYPE1_TRIALS, TYPE2_TRIALS = 1_667_000, 167_000
MC = ("randomisation", "paired_bootstrap")
TAILS = ("two-sided", "greater")


def cpu(f, repeats: int = 1) -> float:
    """Best CPU seconds of `repeats` calls."""
    best = np.inf
    for _ in range(repeats):
        c0 = time.process_time()
        f()
        best = min(best, time.process_time() - c0)
    return best


#: Blocks of the previous kernel (rows x draws).
PREVIOUS_BLOCK_ROWS, PREVIOUS_BLOCK_COLS = 64, 8192
#: Rows of the kernel's blocks in issue 30's first pass (128 x 1,024: a faster GEMM alone
#: than the kernel's own blocks on some machines, so the roofline probes it too).
SESSION9_BLOCK_ROWS = 128


def previous_kernel(lhs: np.ndarray, draws: np.ndarray, observed: np.ndarray,
                    alternatives: tuple[str, ...], scale: np.ndarray) -> np.ndarray:
    """``irsim.stats.resample.resampled_counts`` before issue 30: per 64 x 8192 block one
    GEMM (a new array, on a transposed view of the draws) and every alternative counted on
    the whole block by :func:`irsim.stats.ties.count_extremes` (two-sided: two comparisons
    of its own)."""
    rows = len(lhs)
    out = np.zeros((rows, len(alternatives)), np.int64)
    for c0 in range(0, len(draws), PREVIOUS_BLOCK_COLS):
        block_t = draws[c0:c0 + PREVIOUS_BLOCK_COLS].T
        for r0 in range(0, rows, PREVIOUS_BLOCK_ROWS):
            r1 = min(rows, r0 + PREVIOUS_BLOCK_ROWS)
            out[r0:r1] += count_extremes(lhs[r0:r1] @ block_t, observed[r0:r1],
                                         alternatives, scale[r0:r1])
    return out


def previous_counts(test: str, x: np.ndarray, y: np.ndarray, B: int, seed: int,
                    key: tuple[int, ...]) -> np.ndarray:
    """Counts of the Monte Carlo `test` (both tails) as computed before issue 30: the
    same resamples (stream ``test_errors/<test>``, `key`) in the 256 MiB chunks of the
    memory budget; the shift bootstrap draws its count matrices twice (for their mean,
    then for the counts) unless B fits one chunk."""
    z = x - y
    n = z.shape[1]
    mc = monte_carlo_iv(B=B, seed=seed, study=f"test_errors/{test}", pvalue_mode="count",
                        memory_budget=DEFAULT_MEMORY_BUDGET, key=key)
    count = np.zeros((len(z), len(TAILS)), np.int64)
    chunks = list(mc.replicate_chunks(8 * n))
    if test == "randomisation":
        obs, scale = z.sum(axis=1), np.abs(z).sum(axis=1)
        for start, stop in chunks:
            signs = sign_flips(mc.seed, mc.study, n, start, stop, key=mc.key)
            count += previous_kernel(z, signs, obs, TAILS, scale)
        return count
    obs, scale = z.mean(axis=1), np.abs(z).mean(axis=1)
    kept, cbar = None, np.zeros(n)
    for start, stop in chunks:
        counts = bootstrap_counts(mc.seed, mc.study, n, start, stop, key=mc.key)
        cbar += counts.sum(axis=0)
        kept = counts if len(chunks) == 1 else None
    cbar /= mc.B
    for start, stop in chunks:
        counts = kept if kept is not None else bootstrap_counts(mc.seed, mc.study, n, start,
                                                                 stop, key=mc.key)
        count += previous_kernel(z, (counts - cbar) / n, obs, TAILS, scale)
    return count


def per_trial_loop(d: np.ndarray, B: int, test: str, rng: np.random.Generator) -> float:
    """One trial, resampled like the paper's C++ loop: for each of B resamples one uniform
    per topic (a sign, or a topic index), the resampled mean accumulated topic by topic;
    p-value two-sided. Chunked only to bound memory."""
    n = len(d)
    obs = abs(d.mean())
    hits = 0
    for start in range(0, B, 100_000):
        m = min(100_000, B - start)
        u = rng.random((m, n))
        if test == "randomisation":
            s = np.zeros(m)
            for i in range(n):  # topic by topic, as the loop does
                s += np.where(u[:, i] < 0.5, -d[i], d[i])
            hits += int((np.abs(s / n) >= obs).sum())
        else:
            w = d - d.mean()
            s = np.zeros(m)
            idx = (u * n).astype(np.int64)
            for i in range(n):
                s += w[idx[:, i]]
            hits += int((np.abs(s / n) >= obs).sum())
    return hits / B


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--runs", type=int, default=40, help="runs of adhoc8 AP to fit")
    ap.add_argument("--trials", type=int, default=1000, help="trials for t/Wilcoxon/sign")
    ap.add_argument("--mc-trials", type=int, default=MC_UNIT,
                    help="trials for the MC tests (default: one Monte Carlo unit)")
    ap.add_argument("--B", type=int, default=1_000_000)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--loop-trials", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3,
                    help="interleaved rounds of the Monte Carlo kernels and their roofline")
    ap.add_argument("--fit-cache", type=Path, default=None)
    args = ap.parse_args()
    n, B = args.n, args.B
    mc_trials = max(1, args.mc_trials)
    trials = max(REPLICATE_BLOCK, max(args.trials, mc_trials) // REPLICATE_BLOCK
                 * REPLICATE_BLOCK)

    df = pd.read_csv(args.data / "urbano" / "adhoc8_ap.csv").iloc[:, : args.runs]
    t0 = time.process_time()
    model = fit_pair_copula_model(df.to_numpy(np.float64).T, metric="AP", name="adhoc8_ap",
                                  runs=tuple(df.columns), cache_dir=args.fit_cache)
    fit_cpu = time.process_time() - t0
    pool = PooledMetric.build("AP", [model], (0.05,))
    study = TestErrors.of(sizes=(n,), deltas=(0.0,), alpha=(0.05,), B=B, seed=0,
                          wilcoxon_method="r", sign_threshold=0.01, bootstrap_statistic="mean")

    def uniforms(a: int, b: int) -> np.ndarray:
        return blocked_draws(0, URBANO_STREAM, (study_key("AP"), n), a, b,
                             lambda rng, m: rng.random((m, 3 + 2 * n)))

    gen_cpu = cpu(lambda: pool.type1(uniforms(0, trials), n))
    base, exp = pool.type1(uniforms(0, trials), n)
    # GEMM roofline: the (trials x n) @ (n x B) product for both tails, operands ready, in
    # blocks written into one reused buffer; the block shape is the fastest of a short probe
    lhs = np.random.default_rng(0).standard_normal((mc_trials, n))
    whole = np.random.default_rng(1).standard_normal((n, min(B, 1 << 16)))

    def product(rows_: int, cols: int, columns: int, lhs_rows: int) -> None:
        block = np.ascontiguousarray(whole[:, :cols])
        out = np.empty((min(rows_, lhs_rows), cols))
        for c0 in range(0, columns, cols):
            w = min(cols, columns - c0)
            for r0 in range(0, lhs_rows, rows_):
                h = min(rows_, lhs_rows - r0)
                np.matmul(lhs[r0:r0 + h], block[:, :w], out=out[:h, :w])

    probe_rows, probe_cols = min(mc_trials, 512), whole.shape[1]
    candidates = {f"blocks {BLOCK_ROWS} x {BLOCK_COLS}": (BLOCK_ROWS, BLOCK_COLS),
                  f"session-9 blocks {SESSION9_BLOCK_ROWS} x {BLOCK_COLS}":
                  (SESSION9_BLOCK_ROWS, BLOCK_COLS),
                  f"previous blocks {PREVIOUS_BLOCK_ROWS} x {PREVIOUS_BLOCK_COLS}":
                  (PREVIOUS_BLOCK_ROWS, PREVIOUS_BLOCK_COLS),
                  f"whole {probe_rows} x {probe_cols}": (probe_rows, probe_cols)}
    shapes = {name: cpu(lambda s=shape: product(*s, probe_cols, probe_rows), 3)
              / (probe_rows * probe_cols) for name, shape in candidates.items()}
    roof_shape = candidates[min(shapes, key=shapes.get)]

    rows, previous, rounds = {}, {}, {test: [] for test in MC}
    for test in TESTS:
        if test in MC:
            continue
        x, y = exp[:trials], base[:trials]
        rows[test] = (trials, cpu(lambda test=test, x=x, y=y: study.pvalues(
            test, TAILS, x, y, (0, 0))))
    for _ in range(max(1, args.repeats)):  # interleaved: new, previous, roofline
        for test in MC:
            x, y = exp[:mc_trials], base[:mc_trials]
            p = {}
            new = cpu(lambda test=test, x=x, y=y, p=p: p.update(
                new=study.pvalues(test, TAILS, x, y, (0, 0))))
            old = cpu(lambda test=test, x=x, y=y, p=p: p.update(
                old=previous_counts(test, x, y, B, study.seed, (0, 0))))
            roof = cpu(lambda: product(*roof_shape, B, mc_trials))
            same = np.array_equal(np.rint(p["new"] * B).astype(np.int64), p["old"])
            rounds[test].append((new, old, roof, same))
    for test in MC:
        new, old, roof, same = zip(*rounds[test], strict=True)
        rows[test] = (mc_trials, min(new))
        spread = [n_ / r_ for n_, r_ in zip(new, roof, strict=True)]
        previous[test] = (min(old), all(same), min(roof) / mc_trials, min(spread), max(spread))
    rows = {test: rows[test] for test in TESTS}
    per_product = min(v[2] for v in previous.values()) / B  # the strictest round
    gemm_per_trial = per_product * B
    gflops = 2 * n / per_product / 1e9

    loop = {}
    rng = np.random.default_rng(2)
    d = (exp - base)[: args.loop_trials]
    for test in MC:
        sec = cpu(lambda test=test: [per_trial_loop(row, B, test, rng) for row in d])
        loop[test] = len(TAILS) * sec / max(len(d), 1)  # the loop also runs once per tail

    print(f"irsim test_errors design=urbano2019 benchmark: "
          f"{platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}, numpy {np.__version__}, 1 thread")
    pairs = len(model.copulas)
    speed = "cached" if model.cached else f"{pairs / max(fit_cpu, 1e-9):.0f} copulas/s"
    print(f"fit: adhoc8 AP, {len(model.runs)} runs kept, {pairs} copula selections: "
          f"{fit_cpu:.2f} CPU s ({speed})")
    print(f"Type I trials of n = {n} topics; B = {B:,}; both tails (two-sided + "
          f"one-sided)\n")
    head = (f"{'test':<18}{'trials':>8}{'trials/s/core':>15}{'vs GEMM roofline':>22}"
            f"{'vs per-trial loop':>19}{'previous kernel':>17}{'speed-up':>10}")
    print(head)
    print("-" * len(head))
    gen_rate = trials / gen_cpu
    print(f"{'generator':<18}{trials:>8}{gen_rate:>15,.1f}{'':>22}{'':>19}")
    per_trial_sec = {"generator": 1 / gen_rate}
    for test, (k, sec) in rows.items():
        rate = k / sec
        per_trial_sec[test] = sec / k
        roof = loop_ratio = prev = speedup = ""
        if test in MC:
            sec_prev, same, _, lo, hi = previous[test]
            roof = f"{(sec / k) / gemm_per_trial:.2f}x ({lo:.2f}-{hi:.2f})"
            loop_ratio = f"{loop[test] / (sec / k):.0f}x faster"
            prev = f"{(sec_prev / k) / gemm_per_trial:.2f}x slower"
            speedup = f"{sec_prev / sec:.2f}x" + ("" if same else " (COUNTS DIFFER)")
        print(f"{test:<18}{k:>8}{rate:>15,.2f}{roof:>22}{loop_ratio:>19}{prev:>17}"
              f"{speedup:>10}")
    print(f"\nGEMM roofline: {gflops:.1f} GFLOP/s per core in blocks of {roof_shape[0]} x "
          f"{roof_shape[1]} ({gemm_per_trial * 1e3:.2f} ms per trial for both tails, one "
          f"product; fastest of {max(1, args.repeats)} rounds; ratios: fastest round of "
          "each, the per-round range in brackets); probe by shape (GFLOP/s): "
          + ", ".join(f"{k} {2 * n / v / 1e9:.1f}" for k, v in shapes.items()))

    # projection: trials of the full design, cost per trial by size
    scale = {s: s / n for s in SIZES}
    total = 0.0
    for s in SIZES:
        count = METRICS * (TYPE1_TRIALS + DELTAS * TYPE2_TRIALS)
        sec = sum((v * scale[s] if k in MC else v) for k, v in per_trial_sec.items())
        total += count * sec
    trials_all = len(SIZES) * METRICS * (TYPE1_TRIALS + DELTAS * TYPE2_TRIALS)
    print(f"\nfull design: {METRICS} metrics x {len(SIZES)} sizes x (1,667,000 Type I + "
          f"{DELTAS} x 167,000 Type II/III) = {trials_all:,} trials, 5 tests x 2 tails, "
          f"B = {B:,}")
    print(f"projected: {total / 3600:,.1f} core-hours "
          f"({total / 3600 / 64:,.2f} h on one 64-core node; goal < 128 core-hours)")


if __name__ == "__main__":
    main()
