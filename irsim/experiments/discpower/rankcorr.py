"""Kendall's tau between the system rankings of two metrics, with the Z0 test and the
bootstrap standard error (Sakai 2006, Section 4).

A helper of the discpower experiment (not an experiment of its own). Tau-b and the Z0 test
are :mod:`irsim.stats.kendall`'s, computed from the signs of the system-pair differences
``D = M(X) - M(Y)`` under the two metrics, which the experiment already has for every pair
and bootstrap sample, of means snapped by the tie rule (:func:`irsim.stats.ties.snap_ties`;
concordance sums and tie counts are integers, so blocks of pairs add up
in any order). The bootstrap standard
error is the standard deviation (ddof=1) of ``tau*b`` computed on every bootstrap sample
``Q*b`` of the paired test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from irsim.stats.kendall import concordance, pair_signs, tau_b, ties, z0_test
from irsim.stats.resample import sample_differences
from irsim.stats.ties import snap_ties
from irsim.tables import schema, table

__all__ = ["tau_matrices", "rankcorr_table"]

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
    # the tie rule, as on the bootstrap samples (ShardKernel.sample_scores)
    signs = [pair_signs(sample_differences(snap_ties(np.asarray(s, np.float64), scale=0.0)
                                           [:, None], ia, ib)[0]) for s in scores]
    m = len(scores)
    obs = np.full((m, m), np.nan)
    boot = np.full((m, m, len(tie_counts[0])), np.nan)
    for x in range(m):
        for y in range(x + 1, m):
            obs[x, y] = tau_b(concordance(signs[x], signs[y]), ties(signs[x]),
                                    ties(signs[y]), k)[0]
            boot[x, y] = tau_b(conc[x, y], tie_counts[x], tie_counts[y], k)
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
