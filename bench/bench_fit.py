"""Benchmark: fitting the urbano2019 generator - where the time goes, and the paths compared.

The collections are the preset ``experiment=urbano2019``'s pooled ones (TREC ad hoc 5-8 AP,
P@10, RR; Web 2010-12 nDCG@20, ERR@20), read as the preset reads them, duplicates and the
bottom 10% of runs dropped; ``--metrics AP`` gives the quick variant's four collections.

1. Profile (``--profile-pairs`` pairs of the largest collection, one thread): per pair, the
   pseudo-observations, pyvinecopulib's selection, the code; the selection restricted to one
   family at a time (what each family costs); and per collection the data preparation and
   margins (:func:`irsim.simulate.pair_copula_model.prepare_fit`, :mod:`irsim.simulate.margins`).
2. Paths, each timed (wall and CPU of this process and its workers) and checked against the
   baseline - the serial path as before:
   :func:`~irsim.simulate.pair_copula_model.fit_pair_copula_model` one
   collection after the other, one thread - for identical models (every copula's JSON,
   family labels, runs, margins bit for bit):

   - ``engine=local, threads=2``: the preset's path
     (:func:`~irsim.simulate.fit_engine.fit_pair_copula_models`, each shard's pairs fitted on
     2 threads, one selection per thread), writing the cache;
   - the path before it: each selection's families on 2 pyvinecopulib threads, pair after
     pair;
   - ``--ray``: engine=ray with 2 workers (Ray started by the row, listening on 127.0.0.1,
     shut down by handle);
   - a cache hit (the models the preset's row wrote, read back).

On a machine other jobs share, the wall times depend on them (the load averages are printed
before and after; with Linux's autogroup scheduling each login session gets an equal share of
the cores, whatever its number of threads or processes); the CPU seconds do not.

Usage::

    python bench/bench_fit.py [--data ../shared/data] [--metrics AP] [--runs 40] [--ray]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyvinecopulib as pv
from omegaconf import OmegaConf

from irsim.data.matrix_io import read_urbano_csv
from irsim.engine.session import Engine
from irsim.simulate import copulas as cop
from irsim.simulate.fit_engine import fit_pair_copula_models
from irsim.simulate.pair_copula_model import PairCopulaModel, fit_pair_copula_model, prepare_fit

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("IRSIM_TEST_DATA", ROOT.parent / "shared" / "data"))
PRESET = ROOT / "irsim" / "conf" / "experiment" / "urbano2019.yaml"


def requests(data: Path, metrics: list[str] | None, runs: int) -> list[dict]:
    """The fit requests of the preset's pooled collections (as test_errors makes them)."""
    paths = OmegaConf.to_container(OmegaConf.load(PRESET))["collection"]["paths"]
    out = []
    for metric, files in paths.items():
        if metrics and metric not in metrics:
            continue
        for f in files:
            m = read_urbano_csv(data / f, metric)
            scores, names = m.metric(metric), tuple(m.systems)
            if runs:
                scores, names = scores[:runs], names[:runs]
            out.append({"scores": np.asarray(scores, np.float64), "metric": metric,
                        "name": Path(f).stem, "runs": names, "seed": 0,
                        "drop_duplicates": True, "drop_bottom": 0.1})
    return out


def cpu() -> float:
    """CPU seconds of this process and of its finished children."""
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                 resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], list[PairCopulaModel]]) -> tuple[float, float, list]:
    w, c = time.perf_counter(), cpu()
    out = fn()
    return time.perf_counter() - w, cpu() - c, out


def same(a: list[PairCopulaModel], b: list[PairCopulaModel]) -> bool:
    """Identical models: copulas (JSON), their labels, runs, margins bit for bit."""
    return all(x.copulas == y.copulas and x.copula_families == y.copula_families
               and x.runs == y.runs and x.margin_families == y.margin_families
               and np.array_equal(x.margins.x, y.margins.x)
               and np.array_equal(x.margins.F, y.margins.F)
               for x, y in zip(a, b, strict=True))


def profile(reqs: list[dict], pairs: int) -> None:
    """Where one thread's time goes (step 1 of the module docstring)."""
    print("profile, one thread:")
    prep = []
    for r in reqs:
        t = time.process_time()
        task = prepare_fit(**r)
        prep.append((time.process_time() - t, task))
    total_prep = sum(s for s, _ in prep)
    n_pairs = sum(t.pairs for _, t in prep)
    print(f"  data preparation + margins: {total_prep:.1f} s CPU for {len(prep)} collections "
          f"({1e3 * total_prep / n_pairs:.2f} ms per pair)")
    task = max(prep, key=lambda p: p[1].pairs)[1]
    a, b = np.triu_indices(len(task.kept), 1)
    pick = np.random.default_rng(0).choice(len(a), min(pairs, len(a)), replace=False)
    t = time.process_time()
    us = [cop.pseudo_obs(np.column_stack([task.kept[i], task.kept[j]]),
                         np.random.default_rng([task.seed, task.key, i, j]))
          for i, j in zip(a[pick].tolist(), b[pick].tolist(), strict=True)]
    t_obs = (time.process_time() - t) / len(us)
    ctl = cop.controls(task.families, 1)
    t = time.process_time()
    fits = [pv.Bicop.from_data(u, controls=ctl) for u in us]
    t_sel = (time.process_time() - t) / len(us)
    t = time.process_time()
    codes = [cop.encode(f) for f in fits]
    [cop.decode(c) for c in codes]
    t_code = (time.process_time() - t) / len(us)
    print(f"  per pair ({task.name} {task.metric}, {len(us)} pairs): selection "
          f"{1e3 * t_sel:.2f} ms, pseudo-observations {1e3 * t_obs:.3f} ms, code and JSON "
          f"{1e3 * t_code:.3f} ms")
    costs = []
    for fam in task.families:
        one = cop.controls((fam,), 1)
        t = time.process_time()
        for u in us:
            pv.Bicop.from_data(u, controls=one)
        costs.append((fam, (time.process_time() - t) / len(us)))
    print("  selection per family (rotations the library keeps): " + ", ".join(
        f"{f} {1e3 * s:.2f}" for f, s in sorted(costs, key=lambda c: -c[1])) + " ms")
    sel = t_sel * n_pairs
    print(f"  estimated whole fit, one thread: {sel + total_prep:.0f} s CPU = selections "
          f"{100 * sel / (sel + total_prep):.0f}%, preparation and margins "
          f"{100 * total_prep / (sel + total_prep):.0f}%, Python per pair "
          f"{100 * (t_obs + t_code) * n_pairs / (sel + total_prep):.1f}%")


def family_threads(reqs: list[dict], threads: int) -> list[PairCopulaModel]:
    """The path before pairs were split over threads: each selection's families on
    `threads` pyvinecopulib threads, one pair after the other."""
    models = []
    for r in reqs:
        t0 = time.perf_counter()
        task = prepare_fit(**r)
        a, b = np.triu_indices(len(task.kept), 1)
        ctl = cop.controls(task.families, threads)
        codes = np.array([
            cop.encode(pv.Bicop.from_data(cop.pseudo_obs(
                np.column_stack([task.kept[i], task.kept[j]]),
                np.random.default_rng([task.seed, task.key, i, j])), controls=ctl))
            for i, j in zip(a.tolist(), b.tolist(), strict=True)])
        models.append(task.finish(codes, time.perf_counter() - t0))
    return models


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--metrics", nargs="*", default=None,
                    help="metrics of the preset to fit (default: all; AP: the quick variant)")
    ap.add_argument("--runs", type=int, default=0, help="first runs of each (0: all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile-pairs", type=int, default=300)
    ap.add_argument("--ray", action="store_true", help="also time engine=ray")
    args = ap.parse_args()
    reqs = requests(args.data, args.metrics, args.runs)
    print(f"irsim fitting benchmark: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; urbano2019 preset, "
          f"{'metrics ' + ' '.join(args.metrics) if args.metrics else 'all metrics'}, "
          f"{len(reqs)} collections, {args.runs or 'all'} runs each")
    if args.profile_pairs:
        profile(reqs, args.profile_pairs)

    base_wall, base_cpu, serial = timed(lambda: [fit_pair_copula_model(**r) for r in reqs])
    pairs = sum(len(m.copulas) for m in serial)
    print(f"{pairs:,} copula selections")
    print(f"{'':<44}{'wall s':>8}{'CPU s':>8}{'vs serial':>11}  same models")
    print(f"{'serial, one thread (baseline: the old path)':<44}{base_wall:>8.1f}"
          f"{base_cpu:>8.1f}{1.0:>10.2f}x  (baseline, {1e3 * base_wall / pairs:.1f} ms wall "
          f"per copula)")

    def row(label: str, fn: Callable[[], list[PairCopulaModel]]) -> list[PairCopulaModel]:
        wall, used, models = timed(fn)
        print(f"{label:<44}{wall:>8.1f}{used:>8.1f}{base_wall / wall:>10.2f}x  "
              f"{same(models, serial)}", flush=True)
        return models

    n = args.threads
    with tempfile.TemporaryDirectory() as d:
        cached = [dict(r, cache_dir=d) for r in reqs]
        row(f"engine=local, threads={n} (the preset)",
            lambda: fit_pair_copula_models(cached, threads=n))
        row(f"families on {n} threads per selection (before)",
            lambda: family_threads(reqs, n))
        if args.ray:
            with Engine("ray", {"workers": n, "num_cpus": n}) as eng:
                row(f"engine=ray, {n} workers (Ray start)",
                    lambda: fit_pair_copula_models(reqs, engine=eng))
        row(f"cache hit ({len(reqs)} models read back)", lambda: fit_pair_copula_models(cached))
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
