"""Input validation and small shared pieces of the tests and intervals in :mod:`irsim.stats`.

Every public function of the package starts with one call to a ``*_iv`` function here,
which checks each argument with a message naming it and returns a small frozen dataclass.
Bad arguments raise :class:`~irsim.errors.ConfigError` (options) or
:class:`~irsim.errors.InputError` (data), never ``assert``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from irsim.errors import ConfigError, InputError, unknown_name
from irsim.params import Choice
from irsim.rng import REPLICATE_BLOCK

__all__ = [
    "ALTERNATIVES",
    "check_alternatives",
    "DEFAULT_MEMORY_BUDGET",
    "PVALUE_MODES",
    "Data",
    "MonteCarlo",
    "check_alternative",
    "check_choice",
    "check_confidence_level",
    "check_int",
    "data_iv",
    "monte_carlo_iv",
    "paired_iv",
    "row_chunks",
]



class PValueMode(Choice):
    """How a Monte Carlo p-value counts: ``count/B`` (Sakai) or ``(count + 1)/(B + 1)``."""

    count = "count"
    plus_one = "plus_one"


#: The alternatives of a test (``two-sided`` is no Python name: the functional form).
Alternative = Choice("Alternative", [(a, a) for a in ("two-sided", "less", "greater")],
                     module=__name__)
ALTERNATIVES = Alternative.values()
PVALUE_MODES = PValueMode.values()

#: Default cap (bytes) on the working memory of one resampling step.
DEFAULT_MEMORY_BUDGET = 256 * 2**20


def check_choice(kind: str, value: object, valid: tuple[str, ...]) -> str:
    """`value` if it is one of `valid`, else a ConfigError naming `kind`.

    Examples
    --------
    >>> check_choice("alternative", "less", ALTERNATIVES)
    'less'
    """
    if not isinstance(value, str) or value not in valid:
        raise unknown_name(kind, str(value), valid)
    return value


def check_alternative(alternative: object) -> str:
    """One of ``'two-sided'``, ``'less'``, ``'greater'``.

    Examples
    --------
    >>> check_alternative("greater")
    'greater'
    """
    return check_choice("alternative", alternative, ALTERNATIVES)


def check_alternatives(alternative: object) -> tuple[tuple[str, ...], bool]:
    """One alternative or a sequence of them: ``(alternatives, several)``.

    A Monte Carlo test given several alternatives counts them all on one set of resamples
    and returns p-values with a trailing axis, one entry per alternative.

    Examples
    --------
    >>> check_alternatives("less")
    (('less',), False)
    >>> check_alternatives(["two-sided", "greater"])
    (('two-sided', 'greater'), True)
    >>> check_alternatives(())
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: alternative: give one or more of two-sided, less, greater
    """
    if isinstance(alternative, str):
        return (check_alternative(alternative),), False
    try:
        alts = tuple(check_alternative(a) for a in alternative)  # type: ignore[union-attr]
    except TypeError:
        raise unknown_name("alternative", str(alternative), ALTERNATIVES) from None
    if not alts:
        raise ConfigError(f"alternative: give one or more of {', '.join(ALTERNATIVES)}")
    return alts, True


def check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """`value` as an int in ``[minimum, maximum]``; bools and non-integral floats refused.

    Examples
    --------
    >>> check_int("B", 1000.0, 1)
    1000
    """
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    try:
        ivalue = operator.index(value)  # ints and numpy ints
    except TypeError:
        if isinstance(value, float) and value.is_integer():
            ivalue = int(value)
        else:
            raise ConfigError(f"{name} must be an integer, got {value!r}") from None
    if ivalue < minimum or (maximum is not None and ivalue > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ConfigError(f"{name} must be {bound}, got {ivalue}")
    return ivalue


def check_confidence_level(level: object) -> float:
    """A confidence level strictly between 0 and 1.

    Examples
    --------
    >>> check_confidence_level(0.95)
    0.95
    """
    try:
        value = float(level)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"confidence_level must be a number in (0, 1), got {level!r}") from None
    if not 0.0 < value < 1.0:
        raise ConfigError(f"confidence_level must be in (0, 1), got {value}")
    return value


@dataclass(frozen=True)
class Data:
    """Validated data: a float64 ``(rows, n)`` array and the leading shape to restore.

    Examples
    --------
    >>> d = data_iv(np.zeros((2, 3, 4)), "x")
    >>> d.values.shape, d.lead, d.n
    ((6, 4), (2, 3), 4)
    >>> d.out(np.arange(6.0)).shape
    (2, 3)
    """

    values: np.ndarray
    lead: tuple[int, ...]

    @property
    def n(self) -> int:
        """Length of the last axis (topics)."""
        return self.values.shape[-1]

    @property
    def rows(self) -> int:
        """Number of rows (pairs, samples)."""
        return self.values.shape[0]

    def out(self, a: np.ndarray) -> np.ndarray:
        """Reshape a per-row result to the leading shape (a numpy scalar for 1-d input)."""
        return np.asarray(a).reshape(self.lead + np.shape(a)[1:])[()]


def data_iv(x: object, name: str, *, min_n: int = 1) -> Data:
    """Check one data array ``(..., n)``: numeric, finite, at least `min_n` values per row.

    Examples
    --------
    >>> data_iv([0.1, 0.2], "x").values.tolist()
    [[0.1, 0.2]]
    >>> data_iv([[0.1, float("nan")]], "x")
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: x has a non-finite value nan at index (0, 1)
    """
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric array ({exc})") from None
    if a.ndim == 0:
        raise InputError(f"{name} must have at least one axis (topics), got a scalar")
    if a.shape[-1] < min_n:
        raise InputError(f"{name} needs at least {min_n} values along its last axis "
                         f"(topics), got {a.shape[-1]}")
    bad = ~np.isfinite(a)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{name} has a non-finite value {a[where]} at index {where}")
    lead = a.shape[:-1]
    return Data(np.ascontiguousarray(a.reshape(-1, a.shape[-1])), lead)


def paired_iv(x: object, y: object | None, *, min_n: int = 1) -> Data:
    """Differences ``z = x - y`` (or ``z = x`` when `y` is None) as :class:`Data`.

    Examples
    --------
    >>> paired_iv([[0.3, 0.5]], [[0.1, 0.5]]).values.round(3).tolist()
    [[0.2, 0.0]]
    """
    if y is None:
        return data_iv(x, "z", min_n=min_n)
    dx, dy = data_iv(x, "x", min_n=min_n), data_iv(y, "y", min_n=min_n)
    if dx.lead + (dx.n,) != dy.lead + (dy.n,):
        raise InputError(f"x and y must have the same shape for a paired test, got "
                         f"{dx.lead + (dx.n,)} and {dy.lead + (dy.n,)}")
    return Data(dx.values - dy.values, dx.lead)


@dataclass(frozen=True)
class MonteCarlo:
    """Validated Monte Carlo options shared by the resampling tests.

    Examples
    --------
    >>> mc = monte_carlo_iv(B=1000, seed=1, study="s", pvalue_mode="plus_one",
    ...                     memory_budget=2**20)
    >>> float(mc.pvalue(np.array(9)))
    0.00999000999000999
    """

    B: int
    seed: int
    study: str
    key: tuple[int, ...]
    pvalue_mode: str
    memory_budget: int

    def pvalue(self, count: np.ndarray) -> np.ndarray:
        """``count/B`` (the papers) or ``(count+1)/(B+1)``."""
        count = np.asarray(count)
        if self.pvalue_mode == "count":
            return count / self.B
        return (count + 1.0) / (self.B + 1.0)

    def replicate_chunks(self, bytes_per_replicate: int) -> Iterator[tuple[int, int]]:
        """``[start, stop)`` ranges of replicates, whole blocks of REPLICATE_BLOCK, sized
        so that `bytes_per_replicate` times the range fits the memory budget."""
        per = max(1, self.memory_budget // max(1, bytes_per_replicate))
        size = max(REPLICATE_BLOCK, per // REPLICATE_BLOCK * REPLICATE_BLOCK)
        for start in range(0, self.B, size):
            yield start, min(self.B, start + size)


def monte_carlo_iv(
    *, B: object, seed: object, study: object, pvalue_mode: object, memory_budget: object,
    key: tuple[int, ...] = (),
) -> MonteCarlo:
    """Check the options of a Monte Carlo test.

    Examples
    --------
    >>> monte_carlo_iv(B=0, seed=0, study="s", pvalue_mode="count", memory_budget=2**20)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: B must be >= 1, got 0
    """
    if not isinstance(study, str) or not study:
        raise ConfigError(f"study must be a non-empty string, got {study!r}")
    key = tuple(check_int("key coordinate", k, 0) for k in key)
    return MonteCarlo(
        B=check_int("B", B, 1),
        seed=check_int("seed", seed, 0),
        study=study,
        key=key,
        pvalue_mode=check_choice("pvalue_mode", pvalue_mode, PVALUE_MODES),
        memory_budget=check_int("memory_budget", memory_budget, 1),
    )


def row_chunks(rows: int, bytes_per_row: int, budget: int) -> Iterator[slice]:
    """Slices of ``range(rows)`` with at most ``budget // bytes_per_row`` rows (>= 1).

    Examples
    --------
    >>> [(s.start, s.stop) for s in row_chunks(5, 10, 25)]
    [(0, 2), (2, 4), (4, 5)]
    """
    size = max(1, budget // max(1, bytes_per_row))
    for start in range(0, rows, size):
        yield slice(start, min(rows, start + size))
