"""Stochastic simulation of evaluation scores: one stack of margins, copulas and generators.

- :mod:`irsim.simulate.margins`: every margin (the :class:`~irsim.simulate.margins.Margins`
  class, kernel / empirical margins, simIReff's families by AIC, effTransform) and the one
  discrete-support detection;
- :mod:`irsim.simulate.copulas`: pyvinecopulib pair copulas selected by AIC, their codes;
- :mod:`irsim.simulate.base`: the :class:`~irsim.simulate.base.Generator` protocol
  (``fit(scores)``, ``true_means``, ``draw(rng, trials, n)`` / ``scores(draws, n)`` and
  ``sample`` composing them: the one path by which the studies draw their trials) and its
  three generators:
  :mod:`irsim.simulate.pairs` (the shift design's pairs under a Gaussian copula, NORTA),
  :mod:`irsim.simulate.joint_copula_model` (collections of m systems under one Gaussian or
  vine copula) and :mod:`irsim.simulate.designs` (Urbano 2019 trials over the
  :mod:`irsim.simulate.pair_copula_model` of each collection: a margin per run and a copula per
  pair, with its disk cache; :mod:`irsim.simulate.fit_engine` runs its copula selections as
  shards on the engine);
- :mod:`irsim.simulate.assessor`: the simulated assessors of ``experiment=assessors``.

Modules are imported by their full path (``irsim.simulate.<module>``); this package file
re-exports nothing.
"""
