"""Pieces shared by the studies: system pairs, deterministic top-k, validation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from irsim.errors import ConfigError

__all__ = [
    "as_tuple",
    "select_metrics",
    "resolve_metrics",
    "PAIR_UNIT",
    "unit_ranges",
    "aligned_block",
    "pair_index",
    "round_sig",
    "check_alphas",
    "check_choices",
    "check_positive_int",
    "auto_block",
]


#: Kernels process items (system pairs...) in units of this many rows, aligned to global
#: multiples, and replicates in units of :data:`~irsim.sampling.rng.REPLICATE_BLOCK`. Every
#: BLAS call then sees the same operands whatever the shard size, so results are
#: bit-identical for any sharding (BLAS may round differently for different shapes).
PAIR_UNIT = 256


def unit_ranges(start: int, stop: int, unit: int) -> list[tuple[int, int]]:
    """Split ``[start, stop)`` at the global multiples of `unit`.

    Examples
    --------
    >>> unit_ranges(0, 600, 256)
    [(0, 256), (256, 512), (512, 600)]
    >>> unit_ranges(250, 500, 250)
    [(250, 500)]
    """
    edges = [start, *range((start // unit + 1) * unit, stop, unit), stop]
    return [(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def aligned_block(requested: int, unit: int) -> int:
    """Round a requested shard size up to a whole number of units.

    Examples
    --------
    >>> aligned_block(1, 256), aligned_block(300, 256), aligned_block(512, 256)
    (256, 512, 512)
    """
    return max(1, -(-int(requested) // unit)) * unit


def pair_index(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """All system pairs ``(a, b)`` with ``a < b``, in row-major order.

    Examples
    --------
    >>> a, b = pair_index(4)
    >>> list(zip(a.tolist(), b.tolist()))
    [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    """
    a, b = np.triu_indices(n_systems, k=1)
    return a.astype(np.int64), b.astype(np.int64)


def as_tuple(value: Any) -> tuple | None:
    """A parameter that may be a scalar or a list, as a tuple (None stays None).

    Examples
    --------
    >>> as_tuple("disjoint"), as_tuple([5, 10]), as_tuple(None)
    (('disjoint',), (5, 10), None)
    """
    if value is None:
        return None
    if isinstance(value, str | int | float):
        return (value,)
    return tuple(value)


def select_metrics(matrix: Any, metrics: Any) -> Any:
    """`matrix` (a ScoreMatrix) restricted to the study's own ``metrics`` parameter (None or
    empty: all of them). Unknown names suggest the closest ones.

    The command line's top-level ``metrics`` chooses what a collection loads; a study's
    ``metrics`` parameter (set by presets, whose ``# @package _global_`` cannot set the
    top-level key) then chooses among them; the top-level key wins when both are set.

    Examples
    --------
    >>> from irsim.data.matrix import ScoreMatrix
    >>> m = ScoreMatrix(np.zeros((2, 2, 2)), ["AP", "RR"], ["a", "b"], ["1", "2"])
    >>> select_metrics(m, ["RR"]).metrics, select_metrics(m, None).metrics
    (('RR',), ('AP', 'RR'))
    """
    if not metrics:
        return matrix
    names = resolve_metrics([str(m) for m in as_tuple(metrics)], matrix.metrics)
    return matrix.select(metrics=list(names))


def resolve_metrics(requested: Sequence[str] | None, available: Sequence[str]
                    ) -> tuple[str, ...]:
    """The metrics a study uses: `requested` (all `available` when None), each checked.

    Examples
    --------
    >>> resolve_metrics(None, ("AP", "P@10"))
    ('AP', 'P@10')
    >>> resolve_metrics(["AP"], ("AP", "P@10"))
    ('AP',)
    """
    from irsim.errors import unknown_name

    names = tuple(requested) if requested is not None else tuple(available)
    for m in names:
        if m not in available:
            raise unknown_name("metric", m, available)
    return names


def round_sig(x: float, digits: int = 2) -> float:
    """Round to `digits` significant figures (NaN and 0 pass through).

    Examples
    --------
    >>> round_sig(0.08764), round_sig(0.1049), round_sig(0.0)
    (0.088, 0.1, 0.0)
    """
    if not math.isfinite(x) or x == 0:
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


def check_alphas(alphas: Sequence[float], name: str = "experiment.alpha") -> tuple[float, ...]:
    """Validate significance levels: each a number strictly inside (0, 1).

    Examples
    --------
    >>> check_alphas([0.01, 0.05])
    (0.01, 0.05)
    >>> check_alphas(["abc"])
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.alpha must be numbers inside (0, 1), got ['abc']
    """
    try:
        out = tuple(float(a) for a in alphas)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be numbers inside (0, 1), got {list(alphas)!r}"
                          ) from None
    if not out:
        raise ConfigError(f"{name} must list at least one significance level")
    for a in out:
        if not 0.0 < a < 1.0:
            raise ConfigError(f"{name} must be inside (0, 1), got {a}")
    return out


def check_choices(values, valid: Sequence[str], kind: str, key: str) -> tuple[str, ...]:
    """Validate a non-empty list of names against `valid` (closest-name suggestions).

    Examples
    --------
    >>> check_choices(["bca"], ("bca", "t"), "CI method", "experiment.methods")
    ('bca',)
    """
    from irsim.errors import unknown_name

    out = tuple(str(v) for v in ([values] if isinstance(values, str) else values))
    if not out:
        raise ConfigError(f"{key} must list at least one {kind}")
    for v in out:
        if v not in valid:
            raise unknown_name(kind, v, valid)
    return out


def check_positive_int(value: int, name: str) -> int:
    """Validate an integer >= 1 (B, trials, samples...)."""
    if isinstance(value, bool) or int(value) != value or int(value) < 1:
        raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def auto_block(budget_bytes: float, per_item_bytes: float, total: int) -> int:
    """Largest block of items whose working set fits the budget (at least 1).

    Examples
    --------
    >>> auto_block(1e6, 1e3, 10_000)
    1000
    >>> auto_block(10, 1e3, 50)
    1
    """
    return int(max(1, min(total, budget_bytes // max(per_item_bytes, 1.0))))
