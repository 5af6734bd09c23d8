"""The registry of collection readers: one entry per ``kind`` of collection config.

A reader declares its kind name, its typed config (a dataclass extending
:class:`CollectionConfig`: the Hydra schema node ``collection/base_<kind>``, so a misspelt key
is refused), its level (``matrix``: it gives a :class:`~irsim.data.matrix.ScoreMatrix`;
``docs``: runs and qrels, a :class:`~irsim.data.collection.DocCollection`, whose metrics the
caller computes) and its load function. The built-in readers (``matrix``, ``trec``,
``synthetic_trec``, ``synthetic_scores``, ``trec_eval``) register in
:mod:`irsim.data.collection`; every loader, the ConfigStore (:func:`irsim.conf.register`) and
the docs ask :func:`irsim.data.collection.readers`. A reader of your own registers when its
module is imported (:func:`register_reader`), or through the entry-point group
``irsim.collections`` of its distribution (a module imported on first use of the registry);
guide "Adding a collection reader" in ``docs/guides/development.md``.

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass
... class Toy(CollectionConfig):
...     kind: str = "toy"
...     size: int = 3
>>> r = register_reader("toy", config=Toy, level="matrix", load=lambda cfg, **_: None)
>>> r.kind, r.level, "toy" in READERS
('toy', 'matrix', True)
>>> unregister_reader("toy"); "toy" in READERS
False
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from irsim.errors import ConfigError

__all__ = ["CollectionConfig", "Reader", "register_reader", "unregister_reader", "on_register",
           "check_level", "READERS", "LEVELS", "ENTRY_POINTS"]

#: What a reader gives: per-topic scores, or runs and qrels (metrics computed by the caller).
LEVELS = ("matrix", "docs")

#: The entry-point group of readers in other distributions (each value: a module that
#: registers its readers when imported).
ENTRY_POINTS = "irsim.collections"

#: The registered readers by kind, in registration order.
READERS: dict[str, Reader] = {}

_LISTENERS: list[Callable[[Reader], None]] = []


def _help(text: str, default: Any = None) -> Any:
    return field(default=default, metadata={"help": text})


@dataclass
class CollectionConfig:
    """The keys every collection config has (each kind's config extends it)."""

    kind: str = ""
    name: str = ""
    description: str = ""
    default_metrics: list[str] | None = _help("metrics studied when the top-level metrics is null")


@dataclass(frozen=True)
class Reader:
    """One kind of collection.

    Parameters
    ----------
    kind : str
        The value of ``collection.kind`` it reads.
    config : type
        Its typed config: a dataclass extending :class:`CollectionConfig` whose ``kind``
        defaults to `kind` (stored in Hydra's ConfigStore as ``collection/base_<kind>``).
    level : {"matrix", "docs"}
        ``matrix``: `load` returns a ScoreMatrix; ``docs``: a DocCollection (runs and qrels).
    load : callable
        ``load(cfg, *, metrics, data_dir, offline)``: `cfg` the ``collection`` node (a
        mapping), `metrics` the metrics asked for (None: the collection's default, for a
        matrix every metric it holds; a matrix reader may return more, the caller keeps
        those asked for), `data_dir` and `offline` where files are found or downloaded.
    description : str
        One line for the docs.
    """

    kind: str
    config: type
    level: str
    load: Callable[..., Any]
    description: str = ""


def register_reader(kind: str, *, config: type, level: str, load: Callable[..., Any],
                    description: str = "") -> Reader:
    """Register the reader of collection kind `kind` (see :class:`Reader` for the
    arguments) and tell the listeners (the ConfigStore stores its config). Returns it.

    Raises
    ------
    ValueError
        A kind already registered, an unknown level, or a config that is not a dataclass
        extending :class:`CollectionConfig` with ``kind`` defaulting to `kind`.
    """
    if kind in READERS:
        raise ValueError(f"collection kind {kind!r} is already registered")
    if level not in LEVELS:
        raise ValueError(f"collection kind {kind!r}: level must be one of {LEVELS}, got "
                         f"{level!r}")
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)
            and issubclass(config, CollectionConfig)):
        raise ValueError(f"collection kind {kind!r}: config must be a dataclass extending "
                         "irsim.data.readers.CollectionConfig")
    if config().kind != kind:
        raise ValueError(f"collection kind {kind!r}: its config's kind defaults to "
                         f"{config().kind!r}")
    entry = Reader(kind, config, level, load, " ".join(description.split()))
    READERS[kind] = entry
    for listener in list(_LISTENERS):
        listener(entry)
    return entry


def unregister_reader(kind: str) -> None:
    """Remove the reader of `kind` (a test's own reader, after the test)."""
    READERS.pop(kind, None)


def on_register(listener: Callable[[Reader], None]) -> None:
    """Call ``listener(reader)`` for every reader registered, now and later."""
    _LISTENERS.append(listener)
    for entry in list(READERS.values()):
        listener(entry)


def check_level(entry: Reader, level: str) -> None:
    """Refuse a reader of another level than the one asked for, with the fix."""
    if entry.level == level:
        return
    if level == "docs":
        docs = ", ".join(repr(k) for k, r in READERS.items() if r.level == "docs")
        raise ConfigError(f"collection kind {entry.kind!r} has no document-level data; use a "
                          f"collection of kind {docs}")
    raise ConfigError(f"collection kind {entry.kind!r} is document-level: its metrics are "
                      "computed from runs and qrels first (irsim.kit.loading.load_collection)")
