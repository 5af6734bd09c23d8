"""Several collections read at once: pooled by a study (:class:`CollectionSet`) or studied
one by one (:class:`CollectionList`). Both doors give them: the command line's
``collection.paths={METRIC: [file, ...]}`` (:func:`irsim.kit.loading.score_matrix`) and
the Python door's ``{metric: [collection, ...]}`` (:mod:`irsim.data.convert`)."""

from __future__ import annotations

from dataclasses import dataclass

from irsim.data.matrix import ScoreMatrix

__all__ = ["CollectionSet", "CollectionList"]


@dataclass(frozen=True)
class CollectionSet:
    """Several collections per metric, pooled by a study: ``parts`` holds
    ``(collection name, one-metric ScoreMatrix)`` in the order given.

    Examples
    --------
    >>> import numpy as np
    >>> a = ScoreMatrix(np.zeros((1, 2, 3)), ["AP"], ["r1", "r2"], ["1", "2", "3"])
    >>> s = CollectionSet((("adhoc5", a), ("adhoc6", a)))
    >>> s.metrics, [n for n, _ in s.of("AP")]
    (('AP',), ['adhoc5', 'adhoc6'])
    """

    parts: tuple[tuple[str, ScoreMatrix], ...]

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metrics in order of first appearance."""
        return tuple(dict.fromkeys(m.metrics[0] for _, m in self.parts))

    def of(self, metric: str) -> list[tuple[str, ScoreMatrix]]:
        """The collections of `metric`."""
        return [(n, m) for n, m in self.parts if m.metrics[0] == metric]

    def describe(self) -> dict:
        """Summary for the manifest."""
        return {"metrics": list(self.metrics),
                "collections": {m: [n for n, _ in self.of(m)] for m in self.metrics}}


@dataclass(frozen=True)
class CollectionList:
    """Several collections, each studied on its own by a study that does not pool them
    (``collection.paths={METRIC: [file, ...]}``): ``parts`` holds ``(collection name,
    ScoreMatrix of its metrics)`` in order. The study runs once per collection
    (:class:`irsim.engine.composite.PerCollection`), its tables gain a first column
    ``collection``.

    Examples
    --------
    >>> import numpy as np
    >>> a = ScoreMatrix(np.zeros((1, 2, 3)), ["AP"], ["r1", "r2"], ["1", "2", "3"])
    >>> CollectionList((("adhoc5", a), ("adhoc6", a))).names
    ('adhoc5', 'adhoc6')
    """

    parts: tuple[tuple[str, ScoreMatrix], ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The collections, in order."""
        return tuple(n for n, _ in self.parts)
