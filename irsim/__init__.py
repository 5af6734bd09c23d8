"""irsim: distributed simulation framework for meta-evaluation in information retrieval.

The front door (everything loads on first use, so ``import irsim`` stays quick):

- one function per study, named as the experiment: :func:`discpower`, :func:`swap`,
  :func:`error_rates`, :func:`effort`, :func:`coverage`, :func:`corpus_ci`,
  :func:`test_errors`, ... (every study registered, :mod:`irsim.registry`; see
  :mod:`irsim.api`);
- :func:`evaluate`: per-topic scores of TREC runs (trec_eval-exact) as a long DataFrame;
- :class:`ScoreMatrix`, :class:`Result`;
- the significance tests and CI methods of :mod:`irsim.stats` (``paired_t``, ``wilcoxon``,
  ``sign_test``, ``randomisation_test``, ``paired_bootstrap``, ``unpaired_bootstrap``,
  ``tukey_hsd``, ``randomised_tukey_hsd``, ``anova_two_way``, ``mean_ci``,
  ``bootstrap_ci``, ``meta_analysis`` ...).

Examples
--------
>>> import irsim
>>> callable(irsim.discpower) and "B" in irsim.discpower.__signature__.parameters
True
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from irsim.provenance import VERSION as __version__  # noqa: F401  (in __all__)

_STATS = ("paired_t", "wilcoxon", "sign_test", "randomisation_test", "paired_bootstrap",
          "unpaired_bootstrap", "tukey_hsd", "randomised_tukey_hsd", "anova_two_way",
          "mean_ci", "bootstrap_ci", "meta_analysis", "fixed_effect", "random_effects",
          "get_test", "get_ci_method", "TESTS", "CI_METHODS", "jzs_bayes_factor",
          "bayes_t_posterior", "bayesian_bootstrap")
_OTHER = {"evaluate": "irsim.api", "Result": "irsim.api", "ScoreMatrix": "irsim.data.matrix",
          "Runs": "irsim.data.types", "Qrels": "irsim.data.types",
          "IrsimError": "irsim.errors", "InputError": "irsim.errors",
          "ConfigError": "irsim.errors"}


def __getattr__(name: str) -> Any:
    """``irsim.<study>`` (every study registered, :mod:`irsim.registry`), the tests and CI
    methods, the other public names, and ``__all__`` (which lists every study, so asking
    for it imports them all)."""
    if name == "__all__":
        from irsim.registry import names

        value: Any = ["__version__", *names(), *_OTHER, *_STATS]
    elif name in _STATS:
        value = getattr(import_module("irsim.stats"), name)
    elif name in _OTHER:
        value = getattr(import_module(_OTHER[name]), name)
    elif not name.startswith("_") and _registered(name):
        from irsim.api import study_function

        value = study_function(name)
    else:
        raise AttributeError(f"module 'irsim' has no attribute {name!r}")
    globals()[name] = value  # cache: the next access is a plain lookup
    return value


def _registered(name: str) -> bool:
    """Whether a study has this name (:func:`irsim.registry.get` imports only its module
    when it is built in). A submodule's name is not looked up (``from irsim import conf``
    asks this module's ``__getattr__`` before it imports the submodule)."""
    import importlib.util

    from irsim.errors import ConfigError
    from irsim.registry import get

    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return False
    try:
        get(name)
    except ConfigError:
        return False
    return True


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__getattr__("__all__")))
