"""Kendall's tau-b from the signs of item-pair differences: one implementation for every
study (discpower's rank correlation between metrics, test_errors' dependence between systems).

For two rankings of ``k`` items, ``S = sum over item pairs of sign(D_1) sign(D_2)``
(concordant minus discordant pairs) and the pairs tied under each ranking ``t_1, t_2`` give
tau-b ``= S / sqrt((n0 - t_1)(n0 - t_2))`` with ``n0 = k(k-1)/2`` (tau-a when there are no
ties; what :func:`scipy.stats.kendalltau` computes by default). These are integer sums over
pairs, so blocks of pairs add up in any order. Sakai's Z0 test (SIGIR 2006, Eq. 12):
``Z0 = |tau| / sqrt(2(2k+5) / (9k(k-1)))``, standard normal under no correlation.

Every ranking of means follows the tie rule: means equal within
:data:`~irsim.stats.ties.TIE_RTOL` are made equal first (:func:`~irsim.stats.ties.snap_ties`;
the pair signs of a study are those of its snapped means), and tau_AP with ties is its mean
over every order of the tied items (:func:`tau_ap`), never the order of the input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as sps

from irsim.stats.ties import snap_ties

__all__ = ["pair_signs", "concordance", "ties", "tau_b", "tau_b_matrix", "z0_test", "tau_ap",
           "ranks", "rank_changes", "top_k_overlap", "RankAgreement", "rank_agreement"]


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


def tau_b(conc: np.ndarray, ties1: np.ndarray, ties2: np.ndarray, systems: int
                ) -> np.ndarray:
    """Tau-b from concordance sums and tie counts (NaN when a ranking is all tied).

    Examples
    --------
    >>> from scipy.stats import kendalltau
    >>> x, y = np.array([1., 2., 3., 3.]), np.array([2., 1., 3., 4.])
    >>> a, b = np.triu_indices(4, 1)
    >>> s1, s2 = pair_signs(x[a] - x[b]), pair_signs(y[a] - y[b])
    >>> tau = tau_b(concordance(s1[:, None], s2[:, None]), ties(s1[:, None]),
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


def tau_b_matrix(scores: ArrayLike) -> np.ndarray:
    """Tau-b between every two rows of `scores` (rows = rankings, columns = items), at once:
    the sign products of all item pairs as one matrix product.

    Examples
    --------
    >>> from scipy.stats import kendalltau
    >>> x = np.array([[1, 2, 3, 4], [1, 3, 2, 4], [4, 3, 2, 1.], [1, 1, 2, 2]])
    >>> tau_b_matrix(x).round(4)[0].tolist()
    [1.0, 0.6667, -1.0, 0.8165]
    >>> bool(np.isclose(tau_b_matrix(x)[1, 3], kendalltau(x[1], x[3]).statistic))
    True
    """
    a = np.asarray(scores, np.float64)
    n = a.shape[1]
    iu = np.triu_indices(n, 1)
    sgn = np.sign(a[:, iu[1]] - a[:, iu[0]])  # (rows, n(n-1)/2)
    conc = sgn @ sgn.T
    tied = len(iu[0]) - np.count_nonzero(sgn, axis=1)
    return tau_b(conc, tied[:, None], tied[None, :], n)


def _reference_and_rankings(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    xv = np.asarray(x, np.float64)
    yv = np.asarray(y, np.float64)
    if xv.ndim != 1 or yv.shape[-1:] != xv.shape:
        raise ValueError(f"y must have the items of x on its last axis, got shapes {xv.shape} "
                         f"and {yv.shape}")
    if not (np.isfinite(xv).all() and np.isfinite(yv).all()):
        raise ValueError("scores must be finite")
    return xv, yv


def _tau_ap_one_way(truth: np.ndarray, est: np.ndarray) -> np.ndarray:
    """tau_AP of rankings by `est` (..., n) against the ranking by `truth` (..., n), both
    already snapped (:func:`~irsim.stats.ties.snap_ties`): its mean over every order of the
    items tied in `est` (and in `truth`), in closed form.

    As a sum over items ``v``, ``tau_AP = 2 / (n - 1) * sum_v E_v - 1`` with ``E_v`` the
    share of the items above ``v`` that `truth` also puts above it, ``C(pos v) / (pos v -
    1)`` (0 at the top). ``c(u, v)`` = 1, 1/2 or 0 as `truth` puts ``u`` above, level with
    or below ``v`` (the mean over the orders of a tie in `truth`). With ``L`` items above
    ``v`` in `est` and ``g - 1`` level with it, ``v`` is at ``L + k`` with probability
    ``1/g`` for each ``k = 1..g``, with ``k - 1`` of the others (a uniform subset) above it:
    ``E_v = (A S0 + B / (g - 1) S1) / g``, ``A`` and ``B`` the sums of ``c(u, v)`` over the
    items above and level, ``S0 = sum_k 1 / (L + k - 1)`` and ``S1 = sum_k (k - 1) / (L + k -
    1)`` over the ``k`` with ``L + k > 1``.
    """
    n = truth.shape[-1]
    tu, tv = truth[..., :, None], truth[..., None, :]  # [u, v]
    c = (tu > tv) + 0.5 * (tu == tv)  # u above v in truth: right (1), half (tie), wrong
    eu, ev = est[..., :, None], est[..., None, :]
    above = eu > ev
    level = eu == ev
    level &= ~np.eye(n, dtype=bool)
    L = above.sum(axis=-2)
    g = 1 + level.sum(axis=-2)
    A = np.where(above, c, 0.0).sum(axis=-2)
    B = np.where(level, c, 0.0).sum(axis=-2)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])
    s0 = np.where(g == 1, 1.0 / np.maximum(L, 1),  # no tie: exactly 1/L
                  harmonic[L + g - 1] - harmonic[np.maximum(L, 1) - 1])
    s0 = np.where(L + g > 1, s0, 0.0)
    s1 = (g - (L == 0)) - L * s0
    e = (A * s0 + np.where(g > 1, B / np.maximum(g - 1, 1), 0.0) * s1) / g
    e = np.sort(e, axis=-1)  # a sum in a fixed order: the same float in any item order
    return 2.0 / (n - 1) * e.sum(axis=-1) - 1.0


def tau_ap(x: ArrayLike, y: ArrayLike, *, symmetric: bool = False) -> np.ndarray:
    """AP rank correlation tau_AP (Yilmaz, Aslam and Robertson, SIGIR 2008) of rankings by
    `y` against the reference ranking by `x` (higher score = better), many rankings at once.

    ``tau_AP = 2 / (n - 1) * sum_{i=2..n} C(i) / (i - 1) - 1``, ``C(i)`` the items ranked
    above position ``i`` of the `y` ranking that the `x` ranking also puts above it: a swap
    near the top costs more than one near the bottom. It is asymmetric (`x` is the truth);
    ``symmetric=True`` averages both directions. Without ties and with both rankings the
    same it is 1; reversed, -1.

    Ties follow the tie rule: scores within :data:`~irsim.stats.ties.TIE_RTOL` of
    ``max(1, |score|)`` of each other are one score (:func:`~irsim.stats.ties.snap_ties`),
    and tau_AP is its mean over every order of the tied items, each equally likely (in
    closed form, not by enumeration), so it never depends on the order of the items: a pair
    tied in `x` counts as half correct, and tied items of `y` take each of their positions
    with equal chance. When every item is tied in `x` or in `y` it is 0 (tau-b is
    undefined there).

    Parameters
    ----------
    x : array_like, shape (n,) or (..., n)
        Reference scores (e.g. system means under the official qrels); broadcast against
        `y` (one reference per ranking, e.g. per bootstrap resample).
    y : array_like, shape (..., n)
        Scores of one or more other rankings of the same items.
    symmetric : bool

    Returns
    -------
    ndarray, shape (...)

    Examples
    --------
    >>> x = np.array([0.5, 0.4, 0.3, 0.2, 0.1])
    >>> tau_ap(x, np.stack([x, -x, [0.5, 0.4, 0.3, 0.1, 0.2], [0.4, 0.5, 0.3, 0.2, 0.1]]))
    ... # doctest: +NORMALIZE_WHITESPACE
    array([ 1. , -1. ,  0.875,  0.5 ])

    Ties: the mean over both orders of the two systems tied in `y`, and 0 when all are
    tied, whatever their order:

    >>> y = np.array([0.4, 0.4, 0.3, 0.2, 0.1])
    >>> float(tau_ap(x, y)), float(np.mean([tau_ap(x, y + [1e-3, 0, 0, 0, 0]),
    ...                                     tau_ap(x, y + [0, 1e-3, 0, 0, 0])]))
    (0.75, 0.75)
    >>> float(tau_ap(x, np.full(5, 0.2))), float(tau_ap(x[::-1], np.full(5, 0.2)))
    (0.0, 0.0)
    """
    xv = np.asarray(x, np.float64)
    yv = np.asarray(y, np.float64)
    if xv.ndim == 0 or xv.shape[-1] != yv.shape[-1] or yv.ndim == 0:
        raise ValueError(f"x and y must have the items on their last axis, got shapes "
                         f"{xv.shape} and {yv.shape}")
    if not (np.isfinite(xv).all() and np.isfinite(yv).all()):
        raise ValueError("scores must be finite")
    if xv.shape[-1] < 2:
        raise ValueError("tau_AP needs at least 2 items")
    return _tau_ap_snapped(snap_ties(xv), snap_ties(yv), symmetric)


def _tau_ap_snapped(xv: np.ndarray, yv: np.ndarray, symmetric: bool = False) -> np.ndarray:
    """:func:`tau_ap` of scores already snapped by :func:`~irsim.stats.ties.snap_ties`."""
    shape = np.broadcast_shapes(xv.shape, yv.shape)
    xb, yb = np.broadcast_to(xv, shape), np.broadcast_to(yv, shape)
    out = _tau_ap_one_way(xb, yb)
    if symmetric:
        out = 0.5 * (out + _tau_ap_one_way(yb, xb))
    return out


def ranks(scores: ArrayLike) -> np.ndarray:
    """Ranks (1 = highest score) along the last axis; ties share the best rank ("min").
    Ties follow the tie rule (:func:`~irsim.stats.ties.snap_ties`).

    Examples
    --------
    >>> ranks([0.2, 0.5, 0.2, 0.9]).tolist()
    [3, 2, 3, 1]
    >>> ranks([0.1 + 0.2, 0.3, 0.9]).tolist()   # 0.30000000000000004 ties with 0.3
    [2, 2, 1]
    """
    s = snap_ties(np.asarray(scores, np.float64))
    # rank = 1 + number of items with a strictly higher score
    return 1 + (s[..., None, :] > s[..., :, None]).sum(axis=-1)


def rank_changes(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Rank moves from the ranking by `x` to the ranking by `y`, largest first.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Scores of the same items (e.g. systems' means under two qrels).

    Returns
    -------
    order : ndarray of int, shape (n,)
        Items by decreasing ``|move|`` (ties: the better `x` rank first).
    move : ndarray of int, shape (n,)
        ``rank_x - rank_y`` per item: positive = moved up under `y`.

    Examples
    --------
    >>> order, move = rank_changes([0.9, 0.8, 0.7, 0.6], [0.7, 0.8, 0.9, 0.6])
    >>> order.tolist(), move.tolist()
    ([0, 2, 1, 3], [-2, 0, 2, 0])
    """
    xv, yv = _reference_and_rankings(x, y)
    if yv.ndim != 1:
        raise ValueError("rank_changes compares two rankings (1-d x and y)")
    rx, ry = ranks(xv), ranks(yv)
    move = rx - ry
    order = np.lexsort((rx, -np.abs(move)))
    return order, move


def top_k_overlap(x: ArrayLike, y: ArrayLike, k: int) -> np.ndarray:
    """Share of the `k` best items by `x` that are among the `k` best by `y` (per ranking
    of `y`); ties (:func:`~irsim.stats.ties.snap_ties`) at the cut are broken by item order.

    Examples
    --------
    >>> x = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    >>> top_k_overlap(x, np.stack([x, [0.1, 0.8, 0.7, 0.6, 0.5]]), 2).tolist()
    [1.0, 0.5]
    >>> top_k_overlap(x, [0.1, 0.8, 0.7, 0.6, 0.5], 1).tolist()  # top-1 agreement
    0.0
    """
    xv, yv = _reference_and_rankings(x, y)
    xv, yv = snap_ties(xv), snap_ties(yv)
    n = xv.shape[-1]
    if isinstance(k, bool) or not 1 <= int(k) <= n:
        raise ValueError(f"k must be in 1..{n}, got {k!r}")
    k = int(k)
    top_x = np.zeros(n, dtype=bool)
    top_x[np.argsort(-xv, kind="stable")[:k]] = True
    top_y = np.argsort(-yv, axis=-1, kind="stable")[..., :k]
    return top_x[top_y].sum(axis=-1) / k


@dataclass(frozen=True)
class RankAgreement:
    """Agreement of two system rankings (by mean score) with bootstrap-over-topics
    percentile intervals.

    Attributes
    ----------
    tau_b, tau_ap, spearman : float
        Observed Kendall's tau-b, tau_AP (reference = the first ranking) and Spearman's rho
        of the two rankings by mean score.
    tau_b_ci, tau_ap_ci, spearman_ci : tuple of float
        ``(low, high)`` percentile intervals over the resamples where the value is defined.
    B : int
        Bootstrap resamples.
    confidence_level : float
    """

    tau_b: float
    tau_ap: float
    spearman: float
    tau_b_ci: tuple[float, float]
    tau_ap_ci: tuple[float, float]
    spearman_ci: tuple[float, float]
    B: int
    confidence_level: float


def _tau_b_columns(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """tau-b between columns of a and b (items, samples), from pair signs."""
    n = a.shape[0]
    i, j = np.triu_indices(n, 1)
    sa = pair_signs(a[j] - a[i])
    sb = pair_signs(b[j] - b[i])
    return tau_b(concordance(sa, sb), ties(sa), ties(sb), n)


def _spearman_columns(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ra = sps.rankdata(a, axis=0)
    rb = sps.rankdata(b, axis=0)
    ra = ra - ra.mean(axis=0)
    rb = rb - rb.mean(axis=0)
    den = np.sqrt((ra * ra).sum(axis=0) * (rb * rb).sum(axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (ra * rb).sum(axis=0) / den, np.nan)


def rank_agreement(x: ArrayLike, y: ArrayLike, *, B: int = 1000, seed: int = 0,
                   confidence_level: float = 0.95, study: str = "stats/rank_agreement",
                   key: tuple[int, ...] = ()) -> RankAgreement:
    """Kendall's tau-b, tau_AP and Spearman's rho between the system rankings of two
    score matrices of the same systems and topics, with bootstrap-over-topics intervals.

    Topics are resampled with replacement (count matrices of
    :func:`irsim.sampling.topics.bootstrap_counts`, keyed by ``(seed, study, key)``), the
    same topics for both matrices; resampled system means are exact sums
    (:class:`irsim.exact.Exact`), the same on every machine, and means equal in exact
    arithmetic are made equal (:func:`~irsim.stats.ties.snap_ties`) before they are ranked,
    so every statistic is that of the exact means (tau-b and rho as
    :func:`scipy.stats.kendalltau` and :func:`scipy.stats.spearmanr` give them there).

    Parameters
    ----------
    x : array_like, shape (systems, topics)
        Per-topic scores under the reference (e.g. the official qrels).
    y : array_like, shape (systems, topics)
        The same systems and topics under another qrels.
    B, seed, confidence_level, study, key
        Bootstrap size, random stream and interval level.

    Returns
    -------
    RankAgreement

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, (8, 30)) + np.linspace(0, 0.5, 8)[:, None]
    >>> y = x + rng.normal(0, 0.2, x.shape)
    >>> r = rank_agreement(x, y, B=500, seed=1)
    >>> from scipy.stats import kendalltau
    >>> bool(np.isclose(r.tau_b, kendalltau(x.mean(1), y.mean(1)).statistic))
    True
    >>> bool(r.tau_b_ci[0] <= r.tau_b <= r.tau_b_ci[1])
    True
    """
    from irsim.exact import Exact
    from irsim.rng import REPLICATE_BLOCK
    from irsim.sampling.topics import bootstrap_counts
    from irsim.stats._validation import check_confidence_level, check_int

    xv, yv = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if xv.ndim != 2 or xv.shape != yv.shape:
        raise ValueError(f"x and y must be (systems, topics) of the same shape, got "
                         f"{xv.shape} and {yv.shape}")
    S, T = xv.shape
    if S < 2 or T < 1:
        raise ValueError(f"need at least 2 systems and 1 topic, got {S} x {T}")
    level = check_confidence_level(confidence_level)
    B = check_int("B", B, minimum=1)
    ex, ey = Exact(xv, l1=T), Exact(yv, l1=T)
    mx = snap_ties(ex.total(axis=1)[:, None] / T, axis=0)
    my = snap_ties(ey.total(axis=1)[:, None] / T, axis=0)
    obs = (float(_tau_b_columns(mx, my)[0]), float(_tau_ap_snapped(mx[:, 0], my[:, 0])),
           float(_spearman_columns(mx, my)[0]))
    stars: list[list[np.ndarray]] = [[], [], []]
    for start in range(0, B, REPLICATE_BLOCK):  # bounded memory: one block at a time
        stop = min(B, start + REPLICATE_BLOCK)
        c = bootstrap_counts(seed, study, T, start, stop, key=key).T  # (T, m)
        bx = snap_ties((ex @ c) / T, axis=0)  # (S, m) exact means, ties snapped
        by = snap_ties((ey @ c) / T, axis=0)
        stars[0].append(_tau_b_columns(bx, by))
        stars[1].append(_tau_ap_snapped(bx.T, by.T))
        stars[2].append(_spearman_columns(bx, by))
    alpha = (1.0 - level) / 2.0

    def interval(parts: list[np.ndarray]) -> tuple[float, float]:
        v = np.concatenate(parts)
        v = v[~np.isnan(v)]
        if len(v) == 0:
            return float("nan"), float("nan")
        lo, hi = np.quantile(v, [alpha, 1.0 - alpha])
        return float(lo), float(hi)

    return RankAgreement(*obs, *(interval(p) for p in stars), B, level)
