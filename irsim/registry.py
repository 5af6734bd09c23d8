"""The one registration of a study: :func:`study` declares it, everything else asks here.

A study module declares itself once, with the :func:`study` decorator on its ``make``::

    @study("discpower", config=Config, data="matrix", order=10,
           description="discriminative power ...")
    def make(config, data, *, seed, shards): ...

That registration feeds every place that needs the list of studies: Hydra's ConfigStore
(``experiment=<name>``, :func:`irsim.conf.register`), the Python door (``irsim.<name>``),
``irsim list`` / ``irsim show``, the table registry (tables a study declares with
``tables=``), the report dispatcher (``report=``, default: the study package's ``report``
submodule, or a one-file study's own module), the documentation site's generated blocks and
navigation (``title=``) and the test suite's smoke runs: golden cases, figure and
per-collection checks (``example=``, :class:`Example`). No other list of studies exists.

Where studies come from (:func:`studies`): installed distributions declare them with entry
points, irsim's own included, so the registry names no package of studies itself:

- a *package of studies*, entry-point group ``irsim.study_packages``: each public module or
  package inside it is one study (found with :mod:`pkgutil` without importing it; each is
  imported on first use, so ``import irsim`` stays quick). irsim's ``pyproject.toml``
  declares its own: ``[project.entry-points."irsim.study_packages"] irsim =
  "irsim.experiments"``, one package per study holding its ``Config``, registration,
  kernel, tables and report;
- a *study module*, entry-point group ``irsim.studies``: a module that registers one or more
  studies when imported (a study shipped in its own distribution: ``[project.entry-points.
  "irsim.studies"] toy = "toy_study"`` in its ``pyproject.toml``; see the guide "Adding a
  study");
- any module that registers at import (a notebook, a test).

The registry imports none of its readers: they subscribe with :func:`on_register` (the table
registry, :mod:`irsim.tables`, and Hydra's ConfigStore, :func:`irsim.conf.register`).

Examples
--------
>>> names()[:3]
['discpower', 'compare', 'swap']
>>> get("swap").data, get("swap").config.__name__
('matrix', 'Config')
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from irsim.errors import unknown_name
from irsim.params import document

__all__ = ["Study", "Headline", "Example", "DataKind", "DATA_KINDS", "ENTRY_POINTS", "study",
           "data_kind", "get", "names", "studies", "headlines", "kinds", "on_register",
           "PACKAGE_ENTRY_POINTS", "BUILTIN_KINDS"]

#: The data kinds irsim declares itself: ``"matrix"`` (per-topic scores,
#: :class:`~irsim.data.ScoreMatrix`; with several collections, one study per collection
#: unless ``pools`` says the study pools them) or ``"docs"`` (runs and qrels,
#: :class:`~irsim.data.collection.DocCollection`), declared with :func:`data_kind` in
#: :data:`BUILTIN_KINDS` as any other kind.
DATA_KINDS = ("matrix", "docs")
#: The module declaring the kinds of :data:`DATA_KINDS` (imported when one is first asked for).
BUILTIN_KINDS = "irsim.kit.loading"

#: The entry-point group of study modules (each registers its studies when imported).
ENTRY_POINTS = "irsim.studies"
#: The entry-point group of packages of studies (each public submodule is one study; irsim
#: declares its own, ``irsim.experiments``, this way).
PACKAGE_ENTRY_POINTS = "irsim.study_packages"

_REGISTRY: dict[str, Study] = {}
_SCANNED = False
_LISTENERS: list[Callable[[Study], Any]] = []


@dataclass(frozen=True)
class DataKind:
    """What a study reads, and how each door gets it.

    Attributes
    ----------
    name : str
        The kind's name (``Study.data``).
    description : str
        One line.
    from_config : callable
        ``from_config(cfg, config) -> data``: the command line's data, from the composed
        Hydra config (``cfg.collection``, ``cfg.data_dir`` ...) and the study's ``Config``.
    from_python : callable
        ``from_python(data, keywords, config) -> data``: the Python door's data, from the
        positional argument and the kind's `keywords` as the caller gave them.
    keywords : dict
        Keyword parameters the kind adds to ``irsim.<study>`` (name -> default).
    """

    name: str
    description: str
    from_config: Callable[[Any, Any], Any]
    from_python: Callable[[Any, Mapping[str, Any], Any], Any]
    keywords: Mapping[str, Any] = field(default_factory=dict)


_KINDS: dict[str, DataKind] = {}


def _kind(name: str) -> DataKind:
    """The kind `name`, importing :data:`BUILTIN_KINDS` for a built-in one."""
    if name not in _KINDS and name in DATA_KINDS:
        importlib.import_module(BUILTIN_KINDS)
    return _KINDS[name]


def data_kind(name: str, *, description: str, from_config: Callable[[Any, Any], Any],
              from_python: Callable[[Any, Mapping[str, Any], Any], Any],
              keywords: Mapping[str, Any] | None = None) -> DataKind:
    """Declare a data kind (what a study reads) with its two loaders: pass the result as
    ``data=`` of :func:`study`. Shared code is not touched: the command line calls
    `from_config`, the Python door `from_python` (see :class:`DataKind`).

    Raises
    ------
    ValueError
        A built-in kind's name (:data:`DATA_KINDS`) outside :data:`BUILTIN_KINDS`, or a name
        another module declared differently.

    Examples
    --------
    >>> kind = data_kind("two_matrices", description="a pair of score matrices",
    ...                  from_config=lambda cfg, config: None,
    ...                  from_python=lambda data, kw, config: data)
    >>> kind.name, kinds()["two_matrices"] is kind
    ('two_matrices', True)
    """
    if name in DATA_KINDS and getattr(from_python, "__module__", None) != BUILTIN_KINDS:
        raise ValueError(f"data kind {name!r} is built in")
    kind = DataKind(name, " ".join(description.split()), from_config, from_python,
                    dict(keywords or {}))
    old = _KINDS.get(name)
    if old is not None and (old.from_config, old.from_python) != (from_config, from_python):
        if getattr(from_config, "__module__", None) != getattr(old.from_config, "__module__",
                                                               None):
            raise ValueError(f"data kind {name!r} is declared already")
    _KINDS[name] = kind
    return kind


def kinds() -> dict[str, DataKind]:
    """Every data kind declared so far (the built-in ones always), by name."""
    for name in DATA_KINDS:
        _kind(name)
    return dict(_KINDS)


@dataclass(frozen=True)
class Headline:
    """A summary table of a study: what a sweep report and a per-collection report compare
    (`keys`, `value`) and what the console prints at the end of a run
    (:func:`irsim.report.headline_text`, which also reads the other fields). A registration's
    ``headlines={table: (keys, value)}`` is the plain form of ``Headline(keys, value)``; it
    unpacks as ``keys, value``.

    Attributes
    ----------
    keys : tuple of str
        The key columns of a row.
    value : str
        The headline column.
    also : tuple of str
        More columns of the same rows printed beside `value` on the console (compare's
        difference, interval and effect size): a numeric one equal to `value` in every row
        is left out, a string one is shown only beside a numeric one (stated once above the
        table when it has one value over the rows shown).
    where : mapping of str to value
        The rows the console shows, by column: a number keeps the rows at the value of that
        column nearest to it (``{"alpha": 0.05}``), ``"middle"`` those at the middle of the
        column's distinct non-zero values (``{"delta": "middle"}``), ``"first"`` those at
        the value of the table's first row, anything else the rows equal to it.
    summary : str or None
        A key the console summarises away: the minimum (with the key's value where it is
        reached), median and maximum of `value` over it, per combination of the other keys.
    samples : str or None
        A column holding the Monte Carlo samples B of each row (null for closed-form tests):
        a p-value `value` of 0 there prints as ``<1/B``, never as 0.
    table : str or None
        The table read (default: the name the headline is registered under, so that one
        table can give the console two headlines; a sweep report compares only the headline
        registered under the table's own name).
    rows : int
        The most rows the console prints (then it names the Parquet file holding all).
    label : str or None
        What the rows shown are, printed after the table's name (``"Type I error"``).
    """

    keys: tuple[str, ...]
    value: str
    also: tuple[str, ...] = ()
    where: Mapping[str, Any] = field(default_factory=dict)
    summary: str | None = None
    samples: str | None = None
    table: str | None = None
    rows: int = 20
    label: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(self.keys))
        object.__setattr__(self, "also", tuple(self.also))
        object.__setattr__(self, "where", dict(self.where))

    def __iter__(self):  # noqa: ANN204 - ``keys, value = headline``
        return iter((self.keys, self.value))


def _headline(spec: Any) -> Headline:
    """A registration's headline: a :class:`Headline` as it is, ``(keys, value)`` as one."""
    if isinstance(spec, Headline):
        return spec
    keys, value = spec
    return Headline(tuple(keys), value)


@dataclass(frozen=True)
class Example:
    """A study's smoke-test settings (small sizes: seconds per run), declared in its
    registration (``@study(..., example=Example(...))``). The tests run every registered
    study through them, so a new study needs no line in any test: the golden tables
    (``tests/golden/cases.py``), the figure checks (``tests/test_figures.py``), the
    per-collection check of a matrix study that does not pool (``tests/test_per_collection.py``).

    Attributes
    ----------
    overrides : dict of str to tuple of str
        Command-line runs: case name -> overrides after ``experiment=<study>`` (on the
        default collection unless they say otherwise). Each is the golden case
        ``<study>_<case>`` (``tests/golden/<study>_<case>/*.parquet``, recorded by
        ``tests/golden/record.py``); the first one is also the per-collection run of a
        matrix study (its ``collection=`` overrides left out).
    keywords : dict
        The Python door's keywords (``irsim.<study>(data, **keywords)``) on small synthetic
        data of the study's kind, whose report the figure checks inspect: a score matrix of
        8 systems x 30 topics (metrics AP, P@10, nDCG@10) for ``matrix``; 8 runs of 12
        topics for ``docs`` (``runs=``, ``qrels=``); the same runs with the qrels
        ``{"ref": ..., "other": ...}`` (a second assessor) for ``runs_qrels_set``.
    figures : tuple of str
        Figure names (glob patterns) the report of that Python run must draw.

    Examples
    --------
    >>> get("swap").example.overrides
    {'synthetic': ('experiment.trials=100',)}
    """

    overrides: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    keywords: Mapping[str, Any] = field(default_factory=dict)
    figures: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "overrides",
                           {str(k): tuple(v) for k, v in self.overrides.items()})
        object.__setattr__(self, "keywords", dict(self.keywords))
        object.__setattr__(self, "figures", tuple(self.figures))


@dataclass(frozen=True)
class Study:
    """A registered study: what the registration declared.

    Attributes
    ----------
    name : str
        The experiment's name (``experiment=<name>``, ``irsim.<name>``).
    description : str
        One line for ``irsim list``, the docs and the Python function's docstring.
    question : str
        The question the study answers, as the table of studies of the docs and README
        states it (default: the description).
    config : type
        The study's ``Config`` dataclass (Hydra structured config and keyword parameters).
    make : callable
        ``make(config, data, *, seed, shards[, engine]) -> (study object, kernel data)``.
    data : str
        What the study reads: a data kind's name (:data:`DATA_KINDS` or one declared with
        :func:`data_kind`; :attr:`kind`).
    module : str
        The module that registered it.
    order : int
        Position in ``irsim list`` and the docs (then by name).
    pools : callable or None
        ``pools(config) -> bool``: whether, given several collections, the study reads them
        pooled as one :class:`~irsim.data.sets.CollectionSet` (True) or runs once per
        collection (False, the default).
    report : str or None
        The module whose ``sections(tables, run_dir)`` writes the study's report section and
        whose ``FIGURES`` names its figures, as the registration named it; None for the
        default (:meth:`report_name`).
    tables : tuple of irsim.tables.TableSpec or irsim.tables.Claim
        Tables the study declares beside those of :mod:`irsim.tables` (registered there), and
        its claims on tables several studies write (:func:`irsim.tables.claim`).
    headlines : dict of str to Headline
        Its summary tables as the sweep report and the per-collection report compare them
        and the console prints them: table -> :class:`Headline` (key columns, headline
        column, ...).
    command : str or None
        The ``Config`` field (a list) that the subcommand ``irsim <name> A B ... [key=value
        ...]`` fills with its positional arguments (``compare``: the systems); None: the
        study has no subcommand.
    title : str
        Its short title: the entry of the documentation site's navigation (page
        ``docs/studies/<name>.md``); default: the name, capitalised, with spaces.
    example : Example
        Its smoke-test settings (:class:`Example`).
    """

    name: str
    description: str
    config: type
    make: Callable[..., Any]
    data: str
    module: str
    order: int = 1000
    pools: Callable[[Any], bool] | None = None
    report: str | None = None
    tables: tuple[Any, ...] = field(default=())
    headlines: Mapping[str, Headline] = field(default_factory=dict)
    question: str = ""
    command: str | None = None
    title: str = ""
    example: Example = field(default_factory=Example)

    @property
    def kind(self) -> DataKind:
        """The data kind the study reads."""
        return _kind(self.data)

    def pooled(self, config: Any) -> bool:
        """Whether this study with `config` reads several collections pooled."""
        return bool(self.pools(config)) if self.pools is not None else False

    def report_name(self) -> str:
        """The name of the study's report module: ``report=`` of the registration, else the
        ``report`` submodule of the study's package: the package that registered it
        (``irsim.experiments.swap`` -> ``irsim.experiments.swap.report``) or, registered by
        a module of a package, that package's; a study that is a single module holding
        ``sections`` beside ``make`` is its own report.

        Examples
        --------
        >>> get("swap").report_name()
        'irsim.experiments.swap.report'
        """
        if self.report:
            return self.report
        module = importlib.import_module(self.module)
        if hasattr(module, "__path__"):  # a package's __init__
            return f"{self.module}.report"
        package = self.module.rpartition(".")[0]
        if hasattr(module, "sections") or not package:
            return self.module
        return f"{package}.report"

    def report_module(self) -> ModuleType | None:
        """The report module (``sections``, ``FIGURES``; :meth:`report_name`), or None when
        there is none."""
        name = self.report_name()
        try:
            if importlib.util.find_spec(name) is None:
                return None
        except ModuleNotFoundError:
            return None
        module = importlib.import_module(name)
        return module if hasattr(module, "sections") else None


def study(name: str, *, config: type, data: str | DataKind, description: str,
          order: int = 1000,
          pools: Callable[[Any], bool] | None = None, report: str | None = None,
          tables: Sequence[Any] = (),
          headlines: Mapping[str, tuple[Sequence[str], str] | Headline] | None = None,
          question: str | None = None, command: str | None = None,
          title: str | None = None, example: Example | Mapping[str, Any] | None = None
          ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the study `name`: a decorator for its ``make`` function.

    Parameters
    ----------
    name : str
        The experiment's name: a Python identifier, not the name of another study.
    config : type
        Its ``Config`` dataclass: every field declared with :func:`irsim.params.option`
        (default and help text; the registration writes the docstring's ``Parameters``
        section from them, :func:`irsim.params.document`); a field ``name`` (if present)
        defaults to `name`.
    data : str or DataKind
        What it reads: ``"matrix"``, ``"docs"`` or a kind from :func:`data_kind`.
    description : str
        One line.
    order : int
        Position in listings (built-in studies use 10, 20, ...; others default to 1000).
    pools : callable, optional
        ``pools(config) -> bool`` (see :class:`Study`).
    report : str, optional
        Its report module (default: the ``report`` submodule of the study's package, or the
        study's own module when it is a single file; :meth:`Study.report_name`).
    tables : sequence of irsim.tables.TableSpec
        Tables it writes that :mod:`irsim.tables` does not declare yet.
    headlines : dict, optional
        ``{table: (key columns, headline column)}`` or ``{name: Headline(...)}``: the summary
        tables a sweep report shows side by side for every job (:func:`headlines`) and the
        console prints at the end of a run (:class:`Headline`).
    question : str, optional
        The question it answers, for the table of studies (default: `description`).
    command : str, optional
        A field of `config`: the study is also the subcommand ``irsim <name> A B ...
        [key=value ...]``, its positional arguments that field's list (see :class:`Study`).
    title : str, optional
        Its short title, the entry of the documentation's navigation (default: the name
        with spaces, capitalised).
    example : Example or dict, optional
        Its smoke-test settings (:class:`Example`, or a dict of its fields): small
        command-line runs (golden cases), the Python door's keywords for the figure checks
        and the figures they must draw.

    Returns
    -------
    callable
        The decorator; it returns ``make`` unchanged.

    Raises
    ------
    ValueError
        A name that is not an identifier, registered twice by different modules, an unknown
        data kind or a ``config`` that is not a dataclass (programming errors).
    """
    import dataclasses

    if not name.isidentifier():
        raise ValueError(f"study name {name!r} is not a Python identifier")
    if isinstance(data, DataKind):
        data = data.name
    if data not in _KINDS and data not in DATA_KINDS:
        raise ValueError(f"study {name!r}: data={data!r} is not one of "
                         f"{tuple(dict.fromkeys((*DATA_KINDS, *_KINDS)))}")
    if not dataclasses.is_dataclass(config):
        raise ValueError(f"study {name!r}: config must be a dataclass")
    if command is not None and command not in {f.name for f in dataclasses.fields(config)}:
        raise ValueError(f"study {name!r}: command={command!r} is not a field of its config")
    document(config)  # its docstring's Parameters section, from the fields' help
    if example is not None and not isinstance(example, Example):
        example = Example(**example)

    def register(make: Callable[..., Any]) -> Callable[..., Any]:
        entry = Study(name=name, description=" ".join(description.split()), config=config,
                      make=make, data=data, module=make.__module__, order=order,
                      pools=pools, report=report, tables=tuple(tables),
                      headlines={t: _headline(h) for t, h in (headlines or {}).items()},
                      question=" ".join((question or description).split()),
                      command=command,
                      title=title or name.replace("_", " ").capitalize(),
                      example=example or Example())
        old = _REGISTRY.get(name)
        if old is not None and old.module != entry.module:
            raise ValueError(f"study {name!r} is registered by {old.module} already")
        for listener in _LISTENERS:  # the table registry, Hydra's ConfigStore ...
            listener(entry)  # may refuse it (a table clash): then it is not registered
        _REGISTRY[name] = entry
        return make

    return register


def on_register(listener: Callable[[Study], Any]) -> None:
    """Call `listener(study)` for every study registered so far and every study registered
    from now on (the table registry adds a study's tables this way, and
    :func:`irsim.conf.register` stores its ``Config`` in Hydra's ConfigStore); the registry
    itself imports none of its readers. A listener that raises refuses the registration."""
    if listener not in _LISTENERS:
        _LISTENERS.append(listener)
        for entry in list(_REGISTRY.values()):
            listener(entry)


def _entry_points(group: str) -> list[str]:
    from importlib.metadata import entry_points

    return [ep.value.split(":")[0].strip() for ep in entry_points(group=group)]


def _package_modules() -> list[str]:
    """The study modules of every package of studies (:data:`PACKAGE_ENTRY_POINTS`), without
    importing them."""
    out = []
    for package in _entry_points(PACKAGE_ENTRY_POINTS):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(f"entry point {package!r} of {PACKAGE_ENTRY_POINTS!r} is not "
                             "an importable package")
        out += [f"{package}.{m.name}" for m in
                pkgutil.iter_modules(spec.submodule_search_locations)
                if not m.name.startswith("_")]
    return out


def studies() -> list[Study]:
    """Every study: those of the installed packages of studies and study modules (entry
    points; irsim's own included) and any registered at import; in listing order."""
    global _SCANNED
    if not _SCANNED:
        for module in (*_package_modules(), *_entry_points(ENTRY_POINTS)):
            importlib.import_module(module)
        _SCANNED = True
    return sorted(_REGISTRY.values(), key=lambda s: (s.order, s.name))


def headlines() -> dict[str, tuple[tuple[str, ...], str]]:
    """Every study's summary tables, in listing order: table -> (key columns, headline
    column) (what ``irsim report <sweep dir>`` and a per-collection report compare; a
    console-only headline, registered under another name than its table's, is left out)."""
    return {t: (h.keys, h.value) for s in studies() for t, h in s.headlines.items()
            if h.table in (None, t)}


def names() -> list[str]:
    """The names of every study, in listing order."""
    return [s.name for s in studies()]


def get(name: str) -> Study:
    """The study registered as `name` (importing only its module when it is built in).

    Raises
    ------
    irsim.errors.ConfigError
        An unknown name (suggesting the closest valid ones).
    """
    name = str(name)
    if name not in _REGISTRY and name.isidentifier():
        for module in _package_modules():  # import only this study's module
            if module.rpartition(".")[2] == name:
                importlib.import_module(module)
                break
    if name not in _REGISTRY:
        studies()
    if name not in _REGISTRY:
        if not _REGISTRY:
            from irsim.errors import ConfigError

            raise ConfigError(f"unknown experiment {name!r}: no study is installed (irsim's "
                              f"entry points {PACKAGE_ENTRY_POINTS!r} are missing: install "
                              "irsim with pip, e.g. `pip install -e .` in its checkout)")
        raise unknown_name("experiment", name, names())
    return _REGISTRY[name]
