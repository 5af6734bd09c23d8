"""What every fitted generator of :mod:`irsim.simulate` offers: the :class:`Generator` protocol.

A generator is fitted to a real (systems, topics) score matrix of one metric and then draws
*trials*: each trial is ``k`` systems (positions) on ``n`` new topics whose true means are
known. Three generators implement the protocol:

- :class:`~irsim.simulate.pairs.ShiftPairs` (``experiment=test_errors`` with
  ``design=shift``, ``experiment=topic_set_size``): a baseline and the same margin shifted to
  the baseline's mean + delta, tied by the pair's Gaussian copula;
- :class:`~irsim.simulate.joint_copula_model.JointCollections`
  (``experiment=multiple_testing``): ``m`` systems of a pool under one Gaussian or vine
  copula, the first ``m0`` at a common null mean;
- :class:`~irsim.simulate.designs.UrbanoTrials` (``design=urbano2019``): Urbano, Lima &
  Hanjalic's Type I and Type II/III trials over a pair-copula model per collection.

Each offers ``fit(scores, **options)`` (a classmethod: the fitting side), ``sample(rng,
trials, n)`` (scores of shape ``(trials, k, n)``) and ``true_means`` (shape ``(k,)``: the
expected score of each position over the generator's own random choices, e.g. which pair
or which systems a trial draws). ``sample`` draws from `rng` exactly the numbers the
studies draw from their keyed streams, in the same order, so a study's tables do not depend
on whether it calls the generator or its lower-level methods.

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

    def sample(self, rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """Scores of `trials` trials on `n` topics, shape ``(trials, k, n)``."""
        ...
