"""Benchmark: fitting the urbano2019 generator (copula selections) serially, on the engine
(local and Ray) and from the cache.

For the four TREC ad hoc AP collections (adhoc5-8, bottom 10% of runs dropped) it prints the
wall time of the copula selections and its ratio to the serial baseline (one
:func:`irsim.simulate.fitting.fit_collection` after the other, in process):

- ``engine=local``: :func:`irsim.simulate.fit_engine.fit_collections` as shards of 64 pairs;
- ``engine=ray`` with ``--workers`` workers, first with the Ray start, then with Ray running;
- a cache hit (the four models read back).

Every row also checks that the models are identical to the serial fit (families, rotations,
parameters). Ray listens on 127.0.0.1 and is shut down by handle.

Usage::

    python bench/bench_fit.py [--data ../shared/data] [--runs 40] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from irsim.engine.session import Engine
from irsim.simulate.fit_engine import fit_collections
from irsim.simulate.fitting import CollectionModel, fit_collection

DEFAULT_DATA = Path(os.environ.get("IRSIM_TEST_DATA",
                                   Path(__file__).resolve().parents[2] / "shared" / "data"))
COLLECTIONS = ("adhoc5_ap", "adhoc6_ap", "adhoc7_ap", "adhoc8_ap")


def same(a: list[CollectionModel], b: list[CollectionModel]) -> bool:
    """Identical fitted copulas (specs) and families."""
    return all(x.copulas == y.copulas and x.copula_families == y.copula_families
               for x, y in zip(a, b, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--runs", type=int, default=0, help="first runs of each (0: all)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    requests = []
    for name in COLLECTIONS:
        df = pd.read_csv(args.data / "urbano" / f"{name}.csv")
        if args.runs:
            df = df.iloc[:, : args.runs]
        requests.append({"scores": df.to_numpy(np.float64).T, "metric": "AP", "name": name,
                         "runs": tuple(df.columns), "seed": 0, "drop_bottom": 0.1})

    t = time.perf_counter()
    serial = [fit_collection(**r) for r in requests]
    base = time.perf_counter() - t
    pairs = sum(len(m.copulas) for m in serial)
    print(f"irsim fitting benchmark: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs; adhoc5-8 AP, {args.runs or 'all'} runs each, "
          f"{pairs:,} copula selections")
    print(f"{'':<40}{'seconds':>9}{'vs serial':>11}  same models")
    print(f"{'serial (in process)':<40}{base:>9.1f}{1.0:>10.2f}x  (baseline, "
          f"{1e3 * base / pairs:.1f} ms per copula)")

    def row(label: str, seconds: float, models: list[CollectionModel]) -> None:
        print(f"{label:<40}{seconds:>9.2f}{base / seconds:>10.2f}x  {same(models, serial)}")

    t = time.perf_counter()
    local = fit_collections(requests, engine=Engine("local"))
    row("engine=local (shards of 64 pairs)", time.perf_counter() - t, local)
    with Engine("ray", {"workers": args.workers, "num_cpus": args.workers}) as eng:
        t = time.perf_counter()
        first = fit_collections(requests, engine=eng)
        row(f"engine=ray, {args.workers} workers (Ray start)", time.perf_counter() - t, first)
        t = time.perf_counter()
        again = fit_collections(requests, engine=eng)
        row(f"engine=ray, {args.workers} workers (running)", time.perf_counter() - t, again)
    with tempfile.TemporaryDirectory() as d:
        cached = [dict(r, cache_dir=d) for r in requests]
        fit_collections(cached)
        t = time.perf_counter()
        hit = fit_collections(cached)
        row("cache hit (4 models read back)", time.perf_counter() - t, hit)


if __name__ == "__main__":
    main()
