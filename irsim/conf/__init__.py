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
    """Store one study's ``Config`` as ``experiment/<name>``, with its config groups: a
    Config's class attribute ``GROUPS = {field: {option: dataclass}}`` makes each option
    ``experiment/<field>/<option>`` (selected by ``experiment/<field>=<option>``, its keys
    ``experiment.<field>.<key>``: a key of another option is refused), the field's default's
    option the default of the Config's defaults list (test_errors' ``design``)."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import MISSING, OmegaConf, open_dict

    cs = ConfigStore.instance()
    groups = getattr(entry.config, "GROUPS", {})
    node: Any = entry.config
    if groups:
        node = OmegaConf.structured(entry.config)
        defaults: list[Any] = ["_self_"]
        with open_dict(node):
            for field, options in groups.items():
                for option, cls in options.items():
                    cs.store(group=f"experiment/{field}", name=option, node=cls)
                default = type(getattr(entry.config(), field))
                defaults.append({field: next(o for o, c in options.items() if c is default)})
                node[field] = MISSING  # typed by the field; the option chosen fills it
            node["defaults"] = defaults
    cs.store(group="experiment", name=entry.name, node=node)
