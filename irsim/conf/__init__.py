"""Hydra configuration: the YAML files of this package (collections, presets) and the
structured configs of the top level, the collections, the experiments and the engines.

Each experiment module's ``Config`` dataclass is the single source of its parameters'
defaults and types; :func:`register` stores it in Hydra's ConfigStore as
``experiment/<name>``, so ``experiment=<name>`` selects it and presets
(``experiment/<preset>.yaml``) extend it with ``defaults: [<name>@experiment]``. A key the
dataclass does not declare is an error on the command line, as a wrong keyword is in Python.

Every node is typed (top level and collections: :mod:`irsim.conf.schema`; engines:
:mod:`irsim.engine.config`), so Hydra refuses a misspelt key (``engine.workerz=2``) and
OmegaConf refuses a key added with ``+`` (Hydra adds it without asking the type) when
:func:`check_keys` merges each node's values into its dataclass; :func:`unknown_key` is the
one message for both (the key and the valid keys of its node, closest first).
"""

from __future__ import annotations

from typing import Any

__all__ = ["register", "registered", "store", "store_reader", "kind_options", "check_keys",
           "unknown_key", "choice_error"]

_REGISTERED = False


def register() -> None:
    """Store every study's ``Config`` in Hydra's ConfigStore (idempotent): the studies of
    :func:`irsim.registry.studies` and the collection readers' configs of
    :func:`irsim.data.collection.readers`; a study or a reader registered later is stored
    when it registers."""
    global _REGISTERED
    if _REGISTERED:
        return
    from hydra.core.config_store import ConfigStore

    from irsim.conf.schema import IrsimConfig
    from irsim.data.collection import readers
    from irsim.data.readers import on_register as on_reader
    from irsim.engine.config import ENGINES
    from irsim.registry import on_register, studies

    cs = ConfigStore.instance()
    cs.store(name="irsim", node=IrsimConfig)  # the base of config.yaml
    for name, node in ENGINES.items():  # typed: Hydra refuses unknown engine keys itself
        cs.store(group="engine", name=name, node=node)
    readers()  # the built-in readers and those of installed distributions, then store each
    on_reader(store_reader)  # (and any registered later): the base of collection/<name>.yaml
    studies()  # import every installed study, then store each (and any registered later)
    on_register(store)
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


def store_reader(entry: Any) -> None:
    """Store a collection reader's config as ``collection/base_<kind>``, the base that a
    ``conf/collection/<name>.yaml`` of that kind extends; a kind that no packaged YAML
    declares (a reader of another distribution) also as ``collection/<kind>``, so
    ``collection=<kind> collection.<key>=...`` selects it (:func:`kind_options`)."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(group="collection", name=f"base_{entry.kind}", node=entry.config)
    if entry.kind not in _yaml_kinds():
        cs.store(group="collection", name=entry.kind, node=entry.config)


_KINDS_OF_YAML: dict[str, str] | None = None


def _yaml_kinds() -> set[str]:
    """The kinds the packaged ``conf/collection/*.yaml`` declare (read once)."""
    global _KINDS_OF_YAML
    if _KINDS_OF_YAML is None:
        import importlib.resources as resources

        import yaml

        root = resources.files("irsim.conf") / "collection"
        _KINDS_OF_YAML = {p.name: str((yaml.safe_load(p.read_text(encoding="utf-8")) or {})
                                      .get("kind")) for p in root.iterdir()
                          if p.name.endswith(".yaml")}
    return set(_KINDS_OF_YAML.values())


def kind_options() -> list[str]:
    """The collection kinds selected by their own name (``collection=<kind>``): registered
    readers whose kind no packaged ``conf/collection/*.yaml`` declares.

    Examples
    --------
    >>> kind_options()  # every built-in kind has its YAML (synthetic_trec: synthetic.yaml)
    []
    """
    from irsim.data.collection import readers

    return [kind for kind in readers() if kind not in _yaml_kinds()]


def check_keys(cfg: Any) -> None:
    """Refuse a key that a typed node of the composed config `cfg` does not declare: each
    node's own values are merged into a fresh instance of its dataclass (struct mode), so
    OmegaConf itself refuses ``+foo=1``, ``+engine.x=1``, ``+collection.x=1`` or
    ``+experiment.BB=1``, which Hydra adds without asking the type. The refusal is a
    :class:`~irsim.errors.ConfigError` worded by :func:`unknown_key`.

    Examples
    --------
    >>> from irsim.runner import compose_config
    >>> check_keys(compose_config(["+foo=1"]))
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown config key 'foo'; valid: collection, data_dir, \
engine, experiment, metrics, offline, quiet, seed
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigKeyError

    from irsim.conf.schema import IrsimConfig

    for path, node in _typed_nodes(cfg, ""):
        cls = IrsimConfig if not path else OmegaConf.get_type(node)
        values = {}
        for key in node.keys():
            child = node._get_node(key)
            typed = OmegaConf.is_dict(child) and _is_dataclass(OmegaConf.get_type(child))
            # a typed child is checked on its own (its type may extend the field's)
            values[key] = {} if typed else OmegaConf.to_container(child, resolve=False) \
                if OmegaConf.is_config(child) else child._value()
        try:
            OmegaConf.merge(OmegaConf.structured(cls), values)
        except ConfigKeyError as err:
            key = str(err.key) if err.key is not None else "?"
            raise unknown_key(cfg, f"{path}.{key}" if path else key) from None


def _is_dataclass(cls: Any) -> bool:
    import dataclasses

    return isinstance(cls, type) and dataclasses.is_dataclass(cls)


def _typed_nodes(node: Any, path: str) -> list[tuple[str, Any]]:
    """``[(dotted path, node)]`` of `node` and its descendants typed by a dataclass."""
    from omegaconf import OmegaConf

    out = [(path, node)]
    for key in node.keys():
        child = node._get_node(key)
        if OmegaConf.is_dict(child) and _is_dataclass(OmegaConf.get_type(child)):
            out += _typed_nodes(child, f"{path}.{key}" if path else str(key))
    return out


def unknown_key(cfg: Any, key: str) -> Any:
    """The one error (a :class:`~irsim.errors.ConfigError`) for a key of `cfg` that its
    node does not declare (dotted `key`): the key and the valid keys of its node, closest
    first; for the experiment's node its parameters (``unknown parameter of
    experiment=discpower 'experiment.BB' (did you mean 'experiment.B'?) ...``).

    Examples
    --------
    >>> from irsim.runner import compose_config
    >>> str(unknown_key(compose_config([]), "engine.blas_thread"))  # doctest: +ELLIPSIS
    "config: unknown config key 'engine.blas_thread' (did you mean 'engine.blas_threads', ..."
    """
    from dataclasses import fields

    from omegaconf import OmegaConf

    from irsim.conf.schema import IrsimConfig
    from irsim.errors import unknown_name

    node, _, _ = key.rpartition(".")
    parent = OmegaConf.select(cfg, node) if node else cfg
    cls = OmegaConf.get_type(parent) if node and parent is not None else IrsimConfig
    names = [f.name for f in fields(cls)] if _is_dataclass(cls) else \
        list(parent.keys()) if parent is not None else []
    # not the user's to set: the command (irsim evaluate), the selected option's name
    internal = {"command"} if not node else \
        {"name"} if node.startswith("experiment") or node == "engine" else set()
    valid = [f"{node}.{k}" if node else str(k) for k in names if k not in internal]
    what = "config key"
    if node == "experiment":
        what = f"parameter of experiment={parent.name}"
    elif node.startswith("experiment.") and parent is not None and "name" in parent:
        what = f"parameter of {node.replace('.', '/')}={parent.name}"  # a group's option
    return unknown_name(what, key, valid)


def choice_error(err: BaseException | None) -> Any:
    """OmegaConf's refusal of a value outside a :class:`~irsim.params.Choice` (a command
    line's override or a keyword of ``irsim.<study>``) as one
    :class:`~irsim.errors.ConfigError` naming the key, the closest values and every valid
    one; None for any other error.

    Examples
    --------
    >>> from irsim.runner import compose_config
    >>> try:
    ...     compose_config(["experiment.pvalue=plusone"])
    ... except Exception as err:
    ...     print(choice_error(err.__cause__))
    config: unknown value of experiment.pvalue 'plusone' (did you mean 'plus_one'?); valid: \
count, plus_one
    """
    import enum
    import typing

    from omegaconf.errors import ValidationError

    from irsim.errors import unknown_name

    if not isinstance(err, ValidationError):
        return None
    choice = getattr(getattr(err, "child_node", None), "enum_type", None)
    if choice is None:  # an item of a list of choices
        args = typing.get_args(getattr(err, "ref_type", None))
        choice = args[0] if args else None
    if not (isinstance(choice, type) and issubclass(choice, enum.Enum)):
        return None
    return unknown_name(f"value of {err.full_key}", str(err.value), [m.name for m in choice])
