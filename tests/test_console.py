"""The answer a run prints on the console (``irsim.report.headline_text``, the same text as
``Result.headline()``), checked number by number against independent computations: compare's
difference, interval, effect size and corrected p-values against numpy, scipy and
statsmodels; test_errors' Type I error and power against the rejection counts of its table;
assessors' kappas against scikit-learn on the qrels files and its tau-b summary against scipy
on the system means; discpower's corrected sensitivity against statsmodels on the ASLs. Also
the defaults that must be able to reject (assessors' test_B)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, dl19_files
from scipy import stats
from statsmodels.stats.multitest import multipletests

import irsim
from irsim.report import fmt
from irsim.runner import compose_config, run

AP = SHARED_DATA / "urbano" / "adhoc8_ap.csv"


def _table(text: str, title: str) -> list[list[str]]:
    """The rows (split on whitespace) of the block of `text` whose first line is `title`,
    its column titles first; the optional line of constants below the title is skipped."""
    block = text.split(title + "\n", 1)[1].split("\n\n", 1)[0]
    return [ln.split() for ln in block.splitlines() if "=" not in ln.split()[0]]


# ------------------------------------------------------------------------------ compare
def test_compare_prints_difference_interval_effect_size_and_corrected_p():
    scores = pd.read_csv(AP)
    systems = ["run2", "run3", "run9", "run12"]
    res = irsim.compare(scores, metric="AP", systems=systems, B=500, seed=4,
                        tests=["t", "wilcoxon", "randomisation"])
    lines = res.headline().splitlines()
    assert lines[0] == "comparison: p_adjusted by test (correction=holm, metric=AP)"
    assert lines[1].split() == ["system_a", "system_b", "diff", "ci_lo", "ci_hi",
                                "effect_size", "t", "wilcoxon", "randomisation"]
    pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]]
    d = np.stack([scores[a].to_numpy() - scores[b].to_numpy() for a, b in pairs])
    n = d.shape[1]
    half = stats.t.ppf(0.975, n - 1) * d.std(axis=1, ddof=1) / np.sqrt(n)
    p_t = multipletests([stats.ttest_rel(scores[a], scores[b]).pvalue for a, b in pairs],
                        method="holm")[1]
    table = res.to_pandas("comparison")  # its raw p-values: tests/test_compare.py checks them
    p_w = multipletests(table[table.test == "wilcoxon"].p_value, method="holm")[1]
    p_r = table[table.test == "randomisation"].p_adjusted.to_numpy()
    for i, ((a, b), row) in enumerate(zip(pairs, lines[2:], strict=True)):
        cells = row.split()
        assert cells[:2] == [a, b]
        want = [d[i].mean(), d[i].mean() - half[i], d[i].mean() + half[i],
                d[i].mean() / d[i].std(ddof=1), p_t[i], p_w[i]]
        assert cells[2:8] == [fmt(v) for v in want], (a, b)
        # randomisation, count/B: a p-value of 0 (no sign vector as extreme) reads <1/B
        assert cells[8] == ("<0.002" if p_r[i] == 0 else fmt(p_r[i])), (a, b)
    assert (p_r == 0).any()  # the case is shown


def _far_apart() -> pd.DataFrame:
    """Two runs whose per-topic differences are all positive: no sign vector of a
    randomisation test with B = 200 reaches the observed mean (2^30 of them, one does)."""
    rng = np.random.default_rng(11)
    base = rng.uniform(0.1, 0.5, 30)
    return pd.DataFrame({"base": base, "better": base + rng.uniform(0.05, 0.2, 30)})


def test_a_monte_carlo_p_value_of_zero_prints_as_less_than_one_over_B():
    res = irsim.compare(_far_apart(), metric="AP", B=200, seed=1, tests=["randomisation"])
    row = res.to_pandas("comparison").iloc[0]
    assert row.p_value == 0.0 and row.B == 200 and row.pvalue == "count"
    d = data_diff = (_far_apart().base - _far_apart().better).to_numpy()
    assert res.headline().splitlines() == [
        "comparison: p_adjusted (correction=holm, metric=AP, system_a=base, system_b=better, "
        "test=randomisation)",
        f"diff={fmt(d.mean())}  ci_lo={fmt(row.ci_lo)}  ci_hi={fmt(row.ci_hi)}  "
        f"effect_size={fmt(d.mean() / d.std(ddof=1))}",
        "p_adjusted", "<0.005"]  # 1/200
    assert row["diff"] == pytest.approx(data_diff.mean(), rel=1e-12)


def test_compare_accepts_plus_one_in_both_doors(tmp_path):
    data = _far_apart()
    py = irsim.compare(data, metric="AP", B=200, seed=1, tests=["randomisation"],
                       pvalue="plus_one")
    row = py.to_pandas("comparison").iloc[0]
    assert row.p_value == 1 / 201 and row.pvalue == "plus_one"
    assert py.headline().splitlines()[-1] == fmt(1 / 201)
    path = tmp_path / "scores.csv"
    data.to_csv(path, index=False)
    cfg = compose_config(["experiment=compare", "collection=matrix",
                          f"collection.path={path}", "collection.metric=AP",
                          "experiment.B=200", "seed=1", "experiment.tests=[randomisation]",
                          "experiment.pvalue=plus_one", "quiet=true"])
    assert run(cfg, tmp_path / "run")["comparison"].equals(py.tables["comparison"])


# ---------------------------------------------------------------------------- discpower
def test_discpower_with_a_correction_prints_both_sensitivities():
    scores = pd.read_csv(AP).iloc[:, :10]
    res = irsim.discpower(scores, metric="AP", B=200, seed=2, tests=["t", "randomisation"],
                          correction="holm", alpha=[0.01, 0.05])
    text = res.headline()
    rows = _table(text, "discpower: sensitivity (correction=holm, metric=AP)")
    assert rows[0] == ["test", "alpha", "sensitivity", "sensitivity_adjusted"]
    asl = res.to_pandas("asl")
    shown = {(r[0], float(r[1])): (float(r[2]), float(r[3])) for r in rows[1:]}
    assert len(shown) == 4
    for (test, alpha), (raw, adjusted) in shown.items():
        p = asl[asl.test == test].asl.to_numpy()
        holm = multipletests(p, method="holm")[1]
        assert raw == float(fmt(np.mean(p < alpha)))
        assert adjusted == float(fmt(np.mean(holm < alpha)))
    # without a correction the grid of sensitivities by alpha, as before
    plain = irsim.discpower(scores, metric="AP", B=200, seed=2,
                            tests=["t", "randomisation"]).headline()
    assert plain.startswith("discpower: sensitivity by alpha (metric=AP)\n")


# -------------------------------------------------------------------------- test_errors
def test_test_errors_prints_type_one_error_at_05_and_power_at_the_middle_delta():
    scores = pd.read_csv(AP).iloc[:, :12]
    res = irsim.test_errors(scores, metric="AP", trials=200, B=100, seed=1, sizes=[10, 20],
                            tests=["t", "sign"], deltas=[0.0, 0.02, 0.05, 0.08])
    text = res.headline()
    table = res.to_pandas("test_errors")
    assert "first 20" not in text
    for title, delta in (("test_errors (Type I error): rate by n (alpha=0.05, "
                          "alternative=two-sided, delta=0, metric=AP)", 0.0),
                         ("test_errors (power): rate by n (alpha=0.05, "
                          "alternative=two-sided, delta=0.05, metric=AP)", 0.05)):
        rows = _table(text, title)
        assert rows[0] == ["test", "n=10", "n=20"]
        for r in rows[1:]:
            part = table[(table.test == r[0]) & np.isclose(table.delta, delta) &
                         np.isclose(table.alpha, 0.05)].set_index("n")
            want = part.rejections / part.trials
            assert [float(v) for v in r[1:]] == [float(fmt(want[k])) for k in (10, 20)]
        assert [r[0] for r in rows[1:]] == ["t", "sign"]


# ---------------------------------------------------------------------------- assessors
RUNS = ("bm25base_p", "bm25tuned_rm3_p", "colbert_rankgpt4", "colbert_rankzephyr",
        "idst_bert_p1", "TUW19-p3-f", "ICT-BERT2", "colbert_monoelectra-base")


def _qrels(path: str) -> pd.Series:
    q = pd.read_csv(path, sep=r"\s+", header=None, names=["topic", "it", "doc", "grade"],
                    dtype={"topic": str, "doc": str})
    return q.set_index(["topic", "doc"]).grade


def test_assessors_prints_kappas_against_the_reference_and_a_tau_summary():
    from sklearn.metrics import cohen_kappa_score

    runs, qrels = dl19_files(RUNS, ("andrew-parry", "nist", "eugene-yang"))  # nist not first
    res = irsim.assessors(runs=runs, qrels=qrels, reference="nist", B=40, test_B=200,
                          metrics=["AP", "P@10"], tests=["t"], corrections=["none"], seed=3)
    text = res.headline()
    rows = _table(text, "label_agreement (kappa against the reference, mean over topics): "
                        "mean by labels (qrels_a=nist, statistic=kappa)")
    assert rows[0] == ["qrels_b", "graded", "binary"]
    nist = _qrels(qrels["nist"])
    for r in rows[1:]:
        other = _qrels(qrels[r[0]])
        both = pd.concat([nist, other], axis=1, join="inner", keys=["a", "b"])
        graded, binary = [], []
        for _, t in both.groupby(level="topic"):
            if t.a.nunique() > 1 or t.b.nunique() > 1:
                k = cohen_kappa_score(t.a, t.b, labels=[0, 1, 2, 3])
                if np.isfinite(k):
                    graded.append(k)
            ba, bb = t.a >= 2, t.b >= 2
            if ba.nunique() > 1 or bb.nunique() > 1:
                binary.append(cohen_kappa_score(ba, bb, labels=[False, True]))
        assert [float(v) for v in r[1:]] == [float(fmt(np.mean(graded))),
                                             float(fmt(np.mean(binary)))], r[0]
    assert [r[0] for r in rows[1:]] == ["andrew-parry", "eugene-yang"]
    # tau-b over the qrels, per metric: scipy on the system means
    rows = _table(text, "rank_agreement: tau_b over 2 qrels")
    assert rows[0] == ["metric", "min", "qrels", "at", "min", "median", "max"]
    means = res.to_pandas("system_means")
    for r in rows[1:]:
        taus = {q: stats.kendalltau(g.reference_mean, g["mean"]).statistic
                for q, g in means[means.metric == r[0]].groupby("qrels")}
        low = min(taus, key=taus.get)
        assert [float(r[1]), r[2], float(r[3]), float(r[4])] == [
            float(fmt(taus[low])), low, float(fmt(np.median(list(taus.values())))),
            float(fmt(max(taus.values())))]


def test_every_assessors_default_can_reject():
    from irsim.experiments.assessors import Config, default_test_B

    cfg = compose_config(["experiment=assessors_dl19", "data_dir=/nowhere"])
    assert cfg.experiment.test_B is None  # the preset leaves it to the default
    config = Config(**{k: v for k, v in cfg.experiment.items() if k != "name"})
    for systems in (8, 61, 129):
        pairs = systems * (systems - 1) // 2
        B = default_test_B(config, pairs)
        # Holm's first threshold alpha / pairs is reachable by the smallest p, 1/(B+1) ...
        assert 1 / (B + 1) <= config.alpha / pairs
        assert B >= 10000 and B % 1000 == 0
        # ... and by no smaller multiple of 1,000 above 10,000
        assert B == 10000 or 1 / (B - 1000 + 1) > config.alpha / pairs
    # a randomisation test at that B rejects a clear difference under Holm over 1,830 pairs
    B = default_test_B(config, 1830)
    x = _far_apart()
    p = irsim.randomisation_test(x.better.to_numpy(), x.base.to_numpy(), B=B, seed=0,
                                 pvalue_mode="plus_one").pvalue
    assert p == 1 / (B + 1) and p <= 0.05 / 1830
