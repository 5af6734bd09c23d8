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

from irsim.provenance import VERSION as __version__


def _builtin_studies() -> tuple[str, ...]:
    """The modules of irsim/experiments, without importing them (``import irsim`` stays
    quick); the registry (:mod:`irsim.registry`) is what they declare."""
    import pkgutil
    from pathlib import Path

    found = pkgutil.iter_modules([str(Path(__file__).with_name("experiments"))])
    return tuple(sorted(m.name for m in found if m.name != "registry"
                        and not m.name.startswith("_")))


_STUDIES = _builtin_studies()
_STATS = ("paired_t", "wilcoxon", "sign_test", "randomisation_test", "paired_bootstrap",
          "unpaired_bootstrap", "tukey_hsd", "randomised_tukey_hsd", "anova_two_way",
          "mean_ci", "bootstrap_ci", "meta_analysis", "fixed_effect", "random_effects",
          "get_test", "get_ci_method", "TESTS", "CI_METHODS", "jzs_bayes_factor",
          "bayes_t_posterior", "bayesian_bootstrap")
_OTHER = {"evaluate": "irsim.api", "Result": "irsim.api", "ScoreMatrix": "irsim.data.matrix",
          "Runs": "irsim.data.types", "Qrels": "irsim.data.types",
          "IrsimError": "irsim.errors", "InputError": "irsim.errors",
          "ConfigError": "irsim.errors"}

__all__ = ["__version__", *_STUDIES, *_OTHER, *_STATS]


def __getattr__(name: str) -> Any:
    if name in _STUDIES or (not name.startswith("_") and _registered(name)):
        from irsim.api import study_function

        value = study_function(name)
    elif name in _STATS:
        value = getattr(import_module("irsim.stats"), name)
    elif name in _OTHER:
        value = getattr(import_module(_OTHER[name]), name)
    else:
        raise AttributeError(f"module 'irsim' has no attribute {name!r}")
    globals()[name] = value  # cache: the next access is a plain lookup
    return value


def _registered(name: str) -> bool:
    """Whether a study outside irsim/experiments (a plugin, one registered at import) has
    this name. A submodule's name is not looked up (``from irsim import conf`` asks this
    module's ``__getattr__`` before it imports the submodule)."""
    import importlib.util

    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return False
    from irsim.registry import names

    return name in names()


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
