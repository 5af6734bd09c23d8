"""Benchmark: the budget study's trials (people judge a sample of the pool's judgments) on
DL 2019 (61 runs, NIST as the gold, the votes judge as the proxy), against re-evaluating the
runs per trial.

1. The study's kernel (``irsim.experiments.budget.kernel.trials``): every estimator (proxy,
   gold, PPI, PPI++, stratified PPI), its intervals, the decisions on all pairs with each
   correction and the rankings' tau, for the judgments unit, over blocks of 50 trials: one
   parse of the runs, one evaluation per qrels, then matrix products of the trials' 0/1
   selections with the pool's weights.
2. The per-trial way: for each trial and budget, ``irsim.evaluate`` of the run files against
   the gold labels of the sampled judgments and against the proxy's labels of the same
   judgments, then the PPI estimate of every system's mean (the issue's baseline: each
   trial parses and evaluates the runs again).
3. The same with the runs parsed once (``irsim.metrics.evaluate`` on the parsed runs): the
   fastest per-trial way irsim offers.

(2) and (3) compute only the PPI point estimate, so they do less work than (1); all three
must give the same PPI means on the same samples (checked to 1e-9). Prints trials per
second of each and the ratios (goal: >= 50x against (2)).

Usage::

    python bench/bench_budget.py [--data ../shared/data] [--trials 200] [--naive-trials 3]
    python bench/bench_budget.py --synthetic      # a generated collection, no data needed
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

import irsim
from irsim.data.types import Qrels
from irsim.experiments.budget import Config, prepare
from irsim.experiments.budget import kernel as K
from irsim.experiments.budget.prepare import _pool, votes_qrels
from irsim.kit.qrels_set import AssessorInput
from irsim.metrics import evaluate
from irsim.metrics.linear import linear_form
from irsim.metrics.measures import parse_measure
from irsim.rng import blocked_draws
from irsim.stats.ppi import finite_ppi

DEFAULT_DATA = Path(os.environ.get("IRSIM_TEST_DATA",
                                   Path(__file__).resolve().parents[2] / "shared" / "data"))


def load(args: argparse.Namespace) -> tuple[AssessorInput, list[str] | None]:
    if args.synthetic:
        from irsim.data.synthetic import synthetic_trec

        runs, qrels = synthetic_trec(runs=args.runs or 12, topics=20, docs_per_topic=120,
                                     depth=100, seed=1)
        return AssessorInput(runs, {"gold": qrels}), None
    import glob

    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors import read_assessor_runs

    d = Path(args.data) / "dl19-assessors"
    files = sorted(glob.glob(str(d / "runs" / "*")))[: args.runs or None]
    return (AssessorInput(read_assessor_runs(files),
                          {"gold": read_qrels(d / "qrels" / "nist.txt")}), files)


def ours(bd, trials: int, seed: int) -> float:
    t0 = time.perf_counter()
    K.trials(bd, 0, trials, seed=seed, alpha=0.05, corrections=("holm", "none"), pilot=0.5)
    return time.perf_counter() - t0


def ours_ppi(bd, seed: int, trials: int) -> np.ndarray:
    """The kernel's PPI means of the systems (metric 0, proxy 0) for the first trials:
    (trials, budgets, S)."""
    cell = next(c for m, j, c in K._cells(bd, "judgments") if m == bd.linear[0] and j == 0)
    u = bd.units.index("judgments")
    keys = blocked_draws(seed, K.STREAM, (u,), 0, K.KEY_BLOCK,
                         lambda rng, m: rng.random((m, len(bd.u_topic))), block=K.KEY_BLOCK)
    rank = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1)
    out = []
    for n in bd.budgets[u]:
        est, _, _ = finite_ppi(K._moments(rank < n, cell), cell.pop_f, len(bd.u_topic), 1.0)
        out.append(cell.scale * est[:trials, : cell.S])
    return np.stack(out, axis=1), keys[:trials]


def naive(data: AssessorInput, bd, metric: str, keys: np.ndarray, proxy, files=None
          ) -> tuple[float, np.ndarray]:
    """Per trial and budget: evaluate the runs (the parsed ones, or `files` read again)
    against the sampled gold and proxy labels."""
    lin = [linear_form(parse_measure(metric), 1000)]
    pool, _ = _pool(data.runs, bd.topics, lin, len(lin[0].weights), len(bd.systems))
    gold = data.qrels["gold"]

    def grades(q: Qrels) -> np.ndarray:
        import pandas as pd
        qdf = pd.DataFrame({"topic": np.asarray(q.topic, dtype=object).astype(str),
                            "docno": np.asarray(q.docno, dtype=object).astype(str),
                            "grade": np.asarray(q.grade, np.int64)})
        return pool.merge(qdf, on=["topic", "docno"], how="left")["grade"].fillna(0).to_numpy(
            np.int64)

    g, p = grades(gold), grades(proxy)
    N = len(pool)
    u = bd.units.index("judgments")
    full = evaluate(data.runs, proxy, [metric], depth=1000, missing="zero").values[0]
    out = np.zeros((len(keys), bd.budgets.shape[1], len(bd.systems)))
    t0 = time.perf_counter()
    for t in range(len(keys)):
        order = np.argsort(keys[t], kind="stable")
        for b, n in enumerate(bd.budgets[u]):
            s = order[:n]
            qg = Qrels(pool["topic"].to_numpy()[s], pool["docno"].to_numpy()[s], g[s])
            qp = Qrels(pool["topic"].to_numpy()[s], pool["docno"].to_numpy()[s], p[s])
            T = len(bd.topics)
            if files is None:
                sg = evaluate(data.runs, qg, [metric], depth=1000, missing="zero").values[0]
                sp = evaluate(data.runs, qp, [metric], depth=1000, missing="zero").values[0]
            else:  # the public door, the run files parsed again (named by file)
                sg, sp = (irsim.evaluate(files, q, [metric], depth=1000, missing="zero")
                          .pivot_table(index="system", columns="topic", values="value")
                          .reindex(list(bd.systems)).to_numpy() for q in (qg, qp))
            # per-topic scores of the sampled labels (topics without one score 0)
            diff = (sg.sum(axis=1) - sp.sum(axis=1)) / T
            out[t, b] = full.mean(axis=1) + N / n * diff
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--runs", type=int, default=0, help="first N runs (0: all)")
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--naive-trials", type=int, default=3)
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.5, 0.75])
    ap.add_argument("--metric", default="P(rel=2)@10")
    args = ap.parse_args(argv)
    data, files = load(args)
    runs = data.runs
    proxy = votes_qrels(runs, 10, 4)
    data = AssessorInput(runs, {**data.qrels, "votes": proxy})
    cfg = Config(gold="gold", proxy=["votes"], metrics=[args.metric], units=["judgments"],
                 budgets=list(args.budgets), trials=args.trials)
    t0 = time.perf_counter()
    bd = prepare(cfg, data)
    t_prep = time.perf_counter() - t0
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"{len(bd.systems)} runs x {len(bd.topics)} topics, pool {len(bd.u_topic):,} "
          f"judgments, budgets {args.budgets}, metric {args.metric}")
    print(f"prepare (one parse, one evaluation per qrels, the pool): {t_prep:.2f} s")
    t_ours = ours(bd, args.trials, seed=1)
    mine, keys = ours_ppi(bd, 1, args.naive_trials)
    r_ours = args.trials / t_ours
    print(f"(1) kernel, every estimator/decision/tau: {args.trials} trials in {t_ours:.2f} s "
          f"= {r_ours:.1f} trials/s")
    for label, f in (("(2) irsim.evaluate per trial, run files read again", files),
                     ("(3) evaluate per trial, runs parsed once", None)):
        if label.startswith("(2)") and files is None:
            continue
        t_naive, theirs = naive(data, bd, args.metric, keys, proxy, f)
        gap = float(np.abs(mine - theirs).max())
        assert gap < 1e-9, f"PPI means differ between (1) and {label[:3]} by {gap:g}"
        r_naive = args.naive_trials / t_naive
        print(f"{label}, PPI means only: {args.naive_trials} trials in {t_naive:.2f} s = "
              f"{r_naive:.3f} trials/s (same PPI means: max gap {gap:.1e}); (1) is "
              f"{r_ours / r_naive:.0f}x{' (goal >= 50x)' if f is not None else ''}")


if __name__ == "__main__":
    main()
