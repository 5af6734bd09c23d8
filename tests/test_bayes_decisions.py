"""Bayesian decisions under known truth (issue 28): table ``bayes_decisions`` of
experiment=test_errors.

- A per-trial Python loop over the study's simulated trials (the public Bayesian functions
  of :mod:`irsim.stats.bayes`, one pair at a time) gives the table's counts exactly.
- The table does not depend on shard sizes (both designs) or on the engine (Ray).
- With ``rope = 0`` the t posterior's HDI rule is the two-sided t test at ``alpha = 1 -
  prob`` with its sign: under design=urbano2019 its counts equal the ``type_1`` / ``type_2``
  / ``type_3`` counters of the t test.
- Under delta = 0 the JZS rule ``BF10 >= 3`` says "different" far less often than the t test
  rejects at alpha = 0.05 (a measured rate, with a binomial tolerance).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy import stats as sps

from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments.test_errors import TestErrors, UrbanoData, UrbanoStudy
from irsim.rng import REPLICATE_BLOCK, study_key
from irsim.simulate.pairs import TopicSimulator, prepare
from irsim.stats.bayes import (
    DECISIONS,
    bayes_t_posterior,
    bayesian_bootstrap,
    jzs_bayes_factor,
    jzs_log_bf10,
)

BAYES = ("jzs_bf", "t_posterior", "bayesian_bootstrap")
SMALL = dict(sizes=(8, 15), deltas=(0.0, 0.02, -0.05), alpha=(0.05,), tests=("t",),
             trials=300, B=200, seed=5, bayes=BAYES, bayes_rope=0.01)


def _frame(table) -> pd.DataFrame:
    return table.to_pandas()


@pytest.fixture(scope="module")
def normal_data():
    sim = TopicSimulator.normal(means=[0.45, 0.5, 0.55], sds=[0.1, 0.12, 0.08],
                                rho=[0.3, 0.6, 0.5])
    return prepare([sim], SMALL["deltas"])


@pytest.fixture(scope="module")
def small_tables(normal_data):
    tables, info = run_study(TestErrors.of(**SMALL), normal_data)
    assert info["shards"] == 1
    return tables


def test_loop_reference_equals_the_table(normal_data, small_tables):
    """The study's trials regenerated block by block, each decided by the public functions
    one pair at a time (the Bayesian bootstrap with the study's stream and block key)."""
    study = TestErrors.of(**SMALL)
    sim = normal_data.simulators[0]
    tab = _frame(small_tables["bayes_decisions"])
    assert len(tab) == len(study.config.sizes) * len(study.config.deltas) * len(BAYES)
    for n in study.config.sizes:
        for di, delta in enumerate(study.config.deltas):
            counts = {b: dict.fromkeys(DECISIONS, 0) for b in BAYES}
            for a in range(0, study.config.trials, REPLICATE_BLOCK):
                b = min(a + REPLICATE_BLOCK, study.config.trials)
                gen = normal_data.generators[0][di]
                trial = gen.scores(study.draws(gen, sim.metric, n, a, b), n)
                y, x = trial[:, 0], trial[:, 1]
                key = (study_key(sim.metric), a // REPLICATE_BLOCK)
                for i in range(len(x)):
                    got = {
                        "jzs_bf": jzs_bayes_factor(x[i], y[i], threshold=3.0).decision,
                        "t_posterior": bayes_t_posterior(x[i], y[i], rope=0.01,
                                                         prob=0.95).decision,
                        "bayesian_bootstrap": bayesian_bootstrap(
                            x[i], y[i], rope=0.01, prob=0.95, B=200, seed=5,
                            study="test_errors/bayesian_bootstrap", key=key).decision}
                    for name, decision in got.items():
                        counts[name][str(decision)] += 1
            for name in BAYES:
                row = tab[(tab.n == n) & (tab.delta == delta) & (tab.test == name)]
                assert len(row) == 1
                row = row.iloc[0]
                assert row.trials == study.config.trials
                assert {d: int(row[d]) for d in DECISIONS} == counts[name], (n, delta, name)
                c = counts[name]
                assert row.different_rate == (c["better"] + c["worse"]) / study.config.trials
                assert row.equivalent_rate == c["equivalent"] / study.config.trials
                if delta == 0:
                    assert pd.isna(row.power) and pd.isna(row.wrong_sign_rate)
                else:
                    right, wrong = ("better", "worse") if delta > 0 else ("worse", "better")
                    assert row.power == c[right] / study.config.trials
                    assert row.wrong_sign_rate == c[wrong] / study.config.trials
                    assert row.power_lo <= row.power <= row.power_hi


def test_shard_sizes_change_nothing(normal_data, small_tables):
    study = TestErrors.of(**SMALL, shard_items=2, shard_replicates=250)
    tables, info = run_study(study, normal_data)
    assert info["shards"] == 3 * 2  # ceil(6 configurations / 2) x ceil(300 / 250)
    for name in ("bayes_decisions", "test_errors", "type_m_s"):
        pd.testing.assert_frame_equal(_frame(tables[name]), _frame(small_tables[name]),
                                      check_exact=True)


def test_without_bayes_nothing_changes(normal_data, small_tables):
    """No ``bayes``: no table, no field, the fingerprint of the study before issue 28; the
    other tables equal those of the run with the Bayesian tests."""
    plain = TestErrors.of(**{**SMALL, "bayes": ()})
    assert "bayes" not in plain.fields(normal_data)
    assert not any(k.startswith("bayes") for k in plain.fingerprint())
    tables, _ = run_study(plain, normal_data)
    assert "bayes_decisions" not in tables
    pd.testing.assert_frame_equal(_frame(tables["test_errors"]),
                                  _frame(small_tables["test_errors"]), check_exact=True)


@pytest.mark.parametrize(("options", "message"), [
    ({"bayes": ("jzs",)}, "did you mean 'jzs_bf'"),
    ({"bayes": ("jzs_bf", "jzs_bf")}, "twice"),
    ({"bayes_threshold": 0.5}, "bayes_threshold must be >= 1"),
    ({"bayes_prob": 1.0}, "bayes_prob must be in"),
    ({"bayes_rope": -0.01}, "bayes_rope must be >= 0"),
    ({"bayes_r": 0}, "bayes_r must be > 0"),
])
def test_bad_options_are_named(options, message):
    with pytest.raises(ConfigError, match=message):
        TestErrors.of(**{**SMALL, **options})


@pytest.mark.ray
def test_ray_equals_local(ray_local, normal_data, small_tables):
    study = TestErrors.of(**SMALL, shard_items=4, shard_replicates=250)
    tables, info = run_study(study, normal_data, engine="ray", engine_options={"workers": 2})
    assert info["engine"] == "ray"
    pd.testing.assert_frame_equal(_frame(tables["bayes_decisions"]),
                                  _frame(small_tables["bayes_decisions"]), check_exact=True)


# ---------------------------------------------------------------------------- urbano2019
def _urbano(shard_items: int, shard_replicates: int):
    from irsim.simulate.designs import PooledMetric
    from irsim.simulate.pair_copula_model import fit_pair_copula_model

    rng = np.random.default_rng(0)
    x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 30))
                + 0.08 * rng.standard_normal((8, 30)), 0, 1)
    pool = PooledMetric.build("AP", [fit_pair_copula_model(x, metric="AP", name="toy")],
                              (0.02, 0.05))
    base = TestErrors.of(sizes=(20,), alpha=(0.05,), trials=500, tests=("t",), B=100,
                         alternatives=("two-sided",), shard_items=shard_items,
                         shard_replicates=shard_replicates, bayes=BAYES, bayes_rope=0.0)
    study = UrbanoStudy(base, 400, deltas=(0.02, 0.05))
    return run_study(study, UrbanoData((pool,), (0.02, 0.05)))


def test_urbano_t_posterior_is_the_t_test_and_sharding_changes_nothing():
    tables, _ = _urbano(11, 4000)
    tab = _frame(tables["bayes_decisions"])
    assert len(tab) == 3 * len(BAYES)
    assert (tab[tab.delta == 0].trials == 500).all() and (tab[tab.delta > 0].trials == 400).all()
    post = tab[tab.test == "t_posterior"].set_index("delta")
    # rope = 0, prob = 0.95: the HDI excludes 0 exactly when the two-sided t test rejects at
    # 0.05, in the direction of the mean difference
    t1 = _frame(tables["type_1"]).query("test == 't' and tail == 'two-sided'")
    assert int(post.loc[0.0, "better"] + post.loc[0.0, "worse"]) == int(t1.rejections.iloc[0])
    t2 = _frame(tables["type_2"]).query("test == 't' and tail == 'two-sided'").set_index("delta")
    t3 = _frame(tables["type_3"]).query("test == 't'").set_index("delta")
    for delta in (0.02, 0.05):
        assert post.loc[delta, "better"] == t2.loc[delta, "rejections"]
        assert post.loc[delta, "worse"] == t3.loc[delta, "rejections"]
    assert (post.equivalent == 0).all()  # rope = 0: only an all-zero row is equivalent
    split, info = _urbano(1, 250)
    assert info["shards"] == 3 * 2
    pd.testing.assert_frame_equal(_frame(split["bayes_decisions"]), tab, check_exact=True)


# ------------------------------------------------------------- JZS against the t test
def test_jzs_false_different_rate_is_well_below_the_t_tests():
    """delta = 0, normal differences, 4000 trials per n: the JZS rule BF10 >= 3 calls a
    pair different in about 1-2% of trials, the t test rejects at alpha = 0.05 in about 5%.
    Tolerance: the t test's rate exceeds the JZS rate by more than 4 binomial standard
    errors of their difference (trials the t test rejects and BF10 < 3: a binomial share).
    BF10 is increasing in |t|, so on normal differences the JZS rate is ``2 P(T_{n-1} >
    t*)`` with ``BF10(t*) = 3`` (1.75% at n = 25, 1.30% at n = 50): the measured rate is
    within 4 binomial standard errors of it."""
    sim = TopicSimulator.normal(means=[0.4, 0.5], sds=[0.1, 0.15], rho=[0.6])
    data = prepare([sim], (0.0,))
    study = TestErrors.of(sizes=(25, 50), deltas=(0.0,), alpha=(0.05,), tests=("t",),
                          trials=4000, seed=28, bayes=("jzs_bf",))
    tables, _ = run_study(study, data)
    jzs = _frame(tables["bayes_decisions"]).set_index("n")
    t = _frame(tables["test_errors"]).set_index("n")
    for n in (25, 50):
        rate_t, rate_b = t.loc[n, "rate"], jzs.loc[n, "different_rate"]
        gap = rate_t - rate_b
        se = math.sqrt(gap * (1 - gap) / 4000)
        assert gap > 4 * se, (n, rate_t, rate_b)
        t_star = optimize.brentq(lambda v, n=n: jzs_log_bf10(v, n) - math.log(3), 0.5, 10)
        want = 2 * sps.t.sf(t_star, n - 1)
        assert abs(rate_b - want) < 4 * math.sqrt(want * (1 - want) / 4000), (n, rate_b, want)
        assert 0.035 < rate_t < 0.065  # the t test holds its level on normal differences
