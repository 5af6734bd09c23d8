"""Studies: one module per experiment (plan -> shards -> kernel -> reduce -> tables).

Each experiment module ``irsim.experiments.<name>`` defines

- ``DESCRIPTION``: one line for ``irsim list``;
- ``build(cfg) -> (study, data)``: the study object and the data its kernel reads, loaded
  with :func:`irsim.experiments.loading.score_matrix` or
  :func:`irsim.experiments.loading.doc_collection`;
- ``report_sections(tables, run_dir) -> list[str]``: Markdown lines (and PNG files written
  into `run_dir`) for ``report.md``.

:func:`experiment_names` lists the modules present; nothing else needs registering.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

from irsim.errors import unknown_name

__all__ = ["KNOWN", "experiment_names", "experiment_module", "build_study"]

#: Experiment modules, in the order ``irsim list`` shows them.
KNOWN = ("discpower", "swap", "error_rates", "effort", "coverage", "corpus_ci", "test_errors")


def experiment_names() -> list[str]:
    """Names of the experiments installed (modules present in this package)."""
    return [n for n in KNOWN if importlib.util.find_spec(f"{__name__}.{n}") is not None]


def experiment_module(name: str) -> ModuleType:
    """The module of experiment `name` (unknown names suggest the closest valid ones)."""
    names = experiment_names()
    if name not in names:
        raise unknown_name("experiment", str(name), names)
    return importlib.import_module(f"{__name__}.{name}")


def build_study(cfg: Any) -> tuple[Any, Any]:
    """The study named by ``cfg.experiment.name`` and the data its kernel reads."""
    return experiment_module(cfg.experiment.name).build(cfg)
