"""The studies draw their trials through their generators (irsim.simulate.base.Generator).

For each study that simulates trials (experiment=test_errors with design=shift and
design=urbano2019, topic_set_size's simulation check, multiple_testing), the scores its kernel
hands to the tests are recorded (the tests' entry point wrapped) and compared, bit for bit,
with the oracle ``gen.sample(rng_for(seed, stream, *key, block), 250, n)``: the generator the
study's data hold for that configuration, sampled with the study's keyed stream for that block
of :data:`irsim.rng.REPLICATE_BLOCK` trials. Each study runs 300 trials: a whole block and a
partial one, whose oracle is the generator's two steps on the block's draws cut to the trials
run, ``gen.scores(gen.draw(rng, 250, n)[:t], n)`` (the batch the study scores: Urbano's pair
copulas are inverted batch by batch, to the last bit). multiple_testing also hands its kernel
the exact true mean of every system drawn: they equal the generator's ``collections`` means
and lie within 1e-9 of its ``true_means``. Small toy generators: fast.
"""

from __future__ import annotations

import numpy as np
import pytest

import irsim.experiments.topic_set_size as tss
from irsim.data.synthetic import synthetic_scores
from irsim.engine import run_study
from irsim.experiments import Shards
from irsim.experiments.multiple_testing import TOPIC_STREAM as MT_STREAM
from irsim.experiments.multiple_testing import MultipleTesting
from irsim.experiments.multiple_testing import prepare as mt_prepare
from irsim.experiments.test_errors import (
    TOPIC_STREAM,
    URBANO_STREAM,
    TestErrors,
    TrialTests,
    UrbanoData,
    UrbanoStudy,
)
from irsim.experiments.topic_set_size import CHECK_STREAM
from irsim.rng import REPLICATE_BLOCK, rng_for, study_key
from irsim.simulate.base import Generator
from irsim.simulate.designs import PooledMetric
from irsim.simulate.joint_copula_model import fit_joint_copula_model, true_null_count
from irsim.simulate.pair_copula_model import fit_pair_copula_model
from irsim.simulate.pairs import TopicSimulator, prepare

TRIALS = 300
#: Blocks of trials of a 300-trial study: ``(block, first trial, stop)``.
BLOCKS = [(a // REPLICATE_BLOCK, a, min(a + REPLICATE_BLOCK, TRIALS))
          for a in range(0, TRIALS, REPLICATE_BLOCK)]


def _oracle(gen: Generator, seed: int, stream: str, metric: str, n: int, block: int,
            stop: int) -> np.ndarray:
    """The generator's trials of one block with the study's keyed stream: ``gen.sample`` for
    a whole block; for the last, partial block the first `stop` trials of its draws, scored
    (the two steps ``sample`` composes)."""

    def rng() -> np.random.Generator:
        return rng_for(seed, stream, study_key(metric), n, block)

    if stop == REPLICATE_BLOCK:
        return gen.sample(rng(), REPLICATE_BLOCK, n)
    whole = gen.scores(gen.draw(rng(), REPLICATE_BLOCK, n), n)
    assert np.array_equal(whole, gen.sample(rng(), REPLICATE_BLOCK, n))
    return gen.scores(gen.draw(rng(), REPLICATE_BLOCK, n)[:stop], n)


def _record(monkeypatch, owner, name: str, grab) -> list:
    """Wrap ``owner.name`` so that each call appends ``grab(*args)`` to the returned list."""
    seen: list = []
    orig = getattr(owner, name)

    def wrapped(*args, **kwargs):
        seen.append(grab(*args))
        return orig(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapped)
    return seen


def test_shift_design_draws_through_shift_pairs(monkeypatch):
    sim = TopicSimulator.normal(means=[0.4, 0.5, 0.55], sds=[0.1] * 3, rho=[0.3, 0.6, 0.8])
    deltas, n, seed = (0.0, 0.04), 8, 11
    data = prepare([sim], deltas)
    seen = _record(monkeypatch, TrialTests, "pvalues",
                   lambda self, test, alts, x, y, key: (x.copy(), y.copy(), key))
    study = TestErrors.of(sizes=(n,), deltas=deltas, alpha=(0.05,), tests=("t",),
                          trials=TRIALS, seed=seed)
    run_study(study, data)
    assert len(seen) == len(BLOCKS) * len(deltas)  # one call per (block, delta)
    calls = iter(seen)
    for block, a, b in BLOCKS:
        for di in range(len(deltas)):  # the deltas of a block share its draws
            x, y, key = next(calls)
            want = _oracle(data.generators[0][di], seed, TOPIC_STREAM, sim.metric, n, block,
                           b - a)
            assert key == (study_key(sim.metric), block)
            assert np.array_equal(y, want[:, 0]) and np.array_equal(x, want[:, 1])
    # the two deltas differ by the experimental system's shift only
    x0, y0, _ = seen[0]
    x1, y1, _ = seen[1]
    assert np.array_equal(y0, y1) and (x1 > x0).mean() > 0.9


def test_urbano_design_draws_through_urbano_trials(monkeypatch):
    rng = np.random.default_rng(0)
    scores = np.clip(0.3 + 0.1 * rng.standard_normal((1, 30))
                     + 0.08 * rng.standard_normal((8, 30)), 0, 1)
    pool = PooledMetric.build("AP", [fit_pair_copula_model(scores, metric="AP", name="toy")],
                              (0.05,))
    data, n, seed, power = UrbanoData((pool,), (0.05,)), 10, 7, 260
    seen = _record(monkeypatch, TrialTests, "pvalues",
                   lambda self, test, alts, x, y, key: (x.copy(), y.copy(), key))
    base = TrialTests.of(sizes=(n,), alpha=(0.05,), trials=TRIALS, tests=("t",), seed=seed)
    run_study(UrbanoStudy(base, power, deltas=(0.05,)), data)
    # one Monte Carlo unit: one call with the trials of every block and kind, in order
    ((exp, bas, key),) = seen
    want = np.concatenate([
        _oracle(gen, seed, URBANO_STREAM, "AP", n, block, min(b, stop) - a)
        for block, a, b in BLOCKS
        for gen, stop in zip(data.generators[0], (TRIALS, power), strict=True)])
    assert key == (study_key("AP"), 0)
    assert len(want) == TRIALS + power
    assert np.array_equal(bas, want[:, 0]) and np.array_equal(exp, want[:, 1])


def test_topic_set_size_check_draws_through_shift_pairs(monkeypatch):
    matrix = synthetic_scores(systems=5, topics=40, metrics=("AP",), seed=2).matrix
    config = tss.Config(min_diff=[0.1], alpha=[0.05], beta=[0.2], designs=["paired_t"],
                        check_trials=TRIALS)
    study, data = tss.make(config, matrix, seed=5, shards=Shards())
    (n,) = study.check_n
    assert 2 <= n <= tss.CHECK_MAX_N
    seen = _record(monkeypatch, tss, "paired_t", lambda x, y: (x.copy(), y.copy()))
    tables = run_study(study, data)[0]
    assert tables["topic_set_size_check"].column("trials").to_pylist() == [TRIALS]
    assert len(seen) == len(BLOCKS)
    gen = data.simulation.generators[0][0]
    for (x, y), (block, a, b) in zip(seen, BLOCKS, strict=True):
        want = _oracle(gen, 5, CHECK_STREAM, "AP", n, block, b - a)
        assert np.array_equal(y, want[:, 0]) and np.array_equal(x, want[:, 1])


@pytest.mark.parametrize("null_margins", ["own", "shared"])
def test_multiple_testing_draws_through_joint_collections(monkeypatch, null_margins):
    rng = np.random.default_rng(3)
    scores = np.clip(0.35 + 0.12 * rng.standard_normal((1, 25))
                     + 0.1 * rng.standard_normal((6, 25)), 0, 1)
    model = fit_joint_copula_model(scores, metric="AP", spread=0.05)  # kernel margins
    systems, share, n, seed = (3, 5), 0.5, 6, 9
    data = mt_prepare([model], systems=systems, shares=(share,), spread=0.05)
    seen = _record(monkeypatch, MultipleTesting, "_count",
                   lambda self, x, m0, key, row, out, means: (x.copy(), m0, key, means.copy()))
    study = MultipleTesting.of(sizes=(n,), systems=systems, share_null=(share,), alpha=(0.05,),
                               tests=("t",), corrections=("none",), trials=TRIALS, seed=seed,
                               null_margins=null_margins, shard_items=2)
    run_study(study, data)
    assert len(seen) == len(BLOCKS) * len(systems)  # per block, each layout
    calls = iter(seen)
    for block, a, b in BLOCKS:
        for m in systems:  # the layouts of a block share its draws and latent sample
            x, m0, key, means = next(calls)
            gen = data.generators[0][(m, true_null_count(m, share), null_margins == "shared")]
            assert m0 == gen.m0 and key == (study_key(model.metric), n, block)
            assert np.array_equal(x, _oracle(gen, seed, MT_STREAM, model.metric, n, block,
                                             b - a))
            rng = rng_for(seed, MT_STREAM, study_key(model.metric), n, block)
            _, exact = gen.collections(gen.latent(gen.draw(rng, REPLICATE_BLOCK, n), n))
            assert np.array_equal(means, exact[: b - a])
            assert np.abs(means - gen.true_means).max() < 1e-9
    # the first m0 positions are the true nulls: one mean; the others spread above it
    x, m0, _, means = seen[1]
    assert np.ptp(means[:, :m0]) < 1e-9 and (np.diff(means[:, m0 - 1:], axis=1) > 0.01).all()
