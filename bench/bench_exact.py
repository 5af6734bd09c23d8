"""What exact count-matrix products cost: :class:`irsim.exact.Exact` against a plain GEMM.

``python bench/bench_exact.py``: for the shapes the studies multiply (discpower's per-pair
``s2`` and per-system sums, topic-set means, coverage's stacked bootstrap means), the time of
the exact product and of ``numpy.matmul`` on the same operands (one BLAS thread, minimum of
repeated runs, interleaved), their ratio, and the number of pieces the scores needed. The
ratio is the price of tables that do not depend on the CPU (docs/ARCHITECTURE.md,
"Determinism"); it is about the number of pieces (two GEMMs for typical scores) plus one
pass over the output.
"""

from __future__ import annotations

import time

import numpy as np


def _best(f, repeat: int = 7) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    from threadpoolctl import threadpool_limits

    from irsim.exact import Exact
    from irsim.sampling.topics import bootstrap_counts

    rng = np.random.default_rng(0)
    cases = []
    # discpower: 256 pairs x 50 topics, squared centred differences, x 250 replicates
    w = rng.beta(2, 5, (256, 50)) - rng.beta(2, 5, (256, 50))
    ct = np.ascontiguousarray(bootstrap_counts(0, "bench", 50, 0, 250).T)
    cases.append(("discpower s2: 256 pairs x 50 topics x 250 samples", w * w, ct, 50, False))
    # discpower per-system sums: 129 runs x 50 topics x 2000 samples
    x = rng.beta(2, 5, (129, 50))
    ct2 = np.ascontiguousarray(bootstrap_counts(0, "bench", 50, 0, 2000).T)
    cases.append(("per-system sums: 129 runs x 50 topics x 2000", x, ct2, 100, False))
    # topic-set means: 250 trials x 2 sets of 25 topics (counts on the left), 129 runs
    sets = np.zeros((500, 50))
    for i in range(500):
        sets[i, rng.choice(50, 25, replace=False)] = 1.0
    cases.append(("set means: 500 sets x 50 topics x 129 runs", np.ascontiguousarray(x.T),
                  sets, 25, True))
    # coverage: 100 samples of 10 topics, 110 runs, B = 1000 (stacked)
    xs = rng.beta(2, 5, (100, 110, 10))
    wb = np.ascontiguousarray(bootstrap_counts(0, "bench", 10, 0, 100 * 1000)
                              .reshape(100, 1000, 10).transpose(0, 2, 1))
    cases.append(("coverage: 100 x (110 runs x 10 topics x 1000)", xs, wb, 10, False))

    print(f"{'product':<52}{'pieces':>7}{'plain ms':>10}{'exact ms':>10}{'ratio':>7}")
    with threadpool_limits(1, user_api="blas"):
        for name, scores, counts, l1, left in cases:
            e = Exact(scores, l1=l1)
            if left:
                plain = _best(lambda s=scores, c=counts: np.matmul(c, s))
                exact = _best(lambda e=e, c=counts: e.left(c))
            else:
                plain = _best(lambda s=scores, c=counts: np.matmul(s, c))
                exact = _best(lambda e=e, c=counts: e.right(c))
            print(f"{name:<52}{len(e.pieces):>7}{plain * 1e3:>10.2f}{exact * 1e3:>10.2f}"
                  f"{exact / plain:>7.2f}")


if __name__ == "__main__":
    main()
