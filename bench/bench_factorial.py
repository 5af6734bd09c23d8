"""Benchmark (issue 45): the parts of ``experiment=factorial`` the issue sets speed goals for.

1. Shard evaluation: every run on k document shards in one evaluation over the parsed runs
   (:func:`irsim.metrics.shards.shard_scores`) against the baseline a user writes first, k
   evaluations of the runs restricted to each shard's documents (the same numbers: checked).
   Workload: the 61 TREC DL 2019 runs of ``../shared/data/dl19-assessors`` (uncut, NIST
   qrels), AP and nDCG@10, k = 5.
2. The mixed model on 129 systems x 50 topics x 5 replicates (TREC-8's AP matrix of
   ``../shared/data/urbano/adhoc8_ap.csv`` with replicates drawn around it): REML variance
   components of the crossed design (:func:`irsim.stats.varcomp.variance_components`; goal:
   under a minute on 2 cores); with ``--mixedlm`` also statsmodels' ``MixedLM`` on the
   replicated design of the first 20 systems (two variance components: on all 129 it runs
   for over ten minutes), against irsim on the same array.
3. The beta regression of the same array (:func:`irsim.stats.betareg.beta_regression`).

Each timing is the best of ``--repeats``; ratios are measured in this run. Usage::

    python bench/bench_factorial.py [--data ../shared/data] [--repeats 3] [--mixedlm]

Ratios and times only; no absolute target is tested.
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import time
from pathlib import Path

import numpy as np


def best(fn, repeats: int):
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, min(times)


def shards_part(data: Path, repeats: int) -> None:
    from irsim.data.convert import as_doc_collection
    from irsim.data.types import Qrels, Runs
    from irsim.metrics import evaluate
    from irsim.metrics.shards import shard_scores
    from irsim.sampling.corpus import md5_shards

    runs = sorted(glob.glob(str(data / "dl19-assessors" / "runs" / "*.gz")))
    docs = as_doc_collection(runs, str(data / "dl19-assessors" / "qrels" / "nist.txt"))
    r, q, k, measures = docs.runs, docs.qrels, 5, ["AP", "nDCG@10"]
    # no cut (depth=None): a cut at depth applies to the whole list before the split in
    # shard_scores, to each shard in the baseline
    one, t_one = best(lambda: shard_scores(r, q, measures, k, depth=None), repeats)

    def per_shard():
        rs, qs = md5_shards(r.docno, k), md5_shards(q.docno, k)
        out = []
        for j in range(k):
            keep, qk = rs == j, qs == j
            sub = Runs(r.names, r.run[keep], r.topic[keep], r.docno[keep], r.score[keep],
                       sources=r.sources)
            m = evaluate(sub, Qrels(q.topic[qk], q.docno[qk], q.grade[qk]), measures,
                         depth=None, missing="drop")
            out.append(m)
        return out

    base, t_base = best(per_shard, repeats)
    # the same numbers on the topics both keep (a shard without a relevant document keeps
    # its topic with 0 in shard_scores)
    for j, m in enumerate(base):
        idx = [one.topics.index(t) for t in m.topics]
        assert np.allclose(one.values[..., idx, j], m.values, atol=0), j
    print(f"shard evaluation, {len(r.names)} runs x {len(one.topics)} topics x {k} shards, "
          f"2 measures: one pass {t_one:.2f} s, {k} evaluations {t_base:.2f} s: "
          f"{t_base / t_one:.2f}x")


def matrix(data: Path) -> np.ndarray:
    import pandas as pd

    m = pd.read_csv(data / "urbano" / "adhoc8_ap.csv").to_numpy(float)
    x = m.T if m.shape[0] < m.shape[1] else m  # systems x topics
    x = x.T if x.shape[0] == 50 else x
    rng = np.random.default_rng(0)
    return np.clip(x[:, :50, None] + rng.normal(scale=0.05, size=(x.shape[0], 50, 5)), 0, 1)


def models_part(data: Path, repeats: int, mixedlm: bool) -> None:
    from irsim.stats.betareg import beta_regression
    from irsim.stats.varcomp import variance_components

    x = matrix(data)
    v, t_reml = best(lambda: variance_components(x, "crossed"), repeats)
    print(f"REML, crossed design, {x.shape}: {t_reml:.3f} s (goal: under 60 s; boundary fit: "
          f"{bool(v.boundary)})")
    vr, t_rep = best(lambda: variance_components(x, "replicated"), repeats)
    _, t_beta = best(lambda: beta_regression(x).pairs(), repeats)
    print(f"beta regression + all {x.shape[0] * (x.shape[0] - 1) // 2} pairs, {x.shape}: "
          f"{t_beta:.3f} s")
    if mixedlm:
        import warnings

        import pandas as pd
        import statsmodels.formula.api as smf

        x = x[:20]
        vr, t_rep = best(lambda: variance_components(x, "replicated"), repeats)
        idx = np.indices(x.shape).reshape(3, -1)
        d = pd.DataFrame({"s": idx[0], "t": idx[1], "y": x.ravel(), "g": 1})
        d["st"] = d.s * 100 + d.t
        model = smf.mixedlm("y ~ C(s)", d, groups="g", re_formula="0",
                            vc_formula={"t": "0 + C(t)", "st": "0 + C(st)"})
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = model.fit(reml=True)
        t_sm = time.perf_counter() - t0
        print(f"statsmodels MixedLM, replicated design {x.shape}: {t_sm:.1f} s; irsim "
              f"{t_rep:.4f} s: "
              f"{t_sm / t_rep:.0f}x (residual {fit.scale:.6g} vs {vr.var[-1]:.6g})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.environ.get("IRSIM_TEST_DATA") or str(
        Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mixedlm", action="store_true")
    a = ap.parse_args()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    shards_part(Path(a.data), a.repeats)
    models_part(Path(a.data), a.repeats, a.mixedlm)


if __name__ == "__main__":
    main()
