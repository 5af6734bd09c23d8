"""The budget study's trials: which topics or judgments people label, every estimator, and
how each compares with full gold judging.

A trial draws one uniform key per sampling unit (topic, or pooled (topic, document) pair);
a budget of ``n`` takes the ``n`` units with the smallest keys (a simple random sample
without replacement), so the budgets of one trial are nested samples and every estimator
and metric sees the same people's labels (common random numbers). The stratified
estimator ranks the keys within each stratum: its pilot (a proportional share ``pilot`` of
the budget, at least 2 per stratum) and then the Neyman allocation of the whole budget
from the pilot's residual standard deviations take the smallest keys of each stratum.

Every sum over a sample is one matrix product of the 0/1 selection of a block of
:data:`KEY_BLOCK` trials with the units' values (:class:`Groups`: one product per stratum,
the units sorted by stratum once; the per-topic sums of the judgments unit's decisions are
the systems' only, the pairs' variances following from the systems' covariance matrices
over topics). Blocks are aligned on the trial index and always computed whole, so every
product has the same shape whatever the shard: the tables are bit-identical on one machine
for any shard size or executor; across BLAS kernels floats may differ in their last bits
(the golden tables' tolerance), and every decision on them (coverage, ties of the ranking,
zero variances and the tuned weights they decide, rejections) follows the tie rule
(:mod:`irsim.stats.ties`). Items are the systems and then every pair of systems (the
difference a - b, a < b).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy import stats as sps

from irsim.experiments.budget.prepare import BudgetData
from irsim.rng import blocked_draws
from irsim.stats.decisions import CATEGORIES, decision_categories
from irsim.stats.kendall import concordance, pair_signs, tau_ap, tau_b, ties
from irsim.stats.multiple import reject
from irsim.stats.ppi import Moments, finite_ppi, neyman_allocation
from irsim.stats.ties import TIE_RTOL, snap_ties

__all__ = ["ESTIMATORS", "TARGET_STATS", "Layout", "trials"]

#: The estimators, in table order.
ESTIMATORS = ("proxy", "gold", "ppi", "ppi_pp", "stratified")
#: Per target (the systems' means, the pairs' differences): what a trial records.
TARGET_STATS = ("coverage", "width", "error", "sq_error")
#: The random stream of the trials' keys.
STREAM = "budget/keys"
#: Trials per block of the keys' random stream (fixed: the keys do not depend on the
#: shard size).
KEY_BLOCK = 50


@dataclass(frozen=True)
class Layout:
    """The last axis of a trial's record: ``TARGET_STATS`` for the means and for the
    differences, ``defined``, tau-b, tau_AP, then the decision categories per
    correction."""

    corrections: int

    @property
    def size(self) -> int:
        return 2 * len(TARGET_STATS) + 3 + self.corrections * len(CATEGORIES)

    def stat(self, target: int, name: str) -> int:
        return target * len(TARGET_STATS) + TARGET_STATS.index(name)

    DEFINED = 2 * len(TARGET_STATS)
    TAU_B = DEFINED + 1
    TAU_AP = DEFINED + 2

    def decisions(self, c: int) -> slice:
        start = self.TAU_AP + 1 + c * len(CATEGORIES)
        return slice(start, start + len(CATEGORIES))


class Groups:
    """Units in groups (strata, topics), sorted by group once.

    :meth:`sort` puts weights ``w`` (K, units) and columns ``z`` (units, C) in the groups'
    order; ``sums(mask, (w, z))`` is then ``(trials, groups, K, C)``: for each trial (row
    of the 0/1 `mask`, units in their own order), each group and each weight the sum of
    ``w[k] * z`` over the group's selected units. Each group is a contiguous slice of the
    sorted units: one matrix product per group covers every trial of the block, every
    weight and every column.
    """

    def __init__(self, groups: np.ndarray, G: int | None = None):
        groups = np.asarray(groups, np.int64)
        self.of = groups
        self.G = int(groups.max()) + 1 if G is None else G
        self.sizes = np.bincount(groups, minlength=self.G)
        self.order = np.argsort(groups, kind="stable")
        self.bounds = np.concatenate([[0], np.cumsum(self.sizes)])

    def whole(self) -> Groups:
        """Every unit in one group, in this grouping's order (its sorted arrays serve)."""
        one = Groups(np.zeros(len(self.of), np.int64), 1)
        one.order = self.order
        return one

    def sort(self, w: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = np.atleast_2d(np.asarray(w, np.float64))
        return (np.ascontiguousarray(w[:, self.order]),
                np.ascontiguousarray(z[self.order], dtype=np.float64))

    def sums(self, mask: np.ndarray, wz: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        w, z = wz
        R, K = mask.shape[0], w.shape[0]
        sel = mask[:, self.order]
        out = np.zeros((self.G, R * K, z.shape[1]))
        for g in np.flatnonzero(self.sizes):
            a, b = self.bounds[g], self.bounds[g + 1]
            lhs = (sel[:, None, a:b] * w[None, :, a:b]).reshape(R * K, b - a)
            np.matmul(lhs, z[a:b], out=out[g])
        return out.reshape(self.G, R, K, z.shape[1]).transpose(1, 0, 2, 3)


def _pvalues(est: np.ndarray, var: np.ndarray, df: float, alpha: float) -> np.ndarray:
    """Two-sided t p-values of ``est / sqrt(var)`` (0 for a nonzero estimate without
    variance, 1 for zero), computed where they can be rejected: a p-value above `alpha`
    is given as 1 (no correction rejects it, and none of the others changes rank)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(est) / np.sqrt(var)
    crit = special.stdtrit(df, 1.0 - alpha / 2)
    p = np.ones_like(t)
    live = (var > 0) & (t >= crit * (1 - 1e-9))
    p[live] = 2 * special.stdtr(df, -t[live])
    p[(var <= 0) & (est != 0)] = 0.0
    return p


def _items(x: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Systems' values (last axis) followed by every pair's difference a - b."""
    return np.concatenate([x, x[..., ia] - x[..., ib]], axis=-1)


class _Values:
    """The units' gold values ``y`` and proxy values ``f`` for every item, sorted once for
    each grouping the kernel sums over: the strata (and every unit, in the same order),
    and for the judgments unit the topics and the topic x stratum cells.

    Judgments: ``y = wy * z``, ``f = wf * z`` (a pair's label values times its weight in
    each item's score, `z` shared by every proxy: y^2 = wy^2 z^2...). Topics: the
    per-topic scores with unit weights."""

    def __init__(self, strata: Groups, S: int, *, y: np.ndarray | None = None,
                 f: np.ndarray | None = None, wy: np.ndarray | None = None,
                 wf: np.ndarray | None = None, z: np.ndarray | None = None,
                 z2: np.ndarray | None = None, by_topic: tuple[Groups, Groups] | None = None):
        self.S = S
        g = strata
        if wy is None:  # dense
            one = np.ones((1, len(y)))
            self._mom = [g.sort(one, np.concatenate([y, y * y, f, f * f, y * f], axis=1))]
            r = y[:, :S] - f[:, :S]
            self._res = [g.sort(one, np.concatenate([r, r * r], axis=1))]
            self._sys = None
            return
        zs, z2s = z[:, :S], z2[:, :S]
        self._mom = [g.sort(np.stack([wy, wf]), z),
                     g.sort(np.stack([wy * wy, wf * wf, wy * wf]), z2)]
        d = wy - wf
        self._res = [g.sort(d, zs), g.sort(d * d, z2s)]
        self._sys = [b.sort(np.stack([wy, wf]), zs) for b in by_topic]

    def moments(self, groups: Groups, mask: np.ndarray) -> list[np.ndarray]:
        """Per group: sums of y, y^2, f, f^2, y f, each (trials, groups, I)."""
        if len(self._mom) == 1:
            s = groups.sums(mask, self._mom[0])[:, :, 0]
            return np.split(s, 5, axis=-1)
        s1, s2 = (groups.sums(mask, wz) for wz in self._mom)
        return [s1[:, :, 0], s2[:, :, 0], s1[:, :, 1], s2[:, :, 1], s2[:, :, 2]]

    def residuals(self, groups: Groups, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per stratum: sums of the systems' ``r = y - f`` and ``r^2``."""
        if len(self._res) == 1:
            s = groups.sums(mask, self._res[0])[:, :, 0]
            return s[..., :self.S], s[..., self.S:]
        return tuple(groups.sums(mask, wz)[:, :, 0] for wz in self._res)

    def systems(self, groups: Groups, by: int, mask: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """Judgments: per topic (`by` 0) or topic x stratum (1) the sums of the systems'
        y and f, each (trials, groups, S)."""
        s = groups.sums(mask, self._sys[by])
        return s[:, :, 0], s[:, :, 1]


@dataclass
class _Cell:
    """One (unit, metric, proxy): the units' values, their strata and the truth."""

    values: _Values
    truth: np.ndarray        # (I,)
    scale: float             # estimand = scale * population mean
    pairs: tuple[np.ndarray, np.ndarray]
    strata: Groups
    everything: Groups       # every unit in one group
    pop_f: np.ndarray        # (I,) the proxy's mean over every unit
    pop_f_strata: np.ndarray  # (H, I) the proxy's mean per stratum
    proxy_topic: np.ndarray  # (T, I) per-topic proxy totals (in units of the cell)
    by_topic: tuple[Groups, Groups] | None = None  # judgments: by topic, by topic x stratum

    @property
    def judgments(self) -> bool:
        return self.by_topic is not None

    @property
    def S(self) -> int:
        return self.values.S


def _make_cell(truth: np.ndarray, scale: float, pairs: tuple[np.ndarray, np.ndarray],
               strata: np.ndarray, topic_of: np.ndarray | None, T: int, **values
               ) -> _Cell:
    N = len(strata)
    S = len(truth) - len(pairs[0])
    groups = Groups(strata)
    by_topic = None
    if topic_of is not None:
        by_topic = (Groups(topic_of, T), Groups(topic_of * groups.G + strata, T * groups.G))
    v = _Values(groups, S, by_topic=by_topic, **values)
    allm = np.ones((1, N), bool)
    f_strata = v.moments(groups, allm)[2][0]
    pop_f_strata = f_strata / np.maximum(groups.sizes, 1)[:, None]
    pop_f = f_strata.sum(axis=0) / N
    if topic_of is None:  # topics: the units are the topics
        proxy_topic = values["f"]
    else:
        proxy_topic = _items(v.systems(by_topic[0], 0, allm)[1][0], *pairs)
    return _Cell(v, truth, scale, pairs, groups, groups.whole(), pop_f, pop_f_strata,
                 proxy_topic, by_topic)


def _record(out: np.ndarray, est: np.ndarray, half: np.ndarray, truth: np.ndarray,
            S: int, lay: Layout) -> None:
    """Coverage, width and errors of intervals ``est +- half`` for the means (the first
    `S` items) and the differences into `out` (trials, K)."""
    tol = TIE_RTOL * (1.0 + np.abs(truth))
    err = est - truth
    covered = np.abs(err) <= half + tol
    for t, sl in enumerate((slice(0, S), slice(S, None))):
        out[:, lay.stat(t, "coverage")] = covered[:, sl].mean(axis=1)
        out[:, lay.stat(t, "width")] = (2 * half[:, sl]).mean(axis=1)
        out[:, lay.stat(t, "error")] = err[:, sl].mean(axis=1)
        out[:, lay.stat(t, "sq_error")] = (err[:, sl] ** 2).mean(axis=1)
    out[:, lay.DEFINED] = 1.0


def _rank_and_decide(out: np.ndarray, est: np.ndarray, var_dec: np.ndarray, df,
                     truth: np.ndarray, ref_reject: np.ndarray, S: int, alpha: float,
                     corrections: tuple[str, ...], lay: Layout) -> None:
    """tau-b and tau_AP of the estimated system means against the truth, and the decision
    categories of every pair against the full-gold decisions (ties of means and zero
    differences by the tie rule)."""
    tol = TIE_RTOL * (1.0 + np.abs(truth))
    ia, ib = np.triu_indices(S, 1)
    means = snap_ties(est[:, :S], axis=-1)
    d_est = means[:, ia] - means[:, ib]
    d_true = truth[ia] - truth[ib]
    s_est = pair_signs(d_est).T
    s_true = pair_signs(np.where(np.abs(d_true) <= tol[ia], 0.0, d_true))[:, None]
    out[:, lay.TAU_B] = tau_b(concordance(np.broadcast_to(s_true, s_est.shape), s_est),
                              ties(s_true), ties(s_est), S)
    out[:, lay.TAU_AP] = tau_ap(truth[:S], means)
    diff, vdiff, dtrue = est[:, S:], var_dec[:, S:], truth[S:]
    scale = TIE_RTOL * (1.0 + np.abs(est[:, ia]) + np.abs(est[:, ib]))
    diff = np.where(np.abs(diff) <= scale, 0.0, diff)
    vdiff = np.where(vdiff <= scale * scale, 0.0, vdiff)
    p = _pvalues(diff, vdiff, float(df), alpha)
    for c, corr in enumerate(corrections):
        rej = reject(p, alpha, corr, axis=-1)
        out[:, lay.decisions(c)] = decision_categories(ref_reject[c], dtrue, rej, diff)


def _strata_ranks(keys: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Rank (0-based) of each unit's key within its stratum, per trial row."""
    R, N = keys.shape
    order = np.argsort(strata[None, :] + keys, axis=1, kind="stable")
    sizes = np.bincount(strata)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pos = np.arange(N)[None, :] - starts[strata[order]]
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, pos, axis=1)
    return rank


def _moments(mask: np.ndarray, cell: _Cell) -> Moments:
    """Sample moments of every trial (row of the 0/1 `mask`) for every item."""
    sy, syy, sf, sff, syf = (x[:, 0] for x in cell.values.moments(cell.everything, mask))
    return Moments(mask.sum(axis=1, keepdims=True).astype(np.float64), sy, syy, sf, sff,
                   syf)


def _stratified(keys: np.ndarray, n: int, cell: _Cell, pilot: float,
                T: int) -> tuple[np.ndarray, ...] | None:
    """Stratified PPI with a tuned weight per stratum and a Neyman allocation from a pilot:
    (estimate, design variance, decision variance, df) or None when the budget cannot give
    every stratum 2 units."""
    groups = cell.strata
    strata = groups.of
    sizes = groups.sizes
    H = groups.G
    need = np.minimum(2, sizes)
    if n < need.sum():
        return None
    R = keys.shape[0]
    n_pilot = max(int(need.sum()), int(round(pilot * n)))
    pilot_alloc = neyman_allocation(n_pilot, sizes, np.ones(H), minimum=need)[0]
    rank = _strata_ranks(keys, strata)
    # the pilot: each stratum's residual sd, pooled over the systems
    s1, s2 = cell.values.residuals(groups, rank < pilot_alloc[strata][None, :])
    k = pilot_alloc[None, :, None].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        var_r = (s2 - s1 * s1 / k) / (k - 1)
        # a constant residual is 0 by the tie rule, not a rounding residue
        var_r = np.where(var_r <= TIE_RTOL * np.abs(s2) / (k - 1), 0.0, var_r)
    sd = np.sqrt(np.nan_to_num(var_r).mean(axis=2))
    alloc = neyman_allocation(np.full(R, n), sizes, sd, minimum=pilot_alloc)
    chosen = rank < np.take_along_axis(alloc, np.broadcast_to(strata, (R, len(strata))),
                                       axis=1)
    sy, syy, sf, sff, syf = cell.values.moments(groups, chosen)
    m = Moments(alloc[:, :, None].astype(np.float64), sy, syy, sf, sff, syf)
    Nh = sizes[:, None].astype(np.float64)
    e, v, lam = finite_ppi(m, cell.pop_f_strata, Nh, None)
    v = np.where(m.n >= Nh, 0.0, v)
    W = (sizes / sizes.sum())[:, None]
    est = (W * e).sum(axis=1)
    var = (W * W * v).sum(axis=1)
    c = cell.scale
    if not cell.judgments:
        ybar = m.mean_y
        ybar_st = (W * ybar).sum(axis=1, keepdims=True)
        svar = (W * (np.nan_to_num(m.var_y) + (ybar - ybar_st) ** 2)).sum(axis=1)
        var_dec = c * c * (var + svar / T)
    else:  # per-topic estimates, each sampled pair expanded by N_h / n_h, lambda = 1
        weight = sizes[None, :] / np.maximum(alloc, 1)
        var_dec = _topic_variance(chosen, cell, T, 1, weight=weight)
    return c * est, c * c * var, var_dec, n - H


def _topic_variance(mask: np.ndarray, cell: _Cell, T: int, by: int, *, weight: np.ndarray,
                    lam: np.ndarray | float = 1.0) -> np.ndarray:
    """Judgments unit: the variance of the mean of per-topic estimates
    ``V_t = T * (lam F_t + sum over the topic's sampled pairs of w (y - lam f))``, each
    sampled pair expanded by its stratum's weight ``w = N_h / n_h`` (`weight`, (trials,
    strata); one stratum: ``N / n``): ``s^2(V) / T``, the paired t test's variance on
    them (at full budget the full-gold test). With ``D_t = F_t - sum w f`` and
    ``A_t = sum w y`` (per topic, `by` 0: by topic, 1: by topic and stratum), ``V_t = T
    (lam D_t + A_t)``: the pairs' variances come from the systems' covariance matrices
    over topics (a pair is a difference of two systems), so no pair is summed over the
    pool."""
    H = weight.shape[1]
    R, S = mask.shape[0], cell.S
    sy, sf = (x.reshape(R, T, H, S)
              for x in cell.values.systems(cell.by_topic[by], by, mask))
    w = weight[:, None, :, None]
    A = (w * sy).sum(axis=2)
    D = cell.proxy_topic[None, :, :S] - (w * sf).sum(axis=2)
    A -= A.mean(axis=1, keepdims=True)
    D -= D.mean(axis=1, keepdims=True)
    At, Dt = A.transpose(0, 2, 1), D.transpose(0, 2, 1)
    cov = [np.matmul(x, y) / (T - 1) for x, y in ((Dt, D), (Dt, A), (At, A))]
    ia, ib = cell.pairs
    parts = []
    for c, sym in zip(cov, (True, False, True), strict=True):
        diag = np.diagonal(c, axis1=1, axis2=2)
        pair = (diag[:, ia] + diag[:, ib] - c[:, ia, ib]
                - (c[:, ia, ib] if sym else c[:, ib, ia]))
        parts.append(np.concatenate([diag, pair], axis=1))
    vD, cDA, vA = parts
    lam = np.asarray(lam, np.float64)
    return T * np.maximum(lam * lam * vD + 2 * lam * cDA + vA, 0.0)


def _cells(data: BudgetData, unit: str):
    """Every (metric, proxy) cell of a unit, one at a time; the judgments unit's
    coefficients are shared by the proxies."""
    pairs = data.pairs
    T = len(data.topics)
    for m in range(len(data.metrics)):
        if unit == "judgments" and m not in data.linear:
            continue
        truth = data.truth(m)
        if unit == "judgments":
            li = data.linear.index(m)
            z = _items(data.coef[li], *pairs)
            z2 = z * z
        for j in range(len(data.proxies)):
            if unit == "topics":
                yield m, j, _make_cell(truth, 1.0, pairs, data.topic_strata[j, m], None, T,
                                       y=_items(data.gold_scores[m], *pairs),
                                       f=_items(data.proxy_scores[j, m], *pairs))
            else:
                yield m, j, _make_cell(truth, float(len(data.u_topic)), pairs,
                                       data.judgment_strata[j], data.u_topic, T,
                                       wy=data.gold_values[li], wf=data.proxy_values[j, li],
                                       z=z, z2=z2)


def trials(data: BudgetData, lo: int, hi: int, *, seed: int, alpha: float,
           corrections: tuple[str, ...], pilot: float) -> tuple[np.ndarray, np.ndarray]:
    """Trials ``lo:hi`` of every (unit, budget), proxy, metric and estimator, computed in
    whole blocks of :data:`KEY_BLOCK` trials aligned on the trial index (the same shapes
    whatever the shard).

    Returns
    -------
    record : ndarray (trials, configs, J, M, E, K)
        :class:`Layout` per trial (NaN where an estimator is not defined).
    errors : ndarray (trials, configs, J, M, E, S)
        Each system's error (estimate - truth) per trial.
    """
    lay = Layout(len(corrections))
    U, B = data.budgets.shape
    J, M = len(data.proxies), len(data.metrics)
    S, T = len(data.systems), len(data.topics)
    E = len(ESTIMATORS)
    first, last = lo // KEY_BLOCK, (hi - 1) // KEY_BLOCK
    R = (last - first + 1) * KEY_BLOCK
    rec = np.full((R, U * B, J, M, E, lay.size), np.nan)
    errs = np.zeros((R, U * B, J, M, E, S))
    for u, unit in enumerate(data.units):
        units = T if unit == "topics" else len(data.u_topic)
        blocks = []
        for k in range(first, last + 1):
            a = k * KEY_BLOCK
            keys = blocked_draws(seed, STREAM, (u,), a, a + KEY_BLOCK,
                                 lambda rng, m, n=units: rng.random((m, n)), block=KEY_BLOCK)
            order = np.argsort(keys, axis=1, kind="stable")
            rank = np.empty_like(order)
            np.put_along_axis(rank, order, np.broadcast_to(np.arange(units), order.shape),
                              axis=1)
            blocks.append((slice(a - first * KEY_BLOCK, a - first * KEY_BLOCK + KEY_BLOCK),
                           keys, rank))
        for m, j, cell in _cells(data, unit):
            for rows, keys, rank in blocks:
                for b in range(B):
                    c = u * B + b
                    _one(rec[rows, c, j, m], errs[rows, c, j, m], keys, rank,
                         int(data.budgets[u, b]), cell, data.ref_reject[m], T, alpha,
                         corrections, pilot, lay)
    keep = slice(lo - first * KEY_BLOCK, hi - first * KEY_BLOCK)
    return rec[keep], errs[keep]


def _one(out: np.ndarray, err_out: np.ndarray, keys: np.ndarray, rank: np.ndarray, n: int,
         cell: _Cell, ref: np.ndarray, T: int, alpha: float, corrections: tuple[str, ...],
         pilot: float, lay: Layout) -> None:
    """Every estimator of one (unit, budget, metric, proxy) over the block's trials."""
    R, Nu = keys.shape
    S = cell.S
    c = cell.scale
    level = 1.0 - alpha
    judgments = cell.judgments
    # proxy only: the usual t interval over the topics of the proxy's scores (the same in
    # every trial)
    Fp = cell.proxy_topic * (T if judgments else 1.0)  # per-topic proxy scores
    p_est = np.broadcast_to(Fp.mean(axis=0), (R, Fp.shape[1]))
    p_var = np.broadcast_to(Fp.var(axis=0, ddof=1) / T, p_est.shape)
    q = sps.t.ppf(0.5 + level / 2, T - 1)
    _finish(out[:, 0], err_out[:, 0], p_est, q * np.sqrt(p_var), p_var, T - 1, cell, ref, S,
            alpha, corrections, lay)
    mask = rank < n
    mom = _moments(mask, cell)
    pop_f = cell.pop_f
    qn = sps.t.ppf(0.5 + level / 2, n - 1)
    for e, lam in ((1, 0.0), (2, 1.0), (3, None)):
        est, var, lam_v = finite_ppi(mom, pop_f, Nu, lam)
        if n >= Nu:
            var = np.zeros_like(var)
        est, var = c * est, c * c * var
        if judgments:
            var_dec = _topic_variance(mask, cell, T, 0,
                                      weight=np.full((R, 1), Nu / n), lam=lam_v)
        else:
            var_dec = var + np.nan_to_num(mom.var_y) / T
        _finish(out[:, e], err_out[:, e], est, qn * np.sqrt(var), var_dec,
                T - 1 if judgments else n - 1, cell, ref, S, alpha, corrections, lay)
    res = _stratified(keys, n, cell, pilot, T)
    if res is None:
        return
    est, var, var_dec, df = res
    qs = sps.t.ppf(0.5 + level / 2, df)
    _finish(out[:, 4], err_out[:, 4], est, qs * np.sqrt(var), var_dec,
            T - 1 if judgments else df, cell, ref, S, alpha, corrections, lay)


def _finish(out: np.ndarray, err_out: np.ndarray, est: np.ndarray, half: np.ndarray,
            var_dec: np.ndarray, df, cell: _Cell, ref: np.ndarray, S: int, alpha: float,
            corrections: tuple[str, ...], lay: Layout) -> None:
    _record(out, est, half, cell.truth, S, lay)
    _rank_and_decide(out, est, var_dec, df, cell.truth, ref, S, alpha, corrections, lay)
    err_out[...] = est[:, :S] - cell.truth[:S]
