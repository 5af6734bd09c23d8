"""Hydra configuration: the YAML files of this package (collections, engines, presets) and
the structured configs of the experiments.

Each experiment module's ``Config`` dataclass is the single source of its parameters'
defaults and types; :func:`register` stores it in Hydra's ConfigStore as
``experiment/<name>``, so ``experiment=<name>`` selects it and presets
(``experiment/<preset>.yaml``) extend it with ``defaults: [<name>@experiment]``. A key the
dataclass does not declare is an error on the command line, as a wrong keyword is in Python.
"""

from __future__ import annotations

__all__ = ["register"]

_REGISTERED = False


def register() -> None:
    """Store every experiment's ``Config`` in Hydra's ConfigStore (idempotent)."""
    global _REGISTERED
    if _REGISTERED:
        return
    from hydra.core.config_store import ConfigStore

    from irsim.experiments import experiment_module, experiment_names

    cs = ConfigStore.instance()
    for name in experiment_names():
        module = experiment_module(name)
        config = getattr(module, "Config", None)
        if config is not None:
            cs.store(group="experiment", name=name, node=config)
    _REGISTERED = True
