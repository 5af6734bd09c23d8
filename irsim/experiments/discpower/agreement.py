"""Agreement between significance tests over all system pairs (discpower).

Smucker, Allan & Carterette (CIKM 2007) compare tests by their p-values on the same pairs:
how strongly they correlate, their root-mean-square difference, and how often one test finds
a pair significant and the other does not. discpower's ``agreement`` option writes one row
per metric, pair of tests and alpha (table ``test_agreement``) from the ASLs of the ``asl``
table (uncorrected: a pair is significant when ``asl < alpha``, as in ``discpower``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from irsim.tables import table

__all__ = ["agreement_rows", "agreement_table"]


def agreement_rows(p_a: np.ndarray, p_b: np.ndarray, alphas: Sequence[float]) -> list[dict]:
    """Agreement of two tests' p-values on the same pairs, one dict per alpha.

    Pairs where either p-value is NaN are left out (``pairs`` counts the others).

    Parameters
    ----------
    p_a, p_b : ndarray, shape (pairs,)
    alphas : sequence of float

    Returns
    -------
    list of dict
        ``alpha, pairs, pearson_r, rmse, both, only_a, only_b, neither`` (the last four:
        shares of the pairs significant by both tests, by test a only, by b only, by
        neither; ``pearson_r`` is NaN when either test's p-values are constant).

    Examples
    --------
    >>> rows = agreement_rows(np.array([0.01, 0.2, 0.03, 0.5]),
    ...                       np.array([0.02, 0.04, 0.3, 0.6]), [0.05])
    >>> r = rows[0]
    >>> r["pairs"], r["both"], r["only_a"], r["only_b"], r["neither"]
    (4, 0.25, 0.25, 0.25, 0.25)
    >>> round(r["rmse"], 4), round(r["pearson_r"], 4)
    (0.1648, 0.7554)
    """
    ok = ~(np.isnan(p_a) | np.isnan(p_b))
    a, b = p_a[ok], p_b[ok]
    n = int(a.size)
    if n:
        da, db = a - a.mean(), b - b.mean()
        den = np.sqrt(np.dot(da, da) * np.dot(db, db))
        r = float(np.dot(da, db) / den) if den > 0 else float("nan")
        rmse = float(np.sqrt(np.mean((a - b) ** 2)))
    else:
        r = rmse = float("nan")
    rows = []
    for alpha in alphas:
        sa, sb = a < alpha, b < alpha
        counts = [int(np.count_nonzero(x)) for x in (sa & sb, sa & ~sb, ~sa & sb, ~sa & ~sb)]
        shares = [c / n if n else float("nan") for c in counts]
        rows.append(dict(zip(("both", "only_a", "only_b", "neither"), shares, strict=True),
                         alpha=float(alpha), pairs=n, pearson_r=r, rmse=rmse))
    return rows


def agreement_table(by_metric: Sequence[tuple[str, Mapping[str, np.ndarray]]],
                    alphas: Sequence[float]) -> pa.Table:
    """Table ``test_agreement``: every metric, every pair of its tests (in the order given),
    every alpha.

    Parameters
    ----------
    by_metric : sequence of (metric, {test: p-values of all pairs})
    alphas : sequence of float

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    >>> p = {"t": np.array([0.01, 0.2, 0.03]), "sign": np.array([0.02, 0.5, 0.25]),
    ...      "wilcoxon": np.array([0.01, 0.3, 0.04])}
    >>> t = agreement_table([("AP", p)], [0.05])
    >>> t.select(["test_a", "test_b", "only_a"]).to_pydict()["test_b"]
    ['sign', 'wilcoxon', 'wilcoxon']
    """
    rows = []
    for metric, pvalues in by_metric:
        tests = list(pvalues)
        for i, ta in enumerate(tests):
            for tb in tests[i + 1:]:
                for row in agreement_rows(np.asarray(pvalues[ta], np.float64),
                                          np.asarray(pvalues[tb], np.float64), alphas):
                    rows.append({"metric": metric, "test_a": ta, "test_b": tb, **row})
    return table("test_agreement", rows)
