"""Benchmark: irsim.metrics.evaluate against pytrec_eval on the same synthetic runs.

100 runs x 50 topics x 1000 documents (5 million lines), graded qrels, 10 measures.
Prints the wall time of irsim's ``evaluate`` and of pytrec_eval's ``evaluate`` (one call
per run, the evaluator built once), the ratio, and a check that both agree. Usage::

    python bench/bench_metrics.py [--runs 100] [--topics 50] [--docs 1000] [--seed 0]

The pytrec_eval time excludes building its nested input dicts (reported separately).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from irsim.data.types import Qrels, Runs
from irsim.metrics import evaluate

IRSIM = ["AP", "P@5", "P@10", "P@20", "Rprec", "RR", "nDCG", "nDCG@10", "nDCG@20", "Success@5"]
TREC = ["map", "P_5", "P_10", "P_20", "Rprec", "recip_rank", "ndcg", "ndcg_cut_10",
        "ndcg_cut_20", "success_5"]


def make_data(n_runs: int, n_topics: int, n_docs: int, seed: int) -> tuple[Runs, Qrels]:
    """Synthetic collection: each topic has a pool of 4*n_docs documents, ~10% judged
    relevant (grades 1-3) and ~30% judged non-relevant; each run retrieves n_docs of the
    pool with distinct scores spaced 1e-3 apart (no near ties for pytrec_eval)."""
    rng = np.random.default_rng(seed)
    pool = 4 * n_docs
    topics = np.array([f"{401 + t}" for t in range(n_topics)], dtype=object)
    names = np.array([f"DOC{i:07d}" for i in range(pool * n_topics)], dtype=object)
    # qrels: 40% of each pool judged
    judged = rng.random((n_topics, pool)) < 0.4
    grade = np.where(rng.random((n_topics, pool)) < 0.25, rng.integers(1, 4, (n_topics, pool)), 0)
    t_idx, d_idx = np.nonzero(judged)
    qrels = Qrels(topics[t_idx], names[t_idx * pool + d_idx], grade[t_idx, d_idx],
                  source="synthetic qrels")
    # runs: per (run, topic) a random subset of the pool, biased towards relevant docs
    keys = rng.random((n_runs, n_topics, pool)) - 0.3 * (grade[None] > 0)
    pick = np.argpartition(keys, n_docs, axis=2)[:, :, :n_docs]
    perm = rng.permuted(np.tile(np.arange(n_docs), (n_runs, n_topics, 1)), axis=2)
    score = 10.0 + perm * 1e-3
    r_idx = np.repeat(np.arange(n_runs, dtype=np.int32), n_topics * n_docs)
    t_rep = np.tile(np.repeat(np.arange(n_topics), n_docs), n_runs)
    docno = names[t_rep * pool + pick.reshape(-1)]
    runs = Runs(tuple(f"run{r:03d}" for r in range(n_runs)), r_idx, topics[t_rep], docno,
                score.reshape(-1))
    return runs, qrels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    runs, qrels = make_data(args.runs, args.topics, args.docs, args.seed)
    print(f"{args.runs} runs x {args.topics} topics x {args.docs} docs = {len(runs):,} lines; "
          f"{len(qrels):,} judgments; {len(IRSIM)} measures; "
          f"python {platform.python_version()}, {os.cpu_count()} cpus")

    t0 = time.perf_counter()
    m = evaluate(runs, qrels, IRSIM)
    t_irsim = time.perf_counter() - t0
    print(f"irsim evaluate:        {t_irsim:7.2f} s")
    t0 = time.perf_counter()
    evaluate(runs, qrels, IRSIM)
    t_again = time.perf_counter() - t0
    print(f"  again, same Runs:    {t_again:7.2f} s   (docno codes cached on the Runs, as "
          "after read_runs)")
    # the usual path: runs in TREC files, read with pyarrow (codes cached while reading)
    import tempfile
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.csv as pacsv

    from irsim.data.trec import read_runs

    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for r, name in enumerate(runs.names):
            sel = runs.run == r
            rank = np.ones(int(sel.sum()), dtype=np.int64)
            table = pa.table({"qid": runs.topic[sel], "q0": ["Q0"] * int(sel.sum()),
                              "docno": runs.docno[sel], "rank": rank,
                              "score": runs.score[sel], "tag": [name] * int(sel.sum())})
            path = Path(tmp) / f"{name}.run"
            pacsv.write_csv(table, path, pacsv.WriteOptions(include_header=False,
                                                            delimiter=" ", quoting_style="none"))
            paths.append(path)
        t0 = time.perf_counter()
        from_files = read_runs(paths)
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        evaluate(from_files, qrels, IRSIM)
        t_files = time.perf_counter() - t0
    print(f"from TREC files:       {t_read:7.2f} s read_runs + {t_files:.2f} s evaluate = "
          f"{t_read + t_files:.2f} s")

    import pytrec_eval

    t0 = time.perf_counter()
    qd: dict[str, dict[str, int]] = {}
    for t, d, g in zip(qrels.topic.tolist(), qrels.docno.tolist(), qrels.grade.tolist(),
                       strict=True):
        qd.setdefault(t, {})[d] = g
    run_dicts: list[dict[str, dict[str, float]]] = [{} for _ in runs.names]
    for r, t, d, s in zip(runs.run.tolist(), runs.topic.tolist(), runs.docno.tolist(),
                          runs.score.tolist(), strict=True):
        run_dicts[r].setdefault(t, {})[d] = s
    t_dicts = time.perf_counter() - t0
    t0 = time.perf_counter()
    ev = pytrec_eval.RelevanceEvaluator(qd, set(TREC))
    results = [ev.evaluate(rd) for rd in run_dicts]
    t_trec = time.perf_counter() - t0
    print(f"pytrec_eval evaluate:  {t_trec:7.2f} s   (+ {t_dicts:.2f} s building its dicts)")
    print(f"ratio pytrec_eval / irsim: {t_trec / t_irsim:.2f}x (first call); "
          f"{t_trec / t_files:.2f}x (runs read from files); "
          f"{(t_trec + t_dicts) / t_irsim:.2f}x counting pytrec_eval's input dicts")

    ref = np.array([[[results[s][t][name] for t in m.topics] for s in range(len(runs.names))]
                    for name in TREC])
    print(f"max |irsim - pytrec_eval| = {np.abs(ref - m.values).max():.2e}")


if __name__ == "__main__":
    main()
