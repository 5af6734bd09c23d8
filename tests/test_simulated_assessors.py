"""Known truth by simulation (experiment=assessors, simulate_trials > 0): the assessor model
and its draws against loop references, the per-trial statistics against scipy and a
per-pair loop, sharding invariance, Python door == CLI, local == Ray, and the model's
validation on TREC DL 2019 (simulated kappa and tau vs the observed ones)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats as sps
from test_golden import assert_bit_identical

import irsim
from irsim.errors import ConfigError
from irsim.simulate.assessor import draw_grades, fit_assessor_model, simulate_grades
from tests.conftest import SHARED_DATA, dl19_files

DL19 = SHARED_DATA / "dl19-assessors"
RUNS = ("bm25base_p", "bm25tuned_rm3_p", "colbert_rankgpt4", "colbert_rankzephyr",
        "idst_bert_p1", "TUW19-p3-f", "ICT-BERT2", "colbert_monoelectra-base")
QRELS = ("nist", "andrew-parry", "eugene-yang")
SIM = {"B": 20, "test_B": 100, "metrics": ["AP", "nDCG@10"], "tests": ["t"],
       "corrections": ["none", "holm"], "seed": 5, "simulate_trials": 30,
       "simulate_from": "andrew-parry", "planning_sizes": [4, 8]}
SIM_TABLES = ("assessor_model", "simulated_trials", "simulated_agreement",
              "assessor_planning", "assessor_planning_answer")


@pytest.fixture(scope="module")
def data():
    return dl19_files(RUNS, QRELS)


@pytest.fixture(scope="module")
def sim(data):
    runs, qrels = data
    return irsim.assessors(runs=runs, qrels=qrels, reference="nist", **SIM)


# ----------------------------------------------------------------------------- the model

def test_fit_equals_a_loop_over_passages_with_add_one_smoothing():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 500), rng.integers(0, 4, 500)
    b[a == 3] = 3  # a row with one category
    topics = rng.choice(["t1", "t2", "t3"], 500)
    m = fit_assessor_model(a, b, [0, 1, 2, 3], topics=topics, per_topic=True, prior=1.0)
    counts = np.zeros((4, 4))
    for x, y in zip(a, b, strict=True):
        counts[x, y] += 1
    want = (counts + 1) / (counts.sum(axis=1, keepdims=True) + 4)
    np.testing.assert_array_equal(m.counts, counts)
    np.testing.assert_allclose(m.probs, want, rtol=1e-15)
    for ti, t in enumerate(m.topics):
        ct = np.zeros((4, 4))
        for x, y, tt in zip(a, b, topics, strict=True):
            if tt == t:
                ct[x, y] += 1
        shrunk = (ct + 4 * want) / (ct.sum(axis=1, keepdims=True) + 4)
        np.testing.assert_allclose(m.topic_probs[ti], shrunk, rtol=1e-14)
    # a topic outside the model takes the pooled row
    np.testing.assert_allclose(m.rows(np.array([2, 2]), np.array(["t1", "zz"]))[1], want[2])


def test_draws_equal_a_loop_over_trials_and_passages():
    rows = np.array([[0.1, 0.2, 0.3, 0.4], [0.0, 0.5, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0]])
    u = np.random.default_rng(1).random((50, 3))
    got = draw_grades(rows, u)
    for i in range(50):
        for j in range(3):
            cum, k = 0.0, 0
            for k in range(4):  # the first category whose cumulative share passes u
                cum += rows[j, k]
                if u[i, j] < cum or k == 3:
                    break
            assert got[i, j] == k
    # the drawn frequencies follow the model (chi-square goodness of fit)
    m = fit_assessor_model([0, 0, 0, 1, 1, 1], [0, 1, 1, 0, 1, 1], [0, 1], prior=0.0)
    g = simulate_grades(m, np.zeros(2000, np.int64), 2, "t", 0, 5)
    obs = np.bincount(g.ravel(), minlength=2)
    assert sps.chisquare(obs, m.probs[0] * obs.sum()).pvalue > 1e-3


def test_draws_do_not_depend_on_the_split():
    m = fit_assessor_model([0, 1, 2, 2], [0, 2, 1, 2], [0, 1, 2])
    g = np.arange(300) % 3
    whole = simulate_grades(m, g, 9, "x", 0, 700)
    parts = np.concatenate([simulate_grades(m, g, 9, "x", a, b)
                            for a, b in [(0, 1), (1, 251), (251, 700)]])
    np.testing.assert_array_equal(whole, parts)


def test_trial_stats_equal_scipy_and_a_per_pair_loop():
    from irsim.experiments.assessors import trial_stats
    from irsim.stats.multiple import reject

    rng = np.random.default_rng(4)
    x = rng.random((3, 6, 12))
    y = x + 0.1 * rng.standard_normal(x.shape)
    y[1, 2] = y[1, 3]  # tied systems in one trial
    out = trial_stats(x, y, alpha=0.05, corrections=["none", "holm"])
    for t in range(3):
        assert out[t, 0] == pytest.approx(sps.kendalltau(x[t].mean(1), y[t].mean(1)).statistic,
                                          abs=1e-12)
        px, py, dx, dy = [], [], [], []
        for i in range(6):
            for j in range(i + 1, 6):
                for v, p, d in ((x[t], px, dx), (y[t], py, dy)):
                    r = sps.ttest_rel(v[i], v[j])
                    p.append(1.0 if np.isnan(r.pvalue) else r.pvalue)
                    d.append(v[i].mean() - v[j].mean())
        for ci, corr in enumerate(["none", "holm"]):
            r1 = reject(np.array(px), 0.05, corr)
            r2 = reject(np.array(py), 0.05, corr)
            same = np.sign(dx) == np.sign(dy)
            want = [np.sum(r1 & r2 & same), np.sum(~r1 & ~r2), np.sum(r1 & ~r2),
                    np.sum(~r1 & r2), np.sum(r1 & r2 & ~same), r1.sum(), r2.sum()]
            assert out[t, 1 + 7 * ci:8 + 7 * ci].tolist() == want


# ----------------------------------------------------------------------------- the study

def test_simulated_tables_equal_a_per_trial_reference(data, sim):
    """Each trial re-done alone: its grades, evaluate() under them, scipy's tau."""
    from irsim.data.trec import read_qrels
    from irsim.data.types import Qrels
    from irsim.experiments.assessors import (
        AssessorInput,
        Config,
        _prepare,
        read_assessor_runs,
        simulated_qrels,
    )
    from irsim.metrics import evaluate

    runs, qrels = data
    cfg = Config(reference="nist", metrics=SIM["metrics"], simulate_trials=30,
                 simulate_from="andrew-parry", planning_sizes=[4, 8], tests=["t"],
                 corrections=["none", "holm"])
    inp = AssessorInput(read_assessor_runs(runs), {n: read_qrels(p) for n, p in qrels.items()})
    prep = _prepare(cfg, inp)
    trials = sim.to_pandas("simulated_trials")
    for t in (0, 17, 29):
        g = simulated_qrels(prep, t, t + 1, SIM["seed"])[0]
        base = prep.sim.base
        sm = evaluate(inp.runs, Qrels(base.topic, base.docno, g), SIM["metrics"],
                      missing="drop")
        for mi, metric in enumerate(SIM["metrics"]):
            y = sm.values[mi][:, [sm.topics.index(x) for x in prep.sim.topics]]
            x = prep.sim.reference[mi]
            row = trials[(trials.metric == metric) & (trials.trial == t)
                         & (trials.correction == "none")].iloc[0]
            assert row.tau_b == pytest.approx(
                sps.kendalltau(x.mean(1), y.mean(1)).statistic, abs=1e-12)
        # kappa on the fitted passages: scikit-learn
        from sklearn.metrics import cohen_kappa_score
        ref = np.asarray(base.grade)[prep.sim.joint]
        assert row.kappa == pytest.approx(cohen_kappa_score(ref, g[prep.sim.joint],
                                                            labels=[0, 1, 2, 3]), abs=1e-12)
    model = sim.to_pandas("assessor_model")
    assert model["count"].sum() == len(prep.sim.joint) == 1115  # andrew-parry's passages


def test_shard_sizes_give_identical_simulated_tables(data, sim):
    runs, qrels = data
    other = irsim.assessors(runs=runs, qrels=qrels, reference="nist", shard_items=3,
                            shard_replicates=7, **SIM)
    for name in SIM_TABLES:
        assert_bit_identical(other.tables[name], sim.tables[name], name)


def test_planning_answer_is_the_smallest_size_reaching_the_probability(sim):
    plan = sim.to_pandas("assessor_planning")
    ans = sim.to_pandas("assessor_planning_answer")
    trials = sim.to_pandas("simulated_trials")
    for r in ans.itertuples():
        p = plan[(plan.metric == r.metric) & (plan.correction == r.correction)]
        ok = p[p.p_tau >= r.probability].topics
        assert r.topics_tau == (ok.min() if len(ok) else -1)
        # the largest size is all topics: its p_tau is the share of simulated_trials
        full = p[p.topics == p.topics.max()].iloc[0]
        tt = trials[(trials.metric == r.metric) & (trials.correction == r.correction)]
        assert full.p_tau == pytest.approx(np.mean(tt.tau_b >= r.tau_target))
    assert sorted(plan.topics.unique()) == [4, 8, 13]  # andrew-parry judged 13 topics


def test_simulation_bad_input_is_one_clear_error(data):
    runs, qrels = data
    with pytest.raises(ConfigError, match="simulate_from"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", simulate_trials=2,
                        simulate_from="nist", metrics=["AP"])
    with pytest.raises(ConfigError, match="planning_sizes"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", simulate_trials=2,
                        simulate_from="andrew-parry", planning_sizes=[40], metrics=["AP"])
    with pytest.raises(ConfigError, match="simulate_relabel"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", simulate_trials=2,
                        simulate_relabel="some", metrics=["AP"])


@pytest.mark.slow
def test_simulated_kappa_and_tau_match_the_observed_ones_on_dl19(data):
    """Validation: relabelling only the passages the assessor re-judged (as the observed
    qrels were made), the simulated kappa matches the observed one within Monte Carlo
    error (the model reproduces the confusion matrix up to add-one smoothing) and the
    observed tau is inside the simulated distribution."""
    runs, qrels = data
    r = irsim.assessors(runs=runs, qrels=qrels, reference="nist", seed=1, metrics=["AP"],
                        tests=["t"], corrections=["none"], B=20, test_B=100,
                        simulate_trials=200, simulate_from="andrew-parry",
                        simulate_relabel="judged", planning_sizes=[13])
    s = r.to_pandas("simulated_agreement").set_index("statistic")
    for stat in ("kappa", "kappa_binary"):
        row = s.loc[stat]
        assert abs(row["mean"] - row.observed) < 4 * row.mc_se + 0.01
    tau = s.loc["tau_b"]
    assert tau.q025 <= tau.observed <= tau.q975
    rank = r.to_pandas("rank_agreement")
    assert tau.observed == pytest.approx(
        rank[(rank.qrels == "andrew-parry") & (rank.metric == "AP")].tau_b.iloc[0], abs=1e-12)


@pytest.mark.slow
def test_command_line_equals_python_with_simulation(data, sim, tmp_path):
    runs, qrels = data
    q = ", ".join(f"{n}: {p}" for n, p in qrels.items())
    args = ["experiment=assessors", "collection=trec", f"collection.runs=[{','.join(runs)}]",
            f"collection.qrels={{{q}}}", "experiment.reference=nist",
            "experiment.metrics=[AP,nDCG@10]", "experiment.tests=[t]",
            "experiment.corrections=[none,holm]", "experiment.B=20", "experiment.test_B=100",
            "experiment.simulate_trials=30", "experiment.simulate_from=andrew-parry",
            "experiment.planning_sizes=[4,8]", "seed=5", f"hydra.run.dir={tmp_path / 'run'}"]
    proc = subprocess.run([sys.executable, "-m", "irsim", *args], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in SIM_TABLES:
        got = pq.read_table(tmp_path / "run" / "results" / f"{name}.parquet")
        assert_bit_identical(got, sim.tables[name], name)
    assert (tmp_path / "run" / "assessors_simulated_tau.png").is_file()


@pytest.mark.ray
def test_ray_equals_local_with_simulation(data, sim):
    runs, qrels = data
    r = irsim.assessors(runs=runs, qrels=qrels, reference="nist", engine="ray",
                        workers=2, shard_replicates=10, **SIM)
    for name in SIM_TABLES:
        assert_bit_identical(r.tables[name], sim.tables[name], name)
