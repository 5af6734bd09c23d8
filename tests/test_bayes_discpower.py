"""Bayesian decisions in experiment=discpower (issue 28): tables ``bayes_pairs`` and
``bayes_discpower``.

- A per-pair Python loop over the public functions of :mod:`irsim.stats.bayes` (one pair
  at a time; the Bayesian bootstrap with the study's stream) gives every pair's decision and
  evidence, and the summary's counts; scipy's paired t test gives the t columns.
- With ``bayes_rope = 0`` the t posterior's HDI rule is the paired t test at ``1 -
  bayes_prob`` with its direction.
- Shard sizes (pairs and replicates) change nothing; without ``bayes`` nothing changes;
  the Python door equals the command line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import irsim
from irsim.data.synthetic import synthetic_scores
from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments.discpower import BAYES_STREAM, DiscPower
from irsim.kit.common import pair_index
from irsim.stats.bayes import DECISIONS, bayes_t_posterior, bayesian_bootstrap, jzs_bayes_factor
from irsim.stats.resample import log_scores

BAYES = ("jzs_bf", "t_posterior", "bayesian_bootstrap")
#: 30 systems: 435 pairs, two units of 256 pairs
SMALL = dict(tests=("t",), B=300, seed=7, gmean=True, bayes=BAYES, bayes_rope=0.01,
             bayes_threshold=3.0, bayes_prob=0.95)


@pytest.fixture(scope="module")
def matrix():
    return synthetic_scores(systems=30, topics=20, metrics=("AP",), seed=11).matrix


@pytest.fixture(scope="module")
def tables(matrix):
    out, info = run_study(DiscPower.of(**SMALL), matrix)
    assert info["shards"] == 1
    return out


def test_loop_reference_equals_the_tables(matrix, tables):
    pairs = tables["bayes_pairs"].to_pandas()
    summary = tables["bayes_discpower"].to_pandas()
    ia, ib = pair_index(len(matrix.systems))
    raw = np.asarray(matrix.metric("AP"), np.float64)
    assert sorted(pairs.metric.unique()) == ["AG AP", "AP"]  # no Bayesian test of G AP
    assert len(pairs) == 2 * len(BAYES) * len(ia)
    for name, x in (("AP", raw), ("AG AP", log_scores(raw))):
        t_p = np.array([sps.ttest_rel(x[a], x[b]).pvalue for a, b in zip(ia, ib, strict=True)])
        for test in BAYES:
            got = pairs[(pairs.metric == name) & (pairs.test == test)].reset_index(drop=True)
            assert got.system_a.tolist() == [matrix.systems[a] for a in ia]
            decisions, bf, pos, rope = [], [], [], []
            for a, b in zip(ia, ib, strict=True):  # one pair at a time
                if test == "jzs_bf":
                    r = jzs_bayes_factor(x[a], x[b], threshold=3.0)
                    bf.append(float(r.bf10))
                elif test == "t_posterior":
                    r = bayes_t_posterior(x[a], x[b], rope=0.01, prob=0.95)
                else:
                    r = bayesian_bootstrap(x[a], x[b], rope=0.01, prob=0.95, B=300, seed=7,
                                           study=BAYES_STREAM)
                if test != "jzs_bf":
                    pos.append(float(r.prob_positive))
                    rope.append(float(r.prob_rope))
                decisions.append(str(r.decision))
            assert got.decision.tolist() == decisions, (name, test)
            if test == "jzs_bf":
                np.testing.assert_allclose(got.bf10, bf, rtol=1e-12)
                assert got.prob_positive.isna().all() and got.prob_rope.isna().all()
            else:
                np.testing.assert_allclose(got.prob_positive, pos, rtol=1e-12, atol=0)
                np.testing.assert_allclose(got.prob_rope, rope, rtol=1e-12, atol=0)
                assert got.bf10.isna().all()
            np.testing.assert_allclose(got["diff"], x[ia].mean(axis=1) - x[ib].mean(axis=1),
                                       rtol=1e-12, atol=1e-15)
            row = summary[(summary.metric == name) & (summary.test == test)].iloc[0]
            counts = pd.Series(decisions).value_counts()
            for d in DECISIONS:
                assert row[d] == counts.get(d, 0), (name, test, d)
            different = np.isin(decisions, ["better", "worse"])
            assert row.different == different.sum()
            assert row.sensitivity == different.sum() / len(ia)
            assert row.t_alpha == 0.05
            assert row.t_significant == np.count_nonzero(t_p < 0.05)
            assert row.both == np.count_nonzero(different & (t_p < 0.05))
    # the decisions are not all alike: the test above compares informative tables
    assert set(pairs.decision) >= {"better", "worse", "undecided", "equivalent"}


def test_t_posterior_without_rope_is_the_t_test(matrix):
    """rope = 0: better / worse exactly when scipy's paired t test gives p < 1 - prob,
    in the direction of the mean difference."""
    out, _ = run_study(DiscPower.of(**{**SMALL, "bayes": ("t_posterior",), "bayes_rope": 0.0,
                                    "bayes_prob": 0.9, "gmean": False}), matrix)
    got = out["bayes_pairs"].to_pandas()
    x = np.asarray(matrix.metric("AP"), np.float64)
    ia, ib = pair_index(len(matrix.systems))
    p = np.array([sps.ttest_rel(x[a], x[b]).pvalue for a, b in zip(ia, ib, strict=True)])
    d = x[ia].mean(axis=1) - x[ib].mean(axis=1)
    want = np.where(p < 0.1, np.where(d > 0, "better", "worse"), "undecided")
    assert got.decision.tolist() == want.tolist()
    row = out["bayes_discpower"].to_pandas().iloc[0]
    assert row.t_alpha == 0.1 and row.different == row.t_significant == row.both > 0


@pytest.mark.parametrize("tests", [("t",), ("t", "paired_bootstrap")])
def test_shard_sizes_change_nothing(matrix, tables, tests):
    """Pairs in two shards of 256 (and, with a resampled test, replicates in two shards of
    250): the same bits as one shard."""
    base = tables if tests == ("t",) else run_study(
        DiscPower.of(**{**SMALL, "tests": tests}), matrix)[0]
    split, info = run_study(DiscPower.of(**{**SMALL, "tests": tests, "shard_items": 1,
                                         "shard_replicates": 1}), matrix)
    assert info["shards"] == (2 if tests == ("t",) else 2 * 2)
    for name in ("bayes_pairs", "bayes_discpower", "asl", "discpower"):
        pd.testing.assert_frame_equal(split[name].to_pandas(), base[name].to_pandas(),
                                      check_exact=True)


def test_without_bayes_nothing_changes(matrix, tables):
    plain = DiscPower.of(**{**SMALL, "bayes": ()})
    assert not any(k.startswith("bayes") for k in plain.fingerprint())
    assert not any(k.startswith("bayes") for k in plain.fields(matrix))
    out, _ = run_study(plain, matrix)
    assert "bayes_pairs" not in out and "bayes_discpower" not in out
    pd.testing.assert_frame_equal(out["asl"].to_pandas(), tables["asl"].to_pandas(),
                                  check_exact=True)


@pytest.mark.parametrize(("options", "message"), [
    ({"bayes": ["jzs"]}, "did you mean 'jzs_bf'"),
    ({"bayes": ["t_posterior", "t_posterior"]}, "twice"),
    ({"bayes_threshold": 0.5}, "bayes_threshold must be >= 1"),
    ({"bayes_prob": 0.0}, "bayes_prob must be in"),
    ({"bayes_rope": -1}, "bayes_rope must be >= 0"),
    ({"bayes_r": 0.0}, "bayes_r must be > 0"),
])
def test_bad_options_are_named(matrix, options, message):
    with pytest.raises(ConfigError, match=message):
        irsim.discpower(matrix, tests=["t"], **options)


def test_python_door_equals_the_command_line():
    """25 runs of TREC-8 AP (shared data) through both doors: the same bits."""
    import tempfile

    from golden.record import tables_of
    from test_api import assert_same_tables, frame

    api = irsim.discpower(frame("adhoc8_ap", systems=25), metric="AP", tests=["t"], B=200,
                          seed=3, bayes=list(BAYES), bayes_rope=0.02)
    with tempfile.TemporaryDirectory() as tmp:
        small = f"{tmp}/adhoc8_ap_25.csv"
        frame("adhoc8_ap", systems=25).to_csv(small, index=False)
        cli = tables_of(["collection=matrix", f"collection.path={small}",
                         "collection.metric=AP", "experiment.tests=[t]", "experiment.B=200",
                         "seed=3", "experiment.bayes=[jzs_bf,t_posterior,bayesian_bootstrap]",
                         "experiment.bayes_rope=0.02"])
    assert "bayes_pairs" in cli and cli["bayes_pairs"].num_rows == 3 * 300
    assert_same_tables(api.tables, cli)


@pytest.mark.ray
def test_ray_equals_local(ray_local, matrix, tables):
    """Two Ray workers, pairs in two shards: the same bits as one local shard."""
    study = DiscPower.of(**{**SMALL, "shard_items": 1})
    out, info = run_study(study, matrix, engine="ray", engine_options={"workers": 2})
    assert info["engine"] == "ray" and info["shards"] == 2
    for name in ("bayes_pairs", "bayes_discpower"):
        pd.testing.assert_frame_equal(out[name].to_pandas(), tables[name].to_pandas(),
                                      check_exact=True)
