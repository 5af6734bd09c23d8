"""The study kit: pieces that studies share or that one study splits out (not studies).

A study module (``irsim.experiments.<name>``) imports from here, from :mod:`irsim.sampling`,
:mod:`irsim.stats`, :mod:`irsim.simulate`, :mod:`irsim.metrics`, :mod:`irsim.data` and
:mod:`irsim.engine`; nothing here imports a study.

- :mod:`~irsim.experiments.kit.common`: parameter checks and pair/unit indexing.
- :mod:`~irsim.experiments.kit.loading`: data and engine options from a Hydra config.
- :mod:`~irsim.experiments.kit.bins`: the swap bin layouts (absolute, relative) and the swap rule.
- :mod:`~irsim.experiments.kit.topicsets`: topic-set samplers and pair-error counts (swap,
  error_rates, effort, reliability).
- :mod:`~irsim.experiments.kit.bootswap`, :mod:`~irsim.experiments.kit.stability`,
  :mod:`~irsim.experiments.kit.rankcorr`: the bootstrap swap method, Buckley-Voorhees
  stability and rank correlations on bootstrap samples (discpower's companions).
- :mod:`~irsim.experiments.kit.discpower_tests`, :mod:`~irsim.experiments.kit.discpower_kernel`,
  :mod:`~irsim.experiments.kit.discpower_agreement`: discpower's closed-form tests on blocks
  of pairs, its resampling kernel and the test-agreement table.
"""
