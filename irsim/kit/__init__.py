"""The study kit: pieces that studies share or that one study splits out (not studies).

A study module (``irsim.experiments.<name>``) imports from here, from :mod:`irsim.sampling`,
:mod:`irsim.stats`, :mod:`irsim.simulate`, :mod:`irsim.metrics`, :mod:`irsim.data` and
:mod:`irsim.engine`; nothing here imports a study.

- :mod:`~irsim.kit.common`: parameter checks and pair/unit indexing.
- :mod:`~irsim.kit.loading`: data and engine options from a Hydra config.
- :mod:`~irsim.kit.bins`: the swap bin layouts (absolute, relative) and the swap rule.
- :mod:`~irsim.kit.topicsets`: topic-set samplers and pair-error counts (swap,
  error_rates, effort, reliability).
- :mod:`~irsim.kit.bootswap`, :mod:`~irsim.kit.stability`,
  :mod:`~irsim.kit.rankcorr`: the bootstrap swap method, Buckley-Voorhees
  stability and rank correlations on bootstrap samples (discpower's companions).
- :mod:`~irsim.kit.discpower_tests`, :mod:`~irsim.kit.discpower_kernel`,
  :mod:`~irsim.kit.discpower_agreement`: discpower's closed-form tests on blocks
  of pairs, its resampling kernel and the test-agreement table.
"""
