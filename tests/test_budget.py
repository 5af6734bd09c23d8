"""The budget study (judging on a budget) and its statistics: PPI against ppi-python, the
finite-population and stratified variances against the formulas written out here, the
Neyman allocation, the coverage of the interval under a known truth, the linear forms of
P@k, DCG@k and RBP against scores computed here from the run files, and the study on the
DL 2019 data from both doors, on Ray and for any shard size."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import dl19_files
from scipy import stats as sps

import irsim
from irsim.errors import ConfigError, InputError
from irsim.stats.ppi import (
    Moments,
    finite_ppi,
    neyman_allocation,
    ppi_mean,
    stratified,
    tuned_lambda,
)

RUNS = ("bm25base_p", "bm25tuned_rm3_p", "colbert_rankgpt4", "bm25base_ax_p",
        "colbert_monoelectra-large", "p_bert", "runid3", "TUW19-p1-f")


# --------------------------------------------------------------------------- statistics
def _sample(seed: int, n: int = 150, N: int = 900, d: int = 1):
    rng = np.random.default_rng(seed)
    f_all = rng.uniform(size=(N, d))
    y_all = np.clip(f_all * 0.8 + 0.1 + rng.normal(0, 0.15, (N, d)), 0, 1)
    idx = rng.choice(N, n, replace=False)
    return y_all, f_all, idx


@pytest.mark.parametrize("lam", [1.0, None, 0.3, 0.0])
@pytest.mark.parametrize("d", [1, 3])
def test_ppi_mean_equals_ppi_python(lam, d):
    """The PPI (lam 1), PPI++ (tuned) and fixed-weight intervals equal ppi-python's
    ``ppi_mean_ci`` on the same sample (labelled n, a separate unlabelled set)."""
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(d)
    y = rng.uniform(size=(120, d))
    yhat = np.clip(y + rng.normal(0, 0.2, y.shape), 0, 1)
    fu = rng.uniform(size=(2000, d))
    ours = ppi_mean(y[:, 0] if d == 1 else y, yhat[:, 0] if d == 1 else yhat,
                    fu[:, 0] if d == 1 else fu, lam=lam, confidence_level=0.9)
    lo, hi = ppi_py.ppi_mean_ci(y[:, 0] if d == 1 else y, yhat[:, 0] if d == 1 else yhat,
                                fu[:, 0] if d == 1 else fu, alpha=0.1, lam=lam)
    point = ppi_py.ppi_mean_pointestimate(y[:, 0] if d == 1 else y,
                                          yhat[:, 0] if d == 1 else yhat,
                                          fu[:, 0] if d == 1 else fu, lam=lam)
    np.testing.assert_allclose(ours.confidence_interval.low, lo, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.confidence_interval.high, hi, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.ravel(ours.estimate), np.ravel(point), rtol=0, atol=1e-10)


def test_finite_ppi_equals_the_formula():
    """Estimate ``lam mean_N(f) + mean_n(y - lam f)`` and variance
    ``(1 - n/N) s^2(y - lam f) / n``, written out directly, for fixed and tuned lam."""
    y_all, f_all, idx = _sample(1)
    y, f = y_all[idx, 0], f_all[idx, 0]
    N, n = len(f_all), len(idx)
    for lam in (1.0, 0.4, None):
        est, var, lam_used = finite_ppi(Moments.of(y, f), f_all[:, 0].mean(), N, lam)
        if lam is None:
            c = np.cov(y, f, ddof=1)
            want_lam = min(max(c[0, 1] / c[1, 1], 0.0), 1.0)
            assert float(lam_used) == pytest.approx(want_lam, abs=1e-12)
        else:
            want_lam = lam
        r = y - want_lam * f
        assert float(est) == pytest.approx(want_lam * f_all[:, 0].mean() + r.mean(),
                                           abs=1e-12)
        assert float(var) == pytest.approx((1 - n / N) * r.var(ddof=1) / n, rel=1e-10)


def test_stratified_equals_the_formula():
    """Stratified PPI: ``sum_h W_h (lam_h F_h + mean(y_h - lam_h f_h))`` and
    ``sum_h W_h^2 (1 - n_h/N_h) s_h^2 / n_h`` with each stratum's tuned lam."""
    rng = np.random.default_rng(5)
    sizes = np.array([300, 120, 80])
    pops = [(np.clip(rng.uniform(size=s) * (h + 1) / 3 + rng.normal(0, 0.1, s), 0, 1),
             rng.uniform(size=s)) for h, s in enumerate(sizes)]
    pops = [(0.6 * f + 0.4 * y, f) for y, f in pops]
    ns = np.array([30, 15, 10])
    moments, pop_f = [], []
    want_est = want_var = 0.0
    W = sizes / sizes.sum()
    for h, ((y, f), n) in enumerate(zip(pops, ns, strict=True)):
        idx = rng.choice(sizes[h], n, replace=False)
        moments.append(Moments.of(y[idx], f[idx]))
        pop_f.append(f.mean())
        c = np.cov(y[idx], f[idx], ddof=1)
        lam = min(max(c[0, 1] / c[1, 1], 0.0), 1.0)
        r = y[idx] - lam * f[idx]
        want_est += W[h] * (lam * f.mean() + r.mean())
        want_var += W[h] ** 2 * (1 - n / sizes[h]) * r.var(ddof=1) / n
    est, var = stratified(moments, np.array(pop_f), sizes)
    assert float(est) == pytest.approx(want_est, abs=1e-12)
    assert float(var) == pytest.approx(want_var, rel=1e-10)


def test_neyman_allocation():
    """Proportional to N_h S_h when no bound binds (largest remainders), bounds fixed and
    the rest reallocated, every row summing to n."""
    sizes = np.array([400, 300, 200, 100])
    sd = np.array([0.1, 0.3, 0.2, 0.4])
    got = neyman_allocation(100, sizes, sd, minimum=2)[0]
    share = 100 * sizes * sd / (sizes * sd).sum()
    assert got.sum() == 100 and np.all(np.abs(got - share) < 1)
    # a stratum whose share exceeds its size is taken whole; the rest proportional
    got = neyman_allocation(500, sizes, np.array([0.01, 0.01, 0.01, 5.0]), minimum=2)[0]
    assert got[3] == 100 and got.sum() == 500
    rest = 400 * sizes[:3] / sizes[:3].sum()
    assert np.all(np.abs(got[:3] - rest) < 1)
    # minimum binds for a zero-sd stratum; rows are independent budgets
    got = neyman_allocation(np.array([20, 40]), sizes, np.array([0.0, 1.0, 1.0, 1.0]),
                            minimum=3)
    assert got[:, 0].tolist() == [3, 3] and got.sum(axis=1).tolist() == [20, 40]


@pytest.mark.parametrize("lam", [1.0, None])
def test_finite_ppi_interval_covers_a_known_mean(lam):
    """Coverage of the finite-population PPI (and PPI++) t interval of a known population
    mean, over 4000 samples without replacement (n = 60 of N = 400): within 3 Monte Carlo
    standard errors of 0.95."""
    rng = np.random.default_rng(11)
    N, n, trials = 400, 60, 4000
    f = rng.uniform(size=N)
    y = np.clip(0.7 * f + 0.2 + rng.normal(0, 0.12, N), 0, 1)
    keys = rng.random((trials, N))
    idx = np.argsort(keys, axis=1)[:, :n]
    m = Moments.of(y[idx], f[idx], axis=1)
    est, var, _ = finite_ppi(m, f.mean(), N, lam)
    half = sps.t.ppf(0.975, n - 1) * np.sqrt(var)
    cover = np.mean(np.abs(est - y.mean()) <= half)
    band = 3 * math.sqrt(0.95 * 0.05 / trials)
    assert abs(cover - 0.95) < band + 0.005, cover
    # and the PPI++ weight is the clipped regression slope of each sample
    if lam is None:
        c = np.cov(y[idx[0]], f[idx[0]], ddof=1)
        assert float(tuned_lambda(Moments.of(y[idx[0]], f[idx[0]]))) == pytest.approx(
            min(max(c[0, 1] / c[1, 1], 0), 1), abs=1e-12)


# --------------------------------------------------------------------------- linear forms
def _read_run(path: str) -> pd.DataFrame:
    with gzip.open(path, "rt") as fh:
        df = pd.read_csv(fh, sep=r"\s+", header=None,
                         names=["topic", "q0", "docno", "rank", "score", "tag"],
                         dtype={"topic": str, "docno": str})
    # trec_eval's order: score descending, then docno descending
    df = df.sort_values(["topic", "score", "docno"], ascending=[True, False, False])
    df["pos"] = df.groupby("topic").cumcount() + 1
    return df


def _direct(run: pd.DataFrame, qrels: pd.DataFrame, metric: str) -> pd.Series:
    """P(rel=2)@10, DCG@10 (trec_eval gains, log2(rank+1) discount) and RBP(p=0.8) from
    the run's own ranking, written out here."""
    df = run.merge(qrels, on=["topic", "docno"], how="left").fillna({"grade": 0})
    g = df["grade"].clip(lower=0)
    if metric == "P(rel=2)@10":
        v = np.where(df["pos"] <= 10, (g >= 2) / 10, 0.0)
    elif metric == "DCG@10":
        v = np.where(df["pos"] <= 10, g / np.log2(df["pos"] + 1), 0.0)
    else:  # RBP(p=0.8): binary at grade >= 1
        v = 0.2 * 0.8 ** (df["pos"] - 1) * (g >= 1)
    return pd.Series(v, index=df.index).groupby(df["topic"]).sum()


def test_linear_forms_equal_the_metrics_per_topic():
    """The judgments unit's pool coefficients times the labels give every system's
    per-topic score: P(rel=2)@10, DCG@10 and RBP(p=0.8) from the run files directly, and
    the gold scores irsim.evaluate gives."""
    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors import read_assessor_runs
    from irsim.experiments.budget import Config, prepare
    from irsim.kit.qrels_set import AssessorInput

    runs, qrels = dl19_files(RUNS[:4], ("nist",))
    data = AssessorInput(read_assessor_runs(runs), {"nist": read_qrels(qrels["nist"])})
    metrics = ["P(rel=2)@10", "DCG@10", "RBP(p=0.8)"]
    bd = prepare(Config(gold="nist", votes=True, metrics=metrics, budgets=[0.5]), data)
    T = len(bd.topics)
    qr = pd.read_csv(qrels["nist"], sep=r"\s+", header=None,
                     names=["topic", "it", "docno", "grade"], dtype={"topic": str,
                                                                     "docno": str})
    for li, m in enumerate(bd.linear):
        per_topic = np.zeros((T, len(bd.systems)))
        np.add.at(per_topic, bd.u_topic, bd.coef[li] * bd.gold_values[li][:, None] * T)
        np.testing.assert_allclose(per_topic, bd.gold_scores[m], rtol=0, atol=1e-12)
        for s, path in enumerate(runs):
            want = _direct(_read_run(path), qr, metrics[m]).reindex(bd.topics).fillna(0)
            np.testing.assert_allclose(per_topic[:, s], want.to_numpy(), rtol=0, atol=1e-12,
                                       err_msg=f"{metrics[m]} {path}")


# --------------------------------------------------------------------------- the study
def _study(tmp_path: Path | None = None, **kw):
    runs, qrels = dl19_files(RUNS, ("nist",))
    params = {"votes": True, "metrics": ["P(rel=2)@10", "DCG@10", "nDCG@10"],
              "budgets": [0.2, 0.5], "trials": 60, "seed": 3, "progress": False, **kw}
    return irsim.budget(runs=runs, qrels=qrels, **params)


def _same(a, b) -> None:
    """Bit-identical tables (NaN equal to NaN)."""
    pd.testing.assert_frame_equal(a.to_pandas(), b.to_pandas(), check_exact=True)


@pytest.fixture(scope="module")
def small():
    return _study()


def test_full_budget_is_full_gold_judging():
    """At budget 1 every unit is judged: the gold, PPI and PPI++ estimates are the full-gold
    means (coverage 1, error 0), the decisions are the full-gold ones (agreement 1) and the
    rankings tau-b 1, for whole topics and for judgments."""
    res = _study(budgets=[1.0], trials=50)
    iv = res.tables["budget_intervals"].to_pandas()
    full = iv[iv["estimator"].isin(["gold", "ppi", "ppi_pp"])]
    assert (full["coverage"] == 1.0).all()
    assert (full["rmse"] < 1e-9).all()
    dec = res.tables["budget_decisions"].to_pandas()
    d = dec[dec["estimator"].isin(["gold", "ppi", "ppi_pp"])]
    assert (d["agreement"] == 1.0).all() and (d["lost"] == 0).all()
    assert (d["significant"] == d["reference"]).all()
    rk = res.tables["budget_ranking"].to_pandas()
    assert (rk[rk["estimator"] == "gold"]["tau_b"] == 1.0).all()


def test_reference_decisions_are_the_paired_t_test(small):
    """The full-gold decisions (`reference`) are scipy's paired t test on every pair with
    Holm over the pairs (statsmodels' multipletests as the oracle)."""
    from statsmodels.stats.multitest import multipletests

    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors import read_assessor_runs

    runs, qrels = dl19_files(RUNS, ("nist",))
    per = irsim.evaluate(read_assessor_runs(runs), read_qrels(qrels["nist"]),
                         ["P(rel=2)@10"], depth=1000)
    mat = per.pivot_table(index="topic", columns="system", values="value")
    dec = small.tables["budget_decisions"].to_pandas()
    row = dec[(dec["metric"] == "P(rel=2)@10") & (dec["correction"] == "holm")].iloc[0]
    x = mat.to_numpy()
    ia, ib = np.triu_indices(x.shape[1], 1)
    p = sps.ttest_rel(x[:, ia], x[:, ib], axis=0).pvalue
    p = np.where(np.isnan(p), 1.0, p)
    assert int(row["reference"]) == int(multipletests(p, 0.05, "holm")[0].sum())


def test_estimators_on_dl19(small):
    """On DL 2019 with the votes judge: the proxy alone is biased for the means (coverage far
    below nominal); PPI, PPI++ and gold-only are unbiased (coverage within 3 Monte Carlo
    standard errors + .02 of nominal for the judgments unit) and PPI is narrower than gold
    alone; the planning table names at most one recommendation per proxy and metric."""
    iv = small.tables["budget_intervals"].to_pandas()
    proxy = iv[(iv["estimator"] == "proxy") & (iv["target"] == "mean")]
    assert (proxy["coverage"] < 0.5).any()
    j = iv[(iv["unit"] == "judgments") & (iv["target"] == "mean")]
    for est in ("gold", "ppi", "ppi_pp"):
        cov = j[j["estimator"] == est]["coverage"]
        assert (abs(cov - 0.95) < 3 * math.sqrt(0.95 * 0.05 / 60) + 0.02).all(), (est, cov)
    w = j.set_index(["metric", "budget", "estimator"])["width"]
    for metric in ("P(rel=2)@10", "DCG@10"):
        for b in (0.2, 0.5):
            assert w[(metric, b, "ppi")] < w[(metric, b, "gold")]
    plan = small.tables["budget_planning"].to_pandas()
    assert plan.groupby(["proxy", "metric"])["recommended"].sum().max() <= 1
    assert set(iv["unit"]) == {"topics", "judgments"}
    assert "nDCG@10" not in set(iv[iv["unit"] == "judgments"]["metric"])


def test_shard_size_gives_the_same_tables(small):
    """Blocks of trials are aligned: 20 trials per shard give the same tables bit for bit."""
    other = _study(shard_replicates=20)
    for name, t in small.tables.items():
        _same(other.tables[name], t)


@pytest.mark.ray
def test_ray_gives_the_same_tables(small, ray_local):
    """The Ray engine gives the local engine's tables bit for bit."""
    ray = _study(engine="ray", workers=2)
    for name, t in small.tables.items():
        _same(ray.tables[name], t)


def test_cli_gives_the_python_tables(small, tmp_path):
    """The CLI door (collection=trec) writes the tables the Python door returns."""
    import pyarrow.parquet as pq

    from irsim.cli import main

    runs, qrels = dl19_files(RUNS, ("nist",))
    code = main(["experiment=budget", "collection=trec", f"collection.runs=[{','.join(runs)}]",
                 f"+collection.qrels.nist={qrels['nist']}", "experiment.votes=true",
                 "experiment.metrics=['P(rel=2)@10',DCG@10,nDCG@10]",
                 "experiment.budgets=[0.2,0.5]", "experiment.trials=60", "seed=3",
                 "quiet=true", f"hydra.run.dir={tmp_path}"])
    assert code in (0, None)
    for name, t in small.tables.items():
        _same(pq.read_table(tmp_path / "results" / f"{name}.parquet").select(t.column_names),
              t)


def test_a_model_qrels_is_a_proxy(tmp_path):
    """Any qrels is a first-class proxy: a model's labels (here NIST's grades with every
    third label of each topic lowered by one) passed as a file and named as the proxy."""
    runs, qrels = dl19_files(RUNS, ("nist",))
    q = pd.read_csv(qrels["nist"], sep=r"\s+", header=None, dtype=str,
                    names=["topic", "it", "docno", "grade"])
    g = q["grade"].astype(int)
    q["grade"] = np.where(np.arange(len(q)) % 3 == 0, np.maximum(g - 1, 0), g)
    path = tmp_path / "llm.txt"
    q.to_csv(path, sep=" ", header=False, index=False)
    res = irsim.budget(runs=runs, qrels={"nist": qrels["nist"], "llm": str(path)},
                       proxy=["llm"], metrics=["P(rel=2)@10"], budgets=[0.3], trials=20,
                       progress=False)
    iv = res.tables["budget_intervals"].to_pandas()
    assert set(iv["proxy"]) == {"llm"}
    # the proxy's bias is the mean score lost by lowering grades: negative for P(rel=2)
    p = iv[(iv["estimator"] == "proxy") & (iv["target"] == "mean")]
    assert (p["bias"] < 0).all()


# --------------------------------------------------------------------------- bad input
def test_bad_inputs(tmp_path):
    runs, qrels = dl19_files(RUNS[:3], ("nist",))
    q = pd.read_csv(qrels["nist"], sep=r"\s+", header=None, dtype=str,
                    names=["topic", "it", "docno", "grade"])
    few = tmp_path / "few.txt"
    q[q["topic"] != q["topic"].iloc[0]].to_csv(few, sep=" ", header=False, index=False)
    with pytest.raises((InputError, ConfigError), match=r"few\.txt.*topic"):
        irsim.budget(runs=runs, qrels={"nist": qrels["nist"], "few": str(few)},
                     proxy=["few"], trials=2, progress=False)
    high = tmp_path / "high.txt"
    q.assign(grade=np.where(np.arange(len(q)) == 5, "7", q["grade"])).to_csv(
        high, sep=" ", header=False, index=False)
    with pytest.raises((InputError, ConfigError), match=r"high\.txt.*grade 7"):
        irsim.budget(runs=runs, qrels={"nist": qrels["nist"], "high": str(high)},
                     proxy=["high"], trials=2, progress=False)
    with pytest.raises(ConfigError, match=r"budgets.*(pool|topics)"):
        irsim.budget(runs=runs, qrels=qrels, votes=True, budgets=[100000], trials=2,
                     progress=False)
    with pytest.raises(ConfigError, match=r"proxy"):
        irsim.budget(runs=runs, qrels=qrels, trials=2, progress=False)


def test_no_test_module_imports_the_tests_package():
    """ppi-python's wheel installs a top-level ``tests`` package that shadows this
    directory (it has no ``__init__.py``): test modules import ``conftest`` and each other by
    module name, never through ``tests.``."""
    import re

    here = Path(__file__).resolve().parent
    bad = [p.name for p in here.rglob("*.py")
           if re.search(r"^\s*(from tests[. ]|import tests\b)", p.read_text(), re.M)]
    assert not bad, bad
