"""One generator protocol (irsim.simulate.base.Generator) behind the three generators.

- each generator (shift pairs, joint Gaussian / vine collections, Urbano 2019 Type I and
  Type II/III trials) is a ``Generator`` (runtime isinstance) and is fitted by its own
  ``fit(scores, **options)``;
- with real fits to TREC collections of ../shared/data, the sample mean of every position over
  many trials matches ``true_means`` within 4 Monte Carlo standard errors (the standard error
  of the mean of independent per-trial means), and 4 standard errors are below 0.005, so a
  true mean off by 0.005 would fail; where a trial's true difference is known (delta), the
  ``true_means`` differ by exactly delta;
- ``sample`` is the models' lower-level methods on the same random numbers, in the same
  order (the oracle: :meth:`TopicSimulator.scores`, ``PooledMetric.type1`` / ``type2``,
  ``JointCopulaModel.draw`` / ``latent`` / ``scores`` called directly), and the two steps it
  composes (``draw``, then ``scores``) give it bit for bit. That the studies draw their
  trials through the generators: tests/test_generators_studies.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, has_data

from irsim.simulate.base import Generator
from irsim.simulate.designs import UrbanoTrials
from irsim.simulate.joint_copula_model import JointCollections
from irsim.simulate.pairs import ShiftPairs

#: Real fits take seconds: the whole module is slow (the doctests of irsim.simulate.base,
#: .pairs, .joint_copula_model and .designs check the protocol fast on toy data).
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not has_data(), reason="needs ../shared/data")]

#: Monte Carlo tolerance: standard errors of the sample mean.
Z = 4.0
#: 4 standard errors must be below this (the test's resolution).
RESOLUTION = 0.005


def _scores(name: str, runs: int) -> np.ndarray:
    """The first `runs` runs of Urbano's `name`.csv as (runs, topics)."""
    return pd.read_csv(SHARED_DATA / "urbano" / f"{name}.csv").iloc[:, :runs] \
        .to_numpy(np.float64).T


def _check_means(gen: Generator, trials: int, n: int, seed: int) -> np.ndarray:
    x = gen.sample(np.random.default_rng(seed), trials, n)
    k = len(gen.true_means)
    assert x.shape == (trials, k, n)
    assert np.isfinite(x).all() and x.min() >= 0 and x.max() <= 1
    per_trial = x.mean(axis=2)                       # (trials, k), independent rows
    se = per_trial.std(axis=0, ddof=1) / np.sqrt(trials)
    err = per_trial.mean(axis=0) - gen.true_means
    assert (Z * se < RESOLUTION).all(), se
    assert (np.abs(err) <= Z * se).all(), (err, se)
    return se


@pytest.fixture(scope="module")
def shift_ap() -> ShiftPairs:
    return ShiftPairs.fit(_scores("adhoc8_ap", 15), metric="AP", delta=0.05)


@pytest.fixture(scope="module")
def urbano_p10() -> tuple[UrbanoTrials, UrbanoTrials]:
    type1 = UrbanoTrials.fit(_scores("adhoc5_p10", 10), metric="P@10", name="adhoc5")
    type2 = UrbanoTrials.fit(_scores("adhoc5_p10", 10), metric="P@10", name="adhoc5",
                             delta=0.05)
    return type1, type2


@pytest.fixture(scope="module")
def joint_ap() -> JointCollections:
    return JointCollections.fit(_scores("adhoc8_ap", 20), metric="AP", m=6, share_null=0.5)


def test_each_generator_is_a_generator(shift_ap, urbano_p10, joint_ap):
    for gen in (shift_ap, *urbano_p10, joint_ap):
        assert isinstance(gen, Generator)
        assert callable(type(gen).fit)
    assert not isinstance(shift_ap.simulator, Generator)   # a model alone is not one
    assert not isinstance(joint_ap.model, Generator)


def test_shift_pairs_means(shift_ap):
    assert shift_ap.true_means[1] - shift_ap.true_means[0] == pytest.approx(0.05, abs=1e-9)
    _check_means(shift_ap, 20000, 25, seed=1)
    p10 = ShiftPairs.fit(_scores("adhoc8_p10", 15), metric="P@10", delta=0.05)
    assert p10.simulator.margins.kind == "empirical"
    x = p10.sample(np.random.default_rng(3), 50, 25)
    assert np.allclose(x * 10, np.round(x * 10))            # shifted P@10 stays on its grid
    _check_means(p10, 20000, 25, seed=2)


def test_urbano_trials_means(urbano_p10):
    type1, type2 = urbano_p10
    assert type1.true_means[0] == type1.true_means[1]
    assert type2.true_means[1] - type2.true_means[0] == pytest.approx(0.05, abs=1e-9)
    _check_means(type1, 20000, 25, seed=4)
    _check_means(type2, 20000, 25, seed=5)


def test_joint_collections_means(joint_ap):
    true = joint_ap.true_means
    assert true[0] == true[1] == true[2] == joint_ap.null_mean     # m0 = 3 nulls
    assert true[-1] == pytest.approx(joint_ap.null_mean + joint_ap.spread, abs=1e-12)
    _check_means(joint_ap, 8000, 25, seed=6)
    vine = JointCollections.fit(_scores("adhoc8_ap", 20), metric="AP", m=6, share_null=0.5,
                                dependence="vine", vine_truncation=1)
    _check_means(vine, 8000, 25, seed=7)


def test_sample_is_the_models_own_draws(shift_ap, urbano_p10, joint_ap):
    n, trials = 20, 64
    for gen in (shift_ap, *urbano_p10, joint_ap):  # sample = scores(draw)
        draws = gen.draw(np.random.default_rng(11), trials, n)
        assert np.array_equal(gen.scores(draws, n),
                              gen.sample(np.random.default_rng(11), trials, n))
    # shift pairs: one uniform, then 2 n normals per trial
    rng = np.random.default_rng(8)
    block = np.concatenate([rng.random((trials, 1)), rng.standard_normal((trials, 2 * n))],
                           axis=1)
    ordered = shift_ap.trial_pairs
    pick = np.minimum((block[:, 0] * len(ordered)).astype(np.int64), len(ordered) - 1)
    base, pair = ordered[pick, 0], ordered[pick, 1]
    y, x = shift_ap.simulator.scores(pair, block[:, 1:n + 1], block[:, n + 1:],
                                     margin_a=base, margin_b=base,
                                     theta_b=shift_ap.theta[base])
    got = shift_ap.sample(np.random.default_rng(8), trials, n)
    assert np.array_equal(got[:, 0], y) and np.array_equal(got[:, 1], x)
    # Urbano 2019 trials: 3 + 2 n uniforms per trial
    type1, type2 = urbano_p10
    u = np.random.default_rng(9).random((trials, 3 + 2 * n))
    for gen, (b, e) in ((type1, type1.pool.type1(u, n)), (type2, type2.pool.type2(u, n, 0))):
        got = gen.sample(np.random.default_rng(9), trials, n)
        assert np.array_equal(got[:, 0], b) and np.array_equal(got[:, 1], e)
    # joint collections: the model's draws, latent sample, scores
    model = joint_ap.model
    order, logit = model.latent(model.draw(np.random.default_rng(10), trials, n), n)
    want, _ = model.scores(order, logit, joint_ap.m, joint_ap.shifts, m0=joint_ap.m0)
    assert np.array_equal(joint_ap.sample(np.random.default_rng(10), trials, n), want)
