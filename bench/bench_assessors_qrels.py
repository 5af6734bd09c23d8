"""Benchmark: experiment=assessors against the number of qrels (issue 46: "assessors time
grows with the square of the number of qrels"; a judging campaign compares dozens of LLM
prompts and models).

Workload (default): TREC DL 2019 passage, 8 runs (those of tests/test_assessors.py), the
NIST qrels as the reference and N label sets made from it deterministically (label set i
moves every seventh grade, starting at position i mod 7, up by 1 + i mod 3 on the 0-3
scale), the study's defaults otherwise (4 metrics, t and randomisation tests, B=1000,
test_B=10,000). For every N of ``--sizes`` the linear path (``label_pairs=reference``: each
label set with the reference) is timed; for every N of ``--quadratic`` the all-pairs path
(``label_pairs=all``: every two label sets as well) too, with the ratio of the two and a
check that the all-pairs path's rows with the reference equal the linear path's, bit for
bit. Usage::

    python bench/bench_assessors_qrels.py [--data DIR] [--sizes 10 25 50 200]
        [--quadratic 25 50] [--runs 8] [--B 1000] [--test-B 10000]

One run of each (no repeat: a run is seconds to minutes) after an untimed warm-up run (the
imports); the data are read once, outside the timings.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

import irsim
from irsim.data.trec import read_qrels
from irsim.data.types import Qrels
from irsim.kit.qrels_set import read_assessor_runs

RUNS = ("bm25base_p", "bm25tuned_rm3_p", "colbert_rankgpt4", "colbert_rankzephyr",
        "idst_bert_p1", "TUW19-p3-f", "ICT-BERT2", "colbert_monoelectra-base")


def label_sets(nist: Qrels, n: int) -> dict[str, Qrels]:
    """The reference and `n` label sets relabelled from it deterministically."""
    grade = np.asarray(nist.grade, np.int64)
    pos = np.arange(len(grade))
    out = {"nist": nist}
    for i in range(n):
        moved = (pos + i) % 7 == 0
        g = np.where(moved, (grade + 1 + i % 3) % 4, grade)
        out[f"llm{i:03d}"] = Qrels(nist.topic, nist.docno, g, source=f"llm{i:03d}")
    return out


def run(runs, qrels: dict[str, Qrels], pairs: str, args) -> tuple[float, object]:
    t0 = time.perf_counter()
    res = irsim.assessors(runs=runs, qrels=qrels, reference="nist", label_pairs=pairs,
                          B=args.B, test_B=args.test_B, metrics=args.metrics, seed=1,
                          progress=False)
    return time.perf_counter() - t0, res


def same_reference_rows(linear, every) -> bool:
    """The all-pairs path's label rows with the reference equal the linear path's."""
    a = linear.to_pandas("label_agreement")
    b = every.to_pandas("label_agreement")
    b = b[b["qrels_a"] == "nist"].reset_index(drop=True)
    return a.shape == b.shape and bool(((a == b) | (a.isna() & b.isna())).all().all())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(os.environ.get("IRSIM_TEST_DATA", Path(__file__).resolve().parents[2]
                                  / "shared" / "data")) / "dl19-assessors"
    ap.add_argument("--data", type=Path, default=default)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 25, 50, 200])
    ap.add_argument("--quadratic", type=int, nargs="*", default=[25, 50])
    ap.add_argument("--runs", type=int, default=len(RUNS))
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--test-B", type=int, default=10000)
    ap.add_argument("--metrics", nargs="+", default=["AP", "nDCG@10", "P@10", "RR"])
    args = ap.parse_args()

    runs = read_assessor_runs([str(args.data / "runs" / f"{r}.gz")
                               for r in RUNS[:args.runs]])
    nist = read_qrels(args.data / "qrels" / "nist.txt")
    print(f"TREC DL 2019 ({args.data}): {len(runs.names)} runs, the NIST qrels "
          f"({len(nist.grade):,} judgments) and N label sets relabelled from it; "
          f"{len(args.metrics)} metrics, B={args.B}, test_B={args.test_B}; python "
          f"{platform.python_version()}, {os.cpu_count()} cpus, engine=local")
    warm = argparse.Namespace(**{**vars(args), "B": 10, "test_B": 100})
    run(runs, label_sets(nist, 1), "reference", warm)  # imports and caches, not timed
    print(f"{'N':>5} {'path':>10} {'seconds':>9} {'s/qrels':>8} {'ratio':>6}")
    for n in args.sizes:
        qrels = label_sets(nist, n)
        t_lin, linear = run(runs, qrels, "reference", args)
        print(f"{n:>5} {'reference':>10} {t_lin:9.1f} {t_lin / n:8.2f}")
        if n in args.quadratic:
            t_all, every = run(runs, qrels, "all", args)
            same = "rows with the reference identical" if same_reference_rows(
                linear, every) else "ROWS WITH THE REFERENCE DIFFER"
            print(f"{n:>5} {'all':>10} {t_all:9.1f} {t_all / n:8.2f} {t_all / t_lin:5.1f}x"
                  f"  ({n * (n - 1) // 2} pairs of label sets more; {same})")


if __name__ == "__main__":
    main()
