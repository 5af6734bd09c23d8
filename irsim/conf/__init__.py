"""Hydra configuration: the YAML files of this package (collections, presets) and the
structured configs of the experiments and of the engines.

Each experiment module's ``Config`` dataclass is the single source of its parameters'
defaults and types; :func:`register` stores it in Hydra's ConfigStore as
``experiment/<name>``, so ``experiment=<name>`` selects it and presets
(``experiment/<preset>.yaml``) extend it with ``defaults: [<name>@experiment]``. A key the
dataclass does not declare is an error on the command line, as a wrong keyword is in Python.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register", "registered", "store"]

_REGISTERED = False


def register() -> None:
    """Store every study's ``Config`` in Hydra's ConfigStore (idempotent): the studies of
    :func:`irsim.registry.studies`; a study registered later is stored when it
    registers."""
    global _REGISTERED
    if _REGISTERED:
        return
    from hydra.core.config_store import ConfigStore

    from irsim.engine.config import ENGINES
    from irsim.registry import on_register, studies

    for name, node in ENGINES.items():  # typed: Hydra refuses unknown engine keys itself
        ConfigStore.instance().store(group="engine", name=name, node=node)
    for entry in studies():
        store(entry)
    on_register(store)  # and every study registered later (a plugin imported late)
    _REGISTERED = True


def registered() -> bool:
    """Whether :func:`register` has run in this process."""
    return _REGISTERED


def store(entry: Any) -> None:
    """Store one study's ``Config`` as ``experiment/<name>``."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(group="experiment", name=entry.name, node=entry.config)
