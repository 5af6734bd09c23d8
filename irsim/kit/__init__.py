"""The study kit: the pieces several studies share.

A study module (``irsim.experiments.<name>``) imports from here, from :mod:`irsim.sampling`,
:mod:`irsim.stats`, :mod:`irsim.simulate`, :mod:`irsim.metrics`, :mod:`irsim.data` and
:mod:`irsim.engine`; nothing here imports a study.

- :mod:`~irsim.kit.common`: parameter checks and pair/unit indexing.
- :mod:`~irsim.kit.loading`: data and engine options from a Hydra config.
- :mod:`~irsim.kit.bins`: the swap bin layouts (absolute, relative) and the swap rule.
- :mod:`~irsim.kit.topicsets`: topic-set samplers and pair-error counts (swap,
  error_rates, effort, reliability).
- :mod:`~irsim.kit.tables`: the schemas of the tables two studies write.

discpower's own pieces (its closed-form tests on blocks of pairs, resampling kernel,
test agreement, bootstrap swap method, stability and rank correlations) live in its package,
:mod:`irsim.experiments.discpower`.
"""
