"""Ray overhead and speedup: a W1-size discpower job (110 systems x 249 topics, synthetic)
on engine=local against engine=ray with 2 local workers, and how the shard size changes it.

    python bench/bench_ray.py            # B = 150000: the local job runs ~30 s
    python bench/bench_ray.py --B 5000   # quicker look

Prints wall times, the speedup of 2 Ray workers over engine=local (goal >= 1.6x for jobs of
>= 30 s) and Ray's overhead: 1 Ray worker against engine=local with one BLAS thread (goal
<= 10%). Ray actors use one BLAS thread each; engine=local is shown both single-threaded (its
default) and with BLAS's own threading. The estimated difference is off (its top-k
would not fit at this B); all runs produce identical tables (checked). The driver's share
(CLI vs the Python door, Ray 1 vs 2 workers with checkpoints): bench/bench_driver.py.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from irsim.data.synthetic import synthetic_scores
from irsim.engine import run_study
from irsim.experiments.discpower import DiscPower


def same(a, b) -> bool:
    """Exactly equal tables (NaN equal to NaN)."""
    return set(a) == set(b) and all(a[k].to_pandas().equals(b[k].to_pandas()) for k in a)


def timed(study, matrix, **kw):
    t = time.perf_counter()
    tables, info = run_study(study, matrix, **kw)
    return time.perf_counter() - t, tables, info


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--B", type=int, default=150_000)
    ap.add_argument("--shards", type=int, nargs="*", default=[1024, 2048, 6144])
    args = ap.parse_args()
    import ray

    matrix = synthetic_scores(systems=110, topics=249, seed=0).matrix
    print(f"W1: {matrix.shape[1]} systems x {matrix.shape[2]} topics, B={args.B}, paired + "
          f"unpaired, {os.cpu_count()} cores")
    base = DiscPower.of(B=args.B, seed=0, shard_items=2048, shard_replicates=5000,
                        estimated_diff=False)
    t_local1, ref, info = timed(base, matrix, engine_options={"blas_threads": 1})
    print(f"engine=local, blas_threads=1 (default) {t_local1:8.2f} s  shards={info['shards']}")
    t_local, _, _ = timed(base, matrix, engine_options={"blas_threads": None})
    print(f"engine=local, BLAS's own threads       {t_local:8.2f} s")

    from irsim.engine.ray_executor import loopback_only

    loopback_only()  # the instance below listens on 127.0.0.1 only
    ray.init(address="local", num_cpus=2, include_dashboard=False,
             _node_ip_address="127.0.0.1",
             log_to_driver=False)
    try:
        t_ray1, tab1, _ = timed(base, matrix, engine="ray", engine_options={"workers": 1})
        t_ray2, tab2, _ = timed(base, matrix, engine="ray", engine_options={"workers": 2})
        assert same(ref, tab1) and same(ref, tab2)
        print(f"engine=ray, 1 worker                   {t_ray1:8.2f} s  overhead vs local "
              f"(1 thread): {100 * (t_ray1 / t_local1 - 1):+.1f}% (goal <= 10%)")
        print(f"engine=ray, 2 workers                  {t_ray2:8.2f} s  speedup vs local: "
              f"{t_local1 / t_ray2:.2f}x (1 thread), {t_local / t_ray2:.2f}x (BLAS threads) "
              f"(goal >= 1.6x when local >= 30 s)")
        for sp in args.shards:
            study = DiscPower.of(B=args.B, seed=0, shard_items=sp, shard_replicates=5000,
                                 estimated_diff=False)
            t, tab, info = timed(study, matrix, engine="ray", engine_options={"workers": 2})
            assert same(ref, tab)
            print(f"  shard_items={sp:5d}: {info['shards']:4d} shards  {t:8.2f} s  "
                  f"speedup {t_local1 / t:.2f}x (vs local, 1 thread)")
    finally:
        ray.shutdown()
    print(f"(pairs: {len(matrix.systems) * (len(matrix.systems) - 1) // 2}; tables identical "
          f"on every engine: yes; numpy {np.__version__})")


if __name__ == "__main__":
    main()
