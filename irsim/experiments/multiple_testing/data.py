"""What experiment=multiple_testing's kernel reads (:class:`CollectionData`): one fitted
collection model per metric, the shifts of every (m, m0) layout (:func:`prepare`) and the
generators of the layouts; its fit table (:func:`fit_table`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from irsim.errors import ConfigError, param
from irsim.simulate.joint_copula_model import (
    JointCollections,
    JointCopulaModel,
    collection_shifts,
    true_null_count,
)
from irsim.tables import table as build_table

__all__ = ["CollectionData", "prepare", "fit_table"]


@dataclass(frozen=True)
class CollectionData:
    """What the kernel reads: one fitted model per metric, the shifts of every (m, m0)
    layout and the generators of the layouts (:attr:`generators`).

    Attributes
    ----------
    models : tuple of JointCopulaModel
    shifts : tuple of dict
        Per metric, ``{(m, m0): ndarray (pool, m)}`` (:func:`collection_shifts`).
    null_means : tuple of float
        Per metric, the common true mean of the null systems the shifts reach.
    spread : float
        The other systems' true means are ``null_mean + spread k / m1``.
    """

    models: tuple[JointCopulaModel, ...]
    shifts: tuple[dict[tuple[int, int], np.ndarray], ...]
    null_means: tuple[float, ...]
    spread: float

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metric names, in model order."""
        return tuple(md.metric for md in self.models)

    @cached_property
    def generators(self) -> tuple[dict[tuple[int, int, bool], JointCollections], ...]:
        """Per metric, the generator of every layout ``(m, m0, shared)``
        (:class:`~irsim.simulate.joint_copula_model.JointCollections`; ``shared``: the null
        systems share one margin, ``null_margins=shared``), built once per data object: what
        :class:`MultipleTesting` draws its collections through (the layouts of a metric
        share their draws and latent sample).

        Examples
        --------
        >>> model = JointCopulaModel.normal([0.3, 0.35, 0.4], [0.05] * 3, 0.5)
        >>> gen = prepare([model], systems=(3,), shares=(0.5,), spread=0.05).generators[0]
        >>> sorted(gen), gen[(3, 2, False)].true_means.round(6).tolist()
        ([(3, 2, False), (3, 2, True)], [0.325, 0.325, 0.375])
        """
        return tuple({(m, m0, shared): JointCollections(md, m, m0, shift, mu0, self.spread,
                                                        shared)
                      for (m, m0), shift in table.items() for shared in (False, True)}
                     for md, table, mu0 in zip(self.models, self.shifts, self.null_means,
                                               strict=True))

    def describe(self) -> dict:
        """Summary for the manifest and the report header."""
        return {"metrics": list(self.metrics),
                "systems": int(self.models[0].pool) if self.models else 0,
                "topics": "simulated",
                "source": "generator fitted to the collection (see multiple_testing_fit)"}


def fit_table(data: CollectionData) -> pa.Table:
    """One row per metric: how the generator was fit (pool, copula, shrinkage)."""
    return build_table("multiple_testing_fit", [md.describe() for md in data.models])


def prepare(models: list[JointCopulaModel] | tuple[JointCopulaModel, ...], *,
            systems: tuple[int, ...], shares: tuple[float, ...], spread: float
            ) -> CollectionData:
    """The shifts of every (m, m0) layout for each model (its own null mean, or the pool's
    median mean when the model has none, minus spread / 2).

    Examples
    --------
    >>> model = JointCopulaModel.normal([0.3, 0.35, 0.4], [0.05] * 3, 0.5)
    >>> data = prepare([model], systems=(3,), shares=(1.0, 0.5), spread=0.05)
    >>> sorted(data.shifts[0])
    [(3, 2), (3, 3)]
    """
    shifts, means = [], []
    for md in models:
        if max(systems) > md.pool:
            raise ConfigError(f"{param('systems')}: collections of {max(systems)} systems, "
                              f"but metric {md.metric} has {md.pool} systems to draw from")
        mu0 = md.null_mean
        if not math.isfinite(mu0):
            mu0 = float(np.median(md.margins.mean())) - 0.5 * spread
        table = {}
        for m in systems:
            for h in shares:
                m0 = true_null_count(m, h)
                if (m, m0) not in table:
                    table[(m, m0)] = collection_shifts(md, m, m0, mu0, spread)
        shifts.append(table)
        means.append(float(mu0))
    return CollectionData(tuple(models), tuple(shifts), tuple(means), float(spread))
