"""What every fitted generator of :mod:`irsim.simulate` offers: the :class:`Generator` protocol.

A generator is fitted to a real (systems, topics) score matrix of one metric and then draws
*trials*: each trial is ``k`` systems (positions) on ``n`` new topics whose true means are
known. Three generators implement the protocol, and the studies draw every trial through
them (the generators are built once per prepared data set, per metric and truth):

- :class:`~irsim.simulate.pairs.ShiftPairs` (``experiment=test_errors`` with
  ``design=shift``, ``experiment=topic_set_size``'s simulation check): a baseline and the
  same margin shifted to the baseline's mean + delta, tied by the pair's Gaussian copula;
  one per (metric, delta) (:attr:`~irsim.simulate.pairs.SimulationData.generators`);
- :class:`~irsim.simulate.joint_copula_model.JointCollections`
  (``experiment=multiple_testing``): ``m`` systems of a pool under one Gaussian or vine
  copula, the first ``m0`` at a common null mean; one per (metric, m, m0, shared null
  margins) (``CollectionData.generators`` of the study);
- :class:`~irsim.simulate.designs.UrbanoTrials` (``design=urbano2019``): Urbano, Lima &
  Hanjalic's Type I and Type II/III trials over a pair-copula model per collection; one per
  (metric, Type I or delta) (``UrbanoData.generators`` of the study).

Each offers ``fit(scores, **options)`` (a classmethod: the fitting side), ``sample(rng,
trials, n)`` (scores of shape ``(trials, k, n)``), ``true_means`` (shape ``(k,)``: the
expected score of each position over the generator's own random choices, e.g. which pair
or which systems a trial draws) and the two steps ``sample`` composes:

``draw(rng, trials, n)``
    The raw random numbers of `trials` trials, one row per trial (what a study draws from
    its keyed stream, block by block: :func:`irsim.rng.blocked_draws`). They depend on the
    fitted model only, not on the truth of the trials (the delta, the layout of true
    nulls): the generators of one model at several deltas or layouts read the same draws
    (common random numbers).
``scores(draws, n)``
    The scores ``(trials, k, n)`` of those trials, row by row: a trial's scores depend on
    its row of draws only (for :class:`~irsim.simulate.designs.UrbanoTrials` up to the last
    bit: pyvinecopulib inverts the pair copulas' h-functions batch by batch, and a score can
    differ by an ulp with the batch). A kernel takes the draws of a block of trials once,
    cuts them to the trials it runs and scores them with each generator of the model;
    shards are whole blocks, so it scores the same batches however the study is sharded
    and no table depends on the sharding.

``sample(rng, trials, n)`` is ``scores(draw(rng, trials, n), n)``, bit for bit: a study's
trials on ``n`` topics of block ``k`` (keys as the study gives them) are
``gen.sample(irsim.rng.rng_for(seed, stream, *key, k), 250, n)``
(:data:`irsim.rng.REPLICATE_BLOCK` = 250 trials per block; a last, partial block of ``t``
trials: ``gen.scores(gen.draw(rng, 250, n)[:t], n)``), which
tests/test_generators_studies.py checks for each study.

Examples
--------
>>> from irsim.simulate.pairs import ShiftPairs
>>> rng = np.random.default_rng(0)
>>> x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 40))
...             + 0.05 * rng.standard_normal((5, 40)), 0, 1)
>>> gen = ShiftPairs.fit(x, delta=0.02)
>>> isinstance(gen, Generator), gen.sample(rng, 3, 25).shape
(True, (3, 2, 25))
>>> round(float(gen.true_means[1] - gen.true_means[0]), 9)
0.02

The two steps, and the rows of a slice of the draws:

>>> draws = gen.draw(np.random.default_rng(1), 6, 25)
>>> bool((gen.scores(draws, 25) == gen.sample(np.random.default_rng(1), 6, 25)).all())
True
>>> bool((gen.scores(draws[2:5], 25) == gen.scores(draws, 25)[2:5]).all())
True
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Generator"]


@runtime_checkable
class Generator(Protocol):
    """A fitted generator of known-truth trials (see the module docstring).

    Attributes
    ----------
    true_means : ndarray, shape (k,)
        Expected score of each position of a trial.
    """

    @classmethod
    def fit(cls, scores: ArrayLike, **options: Any) -> Generator:
        """The generator fitted to a (systems, topics) score matrix of one metric."""
        ...

    @property
    def true_means(self) -> np.ndarray:
        """Expected score of each of the ``k`` positions of a trial."""
        ...

    def draw(self, rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """Raw random numbers of `trials` trials on `n` topics, one row per trial."""
        ...

    def scores(self, draws: np.ndarray, n: int) -> np.ndarray:
        """Scores ``(trials, k, n)`` of the trials of `draws` (row by row)."""
        ...

    def sample(self, rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """Scores of `trials` trials on `n` topics, shape ``(trials, k, n)``:
        ``scores(draw(rng, trials, n), n)``."""
        ...
