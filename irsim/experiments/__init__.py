"""Studies: one module per experiment (plan -> shards -> kernel -> reduce -> tables).

:data:`EXPERIMENTS` maps a config name to ``(builder, description)``; a builder takes the
Hydra config and the loaded data and returns ``(study, data)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from irsim.errors import unknown_name

__all__ = ["EXPERIMENTS", "build_study"]


def _discpower(cfg: Any, matrix: Any) -> tuple[Any, Any]:
    from irsim.experiments.discpower import discpower_from_config

    return discpower_from_config(cfg, matrix.metrics), matrix


EXPERIMENTS: dict[str, tuple[Callable[[Any, Any], tuple[Any, Any]], str]] = {
    "discpower": (
        _discpower,
        "discriminative power by paired/unpaired bootstrap tests, ASL curves, estimated "
        "difference required (Sakai 2006)",
    ),
}


def build_study(cfg: Any, data: Any) -> tuple[Any, Any]:
    """The study named by ``cfg.experiment.name`` and the data its kernel reads."""
    name = cfg.experiment.name
    if name not in EXPERIMENTS:
        raise unknown_name("experiment", name, EXPERIMENTS)
    return EXPERIMENTS[name][0](cfg, data)
