"""Studies: one package per experiment, each a plan, a kernel and a reduction over the kit.

A study package (``irsim/experiments/<name>/``) declares itself once, with
:func:`irsim.registry.study` on its ``make`` (name, ``Config``, data kind, one-line
description, listing order, and optionally whether it pools several collections, its report
module and tables it declares itself). That registration is the only list of studies:
Hydra's ConfigStore, ``irsim.<name>``, ``irsim list`` / ``show``, the report dispatcher and
the docs all read it.

- ``Config``: a dataclass of the experiment's parameters, the single source of their
  defaults and types. It is the ``experiment`` node of the Hydra config (registered by
  :func:`irsim.conf.register`) and the keyword-only parameters of the Python function
  (``irsim.<name>(data, **params)``).
- ``make(config, data, *, seed, shards) -> (study, data)``: checks the parameters against
  the data (messages name parameters with :func:`irsim.errors.param`, so the command line
  reads ``experiment.B`` and Python ``B``) and returns the study object and the data its
  kernel reads. It may take an optional ``engine`` keyword (an
  :class:`irsim.engine.session.Engine`) to run its own preparation work on the run's engine.
- The study object: ``name``, ``plan(data) -> [Shard]``, ``kernel(shard, data) -> {field:
  value}``, ``fields(data) -> {field: Kind}`` (typed partials of
  :mod:`irsim.engine.partials`), ``finalize(merged, data) -> {table: pyarrow.Table}``
  (tables declared in :mod:`irsim.tables`) and ``fingerprint()``.

The report of a study lives in its package, ``irsim.experiments.<name>.report``
(``sections(tables, run_dir)`` and ``FIGURES``; it may use the helpers of
:mod:`irsim.report`, which imports no study); no study imports another study: shared pieces
live in the kit (:mod:`irsim.kit`), :mod:`irsim.sampling`, :mod:`irsim.stats` and
:mod:`irsim.metrics`.
"""

from __future__ import annotations

import inspect
from typing import Any

from irsim.kit.common import Shards
from irsim.registry import Study, get, names, studies

__all__ = ["Shards", "Study", "get", "names", "studies", "build_study", "make_study", "load"]


def make_study(name: str, config: Any, data: Any, *, seed: int, shards: Shards,
               engine: Any = None) -> tuple[Any, Any]:
    """The study `name` with parameters `config` (its ``Config``) on `data`. `engine` (an
    :class:`irsim.engine.session.Engine`) reaches the modules whose ``make`` takes an
    ``engine`` keyword: their data preparation runs its work there (test_errors' copula
    fitting); None: in process."""
    from irsim.data.sets import CollectionList

    entry = get(name)
    if isinstance(data, CollectionList):
        return _per_collection(entry, config, data, seed=seed, shards=shards, engine=engine)
    if engine is not None and "engine" in inspect.signature(entry.make).parameters:
        return entry.make(config, data, seed=int(seed), shards=shards, engine=engine)
    return entry.make(config, data, seed=int(seed), shards=shards)


def _per_collection(entry: Study, config: Any, data: Any, *, seed: int, shards: Shards,
                    engine: Any) -> tuple[Any, Any]:
    """The study of every collection of a :class:`~irsim.data.sets.CollectionList`, each
    made by the study's own ``make`` with the run's seed, as one
    :class:`~irsim.engine.composite.PerCollection` study. A problem of one collection's data
    names the collection."""
    import copy

    from irsim.engine.composite import PartData, PerCollection
    from irsim.errors import ConfigError, InputError

    if entry.data != "matrix":
        raise ConfigError(f"experiment={entry.name} reads runs and qrels, not several score "
                          "matrices")
    made_studies, parts = [], []
    takes_engine = engine is not None and "engine" in inspect.signature(entry.make).parameters
    for cname, matrix in data.parts:
        kw = {"engine": engine} if takes_engine else {}
        try:  # make may adjust its config: each collection gets its own copy
            study, made = entry.make(copy.deepcopy(config), matrix, seed=int(seed),
                                      shards=shards, **kw)
        except ConfigError as err:
            raise ConfigError(f"collection {cname!r}: {err.problem}") from None
        except InputError as err:
            raise InputError(f"collection {cname!r}: {err.problem}", file=err.file,
                             line=err.line) from None
        made_studies.append(study)
        parts.append(made)
    return PerCollection(data.names, made_studies), PartData(data.names, parts)


def load(cfg: Any) -> tuple[str, Any, Any, Shards]:
    """From a composed Hydra config (the command line's path): the experiment's name, its
    ``Config``, the data it reads (its data kind's ``from_config``,
    :class:`irsim.registry.DataKind`) and the requested shard sizes."""
    from omegaconf import OmegaConf

    from irsim.conf import check_keys
    from irsim.kit.loading import engine_shards

    name = cfg.experiment.name
    entry = get(name)
    check_keys(cfg)  # every node's keys, the experiment's parameters included
    config = OmegaConf.to_object(cfg.experiment)
    top = cfg.get("metrics")
    if top is not None and hasattr(config, "metrics"):
        # the top-level `metrics` wins: it chose a score matrix's metrics (the study then
        # keeps them all), or it names the measures a study of runs and qrels computes
        config.metrics = None if entry.kind.name == "matrix" else (
            [top] if isinstance(top, str) else [str(m) for m in top])
    return name, config, entry.kind.from_config(cfg, config), engine_shards(cfg)


def build_study(cfg: Any) -> tuple[Any, Any]:
    """The study named by ``cfg.experiment.name`` and the data its kernel reads, from a
    composed Hydra config."""
    name, config, data, shards = load(cfg)
    return make_study(name, config, data, seed=cfg.seed, shards=shards)
