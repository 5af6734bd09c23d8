"""A study's parameters declared once: each ``Config`` field carries its own help text.

A study's ``Config`` (the Hydra structured config ``experiment=<name>`` and the keyword
parameters of ``irsim.<name>``) declares every field with :func:`option`: its default, its
help text, its type (the annotation: a list of scalars such as ``list[float]`` also takes
one scalar, promoted by :func:`promote`; a closed set of values is a :class:`Choice`;
``kind`` overrides how the type reads for the few fields typed ``Any``), and whether it
affects the tables. Everything else reads that metadata:

- :func:`normalise` (every ``Config``'s ``__post_init__``, so both doors) checks the bounds
  a field declares (``option(100, "...", ge=1)``), with the field's name in the message;
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
...     B: int = option(100, "Resamples per pair.", ge=1)
...     alpha: list[float] = option([0.05], "Significance levels.", gt=0, lt=1)
...     plot: bool = option(True, "Draw the figure.", tables=False)
>>> print(Config.__doc__)
Parameters of a toy study.
<BLANKLINE>
Parameters
----------
B : int, >= 1
    Resamples per pair.
alpha : float or list of float, each inside (0, 1)
    Significance levels.
plot : bool
    Draw the figure.
<BLANKLINE>
>>> [(p.name, p.kind, p.tables) for p in parameters(Config)]
[('B', 'int, >= 1', True), ('alpha', 'float or list of float, each inside (0, 1)', True), \
('plot', 'bool', False)]
>>> fingerprint(Config(alpha=[0.01]), Config)   # the study object would hold the values
{'B': 100, 'alpha': [0.01]}
>>> Config().alpha is Config().alpha      # a list default is copied for every instance
False
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import textwrap
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from typing import Any

__all__ = ["option", "document", "parameters", "Parameter", "fingerprint", "kind_text", "section",
           "ordered_fields", "Choice", "scalar_lists", "is_scalar", "promote", "normalise",
           "Options", "bound_text", "check_bounds"]

#: Width of the generated docstring lines (help text is wrapped; the text is unchanged).
WIDTH = 92


def option(default: Any = MISSING, help: str = "", *, kind: str | None = None,
           tables: bool | str = True, only_with: str | None = None,
           factory: Callable[[], Any] | None = None, ge: float | None = None,
           gt: float | None = None, le: float | None = None, lt: float | None = None) -> Any:
    """A ``Config`` field with its help text: ``dataclasses.field`` with metadata.

    Parameters
    ----------
    default : object
        The default. A list or dict is copied for every instance (a ``default_factory``).
    help : str
        What the parameter means, numpy-docstring markup (the one home of this text).
    kind : str, optional
        The type as users read it, for a field typed ``Any`` (``"list of {metric,
        depth}"``); default: from the annotation (:func:`kind_text`).
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
    ge, gt, le, lt : float, optional
        The field's bounds (``value >= ge``, ``> gt``, ``<= le``, ``< lt``; for a list field,
        each element's), checked once by :func:`normalise` with the field's name in the
        message (:func:`check_bounds`) and shown in the documentation (:func:`bound_text`).
        A field annotated ``int`` must then hold an integer; None is never checked.

    Returns
    -------
    dataclasses.Field
        The field, to assign in the dataclass body.
    """
    if tables not in (True, False, "data"):
        raise ValueError(f"tables must be True, False or 'data', got {tables!r}")
    bounds = {k: v for k, v in (("gt", gt), ("ge", ge), ("lt", lt), ("le", le)) if v is not None}
    if ("gt" in bounds and "ge" in bounds) or ("lt" in bounds and "le" in bounds):
        raise ValueError("give at most one lower bound (ge or gt) and one upper (le or lt)")
    metadata = {"help": " ".join(help.split()), "kind": kind, "tables": tables,
                "only_with": only_with, "bounds": bounds}
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
    """The type as a numpy docstring states it. A list of scalars also takes one scalar
    (:func:`promote`), so it reads ``"X or list of X"``; a :class:`Choice` lists its values.

    Examples
    --------
    >>> kind_text(int), kind_text(int | None), kind_text(list[str]), kind_text(dict[str, int])
    ('int', 'int, optional', 'str or list of str', 'dict of str to int')
    >>> class Mode(Choice):
    ...     count = "count"
    ...     plus_one = "plus_one"
    >>> kind_text(Mode), kind_text(list[Mode] | None), kind_text(list[list[str]])
    ('{"count", "plus_one"}', 'str or list of str, each of {"count", "plus_one"}, optional', \
'list of list of str')
    """
    if isinstance(annotation, str):
        return annotation
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        text = " or ".join(kind_text(a) for a in rest)
        return f"{text}, optional" if len(rest) < len(args) else text
    if origin in (list, tuple):
        if not args:
            return "list"
        inner = typing.get_origin(args[0]) in (list, tuple)
        item = f"list of {kind_text(typing.get_args(args[0])[0])}" if inner else \
            kind_text(args[0])
        if _is_choice(args[0]):  # griffe reads a leading "{...}" as the whole type
            return f"str or list of str, each of {item}"
        if _is_scalar_type(args[0]):
            return f"{item} or list of {item}"
        return f"list of {item}"
    if origin is dict:
        return f"dict of {kind_text(args[0])} to {kind_text(args[1])}" if args else "dict"
    if annotation is Any:
        return "object"
    if _is_choice(annotation):
        return "{" + ", ".join(f'"{m.value}"' for m in annotation) + "}"
    return getattr(annotation, "__name__", str(annotation))


class Choice(enum.StrEnum):
    """A parameter's closed set of values: Hydra and OmegaConf refuse any other value
    themselves, the documentation lists them (:func:`kind_text`), and a member is the
    string it names everywhere else (it compares, hashes, formats and serialises as that
    string, so a run directory's fingerprint is unchanged by the type).

    A member's name is its value (``plus_one = "plus_one"``), since OmegaConf reads a
    command line's ``experiment.pvalue=plus_one`` by name. Calling the class with an
    unknown value is a :class:`~irsim.errors.ConfigError` with the closest values.

    Examples
    --------
    >>> class Mode(Choice):
    ...     count = "count"
    ...     plus_one = "plus_one"
    >>> Mode("plus_one") == "plus_one", f"{Mode.count}", [Mode.count]
    (True, 'count', ['count'])
    >>> Mode("plus1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown Mode value 'plus1' (did you mean 'plus_one'?); ...
    """

    def __repr__(self) -> str:  # as the string it names (docs, messages, doctests)
        return repr(self.value)

    @classmethod
    def _missing_(cls, value: object) -> Any:
        from irsim.errors import unknown_name

        raise unknown_name(f"{cls.__name__} value", str(value), [m.value for m in cls])

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The values as plain strings, in declaration order."""
        return tuple(m.value for m in cls)


def _is_choice(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, enum.Enum)


def _is_scalar_type(annotation: Any) -> bool:
    return annotation in (int, float, str, bool) or _is_choice(annotation)


def _list_item(annotation: Any) -> Any:
    """The item type of a (possibly optional) list annotation, else None."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return _list_item(rest[0]) if len(rest) == 1 else None
    if origin in (list, tuple) and args:
        return args[0]
    return None


def scalar_lists(config: type) -> frozenset[str]:
    """The fields of dataclass `config` typed as a list of scalars: each also takes one
    scalar, promoted to a one-element list (:func:`promote`).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Config:
    ...     alpha: list[float] = option([0.05], "Levels.")
    ...     metrics: list[str] | None = option(None, "Metrics.")
    ...     pairs: list[list[str]] | None = option(None, "Pairs.")
    ...     B: int = option(100, "Resamples.")
    >>> sorted(scalar_lists(Config))
    ['alpha', 'metrics']
    """
    hints = _hints(config)
    return frozenset(f.name for f in dataclasses.fields(config)
                     if _is_scalar_type(_list_item(hints.get(f.name))))


def _hints(config: type) -> dict[str, Any]:
    cache = config.__dict__.get("_irsim_hints")
    if cache is None:
        try:
            cache = typing.get_type_hints(config)
        except Exception:  # noqa: BLE001 - annotations that do not resolve: nothing typed
            cache = {}
        config._irsim_hints = cache  # type: ignore[attr-defined]
    return cache


def bound_text(bounds: Mapping[str, float]) -> str:
    """The bounds of :func:`option` as a message and the documentation state them.

    Examples
    --------
    >>> bound_text({"ge": 1}), bound_text({"gt": 0, "lt": 1}), bound_text({"ge": 0, "lt": 1})
    ('>= 1', 'inside (0, 1)', 'in [0, 1)')
    """
    low = next(((k, v) for k, v in bounds.items() if k in ("ge", "gt")), None)
    high = next(((k, v) for k, v in bounds.items() if k in ("le", "lt")), None)
    if low is not None and high is not None:
        if low[0] == "gt" and high[0] == "lt":
            return f"inside ({low[1]:g}, {high[1]:g})"
        return (f"in {'[' if low[0] == 'ge' else '('}{low[1]:g}, "
                f"{high[1]:g}{']' if high[0] == 'le' else ')'}")
    k, v = low or high  # type: ignore[misc]
    return f"{_SIGNS[k]} {v:g}"


_SIGNS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
_HOLDS = {"ge": lambda v, b: v >= b, "gt": lambda v, b: v > b,
          "le": lambda v, b: v <= b, "lt": lambda v, b: v < b}


def check_bounds(name: str, value: Any, bounds: Mapping[str, float], integer: bool) -> Any:
    """`value` of the field `name` (as :func:`irsim.errors.param` spells it) within its
    `bounds` (:func:`option`), as an ``int`` when `integer` else a ``float`` (a finite one:
    a bounded field never takes nan or inf); else a :class:`~irsim.errors.ConfigError`
    naming the field, the bound and the value.

    Examples
    --------
    >>> check_bounds("experiment.B", 20.0, {"ge": 1}, True)
    20
    >>> check_bounds("experiment.B", 0, {"ge": 1}, True)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.B must be an integer >= 1, got 0
    >>> check_bounds("experiment.alpha", 1.5, {"gt": 0, "lt": 1}, False)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.alpha must be inside (0, 1), got 1.5
    """
    import math
    import numbers

    from irsim.errors import ConfigError

    text = bound_text(bounds)
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if integer:
        if not number or not math.isfinite(value) or int(value) != value:
            raise ConfigError(f"{name} must be an integer {text}, got {value!r}")
        value = int(value)
    else:
        if not number or not math.isfinite(value):
            raise ConfigError(f"{name} must be a number {text}, got {value!r}")
        value = float(value)
    if not all(_HOLDS[k](value, b) for k, b in bounds.items()):
        raise ConfigError(f"{name} must be {'an integer ' if integer else ''}{text}, "
                          f"got {value!r}")
    return value


def _is_int(annotation: Any) -> bool:
    """Whether `annotation` is ``int`` (or ``int | None``)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return len(rest) == 1 and _is_int(rest[0])
    return annotation is int


def normalise(obj: Any, prefix: str = "") -> None:
    """Give each field of dataclass instance `obj` the type its annotation declares, in
    place: a scalar for a list of scalars becomes a list of one, a string for a
    :class:`Choice` (or a list of them) becomes its member (an unknown one is a
    :class:`~irsim.errors.ConfigError` naming the parameter and the closest values), and a
    field with bounds (:func:`option`'s ``ge``, ``gt``, ``le``, ``lt``; each element of a
    list) is checked, held as an ``int`` or a ``float`` as annotated (:func:`check_bounds`:
    the one check of a field's bounds, in both doors). The
    ``__post_init__`` of :class:`Options` calls it, so a ``Config`` built directly holds
    what Hydra and ``irsim.<study>`` build. `prefix` is the path of `obj`'s fields in
    messages (``"design."`` for a config group's option).

    Examples
    --------
    >>> from irsim.experiments.discpower import Config
    >>> from irsim.stats.multiple import Correction
    >>> c = Config(alpha=0.01, correction="holm", tests="t")
    >>> c.alpha, c.tests, c.correction is Correction.holm
    ([0.01], ['t'], True)
    >>> Config(correction="hlm")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown value of experiment.correction 'hlm' (did you ...
    """
    from irsim.errors import param, unknown_name

    hints = _hints(type(obj))

    def member(choice: type[enum.Enum], name: str, value: Any) -> Any:
        if isinstance(value, choice) or not isinstance(value, str):
            return value  # another type: OmegaConf or make says what is wrong with it
        try:
            return choice[value]
        except KeyError:
            raise unknown_name(f"value of {param(prefix + name)}", value,
                               [m.name for m in choice]) from None

    for f in dataclasses.fields(obj):
        annotation = hints.get(f.name)
        value = getattr(obj, f.name)
        item = _list_item(annotation)
        bounds = f.metadata.get("bounds")
        if _is_scalar_type(item):
            if is_scalar(value):
                value = [value]
            if _is_choice(item) and isinstance(value, list):
                value = [member(item, f.name, v) for v in value]
            if bounds and isinstance(value, list | tuple):
                value = [check_bounds(param(prefix + f.name), v, bounds, _is_int(item))
                         for v in value]
        else:
            choice = next((a for a in (annotation, *typing.get_args(annotation))
                           if _is_choice(a)), None)
            if choice is not None:
                value = member(choice, f.name, value)
            if bounds and value is not None:
                value = check_bounds(param(prefix + f.name), value, bounds, _is_int(annotation))
        if value is not getattr(obj, f.name):
            object.__setattr__(obj, f.name, value)


@dataclass
class Options:
    """Base of a study's ``Config`` (and of a config group's options): its
    ``__post_init__`` types the values as the annotations say (:func:`normalise`). A
    subclass with a ``__post_init__`` of its own calls ``super().__post_init__()``."""

    def __post_init__(self) -> None:
        normalise(self)


def is_scalar(value: Any) -> bool:
    """Whether `value` is one scalar a list field may take (not a list, mapping or None).

    Examples
    --------
    >>> is_scalar(0.05), is_scalar("t"), is_scalar([0.05]), is_scalar(None)
    (True, True, False, False)
    """
    import numbers

    return isinstance(value, str | numbers.Number | enum.Enum)


def promote(config: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` (keyword parameters of `config`) with each scalar given for a list field
    as a one-element list: ``alpha=0.05`` is ``alpha=[0.05]``, in both doors (the command
    line's overrides are rewritten the same way, :func:`irsim.runner.promote_overrides`).

    Examples
    --------
    >>> from irsim.experiments.discpower import Config
    >>> promote(Config, {"alpha": 0.01, "B": 200}), promote(Config, {"tests": ["t"]})
    ({'alpha': [0.01], 'B': 200}, {'tests': ['t']})
    """
    lists = scalar_lists(config)
    return {k: [v] if k in lists and is_scalar(v) else v for k, v in values.items()}


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
        The type as users read it, with the field's bounds (``int, >= 1``).
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
        kind = f.metadata.get("kind") or kind_text(_annotation(config, f))
        if f.metadata.get("bounds"):
            each = "each " if _list_item(_annotation(config, f)) is not None else ""
            kind = f"{kind}, {each}{bound_text(f.metadata['bounds'])}"
        out.append(Parameter(f.name, _default(f), kind, text, f.metadata.get("tables", True)))
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


def fingerprint(study: Any, config: type, *, derived: Mapping[str, Any] | None = None
                ) -> dict[str, Any]:
    """The parameters that determine a study's tables (its ``fingerprint()``: a run
    directory's identity and what a resume checks), derived from its ``Config``, never
    listed by hand.

    Every field of `config` declared ``tables=True`` (the default) enters with the value of
    the normalised Config the study holds (``study.config``, an instance of `config`: the
    way every study is built; or `study` is that Config). A field declared
    ``tables="data"`` enters through what ``make`` builds from it: the kernel's data (the
    run's fingerprint holds its digest) or the `derived` values the study computes from it
    (an error table, the pairs compared), which are added as given. A field declared
    ``tables=False`` (a figure, cache or thread option) never enters, nor one whose
    ``only_with`` field is empty or false. The study's ``seed``, when it has one, is added.

    Raises
    ------
    TypeError
        `study` neither is nor holds a Config of `config` (a programming error caught by the
        tests).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Config:
    ...     alpha: list[float] = option([0.05], "Levels.")
    ...     metrics: Any = option(None, "Metrics.", tables="data")
    ...     plot: bool = option(True, "Draw the figure.", tables=False)
    >>> @dataclass
    ... class Study:                 # a study holds its normalised Config
    ...     config: Config
    ...     seed: int = 3
    >>> fingerprint(Study(Config(alpha=[0.01])), Config)
    {'alpha': [0.01], 'seed': 3}
    """
    source = study if isinstance(study, config) else getattr(study, "config", None)
    if not isinstance(source, config):
        raise TypeError(f"fingerprint: {type(study).__name__} holds no "
                        f"{config.__qualname__} (study.config)")
    params = {p.name: p for p in parameters(config)}
    out: dict[str, Any] = {}
    fields = {f.name: f for f in dataclasses.fields(config)}
    for name, p in params.items():
        if name == "name" or p.tables is not True:
            continue
        gate = fields[name].metadata.get("only_with")
        if gate is not None and not getattr(source, gate):
            continue  # it cannot change the tables (its fingerprint as before it existed)
        out[name] = getattr(source, name)
    out.update(derived or {})
    if hasattr(study, "seed"):
        out["seed"] = study.seed
    return out
