"""Benchmarks W3 and W4: the confidence-interval studies at the papers' sizes.

W3 (Park 2011): the ``park2011`` preset (1000 samples of n = 5, 10, 20 topics, B = 1000, six
interval methods, ten levels) on a 110 x 249 synthetic AP matrix (``synthetic_scores``, the
shape of TREC 2004 Robust). Goal: <= 20 s on 2 cores.

W4 (Cormack & Lynam 2006): ``corpus_ci`` on 37 runs x 43 topics x 1000 documents
(``synthetic_trec``), B = 2000: the corpus bootstrap of every run x topic with the linear,
logit and BCa intervals (plus the small-R correction), and the split-corpus validation
(which bootstraps both halves too), MAP / L-MAP and the meta-analysis. Goal: <= 10 s on 2
cores for the full corpus and one split (the paper's workload). Also timed: the validation
over ``--splits`` MD5 splits (default 10; every split bootstraps both halves, so the work
grows as 1 + 2K bootstraps of the corpus), with the within share per method as mean +- sd
over splits and its t interval.

Each study runs on ``engine=ray`` with 2 workers (the Ray instance is started once, before,
and its start-up is reported apart) and on ``engine=local`` (one process). In the same run a
straightforward numpy version is timed on a slice and scaled to the whole workload:

- W3: a loop over (size, sample, system): gather the bootstrap resamples
  ``x[idx].mean(axis=1)``, then every method and level with ``np.percentile``, the BCa and
  studentised-logit formulas, and the miss counts (the same resamples as the study);
- W4: a loop over (list, replicate): draw ``k ~ Poisson(1)`` for every retrieved document
  and the missing relevant ones, materialise the resampled list with ``np.repeat`` and
  compute its AP, then the three intervals per list; times 3 when the halves are bootstrapped
  too.

Usage::

    python bench/bench_ci.py [--repeats 2] [--only W3|W4] [--workers 2]

Times are the best (and median) of `--repeats` rounds: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from dataclasses import replace

import numpy as np
from scipy import special
from scipy import stats as sps

from irsim.data.collection import DocCollection
from irsim.data.synthetic import synthetic_trec
from irsim.engine import run_study
from irsim.experiments import Shards, corpus_ci
from irsim.experiments.coverage import BOOT_STREAM, TOPIC_STREAM, relabelling
from irsim.sampling.subsets import subset_indices
from irsim.sampling.topics import bootstrap_indices
from irsim.stats.corpus_ap import average_precision


def timed(fn, repeats: int) -> tuple[float, float, object, float]:
    """(best, median) wall seconds of `repeats` calls, the last result, and the best CPU
    seconds of this process (for engine=local the whole work; the machine may be shared,
    and CPU time does not count the time other processes took)."""
    times, cpu, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(times), statistics.median(times), out, min(cpu)


def report(label: str, name: str, best: float, med: float, cpu: float, goal: float | None
           ) -> None:
    extra = f"   CPU {cpu:6.2f} s (/2 = {cpu / 2:5.2f} s)" if name.startswith("local") else ""
    target = f"   (goal <= {goal:g} s on 2 cores)" if goal is not None else ""
    print(f"  {label}, {name:<18s} best {best:7.2f} s   median {med:7.2f} s{extra}{target}")


# ----------------------------------------------------------------------------- W3


def loop_coverage(x: np.ndarray, study, cells: int, seed: int) -> float:
    """Seconds per (sample, system) cell of the straightforward loop, averaged over sizes."""
    S, T = x.shape
    perm = relabelling(seed, S, T)
    xp = np.take_along_axis(x, perm, axis=1)
    truth = x.mean(axis=1)
    B = study.config.B
    per_size = []
    for n in study.config.sizes:
        m = max(1, cells // S + 1)
        topics = subset_indices("independent", seed, TOPIC_STREAM, T, n, 0, m, sets=1)[:, 0]
        idx = bootstrap_indices(seed, BOOT_STREAM, n, 0, m * B)
        misses = 0
        done = 0
        t0 = time.perf_counter()
        for s in range(m):
            for i in range(S):
                if done == cells:
                    break
                sample = xp[i, topics[s]]
                star = sample[idx[s * B:(s + 1) * B]].mean(axis=1)
                mean, sd = sample.mean(), sample.std(ddof=1)
                u = sample - mean
                acc = (u**3).sum() / (6 * (u**2).sum() ** 1.5) if (u**2).sum() > 0 else 0.0
                z0 = sps.norm.ppf((np.sum(star < mean) + np.sum(star <= mean)) / (2 * B))
                inside = star[(star > 0) & (star < 1)]
                lg = np.log(inside / (1 - inside))
                for alpha in study.config.alpha:
                    q = alpha / 2
                    lims = []
                    for quant in (sps.norm.isf(q), sps.t.isf(q, n - 1)):
                        lims.append((mean - quant * sd / np.sqrt(n),
                                     mean + quant * sd / np.sqrt(n)))
                    lo, hi = np.percentile(star, [100 * q, 100 * (1 - q)])
                    lims.append((lo, hi))
                    lims.append((2 * mean - hi, 2 * mean - lo))
                    za = sps.norm.ppf(q)
                    pl = sps.norm.cdf(z0 + (z0 + za) / (1 - acc * (z0 + za)))
                    ph = sps.norm.cdf(z0 + (z0 - za) / (1 - acc * (z0 - za)))
                    lims.append(tuple(np.percentile(star, [100 * pl, 100 * ph])))
                    tq = sps.t.isf(q, n - 1)
                    lims.append((special.expit(lg.mean() - tq * lg.std()),
                                 special.expit(lg.mean() + tq * lg.std())))
                    misses += sum(lo > truth[i] or hi < truth[i] for lo, hi in lims)
                done += 1
        per_size.append((time.perf_counter() - t0) / done)
    return float(np.mean(per_size))


def bench_w3(args, engines) -> None:
    from irsim.experiments import build_study
    from irsim.runner import compose_config

    cfg = compose_config(["experiment=park2011", "seed=0", "quiet=true"])
    study, matrix = build_study(cfg)
    c = study.config
    S, T = len(matrix.systems), len(matrix.topics)
    print(f"\nW3 park2011 preset: {S} systems x {T} topics, {c.samples} samples x sizes "
          f"{list(c.sizes)}, B = {c.B}, {len(c.methods)} methods x "
          f"{len(c.alpha)} levels; shards of {study.shard_replicates} samples "
          f"({len(study.plan(matrix))} shards)")
    results = {}
    for name, engine, opts in engines:
        best, med, out, cpu = timed(lambda e=engine, o=opts: run_study(
            study, matrix, engine=e, engine_options=o), args.repeats)
        results[name] = (best, out[0])
        report("study", name, best, med, cpu, 20)
    tables = list(results.values())
    if len(tables) > 1:
        same = tables[0][1]["coverage"].equals(tables[1][1]["coverage"])
        print(f"  tables identical across engines: {same}")
    cells = args.loop_cells
    per_cell = loop_coverage(matrix.metric("AP"), study, cells, 0)
    total = per_cell * S * c.samples * len(c.sizes)
    best = min(b for b, _ in results.values())
    print(f"  straightforward numpy loop: {per_cell * 1e3:.2f} ms per (sample, system) "
          f"cell on {cells} cells per size -> {total:8.1f} s for all "
          f"{S * c.samples * len(study.config.sizes)} cells; study is {total / best:.0f}x faster")
    cov = tables[0][1]["coverage"].to_pandas()
    head = cov[cov.alpha == 0.05].pivot(index="method", columns="n", values="type1_error")
    print("  Type I error at alpha = 0.05 (Park, Robust 2004: percentile .181/.108/.070, "
          "BCa .170/.093/.059, studentised logit .055/.054/.047):")
    for method, row in head.iterrows():
        print(f"    {method:<18s} " + "  ".join(f"n={n}: {v:.3f}" for n, v in row.items()))


# ----------------------------------------------------------------------------- W4


def loop_corpus(lists, reps: int, level: float, seed: int) -> float:
    """Seconds per (list, replicate) of the straightforward materialising bootstrap."""
    rng = np.random.default_rng(seed)
    z = sps.norm.isf((1 - level) / 2)
    ap_hat = average_precision(lists)
    t0 = time.perf_counter()
    for i in range(len(lists)):
        rel = np.zeros(int(lists.length[i]), bool)
        rel[lists.positions[lists.starts[i]:lists.starts[i + 1]] - 1] = True
        missing = int(lists.missing()[i])
        star = np.empty(reps)
        for b in range(reps):
            k = rng.poisson(1.0, len(rel))
            mat = np.repeat(rel, k)
            rstar = k[rel].sum() + rng.poisson(1.0, missing).sum()
            hits = np.flatnonzero(mat) + 1
            star[b] = (np.arange(1, len(hits) + 1) / hits).sum() / rstar if rstar else 0.0
        sd = star.std(ddof=1)
        lg = special.logit(np.clip(star, 1e-5, 1 - 1e-5)).std(ddof=1)
        _ = (ap_hat[i] - z * sd, ap_hat[i] + z * sd, lg, np.percentile(star, [2.5, 97.5]))
    return (time.perf_counter() - t0) / (len(lists) * reps)


def bench_w4(args, engines) -> None:
    t0 = time.perf_counter()
    runs, qrels = synthetic_trec(runs=37, topics=43, docs_per_topic=1000, depth=1000,
                                 quality=np.linspace(0.5, 1.5, 37), quality_sd=0.4,
                                 topic_sd=0.8, seed=0)
    t1 = time.perf_counter()
    base, data = corpus_ci.make(corpus_ci.Config(B=2000, splits=args.splits),
                                DocCollection(runs, qrels, 1000), seed=0, shards=Shards())
    t2 = time.perf_counter()
    n_lists = len(data.full)
    print(f"\nW4 corpus_ci: {len(data.systems)} runs x {len(data.topics)} topics x 1000 docs "
          f"({n_lists} lists, {len(data.full.positions)} relevant retrieved), B = 2000; "
          f"collection generated in {t1 - t0:.2f} s, lists prepared (trec_eval ranking, "
          f"MD5 halves of {data.splits} splits, validated by evaluate) in {t2 - t1:.2f} s")
    variants = [(True, 1, 10), (False, 1, 10)]
    if args.splits > 1:
        variants.append((True, args.splits, None))
    for validate, splits, goal in variants:
        # the halves of the other splits are left unread with fewer splits
        study = replace(base, config=replace(base.config, validate=validate, splits=splits))
        label = (f"with split validation, {splits} split{'s' if splits > 1 else ''}"
                 if validate else "full corpus only")
        results = {}
        for name, engine, opts in engines:
            best, med, out, cpu = timed(lambda e=engine, o=opts, s=study: run_study(
                s, data, engine=e, engine_options=o), args.repeats)
            results[name] = (best, out[0])
            report(f"study ({label})", name, best, med, cpu, goal)
        tables = list(results.values())
        if len(tables) > 1:
            same = all(tables[0][1][k].equals(tables[1][1][k]) for k in tables[0][1])
            print(f"  tables identical across engines: {same}")
        reps = args.loop_reps
        sub = data.full.take(0, args.loop_lists)
        per = loop_corpus(sub, reps, 0.95, 1)
        # the halves hold about as many slots as the whole
        bootstraps = 1 + 2 * splits if validate else 1
        total = per * n_lists * 2000 * bootstraps
        best = min(b for b, _ in results.values())
        print(f"  straightforward numpy (materialised lists): {per * 1e6:.1f} us per (list, "
              f"replicate) on {args.loop_lists} lists x {reps} -> {total:8.1f} s; study is "
              f"{total / best:.0f}x faster")
        if validate:
            summ = tables[0][1]["corpus_validation_summary"].to_pandas()
            row = summ[summ.subset == "all"].set_index("method")
            if splits == 1:
                print("  within, split 0, both directions (predicted 0.834): " + ", ".join(
                    f"{m} {row.within[m]:.3f}" for m in row.index))
            else:
                print(f"  within over {splits} splits, mean +- sd [t interval] (predicted "
                      "0.834):")
                for m in row.index:
                    print(f"    {m:<15s} {row.within[m]:.3f} +- {row.within_sd[m]:.3f} "
                          f"[{row.within_lo[m]:.3f}, {row.within_hi[m]:.3f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", choices=["W3", "W4"], default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-local", action="store_true", help="skip engine=local")
    parser.add_argument("--loop-cells", type=int, default=60)
    parser.add_argument("--loop-lists", type=int, default=8)
    parser.add_argument("--loop-reps", type=int, default=100)
    parser.add_argument("--splits", type=int, default=10, help="W4: MD5 splits validated")
    args = parser.parse_args()
    print(f"bench_ci: python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    import ray

    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=args.workers, include_dashboard=False,
             _node_ip_address="127.0.0.1", log_to_driver=False)
    print(f"Ray instance start ({args.workers} CPUs): {time.perf_counter() - t0:.2f} s "
          f"(not in the study times below)")
    engines = [(f"ray, {args.workers} workers", "ray", {"workers": args.workers})]
    if not args.no_local:
        engines.append(("local, 1 process", "local", None))
    try:
        if args.only in (None, "W3"):
            bench_w3(args, engines)
        if args.only in (None, "W4"):
            bench_w4(args, engines)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
