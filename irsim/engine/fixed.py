"""Floats in exact binary fixed point: integer units of ``2**-bits``.

:class:`FixedPoint` is the one definition (each addend rounded half to even, sums exact in
integers, the correctly rounded float at the end); :class:`Fixed` is an array of units whose
``+`` never rounds (int64 while it fits, Python integers beyond). The :class:`Sum` field of
:mod:`irsim.engine.partials` merges shards with it, and any study that quantises values
uses it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FixedPoint", "Fixed", "MAX_BITS"]


#: Largest ``bits`` of a fixed point: every nonzero multiple of ``2**-bits`` is then a
#: normal float, so scaling a float by a power of two never rounds.
MAX_BITS = 960
_INT64 = 1 << 63


@dataclass(frozen=True)
class FixedPoint:
    """Floats in binary fixed point: integer *units* of ``2**-bits``.

    The one definition of "a float in fixed point" in irsim: a value is quantised to the
    nearest unit, ties to even (:meth:`units`, as ``np.round(v * 2**bits)``); addends are
    quantised each and summed exactly (:meth:`sum`), so a sum does not depend on the order
    of its addends or on how they are split into shards; units give back the correctly
    rounded float (:meth:`value`, as ``int(units) / 2**bits``).

    Units are int64 arrays while they fit (vectorised), else object arrays of Python
    integers (exact, slower): a result never wraps around silently.

    Parameters
    ----------
    bits : int
        Units of ``2**-bits`` (0 to :data:`MAX_BITS`).

    Examples
    --------
    >>> p = FixedPoint(2)                              # quarters
    >>> p.units([0.125, 0.375, -0.3, 1.0]).tolist()    # ties to even: 0.5 -> 0, 1.5 -> 2
    [0, 2, -1, 4]
    >>> total = p.sum([[0.125, 0.375, 1.0], [1e300, 0.5, -1e300]], axis=1)
    >>> total.value().tolist()                         # 0 + 0.5 + 1; exact past 2**63 units
    [1.5, 0.5]
    """

    bits: int

    def __post_init__(self) -> None:
        if (not isinstance(self.bits, (int, np.integer)) or isinstance(self.bits, bool)
                or not 0 <= self.bits <= MAX_BITS):
            raise ValueError(f"fixed point needs an integer bits in [0, {MAX_BITS}], "
                             f"got {self.bits!r}")

    @property
    def scale(self) -> float:
        """``2.0**bits``: units per 1.0."""
        return 2.0**self.bits

    def units(self, values: Any) -> np.ndarray:
        """`values` rounded to the nearest multiple of ``2**-bits`` (ties to even), in units.

        Parameters
        ----------
        values : array_like of float
            Finite values (NaN or infinity is a ValueError).

        Returns
        -------
        ndarray of int64, or of object (Python integers) if some unit does not fit int64

        Examples
        --------
        >>> FixedPoint(40).units([1.0, 2.0**-41, 3 * 2.0**-41]).tolist()
        [1099511627776, 0, 2]
        >>> FixedPoint(40).units([2.0**30]).dtype   # 2**70 units: exact Python integers
        dtype('O')
        """
        return self._units(values)[0]

    def _units(self, values: Any) -> tuple[np.ndarray, int | None]:
        """:meth:`units` and, when they are int64, the largest magnitude (else None)."""
        v = np.asarray(values, np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.round(v * self.scale)  # exact scaling (normal results), then ties to even
            a = np.abs(r)
            top = a.max(initial=0.0)
        if top < 2.0**63:  # (False for NaN and infinity) every unit fits int64
            return r.astype(np.int64), int(top)
        if not np.isfinite(v).all():
            raise ValueError("fixed point takes finite values (got NaN or infinity)")
        big = ~(a < 2.0**63)  # also infinity when v * 2**bits overflows
        out = np.where(big, 0.0, r).astype(np.int64).astype(object)
        flat = out.reshape(-1)
        for j in np.flatnonzero(big.ravel()).tolist():
            # |v| * 2**bits >= 2**63 > 2**53 is an integer: no rounding
            num, den = float(v.flat[j]).as_integer_ratio()
            flat[j] = (num << self.bits) // den
        return out, None

    def sum(self, values: Any, axis: int | None = -1) -> Fixed:
        """Exact sum of the addends `values` along `axis`, each rounded to a unit first.

        Parameters
        ----------
        values : array_like of float
            Finite addends.
        axis : int or None
            Axis to sum over (None: all).

        Returns
        -------
        Fixed
            The sums (in units; int64 while they fit).

        Examples
        --------
        >>> total = FixedPoint(2).sum([[0.25, 0.375, 1.0], [0.125, 0.125, 0.125]])
        >>> total.units.tolist(), total.value().tolist()  # each 0.125 rounds to 0 (even)
        ([7, 0], [1.75, 0.0])
        """
        return Fixed._of(_exact_sum(*self._units(values), axis), self.bits)

    def zeros(self, shape: int | tuple[int, ...]) -> Fixed:
        """A fixed-point array of zeros, e.g. a kernel's accumulator of :meth:`sum` results.

        Examples
        --------
        >>> acc = FixedPoint(8).zeros(2)
        >>> acc[1] += FixedPoint(8).sum([0.5, 0.25])
        >>> acc.value().tolist()
        [0.0, 0.75]
        """
        return Fixed._of(np.zeros(shape, np.int64), self.bits)

    def value(self, units: Any) -> np.ndarray:
        """The float nearest each of `units` times ``2**-bits`` (ties to even): equal to
        ``int(u) / 2**bits`` in Python.

        Examples
        --------
        >>> FixedPoint(1).value([3, 2**54 + 1, -(2**200)]).tolist() == [1.5, 2.0**53, -2.0**199]
        True
        """
        u = np.asarray(units)
        if u.dtype.kind in "iu":  # int64 -> float64 rounds once; the power of two is exact
            return np.asarray(u.astype(np.float64) * 2.0**-self.bits)
        scale = 1 << self.bits
        return np.array([int(x) / scale for x in u.ravel().tolist()],
                        np.float64).reshape(u.shape)


def _exact_sum(u: np.ndarray, top: int | None, axis: int | None) -> np.ndarray:
    """Sum of integer units along `axis` (`top`: their largest magnitude, None for object
    units): int64 when no partial sum can overflow, else exact (two 32-bit halves summed in
    int64, or Python integers)."""
    if u.dtype == object:
        return _narrowed(np.asarray(u.sum(axis=axis), dtype=object))
    n = u.size if axis is None else u.shape[axis]
    if top is None:
        top = max(int(u.max()), -int(u.min())) if u.size else 0
    if top * n < _INT64:
        return np.asarray(u.sum(axis=axis))
    if n < 1 << 31:  # u = hi * 2**32 + lo with 0 <= lo < 2**32: neither half-sum overflows
        hi = np.asarray((u >> 32).sum(axis=axis)).astype(object)
        lo = np.asarray((u & 0xFFFFFFFF).sum(axis=axis)).astype(object)
        return _narrowed(np.asarray(hi * (1 << 32) + lo, dtype=object))
    return _narrowed(np.asarray(u.astype(object).sum(axis=axis), dtype=object))


def _narrowed(u: np.ndarray) -> np.ndarray:
    """Object units as int64 when every one fits, else unchanged."""
    if u.size and all(-_INT64 <= x < _INT64 for x in u.ravel().tolist()):
        return u.astype(np.int64)
    return u if u.size else u.astype(np.int64)


def _exact_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` of integer units as Python integers (narrowed to int64 if they fit)."""
    return _narrowed(np.asarray(a.astype(object) + b.astype(object), dtype=object))


class Fixed:
    """A fixed-point array: `units` (integers) of ``2**-bits`` (see :class:`FixedPoint`).

    What a kernel returns for a :class:`Sum` field to add exact sums of addends; also a
    kernel's accumulator. ``a + b`` and ``a[i] += b`` add exactly (int64 while the units
    fit, Python integers beyond: an overflow is never silent); both need the same `bits`.

    Examples
    --------
    >>> p = FixedPoint(4)
    >>> acc = p.zeros((2, 2))
    >>> acc[0] += p.sum(np.array([[0.5, 0.25], [0.0625, 1.0]]), axis=0)
    >>> (acc + acc).value().tolist()
    [[1.125, 2.5], [0.0, 0.0]]
    """

    __slots__ = ("units", "bits")

    @classmethod
    def _of(cls, units: np.ndarray, bits: int) -> Fixed:
        """A Fixed of int64 or object `units` and a valid `bits`, unchecked (internal)."""
        out = cls.__new__(cls)
        out.units, out.bits = units, bits
        return out

    def __init__(self, units: Any, bits: int) -> None:
        u = np.asarray(units)
        if u.dtype.kind not in "iuO":
            raise TypeError(f"fixed-point units are integers, got {u.dtype}")
        if u.dtype.kind == "u" and u.size and int(u.max()) >= _INT64:
            u = u.astype(object)  # unsigned beyond int64: exact, never wrapped
        self.units = u if u.dtype == object else u.astype(np.int64, copy=False)
        self.bits = int(FixedPoint(bits).bits)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.units.shape

    def value(self) -> np.ndarray:
        """The correctly rounded floats (:meth:`FixedPoint.value`)."""
        return FixedPoint(self.bits).value(self.units)

    def _check(self, other: Any) -> Fixed:
        if not isinstance(other, Fixed):
            raise TypeError(f"a fixed-point array adds only another (got {type(other)}); "
                            "quantise floats with FixedPoint.units or .sum")
        if other.bits != self.bits:
            raise ValueError(f"fixed point of 2**-{other.bits} added to 2**-{self.bits}")
        return other

    def __add__(self, other: Any) -> Fixed:
        b = self._check(other).units
        a = self.units
        if a.dtype == object or b.dtype == object:
            return Fixed._of(_exact_add(a, b), self.bits)
        s = a + b  # wraps on overflow: detected by the sign rule, then redone exactly
        if np.any(((a ^ s) & (b ^ s)) < 0):
            return Fixed._of(_exact_add(a, b), self.bits)
        return Fixed._of(s, self.bits)

    def __getitem__(self, key: Any) -> Fixed:
        return Fixed._of(np.asarray(self.units[key], self.units.dtype), self.bits)

    def __setitem__(self, key: Any, value: Fixed) -> None:
        u = self._check(value).units
        if u.dtype == object and self.units.dtype != object:
            self.units = self.units.astype(object)
        self.units[key] = u[()] if u.ndim == 0 else u  # a Python integer, not a 0-d array

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Fixed) and other.bits == self.bits
                and self.units.shape == other.units.shape
                and self.units.tolist() == other.units.tolist())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Fixed({self.units!r}, bits={self.bits})"
