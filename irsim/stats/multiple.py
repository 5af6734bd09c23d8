"""Multiple-comparison corrections of p-values, for many families at once.

:func:`adjust` returns adjusted p-values and :func:`reject` the decisions of the
Bonferroni, Holm (1979) step-down, Benjamini-Hochberg (1995) and Benjamini-Yekutieli (2001)
procedures for every family of p-values along one axis of an array (all system pairs of a
metric and test, say; one family per row of any number of rows). Both equal
``statsmodels.stats.multitest.multipletests(p, alpha, method)`` with ``method`` one of
``bonferroni``, ``holm``, ``fdr_bh``, ``fdr_by`` (elements ``[1]`` and ``[0]``), operation for
operation, so the values are bit-identical (``tests/test_multiple.py``); the work is one
sort along the axis and cumulative maxima / minima, with no loop over families or p-values.

NaN p-values (a pair no test could decide) are not members of their family: they do not
count in the family size ``m`` and stay NaN (never rejected); the others are adjusted as
statsmodels adjusts the family without them. A family of NaNs only stays NaN.
"""

from __future__ import annotations

import operator

import numpy as np

from irsim.errors import ConfigError, InputError, unknown_name
from irsim.params import Choice

__all__ = ["CORRECTIONS", "adjust", "reject"]

#: Correction names, as configs and tables spell them.


class Correction(Choice):
    """A multiple-comparison correction of a family of p-values (:func:`adjust`)."""

    none = "none"
    bonferroni = "bonferroni"
    holm = "holm"
    bh = "bh"
    by = "by"


CORRECTIONS = Correction.values()


def _check_method(method: object) -> str:
    if not isinstance(method, str) or method not in CORRECTIONS:
        raise unknown_name("correction", str(method), CORRECTIONS)
    return method


def _sorted_families(p: object, axis: object) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                        np.ndarray, tuple[int, ...], int]:
    """p as float (families, m) rows sorted ascending (NaN last), the sort order, the family
    sizes (non-NaN counts), the 0-based ranks, the moved shape and the axis."""
    try:
        arr = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"p-values must be numbers, got {p!r}") from None
    try:
        axis = operator.index(axis)  # type: ignore[arg-type]
    except TypeError:
        raise ConfigError(f"axis must be an integer, got {axis!r}") from None
    if arr.ndim == 0:
        raise InputError("p-values must be an array with at least one dimension")
    if not -arr.ndim <= axis < arr.ndim:
        raise ConfigError(f"axis {axis} is out of range for p-values of {arr.ndim} dimensions")
    bad = ~np.isnan(arr) & ((arr < 0.0) | (arr > 1.0))
    if bad.any():
        raise InputError(f"p-values must lie in [0, 1] (or be NaN), got "
                         f"{float(arr[bad].flat[0])!r}")
    moved = np.moveaxis(arr, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    order = np.argsort(rows, axis=-1, kind="stable")  # NaN sort last
    ps = np.take_along_axis(rows, order, axis=-1)
    m = np.count_nonzero(~np.isnan(rows), axis=-1)[:, None]
    rank = np.arange(rows.shape[-1])[None, :]
    return ps, order, m, rank, moved.shape, axis


def _unsort(values: np.ndarray, order: np.ndarray, shape: tuple[int, ...], axis: int
            ) -> np.ndarray:
    out = np.empty_like(values)
    np.put_along_axis(out, order, values, axis=-1)
    return np.moveaxis(out.reshape(shape), -1, axis)


def _ecdf_factor(m: np.ndarray, rank: np.ndarray, method: str) -> np.ndarray:
    """statsmodels' ``_ecdf`` factor ``(i + 1) / m`` (divided by the harmonic number
    ``sum_{i<=m} 1/i`` for BY, summed as statsmodels sums it), per family and rank."""
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = (rank + 1) / m.astype(np.float64)
    if method == "by":
        sizes, where = np.unique(m, return_inverse=True)
        # one harmonic number per distinct family size (np.sum's pairwise order, as statsmodels)
        cm = np.array([np.sum(1.0 / np.arange(1, s + 1)) if s else 1.0 for s in sizes])
        factor = factor / cm[where.reshape(-1)][:, None]
    return factor


def adjust(p: np.ndarray, method: str, axis: int = -1) -> np.ndarray:
    """Adjusted p-values of every family of p-values along `axis`.

    Parameters
    ----------
    p : array_like
        P-values in [0, 1] (NaN: not a member of its family, stays NaN).
    method : {"none", "bonferroni", "holm", "bh", "by"}
        No correction (a float copy), Bonferroni ``min(1, m p)``, Holm's step-down,
        Benjamini-Hochberg's and Benjamini-Yekutieli's step-up adjusted p-values.
    axis : int
        The axis along which a family lies; every other index is another family.

    Returns
    -------
    ndarray
        Same shape as `p`: equal to ``multipletests(family, method=...)[1]`` of statsmodels
        (``fdr_bh`` for ``bh``, ``fdr_by`` for ``by``) for each family without its NaNs.

    Examples
    --------
    >>> p = np.array([[0.01, 0.04, 0.03, 0.20],
    ...               [0.001, np.nan, 0.5, 0.02]])
    >>> adjust(p, "holm").tolist()
    [[0.04, 0.09, 0.09, 0.2], [0.003, nan, 0.5, 0.04]]
    >>> adjust(p, "bh").round(4).tolist()
    [[0.04, 0.0533, 0.0533, 0.2], [0.003, nan, 0.5, 0.03]]
    >>> adjust(p, "bonferoni")
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown correction 'bonferoni' (did you mean \
'bonferroni'?); valid: bh, bonferroni, by, holm, none
    """
    method = _check_method(method)
    ps, order, m, rank, shape, axis = _sorted_families(p, axis)
    valid = rank < m
    if method == "none":
        adj = ps.copy()
    elif method == "bonferroni":
        adj = ps * m.astype(np.float64)
    elif method == "holm":
        adj = np.maximum.accumulate(ps * (m - rank), axis=-1)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = np.where(valid, ps / _ecdf_factor(m, rank, method), np.inf)
        adj = np.minimum.accumulate(raw[:, ::-1], axis=-1)[:, ::-1]
    adj[adj > 1] = 1.0
    adj[~valid] = np.nan
    return _unsort(adj, order, shape, axis)


def reject(p: np.ndarray, alpha: float, method: str, axis: int = -1) -> np.ndarray:
    """Which null hypotheses each family's procedure rejects at level `alpha`.

    The decisions of statsmodels' ``multipletests(family, alpha, method)[0]``, computed as it
    computes them (``p <= alpha / m`` for Bonferroni, Holm's step-down with
    ``p_(i) > alpha / (m - i + 1)``, the step-up ``p_(i) <= alpha i / m`` of BH, divided by the
    harmonic number for BY; ``p <= alpha`` for ``none``); NaN p-values are never rejected.

    Parameters
    ----------
    p : array_like
        P-values in [0, 1] (NaN: not a member of its family).
    alpha : float
        Level (family-wise error rate for Bonferroni and Holm, false discovery rate for
        BH and BY), in (0, 1).
    method : {"none", "bonferroni", "holm", "bh", "by"}
    axis : int
        The axis along which a family lies.

    Returns
    -------
    ndarray of bool
        Same shape as `p`.

    Examples
    --------
    >>> p = np.array([0.01, 0.04, 0.03, 0.20])
    >>> reject(p, 0.05, "holm").tolist(), reject(p, 0.05, "bh").tolist()
    ([True, False, False, False], [True, False, False, False])
    >>> reject(p, 0.1, "bh").tolist()
    [True, True, True, False]
    """
    method = _check_method(method)
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        raise ConfigError(f"alpha must be a number in (0, 1), got {alpha!r}") from None
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha must be in (0, 1), got {alpha}")
    ps, order, m, rank, shape, axis = _sorted_families(p, axis)
    valid = rank < m
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "none":
            rej = ps <= alpha
        elif method == "bonferroni":
            rej = ps <= alpha / m.astype(np.float64)
        elif method == "holm":
            notreject = ps > alpha / (m - rank)
            rej = ~np.logical_or.accumulate(notreject & valid, axis=-1)
        else:
            hit = (ps <= _ecdf_factor(m, rank, method) * alpha) & valid
            rej = np.logical_or.accumulate(hit[:, ::-1], axis=-1)[:, ::-1]
    rej &= valid
    return _unsort(rej, order, shape, axis)
