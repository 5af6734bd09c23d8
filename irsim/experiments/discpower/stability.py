"""Stability of a metric over bootstrap topic samples (Buckley-Voorhees; Sakai 2006, 3.5).

A helper of the discpower experiment (not an experiment of its own): it reuses the paired
test's bootstrap samples ``Q*b``. For every system pair ``(X, Y)`` and sample ``b``, with
``D = M(X, Q*b) - M(Y, Q*b)`` and ``top = max(M(X, Q*b), M(Y, Q*b))``, Sakai's Figure 9
counts

- ``EQ(X, Y)`` if ``|D| < f * top`` (the two are "equivalent" at fuzziness ``f``),
- else ``GT(X, Y)`` if ``D > 0``, else ``GT(Y, X)``;

then over the set of pairs ``C``: minority rate ``MR = sum_C min(GT(X,Y), GT(Y,X)) / (|C| B)``
and proportion of ties ``PT = sum_C EQ(X,Y) / (|C| B)``. Varying ``f`` = 0.01 .. 0.20 gives the
MR-PT curve of a metric.

Counters are integers per pair and fuzziness (``GT(X,Y)``, ``GT(Y,X)``; ``EQ`` is the rest),
so partial counts over blocks of samples add up in any order.

Exact-arithmetic conventions (the caller passes ``D`` with ties already set to exactly 0):

- ``D == 0`` always counts as ``EQ``; the literal rule would count ``GT(Y, X)`` when both
  systems score 0 on every sampled topic (``top = 0``), a bias towards the second system.
- ``|D|`` within ``TIE_RTOL * top`` of ``f * top`` counts as on the boundary, i.e. not ``EQ``
  (strict ``<`` as in exact arithmetic): discrete metrics such as P@10 hit the boundary
  exactly, and rounding must not decide it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from irsim.errors import ConfigError, param
from irsim.stats.ties import TIE_RTOL
from irsim.tables import schema, table

__all__ = ["DEFAULT_FUZZINESS", "check_fuzziness", "stability_counts", "stability_rates",
           "stability_table"]

#: Sakai's fuzziness values: 0.01, 0.02, ..., 0.20.
DEFAULT_FUZZINESS: tuple[float, ...] = tuple(round(0.01 * i, 2) for i in range(1, 21))


def check_fuzziness(values: Sequence[float] | float, name: str | None = None
                    ) -> tuple[float, ...]:
    """Fuzziness values as a sorted tuple: a non-empty list of distinct numbers (`name`: the
    parameter in messages, default ``fuzziness``; each value's bounds, (0, 1), are the
    field's own: :class:`~irsim.experiments.discpower.Config` checks them).

    Examples
    --------
    >>> check_fuzziness([0.05, 0.01])
    (0.01, 0.05)
    >>> check_fuzziness(0.1)
    (0.1,)
    """
    name = name or param("fuzziness")
    if isinstance(values, (int, float)):
        values = [values]
    out = tuple(sorted(float(f) for f in values))
    if not out:
        raise ConfigError(f"{name} must list at least one fuzziness value")
    if len(set(out)) != len(out):
        raise ConfigError(f"{name} values must be distinct, got {list(out)}")
    return out


def stability_counts(d: np.ndarray, top: np.ndarray, fuzziness: Sequence[float]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``GT(X, Y)`` and ``GT(Y, X)`` per pair and fuzziness over a block of samples.

    Parameters
    ----------
    d : ndarray, shape (pairs, samples)
        ``M(X, Q*b) - M(Y, Q*b)``, exact ties already 0.
    top : ndarray, shape (pairs, samples)
        ``max(M(X, Q*b), M(Y, Q*b))``.
    fuzziness : sequence of float
        The values ``f``.

    Returns
    -------
    gt_xy, gt_yx : ndarray of int64, shape (pairs, len(fuzziness))
        Samples where X (Y) wins by at least ``f * top``; ``EQ`` is the rest of the samples.

    Examples
    --------
    >>> d = np.array([[0.05, -0.002, 0.0, 0.01]])
    >>> top = np.array([[0.5, 0.4, 0.0, 0.5]])
    >>> gt_xy, gt_yx = stability_counts(d, top, [0.001, 0.02, 0.2])
    >>> gt_xy.tolist(), gt_yx.tolist()   # 0.01 vs 0.02 * 0.5 = 0.01: on the boundary, GT
    ([[2, 2, 0]], [[1, 0, 0]])
    """
    d = np.asarray(d, np.float64)
    top = np.asarray(top, np.float64)
    tol = TIE_RTOL * np.abs(top)
    absd = np.abs(d)
    pos = d > 0
    neg = d < 0
    gt_xy = np.empty((d.shape[0], len(fuzziness)), np.int64)
    gt_yx = np.empty_like(gt_xy)
    for j, f in enumerate(fuzziness):  # a loop over the (few) fuzziness values
        decided = absd >= f * top - tol  # not EQ; d == 0 is never decided (pos/neg false)
        gt_xy[:, j] = np.count_nonzero(decided & pos, axis=1)
        gt_yx[:, j] = np.count_nonzero(decided & neg, axis=1)
    return gt_xy, gt_yx


def stability_rates(gt_xy: np.ndarray, gt_yx: np.ndarray, samples: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Minority rate and proportion of ties per fuzziness from per-pair counters.

    Parameters
    ----------
    gt_xy, gt_yx : ndarray of int, shape (pairs, fuzziness)
        Counters over all `samples` bootstrap samples.
    samples : int
        ``B``.

    Returns
    -------
    minority_rate, prop_ties : ndarray of float, shape (fuzziness,)
    minority, ties : ndarray of int64, shape (fuzziness,)
        ``sum_C min(GT(X,Y), GT(Y,X))`` and ``sum_C EQ(X,Y)``.

    Examples
    --------
    >>> gt_xy = np.array([[8, 6], [1, 0]])
    >>> gt_yx = np.array([[2, 1], [9, 7]])
    >>> mr, pt, minority, ties = stability_rates(gt_xy, gt_yx, 10)
    >>> mr.tolist(), pt.tolist(), minority.tolist(), ties.tolist()
    ([0.15, 0.05], [0.0, 0.3], [3, 1], [0, 6])
    """
    gt_xy = np.asarray(gt_xy, np.int64)
    gt_yx = np.asarray(gt_yx, np.int64)
    pairs = gt_xy.shape[0]
    minority = np.minimum(gt_xy, gt_yx).sum(axis=0)
    ties = (samples - gt_xy - gt_yx).sum(axis=0)
    total = pairs * samples
    return minority / total, ties / total, minority, ties


def stability_table(rows: Sequence[tuple[str, np.ndarray, np.ndarray]],
                    fuzziness: Sequence[float], samples: int) -> pa.Table:
    """The ``stability`` table (:mod:`irsim.tables`): metric, fuzziness, minority_rate,
    prop_ties, ``minority``, ``ties``, ``comparisons`` = ``|C| B``.

    Parameters
    ----------
    rows : sequence of (metric, gt_xy, gt_yx)
        Per-metric counters over all samples.
    fuzziness : sequence of float
    samples : int

    Examples
    --------
    >>> t = stability_table([("AP", np.array([[8]]), np.array([[2]]))], [0.05], 10)
    >>> t.column_names
    ['metric', 'fuzziness', 'minority_rate', 'prop_ties', 'minority', 'ties', 'comparisons']
    >>> t.to_pylist()[0]["minority_rate"]
    0.2
    """
    out: dict[str, list] = {k: [] for k in schema("stability").names}
    for metric, gt_xy, gt_yx in rows:
        mr, pt, minority, ties = stability_rates(gt_xy, gt_yx, samples)
        for j, f in enumerate(fuzziness):
            out["metric"].append(metric)
            out["fuzziness"].append(float(f))
            out["minority_rate"].append(float(mr[j]))
            out["prop_ties"].append(float(pt[j]))
            out["minority"].append(int(minority[j]))
            out["ties"].append(int(ties[j]))
            out["comparisons"].append(int(np.shape(gt_xy)[0] * samples))
    return table("stability", out)
