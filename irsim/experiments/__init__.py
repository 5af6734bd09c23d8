"""Studies: one module per experiment, each a plan, a kernel and a reduction over the kit.

The contract of an experiment module ``irsim.experiments.<name>``:

- ``DESCRIPTION``: one line for ``irsim list``.
- ``DATA``: what the study reads: ``"matrix"`` (a :class:`~irsim.data.ScoreMatrix` of
  per-topic scores) or ``"docs"`` (runs and qrels, :class:`~irsim.data.DocCollection`).
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

The report of a study lives in ``irsim.report.<name>`` (``sections(tables, run_dir)``);
no study imports another study: shared pieces live in the kit (:mod:`irsim.kit`),
:mod:`irsim.sampling`, :mod:`irsim.stats` and :mod:`irsim.metrics`.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from types import ModuleType
from typing import Any

from irsim.errors import unknown_name
from irsim.kit.common import Shards

__all__ = ["KNOWN", "Shards", "experiment_names", "experiment_module", "build_study",
           "make_study", "load"]

#: Experiment modules, in the order ``irsim list`` shows them.
KNOWN = ("discpower", "swap", "error_rates", "effort", "coverage", "corpus_ci", "test_errors",
         "topic_set_size", "reliability", "multiple_testing")


def experiment_names() -> list[str]:
    """Names of the experiments installed (modules present in this package)."""
    return [n for n in KNOWN if importlib.util.find_spec(f"{__name__}.{n}") is not None]


def experiment_module(name: str) -> ModuleType:
    """The module of experiment `name` (unknown names suggest the closest valid ones)."""
    names = experiment_names()
    if name not in names:
        raise unknown_name("experiment", str(name), names)
    return importlib.import_module(f"{__name__}.{name}")


def make_study(name: str, config: Any, data: Any, *, seed: int, shards: Shards,
               engine: Any = None) -> tuple[Any, Any]:
    """The study `name` with parameters `config` (its ``Config``) on `data`. `engine` (an
    :class:`irsim.engine.session.Engine`) reaches the modules whose ``make`` takes an
    ``engine`` keyword: their data preparation runs its work there (test_errors' copula
    fitting); None: in process."""
    from irsim.kit.loading import CollectionList

    module = experiment_module(name)
    if isinstance(data, CollectionList):
        return _per_collection(module, config, data, seed=seed, shards=shards, engine=engine)
    if engine is not None and "engine" in inspect.signature(module.make).parameters:
        return module.make(config, data, seed=int(seed), shards=shards, engine=engine)
    return module.make(config, data, seed=int(seed), shards=shards)


def _per_collection(module: ModuleType, config: Any, data: Any, *, seed: int, shards: Shards,
                    engine: Any) -> tuple[Any, Any]:
    """The study of every collection of a :class:`~irsim.kit.loading.CollectionList`, each
    made by the module's own ``make`` with the run's seed, as one
    :class:`~irsim.engine.composite.PerCollection` study. A problem of one collection's data
    names the collection."""
    import copy

    from irsim.engine.composite import PartData, PerCollection
    from irsim.errors import ConfigError, InputError

    if module.DATA != "matrix":
        raise ConfigError(f"experiment={module.__name__.rsplit('.', 1)[-1]} reads runs and "
                          "qrels, not several score matrices")
    studies, parts = [], []
    takes_engine = engine is not None and "engine" in inspect.signature(module.make).parameters
    for cname, matrix in data.parts:
        kw = {"engine": engine} if takes_engine else {}
        try:  # make may adjust its config: each collection gets its own copy
            study, made = module.make(copy.deepcopy(config), matrix, seed=int(seed),
                                      shards=shards, **kw)
        except ConfigError as err:
            raise ConfigError(f"collection {cname!r}: {err.problem}") from None
        except InputError as err:
            raise InputError(f"collection {cname!r}: {err.problem}", file=err.file,
                             line=err.line) from None
        studies.append(study)
        parts.append(made)
    return PerCollection(data.names, studies), PartData(data.names, parts)


def load(cfg: Any) -> tuple[str, Any, Any, Shards]:
    """From a composed Hydra config (the command line's path): the experiment's name, its
    ``Config``, the data it reads and the requested shard sizes."""
    from omegaconf import OmegaConf

    from irsim.kit.loading import doc_collection, engine_shards, score_matrix

    name = cfg.experiment.name
    module = experiment_module(name)
    check_keys(module, cfg.experiment.keys())
    config = OmegaConf.to_object(cfg.experiment)
    if cfg.get("metrics") is not None and hasattr(config, "metrics"):
        config.metrics = None  # the top-level `metrics` chose the data: it wins
    data = doc_collection(cfg) if module.DATA == "docs" else score_matrix(cfg)
    return name, config, data, engine_shards(cfg)


def check_keys(module: ModuleType, keys: Any) -> None:
    """Every key names a field of the experiment's ``Config`` (``+experiment.BB=1`` would
    otherwise be accepted and do nothing)."""
    from dataclasses import fields

    valid = [f.name for f in fields(module.Config)]
    for key in keys:
        if key not in valid:
            raise unknown_name(f"parameter of experiment={module.Config().name}",
                               f"experiment.{key}", [f"experiment.{v}" for v in valid])


def build_study(cfg: Any) -> tuple[Any, Any]:
    """The study named by ``cfg.experiment.name`` and the data its kernel reads, from a
    composed Hydra config."""
    name, config, data, shards = load(cfg)
    return make_study(name, config, data, seed=cfg.seed, shards=shards)
