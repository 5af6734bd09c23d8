"""Kendall's tau between the system rankings of two metrics, with the Z0 test and the
bootstrap standard error (Sakai 2006, Section 4).

A helper of the discpower experiment (not an experiment of its own). Tau is computed from
the signs of the system-pair differences ``D = M(X) - M(Y)`` under the two metrics, which
the experiment already has for every pair and bootstrap sample:
``S = sum_C sign(D_1) sign(D_2)`` (concordant minus discordant pairs) and the pairs tied
under each metric; tau-b ``= S / sqrt((n0 - t1)(n0 - t2))`` with ``n0 = k(k-1)/2`` for ``k``
systems (tau-a when there are no ties; the same as :func:`scipy.stats.kendalltau`). These
are integer sums over pairs, so blocks of pairs add up in any order.

The Z0 test (Sakai, Eq. 12): ``Z0 = |tau| / sqrt(2(2k+5) / (9k(k-1)))`` is standard normal
under no correlation; the two-sided p-value is ``2 (1 - Phi(Z0))``. The bootstrap standard
error is the standard deviation (ddof=1) of ``tau*b`` computed on every bootstrap sample
``Q*b`` of the paired test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from irsim.stats.resample import sample_differences
from irsim.tables import schema, table

__all__ = ["pair_signs", "concordance", "ties", "kendall_tau", "z0_test", "tau_matrices",
           "rankcorr_table"]

def pair_signs(d: np.ndarray) -> np.ndarray:
    """Signs (int8) of pair differences whose exact ties are already 0.

    Examples
    --------
    >>> pair_signs(np.array([0.2, 0.0, -1e-3])).tolist()
    [1, 0, -1]
    """
    return np.sign(d).astype(np.int8)


def concordance(s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """``sum over pairs of sign1 * sign2`` (concordant minus discordant), per sample.

    Parameters
    ----------
    s1, s2 : ndarray of int8, shape (pairs, samples)

    Returns
    -------
    ndarray of int64, shape (samples,)

    Examples
    --------
    >>> s1 = np.array([[1, 1], [1, -1], [-1, 0]], np.int8)
    >>> s2 = np.array([[1, -1], [1, -1], [1, 1]], np.int8)
    >>> concordance(s1, s2).tolist()
    [1, 0]
    """
    return np.multiply(s1, s2, dtype=np.int64).sum(axis=0)


def ties(s: np.ndarray) -> np.ndarray:
    """Pairs with sign 0 (tied systems), per sample.

    Examples
    --------
    >>> ties(np.array([[1, 0], [0, 0]], np.int8)).tolist()
    [1, 2]
    """
    return np.count_nonzero(s == 0, axis=0).astype(np.int64)


def kendall_tau(conc: np.ndarray, ties1: np.ndarray, ties2: np.ndarray, systems: int
                ) -> np.ndarray:
    """Tau-b from concordance sums and tie counts (NaN when a ranking is all tied).

    Examples
    --------
    >>> from scipy.stats import kendalltau
    >>> x, y = np.array([1., 2., 3., 3.]), np.array([2., 1., 3., 4.])
    >>> a, b = np.triu_indices(4, 1)
    >>> s1, s2 = pair_signs(x[a] - x[b]), pair_signs(y[a] - y[b])
    >>> tau = kendall_tau(concordance(s1[:, None], s2[:, None]), ties(s1[:, None]),
    ...                   ties(s2[:, None]), 4)
    >>> bool(np.isclose(tau[0], kendalltau(x, y).statistic))
    True
    """
    n0 = systems * (systems - 1) // 2
    denom = np.sqrt((n0 - np.asarray(ties1, np.float64)) * (n0 - np.asarray(ties2, np.float64)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, np.asarray(conc, np.float64) / denom, np.nan)


def z0_test(tau: float, systems: int) -> tuple[float, float]:
    """Sakai's Z0 statistic for Kendall's tau over `systems` systems and its two-sided
    p-value.

    Examples
    --------
    >>> z0, p = z0_test(0.34, 30)
    >>> round(z0, 3), round(p, 4)  # Sakai: for 30 runs, significant at 0.01 above 0.34
    (2.639, 0.0083)
    """
    k = systems
    if k < 2 or not math.isfinite(tau):
        return float("nan"), float("nan")
    z0 = abs(tau) / math.sqrt(2.0 * (2 * k + 5) / (9.0 * k * (k - 1)))
    return z0, float(2.0 * sps.norm.sf(z0))


def tau_matrices(scores: Sequence[np.ndarray], conc: Mapping[tuple[int, int], np.ndarray],
                 tie_counts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Observed and bootstrap tau of every pair of metrics ``x < y``.

    Parameters
    ----------
    scores : sequence of ndarray, shape (systems,)
        Per metric, the systems' scores on the whole topic set.
    conc : mapping of (x, y) to ndarray, shape (B,)
        Per metric pair ``x < y``, :func:`concordance` on every bootstrap sample.
    tie_counts : sequence of ndarray, shape (B,)
        Per metric, :func:`ties` on every bootstrap sample.

    Returns
    -------
    tau_obs : ndarray, shape (m, m)
    tau_boot : ndarray, shape (m, m, B)
        Upper triangles filled (the input of :func:`rankcorr_table`), NaN elsewhere.

    Examples
    --------
    >>> obs, boot = tau_matrices([np.array([1., 2., 3.]), np.array([3., 1., 2.])],
    ...                          {(0, 1): np.array([1, -3])}, [np.zeros(2), np.zeros(2)])
    >>> round(float(obs[0, 1]), 4), boot[0, 1].tolist()
    (-0.3333, [0.3333333333333333, -1.0])
    """
    k = len(scores[0])
    ia, ib = np.triu_indices(k, 1)
    signs = [pair_signs(sample_differences(np.asarray(s)[:, None], ia, ib)[0]) for s in scores]
    m = len(scores)
    obs = np.full((m, m), np.nan)
    boot = np.full((m, m, len(tie_counts[0])), np.nan)
    for x in range(m):
        for y in range(x + 1, m):
            obs[x, y] = kendall_tau(concordance(signs[x], signs[y]), ties(signs[x]),
                                    ties(signs[y]), k)[0]
            boot[x, y] = kendall_tau(conc[x, y], tie_counts[x], tie_counts[y], k)
    return obs, boot


def rankcorr_table(names: Sequence[str], tau_obs: np.ndarray, tau_boot: np.ndarray,
                   systems: int) -> pa.Table:
    """The ``rankcorr`` table for every pair of metrics ``a < b`` (in `names` order).

    Parameters
    ----------
    names : sequence of str
        Metric names (m of them).
    tau_obs : ndarray, shape (m, m)
        Observed tau of every metric pair (upper triangle used).
    tau_boot : ndarray, shape (m, m, B)
        Tau of every metric pair on every bootstrap sample (upper triangle used).
    systems : int

    Returns
    -------
    pyarrow.Table
        metric_a, metric_b, tau, se_boot (sd of ``tau*b``, ddof=1, over the samples where
        tau is defined), z0, p_value, plus extra columns ``systems``, ``tau_boot_mean`` and
        ``replicates`` (samples with a defined ``tau*b``).

    Examples
    --------
    >>> obs = np.array([[1.0, 0.8], [0.8, 1.0]])
    >>> boot = np.zeros((2, 2, 3)); boot[0, 1] = [0.7, 0.8, 0.9]
    >>> row = rankcorr_table(["AP", "P@10"], obs, boot, 30).to_pylist()[0]
    >>> row["metric_a"], row["metric_b"], row["tau"], round(row["se_boot"], 6)
    ('AP', 'P@10', 0.8, 0.1)
    """
    cols: dict[str, list] = {name: [] for name in schema("rankcorr").names}
    m = len(names)
    for a in range(m):
        for b in range(a + 1, m):
            boot = np.asarray(tau_boot[a, b], np.float64)
            ok = boot[np.isfinite(boot)]
            se = float(np.std(ok, ddof=1)) if len(ok) > 1 else float("nan")
            tau = float(tau_obs[a, b])
            z0, p = z0_test(tau, systems)
            cols["metric_a"].append(names[a])
            cols["metric_b"].append(names[b])
            cols["tau"].append(tau)
            cols["se_boot"].append(se)
            cols["z0"].append(z0)
            cols["p_value"].append(p)
            cols["systems"].append(int(systems))
            cols["tau_boot_mean"].append(float(ok.mean()) if len(ok) else float("nan"))
            cols["replicates"].append(int(len(ok)))
    return table("rankcorr", cols)
