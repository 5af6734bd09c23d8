"""A study's parameters declared once: each ``Config`` field carries its own help text.

A study's ``Config`` (the Hydra structured config ``experiment=<name>`` and the keyword
parameters of ``irsim.<name>``) declares every field with :func:`option`: its default, its
help text, the type as users read it (``"float or list of float"``) when the annotation does
not say it (OmegaConf has no unions, so such fields are typed ``Any``), and whether it
affects the tables. Everything else reads that metadata:

- :func:`document` writes the ``Parameters`` section of the Config's numpy docstring (the
  :func:`irsim.registry.study` registration calls it), so ``help(Config)``, mkdocstrings and
  the generated ``irsim.<name>`` functions show the same text;
- :func:`parameters` lists them (``irsim show``, the documentation's parameter tables,
  :func:`irsim.api.config_parameters`);
- :func:`fingerprint` is the part of a run's identity that comes from the parameters: every
  field that affects the tables (``tables=True``, the default; ``"data"`` for a field that
  reaches them through the data ``make`` prepares), never a hand-kept list.

Examples
--------
>>> from dataclasses import dataclass
>>> @document
... @dataclass
... class Config:
...     '''Parameters of a toy study.'''
...     B: int = option(100, "Resamples per pair.")
...     alpha: Any = option([0.05], "Significance levels.", kind="float or list of float")
...     plot: bool = option(True, "Draw the figure.", tables=False)
>>> print(Config.__doc__)
Parameters of a toy study.
<BLANKLINE>
Parameters
----------
B : int
    Resamples per pair.
alpha : float or list of float
    Significance levels.
plot : bool
    Draw the figure.
<BLANKLINE>
>>> [(p.name, p.kind, p.tables) for p in parameters(Config)]
[('B', 'int', True), ('alpha', 'float or list of float', True), ('plot', 'bool', False)]
>>> fingerprint(Config(alpha=[0.01]), Config)   # the study object would hold the values
{'B': 100, 'alpha': [0.01]}
>>> Config().alpha is Config().alpha      # a list default is copied for every instance
False
"""

from __future__ import annotations

import copy
import dataclasses
import textwrap
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from typing import Any

__all__ = ["option", "document", "parameters", "Parameter", "fingerprint", "kind_text", "section",
           "ordered_fields"]

#: Width of the generated docstring lines (help text is wrapped; the text is unchanged).
WIDTH = 92


def option(default: Any = MISSING, help: str = "", *, kind: str | None = None,
           tables: bool | str = True, only_with: str | None = None,
           factory: Callable[[], Any] | None = None) -> Any:
    """A ``Config`` field with its help text: ``dataclasses.field`` with metadata.

    Parameters
    ----------
    default : object
        The default. A list or dict is copied for every instance (a ``default_factory``).
    help : str
        What the parameter means, numpy-docstring markup (the one home of this text).
    kind : str, optional
        The type as users read it (``"float or list of float"``, ``'{"none", "holm"}'``);
        default: from the annotation (:func:`kind_text`).
    tables : bool or "data"
        How the value reaches the tables (:func:`fingerprint`): True, the study object holds
        it (it enters the fingerprint); ``"data"``, ``make`` builds the kernel's data or
        values the study fingerprints from it; False, it never changes the tables (a
        figure, cache or thread option).
    only_with : str, optional
        The field whose value decides whether this one matters: when that field is empty
        or false, this one is left out of the fingerprint (the Bayesian options without a
        Bayesian test; a field may name itself: left out when empty).
    factory : callable, optional
        A ``default_factory`` instead of `default`.

    Returns
    -------
    dataclasses.Field
        The field, to assign in the dataclass body.
    """
    if tables not in (True, False, "data"):
        raise ValueError(f"tables must be True, False or 'data', got {tables!r}")
    metadata = {"help": " ".join(help.split()), "kind": kind, "tables": tables,
                "only_with": only_with}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    if isinstance(default, (list, dict, set)):
        value = copy.deepcopy(default)
        return dataclasses.field(default_factory=lambda: copy.deepcopy(value),
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _annotation(config: type, f: dataclasses.Field) -> Any:
    """The field's annotation as a type (annotations are strings under ``from __future__
    import annotations``)."""
    try:
        return typing.get_type_hints(config).get(f.name, f.type)
    except Exception:  # an annotation that does not resolve: show its text
        return f.type


def kind_text(annotation: Any) -> str:
    """The type as a numpy docstring states it.

    Examples
    --------
    >>> kind_text(int), kind_text(int | None), kind_text(list[str]), kind_text(dict[str, int])
    ('int', 'int, optional', 'list of str', 'dict of str to int')
    """
    if isinstance(annotation, str):
        return annotation
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        text = " or ".join(kind_text(a) for a in rest)
        return f"{text}, optional" if len(rest) < len(args) else text
    if origin in (list, tuple):
        return f"list of {kind_text(args[0])}" if args else "list"
    if origin is dict:
        return f"dict of {kind_text(args[0])} to {kind_text(args[1])}" if args else "dict"
    if annotation is Any:
        return "object"
    return getattr(annotation, "__name__", str(annotation))


@dataclass(frozen=True)
class Parameter:
    """One field of a ``Config`` as its metadata declares it.

    Attributes
    ----------
    name : str
        Field name.
    default : object
        Its default (a factory's value).
    kind : str
        The type as users read it.
    help : str
        The help text (one paragraph, numpy-docstring markup).
    tables : bool or "data"
        How it reaches the tables (:func:`option`, :func:`fingerprint`).
    """

    name: str
    default: Any
    kind: str
    help: str
    tables: bool | str


def _default(f: dataclasses.Field) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None


def parameters(config: type) -> list[Parameter]:
    """Every field of `config` with its metadata (:func:`ordered_fields`). A Config may
    add a sentence of its own to the help of a field it inherits from a shared option group
    with a class attribute ``NOTES = {field: text}`` (not a field).

    Raises
    ------
    ValueError
        A field declared without :func:`option` (no help text): a programming error.
    """
    out = []
    notes = getattr(config, "NOTES", {})
    for f in ordered_fields(config):
        if "help" not in f.metadata:
            raise ValueError(f"{config.__module__}.{config.__qualname__}.{f.name} has no help "
                             f"text: declare it with irsim.params.option(default, help)")
        text = " ".join(f"{f.metadata['help']} {notes.get(f.name, '')}".split())
        out.append(Parameter(f.name, _default(f),
                             f.metadata.get("kind") or kind_text(_annotation(config, f)),
                             text, f.metadata.get("tables", True)))
    return out


def ordered_fields(config: Any) -> list[dataclasses.Field]:
    """The fields of `config` (a dataclass or an instance) as users read them: its own first
    (in declaration order), then those of shared option groups it inherits (a base class
    such as :class:`irsim.kit.common.BayesOptions`), base by base. (Dataclass order puts inherited
    fields first; Hydra and the keyword-only parameters do not depend on the order.)"""
    by_name = {f.name: f for f in dataclasses.fields(config)}
    out: dict[str, dataclasses.Field] = {}
    for cls in (config if isinstance(config, type) else type(config)).__mro__:
        for name in cls.__dict__.get("__annotations__", {}):
            if name in by_name and name not in out:
                out[name] = by_name[name]
    return list(out.values())


def section(config: type, skip: tuple[str, ...] = ()) -> str:
    """The entries of a numpy ``Parameters`` section for the fields of `config` (those named
    in `skip` left out), help text wrapped at :data:`WIDTH`."""
    lines = []
    for p in parameters(config):
        if p.name in skip:
            continue
        lines.append(f"{p.name} : {p.kind}")
        lines += textwrap.wrap(p.help, WIDTH, initial_indent="    ", subsequent_indent="    ",
                               break_on_hyphens=False, break_long_words=False)
    return "\n".join(lines) + "\n"


def document(config: type) -> type:
    """Class decorator: the ``Parameters`` section of `config`'s docstring, written from
    its fields' metadata after the docstring's own text (replacing a section written
    earlier). Returns `config`."""
    head = (config.__doc__ or "").split("\n\nParameters\n----------\n", 1)[0]
    config.__doc__ = f"{_clean(head)}\n\nParameters\n----------\n{section(config)}"
    return config


def _clean(doc: str) -> str:
    import inspect

    return inspect.cleandoc(doc).rstrip()


def fingerprint(study: Any, config: type, *, renamed: Mapping[str, str | None] | None = None,
                derived: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The parameters that determine a study's tables (its ``fingerprint()``: a run
    directory's identity and what a resume checks), derived from its ``Config``, never
    listed by hand.

    Every field of `config` declared ``tables=True`` (the default) enters with the value the
    study object holds (normalised by ``make``: ``alpha=0.05`` is held as ``(0.05,)``) under
    the field's name, or under ``renamed[name]`` (a dotted path such as
    ``"options.sign_threshold"``; None: the field does not apply to this study object, such
    as another design's option). A field declared ``tables="data"`` enters through what
    ``make`` builds from it: the kernel's data (the run's fingerprint holds its digest) or
    the `derived` values the study computes from it (an error table, the pairs compared),
    which are added as given. A field declared ``tables=False`` (a figure, cache or thread
    option) never enters, nor one whose ``only_with`` field is empty or false. The study's
    ``seed``, when it has one, is added.

    Raises
    ------
    AttributeError
        A ``tables=True`` field the study object does not hold (it must be held, renamed
        or declared otherwise: a programming error caught by the tests).
    KeyError
        `renamed` names a field that is not a ``tables=True`` field of `config`.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Config:
    ...     alpha: Any = option(0.05, "Levels.", kind="float or list of float")
    ...     metrics: Any = option(None, "Metrics.", tables="data")
    ...     plot: bool = option(True, "Draw the figure.", tables=False)
    >>> @dataclass
    ... class Study:
    ...     alphas: tuple = (0.05,)
    ...     seed: int = 3
    >>> fingerprint(Study(), Config, renamed={"alpha": "alphas"})
    {'alpha': (0.05,), 'seed': 3}
    """
    renamed = dict(renamed or {})
    params = {p.name: p for p in parameters(config)}
    for key in renamed:
        if key not in params or params[key].tables is not True:
            raise KeyError(f"fingerprint: {key!r} is not a tables=True field of "
                           f"{config.__qualname__}")
    def held(name: str) -> Any:
        value = study
        for part in renamed.get(name, name).split("."):
            value = getattr(value, part)
        return value

    out: dict[str, Any] = {}
    fields = {f.name: f for f in dataclasses.fields(config)}
    for name, p in params.items():
        if name == "name" or p.tables is not True or renamed.get(name, name) is None:
            continue
        gate = fields[name].metadata.get("only_with")
        if gate is not None and not held(gate):
            continue  # it cannot change the tables (its fingerprint as before it existed)
        out[name] = held(name)
    out.update(derived or {})
    if hasattr(study, "seed"):
        out["seed"] = study.seed
    return out
