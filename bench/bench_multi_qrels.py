"""Benchmark: runs under many qrels of the same topics, in one pass (irsim.evaluate_many)
against irsim.evaluate once per qrels and pytrec_eval looping over the qrels.

Workload (default): TREC DL 2019 passage, 61 runs cut at rank 100, the NIST qrels, the eight
secondary assessors and the 16 composite qrels of the SIGIR 2025 re-annotation study (one
assessor per group over NIST) = 25 qrels, 4 measures (AP, nDCG@10, P@10, RR). Without
the data (``--data`` or $IRSIM_TEST_DATA/dl19-assessors), or with ``--synthetic``, a
synthetic collection and ``--qrels`` re-graded copies of its qrels. Usage::

    python bench/bench_multi_qrels.py [--data DIR] [--repeat 3]
    python bench/bench_multi_qrels.py --synthetic [--runs 60] [--topics 50] [--docs 1000]
        [--qrels 17]

All three are timed in the same run (best of ``--repeat``); pytrec_eval's time counts
building one evaluator per qrels and evaluating every run, not building its input dicts
(reported apart). A check that all three agree is printed.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from irsim.data.trec import read_qrels, read_run
from irsim.data.types import Qrels, Runs
from irsim.metrics import composite_qrels, evaluate, evaluate_many

MEASURES = ["AP", "nDCG@10", "P@10", "RR"]
TREC = ["map", "ndcg_cut_10", "P_10", "recip_rank"]
GROUPS = (("ferdinand-schlatt", "froebe"), ("andrew-parry", "eugene-yang"),
          ("guglielmo-faggioli", "harry-scells"), ("saber-zerhoudi", "sean-macavaney"))


def _concat(parts: list[Runs]) -> Runs:
    offs = np.cumsum([0] + [len(p.names) for p in parts])[:-1]
    return Runs(tuple(n for p in parts for n in p.names),
                np.concatenate([p.run + o for p, o in zip(parts, offs, strict=True)]
                               ).astype(np.int32),
                np.concatenate([p.topic for p in parts]),
                np.concatenate([p.docno for p in parts]),
                np.concatenate([p.score for p in parts]), precision=parts[0].precision)


def dl19(data: Path) -> tuple[Runs, dict[str, Qrels]]:
    """The DL 2019 runs and 25 qrels: NIST, 8 assessors, 16 composites over NIST."""
    runs = _concat([read_run(p, name=Path(p.stem).stem)
                    for p in sorted((data / "runs").glob("*.gz"))])
    qrels = {"nist": read_qrels(data / "qrels" / "nist.txt")}
    for g in GROUPS:
        for a in g:
            qrels[a] = read_qrels(data / "qrels" / f"{a}.txt")
    for i in range(16):
        pick = [GROUPS[g][(i >> g) & 1] for g in range(4)]
        df = pd.concat([pd.DataFrame({"t": qrels[a].topic, "d": qrels[a].docno,
                                      "g": qrels[a].grade}) for a in pick])
        df = df.drop_duplicates(["t", "d"], keep="first")  # topic 168216: every group
        other = Qrels(df.t.to_numpy(object), df.d.to_numpy(object), df.g.to_numpy(np.int64),
                      source="+".join(pick))
        qrels["+".join(pick)] = composite_qrels(qrels["nist"], other)
    return runs, qrels


def synthetic(n_runs: int, n_topics: int, n_docs: int, n_qrels: int, seed: int
              ) -> tuple[Runs, dict[str, Qrels]]:
    """bench_metrics' synthetic collection and re-graded copies of its qrels (30% of the
    grades redrawn, as another assessor would)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_bench_metrics", Path(__file__).with_name("bench_metrics.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    runs, base = mod.make_data(n_runs, n_topics, n_docs, seed)
    rng = np.random.default_rng(seed + 1)
    qrels = {"reference": base}
    for k in range(1, n_qrels):
        g = np.where(rng.random(len(base)) < 0.3, rng.integers(0, 4, len(base)), base.grade)
        qrels[f"assessor{k}"] = Qrels(base.topic, base.docno, g, source=f"assessor{k}")
    return runs, qrels


def best(f, repeat: int) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(os.environ.get("IRSIM_TEST_DATA", Path(__file__).resolve().parents[2]
                                  / "shared" / "data")) / "dl19-assessors"
    ap.add_argument("--data", type=Path, default=default)
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--qrels", type=int, default=17)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    if args.synthetic or not (args.data / "qrels" / "nist.txt").is_file():
        runs, qrels = synthetic(args.runs, args.topics, args.docs, args.qrels, args.seed)
        what = "synthetic"
    else:
        runs, qrels = dl19(args.data)
        what = f"TREC DL 2019 ({args.data})"
    print(f"{what}: {len(runs.names)} runs, {len(runs):,} lines; {len(qrels)} qrels; "
          f"{len(MEASURES)} measures; python {platform.python_version()}, "
          f"{os.cpu_count()} cpus; best of {args.repeat}")

    missing = "drop"  # the assessors' own qrels cover only their groups' topics
    runs.docno_codes()  # cached on the Runs (as after read_runs) for every contender
    t_many, many = best(lambda: evaluate_many(runs, qrels, MEASURES, missing=missing),
                        args.repeat)
    t_each, each = best(lambda: {n: evaluate(runs, q, MEASURES, missing=missing)
                                 for n, q in qrels.items()}, args.repeat)
    print(f"irsim evaluate_many (one pass):   {t_many:7.3f} s")
    print(f"irsim evaluate per qrels:         {t_each:7.3f} s")

    import pytrec_eval

    t0 = time.perf_counter()
    score = np.asarray(runs.score, np.float32).astype(np.float64).tolist()
    run_dicts: list[dict[str, dict[str, float]]] = [{} for _ in runs.names]
    for r, t, d, s in zip(runs.run.tolist(), runs.topic.tolist(), runs.docno.tolist(), score,
                          strict=True):
        run_dicts[r].setdefault(t, {})[d] = s
    qrel_dicts = {}
    for n, q in qrels.items():
        qd: dict[str, dict[str, int]] = {}
        for t, d, g in zip(q.topic.tolist(), q.docno.tolist(), q.grade.tolist(), strict=True):
            qd.setdefault(t, {})[d] = g
        qrel_dicts[n] = qd
    t_dicts = time.perf_counter() - t0

    def trec_loop():
        out = {}
        for n, qd in qrel_dicts.items():
            ev = pytrec_eval.RelevanceEvaluator(qd, set(TREC))
            out[n] = [ev.evaluate(rd) for rd in run_dicts]
        return out

    t_trec, trec = best(trec_loop, args.repeat)
    print(f"pytrec_eval looping over qrels:   {t_trec:7.3f} s   (+ {t_dicts:.2f} s building "
          "its dicts)")
    print(f"ratio evaluate per qrels / evaluate_many: {t_each / t_many:.2f}x")
    print(f"ratio pytrec_eval loop / evaluate_many:   {t_trec / t_many:.2f}x")

    diff_each = max(np.abs(many[n].values - each[n].values).max() for n in qrels)
    diff_trec = 0.0
    for n in qrels:
        m = many[n]
        for s in range(len(runs.names)):
            res = trec[n][s]
            ref = np.array([[res[t][name] if t in res else 0.0 for t in m.topics]
                            for name in TREC])
            diff_trec = max(diff_trec, float(np.abs(ref - m.values[:, s]).max()))
    print(f"max |evaluate_many - evaluate| = {diff_each:.2e}; "
          f"max |evaluate_many - pytrec_eval| = {diff_trec:.2e}")


if __name__ == "__main__":
    main()
