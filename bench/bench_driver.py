"""The driver (issue 30): does it keep up with the workers?

discpower on a score matrix (default: TREC-8 ad hoc AP of the Urbano collection, 129 runs x
50 topics, 8,256 pairs; the paired and unpaired bootstrap tests keep their top-k replicates
for the estimated difference, the merge that once saturated the driver). Measured in one run,
in interleaved rounds (the machine may be shared: every contender sees the same load), the
best of `--repeats`:

1. **CLI vs the Python door at one worker** (engine=local): ``irsim collection=matrix ...`` as
   a subprocess (checkpoints, tables, report, manifest: everything a user waits for) against
   ``irsim.discpower(df, metric=..., B=...)`` in this process (no checkpoints). Printed: the
   ratio of wall times and of the study's own time (the manifest's ``study_seconds``); goal
   (issue 30) CLI <= 1.15x the door. The tables must be identical (checked).
2. **Ray, 1 vs 2 workers** on a Ray instance started once (127.0.0.1 only), with checkpoints
   as the CLI writes them: wall time, throughput (shards/s) and the ratio 2 workers : 1
   (goal >= 1.8x on a job of >= 30 s, which needs two cores free for the workers beyond
   what the driver uses);
3. **the driver's busy share** of each Ray run (and the workers' CPU time over the driver's:
   how many workers one driver could feed at this shard size, a ratio that does not depend
   on how many cores this machine has): the CPU time of this process (every thread:
   merging, the checkpoint writer, Ray's own client threads) over the wall time, and the
   main thread's merge time (``seconds_merge``) over the wall time. The driver keeps up
   with W workers while its time per shard is below 1/W of a worker's; on a machine with
   exactly W cores for W workers, its busy share is what the workers lose.

    python bench/bench_driver.py                          # B = 10000 (30 shards)
    python bench/bench_driver.py --B 20000 --repeats 3    # a >= 30 s job on 2 cores
    python bench/bench_driver.py --matrix other.csv --metric P@10

Ratios only; no absolute target is tested.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def default_matrix() -> Path | None:
    root = os.environ.get("IRSIM_TEST_DATA") or os.environ.get("IRSIM_DATA_DIR")
    for base in ([Path(root)] if root else []) + [Path("../shared/data"),
                                                  Path("/work/shared/data")]:
        path = base / "urbano" / "adhoc8_ap.csv"
        if path.exists():
            return path
    return None


def same(a: dict, b: dict) -> bool:
    """Exactly equal tables (NaN equal to NaN)."""
    return set(a) == set(b) and all(a[k].to_pandas().equals(b[k].to_pandas()) for k in a)


def run_door(df: pd.DataFrame, metric: str, B: int):
    import irsim

    t = time.perf_counter()
    res = irsim.discpower(df, metric=metric, B=B)
    return time.perf_counter() - t, res.tables


def run_cli(path: Path, metric: str, B: int, out: Path):
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "irsim", "collection=matrix",
                        f"collection.path={path}", f"collection.metric={metric}",
                        f"experiment.B={B}", "quiet=true", f"hydra.run.dir={out}"],
                       capture_output=True, text=True, cwd=out.parent)  # (-m: the working
    # directory comes first on sys.path, where another checkout's irsim could be found)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"the CLI failed:\n{r.stderr}")
    manifest = json.loads((out / "manifest.json").read_text())
    from irsim.engine import read_tables

    return wall, manifest["timings"]["study_seconds"], read_tables(out)


def run_ray(study, matrix, workers: int, checkpoints: Path):
    from irsim.engine import run_study

    c = time.process_time()
    t = time.perf_counter()
    tables, info = run_study(study, matrix, engine="ray", engine_options={"workers": workers},
                             checkpoint_dir=checkpoints)
    wall = time.perf_counter() - t
    return wall, time.process_time() - c, info, tables


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", type=Path, default=None,
                    help="score matrix CSV (runs as columns, topics as rows); default "
                         "adhoc8_ap.csv of the Urbano data ($IRSIM_TEST_DATA)")
    ap.add_argument("--metric", default="AP")
    ap.add_argument("--B", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--num-cpus", type=int, default=2, help="CPUs of the Ray instance")
    ap.add_argument("--skip-ray", action="store_true")
    args = ap.parse_args()
    path = args.matrix or default_matrix()
    if path is None:
        raise SystemExit("no matrix: pass --matrix or set IRSIM_TEST_DATA")

    import irsim
    from irsim.api import as_score_matrix
    from irsim.experiments.discpower import DiscPower

    df = pd.read_csv(path)
    matrix = as_score_matrix(df, args.metric)
    study = DiscPower.of(B=args.B, seed=0)
    shards = len(study.plan(matrix))
    k = len(matrix.systems)
    print(f"discpower on {path.name}: {k} systems x {len(matrix.topics)} topics "
          f"({k * (k - 1) // 2} pairs), B={args.B}, {shards} shards, top-k k={study.k}; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; irsim {irsim.__version__}, "
          f"numpy {np.__version__}")

    ray = None
    if not args.skip_ray:
        import ray

        from irsim.engine.ray_executor import loopback_only

        loopback_only()  # this instance listens on 127.0.0.1 only
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False,
                 _node_ip_address="127.0.0.1", log_to_driver=False)
    times: dict[str, list[float]] = {}
    extra: dict[str, list] = {}
    ref = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.repeats):
                wall, tables = run_door(df, args.metric, args.B)
                times.setdefault("door", []).append(wall)
                ref = ref or tables
                assert same(tables, ref)
                wall, study_s, tables = run_cli(path, args.metric, args.B,
                                                Path(tmp) / f"cli{r}")
                times.setdefault("cli", []).append(wall)
                times.setdefault("cli_study", []).append(study_s)
                assert same({n: tables[n] for n in ref}, ref), "CLI tables differ"
                for w in ([] if ray is None else [1, 2]):
                    wall, cpu, info, tables = run_ray(study, matrix, w,
                                                      Path(tmp) / f"ray{w}_{r}")
                    assert same(tables, ref), f"Ray ({w} workers) tables differ"
                    times.setdefault(f"ray{w}", []).append(wall)
                    ray_info = info.get("ray", {})
                    busy = ray_info.get("worker_seconds", np.nan)
                    extra.setdefault(f"ray{w}", []).append(
                        (cpu / wall, info.get("seconds_merge", np.nan) / wall,
                         info.get("seconds_checkpoints", np.nan) / wall,
                         busy / (w * wall), ray_info.get("worker_cpu_seconds", np.nan) / busy,
                         ray_info.get("worker_cpu_seconds", np.nan) / cpu))
                print(f"round {r + 1}: " + ", ".join(f"{n} {v[-1]:.2f} s"
                                                     for n, v in times.items()), flush=True)
    finally:
        if ray is not None:
            ray.shutdown()

    best = {n: min(v) for n, v in times.items()}
    print(f"\nbest of {args.repeats} (median in brackets):")
    for name, label in (("door", "Python door, engine=local (no checkpoints)"),
                        ("cli", "CLI, engine=local (wall, subprocess)"),
                        ("cli_study", "CLI, study only (manifest study_seconds)"),
                        ("ray1", "engine=ray, 1 worker (checkpoints)"),
                        ("ray2", "engine=ray, 2 workers (checkpoints)")):
        if name in best:
            print(f"  {label:46s} {best[name]:8.2f} s  ({statistics.median(times[name]):.2f})")
    print(f"\nCLI / door (wall):        {best['cli'] / best['door']:.2f}x   (goal <= 1.15x)")
    print(f"CLI study / door:         {best['cli_study'] / best['door']:.2f}x")
    if "ray1" in best:
        print(f"Ray 2 workers / 1 worker: {best['ray1'] / best['ray2']:.2f}x throughput "
              f"({shards / best['ray1']:.2f} vs {shards / best['ray2']:.2f} shards/s; goal >= "
              f"1.8x on a >= 30 s job)")
        for w in (1, 2):
            best_run = min(range(len(times[f"ray{w}"])), key=times[f"ray{w}"].__getitem__)
            cpu, merge, write, busy, eff, feed = extra[f"ray{w}"][best_run]
            print(f"driver busy share, {w} worker{'s' if w > 1 else ' '}: CPU {100 * cpu:5.1f}% "
                  f"of a core (merging {100 * merge:4.1f}% on the main thread, checkpoint "
                  f"writer {100 * write:4.1f}%); workers in shards {100 * busy:5.1f}% of the "
                  f"time, running on a CPU {100 * eff:5.1f}% of it; workers' CPU / driver's "
                  f"CPU {feed:5.1f}: the driver could feed about that many workers")
        print("(workers in shards ~100% of the time: the driver keeps up; running on a CPU "
              "well below 100%: they wait for a core, the machine is the limit)")
    print("(tables identical: door, CLI and Ray)")


if __name__ == "__main__":
    main()
