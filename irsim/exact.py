"""Sums that do not depend on the CPU: exact products of count matrices with scores.

A BLAS GEMM adds its terms in an order chosen by the kernel (Haswell, SkylakeX, Prescott,
...), the thread count and the position of a column in the block, so the same resampled mean
can come out one ulp apart on two machines, and a decision taken on it (a tie, a rank, a bin)
can flip. Here the order cannot matter: the scores are split into a few integer-valued
pieces on fixed-point grids,

    ``x = p_1 + p_2 + ...``,  ``p_i`` an integer multiple of ``step_i``,
    ``step_{i+1} = step_i * 2**-bits``,  ``|p_1| <= 2**bits * step_1``,

with ``bits`` chosen so that every partial sum of ``counts x p_i`` is an integer multiple of
``step_i`` of magnitude at most ``2**53 * step_i`` (``l1 * 2**bits <= 2**53``, where ``l1``
bounds the sum of ``|counts|`` over the contracted axis). Every product and every partial
sum of such a GEMM is then exactly representable, so the product is exact whatever the
kernel, the summation order, FMA or threads. The pieces' products are added in a fixed
order: with two pieces (scores of a typical collection) the result is the correctly rounded value
of the exact sum; with more, a fixed-order sum. Identical multisets of scores therefore give
bit-identical sums on every machine, and an exact tie stays an exact tie.

Pieces are added until the remainder is 0, at most :data:`MAX_PIECES` (a collection whose
scores span more than ``MAX_PIECES * bits`` bits below its largest magnitude, e.g. 1 beside
1e-40, has the smallest bits of its smallest scores rounded to the last grid step: still
the same on every machine). Cost: one GEMM per piece (two for scores of a collection, where
a plain GEMM is one).

This is the only place the rule is written; every count-matrix product whose result is
reported, ranked or binned goes through :class:`Exact` (:mod:`irsim.sampling.subsets`,
:mod:`irsim.stats.resample`, the discpower and coverage kernels); docs/ARCHITECTURE.md,
"Determinism", lists where.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MAX_PIECES", "Exact", "exact_sum", "exact_mean", "gram", "corrcoef"]

#: Most pieces a matrix is split into (each of ``bits`` >= 27 bits for any count matrix whose
#: sums stay below 2^26, so at least 108 bits of fixed point below the largest magnitude).
MAX_PIECES = 4

#: Smallest grid step used (below it, scaling by the step would leave the normal range).
_MIN_EXP = -1000


def _bits(l1: float) -> int:
    """Bits per piece so that ``l1 * 2**bits <= 2**53``."""
    if l1 < 1:
        l1 = 1.0
    return 53 - math.ceil(math.log2(l1))


class Exact:
    """Scores split into integer pieces for exact products with count matrices.

    Parameters
    ----------
    x : array_like of float
        The scores (any shape; the products below treat it as a matrix).
    l1 : int or float
        Upper bound of ``sum |c|`` over the contracted axis of every count matrix ``c`` it
        will be multiplied with (e.g. ``n`` for bootstrap counts of n topics, the set size
        for topic sets, ``2 n m`` for unpaired weight numerators). Checked at each product.

    Examples
    --------
    Resampled sums are exact: the same multiset of scores gives the same float in any
    order, where a plain dot product need not:

    >>> x = np.array([[0.1, 0.2, 0.3, 0.7]])
    >>> c = np.array([[1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 1.0, 1.0]]).T   # two resamples
    >>> e = Exact(x, l1=4)
    >>> (e @ c).tolist()
    [[1.0, 1.2]]
    >>> bool((e @ c)[0, 0] == exact_sum(np.array([0.7, 0.1, 0.2])))
    True
    """

    def __init__(self, x: np.ndarray, l1: float):
        x = np.asarray(x, np.float64)
        self.shape = x.shape
        self.l1 = float(l1)
        self.bits = _bits(self.l1)
        top = float(np.abs(x).max()) if x.size else 0.0
        if not np.isfinite(top):
            raise ValueError("Exact: scores must be finite")
        #: the pieces, each on its grid (integers times a power of two, so scaling them
        #: keeps every product and partial sum of a GEMM exact)
        self.pieces: list[np.ndarray] = []
        self._scratch: np.ndarray | None = None
        if top == 0.0:
            return
        exp = math.frexp(top)[1] - self.bits  # |x| < 2**frexp exponent
        rest = x
        for _ in range(MAX_PIECES):
            exp = max(exp, _MIN_EXP)
            piece = np.rint(rest * math.ldexp(1.0, -exp))
            piece *= math.ldexp(1.0, exp)
            self.pieces.append(piece)
            rest = rest - piece  # exact (see the module docstring)
            if not rest.any() or exp == _MIN_EXP:
                break
            exp -= self.bits

    def _buffer(self, shape: tuple[int, ...]) -> np.ndarray:
        """A scratch array for the second piece's product, kept between calls (fresh
        large allocations cost page faults that rival the GEMM itself)."""
        buf = self._scratch
        if buf is None or buf.size < math.prod(shape):
            buf = self._scratch = np.empty(math.prod(shape))
        return buf[:math.prod(shape)].reshape(shape)

    def right(self, counts: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``x @ counts`` (counts: (k, m), contracted over x's last axis; stacked matrices
        broadcast as in :func:`numpy.matmul`), into `out` when given."""
        return self._product(counts, out, left=False)

    def left(self, counts: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``counts @ x`` (counts: (m, k), contracted over x's first axis), into `out` when
        given."""
        return self._product(counts, out, left=True)

    __matmul__ = right

    def __rmatmul__(self, counts: np.ndarray) -> np.ndarray:
        return self.left(counts)

    def _product(self, counts: np.ndarray, out: np.ndarray | None, left: bool) -> np.ndarray:
        counts = np.asarray(counts, np.float64)
        if left:
            shape = counts.shape[:-1] + self.shape[1:]
        else:
            shape = np.broadcast_shapes(self.shape[:-2], counts.shape[:-2]) + (
                self.shape[-2:-1] + counts.shape[-1:] if len(self.shape) > 1 else
                counts.shape[-1:])
        if out is None:
            out = np.empty(shape)
        if not self.pieces:
            out[...] = 0.0
            return out
        axis = -1 if left else (-2 if counts.ndim > 1 else 0)
        if counts.size and float(np.abs(counts).sum(axis=axis).max()) > self.l1:
            raise ValueError(f"Exact: a count matrix sums to more than l1 = {self.l1:g}")
        for i, p in enumerate(self.pieces):
            if i == 0:
                np.matmul(counts, p, out=out) if left else np.matmul(p, counts, out=out)
            else:
                tmp = self._buffer(shape)
                np.matmul(counts, p, out=tmp) if left else np.matmul(p, counts, out=tmp)
                out += tmp
        return out

    def parts(self, counts: np.ndarray) -> list[np.ndarray]:
        """``piece @ counts`` for every piece (each exact); their sum in order is
        ``self @ counts``. Differences of parts between rows are exact too when `l1` was
        given twice the count sums (one bit of headroom)."""
        counts = np.asarray(counts, np.float64)
        axis = -2 if counts.ndim > 1 else 0
        if counts.size and float(np.abs(counts).sum(axis=axis).max()) > self.l1:
            raise ValueError(f"Exact: a count matrix sums to more than l1 = {self.l1:g}")
        return [p @ counts for p in self.pieces]

    def take(self, rows: np.ndarray) -> Exact:
        """The same split restricted to `rows` of the first axis (no new rounding)."""
        new = object.__new__(Exact)
        new.shape = (len(rows), *self.shape[1:])
        new.l1, new.bits, new._scratch = self.l1, self.bits, None
        new.pieces = [p[rows] for p in self.pieces]
        return new

    def rowdot(self, counts: np.ndarray) -> np.ndarray:
        """Row by row, ``sum(x[r] * counts[r])`` (counts of x's shape), exact like a
        product: each piece times a count is exact, and so is each piece's sum."""
        counts = np.asarray(counts, np.float64)
        acc = np.zeros(self.shape[:-1])
        for p in self.pieces:
            acc = acc + (p * counts).sum(axis=-1)
        return acc

    def total(self, axis: int = -1) -> np.ndarray:
        """Exact sums of x along `axis` (each piece's sum is exact; combined in order)."""
        if not self.pieces:
            return np.zeros(self.shape[:axis % len(self.shape)]
                            + self.shape[axis % len(self.shape) + 1:])
        acc = self.pieces[0].sum(axis=axis)
        for p in self.pieces[1:]:
            acc = acc + p.sum(axis=axis)
        return acc


def exact_sum(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Sum of `x` along `axis`, the same float for any order of the values (the rule of
    :class:`Exact`: a sum computed here equals the product of :class:`Exact` with a count
    vector that selects the same values).

    Examples
    --------
    The correctly rounded sum of the three floats, where adding from the left rounds twice:

    >>> v = np.array([0.1, 0.2, 0.3])
    >>> float(exact_sum(v)), float(exact_sum(v[::-1])), 0.1 + 0.2 + 0.3
    (0.6, 0.6, 0.6000000000000001)
    """
    x = np.asarray(x, np.float64)
    n = x.shape[axis] if x.ndim else 1
    return Exact(x, l1=max(1, n)).total(axis)


def exact_mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """:func:`exact_sum` divided by the number of values (one rounding more).

    Examples
    --------
    >>> float(exact_mean(np.array([[0.1, 0.2, 0.4]]), axis=1)[0])
    0.23333333333333336
    """
    x = np.asarray(x, np.float64)
    return exact_sum(x, axis) / x.shape[axis]


#: Bytes of the elementwise products of one block of :func:`gram`.
_GRAM_BYTES = 16 * 2**20


def gram(x: np.ndarray) -> np.ndarray:
    """``x @ x.T`` with sums in a fixed order (numpy's pairwise summation of elementwise
    products, in row blocks), so the same on every BLAS kernel, thread count and CPU.

    For Gram matrices of real-valued data (correlations, variances of pair differences)
    where no operand is a count matrix; a BLAS GEMM would round in a kernel-dependent order.

    Examples
    --------
    >>> x = np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]])
    >>> bool(np.allclose(gram(x), x @ x.T, rtol=1e-15, atol=0))
    True
    """
    x = np.ascontiguousarray(x, np.float64)
    k, n = x.shape
    out = np.empty((k, k))
    per = max(1, _GRAM_BYTES // max(1, 8 * k * n))
    for r0 in range(0, k, per):
        block = x[r0:r0 + per]
        out[r0:r0 + per] = (block[:, None, :] * x[None, :, :]).sum(axis=-1)
    return out


def corrcoef(x: np.ndarray) -> np.ndarray:
    """Pearson correlations of the rows of `x` (as :func:`numpy.corrcoef`) from
    :func:`gram`: the same on every machine. A constant row gives NaN, as numpy.

    Examples
    --------
    >>> x = np.array([[0.1, 0.2, 0.4], [0.3, 0.1, 0.0], [0.2, 0.5, 0.1]])
    >>> bool(np.allclose(corrcoef(x), np.corrcoef(x), rtol=1e-14, atol=1e-15))
    True
    """
    x = np.asarray(x, np.float64)
    xc = x - x.mean(axis=1, keepdims=True)
    c = gram(xc)
    d = np.sqrt(np.diag(c))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = c / d[:, None] / d[None, :]
    return np.clip(r, -1.0, 1.0, out=r)
